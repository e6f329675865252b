//! Soft-sync primitives across ranks and blocks (kernels/sync_selftest.cpp), with random delays
//! injected in the twin, thousands of rounds, and tags that cross the signed 64-bit boundary; and
//! waits that can never be satisfied, which must come back as WaitTimeout errors naming who waited
//! for what.

use std::time::{Duration, Instant};

use aiv_comm::ffi;
use aiv_comm::{
    BufferAccess, Communicator, Config, DataType, DeviceBuffer, Error, ReduceOp, World,
};
use twin_tests::args::{self, AivSyncTestArgs};
use twin_tests::kernels;

fn world(ranks: usize, timeout: Duration) -> World {
    let w = World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(64 * 1024),
            exec_timeout: Some(timeout),
            cores: 32,
            ..Config::default()
        },
    )
    .unwrap();
    // Random delays before GM accesses shake out ordering bugs a lucky schedule would hide.
    w.twin().unwrap().set_jitter_us(20);
    w
}

/// Launches the sync self-test on `blocks` blocks with `rounds` tags (offset by `tag_base`);
/// returns the result buffer.
fn launch_at(
    comm: &Communicator,
    mode: u32,
    blocks: u32,
    rounds: u32,
    wrong_tag: bool,
    tag_base: i64,
) -> aiv_comm::Result<DeviceBuffer> {
    let result = comm.alloc(blocks as usize * 32)?;
    let addr = result.addr();
    // SAFETY: aiv_sync_selftest takes an AivSyncTestArgs; it writes `result` (claimed) and
    // otherwise touches the world's HCCL buffers and sync areas.
    unsafe {
        comm.launch_with_tags(
            &kernels::aiv_sync_selftest,
            blocks,
            rounds as i64,
            &[BufferAccess::Write(&result)],
            move |c| AivSyncTestArgs {
                comm: c,
                result: addr,
                tag_base,
                mode,
                rounds,
                wrong_tag: wrong_tag as u32,
                bytes: 4096,
            },
        )?;
    }
    Ok(result)
}

fn launch(
    comm: &Communicator,
    mode: u32,
    blocks: u32,
    rounds: u32,
    wrong_tag: bool,
) -> aiv_comm::Result<DeviceBuffer> {
    launch_at(comm, mode, blocks, rounds, wrong_tag, 0)
}

/// Mismatches reported by each block (lane 0 of its cell).
fn mismatches(result: &DeviceBuffer) -> Vec<i32> {
    let v: Vec<i32> = result.to_vec().unwrap();
    v.chunks(8).map(|c| c[0]).collect()
}

fn run_rounds(
    ranks: usize,
    mode: u32,
    blocks: u32,
    launches: usize,
    rounds: u32,
    tag_base: i64,
) -> Vec<i64> {
    let w = world(ranks, Duration::from_secs(60));
    w.run(|comm| {
        for _ in 0..launches {
            let r = launch_at(comm, mode, blocks, rounds, false, tag_base).unwrap();
            comm.synchronize().unwrap();
            let bad = mismatches(&r);
            assert!(
                bad.iter().all(|&b| b == 0),
                "rank {} mismatches {bad:?}",
                comm.rank()
            );
        }
        comm.tags_issued()
    })
}

#[test]
fn ping_pong_thousands_of_rounds_across_blocks_with_jitter() {
    // 2 ranks x 8 blocks, 100 launches x 30 rounds = 3000 round trips per block.
    let issued = run_rounds(2, args::AIV_ST_PINGPONG, 8, 100, 30, 0);
    assert_eq!(issued, vec![3000, 3000]);
}

#[test]
fn tags_cross_the_signed_64_bit_boundary() {
    // Each launch's tags run from near i64::MAX past it to i64::MIN: the wrap-safe comparison
    // must order them (a plain `>=` would hang the first wait after the boundary).
    run_rounds(2, args::AIV_ST_PINGPONG, 4, 3, 40, i64::MAX - 60);
    run_rounds(5, args::AIV_ST_ONE2N, 2, 3, 40, i64::MAX - 60);
    run_rounds(2, args::AIV_ST_BARRIER, 8, 3, 40, i64::MAX - 60);
}

#[test]
fn record_1vn_observed_by_15_ranks() {
    run_rounds(16, args::AIV_ST_ONE2N, 2, 24, 5, 0);
}

