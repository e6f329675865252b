//! Waiting costs no CPU: blocks polling an unchanged flag park until it is written; and the
//! watchdog reports a launch whose every block is parked forever. One test function, so that no
//! other test of this binary runs beside it and disturbs the CPU-time measurement or the
//! watchdog's "everyone is parked" view.

use twin_tests::util as common;

use std::time::{Duration, Instant};

use ascendc_twin::{FaultKind, TwinError};
use common::*;
use twin_tests::args::*;

#[test]
fn parked_polls_are_cheap_and_deadlocks_are_reported() {
    let dev = device(0);
    let flag = dev.alloc(64).unwrap();
    let out = dev.alloc(64 * 32).unwrap();
    let blocks = 16u32;
    let mut a = AivTwinTestArgs {
        mode: AIV_TT_POLL,
        src: gm(&flag, 0),
        dst: gm(&out, 0),
        expected: 42,
        deadline_cycles: 50 * 10_000_000, // 10 s at 50 MHz
        ..Default::default()
    };
    let (cpu, wall) = std::thread::scope(|s| {
        let h = s.spawn(|| selftest(&dev, a, blocks));
        // Let the blocks reach their parked state, then measure a quiet window.
        std::thread::sleep(Duration::from_millis(200));
        let c0 = cpu_seconds();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(600));
        let cpu = cpu_seconds() - c0;
        let wall = t0.elapsed().as_secs_f64();
        flag.write(0, &42i32.to_le_bytes()).unwrap();
        h.join().unwrap().unwrap();
        (cpu, wall)
    });
    // 16 spinning blocks on 2 cores would burn ~2 CPU-seconds per wall second; parked ones burn
    // next to nothing. Loose bound: a tenth of one core.
    assert!(
        cpu < 0.1 * wall,
        "parked blocks used {cpu:.3} s CPU in {wall:.3} s"
    );
    let got = read_all(&out);
    for b in 0..blocks as usize {
        let v = i32::from_le_bytes(got[b * 32..b * 32 + 4].try_into().unwrap());
        assert_eq!(v, 42, "block {b} saw {v}");
    }

    // The same with a flag that another block sets later: block 0 waits for the host, then
    // relays; blocks 1.. wait for block 0. Every block is parked meanwhile.
    let out2 = dev.alloc(8192).unwrap();
    // Block 0 relays through a flag cell inside the output buffer: tell the race checker.
    out2.mark_sync(4096, 32).unwrap();
    let relay_flag = dev.alloc(64).unwrap();
    let r = AivTwinTestArgs {
        mode: AIV_TT_RELAY,
        src: gm(&relay_flag, 0),
        dst: gm(&out2, 0),
        expected: 7,
        deadline_cycles: 50 * 10_000_000,
        ..Default::default()
    };
    let (cpu, wall) = std::thread::scope(|s| {
        let h = s.spawn(|| selftest(&dev, r, blocks));
        std::thread::sleep(Duration::from_millis(200));
        let c0 = cpu_seconds();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(400));
        let cpu = cpu_seconds() - c0;
        let wall = t0.elapsed().as_secs_f64();
        relay_flag.write(0, &7i32.to_le_bytes()).unwrap();
        h.join().unwrap().unwrap();
        (cpu, wall)
    });
    assert!(
        cpu < 0.1 * wall,
        "relay: parked blocks used {cpu:.3} s CPU in {wall:.3} s"
    );
    let got = read_all(&out2);
    for b in 1..blocks as usize {
        let v = i32::from_le_bytes(got[b * 32..b * 32 + 4].try_into().unwrap());
        assert_eq!(v, 7, "relay: block {b} saw {v}");
    }

    // Nobody will ever write the flag: the watchdog reports a deadlock, naming every block, within
    // its period, although a host thread keeps writing the flag's neighbour cell meanwhile
    // (progress only counts when it unsticks something).
    let period = Duration::from_millis(300);
    dev.twin().set_watchdog(Some(period));
    a.expected = 1000;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0u8;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                flag.write(32, &[i; 32]).unwrap();
                i = i.wrapping_add(1);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let r = selftest(&dev, a, 4);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    });
    let took = t0.elapsed();
    match r {
        Err(TwinError::Fault(f)) => match &f.kind {
            FaultKind::Deadlock { waiters } => {
                assert_eq!(waiters.len(), 4, "{f}");
                for b in 0..4 {
                    assert!(
                        waiters.iter().any(|w| w.contains(&format!("block {b} "))
                            && w.contains("parked on a poll of GM")),
                        "{f}"
                    );
                }
                assert!(f.to_string().contains("deadlock"), "{f}");
            }
            k => panic!("unexpected {k:?}"),
        },
        other => panic!("expected a deadlock fault, got {other:?}"),
    }
    assert!(
        took >= period && took < 2 * period,
        "watchdog of {period:?} reported after {took:?}"
    );
}
