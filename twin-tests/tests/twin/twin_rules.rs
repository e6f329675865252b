//! Pins the device rules of the CPU twin with the self-test kernel (kernels/twin_selftest.cpp):
//! DataCopy alignment and lengths, DataCopyPad layout and padding, strided forms, atomics per
//! dtype and op under many concurrent blocks, bounds checks, pipe-flag pairing, block_dim limits,
//! and the scalar data cache.

use twin_tests::util as common;

use aiv_comm::ffi::{
    AIV_DT_BF16, AIV_DT_F16, AIV_DT_F32, AIV_DT_I16, AIV_DT_I32, AIV_DT_I8, AIV_OP_MAX, AIV_OP_MIN,
    AIV_OP_SUM,
};
use ascendc_twin::{Device, FaultKind, GmBuffer, TwinError, POISON};
use common::*;
use half::{bf16, f16};
use twin_tests::args::*;

fn args(mode: u32) -> AivTwinTestArgs {
    AivTwinTestArgs {
        mode,
        ..Default::default()
    }
}

#[test]
fn aligned_data_copy_roundtrips() {
    let dev = device(0);
    let src = dev.alloc(96 * 1024).unwrap();
    let dst = dev.alloc(96 * 1024).unwrap();
    for (i, len) in [32usize, 64, 96, 4096, 65536, 90 * 1024]
        .into_iter()
        .enumerate()
    {
        let data = pattern(len, i as u64);
        src.write(0, &data).unwrap();
        dst.fill(0, dst.len(), 0).unwrap();
        let mut a = args(AIV_TT_COPY);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.len = len as u32;
        a.ub_off = if len < 4096 { 64 } else { 0 };
        selftest(&dev, a, 1).unwrap();
        let out = read_all(&dst);
        assert_eq!(&out[..len], &data[..], "len {len}");
        assert!(out[len..].iter().all(|&b| b == 0), "wrote past len {len}");
    }
}

#[test]
fn misaligned_ub_is_reported_with_names() {
    let dev = device(3);
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.len = 64;
    a.ub_off = 16;
    let f = fault(selftest(&dev, a, 2));
    assert_eq!(f.kernel, "aiv_twin_selftest");
    assert_eq!(f.rank, 3);
    assert!(f.block < 2);
    assert_eq!(f.op, "DataCopy(GM->UB)");
    assert_eq!(f.kind, FaultKind::MisalignedUb { offset: 16 });
    let msg = f.to_string();
    assert!(
        msg.contains("rank 3") && msg.contains("DataCopy(GM->UB)") && msg.contains("0x10"),
        "{msg}"
    );
}

#[test]
fn misaligned_gm_for_data_copy_is_reported() {
    // DataCopy needs its GM address aligned to sizeof(T) (AscendC docs, DataCopy of GM and UB).
    let dev = device(0);
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    for (dtype, es) in [(2u32, 4u32), (1, 2)] {
        for (so, d_o, bad) in [(1usize, 0usize, 1usize), (0, es as usize / 2, 0)] {
            let mut a = args(AIV_TT_COPY);
            a.dtype = dtype;
            a.src = gm(&src, so);
            a.dst = gm(&dst, d_o);
            a.len = 64;
            let f = fault(selftest(&dev, a, 1));
            let (op, addr) = if bad == 1 {
                ("DataCopy(GM->UB)", gm(&src, so))
            } else {
                ("DataCopy(UB->GM)", gm(&dst, d_o))
            };
            assert_eq!(f.op, op, "{f}");
            assert_eq!(f.kind, FaultKind::MisalignedGm { addr, align: es }, "{f}");
        }
        // Aligned to the element: fine.
        let mut a = args(AIV_TT_COPY);
        a.dtype = dtype;
        a.src = gm(&src, es as usize);
        a.dst = gm(&dst, 2 * es as usize);
        a.len = 64;
        selftest(&dev, a, 1).unwrap();
    }
    // uint8_t elements: any GM address is element-aligned.
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 1);
    a.dst = gm(&dst, 3);
    a.len = 64;
    selftest(&dev, a, 1).unwrap();
}

#[test]
fn event_flag_misuse_is_reported() {
    let dev = device(0);
    for (mode, op, what) in [
        (AIV_TT_DOUBLE_SET, "SetFlag", "already set"),
        (AIV_TT_SET_NO_WAIT, "kernel end", "never waited for"),
        (AIV_TT_EVENT_ID_8, "SetFlag", "EVENT_ID0..EVENT_ID7"),
        (AIV_TT_LONE_WAIT, "WaitFlag", "no matching SetFlag"),
    ] {
        let f = fault(selftest(&dev, args(mode), 2));
        assert_eq!(f.op, op, "mode {mode}: {f}");
        match &f.kind {
            FaultKind::PipeSync { reason } => assert!(reason.contains(what), "{reason}"),
            k => panic!("mode {mode}: {k:?}"),
        }
    }
}

