//! Global memory of one twin: allocations with known bounds and kinds, and the raw accesses.
//!
//! GM addresses in the twin are host addresses, so a kernel holding a peer's buffer address reads
//! the peer's memory directly (as an AIV core does over HCCS with IPC-mapped buffers). Every
//! kernel access is bounds-checked against the live allocations of the kernel's own twin: a
//! kernel of one twin cannot reach another twin's memory.
//!
//! Concurrency. Flag polls race with flag stores by design. To keep that defined in Rust, small
//! accesses (at most [`SMALL_ACCESS`] bytes: flag cells, rows of flags, scalars, ragged tails)
//! are done as atomic accesses of the aligned 8-byte words they touch: loads acquire, in
//! ascending addresses; stores release, in *descending* addresses, so a reader that sees the
//! first word of a 32-byte cell new sees the rest of the cell new too (the tag in lanes 0-1 is
//! stored last and read first). A store that covers only part of a word merges its bytes into
//! the word with a compare-and-swap. Every atomic access of GM, atomic reduces included
//! ([`crate::atomics`]), has this one width, as Rust's memory model requires of atomic accesses
//! that race (a 4-byte store racing with an 8-byte load is undefined). Bulk copies are plain
//! `memcpy` between atomic accesses of their first and last words when those are partly
//! outside the copy (so a copy and a small access of different bytes of one word do not race);
//! bulk copies are data-race free only when the kernel orders them against every conflicting
//! access of other blocks (by flags), which is what the GM race checker verifies before each
//! such copy; with the checker off, a racy kernel makes the twin itself racy.
//!
//! Allocations are page aligned and their memory extends to a multiple of 8 bytes, so the
//! words an access touches are always the twin's memory.
//!
//! Kinds: memory allocated as [`GmKind::Sync`] (sync areas, flag regions) holds flags; every
//! other allocation holds data. The race checker classifies accesses by this kind, never by
//! their size.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::meta::RegionMeta;
use crate::padded::Padded;
use crate::shared::Space;

/// Accesses of at most this many bytes are done with atomic word operations.
pub const SMALL_ACCESS: usize = 2048;
/// GM allocation alignment (a page, as device allocations are).
pub const GM_ALIGN: usize = 4096;

/// What an allocation holds, as the GM race checker sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GmKind {
    /// Data: every kernel access is checked for races against the other blocks' accesses.
    Data,
    /// Flags (soft-sync cells): stores release, loads acquire; never a race by themselves.
    Sync,
}

#[derive(Clone)]
struct Region {
    len: usize,
    rank: u32,
    kind: GmKind,
    /// Sub-ranges of a data allocation marked as flags ([`Memory::mark_sync`]), sorted.
    sync: Arc<Vec<(usize, usize)>>,
    meta: Arc<RegionMeta>,
}

/// The allocation an access falls into.
pub(crate) struct Hit<'a> {
    /// Its first byte.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// Its counters.
    pub meta: &'a Arc<RegionMeta>,
    kind: GmKind,
    sync: &'a [(usize, usize)],
}

impl Hit<'_> {
    /// True if `[addr, addr + len)` is flag memory: a sync allocation, or entirely inside a
    /// range of a data allocation marked as flags.
    pub fn is_sync(&self, addr: usize, len: usize) -> bool {
        self.kind == GmKind::Sync
            || self
                .sync
                .iter()
                .any(|&(a, b)| addr >= a && addr + len.max(1) <= b)
    }
}

/// An access's allocation, as [`Memory::lookup`] found it. The counters pointer stays valid
/// while the allocation is live, which every access of a kernel requires anyway (its launch
/// holds the buffers it touches).
#[derive(Clone, Copy)]
pub(crate) struct Found {
    meta: *const RegionMeta,
    /// The allocation's first byte.
    pub base: usize,
    /// One past the allocation's last byte.
    pub end: usize,
    /// The access is to flag memory.
    pub sync: bool,
}

impl Found {
    /// The allocation's counters.
    pub fn meta(&self) -> &RegionMeta {
        // SAFETY: the registry holds an Arc to the counters until the allocation is freed, and
        // an access happens only while its allocation is live (see the type's docs).
        unsafe { &*self.meta }
    }

