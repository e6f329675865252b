//! One process per rank: communicators made with `Communicator::from_rank` / `from_env` in
//! processes of their own give what the same program gives with every rank in one process, and
//! a rank that dies or never comes is named by its peers.
//!
//! `cargo test` covers this without mpirun: a test re-executes this test binary once per rank
//! (the ignored `rank_body` test, which runs the body named by `AIV_PROC_BODY`), each process
//! finding its rank and the job's id in `AIV_RANK`, `AIV_WORLD_SIZE` and `AIV_UNIQUE_ID`.
//!
//! The `acl_` tests run the same rank programs through the ACL backend on acl-twin (Cargo puts
//! its `libascendcl.so` on the loader path of tests, and the rank processes inherit it): the
//! ranks' memory is then shared with ACL's IPC calls.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{result_lines, results};

use aiv_comm::bootstrap::UniqueId;
use aiv_comm::{Communicator, Config, DataType, Error, ReduceOp, StopCause, World};

const BODY: &str = "AIV_PROC_BODY";

/// A small HCCL buffer, so that the larger calls below run in several chunks.
fn config() -> Config {
    Config {
        buffer_bytes: Some(64 * 1024),
        exec_timeout: Some(Duration::from_secs(20)),
        cores: 8,
        ..Config::default()
    }
}

