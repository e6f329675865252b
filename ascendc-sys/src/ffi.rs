//! The C ABI the twin's AscendC headers call (asc_twin_abi.h), and the hardware rules applied to
//! each call.
//!
//! Every function returns 0 on success. On misuse it records a [`FaultKind`] for the running
//! block's launch and returns non-zero; the header then throws and the block ends.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::atomics::{reduce_store, AtomicOp, AtomicType};
use crate::device::{BlockCtx, CacheLine, EVENT_IDS, HARD_EVENTS, SYSTEM_CYCLE_HZ};
use crate::error::FaultKind;
use crate::gm::{self, SMALL_ACCESS};
use crate::knobs;
use crate::sched::{self, Req, RUNNING};
use smallvec::SmallVec;

/// Mirror of `struct AscTwinCopy` in asc_twin_abi.h.
#[repr(C)]
pub struct AscTwinCopy {
    api: u32,
    dir: u32,
    ub: *mut u8,
    ub_cap: u64,
    gm: *mut u8,
    elem_size: u32,
    block_count: u32,
    block_len: u32,
    src_stride: u64,
    dst_stride: u64,
    is_pad: u32,
    left_pad: u32,
    right_pad: u32,
    pad_value: u64,
}

const API_DATA_COPY: u32 = 0;
const API_STRIDED: u32 = 1;
const API_PAD: u32 = 2;
const GM_TO_UB: u32 = 0;
const BLK: usize = 32;
/// Largest blockCount of DataCopy/DataCopyPad (12-bit field).
const MAX_BLOCK_COUNT: u32 = 4095;
/// Largest blockLen of DataCopyPad in bytes.
const MAX_PAD_BLOCK_LEN: u32 = 2_097_151;
/// Filler the twin writes where the hardware leaves unspecified ("random") bytes in UB.
pub const POISON: u8 = 0xA5;

static EPOCH: crate::padded::Padded<std::sync::OnceLock<Instant>> =
    crate::padded::Padded(std::sync::OnceLock::new());

fn copy_op_name(api: u32, dir: u32) -> &'static str {
    match (api, dir) {
        (API_DATA_COPY, GM_TO_UB) => "DataCopy(GM->UB)",
        (API_DATA_COPY, _) => "DataCopy(UB->GM)",
        (API_STRIDED, GM_TO_UB) => "DataCopy(GM->UB, DataCopyParams)",
        (API_STRIDED, _) => "DataCopy(UB->GM, DataCopyParams)",
        (API_PAD, GM_TO_UB) => "DataCopyPad(GM->UB)",
        (_, _) => "DataCopyPad(UB->GM)",
    }
}

/// Runs `f` with the calling block's context; records its fault under `op` and returns 1 on
/// error. Outside a kernel (no context) returns 3.
fn with_ctx(op: &str, f: impl FnOnce(&mut BlockCtx) -> Result<(), FaultKind>) -> i32 {
    let p = sched::current();
    if p.is_null() {
        return 3;
    }
    // SAFETY: the scheduler points CURRENT at the running block's context, owned by its task for
    // the whole life of the block; no other reference to it is live while the block runs.
    let ctx = unsafe { &mut *p };
    if ctx.launch.aborted.load(Ordering::Relaxed) {
        return 1;
    }
    match f(ctx) {
        Ok(()) => 0,
        Err(kind) => {
            if kind != FaultKind::Aborted {
                ctx.launch.record(ctx.block, op, kind);
            }
            1
        }
    }
}

fn jitter(ctx: &mut BlockCtx) {
    let max = knobs::jitter_us();
    if max == 0 {
        return;
    }
    ctx.rng ^= ctx.rng << 13;
    ctx.rng ^= ctx.rng >> 7;
    ctx.rng ^= ctx.rng << 17;
    if ctx.rng.is_multiple_of(4) {
        let delay = Duration::from_micros((ctx.rng >> 8) % (max as u64 + 1));
        sched::suspend(
            ctx,
            Req::Park {
                addr: 0,
                len: 0,
                hash: 0,
                fresh: false,
                until: Instant::now() + delay,
            },
        );
    }
}

/// One contiguous piece of a DMA: GM byte offset from `gm`, UB byte offset from `ub`, length.
#[derive(Clone, Copy)]
struct Burst {
    gm: usize,
    ub: usize,
    len: usize,
    /// DataCopyPad GM->UB: UB bytes this burst occupies (padding and dummy included).
    ub_span: usize,
}

