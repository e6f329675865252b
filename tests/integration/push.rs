//! Push-mode one-shot AllGather and AllReduce (issue 14 e, kernel/push.cpp): every rank gets the
//! right and the same bits on 1-8 ranks, sizes from 0 elements to several chunks of the push
//! region, ragged lengths, in place; back-to-back calls interleaved with the pull kernels and
//! the rest of the set on one communicator (the push region's reuse); a mismatched call is an
//! error on every rank. The twin's pipe-hazard and GM race checkers are on (the default): they
//! must report nothing.

use crate::common;

use std::time::{Duration, Instant};

use aiv_comm::{AllGatherAlgo, AllReduceAlgo, Communicator, Config, DataType, ReduceOp, World};
use common::gather::assert_all_gather;
use common::reduce::{assert_reduced, rank_inputs};

fn world(ranks: usize, blocks_per_peer: Option<u32>) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(64 * 1024),
            exec_timeout: Some(Duration::from_secs(30)),
            cores: 32,
            blocks_per_peer,
            ..Config::default()
        },
    )
    .unwrap()
}

/// Runs one AllReduce on every rank; checks the result against the host reference and that
/// every rank has the same bits.
fn reduce_case(w: &World, count: usize, dtype: DataType, op: ReduceOp, in_place: bool) {
    let n = w.size();
    let es = dtype.size();
    let inputs = rank_inputs(dtype, n, count);
    let outs: Vec<Vec<u8>> = w
        .run(|c| -> aiv_comm::Result<Vec<u8>> {
            let send = c.alloc_from(&inputs[c.rank() as usize])?;
            let recv = if in_place {
                send.clone()
            } else {
                c.alloc(count * es)?
            };
            c.all_reduce_with(&send, &recv, count, dtype, op, AllReduceAlgo::Push)?;
            c.synchronize()?;
            recv.to_vec::<u8>()
        })
        .into_iter()
        .enumerate()
        .map(|(r, o)| o.unwrap_or_else(|e| panic!("rank {r}: {e}")))
        .collect();
    for (r, o) in outs.iter().enumerate() {
        assert!(
            o == &outs[0],
            "{n} ranks {count} x {dtype} {op}: rank {r}'s bits differ from rank 0's"
        );
        assert_reduced(dtype, op, &inputs, 0, count, o, &format!("rank {r} of {n}"));
    }
}

#[test]
fn push_all_gather_is_right_on_every_rank_count_and_size() {
    for ranks in [1usize, 2, 3, 4, 8] {
        let w = world(ranks, None);
        for (i, (count, dtype)) in [
            (0usize, DataType::F32),
            (1, DataType::I8),
            (333, DataType::U8),
            (1000, DataType::F32),
            (12_345, DataType::U16),
        ]
        .into_iter()
        .enumerate()
        {
            assert_all_gather(&w, count, dtype, i % 2 == 1, AllGatherAlgo::Push);
        }
    }
}

#[test]
fn push_all_gather_with_several_parts_and_chunks() {
    // Forced 3 blocks per peer: every part's flags, the barrier before the ACK.
    let w = world(4, Some(3));
    for count in [5usize, 777, 40_000] {
        assert_all_gather(&w, count, DataType::F32, false, AllGatherAlgo::Push);
        assert_all_gather(&w, count, DataType::F32, true, AllGatherAlgo::Push);
    }
    // More than one push slot per rank (8 ranks: 1 MiB slots): two chunks, 2 blocks per peer.
    let w = world(8, None);
    let count = aiv_comm::plan::push_slot_bytes(8) + 100;
    assert_all_gather(&w, count, DataType::U8, false, AllGatherAlgo::Push);
}

#[test]
fn push_all_reduce_gives_every_rank_the_same_right_bits() {
    for ranks in [1usize, 2, 3, 4, 8] {
        let w = world(ranks, None);
        for (i, count) in [0usize, 1, 333, 5000].into_iter().enumerate() {
            let in_place = i % 2 == 1;
            // Vector path (sums of f32 / i32 / f16) and atomic path (bf16 sum, max, min, i8).
            reduce_case(&w, count, DataType::F32, ReduceOp::Sum, in_place);
            reduce_case(&w, count, DataType::I32, ReduceOp::Sum, !in_place);
            reduce_case(&w, count, DataType::Bf16, ReduceOp::Sum, in_place);
            if ranks == 4 || ranks == 3 {
                reduce_case(&w, count, DataType::F16, ReduceOp::Sum, in_place);
                reduce_case(&w, count, DataType::I8, ReduceOp::Max, !in_place);
                reduce_case(&w, count, DataType::F32, ReduceOp::Min, in_place);
                reduce_case(&w, count, DataType::I16, ReduceOp::Sum, !in_place);
            }
        }
    }
}