/// FNV-1a of `bytes`, as hex: what a rank prints of an output.
fn digest(bytes: &[u8]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Every collective and send/recv on `c`, each output digested: (call, digest) in call order.
/// Values are small integers as f32, so every order of additions gives the same bits.
fn every_call(c: &Communicator) -> aiv_comm::Result<Vec<(String, String)>> {
    let n = c.size() as usize;
    let r = c.rank() as usize;
    let mut out = Vec::new();
    for count in [1000usize, 70_000] {
        let x: Vec<f32> = (0..count).map(|i| ((r * 7 + i) % 13) as f32).collect();
        let send = c.alloc_from(&x)?;

        let recv = c.alloc(count * 4)?;
        c.all_reduce(&send, &recv, count, DataType::F32, ReduceOp::Sum)?;
        c.synchronize()?;
        out.push((format!("all_reduce {count}"), digest(&recv.to_vec::<u8>()?)));

        let recv = c.alloc(count * 4)?;
        c.all_reduce(&send, &recv, count, DataType::F32, ReduceOp::Max)?;
        c.synchronize()?;
        out.push((
            format!("all_reduce max {count}"),
            digest(&recv.to_vec::<u8>()?),
        ));

        let recv = c.alloc(n * count * 4)?;
        c.all_gather(&send, &recv, count, DataType::F32)?;
        c.synchronize()?;
        out.push((format!("all_gather {count}"), digest(&recv.to_vec::<u8>()?)));

        let per = count / n;
        let recv = c.alloc(per * 4)?;
        c.reduce_scatter(&send, &recv, per, DataType::F32, ReduceOp::Sum)?;
        c.synchronize()?;
        out.push((
            format!("reduce_scatter {count}"),
            digest(&recv.to_vec::<u8>()?),
        ));

        let recv = c.alloc(count * 4)?;
        c.broadcast(&send, &recv, count, DataType::F32, (n - 1) as u32)?;
        c.synchronize()?;
        out.push((format!("broadcast {count}"), digest(&recv.to_vec::<u8>()?)));

        let recv = c.alloc(per * n * 4)?;
        c.all_to_all(&send, &recv, per, DataType::F32)?;
        c.synchronize()?;
        out.push((format!("all_to_all {count}"), digest(&recv.to_vec::<u8>()?)));

        // A ring: send to the next rank, receive from the previous one.
        let recv = c.alloc(count * 4)?;
        let (next, prev) = (((r + 1) % n) as u32, ((r + n - 1) % n) as u32);
        c.batch_send_recv(&[
            aiv_comm::SendRecvItem::send(&send, count, DataType::F32, next),
            aiv_comm::SendRecvItem::recv(&recv, count, DataType::F32, prev),
        ])?;
        c.synchronize()?;
        out.push((format!("send_recv {count}"), digest(&recv.to_vec::<u8>()?)));
    }
    c.barrier()?;
    c.synchronize()?;
    Ok(out)
}

/// The body of a rank process (does nothing in a normal test run): makes its communicator from
/// the environment and runs the body `AIV_PROC_BODY` names, printing `RESULT` lines.
#[test]
#[ignore = "a rank process of the tests below, started by them"]
fn rank_body() {
    let Ok(body) = std::env::var(BODY) else {
        return;
    };
    // The rank that stays behind a leaver waits for it only briefly.
    let cfg = match body.as_str() {
        "stays" => Config {
            exec_timeout: Some(Duration::from_secs(2)),
            ..config()
        },
        _ => config(),
    };
    let comm = match Communicator::from_env(cfg) {
        Ok(c) => c,
        Err(e) => {
            println!("RESULT join failed: {e}");
            return;
        }
    };
    match body.as_str() {
        "every_call" => match every_call(&comm) {
            Ok(v) if std::env::var("AIV_BACKEND").as_deref() != Ok(comm.backend_name()) => {
                println!("RESULT ran on {} ({v:?})", comm.backend_name());
            }
            Ok(v) => {
                for (call, d) in v {
                    println!("RESULT {call} = {d}");
                }
            }
            Err(e) => println!("RESULT failed: {e}"),
        },
        "victim" => {
            // Ready for a collective that the others start; killed before it joins.
            comm.barrier().unwrap();
            comm.synchronize().unwrap();
            println!("RANK-READY");
            std::thread::sleep(Duration::from_secs(60));
        }
        "survivor" => {
            comm.barrier().unwrap();
            comm.synchronize().unwrap();
            let start = Instant::now();
            let x = comm.alloc_from(&[1.0f32; 1024]).unwrap();
            let r = comm
                .all_reduce(&x, &x, 1024, DataType::F32, ReduceOp::Sum)
                .and_then(|()| comm.synchronize());
            match r {
                Ok(()) => println!("RESULT ok"),
                Err(e) => println!("RESULT {:.1}s {e}", start.elapsed().as_secs_f64()),
            }
            // Later calls say why.
            match comm.barrier() {
                Err(Error::CommFailed { cause, .. }) => println!("RESULT later: {cause}"),
                other => println!("RESULT later: {other:?}"),
            }
        }
        "drops_busy" => {
            comm.barrier().unwrap();
            comm.synchronize().unwrap();
            // Not before the other rank is past the barrier too (the test says when, on stdin):
            // a rank may see a barrier done before its peer does.
            std::io::stdin().read_line(&mut String::new()).unwrap();
            // Work the other rank has not joined yet, then the communicator is dropped with it
            // queued: the job is stopped.
            let x = comm.alloc_from(&[1.0f32; 64]).unwrap();
            comm.all_reduce(&x, &x, 64, DataType::F32, ReduceOp::Sum)
                .unwrap();
            drop(comm);
        }
        "register" => {
            let x = comm.alloc_from(&[1.0f32; 64]).unwrap();
            match comm.register(&x) {
                Ok(()) => println!("RESULT registered"),
                Err(e) => println!("RESULT {e}"),
            }
        }
        "leaves" => {
            comm.barrier().unwrap();
            comm.synchronize().unwrap();
            // Drops its communicator: it leaves in order.
        }
        "stays" => {
            comm.barrier().unwrap();
            comm.synchronize().unwrap();
            println!("RANK-READY");
            // Half a second later (the other rank has left, or stopped the job), an AllReduce
            // that needs the other rank: what it gives.
            std::thread::sleep(Duration::from_millis(500));
            let x = comm.alloc_from(&[1.0f32; 64]).unwrap();
            let r = comm
                .all_reduce(&x, &x, 64, DataType::F32, ReduceOp::Sum)
                .and_then(|()| comm.synchronize());
            match r {
                Ok(()) => println!("RESULT ok"),
                Err(e) => println!("RESULT {e}"),
            }
        }
        other => panic!("no rank body {other}"),
    }
}

/// A job's id for rank processes: its bytes only (the id `UniqueId::new` makes holds rank 0's
/// listener, which the rank-0 process makes itself).
fn job_id() -> UniqueId {
    UniqueId::from_bytes(&UniqueId::new().unwrap().to_bytes()).unwrap()
}

/// Starts rank `rank` of `size` of job `id` running `body` on the twin.
fn spawn(rank: u32, size: u32, id: &UniqueId, body: &str, timeout_s: Option<u32>) -> Child {
    spawn_on("twin", rank, size, id, body, timeout_s)
}

/// Starts rank `rank` of `size` of job `id` running `body` on `backend` (`AIV_BACKEND`).
fn spawn_on(
    backend: &str,
    rank: u32,
    size: u32,
    id: &UniqueId,
    body: &str,
    timeout_s: Option<u32>,
) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "rank_body", "--nocapture"])
        .env(BODY, body)
        .env("AIV_BACKEND", backend)
        .env("AIV_RANK", rank.to_string())
        .env("AIV_WORLD_SIZE", size.to_string())
        .env("AIV_UNIQUE_ID", id.to_hex())
        .env("AIV_TWIN_WORKERS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(t) = timeout_s {
        cmd.env("HCCL_CONNECT_TIMEOUT", t.to_string());
    }
    cmd.spawn().unwrap()
}

