//! A launch of one block from a host task (what every stream does) runs that block inline, on the
//! task's worker, driven by the task itself instead of through the run queue. What users see must
//! not change: a stack overflow ends the block and not the stream, a block that waits leaves its
//! worker to the others, a stream launching back to back still lets the worker's other tasks
//! run, an abort ends it, and the watchdog names it as parked on its poll.

use twin_tests::util as common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use ascendc_twin::{Device, DeviceConfig, FaultKind, GmBuffer, Twin, TwinConfig, TwinError};
use common::*;
use twin_tests::args::*;

/// Runs `f` as a host task of `dev`'s twin on worker `affinity` and returns a receiver for its
/// result (nothing arrives if the task dies).
fn on_host_task<T: Send + 'static>(
    dev: &Device,
    affinity: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    dev.twin().spawn_host_task(
        affinity,
        Box::new(move || {
            let _ = tx.send(f());
        }),
    );
    rx
}

/// Long enough for anything here to finish on a loaded CI machine, short enough to fail a hang.
const PATIENCE: Duration = Duration::from_secs(60);

/// A one-block launch, from a host task on worker `affinity`, that waits (up to 30 s) for the
/// flag cell it returns to hold 42, then writes what it saw to the first bytes of the buffer it
/// returns; and a receiver for the launch's result.
fn waiting_launch(
    dev: &Device,
    affinity: usize,
) -> (GmBuffer, GmBuffer, mpsc::Receiver<Result<(), TwinError>>) {
    let flag = dev.alloc_sync(64).unwrap();
    let out = dev.alloc(64).unwrap();
    let a = AivTwinTestArgs {
        mode: AIV_TT_POLL,
        src: flag.addr() as u64,
        dst: out.addr() as u64,
        expected: 42,
        deadline_cycles: 50 * 30_000_000, // 30 s at 50 MHz
        ..Default::default()
    };
    let d = dev.clone();
    let rx = on_host_task(dev, affinity, move || selftest(&d, a, 1));
    (flag, out, rx)
}

#[test]
fn a_stack_overflow_in_a_one_block_launch_from_a_host_task_ends_the_block_not_the_task() {
    let dev = device(3);
    let dst = dev.alloc(64).unwrap();
    let d = dev.clone();
    let out = dst.addr() as u64;
    let rx = on_host_task(&dev, 0, move || {
        let mut a = AivTwinTestArgs {
            mode: AIV_TT_STACK_OVERFLOW,
            dst: out,
            len: 1 << 20, // 1 Mi levels of 4 KB frames: far beyond any block stack
            ..Default::default()
        };
        let deep = selftest(&d, a, 1);
        // The same task goes on and launches again, on the same worker's pooled stacks.
        a.len = 16;
        (deep, selftest(&d, a, 1))
    });
    let (deep, shallow) = rx.recv_timeout(PATIENCE).expect("the host task died");
    let f = fault(deep);
    assert_eq!(
        (f.kernel.as_str(), f.rank, f.block),
        ("aiv_twin_selftest", 3, 0)
    );
    assert_eq!(f.kind, FaultKind::StackOverflow, "{f}");
    shallow.unwrap();
    assert_eq!(read_all(&dst)[0], (16 * 17 / 2) as u8);
}

#[test]
fn a_one_block_launch_waiting_in_a_host_task_leaves_the_worker_to_the_others() {
    // Two host tasks on one worker: the first launches a block that waits for a flag, the second
    // a block that sets it. The second runs only if the first's block gives the worker up while
    // it waits (parked or yielding), as a block of the run queue does.
    let dev = device(0);
    let value = dev.alloc(64).unwrap();
    value.write(0, &42i32.to_le_bytes()).unwrap();
    let (flag, out, waiter) = waiting_launch(&dev, 0);
    let setter = {
        let d = dev.clone();
        let a = copy_args(value.addr() as u64, flag.addr() as u64);
        on_host_task(&dev, 0, move || selftest(&d, a, 1))
    };
    setter.recv_timeout(PATIENCE).expect("setter").unwrap();
    waiter.recv_timeout(PATIENCE).expect("waiter").unwrap();
    assert_eq!(
        i32::from_le_bytes(read_all(&out)[..4].try_into().unwrap()),
        42
    );
}