fn plan(r: &AscTwinCopy) -> Result<SmallVec<[Burst; 2]>, FaultKind> {
    let es = r.elem_size as usize;
    let mut out = SmallVec::new();
    match r.api {
        API_DATA_COPY => {
            let len = r.block_len as usize;
            if !len.is_multiple_of(BLK) {
                return Err(FaultKind::BadLength {
                    len: len as u64,
                    reason: format!(
                        "DataCopy moves whole 32-byte blocks; the NPU would silently copy only {} bytes (use DataCopyPad for ragged lengths)",
                        len / BLK * BLK
                    ),
                });
            }
            if len > 0 {
                out.push(Burst {
                    gm: 0,
                    ub: 0,
                    len,
                    ub_span: len,
                });
            }
        }
        API_STRIDED => {
            if r.block_count == 0 || r.block_count > MAX_BLOCK_COUNT {
                return Err(FaultKind::BadLength {
                    len: r.block_count as u64,
                    reason: format!("DataCopyParams.blockCount must be 1..={MAX_BLOCK_COUNT}"),
                });
            }
            if r.block_len == 0 {
                return Err(FaultKind::BadLength {
                    len: 0,
                    reason: "DataCopyParams.blockLen (32-byte blocks) must be at least 1".into(),
                });
            }
            let len = r.block_len as usize * BLK;
            let (gm_gap, ub_gap) = if r.dir == GM_TO_UB {
                (r.src_stride as usize * BLK, r.dst_stride as usize * BLK)
            } else {
                (r.dst_stride as usize * BLK, r.src_stride as usize * BLK)
            };
            for i in 0..r.block_count as usize {
                out.push(Burst {
                    gm: i * (len + gm_gap),
                    ub: i * (len + ub_gap),
                    len,
                    ub_span: len,
                });
            }
        }
        API_PAD => {
            if r.block_count > MAX_BLOCK_COUNT {
                return Err(FaultKind::BadLength {
                    len: r.block_count as u64,
                    reason: format!("DataCopyExtParams.blockCount must be 0..={MAX_BLOCK_COUNT}"),
                });
            }
            if r.block_len > MAX_PAD_BLOCK_LEN {
                return Err(FaultKind::BadLength {
                    len: r.block_len as u64,
                    reason: format!(
                        "DataCopyExtParams.blockLen must be at most {MAX_PAD_BLOCK_LEN} bytes"
                    ),
                });
            }
            let len = r.block_len as usize;
            if !len.is_multiple_of(es) {
                return Err(FaultKind::BadLength {
                    len: len as u64,
                    reason: format!(
                        "DataCopyExtParams.blockLen must be a multiple of sizeof(T) = {es}"
                    ),
                });
            }
            let (lp, rp) = if r.dir == GM_TO_UB {
                (r.left_pad as usize * es, r.right_pad as usize * es)
            } else {
                (0, 0)
            };
            if lp > BLK || rp > BLK {
                return Err(FaultKind::BadLength {
                    len: lp.max(rp) as u64,
                    reason: "leftPadding/rightPadding may cover at most 32 bytes each".into(),
                });
            }
            let span = (lp + len + rp).div_ceil(BLK) * BLK;
            let (gm_gap, ub_gap) = if r.dir == GM_TO_UB {
                (r.src_stride as usize, r.dst_stride as usize * BLK)
            } else {
                (r.dst_stride as usize, r.src_stride as usize * BLK)
            };
            for i in 0..r.block_count as usize {
                out.push(Burst {
                    gm: i * (len + gm_gap),
                    ub: i * (span + ub_gap),
                    len,
                    ub_span: span,
                });
            }
        }
        other => {
            return Err(FaultKind::Misuse {
                reason: "unknown copy api".into(),
                value: other as u64,
                limit: 0,
            })
        }
    }
    Ok(out)
}

