//! The sync census: what a twin's kernels cost in NPU terms, measured while they run. Off by
//! default ([`crate::Twin::set_census`]); a launch that starts with it on records, per rank, the
//! GM bytes its DMA moved (data and flag memory apart), its flag waits, and the Lamport depth of
//! its synchronisation.
//!
//! # Sync depth (rounds)
//!
//! Flag memory is what [`crate::mem`] classifies as flags: sync allocations and ranges marked as
//! flags. It is cut into 32-byte cells (one soft-sync flag each). The census keeps a depth per
//! cell and per running block:
//!
//! * every block starts at depth 0: depths count the rounds of one launch (an operation that
//!   runs several launches, one per chunk, repeats its chain in each: [`RankCensus::launches`]
//!   says how many ran). The twin does not know the streams, so it cannot tell a launch that
//!   the host ordered after another (the next chunk on the same stream) from one that merely
//!   started later (a send and a receive on two streams of one rank); starting each at 0 keeps
//!   the figure independent of the timing of launches;
//! * a store to flag memory (a DMA UB -> GM, atomic or not; a scalar write-back or
//!   WriteGmByPassDCache) raises every cell it touches to `max(cell, block + 1)`, *before* the
//!   bytes land;
//! * a load of flag memory (DMA GM -> UB; a scalar line fill or ReadGmByPassDCache) raises the
//!   block to `max(block, cell)` over the cells it touches, *after* the bytes were read.
//!
//! So a block that saw a value some store wrote is at least one deeper than the writer was when
//! it wrote: the depth counts the store -> load hops ("sync rounds") of the longest causal chain
//! that leads to the block. The rounds of an operation are the largest depth any block reached.
//!
//! Cells keep the largest depth any store gave them since the census was last taken (flags are
//! never cleared, so a cell holds values of several launches). Every load joins, whatever value
//! it read. Joining only loads that saw a changed value would need the value each store wrote
//! (unknown for atomic adds before they land); instead, raising a cell before its store lands
//! and joining after a load guarantees that a load that saw a store's value joins its depth.
//! With cells that only grow, what a waiter ends at does not depend on when it polled: it joins
//! every store to the cell up to the one it waited for. It can over-count only by joining a store
//! that lands at that very moment, or one of an earlier launch that went deeper into the same
//! cell than the store it waits for. In aiv-comm's collectives each launch writes a cell once
//! (counting cells: once per contribution) and the launches of one operation repeat the same
//! chain, so the figures are exact there.
//!
//! # Waits
//!
//! A *wait* is a maximal run of loads of one flag range by one block with no other GM access of
//! that block in between (other DMA, other flag loads, flag stores, scalar accesses): one poll
//! loop, however many times it had to read. A wait is *blocking* if one of its loads raised the
//! block's depth, i.e. it waited for a signal from a round the block had not yet seen; the other
//! waits saw signals that were at most as deep as the block (orderings already implied by what
//! it had waited for, or by the launch order). Along the deepest chain every round is one store
//! and one blocking wait, so the waits on the critical path number exactly the rounds.
//!
//! A single load of another flag range inside a poll loop (the loop then reads its own range
//! again) is a side check, not a wait of its own, unless it raised the depth: aiv-comm's waits
//! read their rank's abort cell that way once they have waited long (`AIV_ABORT_OFFSET`), so
//! how long a wait took does not change the count. (A loop that polls two ranges in turn, one
//! load each, would count as one wait, and so would a wait on X, an already satisfied one-load
//! wait on Y and a wait on X with no other GM access between them; aiv-comm's kernels have
//! neither.)
//!
//! # Bytes
//!
//! The census counts each DMA as [`crate::GmTraffic`] does (DataCopy / DataCopyPad; an atomic
//! store also reads its destination; scalar accesses are not counted), per rank of the launch
//! that moved it, split by memory kind: data bytes (inputs, outputs, HCCL buffers) do not
//! depend on timing; flag bytes do (every poll reads its cell again).
//!
//! Cross-core flags (`CrossCoreSetFlag` / `SyncAll`) do not go through GM and are not counted.
//!
//! # Cost
//!
//! With the census off a block carries no census state and every hook is one branch on `None`;
//! the table is built by the first block that starts with the census on. With it on, every flag
//! access takes one lock of the twin's table: it is meant for one untimed run beside the timed
//! ones.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// Bytes of one flag cell.
pub const CELL: usize = 32;

