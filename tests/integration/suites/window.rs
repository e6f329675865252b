//! Window memory (`Communicator::register`, host/window.rs): collectives whose send buffer a rank
//! registered read it in place instead of a staged copy, and give exactly what the staged
//! protocol gives, whichever ranks registered, in any layout, over several chunks; a registered
//! input may change once the collective has run; bad registrations change nothing; a mismatched
//! call is still an error on every rank.

use crate::common;

use std::time::Instant;

use aiv_comm::{AllGatherAlgo, AllReduceAlgo, Config, DataType, Error, ReduceOp, World};
use common::mismatch::assert_mismatch_on_every_rank;
use common::reduce::{assert_reduced, rank_inputs, REDUCIBLE};
use common::{assert_guarded, guarded, pattern};

/// A world whose HCCL buffer is small enough for a few KiB to take several chunks, and whose
/// launches run `parts` blocks per peer.
fn world(n: usize, buffer: usize, parts: Option<u32>) -> World {
    common::split_world_on(super::BACKEND, n, buffer, parts, None)
}

/// [`world`] whose reductions add in one fixed order (two-shot's bits then do not depend on
/// which peer's slice arrives first, so runs can be compared bit for bit).
fn deterministic_world(n: usize, buffer: usize, parts: Option<u32>) -> World {
    common::split_world_on(super::BACKEND, n, buffer, parts, Some(true))
}

/// Which ranks register their buffers.
#[derive(Clone, Copy, Debug)]
enum Who {
    Nobody,
    Everyone,
    /// Even ranks only: announcing ranks and staging ranks in one call.
    Even,
}

impl Who {
    fn registers(self, rank: u32) -> bool {
        match self {
            Who::Nobody => false,
            Who::Everyone => true,
            Who::Even => rank.is_multiple_of(2),
        }
    }
}

#[test]
fn all_gather_from_windows_gives_every_rank_every_input() {
    // 2, 3 and 5 ranks; one part or three per chunk; 3000 elements of 4 bytes over a 4 KiB
    // buffer: three chunks, the last ragged. Both layouts, in place and not, any ranks
    // registered.
    for (n, parts) in [(2, None), (3, Some(3)), (5, None)] {
        let w = world(n, 4096, parts);
        let count = 3000usize;
        let es = 4;
        let inputs: Vec<Vec<u8>> = (0..n)
            .map(|r| pattern(count * es, 7 * r as u64 + 1))
            .collect();
        let expect = inputs.concat();
        for algo in [AllGatherAlgo::PullParts, AllGatherAlgo::Pull] {
            for who in [Who::Everyone, Who::Even, Who::Nobody] {
                for in_place in [false, true] {
                    let outs = w.run(|c| -> aiv_comm::Result<Vec<u8>> {
                        let r = c.rank() as usize;
                        let (recv, main) = guarded(c, count * es * n)?;
                        let send = if in_place {
                            main.view(r * count * es, count * es)?
                        } else {
                            c.alloc(count * es)?
                        };
                        send.write(0, &inputs[r])?;
                        let window = if in_place { &main } else { &send };
                        if who.registers(c.rank()) {
                            c.register(window)?;
                        }
                        c.all_gather_with(&send, &main, count, DataType::F32, algo)?;
                        c.synchronize()?;
                        if who.registers(c.rank()) {
                            c.deregister(window)?;
                        }
                        recv.to_vec::<u8>()
                    });
                    for (r, o) in outs.into_iter().enumerate() {
                        let at = format!(
                            "n {n} parts {parts:?} {algo:?} {who:?} in place {in_place} rank {r}"
                        );
                        let o = o.unwrap_or_else(|e| panic!("{at}: {e}"));
                        assert_guarded(&o, &expect, &at);
                    }
                }
            }
        }
    }
}

/// Every rank's AllReduce result with `algo` of `count` elements of `dtype` with `op`, rank r's
/// input `inputs[r]`, registered by the ranks `who` picks; in place or not.
#[allow(clippy::too_many_arguments)]
fn all_reduce(
    w: &World,
    algo: AllReduceAlgo,
    inputs: &[Vec<u8>],
    count: usize,
    dtype: DataType,
    op: ReduceOp,
    who: Who,
    in_place: bool,
) -> Vec<Vec<u8>> {
    let es = dtype.size();
    w.run(|c| -> aiv_comm::Result<Vec<u8>> {
        let r = c.rank() as usize;
        let send = c.alloc(count * es)?;
        send.write(0, &inputs[r])?;
        let (recv, main) = if in_place {
            (send.clone(), send.clone())
        } else {
            guarded(c, count * es)?
        };
        if who.registers(c.rank()) {
            c.register(&send)?;
        }
        c.all_reduce_with(&send, &main, count, dtype, op, algo)?;
        c.synchronize()?;
        recv.to_vec::<u8>()
    })
    .into_iter()
    .enumerate()
    .map(|(r, o)| o.unwrap_or_else(|e| panic!("rank {r}: {e}")))
    .collect()
}

