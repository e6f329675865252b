//! AllGather and AllReduce against host references: every rank count 1..=16, size classes (0,
//! one element, odd bytes, exactly the buffer, buffer + 1 element, many chunks), every dtype x op,
//! in place and out of place, thousands of launches across tag wraps, two worlds at once, and
//! bad input (typed error, nothing touched).

use crate::common;

use aiv_comm::{
    AllGatherAlgo, AllReduceAlgo, Config, DataType, DeviceBuffer, Error, ReduceOp, World,
};
use common::gather::{assert_all_gather, assert_all_gather_by};
use common::reduce::{assert_reduced, enc, rank_inputs, value, REDUCIBLE};

fn world(ranks: usize, buffer: usize) -> World {
    common::make_world(
        super::BACKEND,
        ranks,
        Config {
            buffer_bytes: Some(buffer),
            cores: 32,
            ..Config::default()
        },
    )
    .unwrap()
}

#[test]
fn all_gather_every_rank_count_and_size_class() {
    let buffer = 8 * 1024;
    for ranks in 1..=16 {
        let w = world(ranks, buffer);
        for (count, dtype) in [
            (0usize, DataType::F32),
            (1, DataType::I8),
            (333, DataType::U8),
            (buffer / 4, DataType::F32),
            (buffer / 4 + 1, DataType::F32),
            (3 * buffer / 8 + 5, DataType::I64),
        ] {
            assert_all_gather(&w, count, dtype, ranks % 2 == 0, AllGatherAlgo::Auto);
        }
    }
}

#[test]
fn all_gather_every_type_in_and_out_of_place() {
    let w = world(5, 16 * 1024);
    for dtype in DataType::ALL {
        assert_all_gather(&w, 5000, dtype, false, AllGatherAlgo::Auto);
        assert_all_gather(&w, 777, dtype, true, AllGatherAlgo::Auto);
    }
}

// ---- AllReduce reference ----

fn all_reduce_case(w: &World, count: usize, dtype: DataType, op: ReduceOp, in_place: bool) {
    all_reduce_algo_case(w, count, dtype, op, in_place, AllReduceAlgo::Auto)
}

fn all_reduce_algo_case(
    w: &World,
    count: usize,
    dtype: DataType,
    op: ReduceOp,
    in_place: bool,
    algo: AllReduceAlgo,
) {
    let n = w.size();
    let es = dtype.size();
    let inputs = rank_inputs(dtype, n, count);
    let outs = w.run(|comm| -> aiv_comm::Result<Vec<u8>> {
        let r = comm.rank() as usize;
        let send = comm.alloc_from(&inputs[r])?;
        let recv = if in_place {
            send.clone()
        } else {
            comm.alloc(count * es)?
        };
        comm.all_reduce_with(&send, &recv, count, dtype, op, algo)?;
        comm.synchronize()?;
        recv.to_vec::<u8>()
    });
    for (r, o) in outs.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_reduced(
            dtype,
            op,
            &inputs,
            0,
            count,
            &o,
            &format!("rank {r} of {n}"),
        );
    }
}

#[test]
fn all_reduce_every_rank_count_and_size_class() {
    let buffer = 8 * 1024;
    for ranks in 1..=16 {
        let w = world(ranks, buffer);
        for count in [
            0usize,
            1,
            333,
            buffer / 4,
            buffer / 4 + 1,
            5 * buffer / 4 + 3,
        ] {
            all_reduce_case(&w, count, DataType::I32, ReduceOp::Sum, ranks % 3 == 0);
        }
    }
}

#[test]
fn all_reduce_every_dtype_and_op() {
    for ranks in [3usize, 8] {
        let w = world(ranks, 32 * 1024);
        for dtype in REDUCIBLE {
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                all_reduce_case(&w, 2001, dtype, op, false);
                all_reduce_case(&w, 1000, dtype, op, true);
            }
        }
    }
}

