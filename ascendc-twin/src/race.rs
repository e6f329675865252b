//! GM race checker: happens-before over flags, between the blocks of all ranks of one twin.
//!
//! A kernel that reads a peer's buffer before seeing the peer's flag, or overwrites its staging
//! buffer while a peer may still read it, can get the right answer on the twin by luck of the
//! schedule. This checker reports such accesses whether or not the data came out right.
//!
//! Model:
//! * participants are the cores of the twin's devices (numbered densely as they first run a
//!   block), each with a vector clock while it runs a block;
//! * accesses to flag memory (sync allocations and ranges marked as flags: the classification is
//!   by address, see `mem.rs`, never by size) are synchronisation: a store releases the block's
//!   clock into every 32-byte cell it touches, a load acquires what was released into the cells
//!   it reads (whatever value it sees: this can miss a race, never invent one);
//! * a block starts knowing everything the launches of its twin that have already finished did
//!   (host-side ordering: stream order, events, `synchronize` between phases);
//! * every access to data memory, whatever its size (DataCopy/DataCopyPad bodies and tails,
//!   scalar GetValue/SetValue), is checked: a read must be ordered after the last writes of the
//!   bytes, a write after their last reads and writes. Atomic stores (SetAtomicAdd/Max/Min) need
//!   no order among themselves;
//! * scalar GM accesses that reach GM (ReadGmByPassDCache / WriteGmByPassDCache, a GetValue's
//!   line fill after DataCacheCleanAndInvalid or on first touch, a dirty line's write-back) are
//!   the AscendC docs' ways of synchronising through GM, so on data memory too they are
//!   synchronisation ([`Kind::Sync`]): a sync store releases into the cells it touches and a
//!   sync load that reads GM acquires, as on flag memory. They are still checked against every
//!   DMA access (a DataCopy racing with a poll or a flag store is a race), and two sync stores of
//!   the same bytes still need an order (a lost update; two cores' write-backs of one 64-byte
//!   line overwrite each other); only a sync load and a sync store of the same bytes (a poll
//!   seeing a flag change) need none. A flag kept in an ordinary buffer, written and polled as
//!   the docs say, is therefore no race, and what it orders is checked through it;
//! * a plain DMA store that no flag orders after another block's plain DMA store of the same
//!   bytes, and that stores exactly the bytes that store left there, is harmless (no order of
//!   the two can change what GM holds): it is counted ([`RaceCtx::benign`]), not reported. The
//!   twin checks a store before it copies its bytes, so "the bytes that store left" are in GM
//!   only once the earlier store has landed: each participant publishes whether one of its
//!   plain DMA stores is between its check and the end of its copy ([`RaceCtx::store_begin`],
//!   [`RaceCtx::store_end`]), and a later store compares GM with its own bytes only when the
//!   earlier writer has none in flight, waiting (with no lock held) for it to land otherwise.
//!   Waiting cannot deadlock: a block waits only before recording a piece at a higher address
//!   than every piece of its store it has recorded, and a DataCopy's bursts ascend. An earlier
//!   store that does not land within [`LANDING_WAIT`] (or one in a test that does not wait) is
//!   reported. The rule does not apply to reads after writes or writes after reads (identical
//!   bytes or not: a read before the write may see either), nor to atomic stores (what they
//!   store depends on what is there, so their order matters), nor to scalar stores (they are
//!   synchronisation here, whose order the two sync stores' rule asks for; a write-back also
//!   stores the bytes of its 64-byte line the core did not write, at a time the data cache
//!   picks).
//!
//! Host copies into and out of GM are not tracked (the host orders them with the streams).

use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::padded::Padded;

const CELL: usize = 32;

/// How long a store waits for an earlier unordered store of the same bytes, made by another
/// block right now, to land before comparing bytes with it; one that has not landed by then is
/// reported. (The twin copies a store's bytes right after checking it, with nothing in between
/// that waits: a second is for a worker thread the host did not run meanwhile.)
pub(crate) const LANDING_WAIT: Duration = Duration::from_secs(1);

/// A participant's DMA stores in progress: odd while one of its plain DMA stores to data memory
/// is between its race check and the end of its copy, even otherwise. Only the participant's
/// running block writes it; others read it when a store of theirs meets one of its writes.
type Landing = Arc<Padded<AtomicU64>>;

/// Hasher of the checker's maps, keyed by cell addresses, participant numbers and granule
/// indices ([`GranuleKey`]): a multiply and a fold (the default SipHash was a tenth of a
/// checked small collective: every flag poll looks its cell up). Keys come from the twin's own
/// memory layout, not from an adversary.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0 ^ x).rotate_left(27);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<KeyHasher>>;

#[derive(Clone, Copy, PartialEq, Eq)]
struct Acc {
    who: u16,
    clock: u32,
    atomic: bool,
    /// A scalar synchronising access ([`Kind::Sync`]).
    sync: bool,
}

/// What kind of access a data-memory access is (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A DMA read or write (DataCopy, DataCopyPad).
    Plain,
    /// A DMA store in an atomic mode (SetAtomicAdd/Max/Min).
    Atomic,
    /// A scalar access that reaches GM: a bypass read or write, a line fill, a write-back.
    Sync,
}

impl Acc {
    /// A DMA read or write (neither atomic nor a scalar synchronising access).
    fn plain(self) -> bool {
        !self.atomic && !self.sync
    }
}

/// Whether an earlier access `e` and a later one `me` (a write or not) of the same bytes, not
/// ordered by any flag, are allowed: two atomic stores, or a sync load and a sync store.
fn may_overlap(e: Acc, e_write: bool, me: Acc, write: bool) -> bool {
    (write && e_write && me.atomic && e.atomic) || (write != e_write && me.sync && e.sync)
}

/// The recorded accesses of a run of GM bytes. The lists are held inline for the common
/// counts (up to 2 writers, atomic ones; up to 8 readers, one per participant), so that
/// checking and recording an access touches the segment's own cache lines and no heap block:
/// a buffer both workers read moves between their cores at every access, and each separate
/// line is one more transfer. A segment takes 104 bytes (56 with two `Vec`s); kernels leave
/// few segments per buffer (a plain write merges the range it covers into one).
#[derive(Clone)]
struct Seg {
    end: usize,
    writes: SmallVec<[Acc; 2]>,
    reads: SmallVec<[Acc; 8]>,
}

impl Seg {
    /// Bytes up to `end` that nothing has accessed.
    fn empty(end: usize) -> Seg {
        Seg {
            end,
            writes: SmallVec::new(),
            reads: SmallVec::new(),
        }
    }
}

/// One flag cell: what was released into it (the join of the releasers' clocks) and how many
/// releases that was, on cache lines of its own. A release and the acquires that follow it move
/// this cell between the cores and nothing else: with two workers, every cache line a flag
/// operation shares with the other worker costs a transfer (a round trip of ~130 ns measured on
/// a 2-vCPU VM), and a single lock, map and counter array for all cells cost four or five per
/// operation. Within the cell, the fields are laid out in order (`repr(C)`) so that the
/// version, the dead mark, the lock and the clock (inline up to 8 participants, length word
/// included) share its first cache line: a release and the acquire that sees it then move one
/// line between the cores, not two (in Rust's own order the lock and the counters fell on
/// different lines; a release there waited for both).
#[repr(C, align(128))]
struct FlagCell {
    /// Releases into the cell so far, stored under `released`'s lock; an acquirer reads it
    /// without the lock, to skip a cell that nothing was released into since it last looked
    /// (polls re-read unchanged flags many times).
    version: AtomicU64,
    /// Its memory was freed ([`RaceShadow::forget`]): blocks that still hold the cell look its
    /// address up again (a block running across the free keeps its `seen` map, and passes it
    /// on to its participant's next block).
    dead: AtomicBool,
    /// The join of the releasers' clocks.
    released: Mutex<Clock>,
}

// The counters, the lock and the whole inline clock lie in the cell's first 64-byte line.
const _: () =
    assert!(std::mem::offset_of!(FlagCell, released) + std::mem::size_of::<Mutex<Clock>>() <= 64);

/// A flag cell a block has released into or acquired from, and the cell's version when it
/// last joined the cell's clock (0: never).
struct Seen {
    cell: Arc<FlagCell>,
    version: u64,
}

