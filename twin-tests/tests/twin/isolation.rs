//! Twins are isolated: knobs, memory and the watchdog of one twin do not reach another twin in
//! the same process (issue 10, item 15). The tests of this file run in parallel on purpose.

use twin_tests::util as common;

use std::time::{Duration, Instant};

use ascendc_twin::{DeviceConfig, FaultKind, Twin, TwinError};
use common::*;
use twin_tests::args::*;

fn hazard_kernel(dev: &ascendc_twin::Device) -> Result<(), TwinError> {
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let mut a = AivTwinTestArgs {
        mode: AIV_TT_HAZ_RAW_DMA,
        ..Default::default()
    };
    a.src = gm(&src, 0);
    a.dst = gm(&dst, 0);
    selftest(dev, a, 1)
}

#[test]
fn a_knob_set_on_one_twin_leaves_the_others_alone() {
    let quiet = device(0);
    quiet.twin().set_hazard_check(false);
    let strict = device(0);
    for _ in 0..20 {
        std::thread::scope(|s| {
            let q = s.spawn(|| hazard_kernel(&quiet));
            let st = s.spawn(|| hazard_kernel(&strict));
            assert!(q.join().unwrap().is_ok(), "checker off on this twin");
            match st.join().unwrap() {
                Err(TwinError::Fault(f)) => {
                    assert!(matches!(f.kind, FaultKind::PipeHazard { .. }), "{f}")
                }
                other => panic!("the other twin must still check: {other:?}"),
            }
        });
    }
}

#[test]
fn a_deadlock_in_one_twin_is_reported_while_another_twin_keeps_working() {
    let stuck = device(0);
    let period = Duration::from_millis(300);
    stuck.twin().set_watchdog(Some(period));
    let flag = stuck.alloc(64).unwrap();
    let out = stuck.alloc(64 * 32).unwrap();
    let a = AivTwinTestArgs {
        mode: AIV_TT_POLL,
        src: gm(&flag, 0),
        dst: gm(&out, 0),
        expected: 1,
        deadline_cycles: 50 * 30_000_000, // 30 s: the watchdog must come first
        ..Default::default()
    };
    let busy = device(1);
    let src = busy.alloc(1 << 20).unwrap();
    let dst = busy.alloc(1 << 20).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut c = AivTwinTestArgs {
                    mode: AIV_TT_COPY,
                    src: gm(&src, 0),
                    dst: gm(&dst, 0),
                    len: 64 * 1024,
                    ..Default::default()
                };
                c.ub_off = 0;
                selftest(&busy, c, 1).unwrap();
            }
        });
        let r = selftest(&stuck, a, 2);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    });
    let took = t0.elapsed();
    match r {
        Err(TwinError::Fault(f)) => assert!(matches!(f.kind, FaultKind::Deadlock { .. }), "{f}"),
        other => panic!("expected a deadlock report, got {other:?}"),
    }
    assert!(
        took < 2 * period + Duration::from_millis(200),
        "reported after {took:?}"
    );
}

#[test]
fn a_kernel_cannot_reach_another_twins_memory() {
    let ours = device(0);
    let theirs = device(0);
    let src = ours.alloc(4096).unwrap();
    let foreign = theirs.alloc(4096).unwrap();
    foreign.fill(0, 4096, 0x5a).unwrap();
    let a = AivTwinTestArgs {
        mode: AIV_TT_COPY,
        src: gm(&src, 0),
        dst: gm(&foreign, 0),
        len: 64,
        ..Default::default()
    };
    match selftest(&ours, a, 1) {
        Err(TwinError::Fault(f)) => {
            assert!(matches!(f.kind, FaultKind::GmOutOfBounds { .. }), "{f}")
        }
        other => panic!("expected an out-of-bounds fault, got {other:?}"),
    }
    assert!(read_all(&foreign).iter().all(|&b| b == 0x5a));
}

#[test]
fn a_twin_is_freed_with_its_last_handle() {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let buf = dev.alloc(1 << 20).unwrap();
    assert_eq!(twin.memory_usage(), (1, 1 << 20));
    drop(buf);
    assert_eq!(twin.memory_usage(), (0, 0));
    let weak_threads = twin.workers();
    assert!(weak_threads >= 1);
    drop(dev);
    drop(twin); // joins the twin's worker threads; a leak here would show in aiv-comm's tests/leaks.rs
}

#[test]
fn a_dropped_world_leaves_no_device_memory_behind() {
    use aiv_comm::{AllReduceAlgo, Config, DataType, ReduceOp, World};
    let w = World::sim_with(
        3,
        Config {
            buffer_bytes: Some(64 * 1024),
            cores: 8,
            ..Config::default()
        },
    )
    .unwrap();
    let twin = w.twin().unwrap().clone();
    w.run(|c| {
        let x = c.alloc_from(&[1.0f32; 256]).unwrap();
        c.all_reduce_with(&x, &x, 256, DataType::F32, ReduceOp::Sum, AllReduceAlgo::Hd)
            .unwrap();
        c.create_stream("extra").unwrap();
        // No synchronize: the world goes with work queued.
    });
    assert!(twin.memory_usage().0 > 0);
    drop(w);
    assert_eq!(
        twin.memory_usage(),
        (0, 0),
        "HCCL buffers, sync areas, stream slots"
    );
}

#[test]
fn a_launch_starved_of_cores_is_named_in_the_stall_report() {
    // Two cores, both held by a launch whose blocks poll a flag nobody writes; a second launch
    // waits for a core. The watchdog's report names the waiting launch beside the pollers.
    let dev = Twin::new()
        .device(
            0,
            DeviceConfig {
                cores: 2,
                ..DeviceConfig::default()
            },
        )
        .unwrap();
    dev.twin().set_watchdog(Some(Duration::from_millis(300)));
    let flag = dev.alloc_sync(64).unwrap();
    let out = dev.alloc(64 * 32).unwrap();
    let poll = AivTwinTestArgs {
        mode: AIV_TT_POLL,
        src: gm(&flag, 0),
        dst: gm(&out, 0),
        expected: 1,
        deadline_cycles: 50 * 30_000_000,
        ..Default::default()
    };
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let copy = AivTwinTestArgs {
        mode: AIV_TT_COPY,
        src: gm(&src, 0),
        dst: gm(&dst, 0),
        len: 64,
        ..Default::default()
    };
    let (stuck, waiting) = std::thread::scope(|s| {
        let a = s.spawn(|| selftest(&dev, poll, 2));
        std::thread::sleep(Duration::from_millis(50));
        let b = s.spawn(|| selftest(&dev, copy, 1));
        (a.join().unwrap(), b.join().unwrap())
    });
    match stuck {
        Err(TwinError::Fault(f)) => match &f.kind {
            FaultKind::Deadlock { waiters } => assert!(
                waiters.iter().any(|w| w.contains("waits for 1 free cores")),
                "{f}"
            ),
            k => panic!("{k:?}"),
        },
        other => panic!("expected a deadlock report, got {other:?}"),
    }
    waiting.unwrap(); // it ran once the stuck launch had ended
}
