//! Per-allocation counters shared by the memory registry, the scheduler and deferred staging.
//!
//! A GM write must wake the blocks parked on what it wrote and materialise the deferred UB
//! copies that read it. Most writes go to allocations nobody polls and no snapshot reads from;
//! these counters let such writes skip both checks with one load each.

use std::sync::atomic::AtomicUsize;

/// Counters of one GM allocation, on cache lines of their own (two workers update different
/// allocations' counters at once).
#[repr(align(128))]
#[derive(Default, Debug)]
pub(crate) struct RegionMeta {
    /// Blocks and host tasks parked on a range of this allocation.
    pub parked: AtomicUsize,
    /// Pending deferred GM -> UB snapshots of this allocation (lazy.rs).
    pub snapshots: AtomicUsize,
}