/// A vector clock, one entry per participant: inline up to 8 (a twin's ranks times the cores
/// its launches used: 8 ranks of one block, 2 ranks of 4), 40 bytes with its length word, so
/// that it fits the cache line it shares with its lock; a larger twin's clocks are on the heap.
type Clock = SmallVec<[u32; 8]>;

/// The participants of a twin. Every block's start and end takes its lock, from whichever
/// worker runs the block, so what they write is kept on one cache line: the lock and the
/// finished clock, inline right after it (`repr(C)`; up to 8 participants). The other fields
/// change only when a participant joins, and each participant's parked `seen` map is on lines
/// of its own, which only the workers running that participant's blocks touch.
#[derive(Default)]
#[repr(C)]
struct Group {
    /// The join of the final clocks of every finished block of the twin.
    finished: Clock,
    index: HashMap<(u32, usize), u16>,
    names: Vec<(u32, usize)>,
    /// Per participant, the `seen` map its last finished block left: the next block on that
    /// core starts knowing at least as much (`finished` includes its predecessor's clock), so it
    /// can keep skipping the cells its predecessor had already synchronised with.
    seen: Vec<Padded<HashMap<usize, Seen>>>,
    /// Per participant, its stores in progress ([`Landing`]).
    landing: Vec<Landing>,
}

// The participants' lock and the finished clock lie in the first 64-byte line of the
// (Padded, so line-aligned) mutex: its data starts at most 8 bytes in. (That the lock comes
// first, parking_lot's Mutex not being repr(C), is checked by a unit test.)
const _: () = assert!(
    std::mem::offset_of!(Group, finished) == 0
        && std::mem::size_of::<Mutex<Group>>() - std::mem::size_of::<Group>() <= 8
        && 8 + std::mem::size_of::<Clock>() <= 64
);

/// The recorded accesses of one granule of GM: its segments as (start, segment), in address
/// order, not overlapping, within the granule (bytes in no segment have no recorded access). Most
/// granules hold one or two (a DMA piece rarely starts or ends in the middle of more), kept
/// inline, so that a lookup reads the hash table's slot and this list's first line.
type Granule = SmallVec<[(usize, Seg); 2]>;

/// The recorded accesses of one shard of GM (the granules that map to it), by the granule's
/// first byte (see [`GRANULE`]). A flat table rather than an ordered map of segments: a lookup
/// reads the table's slot and the granule's list, where a descent through the nodes of an
/// ordered map misses the cache at every level once GM takes gigabytes (8 ranks of 64 MiB
/// AllGathers: hundreds of segments per shard).
#[derive(Default)]
struct Segs {
    /// Tests: take the general path for every access (the reference the fast path must agree
    /// with).
    #[cfg(test)]
    force_general: bool,
    /// Tests: accesses that recorded into a gap before a segment of the range.
    #[cfg(test)]
    gaps_before: usize,
    map: HashMap<GranuleKey, Granule>,
}

/// A granule's key: its first byte. Hashed as its place among its shard's granules, the index
/// of the [`GRANULE`] it starts in divided by [`SHARDS`] (the shard is that index modulo
/// SHARDS): a big buffer's granules in one shard then hash consecutive numbers, whose
/// differences [`KeyHasher`] spreads over the table's buckets. The first bytes of one
/// allocation's granules differ only from bit 16 up, and hashing the address itself put every
/// granule of a big buffer in one probe chain (a checked 8-rank 64 MiB AllGather took 1.31x
/// its unchecked time instead of 1.19-1.21x). Two granules starting in one GRANULE (the end of
/// one allocation, the start of the next) share a hash, not a key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct GranuleKey(usize);

impl Hash for GranuleKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.0 / GRANULE / SHARDS);
    }
}

/// GM is recorded in granules of this many bytes (a segment never crosses one), each kept by
/// shard `(first byte / GRANULE) % SHARDS` under a lock of its own: blocks moving different
/// buffers on different workers rarely wait for each other (one lock for all of it was the
/// checker's main cost in wall time with two workers).
///
/// Granules are counted from each allocation's first byte (its origin), not from address 0:
/// allocations are only page-aligned, so a 64 KiB buffer counted from 0 almost always
/// straddled two granules, and every whole-buffer access took two locks and two lookups, and
/// moved twice the cache lines between the workers (a tenth or more of the checkers' cost in
/// issue 14's 64 KiB collectives). A granule's key, its first byte, lies in its allocation, so
/// the granules of live allocations never share a key.
const GRANULE: usize = 64 * 1024;
/// Shards of the recorded accesses.
const SHARDS: usize = 64;

/// The race checker's state of one twin. Four kinds of state, each under its own locks, and
/// no lock is ever taken while another is held: the participants, the directory of flag cells
/// (taken when a block's participant meets a cell it holds no live handle to, and by
/// [`RaceShadow::forget`]), each flag cell, the data accesses by address.
pub(crate) struct RaceShadow {
    group: Padded<Mutex<Group>>,
    cells: Padded<Mutex<HashMap<usize, Arc<FlagCell>>>>,
    shards: Box<[Padded<Mutex<Segs>>]>,
    /// Tests: report a store that meets another block's store in flight at once, rather than
    /// wait for it to land (a single-threaded test would wait in vain).
    #[cfg(test)]
    no_wait: AtomicBool,
}

impl Default for RaceShadow {
    fn default() -> Self {
        RaceShadow {
            group: Padded(Mutex::new(Group::default())),
            cells: Padded(Mutex::new(HashMap::default())),
            shards: (0..SHARDS).map(|_| Padded(Mutex::default())).collect(),
            #[cfg(test)]
            no_wait: AtomicBool::new(false),
        }
    }
}

impl RaceShadow {
    /// The flag cell at `cell` (a multiple of [`CELL`]), made on first use.
    fn cell(&self, cell: usize) -> Arc<FlagCell> {
        self.cells
            .lock()
            .entry(cell)
            .or_insert_with(|| {
                Arc::new(FlagCell {
                    version: AtomicU64::new(0),
                    dead: AtomicBool::new(false),
                    released: Mutex::new(Clock::new()),
                })
            })
            .clone()
    }

    /// The shard of the granule whose first byte is `key`.
    fn shard(&self, key: usize) -> &Mutex<Segs> {
        &self.shards[(key / GRANULE) % SHARDS]
    }

    /// Forgets everything about `[addr, addr + len)`, which lies in the allocation whose first
    /// byte is `origin` (the allocation is being freed). Its flag cells are marked dead, so the
    /// blocks running now, which may hold them, take the new cells at their next use of the
    /// addresses.
    pub fn forget(&self, origin: usize, addr: usize, len: usize) {
        let end = addr + len;
        let keep = |cell: &usize| *cell < addr || *cell >= end;
        for seen in &mut self.group.lock().seen {
            seen.0.retain(|cell, _| keep(cell));
        }
        self.cells.lock().retain(|cell, c| {
            if !keep(cell) {
                c.dead.store(true, Ordering::SeqCst);
            }
            keep(cell)
        });
        if len == 0 {
            return;
        }
        // The keys of the range's first and last granules, and how many granules it spans.
        let (first, last) = (granule_at(origin, addr), granule_at(origin, end - 1));
        let count = (last - first) / GRANULE + 1;
        // At most this many of the range's granules lie in any one shard.
        let in_range = count / SHARDS + 1;
        let ours =
            |key: usize| (first..=last).contains(&key) && (key - first).is_multiple_of(GRANULE);
        let trim = |key: usize, g: &mut Granule| {
            forget_in(g, addr.max(key), end.min(key + GRANULE));
            !g.is_empty()
        };
        for (i, shard) in self.shards.iter().enumerate() {
            let mut s = shard.lock();
            let map = &mut s.map;
            // The range's granules in this shard, or the shard's table (whose walk visits every
            // slot), whichever are fewer.
            if in_range > map.capacity() {
                map.retain(|&GranuleKey(key), g| !ours(key) || trim(key, g));
            } else {
                // Granule k of the range (key first + k * GRANULE) is in shard
                // (first / GRANULE + k) % SHARDS.
                let k0 = (i + SHARDS - (first / GRANULE) % SHARDS) % SHARDS;
                for k in (k0..count).step_by(SHARDS) {
                    let key = first + k * GRANULE;
                    if let Some(g) = map.get_mut(&GranuleKey(key)) {
                        if !trim(key, g) {
                            map.remove(&GranuleKey(key));
                        }
                    }
                }
            }
        }
    }

