//! ListTensorDesc / TensorDesc read a host-built list of tensors in GM (the layout in
//! kernel_operator_list_tensor_intf.h: ptrOffset, one descriptor `dim | index << 32` plus the
//! shape per tensor, then the data pointers); misuse and inconsistent layouts are errors.

use ascendc_twin::{args, DeviceConfig, Twin, TwinError};
use twin_tests::kernels;

/// `ListArgs` of kernels/list_tensor.cpp.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Args {
    length: u32,
    shape_size: u32,
    max_dim: u32,
    misuse: u32,
    with_shapes: u32,
}
// SAFETY: only u32 fields: no padding, every bit pattern valid.
unsafe impl bytemuck::Zeroable for Args {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Args {}

const NOT_GIVEN: u32 = 0xffff_ffff;
const MAX_DIM: usize = 4;

/// The layout for tensors of the shapes given (all of one dim), data pointers filled in by
/// `run`: (words, index of the first data pointer).
fn layout(shapes: &[Vec<u64>]) -> (Vec<u64>, usize) {
    let dim = shapes[0].len();
    let mut w = vec![0u64];
    for (i, s) in shapes.iter().enumerate() {
        w.push(dim as u64 | (i as u64) << 32);
        w.extend(s);
    }
    w[0] = (w.len() * 8) as u64;
    let at = w.len();
    w.extend(std::iter::repeat_n(0, shapes.len()));
    (w, at)
}

/// Runs `list_tensor` on `words` whose data pointers from `at` point at tensors holding
/// 10 * (i + 1) (patched unless `keep`): the `out` words, or the error.
fn run(mut words: Vec<u64>, at: usize, n: usize, a: Args) -> Result<Vec<u64>, TwinError> {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let data: Vec<_> = (0..n)
        .map(|i| {
            let b = dev.alloc(64).unwrap();
            b.write(0, bytemuck::cast_slice(&[10.0f32 * (i + 1) as f32; 16]))
                .unwrap();
            b
        })
        .collect();
    for (i, b) in data.iter().enumerate() {
        words[at + i] = b.gm(0).0;
    }
    let list = dev.alloc(words.len() * 8).unwrap();
    list.write(0, bytemuck::cast_slice(&words)).unwrap();
    let out_words = 1 + n.max(1) * (3 + MAX_DIM);
    let out = dev.alloc(out_words * 8).unwrap();
    // SAFETY: list_tensor reads the list and 4 bytes of each data buffer, and writes at most
    // out_words words of `out`; all live until the launch returns.
    unsafe { dev.launch_kernel(&kernels::list_tensor, 1, &args![list.gm(0), out.gm(0), a]) }?;
    let mut got = vec![0u64; out_words];
    out.read(0, bytemuck::cast_slice_mut(&mut got)).unwrap();
    Ok(got)
}

fn args(misuse: u32) -> Args {
    Args {
        length: NOT_GIVEN,
        shape_size: NOT_GIVEN,
        max_dim: MAX_DIM as u32,
        misuse,
        with_shapes: 1,
    }
}

fn fault(r: Result<Vec<u64>, TwinError>) -> String {
    match r {
        Err(TwinError::Fault(f)) => f.to_string(),
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn list_gives_each_tensor_its_pointer_index_and_shape() {
    let shapes = vec![vec![1, 2, 3], vec![8, 2048, 1], vec![4, 5, 6]];
    let (w, at) = layout(&shapes);
    let mut a = args(0);
    // length and shapeSize checked and right.
    a.length = (w.len() * 8) as u32;
    a.shape_size = 3;
    let got = run(w, at, 3, a).unwrap();
    assert_eq!(got[0], 3, "GetSize");
    for (i, s) in shapes.iter().enumerate() {
        let r = &got[1 + i * (3 + MAX_DIM)..][..3 + MAX_DIM];
        assert_eq!(r[0], i as u64, "GetIndex of {i}");
        assert_eq!(r[1], 3, "GetDim of {i}");
        assert_eq!(r[2], 10 * (i as u64 + 1), "data of {i}");
        assert_eq!(&r[3..6], &s[..], "shape of {i}");
    }
}

#[test]
fn a_list_without_shapes_gives_pointers() {
    // One descriptor: dim 0 with index (high bits) 2 = the count, then 0xffffffff.
    let w = vec![24, 2u64 << 32, 0xffff_ffff, 0, 0];
    let a = Args {
        with_shapes: 0,
        ..args(0)
    };
    let got = run(w, 3, 2, a).unwrap();
    assert_eq!(got[0], 2);
    assert_eq!(got[1 + 2], 10);
    assert_eq!(got[1 + (3 + MAX_DIM) + 2], 20);
}

#[test]
fn list_misuse_is_an_error() {
    let shapes = vec![vec![1, 2], vec![3, 4]];
    let (w, at) = layout(&shapes);
    let f = fault(run(w.clone(), at, 2, args(1)));
    assert!(f.contains("index not below the tensor count"), "{f}");
    let f = fault(run(w.clone(), at, 2, args(2)));
    assert!(f.contains("before TensorDesc::SetShapeAddr"), "{f}");
    let f = fault(run(w.clone(), at, 2, args(3)));
    assert!(f.contains("not below the tensor's dim"), "{f}");
    // shapeSize and length that disagree with the layout.
    let mut a = args(0);
    a.length = (w.len() * 8) as u32;
    a.shape_size = 3;
    let f = fault(run(w.clone(), at, 2, a));
    assert!(f.contains("not shapeSize"), "{f}");
    a.shape_size = 2;
    a.length += 8;
    let f = fault(run(w.clone(), at, 2, a));
    assert!(f.contains("length is not"), "{f}");
    // A last index that disagrees with ptrOffset.
    let mut bad = w.clone();
    bad[1 + 3] = 2 | 5u64 << 32;
    let f = fault(run(bad, at, 2, args(0)));
    assert!(f.contains("count does not match"), "{f}");
    // A list whose ptrOffset points outside GM.
    let mut far = w;
    far[0] = 1 << 40;
    let f = fault(run(far, at, 2, args(0)));
    assert!(f.contains("GM"), "{f}");
}
