//! Fair scheduling and livelock detection (issue 11, section 3): blocks that poll several flags
//! in turn still give up their worker, so more of them than host CPUs all finish; a kernel that
//! spins forever is reported by name within the watchdog period.

use twin_tests::util as common;

use std::time::{Duration, Instant};

use ascendc_twin::{FaultKind, TwinError};
use common::*;
use twin_tests::args::*;

#[test]
fn blocks_polling_two_flags_in_turn_all_finish() {
    let dev = device(0);
    let workers = dev.twin().workers() as u32;
    let blocks = 4 * workers.max(2); // more spinning blocks than worker threads
    let flags = dev.alloc_sync(64).unwrap();
    let out = dev.alloc(32 * blocks as usize).unwrap();
    let a = AivTwinTestArgs {
        mode: AIV_TT_POLL_PAIR,
        src: gm(&flags, 0),
        dst: gm(&out, 0),
        expected: 5,
        deadline_cycles: 50 * 20_000_000, // 20 s
        ..Default::default()
    };
    // The flags are set by another kernel, which needs a worker the spinning blocks hold.
    let values = dev.alloc(64).unwrap();
    let mut v = [0u8; 64];
    v[..4].copy_from_slice(&5i32.to_le_bytes());
    v[32..36].copy_from_slice(&6i32.to_le_bytes());
    values.write(0, &v).unwrap();
    let setter = AivTwinTestArgs {
        mode: AIV_TT_COPY,
        src: gm(&values, 0),
        dst: gm(&flags, 0),
        len: 64,
        ..Default::default()
    };
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let h = s.spawn(|| selftest(&dev, a, blocks));
        std::thread::sleep(Duration::from_millis(100));
        selftest(&dev, setter, 1).unwrap();
        h.join().unwrap().unwrap();
    });
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    let got = read_all(&out);
    for b in 0..blocks as usize {
        let lane = |i: usize| {
            i32::from_le_bytes(got[b * 32 + 4 * i..b * 32 + 4 * i + 4].try_into().unwrap())
        };
        assert_eq!((lane(0), lane(1)), (5, 6), "block {b}");
    }
}

#[test]
fn a_kernel_that_spins_forever_is_reported_within_the_period() {
    let dev = device(3);
    let period = Duration::from_millis(300);
    dev.twin().set_watchdog(Some(period));
    let blocks = 2 * dev.twin().workers() as u32 + 1;
    let flags = dev.alloc_sync(64).unwrap();
    let out = dev.alloc(32 * blocks as usize).unwrap();
    let a = AivTwinTestArgs {
        mode: AIV_TT_POLL_PAIR,
        src: gm(&flags, 0),
        dst: gm(&out, 0),
        expected: 1,
        deadline_cycles: 50 * 60_000_000, // 60 s: the watchdog must come first
        ..Default::default()
    };
    let t0 = Instant::now();
    let r = selftest(&dev, a, blocks);
    let took = t0.elapsed();
    match r {
        Err(TwinError::Fault(f)) => match &f.kind {
            FaultKind::Livelock { blocks: lines } => {
                assert_eq!(lines.len(), blocks as usize, "{f}");
                let a0 = format!("{:#x}", gm(&flags, 0));
                let a1 = format!("{:#x}", gm(&flags, 32));
                for l in lines {
                    assert!(
                        l.contains("rank 3 block") && l.contains("aiv_twin_selftest"),
                        "{l}"
                    );
                    assert!(l.contains(&a0) && l.contains(&a1), "both flags named: {l}");
                }
            }
            k => panic!("expected a livelock, got {k:?}"),
        },
        other => panic!("expected a livelock fault, got {other:?}"),
    }
    assert!(
        took < 2 * period,
        "reported after {took:?} (period {period:?})"
    );
}

#[test]
fn a_wait_reaches_its_deadline_while_a_busy_block_holds_its_worker() {
    // Two one-block launches on the same worker (a launch of one block goes to worker
    // rank % workers): one polls a flag nobody sets, with a 50 ms deadline; the other computes
    // for 1 s without touching GM (no poll, so it never parks or yields on its own). The wait
    // must still end near its deadline: a block parked past its deadline gets its worker back
    // from a busy block at the end of the busy block's time slice. With one worker the busy
    // block itself must notice; with more, an idle worker can too.
    for workers in [1, 2] {
        let twin = ascendc_twin::Twin::with_config(ascendc_twin::TwinConfig {
            workers,
            ..ascendc_twin::TwinConfig::default()
        });
        let cfg = ascendc_twin::DeviceConfig::default;
        let waiter = twin.device(0, cfg()).unwrap();
        let busy = twin.device(workers as u32, cfg()).unwrap();
        let flag = waiter.alloc_sync(64).unwrap();
        let out = waiter.alloc(64).unwrap();
        let wait = AivTwinTestArgs {
            mode: AIV_TT_POLL,
            src: gm(&flag, 0),
            dst: gm(&out, 0),
            expected: 1,
            deadline_cycles: 50 * 50_000, // 50 ms
            ..Default::default()
        };
        let out2 = busy.alloc(64).unwrap();
        let spin = AivTwinTestArgs {
            mode: AIV_TT_SPIN,
            dst: gm(&out2, 0),
            deadline_cycles: 50 * 1_000_000, // 1 s
            ..Default::default()
        };
        std::thread::scope(|s| {
            let h = s.spawn(|| selftest(&busy, spin, 1));
            std::thread::sleep(Duration::from_millis(100)); // the busy block holds the worker
            let t0 = Instant::now();
            selftest(&waiter, wait, 1).unwrap();
            let took = t0.elapsed();
            h.join().unwrap().unwrap();
            assert!(
                took < Duration::from_millis(500),
                "{workers} workers: the 50 ms wait took {took:?} beside a busy block"
            );
        });
        let seen = i32::from_le_bytes(read_all(&out)[..4].try_into().unwrap());
        assert_eq!(seen, 0, "the wait saw the flag it timed out on");
        let done = i32::from_le_bytes(read_all(&out2)[..4].try_into().unwrap());
        assert_eq!(done, 1, "the busy block finished");
    }
}