    /// Tests: whether every granule in the table is well formed: in its own shard, not empty
    /// (an emptied one is removed, so that the table does not grow with memory that was freed),
    /// its segments not empty, in address order, not overlapping, inside the granule.
    #[cfg(test)]
    fn granules_well_formed(&self) -> bool {
        self.shards.iter().enumerate().all(|(i, s)| {
            s.lock().map.iter().all(|(&GranuleKey(key), g)| {
                let (lo, hi) = (key, key + GRANULE);
                (key / GRANULE) % SHARDS == i
                    && !g.is_empty()
                    && g.iter()
                        .all(|(start, seg)| lo <= *start && *start < seg.end && seg.end <= hi)
                    && g.windows(2).all(|w| w[0].1.end <= w[1].0)
            })
        })
    }

    /// Who participant `who` is, for messages.
    fn name(&self, who: u16) -> String {
        self.group.lock().names.get(who as usize).map_or_else(
            || format!("participant {who}"),
            |(r, c)| format!("rank {r} core {c}"),
        )
    }
}

/// The key (first byte) of the granule holding `addr`, in an allocation whose first byte is
/// `origin` (at most `addr`): granules start at the origin and every [`GRANULE`] bytes after.
fn granule_at(origin: usize, addr: usize) -> usize {
    debug_assert!(
        origin <= addr,
        "{addr:#x} before its allocation at {origin:#x}"
    );
    addr - (addr - origin) % GRANULE
}

/// `a = max(a, b)` element-wise, `a` grown to `b`'s length.
fn join(a: &mut Clock, b: &[u32]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    join_max(&mut a[..b.len()], b);
}

/// `a = max(a, b)` element-wise, over slices of one length.
fn join_max(a: &mut [u32], b: &[u32]) {
    // Every changed flag a block acquires, and every flag store, joins a clock of one entry
    // per core of the twin (64 on 8 ranks x 8 blocks). Baseline x86-64 (SSE2) has no unsigned
    // 32-bit max, so the plain loop runs one element at a time; with AVX2 it is eight per
    // instruction. Without the feature (or off x86-64) the plain loop runs.
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), all `join_avx2` requires.
        return unsafe { join_avx2(a, b) };
    }
    join_slices(a, b);
}

/// [`join_slices`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn join_avx2(a: &mut [u32], b: &[u32]) {
    join_slices(a, b);
}

/// `a = max(a, b)` element-wise over the shorter of the two.
#[inline(always)]
fn join_slices(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

fn at(vc: &[u32], who: u16) -> u32 {
    vc.get(who as usize).copied().unwrap_or(0)
}

/// The checker state of one running block.
pub(crate) struct RaceCtx {
    me: usize,
    vc: Clock,
    /// The flag cells this block (or its participant's earlier blocks) touched, by address.
    seen: HashMap<usize, Seen>,
    /// This participant's stores in progress.
    landing: Landing,
    /// The other participants' stores in progress, as far as this block has needed them
    /// (filled from the group when a store meets a participant not in it yet).
    peers: Vec<Landing>,
    /// Unordered plain DMA stores of this block that stored exactly the bytes another block's
    /// landed plain store had left there (not reported: see the module docs).
    pub benign: u64,
}

impl RaceCtx {
    /// A block on `rank`'s core `core`; None when the twin has more participants than the
    /// checker can number (65536).
    pub fn start(shadow: &RaceShadow, rank: u32, core: usize) -> Option<RaceCtx> {
        let (me, mut vc, seen, landing) = {
            let g = &mut *shadow.group.lock();
            let me = match g.index.get(&(rank, core)) {
                Some(i) => *i as usize,
                None => {
                    let i = g.names.len();
                    g.index.insert((rank, core), u16::try_from(i).ok()?);
                    g.names.push((rank, core));
                    i
                }
            };
            let seen = g
                .seen
                .get_mut(me)
                .map(|s| std::mem::take(&mut s.0))
                .unwrap_or_default();
            if g.landing.len() <= me {
                g.landing.resize_with(me + 1, Landing::default);
            }
            (me, g.finished.clone(), seen, g.landing[me].clone())
        };
        if vc.len() <= me {
            vc.resize(me + 1, 0);
        }
        vc[me] += 1;
        Some(RaceCtx {
            me,
            vc,
            seen,
            landing,
            peers: Vec::new(),
            benign: 0,
        })
    }

    /// A plain DMA store to data memory begins: call before its first [`RaceCtx::access_store`]
    /// and, whatever happens, [`RaceCtx::store_end`] once its bytes are in GM (or it stopped).
    pub fn store_begin(&self) {
        let c = &self.landing.0;
        // Only this block writes the counter. Relaxed suffices: a block that finds this store's
        // record took the shard lock after this block released it, so it reads this value or
        // a later one.
        c.store(c.load(Ordering::Relaxed) | 1, Ordering::Relaxed);
    }

    /// The store [`RaceCtx::store_begin`] began has landed (its bytes are in GM) or stopped.
    pub fn store_end(&self) {
        let c = &self.landing.0;
        let n = c.load(Ordering::Relaxed);
        if n % 2 == 1 {
            // Release: a block that reads the new value sees the bytes copied before it.
            c.store(n + 1, Ordering::Release);
        }
    }

    /// The block ended: later launches of the twin know everything it did.
    pub fn finish(&mut self, shadow: &RaceShadow) {
        self.store_end();
        let seen = std::mem::take(&mut self.seen);
        let g = &mut *shadow.group.lock();
        join(&mut g.finished, &self.vc);
        if g.seen.len() <= self.me {
            g.seen.resize_with(self.me + 1, Padded::default);
        }
        g.seen[self.me].0 = seen;
    }

    /// A flag store (release) to `[addr, addr + len)`. Called before the store lands, so a
    /// block whose load sees the stored value finds the release.
    pub fn release(&mut self, shadow: &RaceShadow, addr: usize, len: usize) {
        for cell in (addr / CELL)..=((addr + len.max(1) - 1) / CELL) {
            let c = &seen_cell(&mut self.seen, shadow, cell * CELL).cell;
            let mut released = c.released.lock();
            join(&mut released, &self.vc);
            // Under the lock: an acquirer that takes the lock reads the version matching the
            // clock it joins.
            c.version.fetch_add(1, Ordering::SeqCst);
        }
        self.vc[self.me] += 1;
    }

    /// A flag load (acquire) from `[addr, addr + len)`. Called after the load read the flag.
    pub fn acquire(&mut self, shadow: &RaceShadow, addr: usize, len: usize) {
        for cell in (addr / CELL)..=((addr + len.max(1) - 1) / CELL) {
            let s = seen_cell(&mut self.seen, shadow, cell * CELL);
            // Nothing released into the cell since this block last synchronised with it: skip
            // the lock (the cell's cache line stays shared while nobody releases into it).
            if s.cell.version.load(Ordering::SeqCst) != s.version {
                let released = s.cell.released.lock();
                join(&mut self.vc, &released);
                s.version = s.cell.version.load(Ordering::SeqCst);
            }
        }
    }

    /// A data access of `kind` to `[addr, addr + len)`, which lies in the allocation whose first
    /// byte is `origin`; returns a description of the race if it is not ordered after the
    /// conflicting earlier accesses.
    pub fn access(
        &mut self,
        shadow: &RaceShadow,
        origin: usize,
        addr: usize,
        len: usize,
        write: bool,
        kind: Kind,
    ) -> Result<(), String> {
        self.access_with(shadow, origin, addr, len, write, kind, None)
    }

    /// A plain DMA store to `[addr, addr + len)` (as [`RaceCtx::access`]), between
    /// [`RaceCtx::store_begin`] and [`RaceCtx::store_end`], whose bytes `differs` compares with
    /// GM: given a range of the store, the first address of it where GM holds other bytes than
    /// the store writes there (None: the same bytes). An unordered earlier plain DMA store of
    /// the same bytes is no race where GM, once that store has landed, holds what this one
    /// writes (counted in [`RaceCtx::benign`]). The stores of one DataCopy must come in
    /// ascending address order (see the module docs).
    #[allow(clippy::too_many_arguments)]
    pub fn access_store(
        &mut self,
        shadow: &RaceShadow,
        origin: usize,
        addr: usize,
        len: usize,
        differs: &mut dyn FnMut(usize, usize) -> Option<usize>,
    ) -> Result<(), String> {
        debug_assert!(
            self.landing.0.load(Ordering::Relaxed) % 2 == 1,
            "store_begin first"
        );
        self.access_with(shadow, origin, addr, len, true, Kind::Plain, Some(differs))
    }

    #[allow(clippy::too_many_arguments)]
    fn access_with(
        &mut self,
        shadow: &RaceShadow,
        origin: usize,
        addr: usize,
        len: usize,
        write: bool,
        kind: Kind,
        mut differs: Option<&mut dyn FnMut(usize, usize) -> Option<usize>>,
    ) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let end = addr + len;
        let me = Acc {
            who: self.me as u16,
            clock: self.vc[self.me],
            atomic: kind == Kind::Atomic,
            sync: kind == Kind::Sync,
        };
        let mut benign = false;
        // Granule by granule (a segment never crosses one), each under its shard's lock.
        let mut piece = addr;
        let mut deadline = None;
        while piece < end {
            let key = granule_at(origin, piece);
            let piece_end = end.min(key + GRANULE);
            let mut same = differs.as_mut().map(|d| Same {
                differs: &mut **d,
                peers: &self.peers,
                benign: false,
            });
            let r = access_piece(
                &mut shadow.shard(key).lock(),
                key,
                piece,
                piece_end,
                me,
                &self.vc,
                write,
                same.as_mut(),
            );
            let piece_benign = same.is_some_and(|s| s.benign);
            match r {
                Ok(()) => {
                    benign |= piece_benign;
                    piece = piece_end;
                    deadline = None;
                }
                Err(Conflict::Race(race)) => return Err(race.describe(shadow, write)),
                // A participant this block had not met yet: learn its counter, check again.
                Err(Conflict::Unknown) => {
                    self.peers = shadow.group.lock().landing.clone();
                }
                // Its store has not landed: wait (holding no lock), then check the piece again
                // (nothing of it was recorded).
                Err(Conflict::InFlight(race, n)) => {
                    let c = &self.peers[race.other as usize].0;
                    let until = *deadline.get_or_insert_with(|| Instant::now() + LANDING_WAIT);
                    #[cfg(test)]
                    let give_up = shadow.no_wait.load(Ordering::Relaxed);
                    #[cfg(not(test))]
                    let give_up = false;
                    let mut spins = 0u32;
                    while !give_up && c.load(Ordering::Acquire) == n && Instant::now() < until {
                        spins += 1;
                        if spins < 64 {
                            std::hint::spin_loop();
                        } else {
                            std::thread::yield_now();
                        }
                    }
                    if c.load(Ordering::Acquire) == n {
                        return Err(format!(
                            "{} (its store had not landed{})",
                            race.describe(shadow, write),
                            if give_up {
                                String::new()
                            } else {
                                format!(" after {LANDING_WAIT:?}")
                            }
                        ));
                    }
                }
            }
        }
        self.benign += u64::from(benign);
        Ok(())
    }
}

