//! The data-rearrangement vector APIs (`Gather`, `Gatherb`, `GatherMask`, `Transpose`,
//! `TransDataTo5HD`) against host references written from the AscendC docs' definitions, over
//! types, shapes, masks and strides; and their misuse (misaligned operands, out-of-range offsets,
//! overlaps the docs exclude, bad parameters, unsupported types) as errors.
//!
//! The `rearrange` kernel runs one call on views of a UB image and returns the whole image, so
//! every byte is compared: a call that writes outside what the docs say fails here too.

use ascendc_twin::{args, DeviceConfig, FaultKind, Twin, TwinError};
use twin_tests::kernels;

/// Bytes of the UB image the kernel works in.
const IMG: usize = 40 * 1024;

// Operations (`RearrangeOp` in kernels/rearrange.cpp).
const GATHER_COUNT: u32 = 0;
const GATHER_BITS: u32 = 1;
const GATHER_CONT: u32 = 2;
const GATHERB: u32 = 3;
const GATHER_MASK_USER: u32 = 4;
const GATHER_MASK_BUILTIN: u32 = 5;
const TRANSPOSE: u32 = 6;
const TRANSPOSE_EXT: u32 = 7;
const TRANS_5HD: u32 = 8;

// Element types (`RearrangeType`) and their sizes.
const U16: u32 = 0;
const U32: u32 = 1;
const F16: u32 = 2;
const F32: u32 = 3;
const I16: u32 = 4;
const I32: u32 = 5;
const BF16: u32 = 6;
const U8: u32 = 7;
const I8: u32 = 8;

fn es(dtype: u32) -> usize {
    match dtype {
        U16 | F16 | I16 | BF16 => 2,
        U8 | I8 => 1,
        _ => 4,
    }
}

// TransposeType values.
const TRANSPOSE_TYPE_NONE: u32 = 0;
const TRANSPOSE_ND2ND_B16: u32 = 10;
const TRANSPOSE_NCHW2NHWC: u32 = 11;
const TRANSPOSE_NHWC2NCHW: u32 = 12;

/// `RearrangeArgs` of kernels/rearrange.cpp.
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
    aux_off: u32,
    aux_len: u32,
    tmp_off: u32,
    tmp_len: u32,
    p: [u32; 8],
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

/// Runs `rearrange` once with the checkers on: the UB image after the call and GatherMask's
/// rsvdCnt, or the error.
fn run(a: &Args, image: &[u8], lists: &[u64]) -> Result<(Vec<u8>, u64), TwinError> {
    assert_eq!(image.len(), IMG);
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let inb = dev.alloc(IMG).unwrap();
    let outb = dev.alloc(IMG).unwrap();
    let cnt = dev.alloc(32).unwrap();
    let lb = dev.alloc(256).unwrap();
    inb.write(0, image).unwrap();
    let mut l = [0u64; 32];
    l[..lists.len()].copy_from_slice(lists);
    lb.write(0, bytemuck::cast_slice(&l)).unwrap();
    // SAFETY: rearrange reads IMG bytes of `inb` and 32 u64 of `lb`, writes IMG bytes of `outb`
    // and one u64 of `cnt`; all four live until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::rearrange,
            1,
            &args![inb.gm(0), outb.gm(0), cnt.gm(0), lb.gm(0), *a],
        )
    }?;
    let mut out = vec![0u8; IMG];
    outb.read(0, &mut out).unwrap();
    let mut c = [0u8; 8];
    cnt.read(0, &mut c).unwrap();
    Ok((out, u64::from_le_bytes(c)))
}

