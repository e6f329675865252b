//! The rest of HCCL's AIV collective set against host references: ReduceScatter(V), AllGatherV,
//! Broadcast, AlltoAll(V), Barrier and BatchSendRecv. Rank counts 1..=16 (and 32 once), every
//! size class (0, one element, odd bytes, exactly a chunk, a chunk + 1, many chunks through a
//! tiny HCCL buffer), every dtype (x op for reductions), in place and out of place, and bad input
//! (a typed error, nothing touched).

use crate::common;

use std::time::{Duration, Instant};

use aiv_comm::{Config, DataType, DeviceBuffer, Error, ReduceOp, SendRecvItem, World};
use common::reduce::{assert_reduced, rank_inputs, REDUCIBLE};
use common::{assert_guarded, guarded, pattern, split_world, SENTINEL};

fn world(ranks: usize, buffer: usize) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(buffer),
            exec_timeout: Some(Duration::from_secs(60)),
            ..Config::default()
        },
    )
    .unwrap()
}

/// Per-rank segments (displacement, count) of `counts`, laid out in reverse rank order with a
/// gap of `gap` elements before each: exercises displacements that are not prefix sums.
fn scattered(counts: &[usize], gap: usize) -> (Vec<usize>, usize) {
    let mut displs = vec![0; counts.len()];
    let mut at = 0;
    for q in (0..counts.len()).rev() {
        at += gap;
        displs[q] = at;
        at += counts[q];
    }
    (displs, at)
}

// ---- ReduceScatter(V) ----

/// ReduceScatterV with `counts[q]` elements for rank q (uniform counts through the
/// `reduce_scatter` entry point when `uniform`), checked against the host reference.
fn rs_case(
    w: &World,
    counts: &[usize],
    dtype: DataType,
    op: ReduceOp,
    in_place: bool,
    uniform: bool,
) {
    let n = w.size();
    let es = dtype.size();
    let (displs, total) = if uniform {
        ((0..n).map(|q| q * counts[0]).collect(), n * counts[0])
    } else {
        scattered(counts, 3)
    };
    let inputs = rank_inputs(dtype, n, total);
    let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let r = c.rank() as usize;
        let rb = counts[r] * es;
        let (send_all, send) = guarded(c, total * es)?;
        send.write(0, &inputs[r])?;
        let (recv_all, recv) = if in_place {
            (send_all.clone(), send.view(displs[r] * es, rb)?)
        } else {
            guarded(c, rb)?
        };
        if uniform {
            c.reduce_scatter(&send, &recv, counts[r], dtype, op)?;
        } else {
            c.reduce_scatter_v(&send, counts, &displs, &recv, counts[r], dtype, op)?;
        }
        c.synchronize()?;
        let all = recv_all.to_vec::<u8>()?;
        let (off, end) = if in_place {
            (displs[r] * es, total * es)
        } else {
            (0, rb)
        };
        assert!(
            all[end..].iter().all(|&b| b == SENTINEL),
            "rank {r} wrote past its buffer"
        );
        Ok(all[off..off + rb].to_vec())
    });
    for (r, o) in outs.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {r} of {n}: {e}"));
        let what = format!("rank {r} of {n}, counts {counts:?}, in_place {in_place}");
        assert_reduced(dtype, op, &inputs, displs[r], counts[r], &o, &what);
    }
}

#[test]
fn reduce_scatter_every_rank_count_and_size_class() {
    let buffer = 8 * 1024;
    for ranks in 1..=16 {
        let w = world(ranks, buffer);
        let slot = aiv_comm::plan::slot_bytes(buffer, ranks) / 4; // f32/i32 elements per chunk
        for count in [0usize, 1, 77, slot, slot + 1, 3 * slot + 5] {
            rs_case(
                &w,
                &vec![count; ranks],
                DataType::I32,
                ReduceOp::Sum,
                ranks % 2 == 0,
                true,
            );
        }
    }
    let w = world(32, 16 * 1024);
    rs_case(&w, &[100; 32], DataType::F32, ReduceOp::Sum, true, true);
}

#[test]
fn reduce_scatter_every_dtype_op_and_mode() {
    for ranks in [3usize, 8] {
        let w = world(ranks, 32 * 1024);
        for dtype in REDUCIBLE {
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                rs_case(&w, &vec![301; ranks], dtype, op, false, true);
                rs_case(&w, &vec![160; ranks], dtype, op, true, true);
            }
        }
    }
}

