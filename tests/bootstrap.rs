//! The bootstrap's rules as a job sees them: every rank gets every rank's bytes; a rank that
//! never comes, or dies, is named on every rank that is still there; connections that are not
//! the job's own (stray, silent, another job's, a rank twice) are refused without stopping it.
//! Ranks are threads here, and processes of this test binary in the tests that kill one.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use aiv_comm::bootstrap::{join, LaunchEnv, Launcher, Peers, UniqueId};
use aiv_comm::{BootstrapError, Error};
use common::results;

const T: Duration = Duration::from_secs(10);

fn boot(e: Error) -> BootstrapError {
    match e {
        Error::Bootstrap(b) => b,
        other => panic!("not a bootstrap error: {other}"),
    }
}

/// Ranks `ranks` of a job of `size` join `id` on threads; their results in the order given.
fn join_all(
    id: &UniqueId,
    size: u32,
    ranks: &[u32],
    timeout: Duration,
) -> Vec<aiv_comm::Result<Peers>> {
    let hs: Vec<_> = ranks
        .iter()
        .map(|&r| {
            let id = if r == 0 {
                id.clone()
            } else {
                UniqueId::from_bytes(&id.to_bytes()).unwrap()
            };
            thread::spawn(move || join(r, size, &id, timeout))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn every_rank_gets_every_ranks_bytes_in_rank_order() {
    let id = UniqueId::new().unwrap();
    let peers = join_all(&id, 4, &[2, 0, 3, 1], T);
    let hs: Vec<_> = peers
        .into_iter()
        .map(|p| {
            let p = p.unwrap();
            thread::spawn(move || {
                let r = p.rank();
                let first = p.all_gather(&vec![r as u8; r as usize * 1000]).unwrap();
                p.barrier().unwrap();
                let second = p.all_gather(format!("rank {r}").as_bytes()).unwrap();
                (first, second)
            })
        })
        .collect();
    for h in hs {
        let (first, second) = h.join().unwrap();
        for r in 0..4usize {
            assert_eq!(first[r], vec![r as u8; r * 1000]);
            assert_eq!(second[r], format!("rank {r}").into_bytes());
        }
    }
    let alone = join(0, 1, &UniqueId::new().unwrap(), T).unwrap();
    assert_eq!(alone.all_gather(b"x").unwrap(), vec![b"x".to_vec()]);
}

#[test]
fn a_rank_that_never_comes_is_named_on_every_rank_that_did() {
    let id = UniqueId::new().unwrap();
    let start = Instant::now();
    let got = join_all(&id, 4, &[0, 1, 3], Duration::from_millis(800));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    for r in got {
        match boot(r.unwrap_err()) {
            BootstrapError::Missing { ranks, size, .. } => assert_eq!((ranks, size), (vec![2], 4)),
            other => panic!("{other}"),
        }
    }
    // Rank 0 never listens: a rank names its address.
    let gone = UniqueId::new().unwrap().to_bytes();
    let e = boot(
        join(
            1,
            2,
            &UniqueId::from_bytes(&gone).unwrap(),
            Duration::from_millis(300),
        )
        .unwrap_err(),
    );
    assert!(matches!(e, BootstrapError::Unreachable { .. }), "{e}");
}

#[test]
fn stray_silent_and_foreign_connections_do_not_stop_the_job() {
    let id = UniqueId::new().unwrap();
    let bytes = id.to_bytes();
    let root = {
        let id = id.clone();
        thread::spawn(move || join(0, 3, &id, T))
    };
    let addr = root_addr(&bytes);
    // Garbage, then silence (held open), then a port scan.
    let mut garbage = TcpStream::connect(addr).unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let _silent = TcpStream::connect(addr).unwrap();
    drop(TcpStream::connect(addr).unwrap());
    // A rank of another job (another secret) on this job's address: refused, told why.
    let mut other = bytes;
    other[30] ^= 0xff;
    let e = boot(join(1, 3, &UniqueId::from_bytes(&other).unwrap(), T).unwrap_err());
    assert!(
        matches!(&e, BootstrapError::Refused(why) if why.contains("not a rank of this job")),
        "{e}"
    );
    // The wrong world size, and a rank out of range: refused.
    let e = boot(join(1, 4, &UniqueId::from_bytes(&bytes).unwrap(), T).unwrap_err());
    assert!(
        matches!(&e, BootstrapError::Refused(why) if why.contains("job of 4 ranks")),
        "{e}"
    );
    // The job's own ranks, then rank 1 a second time.
    let ranks: Vec<_> = (1..3)
        .map(|r| thread::spawn(move || join(r, 3, &UniqueId::from_bytes(&bytes).unwrap(), T)))
        .collect();
    let peers: Vec<Peers> = ranks
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    let root = root.join().unwrap().unwrap();
    let hs: Vec<_> = peers
        .into_iter()
        .chain([root])
        .map(|p| thread::spawn(move || p.all_gather(&[p.rank() as u8]).unwrap()))
        .collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), vec![vec![0], vec![1], vec![2]]);
    }
}