    /// An owned handle to the allocation's counters (for parked waiters and snapshots).
    pub fn meta_arc(&self) -> Arc<RegionMeta> {
        // SAFETY: `meta` came from `Arc::as_ptr` of the Arc the registry holds (see `meta`), so
        // adding a strong count and rebuilding an Arc from it is balanced and valid.
        unsafe {
            Arc::increment_strong_count(self.meta);
            Arc::from_raw(self.meta)
        }
    }
}

/// The GM allocations of one twin.
pub(crate) struct Memory {
    id: u64,
    map: RwLock<BTreeMap<usize, Region>>,
    /// The job's shared GM when this twin is one process of a multi-process job (shared.rs):
    /// this rank allocates in its window, and the registry mirrors the peers' tables.
    space: Option<Arc<Space>>,
    /// The table version of each peer last mirrored into `map`.
    mirrored: parking_lot::Mutex<Vec<u64>>,
    /// Bumped by every allocation, free and marking. On a cache line of its own: every bounds
    /// check reads it.
    generation: Padded<AtomicU64>,
}

/// Allocations of at least this size are anonymous mappings: zero pages the OS provides lazily,
/// so a 200 MB HCCL buffer costs nothing until it is touched.
const MAP_THRESHOLD: usize = 1 << 20;

/// A thread's copy of one registry's ranges (sorted by start), rebuilt when the registry
/// generation changes: bounds checks then take no lock and touch no shared cache line but the
/// generation.
struct RegionCache {
    memory: u64,
    generation: u64,
    ranges: Vec<(usize, usize, Region)>,
    /// Index of the range the last successful lookup found (lookups come in runs).
    last: usize,
}

thread_local! {
    static CACHE: std::cell::RefCell<RegionCache> = const {
        std::cell::RefCell::new(RegionCache {
            memory: u64::MAX,
            generation: u64::MAX,
            ranges: Vec::new(),
            last: 0,
        })
    };
}

impl Memory {
    /// An empty registry identified by `id` (unique per twin).
    pub fn new(id: u64, space: Option<Arc<Space>>) -> Memory {
        let peers = space.as_ref().map_or(0, |s| s.ranks() as usize);
        Memory {
            id,
            map: RwLock::new(BTreeMap::new()),
            space,
            mirrored: parking_lot::Mutex::new(vec![u64::MAX; peers]),
            generation: Padded(AtomicU64::new(0)),
        }
    }