#[test]
fn all_reduce_two_shot_sizes() {
    // Above ONE_SHOT_MAX_BYTES, with a buffer that forces several two-shot chunks.
    let w = world(5, 192 * 1024);
    let count = aiv_comm::plan::ONE_SHOT_MAX_BYTES / 4 + 12_345;
    all_reduce_case(&w, count, DataType::F32, ReduceOp::Sum, false);
    all_reduce_case(&w, count, DataType::I8, ReduceOp::Sum, true);
    all_reduce_case(&w, count, DataType::Bf16, ReduceOp::Max, false);
}

#[test]
fn both_algorithms_every_rank_count_give_the_same_sums() {
    for ranks in [1usize, 2, 3, 4, 7, 16] {
        let w = world(ranks, 16 * 1024);
        for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
            for count in [1usize, 31, 4099, 10_007] {
                all_reduce_algo_case(
                    &w,
                    count,
                    DataType::I16,
                    ReduceOp::Sum,
                    count % 2 == 1,
                    algo,
                );
                all_reduce_algo_case(&w, count, DataType::F16, ReduceOp::Min, false, algo);
            }
        }
    }
}

#[test]
fn thousands_of_launches_on_one_communicator() {
    let w = common::make_world(
        super::BACKEND,
        3,
        Config {
            buffer_bytes: Some(4096),
            cores: 32,
            ..Config::default()
        },
    )
    .unwrap();
    let outs = w.run(|comm| -> aiv_comm::Result<(Vec<i32>, i64)> {
        let send = comm.alloc_from(&[comm.rank() as i32 + 1; 16])?;
        let recv = comm.alloc(64)?;
        for _ in 0..3000 {
            comm.all_reduce(&send, &recv, 16, DataType::I32, ReduceOp::Sum)?;
        }
        comm.synchronize()?;
        Ok((recv.to_vec()?, comm.tags_issued()))
    });
    for o in outs {
        let (v, tags) = o.unwrap();
        assert!(v.iter().all(|&x| x == 6), "{v:?}");
        assert_eq!(tags, 3000, "one tag per launch");
    }
}

#[test]
fn two_worlds_at_once() {
    let a = world(4, 16 * 1024);
    let b = world(3, 16 * 1024);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..20 {
                all_reduce_case(&a, 3000, DataType::F32, ReduceOp::Sum, false);
            }
        });
        s.spawn(|| {
            for _ in 0..20 {
                assert_all_gather(&b, 3000, DataType::U8, false, AllGatherAlgo::Auto);
            }
        });
    });
}

// ---- bad input ----

fn unchanged(buf: &DeviceBuffer, fill: u8) {
    assert!(
        buf.to_vec::<u8>().unwrap().iter().all(|&b| b == fill),
        "buffer was touched"
    );
}