fn do_copy(ctx: &mut BlockCtx, r: &AscTwinCopy) -> Result<(), FaultKind> {
    let ub_base = ctx.ub as usize;
    let ub_addr = r.ub as usize;
    if ub_addr < ub_base || ub_addr > ub_base + ctx.ub_len {
        return Err(FaultKind::UbOutOfBounds {
            offset: ub_addr.wrapping_sub(ub_base) as u64,
            len: 0,
            limit: 0,
        });
    }
    let ub_off = ub_addr - ub_base;
    if !ub_off.is_multiple_of(BLK) {
        return Err(FaultKind::MisalignedUb {
            offset: ub_off as u64,
        });
    }
    let es = r.elem_size.max(1) as usize;
    let gm_addr = r.gm as usize;
    if r.api != API_PAD && !gm_addr.is_multiple_of(es) {
        return Err(FaultKind::MisalignedGm {
            addr: gm_addr as u64,
            align: es as u32,
        });
    }
    let bursts = plan(r)?;
    let Some(last) = bursts.last().copied() else {
        return Ok(());
    };
    let ub_limit = (r.ub_cap as usize).min(ctx.ub_len - ub_off);
    let ub_end = last.ub + last.ub_span;
    if ub_end > ub_limit {
        return Err(FaultKind::UbOutOfBounds {
            offset: ub_off as u64,
            len: ub_end as u64,
            limit: ub_limit as u64,
        });
    }
    let gm_end = last.gm + last.len;
    if !gm::gm_check(gm_addr, gm_end) {
        return Err(FaultKind::GmOutOfBounds {
            addr: gm_addr as u64,
            len: gm_end as u64,
        });
    }
    jitter(ctx);
    let moved: usize = bursts.iter().map(|b| b.len).sum();
    match (r.dir == GM_TO_UB, ctx.atomic.is_some()) {
        (true, _) => gm::count_traffic(moved, 0),
        (false, false) => gm::count_traffic(0, moved),
        (false, true) => gm::count_traffic(moved, moved),
    }
    if let Some(hz) = ctx.hazards.as_mut() {
        for b in &bursts {
            let (kind, len) = if r.dir == GM_TO_UB {
                (crate::hazard::Access::Mte2Write, b.ub_span)
            } else {
                (crate::hazard::Access::Mte3Read, b.len)
            };
            let from = ub_off + b.ub;
            hz.access(kind, from, from + len)
                .map_err(|reason| FaultKind::PipeHazard { reason })?;
        }
    }
    // GM race checker: small stores release, bulk accesses are checked (small loads acquire,
    // after the data is read, below).
    let atomic = ctx.atomic.is_some();
    if let Some(rc) = ctx.race.as_mut() {
        for b in &bursts {
            let a = gm_addr + b.gm;
            let res = match (r.dir == GM_TO_UB, b.len <= SMALL_ACCESS) {
                (true, true) => Ok(()),
                (true, false) => rc.access(a, b.len, false, false),
                (false, true) => {
                    rc.release(a, b.len);
                    Ok(())
                }
                (false, false) => rc.access(a, b.len, true, atomic),
            };
            res.map_err(|reason| FaultKind::GmRace { reason })?;
        }
    }
    if r.dir == GM_TO_UB {
        let deferrable = ctx.lazy_on
            && r.api != API_PAD
            && bursts.len() == 1
            && last.len == last.ub_span
            && last.len >= crate::lazy::MIN_LAZY;
        if deferrable {
            crate::lazy::stage(
                &mut ctx.lazy,
                gm_addr + last.gm,
                ub_addr + last.ub,
                last.len,
            );
            return Ok(());
        }
        for b in &bursts {
            let ub = ub_addr + b.ub;
            crate::lazy::before_ub_write(&mut ctx.lazy, ub, b.ub_span);
            if r.api == API_PAD {
                let lp = r.left_pad as usize * es;
                let rp = r.right_pad as usize * es;
                // SAFETY: the GM burst is inside a live allocation (checked above) and the UB
                // span [ub, ub + ub_span) inside the tensor's buffer (checked above).
                unsafe { gm::gm_read((ub + lp) as *mut u8, r.gm.add(b.gm), b.len) };
                fill_pad(r, ub, lp, b.len, rp, b.ub_span);
            } else {
                // SAFETY: as above.
                unsafe { gm::gm_read(ub as *mut u8, r.gm.add(b.gm), b.len) };
            }
        }
        if let Some(rc) = ctx.race.as_mut() {
            for b in bursts.iter().filter(|b| b.len <= SMALL_ACCESS) {
                rc.acquire(gm_addr + b.gm, b.len);
            }
        }
        if bursts.len() == 1 && last.len <= SMALL_ACCESS {
            let lp = if r.api == API_PAD {
                r.left_pad as usize * es
            } else {
                0
            };
            // SAFETY: just written above, inside UB.
            let seen = unsafe { std::slice::from_raw_parts((ub_addr + lp) as *const u8, last.len) };
            poll_track(ctx, gm_addr, seen, true)?;
        }
        return Ok(());
    }
    // UB -> GM
    if let Some((_, ty)) = ctx.atomic {
        let ts = ty.size();
        if !gm_addr.is_multiple_of(ts) || last.gm % ts != 0 {
            return Err(FaultKind::MisalignedGm {
                addr: gm_addr as u64,
                align: ts as u32,
            });
        }
        if last.len % ts != 0 {
            return Err(FaultKind::BadLength {
                len: last.len as u64,
                reason: format!("atomic store of {ty:?} needs a multiple of {ts} bytes"),
            });
        }
    }
    // One store of `len` bytes from `src` (UB, or the GM source of a deferred UB copy) to `dst`,
    // reducing when an atomic mode is set.
    let atomic = ctx.atomic;
    let store = |dst: usize, src: usize, len: usize| match atomic {
        Some((op, ty)) => {
            // SAFETY: the GM and UB ranges were checked above, the alignment for the atomic
            // type; a staged source is GM its snapshot keeps unwritten meanwhile, and does not
            // overlap dst (before_gm_write materialised any snapshot of dst).
            unsafe { reduce_store(op, ty, dst as *mut u8, src as *const u8, len) };
            gm::notify_write(dst, len);
        }
        // SAFETY: as above (gm_write_raw wakes the range's pollers itself).
        None => unsafe { gm::gm_write_raw(dst as *mut u8, src as *const u8, len) },
    };
    for b in &bursts {
        let (dst, ub) = (gm_addr + b.gm, ub_addr + b.ub);
        crate::lazy::before_gm_write(dst, b.len);
        if !crate::lazy::with_source(&mut ctx.lazy, ub, b.len, |src| store(dst, src, b.len)) {
            store(dst, ub, b.len);
        }
    }
    Ok(())
}