#[test]
fn counting_pair_with_16_writers() {
    // 17 ranks: ranks 1..=16 each write from one block, rank 0 counts to 16.
    run_rounds(17, args::AIV_ST_COUNT, 1, 24, 5, 0);
    // And many blocks per writer rank: 3 ranks x 8 blocks = 16 writers.
    run_rounds(3, args::AIV_ST_COUNT, 8, 10, 20, 0);
}

#[test]
fn barrier_all_blocks_of_a_rank() {
    run_rounds(2, args::AIV_ST_BARRIER, 16, 10, 50, 0);
}

fn expect_timeout(wrong_tag: bool) {
    let w = world(2, Duration::from_millis(300));
    let t0 = Instant::now();
    let results = w.run(|comm| {
        // Warm up with a good launch so the tags are not the first ones.
        launch(comm, args::AIV_ST_BARRIER, 2, 3, false)?;
        comm.synchronize()?;
        launch(comm, args::AIV_ST_TIMEOUT, 4, 1, wrong_tag)?;
        comm.synchronize()
    });
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert!(results[1].is_ok(), "{:?}", results[1]);
    match &results[0] {
        Err(Error::WaitTimeout {
            rank,
            block,
            peer,
            cell,
            cell_name,
            expected,
            observed,
            what,
            ..
        }) => {
            assert_eq!(*rank, 0);
            assert!(*block < 4);
            assert_eq!(*peer, 1);
            // Rank 0's block b polls its pairwise cell written by rank 1, slot b.
            let want =
                ffi::AIV_PAIR_OFFSET as u64 + (ffi::AIV_PAIR_SLOTS as u64 + *block as u64) * 32;
            assert_eq!(*cell, want);
            assert_eq!(
                cell_name,
                &format!("pairwise cell from rank 1, slot {block}")
            );
            assert_eq!(*what, "Wait");
            assert_eq!(*expected, 4, "tags 1..=3 went to the warm-up launch");
            assert_eq!(*observed, if wrong_tag { 3 } else { 0 });
            let msg = results[0].as_ref().unwrap_err().to_string();
            assert!(
                msg.contains("rank 0, block") && msg.contains("rank 1"),
                "{msg}"
            );
        }
        other => panic!("expected a WaitTimeout, got {other:?}"),
    }
    // The failed communicator refuses further work; the healthy one does not know yet.
    let c0 = &w.comms()[0];
    let b = c0.alloc(64).unwrap();
    assert!(matches!(
        c0.all_gather(&b, &b.view(0, 64).unwrap(), 0, aiv_comm::DataType::U8),
        Err(Error::CommFailed { rank: 0, .. })
    ));
}

#[test]
fn wait_for_a_peer_that_never_records_times_out() {
    expect_timeout(false);
}

#[test]
fn wait_for_a_wrong_tag_times_out() {
    expect_timeout(true);
}

#[test]
fn a_faulting_rank_stops_its_waiting_peers_at_once() {
    // Rank 0's kernel faults (a lone WaitFlag); rank 1 waits for a Record from rank 0 that will
    // never come. On the NPU rank 1 would wait for its deadline (60 s here); the twin stops it
    // at once and names the cause.
    let w = world(2, Duration::from_secs(60));
    let t0 = Instant::now();
    let res = w.run(|c| -> aiv_comm::Result<()> {
        if c.rank() == 0 {
            // SAFETY: aiv_twin_selftest takes an AivTwinTestArgs (the comm part is unused).
            unsafe {
                c.launch_with_tags(&kernels::aiv_twin_selftest, 1, 1, &[], |_| {
                    args::AivTwinTestArgs {
                        mode: args::AIV_TT_LONE_WAIT,
                        ..Default::default()
                    }
                })?;
            }
            c.synchronize()
        } else {
            launch(c, args::AIV_ST_PINGPONG, 1, 1, false)?;
            c.synchronize()
        }
    });
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    let e0 = res[0].as_ref().unwrap_err().to_string();
    assert!(e0.contains("WaitFlag"), "{e0}");
    let e1 = res[1].as_ref().unwrap_err().to_string();
    assert!(
        e1.contains("stopped because a peer failed first") && e1.contains("rank 0 failed"),
        "{e1}"
    );
    // Both communicators are failed now.
    assert!(w.comms().iter().all(|c| c.failure().is_some()));
}

