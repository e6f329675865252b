//! The state of one running block, and the discipline for reaching it.
//!
//! A block's [`BlockCtx`] lives in a `Box` made by the launch. The scheduler holds it only as an
//! opaque pointer: it never dereferences it while the block's coroutine lives, and the launch's
//! finish callback frees it after the coroutine has returned. The block's own twin calls reach
//! it through [`current`] and hold the only reference for the duration of one call, including
//! across suspensions inside that call (nobody else touches it while the block is suspended).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use corosensei::Yielder;

use crate::atomics::{AtomicOp, AtomicType};
use crate::hazard::Hazards;
use crate::launch::LaunchShared;
use crate::pipes::PipeState;
use crate::poll::PollState;
use crate::race::RaceCtx;
use crate::sched::{self, BlockStatus, Park, Req, TIME_SLICE};
use crate::twin::TwinHandle;

/// One line of the scalar data cache model (dcache.rs).
pub(crate) struct CacheLine {
    pub data: [u8; 64],
    pub dirty: bool,
    /// The line's bytes that lie in its allocation, as (first byte, count): all 64, or fewer
    /// when the line runs past the allocation's end. The fill loads them and a write-back
    /// stores them, and nothing else.
    pub span: (usize, usize),
}

/// Per-block state.
pub(crate) struct BlockCtx {
    /// The twin, through its device's handle (see [`TwinHandle`]).
    pub twin: Arc<TwinHandle>,
    pub launch: Arc<LaunchShared>,
    pub status: Arc<BlockStatus>,
    pub block: u32,
    /// Worker thread the block is pinned to.
    pub worker: usize,
    pub ub: *mut u8,
    pub ub_len: usize,
    pub atomic: Option<(AtomicOp, AtomicType)>,
    pub pipes: PipeState,
    pub poll: PollState,
    pub dcache: HashMap<usize, CacheLine>,
    pub rng: u64,
    /// GM race checker state, when checking is on.
    pub race: Option<RaceCtx>,
    /// Pipe-hazard checker state, when checking is on.
    pub hazards: Option<Box<Hazards>>,
    /// Sync census state, when the census is on (census.rs).
    pub census: Option<Box<crate::census::BlockCensus>>,
    /// Pending deferred GM -> UB copies of this block (lazy.rs).
    pub lazy: crate::lazy::Pending,
    /// Whether this launch defers large GM -> UB copies.
    pub lazy_on: bool,
    /// Injected delay bound of this launch (µs, 0 = none).
    pub jitter_us: u32,
    /// The block's coroutine yielder (set when the coroutine starts).
    pub yielder: *const Yielder<(), Req>,
    /// Twin calls since the block last got its worker (the clock is read every 64).
    pub slice_calls: u32,
    /// The block's current TPipe (`GetTPipePtr()`), an opaque C++ pointer.
    pub tpipe: *mut std::ffi::c_void,
    /// The core's vector-unit registers (mask, mask mode, compare mask), read and written by
    /// the C++ headers through `asc_twin_vec_regs`.
    pub vec_regs: crate::abi::AscTwinVecRegs,
    /// When the current time slice started (read lazily, at the first clock check after the
    /// block got its worker).
    pub slice_start: Option<Instant>,
    /// Bytes this block's DMA wrote to GM so far (whether its stores stream, mem.rs).
    pub dma_written: u64,
    /// The launch's streaming-store threshold ([`crate::TwinConfig::stream_after`]; 0 = never).
    pub stream_after: u64,
}

/// The context of the block running on this thread (null outside blocks).
pub(crate) fn current() -> *mut BlockCtx {
    sched::current() as *mut BlockCtx
}

impl BlockCtx {
    /// Suspends the block with `req`.
    pub fn suspend(&mut self, req: Req) {
        // SAFETY: `yielder` was set by this block's coroutine, which is the one running now.
        unsafe { sched::suspend(self.yielder, req) };
        self.slice_calls = 0;
        self.slice_start = None;
    }

    /// A preemption point (every twin call): after a time slice, give the worker to the tasks
    /// waiting for it; also lets the watchdog look at the pool now and then. Reads the clock
    /// once every 64 calls.
    pub fn tick(&mut self) {
        self.slice_calls = self.slice_calls.wrapping_add(1);
        if !self.slice_calls.is_multiple_of(64) {
            return;
        }
        let now = Instant::now();
        let Some(start) = self.slice_start else {
            self.slice_start = Some(now);
            return;
        };
        if now.saturating_duration_since(start) < TIME_SLICE {
            return;
        }
        let pool = self.twin.pool.shared();
        pool.check_stall();
        // Tasks parked on this worker whose deadline passed want it back too.
        pool.serve_deadlines(self.worker);
        if pool.others_waiting(self.worker) {
            self.suspend(Req::Yield);
        } else {
            self.slice_start = Some(now);
        }
    }

    /// Counts a progress event for the watchdog.
    pub fn progress(&self) {
        self.twin.pool.shared().progress();
    }

    /// Injected random delay before a GM access, when the launch asks for jitter.
    pub fn jitter(&mut self) {
        let max = self.jitter_us;
        if max == 0 {
            return;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if self.rng.is_multiple_of(4) {
            let delay = std::time::Duration::from_micros((self.rng >> 8) % (max as u64 + 1));
            self.suspend(Req::Park(Park {
                addr: 0,
                len: 0,
                hash: 0,
                fresh: false,
                until: Instant::now() + delay,
                meta: None,
            }));
        }
    }
}