/// The error of a run that must fail.
fn fault(r: Result<(Vec<u8>, u64), TwinError>) -> String {
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

fn put_u32(img: &mut [u8], at: usize, v: u32) {
    img[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn get_u32(img: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(img[at..at + 4].try_into().unwrap())
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

// ---- Gather ----

/// Gather's reference (docs): dst lane (r, l) = the element at byte base + srcOffset[r * lanes + l]
/// of src, for the enabled lanes (normal mode: bit l of `mask`).
fn gather_ref(img: &mut [u8], a: &Args, es: usize, reps: usize, mask: [u64; 2], dst_rep: usize) {
    let per = 256 / es;
    let src = a.src_off as usize;
    for r in 0..reps {
        for l in 0..per {
            if (mask[l / 64] >> (l % 64)) & 1 == 0 {
                continue;
            }
            let off = get_u32(img, a.aux_off as usize + (r * per + l) * 4) as usize;
            let from = src + a.p[0] as usize + off;
            let to = a.dst_off as usize + r * dst_rep * 32 + l * es;
            let v = img[from..from + es].to_vec();
            img[to..to + es].copy_from_slice(&v);
        }
    }
}

/// A Gather setup: src at 0 (`src_elems`), offsets at 8 KiB, dst at 16 KiB; random data and
/// random in-range offsets relative to `base`.
fn gather_setup(
    rng: &mut Rng,
    op: u32,
    dtype: u32,
    src_elems: usize,
    lanes: usize,
    base: u32,
) -> (Args, Vec<u8>) {
    let es = es(dtype);
    let mut a = Args::new(op, dtype);
    a.src_off = 0;
    a.src_len = src_elems as u32;
    a.aux_off = 8 * 1024;
    a.aux_len = lanes as u32;
    a.dst_off = 16 * 1024;
    a.dst_len = ((IMG - 16 * 1024) / es) as u32;
    a.p[0] = base;
    let mut img = rng.bytes(IMG);
    let avail = src_elems - base as usize / es;
    for i in 0..lanes {
        put_u32(
            &mut img,
            a.aux_off as usize + 4 * i,
            (rng.below(avail as u64) as usize * es) as u32,
        );
    }
    (a, img)
}

#[test]
fn gather_count_form_follows_the_docs_pseudocode_for_every_type() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for dtype in [U16, U32, F16, F32, I16, I32, BF16] {
        let es = es(dtype);
        for count in [1usize, 63, 64, 100, 128, 129, 300, 640] {
            for base in [0u32, 64] {
                let (mut a, img) = gather_setup(&mut rng, GATHER_COUNT, dtype, 1024, count, base);
                a.p[1] = count as u32;
                let (got, _) = run(&a, &img, &[]).unwrap();
                let mut want = img.clone();
                for i in 0..count {
                    let off = get_u32(&img, a.aux_off as usize + 4 * i) as usize;
                    let from = base as usize + off;
                    let to = a.dst_off as usize + i * es;
                    want[to..to + es].copy_from_slice(&img[from..from + es]);
                }
                same(
                    &got,
                    &want,
                    &format!("Gather dtype {dtype} count {count} base {base}"),
                );
            }
        }
    }
}

#[test]
fn gather_level0_forms_follow_the_mask_repeat_and_dst_stride() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for dtype in [U16, F32, BF16, I32] {
        let es = es(dtype);
        let per = 256 / es;
        let full = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        let bit_masks: Vec<[u64; 2]> = if per == 128 {
            vec![
                [u64::MAX, u64::MAX],
                [0x8000_0000_0000_0001, 0x5555_5555_5555_5555],
                [0, 1 << 63],
            ]
        } else {
            vec![[u64::MAX, 0], [0xf0f0_0000_ffff_0001, 0]]
        };
        for reps in [0usize, 1, 3] {
            for dst_rep in [8usize, 12, 4 * es / 2 * 2] {
                for m in &bit_masks {
                    let (mut a, img) =
                        gather_setup(&mut rng, GATHER_BITS, dtype, 2048, reps.max(1) * per, 0);
                    a.set_mask(*m);
                    a.p[2] = reps as u32;
                    a.p[3] = dst_rep as u32;
                    let (got, _) = run(&a, &img, &[]).unwrap();
                    let mut want = img.clone();
                    gather_ref(&mut want, &a, es, reps, *m, dst_rep);
                    same(
                        &got,
                        &want,
                        &format!("Gather bits dtype {dtype} reps {reps} rep {dst_rep} {m:x?}"),
                    );
                }
                for cont in [1usize, 37, per, per + 5] {
                    let (mut a, img) =
                        gather_setup(&mut rng, GATHER_CONT, dtype, 2048, reps.max(1) * per, 0);
                    a.p[2] = reps as u32;
                    a.p[3] = dst_rep as u32;
                    a.p[4] = cont as u32;
                    let (got, _) = run(&a, &img, &[]).unwrap();
                    let n = cont.min(per);
                    let m = [full(n.min(64)), if n > 64 { full(n - 64) } else { 0 }];
                    let mut want = img.clone();
                    gather_ref(&mut want, &a, es, reps, m, dst_rep);
                    same(
                        &got,
                        &want,
                        &format!("Gather cont dtype {dtype} reps {reps} rep {dst_rep} mask {cont}"),
                    );
                }
            }
        }
    }
}

#[test]
fn gather_misuse_is_an_error() {
    let mut rng = Rng(77);
    let base = || gather_setup(&mut Rng(5), GATHER_COUNT, U16, 256, 128, 0);
    let _ = &mut rng;
    // An offset that is not a multiple of sizeof(T).
    let (mut a, mut img) = base();
    a.p[1] = 128;
    put_u32(&mut img, a.aux_off as usize + 4 * 7, 3);
    assert!(fault(run(&a, &img, &[])).contains("not a multiple of sizeof(T)"));
    // srcBaseAddr not a multiple of sizeof(T).
    let (mut a, img) = base();
    a.p[1] = 128;
    a.p[0] = 1;
    assert!(fault(run(&a, &img, &[])).contains("srcBaseAddr is not a multiple"));
    // An element past the end of src.
    let (mut a, mut img) = base();
    a.p[1] = 128;
    put_u32(&mut img, a.aux_off as usize + 4 * 100, 512);
    assert!(fault(run(&a, &img, &[])).contains("past the end of the src"));
    // A misaligned destination.
    let (mut a, img) = base();
    a.p[1] = 128;
    a.dst_off += 16;
    assert!(fault(run(&a, &img, &[])).contains("not 32-byte aligned"));
    // A misaligned source.
    let (mut a, img) = base();
    a.p[1] = 16;
    a.src_off = 2;
    assert!(fault(run(&a, &img, &[])).contains("src address is not 32-byte aligned"));
    // The destination over the source.
    let (mut a, img) = base();
    a.p[1] = 128;
    a.dst_off = 0;
    assert!(fault(run(&a, &img, &[])).contains("shares bytes"));
    // The destination over the offsets.
    let (mut a, img) = base();
    a.p[1] = 128;
    a.dst_off = a.aux_off + 256;
    assert!(fault(run(&a, &img, &[])).contains("shares bytes"));
    // A count larger than the destination.
    let (mut a, img) = base();
    a.p[1] = 128;
    a.dst_len = 100;
    assert!(!fault(run(&a, &img, &[])).is_empty());
}

// ---- Gatherb ----

#[test]
fn gatherb_copies_blocks_as_the_docs_pseudocode() {
    let mut rng = Rng(0xfeed);
    for dtype in [U16, U32] {
        for reps in [1usize, 2, 5] {
            for (blk, rep) in [(1u32, 8u32), (0, 8), (2, 16), (1, 9), (3, 30)] {
                let mut a = Args::new(GATHERB, dtype);
                a.src_len = (4096 / es(dtype)) as u32;
                a.aux_off = 8192;
                a.aux_len = (reps * 8) as u32;
                a.dst_off = 12 * 1024;
                a.dst_len = ((IMG - 12 * 1024) / es(dtype)) as u32;
                a.p[2] = reps as u32;
                a.p[3] = rep;
                a.p[5] = blk;
                let mut img = rng.bytes(IMG);
                for i in 0..reps * 8 {
                    put_u32(&mut img, 8192 + 4 * i, (rng.below(128) * 32) as u32);
                }
                let (got, _) = run(&a, &img, &[]).unwrap();
                let mut want = img.clone();
                let b = if blk == 0 { 1 } else { blk as usize };
                for r in 0..reps {
                    for j in 0..8 {
                        let off = get_u32(&img, 8192 + 4 * (r * 8 + j)) as usize;
                        let to = a.dst_off as usize + r * rep as usize * 32 + j * b * 32;
                        want[to..to + 32].copy_from_slice(&img[off..off + 32]);
                    }
                }
                same(
                    &got,
                    &want,
                    &format!("Gatherb dtype {dtype} reps {reps} blk {blk} rep {rep}"),
                );
            }
        }
    }
}

#[test]
fn gatherb_misuse_is_an_error() {
    let setup = || {
        let mut a = Args::new(GATHERB, U16);
        a.src_len = 128;
        a.aux_off = 8192;
        a.aux_len = 8;
        a.dst_off = 12 * 1024;
        a.dst_len = 128;
        a.p[2] = 1;
        a.p[3] = 8;
        a.p[5] = 1;
        let mut img = vec![0u8; IMG];
        for i in 0..8 {
            put_u32(&mut img, 8192 + 4 * i, (7 - i as u32) * 32);
        }
        (a, img)
    };
    let (a, img) = setup();
    run(&a, &img, &[]).unwrap();
    let (a, mut img) = setup();
    put_u32(&mut img, 8192 + 4, 34);
    assert!(fault(run(&a, &img, &[])).contains("32-byte aligned"));
    let (a, mut img) = setup();
    put_u32(&mut img, 8192 + 4, 256);
    assert!(fault(run(&a, &img, &[])).contains("past the end of the src"));
    let (mut a, img) = setup();
    a.p[2] = 2;
    assert!(fault(run(&a, &img, &[])).contains("offset LocalTensor"));
    let (mut a, img) = setup();
    a.dst_off = 64;
    assert!(fault(run(&a, &img, &[])).contains("shares bytes"));
    let (mut a, img) = setup();
    a.p[3] = 9;
    a.p[2] = 1;
    a.dst_len = 128;
    // 8 blocks of dstBlkStride 2 need 480 bytes: more than the 256 of dst.
    a.p[5] = 2;
    assert!(fault(run(&a, &img, &[])).contains("past the end of its destination"));
}

// ---- GatherMask ----

/// GatherMask's reference (docs): each repeat considers n elements of src0 (strides in blocks),
/// keeps those whose pattern bit is 1, and appends them to dst. `pattern`: None for the user
/// pattern in the aux region. The count kept.
#[allow(clippy::too_many_arguments)]
fn gather_mask_ref(
    img: &mut [u8],
    a: &Args,
    es: usize,
    pattern: Option<u32>,
    n: usize,
    reps: usize,
    blk: usize,
    rep0: usize,
    rep1: usize,
) -> u64 {
    let epb = 32 / es;
    let mut out = a.dst_off as usize;
    let mut kept = 0;
    for r in 0..reps {
        let mut vals = Vec::new();
        for j in 0..n {
            let bit = match pattern {
                None => (img[a.aux_off as usize + r * rep1 * 32 + j / 8] >> (j % 8)) & 1 == 1,
                Some(1) => j % 2 == 0,
                Some(2) => j % 2 == 1,
                Some(p @ 3..=6) => j % 4 == p as usize - 3,
                Some(_) => true,
            };
            if bit {
                let at = a.src_off as usize + r * rep0 * 32 + (j / epb) * blk * 32 + (j % epb) * es;
                vals.extend_from_slice(&img[at..at + es]);
            }
        }
        img[out..out + vals.len()].copy_from_slice(&vals);
        out += vals.len();
        kept += (vals.len() / es) as u64;
    }
    kept
}

#[allow(clippy::too_many_arguments)]
fn gather_mask_args(
    op: u32,
    dtype: u32,
    reduce: bool,
    mask: u32,
    blk: u32,
    reps: u32,
    rep0: u32,
    rep1: u32,
) -> Args {
    let mut a = Args::new(op, dtype);
    a.src_off = 0;
    a.src_len = (12 * 1024 / es(dtype)) as u32;
    a.aux_off = 12 * 1024;
    a.aux_len = (4096 / es(dtype)) as u32;
    a.dst_off = 16 * 1024;
    a.dst_len = ((IMG - 16 * 1024) / es(dtype)) as u32;
    a.p[6] = reduce as u32;
    a.p[4] = mask;
    a.p[7] = blk;
    a.p[2] = reps;
    a.p[3] = rep0;
    a.p[5] = rep1;
    a
}

#[test]
fn gather_mask_builtin_patterns_pack_the_selected_elements() {
    let mut rng = Rng(0xabcdef);
    for dtype in [U16, F16, BF16, I32, F32, U32] {
        let es = es(dtype);
        for pattern in 1..=7u32 {
            for (blk, reps, rep0) in [(1u32, 1u32, 8u32), (1, 4, 8), (2, 2, 16), (1, 3, 10)] {
                let mut a =
                    gather_mask_args(GATHER_MASK_BUILTIN, dtype, false, 0, blk, reps, rep0, 0);
                a.p[1] = pattern;
                let img = rng.bytes(IMG);
                let (got, cnt) = run(&a, &img, &[]).unwrap();
                let mut want = img.clone();
                let n = 256 / es;
                let k = gather_mask_ref(
                    &mut want,
                    &a,
                    es,
                    Some(pattern),
                    n,
                    reps as usize,
                    blk as usize,
                    rep0 as usize,
                    0,
                );
                same(
                    &got,
                    &want,
                    &format!("GatherMask dtype {dtype} pattern {pattern} blk {blk} reps {reps}"),
                );
                assert_eq!(cnt, k, "rsvdCnt, dtype {dtype} pattern {pattern}");
            }
        }
    }
}

#[test]
fn gather_mask_user_patterns_in_normal_and_counter_mode() {
    let mut rng = Rng(0x5151);
    for dtype in [U16, I16, F32, I32] {
        let es = es(dtype);
        // Normal mode: 256 bytes a repeat; counter mode: `mask` elements a repeat.
        for (reduce, mask) in [(false, 0u32), (true, 70), (true, 1), (true, 200)] {
            for (blk, reps, rep0, rep1) in [
                (1u32, 2u32, 4u32, 0u32),
                (1, 3, 8, 1),
                (2, 1, 8, 0),
                (1, 2, 16, 2),
            ] {
                let a =
                    gather_mask_args(GATHER_MASK_USER, dtype, reduce, mask, blk, reps, rep0, rep1);
                let img = rng.bytes(IMG);
                let (got, cnt) = run(&a, &img, &[]).unwrap();
                let mut want = img.clone();
                let n = if reduce { mask as usize } else { 256 / es };
                let k = gather_mask_ref(
                    &mut want,
                    &a,
                    es,
                    None,
                    n,
                    reps as usize,
                    blk as usize,
                    rep0 as usize,
                    rep1 as usize,
                );
                same(&got, &want, &format!("GatherMask user dtype {dtype} reduce {reduce} mask {mask} {blk} {reps} {rep0} {rep1}"));
                assert_eq!(cnt, k);
            }
        }
    }
}

#[test]
fn gather_mask_in_place_as_the_docs_example() {
    // The docs' example: dst = src0, pattern 2 (odd elements), 4 repeats of uint32.
    let mut a = gather_mask_args(GATHER_MASK_BUILTIN, U32, false, 0, 1, 4, 8, 0);
    a.dst_off = a.src_off;
    a.dst_len = 256;
    a.src_len = 256;
    a.p[1] = 2;
    let mut img = vec![0u8; IMG];
    for i in 0..256u32 {
        put_u32(&mut img, 4 * i as usize, i + 1);
    }
    let (got, cnt) = run(&a, &img, &[]).unwrap();
    assert_eq!(cnt, 128);
    for i in 0..128 {
        assert_eq!(get_u32(&got, 4 * i), 2 * i as u32 + 2, "element {i}");
    }
    same(&got[512..], &img[512..], "the rest of the image");
}

#[test]
fn gather_mask_misuse_is_an_error() {
    let img = vec![0xffu8; IMG];
    let mut a = gather_mask_args(GATHER_MASK_BUILTIN, U16, false, 0, 1, 1, 8, 0);
    for bad in [0u32, 8] {
        a.p[1] = bad;
        assert!(fault(run(&a, &img, &[])).contains("[1, 7]"));
    }
    // Counter mode needs a mask of at least 1.
    let a = gather_mask_args(GATHER_MASK_USER, U16, true, 0, 1, 1, 8, 0);
    assert!(fault(run(&a, &img, &[])).contains("mask in [1, 2^32 - 1]"));
    // dst a block ahead of src0: repeat 1 would read what repeat 0 wrote.
    let mut a = gather_mask_args(GATHER_MASK_BUILTIN, U16, false, 0, 1, 2, 8, 0);
    a.p[1] = 7;
    a.dst_off = a.src_off + 32;
    assert!(fault(run(&a, &img, &[])).contains("earlier repeat"));
    // ... but with dst = src0 it is the documented in-place use.
    a.dst_off = a.src_off;
    run(&a, &img, &[]).unwrap();
    // Output past the end of dst.
    let mut a = gather_mask_args(GATHER_MASK_BUILTIN, U16, false, 0, 1, 2, 8, 0);
    a.p[1] = 7;
    a.dst_len = 200;
    assert!(fault(run(&a, &img, &[])).contains("past the end of its destination"));
    // A repeat past the end of src0.
    let mut a = gather_mask_args(GATHER_MASK_BUILTIN, U16, false, 0, 1, 2, 8, 0);
    a.p[1] = 1;
    a.src_len = 200;
    assert!(fault(run(&a, &img, &[])).contains("past the end of the src0"));
    // The pattern past the end of src1Pattern.
    let mut a = gather_mask_args(GATHER_MASK_USER, U32, false, 0, 1, 3, 8, 1);
    a.aux_len = 16;
    assert!(fault(run(&a, &img, &[])).contains("src1Pattern"));
    // Misaligned src0.
    let mut a = gather_mask_args(GATHER_MASK_BUILTIN, U16, false, 0, 1, 1, 8, 0);
    a.p[1] = 1;
    a.src_off = 4;
    assert!(fault(run(&a, &img, &[])).contains("src0 address is not 32-byte aligned"));
}

#[test]
fn a_gather_reading_ub_that_mte2_may_still_fill_is_a_hazard() {
    let (mut a, img) = gather_setup(&mut Rng(3), GATHER_COUNT, F32, 256, 64, 0);
    a.p[1] = 64;
    run(&a, &img, &[]).unwrap();
    a.flags = 1;
    match run(&a, &img, &[]) {
        Err(TwinError::Fault(f)) => match &f.kind {
            FaultKind::PipeHazard { reason } => assert!(reason.contains("MTE2"), "{reason}"),
            k => panic!("expected a pipe hazard, got {k:?}"),
        },
        other => panic!("expected a pipe hazard, got {other:?}"),
    }
}

// ---- Transpose ----

fn transpose16_ref(img: &mut [u8], dst: usize, src: usize) {
    let m = img[src..src + 512].to_vec();
    for i in 0..16 {
        for j in 0..16 {
            let from = (j * 16 + i) * 2;
            let to = dst + (i * 16 + j) * 2;
            img[to..to + 2].copy_from_slice(&m[from..from + 2]);
        }
    }
}

#[test]
fn transpose_16x16_for_every_16_bit_type_and_in_place() {
    let mut rng = Rng(0x7777);
    for dtype in [U16, I16, F16] {
        for (dst, src) in [(4096u32, 0u32), (0, 0), (1024, 8192)] {
            let mut a = Args::new(TRANSPOSE, dtype);
            a.dst_off = dst;
            a.dst_len = 256;
            a.src_off = src;
            a.src_len = 256;
            let img = rng.bytes(IMG);
            let (got, _) = run(&a, &img, &[]).unwrap();
            let mut want = img.clone();
            transpose16_ref(&mut want, dst as usize, src as usize);
            same(
                &got,
                &want,
                &format!("Transpose dtype {dtype} dst {dst} src {src}"),
            );
        }
    }
    // The enhanced form's TRANSPOSE_ND2ND_B16 (uint16_t).
    let mut a = Args::new(TRANSPOSE_EXT, U16);
    a.dst_off = 4096;
    a.dst_len = 256;
    a.src_len = 256;
    a.p[0] = TRANSPOSE_ND2ND_B16;
    a.p[3] = 16;
    a.p[4] = 16;
    let img = rng.bytes(IMG);
    let (got, _) = run(&a, &img, &[]).unwrap();
    let mut want = img.clone();
    transpose16_ref(&mut want, 4096, 0);
    same(&got, &want, "Transpose ND2ND_B16");
    // TRANSPOSE_TYPE_NONE does nothing.
    a.p[0] = TRANSPOSE_TYPE_NONE;
    let (got, _) = run(&a, &img, &[]).unwrap();
    same(&got, &img, "Transpose NONE");
}

#[test]
fn transpose_misuse_is_an_error() {
    let img = vec![1u8; IMG];
    let mut a = Args::new(TRANSPOSE, F16);
    a.dst_off = 256;
    a.dst_len = 256;
    a.src_len = 256;
    assert!(fault(run(&a, &img, &[])).contains("partially overlaps"));
    a.dst_off = 4096;
    a.dst_len = 255;
    assert!(fault(run(&a, &img, &[])).contains("past the end of its destination"));
    a.dst_len = 256;
    a.src_off = 32 + 16;
    assert!(fault(run(&a, &img, &[])).contains("not 32-byte aligned"));
    // ND2ND_B16 is uint16_t only on A2.
    let mut a = Args::new(TRANSPOSE_EXT, F16);
    a.dst_off = 4096;
    a.dst_len = 256;
    a.src_len = 256;
    a.p[0] = TRANSPOSE_ND2ND_B16;
    assert!(fault(run(&a, &img, &[])).contains("uint16_t only"));
    // A type A2 does not support.
    a.dtype = U16;
    a.p[0] = 1;
    assert!(fault(run(&a, &img, &[])).contains("not supported"));
}

fn nchw_args(dtype: u32, ty: u32, n: u32, c: u32, h: u32, w: u32) -> Args {
    let mut a = Args::new(TRANSPOSE_EXT, dtype);
    let total = (n * c * h * w) as usize;
    a.src_off = 0;
    a.src_len = total as u32;
    a.dst_off = 8 * 1024;
    a.dst_len = total as u32;
    a.tmp_off = 16 * 1024;
    a.tmp_len = (IMG - 16 * 1024) as u32;
    a.p = [ty, n, c, h, w, 0, 0, 0];
    a
}

#[test]
fn transpose_nchw_nhwc_both_ways_for_every_type() {
    let mut rng = Rng(0x4242);
    for dtype in [U8, I8, U16, I16, F16, U32, I32, F32] {
        let es = es(dtype);
        for (n, c, h, w) in [
            (1u32, 1u32, 1u32, 32u32),
            (3, 3, 2, 16),
            (2, 5, 4, 8),
            (1, 9, 1, 64),
            (2, 3, 3, 32),
        ] {
            if !((h * w) as usize * es).is_multiple_of(32)
                || (n * c * h * w) as usize * es > 8 * 1024
            {
                continue;
            }
            for ty in [TRANSPOSE_NCHW2NHWC, TRANSPOSE_NHWC2NCHW] {
                let a = nchw_args(dtype, ty, n, c, h, w);
                let img = rng.bytes(IMG);
                let (got, _) = run(&a, &img, &[]).unwrap();
                let mut want = img.clone();
                let (n, c, hw) = (n as usize, c as usize, (h * w) as usize);
                for ai in 0..n {
                    for ci in 0..c {
                        for x in 0..hw {
                            let nchw = ((ai * c + ci) * hw + x) * es;
                            let nhwc = ((ai * hw + x) * c + ci) * es;
                            let (from, to) = if ty == TRANSPOSE_NCHW2NHWC {
                                (nchw, nhwc)
                            } else {
                                (nhwc, nchw)
                            };
                            want[8 * 1024 + to..8 * 1024 + to + es]
                                .copy_from_slice(&img[from..from + es]);
                        }
                    }
                }
                // The scratch buffer is the NPU's: compare everything else.
                same(
                    &got[..16 * 1024],
                    &want[..16 * 1024],
                    &format!("Transpose {ty} dtype {dtype} {n}x{c}x{h}x{w}"),
                );
            }
        }
    }
}

#[test]
fn transpose_nchw_misuse_is_an_error() {
    let img = vec![3u8; IMG];
    // The docs' minimum scratch: (c + 2) * 16 * 16 * 2 bytes for half NCHW2NHWC.
    let mut a = nchw_args(F16, TRANSPOSE_NCHW2NHWC, 3, 3, 2, 8);
    a.tmp_len = 5 * 512;
    run(&a, &img, &[]).unwrap();
    a.tmp_len = 5 * 512 - 32;
    assert!(fault(run(&a, &img, &[])).contains("sharedTmpBuffer is smaller"));
    // NHWC2NCHW needs (2c + 1) * 512.
    let mut a = nchw_args(F16, TRANSPOSE_NHWC2NCHW, 3, 3, 2, 8);
    a.tmp_len = 7 * 512 - 2;
    assert!(fault(run(&a, &img, &[])).contains("sharedTmpBuffer is smaller"));
    // h * w * sizeof(T) must be a multiple of 32 bytes.
    let a = nchw_args(F16, TRANSPOSE_NCHW2NHWC, 1, 2, 3, 5);
    assert!(fault(run(&a, &img, &[])).contains("multiple of 32"));
    // dst and src must not share bytes.
    let mut a = nchw_args(F32, TRANSPOSE_NCHW2NHWC, 1, 2, 2, 8);
    a.dst_off = 32;
    assert!(fault(run(&a, &img, &[])).contains("shares bytes with src"));
    // cSize over 4095.
    let a = nchw_args(U8, TRANSPOSE_NCHW2NHWC, 1, 4096, 1, 32);
    assert!(fault(run(&a, &img, &[])).contains("cSize"));
    // A zero size is a no-op.
    let a = nchw_args(F32, TRANSPOSE_NCHW2NHWC, 0, 2, 2, 8);
    let (got, _) = run(&a, &img, &[]).unwrap();
    same(&got, &img, "n = 0");
}

// ---- TransDataTo5HD ----

/// TransDataTo5HD's reference (docs; the 32-bit layout as the twin assumes it, pinned separately
/// by the docs' int32 example): `d`, `s`: block offsets in the image.
#[allow(clippy::too_many_arguments)]
fn five_hd_ref(
    img: &mut [u8],
    es: usize,
    d: &[u64],
    s: &[u64],
    dh: bool,
    sh: bool,
    reps: usize,
    drs: usize,
    srs: usize,
) {
    for r in 0..reps {
        let k = if reps == 1 { 1 } else { r };
        let so = k * srs * 32;
        let dof = k * drs * 32;
        let blocks: Vec<Vec<u8>> = (0..16)
            .map(|i| img[s[i] as usize + so..s[i] as usize + so + 32].to_vec())
            .collect();
        for kb in 0..16 {
            let to = d[kb] as usize + dof;
            match es {
                1 => {
                    for i in 0..16 {
                        img[to + if dh { 16 } else { 0 } + i] =
                            blocks[i][if sh { 16 } else { 0 } + kb];
                    }
                }
                2 => {
                    for i in 0..16 {
                        img[to + 2 * i..to + 2 * i + 2]
                            .copy_from_slice(&blocks[i][2 * kb..2 * kb + 2]);
                    }
                }
                _ => {
                    for m in 0..8 {
                        let b = &blocks[(kb % 2) * 8 + m];
                        img[to + 4 * m..to + 4 * m + 4]
                            .copy_from_slice(&b[4 * (kb / 2)..4 * (kb / 2) + 4]);
                    }
                }
            }
        }
    }
}

fn five_hd_args(dtype: u32, form: u32, dh: bool, sh: bool, reps: u32, drs: u32, srs: u32) -> Args {
    let mut a = Args::new(TRANS_5HD, dtype);
    a.aux_off = 39 * 1024;
    a.p = [dh as u32, sh as u32, reps, drs, srs, form, 0, 0];
    a
}

#[test]
fn trans_data_to_5hd_transposes_16_blocks_per_repeat_in_every_form() {
    let mut rng = Rng(0x50ad);
    for dtype in [U8, I8, U16, F16, I16, U32, I32, F32] {
        let es = es(dtype);
        for form in [0u32, 1, 2] {
            for (reps, drs, srs) in [
                (1u32, 0u32, 0u32),
                (1, 16, 1),
                (3, 16, 1),
                (4, 32, 2),
                (2, 1, 17),
            ] {
                for (dh, sh) in [(false, false), (true, false), (false, true), (true, true)] {
                    if es != 1 && (dh || sh) {
                        continue;
                    }
                    // Sources: 16 random distinct blocks in [0, 16 KiB); destinations: 16 in
                    // [16 KiB, 32 KiB) spaced so that no two repeats write the same block.
                    let mut s: Vec<u64> =
                        (0..16).map(|i| i * 32 * 16 + rng.below(16) * 32).collect();
                    s.rotate_left(rng.below(16) as usize);
                    let d: Vec<u64> = (0..16).map(|i| 16 * 1024 + i * 32).collect();
                    let a = five_hd_args(dtype, form, dh, sh, reps, drs, srs);
                    let img = rng.bytes(IMG);
                    let mut lists = d.clone();
                    lists.extend_from_slice(&s);
                    let (got, _) = run(&a, &img, &lists).unwrap();
                    let mut want = img.clone();
                    five_hd_ref(
                        &mut want,
                        es,
                        &d,
                        &s,
                        dh,
                        sh,
                        reps as usize,
                        drs as usize,
                        srs as usize,
                    );
                    if form == 2 {
                        // The kernel stored the lists at aux_off (UB addresses, not offsets).
                        want[39 * 1024..39 * 1024 + 256]
                            .copy_from_slice(&got[39 * 1024..39 * 1024 + 256]);
                    }
                    same(&got, &want, &format!("TransDataTo5HD dtype {dtype} form {form} reps {reps} {drs} {srs} {dh} {sh}"));
                }
            }
        }
    }
}

#[test]
fn trans_data_to_5hd_reproduces_the_docs_examples() {
    // The docs' examples: a contiguous 16-block source, contiguous destination blocks, one
    // repeat with both strides 0.
    let d: Vec<u64> = (0..16).map(|i| 8192 + i * 32).collect();
    let s: Vec<u64> = (0..16).map(|i| i * 32).collect();
    let mut lists = d.clone();
    lists.extend_from_slice(&s);
    // int32: src 0..127 as 16 rows of 8; dst row j (two blocks) = j, 8 + j, ..., 120 + j.
    let mut img = vec![0u8; IMG];
    for i in 0..128u32 {
        put_u32(&mut img, 4 * i as usize, i);
    }
    let (got, _) = run(&five_hd_args(I32, 0, false, false, 1, 0, 0), &img, &lists).unwrap();
    for j in 0..8usize {
        for i in 0..16usize {
            assert_eq!(
                get_u32(&got, 8192 + 64 * j + 4 * i),
                (8 * i + j) as u32,
                "int32 row {j} column {i}"
            );
        }
    }
    // half (as uint16_t bits): the 16 x 16 transpose of 0..255.
    let mut img = vec![0u8; IMG];
    for i in 0..256usize {
        img[2 * i..2 * i + 2].copy_from_slice(&(i as u16).to_le_bytes());
    }
    let (got, _) = run(&five_hd_args(U16, 0, false, false, 1, 0, 0), &img, &lists).unwrap();
    for j in 0..16usize {
        for i in 0..16usize {
            let v = u16::from_le_bytes(
                got[8192 + 32 * j + 2 * i..8192 + 32 * j + 2 * i + 2]
                    .try_into()
                    .unwrap(),
            );
            assert_eq!(v as usize, 16 * i + j, "half row {j} column {i}");
        }
    }
    // int8, both halves high: src row r = (r % 4) * 32 + 0..31; dst block k = 16 zeros, then
    // 16 + k, 48 + k, 80 + k, 112 + k repeated.
    let mut img = vec![0u8; IMG];
    for r in 0..16usize {
        for c in 0..32usize {
            img[32 * r + c] = ((r % 4) * 32 + c) as u8;
        }
    }
    let (got, _) = run(&five_hd_args(I8, 0, true, true, 1, 0, 0), &img, &lists).unwrap();
    for k in 0..16usize {
        let row = &got[8192 + 32 * k..8192 + 32 * k + 32];
        assert!(row[..16].iter().all(|&b| b == 0), "int8 row {k} low half");
        for i in 0..16usize {
            assert_eq!(
                row[16 + i] as usize,
                (i % 4) * 32 + 16 + k,
                "int8 row {k} byte {i}"
            );
        }
    }
}

#[test]
fn trans_data_to_5hd_misuse_is_an_error() {
    let img = vec![9u8; IMG];
    let d: Vec<u64> = (0..16).map(|i| 8192 + i * 32).collect();
    let s: Vec<u64> = (0..16).map(|i| i * 32).collect();
    let lists = |d: &[u64], s: &[u64]| {
        let mut l = d.to_vec();
        l.extend_from_slice(s);
        l
    };
    // A misaligned address.
    let mut bad = d.clone();
    bad[3] += 8;
    assert!(fault(run(
        &five_hd_args(F16, 0, false, false, 1, 0, 0),
        &img,
        &lists(&bad, &s)
    ))
    .contains("not 32-byte aligned"));
    // Repeat 1 reads the blocks repeat 0 wrote.
    let d2: Vec<u64> = (0..16).map(|i| 512 + i * 32).collect();
    let e = fault(run(
        &five_hd_args(F16, 0, false, false, 2, 0, 16),
        &img,
        &lists(&d2, &s),
    ));
    assert!(e.contains("earlier repeat"), "{e}");
    // A repeat writing blocks it reads with different lists.
    let mut d3 = s.clone();
    d3.swap(0, 1);
    let e = fault(run(
        &five_hd_args(F16, 0, false, false, 1, 0, 0),
        &img,
        &lists(&d3, &s),
    ));
    assert!(e.contains("only complete overlap"), "{e}");
    // ... while the same lists transpose in place.
    let (got, _) = run(
        &five_hd_args(F16, 0, false, false, 1, 0, 0),
        &img,
        &lists(&s, &s),
    )
    .unwrap();
    same(&got, &img, "in place on a constant matrix");
    // Past the end of the UB image's tensors (LocalTensor form).
    let far: Vec<u64> = (0..16).map(|i| (IMG as u64) - 512 + i * 32).collect();
    let e = fault(run(
        &five_hd_args(F16, 1, false, false, 2, 16, 0),
        &img,
        &lists(&far, &s),
    ));
    assert!(e.contains("past the end of a destination"), "{e}");
}

// ---- unsupported types are compile errors ----

/// Compiles `body` inside a kernel against the twin's headers: the compiler's diagnostics, or
/// None when it compiles.
fn compile(body: &str) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("twin-rearrange-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!(
        "k{:x}.cpp",
        body.len() as u64 * 31 + body.bytes().map(u64::from).sum::<u64>()
    ));
    std::fs::write(
        &src,
        format!(
            "#include \"kernel_operator.h\"\nusing namespace AscendC;\n\
             extern \"C\" __global__ __aicore__ void k(GM_ADDR x) {{\n{body}\n}}\n"
        ),
    )
    .unwrap();
    let inc = concat!(env!("CARGO_MANIFEST_DIR"), "/../ascendc-twin/include");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let out = std::process::Command::new(cxx)
        .args(["-std=c++17", "-fsyntax-only", "-I", inc])
        .arg(&src)
        .output()
        .expect("cannot run the host C++ compiler");
    if out.status.success() {
        None
    } else {
        Some(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn unsupported_types_are_compile_errors() {
    let ok = "LocalTensor<uint16_t> a, b; LocalTensor<uint32_t> o; uint64_t n = 0;\n\
              Gather(a, b, o, 0u, 128u); Gatherb(a, b, o, 1, GatherRepeatParams(1, 8));\n\
              GatherMask(a, b, a, false, 0u, GatherMaskParams(1, 1, 8, 0), n); Transpose(a, b);\n\
              uint64_t d[16], s[16]; TransDataTo5HD<uint16_t>(d, s, TransDataTo5HDParams());";
    assert_eq!(compile(ok), None, "the supported forms compile");
    for (body, why) in [
        ("LocalTensor<int8_t> a, b; LocalTensor<uint32_t> o; Gather(a, b, o, 0u, 32u);", "Gather on Atlas A2"),
        ("LocalTensor<half> a, b; LocalTensor<uint32_t> o; Gatherb(a, b, o, 1, GatherRepeatParams());", "Gatherb on Atlas A2"),
        (
            "LocalTensor<float> a, b; LocalTensor<uint16_t> p; uint64_t n; GatherMask(a, b, p, false, 0u, GatherMaskParams(), n);",
            "GatherMask on Atlas A2",
        ),
        (
            "LocalTensor<int8_t> a, b; uint64_t n; GatherMask(a, b, (uint8_t)1, false, 0u, GatherMaskParams(), n);",
            "GatherMask on Atlas A2",
        ),
        ("LocalTensor<float> a, b; Transpose(a, b);", "Transpose on Atlas A2"),
        (
            "uint64_t d[16], s[16]; TransDataTo5HD<bfloat16_t>(d, s, TransDataTo5HDParams());",
            "TransDataTo5HD on Atlas A2",
        ),
    ] {
        let err = compile(body).unwrap_or_else(|| panic!("{body} compiled"));
        assert!(err.contains(why), "{body}: {err}");
    }
}