#[test]
fn bad_input_returns_typed_errors_and_touches_nothing() {
    assert!(matches!(
        World::sim(0),
        Err(Error::RankCount { ranks: 0, .. })
    ));
    assert!(matches!(
        World::sim(33),
        Err(Error::RankCount { ranks: 33, .. })
    ));
    assert!(matches!(
        World::sim_with(
            2,
            Config {
                buffer_bytes: Some(100),
                ..Config::default()
            }
        ),
        Err(Error::Config(_))
    ));
    let w = world(2, 16 * 1024);
    let other = &w.comms()[1];
    let c = &w.comms()[0];
    let send = c.alloc(400).unwrap();
    let recv = c.alloc(400).unwrap();
    send.fill(0x11).unwrap();
    recv.fill(0x22).unwrap();
    let foreign = other.alloc(400).unwrap();
    // Length mismatches.
    assert!(matches!(
        c.all_reduce(&send, &recv, 101, DataType::F32, ReduceOp::Sum),
        Err(Error::BufferTooSmall {
            what: "send buffer",
            needed: 404,
            len: 400
        })
    ));
    assert!(matches!(
        c.all_gather(&send, &recv, 100, DataType::F32),
        Err(Error::BufferTooSmall {
            what: "recv buffer",
            needed: 800,
            ..
        })
    ));
    // Unsupported type/op pairs.
    assert!(matches!(
        c.all_reduce(&send, &recv, 10, DataType::F32, ReduceOp::Prod),
        Err(Error::Unsupported {
            op: ReduceOp::Prod,
            ..
        })
    ));
    assert!(matches!(
        c.all_reduce(&send, &recv, 10, DataType::F64, ReduceOp::Sum),
        Err(Error::Unsupported {
            dtype: DataType::F64,
            ..
        })
    ));
    assert!(matches!(
        c.all_reduce(&send, &recv, 10, DataType::U8, ReduceOp::Max),
        Err(Error::Unsupported { .. })
    ));
    // Misaligned view.
    let odd = send.view(2, 200).unwrap();
    assert!(matches!(
        c.all_reduce(&odd, &recv, 10, DataType::F32, ReduceOp::Sum),
        Err(Error::Misaligned {
            what: "send buffer",
            align: 4,
            ..
        })
    ));
    // A buffer of another rank.
    assert!(matches!(
        c.all_reduce(&foreign, &recv, 10, DataType::F32, ReduceOp::Sum),
        Err(Error::WrongDevice {
            buffer_rank: 1,
            comm_rank: 0,
            ..
        })
    ));
    // Overlap that is not in place.
    assert!(matches!(
        c.all_reduce(
            &send,
            &send.view(4, 200).unwrap(),
            10,
            DataType::F32,
            ReduceOp::Sum
        ),
        Err(Error::Overlap(_))
    ));
    let big = c.alloc(800).unwrap();
    big.fill(0x33).unwrap();
    assert!(matches!(
        c.all_gather(&big.view(8, 400).unwrap(), &big, 100, DataType::F32),
        Err(Error::Overlap(_))
    ));
    c.synchronize().unwrap();
    unchanged(&send, 0x11);
    unchanged(&recv, 0x22);
    unchanged(&big, 0x33);
    unchanged(&foreign, 0);
    assert!(
        c.failure().is_none(),
        "argument errors must not fail the communicator"
    );
}

#[test]
fn hccl_buffsize_and_exec_timeout_are_read_as_hccl_reads_them() {
    use std::time::Duration;
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let c = Config::default();
    let e = env(&[("HCCL_BUFFSIZE", "3"), ("HCCL_EXEC_TIMEOUT", "1.25")]);
    assert_eq!(c.buffer_bytes_with(e).unwrap(), 3 << 20);
    assert_eq!(c.timeout_with(e).unwrap(), Duration::from_millis(1250));
    let none = env(&[]);
    assert_eq!(
        c.buffer_bytes_with(none).unwrap(),
        aiv_comm::DEFAULT_BUFFER_BYTES
    );
    assert_eq!(
        c.timeout_with(none).unwrap(),
        aiv_comm::DEFAULT_EXEC_TIMEOUT
    );
    for (v, secs) in [("30", 30.0), (".5", 0.5), ("0.01", 0.01), ("7.", 7.0)] {
        let t = Config::default()
            .timeout_with(|_| Some(v.to_string()))
            .unwrap();
        assert_eq!(t, Duration::from_secs_f64(secs), "{v}");
    }
    // The Config wins over the environment.
    let explicit = Config {
        buffer_bytes: Some(1 << 20),
        exec_timeout: Some(Duration::from_secs(2)),
        ..Config::default()
    };
    assert_eq!(explicit.buffer_bytes_with(e).unwrap(), 1 << 20);
    assert_eq!(explicit.timeout_with(e).unwrap(), Duration::from_secs(2));
    // As HCCL's AIV mode reads it: 0, and anything above 1091 s, mean 1091 s.
    for (v, secs) in [
        ("0", 1091),
        ("0.00", 1091),
        ("1091", 1091),
        ("1092", 1091),
        ("99999999999999999999", 1091),
    ] {
        let t = Config::default()
            .timeout_with(|_| Some(v.to_string()))
            .unwrap();
        assert_eq!(t, Duration::from_secs(secs), "{v}");
        assert_eq!(aiv_comm::world::parse_hccl_exec_timeout(v), Some(t));
    }
    // HCCL_DETERMINISTIC: true, strict (the same fixed order here) or false.
    for (v, want) in [("true", true), ("STRICT", true), ("false", false)] {
        assert_eq!(
            c.deterministic_with(|k| (k == "HCCL_DETERMINISTIC").then(|| v.to_string()))
                .unwrap(),
            want
        );
    }
    assert!(c.deterministic_with(|_| Some("1".into())).is_err());
    assert!(!c.deterministic_with(|_| None).unwrap());
    // Malformed values are errors, not silently replaced.
    for bad in ["0.001", "abc", "-1", "1e3", "", "."] {
        assert!(
            matches!(
                c.timeout_with(|_| Some(bad.to_string())),
                Err(Error::Config(_))
            ),
            "HCCL_EXEC_TIMEOUT={bad}"
        );
    }
    assert!(matches!(
        c.buffer_bytes_with(|_| Some("lots".into())),
        Err(Error::Config(_))
    ));
}