/// The flag cell at `cell` as a block knows it from `seen` (looked up in the twin's directory
/// the first time, and again after the cell's memory was freed).
fn seen_cell<'a>(
    seen: &'a mut HashMap<usize, Seen>,
    shadow: &RaceShadow,
    cell: usize,
) -> &'a mut Seen {
    let s = seen.entry(cell).or_insert_with(|| Seen {
        cell: shadow.cell(cell),
        version: 0,
    });
    if s.cell.dead.load(Ordering::SeqCst) {
        *s = Seen {
            cell: shadow.cell(cell),
            version: 0,
        };
    }
    s
}

/// A store's bytes and what it needs to compare them (see [`RaceCtx::access_store`]).
struct Same<'a> {
    differs: &'a mut dyn FnMut(usize, usize) -> Option<usize>,
    /// The participants' stores in progress, as far as the block knows them.
    peers: &'a [Landing],
    /// Set when an unordered write of the piece turned out harmless.
    benign: bool,
}

/// Why an access cannot be recorded (yet).
enum Conflict {
    /// It races.
    Race(Race),
    /// It is a store that meets a plain store of a participant it does not know yet.
    Unknown,
    /// It is a store that meets a plain store (the race) of a participant with a store in
    /// flight (its counter's value): whether the bytes are the same is known once it lands.
    InFlight(Race, u64),
}

impl From<Race> for Conflict {
    fn from(r: Race) -> Conflict {
        Conflict::Race(r)
    }
}

/// An access that is not ordered after an earlier one of GM `[start, end)`.
struct Race {
    start: usize,
    end: usize,
    /// Who made the earlier access.
    other: u16,
    /// The earlier access was a write (atomic or not); else a read.
    wrote: Option<bool>,
}

impl Race {
    fn describe(&self, shadow: &RaceShadow, write: bool) -> String {
        let other = shadow.name(self.other);
        match self.wrote {
            Some(atomic) => format!(
                "{} GM {:#x}..{:#x} that {} {} with no flag ordering the two ({})",
                if write { "writes" } else { "reads" },
                self.start,
                self.end,
                other,
                if atomic { "reduced into" } else { "wrote" },
                if write {
                    "write after write"
                } else {
                    "read before the write is known complete"
                }
            ),
            None => format!(
                "overwrites GM {:#x}..{:#x} that {} may still be reading (no flag says it finished)",
                self.start, self.end, other
            ),
        }
    }
}

/// Checks and records access `me` (a write or not) to `[addr, end)`, which lies in the granule
/// whose first byte is `key`, in that granule's shard; `same`: a plain DMA store's bytes. On
/// an error nothing is recorded.
#[allow(clippy::too_many_arguments)]
fn access_piece(
    s: &mut Segs,
    key: usize,
    addr: usize,
    end: usize,
    me: Acc,
    vc: &[u32],
    write: bool,
    mut same: Option<&mut Same>,
) -> Result<(), Conflict> {
    #[cfg(test)]
    let fast = !s.force_general;
    #[cfg(not(test))]
    let fast = true;
    let g = s.map.entry(GranuleKey(key)).or_default();
    // The common case: the access covers exactly one recorded segment (a buffer read or
    // rewritten whole, launch after launch). Check and update it where it is.
    if fast {
        if let Ok(i) = g.binary_search_by_key(&addr, |(start, _)| *start) {
            let seg = &mut g[i].1;
            if seg.end == end {
                check(addr, seg, me, vc, write, same.as_deref_mut())?;
                record(seg, me, vc, write);
                return Ok(());
            }
        }
    }
    split(g, addr);
    split(g, end);
    // The recorded segments inside [addr, end), checked where they are (the gaps between them
    // hold no access, so nothing to be ordered after).
    let lo = g.partition_point(|(start, _)| *start < addr);
    let hi = g.partition_point(|(start, _)| *start < end);
    for (start, seg) in &g[lo..hi] {
        check(*start, seg, me, vc, write, same.as_deref_mut())?;
    }
    if write && !me.atomic && !me.sync {
        // A plain write leaves one state over the whole range (it is ordered after every
        // earlier access): keep one segment, so the shadow does not fragment as buffers are
        // rewritten piece by piece.
        let one = (
            addr,
            Seg {
                end,
                writes: smallvec::smallvec![me],
                reads: SmallVec::new(),
            },
        );
        if hi > lo {
            g[lo] = one;
            g.drain(lo + 1..hi);
        } else {
            g.insert(lo, one);
        }
        return Ok(());
    }
    // Record the access in each segment of the range, and in new ones over its gaps.
    let (mut i, mut cursor) = (lo, addr);
    while cursor < end {
        if g.get(i).is_some_and(|(start, _)| *start == cursor) {
            record(&mut g[i].1, me, vc, write);
            cursor = g[i].1.end;
        } else {
            let next = g.get(i).map_or(end, |(start, _)| (*start).min(end));
            #[cfg(test)]
            {
                s.gaps_before += usize::from(next < end);
            }
            let mut gap = Seg::empty(next);
            record(&mut gap, me, vc, write);
            g.insert(i, (cursor, gap));
            cursor = next;
        }
        i += 1;
    }
    Ok(())
}

