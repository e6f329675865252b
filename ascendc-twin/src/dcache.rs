//! The scalar data cache: GlobalTensor::GetValue / SetValue and DataCacheCleanAndInvalid.
//!
//! The AIV scalar unit reaches GM through a data cache (64-byte lines) that DMA (MTE2/MTE3)
//! writes do not update and that scalar stores write back lazily. The twin models it per block:
//! a GetValue returns the cached line if present (stale if another core or a DMA wrote GM
//! since), a SetValue stays in the cache until DataCacheCleanAndInvalid of its line or the end
//! of the kernel, and a write-back writes the whole line (the AscendC docs warn that cores
//! writing different bytes of one line can overwrite each other). Kernels that poll flags with
//! GetValue without DataCacheCleanAndInvalid therefore hang on the twin as on hardware.
//!
//! GM race checker: a line fill acquires and a write-back releases (the AscendC docs' way of
//! synchronising through GM with the scalar unit), on flag memory and data memory alike; on
//! data memory each GetValue is also checked as a synchronising read of its bytes and each
//! write-back as a synchronising write of the whole line, which DMA accesses and other
//! write-backs of the same bytes must be ordered with (race.rs, `Kind::Sync`). The bypass
//! accesses are synchronising in the same way. Sync census (census.rs): on flag memory, fills
//! join and write-backs raise.

use crate::block::{BlockCtx, CacheLine};
use crate::census::Op;
use crate::error::FaultKind;
use crate::mem;
use crate::race::Kind;

const LINE: usize = 64;

/// The bytes `[from, from + n)` of the cache line at `line` that lie in `found`, an allocation
/// holding some of them: the whole line, or the part inside the allocation when the line runs
/// past its end (or, were an allocation not to start on a line, before its start).
fn valid(line: usize, found: &mem::Found) -> (usize, usize) {
    let from = line.max(found.base);
    (from, (line + LINE).min(found.end) - from)
}

/// The allocation a scalar access of `size` bytes at `addr` lies in; `size_ok`: whether the
/// call accepts that size (the address must also be aligned to it).
fn target(
    ctx: &BlockCtx,
    addr: usize,
    size: usize,
    size_ok: bool,
) -> Result<mem::Found, FaultKind> {
    if !size_ok || !addr.is_multiple_of(size) {
        return Err(FaultKind::MisalignedGm {
            addr: addr as u64,
            align: size as u32,
        });
    }
    ctx.twin
        .mem
        .lookup(addr, size)
        .ok_or(FaultKind::GmOutOfBounds {
            addr: addr as u64,
            len: size as u64,
        })
}

/// GetValue (`store` false: reads `size` bytes into `value`) or SetValue (writes them).
pub(crate) fn scalar(
    ctx: &mut BlockCtx,
    store: bool,
    addr: usize,
    value: &mut [u8],
) -> Result<(), FaultKind> {
    let size = value.len();
    let found = target(ctx, addr, size, size > 0 && size <= 8)?;
    if let Some(c) = ctx.census.as_mut() {
        // A GetValue of a flag is a (cached) poll; a SetValue reaches GM only when written back.
        let op = if store { Op::Other } else { Op::Load };
        c.access(found.sync, op, std::iter::once((addr, size)));
    }
    if !found.sync && !store {
        if let Some(rc) = ctx.race.as_mut() {
            rc.access(&ctx.twin.race, found.base, addr, size, false, Kind::Sync)
                .map_err(|reason| FaultKind::GmRace { reason })?;
        }
    }
    let line = addr & !(LINE - 1);
    let off = addr - line;
    let fresh = !ctx.dcache.contains_key(&line);
    if fresh {
        let mut data = [0u8; LINE];
        // A line may run past the allocation's end: fill the bytes inside it (all of them, as
        // the write-back stores them all), and nothing outside it.
        let (from, n) = valid(line, &found);
        // SAFETY: [from, from + n) lies inside the allocation looked up above; atomic word loads
        // race with nothing undefined.
        unsafe { mem::atomic_read(data.as_mut_ptr().add(from - line), from as *const u8, n) };
        ctx.dcache.insert(
            line,
            CacheLine {
                data,
                dirty: false,
                span: (from, n),
            },
        );
        if let Some(rc) = ctx.race.as_mut() {
            rc.acquire(&ctx.twin.race, from, n);
        }
        if found.sync {
            if let Some(c) = ctx.census.as_mut() {
                c.acquire(std::iter::once((from, n)));
            }
        }
    }
    let entry = ctx.dcache.get_mut(&line).expect("inserted above");
    if store {
        entry.data[off..off + size].copy_from_slice(value);
        entry.dirty = true;
        return Ok(());
    }
    value.copy_from_slice(&entry.data[off..off + size]);
    let seen: [u8; 8] = {
        let mut s = [0u8; 8];
        s[..size].copy_from_slice(value);
        s
    };
    crate::poll::observe(ctx, addr, &seen[..size], fresh, Some(&found))
}