/// Rank 0's address from a UniqueId's bytes (IPv4 loopback here).
fn root_addr(bytes: &[u8; UniqueId::BYTES]) -> std::net::SocketAddr {
    let port = u16::from_be_bytes([bytes[22], bytes[23]]);
    std::net::SocketAddr::from(([bytes[6], bytes[7], bytes[8], bytes[9]], port))
}

#[test]
fn a_rank_twice_is_refused_and_a_listener_of_another_kind_is_named() {
    let id = UniqueId::new().unwrap();
    let bytes = id.to_bytes();
    let root = {
        let id = id.clone();
        thread::spawn(move || join(0, 3, &id, T))
    };
    let first = thread::spawn(move || join(1, 3, &UniqueId::from_bytes(&bytes).unwrap(), T));
    // Wait until rank 1 is in (rank 0 answers in the order connections come).
    thread::sleep(Duration::from_millis(300));
    let e = boot(join(1, 3, &UniqueId::from_bytes(&bytes).unwrap(), T).unwrap_err());
    assert!(
        matches!(&e, BootstrapError::Refused(why) if why.contains("already joined")),
        "{e}"
    );
    let last = join(2, 3, &UniqueId::from_bytes(&bytes).unwrap(), T).unwrap();
    drop((
        first.join().unwrap().unwrap(),
        root.join().unwrap().unwrap(),
        last,
    ));

    // Something else listens where rank 0 should: the rank says so instead of hanging.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = other.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let (mut s, _) = other.accept().unwrap();
        let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
        let mut sink = [0u8; 64];
        let _ = s.read(&mut sink);
    });
    let mut foreign = bytes;
    foreign[22..24].copy_from_slice(&port.to_be_bytes());
    let e = boot(join(1, 2, &UniqueId::from_bytes(&foreign).unwrap(), T).unwrap_err());
    assert!(matches!(e, BootstrapError::ForeignRoot { .. }), "{e}");
    server.join().unwrap();
}

#[test]
fn two_jobs_at_once_do_not_meet() {
    let a = UniqueId::new().unwrap();
    let b = UniqueId::new().unwrap();
    let ja = thread::spawn(move || join_all(&a, 3, &[0, 1, 2], T));
    let jb = thread::spawn(move || join_all(&b, 2, &[1, 0], T));
    let peers: Vec<Peers> = ja
        .join()
        .unwrap()
        .into_iter()
        .chain(jb.join().unwrap())
        .map(|p| p.unwrap())
        .collect();
    let hs: Vec<_> = peers
        .into_iter()
        .map(|p| thread::spawn(move || (p.size(), p.all_gather(&[p.size() as u8, p.rank() as u8]))))
        .collect();
    for h in hs {
        let (size, all) = h.join().unwrap();
        let expect: Vec<Vec<u8>> = (0..size as u8).map(|r| vec![size as u8, r]).collect();
        assert_eq!(all.unwrap(), expect, "each job gathers its own ranks only");
    }
    // A second job cannot take the first one's address while it listens.
    let first = UniqueId::new().unwrap();
    let taken = root_addr(&first.to_bytes());
    let e = boot(UniqueId::listen_on(taken).unwrap_err());
    assert!(matches!(e, BootstrapError::Listen { .. }), "{e}");
}

/// Set in the environment of a rank process this test binary starts.
const CHILD: &str = "AIV_BOOTSTRAP_TEST_CHILD";

/// The body of a rank process (does nothing in a normal test run): joins from its environment,
/// passes one barrier, then (rank 2) waits to be killed, or (others) reports what the second
/// barrier gave.
#[test]
#[ignore = "a rank process of a_killed_rank_process_is_named_by_its_peers, started by it"]
fn rank_process() {
    let Ok(role) = std::env::var(CHILD) else {
        return;
    };
    let env = LaunchEnv::from_env()
        .unwrap()
        .expect("launched with AIV_RANK");
    assert_eq!(env.launcher, Launcher::Aiv);
    let peers = join(env.rank, env.world_size, env.unique_id(), T).unwrap();
    peers.barrier().unwrap();
    if role == "victim" {
        println!("RANK-READY");
        thread::sleep(Duration::from_secs(60));
        return;
    }
    match peers.barrier() {
        Err(e) => println!("RESULT {}", e),
        Ok(()) => println!("RESULT ok"),
    }
}

/// The arguments that make this test binary run only `test`, one of the ignored rank-process
/// bodies, with its output uncaptured.
fn rank_process_args(test: &str) -> [&str; 5] {
    [
        "--ignored",
        "--exact",
        test,
        "--nocapture",
        "--test-threads=1",
    ]
}

