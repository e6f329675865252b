//! Reliability rules a user relies on after something went wrong: an error stays reported, a
//! buffer a failed or dropped collective was to write never reads back as a result, sizes from
//! settings cannot wrap, and `synchronize` waits for what came before it only. The rules of a
//! user's own launches (a failed one poisons what it declared it writes, one beyond the flag
//! layout is refused, a panic in its argument closure stops the world at once) are tested with a
//! self-test kernel as the user's: twin-tests/tests/twin/user_launches.rs.

use std::time::Duration;

use aiv_comm::{Config, DataType, Error, Event, ReduceOp, World};

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

// ---- 1. errors stay reported ----

#[test]
fn an_error_stays_reported_and_unwritten_outputs_never_read_back_as_results() {
    let w = world(2, Duration::from_millis(300));
    let res = w.run(|c| -> aiv_comm::Result<()> {
        if c.rank() == 1 {
            return Ok(()); // never joins
        }
        let x = c.alloc_from(&[1.0f32; 256])?;
        let a = c.alloc_from(&[7.0f32; 256])?;
        let b = c.alloc_from(&[9.0f32; 256])?;
        c.all_reduce(&x, &a, 256, DataType::F32, ReduceOp::Sum)?; // times out
        c.all_reduce(&x, &b, 256, DataType::F32, ReduceOp::Sum)?; // dropped unrun
        let first = c.synchronize().unwrap_err();
        assert!(matches!(first, Error::WaitTimeout { .. }), "{first}");
        // Asked again, the stream and the communicator still report it.
        for _ in 0..2 {
            let again = c.synchronize().unwrap_err();
            assert!(again.to_string().contains("timed out"), "{again}");
        }
        // The output of the failed launch (partly written) and that of the dropped one (never
        // written) are errors naming the timeout, not data.
        for (name, buf) in [("failed", &a), ("dropped", &b)] {
            let r = buf.to_vec::<f32>();
            match &r {
                Err(e @ Error::Poisoned { .. }) => {
                    assert!(e.to_string().contains("timed out"), "{name}: {e}")
                }
                other => panic!("{name} launch's output read back as {other:?}"),
            }
            let t = c.typed();
            let s = aiv_comm::DeviceSlice::<f32>::try_from(buf.clone())?;
            assert!(t.dtoh_sync_copy(&s).is_err(), "{name}: dtoh_sync_copy");
        }
        // The input, which no failed launch wrote, still reads.
        assert_eq!(x.to_vec::<f32>()?, vec![1.0; 256]);
        Ok(())
    });
    res.into_iter().for_each(|r| r.unwrap());
}

// ---- 2. sizes from settings cannot wrap ----

#[test]
fn a_buffer_size_that_cannot_be_allocated_is_refused_naming_the_setting() {
    for bytes in [usize::MAX, usize::MAX - 4096, 1usize << 62, 1 << 50] {
        let cfg = Config {
            buffer_bytes: Some(bytes),
            ..Config::default()
        };
        match World::sim_with(2, cfg) {
            Err(Error::Config(m)) => assert!(m.contains("buffer_bytes"), "{bytes}: {m}"),
            other => panic!("buffer_bytes {bytes}: {:?}", other.map(|w| w.size())),
        }
    }
    // The same from HCCL_BUFFSIZE (MB), read through the lookup the World uses (a size that
    // fits but cannot be allocated: tests/integration/aiv_perf.rs, in a process of its own).
    for mb in [
        (usize::MAX >> 20).to_string(),
        ((usize::MAX >> 20) - 1).to_string(),
        "0".to_string(),
    ] {
        let r = Config::default().buffer_bytes_with(|k| (k == "HCCL_BUFFSIZE").then(|| mb.clone()));
        match r {
            Err(Error::Config(m)) => assert!(m.contains("HCCL_BUFFSIZE"), "{mb}: {m}"),
            other => panic!("HCCL_BUFFSIZE={mb}: {other:?}"),
        }
    }
}

#[test]
fn a_counts_matrix_entry_no_buffer_could_hold_is_an_error_not_an_abort() {
    // Rank 0 checks its own row and column against its buffers; the entry of ranks 1 -> 1 is
    // not its to check, but planning the chunks for it allocated a list of launches as long as
    // the entry (the process aborted).
    let w = world(2, Duration::from_secs(5));
    let c = &w.comms()[0];
    let send = c.alloc(8).unwrap();
    let recv = c.alloc(8).unwrap();
    for huge in [usize::MAX, 1 << 40] {
        let m = [1, 1, 1, huge];
        let r = c.all_to_all_vc(&send, &m, &recv, DataType::U8);
        assert!(matches!(r, Err(Error::Length(_))), "{huge}: {r:?}");
    }
    assert_eq!(c.tags_issued(), 0, "nothing was enqueued");
}

// ---- 3. synchronize waits for what was enqueued before it ----

