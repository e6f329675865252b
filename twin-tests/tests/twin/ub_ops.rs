//! DataCopy UB -> UB (both forms) and Cast between half and int4b_t, against host references
//! written from the AscendC docs' definitions; and their misuse as errors.
//!
//! The `ub_ops` kernel runs one call on views of a UB image and returns the whole image, so
//! every byte is compared: a call that writes outside what the docs say fails here too.

use ascendc_twin::{args, DeviceConfig, FaultKind, Twin, TwinError};
use twin_tests::kernels;

/// Bytes of the UB image the kernel works in.
const IMG: usize = 16 * 1024;

// Operations (`UbOp` in kernels/ub_ops.cpp).
const UB_COPY_COUNT: u32 = 0;
const UB_COPY_PARAMS: u32 = 1;
const CAST_TO_I4_COUNT: u32 = 2;
const CAST_FROM_I4_COUNT: u32 = 3;
const CAST_TO_I4_CONT: u32 = 4;
const CAST_TO_I4_BITS: u32 = 5;
const CAST_FROM_I4_BITS: u32 = 6;
const INT4_SET_GET: u32 = 7;

// Element types of the copies (`UbType`) and their sizes.
const T_U8: u32 = 0;
const T_I16: u32 = 1;
const T_F16: u32 = 2;
const T_F32: u32 = 3;
const T_I64: u32 = 4;
const T_BF16: u32 = 5;

fn es(dtype: u32) -> usize {
    match dtype {
        T_U8 => 1,
        T_I16 | T_F16 | T_BF16 => 2,
        T_F32 => 4,
        _ => 8,
    }
}

// RoundMode values (AscendC's enum order).
const CAST_NONE: u32 = 0;
const CAST_RINT: u32 = 1;
const CAST_FLOOR: u32 = 2;
const CAST_CEIL: u32 = 3;
const CAST_ROUND: u32 = 4;
const CAST_TRUNC: u32 = 5;

/// `UbOpsArgs` of kernels/ub_ops.cpp.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Args {
    op: u32,
    dtype: u32,
    img: u32,
    dst_off: u32,
    dst_len: u32,
    src_off: u32,
    src_len: u32,
    p: [u32; 10],
    mask: [u32; 4],
    flags: u32,
}
// SAFETY: only u32 fields and arrays of u32: no padding, every bit pattern valid.
unsafe impl bytemuck::Zeroable for Args {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Args {}

impl Args {
    fn new(op: u32, dtype: u32) -> Args {
        Args {
            op,
            dtype,
            img: IMG as u32,
            ..Args::default()
        }
    }
    fn set_mask(&mut self, m: [u64; 2]) {
        self.mask = twin_tests::util::mask_words(m);
    }
}

/// Runs `ub_ops` once with the checkers on: the UB image after the call and the value the
/// kernel returns, or the error.
fn run(a: &Args, image: &[u8]) -> Result<(Vec<u8>, i32), TwinError> {
    assert_eq!(image.len(), IMG);
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let inb = dev.alloc(IMG).unwrap();
    let outb = dev.alloc(IMG).unwrap();
    let val = dev.alloc(32).unwrap();
    inb.write(0, image).unwrap();
    // SAFETY: ub_ops reads IMG bytes of `inb`, writes IMG bytes of `outb` and one i32 of `val`;
    // all three live until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::ub_ops,
            1,
            &args![inb.gm(0), outb.gm(0), val.gm(0), *a],
        )
    }?;
    let mut out = vec![0u8; IMG];
    outb.read(0, &mut out).unwrap();
    let mut v = [0u8; 4];
    val.read(0, &mut v).unwrap();
    Ok((out, i32::from_le_bytes(v)))
}

/// The error of a run that must fail.
fn fault(r: Result<(Vec<u8>, i32), TwinError>) -> String {
    match r {
        Err(TwinError::Fault(f)) => f.to_string(),
        Err(e) => panic!("expected a fault, got {e:?}"),
        Ok(_) => panic!("expected a fault, the call succeeded"),
    }
}

/// A deterministic pseudo-random sequence (xorshift64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Compares two images, naming the first differing byte.
fn same(got: &[u8], want: &[u8], what: &str) {
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: byte {i} (0x{i:x}) is {} but should be {}",
            got[i], want[i]
        );
    }
}