#[test]
fn reduce_scatter_v_ragged_counts_zeros_and_chunks() {
    let buffer = 8 * 1024;
    for ranks in [1usize, 2, 3, 5, 8, 13, 16] {
        let w = world(ranks, buffer);
        let slot = aiv_comm::plan::slot_bytes(buffer, ranks) / 2;
        let counts: Vec<usize> = (0..ranks)
            .map(|q| [0, 1, 33, slot, 2 * slot + 7][q % 5])
            .collect();
        rs_case(&w, &counts, DataType::F16, ReduceOp::Sum, false, false);
        rs_case(
            &w,
            &counts,
            DataType::I16,
            ReduceOp::Max,
            ranks % 2 == 1,
            false,
        );
    }
    let w = world(4, 64 * 1024);
    for dtype in REDUCIBLE {
        rs_case(&w, &[5, 0, 1000, 17], dtype, ReduceOp::Min, false, false);
    }
}

// ---- AllGatherV ----

fn agv_case(w: &World, counts: &[usize], dtype: DataType, in_place: bool) {
    let n = w.size();
    let es = dtype.size();
    let (displs, total) = scattered(counts, 2);
    let inputs: Vec<Vec<u8>> = (0..n)
        .map(|r| pattern(counts[r] * es, 91 + r as u64))
        .collect();
    let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let r = c.rank() as usize;
        let (all, recv) = guarded(c, total * es)?;
        let send = if in_place {
            let s = recv.view(displs[r] * es, counts[r] * es)?;
            s.write(0, &inputs[r])?;
            s
        } else {
            c.alloc_from(&inputs[r])?
        };
        c.all_gather_v(&send, counts[r], &recv, counts, &displs, dtype)?;
        c.synchronize()?;
        all.to_vec::<u8>()
    });
    for (r, o) in outs.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {r} of {n}: {e}"));
        let mut want = vec![SENTINEL; total * es + 64];
        for q in 0..n {
            want[displs[q] * es..(displs[q] + counts[q]) * es].copy_from_slice(&inputs[q]);
        }
        assert!(
            o == want,
            "rank {r} of {n}: all_gather_v {counts:?} {dtype} in_place {in_place}"
        );
    }
}

#[test]
fn all_gather_v_every_rank_count_size_class_and_type() {
    let buffer = 8 * 1024;
    for ranks in 1..=16 {
        let w = world(ranks, buffer);
        let counts: Vec<usize> = (0..ranks)
            .map(|q| [3, 0, 1, buffer, buffer + 1, 2 * buffer + 9][q % 6])
            .collect();
        agv_case(&w, &counts, DataType::U8, ranks % 2 == 0);
    }
    let w = world(32, 8 * 1024);
    agv_case(
        &w,
        &(0..32).map(|q| q * 10).collect::<Vec<_>>(),
        DataType::F32,
        true,
    );
    let w = world(3, 8 * 1024);
    for dtype in DataType::ALL {
        agv_case(&w, &[1000, 0, 2500], dtype, false);
        agv_case(&w, &[7, 300, 1], dtype, true);
    }
}

// ---- Broadcast ----

fn bcast_case(w: &World, count: usize, dtype: DataType, root: u32, in_place: bool) {
    let n = w.size();
    let es = dtype.size();
    let data = pattern(count * es, 7 + root as u64);
    let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let (all, recv) = guarded(c, count * es)?;
        let is_root = c.rank() == root;
        if in_place {
            if is_root {
                recv.write(0, &data)?;
            }
            c.broadcast_in_place(&recv, count, dtype, root)?;
        } else {
            let send = c.alloc_from(&data)?;
            c.broadcast(&send, &recv, count, dtype, root)?;
        }
        c.synchronize()?;
        all.to_vec::<u8>()
    });
    for (r, o) in outs.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {r} of {n}: {e}"));
        assert_guarded(
            &o,
            &data,
            &format!("rank {r} of {n}: broadcast of {count} {dtype} from {root}"),
        );
    }
}