#[test]
fn data_copy_length_that_hardware_truncates_is_an_error() {
    let dev = device(1);
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    for len in [1u32, 31, 33, 100] {
        let mut a = args(AIV_TT_COPY);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.len = len;
        let f = fault(selftest(&dev, a, 1));
        match &f.kind {
            FaultKind::BadLength { len: l, reason } => {
                assert_eq!(*l, len as u64);
                assert!(
                    reason.contains(&format!("only {} bytes", len / 32 * 32)),
                    "{reason}"
                );
            }
            k => panic!("unexpected {k:?}"),
        }
    }
    // The device is still usable after faults.
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.len = 64;
    selftest(&dev, a, 1).unwrap();
}

/// Host model of DataCopyPad GM->UB (AscendC docs): each block lands at a 32-byte aligned UB
/// position, leftPadding elements, blockLen bytes of data, rightPadding elements, then dummy
/// bytes up to 32-byte alignment; the next block starts dstStride 32-byte blocks later. With
/// isPad the padding and dummy hold paddingValue; without it and with no padding the dummy
/// repeats the first element; otherwise they are unspecified (the twin's POISON).
#[allow(clippy::too_many_arguments)]
fn pad_in_model(
    gm: &[u8],
    es: usize,
    count: usize,
    blen: usize,
    src_stride: usize,
    dst_stride: usize,
    is_pad: bool,
    lp: usize,
    rp: usize,
    pad: u32,
    dump: usize,
) -> Vec<Option<u8>> {
    let mut ub = vec![None; dump];
    let span = (lp * es + blen + rp * es).div_ceil(32) * 32;
    let padb = pad.to_le_bytes();
    for i in 0..count {
        let u = i * (span + dst_stride * 32);
        let g = i * (blen + src_stride);
        for k in 0..span {
            let v = if k >= lp * es && k < lp * es + blen {
                gm[g + k - lp * es]
            } else if is_pad {
                padb[k % es]
            } else if lp == 0 && rp == 0 {
                gm[g + (k - blen) % es]
            } else {
                POISON
            };
            ub[u + k] = Some(v);
        }
    }
    ub
}

#[allow(clippy::too_many_arguments)]
fn run_pad_in(
    dev: &ascendc_twin::Device,
    src: &ascendc_twin::GmBuffer,
    dst: &ascendc_twin::GmBuffer,
    src_off: usize,
    es: usize,
    count: usize,
    blen: usize,
    src_stride: usize,
    dst_stride: usize,
    is_pad: bool,
    lp: usize,
    rp: usize,
) {
    run_pad_in_args(
        dev,
        args(AIV_TT_PAD_IN),
        is_pad,
        src,
        dst,
        src_off,
        es,
        count,
        blen,
        src_stride,
        dst_stride,
        is_pad,
        lp,
        rp,
    );
}

/// Runs a DataCopyPad GM -> UB self-test (`a` gives the mode and its extras) and checks UB
/// against [`pad_in_model`]; `model_pad`: whether the padding must hold the pad value.
#[allow(clippy::too_many_arguments)]
fn run_pad_in_args(
    dev: &ascendc_twin::Device,
    a: AivTwinTestArgs,
    model_pad: bool,
    src: &ascendc_twin::GmBuffer,
    dst: &ascendc_twin::GmBuffer,
    src_off: usize,
    es: usize,
    count: usize,
    blen: usize,
    src_stride: usize,
    dst_stride: usize,
    is_pad: bool,
    lp: usize,
    rp: usize,
) {
    let pad = 0x5A6B_7C8Du32
        & if es == 4 {
            u32::MAX
        } else {
            (1u32 << (8 * es)) - 1
        };
    let dump = ((count * ((lp * es + blen + rp * es).div_ceil(32) * 32 + dst_stride * 32))
        .div_ceil(32)
        * 32)
        .max(32);
    let mut a = a;
    a.src = gm(src, src_off);
    a.dst = gm(dst, 0);
    a.dtype = match es {
        1 => 0,
        2 => 1,
        _ => 2,
    };
    a.block_count = count as u32;
    a.block_len = blen as u32;
    a.src_stride = src_stride as u32;
    a.dst_stride = dst_stride as u32;
    a.is_pad = is_pad as u32;
    a.left_pad = lp as u32;
    a.right_pad = rp as u32;
    a.pad_value = pad;
    a.dump_len = dump as u32;
    let mode = a.mode;
    selftest(dev, a, 1)
        .unwrap_or_else(|e| panic!("pad-in mode {mode} es {es} len {blen} off {src_off}: {e}"));
    let gmdata = read_all(src);
    let expect = pad_in_model(
        &gmdata[src_off..],
        es,
        count,
        blen,
        src_stride,
        dst_stride,
        model_pad,
        lp,
        rp,
        pad,
        dump,
    );
    let got = read_all(dst);
    for (i, e) in expect.iter().enumerate() {
        if let Some(e) = e {
            assert_eq!(
                got[i], *e,
                "UB byte {i}: mode {mode} es {es} count {count} len {blen} off {src_off} sstride {src_stride} dstride {dst_stride} pad {is_pad} lp {lp} rp {rp}"
            );
        }
    }
}

