//! Global memory: allocations with known bounds, defined concurrent access, and wake-ups for
//! blocks parked on a polled address.
//!
//! GM addresses in the twin are host addresses, so a kernel holding a peer's buffer address reads
//! the peer's memory directly (as an AIV core does over HCCS with IPC-mapped buffers).
//!
//! Concurrency model. Flag polls race with flag stores by design. To keep that defined in Rust,
//! small accesses (at most [`SMALL_ACCESS`] bytes: flag cells, rows of flags, scalars) are done as atomic
//! loads (acquire) and stores (release), bulk copies as `memcpy` framed by fences. A kernel that
//! writes data, then its flag, and a peer that sees the flag, then reads the data, is therefore
//! correct on the twin for the same reason it is correct on hardware.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::padded::Padded;

/// Accesses of at most this many bytes are done with atomic word operations.
pub const SMALL_ACCESS: usize = 2048;
/// GM allocation alignment (a page, as device allocations are).
pub const GM_ALIGN: usize = 4096;

#[derive(Clone)]
struct Region {
    len: usize,
    rank: u32,
    meta: Arc<RegionMeta>,
}

/// Per-allocation counters that let GM writes skip work: a write into an allocation nobody is
/// parked on and no block holds a deferred snapshot of needs neither a wake-up scan nor a
/// snapshot check. Each on its own cache lines (two workers update different allocations').
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct RegionMeta {
    /// Blocks and host tasks parked on a range of this allocation.
    pub parked: AtomicUsize,
    /// Pending deferred GM -> UB snapshots of this allocation (lazy.rs).
    pub snapshots: AtomicUsize,
}

struct Registry {
    map: RwLock<BTreeMap<usize, Region>>,
    /// Bumped by every allocation and free. On a cache line of its own: every bounds check reads
    /// it, and the lock word next to the map changes on every lookup that misses the caches.
    generation: Padded<AtomicU64>,
}

static REGISTRY: Registry = Registry {
    map: RwLock::new(BTreeMap::new()),
    generation: Padded(AtomicU64::new(0)),
};

/// Allocations of at least this size are anonymous mappings: zero pages the OS provides lazily,
/// so a 200 MB HCCL buffer costs nothing until it is touched.
const MAP_THRESHOLD: usize = 1 << 20;

/// Allocates `bytes` (at least 1) of zeroed, page-aligned GM for `rank` and registers it.
pub(crate) fn gm_alloc(bytes: usize, rank: u32) -> Option<*mut u8> {
    let len = bytes.max(1);
    let ptr = if len >= MAP_THRESHOLD {
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
    {
        let mut map = REGISTRY.map.write();
        map.insert(
            ptr as usize,
            Region {
                len,
                rank,
                meta: Arc::default(),
            },
        );
        // Bumped under the lock: a thread that copies the map sees this generation or a later one.
        REGISTRY.generation.fetch_add(1, Ordering::Release);
    }
    Some(ptr)
}

/// Unregisters and frees an allocation made by [`gm_alloc`].
///
/// # Safety
/// `ptr` and `bytes` must come from one `gm_alloc` call, and no kernel may still use it.
pub(crate) unsafe fn gm_free(ptr: *mut u8, bytes: usize) {
    crate::lazy::before_gm_write(ptr as usize, bytes.max(1));
    {
        let mut map = REGISTRY.map.write();
        map.remove(&(ptr as usize));
        REGISTRY.generation.fetch_add(1, Ordering::Release);
    }
    crate::race::forget(ptr as usize, bytes.max(1));
    let len = bytes.max(1);
    if len >= MAP_THRESHOLD {
        // SAFETY: the caller guarantees ptr/len come from the mmap in gm_alloc.
        unsafe { libc::munmap(ptr as *mut libc::c_void, len) };
    } else {
        let layout =
            Layout::from_size_align(len, GM_ALIGN).expect("layout was valid at allocation");
        // SAFETY: the caller guarantees ptr/bytes come from gm_alloc with this layout.
        unsafe { dealloc(ptr, layout) };
    }
}

/// A thread's copy of the registry's ranges (sorted by start), rebuilt when the registry
/// generation changes (an allocation or a free): bounds checks then take no lock and touch no
/// shared cache line but the generation.
struct RegionCache {
    generation: u64,
    ranges: Vec<(usize, usize, Arc<RegionMeta>)>,
    /// Index of the range the last successful lookup found (lookups come in runs).
    last: usize,
}

thread_local! {
    static CACHE: std::cell::RefCell<RegionCache> = const {
        std::cell::RefCell::new(RegionCache {
            generation: u64::MAX,
            ranges: Vec::new(),
            last: 0,
        })
    };
}

/// Runs `f` with the counters of the live allocation holding all of `[addr, addr + len)`;
/// None if there is none.
pub(crate) fn with_region<R>(
    addr: usize,
    len: usize,
    f: impl FnOnce(&Arc<RegionMeta>) -> R,
) -> Option<R> {
    let end = addr.checked_add(len)?;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let generation = REGISTRY.generation.load(Ordering::Acquire);
        if c.generation != generation {
            let map = REGISTRY.map.read();
            c.ranges.clear();
            c.ranges.extend(
                map.iter()
                    .map(|(&start, region)| (start, start + region.len, region.meta.clone())),
            );
            // Read under the lock: a change after this bumps the generation again.
            c.generation = REGISTRY.generation.load(Ordering::Acquire);
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
            f(&c.ranges[i].2)
        })
    })
}