/// Writes DataCopyPad's left/right padding and 32-byte dummy tail around one burst in UB.
fn fill_pad(r: &AscTwinCopy, ub: usize, lp: usize, len: usize, rp: usize, span: usize) {
    let es = r.elem_size.max(1) as usize;
    let value = r.pad_value.to_le_bytes();
    let fill = |from: usize, to: usize, pattern: &dyn Fn(usize) -> u8| {
        for i in from..to {
            // SAFETY: [ub, ub + span) is inside the tensor's UB buffer (checked by the caller).
            unsafe { *((ub + i) as *mut u8) = pattern(i) };
        }
    };
    if r.is_pad != 0 {
        let pad = |i: usize| value[(i % es).min(7)];
        fill(0, lp, &pad);
        fill(lp + len, span, &pad);
    } else if lp == 0 && rp == 0 {
        // Documented: with no padding requested, the dummy tail repeats the first element.
        if len > 0 {
            // SAFETY: the first element was just copied in.
            let first: Vec<u8> = (0..es)
                .map(|i| unsafe { *((ub + i) as *const u8) })
                .collect();
            fill(len, span, &|i| first[i % es]);
        }
    } else {
        // Unspecified on hardware ("random"): poison so kernels cannot come to rely on it.
        fill(0, lp, &|_| POISON);
        fill(lp + len, span, &|_| POISON);
    }
}

/// Tracks repeated small reads of one GM address; backs off and parks a block that polls an
/// unchanged value so that waiting costs no CPU.
///
/// `fresh` says whether `seen` came from GM now (DMA, or a scalar read that missed the cache);
/// a stale cached value is parked on by timeout only, since no GM write can change it.
fn poll_track(ctx: &mut BlockCtx, addr: usize, seen: &[u8], fresh: bool) -> Result<(), FaultKind> {
    let p = &mut ctx.poll;
    let len = seen.len();
    let hash = hash_bytes(seen);
    if p.addr == addr && p.len == len && p.hash == hash {
        p.repeats += 1;
    } else {
        p.addr = addr;
        p.len = len;
        p.hash = hash;
        p.repeats = 0;
        p.parks = 0;
        p.since = None;
        return Ok(());
    }
    // The host usually has far fewer cores than the simulated blocks: spinning steals time from
    // the blocks that move data, so back off quickly.
    match p.repeats {
        0..=1 => {}
        2..=9 => sched::suspend(ctx, Req::Yield),
        _ => {
            if p.since.is_none() {
                p.since = Some(Instant::now());
                p.epoch = gm::WRITE_EPOCH.load(Ordering::Relaxed);
            }
            let timeout = Duration::from_micros(50u64 << p.parks.min(8));
            p.parks += 1;
            let req = Req::Park {
                addr,
                len,
                hash: p.hash,
                fresh,
                until: Instant::now() + timeout,
            };
            sched::suspend(ctx, req);
            if ctx.launch.aborted.load(Ordering::SeqCst) {
                return Err(FaultKind::Aborted);
            }
            watchdog(ctx, addr)?;
        }
    }
    Ok(())
}

