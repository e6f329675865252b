//! State shared by the blocks of one launch: its first fault and its abort flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::error::{FaultKind, KernelFault};
use crate::sched::PoolShared;

/// The cross-core state of a launch and the blocks that ended before it was made.
#[derive(Default)]
pub(crate) struct CrossSlot {
    cross: Option<Arc<crate::cross::Cross>>,
    ended: SmallVec<[u32; 8]>,
}

/// One launch of a kernel on a device.
pub(crate) struct LaunchShared {
    pub kernel: &'static str,
    pub rank: u32,
    pub block_dim: u32,
    fault: Mutex<Option<KernelFault>>,
    /// Set with the first fault: the other blocks stop at their next twin call.
    pub aborted: Arc<AtomicBool>,
    pool: Weak<PoolShared>,
    /// Cross-core flags and SyncAll (made at the first use), and the blocks that have ended.
    cross: Mutex<CrossSlot>,
}

impl LaunchShared {
    pub fn new(
        kernel: &'static str,
        rank: u32,
        block_dim: u32,
        pool: &Arc<PoolShared>,
    ) -> LaunchShared {
        LaunchShared {
            kernel,
            rank,
            block_dim,
            fault: Mutex::new(None),
            aborted: Arc::new(AtomicBool::new(false)),
            pool: Arc::downgrade(pool),
            cross: Mutex::new(CrossSlot::default()),
        }
    }

    /// The launch's cross-core state (made now if no block has used it yet, knowing which
    /// blocks have already ended).
    pub fn cross(&self) -> Arc<crate::cross::Cross> {
        let mut slot = self.cross.lock();
        let CrossSlot { cross, ended } = &mut *slot;
        cross
            .get_or_insert_with(|| Arc::new(crate::cross::Cross::new(self.block_dim, ended)))
            .clone()
    }

    /// Block `block` ended; returns the cross-core state if a block has used it.
    pub fn block_ended(&self, block: u32) -> Option<Arc<crate::cross::Cross>> {
        let mut slot = self.cross.lock();
        slot.ended.push(block);
        slot.cross.clone()
    }

    /// True once a block faulted or the launch was stopped.
    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    /// Records the first fault of the launch and stops its other blocks (`block` u32::MAX: the
    /// launch as a whole).
    pub fn record(&self, block: u32, op: &str, kind: FaultKind) {
        {
            let mut f = self.fault.lock();
            if f.is_none() {
                *f = Some(KernelFault {
                    kernel: self.kernel.to_string(),
                    rank: self.rank,
                    block,
                    op: op.to_string(),
                    kind,
                });
            }
        }
        self.aborted.store(true, Ordering::SeqCst);
        if let Some(p) = self.pool.upgrade() {
            p.wake_all();
        }
    }

    /// The first fault, taken out.
    pub fn take_fault(&self) -> Option<KernelFault> {
        self.fault.lock().take()
    }
}