/// True if `[addr, addr + len)` lies inside one live allocation (of any device).
pub(crate) fn gm_check(addr: usize, len: usize) -> bool {
    with_region(addr, len, |_| ()).is_some()
}

/// The rank owning the allocation that contains `addr`, if any.
pub(crate) fn gm_owner(addr: usize) -> Option<u32> {
    let map = REGISTRY.map.read();
    let (&start, region) = map.range(..=addr).next_back()?;
    (addr < start + region.len).then_some(region.rank)
}

// ---- memory access ----

/// Reads `len` bytes of GM at `src` into `dst`.
///
/// # Safety
/// `src..src+len` must be inside a live GM allocation and `dst..dst+len` valid for writes and
/// not overlapping it.
pub(crate) unsafe fn gm_read(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { atomic_read(dst, src, len) };
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        fence(Ordering::Acquire);
    }
}

/// Writes `len` bytes from `src` into GM at `dst` and wakes blocks parked on that range.
///
/// # Safety
/// `dst..dst+len` must be inside a live GM allocation and `src..src+len` valid for reads and
/// not overlapping it.
pub(crate) unsafe fn gm_write(dst: *mut u8, src: *const u8, len: usize) {
    crate::lazy::before_gm_write(dst as usize, len);
    // SAFETY: forwarded from the caller.
    unsafe { gm_write_raw(dst, src, len) };
}

