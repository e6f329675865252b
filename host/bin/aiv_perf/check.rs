//! Result checking: the inputs every rank writes (small integers, exact in every type), their
//! encoding, and the comparison of an output with its reference a chunk at a time.

use aiv_comm::{DataType, DeviceBuffer};
use half::{bf16, f16};

use crate::collectives::Reference;

/// Check data: small integers, exact in every type for any reduction order.
pub fn check_value(r: usize, i: usize) -> f64 {
    ((r * 3 + i * 7) % 8) as f64
}

/// A byte that no check result holds in any type (element bytes all 0xFF: NaN, -1 or the
/// maximum of an unsigned type), written over the output before each check.
pub const POISON: u8 = 0xFF;

/// Appends `v` as `dtype`; integers wrap as the device's integer sums do.
pub fn encode(dtype: DataType, v: f64, out: &mut Vec<u8>) {
    let i = v as i64;
    match dtype {
        DataType::F32 => out.extend((v as f32).to_le_bytes()),
        DataType::F16 => out.extend(f16::from_f64(v).to_le_bytes()),
        DataType::Bf16 => out.extend(bf16::from_f64(v).to_le_bytes()),
        DataType::F64 => out.extend(v.to_le_bytes()),
        DataType::I32 => out.extend((i as i32).to_le_bytes()),
        DataType::I16 => out.extend((i as i16).to_le_bytes()),
        DataType::I8 => out.extend((i as i8).to_le_bytes()),
        DataType::U8 => out.extend((i as u8).to_le_bytes()),
        DataType::I64 => out.extend(i.to_le_bytes()),
        DataType::U64 => out.extend((i as u64).to_le_bytes()),
        DataType::U16 => out.extend((i as u16).to_le_bytes()),
        DataType::U32 => out.extend((i as u32).to_le_bytes()),
        // `-d` parses to the types above only.
        other => unreachable!("aiv-perf cannot encode {other}"),
    }
}

/// Every value of `vals` as `dtype`, end to end.
pub fn encode_all(dtype: DataType, vals: impl Iterator<Item = f64>) -> Vec<u8> {
    let mut v = Vec::new();
    for x in vals {
        encode(dtype, x, &mut v);
    }
    v
}

/// Output bytes [`count_wrong`] reads and compares at a time.
pub const CHECK_CHUNK: usize = 1 << 20;

/// Which element of the result `AIV_PERF_INJECT_WRONG` spoils.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flip {
    /// The first (`=1`).
    First,
    /// The last (`=last`: the check's last chunk must be compared too).
    Last,
}

/// The elements of `recv` (from its start) that differ from `want`, encoded as `dtype`, compared
/// a chunk at a time, so that the comparison takes no memory in proportion to the output (the
/// rank's input, kept to write it again before the checked call, is the only row-sized host copy
/// left). `flip`: the self-test of the check (`AIV_PERF_INJECT_WRONG`), which flips the first
/// byte of that element as read back.
pub fn count_wrong(
    dtype: DataType,
    want: Reference,
    recv: &DeviceBuffer,
    flip: Option<Flip>,
) -> aiv_comm::Result<usize> {
    let mut want = want.peekable();
    let es = dtype.size();
    let per_chunk = (CHECK_CHUNK / es).max(1);
    let (mut expected, mut got) = (
        Vec::with_capacity(per_chunk * es),
        vec![0u8; per_chunk * es],
    );
    let (mut offset, mut wrong) = (0, 0);
    loop {
        expected.clear();
        for v in want.by_ref().take(per_chunk) {
            encode(dtype, v, &mut expected);
        }
        if expected.is_empty() {
            return Ok(wrong);
        }
        let got = &mut got[..expected.len()];
        recv.read(offset, got)?;
        match flip {
            Some(Flip::First) if offset == 0 => got[0] ^= 0xff,
            Some(Flip::Last) if want.peek().is_none() => got[got.len() - es] ^= 0xff,
            _ => {}
        }
        if *got != expected[..] {
            wrong += got
                .chunks(es)
                .zip(expected.chunks(es))
                .filter(|(g, w)| g != w)
                .count();
        }
        offset += expected.len();
    }
}