    /// Allocates `bytes` (at least 1) of zeroed, page-aligned GM of `kind` for `rank`.
    /// In a multi-process job only the process's own rank allocates (in its window); in an
    /// open space ([`Space::open`]) every device of the process allocates in its window.
    pub fn alloc(&self, bytes: usize, rank: u32, kind: GmKind) -> Option<*mut u8> {
        let len = bytes.max(1);
        let ptr = if let Some(space) = &self.space {
            if rank != space.rank() && !space.is_open() {
                return None;
            }
            space.alloc(len, kind, rank)?
        } else if len >= MAP_THRESHOLD {
            // SAFETY: an anonymous private mapping with no address hint; checked for MAP_FAILED.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return None;
            }
            p as *mut u8
        } else {
            // Rounded up to whole 8-byte words: atomic accesses touch whole words.
            let layout =
                Layout::from_size_align(len.checked_next_multiple_of(8)?, GM_ALIGN).ok()?;
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { alloc_zeroed(layout) };
            if p.is_null() {
                return None;
            }
            p
        };
        let mut map = self.map.write();
        map.insert(
            ptr as usize,
            Region {
                len,
                rank,
                kind,
                sync: Arc::default(),
                meta: Arc::default(),
            },
        );
        // Bumped under the lock: a thread that copies the map sees this generation or a later one.
        self.generation.fetch_add(1, Ordering::Release);
        Some(ptr)
    }

    /// Marks `[addr, addr + len)` of a data allocation as flag memory. Returns false if the range
    /// is not inside one allocation.
    pub fn mark_sync(&self, addr: usize, len: usize) -> bool {
        let mut map = self.map.write();
        let Some((_, region)) = map
            .range_mut(..=addr)
            .next_back()
            .filter(|(start, r)| addr + len <= **start + r.len)
        else {
            return false;
        };
        if region
            .sync
            .iter()
            .any(|&(a, b)| a <= addr && addr + len <= b)
        {
            return true;
        }
        let mut ranges = (*region.sync).clone();
        ranges.push((addr, addr + len));
        ranges.sort_unstable();
        region.sync = Arc::new(ranges);
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    /// Unregisters and frees an allocation made by [`Memory::alloc`].
    ///
    /// # Safety
    /// `ptr` and `bytes` must come from one `alloc` call of this registry, and nothing may access
    /// the memory afterwards.
    pub unsafe fn free(&self, ptr: *mut u8, bytes: usize) {
        {
            let mut map = self.map.write();
            map.remove(&(ptr as usize));
            self.generation.fetch_add(1, Ordering::Release);
        }
        let len = bytes.max(1);
        if let Some(space) = &self.space {
            space.free(ptr);
        } else if len >= MAP_THRESHOLD {
            // SAFETY: the caller guarantees ptr/len come from the mmap in `alloc`.
            unsafe { libc::munmap(ptr as *mut libc::c_void, len) };
        } else {
            let layout = Layout::from_size_align(len.next_multiple_of(8), GM_ALIGN)
                .expect("layout was valid at allocation");
            // SAFETY: the caller guarantees ptr/bytes come from `alloc` with this layout.
            unsafe { dealloc(ptr, layout) };
        }
    }

    /// Runs `f` with the live allocation holding all of `[addr, addr + len)`; None if there is
    /// none.
    ///
    /// In a multi-process job, an access to a peer's window that no mirrored allocation holds
    /// first mirrors that peer's table again (it may have allocated since). An allocation a
    /// peer has freed stays mirrored until then: an access to it is not caught (its bytes read
    /// as zeros, as freed memory of the window does).
    pub fn with_region<R>(&self, addr: usize, len: usize, f: impl FnOnce(&Hit) -> R) -> Option<R> {
        let mut f = Some(f);
        let r = self.with_region_once(addr, len, &mut f);
        if r.is_some() || !self.mirror_holding(addr) {
            return r;
        }
        self.with_region_once(addr, len, &mut f)
    }

    /// Mirrors again the table of the peer whose window holds `addr`, if that is a peer's
    /// window and its table changed; returns whether it did.
    pub fn mirror_holding(&self, addr: usize) -> bool {
        let Some(space) = &self.space else {
            return false;
        };
        match space.window_of(addr) {
            Some(p) if p != space.rank() => self.mirror(space, p),
            _ => false,
        }
    }

    /// Replaces the regions of peer `p` with its table, if that changed since the last time;
    /// regions whose range stays keep their counters (tasks parked on them count there).
    fn mirror(&self, space: &Space, p: u32) -> bool {
        let mut seen = self.mirrored.lock();
        if space.table_version(p) == seen[p as usize] {
            return false;
        }
        let (entries, version) = space.table(p);
        let mut map = self.map.write();
        let lo = space.base() + p as usize * space.window();
        let old: BTreeMap<usize, Region> = map
            .range(lo..lo + space.window())
            .map(|(&a, r)| (a, r.clone()))
            .collect();
        for a in old.keys() {
            map.remove(a);
        }
        for e in entries {
            let region = match old.get(&e.addr) {
                Some(r) if r.len == e.len && r.kind == e.kind && r.rank == e.rank => r.clone(),
                _ => Region {
                    len: e.len,
                    rank: e.rank,
                    kind: e.kind,
                    sync: Arc::default(),
                    meta: Arc::default(),
                },
            };
            map.insert(e.addr, region);
        }
        seen[p as usize] = version;
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    fn with_region_once<R>(
        &self,
        addr: usize,
        len: usize,
        f: &mut Option<impl FnOnce(&Hit) -> R>,
    ) -> Option<R> {
        let end = addr.checked_add(len)?;
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let generation = self.generation.load(Ordering::Acquire);
            if c.memory != self.id || c.generation != generation {
                let map = self.map.read();
                c.ranges.clear();
                c.ranges.extend(
                    map.iter()
                        .map(|(&start, region)| (start, start + region.len, region.clone())),
                );
                c.memory = self.id;
                // Read under the lock: a change after this bumps the generation again.
                c.generation = self.generation.load(Ordering::Acquire);
                c.last = 0;
            }
            let hit = match c.ranges.get(c.last) {
                Some((start, stop, _)) if addr >= *start && end <= *stop => Some(c.last),
                _ => {
                    let i = c.ranges.partition_point(|(start, _, _)| *start <= addr);
                    (i > 0 && end <= c.ranges[i - 1].1).then(|| i - 1)
                }
            };
            hit.map(|i| {
                c.last = i;
                let r = &c.ranges[i].2;
                let f = f.take().expect("called once per hit");
                f(&Hit {
                    start: c.ranges[i].0,
                    end: c.ranges[i].1,
                    meta: &r.meta,
                    kind: r.kind,
                    sync: &r.sync,
                })
            })
        })
    }

    /// The allocation holding all of `[addr, addr + len)`, with the access's kind; None if
    /// there is none.
    pub fn lookup(&self, addr: usize, len: usize) -> Option<Found> {
        self.with_region(addr, len, |h| Found {
            meta: Arc::as_ptr(h.meta),
            base: h.start,
            end: h.end,
            sync: h.is_sync(addr, len),
        })
    }

    /// The allocation holding all of `[addr, addr + len)`: its first byte, length, rank and
    /// kind (None if there is none).
    pub fn region(&self, addr: usize, len: usize) -> Option<(usize, usize, u32, GmKind)> {
        self.with_region(addr, len, |_| ())?;
        let map = self.map.read();
        let (&start, r) = map.range(..=addr).next_back()?;
        Some((start, r.len, r.rank, r.kind))
    }

    /// The rank owning the allocation that contains `addr`, if any.
    pub fn owner(&self, addr: usize) -> Option<u32> {
        let map = self.map.read();
        let (&start, region) = map.range(..=addr).next_back()?;
        (addr < start + region.len).then_some(region.rank)
    }

    /// Live allocations and their bytes (for leak checks and diagnostics).
    /// In a multi-process job: this process's (not the peers' it mirrors).
    pub fn usage(&self) -> (usize, usize) {
        let map = self.map.read();
        let own = map.iter().filter(|(&a, _)| {
            self.space
                .as_ref()
                .is_none_or(|s| s.window_of(a) == Some(s.rank()))
        });
        own.fold((0, 0), |(n, b), (_, r)| (n + 1, b + r.len))
    }
}