// ---- DataCopy UB -> UB ----

/// The strided copy's reference (docs): block i of blockLen x 32 bytes from
/// src + i * (blockLen + srcGap) * 32 to dst + i * (blockLen + dstGap) * 32.
fn copy_ref(
    img: &mut [u8],
    dst: usize,
    src: usize,
    count: usize,
    len: usize,
    sgap: usize,
    dgap: usize,
) {
    let before = img.to_vec();
    for i in 0..count {
        let s = src + i * (len + sgap) * 32;
        let d = dst + i * (len + dgap) * 32;
        img[d..d + len * 32].copy_from_slice(&before[s..s + len * 32]);
    }
}

#[test]
fn ub_to_ub_count_copies_whole_blocks_and_nothing_else() {
    let mut rng = Rng(11);
    for dtype in [T_U8, T_I16, T_F16, T_F32, T_I64, T_BF16] {
        for _ in 0..4 {
            let img = rng.bytes(IMG);
            let n_blocks = 1 + rng.below(100) as usize;
            let count = n_blocks * 32 / es(dtype);
            let mut a = Args::new(UB_COPY_COUNT, dtype);
            a.src_off = 32 * rng.below(40) as u32;
            a.dst_off = 8192 + 32 * rng.below(40) as u32;
            a.src_len = count as u32;
            a.dst_len = count as u32;
            a.p[0] = count as u32;
            let (got, _) = run(&a, &img).unwrap();
            let mut want = img.clone();
            copy_ref(
                &mut want,
                a.dst_off as usize,
                a.src_off as usize,
                1,
                n_blocks,
                0,
                0,
            );
            same(
                &got,
                &want,
                &format!("DataCopy UB->UB count {count}, dtype {dtype}"),
            );
        }
    }
}

#[test]
fn ub_to_ub_params_copies_strided_blocks() {
    let mut rng = Rng(5);
    // The docs' example (blockCount 2, blockLen 3, srcGap 1, dstGap 2), then random shapes.
    let mut shapes = vec![(2usize, 3usize, 1usize, 2usize)];
    for _ in 0..12 {
        shapes.push((
            1 + rng.below(6) as usize,
            1 + rng.below(5) as usize,
            rng.below(4) as usize,
            rng.below(4) as usize,
        ));
    }
    for (count, len, sgap, dgap) in shapes {
        let img = rng.bytes(IMG);
        let mut a = Args::new(UB_COPY_PARAMS, T_F16);
        a.src_off = 64;
        a.dst_off = 8192 + 32;
        a.src_len = (((count - 1) * (len + sgap) + len) * 16) as u32;
        a.dst_len = (((count - 1) * (len + dgap) + len) * 16) as u32;
        a.p[..4].copy_from_slice(&[count as u32, len as u32, sgap as u32, dgap as u32]);
        let (got, _) = run(&a, &img).unwrap();
        let mut want = img.clone();
        copy_ref(
            &mut want,
            a.dst_off as usize,
            a.src_off as usize,
            count,
            len,
            sgap,
            dgap,
        );
        same(
            &got,
            &want,
            &format!("DataCopy UB->UB {count} x {len}, gaps {sgap} / {dgap}"),
        );
    }
    // blockCount or blockLen 0: a NOP (docs).
    let img = rng.bytes(IMG);
    for p in [[0u32, 3, 0, 0], [2, 0, 0, 0]] {
        let mut a = Args::new(UB_COPY_PARAMS, T_F32);
        a.dst_off = 8192;
        a.src_len = 256;
        a.dst_len = 256;
        a.p[..4].copy_from_slice(&p);
        let (got, _) = run(&a, &img).unwrap();
        same(
            &got,
            &img,
            "a DataCopy UB->UB with a zero blockCount / blockLen",
        );
    }
}

