//! Cross-core synchronisation through GM workspaces (IBSet/IBWait, InitDetermineComputeWorkspace
//! with WaitPreBlock/NotifyNextBlock, the GM-workspace SyncAll) as a user sees it on the twin:
//! a correct handoff gives the right data in the right order with no false race, also under
//! injected delays; data read without the wait is a GM race; a wait nobody will satisfy is a
//! deadlock the watchdog reports within its period, naming every stuck block and the API it
//! waits in.

use std::time::{Duration, Instant};

use ascendc_twin::{args, Device, DeviceConfig, FaultKind, GmBuffer, Twin, TwinError};
use twin_tests::kernels;

/// The chains' 8 values before the first step.
const INIT: [i32; 8] = [1, -2, 3, 40, 500, -6000, 7, 0x1234_5678];

/// What the chains compute: `rounds` rounds of every block in order, block b's step being
/// v = v * 3 + b + 1 (wrapping).
fn expected(blocks: u32, rounds: u32) -> Vec<i32> {
    let mut v: Vec<u32> = INIT.iter().map(|&x| x as u32).collect();
    for _ in 0..rounds {
        for b in 0..blocks {
            for x in v.iter_mut() {
                *x = x.wrapping_mul(3).wrapping_add(b + 1);
            }
        }
    }
    v.into_iter().map(|x| x as i32).collect()
}

fn ints(b: &GmBuffer) -> Vec<i32> {
    let mut bytes = vec![0u8; b.len()];
    b.read(0, &mut bytes).unwrap();
    bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A device of `twin`, `data` holding [`INIT`], and a workspace of `work_bytes` filled with
/// `fill`.
fn setup(twin: &Twin, work_bytes: usize, fill: u8) -> (Device, GmBuffer, GmBuffer) {
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let data = dev.alloc(32).unwrap();
    let init: Vec<u8> = INIT.iter().flat_map(|x| x.to_le_bytes()).collect();
    data.write(0, &init).unwrap();
    let work = dev.alloc(work_bytes).unwrap();
    work.fill(0, work_bytes, fill).unwrap();
    (dev, data, work)
}

/// Runs `ib_chain` on `blocks` blocks: the final data, or the error.
fn ib_chain(twin: &Twin, blocks: u32, mode: u32, rounds: u32) -> Result<Vec<i32>, TwinError> {
    // One slot of 32 bytes per block for eventID 0 (IBSet's documented minimum for eventID 0).
    let (dev, data, sync) = setup(twin, blocks as usize * 32, 0);
    // SAFETY: the kernel touches 32 bytes of `data` and one 32-byte slot per block of `sync`,
    // both alive until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::ib_chain,
            blocks,
            &args![data.gm(0), sync.gm(0), mode, rounds],
        )
    }?;
    Ok(ints(&data))
}

/// Runs `seq_chain` on `blocks` blocks, its workspace starting as bytes `fill`.
fn seq_chain(
    twin: &Twin,
    blocks: u32,
    mode: u32,
    rounds: u32,
    fill: u8,
) -> Result<Vec<i32>, TwinError> {
    let (dev, data, work) = setup(twin, blocks as usize * 32, fill);
    // SAFETY: the kernel touches 32 bytes of `data` and GetBlockNum() * 32 bytes of `work`, both
    // alive until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::seq_chain,
            blocks,
            &args![data.gm(0), work.gm(0), mode, rounds],
        )
    }?;
    Ok(ints(&data))
}