#[test]
fn reading_a_peer_buffer_before_its_flag_is_a_gm_race_whatever_its_size() {
    // With the wait: clean. Without it the twin reports the race whichever side comes second,
    // whether or not the reader happened to see the data. Small messages (a 32-byte word, a
    // ragged 64-byte piece) are data like any other: flags are told apart by address.
    for bytes in [4096u32, 64, 32] {
        let w = world(2, Duration::from_secs(30));
        let ok = w.run(|c| -> aiv_comm::Result<i32> {
            let r = launch_publish(c, bytes, false)?;
            c.synchronize()?;
            Ok(mismatches(&r)[0])
        });
        for (rank, r) in ok.into_iter().enumerate() {
            assert_eq!(r.unwrap(), 0, "{bytes} bytes, rank {rank}");
        }
        let w = world(2, Duration::from_secs(30));
        let res = w.run(|c| -> aiv_comm::Result<()> {
            launch_publish(c, bytes, true)?;
            c.synchronize()
        });
        let errors: Vec<String> = res
            .iter()
            .filter_map(|r| r.as_ref().err())
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.iter().any(|e| e.contains("GM race")),
            "{bytes} bytes: {errors:?}"
        );
    }
}

#[test]
fn the_race_checker_switched_off_and_on_again_between_calls_stays_precise() {
    // aiv-perf --checks-cost switches the checkers between batches of calls of one World. What
    // ran while the race checker was off (a racy kernel among clean ones) raises no alarm once
    // it is back on, and a race after that is reported as before.
    let w = world(2, Duration::from_secs(30));
    w.twin().unwrap().set_race_check(true);
    // A publish (racy if `early`), then, once every rank is done with it (both use the HCCL
    // buffers), an AllReduce: the errors of all ranks.
    let publish = |early: bool| -> Vec<String> {
        let published = w.run(|c| -> aiv_comm::Result<()> {
            let r = launch_publish(c, 64, early)?;
            c.synchronize()?;
            if !early {
                assert_eq!(mismatches(&r)[0], 0, "rank {}", c.rank());
            }
            Ok(())
        });
        let reduced = w.run(|c| -> aiv_comm::Result<()> {
            let x = c.alloc_from(&[c.rank() as f32 + 1.0; 4096])?;
            let y = c.alloc(4 * 4096)?;
            c.all_reduce(&x, &y, 4096, DataType::F32, ReduceOp::Sum)?;
            c.synchronize()
        });
        published
            .into_iter()
            .chain(reduced)
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect()
    };
    assert_eq!(publish(false), Vec::<String>::new(), "checked, clean");
    w.twin().unwrap().set_race_check(false);
    assert_eq!(publish(true), Vec::<String>::new(), "unchecked, racy");
    assert_eq!(publish(false), Vec::<String>::new(), "unchecked, clean");
    w.twin().unwrap().set_race_check(true);
    assert_eq!(publish(false), Vec::<String>::new(), "checked again, clean");
    let errors = publish(true);
    assert!(
        errors.iter().any(|e| e.contains("GM race")),
        "checked again, racy: {errors:?}"
    );
}

/// AIV_ST_PUBLISH of `bytes` (see aiv_args.h), reading early (a race) if `early`.
fn launch_publish(comm: &Communicator, bytes: u32, early: bool) -> aiv_comm::Result<DeviceBuffer> {
    let result = comm.alloc(32)?;
    let addr = result.addr();
    // SAFETY: aiv_sync_selftest takes an AivSyncTestArgs; it writes `result` (claimed) and
    // otherwise touches the world's HCCL buffers and sync areas.
    unsafe {
        comm.launch_with_tags(
            &kernels::aiv_sync_selftest,
            1,
            1,
            &[BufferAccess::Write(&result)],
            move |c| AivSyncTestArgs {
                comm: c,
                result: addr,
                tag_base: 0,
                mode: args::AIV_ST_PUBLISH,
                rounds: 1,
                wrong_tag: early as u32,
                bytes,
            },
        )?;
    }
    Ok(result)
}