#[test]
fn data_copy_pad_gm_to_ub_all_lengths_and_odd_offsets() {
    let dev = device(0);
    let src = dev.alloc(8192).unwrap();
    let dst = dev.alloc(16384).unwrap();
    src.write(0, &pattern(8192, 7)).unwrap();
    for blen in 1..=300usize {
        for off in [0usize, 1, 7, 31] {
            let is_pad = blen % 2 == 0;
            run_pad_in(&dev, &src, &dst, off, 1, 1, blen, 0, 0, is_pad, 0, 0);
        }
    }
    // Left/right padding, with and without isPad.
    for (blen, lp, rp) in [
        (5usize, 3usize, 2usize),
        (40, 0, 7),
        (17, 32, 0),
        (64, 8, 8),
    ] {
        run_pad_in(&dev, &src, &dst, 3, 1, 1, blen, 0, 0, true, lp, rp);
        run_pad_in(&dev, &src, &dst, 5, 1, 1, blen, 0, 0, false, lp, rp);
    }
}

#[test]
fn data_copy_pad_gm_to_ub_wider_elements_and_strides() {
    let dev = device(0);
    let src = dev.alloc(16384).unwrap();
    let dst = dev.alloc(32768).unwrap();
    src.write(0, &pattern(16384, 11)).unwrap();
    for es in [2usize, 4] {
        for n in 1..=40usize {
            let blen = n * es;
            run_pad_in(
                &dev,
                &src,
                &dst,
                es * 3,
                es,
                1,
                blen,
                0,
                0,
                n % 3 == 0,
                0,
                0,
            );
            run_pad_in(&dev, &src, &dst, es, es, 3, blen, 5 * es, 2, true, 1, 2);
        }
    }
    // The docs' example: blockLen 47, srcStride 1 byte, dstStride 1 block.
    run_pad_in(&dev, &src, &dst, 1, 1, 2, 47, 1, 1, false, 0, 0);
    // Hand check of that example: the second block starts at UB byte 64 + 32 = 96 and holds
    // GM bytes 48..95 (47 bytes after a 1-byte gap).
    let got = read_all(&dst);
    let g = read_all(&src);
    assert_eq!(&got[96..96 + 47], &g[1 + 48..1 + 48 + 47]);
}

#[test]
fn data_copy_pad_ub_to_gm_writes_exactly_the_blocks() {
    let dev = device(0);
    let src = dev.alloc(16384).unwrap();
    let dst = dev.alloc(16384).unwrap();
    let ubdata = pattern(8192, 5);
    src.write(0, &ubdata).unwrap();
    for (es, count, blen, ub_stride, gm_stride, off) in [
        (1usize, 1usize, 1usize, 0usize, 0usize, 0usize),
        (1, 1, 31, 0, 0, 5),
        (1, 1, 33, 0, 0, 1),
        (1, 3, 47, 1, 1, 3),
        (2, 4, 6, 0, 9, 2),
        (4, 2, 300, 2, 3, 7),
        (1, 1, 300, 0, 0, 31),
    ] {
        run_pad_out(
            &dev,
            AIV_TT_PAD_OUT,
            (&src, &dst),
            &ubdata,
            (es, count, blen, ub_stride, gm_stride, off),
        );
    }
}

/// One DataCopyPad UB -> GM in test mode `mode` (the staging kernel loaded `ubdata` from `src`
/// into UB): `count` blocks of `blen` bytes of `es`-byte elements, UB blocks `ub_stride` 32-byte
/// blocks apart, GM blocks `gm_stride` bytes apart from byte `off` of `dst`; exactly those bytes
/// land in `dst`, and nothing else of it changes.
fn run_pad_out(
    dev: &Device,
    mode: AivTwinTestMode,
    (src, dst): (&GmBuffer, &GmBuffer),
    ubdata: &[u8],
    (es, count, blen, ub_stride, gm_stride, off): (usize, usize, usize, usize, usize, usize),
) {
    dst.fill(0, dst.len(), 0xEE).unwrap();
    let mut a = args(mode);
    a.src = gm(src, 0);
    a.dst = gm(dst, off);
    a.dtype = match es {
        1 => 0,
        2 => 1,
        _ => 2,
    };
    a.block_count = count as u32;
    a.block_len = blen as u32;
    a.src_stride = ub_stride as u32;
    a.dst_stride = gm_stride as u32;
    a.dump_len = 4096;
    selftest(dev, a, 1).unwrap();
    let mut expect = vec![0xEEu8; dst.len()];
    let ub_span = blen.div_ceil(32) * 32;
    for i in 0..count {
        let u = i * (ub_span + ub_stride * 32);
        let g = off + i * (blen + gm_stride);
        expect[g..g + blen].copy_from_slice(&ubdata[u..u + blen]);
    }
    assert_eq!(read_all(dst), expect, "es {es} count {count} len {blen}");
}