fn fault(r: Result<Vec<i32>, TwinError>) -> ascendc_twin::KernelFault {
    match r {
        Err(TwinError::Fault(f)) => f,
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

/// The watchdog's lines of a deadlock, checking it came within its period (with slack for a
/// loaded host).
fn deadlock(period: Duration, run: impl FnOnce() -> Result<Vec<i32>, TwinError>) -> Vec<String> {
    let t0 = Instant::now();
    let f = fault(run());
    let took = t0.elapsed();
    assert!(
        took < 3 * period,
        "the watchdog of {period:?} reported after {took:?}: {f}"
    );
    match f.kind {
        FaultKind::Deadlock { waiters } => waiters,
        k => panic!("expected a deadlock, got {k}"),
    }
}

/// The line of `waiters` about block `b`.
fn line_of(waiters: &[String], b: u32) -> &str {
    waiters
        .iter()
        .find(|w| w.contains(&format!("block {b} ")))
        .unwrap_or_else(|| panic!("no line for block {b} in {waiters:#?}"))
}

#[test]
fn ib_set_and_ib_wait_hand_data_from_block_to_block_in_order() {
    let twin = Twin::new();
    for blocks in [1, 2, 5, 8] {
        for rounds in [1, 3] {
            assert_eq!(
                ib_chain(&twin, blocks, 0, rounds).unwrap(),
                expected(blocks, rounds),
                "{blocks} blocks, {rounds} rounds"
            );
        }
    }
    assert_eq!(twin.checked_launches().races, 8, "the race checker was on");
}

#[test]
fn ib_set_and_ib_wait_keep_their_order_under_injected_delays() {
    let twin = Twin::new();
    twin.set_jitter_us(40);
    for _ in 0..4 {
        assert_eq!(ib_chain(&twin, 6, 0, 2).unwrap(), expected(6, 2));
    }
}

#[test]
fn a_read_without_ib_wait_is_a_race() {
    // Block 1 skips its IBWait but still calls IBSet: block 2 waits for that, and block 0 never
    // reads block 1's flag, so nothing orders block 1's step with block 0's.
    let twin = Twin::new();
    twin.set_watchdog(Some(Duration::from_millis(500)));
    for _ in 0..5 {
        let f = fault(ib_chain(&twin, 4, 1, 1));
        assert!(matches!(f.kind, FaultKind::GmRace { .. }), "{f}");
    }
}

#[test]
fn an_ib_wait_nobody_satisfies_is_a_deadlock_naming_the_waiters() {
    let twin = Twin::new();
    let period = Duration::from_millis(300);
    twin.set_watchdog(Some(period));
    let waiters = deadlock(period, || ib_chain(&twin, 4, 2, 1));
    assert_eq!(waiters.len(), 3, "{waiters:#?}");
    for b in 1..4 {
        let w = line_of(&waiters, b);
        assert!(
            w.contains(&format!("IBWait(blockIdx {}, eventID 0)", b - 1)),
            "{w}"
        );
    }
}

#[test]
fn an_ib_set_whose_previous_set_nobody_took_is_a_deadlock() {
    // IBSet stores 1 into a flag that is 0; IBWait takes it back to 0. A second IBSet before an
    // IBWait took the first waits for that.
    let twin = Twin::new();
    let period = Duration::from_millis(300);
    twin.set_watchdog(Some(period));
    let waiters = deadlock(period, || ib_chain(&twin, 1, 3, 1));
    assert_eq!(waiters.len(), 1, "{waiters:#?}");
    let w = line_of(&waiters, 0);
    assert!(w.contains("IBSet(blockIdx 0, eventID 0)"), "{w}");
}

#[test]
fn ib_set_arguments_outside_the_documented_ranges_are_named() {
    let twin = Twin::new();
    let f = fault(ib_chain(&twin, 2, 4, 1));
    assert_eq!(f.op, "IBSet/IBWait", "{f}");
    assert!(
        matches!(&f.kind, FaultKind::Misuse { reason, value: 2, limit: 2 }
            if reason.contains("blockIdx must be in [0, GetBlockNum() - 1]")),
        "{f}"
    );
    // eventID 1's flags start at GetBlockNum() * 32 bytes: past this workspace.
    let f = fault(ib_chain(&twin, 2, 5, 1));
    assert!(f.op == "IBSet" || f.op == "IBWait", "{f}");
    assert!(matches!(f.kind, FaultKind::GmOutOfBounds { .. }), "{f}");
}

#[test]
fn wait_pre_block_and_notify_next_block_run_the_blocks_in_order() {
    let twin = Twin::new();
    // The workspace needs no zeroing (InitDetermineComputeWorkspace's docs).
    for (blocks, fill) in [(1, 0), (2, 0x5a), (5, 0), (8, 0xff)] {
        for rounds in [1, 3] {
            assert_eq!(
                seq_chain(&twin, blocks, 0, rounds, fill).unwrap(),
                expected(blocks, rounds),
                "{blocks} blocks, {rounds} rounds"
            );
        }
    }
    assert_eq!(twin.checked_launches().races, 8, "the race checker was on");
    twin.set_jitter_us(40);
    for _ in 0..4 {
        assert_eq!(
            seq_chain(&twin, 6, 0, 2, 0).unwrap(),
            expected(6, 2),
            "with jitter"
        );
    }
}

#[test]
fn a_step_without_wait_pre_block_is_a_race() {
    // The last block steps without WaitPreBlock (and without NotifyNextBlock, which would have
    // nobody to wait for it): nothing orders its accesses of `data` with the other blocks'.
    // (A block that skipped only the wait would still notify early, out of turn: block 0's
    // InitDetermineComputeWorkspace may erase that and hang the rest, or a block polling the
    // workspace may take its flag store as ordering, the checker's flags being 32-byte cells.)
    let twin = Twin::new();
    twin.set_watchdog(Some(Duration::from_millis(500)));
    for _ in 0..5 {
        let f = fault(seq_chain(&twin, 4, 1, 1, 0));
        assert!(matches!(f.kind, FaultKind::GmRace { .. }), "{f}");
    }
}

#[test]
fn a_missing_notify_next_block_is_a_deadlock_naming_the_waiters() {
    let twin = Twin::new();
    let period = Duration::from_millis(300);
    twin.set_watchdog(Some(period));
    let waiters = deadlock(period, || seq_chain(&twin, 4, 2, 1, 0));
    assert_eq!(waiters.len(), 2, "{waiters:#?}");
    let w = line_of(&waiters, 2);
    assert!(
        w.contains("WaitPreBlock") && w.contains("block 1's NotifyNextBlock"),
        "{w}"
    );
    let w = line_of(&waiters, 3);
    assert!(
        w.contains("WaitPreBlock") && w.contains("block 2's NotifyNextBlock"),
        "{w}"
    );
}

#[test]
fn a_block_that_skips_the_gm_sync_all_is_a_deadlock_naming_the_waiters() {
    let twin = Twin::new();
    let period = Duration::from_millis(300);
    twin.set_watchdog(Some(period));
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let work = dev.alloc(4 * 32).unwrap();
    work.fill(0, 4 * 32, 0).unwrap();
    let waiters = deadlock(period, || {
        // SAFETY: the kernel touches GetBlockNum() * 32 bytes of `work`, alive until the launch
        // returns.
        unsafe { dev.launch_kernel(&kernels::sync_all_gm_skip, 4, &args![work.gm(0), 2u32]) }
            .map(|()| Vec::new())
    });
    assert_eq!(waiters.len(), 3, "{waiters:#?}");
    for b in [0, 1, 3] {
        let w = line_of(&waiters, b);
        assert!(w.contains("SyncAll(gmWorkspace)"), "{w}");
    }
}