#[test]
fn a_panicking_argument_closure_reaches_its_caller_and_fails_the_world_not_the_process() {
    let w = World::sim(1).unwrap();
    let c = &w.comms()[0];
    let result = c.alloc(32).unwrap();
    let addr = result.addr();
    let tags = c.tags_issued();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the closure panics before any launch; the kernel and args types match
        // otherwise.
        unsafe {
            c.launch_with_tags(
                &kernels::aiv_sync_selftest,
                1,
                1,
                &[BufferAccess::Write(&result)],
                move |c: ffi::AivCommArgs| -> AivSyncTestArgs {
                    let _ = (c, addr);
                    panic!("argument builder failed");
                },
            )
        }
    }));
    let payload = caught.expect_err("the closure's panic reaches the caller");
    assert_eq!(
        payload.downcast_ref::<&str>(),
        Some(&"argument builder failed")
    );
    // Nothing was enqueued; the rank is failed, naming the user's panic (not an internal
    // error), and so is every later call.
    let cause = c.failure().expect("the rank failed");
    match &cause {
        Error::Stopped(aiv_comm::StopCause::ArgumentClosure {
            rank: 0,
            kernel,
            message,
        }) => assert!(
            kernel == "aiv_sync_selftest" && message == "argument builder failed",
            "{cause:?}"
        ),
        other => panic!("expected the argument closure's panic, got {other:?}"),
    }
    let text = cause.to_string();
    assert!(
        text.contains("argument closure") && text.contains("argument builder failed"),
        "{text}"
    );
    assert!(c.tags_issued() > tags, "the launch's tags were taken");
    match c.synchronize() {
        Err(Error::CommFailed { cause, .. }) => {
            assert!(cause.to_string().contains("panicked"), "{cause}")
        }
        other => panic!("expected CommFailed, got {other:?}"),
    }
    // The process and the twin's workers survive: a new world runs.
    drop(w);
    let w = World::sim(1).unwrap();
    let c = &w.comms()[0];
    let x = c.alloc_from(&[1.5f32; 1000]).unwrap();
    let y = c.alloc(4000).unwrap();
    c.all_reduce(
        &x,
        &y,
        1000,
        aiv_comm::DataType::F32,
        aiv_comm::ReduceOp::Sum,
    )
    .unwrap();
    c.synchronize().unwrap();
    assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == 1.5));
}

#[test]
fn a_timeout_in_any_block_of_a_wide_launch_reaches_its_stream() {
    // 48 blocks (all the cores) on the main stream, then (another world) on a sub-stream; only
    // block 40 waits, for a Record that never comes. Its record must reach the launch.
    for on_sub_stream in [false, true] {
        let w = World::sim_with(
            2,
            Config {
                buffer_bytes: Some(64 * 1024),
                exec_timeout: Some(Duration::from_millis(300)),
                cores: 48,
                ..Config::default()
            },
        )
        .unwrap();
        let res = w.run(|c| -> aiv_comm::Result<()> {
            if c.rank() != 0 {
                return Ok(());
            }
            let side = c.create_stream("side")?;
            let stream = if on_sub_stream { &side } else { c.stream() };
            let result = c.alloc(48 * 32)?;
            let addr = result.addr();
            // SAFETY: as in `launch_at`; the launch goes on `stream`.
            unsafe {
                stream.launch_with_tags(
                    &kernels::aiv_sync_selftest,
                    48,
                    1,
                    &[BufferAccess::Write(&result)],
                    move |comm| AivSyncTestArgs {
                        comm,
                        result: addr,
                        tag_base: 0,
                        mode: args::AIV_ST_ONE_WAITS,
                        rounds: 1,
                        wrong_tag: 40,
                        bytes: 0,
                    },
                )?;
            }
            match stream.synchronize() {
                Err(Error::WaitTimeout {
                    rank: 0,
                    block: 40,
                    peer: 1,
                    ..
                }) => Ok(()),
                other => {
                    panic!("sub-stream {on_sub_stream}: expected block 40's timeout, got {other:?}")
                }
            }
        });
        res.into_iter().for_each(|r| r.unwrap());
    }
}

#[test]
fn a_block_dim_the_device_cannot_run_is_refused_when_enqueued() {
    let w = world(1, Duration::from_secs(5));
    let c = &w.comms()[0];
    for bad in [0u32, 33] {
        // SAFETY: refused before anything is enqueued.
        let r = unsafe {
            c.launch_with_tags(&kernels::aiv_sync_selftest, bad, 1, &[], |comm| {
                AivSyncTestArgs {
                    comm,
                    ..Default::default()
                }
            })
        };
        assert!(
            matches!(r, Err(Error::Config(ref m)) if m.contains("block_dim")),
            "{r:?}"
        );
    }
    assert!(
        c.failure().is_none(),
        "a refused launch does not fail the communicator"
    );
    c.synchronize().unwrap();
}