#[test]
fn push_all_reduce_with_several_parts_in_and_out_of_place() {
    let w = world(3, Some(4));
    for count in [7usize, 3001, 30_000] {
        for in_place in [false, true] {
            reduce_case(&w, count, DataType::F32, ReduceOp::Sum, in_place);
            reduce_case(&w, count, DataType::Bf16, ReduceOp::Sum, in_place);
        }
    }
}

/// Enqueues `rounds` rounds of push and pull collectives of several sizes back to back on every
/// rank with no synchronisation in between, each into buffers of its own, then checks them all:
/// the push region's reuse across launches (ACK of the previous push launch) and its isolation
/// from the other kernels' use of the HCCL buffer.
#[test]
fn back_to_back_push_and_pull_calls_on_one_communicator() {
    for ranks in [2usize, 3, 4] {
        let w = world(ranks, None);
        w.twin().unwrap().set_jitter_us(5);
        let rounds = 12;
        let res = w.run(|c| -> aiv_comm::Result<()> {
            let n = c.size() as usize;
            let r = c.rank() as usize;
            let mut checks = Vec::new();
            for k in 0..rounds {
                let count = [1usize, 100, 3000, 9000][k % 4] + k;
                // AllGather, push then pull, f32 values (r, k, i).
                let v = |q: usize, i: usize| (q * 1_000_000 + k * 10_000 + i) as f32;
                let mine: Vec<f32> = (0..count).map(|i| v(r, i)).collect();
                let want_g: Vec<f32> = (0..n)
                    .flat_map(|q| (0..count).map(move |i| v(q, i)))
                    .collect();
                for algo in [
                    AllGatherAlgo::Push,
                    AllGatherAlgo::Pull,
                    AllGatherAlgo::PullParts,
                ] {
                    let send = c.alloc_from(&mine)?;
                    let recv = c.alloc(count * 4 * n)?;
                    c.all_gather_with(&send, &recv, count, DataType::F32, algo)?;
                    checks.push((recv, want_g.clone()));
                }
                // AllReduce sums of small integers (exact): push, one-shot, two-shot, push in place.
                let x: Vec<f32> = (0..count).map(|i| ((r + i + k) % 7) as f32).collect();
                let want_r: Vec<f32> = (0..count)
                    .map(|i| (0..n).map(|q| ((q + i + k) % 7) as f32).sum())
                    .collect();
                for algo in [
                    AllReduceAlgo::Push,
                    AllReduceAlgo::OneShot,
                    AllReduceAlgo::TwoShot,
                ] {
                    let send = c.alloc_from(&x)?;
                    let recv = c.alloc(count * 4)?;
                    c.all_reduce_with(&send, &recv, count, DataType::F32, ReduceOp::Sum, algo)?;
                    checks.push((recv, want_r.clone()));
                }
                let buf = c.alloc_from(&x)?;
                c.all_reduce_with(
                    &buf,
                    &buf,
                    count,
                    DataType::F32,
                    ReduceOp::Sum,
                    AllReduceAlgo::Push,
                )?;
                checks.push((buf, want_r.clone()));
                // The rest of the set between pushes.
                let rs_in = c.alloc_from(&vec![1.0f32; count * n])?;
                let rs_out = c.alloc(count * 4)?;
                c.reduce_scatter(&rs_in, &rs_out, count, DataType::F32, ReduceOp::Sum)?;
                checks.push((rs_out, vec![n as f32; count]));
                if k % 3 == 0 {
                    c.barrier()?;
                }
            }
            c.synchronize()?;
            for (i, (buf, want)) in checks.iter().enumerate() {
                let got = buf.to_vec::<f32>()?;
                assert!(&got == want, "rank {r} of {n}: check {i} differs");
            }
            Ok(())
        });
        for (r, x) in res.into_iter().enumerate() {
            x.unwrap_or_else(|e| panic!("{ranks} ranks, rank {r}: {e}"));
        }
    }
}

