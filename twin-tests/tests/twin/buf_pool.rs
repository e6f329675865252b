//! The custom TBufPool (`EXTERN_IMPL_BUFPOOL`, `GetBufHandle`, `Get/SetCurAddr`,
//! `Get/SetCurBufSize`, `Reset`, and the queues' `InitStartBufHandle` / `InitBufHandle`), as the
//! AscendC docs define them: the blocks land at the UB addresses the pool gives, in any order,
//! and the kernel computes with them; misuse is an error.

use ascendc_twin::{args, DeviceConfig, Twin, TwinError};
use twin_tests::kernels;

/// `CustomPoolArgs` of kernels/buf_pool.cpp.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Args {
    n: u32,
    pool_len: u32,
    x_off: u32,
    y_off: u32,
    z_off: u32,
    misuse: u32,
}
// SAFETY: only u32 fields: no padding, every bit pattern valid.
unsafe impl bytemuck::Zeroable for Args {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Args {}

// `PoolMisuse` of kernels/buf_pool.cpp.
const HANDLE_PAST_BUFID_SIZE: u32 = 1;
const BLOCK_OUTSIDE_POOL: u32 = 2;
const TBUF_TWO_BLOCKS: u32 = 3;
const BLOCK_NOT_SET: u32 = 4;
const FOREIGN_HANDLE: u32 = 5;
const BLOCK_UNALIGNED: u32 = 6;
const NOT_INITIALISED: u32 = 7;

/// Runs `custom_pool` on x = i, y = 1000 - 3i: (z, info words) or the error.
fn run(a: &Args) -> Result<(Vec<f32>, [u32; 8]), TwinError> {
    let n = a.n as usize;
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let x = dev.alloc(n * 4).unwrap();
    let y = dev.alloc(n * 4).unwrap();
    let z = dev.alloc(n * 4).unwrap();
    let info = dev.alloc(32).unwrap();
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1000.0 - 3.0 * i as f32).collect();
    x.write(0, bytemuck::cast_slice(&xs)).unwrap();
    y.write(0, bytemuck::cast_slice(&ys)).unwrap();
    // SAFETY: custom_pool reads n floats of x and y, writes n floats of z and 8 words of info;
    // all live until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::custom_pool,
            1,
            &args![x.gm(0), y.gm(0), z.gm(0), info.gm(0), *a],
        )
    }?;
    let mut out = vec![0f32; n];
    z.read(0, bytemuck::cast_slice_mut(&mut out)).unwrap();
    let mut w = [0u32; 8];
    info.read(0, bytemuck::cast_slice_mut(&mut w)).unwrap();
    Ok((out, w))
}

fn fault(a: &Args) -> String {
    match run(a) {
        Err(TwinError::Fault(f)) => f.to_string(),
        other => panic!("expected a fault, got {:?}", other.map(|_| ())),
    }
}

const N: u32 = 256; // floats: 1024 bytes per block

fn good() -> Args {
    Args {
        n: N,
        pool_len: 8192,
        // Out of order and with gaps: output first, the TBuf last.
        x_off: 2048,
        y_off: 6144,
        z_off: 0,
        misuse: 0,
    }
}

#[test]
fn custom_pool_places_blocks_where_it_says_and_computes() {
    let a = good();
    let (z, info) = run(&a).unwrap();
    for (i, v) in z.iter().enumerate() {
        assert_eq!(*v, 1000.0 - 2.0 * i as f32, "z[{i}]");
    }
    // The pool starts after the pipe's 1024-byte TBuf (GetCurAddr is a UB address).
    assert_eq!(info[0], 1024, "GetCurAddr after InitBufPool");
    assert_eq!(info[1], 1024 + 2048 + 1024, "GetCurAddr after the blocks");
    assert_eq!(info[2], 3, "GetCurBufSize");
    assert_eq!(info[3], 1024 + 2048, "input queue block");
    assert_eq!(info[4], 1024 + 6144, "TBuf block");
    assert_eq!(info[5], 1024, "output queue block");
    assert_eq!(info[6], 0, "GetCurAddr after Reset");
    assert_eq!(info[7], 0, "GetCurBufSize after Reset");
}

#[test]
fn custom_pool_blocks_may_share_memory() {
    // The docs allow blocks shared between queues: x and z in one place.
    let a = Args {
        z_off: 2048,
        ..good()
    };
    let (z, info) = run(&a).unwrap();
    assert_eq!(info[3], info[5]);
    for (i, v) in z.iter().enumerate() {
        assert_eq!(*v, 1000.0 - 2.0 * i as f32, "z[{i}]");
    }
}

#[test]
fn custom_pool_misuse_is_an_error() {
    let with = |misuse| Args { misuse, ..good() };
    let f = fault(&with(HANDLE_PAST_BUFID_SIZE));
    assert!(
        f.contains("GetBufHandle") && f.contains("BUFID_SIZE"),
        "{f}"
    );
    let f = fault(&with(BLOCK_OUTSIDE_POOL));
    assert!(f.contains("outside the pool"), "{f}");
    let f = fault(&with(BLOCK_UNALIGNED));
    assert!(f.contains("32-byte aligned"), "{f}");
    let f = fault(&with(TBUF_TWO_BLOCKS));
    assert!(f.contains("num must be 1"), "{f}");
    let f = fault(&with(BLOCK_NOT_SET));
    assert!(f.contains("InitBufHandle has not given"), "{f}");
    let f = fault(&with(FOREIGN_HANDLE));
    assert!(f.contains("not one of this pool's"), "{f}");
    let f = fault(&with(NOT_INITIALISED));
    assert!(f.contains("TPipe::InitBufPool"), "{f}");
}