#[test]
fn all_reduce_from_windows_gives_the_staged_bits_on_every_rank() {
    // Every reducible type, 2 to 4 ranks, one-shot (ranks 0 and 1 start from their own input,
    // the others from rank 0's) with sum and max, and two-shot (slice owners reduce peers'
    // slices into their HCCL buffers, in a fixed order: deterministic mode) with sum; several
    // chunks with two parts each; in place too (one-shot stages then, two-shot reads the
    // windows).
    for n in [2usize, 3, 4] {
        for dtype in REDUCIBLE {
            let es = dtype.size();
            let count = 2500usize;
            let inputs = rank_inputs(dtype, n, count);
            for (op, algo) in [
                (ReduceOp::Sum, AllReduceAlgo::OneShot),
                (ReduceOp::Max, AllReduceAlgo::OneShot),
                (ReduceOp::Sum, AllReduceAlgo::TwoShot),
            ] {
                // A fresh world for every run: a reader that ignored an announcement would
                // find the HCCL buffers empty, not holding an earlier run's identical staging.
                let run = |who, in_place| {
                    let w = deterministic_world(n, 4096, Some(2));
                    all_reduce(&w, algo, &inputs, count, dtype, op, who, in_place)
                };
                let at =
                    |who: Who, r: usize| format!("n {n} {dtype} {op} {algo:?} {who:?} rank {r}");
                let staged = run(Who::Nobody, false);
                for (r, got) in staged.iter().enumerate() {
                    let what = at(Who::Nobody, r);
                    assert_reduced(dtype, op, &inputs, 0, count, &got[..count * es], &what);
                    assert_eq!(got, &staged[0], "{what}: every rank the same bits");
                }
                for who in [Who::Everyone, Who::Even] {
                    for (r, got) in run(who, false).iter().enumerate() {
                        assert_guarded(got, &staged[0][..count * es], &at(who, r));
                    }
                    for (r, got) in run(who, true).iter().enumerate() {
                        assert_eq!(got[..], staged[0][..count * es], "{} in place", at(who, r));
                    }
                }
            }
        }
    }
}

#[test]
fn a_registered_input_may_change_once_the_collective_has_run() {
    // Each rank enqueues an AllGather from its registered input and at once overwrites the
    // input from the host (a host write waits for the enqueued work that uses the buffer, and
    // that work ends only after every peer has read the input). The output holds the old
    // inputs; the next AllGather the new ones.
    let n = 3;
    let w = world(n, 1 << 20, None);
    // Random delays before GM accesses, so that a peer late to read would meet the new input.
    common::jitter(&w, 200);
    let count = 16 << 10;
    let old = |r: usize| vec![r as u8 + 1; count];
    let new = |r: usize| vec![r as u8 + 101; count];
    let outs = w.run(|c| -> aiv_comm::Result<(Vec<u8>, Vec<u8>)> {
        let r = c.rank() as usize;
        let send = c.alloc_from(&old(r))?;
        c.register(&send)?;
        let first = c.alloc(n * count)?;
        let second = c.alloc(n * count)?;
        c.all_gather(&send, &first, count, DataType::U8)?;
        send.write(0, &new(r))?;
        c.all_gather(&send, &second, count, DataType::U8)?;
        c.synchronize()?;
        Ok((first.to_vec::<u8>()?, second.to_vec::<u8>()?))
    });
    let want_old: Vec<u8> = (0..n).flat_map(old).collect();
    let want_new: Vec<u8> = (0..n).flat_map(new).collect();
    for (r, o) in outs.into_iter().enumerate() {
        let (a, b) = o.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert!(
            a == want_old,
            "rank {r}: the first AllGather saw a later input"
        );
        assert!(
            b == want_new,
            "rank {r}: the second AllGather missed the new input"
        );
    }
}