#[test]
fn broadcast_every_rank_count_root_and_size_class() {
    let buffer = 8 * 1024;
    for ranks in 1..=16 {
        let w = world(ranks, buffer);
        for (i, count) in [
            0usize,
            1,
            333,
            buffer / 4,
            buffer / 4 + 1,
            3 * buffer / 4 + 3,
        ]
        .into_iter()
        .enumerate()
        {
            let root = ((i * 5 + ranks) % ranks) as u32;
            bcast_case(&w, count, DataType::F32, root, i % 2 == 0);
        }
    }
    let w = world(32, 8 * 1024);
    bcast_case(&w, 5000, DataType::U16, 31, true);
    let w = world(4, 8 * 1024);
    for dtype in DataType::ALL {
        for root in 0..4 {
            bcast_case(&w, 1001, dtype, root, root % 2 == 0);
        }
    }
}

// ---- AlltoAll(V) ----

/// AlltoAllV with `m[p][q]` elements from p to q (through `all_to_all` when `uniform`).
fn a2a_case(w: &World, m: &[Vec<usize>], dtype: DataType, uniform: bool) {
    let n = w.size();
    let es = dtype.size();
    let send_layout: Vec<(Vec<usize>, usize)> = (0..n)
        .map(|p| {
            if uniform {
                ((0..n).map(|q| q * m[0][0]).collect(), n * m[0][0])
            } else {
                scattered(&m[p], 1)
            }
        })
        .collect();
    let recv_layout: Vec<(Vec<usize>, usize)> = (0..n)
        .map(|q| {
            let col: Vec<usize> = (0..n).map(|p| m[p][q]).collect();
            if uniform {
                ((0..n).map(|p| p * m[0][0]).collect(), n * m[0][0])
            } else {
                scattered(&col, 2)
            }
        })
        .collect();
    let inputs: Vec<Vec<u8>> = (0..n)
        .map(|p| pattern(send_layout[p].1 * es, 300 + p as u64))
        .collect();
    let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let r = c.rank() as usize;
        let send = c.alloc_from(&inputs[r])?;
        let (all, recv) = guarded(c, recv_layout[r].1 * es)?;
        if uniform {
            c.all_to_all(&send, &recv, m[0][0], dtype)?;
        } else {
            let rc: Vec<usize> = (0..n).map(|p| m[p][r]).collect();
            c.all_to_all_v(
                &send,
                &m[r],
                &send_layout[r].0,
                &recv,
                &rc,
                &recv_layout[r].0,
                dtype,
            )?;
        }
        c.synchronize()?;
        all.to_vec::<u8>()
    });
    for (q, o) in outs.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {q} of {n}: {e}"));
        let mut want = vec![SENTINEL; recv_layout[q].1 * es + 64];
        for p in 0..n {
            let (s, d) = (send_layout[p].0[q] * es, recv_layout[q].0[p] * es);
            let len = m[p][q] * es;
            want[d..d + len].copy_from_slice(&inputs[p][s..s + len]);
        }
        assert!(
            o == want,
            "rank {q} of {n}: all_to_all {dtype} uniform {uniform} matrix {m:?}"
        );
    }
}

#[test]
fn all_to_all_every_rank_count_size_class_and_type() {
    let buffer = 8 * 1024;
    for ranks in 1..=16 {
        let w = world(ranks, buffer);
        let slot = aiv_comm::plan::slot_bytes(buffer, ranks);
        for count in [0usize, 1, 33, slot, slot + 1, 2 * slot + 3] {
            a2a_case(&w, &vec![vec![count; ranks]; ranks], DataType::U8, true);
        }
    }
    let w = world(32, 16 * 1024);
    a2a_case(&w, &vec![vec![40; 32]; 32], DataType::I32, true);
    let w = world(3, 8 * 1024);
    for dtype in DataType::ALL {
        a2a_case(&w, &vec![vec![555; 3]; 3], dtype, true);
    }
}

#[test]
fn all_to_all_v_ragged_matrices_zeros_and_chunks() {
    let buffer = 8 * 1024;
    for ranks in [1usize, 2, 3, 4, 7, 16] {
        let w = world(ranks, buffer);
        let slot = aiv_comm::plan::slot_bytes(buffer, ranks) / 4;
        let m: Vec<Vec<usize>> = (0..ranks)
            .map(|p| {
                (0..ranks)
                    .map(|q| [0, 1, 17, slot, 2 * slot + 1][(p * 3 + q) % 5])
                    .collect()
            })
            .collect();
        a2a_case(&w, &m, DataType::F32, false);
    }
    let w = world(3, 8 * 1024);
    for dtype in DataType::ALL {
        a2a_case(
            &w,
            &[vec![3, 0, 900], vec![0, 0, 0], vec![1, 2000, 5]],
            dtype,
            false,
        );
    }
}