/// Whether access `me` (a write or not) by a block that knows `vc` is ordered after what
/// segment `seg` (starting at `start`) records; the race if not (at the first byte that
/// races). `same`: a plain DMA store's bytes, for the unordered plain store of the same bytes.
fn check(
    start: usize,
    seg: &Seg,
    me: Acc,
    vc: &[u32],
    write: bool,
    mut same: Option<&mut Same>,
) -> Result<(), Conflict> {
    // A write after an unordered plain store whose bytes differ from its own from `waw.start`
    // on (a write after a read from `start` on is the earlier race).
    let mut waw = None;
    for w in &seg.writes {
        let unordered = w.who != me.who && at(vc, w.who) < w.clock;
        if !unordered || may_overlap(*w, true, me, write) {
            continue;
        }
        let race = Race {
            start,
            end: seg.end,
            other: w.who,
            wrote: Some(w.atomic),
        };
        match same.as_deref_mut() {
            Some(s) if write && me.plain() && w.plain() => {
                let Some(landing) = s.peers.get(w.who as usize) else {
                    return Err(Conflict::Unknown);
                };
                // Acquire: once the store has landed, its bytes are visible here.
                let n = landing.0.load(Ordering::Acquire);
                if n % 2 == 1 {
                    return Err(Conflict::InFlight(race, n));
                }
                match (s.differs)(start, seg.end) {
                    None => s.benign = true,
                    Some(x) if x == start => return Err(race.into()),
                    Some(x) => waw = Some(Race { start: x, ..race }),
                }
            }
            _ => return Err(race.into()),
        }
    }
    if write {
        for r in &seg.reads {
            if r.who != me.who && at(vc, r.who) < r.clock && !may_overlap(*r, false, me, true) {
                return Err(Race {
                    start,
                    end: seg.end,
                    other: r.who,
                    wrote: None,
                }
                .into());
            }
        }
    }
    match waw {
        Some(race) => Err(race.into()),
        None => Ok(()),
    }
}

/// Records access `me` (checked) of a block that knows `vc` in segment `seg`.
fn record(seg: &mut Seg, me: Acc, vc: &[u32], write: bool) {
    if write {
        // The reads the write is ordered after are over; a sync store keeps the sync loads it
        // is not ordered after (a later access must still be ordered after them).
        seg.reads
            .retain(|r| me.sync && r.who != me.who && at(vc, r.who) < r.clock);
        if me.atomic {
            seg.writes.retain(|w| w.atomic && w.who != me.who);
        } else {
            seg.writes.clear();
        }
        seg.writes.push(me);
    } else {
        seg.reads.retain(|r| r.who != me.who);
        seg.reads.push(me);
    }
}

/// Makes sure no segment of granule `g` straddles `x` (splits the one that does).
fn split(g: &mut Granule, x: usize) {
    let i = g.partition_point(|(_, seg)| seg.end <= x);
    if i < g.len() && g[i].0 < x {
        let right = g[i].1.clone();
        g[i].1.end = x;
        g.insert(i + 1, (x, right));
    }
}

