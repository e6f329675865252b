//! Device resources are stream-ordered (issue 10, items 1, 2 and 8): dropping a World, a stream or
//! a buffer with work queued never frees memory under a running kernel, host copies are ordered
//! with the work enqueued on their buffers, and a buffer of another World is refused.

use std::time::{Duration, Instant};

use aiv_comm::{Config, DataType, Error, ReduceOp, World};

use crate::common;

fn world(ranks: usize) -> World {
    common::make_world(
        super::BACKEND,
        ranks,
        Config {
            buffer_bytes: Some(4 << 20),
            cores: 16,
            ..Config::default()
        },
    )
    .unwrap()
}

/// One all_reduce of `n` f32 on every rank, checked.
fn all_reduce_ok(w: &World, n: usize) {
    let out = w.run(|c| -> aiv_comm::Result<Vec<f32>> {
        let x = c.alloc_from(&vec![c.rank() as f32 + 1.0; n])?;
        let y = c.alloc(n * 4)?;
        c.all_reduce(&x, &y, n, DataType::F32, ReduceOp::Sum)?;
        c.synchronize()?;
        y.to_vec()
    });
    let want = (1..=w.size()).sum::<usize>() as f32;
    for (r, o) in out.into_iter().enumerate() {
        assert!(o.unwrap().iter().all(|&v| v == want), "rank {r}");
    }
}

#[test]
fn dropping_a_world_with_work_queued_never_crashes_and_the_next_world_works() {
    let n = (1 << 20) / 4; // 1 MiB of f32 per rank
    for cycle in 0..20 {
        let w = world(4);
        w.run(|c| {
            let x = c.alloc_from(&vec![1.0f32; n]).unwrap();
            let y = c.alloc(n * 4).unwrap();
            for _ in 0..30 {
                c.all_reduce(&x, &y, n, DataType::F32, ReduceOp::Sum)
                    .unwrap();
            }
            // No synchronize: the buffers' handles and the World go with work queued.
        });
        let t0 = Instant::now();
        drop(w);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "cycle {cycle}: drop took {:?}",
            t0.elapsed()
        );
        all_reduce_ok(&world(4), 1000);
    }
}

#[test]
fn a_buffer_outlives_its_world_and_is_refused_by_another() {
    let w = world(2);
    let kept = w.run(|c| {
        let x = c.alloc_from(&vec![2i32; 4096]).unwrap();
        c.all_reduce(&x, &x, 4096, DataType::I32, ReduceOp::Sum)
            .unwrap();
        x
    });
    drop(w);
    // The memory is still there (freed with its last handle); reading it is defined: the sums,
    // or, if the drop stopped the AllReduce first, an error saying so (and the bytes as they
    // are once accepted).
    for b in &kept {
        match b.to_vec::<i32>() {
            Ok(v) => assert_eq!(v, vec![4; 4096]),
            Err(Error::Poisoned { cause }) => {
                assert!(cause.to_string().contains("dropped"), "{cause}");
                b.clear_poison();
                assert_eq!(b.to_vec::<i32>().unwrap().len(), 4096);
            }
            Err(e) => panic!("{e}"),
        }
    }
    let other = world(2);
    let c = &other.comms()[0];
    let mine = c.alloc(4 * 4096).unwrap();
    for (what, r) in [
        (
            "send",
            c.all_reduce(&kept[0], &mine, 4096, DataType::I32, ReduceOp::Sum),
        ),
        (
            "recv",
            c.all_reduce(&mine, &kept[0], 4096, DataType::I32, ReduceOp::Sum),
        ),
        ("copy", c.stream().copy(&mine, &kept[0], 64, "copy")),
        ("send p2p", c.send(&kept[0], 1)),
    ] {
        assert!(matches!(r, Err(Error::WrongWorld { .. })), "{what}: {r:?}");
    }
    assert!(c.failure().is_none());
    // A live second world's buffer is refused just the same.
    let third = world(2);
    let foreign = third.comms()[0].alloc(64).unwrap();
    assert!(matches!(
        c.stream().copy(&mine, &foreign, 64, "copy"),
        Err(Error::WrongWorld { .. })
    ));
}

#[test]
fn host_copies_wait_for_the_work_enqueued_on_their_buffer() {
    let w = world(3);
    common::jitter(&w, 30);
    let n = 64 * 1024;
    let out = w.run(|c| -> aiv_comm::Result<()> {
        let x = c.alloc_from(&vec![c.rank() as i32; n])?;
        let y = c.alloc(n * 4)?;
        for round in 0..20i32 {
            c.all_reduce(&x, &y, n, DataType::I32, ReduceOp::Sum)?;
            // Without synchronize: the write must wait until the collective has read x, and
            // the read until it has written y.
            x.write(0, &vec![c.rank() as i32 + round + 1; n])?;
            let got: Vec<i32> = y.to_vec()?;
            let want = (0..3).map(|r| r + round).sum::<i32>();
            assert!(
                got.iter().all(|&v| v == want),
                "rank {} round {round}: got {:?}, want {want}",
                c.rank(),
                &got[..4]
            );
        }
        c.synchronize()
    });
    out.into_iter().for_each(|r| r.unwrap());
}

#[test]
fn dropping_a_stream_or_buffer_with_work_queued_lets_the_work_finish() {
    let w = world(1);
    let c = &w.comms()[0];
    let n = 4 << 20;
    let dst = c.alloc(n).unwrap();
    {
        let sub = c.create_stream("short-lived").unwrap();
        let src = c.alloc_from(&vec![7u8; n]).unwrap();
        sub.copy(&dst, &src, n, "copy").unwrap();
        // `sub` and `src` go now; the copy holds what it needs.
    }
    let got = dst.to_vec::<u8>().unwrap(); // waits for the copy (a writer of dst)
    assert!(got.iter().all(|&b| b == 7));
}