#[test]
fn a_counts_matrix_that_does_not_match_is_an_error_on_every_rank() {
    let w = world(3, 8 * 1024);
    let t0 = Instant::now();
    let res = w.run(|c| -> aiv_comm::Result<()> {
        let r = c.rank() as usize;
        let send = c.alloc(64)?;
        let recv = c.alloc(64)?;
        let sc = vec![2usize; 3];
        // Rank 1 expects 3 elements from rank 0, which sends it 2.
        let rc = if r == 1 { vec![3, 2, 2] } else { vec![2; 3] };
        c.all_to_all_v(
            &send,
            &sc,
            &[0, 2, 4],
            &recv,
            &rc,
            &[0, 4, 8],
            DataType::F32,
        )?;
        c.synchronize()
    });
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "a timeout, not a mismatch"
    );
    for (r, e) in res.into_iter().enumerate() {
        match e {
            Err(Error::CollectiveMismatch {
                rank,
                peer,
                mine,
                theirs,
            }) => {
                assert_eq!(rank, r as u32);
                assert_eq!(peer, 0);
                assert!(
                    mine.contains("rank 1 expects 3 x float from rank 0"),
                    "{mine}"
                );
                assert!(theirs.contains("sending 2 x float to rank 1"), "{theirs}");
            }
            other => panic!("rank {r}: {other:?}"),
        }
    }
    // Nothing moved, and every rank can go on once it has recovered its streams (the error is
    // sticky until then): the verdict was the same everywhere.
    let again = w.run(|c| -> aiv_comm::Result<Vec<f32>> {
        assert!(matches!(
            c.synchronize(),
            Err(Error::CollectiveMismatch { .. })
        ));
        assert!(matches!(
            c.clear_error(),
            Some(Error::CollectiveMismatch { .. })
        ));
        let send = c.alloc_from(&[c.rank() as f32; 3])?;
        let recv = c.alloc(12)?;
        c.all_to_all(&send, &recv, 1, DataType::F32)?;
        c.synchronize()?;
        recv.to_vec()
    });
    for o in again {
        assert_eq!(o.unwrap(), vec![0.0, 1.0, 2.0]);
    }
}

// ---- Barrier ----

#[test]
fn no_rank_leaves_a_barrier_before_every_rank_reached_it() {
    let w = world(4, 8 * 1024);
    let late = Duration::from_millis(300);
    let start = Instant::now();
    let res = w.run(|c| -> aiv_comm::Result<(Duration, Duration)> {
        if c.rank() == 2 {
            std::thread::sleep(late);
        }
        let entered = start.elapsed();
        c.barrier()?;
        c.synchronize()?;
        Ok((entered, start.elapsed()))
    });
    let res: Vec<(Duration, Duration)> = res.into_iter().map(|r| r.unwrap()).collect();
    let last_in = res.iter().map(|r| r.0).max().unwrap();
    assert!(last_in >= late);
    for (r, (_, left)) in res.iter().enumerate() {
        assert!(
            *left >= last_in,
            "rank {r} left at {left:?}, before rank 2 arrived at {last_in:?}"
        );
    }
    // A barrier on one world of one rank is immediate; a barrier against a collective is a
    // mismatch on every rank.
    let one = world(1, 8 * 1024);
    one.comms()[0].barrier().unwrap();
    one.comms()[0].synchronize().unwrap();
    let res = w.run(|c| -> aiv_comm::Result<()> {
        if c.rank() == 0 {
            let x = c.alloc(64)?;
            c.all_reduce(&x, &x, 16, DataType::F32, ReduceOp::Sum)?;
        } else {
            c.barrier()?;
        }
        c.synchronize()
    });
    // Every rank fails: with the mismatch itself, or stopped by the peer that saw it first.
    for (r, e) in res.into_iter().enumerate() {
        let msg = e.expect_err("a mismatch").to_string();
        assert!(msg.contains("at the same point"), "rank {r}: {msg}");
    }
}

// ---- BatchSendRecv ----