/// The older DataCopyPad form (DataCopyParams with blockLen in bytes, DataCopyPadParams with the
/// pad value's raw bits) lays UB out as the DataCopyExtParams form does, both ways.
#[test]
fn data_copy_pad_with_data_copy_params_matches_the_ext_form() {
    let dev = device(0);
    let src = dev.alloc(16384).unwrap();
    let dst = dev.alloc(32768).unwrap();
    src.write(0, &pattern(16384, 13)).unwrap();
    for (es, count, blen, ss, ds, is_pad, lp, rp) in [
        (
            1usize, 1usize, 47usize, 0usize, 0usize, false, 0usize, 0usize,
        ),
        (1, 2, 47, 1, 1, true, 0, 0),
        (2, 3, 20, 6, 2, true, 1, 2),
        (4, 2, 52, 12, 1, true, 2, 0),
        (4, 1, 36, 0, 0, false, 0, 0),
        (2, 1, 40, 0, 0, false, 0, 4),
    ] {
        run_pad_in_args(
            &dev,
            args(AIV_TT_PAD_IN_PARAMS),
            is_pad,
            &src,
            &dst,
            es * 3,
            es,
            count,
            blen,
            ss,
            ds,
            is_pad,
            lp,
            rp,
        );
    }
    // UB -> GM: blockLen bytes a block, UB gaps in blocks, GM gaps in bytes.
    let ubdata = pattern(8192, 5);
    src.write(0, &ubdata).unwrap();
    for (es, count, blen, ub_stride, gm_stride, off) in [
        (1usize, 3usize, 47usize, 1usize, 1usize, 3usize),
        (2, 4, 6, 0, 9, 2),
        (4, 2, 300, 2, 3, 7),
    ] {
        run_pad_out(
            &dev,
            AIV_TT_PAD_OUT_PARAMS,
            (&src, &dst),
            &ubdata,
            (es, count, blen, ub_stride, gm_stride, off),
        );
    }
}

/// SetPadValue sets the value DataCopyPad (GM -> UB) pads with when isPad is false (docs,
/// SetPadValue; DataCopyPadExtParams.isPad): the left/right padding and the dummy bytes after
/// it hold it. With no padding requested the dummy rule (first element) is unchanged.
#[test]
fn set_pad_value_fills_the_padding_of_a_copy_without_is_pad() {
    let dev = device(0);
    let src = dev.alloc(16384).unwrap();
    let dst = dev.alloc(32768).unwrap();
    src.write(0, &pattern(16384, 17)).unwrap();
    for (es, count, blen, lp, rp) in [
        (2usize, 1usize, 40usize, 0usize, 12usize), // the docs' example: 20 halves + 12
        (1, 2, 5, 3, 2),
        (4, 3, 12, 1, 2),
        (2, 1, 40, 0, 0), // no padding: the dummy repeats the first element
    ] {
        let model_pad = lp > 0 || rp > 0;
        run_pad_in_args(
            &dev,
            args(AIV_TT_PAD_IN_SET),
            model_pad,
            &src,
            &dst,
            es,
            es,
            count,
            blen,
            0,
            1,
            false,
            lp,
            rp,
        );
    }
}

/// Padding from a pad register set for another element size (the docs require SetPadValue's T
/// to be DataCopyPad's) is refused; a DataCopyPadParams value with bits beyond the element pads
/// with the element's bytes (a sign-extended -1 is no misuse).
#[test]
fn pad_value_misuse_is_reported() {
    let dev = device(0);
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let mut a = args(AIV_TT_PAD_IN_SET);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.op = 1; // SetPadValue<uint32_t> before a DataCopyPad of uint16_t
    a.dtype = 1;
    a.block_count = 1;
    a.block_len = 40;
    a.right_pad = 4;
    a.dump_len = 64;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(f.op, "DataCopyPad(GM->UB)", "{f}");
    assert!(f.to_string().contains("SetPadValue"), "{f}");
    // The same without padding uses no pad value: it runs.
    a.right_pad = 0;
    selftest(&dev, a, 1).unwrap();
    let mut a = args(AIV_TT_PAD_IN_PARAMS);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.dtype = 1;
    a.block_count = 1;
    a.block_len = 40;
    a.is_pad = 1;
    a.right_pad = 4;
    a.pad_value = 0x1_2345;
    a.dump_len = 64;
    selftest(&dev, a, 1).unwrap();
    let mut out = vec![0u8; 48];
    dst.read(0, &mut out).unwrap();
    // 20 u16 of data, then 4 of padding: the low two bytes of the value.
    assert_eq!(
        &out[40..48],
        &[0x45, 0x23, 0x45, 0x23, 0x45, 0x23, 0x45, 0x23]
    );
}

