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

impl GmTraffic {
    /// The bytes moved since `earlier`, an earlier reading of the same counters (they only
    /// grow).
    ///
    /// ```
    /// # use ascendc_twin::GmTraffic;
    /// let before = GmTraffic { read: 64, written: 32 };
    /// let after = GmTraffic { read: 192, written: 32 };
    /// assert_eq!(after.since(before), GmTraffic { read: 128, written: 0 });
    /// ```
    pub fn since(self, earlier: GmTraffic) -> GmTraffic {
        GmTraffic {
            read: self.read - earlier.read,
            written: self.written - earlier.written,
        }
    }
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

/// One core's counters as one worker saw them.
#[derive(Default)]
struct CoreSlot {
    read: AtomicU64,
    written: AtomicU64,
}

/// The counters of one twin: a slot per worker thread (the only writer of its slot) and one
/// shared slot for other threads, and per worker a slot per (device, block index): what each
/// core moved is the sum over the workers.
///
/// Per worker, not shared: blocks 0..3 of a device share a cache line of core slots, and
/// consecutive blocks run on different workers; shared slots needed locked adds and bounced
/// that line between the workers on every DMA of a small collective.
pub(crate) struct Traffic {
    slots: Box<[Slot]>,
    /// `TRACKED_DEVICES * TRACKED_CORES` slots per worker, worker after worker.
    cores: Box<[CoreSlot]>,
}

/// Adds `read` and `written` to a pair of counters with a single writer (no locked
/// instruction).
fn add_single_writer(read_slot: &AtomicU64, written_slot: &AtomicU64, read: usize, written: usize) {
    let r = read_slot.load(Ordering::Relaxed);
    read_slot.store(r + read as u64, Ordering::Relaxed);
    let w = written_slot.load(Ordering::Relaxed);
    written_slot.store(w + written as u64, Ordering::Relaxed);
}

impl Traffic {
    pub fn new(workers: usize) -> Traffic {
        Traffic {
            slots: (0..workers + 1).map(|_| Slot::default()).collect(),
            cores: (0..workers * TRACKED_DEVICES * TRACKED_CORES)
                .map(|_| CoreSlot::default())
                .collect(),
        }
    }

    /// Adds one transfer of block `block` of a launch on device `rank`, made on worker
    /// `worker` (the only thread that counts into that worker's slots).
    pub fn count_block(&self, worker: usize, rank: u32, block: u32, read: usize, written: usize) {
        self.count(Some(worker), read, written);
        let (r, b) = (rank as usize, block as usize);
        if r < TRACKED_DEVICES && b < TRACKED_CORES {
            let i = (worker * TRACKED_DEVICES + r) * TRACKED_CORES + b;
            if let Some(slot) = self.cores.get(i) {
                add_single_writer(&slot.read, &slot.written, read, written);
            }
        }
    }

    /// What the blocks of each index moved on device `rank` so far, over all workers (empty
    /// beyond [`TRACKED_DEVICES`]).
    pub fn core(&self, rank: u32) -> Vec<GmTraffic> {
        let r = rank as usize;
        if r >= TRACKED_DEVICES {
            return Vec::new();
        }
        let mut out = vec![GmTraffic::default(); TRACKED_CORES];
        for per_worker in self.cores.chunks_exact(TRACKED_DEVICES * TRACKED_CORES) {
            let device = &per_worker[r * TRACKED_CORES..(r + 1) * TRACKED_CORES];
            for (t, s) in out.iter_mut().zip(device) {
                t.read += s.read.load(Ordering::Relaxed);
                t.written += s.written.load(Ordering::Relaxed);
            }
        }
        out
    }

    /// Adds one transfer, made on worker `worker` (None: another thread).
    pub fn count(&self, worker: Option<usize>, read: usize, written: usize) {
        match worker.and_then(|w| self.slots.get(w + 1)) {
            // The slot's only writer.
            Some(slot) => add_single_writer(&slot.read, &slot.written, read, written),
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