#[test]
fn batch_send_recv_never_deadlocks_whatever_the_order() {
    for ranks in [2usize, 3, 5, 8] {
        let w = world(ranks, 8 * 1024);
        // Every rank sends `len(p, q)` elements to every other rank and receives from all; the
        // list order is different on every rank (receives first on some, sends first on
        // others, rotated), and two messages go to each peer, so order within a link counts.
        let len = |p: usize, q: usize, k: usize| (p * 7 + q * 3 + k * 5) % 11 * 500 + k;
        let data =
            |p: usize, q: usize, k: usize| pattern(len(p, q, k) * 2, (p * 64 + q * 2 + k) as u64);
        let outs = w.run(|c| -> aiv_comm::Result<Vec<(usize, usize, Vec<u8>)>> {
            let r = c.rank() as usize;
            let mut sends = Vec::new();
            let mut recvs = Vec::new();
            for q in (0..ranks).filter(|&q| q != r) {
                for k in 0..2 {
                    sends.push((q, k, c.alloc_from(&data(r, q, k))?));
                    recvs.push((q, k, c.alloc(len(q, r, k) * 2)?));
                }
            }
            let mut items: Vec<SendRecvItem> = Vec::new();
            let send_items = sends
                .iter()
                .map(|(q, k, b)| SendRecvItem::send(b, len(r, *q, *k), DataType::F16, *q as u32));
            let recv_items = recvs
                .iter()
                .map(|(q, k, b)| SendRecvItem::recv(b, len(*q, r, *k), DataType::F16, *q as u32));
            if r.is_multiple_of(2) {
                items.extend(recv_items);
                items.extend(send_items);
            } else {
                items.extend(send_items);
                items.extend(recv_items);
            }
            let turn = r % items.len().max(1);
            items.rotate_left(turn - turn % 2); // keeps each link's two items in order
            c.batch_send_recv(&items)?;
            c.synchronize()?;
            recvs
                .into_iter()
                .map(|(q, k, b)| Ok((q, k, b.to_vec::<u8>()?)))
                .collect()
        });
        for (r, o) in outs.into_iter().enumerate() {
            for (q, k, got) in o.unwrap_or_else(|e| panic!("{ranks} ranks, rank {r}: {e}")) {
                assert!(
                    got == data(q, r, k),
                    "{ranks} ranks: rank {r}'s message {k} from {q}"
                );
            }
        }
    }
}