/// What the census saw of one rank's kernels (definitions: `ascendc-twin/src/census.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankCensus {
    /// Bytes the rank's DMA read from data memory (an atomic store's destination included).
    pub data_read: u64,
    /// Bytes the rank's DMA wrote to data memory.
    pub data_written: u64,
    /// Bytes the rank's DMA read from flag memory (every poll, and atomic flag destinations).
    pub flag_read: u64,
    /// Bytes the rank's DMA wrote to flag memory.
    pub flag_written: u64,
    /// Loads of flag memory (DMA, scalar line fills and cached reads, bypass reads).
    pub flag_loads: u64,
    /// Stores to flag memory that reached GM (DMA, scalar write-backs, bypass writes).
    pub flag_stores: u64,
    /// Waits: runs of loads of one flag range with no other GM access between them.
    pub waits: u64,
    /// Waits that raised the block's depth.
    pub blocking_waits: u64,
    /// Launches of the rank.
    pub launches: u64,
    /// Blocks the rank's launches ran.
    pub blocks: u64,
    /// The largest depth a block of the rank ended at.
    pub depth: u32,
}

impl RankCensus {
    fn add(&mut self, o: &RankCensus) {
        self.data_read += o.data_read;
        self.data_written += o.data_written;
        self.flag_read += o.flag_read;
        self.flag_written += o.flag_written;
        self.flag_loads += o.flag_loads;
        self.flag_stores += o.flag_stores;
        self.waits += o.waits;
        self.blocking_waits += o.blocking_waits;
        self.launches += o.launches;
        self.blocks += o.blocks;
        self.depth = self.depth.max(o.depth);
    }
}

/// What the census recorded between two [`crate::Twin::take_census`] calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Per rank (index = rank; ranks that ran nothing are all zero). Empty if no launch ran with
    /// the census on.
    pub ranks: Vec<RankCensus>,
    /// Sync rounds on the critical path: the largest depth any block reached.
    pub rounds: u32,
    /// Flag cells stored to.
    pub cells: usize,
}

impl Census {
    /// True if no launch ran with the census on.
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }
}

/// The census table of one twin: built when the first block starts with the census on.
#[derive(Default)]
struct Table {
    /// Depth of each flag cell stored to (key: address / CELL).
    cells: HashMap<usize, u32>,
    /// Per rank: the merged figures of its ended blocks.
    ranks: Vec<RankCensus>,
}

/// The twin's census state (in [`crate::twin::TwinInner`]).
#[derive(Default)]
pub(crate) struct Shared {
    table: Mutex<Option<Table>>,
}

impl Shared {
    /// The census of one launch starting now on `rank`.
    pub fn launch(self: &Arc<Self>, rank: u32) -> LaunchCensus {
        let mut t = self.table.lock();
        t.get_or_insert_with(Table::default).rank(rank).launches += 1;
        LaunchCensus {
            shared: self.clone(),
            rank,
        }
    }

    /// Everything recorded so far; forgets it (the table is dropped).
    pub fn take(&self) -> Census {
        let Some(t) = self.table.lock().take() else {
            return Census::default();
        };
        Census {
            rounds: t.ranks.iter().map(|r| r.depth).max().unwrap_or(0),
            cells: t.cells.len(),
            ranks: t.ranks,
        }
    }
}

impl Table {
    /// The figures of `rank` (made now if it has none yet).
    fn rank(&mut self, rank: u32) -> &mut RankCensus {
        let r = rank as usize;
        if self.ranks.len() <= r {
            self.ranks.resize(r + 1, RankCensus::default());
        }
        &mut self.ranks[r]
    }
}

/// The census of one launch (made before its blocks start).
pub(crate) struct LaunchCensus {
    shared: Arc<Shared>,
    rank: u32,
}

impl LaunchCensus {
    /// The state of one block of the launch.
    pub fn block(&self) -> Box<BlockCensus> {
        Box::new(BlockCensus {
            shared: self.shared.clone(),
            rank: self.rank,
            depth: 0,
            run: None,
            run_raised: false,
            run_loads: 0,
            paused: None,
            stats: RankCensus {
                blocks: 1,
                ..RankCensus::default()
            },
        })
    }
}