/// [`gm_write`] without materialising pending UB snapshots of the range first: the caller has
/// done so (see `lazy.rs`).
///
/// # Safety
/// As [`gm_write`].
pub(crate) unsafe fn gm_write_raw(dst: *mut u8, src: *const u8, len: usize) {
    if len <= SMALL_ACCESS {
        // SAFETY: forwarded from the caller.
        unsafe { atomic_write(dst, src, len) };
    } else {
        fence(Ordering::Release);
        // SAFETY: forwarded from the caller.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
    notify_write(dst as usize, len);
}

/// Byte/word-wise atomic acquire loads.
///
/// # Safety
/// As [`gm_read`].
pub(crate) unsafe fn atomic_read(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0;
    while i < len {
        let p = src as usize + i;
        if p.is_multiple_of(4) && len - i >= 4 {
            // SAFETY: p is 4-aligned, inside the GM range; AtomicU32 has u32's layout.
            let v = unsafe { (*(p as *const AtomicU32)).load(Ordering::Acquire) };
            // SAFETY: dst+i..dst+i+4 is inside the destination.
            unsafe { std::ptr::write_unaligned(dst.add(i) as *mut u32, v) };
            i += 4;
        } else {
            // SAFETY: p is inside the GM range; AtomicU8 has u8's layout.
            let v = unsafe { (*(p as *const AtomicU8)).load(Ordering::Acquire) };
            // SAFETY: dst+i is inside the destination.
            unsafe { *dst.add(i) = v };
            i += 1;
        }
    }
}

/// Byte/word-wise atomic release stores.
///
/// # Safety
/// As [`gm_write`].
pub(crate) unsafe fn atomic_write(dst: *mut u8, src: *const u8, len: usize) {
    let mut i = 0;
    while i < len {
        let p = dst as usize + i;
        if p.is_multiple_of(4) && len - i >= 4 {
            // SAFETY: src+i..src+i+4 is inside the source.
            let v = unsafe { std::ptr::read_unaligned(src.add(i) as *const u32) };
            // SAFETY: p is 4-aligned and inside the GM range.
            unsafe { (*(p as *const AtomicU32)).store(v, Ordering::Release) };
            i += 4;
        } else {
            // SAFETY: src+i is inside the source.
            let v = unsafe { *src.add(i) };
            // SAFETY: p is inside the GM range.
            unsafe { (*(p as *const AtomicU8)).store(v, Ordering::Release) };
            i += 1;
        }
    }
}

// ---- wake-ups ----

/// Counts writes that may wake a parked block: into an allocation someone is parked on, or to a
/// host signal (progress indicator for the watchdog).
pub(crate) static WRITE_EPOCH: Padded<AtomicU64> = Padded(AtomicU64::new(0));

/// Resumes blocks parked on any address in `[addr, addr + len)`. Cheap when nobody is parked.
pub(crate) fn notify_write(addr: usize, len: usize) {
    crate::sched::notify(addr, len);
}

/// Bytes the kernels' DMA moved between GM and UB, summed over all devices since the process
/// started: DataCopy / DataCopyPad from GM (`read`) and to GM (`written`; an atomic store also
/// reads its destination, counted in `read`). Scalar GetValue/SetValue are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GmTraffic {
    /// Bytes read from GM.
    pub read: u64,
    /// Bytes written to GM.
    pub written: u64,
}

/// One worker's traffic counters, on a cache line of their own.
#[repr(align(128))]
struct TrafficSlot {
    read: std::sync::atomic::AtomicU64,
    written: std::sync::atomic::AtomicU64,
}

const TRAFFIC_SLOTS: usize = 64;

static TRAFFIC: [TrafficSlot; TRAFFIC_SLOTS] = [const {
    TrafficSlot {
        read: std::sync::atomic::AtomicU64::new(0),
        written: std::sync::atomic::AtomicU64::new(0),
    }
}; TRAFFIC_SLOTS];

/// Adds one DMA transfer to the calling worker's counters.
pub(crate) fn count_traffic(read: usize, written: usize) {
    let w = crate::sched::worker_index();
    let slot = &TRAFFIC[w % TRAFFIC_SLOTS];
    if w < TRAFFIC_SLOTS {
        // The slot's only writer: a plain load and store (no locked instruction) suffice.
        let r = slot.read.load(Ordering::Relaxed);
        slot.read.store(r + read as u64, Ordering::Relaxed);
        let wr = slot.written.load(Ordering::Relaxed);
        slot.written.store(wr + written as u64, Ordering::Relaxed);
    } else {
        slot.read.fetch_add(read as u64, Ordering::Relaxed);
        slot.written.fetch_add(written as u64, Ordering::Relaxed);
    }
}

/// GM traffic of all kernels so far (see [`GmTraffic`]); subtract two readings to measure a span.
pub fn gm_traffic() -> GmTraffic {
    let mut t = GmTraffic::default();
    for slot in &TRAFFIC {
        t.read += slot.read.load(Ordering::Relaxed);
        t.written += slot.written.load(Ordering::Relaxed);
    }
    t
}
