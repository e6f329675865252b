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

/// Devices (ranks 0..) whose per-core traffic is kept ([`crate::Twin::core_traffic`]).
pub const TRACKED_DEVICES: usize = 64;
/// Block indices per device whose traffic is kept.
pub const TRACKED_CORES: usize = 64;

/// One core's counters (blocks of one index run on one core at a time; launches of several
/// streams may overlap, hence atomic adds).
#[derive(Default)]
struct CoreSlot {
    read: AtomicU64,
    written: AtomicU64,
}

/// The counters of one twin: a slot per worker thread (the only writer of its slot) and one
/// shared slot for other threads, and a slot per (device, block index): what each core moved.
pub(crate) struct Traffic {
    slots: Box<[Slot]>,
    cores: Box<[CoreSlot]>,
}

impl Traffic {
    pub fn new(workers: usize) -> Traffic {
        Traffic {
            slots: (0..workers + 1).map(|_| Slot::default()).collect(),
            cores: (0..TRACKED_DEVICES * TRACKED_CORES)
                .map(|_| CoreSlot::default())
                .collect(),
        }
    }

    /// Adds one transfer of block `block` of a launch on device `rank`, made on worker
    /// `worker`.
    pub fn count_block(&self, worker: usize, rank: u32, block: u32, read: usize, written: usize) {
        self.count(Some(worker), read, written);
        let (r, b) = (rank as usize, block as usize);
        if r < TRACKED_DEVICES && b < TRACKED_CORES {
            let slot = &self.cores[r * TRACKED_CORES + b];
            slot.read.fetch_add(read as u64, Ordering::Relaxed);
            slot.written.fetch_add(written as u64, Ordering::Relaxed);
        }
    }

    /// What the blocks of each index moved on device `rank` so far (empty beyond
    /// [`TRACKED_DEVICES`]).
    pub fn core(&self, rank: u32) -> Vec<GmTraffic> {
        let r = rank as usize;
        if r >= TRACKED_DEVICES {
            return Vec::new();
        }
        self.cores[r * TRACKED_CORES..(r + 1) * TRACKED_CORES]
            .iter()
            .map(|s| GmTraffic {
                read: s.read.load(Ordering::Relaxed),
                written: s.written.load(Ordering::Relaxed),
            })
            .collect()
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