// ---- raw access ----

/// Reads `len` bytes of GM at `src` into `dst`.
///
/// # Safety
/// `src..src+len` must be inside a live GM allocation (whose words it touches are GM too, see
/// the module docs) and `dst..dst+len` valid for writes and not overlapping it; a bulk read
/// (more than [`SMALL_ACCESS`] bytes) must not race with a write of the same bytes.
pub(crate) unsafe fn read(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { atomic_read(dst, src, len) };
    } else {
        let (head, tail) = partial_words(src as usize, len);
        let mid = len - head - tail;
        // SAFETY: forwarded from the caller, for three consecutive sub-ranges of both.
        unsafe {
            atomic_read(dst, src, head);
            copy_bulk(dst.add(head), src.add(head), mid);
            atomic_read(dst.add(head + mid), src.add(head + mid), tail);
        }
        fence(Ordering::Acquire);
    }
}

/// The bytes of `[addr, addr + len)` in its first and last 8-byte words when those words
/// reach outside it: `(head, tail)`, with `head + tail <= len`. The bytes between lie in whole
/// words.
pub(crate) fn partial_words(addr: usize, len: usize) -> (usize, usize) {
    let head = (addr.wrapping_neg() % 8).min(len);
    (head, (len - head) % 8)
}

/// `copy_nonoverlapping(src, dst, len)` for bulk copies, at full speed whatever the distance
/// between the two.
///
/// glibc's memcpy (2.36 on AMD EPYC; `cargo bench --bench copy -- offsets`) copies 4-64 KiB at
/// 1.6-2.4 GB/s instead of 40-50 when the destination lies 1 to 31 bytes after the source
/// modulo 4096 (32 and up run at full speed): a DataCopy to or from a ragged GM offset hits it.
/// Those distances take a plain 16-byte vector loop instead (25-38 GB/s at the same sizes).
///
/// # Safety
/// As `copy_nonoverlapping(src, dst, len)`.
pub(crate) unsafe fn copy_bulk(dst: *mut u8, src: *const u8, len: usize) {
    let distance = (dst as usize).wrapping_sub(src as usize) % 4096;
    if (1..32).contains(&distance) {
        // SAFETY: forwarded from the caller.
        unsafe { simd_copy(dst, src, len, false) };
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
}

/// Whether the GM bytes at `gm` equal `data` (read as [`read`] reads them).
///
/// # Safety
/// `gm..gm+data.len()` must be inside a live GM allocation.
pub(crate) unsafe fn equals(data: &[u8], gm: *const u8) -> bool {
    let mut buf = [0u8; SMALL_ACCESS];
    data.chunks(SMALL_ACCESS).enumerate().all(|(i, chunk)| {
        // SAFETY: forwarded from the caller; the chunk fits `buf`.
        unsafe { read(buf.as_mut_ptr(), gm.add(i * SMALL_ACCESS), chunk.len()) };
        buf[..chunk.len()] == *chunk
    })
}

/// The index of the first byte of `data` that differs from GM at `gm` (None: all equal).
///
/// # Safety
/// As [`equals`].
pub(crate) unsafe fn first_difference(data: &[u8], gm: *const u8) -> Option<usize> {
    let mut buf = [0u8; SMALL_ACCESS];
    data.chunks(SMALL_ACCESS)
        .enumerate()
        .find_map(|(i, chunk)| {
            // SAFETY: forwarded from the caller; the chunk fits `buf`.
            unsafe { read(buf.as_mut_ptr(), gm.add(i * SMALL_ACCESS), chunk.len()) };
            let at = buf.iter().zip(chunk).position(|(g, d)| g != d)?;
            Some(i * SMALL_ACCESS + at)
        })
}

/// Writes `len` bytes from `src` into GM at `dst`.
///
/// # Safety
/// `dst..dst+len` must be inside a live GM allocation (whose words it touches are GM too, see
/// the module docs) and `src..src+len` valid for reads and not overlapping it; a bulk write
/// must not race with any other access of the same bytes.
pub(crate) unsafe fn write(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { atomic_write(dst, src, len) };
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { write_bulk(dst, src, len, copy_bulk) };
    }
}