/// A tensor whose length is not a multiple of 32 bytes (a 13-float output, say) owns a buffer
/// InitBuffer rounded up to 32 (AscendC docs): DataCopyPad into it writes its dummy bytes up to
/// that boundary, DataCopyPad out of it reads only the tensor's bytes, and exactly those land in
/// GM. Copying more than the tensor holds is still out of bounds.
#[test]
fn data_copy_pad_of_a_ragged_tensor_stays_in_its_buffer() {
    let dev = device(0);
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let data = pattern(4096, 9);
    src.write(0, &data).unwrap();
    for len in [4usize, 16, 28, 52, 100, 2044] {
        dst.fill(0, dst.len(), 0xEE).unwrap();
        let mut a = args(AIV_TT_PAD_EXACT);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.len = len as u32;
        selftest(&dev, a, 1).unwrap_or_else(|e| panic!("{len} bytes: {e}"));
        let mut expect = vec![0xEEu8; dst.len()];
        expect[..len].copy_from_slice(&data[..len]);
        assert_eq!(read_all(&dst), expect, "{len} bytes");
    }
    // 64 bytes through a 52-byte tensor: the load's data passes the tensor's end.
    let mut a = args(AIV_TT_PAD_EXACT);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.len = 52;
    a.block_len = 64;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(
        f.kind,
        FaultKind::UbOutOfBounds {
            offset: 0,
            len: 64,
            limit: 52
        },
        "{f}"
    );
}

#[test]
fn strided_data_copy_both_directions() {
    let dev = device(0);
    let src = dev.alloc(32768).unwrap();
    let dst = dev.alloc(32768).unwrap();
    let data = pattern(32768, 9);
    src.write(0, &data).unwrap();
    for (count, bl, sg, dg) in [
        (1usize, 1usize, 0usize, 0usize),
        (4, 2, 1, 3),
        (7, 1, 5, 0),
        (3, 10, 0, 2),
    ] {
        // GM -> UB
        let dump = count * (bl + dg) * 32;
        let mut a = args(AIV_TT_STRIDED_IN);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.block_count = count as u32;
        a.block_len = bl as u32;
        a.src_stride = sg as u32;
        a.dst_stride = dg as u32;
        a.dump_len = dump as u32;
        selftest(&dev, a, 1).unwrap();
        let got = read_all(&dst);
        for i in 0..count {
            let u = i * (bl + dg) * 32;
            let g = i * (bl + sg) * 32;
            assert_eq!(&got[u..u + bl * 32], &data[g..g + bl * 32], "in: block {i}");
        }
        // UB -> GM: UB gap is srcStride, GM gap dstStride.
        dst.fill(0, dst.len(), 0xEE).unwrap();
        let mut a = args(AIV_TT_STRIDED_OUT);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.block_count = count as u32;
        a.block_len = bl as u32;
        a.src_stride = sg as u32;
        a.dst_stride = dg as u32;
        a.dump_len = (count * (bl + sg) * 32) as u32;
        selftest(&dev, a, 1).unwrap();
        let got = read_all(&dst);
        let mut expect = vec![0xEEu8; dst.len()];
        for i in 0..count {
            let u = i * (bl + sg) * 32;
            let g = i * (bl + dg) * 32;
            expect[g..g + bl * 32].copy_from_slice(&data[u..u + bl * 32]);
        }
        assert_eq!(got, expect, "out: count {count} bl {bl}");
    }
}

fn enc(dtype: u32, v: f64) -> Vec<u8> {
    match dtype {
        AIV_DT_F32 => (v as f32).to_le_bytes().to_vec(),
        AIV_DT_F16 => f16::from_f64(v).to_le_bytes().to_vec(),
        AIV_DT_BF16 => bf16::from_f64(v).to_le_bytes().to_vec(),
        AIV_DT_I32 => (v as i32).to_le_bytes().to_vec(),
        AIV_DT_I16 => (v as i16).to_le_bytes().to_vec(),
        _ => (v as i8).to_le_bytes().to_vec(),
    }
}

fn size_of_dt(dtype: u32) -> usize {
    match dtype {
        AIV_DT_F32 | AIV_DT_I32 => 4,
        AIV_DT_F16 | AIV_DT_BF16 | AIV_DT_I16 => 2,
        _ => 1,
    }
}