fn watchdog(ctx: &mut BlockCtx, addr: usize) -> Result<(), FaultKind> {
    let Some(limit) = knobs::watchdog() else {
        return Ok(());
    };
    let p = &ctx.poll;
    let Some(since) = p.since else {
        return Ok(());
    };
    if since.elapsed() < limit {
        return Ok(());
    }
    let epoch = gm::WRITE_EPOCH.load(Ordering::Relaxed);
    let running = RUNNING.load(Ordering::SeqCst);
    // Everyone else parked (we just woke from our own park) and no GM write since we began.
    if epoch == p.epoch && sched::parked_count() + 1 >= running {
        let owner = gm::gm_owner(addr)
            .map(|r| format!("rank {r}"))
            .unwrap_or_else(|| "unknown rank".into());
        return Err(FaultKind::Deadlock {
            waiters: vec![format!(
                "rank {} block {} (kernel `{}`) polls GM {:#x} ({} bytes of {} memory), unchanged for {:?}",
                ctx.launch.rank,
                ctx.block,
                ctx.launch.kernel,
                addr,
                p.len,
                owner,
                since.elapsed()
            )],
        });
    }
    if epoch != p.epoch {
        ctx.poll.epoch = epoch;
        ctx.poll.since = Some(Instant::now());
    }
    Ok(())
}

/// FNV-1a over the polled bytes: a cheap fingerprint of "the same value again".
pub(crate) fn hash_bytes(b: &[u8]) -> u64 {
    // Eight bytes per step (a poll hashes every flag it reads; byte-wise FNV was 6% of a small
    // collective), the length folded in so that prefixes differ.
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("8-byte chunk"));
        h = (h ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Writes dirty lines of the block's scalar data cache back to GM; all lines when `line` is None.
pub(crate) fn flush_dcache(ctx: &mut BlockCtx, line: Option<usize>) {
    let lines: Vec<usize> = match line {
        Some(l) => vec![l],
        None => ctx.dcache.keys().copied().collect(),
    };
    for l in lines {
        if let Some(c) = ctx.dcache.remove(&l) {
            if c.dirty {
                // The line was read from / written to GM by this block; its allocation may have
                // been freed since only if the kernel outlived its buffers (a host bug).
                if gm::gm_check(l, 64) {
                    if let Some(rc) = ctx.race.as_mut() {
                        rc.release(l, 64);
                    }
                    // SAFETY: bounds checked just above.
                    unsafe { gm::gm_write(l as *mut u8, c.data.as_ptr(), 64) };
                }
            }
        }
    }
}

/// Copy request from DataCopy / DataCopyPad.
///
/// # Safety
/// `req` must point to a valid `AscTwinCopy`.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_copy(req: *const AscTwinCopy) -> i32 {
    // SAFETY: the caller passes a valid descriptor.
    let r = unsafe { &*req };
    with_ctx(copy_op_name(r.api, r.dir), |ctx| do_copy(ctx, r))
}