fn spawn_rank(rank: u32, size: u32, id: &UniqueId, role: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(rank_process_args("rank_process"))
        .env(CHILD, role)
        .env("AIV_RANK", rank.to_string())
        .env("AIV_WORLD_SIZE", size.to_string())
        .env("AIV_UNIQUE_ID", id.to_hex())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_rank_process_is_named_by_its_peers() {
    // This process is rank 0; ranks 1 and 3 are processes that stay, rank 2 is killed after
    // the first barrier.
    let id = UniqueId::new().unwrap();
    let mut victim = spawn_rank(2, 4, &id, "victim");
    let stayers: Vec<_> = [1, 3]
        .iter()
        .map(|&r| spawn_rank(r, 4, &id, "stay"))
        .collect();
    let peers = join(0, 4, &id, T).unwrap();
    peers.barrier().unwrap();
    // The victim has passed the barrier when it says so (on a line the test harness began).
    let mut out = BufReader::new(victim.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("RANK-READY") {
        line.clear();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "the victim exited early"
        );
    }
    let start = Instant::now();
    victim.kill().unwrap();
    victim.wait().unwrap();
    let e = boot(peers.barrier().unwrap_err());
    assert!(matches!(e, BootstrapError::PeerLost { peer: 2, .. }), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // Later calls keep the error.
    assert_eq!(boot(peers.barrier().unwrap_err()), e);
    for child in stayers {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let result = text
            .lines()
            .find(|l| l.contains("RESULT"))
            .unwrap_or("no RESULT line");
        assert!(result.contains("rank 2 is gone"), "{text}");
    }
}

/// The body of a rank process started by a launcher (mpirun, or torchrun's variables): joins
/// from its environment and prints what an all_gather of "rank:local rank:launcher" gave.
#[test]
#[ignore = "a rank process of the launcher tests, started by them"]
fn launched_rank_process() {
    if std::env::var(CHILD).as_deref() != Ok("launched") {
        return;
    }
    let env = LaunchEnv::from_env()
        .unwrap()
        .expect("started by a launcher");
    let peers = join(env.rank, env.world_size, env.unique_id(), T).unwrap();
    let me = format!("{}:{}:{:?}", env.rank, env.local_rank, env.launcher);
    let all: Vec<String> = peers
        .all_gather(me.as_bytes())
        .unwrap()
        .into_iter()
        .map(|b| String::from_utf8(b).unwrap())
        .collect();
    println!("RESULT {}", all.join(","));
}

#[test]
fn ranks_started_by_mpirun_meet_through_open_mpis_variables() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("skipped: no mpirun on this machine (Debian: apt-get install openmpi-bin; .ci/run installs it)");
        return;
    }
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "3"])
        .arg(std::env::current_exe().unwrap())
        .args(rank_process_args("launched_rank_process"))
        .env(CHILD, "launched")
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "mpirun: {}", out.status);
    let expect = "0:0:OpenMpi,1:1:OpenMpi,2:2:OpenMpi";
    assert_eq!(results(&out), vec![expect; 3]);
}