#[test]
fn atomics_every_dtype_and_op_from_many_blocks() {
    let dev = device(0);
    let blocks = 16usize;
    let n = 333usize; // elements: odd, so the DataCopyPad path with a ragged tail is used
    for dtype in [
        AIV_DT_F32,
        AIV_DT_F16,
        AIV_DT_BF16,
        AIV_DT_I32,
        AIV_DT_I16,
        AIV_DT_I8,
    ] {
        let es = size_of_dt(dtype);
        let src = dev.alloc(blocks * n * es).unwrap();
        let dst = dev.alloc(n * es).unwrap();
        let val = |b: usize, i: usize| ((b * 7 + i * 3) % 13) as f64 - 6.0;
        let mut bytes = Vec::new();
        for b in 0..blocks {
            for i in 0..n {
                bytes.extend(enc(dtype, val(b, i)));
            }
        }
        src.write(0, &bytes).unwrap();
        for op in [AIV_OP_SUM, AIV_OP_MAX, AIV_OP_MIN] {
            let init = |i: usize| (i % 5) as f64 - 2.0;
            let mut ib = Vec::new();
            for i in 0..n {
                ib.extend(enc(dtype, init(i)));
            }
            dst.write(0, &ib).unwrap();
            let mut a = args(AIV_TT_ATOMIC);
            a.src = gm(&src, 0);
            a.dst = gm(&dst, 0);
            a.len = (n * es) as u32;
            a.dtype = dtype;
            a.op = op;
            for _ in 0..3 {
                // Three launches accumulate (sum) or are idempotent (max/min).
                selftest(&dev, a, blocks as u32).unwrap();
            }
            let mut expect = Vec::new();
            for i in 0..n {
                let mut acc = init(i);
                for _ in 0..3 {
                    for b in 0..blocks {
                        let v = val(b, i);
                        acc = match op {
                            AIV_OP_SUM => acc + v,
                            AIV_OP_MAX => acc.max(v),
                            _ => acc.min(v),
                        };
                    }
                }
                // All partial sums are small integers: exact in every type (|acc| <= 290).
                let acc = if dtype == AIV_DT_I8 {
                    ((acc as i64) as i8) as f64
                } else {
                    acc
                };
                expect.extend(enc(dtype, acc));
            }
            assert_eq!(read_all(&dst), expect, "dtype {dtype} op {op}");
        }
    }
}

#[test]
fn i8_atomic_add_wraps() {
    let dev = device(0);
    let src = dev.alloc(64).unwrap();
    let dst = dev.alloc(32).unwrap();
    src.write(0, &[100u8; 64]).unwrap();
    let mut a = args(AIV_TT_ATOMIC);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.len = 32;
    a.dtype = AIV_DT_I8;
    a.op = AIV_OP_SUM;
    selftest(&dev, a, 2).unwrap();
    assert!(read_all(&dst)
        .iter()
        .all(|&b| b as i8 == (200i32 as u8) as i8));
}

#[test]
fn unsupported_atomic_type_is_an_error() {
    let dev = device(2);
    let f = fault(selftest(&dev, args(AIV_TT_BAD_ATOMIC), 1));
    assert_eq!(f.op, "SetAtomicAdd");
    assert!(matches!(f.kind, FaultKind::UnsupportedAtomic { .. }), "{f}");
}

#[test]
fn gm_out_of_bounds_is_reported() {
    let dev = device(5);
    let src = dev.alloc(1000).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 992); // 992 + 64 > 1000
    a.dst = gm(&dst, 0);
    a.len = 64;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(f.rank, 5);
    assert_eq!(f.op, "DataCopy(GM->UB)");
    assert_eq!(
        f.kind,
        FaultKind::GmOutOfBounds {
            addr: gm(&src, 992),
            len: 64
        }
    );
    // Host memory that is not GM (e.g. a pointer that never came from a device) is rejected.
    let host = vec![0u8; 4096];
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 0);
    a.dst = host.as_ptr() as u64;
    a.len = 64;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(f.op, "DataCopy(UB->GM)");
    assert!(matches!(f.kind, FaultKind::GmOutOfBounds { .. }));
}

#[test]
fn ub_out_of_bounds_is_reported() {
    let dev = device(0);
    let src = dev.alloc(256 * 1024).unwrap();
    let dst = dev.alloc(256 * 1024).unwrap();
    // The kernel stages through a 96 KB TBuf: 64 bytes at offset 96 KB - 32 overrun it.
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.len = 64;
    a.ub_off = 96 * 1024 - 32;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(
        f.kind,
        FaultKind::UbOutOfBounds {
            offset: 96 * 1024 - 32,
            len: 64,
            limit: 32
        }
    );
    // Over-allocating the 192 KB Unified Buffer.
    let mut a = args(AIV_TT_UB_OVERFLOW);
    a.ub_bytes = 192 * 1024 + 32;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(f.op, "TPipe::InitBuffer");
    // What the buffers would take against what the core has.
    assert!(
        matches!(f.kind, FaultKind::Misuse { value, limit, .. } if value == 192 * 1024 + 32 && limit == 192 * 1024),
        "{f}"
    );
    let mut a = args(AIV_TT_UB_OVERFLOW);
    a.ub_bytes = 192 * 1024;
    selftest(&dev, a, 1).unwrap();
    // Element index past a LocalTensor.
    let mut a = args(AIV_TT_LOCAL_INDEX);
    a.dst = gm(&dst, 0);
    a.len = 32;
    let f = fault(selftest(&dev, a, 1));
    assert_eq!(f.op, "LocalTensor");
}