/// Push calls only, back to back with no other collective between them (nothing but the ACK
/// of the previous push launch keeps a writer off a slot its reader may still be copying), on
/// ranks that run at different speeds (random delays).
#[test]
fn consecutive_push_calls_reuse_the_region_safely() {
    for ranks in [2usize, 3, 8] {
        let w = world(ranks, None);
        w.twin().unwrap().set_jitter_us(10);
        let res = w.run(|c| -> aiv_comm::Result<()> {
            let n = c.size() as usize;
            let r = c.rank() as usize;
            let mut checks = Vec::new();
            for k in 0..24 {
                let count = [64usize, 1000, 5][k % 3];
                let mine: Vec<i32> = (0..count).map(|i| (r * 7919 + k * 31 + i) as i32).collect();
                let send = c.alloc_from(&mine)?;
                if k % 2 == 0 {
                    let recv = c.alloc(count * 4 * n)?;
                    c.all_gather_with(&send, &recv, count, DataType::I32, AllGatherAlgo::Push)?;
                    let want: Vec<i32> = (0..n)
                        .flat_map(|q| (0..count).map(move |i| (q * 7919 + k * 31 + i) as i32))
                        .collect();
                    checks.push((recv, want));
                } else {
                    let recv = c.alloc(count * 4)?;
                    c.all_reduce_with(
                        &send,
                        &recv,
                        count,
                        DataType::I32,
                        ReduceOp::Sum,
                        AllReduceAlgo::Push,
                    )?;
                    let want: Vec<i32> = (0..count)
                        .map(|i| (0..n).map(|q| (q * 7919 + k * 31 + i) as i32).sum())
                        .collect();
                    checks.push((recv, want));
                }
            }
            c.synchronize()?;
            for (i, (buf, want)) in checks.iter().enumerate() {
                assert!(
                    &buf.to_vec::<i32>()? == want,
                    "rank {r} of {n}: call {i} differs"
                );
            }
            Ok(())
        });
        for (r, x) in res.into_iter().enumerate() {
            x.unwrap_or_else(|e| panic!("{ranks} ranks, rank {r}: {e}"));
        }
    }
}

// ---- mismatched calls ----

#[derive(Clone, Copy, Debug)]
enum Op {
    Gather(usize, AllGatherAlgo),
    Reduce(usize, AllReduceAlgo),
}

fn issue(c: &Communicator, op: Op) -> aiv_comm::Result<()> {
    let n = c.size() as usize;
    match op {
        Op::Gather(count, algo) => {
            let x = c.alloc(count * 4)?;
            let y = c.alloc(count * 4 * n)?;
            c.all_gather_with(&x, &y, count, DataType::F32, algo)?;
        }
        Op::Reduce(count, algo) => {
            let x = c.alloc(count * 4)?;
            let y = c.alloc(count * 4)?;
            c.all_reduce_with(&x, &y, count, DataType::F32, ReduceOp::Sum, algo)?;
        }
    }
    c.synchronize()
}

fn expect_mismatch(ranks: usize, odd_rank: u32, usual: Op, odd: Op) {
    let w = world(ranks, None);
    w.twin().unwrap().set_jitter_us(20);
    let t0 = Instant::now();
    // A good push call first, so the mismatched one also waits for ACKs.
    let res = w.run(|c| {
        issue(c, Op::Reduce(64, AllReduceAlgo::Push))?;
        issue(c, if c.rank() == odd_rank { odd } else { usual })
    });
    common::mismatch::assert_mismatch_on_every_rank(
        &w,
        &res,
        t0.elapsed(),
        odd_rank,
        &format!("{usual:?} vs {odd:?}"),
    );
}

#[test]
fn a_mismatched_push_call_is_an_error_on_every_rank() {
    use AllGatherAlgo as G;
    use AllReduceAlgo as R;
    let cases = [
        (Op::Gather(100, G::Push), Op::Gather(101, G::Push)),
        (Op::Reduce(256, R::Push), Op::Reduce(300, R::Push)),
        (Op::Gather(100, G::Push), Op::Gather(100, G::Pull)),
        (Op::Gather(100, G::Pull), Op::Gather(100, G::Push)),
        (Op::Reduce(256, R::Push), Op::Reduce(256, R::OneShot)),
        (Op::Reduce(256, R::TwoShot), Op::Reduce(256, R::Push)),
        (Op::Reduce(256, R::Push), Op::Gather(256, G::Push)),
    ];
    for (usual, odd) in cases {
        expect_mismatch(2, 1, usual, odd);
        expect_mismatch(4, 0, usual, odd);
    }
}