#[test]
fn batch_send_recv_size_mismatch_and_bad_items() {
    let w = world(2, 8 * 1024);
    let res = w.run(|c| -> aiv_comm::Result<()> {
        let b = c.alloc(400)?;
        let peer = 1 - c.rank();
        let item = if c.rank() == 0 {
            SendRecvItem::send(&b, 100, DataType::F32, peer)
        } else {
            SendRecvItem::recv(&b, 99, DataType::F32, peer)
        };
        c.batch_send_recv(&[item])?;
        c.synchronize()
    });
    for (r, e) in res.into_iter().enumerate() {
        assert!(
            matches!(e, Err(Error::SizeMismatch { .. })),
            "rank {r}: {e:?}"
        );
    }
    let c = &w.comms()[0];
    // Sticky until recovered: the link streams of the batch too.
    assert!(matches!(c.clear_error(), Some(Error::SizeMismatch { .. })));
    let b = c.alloc(64).unwrap();
    let foreign = w.comms()[1].alloc(64).unwrap();
    let tags = c.tags_issued();
    type Case<'a> = (&'a [SendRecvItem<'a>], fn(&Error) -> bool);
    let bad: [Case; 6] = [
        (&[SendRecvItem::send(&b, 1, DataType::U8, 2)], |e| {
            matches!(e, Error::RankOutOfRange { rank: 2, .. })
        }),
        (&[SendRecvItem::send(&b, 1, DataType::U8, 0)], |e| {
            matches!(e, Error::SelfPeer { .. })
        }),
        (&[SendRecvItem::recv(&b, 17, DataType::F32, 1)], |e| {
            matches!(e, Error::BufferTooSmall { .. })
        }),
        (&[SendRecvItem::recv(&foreign, 1, DataType::U8, 1)], |e| {
            matches!(e, Error::WrongDevice { .. })
        }),
        (
            &[
                SendRecvItem::recv(&b, 8, DataType::U8, 1),
                SendRecvItem::recv(&b, 8, DataType::U8, 1),
            ],
            |e| matches!(e, Error::Overlap(_)),
        ),
        (
            &[
                SendRecvItem::recv(&b, 8, DataType::U8, 1),
                SendRecvItem::send(&b, 1, DataType::U8, 1),
            ],
            |e| matches!(e, Error::Overlap(_)),
        ),
    ];
    for (items, want) in bad {
        let e = c.batch_send_recv(items).unwrap_err();
        assert!(want(&e), "{e:?}");
    }
    assert_eq!(c.tags_issued(), tags, "nothing was enqueued");
    c.synchronize().unwrap();
}

/// A batch whose first item fails while the rest of the batch is still being enqueued reports
/// that failure at `synchronize`, as it would had it failed a moment later: the call itself
/// returns Ok, and neither says [`Error::CommFailed`], which means an *earlier* call failed.
/// Here rank 0's first send times out (rank 1 never receives; a 10 ms deadline, the least
/// there is) while its 99999 other items are still being enqueued (20-50 ms in `cargo test`'s
/// build here; on a machine that enqueues faster than the send times out, the test passes without
/// reaching that case). Before a batch's items stopped re-checking the rank, one of them
/// returned `CommFailed` from `batch_send_recv` (in every run of this test on that code).
/// `synchronize` names the send's timeout, or, when the main stream's wait for the end of the
/// batch ran out first (the failed link stream drops its 100000 tasks one by one; the wait
/// allows twice the deadline), that wait's timeout: both are rank 0's own failure in this
/// call. `AIV_BATCH_FAIL_REPS=N` repeats it.
#[test]
fn a_batch_that_fails_while_it_is_still_being_enqueued_reports_its_own_failure() {
    let reps = common::reps("AIV_BATCH_FAIL_REPS", 3);
    for rep in 0..reps {
        let w = World::sim_with(
            2,
            Config {
                buffer_bytes: Some(8 * 1024),
                exec_timeout: Some(Duration::from_millis(10)),
                ..Config::default()
            },
        )
        .unwrap();
        let c = &w.comms()[0];
        let one = c.alloc(4).unwrap();
        let items = vec![SendRecvItem::send(&one, 1, DataType::F32, 1); 100_000];
        let call = c.batch_send_recv(&items);
        let sync = c.synchronize();
        assert!(call.is_ok(), "repetition {rep}: the call returned {call:?}");
        assert!(
            matches!(
                sync,
                Err(Error::WaitTimeout { rank: 0, .. } | Error::EventTimeout { rank: 0, .. })
            ),
            "repetition {rep}: synchronize returned {sync:?}"
        );
    }
}

// ---- bad input ----

fn untouched(b: &DeviceBuffer, fill: u8) {
    assert!(
        b.to_vec::<u8>().unwrap().iter().all(|&x| x == fill),
        "buffer was touched"
    );
}

#[test]
fn bad_input_returns_typed_errors_and_touches_nothing() {
    let w = world(3, 8 * 1024);
    let c = &w.comms()[0];
    let send = c.alloc(1200).unwrap();
    let recv = c.alloc(1200).unwrap();
    send.fill(0x11).unwrap();
    recv.fill(0x22).unwrap();
    let f32 = DataType::F32;
    let sum = ReduceOp::Sum;
    let tags = c.tags_issued();
    let checks: Vec<(aiv_comm::Result<()>, &str)> = vec![
        (
            c.reduce_scatter(&send, &recv, 101, f32, sum),
            "BufferTooSmall",
        ),
        (
            c.reduce_scatter(&send, &recv, 10, f32, ReduceOp::Prod),
            "Unsupported",
        ),
        (
            c.reduce_scatter(&send, &recv, 10, DataType::U8, sum),
            "Unsupported",
        ),
        (
            c.reduce_scatter(&send, &send.view(4, 40).unwrap(), 10, f32, sum),
            "Overlap",
        ),
        (
            c.reduce_scatter(&send, &send.view(2, 40).unwrap(), 10, f32, sum),
            "Misaligned",
        ),
        (
            c.reduce_scatter_v(&send, &[1, 2], &[0, 1], &recv, 1, f32, sum),
            "InvalidArgument",
        ),
        (
            c.reduce_scatter_v(&send, &[1, 2, 3], &[0, 1, 3], &recv, 2, f32, sum),
            "InvalidArgument",
        ),
        (
            c.reduce_scatter_v(&send, &[1, 2, 3], &[0, 1, 300], &recv, 1, f32, sum),
            "BufferTooSmall",
        ),
        (
            c.all_gather_v(&send, 2, &recv, &[2, 2, 2], &[0, 1, 4], f32),
            "Overlap",
        ),
        (
            c.all_gather_v(&send, 3, &recv, &[2, 2, 2], &[0, 2, 4], f32),
            "InvalidArgument",
        ),
        (
            c.all_gather_v(&send, 2, &recv, &[2, 2, 2], &[0, 2, 299], f32),
            "BufferTooSmall",
        ),
        (
            c.all_gather_v(&send, 2, &recv, &[2, 2], &[0, 2], f32),
            "InvalidArgument",
        ),
        (c.broadcast(&send, &recv, 10, f32, 3), "InvalidArgument"),
        (c.broadcast(&send, &recv, 301, f32, 0), "BufferTooSmall"),
        (
            c.broadcast(&send, &send.view(4, 40).unwrap(), 10, f32, 0),
            "Overlap",
        ),
        (c.all_to_all(&send, &recv, 101, f32), "BufferTooSmall"),
        (c.all_to_all(&send, &send, 10, f32), "Overlap"),
        (
            c.all_to_all_v(
                &send,
                &[1, 1, 1],
                &[0, 1, 2],
                &recv,
                &[2, 1, 1],
                &[0, 2, 3],
                f32,
            ),
            "InvalidArgument",
        ),
        (
            c.all_to_all_v(
                &send,
                &[1, 1, 1],
                &[0, 1, 2],
                &recv,
                &[1, 2, 1],
                &[0, 0, 3],
                f32,
            ),
            "Overlap",
        ),
        (
            c.all_to_all_v(&send, &[1, 1], &[0, 1], &recv, &[1, 1], &[0, 1], f32),
            "InvalidArgument",
        ),
        (
            c.reduce_scatter(&w.comms()[1].alloc(1200).unwrap(), &recv, 10, f32, sum),
            "WrongDevice",
        ),
    ];
    for (i, (r, want)) in checks.into_iter().enumerate() {
        let e = r.expect_err(want);
        assert!(
            format!("{e:?}").starts_with(want),
            "check {i}: {e:?}, want {want}"
        );
    }
    assert_eq!(c.tags_issued(), tags);
    c.synchronize().unwrap();
    untouched(&send, 0x11);
    untouched(&recv, 0x22);
}

// ---- several blocks per peer ----

#[test]
fn every_collective_gives_the_same_results_over_several_blocks_per_peer() {
    for (ranks, parts) in [(2usize, 8u32), (3, 3), (5, 2), (4, 7)] {
        let w = split_world(ranks, 16 * 1024, Some(parts), None);
        let uneven: Vec<usize> = (0..ranks).map(|q| [1000, 0, 7, 3001][q % 4]).collect();
        rs_case(
            &w,
            &vec![999; ranks],
            DataType::F32,
            ReduceOp::Sum,
            true,
            true,
        );
        rs_case(&w, &uneven, DataType::Bf16, ReduceOp::Max, false, false);
        agv_case(&w, &uneven, DataType::U16, true);
        bcast_case(&w, 20_001, DataType::U8, ranks as u32 - 1, false);
        a2a_case(&w, &vec![vec![1001; ranks]; ranks], DataType::I8, true);
        let m: Vec<Vec<usize>> = (0..ranks)
            .map(|p| (0..ranks).map(|q| uneven[(p + q) % ranks]).collect())
            .collect();
        a2a_case(&w, &m, DataType::F64, false);
    }
    // 48 cores: 8 ranks x 8 parts would need 64; the split is capped at cores / ranks (6).
    let w = split_world(8, 16 * 1024, Some(8), None);
    rs_case(&w, &[555; 8], DataType::I32, ReduceOp::Sum, false, true);
}

#[test]
fn back_to_back_barriers_and_broadcasts_never_report_a_false_mismatch() {
    // A rank that leaves a call early starts the next one and overwrites its cell; a peer
    // that has not checked the earlier call's cell yet must not take that for a mismatch.
    let w = world(5, 4096);
    w.twin().unwrap().set_jitter_us(20);
    let res = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let b = c.alloc(10_000)?;
        for i in 0..60u32 {
            c.barrier()?;
            if c.rank() == i % 5 {
                b.fill(i as u8)?;
            }
            c.broadcast_in_place(&b, 10_000, DataType::U8, i % 5)?; // 3 chunks of the 4 KiB buffer
            c.barrier()?;
        }
        c.synchronize()?;
        b.to_vec()
    });
    for (r, o) in res.into_iter().enumerate() {
        assert!(o
            .unwrap_or_else(|e| panic!("rank {r}: {e}"))
            .iter()
            .all(|&x| x == 59));
    }
}