/// Scalar GM access (GlobalTensor::GetValue / SetValue), through the modelled scalar data cache.
///
/// The AIV scalar unit reaches GM through a data cache that DMA (MTE2/MTE3) writes do not update
/// and that scalar stores write back lazily. The twin models it with 64-byte lines per block: a
/// GetValue returns the cached line if present (stale if another core or a DMA wrote GM since),
/// a SetValue stays in the cache until DataCacheCleanAndInvalid or the end of the kernel. Kernels
/// that poll flags with GetValue without DataCacheCleanAndInvalid therefore hang on the twin as
/// they would on hardware.
///
/// # Safety
/// `value` must point to `size` writable/readable bytes.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_gm_scalar(
    is_store: u32,
    gm_ptr: *mut u8,
    value: *mut u8,
    size: u32,
) -> i32 {
    let op = if is_store != 0 {
        "GlobalTensor::SetValue"
    } else {
        "GlobalTensor::GetValue"
    };
    with_ctx(op, |ctx| {
        let addr = gm_ptr as usize;
        let size = size as usize;
        if size == 0 || size > 8 || !addr.is_multiple_of(size) {
            return Err(FaultKind::MisalignedGm {
                addr: addr as u64,
                align: size as u32,
            });
        }
        if !gm::gm_check(addr, size) {
            return Err(FaultKind::GmOutOfBounds {
                addr: addr as u64,
                len: size as u64,
            });
        }
        let line = addr & !63;
        let off = addr - line;
        let fresh = !ctx.dcache.contains_key(&line);
        if fresh {
            let mut data = [0u8; 64];
            // A line may straddle the allocation end; fill only the valid bytes.
            let valid = if gm::gm_check(line, 64) {
                (line, 64usize)
            } else {
                (addr, size)
            };
            // SAFETY: the range was bounds-checked.
            unsafe {
                gm::atomic_read(
                    data.as_mut_ptr().add(valid.0 - line),
                    valid.0 as *const u8,
                    valid.1,
                )
            };
            ctx.dcache.insert(line, CacheLine { data, dirty: false });
            if let Some(rc) = ctx.race.as_mut() {
                rc.acquire(line, 64);
            }
        }
        let entry = ctx.dcache.get_mut(&line).expect("inserted above");
        if is_store != 0 {
            // SAFETY: value points to `size` readable bytes.
            let src = unsafe { std::slice::from_raw_parts(value, size) };
            entry.data[off..off + size].copy_from_slice(src);
            entry.dirty = true;
            Ok(())
        } else {
            let bytes = entry.data;
            // SAFETY: value points to `size` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().add(off), value, size) };
            poll_track(ctx, addr, &bytes[off..off + size], fresh)
        }
    })
}

/// DataCacheCleanAndInvalid on the line holding `gm_ptr`: writes it back if dirty, drops it.
#[no_mangle]
pub extern "C" fn asc_twin_dcci(gm_ptr: *mut u8) -> i32 {
    with_ctx("DataCacheCleanAndInvalid", |ctx| {
        flush_dcache(ctx, Some(gm_ptr as usize & !63));
        Ok(())
    })
}

/// SetAtomicAdd/Max/Min<T> (op 1..=3, dtype code) and SetAtomicNone (op 0).
#[no_mangle]
pub extern "C" fn asc_twin_set_atomic(op: u32, dtype: u32) -> i32 {
    let name = match op {
        0 => "SetAtomicNone",
        1 => "SetAtomicAdd",
        2 => "SetAtomicMax",
        _ => "SetAtomicMin",
    };
    with_ctx(name, |ctx| {
        let op = match op {
            0 => {
                ctx.atomic = None;
                return Ok(());
            }
            1 => AtomicOp::Add,
            2 => AtomicOp::Max,
            _ => AtomicOp::Min,
        };
        let ty = match dtype {
            1 => AtomicType::F32,
            2 => AtomicType::F16,
            3 => AtomicType::Bf16,
            4 => AtomicType::I32,
            5 => AtomicType::I16,
            6 => AtomicType::I8,
            7 => {
                return Err(FaultKind::UnsupportedAtomic {
                    dtype: "an integer type other than int32_t/int16_t/int8_t".into(),
                })
            }
            _ => {
                return Err(FaultKind::UnsupportedAtomic {
                    dtype: "a non-arithmetic or 64-bit floating type".into(),
                })
            }
        };
        ctx.atomic = Some((op, ty));
        Ok(())
    })
}

/// SetFlag (op 0), WaitFlag (op 1) and PipeBarrier (op 2).
///
/// The twin executes a core's pipes in program order, so these order nothing here; they are
/// checked for pairing: a WaitFlag whose SetFlag never came would hang the NPU.
#[no_mangle]
pub extern "C" fn asc_twin_pipe(op: u32, event: u32, id: i32) -> i32 {
    let name = match op {
        0 => "SetFlag",
        1 => "WaitFlag",
        _ => "PipeBarrier",
    };
    with_ctx(name, |ctx| {
        if op == 2 {
            // PIPE_ALL (6) joins every pipe; a barrier on one pipe orders nothing across pipes.
            if event == 6 {
                if let Some(hz) = ctx.hazards.as_mut() {
                    hz.barrier_all();
                }
            }
            return Ok(());
        }
        let (e, i) = (event as usize, id as usize);
        if e >= HARD_EVENTS || id < 0 || i >= EVENT_IDS {
            return Err(FaultKind::PipeSync {
                reason: format!("event {event} / event id {id} out of range"),
            });
        }
        let slot = &mut ctx.pipe_flags[e][i];
        if op == 0 {
            *slot += 1;
            if let Some(hz) = ctx.hazards.as_mut() {
                hz.set_flag(e, i);
            }
        } else if *slot == 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "WaitFlag(HardEvent #{event}, id {id}) with no matching SetFlag before it: the NPU would wait forever"
                ),
            });
        } else {
            *slot -= 1;
            if let Some(hz) = ctx.hazards.as_mut() {
                hz.wait_flag(e, i);
            }
        }
        Ok(())
    })
}