#[test]
fn configurations_that_cannot_work_are_refused_when_the_world_is_made() {
    use std::time::Duration;
    let bad = [
        Config {
            exec_timeout: Some(Duration::from_micros(5)), // below the twin's deadline resolution
            ..Config::default()
        },
        Config {
            cores: 1, // 2 ranks need 2 cores
            ..Config::default()
        },
        Config {
            cores: 0,
            ..Config::default()
        },
    ];
    for cfg in bad {
        match World::sim_with(2, cfg.clone()) {
            Err(Error::Config(msg)) => assert!(!msg.is_empty()),
            other => panic!(
                "{cfg:?}: expected a configuration error, got {:?}",
                other.err()
            ),
        }
    }
}

// ---- halving-doubling AllReduce across streams ----

#[test]
fn hd_all_reduce_every_rank_count() {
    for ranks in 1..=16 {
        // A small buffer: several chunks, and segments of odd sizes.
        let w = world(ranks, 12 * 1024);
        for count in [0usize, 1, 777, 5000] {
            all_reduce_algo_case(
                &w,
                count,
                DataType::I32,
                ReduceOp::Sum,
                count == 777,
                AllReduceAlgo::Hd,
            );
        }
    }
}

#[test]
fn hd_all_reduce_every_dtype_and_op_matches_the_atomic_kernels() {
    for ranks in [3usize, 4, 6] {
        let w = world(ranks, 16 * 1024);
        for dtype in REDUCIBLE {
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                all_reduce_algo_case(&w, 1500, dtype, op, false, AllReduceAlgo::Hd);
                if !dtype.is_float() {
                    // Integers: bit-identical to the one-shot atomic kernel.
                    let outs = w.run(|c| -> aiv_comm::Result<(Vec<u8>, Vec<u8>)> {
                        let es = dtype.size();
                        let data: Vec<u8> = (0..1500)
                            .flat_map(|i| enc(dtype, value(dtype, c.rank() as usize, i)))
                            .collect();
                        let send = c.alloc_from(&data)?;
                        let a = c.alloc(1500 * es)?;
                        let b = c.alloc(1500 * es)?;
                        c.all_reduce_with(&send, &a, 1500, dtype, op, AllReduceAlgo::Hd)?;
                        c.all_reduce_with(&send, &b, 1500, dtype, op, AllReduceAlgo::OneShot)?;
                        c.synchronize()?;
                        Ok((a.to_vec()?, b.to_vec()?))
                    });
                    for o in outs {
                        let (a, b) = o.unwrap();
                        assert_eq!(a, b, "{ranks} ranks {dtype} {op}");
                    }
                }
            }
        }
    }
}