/// A copy of 32 bytes from `src` to `dst` on one block.
fn copy_args(src: u64, dst: u64) -> AivTwinTestArgs {
    AivTwinTestArgs {
        mode: AIV_TT_COPY,
        src,
        dst,
        len: 32,
        ..Default::default()
    }
}

#[test]
fn a_one_block_launch_from_a_host_task_runs_on_that_tasks_worker() {
    // Rank 0's one-block launches go to worker 0 when made from a plain thread. Worker 0 is kept
    // busy here (a host task blocks its thread until the end), so a launch from a host task on
    // worker 1 finishes only if it runs there, inline.
    let twin = Twin::with_config(TwinConfig {
        workers: 2,
        ..TwinConfig::default()
    });
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let src = dev.alloc(64).unwrap();
    src.write(0, &[7; 32]).unwrap();
    let dst = dev.alloc(64).unwrap();
    let (release, held) = mpsc::channel::<()>();
    let holder = on_host_task(&dev, 0, move || held.recv().is_ok());
    let d = dev.clone();
    let a = copy_args(src.addr() as u64, dst.addr() as u64);
    let launched = on_host_task(&dev, 1, move || selftest(&d, a, 1));
    let r = launched.recv_timeout(PATIENCE);
    release.send(()).unwrap();
    assert!(holder.recv_timeout(PATIENCE).unwrap());
    r.expect("the launch waited for the busy worker").unwrap();
    assert_eq!(&read_all(&dst)[..32], &[7; 32]);
}

#[test]
fn a_stream_launching_back_to_back_lets_the_other_tasks_of_its_worker_run() {
    // Host task A makes one-block launches that never wait (a short copy each), after queueing
    // host task B on its own worker. Queued, each of A's blocks ran after B; inline, A must
    // still let B run first.
    let dev = device(0);
    let src = dev.alloc(64).unwrap();
    let dst = dev.alloc(64).unwrap();
    let a = copy_args(src.addr() as u64, dst.addr() as u64);
    let d = dev.clone();
    let rx = on_host_task(&dev, 0, move || {
        let b_ran = Arc::new(AtomicBool::new(false));
        let flag = b_ran.clone();
        d.twin()
            .spawn_host_task(0, Box::new(move || flag.store(true, Ordering::SeqCst)));
        let mut launches = 0;
        while !b_ran.load(Ordering::SeqCst) && launches < 200 {
            selftest(&d, a, 1).unwrap();
            launches += 1;
        }
        launches
    });
    let launches = rx.recv_timeout(PATIENCE).expect("the host task died");
    assert_eq!(
        launches, 1,
        "task B ran only after {launches} launches of task A"
    );
}

#[test]
fn aborting_the_twin_ends_a_one_block_launch_waiting_in_a_host_task() {
    let dev = device(0);
    let (_flag, _out, rx) = waiting_launch(&dev, 0);
    // Let the block start waiting (whether it is parked or polling then, the abort must end it).
    std::thread::sleep(Duration::from_millis(300));
    dev.twin().abort("the test stops the twin");
    let f = fault(rx.recv_timeout(PATIENCE).expect("the host task died"));
    assert!(matches!(f.kind, FaultKind::PeerAborted { .. }), "{f}");
    assert!(f.to_string().contains("the test stops the twin"), "{f}");
}

#[test]
fn a_one_block_launch_deadlocked_in_a_host_task_is_reported_parked_on_its_poll() {
    let dev = device(0);
    let period = Duration::from_millis(300);
    dev.twin().set_watchdog(Some(period));
    let (_flag, _out, rx) = waiting_launch(&dev, 1);
    let f = fault(rx.recv_timeout(PATIENCE).expect("the host task died"));
    match &f.kind {
        FaultKind::Deadlock { waiters } => {
            assert_eq!(waiters.len(), 1, "{f}");
            assert!(
                waiters[0].contains("block 0 ") && waiters[0].contains("parked on a poll of GM"),
                "{f}"
            );
        }
        k => panic!("expected a deadlock, got {k:?}"),
    }
}