/// Enqueues a wait for `later` on `fed` 300 ms from now, then posts `first` 300 ms after that,
/// from a stream of its own: the thread that called this is meant to be waiting by then.
fn feed_after_a_pause(
    c: &aiv_comm::Communicator,
    fed: &aiv_comm::CommStream,
    first: &Event,
    later: &Event,
) {
    let poster = c.create_stream("poster").unwrap();
    let (fed, first, later) = (fed.clone(), first.clone(), later.clone());
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        fed.wait(&later, "fed later");
        std::thread::sleep(Duration::from_millis(300));
        poster.post(&first, "release");
    });
}

/// Runs `call` while a stream waits for an event posted 600 ms later and, from 300 ms on, work
/// that cannot finish before `call` returns waits on the same stream or (`other`) another one;
/// then lets that work finish. `call` must return without it (the work would end in an
/// EventTimeout after 3 s), and every stream must end without an error.
fn waits_only_for_earlier_work(other: bool, call: impl FnOnce(&World, &aiv_comm::Communicator)) {
    let w = world(1, Duration::from_secs(3));
    let c = &w.comms()[0];
    let s = c.create_stream("first").unwrap();
    let t = c.create_stream("second").unwrap();
    let (first, later) = (Event::new("first"), Event::new("later"));
    s.wait(&first, "before");
    feed_after_a_pause(c, if other { &t } else { &s }, &first, &later);
    call(&w, c);
    c.create_stream("late poster").unwrap().post(&later, "end");
    s.synchronize().unwrap();
    t.synchronize().unwrap();
}

#[test]
fn synchronize_waits_for_the_work_enqueued_before_it_not_after() {
    // The World's synchronize, over every stream of every rank.
    for other in [false, true] {
        waits_only_for_earlier_work(other, |w, _| w.synchronize().unwrap());
    }
    // A stream's own.
    let w = world(1, Duration::from_secs(3));
    let c = &w.comms()[0];
    let s = c.create_stream("fed").unwrap();
    let (first, later) = (Event::new("first"), Event::new("later"));
    s.wait(&first, "before");
    feed_after_a_pause(c, &s, &first, &later);
    s.synchronize().unwrap();
    c.create_stream("late poster").unwrap().post(&later, "end");
    s.synchronize().unwrap();
}

#[test]
fn deregister_waits_for_the_work_enqueued_before_it_not_after() {
    for other in [false, true] {
        waits_only_for_earlier_work(other, |_, c| {
            let win = c.alloc(64).unwrap();
            c.register(&win).unwrap();
            c.deregister(&win).unwrap();
        });
    }
}

// ---- 4. deterministic mode means one thing ----

/// Floats of every magnitude, so that the order of a sum shows in its bits.
fn spread(rank: usize, n: usize) -> Vec<f32> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (rank as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mant = (x >> 40) as f32 / (1u64 << 24) as f32 + 0.5;
            let exp = ((x >> 8) % 40) as i32 - 20;
            let sign = if x & 1 == 0 { 1.0 } else { -1.0 };
            sign * mant * 2f32.powi(exp)
        })
        .collect()
}

/// The plain rank-order sum `((x_0 + x_1) + x_2) + ...` in f32.
fn rank_order_sum(inputs: &[Vec<f32>]) -> Vec<u32> {
    (0..inputs[0].len())
        .map(|i| {
            inputs[1..]
                .iter()
                .fold(inputs[0][i], |acc, x| acc + x[i])
                .to_bits()
        })
        .collect()
}

fn deterministic_world(ranks: usize, buffer: usize, parts: Option<u32>) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(buffer),
            deterministic: Some(true),
            blocks_per_peer: parts,
            cores: 16,
            ..Config::default()
        },
    )
    .unwrap()
}