#[test]
fn ub_to_ub_misuse_is_an_error() {
    let img = vec![7u8; IMG];
    let base = |op| {
        let mut a = Args::new(op, T_F32);
        a.dst_off = 8192;
        a.src_len = 512;
        a.dst_len = 512;
        a.p[0] = 64;
        a
    };
    // A ragged length: the NPU would copy only the whole blocks.
    let mut a = base(UB_COPY_COUNT);
    a.p[0] = 60;
    assert!(fault(run(&a, &img)).contains("not a multiple of 32 bytes"));
    // Misaligned operands.
    let mut a = base(UB_COPY_COUNT);
    a.dst_off += 16;
    assert!(fault(run(&a, &img)).contains("not 32-byte aligned"));
    let mut a = base(UB_COPY_COUNT);
    a.src_off = 4;
    assert!(fault(run(&a, &img)).contains("not 32-byte aligned"));
    // Past either tensor.
    let mut a = base(UB_COPY_COUNT);
    a.p[0] = 520;
    assert!(fault(run(&a, &img)).contains("past the end"));
    let mut a = base(UB_COPY_PARAMS);
    a.p[..4].copy_from_slice(&[4, 16, 0, 16]);
    assert!(fault(run(&a, &img)).contains("writes past the end of its destination"));
    // blockCount beyond 4095.
    let mut a = base(UB_COPY_PARAMS);
    a.p[..4].copy_from_slice(&[4096, 1, 0, 0]);
    a.src_len = 4096 * 8;
    assert!(fault(run(&a, &img)).contains("blockCount out of range"));
    // Overlapping source and destination.
    let mut a = base(UB_COPY_COUNT);
    a.dst_off = 128;
    assert!(fault(run(&a, &img)).contains("overlaps"));
    // ... but interleaved blocks that share no byte are fine.
    let mut a = base(UB_COPY_PARAMS);
    a.dst_off = 32;
    a.p[..4].copy_from_slice(&[4, 1, 1, 1]);
    let (got, _) = run(&a, &img).unwrap();
    same(&got, &img, "interleaved copy of identical bytes");
}

#[test]
fn ub_to_ub_runs_on_the_vector_pipe() {
    // The docs give DataCopy(UB->UB) PIPE_V: after an MTE2 load, MTE2_V orders it ...
    let img = Rng(9).bytes(IMG);
    let mut a = Args::new(UB_COPY_COUNT, T_F32);
    a.dst_off = 8192;
    a.src_len = 256;
    a.dst_len = 256;
    a.p[0] = 256;
    run(&a, &img).unwrap();
    // ... and without it the copy may read what MTE2 has not delivered.
    a.flags = 1;
    match run(&a, &img) {
        Err(TwinError::Fault(f)) => match &f.kind {
            FaultKind::PipeHazard { reason } => assert!(reason.contains("MTE2"), "{reason}"),
            k => panic!("expected a pipe hazard, got {k:?}"),
        },
        other => panic!("expected a pipe hazard, got {other:?}"),
    }
}

// ---- Cast with int4b_t ----

/// A binary16 value as f32.
fn f16_to_f32(b: u16) -> f32 {
    let s = if b & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((b >> 10) & 0x1f) as i32;
    let m = (b & 0x3ff) as f32;
    match e {
        0 => s * m * 2f32.powi(-24),
        31 if m == 0.0 => s * f32::INFINITY,
        31 => f32::NAN,
        _ => s * (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

/// binary16 bits of a value exactly representable as a normal half (or zero).
fn f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let e = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    assert!((1..31).contains(&e), "{x} is not a normal half");
    assert_eq!(bits & 0x1fff, 0, "{x} is not exact in half");
    sign | ((e as u16) << 10) | ((bits >> 13) & 0x3ff) as u16
}

/// Cast half -> int4b_t of one value (docs: round by the mode, CAST_NONE as RINT; saturate
/// to [-8, 7]).
fn to_int4(x: f32, mode: u32) -> i8 {
    let r = match mode {
        CAST_FLOOR => x.floor(),
        CAST_CEIL => x.ceil(),
        CAST_ROUND => x.round(),
        CAST_TRUNC => x.trunc(),
        _ => {
            // Nearest, ties to even.
            let f = x.floor();
            let d = x - f;
            if d > 0.5 || (d == 0.5 && f.rem_euclid(2.0) == 1.0) {
                f + 1.0
            } else {
                f
            }
        }
    };
    r.clamp(-8.0, 7.0) as i8
}

/// Writes int4b_t element `i` of the tensor at `base` (element 2k in the low nibble).
fn put_nibble(img: &mut [u8], base: usize, i: usize, v: i8) {
    let b = &mut img[base + i / 2];
    let n = (v as u8) & 0xf;
    *b = if i & 1 == 0 {
        (*b & 0xf0) | n
    } else {
        (*b & 0x0f) | (n << 4)
    };
}
fn get_nibble(img: &[u8], base: usize, i: usize) -> i8 {
    let b = img[base + i / 2];
    let n = if i & 1 == 0 { b & 0xf } else { b >> 4 };
    ((n << 4) as i8) >> 4
}

/// Random halves in [-12, 12] in steps of 1/8 (ties and saturation included).
fn random_halves(rng: &mut Rng, img: &mut [u8], at: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let x = (rng.below(193) as f32 - 96.0) / 8.0;
            img[at + 2 * i..at + 2 * i + 2].copy_from_slice(&f16_bits(x).to_le_bytes());
            x
        })
        .collect()
}

