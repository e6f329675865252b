//! A kernel built as AscendC kernel projects build them, with the compiler's automatic
//! synchronisation (`ascendc-build`'s default, `--cce-auto-sync`), leaves the scalar unit's
//! LocalTensor accesses to the compiler: the twin orders them as the compiler does, with no
//! false alarm, and still reports a hazard between two pipes that the compiler does not fix.

use ascendc_twin::{args, DeviceConfig, FaultKind, Twin, TwinError};
use custom_kernel_example::kernels;

/// Runs `scalar_side` in `mode` with the checkers on: the 8 int32 of `out`, or the error.
fn run(mode: u32) -> Result<Vec<i32>, TwinError> {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let input = dev.alloc(32).unwrap();
    let out = dev.alloc(32).unwrap();
    let ins: Vec<u8> = (0..8i32).flat_map(|i| (100 + i).to_le_bytes()).collect();
    input.write(0, &ins).unwrap();
    // SAFETY: the kernel reads 8 int32 of `input` and writes 8 of `out`, both alive until the
    // launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::scalar_side,
            1,
            &args![input.gm(0), out.gm(0), mode],
        )
    }?;
    let mut b = [0u8; 32];
    out.read(0, &mut b).unwrap();
    Ok(b.chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[test]
fn scalar_accesses_are_ordered_as_the_compilers_automatic_synchronisation_orders_them() {
    assert_eq!(run(0).unwrap()[0], 101, "GetValue after DataCopy GM->UB");
    assert_eq!(run(1).unwrap()[0], 7, "GetValue of a vector result");
    assert_eq!(
        run(2).unwrap(),
        (10..18).collect::<Vec<i32>>(),
        "SetValue, then DataCopy UB->GM"
    );
}

#[test]
fn a_hazard_between_two_pipes_is_still_reported() {
    match run(3) {
        Err(TwinError::Fault(f)) => assert!(
            matches!(&f.kind, FaultKind::PipeHazard { reason } if reason.contains("MTE3 reads UB bytes")),
            "{f}"
        ),
        other => panic!("{other:?}"),
    }
}
