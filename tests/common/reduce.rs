//! Host references for reductions: element encodings, test values, and the expected result
//! with its rounding tolerance.

use aiv_comm::{DataType, ReduceOp};
use half::{bf16, f16};

/// The types the device can reduce.
pub const REDUCIBLE: [DataType; 6] = [
    DataType::F32,
    DataType::F16,
    DataType::Bf16,
    DataType::I32,
    DataType::I16,
    DataType::I8,
];

/// `v` stored as one `dtype` element (little-endian bytes).
pub fn enc(dtype: DataType, v: f64) -> Vec<u8> {
    match dtype {
        DataType::F32 => (v as f32).to_le_bytes().to_vec(),
        DataType::F16 => f16::from_f64(v).to_le_bytes().to_vec(),
        DataType::Bf16 => bf16::from_f64(v).to_le_bytes().to_vec(),
        DataType::I32 => (v as i32).to_le_bytes().to_vec(),
        DataType::I16 => (v as i16).to_le_bytes().to_vec(),
        DataType::I8 => (v as i8).to_le_bytes().to_vec(),
        _ => unreachable!(),
    }
}

/// The value of one `dtype` element.
pub fn dec(dtype: DataType, b: &[u8]) -> f64 {
    match dtype {
        DataType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
        DataType::F16 => f16::from_le_bytes(b.try_into().unwrap()).to_f64(),
        DataType::Bf16 => bf16::from_le_bytes(b.try_into().unwrap()).to_f64(),
        DataType::I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
        DataType::I16 => i16::from_le_bytes(b.try_into().unwrap()) as f64,
        DataType::I8 => i8::from_le_bytes(b.try_into().unwrap()) as f64,
        _ => unreachable!(),
    }
}

/// Unit roundoff of the storage type (0 for integers).
pub fn unit_roundoff(dtype: DataType) -> f64 {
    match dtype {
        DataType::F32 => 2f64.powi(-24),
        DataType::F16 => 2f64.powi(-11),
        DataType::Bf16 => 2f64.powi(-8),
        _ => 0.0,
    }
}

/// Value of rank r's element i: integers span the type (so sums wrap), floats have fractions.
pub fn value(dtype: DataType, r: usize, i: usize) -> f64 {
    let h = ((r as u64 + 1).wrapping_mul(0x9E37_79B9) ^ (i as u64).wrapping_mul(0x85EB_CA6B))
        % 1_000_003;
    match dtype {
        DataType::I8 => (h % 256) as f64 - 128.0,
        DataType::I16 => (h % 65536) as f64 - 32768.0,
        DataType::I32 => (h as f64 - 500_000.0) * 4000.0,
        _ => (h % 2001) as f64 / 250.0 - 4.0,
    }
}

/// Every rank's input of `count` elements of `dtype`, rank r's element i [`value`]`(dtype, r, i)`,
/// encoded; `n` ranks.
pub fn rank_inputs(dtype: DataType, n: usize, count: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|r| {
            (0..count)
                .flat_map(|i| enc(dtype, value(dtype, r, i)))
                .collect()
        })
        .collect()
}

/// The exact reduction of `vals` in `dtype` (integer sums wrap) and the tolerance a float sum
/// in an unknown order may be off by.
pub fn reference(dtype: DataType, op: ReduceOp, vals: &[f64]) -> (f64, f64) {
    let mut acc = vals[0];
    let mut abs = vals[0].abs();
    for &v in &vals[1..] {
        acc = match op {
            ReduceOp::Sum => acc + v,
            ReduceOp::Max => acc.max(v),
            _ => acc.min(v),
        };
        abs += v.abs();
    }
    // Integer sums wrap in the element type.
    let acc = match (dtype, op) {
        (DataType::I8, ReduceOp::Sum) => (acc as i64 as i8) as f64,
        (DataType::I16, ReduceOp::Sum) => (acc as i64 as i16) as f64,
        (DataType::I32, ReduceOp::Sum) => (acc as i64 as i32) as f64,
        _ => acc,
    };
    // Each of the n - 1 atomic adds rounds once into the storage type, in an order the test
    // does not know: |error| <= (n - 1) u sum|x| (plus the final rounding of the exact sum).
    let tol = if op == ReduceOp::Sum {
        vals.len() as f64 * unit_roundoff(dtype) * abs
    } else {
        0.0
    };
    (acc, tol)
}

/// Checks that element `j` of `got` (`count` elements of `dtype`) is the `op` reduction over
/// the ranks' `inputs` of their element `first + j`, within [`reference`]'s tolerance; `what`
/// names the case (rank, sizes) in messages.
pub fn assert_reduced(
    dtype: DataType,
    op: ReduceOp,
    inputs: &[Vec<u8>],
    first: usize,
    count: usize,
    got: &[u8],
    what: &str,
) {
    let es = dtype.size();
    for j in 0..count {
        let i = first + j;
        let vals: Vec<f64> = inputs
            .iter()
            .map(|x| dec(dtype, &x[i * es..(i + 1) * es]))
            .collect();
        let (want, tol) = reference(dtype, op, &vals);
        let g = dec(dtype, &got[j * es..(j + 1) * es]);
        assert!(
            (g - want).abs() <= tol,
            "{what}: element {j} of {count} {dtype} {op}: got {g}, want {want} (tol {tol})"
        );
    }
}
