//! DataCopy and DataCopyPad between GM and UB (MTE2 loads, MTE3 stores), with the Atlas A2 rules
//! of the AscendC docs:
//!
//! * UB addresses 32-byte aligned (every form);
//! * DataCopy (contiguous and `DataCopyParams`): GM address aligned to `sizeof(T)`; the
//!   contiguous form moves whole 32-byte blocks (the NPU silently drops a ragged rest: the twin
//!   reports it); the strided form counts lengths and gaps in 32-byte blocks, blockCount
//!   0..=4095, and blockCount or blockLen 0 makes it a no-op;
//! * DataCopyPad (`DataCopyExtParams`): any GM address, blockLen in bytes (0..=2097151, a
//!   multiple of `sizeof(T)`), GM strides in bytes, UB strides in 32-byte blocks; GM -> UB lands
//!   each block at a 32-byte boundary with left/right padding (at most 32 bytes each) and a
//!   dummy tail up to the next boundary.

use smallvec::SmallVec;

use crate::abi::{
    AscTwinCopy, ASC_TWIN_DATA_COPY, ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_DATA_COPY_STRIDED,
    ASC_TWIN_GM_TO_UB,
};
use crate::block::BlockCtx;
use crate::error::FaultKind;
use crate::hazard::Access;
use crate::mem::{self, Found, SMALL_ACCESS};

const BLK: usize = 32;
/// Largest blockCount of DataCopy/DataCopyPad (12-bit field).
const MAX_BLOCK_COUNT: u32 = 4095;
/// Largest blockLen of DataCopyPad in bytes.
const MAX_PAD_BLOCK_LEN: u32 = 2_097_151;
/// Filler the twin writes where the hardware leaves unspecified ("random") bytes in UB.
pub const POISON: u8 = 0xA5;

/// The AscendC call a copy descriptor comes from.
pub(crate) fn op_name(api: u32, dir: u32) -> &'static str {
    match (api, dir) {
        (ASC_TWIN_DATA_COPY, ASC_TWIN_GM_TO_UB) => "DataCopy(GM->UB)",
        (ASC_TWIN_DATA_COPY, _) => "DataCopy(UB->GM)",
        (ASC_TWIN_DATA_COPY_STRIDED, ASC_TWIN_GM_TO_UB) => "DataCopy(GM->UB, DataCopyParams)",
        (ASC_TWIN_DATA_COPY_STRIDED, _) => "DataCopy(UB->GM, DataCopyParams)",
        (ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB) => "DataCopyPad(GM->UB)",
        (_, _) => "DataCopyPad(UB->GM)",
    }
}

/// One contiguous piece of a DMA: GM byte offset from `gm`, UB byte offset from `ub`, length.
#[derive(Clone, Copy)]
struct Burst {
    gm: usize,
    ub: usize,
    len: usize,
    /// UB bytes this burst reads or writes as the tensor's contents: `len`, and for DataCopyPad
    /// GM->UB the left and right padding too.
    ub_data: usize,
    /// UB bytes this burst occupies: `ub_data`, and for DataCopyPad GM->UB the dummy bytes up
    /// to the next 32-byte boundary.
    ub_span: usize,
}