/// A bulk write: `copy` for the whole words, atomic stores for the partial words at the ends.
///
/// # Safety
/// As [`write()`], and `copy` must be safe to call on whole-word sub-ranges of both.
unsafe fn write_bulk(
    dst: *mut u8,
    src: *const u8,
    len: usize,
    copy: unsafe fn(*mut u8, *const u8, usize),
) {
    fence(Ordering::Release);
    let (head, tail) = partial_words(dst as usize, len);
    let mid = len - head - tail;
    // SAFETY: forwarded from the caller, for three consecutive sub-ranges of both.
    unsafe {
        atomic_write(dst.add(head + mid), src.add(head + mid), tail);
        copy(dst.add(head), src.add(head), mid);
        atomic_write(dst, src, head);
    }
}

/// Whether the next DMA store of a block that has written `written` bytes to GM so far goes
/// with non-temporal stores, while `running` blocks run (`after`: bytes, 0 = never).
///
/// The estimate: if every running block writes as much as this one has, the blocks together
/// have written `written * running` bytes, and once that exceeds a good part of the host's
/// last-level cache (`after`, [`crate::TwinConfig::stream_after`]) what they write now is
/// evicted before anyone reads it again, so going through the cache only costs a read of each
/// destination line and a write-back. Measured on a 2-core VM with 32 MiB of L3 (medians of 3
/// interleaved runs): 16-64 MiB collectives at 2-8 ranks ran in 0.62-0.80x the time; 1-4 MiB
/// ones, whose data the L3 keeps between copies, within the noise (0.85-1.15x).
///
/// `running` is asked only when it can matter: a block that has written less than `after /`
/// [`STREAM_RUNNING_BOUND`] does not stream (counting the running blocks reads a counter of
/// every worker, which the others write at every block start and end).
pub(crate) fn streams(written: u64, running: impl FnOnce() -> usize, after: u64) -> bool {
    if after == 0 || written.saturating_mul(STREAM_RUNNING_BOUND) < after {
        return false;
    }
    written.saturating_mul(running().max(1) as u64) >= after
}