#[test]
fn algorithms_parse_by_name() {
    assert_eq!("push".parse::<AllGatherAlgo>(), Ok(AllGatherAlgo::Push));
    assert_eq!("pull".parse::<AllGatherAlgo>(), Ok(AllGatherAlgo::Pull));
    assert_eq!("staging".parse::<AllGatherAlgo>(), Ok(AllGatherAlgo::Pull));
    assert_eq!(
        "pull_parts".parse::<AllGatherAlgo>(),
        Ok(AllGatherAlgo::PullParts)
    );
    assert_eq!("auto".parse::<AllGatherAlgo>(), Ok(AllGatherAlgo::Auto));
    assert!("one_shot".parse::<AllGatherAlgo>().is_err());
    assert_eq!("push".parse::<AllReduceAlgo>(), Ok(AllReduceAlgo::Push));
}

// ---- measurement (not a test: `cargo test --release --test integration push:: -- --ignored --nocapture`) ----

#[derive(Clone, Copy, Debug)]
enum Algo {
    Gather(AllGatherAlgo),
    Reduce(AllReduceAlgo),
}

/// Time per op (median of 5 samples of back-to-back calls) and GM bytes rank 0's cores read
/// and wrote per op, checkers off, for AllGather and AllReduce of `bytes` per rank (f32).
#[test]
#[ignore]
fn measure_push_against_pull() {
    let algos = [
        Algo::Gather(AllGatherAlgo::Pull),
        Algo::Gather(AllGatherAlgo::Push),
        Algo::Reduce(AllReduceAlgo::OneShot),
        Algo::Reduce(AllReduceAlgo::TwoShot),
        Algo::Reduce(AllReduceAlgo::Push),
    ];
    let ranks: Vec<usize> = std::env::var("PUSH_RANKS")
        .map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or(vec![2, 4, 8]);
    let sizes: Vec<usize> = std::env::var("PUSH_SIZES")
        .map(|s| s.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or(vec![64 << 10, 1 << 20]);
    println!("ranks bytes/rank algo us/op(median of 5) [samples] gm_read/rank gm_written/rank");
    for &n in &ranks {
        let w = World::sim_with(n, Config::default()).unwrap();
        w.twin().unwrap().set_hazard_check(false);
        w.twin().unwrap().set_race_check(false);
        for &bytes in &sizes {
            let count = bytes / 4;
            let iters = if bytes >= 1 << 20 { 3 } else { 10 };
            for algo in algos {
                let bufs = w.run(|c| -> aiv_comm::Result<_> {
                    let x = c.alloc_from(&vec![1.0f32; count])?;
                    let y = c.alloc(bytes * n)?;
                    Ok((x, y))
                });
                let bufs: Vec<_> = bufs.into_iter().map(|b| b.unwrap()).collect();
                let call = |c: &Communicator, k: usize| -> aiv_comm::Result<()> {
                    let (x, y) = &bufs[c.rank() as usize];
                    for _ in 0..k {
                        match algo {
                            Algo::Gather(a) => c.all_gather_with(x, y, count, DataType::F32, a)?,
                            Algo::Reduce(a) => {
                                c.all_reduce_with(x, y, count, DataType::F32, ReduceOp::Sum, a)?
                            }
                        }
                    }
                    c.synchronize()
                };
                w.run(|c| call(c, 2)).into_iter().for_each(|r| r.unwrap());
                let core = |w: &World| -> (u64, u64) {
                    w.twin()
                        .unwrap()
                        .core_traffic(0)
                        .iter()
                        .fold((0, 0), |a, t| (a.0 + t.read, a.1 + t.written))
                };
                let before = core(&w);
                let mut samples = Vec::new();
                for _ in 0..5 {
                    let t0 = Instant::now();
                    w.run(|c| call(c, iters))
                        .into_iter()
                        .for_each(|r| r.unwrap());
                    samples.push(t0.elapsed().as_secs_f64() * 1e6 / iters as f64);
                }
                let after = core(&w);
                let ops = (5 * iters) as u64;
                let mut sorted = samples.clone();
                sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
                println!(
                    "{n} {bytes} {algo:?} {:.0} {:?} {} {}",
                    sorted[2],
                    samples.iter().map(|s| *s as u64).collect::<Vec<_>>(),
                    (after.0 - before.0) / ops,
                    (after.1 - before.1) / ops
                );
            }
        }
    }
}