#[test]
fn deterministic_all_reduce_is_the_rank_order_sum_whatever_the_algorithm_and_buffer() {
    use aiv_comm::AllReduceAlgo;
    let count = 3000;
    for ranks in [3usize, 4, 5] {
        let inputs: Vec<Vec<f32>> = (0..ranks).map(|r| spread(r, count)).collect();
        let want = rank_order_sum(&inputs);
        // The data tells orders apart: the reverse order gives other bits for many elements.
        let reversed: Vec<Vec<f32>> = inputs.iter().rev().cloned().collect();
        let reverse = rank_order_sum(&reversed);
        assert!(want.iter().zip(&reverse).filter(|(a, b)| a != b).count() > count / 20);
        // Chunks of a 4 KiB buffer and one chunk of a 16 MiB one; one block per peer and
        // three (the parts split each slice again).
        for (buffer, parts) in [(4096usize, None), (16 << 20, None), (16 << 20, Some(3))] {
            let w = deterministic_world(ranks, buffer, parts);
            for algo in [
                AllReduceAlgo::Auto,
                AllReduceAlgo::OneShot,
                AllReduceAlgo::TwoShot,
                AllReduceAlgo::Hd,
                AllReduceAlgo::Push,
            ] {
                // Out of place, in place, and out of place from window memory.
                for mode in ["out", "in", "window"] {
                    let got = w.run(|c| -> aiv_comm::Result<Vec<u32>> {
                        let x = c.alloc_from(&inputs[c.rank() as usize])?;
                        let y = if mode == "in" {
                            x.clone()
                        } else {
                            c.alloc(count * 4)?
                        };
                        if mode == "window" {
                            c.register(&x)?;
                        }
                        c.all_reduce_with(&x, &y, count, DataType::F32, ReduceOp::Sum, algo)?;
                        c.synchronize()?;
                        if mode == "window" {
                            c.deregister(&x)?;
                        }
                        y.to_vec()
                    });
                    for (r, g) in got.into_iter().enumerate() {
                        let g = g.unwrap();
                        let differ = g.iter().zip(&want).filter(|(a, b)| a != b).count();
                        assert_eq!(
                            differ, 0,
                            "{ranks} ranks, {buffer}-byte buffer, {parts:?} parts, {algo:?}, {mode}: rank {r} differs from the rank-order sum in {differ} of {count} elements"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn deterministic_half_precision_all_reduce_on_8_ranks_is_the_rank_order_sum() {
    use aiv_comm::AllReduceAlgo;
    use half::{bf16, f16};
    let (ranks, count) = (8usize, 2000);
    let inputs: Vec<Vec<f32>> = (0..ranks).map(|r| spread(r, count)).collect();
    // Each step of the sum rounds to the element type, as the device's adds do.
    let f16_in: Vec<Vec<f16>> = inputs
        .iter()
        .map(|v| v.iter().map(|&x| f16::from_f32(x * 1e-3)).collect())
        .collect();
    let bf16_in: Vec<Vec<bf16>> = inputs
        .iter()
        .map(|v| v.iter().map(|&x| bf16::from_f32(x)).collect())
        .collect();
    let f16_want: Vec<u16> = (0..count)
        .map(|i| {
            f16_in[1..]
                .iter()
                .fold(f16_in[0][i], |a, x| {
                    f16::from_f32(a.to_f32() + x[i].to_f32())
                })
                .to_bits()
        })
        .collect();
    let bf16_want: Vec<u16> = (0..count)
        .map(|i| {
            bf16_in[1..]
                .iter()
                .fold(bf16_in[0][i], |a, x| {
                    bf16::from_f32(a.to_f32() + x[i].to_f32())
                })
                .to_bits()
        })
        .collect();
    // The data tells orders apart: the reverse order gives other bits for many elements.
    let reverse = (0..count)
        .filter(|&i| {
            let r = f16_in[..ranks - 1]
                .iter()
                .rev()
                .fold(f16_in[ranks - 1][i], |a, x| {
                    f16::from_f32(a.to_f32() + x[i].to_f32())
                });
            r.to_bits() != f16_want[i]
        })
        .count();
    assert!(reverse > count / 20, "{reverse}");
    for buffer in [4096usize, 16 << 20] {
        let w = deterministic_world(ranks, buffer, None);
        for algo in [
            AllReduceAlgo::Auto,
            AllReduceAlgo::TwoShot,
            AllReduceAlgo::Push,
        ] {
            for (dtype, want) in [(DataType::F16, &f16_want), (DataType::Bf16, &bf16_want)] {
                let got = w.run(|c| -> aiv_comm::Result<Vec<u16>> {
                    let r = c.rank() as usize;
                    let x = match dtype {
                        DataType::F16 => c.alloc_from(&f16_in[r])?,
                        _ => c.alloc_from(&bf16_in[r])?,
                    };
                    let y = c.alloc(count * 2)?;
                    c.all_reduce_with(&x, &y, count, dtype, ReduceOp::Sum, algo)?;
                    c.synchronize()?;
                    y.to_vec()
                });
                for (r, g) in got.into_iter().enumerate() {
                    let g = g.unwrap();
                    let differ = g.iter().zip(want.iter()).filter(|(a, b)| a != b).count();
                    assert_eq!(
                        differ, 0,
                        "{buffer}-byte buffer, {algo:?}, {dtype}: rank {r} differs in {differ} of {count}"
                    );
                }
            }
        }
    }
}

#[test]
fn deterministic_reduce_scatter_is_the_rank_order_sum_whatever_the_buffer() {
    let ranks = 4;
    let count = 750;
    let inputs: Vec<Vec<f32>> = (0..ranks).map(|r| spread(r, count * ranks)).collect();
    let want = rank_order_sum(&inputs);
    for (buffer, parts) in [(4096usize, None), (16 << 20, None), (16 << 20, Some(2))] {
        let w = deterministic_world(ranks, buffer, parts);
        let got = w.run(|c| -> aiv_comm::Result<Vec<u32>> {
            let x = c.alloc_from(&inputs[c.rank() as usize])?;
            let y = c.alloc(count * 4)?;
            c.reduce_scatter(&x, &y, count, DataType::F32, ReduceOp::Sum)?;
            c.synchronize()?;
            y.to_vec()
        });
        for (r, g) in got.into_iter().enumerate() {
            assert!(
                g.unwrap() == want[r * count..(r + 1) * count],
                "{buffer}-byte buffer: rank {r}'s block differs from the rank-order sum"
            );
        }
    }
}