/// The running blocks [`streams`] assumes at most before it counts them: more than 8 devices'
/// worth of A2 cores (48 each). With more blocks running, a block streams somewhat later than
/// the estimate says (only speed depends on it).
pub(crate) const STREAM_RUNNING_BOUND: u64 = 512;

/// [`write()`] with non-temporal stores for the bulk (see [`streams`]); the sfence at the end
/// orders them before the block's later stores (a flag that publishes them).
///
/// # Safety
/// As [`write()`].
pub(crate) unsafe fn write_streaming(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { write(dst, src, len) };
        return;
    }
    /// The streaming copy, as [`write_bulk`] takes it.
    unsafe fn streaming(dst: *mut u8, src: *const u8, len: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { simd_copy(dst, src, len, true) }
    }
    // SAFETY: forwarded from the caller.
    unsafe { write_bulk(dst, src, len, streaming) };
}

/// Copies `len` bytes 64 at a time with 16-byte loads and stores (x86_64): unaligned stores,
/// or (`streaming`) non-temporal ones to a 16-byte aligned destination, then an sfence.
///
/// # Safety
/// As `copy_nonoverlapping(src, dst, len)`.
#[cfg(target_arch = "x86_64")]
unsafe fn simd_copy(dst: *mut u8, src: *const u8, len: usize, streaming: bool) {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_sfence, _mm_storeu_si128, _mm_stream_si128,
    };
    let head = if streaming {
        dst.align_offset(16).min(len)
    } else {
        0
    };
    // SAFETY: forwarded from the caller; every access below lies inside [0, len); the
    // unaligned loads and stores take any address, and every `_mm_stream_si128` target is
    // `dst + head + 16k`, 16-byte aligned as it requires.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut i = head;
        while i + 64 <= len {
            let s = src.add(i) as *const __m128i;
            let d = dst.add(i) as *mut __m128i;
            let v = [
                _mm_loadu_si128(s),
                _mm_loadu_si128(s.add(1)),
                _mm_loadu_si128(s.add(2)),
                _mm_loadu_si128(s.add(3)),
            ];
            for (k, x) in v.into_iter().enumerate() {
                if streaming {
                    _mm_stream_si128(d.add(k), x);
                } else {
                    _mm_storeu_si128(d.add(k), x);
                }
            }
            i += 64;
        }
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
        if streaming {
            _mm_sfence();
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn simd_copy(dst: *mut u8, src: *const u8, len: usize, _streaming: bool) {
    // SAFETY: forwarded from the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
}

/// The aligned 8-byte word of GM at `w`.
///
/// # Safety
/// `w` must be 8-aligned and its 8 bytes GM (or other memory only accessed atomically while
/// others may access it) for `'a`.
pub(crate) unsafe fn word<'a>(w: usize) -> &'a AtomicU64 {
    // SAFETY: forwarded from the caller; AtomicU64 has u64's size and (8-byte) alignment.
    unsafe { &*(w as *const AtomicU64) }
}

/// Atomic acquire loads of the 8-byte words `src..src+len` touches, ascending addresses.
///
/// # Safety
/// `src..src+len` must be inside a live GM allocation (its words are GM, see the module docs),
/// `dst..dst+len` valid for writes.
pub(crate) unsafe fn atomic_read(dst: *mut u8, src: *const u8, len: usize) {
    let (start, end) = (src as usize, src as usize + len);
    let mut w = start & !7;
    while w < end {
        // SAFETY: w is 8-aligned and a word the range touches.
        let v = unsafe { word(w) }.load(Ordering::Acquire);
        let (lo, hi) = (start.max(w), end.min(w + 8));
        if hi - lo == 8 {
            // SAFETY: the whole word is inside the range, so its 8 bytes are in the destination.
            unsafe { std::ptr::write_unaligned(dst.add(lo - start) as *mut u64, v) };
        } else {
            let bytes = v.to_ne_bytes();
            for a in lo..hi {
                // SAFETY: a is inside the range, so dst + (a - start) is in the destination.
                unsafe { *dst.add(a - start) = bytes[a - w] };
            }
        }
        w += 8;
    }
}

/// Atomic release stores of the 8-byte words `dst..dst+len` touches, *descending* addresses:
/// the first word of the range is stored last (see the module docs). A word the range covers
/// only partly is merged with a compare-and-swap, leaving its other bytes as they are.
///
/// # Safety
/// `dst..dst+len` must be inside a live GM allocation (its words are GM, see the module docs),
/// `src..src+len` valid for reads.
pub(crate) unsafe fn atomic_write(dst: *mut u8, src: *const u8, len: usize) {
    if len == 0 {
        return;
    }
    let (start, end) = (dst as usize, dst as usize + len);
    let mut w = (end - 1) & !7;
    loop {
        let (lo, hi) = (start.max(w), end.min(w + 8));
        // SAFETY: w is 8-aligned and a word the range touches.
        let cell = unsafe { word(w) };
        if hi - lo == 8 {
            // SAFETY: the whole word is inside the range, so its 8 bytes are in the source.
            let v = unsafe { std::ptr::read_unaligned(src.add(lo - start) as *const u64) };
            cell.store(v, Ordering::Release);
        } else {
            let merge = |old: u64| {
                let mut b = old.to_ne_bytes();
                for a in lo..hi {
                    // SAFETY: a is inside the range, so src + (a - start) is in the source.
                    b[a - w] = unsafe { *src.add(a - start) };
                }
                Some(u64::from_ne_bytes(b))
            };
            let _ = cell.fetch_update(Ordering::Release, Ordering::Relaxed, merge);
        }
        if w <= start {
            break;
        }
        w -= 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_wise_copies_move_every_byte_at_any_alignment() {
        let src: Vec<u8> = (0..100u8).collect();
        for off in 0..9 {
            for len in 0..40 {
                // Whole words, as GM is (the accesses touch the words around the range).
                let mut words = vec![0u64; 16];
                let gm = words.as_mut_ptr() as *mut u8;
                // SAFETY: both ranges are inside their vectors, the words around gm's too.
                unsafe { atomic_write(gm.add(off), src.as_ptr(), len) };
                // SAFETY: words' 128 bytes, not accessed otherwise while this lives.
                let bytes = unsafe { std::slice::from_raw_parts(gm, 128) };
                assert_eq!(&bytes[off..off + len], &src[..len]);
                assert!(bytes[..off]
                    .iter()
                    .chain(&bytes[off + len..])
                    .all(|&b| b == 0));
                let mut back = vec![0u8; len];
                // SAFETY: as above.
                unsafe { atomic_read(back.as_mut_ptr(), gm.add(off), len) };
                assert_eq!(&back[..], &src[..len]);
            }
        }
    }

    #[test]
    fn partial_words_leave_whole_words_between() {
        for addr in 0..24usize {
            for len in 0..40usize {
                let (head, tail) = partial_words(addr, len);
                assert!(head + tail <= len, "{addr} {len}");
                let mid = len - head - tail;
                // The middle is whole words; head and tail each stay inside one word.
                assert!(
                    mid % 8 == 0 && (mid == 0 || (addr + head) % 8 == 0),
                    "{addr} {len}"
                );
                assert!(head < 8 && tail < 8, "{addr} {len}");
                if head > 0 {
                    assert_eq!(addr / 8, (addr + head - 1) / 8, "{addr} {len}");
                }
                if tail > 0 {
                    assert_eq!((addr + len - tail) % 8, 0, "{addr} {len}");
                }
            }
        }
    }

    /// A flag stored with 4 bytes (a `WriteGmByPassDCache<int32_t>`) into a cell a poller reads
    /// 32 bytes at a time: once the poller sees the flag it sees the data written before it, and
    /// both sides access the cell with one atomic width. A memory-model check under Miri (see
    /// the atomics module's `memory_model_` test).
    #[test]
    fn memory_model_a_four_byte_flag_store_and_a_cell_poll_agree() {
        // Words 0-3: the cell (the flag in its second lane); word 4: the data.
        let mut gm = vec![0u64; 5];
        let base = gm.as_mut_ptr() as usize;
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: word 4 of gm; the poller reads it only after the flag (the rule).
                unsafe { ((base + 32) as *mut u64).write(42) };
                // SAFETY: 4 bytes inside gm's cell, from a 4-byte value.
                unsafe { write((base + 4) as *mut u8, 1u32.to_le_bytes().as_ptr(), 4) };
            });
            s.spawn(|| {
                let mut cell = [0u32; 8];
                loop {
                    // SAFETY: gm's first 32 bytes into a 32-byte buffer.
                    unsafe { read(cell.as_mut_ptr().cast(), base as *const u8, 32) };
                    if cell[1] == 1 {
                        break;
                    }
                    std::thread::yield_now();
                }
                // SAFETY: word 4 of gm, written before the flag that was seen.
                assert_eq!(unsafe { ((base + 32) as *const u64).read() }, 42);
            });
        });
        assert_eq!(gm[0], 1 << 32);
    }

    /// A bulk copy that ends inside a word, a small store into the rest of that word and of the
    /// next, and a bulk read that starts inside that next word, all at once: correct kernels
    /// (no byte is accessed by two of them), so the twin itself must not race either, whatever
    /// width its atomic accesses use. A memory-model check under Miri.
    #[test]
    fn memory_model_bulk_copies_and_a_small_store_may_share_words() {
        // [0, n): the bulk write; [n, n + 8): the small store; [n + 8, 2n + 8): the bulk read.
        // n is 4 more than a multiple of 8, so each neighbour pair shares a word.
        let n = SMALL_ACCESS + 4;
        let mut gm = vec![0u64; (2 * n + 8) / 8];
        let base = gm.as_mut_ptr() as usize;
        let bulk = vec![7u8; n];
        std::thread::scope(|s| {
            // SAFETY: gm's first n bytes, from n bytes; no other thread accesses them.
            s.spawn(|| unsafe { write(base as *mut u8, bulk.as_ptr(), n) });
            // SAFETY: gm's bytes n..n+8, which no other thread accesses.
            s.spawn(|| unsafe { write((base + n) as *mut u8, [9u8; 8].as_ptr(), 8) });
            s.spawn(|| {
                let mut back = vec![1u8; n];
                // SAFETY: gm's last n bytes, which no other thread accesses.
                unsafe { read(back.as_mut_ptr(), (base + n + 8) as *const u8, n) };
                assert!(back.iter().all(|&b| b == 0));
            });
        });
        // SAFETY: the threads are done; gm holds 2n + 8 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, 2 * n + 8) };
        assert!(bytes[..n].iter().all(|&b| b == 7));
        assert!(bytes[n..n + 8].iter().all(|&b| b == 9));
    }

    #[test]
    fn registry_bounds_kinds_and_marks() {
        let m = Memory::new(7, None);
        let a = m.alloc(4096, 3, GmKind::Data).unwrap() as usize;
        let s = m.alloc(64, 3, GmKind::Sync).unwrap() as usize;
        assert!(
            m.lookup(a, 4096).is_some()
                && m.lookup(a, 4097).is_none()
                && m.lookup(a + 4096, 1).is_none()
        );
        assert_eq!(
            m.with_region(a + 10, 8, |h| h.is_sync(a + 10, 8)),
            Some(false)
        );
        assert_eq!(m.with_region(s, 32, |h| h.is_sync(s, 32)), Some(true));
        assert!(m.mark_sync(a + 1024, 64));
        assert_eq!(
            m.with_region(a + 1024, 32, |h| h.is_sync(a + 1024, 32)),
            Some(true)
        );
        assert_eq!(
            m.with_region(a + 1000, 64, |h| h.is_sync(a + 1000, 64)),
            Some(false)
        );
        assert!(!m.mark_sync(a + 4000, 200));
        assert_eq!(m.owner(a + 5), Some(3));
        assert_eq!(m.usage(), (2, 4096 + 64));
        // SAFETY: both come from `alloc` above and are not used again.
        unsafe {
            m.free(a as *mut u8, 4096);
            m.free(s as *mut u8, 64);
        }
        assert!(m.lookup(a, 1).is_none());
        assert_eq!(m.usage(), (0, 0));
    }
}