#[test]
fn hd_trace_on_5_ranks_has_every_stage_in_order() {
    let w = world(5, 16 * 1024);
    w.set_tracing(true);
    let r = w.run(|c| -> aiv_comm::Result<()> {
        let send = c.alloc_from(&[1i32; 100])?;
        let recv = c.alloc(400)?;
        c.all_reduce_hd(&send, &recv, 100, DataType::I32, ReduceOp::Sum)?;
        c.synchronize()?;
        assert!(recv.to_vec::<i32>()?.iter().all(|&x| x == 5));
        Ok(())
    });
    r.into_iter().for_each(|x| x.unwrap());
    let trace = w.trace();
    for rank in 0..5u32 {
        // The main stream runs its tasks one after another: its stage sequence is the order.
        let mut main: Vec<_> = trace
            .iter()
            .filter(|e| e.rank == rank && e.stream == "main")
            .collect();
        main.sort_by(|a, b| a.start_us.partial_cmp(&b.start_us).unwrap());
        let mut order: Vec<String> = Vec::new();
        for e in &main {
            if order.last() != Some(&e.stage) {
                order.push(e.stage.clone());
            }
        }
        let want: Vec<&str> = if rank < 4 {
            vec!["handshake", "pre-step", "step 1", "step 2", "final"]
        } else {
            vec!["handshake", "pre-step", "final"]
        };
        assert_eq!(order, want, "rank {rank}");
        // Each step's exchange on the sub-streams happens inside that step of the main stream.
        if rank < 4 {
            for s in ["step 1", "step 2"] {
                let m: Vec<_> = main.iter().filter(|e| e.stage == s).collect();
                let (m0, m1) = (m[0].start_us, m.last().unwrap().end_us);
                let subs: Vec<_> = trace
                    .iter()
                    .filter(|e| {
                        e.rank == rank
                            && e.stage == s
                            && (e.task == "reduce" || e.task.ends_with("data_signal"))
                    })
                    .collect();
                assert_eq!(
                    subs.len(),
                    3,
                    "rank {rank} {s}: reduce, tx and rx data signals"
                );
                for e in subs {
                    assert!(
                        e.start_us >= m0 && e.end_us <= m1,
                        "rank {rank} {s}: {e:?} outside {m0}..{m1}"
                    );
                }
            }
        }
    }
    let json = w.trace_chrome_json();
    assert!(json.starts_with("{\"traceEvents\":[{\"name\":"), "{json}");
    assert!(json.contains("\"tid\":\"hd-tx\"") && json.contains("\"stage\":\"step 2\""));
}

#[test]
fn hd_all_reduce_runs_with_as_few_cores_as_ranks() {
    for ranks in [2usize, 3, 5] {
        let w = common::make_world(
            super::BACKEND,
            ranks,
            Config {
                buffer_bytes: Some(12 * 1024),
                cores: ranks as u32,
                exec_timeout: Some(std::time::Duration::from_secs(20)),
                ..Config::default()
            },
        )
        .unwrap();
        all_reduce_algo_case(
            &w,
            5000,
            DataType::I32,
            ReduceOp::Sum,
            false,
            AllReduceAlgo::Hd,
        );
    }
}

#[test]
fn a_rank_missing_from_hd_is_named_in_every_error() {
    use std::time::Duration;
    let w = common::make_world(
        super::BACKEND,
        4,
        Config {
            buffer_bytes: Some(16 * 1024),
            exec_timeout: Some(Duration::from_millis(300)),
            cores: 16,
            ..Config::default()
        },
    )
    .unwrap();
    let res = w.run(|c| -> aiv_comm::Result<()> {
        if c.rank() == 3 {
            return Ok(()); // never joins
        }
        let x = c.alloc_from(&[1i32; 64])?;
        c.all_reduce_hd(&x, &x, 64, DataType::I32, ReduceOp::Sum)?;
        c.synchronize()
    });
    let errors: Vec<String> = res[..3]
        .iter()
        .map(|r| r.as_ref().unwrap_err().to_string())
        .collect();
    for e in &errors {
        assert!(
            !e.contains("hd done") && !e.contains("hd start"),
            "an internal event name leaked: {e}"
        );
    }
    // Each rank names the peer it waited for (rank 2 waits for rank 3 in the handshake, ranks
    // 0 and 1 for each other or rank 2): someone names the missing rank.
    assert!(
        errors
            .iter()
            .any(|e| e.contains("rank 3's sync area") || e.contains("from rank 3")),
        "nobody names the missing rank: {errors:?}"
    );
    for e in &errors {
        assert!(e.contains("timed out") && e.contains("'s sync area"), "{e}");
    }
}

