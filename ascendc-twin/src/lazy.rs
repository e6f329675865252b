//! Deferred GM -> UB staging ("lazy" DataCopy).
//!
//! A communication kernel moves GM to GM through its Unified Buffer: DataCopy GM -> UB, then
//! DataCopy UB -> GM (once, or twice for a dual store). On the twin each DataCopy is a memcpy,
//! so every byte would be copied twice; measured, the staging copy is 12-23% of a 1-16 MiB
//! AllGather or AllReduce. Instead, a large contiguous GM -> UB copy only records that the UB
//! range holds a snapshot of the GM range, and a later UB -> GM copy of that range copies GM to
//! GM directly. The snapshot semantics are kept exactly:
//!
//! * before anything writes GM (a kernel's DMA or scalar write-back, an atomic store, the host,
//!   a free), every pending snapshot of the written range is materialised (copied into its UB)
//!   first, so the UB holds what GM held when the DataCopy ran;
//! * before the block reads its UB any other way (scalar GetValue, vector instructions, a copy
//!   of a range that is only partly a snapshot), the snapshot is materialised;
//! * a UB write over a snapshot's range drops (full cover), trims (prefix or suffix) or
//!   materialises (middle) it, so a late materialisation never overwrites newer UB data;
//! * a block's snapshots end with the block;
//! * in a job of processes (`shared.rs`), where a write of another process cannot materialise
//!   them, a block materialises all its snapshots before it publishes anything: a store to flag
//!   memory or a cross-core flag ([`before_release`]).
//!
//! Checkers (pipe hazards, GM races, traffic counters) see the DataCopy when it is issued, as
//! before; only the moment the bytes move changes. `AIV_TWIN_LAZY=0` (or
//! [`crate::Twin::set_lazy_staging`]) turns it off.
//!
//! Locking: a shard's list and a snapshot's own lock are never held together; a writer first
//! collects the snapshots it overlaps, then locks each one in turn, while a block copying from
//! its snapshot holds only that snapshot's lock.
//!
//! The pending snapshots are listed by the allocation they read, in [`SHARDS`] lists chosen by
//! the allocation: a staging copy locks the list of its source's allocation only, and a write
//! to an allocation no snapshot reads skips the lists on its counter (`RegionMeta::snapshots`).
//! One list for the whole twin was a lock and a counter that every worker wrote at every
//! staging copy, moving between the cores each time.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::meta::RegionMeta;
use crate::padded::Padded;

/// Copies below this size stay eager: flag polls must read GM at once, and for small pieces
/// the bookkeeping costs more than the copy it saves (measured when every GM write still
/// consulted the global list: 8 KiB pieces of an 8-rank two-shot AllReduce ran 25% slower).
pub(crate) const MIN_LAZY: usize = 16 * 1024;

/// One pending snapshot: UB bytes `[ub, ub + len)` are GM bytes `[gm, gm + len)` as they were
/// when the DataCopy ran (GM has not been written there since).
pub(crate) struct Snapshot {
    gm: usize,
    ub: usize,
    len: usize,
    /// The UB holds the bytes now (or no longer needs them): nothing pending.
    done: bool,
    /// Counters of the GM allocation the source lies in (its pending-snapshot count).
    meta: Option<Arc<RegionMeta>>,
}

