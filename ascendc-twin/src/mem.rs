//! Global memory of one twin: allocations with known bounds and kinds, and the raw accesses.
//!
//! GM addresses in the twin are host addresses, so a kernel holding a peer's buffer address reads
//! the peer's memory directly (as an AIV core does over HCCS with IPC-mapped buffers). Every
//! kernel access is bounds-checked against the live allocations of the kernel's own twin: a
//! kernel of one twin cannot reach another twin's memory.
//!
//! Concurrency. Flag polls race with flag stores by design. To keep that defined in Rust, small
//! accesses (at most [`SMALL_ACCESS`] bytes: flag cells, rows of flags, scalars, ragged tails)
//! are done as atomic word loads (acquire, ascending addresses) and stores (release, *descending*
//! addresses, so a reader that sees the first word of a 32-byte cell new sees the rest of the
//! cell new too: the tag in lane 0 is stored last and read first). Bulk copies are plain
//! `memcpy`: they are data-race free only when the kernel orders them against every conflicting
//! access of other blocks (by flags), which is what the GM race checker verifies before each
//! such copy; with the checker off, a racy kernel makes the twin itself racy.
//!
//! Kinds: memory allocated as [`GmKind::Sync`] (sync areas, flag regions) holds flags; every
//! other allocation holds data. The race checker classifies accesses by this kind, never by
//! their size.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};
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
            let layout = Layout::from_size_align(len, GM_ALIGN).ok()?;
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
            let layout =
                Layout::from_size_align(len, GM_ALIGN).expect("layout was valid at allocation");
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
/// `src..src+len` must be inside a live GM allocation and `dst..dst+len` valid for writes and
/// not overlapping it; a bulk read (more than [`SMALL_ACCESS`] bytes) must not race with a write
/// of the same bytes.
pub(crate) unsafe fn read(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { atomic_read(dst, src, len) };
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { copy_bulk(dst, src, len) };
        fence(Ordering::Acquire);
    }
}

/// `copy_nonoverlapping(src, dst, len)` for bulk copies, at full speed whatever the distance
/// between the two.
///
/// glibc's memcpy (2.36, measured on the AMD EPYC VM of BENCHMARKS.md) copies 4-64 KiB at
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

/// Writes `len` bytes from `src` into GM at `dst`.
///
/// # Safety
/// `dst..dst+len` must be inside a live GM allocation and `src..src+len` valid for reads and
/// not overlapping it; a bulk write must not race with any other access of the same bytes.
pub(crate) unsafe fn write(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { atomic_write(dst, src, len) };
    } else {
        fence(Ordering::Release);
        // SAFETY: forwarded from the caller.
        unsafe { copy_bulk(dst, src, len) };
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
    fence(Ordering::Release);
    // SAFETY: forwarded from the caller.
    unsafe { simd_copy(dst, src, len, true) };
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

/// Word-wise atomic acquire loads, ascending addresses (8-byte words where aligned).
///
/// # Safety
/// `src..src+len` must be valid for reads (GM), `dst..dst+len` for writes.
pub(crate) unsafe fn atomic_read(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0;
    while i < len {
        let p = src as usize + i;
        if p.is_multiple_of(8) && len - i >= 8 {
            // SAFETY: p is 8-aligned, inside the range; AtomicU64 has u64's layout.
            let v = unsafe { (*(p as *const AtomicU64)).load(Ordering::Acquire) };
            // SAFETY: dst+i..dst+i+8 is inside the destination.
            unsafe { std::ptr::write_unaligned(dst.add(i) as *mut u64, v) };
            i += 8;
        } else if p.is_multiple_of(4) && len - i >= 4 {
            // SAFETY: as above, for 4 bytes.
            let v = unsafe { (*(p as *const AtomicU32)).load(Ordering::Acquire) };
            // SAFETY: as above.
            unsafe { std::ptr::write_unaligned(dst.add(i) as *mut u32, v) };
            i += 4;
        } else {
            // SAFETY: p is inside the range; AtomicU8 has u8's layout.
            let v = unsafe { (*(p as *const AtomicU8)).load(Ordering::Acquire) };
            // SAFETY: dst+i is inside the destination.
            unsafe { *dst.add(i) = v };
            i += 1;
        }
    }
}

/// Word-wise atomic release stores, *descending* addresses (8-byte words where aligned): the
/// first word of the range is stored last (see the module docs).
///
/// # Safety
/// `dst..dst+len` must be valid for writes (GM), `src..src+len` for reads.
pub(crate) unsafe fn atomic_write(dst: *mut u8, src: *const u8, len: usize) {
    let mut end = len;
    while end > 0 {
        let p = dst as usize + end;
        if p.is_multiple_of(8) && end >= 8 {
            let i = end - 8;
            // SAFETY: src+i..src+end is inside the source.
            let v = unsafe { std::ptr::read_unaligned(src.add(i) as *const u64) };
            // SAFETY: p - 8 is 8-aligned and inside the GM range.
            unsafe { (*((p - 8) as *const AtomicU64)).store(v, Ordering::Release) };
            end = i;
        } else if p.is_multiple_of(4) && end >= 4 {
            let i = end - 4;
            // SAFETY: as above, for 4 bytes.
            let v = unsafe { std::ptr::read_unaligned(src.add(i) as *const u32) };
            // SAFETY: as above.
            unsafe { (*((p - 4) as *const AtomicU32)).store(v, Ordering::Release) };
            end = i;
        } else {
            let i = end - 1;
            // SAFETY: src+i is inside the source.
            let v = unsafe { *src.add(i) };
            // SAFETY: p - 1 is inside the GM range.
            unsafe { (*((p - 1) as *const AtomicU8)).store(v, Ordering::Release) };
            end = i;
        }
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
                let mut gm = vec![0u8; 128];
                // SAFETY: both ranges are inside their vectors.
                unsafe { atomic_write(gm.as_mut_ptr().add(off), src.as_ptr(), len) };
                assert_eq!(&gm[off..off + len], &src[..len]);
                assert!(gm[..off].iter().chain(&gm[off + len..]).all(|&b| b == 0));
                let mut back = vec![0u8; len];
                // SAFETY: as above.
                unsafe { atomic_read(back.as_mut_ptr(), gm.as_ptr().add(off), len) };
                assert_eq!(&back[..], &src[..len]);
            }
        }
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
