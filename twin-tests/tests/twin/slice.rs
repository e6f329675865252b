//! DataCopy with SliceInfo (GM <-> UB), against a host reference written from the docs'
//! definition of the slice parameters; and its misuse as errors.

use ascendc_twin::{args, DeviceConfig, Twin, TwinError};
use twin_tests::kernels;

/// `SliceArgs` of kernels/slice.cpp.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Args {
    dim: u32,
    ub_len: u32,
    gm_in: [[u32; 5]; 8],
    ub: [[u32; 5]; 8],
    gm_out: [[u32; 5]; 8],
}
// SAFETY: only u32 fields and arrays of u32: no padding, every bit pattern valid.
unsafe impl bytemuck::Zeroable for Args {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Args {}

const GM: usize = 4096; // floats in src and dst

/// Runs `slice_copy`: (UB tile after the GM -> UB slice copy, dst after the UB -> GM one).
fn run(
    a: &Args,
    src: &[f32],
    img: &[f32],
    dst0: &[f32],
) -> Result<(Vec<f32>, Vec<f32>), TwinError> {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let s = dev.alloc(GM * 4).unwrap();
    let i = dev.alloc(a.ub_len as usize * 4).unwrap();
    let o = dev.alloc(a.ub_len as usize * 4).unwrap();
    let d = dev.alloc(GM * 4).unwrap();
    s.write(0, bytemuck::cast_slice(src)).unwrap();
    i.write(0, bytemuck::cast_slice(img)).unwrap();
    d.write(0, bytemuck::cast_slice(dst0)).unwrap();
    // SAFETY: slice_copy reads GM floats of `s` and ub_len of `i`, writes ub_len of `o` and at
    // most GM of `d` (the checkers refuse more); all live until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::slice_copy,
            1,
            &args![s.gm(0), i.gm(0), o.gm(0), d.gm(0), *a],
        )
    }?;
    let mut tile = vec![0f32; a.ub_len as usize];
    o.read(0, bytemuck::cast_slice_mut(&mut tile)).unwrap();
    let mut out = vec![0f32; GM];
    d.read(0, bytemuck::cast_slice_mut(&mut out)).unwrap();
    Ok((tile, out))
}

/// The element offsets of a slice's elements in order (docs: dimension 0 bursts of
/// burstLen x 8 floats, `stride` elements apart; above it every (stride + 1)-th index).
fn elements(info: &[[u32; 5]], dim: usize) -> Vec<usize> {
    let mut offs = vec![0usize];
    let mut size = 1usize;
    for (i, s) in info.iter().take(dim).enumerate() {
        let (start, end, stride, burst, shape) = (
            s[0] as usize,
            s[1] as usize,
            s[2] as usize,
            s[3] as usize,
            s[4] as usize,
        );
        let seg = if i == 0 { burst * 8 } else { 1 };
        let mut next = Vec::new();
        let mut at = start;
        while at + seg - 1 <= end {
            for &o in &offs {
                for e in 0..seg {
                    next.push(if i == 0 { at + e } else { o + at * size });
                }
                if i == 0 {
                    break;
                }
            }
            at += seg + stride;
        }
        offs = next;
        size *= shape;
    }
    offs
}

fn setup(dim: u32, ub_len: u32, gm_in: &[[u32; 5]], ub: &[[u32; 5]], gm_out: &[[u32; 5]]) -> Args {
    let mut a = Args {
        dim,
        ub_len,
        ..Args::default()
    };
    a.gm_in[..gm_in.len()].copy_from_slice(gm_in);
    a.ub[..ub.len()].copy_from_slice(ub);
    a.gm_out[..gm_out.len()].copy_from_slice(gm_out);
    a
}

fn check(a: &Args) {
    let src: Vec<f32> = (0..GM).map(|i| i as f32).collect();
    let img: Vec<f32> = (0..a.ub_len).map(|i| -1.0 - i as f32).collect();
    let dst0 = vec![-0.5f32; GM];
    let (tile, out) = run(a, &src, &img, &dst0).unwrap();
    let d = a.dim as usize;
    let (g, u, o) = (
        elements(&a.gm_in, d),
        elements(&a.ub, d),
        elements(&a.gm_out, d),
    );
    assert_eq!(g.len(), u.len());
    let mut want_tile = img.clone();
    for (k, &e) in u.iter().enumerate() {
        want_tile[e] = src[g[k]];
    }
    assert_eq!(tile, want_tile, "UB tile after GM -> UB");
    let mut want_out = dst0.clone();
    for (k, &e) in o.iter().enumerate() {
        want_out[e] = want_tile[u[k]];
    }
    assert_eq!(out, want_out, "dst after UB -> GM");
}