#[test]
fn more_cores_than_flag_cells_cap_the_blocks_per_peer() {
    // 8 ranks x 8 parts would be 64 blocks; the flag layout has cells for 48.
    let w = World::sim_with(
        8,
        Config {
            buffer_bytes: Some(1 << 20),
            cores: 64,
            blocks_per_peer: Some(8),
            ..Config::default()
        },
    )
    .unwrap();
    bcast_case(&w, 100_000, DataType::U8, 3, false);
    rs_case(&w, &[5000; 8], DataType::F32, ReduceOp::Sum, false, true);
    a2a_case(&w, &vec![vec![3000; 8]; 8], DataType::U8, true);
}

#[test]
fn an_empty_segment_may_have_any_displacement() {
    let w = world(2, 8 * 1024);
    let res = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let send = c.alloc_from(&[7u8 + c.rank() as u8])?;
        let recv = c.alloc(1)?;
        let me = c.rank() as usize;
        let counts = [1, 0];
        let send_count = counts[me];
        c.all_gather_v(
            &send,
            send_count,
            &recv,
            &counts,
            &[0, usize::MAX],
            DataType::U8,
        )?;
        // Rank me sends itself its element and the other rank nothing (at a displacement
        // past every buffer).
        let displs = if me == 0 {
            [0, usize::MAX]
        } else {
            [usize::MAX, 0]
        };
        let own = [1 - me, me];
        c.all_to_all_v(&send, &own, &displs, &recv, &own, &displs, DataType::U8)?;
        c.synchronize()?;
        recv.to_vec()
    });
    assert_eq!(res[0].as_ref().unwrap(), &[7]);
    assert_eq!(res[1].as_ref().unwrap(), &[8]);
}