/// A scalar or vector access to UB, for the pipe-hazard checker: kind 0 scalar read
/// (LocalTensor::GetValue), 1 scalar write (SetValue), 2 vector write, 3 vector read.
#[no_mangle]
pub extern "C" fn asc_twin_ub_access(kind: u32, ub: *const u8, bytes: u64) -> i32 {
    let name = match kind {
        0 => "LocalTensor::GetValue",
        1 => "LocalTensor::SetValue",
        _ => "vector instruction",
    };
    with_ctx(name, |ctx| {
        match kind {
            1 | 2 => crate::lazy::before_ub_write(&mut ctx.lazy, ub as usize, bytes as usize),
            _ => crate::lazy::before_ub_read(&mut ctx.lazy, ub as usize, bytes as usize),
        }
        let Some(hz) = ctx.hazards.as_mut() else {
            return Ok(());
        };
        let base = ctx.ub as usize;
        let a = ub as usize;
        if a < base || a + bytes as usize > base + ctx.ub_len {
            return Ok(()); // bounds are the tensor's job
        }
        let access = match kind {
            0 => crate::hazard::Access::ScalarRead,
            1 => crate::hazard::Access::ScalarWrite,
            2 => crate::hazard::Access::VWrite,
            _ => crate::hazard::Access::VRead,
        };
        let off = a - base;
        hz.access(access, off, off + bytes as usize)
            .map_err(|reason| FaultKind::PipeHazard { reason })
    })
}

/// Base address and size of the running block's Unified Buffer.
///
/// # Safety
/// `base` and `size` must be writable.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_ub_arena(base: *mut *mut u8, size: *mut u64) -> i32 {
    with_ctx("TPipe", |ctx| {
        // SAFETY: the caller passes writable out-pointers.
        unsafe {
            *base = ctx.ub;
            *size = ctx.ub_len as u64;
        }
        Ok(())
    })
}

/// A misuse detected by the twin's C++ headers.
///
/// # Safety
/// `message` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn asc_twin_fail(
    op: u32,
    message: *const std::ffi::c_char,
    value: u64,
    limit: u64,
) -> i32 {
    let name = match op {
        0 => "TPipe::InitBuffer",
        1 => "LocalTensor",
        2 => "GlobalTensor",
        3 => "TQue",
        _ => "Duplicate",
    };
    // SAFETY: the caller passes a NUL-terminated string literal.
    let reason = unsafe { std::ffi::CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    let rc = with_ctx(name, |_| {
        Err(FaultKind::Misuse {
            reason,
            value,
            limit,
        })
    });
    rc.max(1)
}

/// GetBlockIdx.
#[no_mangle]
pub extern "C" fn asc_twin_block_idx() -> i64 {
    let p = sched::current();
    // SAFETY: CURRENT is null or the running block's context (see with_ctx).
    unsafe { p.as_ref() }.map_or(0, |c| c.block as i64)
}

/// GetBlockNum.
#[no_mangle]
pub extern "C" fn asc_twin_block_num() -> i64 {
    let p = sched::current();
    // SAFETY: CURRENT is null or the running block's context (see with_ctx).
    unsafe { p.as_ref() }.map_or(0, |c| c.launch.block_dim as i64)
}

/// GetSystemCycle: a monotonic 50 MHz counter ([`SYSTEM_CYCLE_HZ`]), as on Atlas A2.
#[no_mangle]
pub extern "C" fn asc_twin_system_cycle() -> i64 {
    let start = EPOCH.get_or_init(Instant::now);
    let ns = start.elapsed().as_nanos() as u64;
    (ns / (1_000_000_000 / SYSTEM_CYCLE_HZ)) as i64
}