impl Snapshot {
    /// Marks the snapshot no longer pending (once).
    fn retire(&mut self) {
        if !self.done {
            self.done = true;
            if let Some(m) = &self.meta {
                m.snapshots.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

pub(crate) type SnapshotRef = Arc<Mutex<Snapshot>>;

/// A block's pending snapshot with a copy of its UB range (only the owning block changes that
/// range, so it filters without taking the lock).
pub(crate) struct Entry {
    ub: usize,
    len: usize,
    s: SnapshotRef,
}

/// A block's pending snapshots.
pub(crate) type Pending = SmallVec<[Entry; 4]>;

/// Lists of pending snapshots (see the module docs).
pub(crate) const SHARDS: usize = 64;

/// A shard's pending snapshots, each with the GM range it had when staged (ranges only shrink,
/// so this is a superset); an entry whose block dropped it (only this list still holds it) is
/// purged.
type List = Vec<(usize, usize, SnapshotRef)>;

/// The pending snapshots of one twin, by the allocation they read.
pub(crate) struct Live {
    shards: Box<[Padded<Mutex<List>>]>,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            shards: (0..SHARDS).map(|_| Padded::default()).collect(),
        }
    }
}

/// The list of the snapshots reading the allocation with counters `meta`.
fn shard_of(meta: &RegionMeta) -> usize {
    // RegionMeta is 128-byte aligned: the low bits carry nothing.
    (meta as *const RegionMeta as usize >> 7) % SHARDS
}

fn overlaps(a: usize, alen: usize, b: usize, blen: usize) -> bool {
    a < b + blen && b < a + alen
}

fn materialize(s: &mut Snapshot) {
    if !s.done {
        // SAFETY: the GM range was bounds-checked when the DataCopy was issued and cannot have
        // been written or freed since (both materialise first); the UB range is the block's.
        unsafe { crate::mem::copy_bulk(s.ub as *mut u8, s.gm as *const u8, s.len) };
        std::sync::atomic::fence(Ordering::Acquire);
        s.retire();
    }
}

/// Materialises every pending snapshot of GM `[addr, addr + len)`, which lies in the allocation
/// with counters `meta` (None: not known; every list is searched). Call before writing there,
/// holding no snapshot lock.
pub(crate) fn before_gm_write(live: &Live, meta: Option<&RegionMeta>, addr: usize, len: usize) {
    let mut hit: SmallVec<[SnapshotRef; 8]> = SmallVec::new();
    let mut collect = |list: &Mutex<List>| {
        hit.extend(
            list.lock()
                .iter()
                .filter(|(g, l, _)| overlaps(*g, *l, addr, len))
                .map(|(_, _, s)| s.clone()),
        )
    };
    match meta {
        // Most writes go to allocations no snapshot reads from (flags, outputs).
        Some(m) if m.snapshots.load(Ordering::SeqCst) == 0 => return,
        Some(m) => collect(&live.shards[shard_of(m)]),
        None => live.shards.iter().for_each(|l| collect(l)),
    }
    for s in hit {
        let mut s = s.lock();
        if overlaps(s.gm, s.len, addr, len) {
            materialize(&mut s);
        }
    }
}

/// Drops entries no block holds any more.
fn purge(list: &mut List) {
    list.retain(|(_, _, s)| Arc::strong_count(s) > 1);
}

/// Records that UB `[ub, ub + len)` of the block owning `pending` now stages GM `[gm, gm + len)`
/// of the allocation with counters `meta`.
pub(crate) fn stage(
    live: &Live,
    pending: &mut Pending,
    meta: Arc<RegionMeta>,
    gm: usize,
    ub: usize,
    len: usize,
) {
    before_ub_write(pending, ub, len);
    meta.snapshots.fetch_add(1, Ordering::SeqCst);
    let shard = &live.shards[shard_of(&meta)];
    let s = Arc::new(Mutex::new(Snapshot {
        gm,
        ub,
        len,
        done: false,
        meta: Some(meta),
    }));
    pending.push(Entry {
        ub,
        len,
        s: s.clone(),
    });
    let mut list = shard.lock();
    purge(&mut list);
    list.push((gm, len, s));
}

/// Whether any of the block's pending snapshots overlaps UB `[ub, ub + len)`.
#[inline]
fn touches(pending: &Pending, ub: usize, len: usize) -> bool {
    pending.iter().any(|e| overlaps(e.ub, e.len, ub, len))
}

/// The block is about to write UB `[ub, ub + len)`: snapshots there are dropped, trimmed or
/// materialised so that none later overwrites the new data.
pub(crate) fn before_ub_write(pending: &mut Pending, ub: usize, len: usize) {
    // Most UB writes (a flag lane, a vector fill) touch no snapshot: skip the retain pass.
    if !touches(pending, ub, len) {
        return;
    }
    let end = ub + len;
    pending.retain(|e| {
        if !overlaps(e.ub, e.len, ub, len) {
            return true;
        }
        let mut s = e.s.lock();
        if s.done {
            return false;
        }
        let (s0, s1) = (s.ub, s.ub + s.len);
        if ub <= s0 && end >= s1 {
            s.retire(); // fully overwritten: nothing to keep
            false
        } else if ub <= s0 {
            let cut = end - s0; // the new data covers a prefix
            s.gm += cut;
            s.ub += cut;
            s.len -= cut;
            (e.ub, e.len) = (s.ub, s.len);
            true
        } else if end >= s1 {
            s.len = ub - s0; // the new data covers a suffix
            e.len = s.len;
            true
        } else {
            materialize(&mut s);
            false
        }
    });
}

/// The block is about to read UB `[ub, ub + len)` itself: snapshots there are materialised.
pub(crate) fn before_ub_read(pending: &mut Pending, ub: usize, len: usize) {
    if !touches(pending, ub, len) {
        return;
    }
    pending.retain(|e| {
        if !overlaps(e.ub, e.len, ub, len) {
            return true;
        }
        materialize(&mut e.s.lock());
        false
    });
}

/// The block is about to publish something to another process of a multi-process job (a store
/// to flag memory, a cross-core flag): every pending snapshot is materialised. A process
/// writes a range another process staged only after such a publication (in a kernel whose GM
/// accesses flags order, the one kind whose results are defined), and no process materialises
/// another's snapshots: so the UB holds what GM held when the DataCopy ran, as in one process.
pub(crate) fn before_release(pending: &mut Pending) {
    for e in pending.drain(..) {
        materialize(&mut e.s.lock());
    }
}

/// If UB `[ub, ub + len)` lies inside one pending snapshot, runs `f` with the GM address its
/// bytes can be read from (the snapshot stays locked meanwhile, so no writer changes that GM
/// before `f` returns) and returns true. Otherwise materialises what overlaps and returns false:
/// read the UB.
pub(crate) fn with_source(
    pending: &mut Pending,
    ub: usize,
    len: usize,
    f: impl FnOnce(usize),
) -> bool {
    if let Some(e) = pending
        .iter()
        .find(|e| ub >= e.ub && ub + len <= e.ub + e.len)
    {
        let g = e.s.lock();
        if !g.done {
            f(g.gm + (ub - g.ub));
            return true;
        }
    }
    before_ub_read(pending, ub, len);
    false
}

/// The block ends: its snapshots are dropped (and the lists they were in purged).
pub(crate) fn finish(live: &Live, pending: &mut Pending) {
    let mut shards: SmallVec<[usize; 4]> = SmallVec::new();
    for e in pending.drain(..) {
        let mut s = e.s.lock();
        s.retire();
        if let Some(i) = s.meta.as_deref().map(shard_of) {
            if !shards.contains(&i) {
                shards.push(i);
            }
        }
    }
    for i in shards {
        purge(&mut live.shards[i].lock());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    const GM: usize = 512;
    const UB: usize = 384;

    /// A block's memory with deferred staging, and the same memory with every staging copy made
    /// at once (the oracle: what the DataCopy means).
    struct Pair {
        gm: Vec<u8>,
        out: Vec<u8>,
        ub: Vec<u8>,
        eager_gm: Vec<u8>,
        eager_out: Vec<u8>,
        eager_ub: Vec<u8>,
        live: Live,
        pending: Pending,
        meta: Arc<RegionMeta>,
    }

    impl Pair {
        fn new(g: &mut Rng) -> Pair {
            let gm: Vec<u8> = (0..GM).map(|_| g.index(256) as u8).collect();
            let ub: Vec<u8> = (0..UB).map(|_| g.index(256) as u8).collect();
            Pair {
                eager_gm: gm.clone(),
                eager_out: vec![0; GM],
                eager_ub: ub.clone(),
                gm,
                out: vec![0; GM],
                ub,
                live: Live::default(),
                pending: Pending::new(),
                meta: Arc::new(RegionMeta::default()),
            }
        }

        fn gm_at(&self, off: usize) -> usize {
            self.gm.as_ptr() as usize + off
        }

        fn ub_at(&self, off: usize) -> usize {
            self.ub.as_ptr() as usize + off
        }

        /// DataCopy GM -> UB, deferred.
        fn stage(&mut self, gm: usize, ub: usize, len: usize) {
            let (g, u) = (self.gm_at(gm), self.ub_at(ub));
            stage(&self.live, &mut self.pending, self.meta.clone(), g, u, len);
            self.eager_ub[ub..ub + len].copy_from_slice(&self.eager_gm[gm..gm + len]);
        }

        /// Someone writes GM (another block's DMA, the host, an atomic store).
        fn write_gm(&mut self, at: usize, len: usize, byte: u8) {
            let meta = self.meta.clone();
            before_gm_write(&self.live, Some(&meta), self.gm_at(at), len);
            self.gm[at..at + len].fill(byte);
            self.eager_gm[at..at + len].fill(byte);
        }

        /// The block writes its UB (a vector result, a scalar store, another load).
        fn write_ub(&mut self, at: usize, len: usize, byte: u8) {
            let u = self.ub_at(at);
            before_ub_write(&mut self.pending, u, len);
            self.ub[at..at + len].fill(byte);
            self.eager_ub[at..at + len].fill(byte);
        }

        /// The block reads its UB (a vector operand, a scalar load): must see the oracle's bytes.
        fn read_ub(&mut self, at: usize, len: usize, what: &str) {
            let u = self.ub_at(at);
            before_ub_read(&mut self.pending, u, len);
            assert_eq!(self.ub[at..at + len], self.eager_ub[at..at + len], "{what}");
        }

        /// DataCopy UB -> GM of another allocation: from the staged GM while the range is one
        /// pending snapshot (returns true), else from UB.
        fn store(&mut self, ub: usize, len: usize, to: usize) -> bool {
            let dst = self.out.as_mut_ptr() as usize + to;
            let ub_addr = self.ub_at(ub);
            let direct = with_source(&mut self.pending, ub_addr, len, |src| {
                // SAFETY: `src` is `len` bytes of `gm` (a pending snapshot's source, locked
                // meanwhile); `dst` is `len` bytes of `out`, another vector.
                unsafe { crate::mem::copy_bulk(dst as *mut u8, src as *const u8, len) }
            });
            if !direct {
                self.out[to..to + len].copy_from_slice(&self.ub[ub..ub + len]);
            }
            self.eager_out[to..to + len].copy_from_slice(&self.eager_ub[ub..ub + len]);
            direct
        }
    }

    /// Deferred staging keeps the meaning of an eager DataCopy: over generated sequences of
    /// staging copies (overlapping each other in UB and in GM), GM writes, UB writes and reads,
    /// stores out and releases, every UB read and every store out gives the bytes an eager copy
    /// gives, and when the block ends nothing is left pending.
    #[test]
    fn deferred_staging_reads_what_an_eager_copy_would_have_given() {
        let mut g = Rng(0x1a2b_3c4d_5e6f_7788);
        let mut direct_stores = 0;
        for case in 0..3000 {
            let mut p = Pair::new(&mut g);
            for step in 0..g.index(24) + 1 {
                let what = format!("case {case} step {step}");
                let len = g.index(96) + 1;
                let byte = g.index(256) as u8;
                match g.index(8) {
                    0 | 1 => p.stage(g.index(GM - len), g.index(UB - len), len),
                    2 => p.write_gm(g.index(GM - len), len, byte),
                    3 => p.write_ub(g.index(UB - len), len, byte),
                    4 => p.read_ub(g.index(UB - len), len, &what),
                    5 | 6 => {
                        // Mostly the range of a pending snapshot, as kernels store what they
                        // staged.
                        let (ub, len) = match p.pending.get(g.index(p.pending.len().max(1))) {
                            Some(e) if g.index(4) != 0 => {
                                let (a, b) = (g.index(e.len), g.index(e.len));
                                (e.ub - p.ub_at(0) + a.min(b), a.max(b) - a.min(b) + 1)
                            }
                            _ => (g.index(UB - len), len),
                        };
                        let len = len.min(UB - ub);
                        let to = g.index(GM - len);
                        direct_stores += usize::from(p.store(ub, len, to));
                        assert_eq!(p.out, p.eager_out, "{what}: stored out");
                    }
                    _ => before_release(&mut p.pending),
                }
            }
            p.read_ub(0, UB, &format!("case {case}: the whole UB"));
            finish(&p.live, &mut p.pending);
            assert_eq!(p.meta.snapshots.load(Ordering::SeqCst), 0, "case {case}");
            // What the lists still hold (purged at the next staging copy into their shard) is
            // retired: no later GM write copies anything into this block's UB.
            assert!(
                p.live
                    .shards
                    .iter()
                    .all(|l| l.lock().iter().all(|(_, _, s)| s.lock().done)),
                "case {case}"
            );
        }
        assert!(
            direct_stores > 1000,
            "only {direct_stores} stores from a snapshot"
        );
    }
}
