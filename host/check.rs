//! The argument checks every call makes before it enqueues anything: byte counts that cannot
//! overflow, buffers large enough and aligned to their element, copies that do not overlap,
//! reductions the device can do.

use crate::buffer::DeviceBuffer;
use crate::dtype::{DataType, ReduceOp};
use crate::error::{Error, Result};

/// Bytes of `count` elements of `dtype`, or an error if that overflows.
pub(crate) fn elem_bytes(count: usize, dtype: DataType) -> Result<usize> {
    count
        .checked_mul(dtype.size())
        .ok_or_else(|| Error::Length(format!("{count} elements of {dtype} overflow")))
}

/// Refuses `buf` at an address not aligned to `dtype`'s element size.
pub(crate) fn check_aligned(what: &'static str, buf: &DeviceBuffer, dtype: DataType) -> Result<()> {
    if !buf.addr().is_multiple_of(dtype.size() as u64) {
        return Err(Error::Misaligned {
            what,
            addr: buf.addr(),
            align: dtype.size(),
        });
    }
    Ok(())
}

/// Refuses `b` if it holds fewer than `needed` bytes.
pub(crate) fn check_len(what: &'static str, b: &DeviceBuffer, needed: usize) -> Result<()> {
    if b.len() < needed {
        return Err(Error::BufferTooSmall {
            what,
            needed,
            len: b.len(),
        });
    }
    Ok(())
}

/// Refuses overlapping `dst` and `src` ranges of `bytes`, unless they are the same range.
pub(crate) fn check_disjoint(
    op: &str,
    dst: &DeviceBuffer,
    src: &DeviceBuffer,
    bytes: usize,
) -> Result<()> {
    if dst.overlaps(src, bytes, bytes) && dst.addr() != src.addr() {
        return Err(Error::Overlap(format!(
            "{op} source {:#x} and destination {:#x} overlap ({bytes} bytes): the copy moves pieces through UB in order and would read bytes it already overwrote",
            src.addr(),
            dst.addr()
        )));
    }
    Ok(())
}

/// The device codes of a reducible (dtype, op) pair.
pub(crate) fn reduce_codes(dtype: DataType, op: ReduceOp) -> Result<(u32, u32)> {
    let opc = op.code().ok_or(Error::Unsupported {
        op,
        dtype,
        reason: "the AIV atomic store units have no product; use sum, max or min",
    })?;
    let dt = dtype.reduce_code().ok_or(Error::Unsupported {
        op,
        dtype,
        reason: "Atlas A2 atomics reduce only f32, f16, bf16, i32, i16 and i8",
    })?;
    Ok((opc, dt))
}