/// Drops what granule `g` records of `[addr, end)` (which lies in it).
fn forget_in(g: &mut Granule, addr: usize, end: usize) {
    split(g, addr);
    split(g, end);
    g.retain(|(start, _)| *start < addr || *start >= end);
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    /// A plain DMA store's byte value, GM from the data buffer's first byte, that byte's
    /// address, and whether a participant has a store in flight.
    type Stores<'a> = (u8, &'a [u8], usize, &'a dyn Fn(u16) -> bool);

    /// The checker's rules, byte by byte, with nothing clever: each byte keeps its own lists of
    /// writes and reads (the reference the segments, their fast path and the granule shards
    /// must agree with).
    #[derive(Default)]
    struct Oracle {
        bytes: std::collections::HashMap<usize, (Vec<Acc>, Vec<Acc>)>,
    }

    impl Oracle {
        /// The first byte of `[addr, addr + len)` the access races on: (byte, other, what the
        /// other did: Some(atomic) a write, None a read). `stores`: the access is a plain DMA
        /// store of this byte value, GM (from the data buffer's first byte) holds `gm` and
        /// `in_flight` tells whether a participant has a store that has not landed. Sets
        /// `benign` when a byte's unordered write was let pass.
        #[allow(clippy::too_many_arguments)]
        fn access(
            &mut self,
            me: Acc,
            vc: &[u32],
            addr: usize,
            len: usize,
            write: bool,
            stores: Option<Stores>,
            benign: &mut bool,
        ) -> Option<(usize, u16, Option<bool>)> {
            for x in addr..addr + len {
                let (writes, reads) = self.bytes.entry(x).or_default();
                for w in writes.iter() {
                    // Written out here, not through `may_overlap`: two atomic stores, or a
                    // sync load after a sync store, need no order.
                    if w.who != me.who
                        && at(vc, w.who) < w.clock
                        && !(write && me.atomic && w.atomic)
                        && !(!write && me.sync && w.sync)
                    {
                        // A plain DMA store over another's landed plain DMA store that left
                        // exactly this byte value.
                        if let Some((value, gm, base, in_flight)) = stores {
                            if !w.atomic && !w.sync && !in_flight(w.who) && gm[x - base] == value {
                                *benign = true;
                                continue;
                            }
                        }
                        return Some((x, w.who, Some(w.atomic)));
                    }
                }
                if write {
                    for r in reads.iter() {
                        if r.who != me.who && at(vc, r.who) < r.clock && !(me.sync && r.sync) {
                            return Some((x, r.who, None));
                        }
                    }
                }
            }
            for x in addr..addr + len {
                let (writes, reads) = self.bytes.get_mut(&x).expect("entered above");
                if write {
                    reads.retain(|r| me.sync && r.who != me.who && at(vc, r.who) < r.clock);
                    if me.atomic {
                        writes.retain(|w| w.atomic && w.who != me.who);
                    } else {
                        writes.clear();
                    }
                    writes.push(me);
                } else {
                    reads.retain(|r| r.who != me.who);
                    reads.push(me);
                }
            }
            None
        }
    }

    /// The flag rules with nothing clever: every acquire joins the cell's whole release history
    /// (no versions, no skipping, no cell directory), a block starts from the join of every
    /// finished block. The reference for the clocks the checker's flag cells give.
    #[derive(Default)]
    struct FlagOracle {
        cells: std::collections::HashMap<usize, Clock>,
        finished: Clock,
        vcs: Vec<Clock>,
    }

    impl FlagOracle {
        fn start(&mut self, b: usize) {
            let mut vc = self.finished.clone();
            if vc.len() <= b {
                vc.resize(b + 1, 0);
            }
            vc[b] += 1;
            if self.vcs.len() <= b {
                self.vcs.resize(b + 1, Clock::new());
            }
            self.vcs[b] = vc;
        }
        fn finish(&mut self, b: usize) {
            let vc = self.vcs[b].clone();
            join(&mut self.finished, &vc);
        }
        /// A store to `[addr, addr + len)`: every cell gets the same clock.
        fn release(&mut self, b: usize, addr: usize, len: usize) {
            let vc = self.vcs[b].clone();
            for c in (addr..addr + len).step_by(CELL) {
                join(self.cells.entry(c).or_default(), &vc);
            }
            self.vcs[b][b] += 1;
        }
        fn acquire(&mut self, b: usize, cell: usize) {
            if let Some(r) = self.cells.get(&cell) {
                join(&mut self.vcs[b], r);
            }
        }
        /// The flag memory was freed (and is made again): its cells start with no history.
        fn forget(&mut self, addr: usize, len: usize) {
            self.cells.retain(|c, _| *c < addr || *c >= addr + len);
        }
        /// Whether `vc` is block `b`'s clock (missing entries are 0).
        fn agrees(&self, b: usize, vc: &[u32]) -> bool {
            let n = vc.len().max(self.vcs[b].len());
            (0..n).all(|i| at(vc, i as u16) == at(&self.vcs[b], i as u16))
        }
    }

    /// What the oracle's verdict says in the checker's words (start of the racing range, whom,
    /// which kind), to compare with the checker's message.
    fn oracle_words(v: (usize, u16, Option<bool>), write: bool) -> String {
        let (x, who, wrote) = v;
        let who = format!("rank 0 core {who}");
        match wrote {
            Some(atomic) => format!(
                "{} GM {x:#x}.. that {who} {}",
                if write { "writes" } else { "reads" },
                if atomic { "reduced into" } else { "wrote" }
            ),
            None => format!("overwrites GM {x:#x}.. that {who} may"),
        }
    }

    /// A flag allocation freed and made again at the same address while a block that had used
    /// it still runs (another rank's host thread may do that): that block's later blocks
    /// synchronise through the new cells like everyone else, in both directions, so a correct
    /// handshake is never reported as a race.
    #[test]
    fn blocks_that_ran_across_a_free_use_the_new_flag_cells() {
        const F: usize = 0x10000;
        const D: usize = 0x200000;
        for a_releases in [false, true] {
            let sh = RaceShadow::default();
            // Rank 0 core 0 uses F in a block that is still running when F is freed.
            let mut a = RaceCtx::start(&sh, 0, 0).unwrap();
            a.acquire(&sh, F, CELL);
            a.release(&sh, F, CELL);
            sh.forget(F, F, 4096);
            a.finish(&sh);
            // Later blocks: one writes D and stores the flag, the other loads it and reads D.
            let mut a = RaceCtx::start(&sh, 0, 0).unwrap();
            let mut b = RaceCtx::start(&sh, 1, 0).unwrap();
            let (w, r) = if a_releases {
                (&mut a, &mut b)
            } else {
                (&mut b, &mut a)
            };
            w.access(&sh, D, D, 64, true, Kind::Plain).unwrap();
            w.release(&sh, F, CELL);
            r.acquire(&sh, F, CELL);
            assert_eq!(
                r.access(&sh, D, D, 64, false, Kind::Plain),
                Ok(()),
                "rank 0's block {}",
                if a_releases { "releases" } else { "acquires" }
            );
        }
    }

    /// The race window of the identical-bytes rule: block A's store is recorded before its
    /// bytes land, and block B's store of the same GM, checked in between on another thread,
    /// compares with GM only once A's store has landed. So B passes (counted) when it stores
    /// A's bytes though GM still held other ones when it was checked (a false alarm without
    /// the wait), and is reported when it stores the old bytes A is about to overwrite (a
    /// missed race without it). A store that never lands is reported after [`LANDING_WAIT`].
    #[test]
    fn a_store_compares_with_an_unordered_one_only_once_it_has_landed() {
        use std::sync::atomic::AtomicU8;
        const D: usize = 0x200000;
        for (old, a_bytes, b_bytes, lands) in
            [(0u8, 1u8, 1u8, true), (1, 2, 1, true), (1, 1, 1, false)]
        {
            let sh = RaceShadow::default();
            let gm: Vec<AtomicU8> = (0..64).map(|_| AtomicU8::new(old)).collect();
            let mut a = RaceCtx::start(&sh, 0, 0).unwrap();
            let mut b = RaceCtx::start(&sh, 0, 1).unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            let t0 = Instant::now();
            let r = std::thread::scope(|s| {
                s.spawn(|| {
                    a.store_begin();
                    a.access_store(&sh, D, D, 64, &mut |_, _| panic!("nothing to compare"))
                        .unwrap();
                    tx.send(()).unwrap();
                    if lands {
                        std::thread::sleep(Duration::from_millis(100));
                        gm.iter().for_each(|x| x.store(a_bytes, Ordering::Relaxed));
                        a.store_end();
                    }
                });
                rx.recv().unwrap();
                b.store_begin();
                let mut differs = |x: usize, e: usize| {
                    (x..e).find(|&y| gm[y - D].load(Ordering::Relaxed) != b_bytes)
                };
                let r = b.access_store(&sh, D, D, 64, &mut differs);
                b.store_end();
                r
            });
            let waited = t0.elapsed();
            let what = format!("old {old} A {a_bytes} B {b_bytes} lands {lands}: {r:?}");
            assert!(
                waited >= Duration::from_millis(100),
                "{what} after {waited:?}"
            );
            match (a_bytes == b_bytes && lands, r) {
                (true, Ok(())) => assert_eq!(b.benign, 1, "{what}"),
                (false, Err(m)) => {
                    assert!(m.contains("write after write"), "{what}");
                    assert_eq!(m.contains("had not landed"), !lands, "{what}");
                    if !lands {
                        assert!(waited >= LANDING_WAIT, "{what} after {waited:?}");
                    }
                    assert_eq!(b.benign, 0, "{what}");
                }
                _ => panic!("{what}"),
            }
        }
    }

    /// Freed data memory is forgotten, byte-exactly: a later unordered access to the freed
    /// bytes is no race (the memory is new), while the bytes around them, in the same granules,
    /// keep what they recorded. Both ways `forget` finds the granules are taken: by the range
    /// (a free of fewer granules than the shard's table has slots) and by the table (a larger
    /// one).
    #[test]
    fn freed_data_is_forgotten_and_the_bytes_around_it_are_kept() {
        for (base, len, from, freed) in [
            (
                7 * GRANULE - 64,
                5 * GRANULE + 100,
                7 * GRANULE - 32,
                3 * GRANULE,
            ),
            (
                7 * GRANULE - 64,
                5 * GRANULE + 100,
                7 * GRANULE - 32,
                300 * GRANULE,
            ),
            // Every shard holds granules outside the range too, and two or three inside it
            // (the range goes round the shards more than once).
            (0, 200 * GRANULE, 70 * GRANULE + 32, 130 * GRANULE - 64),
            (
                4096,
                200 * GRANULE,
                4096 + 70 * GRANULE + 32,
                130 * GRANULE - 64,
            ),
        ] {
            // Another allocation, one granule in every shard, which the free must not touch.
            let (other, other_len) = (1000 * GRANULE + 8192, SHARDS * GRANULE);
            // Granules counted from the allocation's first byte, and from address 0 (a
            // GRANULE-aligned allocation).
            for origin in [base, 0] {
                let sh = RaceShadow::default();
                let mut a = RaceCtx::start(&sh, 0, 0).unwrap();
                let mut b = RaceCtx::start(&sh, 0, 1).unwrap();
                a.access(&sh, origin, base, len, true, Kind::Plain).unwrap();
                a.access(&sh, other, other, other_len, true, Kind::Plain)
                    .unwrap();
                sh.forget(origin, from, freed);
                assert!(sh.granules_well_formed());
                let to = (from + freed).min(base + len);
                // The freed bytes: nothing recorded, in every granule they cover.
                assert_eq!(
                    b.access(&sh, origin, from, to - from, false, Kind::Plain),
                    Ok(())
                );
                // The bytes before the free, and after it when it ends inside the write.
                let before = b
                    .access(&sh, origin, base, 32, false, Kind::Plain)
                    .unwrap_err();
                assert!(before.starts_with("reads GM"), "{before}");
                if to < base + len {
                    let after = b
                        .access(&sh, origin, to, 32, false, Kind::Plain)
                        .unwrap_err();
                    assert!(after.contains(&format!("{to:#x}..")), "{after}");
                }
                // Every granule of the other allocation kept its write.
                for k in 0..SHARDS {
                    let at = other + k * GRANULE;
                    let kept = b
                        .access(&sh, other, at, 32, false, Kind::Plain)
                        .unwrap_err();
                    assert!(kept.contains(&format!("{at:#x}..")), "{kept}");
                }
            }
        }
    }

    /// A buffer of one granule's size, at a page-aligned origin (a multiple of [`GRANULE`] or
    /// not, as GM allocations are), is recorded in one granule: a whole-buffer access takes one
    /// shard's lock and one lookup.
    #[test]
    fn a_whole_buffer_access_stays_in_one_granule_wherever_its_page_lies() {
        for origin in [5 * GRANULE, 5 * GRANULE + 4096, 5 * GRANULE + GRANULE / 2] {
            let sh = RaceShadow::default();
            let mut a = RaceCtx::start(&sh, 0, 0).unwrap();
            a.access(&sh, origin, origin, GRANULE, true, Kind::Plain)
                .unwrap();
            let granules: Vec<usize> = sh
                .shards
                .iter()
                .flat_map(|s| s.lock().map.keys().map(|k| k.0).collect::<Vec<_>>())
                .collect();
            assert_eq!(granules, [origin], "origin {origin:#x}");
            // The next granule starts GRANULE bytes after the origin.
            a.access(&sh, origin, origin + GRANULE - 32, 64, false, Kind::Plain)
                .unwrap();
            let n: usize = sh.shards.iter().map(|s| s.lock().map.len()).sum();
            assert_eq!(n, 2);
            assert!(sh
                .shard(origin + GRANULE)
                .lock()
                .map
                .contains_key(&GranuleKey(origin + GRANULE)));
            assert!(sh.granules_well_formed());
        }
    }

    /// The granules one shard holds of a big allocation (every [`SHARDS`]th), at a page-aligned
    /// origin, hash to many buckets of the shard's table (the table indexes by the hash's low
    /// bits): not one probe chain, nor a few.
    #[test]
    fn a_shards_granules_of_a_big_buffer_spread_over_its_table() {
        use std::hash::BuildHasher;
        let hasher = BuildHasherDefault::<KeyHasher>::default();
        for origin in [0x7f12_3456_7000usize, 0x5600_0000_1000] {
            let keys: Vec<GranuleKey> = (0..1024)
                .map(|k| GranuleKey(origin + k * SHARDS * GRANULE))
                .collect();
            // (All in one shard.)
            assert!(keys
                .iter()
                .all(|k| (k.0 / GRANULE) % SHARDS == (origin / GRANULE) % SHARDS));
            let buckets: std::collections::HashSet<u64> =
                keys.iter().map(|&k| hasher.hash_one(k) & 1023).collect();
            assert!(buckets.len() >= 512, "{} buckets", buckets.len());
        }
    }

    /// The clock join (AVX2 where the CPU has it) is the element-wise max, at every pair of
    /// lengths around the vector width, values across the whole u32 range.
    #[test]
    fn join_is_the_elementwise_max() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for la in 0..40 {
            for lb in 0..40 {
                let a: Vec<u32> = (0..la).map(|_| rng.below(1 << 32) as u32).collect();
                let b: Vec<u32> = (0..lb).map(|_| rng.below(1 << 32) as u32).collect();
                let want: Vec<u32> = (0..la.max(lb))
                    .map(|i| {
                        a.get(i)
                            .copied()
                            .unwrap_or(0)
                            .max(b.get(i).copied().unwrap_or(0))
                    })
                    .collect();
                let mut got = Clock::from_slice(&a);
                join(&mut got, &b);
                assert_eq!(got.as_slice(), want, "{la} {lb}");
            }
        }
    }

    /// Random programs of three blocks (reads, writes and atomic stores of 32-byte multiples
    /// over 256 bytes that straddle a granule boundary, so across two shards; plain stores of
    /// one of two byte values, some landing only after other blocks' steps; flag stores and
    /// loads on two cells, some spanning both; the flag memory freed and made again; blocks
    /// ending and new ones starting) get the same verdict at every step from the checker, from
    /// the checker without its exact-segment fast path (message included) and from the
    /// byte-by-byte oracle (where, whom, what); after every step the acting block's clock is
    /// the one the plain flag oracle gives (so skipping unchanged cells, and cells held across
    /// a free, lose nothing); the oracle's benign unordered stores of identical bytes are the
    /// ones the checkers count; and the cases include every kind of report, benign stores, and
    /// stores over one that had not landed.
    #[test]
    fn fast_path_and_shards_agree_with_a_byte_by_byte_oracle() {
        for unaligned in [false, true] {
            let (exact_hits, seen, _) =
                oracle_run(3, 10_000, 30, 0, 0x243f_6a88_85a3_08d3, unaligned);
            assert!(
                exact_hits > 1000,
                "{exact_hits} accesses took the fast path"
            );
            assert!(seen.iter().all(|&n| n > 0), "reports by kind: {seen:?}");
        }
    }

    /// The same with twelve blocks and mostly reads: segments whose reader and atomic writer
    /// lists outgrow their inline room, and clocks longer than theirs (the twelve
    /// participants), must give the same verdicts, and reports must name the same block.
    #[test]
    fn lists_and_clocks_past_their_inline_size_agree_with_the_oracle() {
        let (_, seen, spilled) = oracle_run(12, 1500, 150, 85, 0x1319_8a2e_0370_7344, true);
        assert!(spilled > 100, "{spilled} steps with a list on the heap");
        assert!(seen.iter().all(|&n| n > 0), "reports by kind: {seen:?}");
    }

    /// Twelve blocks read a buffer, the first eleven then store a flag the writer loads: the
    /// writer's overwrite is ordered after every read but the twelfth, past the reader list's
    /// inline room, and the report names that reader. Likewise for reductions: an atomic store
    /// by each of twelve blocks, then a plain read ordered after all but the last.
    #[test]
    fn the_reader_or_reducer_past_the_inline_lists_is_named() {
        const F: usize = 0x10000;
        const D: usize = 0x200000;
        for atomic in [false, true] {
            let sh = RaceShadow::default();
            let mut blocks: Vec<RaceCtx> = (0..13)
                .map(|core| RaceCtx::start(&sh, 0, core).unwrap())
                .collect();
            let (others, last) = blocks.split_at_mut(12);
            for (i, b) in others.iter_mut().enumerate() {
                let kind = if atomic { Kind::Atomic } else { Kind::Plain };
                b.access(&sh, D, D, 256, atomic, kind).unwrap();
                if i < 11 {
                    b.release(&sh, F, CELL);
                }
            }
            let c = &mut last[0];
            c.acquire(&sh, F, CELL);
            let err = c.access(&sh, D, D, 256, !atomic, Kind::Plain).unwrap_err();
            let want = if atomic {
                "reads GM 0x200000..0x200100 that rank 0 core 11 reduced into"
            } else {
                "overwrites GM 0x200000..0x200100 that rank 0 core 11 may still be reading"
            };
            assert!(err.starts_with(want), "{err}");
        }
    }

    /// The participants' lock and the finished clock are in the first 64-byte line of the
    /// group's (line-aligned) mutex, as the const assert next to `Group` relies on.
    #[test]
    fn the_participants_lock_and_finished_clock_share_a_line() {
        let sh = RaceShadow::default();
        let m: &Mutex<Group> = &sh.group;
        let base = m as *const Mutex<Group> as usize;
        assert_eq!(base % 128, 0);
        // SAFETY: only the address of the raw lock is taken; it is not locked or unlocked.
        let raw = unsafe { m.raw() } as *const _ as usize;
        let data = m.data_ptr() as usize;
        assert_eq!(raw, base);
        assert!(data - base + std::mem::size_of::<Clock>() <= 64);
    }

    /// [`fast_path_and_shards_agree_with_a_byte_by_byte_oracle`]'s programs: `cases` of `steps`
    /// steps by `blocks` blocks, `extra_reads` percent of data accesses made reads before the
    /// usual mix. Returns the accesses that took the exact-segment fast path, the reports by
    /// kind (overwrite of pending reads, write after write, read of a reduction, read before
    /// a write), and the steps after which a segment the access touched kept a list's storage
    /// on the heap (it had outgrown its inline room at some point). The data buffer's 256
    /// bytes straddle a granule boundary: at a multiple of [`GRANULE`] (the allocation holding
    /// them starts at 0), or, `unaligned`, 96 bytes in (it starts 32 bytes before a multiple of
    /// GRANULE: not on a page either, which no caller relies on).
    fn oracle_run(
        blocks: usize,
        cases: usize,
        steps: usize,
        extra_reads: u64,
        seed: u64,
        unaligned: bool,
    ) -> (usize, [usize; 6], usize) {
        const DATA: usize = 3 * GRANULE - 128;
        const FLAGS: usize = 0x8000;
        let origin = if unaligned { DATA + 96 - GRANULE } else { 0 };
        let mut rng = Rng(seed);
        let mut seen = [0usize; 6];
        let mut exact_hits = 0;
        let mut spilled = 0;
        let mut forgets = 0;
        let mut gaps_before = 0;
        for _case in 0..cases {
            let fast = RaceShadow::default();
            let general = RaceShadow::default();
            for shard in general.shards.iter() {
                shard.lock().force_general = true;
            }
            fast.no_wait.store(true, Ordering::Relaxed);
            general.no_wait.store(true, Ordering::Relaxed);
            // The data buffer's bytes in GM, and each block's plain store that has been
            // checked but has not landed yet (address, length, byte value).
            let mut gm = vec![0u8; 256];
            let mut in_flight: Vec<Option<(usize, usize, u8)>> = vec![None; blocks];
            let mut oracle = Oracle::default();
            let mut flags = FlagOracle::default();
            let start = |sh: &RaceShadow, core: usize| RaceCtx::start(sh, 0, core).unwrap();
            let mut f: Vec<RaceCtx> = (0..blocks).map(|c| start(&fast, c)).collect();
            let mut g: Vec<RaceCtx> = (0..blocks).map(|c| start(&general, c)).collect();
            (0..blocks).for_each(|c| flags.start(c));
            // One cell, the other, or both in one store or load.
            let cells = |rng: &mut Rng| match rng.below(5) {
                4 => (FLAGS, 2 * CELL),
                c => (FLAGS + CELL * (c as usize % 2), CELL),
            };
            for _step in 0..steps {
                let b = rng.below(blocks as u64) as usize;
                // A block with a store in flight is inside its DataCopy: the store lands next.
                if let Some((a, len, value)) = in_flight[b].take() {
                    gm[a - DATA..a - DATA + len].fill(value);
                    f[b].store_end();
                    g[b].store_end();
                    continue;
                }
                match rng.below(8) {
                    0 => {
                        let (cell, len) = cells(&mut rng);
                        f[b].release(&fast, cell, len);
                        g[b].release(&general, cell, len);
                        flags.release(b, cell, len);
                    }
                    1 => {
                        let (cell, len) = cells(&mut rng);
                        f[b].acquire(&fast, cell, len);
                        g[b].acquire(&general, cell, len);
                        (cell..cell + len)
                            .step_by(CELL)
                            .for_each(|c| flags.acquire(b, c));
                    }
                    3 if rng.below(4) == 0 => {
                        fast.forget(FLAGS, FLAGS, 2 * CELL);
                        general.forget(FLAGS, FLAGS, 2 * CELL);
                        flags.forget(FLAGS, 2 * CELL);
                    }
                    4 if rng.below(8) == 0 && in_flight.iter().all(Option::is_none) => {
                        // Data memory freed (and made again): a piece of the buffer, in one
                        // granule or across both, or all of it.
                        let a = DATA + CELL * rng.below(8) as usize;
                        let len = (CELL * (1 + rng.below(8) as usize)).min(DATA + 256 - a);
                        fast.forget(origin, a, len);
                        general.forget(origin, a, len);
                        oracle.bytes.retain(|x, _| *x < a || *x >= a + len);
                        forgets += 1;
                    }
                    2 if rng.below(4) == 0 => {
                        f[b].finish(&fast);
                        g[b].finish(&general);
                        flags.finish(b);
                        f[b] = start(&fast, b);
                        g[b] = start(&general, b);
                        flags.start(b);
                    }
                    _ => {
                        // Mostly whole buffers, as kernels move them; sometimes any piece.
                        let (addr, len) = match rng.below(5) {
                            0 => (DATA, 128),
                            1 => (DATA + 128, 128),
                            2 => (DATA, 256),
                            _ => {
                                let a = DATA + CELL * rng.below(8) as usize;
                                (a, (CELL * (1 + rng.below(4) as usize)).min(DATA + 256 - a))
                            }
                        };
                        let (write, atomic) = match rng.below(5) {
                            _ if extra_reads > 0 && rng.below(100) < extra_reads => (false, false),
                            0 | 1 => (false, false),
                            2 | 3 => (true, false),
                            _ => (true, true),
                        };
                        // One plain access in four is a scalar synchronising one instead.
                        let kind = match atomic {
                            true => Kind::Atomic,
                            false if rng.below(4) == 0 => Kind::Sync,
                            false => Kind::Plain,
                        };
                        // The first granule's piece of the access.
                        let key = granule_at(origin, addr);
                        let piece_end = key + GRANULE;
                        if fast
                            .shard(key)
                            .lock()
                            .map
                            .get(&GranuleKey(key))
                            .and_then(|g| g.iter().find(|(start, _)| *start == addr))
                            .is_some_and(|(_, s)| s.end == (addr + len).min(piece_end))
                        {
                            exact_hits += 1;
                        }
                        let me = Acc {
                            who: f[b].me as u16,
                            clock: f[b].vc[f[b].me],
                            atomic,
                            sync: kind == Kind::Sync,
                        };
                        // A plain store writes one of two byte values (GM starts as zeros).
                        let value = 1 + rng.below(2) as u8;
                        let plain_store = write && kind == Kind::Plain;
                        let mut oracle_benign = false;
                        let ro = {
                            let busy = |who: u16| in_flight[who as usize].is_some();
                            let stores = plain_store.then_some((
                                value,
                                &gm[..],
                                DATA,
                                &busy as &dyn Fn(u16) -> bool,
                            ));
                            oracle.access(
                                me,
                                &f[b].vc,
                                addr,
                                len,
                                write,
                                stores,
                                &mut oracle_benign,
                            )
                        };
                        let benign_before = (f[b].benign, g[b].benign);
                        let (rf, rg) = if plain_store {
                            let mut differs =
                                |x: usize, e: usize| (x..e).find(|&y| gm[y - DATA] != value);
                            f[b].store_begin();
                            g[b].store_begin();
                            (
                                f[b].access_store(&fast, origin, addr, len, &mut differs),
                                g[b].access_store(&general, origin, addr, len, &mut differs),
                            )
                        } else {
                            (
                                f[b].access(&fast, origin, addr, len, write, kind),
                                g[b].access(&general, origin, addr, len, write, kind),
                            )
                        };
                        // What lands: a plain store now or after other blocks' steps.
                        let span = addr - DATA..addr - DATA + len;
                        match kind {
                            _ if rf.is_err() || !write => {}
                            Kind::Plain if rng.below(3) == 0 => {
                                in_flight[b] = Some((addr, len, value));
                            }
                            Kind::Atomic => {
                                gm[span].iter_mut().for_each(|x| *x = x.wrapping_add(value))
                            }
                            _ => gm[span].fill(value),
                        }
                        if plain_store && in_flight[b].is_none() {
                            f[b].store_end();
                            g[b].store_end();
                        }
                        let counted = u64::from(ro.is_none() && oracle_benign);
                        assert_eq!(
                            (f[b].benign - benign_before.0, g[b].benign - benign_before.1),
                            (counted, counted),
                            "block {b} {addr:#x}+{len} benign"
                        );
                        seen[4] += counted as usize;
                        if fast
                            .shard(key)
                            .lock()
                            .map
                            .get(&GranuleKey(key))
                            .into_iter()
                            .flatten()
                            .any(|(start, s)| {
                                *start < addr + len
                                    && s.end > addr
                                    && (s.reads.spilled() || s.writes.spilled())
                            })
                        {
                            spilled += 1;
                        }
                        let what = format!("block {b} {addr:#x}+{len} write {write} {kind:?}");
                        assert_eq!(rf, rg, "{what}");
                        match (&rf, ro) {
                            (Ok(()), None) => {}
                            (Err(m), Some(v)) => {
                                let words = oracle_words(v, write);
                                let (head, tail) = words.split_once("..").unwrap();
                                assert!(m.starts_with(head), "{what}: `{m}`, oracle `{words}`");
                                let rest = m.split_once(' ').unwrap().1; // after the range
                                let rest = rest.split_once(' ').unwrap().1;
                                let rest = rest.split_once(' ').unwrap().1;
                                assert!(
                                    rest.starts_with(tail.trim_start()),
                                    "{what}: `{m}`, oracle `{words}`"
                                );
                            }
                            (r, o) => panic!("{what}: checker {r:?}, oracle {o:?}"),
                        }
                        if let Err(m) = rf {
                            let kind = if m.contains("had not landed") {
                                5
                            } else if m.starts_with("overwrites") {
                                0
                            } else if m.contains("write after write") {
                                1
                            } else if m.contains("reduced into") {
                                2
                            } else {
                                3
                            };
                            seen[kind] += 1;
                            break;
                        }
                    }
                }
                assert!(fast.granules_well_formed() && general.granules_well_formed());
                // (The general shadow's flag cells work as the fast one's: one check is enough.)
                let want = &flags.vcs[b];
                assert!(
                    flags.agrees(b, &f[b].vc),
                    "clock {:?}, oracle {want:?}",
                    f[b].vc
                );
            }
            gaps_before += fast
                .shards
                .iter()
                .map(|s| s.lock().gaps_before)
                .sum::<usize>();
        }
        assert!(forgets > cases / 20, "{forgets} data frees");
        assert!(
            gaps_before > 100,
            "{gaps_before} gaps recorded before a segment"
        );
        (exact_hits, seen, spilled)
    }
}