/// What a GM access is, for the census.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A load (of flag memory: part of a wait).
    Load,
    /// A store that reaches GM now.
    Store,
    /// Anything else (a scalar store into the data cache).
    Other,
}

/// The census state of one running block; merged into the table when the block ends (drop).
pub(crate) struct BlockCensus {
    shared: Arc<Shared>,
    rank: u32,
    depth: u32,
    /// The flag range of the wait in progress.
    run: Option<(usize, usize)>,
    /// Whether a load of the wait in progress raised the depth.
    run_raised: bool,
    /// Loads in the wait in progress.
    run_loads: u32,
    /// The wait a load of another range interrupted, and whether it had raised the depth: it
    /// resumes if the next load is of its range again.
    paused: Option<((usize, usize), bool)>,
    stats: RankCensus,
}

/// The cells `[addr, addr + len)` touches.
fn cells(addr: usize, len: usize) -> std::ops::Range<usize> {
    addr / CELL..(addr + len.max(1)).div_ceil(CELL)
}

impl BlockCensus {
    /// One DMA of the block (`counted`: bytes read and written, as the traffic counters count
    /// them) over the GM `ranges`; `flag`: to flag memory. A flag store raises its cells here,
    /// before it lands; a flag load joins in [`BlockCensus::acquire`], after it was read.
    pub fn copy(
        &mut self,
        flag: bool,
        load: bool,
        counted: (usize, usize),
        ranges: impl Iterator<Item = (usize, usize)> + Clone,
    ) {
        let (r, w) = (counted.0 as u64, counted.1 as u64);
        if flag {
            self.stats.flag_read += r;
            self.stats.flag_written += w;
        } else {
            self.stats.data_read += r;
            self.stats.data_written += w;
        }
        let op = if load { Op::Load } else { Op::Store };
        self.access(flag, op, ranges);
    }

    /// A GM access of the block over `ranges` (flag or data memory): continues or starts a
    /// wait, or ends it; a flag store raises its cells.
    pub fn access(
        &mut self,
        flag: bool,
        op: Op,
        ranges: impl Iterator<Item = (usize, usize)> + Clone,
    ) {
        if flag && op == Op::Load {
            self.stats.flag_loads += 1;
            let span = ranges.fold((usize::MAX, 0), |(a, e), (s, l)| (a.min(s), e.max(s + l)));
            if self.run == Some(span) {
                self.run_loads += 1;
                return;
            }
            if let Some((p, p_raised)) = self.paused {
                if p == span && self.run_loads == 1 && !self.run_raised {
                    // The run that just ended was one side load inside this wait.
                    self.stats.waits -= 1;
                    self.paused = None;
                    self.run = Some(span);
                    self.run_raised = p_raised;
                    self.run_loads = 1;
                    return;
                }
            }
            self.end_paused();
            self.paused = self
                .run
                .take()
                .map(|r| (r, std::mem::take(&mut self.run_raised)));
            self.run = Some(span);
            self.run_loads = 1;
            self.stats.waits += 1;
            return;
        }
        self.end_wait();
        if flag && op == Op::Store {
            self.stats.flag_stores += 1;
            let d = self.depth + 1;
            let mut t = self.shared.table.lock();
            let t = t.get_or_insert_with(Table::default);
            for (a, l) in ranges {
                for c in cells(a, l) {
                    let e = t.cells.entry(c).or_insert(0);
                    *e = (*e).max(d);
                }
            }
        }
    }

    /// A load of flag memory over `ranges` has read GM: the block joins the cells' depths.
    pub fn acquire(&mut self, ranges: impl Iterator<Item = (usize, usize)>) {
        let seen = {
            let t = self.shared.table.lock();
            let Some(t) = t.as_ref() else {
                return;
            };
            ranges
                .flat_map(|(a, l)| cells(a, l))
                .filter_map(|c| t.cells.get(&c).copied())
                .max()
                .unwrap_or(0)
        };
        if seen > self.depth {
            self.depth = seen;
            self.run_raised = true;
        }
    }

    /// Ends the paused wait, if any.
    fn end_paused(&mut self) {
        if let Some((_, true)) = self.paused.take() {
            self.stats.blocking_waits += 1;
        }
    }

    fn end_wait(&mut self) {
        self.end_paused();
        if self.run.take().is_some() && std::mem::take(&mut self.run_raised) {
            self.stats.blocking_waits += 1;
        }
        self.run_loads = 0;
    }
}