#[test]
fn cast_half_to_int4_rounds_saturates_and_packs_low_nibble_first() {
    let mut rng = Rng(21);
    for mode in [
        CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC,
    ] {
        let mut img = rng.bytes(IMG);
        let n = 2 * (1 + rng.below(300) as usize);
        let xs = random_halves(&mut rng, &mut img, 0, n);
        let mut a = Args::new(CAST_TO_I4_COUNT, 0);
        a.dst_off = 8192;
        a.src_len = n as u32;
        a.dst_len = n as u32;
        a.p[0] = n as u32;
        a.p[5] = mode;
        let (got, _) = run(&a, &img).unwrap();
        let mut want = img.clone();
        for (i, &x) in xs.iter().enumerate() {
            put_nibble(&mut want, 8192, i, to_int4(x, mode));
        }
        same(
            &got,
            &want,
            &format!("Cast half -> int4b_t, {n} elements, mode {mode}"),
        );
    }
}

#[test]
fn cast_int4_to_half_is_exact() {
    let mut rng = Rng(4);
    let mut img = rng.bytes(IMG);
    let n = 384;
    let mut a = Args::new(CAST_FROM_I4_COUNT, 0);
    a.dst_off = 4096;
    a.src_len = n as u32;
    a.dst_len = n as u32;
    a.p[0] = n as u32;
    let (got, _) = run(&a, &img).unwrap();
    for i in 0..n {
        let v = get_nibble(&img, 0, i);
        let h = u16::from_le_bytes([got[4096 + 2 * i], got[4096 + 2 * i + 1]]);
        assert_eq!(f16_to_f32(h), v as f32, "element {i}");
        img[4096 + 2 * i..4096 + 2 * i + 2].copy_from_slice(&h.to_le_bytes());
    }
    same(&got, &img, "Cast int4b_t -> half: nothing else written");
}

#[test]
fn cast_to_int4_level0_walks_repeats_in_half_lanes() {
    // The sample's call: mask 128, 4 repeats, {dstBlk 1, srcBlk 1, dstRep 2, srcRep 8}; then a
    // strided one with gaps, and a bit mask of byte pairs.
    let mut rng = Rng(8);
    for (mask, reps, dblk, sblk, drep, srep, bits) in [
        (128u32, 4u32, 1u32, 1u32, 2u32, 8u32, None),
        (64, 3, 2, 1, 5, 9, None),
        (
            0,
            2,
            1,
            1,
            2,
            8,
            Some([0x0f0f_3300_ffff_00c3u64, 0xc000_0000_0000_0003u64]),
        ),
    ] {
        let mut img = rng.bytes(IMG);
        let xs = random_halves(&mut rng, &mut img, 0, 4096);
        let mut a = Args::new(
            if bits.is_some() {
                CAST_TO_I4_BITS
            } else {
                CAST_TO_I4_CONT
            },
            0,
        );
        a.dst_off = 8192;
        a.src_len = 4096;
        a.dst_len = 4096;
        a.p[2] = reps;
        a.p[4] = mask;
        a.p[5] = CAST_CEIL;
        a.p[6..10].copy_from_slice(&[dblk, sblk, drep, srep]);
        let m = bits.unwrap_or(if mask >= 64 {
            [
                u64::MAX,
                if mask >= 128 {
                    u64::MAX
                } else {
                    (1u64 << (mask - 64)) - 1
                },
            ]
        } else {
            [(1u64 << mask) - 1, 0]
        });
        a.set_mask(m);
        let (got, _) = run(&a, &img).unwrap();
        let mut want = img.clone();
        for r in 0..reps as usize {
            for l in 0..128usize {
                if (m[l / 64] >> (l % 64)) & 1 == 0 {
                    continue;
                }
                let s = r * srep as usize * 32 + (l / 16) * sblk as usize * 32 + (l % 16) * 2;
                // int4 lanes: 64 to a block.
                let d = r * drep as usize * 32 + (l / 64) * dblk as usize * 32;
                put_nibble(&mut want, 8192 + d, l % 64, to_int4(xs[s / 2], CAST_CEIL));
            }
        }
        same(
            &got,
            &want,
            &format!("Cast half -> int4b_t level 0 mask {mask} {bits:?}"),
        );
    }
}