#[test]
fn block_dim_over_the_core_count_is_refused() {
    let dev = ascendc_twin::Twin::new()
        .device(
            4,
            ascendc_twin::DeviceConfig {
                cores: 8,
                ..Default::default()
            },
        )
        .unwrap();
    match selftest(&dev, args(AIV_TT_LONE_WAIT + 100), 9) {
        Err(TwinError::BlockDim {
            requested,
            cores,
            rank,
            ..
        }) => assert_eq!((requested, cores, rank), (9, 8, 4)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        selftest(&dev, args(100), 0),
        Err(TwinError::BlockDim { .. })
    ));
    selftest(&dev, args(100), 8).unwrap();
    let big = device(0);
    assert_eq!(big.cores(), 48);
    assert!(matches!(
        selftest(&big, args(100), 49),
        Err(TwinError::BlockDim { .. })
    ));
    selftest(&big, args(100), 48).unwrap();
}

#[test]
fn wait_flag_without_set_flag_would_hang() {
    let dev = device(0);
    let f = fault(selftest(&dev, args(AIV_TT_LONE_WAIT), 4));
    assert_eq!(f.op, "WaitFlag");
    assert!(matches!(f.kind, FaultKind::PipeSync { .. }));
}

fn poll_scalar(dcci: bool) -> i32 {
    let dev = device(0);
    let flag = dev.alloc(64).unwrap();
    let out = dev.alloc(64).unwrap();
    let mut a = args(if dcci {
        AIV_TT_POLL_DCCI
    } else {
        AIV_TT_POLL_SCALAR
    });
    a.src = gm(&flag, 0);
    a.dst = gm(&out, 0);
    a.expected = 7;
    a.deadline_cycles = 50 * 600_000; // 600 ms at 50 MHz
    std::thread::scope(|s| {
        s.spawn(|| selftest(&dev, a, 1).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(100));
        flag.write(0, &7i32.to_le_bytes()).unwrap();
    });
    let mut v = [0u8; 4];
    out.read(0, &mut v).unwrap();
    i32::from_le_bytes(v)
}

#[test]
fn scalar_polls_need_cache_invalidation() {
    // GetValue goes through the scalar data cache: without DataCacheCleanAndInvalid the kernel
    // keeps seeing the value it first read (as on the NPU) and runs into its deadline.
    assert_eq!(poll_scalar(false), 0);
    assert_eq!(poll_scalar(true), 7);
}

#[test]
fn pipe_hazards_are_reported() {
    let dev = device(0);
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    // Distinct bytes: the WAR reload must change UB (reloading identical bytes is harmless,
    // tests/twin/api.rs).
    src.write(0, &pattern(4096, 5)).unwrap();
    for (mode, op, what) in [
        (
            AIV_TT_HAZ_RAW_DMA,
            "DataCopy(UB->GM)",
            "MTE3 reads UB bytes",
        ),
        (
            AIV_TT_HAZ_RAW_SCALAR,
            "LocalTensor::GetValue",
            "S reads UB bytes",
        ),
        (
            AIV_TT_HAZ_SCALAR_DMA,
            "DataCopy(UB->GM)",
            "that S (scalar store) wrote",
        ),
        (
            AIV_TT_HAZ_WAR,
            "DataCopy(GM->UB)",
            "that MTE3 may still be reading",
        ),
    ] {
        let mut a = args(mode);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        let f = fault(selftest(&dev, a, 1));
        assert_eq!(f.op, op, "mode {mode}");
        match &f.kind {
            FaultKind::PipeHazard { reason } => {
                assert!(reason.contains(what), "mode {mode}: {reason}")
            }
            k => panic!("mode {mode}: {k:?}"),
        }
    }
    // The same kernels with the flag in place pass (AIV_TT_COPY is the flagged form of the first).
    let mut a = args(AIV_TT_COPY);
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    a.len = 64;
    selftest(&dev, a, 1).unwrap();
}

/// Snapshot tests move this much: above the 16 KiB from which the twin defers GM -> UB copies
/// (ascendc-twin/src/lazy.rs), so both code paths run.
const SNAP_LEN: usize = 32 * 1024;

/// Runs `f` on a device whose twin defers GM -> UB staging, then on one whose twin does not: a
/// DataCopy GM -> UB is a snapshot either way.
fn both_staging_modes(f: impl Fn(&ascendc_twin::Device, &str)) {
    for on in [true, false] {
        let dev = device(0);
        dev.twin().set_lazy_staging(on);
        f(
            &dev,
            if on {
                "deferred staging"
            } else {
                "eager staging"
            },
        );
    }
}