#[test]
fn bad_registrations_are_refused_and_change_nothing() {
    let w = common::make_world(super::BACKEND, 2, Config::default()).unwrap();
    let other = common::make_world(super::BACKEND, 2, Config::default()).unwrap();
    let c = &w.comms()[0];
    let buf = c.alloc(4096).unwrap();
    c.register(&buf.view(1024, 1024).unwrap()).unwrap();
    let before = c.windows();
    // Overlapping a registered range, partly or whole.
    for (off, len) in [(0, 2048), (1024, 1024), (2000, 100)] {
        match c.register(&buf.view(off, len).unwrap()) {
            Err(Error::Overlap(m)) => assert!(m.contains("overlaps the registered"), "{m}"),
            r => panic!("[{off}, +{len}): {r:?}"),
        }
    }
    // A peer's buffer, another world's, nothing at all.
    let peer = w.comms()[1].alloc(64).unwrap();
    assert!(matches!(c.register(&peer), Err(Error::WrongDevice { .. })));
    let foreign = other.comms()[0].alloc(64).unwrap();
    assert!(matches!(
        c.register(&foreign),
        Err(Error::WrongWorld { .. })
    ));
    assert!(matches!(
        c.register(&buf.view(0, 0).unwrap()),
        Err(Error::InvalidArgument(_))
    ));
    // Deregistering what was not registered, or a part of a registered range.
    for (off, len) in [(0, 1024), (1024, 512), (1024, 2048)] {
        assert!(
            matches!(
                c.deregister(&buf.view(off, len).unwrap()),
                Err(Error::InvalidArgument(_))
            ),
            "[{off}, +{len})"
        );
    }
    assert_eq!(c.windows(), before);
    // A neighbouring range of the same allocation is another window.
    c.register(&buf.view(2048, 1024).unwrap()).unwrap();
    c.deregister(&buf.view(1024, 1024).unwrap()).unwrap();
    assert_eq!(c.windows(), vec![(buf.addr() + 2048, 1024)]);
}

#[test]
fn a_mismatched_call_from_an_announcing_rank_is_an_error_on_every_rank() {
    // Rank 1 registers its input (its ready flag announces it) and gathers another count than
    // the others: every rank fails with the mismatch, and the announcing rank's call is named
    // as the call it is.
    let n = 3;
    let w = common::make_world(super::BACKEND, n, Config::default()).unwrap();
    let t0 = Instant::now();
    let res = w.run(|c| -> aiv_comm::Result<()> {
        let count = if c.rank() == 1 { 48 } else { 64 };
        let send = c.alloc(count * 4)?;
        c.register(&send)?;
        let recv = c.alloc(n * count * 4)?;
        c.all_gather(&send, &recv, count, DataType::F32)?;
        c.synchronize()
    });
    assert_mismatch_on_every_rank(&w, &res, t0.elapsed(), 1, "all_gather 64 vs 48, registered");
    let named = res.iter().any(|r| {
        r.as_ref()
            .err()
            .is_some_and(|e| e.to_string().contains("all_gather of 48 x float"))
    });
    assert!(named, "the announcing rank's call is named: {res:?}");
}

#[test]
fn a_failed_call_ends_only_when_no_peer_reads_its_input_any_more() {
    // Ranks 0 and 1 gather from registered 8 MiB inputs (a block per peer); rank 2 never calls,
    // so rank 0's wait for it times out 200 ms after rank 0 starts. Rank 1 starts 100 ms later,
    // and its copy of rank 0's input is slowed down (random delays before GM accesses), so it is
    // still copying when rank 0 fails. Rank 0 frees its input as soon as its call has returned
    // the failure: by then no peer may still read it (a read of it would be an access outside
    // every live GM allocation on rank 1, or worse).
    let w = common::make_world(
        super::BACKEND,
        3,
        Config {
            buffer_bytes: Some(16 << 20),
            exec_timeout: Some(std::time::Duration::from_millis(200)),
            ..Config::default()
        },
    )
    .unwrap();
    common::jitter(&w, 20_000);
    let res = w.run(|c| -> aiv_comm::Result<()> {
        if c.rank() == 2 {
            return Ok(());
        }
        let count = 8 << 20;
        let send = c.alloc(count)?;
        c.register(&send)?;
        let recv = c.alloc(3 * count)?;
        if c.rank() == 1 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        c.all_gather_with(&send, &recv, count, DataType::U8, AllGatherAlgo::Pull)?;
        let r = c.synchronize();
        c.deregister(&send)?;
        drop(send); // the only handle left: the input's memory is freed here
        r
    });
    for (r, e) in res.iter().enumerate().take(2) {
        let msg = match e {
            Err(e) => e.to_string(),
            Ok(()) => panic!("rank {r}: rank 2 never called, yet the call succeeded"),
        };
        assert!(
            !msg.contains("outside every live GM allocation"),
            "rank {r} read freed memory: {msg}"
        );
    }
}
