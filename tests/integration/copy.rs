//! CpGM2GM (kernel/cp_gm2gm.h through kernel/copy.cpp): lengths 0..=2 x 180 KB + 97 sampled plus
//! every edge length, source and destination offsets 0..=31, local and cross-rank, plain and with
//! each atomic op and dtype, compared byte for byte with a host reference.

use crate::common;

use aiv_comm::ffi::{self, AivCopyArgs};
use ascendc_twin::{Device, GmBuffer, TwinError};
use common::*;
use half::{bf16, f16};

const STAGE: usize = 180 * 1024;
const PIECE: usize = 90 * 1024;

fn copy(
    dev: &Device,
    dst: u64,
    src: u64,
    bytes: usize,
    dtype: u32,
    op: u32,
    blocks: u32,
) -> Result<(), TwinError> {
    let args = AivCopyArgs {
        dst,
        src,
        bytes: bytes as u64,
        dtype,
        op,
    };
    let a = dev.alloc(64).unwrap();
    a.write(0, &pod_bytes(&args)).unwrap();
    // SAFETY: aiv_copy takes the GM address of an AivCopyArgs, held by `a` for the launch.
    unsafe {
        dev.launch_kernel(
            &ffi::kernels::aiv_copy,
            blocks,
            &ascendc_twin::args![a.gm(0)],
        )
    }
}

fn lengths() -> Vec<usize> {
    let max = 2 * STAGE + 97;
    let mut v: Vec<usize> = (0..=max).step_by(4099).collect();
    v.extend([
        0,
        1,
        2,
        31,
        32,
        33,
        63,
        64,
        65,
        PIECE - 1,
        PIECE,
        PIECE + 1,
        STAGE - 1,
        STAGE,
        STAGE + 1,
        2 * STAGE,
        max,
    ]);
    v
}

struct Bufs {
    src: GmBuffer,
    dst: GmBuffer,
    data: Vec<u8>,
}

fn bufs(src_dev: &Device, dst_dev: &Device) -> Bufs {
    let n = 2 * STAGE + 97 + 64;
    let src = src_dev.alloc(n).unwrap();
    let data = pattern(n, 3);
    src.write(0, &data).unwrap();
    Bufs {
        src,
        dst: dst_dev.alloc(n).unwrap(),
        data,
    }
}

fn check_plain(dev: &Device, b: &Bufs, len: usize, so: usize, d_o: usize, blocks: u32) {
    b.dst.fill(0, b.dst.len(), 0xEE).unwrap();
    copy(
        dev,
        gm(&b.dst, d_o),
        gm(&b.src, so),
        len,
        0,
        ffi::AIV_OP_NONE,
        blocks,
    )
    .unwrap_or_else(|e| panic!("len {len} so {so} do {d_o}: {e}"));
    let got = read_all(&b.dst);
    assert!(
        got[..d_o].iter().all(|&x| x == 0xEE),
        "wrote before dst (len {len})"
    );
    assert_eq!(
        &got[d_o..d_o + len],
        &b.data[so..so + len],
        "len {len} so {so} do {d_o}"
    );
    assert!(
        got[d_o + len..].iter().all(|&x| x == 0xEE),
        "wrote past dst (len {len})"
    );
}

#[test]
fn plain_copy_every_length_class_and_offset_local() {
    let dev = device(0);
    let b = bufs(&dev, &dev);
    for (i, len) in lengths().into_iter().enumerate() {
        check_plain(&dev, &b, len, (i * 7) % 32, (i * 13) % 32, 1);
    }
    for so in 0..32 {
        for d_o in [0, 1, 17, 31] {
            check_plain(&dev, &b, 1000 + so, so, d_o, 1);
        }
    }
    for d_o in 0..32 {
        check_plain(&dev, &b, PIECE + 33, 5, d_o, 1);
    }
}

/// Stores that bypass the host's caches (what a twin does once its running blocks have
/// written more than its last-level cache, `TwinConfig::stream_after`) land the same bytes:
/// here every store after a block's first one streams, over every length class and 32 source
/// and destination offsets (the streaming copy aligns its destination to 16 bytes itself).
#[test]
fn streaming_stores_copy_every_length_and_offset_exactly() {
    let twin = ascendc_twin::Twin::with_config(ascendc_twin::TwinConfig {
        stream_after: 1,
        ..ascendc_twin::TwinConfig::from_env()
    });
    let dev = twin
        .device(0, ascendc_twin::DeviceConfig::default())
        .unwrap();
    let b = bufs(&dev, &dev);
    for (i, len) in lengths().into_iter().enumerate() {
        check_plain(&dev, &b, len, (i * 7) % 32, (i * 13) % 32, 1);
    }
    for d_o in 0..32 {
        check_plain(&dev, &b, 2 * PIECE + 33, (d_o * 5) % 32, d_o, 1);
        check_plain(&dev, &b, STAGE + 97, d_o, (d_o * 3) % 32, 3);
    }
}

