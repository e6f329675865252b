//! The GM race checker on unordered DMA stores of the same GM bytes by several blocks
//! (kernels/same_bytes.cpp): storing exactly the bytes another block's store left there is
//! harmless and counted (`Twin::benign_gm_overwrites`); other bytes, or a read with the
//! write, are races even when the bytes agree.

use ascendc_twin::{args, DeviceConfig, FaultKind, Twin, TwinError};
use twin_tests::kernels;

const BLOCKS: u32 = 8;
const TILE: usize = 64; // floats

/// Runs `same_bytes` in `mode` on `BLOCKS` blocks of a fresh twin whose `dst` starts as
/// `dst0`: the launch's result, `dst` after it, and the twin's benign GM overwrites.
fn run(mode: u32, dst0: &[f32]) -> (Result<(), TwinError>, Vec<f32>, u64) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let src: Vec<f32> = (0..BLOCKS as usize * TILE).map(|i| i as f32).collect();
    let s = dev.alloc(src.len() * 4).unwrap();
    let d = dev.alloc(TILE * 4).unwrap();
    s.write(0, bytemuck::cast_slice(&src)).unwrap();
    d.write(0, bytemuck::cast_slice(dst0)).unwrap();
    // SAFETY: same_bytes reads BLOCKS tiles of `s` and writes (or reads) one tile of `d`; both
    // live until the launch returns.
    let r =
        unsafe { dev.launch_kernel(&kernels::same_bytes, BLOCKS, &args![s.gm(0), d.gm(0), mode]) };
    let mut out = vec![0f32; TILE];
    d.read(0, bytemuck::cast_slice_mut(&mut out)).unwrap();
    (r, out, twin.benign_gm_overwrites())
}

/// The race the launch was stopped for.
fn race(r: Result<(), TwinError>) -> String {
    match r {
        Err(TwinError::Fault(f)) => match f.kind {
            FaultKind::GmRace { reason } => reason,
            k => panic!("expected a GM race, got {k:?}"),
        },
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

#[test]
fn identical_stores_of_every_block_pass_and_are_counted() {
    let first: Vec<f32> = (0..TILE).map(|i| i as f32).collect();
    for (mode, stored) in [(0u32, TILE), (3, 13)] {
        let (r, out, benign) = run(mode, &vec![-1.0; TILE]);
        r.unwrap_or_else(|e| panic!("mode {mode}: {e}"));
        assert_eq!(out[..stored], first[..stored], "mode {mode}");
        assert!(out[stored..].iter().all(|&x| x == -1.0), "mode {mode}");
        // Every block after the first stores over an unordered store of the same bytes.
        assert_eq!(benign, u64::from(BLOCKS - 1), "mode {mode}");
    }
}

#[test]
fn stores_of_other_bytes_are_still_a_race() {
    let (r, _, benign) = run(1, &vec![-1.0; TILE]);
    let why = race(r);
    assert!(why.contains("write after write"), "{why}");
    assert_eq!(benign, 0);
}

#[test]
fn a_read_with_a_store_of_identical_bytes_is_still_a_race() {
    // `dst` already holds the bytes block 0 stores: the readers see them in either order, and
    // the checker still asks for an order (a read after or before the write).
    let first: Vec<f32> = (0..TILE).map(|i| i as f32).collect();
    let (r, _, benign) = run(2, &first);
    let why = race(r);
    assert!(
        why.contains("read before the write") || why.contains("may still be reading"),
        "{why}"
    );
    assert_eq!(benign, 0);
}