#[test]
fn the_docs_example_moves_four_slices() {
    // The docs' (and the sample's) 3 x 87 -> 2 x 48 float slice.
    let gm = [[16, 70, 7, 3, 87], [0, 2, 1, 1, 3]];
    let ub = [[0, 47, 0, 3, 48], [0, 1, 0, 1, 2]];
    check(&setup(2, 96, &gm, &ub, &ub));
}

#[test]
fn one_and_three_dimensional_slices() {
    // 1-D: two bursts of 16 floats 5 apart, to UB bursts 8 floats apart, out to another layout.
    check(&setup(
        1,
        64,
        &[[3, 39, 5, 2, 100]],
        &[[0, 39, 8, 2, 48]],
        &[[10, 46, 5, 2, 64]],
    ));
    // 3-D: 4 x 5 x 24 source, rows 1 and 3 of planes 0 and 2.
    check(&setup(
        3,
        128,
        &[[8, 15, 0, 1, 24], [1, 3, 1, 1, 5], [0, 2, 1, 1, 4]],
        &[[0, 7, 0, 1, 16], [0, 1, 0, 1, 2], [0, 1, 0, 1, 4]],
        &[[0, 7, 0, 1, 8], [0, 1, 0, 1, 2], [1, 2, 0, 1, 3]],
    ));
}

fn fault(a: &Args) -> String {
    let src = vec![0f32; GM];
    let img = vec![0f32; a.ub_len as usize];
    match run(a, &src, &img, &src) {
        Err(TwinError::Fault(f)) => f.to_string(),
        other => panic!("expected a fault, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn slice_misuse_is_an_error() {
    let ub = [[0, 47, 0, 3, 48], [0, 1, 0, 1, 2]];
    // A span that is not whole bursts.
    let a = setup(2, 96, &[[16, 71, 7, 3, 87], [0, 2, 1, 1, 3]], &ub, &ub);
    assert!(fault(&a).contains("whole N"), "{}", fault(&a));
    // burstLen above the first dimension.
    let ub2 = [[0, 47, 0, 3, 48], [0, 1, 0, 2, 2]];
    let a = setup(2, 96, &[[16, 70, 7, 3, 87], [0, 2, 1, 2, 3]], &ub2, &ub2);
    assert!(fault(&a).contains("burstLen must be 1"));
    // endIndex past shapeValue.
    let a = setup(2, 96, &[[16, 70, 7, 3, 60], [0, 2, 1, 1, 3]], &ub, &ub);
    assert!(fault(&a).contains("endIndex <= shapeValue"));
    // Unequal burstLen between src and dst.
    let a = setup(
        1,
        96,
        &[[0, 15, 0, 2, 64]],
        &[[0, 15, 0, 1, 64]],
        &[[0, 15, 0, 1, 64]],
    );
    assert!(fault(&a).contains("burstLen differ"));
    // Different numbers of slices.
    let a = setup(2, 96, &[[16, 70, 7, 3, 87], [0, 0, 1, 1, 3]], &ub, &ub);
    assert!(fault(&a).contains("startIndex < endIndex") || fault(&a).contains("different number"));
    let a = setup(
        1,
        96,
        &[[0, 47, 0, 1, 64]],
        &[[0, 23, 0, 1, 48]],
        &[[0, 23, 0, 1, 48]],
    );
    assert!(fault(&a).contains("different number"));
    // A UB burst off a 32-byte boundary (stride 4 floats): DataCopy's UB alignment rule.
    let a = setup(
        1,
        96,
        &[[0, 19, 4, 1, 64]],
        &[[0, 19, 4, 1, 48]],
        &[[0, 19, 4, 1, 48]],
    );
    assert!(fault(&a).contains("align"), "{}", fault(&a));
    // shapeValue 0 (the tensor's ShapeInfo) is not modelled.
    let a = setup(
        1,
        96,
        &[[0, 7, 0, 1, 0]],
        &[[0, 7, 0, 1, 48]],
        &[[0, 7, 0, 1, 48]],
    );
    assert!(fault(&a).contains("ShapeInfo"));
    // dimValue 0.
    let a = setup(0, 96, &[], &[], &[]);
    assert!(fault(&a).contains("dimValue"));
}