/// ReadGmByPassDCache (`store` false) / WriteGmByPassDCache: a scalar GM access that skips the
/// data cache. It neither fills nor updates cached lines (a line this block cached stays as it
/// was, possibly stale, as on hardware); the GM bytes are read or written now. On flag memory a
/// read acquires and a write releases its bytes; on data memory they are checked as a plain
/// read or write.
pub(crate) fn bypass(
    ctx: &mut BlockCtx,
    store: bool,
    addr: usize,
    value: &mut [u8],
) -> Result<(), FaultKind> {
    let size = value.len();
    let found = target(ctx, addr, size, matches!(size, 1 | 2 | 4 | 8))?;
    if let Some(c) = ctx.census.as_mut() {
        let op = if store { Op::Store } else { Op::Load };
        c.access(found.sync, op, std::iter::once((addr, size)));
    }
    if let Some(rc) = ctx.race.as_mut() {
        if !found.sync {
            rc.access(&ctx.twin.race, found.base, addr, size, store, Kind::Sync)
                .map_err(|reason| FaultKind::GmRace { reason })?;
        }
        if store {
            rc.release(&ctx.twin.race, addr, size);
        }
    }
    if store {
        let meta = found.meta();
        if ctx.twin.space.is_some() {
            crate::lazy::before_release(&mut ctx.lazy);
        }
        ctx.twin.before_write(Some(meta), addr, size);
        // SAFETY: bounds checked above; at most 8 bytes, naturally aligned.
        unsafe { mem::write(addr as *mut u8, value.as_ptr(), size) };
        ctx.twin.after_write(Some(meta), addr, size);
        return Ok(());
    }
    // SAFETY: as above.
    unsafe { mem::atomic_read(value.as_mut_ptr(), addr as *const u8, size) };
    if let Some(rc) = ctx.race.as_mut() {
        rc.acquire(&ctx.twin.race, addr, size);
    }
    if found.sync {
        if let Some(c) = ctx.census.as_mut() {
            c.acquire(std::iter::once((addr, size)));
        }
    }
    let mut seen = [0u8; 8];
    seen[..size].copy_from_slice(value);
    crate::poll::observe(ctx, addr, &seen[..size], true, Some(&found))
}

/// Writes dirty lines of the block's scalar data cache back to GM and drops them: the line of
/// `addr` (DataCacheCleanAndInvalid of a single line), or every line (None: entire cache, or
/// the kernel's end).
pub(crate) fn flush(ctx: &mut BlockCtx, addr: Option<usize>) -> Result<(), FaultKind> {
    let lines: smallvec::SmallVec<[usize; 8]> = match addr {
        Some(a) => smallvec::smallvec![a & !(LINE - 1)],
        None => ctx.dcache.keys().copied().collect(),
    };
    for l in lines {
        let Some(c) = ctx.dcache.remove(&l) else {
            continue;
        };
        if !c.dirty {
            continue;
        }
        // The line was read from GM by this block; its allocation may be gone only if the
        // kernel outlived its buffers (a host bug), and then nothing is written. A line that
        // runs past its allocation's end writes back the bytes inside it, which the fill read.
        let (from, n) = c.span;
        let Some(found) = ctx.twin.mem.lookup(from, n) else {
            continue;
        };
        if let Some(c) = ctx.census.as_mut() {
            c.access(found.sync, Op::Store, std::iter::once((from, n)));
        }
        if let Some(rc) = ctx.race.as_mut() {
            if !found.sync {
                rc.access(&ctx.twin.race, found.base, from, n, true, Kind::Sync)
                    .map_err(|reason| FaultKind::GmRace { reason })?;
            }
            rc.release(&ctx.twin.race, from, n);
        }
        let meta = found.meta();
        if ctx.twin.space.is_some() {
            crate::lazy::before_release(&mut ctx.lazy);
        }
        ctx.twin.before_write(Some(meta), from, n);
        // SAFETY: [from, from + n) lies inside the allocation looked up just above; a line is a
        // small (atomic) access.
        unsafe { mem::write(from as *mut u8, c.data.as_ptr().add(from - l), n) };
        ctx.twin.after_write(Some(meta), from, n);
    }
    Ok(())
}