#[test]
fn plain_copy_cross_rank_and_many_blocks() {
    let d = devices(2);
    let (d0, d1) = (&d[0], &d[1]);
    let b = bufs(d1, d0); // source on rank 1, destination on rank 0, launched on rank 0
    for (i, len) in lengths().into_iter().enumerate().step_by(3) {
        check_plain(d0, &b, len, (i * 5) % 32, (i * 11) % 32, 1);
        check_plain(d0, &b, len, (i * 3) % 32, (i * 7) % 32, 8);
    }
}

fn enc(dtype: u32, v: f64) -> Vec<u8> {
    match dtype {
        ffi::AIV_DT_F32 => (v as f32).to_le_bytes().to_vec(),
        ffi::AIV_DT_F16 => f16::from_f64(v).to_le_bytes().to_vec(),
        ffi::AIV_DT_BF16 => bf16::from_f64(v).to_le_bytes().to_vec(),
        ffi::AIV_DT_I32 => (v as i32).to_le_bytes().to_vec(),
        ffi::AIV_DT_I16 => (v as i16).to_le_bytes().to_vec(),
        _ => (v as i8).to_le_bytes().to_vec(),
    }
}

fn es(dtype: u32) -> usize {
    match dtype {
        ffi::AIV_DT_F32 | ffi::AIV_DT_I32 => 4,
        ffi::AIV_DT_F16 | ffi::AIV_DT_BF16 | ffi::AIV_DT_I16 => 2,
        _ => 1,
    }
}

#[test]
fn atomic_copy_each_op_and_dtype() {
    let d = devices(2);
    let (d0, d1) = (&d[0], &d[1]);
    let max_elems = 2 * STAGE + 97 + 16;
    for dtype in [
        ffi::AIV_DT_F32,
        ffi::AIV_DT_F16,
        ffi::AIV_DT_BF16,
        ffi::AIV_DT_I32,
        ffi::AIV_DT_I16,
        ffi::AIV_DT_I8,
    ] {
        let e = es(dtype);
        let n_max = max_elems / e;
        let src = d1.alloc(n_max * e + 64).unwrap();
        let dst = d0.alloc(n_max * e + 64).unwrap();
        let sv = |i: usize| ((i * 7) % 23) as f64 - 11.0;
        let dv = |i: usize| ((i * 5) % 19) as f64 - 9.0;
        let sbytes: Vec<u8> = (0..n_max + 64).flat_map(|i| enc(dtype, sv(i))).collect();
        let dbytes: Vec<u8> = (0..n_max + 64).flat_map(|i| enc(dtype, dv(i))).collect();
        src.write(0, &sbytes[..src.len()]).unwrap();
        for op in [ffi::AIV_OP_SUM, ffi::AIV_OP_MAX, ffi::AIV_OP_MIN] {
            for (k, n) in [
                0usize,
                1,
                7,
                31,
                33,
                PIECE / e - 1,
                PIECE / e + 1,
                STAGE / e + 3,
                n_max - 4,
            ]
            .into_iter()
            .enumerate()
            {
                let so = (k % 4) * e;
                let d_o = ((k + 1) % 4) * e;
                dst.write(0, &dbytes[..dst.len()]).unwrap();
                let blocks = if k % 2 == 0 { 1 } else { 8 };
                copy(d0, gm(&dst, d_o), gm(&src, so), n * e, dtype, op, blocks)
                    .unwrap_or_else(|er| panic!("dtype {dtype} op {op} n {n}: {er}"));
                let mut expect = dbytes[..dst.len()].to_vec();
                for i in 0..n {
                    let a = dv(d_o / e + i);
                    let b = sv(so / e + i);
                    let r = match op {
                        ffi::AIV_OP_SUM => a + b,
                        ffi::AIV_OP_MAX => a.max(b),
                        _ => a.min(b),
                    };
                    // Single writer, small integers: exact in every type.
                    expect[d_o + i * e..d_o + (i + 1) * e].copy_from_slice(&enc(dtype, r));
                }
                assert_eq!(read_all(&dst), expect, "dtype {dtype} op {op} n {n}");
            }
        }
    }
}