#[test]
fn ub_keeps_what_it_loaded_when_a_peer_block_overwrites_the_source() {
    both_staging_modes(|dev, mode| {
        let len = SNAP_LEN;
        let orig = pattern(len, 1);
        let new = pattern(len, 2);
        let src = dev.alloc(2 * len).unwrap();
        src.write(0, &orig).unwrap();
        src.write(len, &new).unwrap();
        let dst = dev.alloc(len + 64).unwrap();
        dst.fill(0, dst.len(), 0).unwrap();
        // The two blocks hand over through flag cells after the data: tell the race checker.
        dst.mark_sync(len, 64).unwrap();
        let mut a = args(AIV_TT_SNAP_PEER);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.len = len as u32;
        a.deadline_cycles = 50_000_000; // 1 s
        selftest(dev, a, 2).unwrap();
        let out = read_all(&dst);
        assert_eq!(
            &out[..len],
            &orig[..],
            "{mode}: block 0 stored what it had loaded"
        );
        assert_eq!(
            &read_all(&src)[..len],
            &new[..],
            "{mode}: block 1 overwrote the source"
        );
    });
}

#[test]
fn ub_keeps_what_it_loaded_when_the_block_overwrites_the_source() {
    both_staging_modes(|dev, mode| {
        let len = SNAP_LEN;
        let x = pattern(len, 3);
        let y = pattern(len, 4);
        let src = dev.alloc(2 * len).unwrap();
        src.write(0, &x).unwrap();
        src.write(len, &y).unwrap();
        let dst = dev.alloc(len).unwrap();
        let mut a = args(AIV_TT_SNAP_SELF);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.len = len as u32;
        selftest(dev, a, 1).unwrap();
        assert_eq!(read_all(&dst), x, "{mode}");
        assert_eq!(&read_all(&src)[..len], &y[..], "{mode}");
    });
}

#[test]
fn scalar_and_vector_edits_of_loaded_ub_are_kept() {
    both_staging_modes(|dev, mode| {
        let len = SNAP_LEN;
        let x = pattern(len, 5);
        let y = pattern(len, 6);
        let src = dev.alloc(2 * len).unwrap();
        src.write(0, &x).unwrap();
        src.write(len, &y).unwrap();
        let dst = dev.alloc(len + 32).unwrap();
        let mut a = args(AIV_TT_SNAP_EDIT);
        a.src = gm(&src, 0);
        a.dst = gm(&dst, 0);
        a.len = len as u32;
        selftest(dev, a, 1).unwrap();
        let mut want = x.clone();
        want[len - 1] = 0xA1;
        want[0] = 0xA0;
        want[len / 2..len / 2 + 32].fill(0xA2);
        want.push(y[len / 4]);
        want.extend_from_slice(&[0; 31]);
        assert_eq!(read_all(&dst), want, "{mode}");
    });
}

#[test]
fn a_block_that_overflows_its_stack_is_a_named_fault_and_the_device_goes_on() {
    let dev = device(6);
    let dst = dev.alloc(3 * 64).unwrap();
    let mut a = args(AIV_TT_STACK_OVERFLOW);
    a.dst = gm(&dst, 0);
    a.len = 1 << 20; // 1 Mi levels of 4 KB frames: far beyond any block stack
    let f = fault(selftest(&dev, a, 3));
    assert_eq!((f.kernel.as_str(), f.rank), ("aiv_twin_selftest", 6));
    assert!(f.block < 3, "{f}");
    assert_eq!(f.kind, FaultKind::StackOverflow, "{f}");
    assert!(f.to_string().contains("overflowed its 1 MiB stack"), "{f}");
    // A shallow recursion on the same device (and the same pooled stacks) still runs.
    a.len = 16;
    selftest(&dev, a, 3).unwrap();
    let out = read_all(&dst);
    let sum = (16 * 17 / 2) as u8; // 0 + 1 + ... + 16
    assert_eq!((out[0], out[64], out[128]), (sum, sum, sum));
}

/// A Unified Buffer size the twin cannot model is refused when the device is made, with the
/// limit in the message, at both ends of the range.
#[test]
fn ub_sizes_outside_the_documented_range_are_refused() {
    let make = |ub_bytes: usize| {
        ascendc_twin::Twin::new().device(0, ascendc_twin::DeviceConfig { cores: 1, ub_bytes })
    };
    for bad in [0, 992, 1000, ascendc_twin::MAX_UB_BYTES + 32] {
        match make(bad) {
            Err(TwinError::Config(m)) => assert!(
                m.contains("ub_bytes") && m.contains(&ascendc_twin::MAX_UB_BYTES.to_string()),
                "{m}"
            ),
            other => panic!("ub_bytes {bad}: {other:?}"),
        }
    }
    make(1024).unwrap();
    make(ascendc_twin::MAX_UB_BYTES).unwrap();
}
