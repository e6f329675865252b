//! GroupBarrier on AIV blocks as a user sees it on the twin: the Wait group sees what the Arrive
//! group wrote before arriving, round after round, with no false race; data read without Wait,
//! or overwritten by the next round while waiters may still read it, is a GM race; a Wait no
//! Arrive satisfies is a deadlock the watchdog names.

use std::time::{Duration, Instant};

use ascendc_twin::{args, DeviceConfig, FaultKind, Twin, TwinError};
use twin_tests::kernels;

/// Runs `group_chain`: the sums each waiter saw, by round and waiter.
fn run(twin: &Twin, arrive: u32, wait: u32, mode: u32, rounds: u32) -> Result<Vec<i32>, TwinError> {
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let data = dev.alloc((rounds * arrive) as usize * 32).unwrap();
    let bar = dev.alloc(arrive.max(wait) as usize * 512).unwrap();
    bar.fill(0, bar.len(), 0).unwrap();
    let out = dev.alloc((rounds * wait) as usize * 32).unwrap();
    // SAFETY: the kernel touches `data` (a slot per arriver and round), the barrier's
    // max(arrive, wait) * 512 bytes of `bar`, and one int32 per waiter and round of `out`, all
    // alive until the launch returns.
    unsafe {
        dev.launch_kernel(
            &kernels::group_chain,
            arrive + wait,
            &args![data.gm(0), bar.gm(0), out.gm(0), arrive, wait, mode, rounds],
        )
    }?;
    let mut b = vec![0u8; out.len()];
    out.read(0, &mut b).unwrap();
    Ok(b.chunks(32)
        .map(|c| i32::from_le_bytes(c[..4].try_into().unwrap()))
        .collect())
}

fn fault(r: Result<Vec<i32>, TwinError>) -> ascendc_twin::KernelFault {
    match r {
        Err(TwinError::Fault(f)) => f,
        other => panic!("expected a kernel fault, got {other:?}"),
    }
}

#[test]
fn the_wait_group_sees_what_the_arrive_group_wrote_round_after_round() {
    let twin = Twin::new();
    for (arrive, wait) in [(1, 1), (2, 6), (5, 3)] {
        for jitter in [0, 40] {
            twin.set_jitter_us(jitter);
            let rounds = 3;
            let got = run(&twin, arrive, wait, 0, rounds).unwrap();
            let want: Vec<i32> = (0..rounds)
                .flat_map(|r| {
                    let s: i32 = (0..arrive).map(|k| ((r + 1) * 100 + k) as i32).sum();
                    std::iter::repeat_n(s, wait as usize)
                })
                .collect();
            assert_eq!(got, want, "{arrive} arrive, {wait} wait, jitter {jitter}");
        }
    }
}

#[test]
fn data_read_without_wait_or_rewritten_next_round_is_a_race() {
    let twin = Twin::new();
    twin.set_watchdog(Some(Duration::from_millis(500)));
    for (mode, rounds) in [(1, 1), (2, 2)] {
        for _ in 0..3 {
            let f = fault(run(&twin, 2, 3, mode, rounds));
            assert!(
                matches!(f.kind, FaultKind::GmRace { .. }),
                "mode {mode}: {f}"
            );
        }
    }
}

#[test]
fn a_wait_no_arrive_satisfies_is_a_deadlock_naming_the_waiters() {
    let twin = Twin::new();
    let period = Duration::from_millis(300);
    twin.set_watchdog(Some(period));
    let t0 = Instant::now();
    let f = fault(run(&twin, 2, 3, 3, 1));
    assert!(t0.elapsed() < 3 * period, "{:?}: {f}", t0.elapsed());
    let FaultKind::Deadlock { waiters } = &f.kind else {
        panic!("expected a deadlock, got {f}");
    };
    assert_eq!(waiters.len(), 3, "{waiters:#?}");
    for j in 0..3 {
        let w = waiters
            .iter()
            .find(|w| w.contains(&format!("block {} ", 2 + j)))
            .unwrap_or_else(|| panic!("{waiters:#?}"));
        assert!(
            w.contains(&format!("GroupBarrier::Wait({j})")) && w.contains("to reach 2"),
            "{w}"
        );
    }
}