/// Reads `child`'s output up to its `RANK-READY` line; returns the rest of its output to come.
fn ready(child: &mut Child) -> BufReader<std::process::ChildStdout> {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("RANK-READY") {
        line.clear();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "the rank exited before it was ready"
        );
    }
    out
}

/// The number of entries of /dev/shm (a job must leave none behind).
fn shm_entries() -> usize {
    std::fs::read_dir("/dev/shm").map_or(0, |d| d.count())
}

#[test]
fn every_call_across_processes_gives_the_bits_of_one_process() {
    every_call_on("twin");
}

#[test]
fn acl_every_call_across_processes_gives_the_bits_of_one_process() {
    every_call_on("acl");
}

fn every_call_on(backend: &str) {
    let n = 3;
    let id = job_id();
    let children: Vec<Child> = (0..n)
        .map(|r| spawn_on(backend, r, n, &id, "every_call", None))
        .collect();
    let got: Vec<Vec<String>> = children
        .into_iter()
        .map(|c| results(&c.wait_with_output().unwrap()))
        .collect();
    let world = World::sim_with(n as usize, config()).unwrap();
    let want = world.run(|c| every_call(c).unwrap());
    for (r, (got, want)) in got.iter().zip(&want).enumerate() {
        let want: Vec<String> = want.iter().map(|(c, d)| format!("{c} = {d}")).collect();
        assert_eq!(got, &want, "rank {r}");
    }
}

#[test]
fn a_killed_rank_is_named_by_its_peers_and_leaves_nothing_behind() {
    killed_rank_on("twin");
}

#[test]
fn acl_a_killed_rank_is_named_by_its_peers_and_leaves_nothing_behind() {
    killed_rank_on("acl");
}

fn killed_rank_on(backend: &str) {
    let shm = shm_entries();
    let id = job_id();
    let mut victim = spawn_on(backend, 2, 3, &id, "victim", None);
    let survivors: Vec<Child> = [0, 1]
        .iter()
        .map(|&r| spawn_on(backend, r, 3, &id, "survivor", None))
        .collect();
    ready(&mut victim);
    // The survivors are in their AllReduce (or about to be), waiting for rank 2.
    std::thread::sleep(Duration::from_millis(300));
    victim.kill().unwrap();
    victim.wait().unwrap();
    for (r, c) in survivors.into_iter().enumerate() {
        let res = results(&c.wait_with_output().unwrap());
        assert_eq!(res.len(), 2, "rank {r}: {res:?}");
        assert!(res[0].contains("rank 2"), "rank {r}: {res:?}");
        // Well inside the exec timeout (20 s).
        let secs: f64 = res[0].split('s').next().unwrap().parse().unwrap();
        assert!(secs < 5.0, "rank {r}: {res:?}");
        assert!(
            res[1].contains(&StopCause::RankGone { rank: 2 }.to_string()),
            "rank {r}: {res:?}"
        );
    }
    assert_eq!(shm_entries(), shm, "/dev/shm changed");
}

#[test]
fn a_rank_that_leaves_in_order_stops_no_one_and_is_named_when_needed() {
    leaver_on("twin");
}

#[test]
fn acl_a_rank_that_leaves_in_order_stops_no_one_and_is_named_when_needed() {
    leaver_on("acl");
}

#[test]
fn acl_window_memory_is_refused_and_the_twin_takes_it() {
    for (backend, want) in [
        ("acl", "window memory is not supported"),
        ("twin", "registered"),
    ] {
        let id = job_id();
        let ranks: Vec<Child> = (0..2)
            .map(|r| spawn_on(backend, r, 2, &id, "register", None))
            .collect();
        for c in ranks {
            let res = results(&c.wait_with_output().unwrap());
            assert!(
                res.len() == 1 && res[0].contains(want),
                "{backend}: {res:?}"
            );
        }
    }
}

