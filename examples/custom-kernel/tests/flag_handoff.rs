//! A kernel that keeps a cross-block flag in an ordinary GM buffer, raised and polled with the
//! scalar GM accesses the AscendC docs give for synchronisation (as the public samples do), runs
//! with the twin's checkers on and no false alarm, without marking the flag's memory; the same
//! kernel with the wait left out, or the flag raised before the data is written, is a race.

use ascendc_twin::{args, DeviceConfig, FaultKind, Twin, TwinError};
use custom_kernel_example::kernels;

/// Runs `flag_handoff` in `mode` on a fresh device of a twin with its checkers on: `out`, or
/// the launch's error.
fn handoff(mode: u32) -> Result<Vec<i32>, TwinError> {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let n = 256u32;
    let data = dev.alloc(n as usize * 4).unwrap();
    // The flag's own buffer: plain data memory, never marked as flags.
    let flag = dev.alloc(64).unwrap();
    let out = dev.alloc(n as usize * 4).unwrap();
    // SAFETY: the kernel writes n ints of data and out and one int of flag, reads those; all
    // three buffers live until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::flag_handoff,
            2,
            &args![data.gm(0), flag.gm(0), out.gm(0), n, mode],
        )
    }?;
    let mut bytes = vec![0u8; n as usize * 4];
    out.read(0, &mut bytes).unwrap();
    Ok(bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[test]
fn a_flag_in_data_memory_raised_and_polled_as_documented_is_no_race() {
    for (mode, how) in [(0, "bypass"), (1, "SetValue + DataCacheCleanAndInvalid")] {
        let out = handoff(mode).unwrap_or_else(|e| panic!("{how}: {e}"));
        assert!(out.iter().all(|&v| v == 42), "{how}: {:?}", &out[..8]);
    }
}

#[test]
fn the_handoff_without_its_ordering_is_still_a_race() {
    for (mode, how) in [(2, "no wait"), (3, "flag before data")] {
        match handoff(mode) {
            Err(TwinError::Fault(f)) => {
                assert!(matches!(f.kind, FaultKind::GmRace { .. }), "{how}: {f}")
            }
            other => panic!("{how}: {other:?}"),
        }
    }
}
