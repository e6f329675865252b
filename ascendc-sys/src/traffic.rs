//! Counters of the GM bytes a twin's kernels move by DMA.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes the kernels' DMA moved between GM and UB, summed over all devices of a twin since it
/// was created: DataCopy / DataCopyPad from GM (`read`) and to GM (`written`; an atomic store also
/// reads its destination, counted in `read`). Scalar GetValue/SetValue are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GmTraffic {
    /// Bytes read from GM.
    pub read: u64,
    /// Bytes written to GM.
    pub written: u64,
}

/// One worker's counters, on a cache line of their own.
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    read: AtomicU64,
    written: AtomicU64,
}

/// The counters of one twin: a slot per worker thread (the only writer of its slot) and one
/// shared slot for other threads.
pub(crate) struct Traffic {
    slots: Box<[Slot]>,
}

impl Traffic {
    pub fn new(workers: usize) -> Traffic {
        Traffic {
            slots: (0..workers + 1).map(|_| Slot::default()).collect(),
        }
    }

    /// Adds one transfer, made on worker `worker` (None: another thread).
    pub fn count(&self, worker: Option<usize>, read: usize, written: usize) {
        match worker.and_then(|w| self.slots.get(w + 1)) {
            Some(slot) => {
                // The slot's only writer: a plain load and store (no locked instruction).
                let r = slot.read.load(Ordering::Relaxed);
                slot.read.store(r + read as u64, Ordering::Relaxed);
                let w = slot.written.load(Ordering::Relaxed);
                slot.written.store(w + written as u64, Ordering::Relaxed);
            }
            None => {
                self.slots[0].read.fetch_add(read as u64, Ordering::Relaxed);
                self.slots[0]
                    .written
                    .fetch_add(written as u64, Ordering::Relaxed);
            }
        }
    }

    /// The totals so far.
    pub fn total(&self) -> GmTraffic {
        let mut t = GmTraffic::default();
        for s in self.slots.iter() {
            t.read += s.read.load(Ordering::Relaxed);
            t.written += s.written.load(Ordering::Relaxed);
        }
        t
    }
}