#[test]
fn all_to_all_vc_packs_the_matrix_and_refuses_a_different_one() {
    for (ranks, buffer) in [
        (1usize, 8 * 1024),
        (2, 8 * 1024),
        (3, 4096),
        (5, 8 * 1024),
        (8, 16 * 1024),
    ] {
        let w = world(ranks, buffer);
        let m: Vec<usize> = (0..ranks * ranks)
            .map(|i| [0, 1, 5, 700, 2049][(i * 7 + 3) % 5])
            .collect();
        let at = |p: usize, q: usize| m[p * ranks + q];
        let inputs: Vec<Vec<u8>> = (0..ranks)
            .map(|p| {
                pattern(
                    (0..ranks).map(|q| at(p, q)).sum::<usize>() * 2,
                    500 + p as u64,
                )
            })
            .collect();
        let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
            let r = c.rank() as usize;
            let send = c.alloc_from(&inputs[r])?;
            let (all, recv) = guarded(c, (0..ranks).map(|p| at(p, r)).sum::<usize>() * 2)?;
            c.all_to_all_vc(&send, &m, &recv, DataType::Bf16)?;
            c.synchronize()?;
            all.to_vec::<u8>()
        });
        for (q, o) in outs.into_iter().enumerate() {
            let mut want = Vec::new();
            for p in 0..ranks {
                let start: usize = (0..q).map(|j| at(p, j)).sum::<usize>() * 2;
                want.extend_from_slice(&inputs[p][start..start + at(p, q) * 2]);
            }
            want.extend([SENTINEL; 64]);
            assert!(o.unwrap() == want, "{ranks} ranks: rank {q}");
        }
    }
    let w = world(3, 8 * 1024);
    let res = w.run(|c| -> aiv_comm::Result<()> {
        let mut m = vec![1usize; 9];
        if c.rank() == 2 {
            m[1] = 2; // rank 0 sends rank 1 two elements, says rank 2
        }
        let send = c.alloc(64)?;
        let recv = c.alloc(64)?;
        c.all_to_all_vc(&send, &m, &recv, DataType::F32)?;
        c.synchronize()
    });
    for (r, e) in res.into_iter().enumerate() {
        let msg = e.expect_err("a mismatch").to_string();
        assert!(msg.contains("at the same point"), "rank {r}: {msg}");
    }
    let c = &w.comms()[0];
    let b = c.alloc(64).unwrap();
    let e = c.all_to_all_vc(&b, &[1; 8], &b, DataType::U8).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
}