fn plan(r: &AscTwinCopy) -> Result<SmallVec<[Burst; 2]>, FaultKind> {
    let es = r.elem_size.max(1) as usize;
    let mut out = SmallVec::new();
    match r.api {
        ASC_TWIN_DATA_COPY => {
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
                    ub_data: len,
                    ub_span: len,
                });
            }
        }
        ASC_TWIN_DATA_COPY_STRIDED => {
            if r.block_count > MAX_BLOCK_COUNT {
                return Err(FaultKind::BadLength {
                    len: r.block_count as u64,
                    reason: format!("DataCopyParams.blockCount must be 0..={MAX_BLOCK_COUNT}"),
                });
            }
            let len = r.block_len as usize * BLK;
            let (gm_gap, ub_gap) = if r.dir == ASC_TWIN_GM_TO_UB {
                (r.src_stride as usize * BLK, r.dst_stride as usize * BLK)
            } else {
                (r.dst_stride as usize * BLK, r.src_stride as usize * BLK)
            };
            // blockCount or blockLen 0: a no-op on Atlas A2 (AscendC docs).
            if len > 0 {
                for i in 0..r.block_count as usize {
                    out.push(Burst {
                        gm: i * (len + gm_gap),
                        ub: i * (len + ub_gap),
                        len,
                        ub_data: len,
                        ub_span: len,
                    });
                }
            }
        }
        ASC_TWIN_DATA_COPY_PAD => {
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
            let (lp, rp) = if r.dir == ASC_TWIN_GM_TO_UB {
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
            // A block's UB stride is whole 32-byte blocks either way; a store reads only its
            // `len` bytes of it, a load also writes the padding and the dummy rest.
            let span = (lp + len + rp).div_ceil(BLK) * BLK;
            let (data, occupied) = if r.dir == ASC_TWIN_GM_TO_UB {
                (lp + len + rp, span)
            } else {
                (len, len)
            };
            let (gm_gap, ub_gap) = if r.dir == ASC_TWIN_GM_TO_UB {
                (r.src_stride as usize, r.dst_stride as usize * BLK)
            } else {
                (r.dst_stride as usize, r.src_stride as usize * BLK)
            };
            if len > 0 {
                for i in 0..r.block_count as usize {
                    out.push(Burst {
                        gm: i * (len + gm_gap),
                        ub: i * (span + ub_gap),
                        len,
                        ub_data: data,
                        ub_span: occupied,
                    });
                }
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

/// Runs one DataCopy / DataCopyPad of the block.
pub(crate) fn copy(ctx: &mut BlockCtx, r: &AscTwinCopy) -> Result<(), FaultKind> {
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
    if r.api != ASC_TWIN_DATA_COPY_PAD && !gm_addr.is_multiple_of(es) {
        return Err(FaultKind::MisalignedGm {
            addr: gm_addr as u64,
            align: es as u32,
        });
    }
    let bursts = plan(r)?;
    let Some(last) = bursts.last().copied() else {
        return Ok(());
    };
    // The tensor's contents must lie in the tensor. DataCopyPad GM->UB also writes dummy bytes
    // up to the next 32-byte boundary: they may pass the tensor's end but not its buffer's, and
    // InitBuffer rounds every buffer up to whole 32-byte blocks (AscendC docs, TPipe::InitBuffer),
    // so a tensor of 13 floats owns 64 bytes. (Padding counts as the tensor's contents: a load
    // whose padding passes the tensor's end is refused, though the NPU would write it into the
    // buffer's rest. With UB offsets, strides and spans all multiples of 32, the second check
    // follows from the first today; it stays as the statement of the rule.)
    let ub_limit = (r.ub_cap as usize).min(ctx.ub_len - ub_off);
    let buffer_limit = ub_limit.next_multiple_of(BLK).min(ctx.ub_len - ub_off);
    for (end, limit) in [
        (last.ub + last.ub_data, ub_limit),
        (last.ub + last.ub_span, buffer_limit),
    ] {
        if end > limit {
            return Err(FaultKind::UbOutOfBounds {
                offset: ub_off as u64,
                len: end as u64,
                limit: limit as u64,
            });
        }
    }
    let gm_end = last.gm + last.len;
    let Some(found) = ctx.twin.mem.lookup(gm_addr, gm_end) else {
        return Err(FaultKind::GmOutOfBounds {
            addr: gm_addr as u64,
            len: gm_end as u64,
        });
    };
    ctx.jitter();
    let load = r.dir == ASC_TWIN_GM_TO_UB;
    let moved: usize = bursts.iter().map(|b| b.len).sum();
    let counted = match (load, ctx.atomic.is_some()) {
        (true, _) => (moved, 0),
        (false, false) => (0, moved),
        (false, true) => (moved, moved),
    };
    ctx.twin
        .traffic
        .count_block(ctx.worker, ctx.launch.rank, ctx.block, counted.0, counted.1);
    // Sync census: bytes by memory kind; a flag store raises its cells before it lands.
    if let Some(c) = ctx.census.as_mut() {
        c.copy(
            found.sync,
            load,
            counted,
            bursts.iter().map(|b| (gm_addr + b.gm, b.len)),
        );
    }
    if let Some(hz) = ctx.hazards.as_mut() {
        let ub_base = ctx.ub as usize;
        let lazy = &mut ctx.lazy;
        for b in &bursts {
            let (kind, len) = if load {
                (Access::Mte2Write, b.ub_span)
            } else {
                (Access::Mte3Read, b.len)
            };
            let from = ub_off + b.ub;
            // A plain load (no padding) of data memory that stores exactly the bytes UB already
            // holds. (Flag memory can change between this comparison and the load: no rule.)
            let plain =
                load && !found.sync && r.api != ASC_TWIN_DATA_COPY_PAD && b.ub_span == b.len;
            let gm = gm_addr + b.gm;
            let mut identical = |a: usize, e: usize| {
                if !plain || a < from || e > from + b.len {
                    return false;
                }
                crate::lazy::before_ub_read(lazy, ub_base + a, e - a);
                // SAFETY: [a, e) lies inside this burst's UB span, checked against the tensor's
                // buffer above, and the GM range inside the live allocation looked up above;
                // only this block writes its UB.
                unsafe {
                    let ub = std::slice::from_raw_parts((ub_base + a) as *const u8, e - a);
                    mem::equals(ub, (gm + (a - from)) as *const u8)
                }
            };
            hz.access(kind, from, from + len, &mut identical)
                .map_err(|reason| FaultKind::PipeHazard { reason })?;
        }
    }
    // GM race checker: flag memory is synchronisation (stores release before they land, loads
    // acquire after the data is read, below); every access to data memory is checked first, so
    // a racy copy is reported before it happens. A plain store to data memory is in flight from
    // its check to the end of its copy (`store_begin` / `store_end`), and says what it writes:
    // an unordered plain store of the same bytes before it is harmless where it left exactly
    // these bytes (race.rs). Bursts ascend in GM, as `access_store` needs.
    let kind = match ctx.atomic {
        Some(_) => crate::race::Kind::Atomic,
        None => crate::race::Kind::Plain,
    };
    let plain_store = !load && !found.sync && kind == crate::race::Kind::Plain;
    if let Some(rc) = ctx.race.as_mut() {
        let shadow = &ctx.twin.race;
        let lazy = &mut ctx.lazy;
        if plain_store {
            rc.store_begin();
        }
        for b in &bursts {
            let a = gm_addr + b.gm;
            let checked = match (found.sync, load) {
                (true, true) => Ok(()),
                (true, false) => {
                    rc.release(shadow, a, b.len);
                    Ok(())
                }
                (false, false) if plain_store => {
                    let ub = ub_addr + b.ub;
                    // The first byte of GM [x, e) (inside this burst) that holds other bytes
                    // than the burst stores there.
                    let mut differs = |x: usize, e: usize| {
                        let from = ub + (x - a);
                        crate::lazy::before_ub_read(lazy, from, e - x);
                        // SAFETY: [x, e) lies in this burst, whose UB bytes are inside the
                        // tensor's buffer (checked above) and whose GM bytes inside the live
                        // allocation looked up above; only this block writes its UB.
                        unsafe {
                            let data = std::slice::from_raw_parts(from as *const u8, e - x);
                            mem::first_difference(data, x as *const u8).map(|i| x + i)
                        }
                    };
                    rc.access_store(shadow, found.base, a, b.len, &mut differs)
                }
                (false, _) => rc.access(shadow, found.base, a, b.len, !load, kind),
            };
            if let Err(reason) = checked {
                rc.store_end();
                return Err(FaultKind::GmRace { reason });
            }
        }
    }
    if load {
        load_bursts(ctx, r, &bursts, &found)
    } else {
        let stored = store_bursts(ctx, r, &bursts, &found);
        if let Some(rc) = ctx.race.as_mut().filter(|_| plain_store) {
            rc.store_end();
        }
        stored
    }
}

fn load_bursts(
    ctx: &mut BlockCtx,
    r: &AscTwinCopy,
    bursts: &[Burst],
    found: &Found,
) -> Result<(), FaultKind> {
    let es = r.elem_size.max(1) as usize;
    let gm_addr = r.gm as usize;
    let ub_addr = r.ub as usize;
    let last = *bursts.last().expect("at least one burst");
    let deferrable = ctx.lazy_on
        && r.api != ASC_TWIN_DATA_COPY_PAD
        && bursts.len() == 1
        && last.len == last.ub_span
        && last.len >= crate::lazy::MIN_LAZY;
    if deferrable {
        crate::lazy::stage(
            &ctx.twin.lazy,
            &mut ctx.lazy,
            found.meta_arc(),
            gm_addr + last.gm,
            ub_addr + last.ub,
            last.len,
        );
        return Ok(());
    }
    let lp = if r.api == ASC_TWIN_DATA_COPY_PAD {
        r.left_pad as usize * es
    } else {
        0
    };
    for b in bursts {
        let ub = ub_addr + b.ub;
        crate::lazy::before_ub_write(&mut ctx.lazy, ub, b.ub_span);
        // SAFETY: the GM burst is inside a live allocation (looked up above) and the UB span
        // [ub, ub + ub_span) inside the tensor's buffer (checked by `copy`); a bulk read of data
        // memory was checked for races by `copy` (with the checker on).
        unsafe { mem::read((ub + lp) as *mut u8, r.gm.add(b.gm), b.len) };
        if r.api == ASC_TWIN_DATA_COPY_PAD {
            fill_pad(r, ub, lp, b.len, b.ub_span);
        }
    }
    if found.sync {
        if let Some(rc) = ctx.race.as_mut() {
            for b in bursts {
                rc.acquire(&ctx.twin.race, gm_addr + b.gm, b.len);
            }
        }
        // Sync census: the load has read the flags; the block joins their depths.
        if let Some(c) = ctx.census.as_mut() {
            c.acquire(bursts.iter().map(|b| (gm_addr + b.gm, b.len)));
        }
    }
    if bursts.len() == 1 && last.len <= SMALL_ACCESS {
        // SAFETY: just written above, inside UB.
        // The block's UB is not part of its context, and only the block itself writes it.
        let seen = unsafe { std::slice::from_raw_parts((ub_addr + lp) as *const u8, last.len) };
        crate::poll::observe(ctx, gm_addr, seen, true, Some(found))?;
    } else {
        ctx.progress();
    }
    Ok(())
}

fn store_bursts(
    ctx: &mut BlockCtx,
    r: &AscTwinCopy,
    bursts: &[Burst],
    found: &Found,
) -> Result<(), FaultKind> {
    let gm_addr = r.gm as usize;
    let ub_addr = r.ub as usize;
    let last = *bursts.last().expect("at least one burst");
    if let Some((_, ty)) = ctx.atomic {
        let ts = ty.size();
        if !gm_addr.is_multiple_of(ts) || !last.gm.is_multiple_of(ts) {
            return Err(FaultKind::MisalignedGm {
                addr: gm_addr as u64,
                align: ts as u32,
            });
        }
        if !last.len.is_multiple_of(ts) {
            return Err(FaultKind::BadLength {
                len: last.len as u64,
                reason: format!("atomic store of {ty:?} needs a multiple of {ts} bytes"),
            });
        }
    }
    let twin = &ctx.twin;
    let meta = found.meta();
    let atomic = ctx.atomic;
    let total: usize = bursts.iter().map(|b| b.len).sum();
    let streaming = atomic.is_none()
        && mem::streams(
            ctx.dma_written,
            || twin.pool.shared().running_blocks(),
            ctx.stream_after,
        );
    ctx.dma_written = ctx.dma_written.saturating_add(total as u64);
    // One store of `len` bytes from `src` (UB, or the GM source of a deferred UB copy) to `dst`,
    // reducing when an atomic mode is set.
    let store = |dst: usize, src: usize, len: usize| {
        match atomic {
            // SAFETY: the GM and UB ranges were checked by `copy`, the alignment for the atomic
            // type above; a staged source is GM its snapshot keeps unwritten meanwhile, and does
            // not overlap dst (before_write materialised any snapshot of dst).
            Some((op, ty)) => unsafe {
                crate::atomics::reduce_store(
                    &twin.stripes,
                    op,
                    ty,
                    dst as *mut u8,
                    src as *const u8,
                    len,
                )
            },
            // SAFETY: as above; a bulk store to data memory was checked for races by `copy`.
            None if streaming => unsafe {
                mem::write_streaming(dst as *mut u8, src as *const u8, len)
            },
            // SAFETY: as for the streaming store.
            None => unsafe { mem::write(dst as *mut u8, src as *const u8, len) },
        }
        twin.after_write(Some(meta), dst, len);
    };
    if found.sync && twin.space.is_some() {
        crate::lazy::before_release(&mut ctx.lazy);
    }
    for b in bursts {
        let (dst, ub) = (gm_addr + b.gm, ub_addr + b.ub);
        twin.before_write(Some(meta), dst, b.len);
        if !crate::lazy::with_source(&mut ctx.lazy, ub, b.len, |src| store(dst, src, b.len)) {
            store(dst, ub, b.len);
        }
    }
    Ok(())
}

/// Writes DataCopyPad's left/right padding and 32-byte dummy tail around one burst in UB.
fn fill_pad(r: &AscTwinCopy, ub: usize, lp: usize, len: usize, span: usize) {
    let es = r.elem_size.max(1) as usize;
    let rp = r.right_pad as usize * es;
    let value = r.pad_value.to_le_bytes();
    let fill = |from: usize, to: usize, pattern: &dyn Fn(usize) -> u8| {
        for i in from..to {
            // SAFETY: [ub, ub + span) is inside the tensor's UB buffer (checked by `copy`).
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
            let first: SmallVec<[u8; 8]> = (0..es)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    fn req(api: u32, dir: u32, es: u32, count: u32, len: u32) -> AscTwinCopy {
        AscTwinCopy {
            api,
            dir,
            ub: std::ptr::null_mut(),
            ub_cap: 0,
            gm: std::ptr::null_mut(),
            elem_size: es,
            block_count: count,
            block_len: len,
            src_stride: 0,
            dst_stride: 0,
            is_pad: 0,
            left_pad: 0,
            right_pad: 0,
            pad_value: 0,
        }
    }

    /// (gm, ub, len, ub_data, ub_span) of each burst.
    fn bursts(r: &AscTwinCopy) -> Vec<(usize, usize, usize, usize, usize)> {
        plan(r)
            .unwrap()
            .iter()
            .map(|b| (b.gm, b.ub, b.len, b.ub_data, b.ub_span))
            .collect()
    }

    /// What a copy does to each byte, restated from the rules of the AscendC docs (the module's
    /// doc) by walking the copy block by block, with cursors, as a reader of the docs would:
    /// `None` if the NPU (or the twin, where the NPU silently does something else) refuses it,
    /// else the (GM offset, UB offset) of every byte moved, the UB offsets of padding (loads
    /// only) and of the dummy bytes up to the next 32-byte boundary (DataCopyPad loads only).
    #[allow(clippy::type_complexity)]
    fn oracle(r: &AscTwinCopy) -> Option<(Vec<(usize, usize)>, Vec<usize>, Vec<usize>)> {
        let load = r.dir == ASC_TWIN_GM_TO_UB;
        let es = r.elem_size.max(1) as usize;
        let (mut moved, mut pad, mut dummy) = (Vec::new(), Vec::new(), Vec::new());
        // (GM gap unit, UB gap unit) in bytes: strides count blocks, but DataCopyPad's GM
        // stride counts bytes.
        let (gm_stride, ub_stride) = if load {
            (r.src_stride as usize, r.dst_stride as usize)
        } else {
            (r.dst_stride as usize, r.src_stride as usize)
        };
        match r.api {
            ASC_TWIN_DATA_COPY => {
                // One run of whole 32-byte blocks, `block_len` bytes.
                if !r.block_len.is_multiple_of(32) {
                    return None;
                }
                moved.extend((0..r.block_len as usize).map(|k| (k, k)));
            }
            ASC_TWIN_DATA_COPY_STRIDED => {
                if r.block_count > 4095 {
                    return None;
                }
                let (mut g, mut u) = (0, 0);
                for _ in 0..r.block_count {
                    for _ in 0..r.block_len {
                        moved.extend((0..32).map(|k| (g + k, u + k)));
                        g += 32;
                        u += 32;
                    }
                    g += gm_stride * 32;
                    u += ub_stride * 32;
                }
            }
            ASC_TWIN_DATA_COPY_PAD => {
                let len = r.block_len as usize;
                let (lp, rp) = if load {
                    (r.left_pad as usize * es, r.right_pad as usize * es)
                } else {
                    (0, 0)
                };
                if r.block_count > 4095
                    || len > 2_097_151
                    || !len.is_multiple_of(es)
                    || lp > 32
                    || rp > 32
                {
                    return None;
                }
                if len == 0 {
                    return Some((moved, pad, dummy));
                }
                let (mut g, mut u) = (0, 0);
                for _ in 0..r.block_count {
                    let start = u;
                    pad.extend(u..u + lp);
                    u += lp;
                    moved.extend((0..len).map(|k| (g + k, u + k)));
                    u += len;
                    g += len;
                    pad.extend(u..u + rp);
                    u += rp;
                    // Every block starts at a 32-byte boundary of UB.
                    while (u - start) % 32 != 0 {
                        if load {
                            dummy.push(u);
                        }
                        u += 1;
                    }
                    g += gm_stride;
                    u += ub_stride * 32;
                }
            }
            _ => return None,
        }
        Some((moved, pad, dummy))
    }

    /// Mostly values below `small`, sometimes the edges of a field.
    fn pick(g: &mut Rng, small: u64, edges: &[u64]) -> u64 {
        if g.below(8) == 0 {
            edges[g.index(edges.len())]
        } else {
            g.below(small)
        }
    }

    #[test]
    fn bursts_move_the_bytes_an_independent_walk_of_the_rules_moves() {
        let mut g = Rng(0x5eed_d00d_1234_5678);
        let mut refused = 0;
        for case in 0..6000 {
            let api = [
                ASC_TWIN_DATA_COPY,
                ASC_TWIN_DATA_COPY_STRIDED,
                ASC_TWIN_DATA_COPY_PAD,
            ][g.below(3) as usize];
            let dir = if g.below(2) == 0 {
                ASC_TWIN_GM_TO_UB
            } else {
                crate::abi::ASC_TWIN_UB_TO_GM
            };
            let es = [1u32, 2, 4, 8][g.below(4) as usize];
            let big = g.below(16) == 0;
            let count = if big {
                pick(&mut g, 3, &[4095, 4096])
            } else {
                pick(&mut g, 6, &[0, 4095, 4096])
            } as u32;
            let len = match api {
                ASC_TWIN_DATA_COPY => g.below(5) * [1, 13, 16, 32, 32][g.below(5) as usize],
                ASC_TWIN_DATA_COPY_STRIDED => g.below(if count > 100 { 2 } else { 4 }),
                _ if count > 100 => g.below(3) * es as u64,
                _ => {
                    // Mostly whole elements, sometimes not.
                    let l = pick(&mut g, 80, &[0, 2_097_151, 2_097_152]);
                    if g.below(4) == 0 {
                        l
                    } else {
                        l / es as u64 * es as u64
                    }
                }
            } as u32;
            let mut r = req(api, dir, es, count, len);
            r.src_stride = g.below(if api == ASC_TWIN_DATA_COPY_PAD { 70 } else { 4 });
            r.dst_stride = g.below(if api == ASC_TWIN_DATA_COPY_PAD { 70 } else { 4 });
            r.left_pad = pick(&mut g, 5, &[8, 9, 32, 33]) as u32;
            r.right_pad = pick(&mut g, 5, &[8, 9, 32, 33]) as u32;
            if api == ASC_TWIN_DATA_COPY_PAD && len as u64 * count as u64 > 1 << 20 {
                // Big enough to test the field limits' refusal, too big to walk byte by byte.
                let refused_by_oracle = count > 4095 || len > 2_097_151 || !len.is_multiple_of(es);
                if refused_by_oracle {
                    assert!(plan(&r).is_err(), "case {case}: {:?}", bursts_or_err(&r));
                }
                continue;
            }
            let want = oracle(&r);
            let got = plan(&r);
            let (Some((moved, pad, dummy)), Ok(bursts)) = (&want, &got) else {
                assert_eq!(
                    want.is_none(),
                    got.is_err(),
                    "case {case}: api {api} dir {dir} es {es} count {count} len {len} strides {}/{} pads {}/{}: oracle {:?}, plan {:?}",
                    r.src_stride, r.dst_stride, r.left_pad, r.right_pad,
                    want.as_ref().map(|w| w.0.len()),
                    bursts_or_err(&r)
                );
                refused += 1;
                continue;
            };
            // The bursts, expanded the way `load_bursts`/`store_bursts` use them: data at
            // `ub + left padding` for DataCopyPad loads, padding before it and after it, dummy
            // bytes from there to `ub_span`.
            let lp = if api == ASC_TWIN_DATA_COPY_PAD && dir == ASC_TWIN_GM_TO_UB {
                r.left_pad as usize * es as usize
            } else {
                0
            };
            let (mut m, mut p, mut d) = (Vec::new(), Vec::new(), Vec::new());
            for b in bursts.iter() {
                m.extend((0..b.len).map(|k| (b.gm + k, b.ub + lp + k)));
                p.extend((b.ub..b.ub + lp).chain(b.ub + lp + b.len..b.ub + b.ub_data));
                d.extend(b.ub + b.ub_data..b.ub + b.ub_span);
            }
            let what = format!("case {case}: api {api} dir {dir} es {es} count {count} len {len}");
            assert_eq!(&m, moved, "{what}: bytes moved");
            p.sort_unstable();
            let mut pad = pad.clone();
            pad.sort_unstable();
            assert_eq!(p, pad, "{what}: padding");
            assert_eq!(&d, dummy, "{what}: dummy bytes");
        }
        // Both sides of the rules were exercised.
        assert!(refused > 300 && refused < 4000, "{refused} refused");
    }

    fn bursts_or_err(r: &AscTwinCopy) -> Result<usize, String> {
        plan(r).map(|b| b.len()).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn data_copy_moves_whole_blocks_only() {
        assert_eq!(
            bursts(&req(ASC_TWIN_DATA_COPY, ASC_TWIN_GM_TO_UB, 4, 1, 64)),
            [(0, 0, 64, 64, 64)]
        );
        assert!(matches!(
            plan(&req(ASC_TWIN_DATA_COPY, ASC_TWIN_GM_TO_UB, 4, 1, 52)),
            Err(FaultKind::BadLength { len: 52, .. })
        ));
        assert!(bursts(&req(ASC_TWIN_DATA_COPY, ASC_TWIN_GM_TO_UB, 4, 1, 0)).is_empty());
    }

    #[test]
    fn strided_copies_count_lengths_and_gaps_in_blocks() {
        let mut r = req(ASC_TWIN_DATA_COPY_STRIDED, ASC_TWIN_GM_TO_UB, 2, 3, 2);
        r.src_stride = 1; // GM gap, blocks
        r.dst_stride = 2; // UB gap, blocks
        assert_eq!(
            bursts(&r),
            [
                (0, 0, 64, 64, 64),
                (96, 128, 64, 64, 64),
                (192, 256, 64, 64, 64)
            ]
        );
        r.dir = crate::abi::ASC_TWIN_UB_TO_GM; // the strides swap roles
        assert_eq!(bursts(&r)[1], (128, 96, 64, 64, 64));
        r.block_count = MAX_BLOCK_COUNT + 1;
        assert!(plan(&r).is_err());
    }

    #[test]
    fn pad_loads_fill_to_the_block_and_pad_stores_read_only_their_bytes() {
        // GM -> UB: 13 floats with 2 of left padding land in 64 bytes, the next block 32 further.
        let mut r = req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB, 4, 2, 52);
        r.left_pad = 2;
        r.src_stride = 12; // GM gap, bytes
        r.dst_stride = 1; // UB gap, blocks
        assert_eq!(bursts(&r), [(0, 0, 52, 60, 64), (64, 96, 52, 60, 64)]);
        // UB -> GM: the same strides read 52 bytes a block; padding does not apply.
        r.dir = crate::abi::ASC_TWIN_UB_TO_GM;
        r.src_stride = 1; // UB gap, blocks
        r.dst_stride = 12; // GM gap, bytes
        assert_eq!(bursts(&r), [(0, 0, 52, 52, 52), (64, 96, 52, 52, 52)]);
        // Lengths that are not whole elements, and padding over 32 bytes, are refused.
        assert!(plan(&req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB, 4, 1, 6)).is_err());
        let mut wide = req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB, 4, 1, 8);
        wide.right_pad = 9;
        assert!(plan(&wide).is_err());
    }
}
