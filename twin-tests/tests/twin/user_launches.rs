//! Reliability rules of a user's own launches (`launch_with_tags`), with the sync self-test
//! kernel as the user's kernel: a launch that fails poisons what it declared it writes, a launch
//! beyond the flag layout is refused when enqueued, and a panic in a launch's argument closure
//! stops the peers at once and is named as the user's. (The rules of the library's own calls:
//! aiv-comm's tests/reliability.rs.)

use std::time::{Duration, Instant};

use aiv_comm::{BufferAccess, Config, DataType, Error, ReduceOp, World};
use twin_tests::args::{self, AivSyncTestArgs};
use twin_tests::kernels;

fn world(ranks: usize, timeout: Duration) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(64 * 1024),
            exec_timeout: Some(timeout),
            cores: 16,
            ..Config::default()
        },
    )
    .unwrap()
}

#[test]
fn a_user_launch_that_fails_poisons_what_it_declared_it_writes() {
    let w = world(2, Duration::from_millis(200));
    let res = w.run(|c| -> aiv_comm::Result<()> {
        if c.rank() != 0 {
            return Ok(());
        }
        let out = c.alloc_from(&[3u8; 64])?;
        let untouched = c.alloc_from(&[4u8; 64])?;
        let addr = out.addr();
        // SAFETY: aiv_sync_selftest takes an AivSyncTestArgs and writes 32 bytes per block into
        // `result` (claimed for writing); wrong_tag 0 makes block 0 wait for a tag that never
        // comes.
        unsafe {
            c.launch_with_tags(
                &kernels::aiv_sync_selftest,
                2,
                1,
                &[BufferAccess::Write(&out), BufferAccess::Read(&untouched)],
                move |comm| AivSyncTestArgs {
                    comm,
                    result: addr,
                    mode: args::AIV_ST_ONE_WAITS,
                    rounds: 1,
                    ..Default::default()
                },
            )?;
        }
        assert!(c.synchronize().is_err());
        assert!(matches!(out.to_vec::<u8>(), Err(Error::Poisoned { .. })));
        assert_eq!(untouched.to_vec::<u8>()?, vec![4u8; 64]);
        // Poison is per byte range: a view of another part of the allocation is not touched.
        Ok(())
    });
    res.into_iter().for_each(|r| r.unwrap());
}

#[test]
fn a_tagged_launch_beyond_the_flag_layout_is_refused_when_enqueued() {
    let w = World::sim_with(
        1,
        Config {
            buffer_bytes: Some(64 * 1024),
            exec_timeout: Some(Duration::from_millis(200)),
            cores: 64,
            ..Config::default()
        },
    )
    .unwrap();
    let c = &w.comms()[0];
    let result = c.alloc(64 * 32).unwrap();
    let addr = result.addr();
    for bad in [49u32, 56, 64] {
        // SAFETY: refused before anything is enqueued (else: aiv_sync_selftest takes an
        // AivSyncTestArgs and writes 32 bytes per block into `result`).
        let r = unsafe {
            c.launch_with_tags(
                &kernels::aiv_sync_selftest,
                bad,
                1,
                &[BufferAccess::Write(&result)],
                move |comm| AivSyncTestArgs {
                    comm,
                    result: addr,
                    mode: args::AIV_ST_ONE_WAITS,
                    rounds: 1,
                    wrong_tag: bad - 1, // the last block waits for a tag that never comes
                    ..Default::default()
                },
            )
        };
        match r {
            Err(Error::Config(m)) => assert!(m.contains("block_dim") && m.contains("48"), "{m}"),
            other => panic!("block_dim {bad}: {other:?} (then {:?})", c.synchronize()),
        }
    }
    assert!(c.failure().is_none());
}

#[test]
fn a_panic_in_a_launch_argument_closure_stops_the_peers_at_once_and_is_named_as_the_users() {
    let w = world(3, Duration::from_secs(60));
    let t0 = Instant::now();
    // Ranks on threads of the user's own (not World::run).
    let results: Vec<std::thread::Result<aiv_comm::Result<()>>> = std::thread::scope(|s| {
        let hs: Vec<_> = w
            .comms()
            .iter()
            .map(|c| {
                s.spawn(move || -> aiv_comm::Result<()> {
                    if c.rank() == 1 {
                        std::thread::sleep(Duration::from_millis(50));
                        // SAFETY: the closure panics before any launch exists.
                        unsafe {
                            c.launch_with_tags(
                                &kernels::aiv_sync_selftest,
                                1,
                                1,
                                &[],
                                |_comm| -> AivSyncTestArgs { panic!("bad tiling") },
                            )?;
                        }
                    }
                    let x = c.alloc_from(&[1.0f32; 1000])?;
                    c.all_reduce(&x, &x, 1000, DataType::F32, ReduceOp::Sum)?;
                    c.synchronize()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join()).collect()
    });
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the peers waited {:?} for the panicked rank",
        t0.elapsed()
    );
    let payload = results[1]
        .as_ref()
        .expect_err("rank 1's panic reaches its caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad tiling"));
    for r in [0, 2] {
        let e = results[r]
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rank 1") && e.contains("panicked") && !e.contains("internal error"),
            "rank {r}: {e}"
        );
    }
}