#[test]
fn cast_from_int4_level0_bit_mask() {
    let mut rng = Rng(13);
    let img = rng.bytes(IMG);
    let m = [0xff00_0000_0000_ff3cu64, 0x0000_0000_0f00_00f0u64];
    let mut a = Args::new(CAST_FROM_I4_BITS, 0);
    a.dst_off = 4096;
    a.src_len = 1024;
    a.dst_len = 1024;
    a.p[2] = 3;
    a.p[6..10].copy_from_slice(&[1, 1, 8, 2]);
    a.set_mask(m);
    let (got, _) = run(&a, &img).unwrap();
    let mut want = img.clone();
    for r in 0..3usize {
        for l in 0..128usize {
            if (m[l / 64] >> (l % 64)) & 1 == 1 {
                let v = get_nibble(&img, r * 64 + (l / 64) * 32, l % 64);
                let d = 4096 + r * 256 + l * 2;
                want[d..d + 2].copy_from_slice(&f16_bits(v as f32).to_le_bytes());
            }
        }
    }
    same(&got, &want, "Cast int4b_t -> half level 0");
}

#[test]
fn cast_int4_misuse_is_an_error() {
    let img = vec![0u8; IMG];
    let mut a = Args::new(CAST_TO_I4_COUNT, 0);
    a.dst_off = 8192;
    a.src_len = 256;
    a.dst_len = 256;
    a.p[5] = CAST_CEIL;
    // An odd count splits a byte (docs: it must be even).
    a.p[0] = 33;
    assert!(fault(run(&a, &img)).contains("must be even"));
    // Past the destination: 256 int4b_t are 128 bytes.
    a.p[0] = 258;
    a.src_len = 512;
    assert!(fault(run(&a, &img)).contains("exceeds the destination"));
    // A bit mask with a lone bit of a byte pair.
    let mut b = Args::new(CAST_TO_I4_BITS, 0);
    b.dst_off = 8192;
    b.src_len = 256;
    b.dst_len = 256;
    b.p[2] = 1;
    b.p[5] = CAST_CEIL;
    b.p[6..10].copy_from_slice(&[1, 1, 2, 8]);
    b.set_mask([0b0111, 0]);
    assert!(fault(run(&b, &img)).contains("byte pairs"));
    // An odd continuous mask, likewise.
    b.op = CAST_TO_I4_CONT;
    b.p[4] = 5;
    assert!(fault(run(&b, &img)).contains("byte pairs"));
    // Source and destination sharing bytes.
    a.p[0] = 64;
    a.src_len = 256;
    a.dst_off = 64;
    assert!(fault(run(&a, &img)).contains("overlaps"));
}

#[test]
fn int4_tensor_elements_are_nibbles() {
    let mut rng = Rng(17);
    let img = rng.bytes(IMG);
    for (idx, v) in [(0u32, 5i32), (1, -3), (201, 7), (200, -8)] {
        let mut a = Args::new(INT4_SET_GET, 0);
        a.dst_off = 4096;
        a.dst_len = 512;
        a.p[0] = idx;
        a.p[1] = v as u32;
        a.p[2] = idx;
        let (got, back) = run(&a, &img).unwrap();
        assert_eq!(back, v, "GetValue after SetValue of element {idx}");
        let mut want = img.clone();
        put_nibble(&mut want, 4096, idx as usize, v as i8);
        same(&got, &want, &format!("SetValue of int4b_t element {idx}"));
    }
}