/// Ranks of one job that pick different backends (one `AIV_BACKEND=acl`, one `twin`) cannot
/// share memory: every rank says so, naming each rank's backend, instead of failing later.
#[test]
fn acl_ranks_on_different_backends_are_told_so() {
    let id = job_id();
    let ranks: Vec<Child> = [("acl", 0), ("twin", 1), ("twin", 2)]
        .iter()
        .map(|&(backend, r)| spawn_on(backend, r, 3, &id, "every_call", None))
        .collect();
    for (r, c) in ranks.into_iter().enumerate() {
        let res = results(&c.wait_with_output().unwrap());
        assert_eq!(res.len(), 1, "rank {r}: {res:?}");
        assert!(
            res[0].starts_with("join failed")
                && res[0].contains("different backends")
                && res[0].contains("rank 0: acl")
                && res[0].contains("ranks 1-2: twin"),
            "rank {r}: {res:?}"
        );
    }
}

fn leaver_on(backend: &str) {
    let id = job_id();
    let leaver = spawn_on(backend, 1, 2, &id, "leaves", None);
    let stayer = spawn_on(backend, 0, 2, &id, "stays", None);
    assert!(leaver.wait_with_output().unwrap().status.success());
    let res = results(&stayer.wait_with_output().unwrap());
    assert_eq!(res.len(), 1, "{res:?}");
    // Not stopped as a gone rank: the collective waited for rank 1 until its deadline.
    assert!(!res[0].contains("ended without leaving"), "{res:?}");
    assert!(res[0].contains("rank 1"), "{res:?}");
}

#[test]
fn a_rank_that_stops_the_job_is_named_by_the_others() {
    let id = job_id();
    let mut dropper = spawn(1, 2, &id, "drops_busy", None);
    let mut other = spawn(0, 2, &id, "stays", None);
    // The dropper stops the job only once the other rank is past the barrier.
    let mut rest = ready(&mut other);
    writeln!(dropper.stdin.take().unwrap(), "go").unwrap();
    assert!(dropper.wait_with_output().unwrap().status.success());
    let mut text = String::new();
    rest.read_to_string(&mut text).unwrap();
    other.wait().unwrap();
    let res = result_lines(&text);
    assert_eq!(res.len(), 1, "{res:?}");
    assert!(
        res[0].contains("rank 1's process stopped the job"),
        "{res:?}"
    );
}

#[test]
fn a_rank_that_never_comes_is_named_on_every_rank_that_did() {
    let id = job_id();
    let children: Vec<Child> = [0, 1]
        .iter()
        .map(|&r| spawn(r, 3, &id, "every_call", Some(2)))
        .collect();
    for (r, c) in children.into_iter().enumerate() {
        let res = results(&c.wait_with_output().unwrap());
        assert_eq!(res.len(), 1, "rank {r}: {res:?}");
        assert!(
            res[0].starts_with("join failed") && res[0].contains("[2] of 3 did not join"),
            "rank {r}: {res:?}"
        );
    }
}

#[test]
fn two_jobs_at_once_each_get_their_own_results() {
    let ids = [job_id(), job_id()];
    let jobs: Vec<Vec<Child>> = ids
        .iter()
        .map(|id| {
            (0..2)
                .map(|r| spawn(r, 2, id, "every_call", None))
                .collect()
        })
        .collect();
    let world = World::sim_with(2, config()).unwrap();
    let want: Vec<Vec<String>> = world
        .run(|c| every_call(c).unwrap())
        .into_iter()
        .map(|v| v.into_iter().map(|(c, d)| format!("{c} = {d}")).collect())
        .collect();
    for job in jobs {
        for (r, c) in job.into_iter().enumerate() {
            assert_eq!(results(&c.wait_with_output().unwrap()), want[r], "rank {r}");
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let id = job_id();
    for (rank, size) in [(0, 0), (2, 2), (0, 33)] {
        let e = Communicator::from_rank(rank, size, &id, config()).err();
        assert!(
            matches!(e, Some(Error::InvalidArgument(_) | Error::RankCount { .. })),
            "{rank} of {size}: {e:?}"
        );
    }
}