#[test]
fn a_panicking_rank_stops_its_peers_at_once() {
    use std::time::{Duration, Instant};
    let w = common::make_world(
        super::BACKEND,
        3,
        Config {
            buffer_bytes: Some(16 * 1024),
            exec_timeout: Some(Duration::from_secs(60)),
            cores: 8,
            ..Config::default()
        },
    )
    .unwrap();
    let t0 = Instant::now();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.run(|c| -> aiv_comm::Result<()> {
            if c.rank() == 1 {
                std::thread::sleep(Duration::from_millis(50));
                panic!("rank 1 gives up");
            }
            let x = c.alloc_from(&[1.0f32; 1000])?;
            c.all_reduce(&x, &x, 1000, DataType::F32, ReduceOp::Sum)?;
            c.synchronize()
        })
    }));
    let payload = caught.expect_err("run re-raises the rank's panic");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"rank 1 gives up"));
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the peers waited {:?} for the panicked rank",
        t0.elapsed()
    );
    // The peers' communicators name the cause: the panic itself, or their launch that it
    // stopped (whichever came first), both naming rank 1.
    let cause = w.comms()[0].failure().unwrap();
    let text = cause.to_string();
    assert!(
        text.contains("rank 1") && text.contains("panicked"),
        "{text}"
    );
    assert!(
        matches!(
            &cause,
            Error::Stopped(aiv_comm::StopCause::HostPanic { rank: 1 })
        ) || matches!(&cause, Error::Fault(f) if f.kind == aiv_comm::FaultKind::PeerAborted),
        "{cause:?}"
    );
}

#[test]
fn ranks_on_either_pull_layout_gather_together() {
    // Pull (a block per peer and part) and PullParts (a block per part) share cells and
    // copies, so a mix of them across ranks is one AllGather; several chunks (a 4 KiB buffer),
    // several parts.
    for (ranks, parts) in [(2usize, 1u32), (3, 2), (5, 3)] {
        let w = common::split_world_on(super::BACKEND, ranks, 4096, Some(parts), None);
        for first in [AllGatherAlgo::Pull, AllGatherAlgo::PullParts] {
            let other = if first == AllGatherAlgo::Pull {
                AllGatherAlgo::PullParts
            } else {
                AllGatherAlgo::Pull
            };
            let by_rank = |r: usize| if r.is_multiple_of(2) { first } else { other };
            assert_all_gather_by(&w, 10_007, DataType::U8, false, by_rank);
            assert_all_gather_by(&w, 3001, DataType::F32, true, by_rank);
        }
    }
}

#[test]
fn all_gather_and_all_reduce_over_several_blocks_per_peer() {
    for (ranks, parts) in [(2usize, 8u32), (3, 3), (5, 4)] {
        let w = common::split_world_on(super::BACKEND, ranks, 64 * 1024, Some(parts), None);
        for algo in [AllGatherAlgo::Pull, AllGatherAlgo::PullParts] {
            assert_all_gather(&w, 40_003, DataType::U8, false, algo);
            assert_all_gather(&w, 7001, DataType::F32, true, algo);
        }
        for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
            all_reduce_algo_case(&w, 30_011, DataType::F32, ReduceOp::Sum, false, algo);
            all_reduce_algo_case(&w, 5003, DataType::I16, ReduceOp::Min, true, algo);
        }
    }
}