#[test]
fn ranks_with_torchruns_variables_meet_beside_torchs_own_store() {
    // torchrun's agent holds MASTER_PORT with torch's store: hold it here too, so aiv-comm
    // must take the next port.
    let (store, port) = loop {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if p < u16::MAX && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            break (l, p);
        }
    };
    let ranks: Vec<_> = (0..3)
        .map(|r| {
            Command::new(std::env::current_exe().unwrap())
                .args(rank_process_args("launched_rank_process"))
                .env(CHILD, "launched")
                .env("RANK", r.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("WORLD_SIZE", "3")
                .env("LOCAL_WORLD_SIZE", "3")
                .env("MASTER_ADDR", "localhost")
                .env("MASTER_PORT", port.to_string())
                .env("TORCHELASTIC_RUN_ID", "none")
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in ranks {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", out.status);
        assert_eq!(results(&out), ["0:0:Torchrun,1:1:Torchrun,2:2:Torchrun"]);
    }
    drop(store);
}

#[test]
fn bad_arguments_are_errors_and_any_timeout_is_taken() {
    let id = UniqueId::new().unwrap();
    assert!(matches!(join(0, 0, &id, T), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        join(3, 3, &id, T),
        Err(Error::RankOutOfRange { rank: 3, size: 3 })
    ));
    assert!(matches!(
        join(1, 2, &id, Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
    // A timeout no Instant can hold: the ranks still meet.
    let bytes = id.to_bytes();
    let member =
        thread::spawn(move || join(1, 2, &UniqueId::from_bytes(&bytes).unwrap(), Duration::MAX));
    let root = join(0, 2, &id, Duration::MAX).unwrap();
    let member = member.join().unwrap().unwrap();
    let other = thread::spawn(move || member.barrier());
    root.barrier().unwrap();
    other.join().unwrap().unwrap();
}

/// A client that reads rank 0's challenge, then trickles a hello one byte at a time.
fn trickle(addr: std::net::SocketAddr, stop: Instant) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return;
    };
    let left = stop.saturating_duration_since(Instant::now());
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .unwrap();
    let mut challenge = [0u8; 30];
    let _ = s.read_exact(&mut challenge);
    let mut head = vec![2u8];
    head.extend_from_slice(&4000u64.to_be_bytes());
    for b in head.into_iter().chain(std::iter::repeat(0)) {
        if Instant::now() > stop || s.write_all(&[b]).is_err() {
            return;
        }
        thread::sleep(Duration::from_millis(300));
    }
}

/// A client that opens a connection every 20 ms (and never waits long for one) until `stop`.
fn flood(addr: std::net::SocketAddr, stop: Instant) {
    while Instant::now() < stop {
        let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(50));
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn slow_silent_and_flooding_connections_hold_no_rank_past_its_deadline() {
    // The job's ranks get in while all of that goes on.
    let id = UniqueId::new().unwrap();
    let bytes = id.to_bytes();
    let addr = root_addr(&bytes);
    let stop = Instant::now() + Duration::from_secs(4);
    let trickler = thread::spawn(move || trickle(addr, stop));
    let silent: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let flooder = thread::spawn(move || flood(addr, stop));
    let start = Instant::now();
    let got = join_all(&id, 3, &[0, 1, 2], Duration::from_secs(3));
    assert!(
        got.iter().all(|p| p.is_ok()),
        "{:?}",
        got.iter().map(|p| p.as_ref().err()).collect::<Vec<_>>()
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    // Alone, rank 0 gives up at its deadline, whatever keeps arriving.
    let lonely = UniqueId::new().unwrap();
    let addr = root_addr(&lonely.to_bytes());
    let trickler2 = thread::spawn(move || trickle(addr, stop));
    let flooder2 = thread::spawn(move || flood(addr, stop));
    let start = Instant::now();
    let e = boot(join(0, 2, &lonely, Duration::from_millis(500)).unwrap_err());
    assert!(
        matches!(e, BootstrapError::Missing { ref ranks, .. } if ranks == &[1]),
        "{e}"
    );
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
    drop(silent);
    for h in [trickler, flooder, trickler2, flooder2] {
        h.join().unwrap();
    }
}

#[test]
fn a_rank_missing_from_a_gather_is_named_on_every_rank() {
    let id = UniqueId::new().unwrap();
    let limit = Duration::from_secs(2);
    let mut peers = join_all(&id, 3, &[0, 1, 2], limit)
        .into_iter()
        .map(|p| p.unwrap());
    let (root, one, _two) = (
        peers.next().unwrap(),
        peers.next().unwrap(),
        peers.next().unwrap(),
    );
    // Rank 2 never calls; rank 0 comes 300 ms after rank 1.
    let one = thread::spawn(move || one.all_gather(b"1"));
    thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let e0 = boot(root.all_gather(b"0").unwrap_err());
    let e1 = boot(one.join().unwrap().unwrap_err());
    for e in [e0, e1] {
        assert!(
            matches!(e, BootstrapError::Timeout { ref ranks, .. } if ranks == &[2]),
            "{e}"
        );
    }
    assert!(start.elapsed() < limit * 3, "{:?}", start.elapsed());
}

#[test]
fn a_rank_that_gives_up_during_the_rendezvous_can_come_again() {
    // Rank 1 is admitted, gives up (its own deadline passes while rank 2 is still away) and
    // closes its connection; a new rank 1 (a restarted process) and rank 2 then complete the job.
    let id = UniqueId::new().unwrap();
    let bytes = id.to_bytes();
    let root = {
        let id = id.clone();
        thread::spawn(move || join(0, 3, &id, T))
    };
    let member = move |r: u32, t: Duration| join(r, 3, &UniqueId::from_bytes(&bytes).unwrap(), t);
    let e = boot(member(1, Duration::from_secs(1)).unwrap_err());
    assert!(
        matches!(e, BootstrapError::Timeout { ref ranks, .. } if ranks == &[0]),
        "{e}"
    );
    let again = thread::spawn(move || member(1, T));
    let two = member(2, T).unwrap();
    let again = again.join().unwrap().unwrap();
    let root = root.join().unwrap().unwrap();
    let hs: Vec<_> = [root, again, two]
        .into_iter()
        .map(|p| thread::spawn(move || p.all_gather(&[p.rank() as u8]).unwrap()))
        .collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), vec![vec![0], vec![1], vec![2]]);
    }
}