impl Drop for BlockCensus {
    fn drop(&mut self) {
        self.end_wait();
        self.stats.depth = self.depth;
        let mut t = self.shared.table.lock();
        t.get_or_insert_with(Table::default)
            .rank(self.rank)
            .add(&self.stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(a: usize) -> std::iter::Once<(usize, usize)> {
        std::iter::once((a, CELL))
    }

    #[test]
    fn a_store_then_a_load_is_one_round_and_one_blocking_wait() {
        let shared = Arc::new(Shared::default());
        let (l0, l1) = (shared.launch(0), shared.launch(1));
        let mut writer = l0.block();
        let mut reader = l1.block();
        // The reader polls before the store: a wait that sees nothing deeper yet.
        reader.copy(true, true, (CELL, 0), one(64));
        reader.acquire(one(64));
        writer.copy(false, true, (4096, 0), one(4096)); // data
        writer.copy(true, false, (0, CELL), one(64));
        reader.copy(true, true, (CELL, 0), one(64)); // the same poll loop
        reader.acquire(one(64));
        reader.copy(false, false, (0, 4096), one(8192)); // data after the wait
        drop((writer, reader));
        let c = shared.take();
        assert_eq!(c.rounds, 1);
        assert_eq!(c.cells, 1);
        let (w, r) = (c.ranks[0], c.ranks[1]);
        assert_eq!(
            (w.data_read, w.flag_written, w.flag_stores, w.depth),
            (4096, 32, 1, 0)
        );
        assert_eq!(
            (r.waits, r.blocking_waits, r.flag_loads, r.flag_read),
            (1, 1, 2, 64)
        );
        assert_eq!((r.data_written, r.depth, r.blocks), (4096, 1, 1));
        assert_eq!(shared.take(), Census::default());
    }

    #[test]
    fn one_load_of_another_range_inside_a_poll_loop_is_not_a_wait_of_its_own() {
        let shared = Arc::new(Shared::default());
        let mut writer = shared.launch(0).block();
        let mut reader = shared.launch(1).block();
        let poll = |r: &mut BlockCensus, at: usize| {
            r.copy(true, true, (CELL, 0), one(at));
            r.acquire(one(at));
        };
        // Polls cell 0, checks a cell nobody stores (1024) once, polls cell 0 again: one wait.
        poll(&mut reader, 0);
        poll(&mut reader, 1024);
        writer.copy(true, false, (0, CELL), one(0));
        poll(&mut reader, 0);
        poll(&mut reader, 1024);
        poll(&mut reader, 0);
        reader.copy(false, false, (0, 4096), one(8192));
        // Two loads of another range in a row: a wait of its own.
        poll(&mut reader, 0);
        poll(&mut reader, 2048);
        poll(&mut reader, 2048);
        poll(&mut reader, 0);
        drop((writer, reader));
        let r = shared.take().ranks[1];
        assert_eq!((r.waits, r.blocking_waits, r.flag_loads), (4, 1, 9));
    }

    #[test]
    fn every_launch_starts_at_depth_zero_and_cells_keep_their_deepest_store() {
        let shared = Arc::new(Shared::default());
        let mut a = shared.launch(0).block();
        a.copy(true, false, (0, CELL), one(0));
        let mut b = shared.launch(1).block();
        b.copy(true, true, (CELL, 0), one(0));
        b.acquire(one(0));
        // Another cell in the same DMA range: a second wait, not raising.
        b.copy(true, true, (CELL, 0), one(32));
        b.acquire(one(32));
        b.copy(true, false, (0, CELL), one(64));
        drop((a, b));
        // Rank 1's next launch starts at 0 again; cell 64 keeps depth 2 from the first one.
        let mut next = shared.launch(1).block();
        next.copy(true, false, (0, CELL), one(64));
        let mut other = shared.launch(0).block();
        other.copy(true, true, (CELL, 0), one(64));
        other.acquire(one(64));
        drop((next, other));
        let c = shared.take();
        assert_eq!(c.rounds, 2, "{c:?}");
        assert_eq!((c.ranks[0].depth, c.ranks[1].depth, c.cells), (2, 1, 2));
        assert_eq!((c.ranks[1].waits, c.ranks[1].blocking_waits), (2, 1));
        assert_eq!((c.ranks[0].launches, c.ranks[1].launches), (2, 2));
    }
}
