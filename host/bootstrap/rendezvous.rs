//! [`join`]: the ranks of a job meet at rank 0; [`Peers`]: what they can do afterwards.

use std::io::{self, ErrorKind};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::id::UniqueId;
use super::wire::{self, Side};
use crate::error::{BootstrapError, Error, Result};

/// How long rank 0 gives one connection to prove itself: a stray connection that says nothing
/// holds up the rendezvous for at most this long.
const HANDSHAKE: Duration = Duration::from_secs(1);
/// Pause between attempts to reach a rank 0 that is not listening yet.
const RETRY: Duration = Duration::from_millis(20);
/// Handshakes rank 0 runs at once; connections beyond are closed at once (the job's own ranks
/// retry).
const MAX_HANDSHAKES: usize = 64;
/// How often rank 0 looks for admitted ranks that left while it waits for the others.
const SWEEP: Duration = Duration::from_millis(50);
/// How long rank 0 gives a rank to take in a notice (missing or lost ranks) before it leaves
/// the rank to learn it from its own deadline.
const NOTICE: Duration = Duration::from_millis(200);

fn err(e: BootstrapError) -> Error {
    Error::Bootstrap(e)
}

/// `after` from `start`, or a year from it if `after` is longer (an `Instant` cannot hold any
/// `Duration`).
fn until(start: Instant, after: Duration) -> Instant {
    start
        .checked_add(after)
        .unwrap_or(start + Duration::from_secs(365 * 24 * 3600))
}

/// Joins the job of `id` as `rank` of `size` (1..=65535 ranks): rank 0 waits for every
/// other rank, the others connect to it (retrying until it listens). Returns when every rank
/// has arrived, or fails at rank 0's deadline (`timeout` after rank 0 started waiting) naming
/// the ranks that did not, on rank 0 and on every rank that did arrive. A rank that cannot
/// reach rank 0, or that rank 0 does not answer, within `timeout` fails naming rank 0's
/// address; one that rank 0 admitted waits for rank 0's verdict until `2 * timeout` after it
/// started. No connection, however slow or many, holds any rank past these bounds: rank 0
/// checks each connection on a thread of its own, each within a second and its deadline.
///
/// `timeout` must be above zero; `Duration::MAX` waits as long as the system can.
/// What each side checks is in the [module docs](super).
pub fn join(rank: u32, size: u32, id: &UniqueId, timeout: Duration) -> Result<Peers> {
    if size == 0 || size > u16::MAX as u32 {
        return Err(Error::InvalidArgument(format!(
            "a job has 1..={} ranks, got {size}",
            u16::MAX
        )));
    }
    if rank >= size {
        return Err(Error::RankOutOfRange { rank, size });
    }
    if timeout.is_zero() {
        return Err(Error::InvalidArgument(
            "a rendezvous needs a timeout above zero".into(),
        ));
    }
    let links = if size == 1 {
        Links::Alone
    } else if rank == 0 {
        root(size, id, timeout)?
    } else {
        member(rank, size, id, timeout)?
    };
    Ok(Peers {
        rank,
        size,
        timeout,
        state: Mutex::new(State {
            links,
            failed: None,
        }),
    })
}

/// What a handshake thread found: a member of this job (its proof checked) that asks to join.
struct Offer {
    stream: TcpStream,
    rank: u32,
    size: u32,
    nonce: Vec<u8>,
}

/// Rank 0's side: accept connections and check them (each on a thread of its own, so a slow
/// one delays no other), admit ranks until all are in or the deadline passes.
fn root(size: u32, id: &UniqueId, timeout: Duration) -> Result<Links> {
    let start = Instant::now();
    let deadline = until(start, timeout);
    let bound;
    let listen_err = |e: io::Error| {
        err(BootstrapError::Listen {
            addr: id.bind_addr().to_string(),
            detail: e.to_string(),
        })
    };
    let listener = match id.listener() {
        Some(l) => l,
        None => {
            bound = TcpListener::bind(id.bind_addr()).map_err(listen_err)?;
            &bound
        }
    };
    listener.set_nonblocking(true).map_err(listen_err)?;
    let (tx, rx) = mpsc::channel::<Offer>();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut ranks: Vec<Option<TcpStream>> = (0..size).map(|_| None).collect();
    // Rank 0 and every admitted rank.
    let joined = |ranks: &[Option<TcpStream>]| 1 + ranks.iter().flatten().count() as u32;
    let mut swept = Instant::now();
    while Instant::now() < deadline {
        // A rank that gave up or died while waiting for the others frees its place, so that it
        // can come again (a restarted process): checked now and then, before a rank whose
        // place is taken is refused, and before the job is declared complete.
        if joined(&ranks) == size || swept.elapsed() >= SWEEP {
            swept = Instant::now();
            ranks.iter_mut().for_each(free_if_gone);
            if joined(&ranks) == size {
                break;
            }
        }
        while let Ok(offer) = rx.try_recv() {
            if let Some(slot) = ranks.get_mut(offer.rank as usize) {
                free_if_gone(slot);
            }
            if let Some((r, s)) = settle(offer, size, id.secret(), &ranks) {
                ranks[r as usize] = Some(s);
            }
        }
        if joined(&ranks) == size {
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                if in_flight.load(Ordering::Acquire) >= MAX_HANDSHAKES {
                    continue; // dropped: the job's ranks retry
                }
                in_flight.fetch_add(1, Ordering::AcqRel);
                let (tx, count, secret) = (tx.clone(), in_flight.clone(), *id.secret());
                let by = deadline.min(Instant::now() + HANDSHAKE);
                let spawned = std::thread::Builder::new()
                    .name("aiv-rendezvous".into())
                    .spawn(move || {
                        if let Some(offer) = handshake(stream, &secret, by) {
                            let _ = tx.send(offer);
                        }
                        count.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    in_flight.fetch_sub(1, Ordering::AcqRel);
                }
            }
            // Nothing to accept; or a connection aborted, out of descriptors, a network error
            // accept(2) says to retry: all pass, and the deadline still holds.
            Err(e) => {
                let pause = if e.kind() == ErrorKind::WouldBlock {
                    2
                } else {
                    10
                };
                std::thread::sleep(Duration::from_millis(pause));
            }
        }
    }
    if joined(&ranks) < size {
        let missing: Vec<u32> = (1..size).filter(|&r| ranks[r as usize].is_none()).collect();
        let waited_ms = start.elapsed().as_millis() as u64;
        notify_all(&ranks, wire::MISSING, &missing_note(waited_ms, &missing));
        return Err(err(BootstrapError::Missing {
            ranks: missing,
            size,
            waited_ms,
        }));
    }
    let by = Instant::now() + HANDSHAKE;
    for (r, s) in ranks.iter().enumerate() {
        if let Some(s) = s {
            if let Err(e) = wire::send(&mut wire::Until { stream: s, by }, wire::READY, &[]) {
                let (peer, detail) = (r as u32, e.to_string());
                tell_lost(&ranks, peer, &detail);
                return Err(err(BootstrapError::PeerLost { peer, detail }));
            }
        }
    }
    Ok(Links::Root(ranks))
}

/// Empties an admitted rank's place if the rank is no longer waiting.
fn free_if_gone(slot: &mut Option<TcpStream>) {
    if slot.as_ref().is_some_and(|s| !waiting(s)) {
        *slot = None;
    }
}

/// Whether an admitted rank is still waiting for rank 0's verdict. It sends nothing in that
/// time, so anything to read (its connection's end, or bytes out of turn) means it is not.
fn waiting(s: &TcpStream) -> bool {
    let mut fd = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd for an open socket (borrowed from `s`); poll only writes `revents`.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n == 0 || (n < 0 && io::Error::last_os_error().kind() == ErrorKind::Interrupted)
}

/// A handshake thread's work: challenge the connection and check its proof, all by `by`.
/// `Some` for a member of this job; a connection that proves nothing by then (silent, garbage,
/// slow) is dropped unanswered, one that proves another secret is told so.
fn handshake(stream: TcpStream, secret: &[u8; 32], by: Instant) -> Option<Offer> {
    stream.set_nonblocking(false).ok()?;
    stream.set_nodelay(true).ok()?;
    let mut io = wire::Until {
        stream: &stream,
        by,
    };
    let nonce = wire::nonce().ok()?;
    let mut challenge = wire::MAGIC.to_vec();
    challenge.push(wire::VERSION);
    challenge.extend_from_slice(&nonce);
    wire::send(&mut io, wire::CHALLENGE, &challenge).ok()?;
    let (kind, hello) = wire::recv(&mut io, wire::MAX_HANDSHAKE_FRAME).ok()?;
    if kind != wire::HELLO || hello.len() != 8 + wire::NONCE + wire::PROOF {
        return None;
    }
    let rank = wire::u32_at(&hello, 0)?;
    let size = wire::u32_at(&hello, 4)?;
    let proof = &hello[8 + wire::NONCE..];
    if !wire::verify(secret, Side::Rank, &nonce, rank, size, proof) {
        let why = "it is not a rank of this job: its proof does not match this job's secret (a rank of another job, or a UniqueId from another run)";
        let _ = wire::send(&mut io, wire::REFUSE, why.as_bytes());
        return None;
    }
    Some(Offer {
        stream,
        rank,
        size,
        nonce: hello[8..8 + wire::NONCE].to_vec(),
    })
}

/// Rank 0 decides on a proven member: welcomed (its rank and connection) or refused, told why.
fn settle(
    offer: Offer,
    size: u32,
    secret: &[u8; 32],
    ranks: &[Option<TcpStream>],
) -> Option<(u32, TcpStream)> {
    let Offer {
        stream,
        rank,
        size: theirs,
        nonce,
    } = offer;
    let mut io = wire::Until {
        stream: &stream,
        by: Instant::now() + HANDSHAKE,
    };
    let refusal = if theirs != size {
        Some(format!(
            "it joins a job of {theirs} ranks, this job has {size}"
        ))
    } else if rank == 0 || rank >= size {
        Some(format!(
            "rank {rank} cannot join a job of {size} ranks as a member (rank 0 is the one listening)"
        ))
    } else if ranks[rank as usize].is_some() {
        Some(format!("rank {rank} has already joined this job"))
    } else {
        None
    };
    if let Some(why) = refusal {
        let _ = wire::send(&mut io, wire::REFUSE, why.as_bytes());
        return None;
    }
    let answer = wire::prove(secret, Side::Root, &nonce, rank, size);
    wire::send(&mut io, wire::WELCOME, &answer).ok()?;
    Some((rank, stream))
}

/// The payload of a MISSING frame.
fn missing_note(waited_ms: u64, missing: &[u32]) -> Vec<u8> {
    let mut note = waited_ms.to_be_bytes().to_vec();
    for r in missing {
        note.extend_from_slice(&r.to_be_bytes());
    }
    note
}

/// (waited ms, ranks) of a MISSING frame's payload.
fn read_missing(note: &[u8]) -> (u64, Vec<u32>) {
    let waited_ms = note
        .get(..8)
        .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
        .unwrap_or(0);
    let ranks = (8..note.len())
        .step_by(4)
        .filter_map(|at| wire::u32_at(note, at))
        .collect();
    (waited_ms, ranks)
}

/// Rank 0 tells every connected rank one thing, giving each a short while: a rank that does
/// not take it in time learns it from its own deadline instead.
fn notify_all(ranks: &[Option<TcpStream>], kind: u8, payload: &[u8]) {
    let by = Instant::now() + NOTICE;
    for s in ranks.iter().flatten() {
        let _ = wire::send(&mut wire::Until { stream: s, by }, kind, payload);
    }
}

/// Why one attempt to join failed: for good (`Final`), or because rank 0 closed the connection
/// before answering (it was busy, or the connection was one too many): then the rank tries
/// again until its deadline.
enum Attempt {
    Final(Error),
    Dropped(String),
    /// Rank 0 accepted the connection but did not answer by the deadline.
    Silent,
}

/// A member's side: reach rank 0, prove membership, check rank 0's proof, wait for the verdict.
fn member(rank: u32, size: u32, id: &UniqueId, timeout: Duration) -> Result<Links> {
    let start = Instant::now();
    let deadline = until(start, timeout);
    let addr = id.addr();
    let unreachable = |detail: String| {
        err(BootstrapError::Unreachable {
            addr: addr.to_string(),
            waited_ms: start.elapsed().as_millis() as u64,
            detail,
        })
    };
    let s = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let tried = match TcpStream::connect_timeout(
            &addr,
            left.clamp(Duration::from_millis(1), HANDSHAKE),
        ) {
            Ok(s) => match attempt(&s, rank, size, id, deadline) {
                Ok(()) => break s,
                Err(Attempt::Final(e)) => return Err(e),
                Err(Attempt::Dropped(detail)) => detail,
                Err(Attempt::Silent) => {
                    return Err(unreachable(
                        "it accepted the connection but did not answer in time (has rank 0 called join?)"
                            .into(),
                    ))
                }
            },
            Err(e) => e.to_string(),
        };
        if Instant::now() + RETRY >= deadline {
            return Err(unreachable(tried));
        }
        std::thread::sleep(RETRY);
    };
    // Rank 0's deadline decides; its verdict comes by then (waited for here until twice the
    // timeout after this rank started).
    let mut io = wire::Until {
        stream: &s,
        by: until(start, timeout.saturating_mul(2)),
    };
    let lost = |detail: String| err(BootstrapError::PeerLost { peer: 0, detail });
    match wire::recv(&mut io, usize::MAX) {
        Ok((wire::READY, _)) => {}
        Ok((wire::MISSING, note)) => {
            let (waited_ms, ranks) = read_missing(&note);
            return Err(err(BootstrapError::Missing {
                ranks,
                size,
                waited_ms,
            }));
        }
        Ok((kind, _)) => return Err(lost(format!("rank 0 sent frame {kind} out of turn"))),
        Err(e) if wire::timed_out(&e) => {
            return Err(err(BootstrapError::Timeout {
                ranks: vec![0],
                waited_ms: start.elapsed().as_millis() as u64,
            }))
        }
        Err(e) => return Err(lost(e.to_string())),
    }
    Ok(Links::Member(s))
}

/// One try at the handshake on a fresh connection, all by `deadline`.
fn attempt(
    s: &TcpStream,
    rank: u32,
    size: u32,
    id: &UniqueId,
    deadline: Instant,
) -> std::result::Result<(), Attempt> {
    let addr = id.addr();
    let foreign = |detail: String| {
        Attempt::Final(err(BootstrapError::ForeignRoot {
            addr: addr.to_string(),
            detail,
        }))
    };
    // Until this rank's deadline: a bound but idle rank 0 (not in `join` yet, or past its own
    // deadline) is "did not answer", not a foreign listener; a closed connection is tried again.
    let quiet = |e: io::Error| {
        if wire::timed_out(&e) {
            Attempt::Silent
        } else {
            Attempt::Dropped(format!("the connection failed: {e}"))
        }
    };
    s.set_nodelay(true).map_err(quiet)?;
    let mut io = wire::Until {
        stream: s,
        by: deadline,
    };
    let (kind, challenge) = wire::recv(&mut io, wire::MAX_HANDSHAKE_FRAME).map_err(|e| {
        if e.kind() == ErrorKind::InvalidData {
            foreign("what listens there does not speak aiv-comm's rendezvous".into())
        } else {
            quiet(e)
        }
    })?;
    if kind != wire::CHALLENGE
        || challenge.len() != 5 + wire::NONCE
        || &challenge[..4] != wire::MAGIC
    {
        return Err(foreign(
            "what listens there does not speak aiv-comm's rendezvous".into(),
        ));
    }
    if challenge[4] != wire::VERSION {
        return Err(foreign(format!(
            "it speaks rendezvous version {}, this rank {}",
            challenge[4],
            wire::VERSION
        )));
    }
    let nonce = wire::nonce().map_err(quiet)?;
    let mut hello = Vec::with_capacity(8 + wire::NONCE + wire::PROOF);
    hello.extend_from_slice(&rank.to_be_bytes());
    hello.extend_from_slice(&size.to_be_bytes());
    hello.extend_from_slice(&nonce);
    hello.extend_from_slice(&wire::prove(
        id.secret(),
        Side::Rank,
        &challenge[5..],
        rank,
        size,
    ));
    wire::send(&mut io, wire::HELLO, &hello).map_err(quiet)?;
    let (kind, answer) = wire::recv(&mut io, wire::MAX_HANDSHAKE_FRAME).map_err(quiet)?;
    match kind {
        wire::WELCOME if wire::verify(id.secret(), Side::Root, &nonce, rank, size, &answer) => {
            Ok(())
        }
        wire::WELCOME => Err(foreign(
            "its proof does not match this job's secret: it is another job's rank 0".into(),
        )),
        wire::REFUSE => Err(Attempt::Final(err(BootstrapError::Refused(
            String::from_utf8_lossy(&answer).into_owned(),
        )))),
        _ => Err(foreign("it answered out of turn".into())),
    }
}

/// The connections of a rank after the rendezvous.
enum Links {
    /// Rank 0: one connection per other rank (index = rank; `None` for rank 0).
    Root(Vec<Option<TcpStream>>),
    /// Any other rank: its connection to rank 0.
    Member(TcpStream),
    /// A job of one rank.
    Alone,
}

struct State {
    links: Links,
    /// The first failure: every later call returns it.
    failed: Option<BootstrapError>,
}

/// The ranks of a job after [`join`]: they can exchange bytes, and each learns when another
/// has gone (its process exited or was killed). Calls are collective: every rank makes the
/// same calls in the same order. `Send + Sync`; calls from several threads take turns.
pub struct Peers {
    rank: u32,
    size: u32,
    timeout: Duration,
    state: Mutex<State>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Peers {
    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The number of ranks of the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Every rank's `mine`, in rank order, on every rank (any length, no limit but memory).
    ///
    /// Fails naming a rank whose connection closed (its process exited or was killed), or the
    /// ranks that did not contribute within the timeout given to [`join`]: rank 0 counts it
    /// from its own call and tells every rank which ranks were missing; a rank that hears
    /// nothing from rank 0 within twice the timeout names rank 0. After a failure every call
    /// returns the same error.
    pub fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut st = self.state.lock();
        if let Some(e) = &st.failed {
            return Err(err(e.clone()));
        }
        let r = match &st.links {
            Links::Alone => Ok(vec![mine.to_vec()]),
            Links::Member(s) => member_gather(s, self.size, mine, self.timeout),
            Links::Root(ranks) => root_gather(ranks, mine, self.timeout),
        };
        if let Err(e) = &r {
            st.failed = Some(e.clone());
        }
        r.map_err(err)
    }

    /// Returns when every rank has called it (or fails as [`Peers::all_gather`] does).
    pub fn barrier(&self) -> Result<()> {
        self.all_gather(&[]).map(drop)
    }
}

fn member_gather(
    s: &TcpStream,
    size: u32,
    mine: &[u8],
    timeout: Duration,
) -> std::result::Result<Vec<Vec<u8>>, BootstrapError> {
    // Rank 0's deadline decides who is missing; this rank waits twice as long for its word.
    let start = Instant::now();
    let mut io = wire::Until {
        stream: s,
        by: until(start, timeout.saturating_mul(2)),
    };
    let late = || BootstrapError::Timeout {
        ranks: vec![0],
        waited_ms: start.elapsed().as_millis() as u64,
    };
    let lost = |e: io::Error| BootstrapError::PeerLost {
        peer: 0,
        detail: e.to_string(),
    };
    match wire::send(&mut io, wire::DATA, mine) {
        Err(e) if wire::timed_out(&e) => return Err(late()),
        Err(e) => return Err(lost(e)),
        Ok(()) => {}
    }
    match wire::recv(&mut io, usize::MAX) {
        Ok((wire::DATA, all)) => unpack(&all, size).ok_or_else(|| BootstrapError::PeerLost {
            peer: 0,
            detail: "rank 0 sent a malformed gather".into(),
        }),
        Ok((wire::LOST, note)) => Err(BootstrapError::PeerLost {
            peer: wire::u32_at(&note, 0).unwrap_or(0),
            detail: String::from_utf8_lossy(note.get(4..).unwrap_or_default()).into_owned(),
        }),
        Ok((wire::MISSING, note)) => {
            let (waited_ms, ranks) = read_missing(&note);
            Err(BootstrapError::Timeout { ranks, waited_ms })
        }
        Ok((kind, _)) => Err(BootstrapError::PeerLost {
            peer: 0,
            detail: format!("rank 0 sent frame {kind} out of turn"),
        }),
        Err(e) if wire::timed_out(&e) => Err(late()),
        Err(e) => Err(lost(e)),
    }
}

/// Rank 0's gather: waits on every rank's connection at once (poll), so a rank that dies is
/// named as soon as its connection closes, whatever the others are doing. Every read and
/// write ends by the deadline.
fn root_gather(
    ranks: &[Option<TcpStream>],
    mine: &[u8],
    timeout: Duration,
) -> std::result::Result<Vec<Vec<u8>>, BootstrapError> {
    let start = Instant::now();
    let deadline = until(start, timeout);
    let mut got: Vec<Option<Vec<u8>>> = (0..ranks.len()).map(|_| None).collect();
    got[0] = Some(mine.to_vec());
    let gone = |r: usize, detail: String| {
        tell_lost(ranks, r as u32, &detail);
        BootstrapError::PeerLost {
            peer: r as u32,
            detail,
        }
    };
    loop {
        let pending: Vec<usize> = (1..ranks.len()).filter(|&r| got[r].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let missing: Vec<u32> = pending.iter().map(|&r| r as u32).collect();
            let waited_ms = start.elapsed().as_millis() as u64;
            // Every rank hears it, the late ones too: it answers their next gather.
            notify_all(ranks, wire::MISSING, &missing_note(waited_ms, &missing));
            return Err(BootstrapError::Timeout {
                ranks: missing,
                waited_ms,
            });
        }
        let mut fds: Vec<libc::pollfd> = pending
            .iter()
            .map(|&r| libc::pollfd {
                fd: ranks[r]
                    .as_ref()
                    .expect("a member's connection")
                    .as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structs; poll only writes their
        // `revents`, and every fd is open (owned by `ranks`, borrowed here).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(BootstrapError::Io(format!("poll: {e}")));
        }
        for (fd, &r) in fds.iter().zip(&pending) {
            if fd.revents == 0 {
                continue;
            }
            let stream = ranks[r].as_ref().expect("a member's connection");
            let mut io = wire::Until {
                stream,
                by: deadline,
            };
            match wire::recv(&mut io, usize::MAX) {
                Ok((wire::DATA, data)) => got[r] = Some(data),
                Ok((kind, _)) => return Err(gone(r, format!("it sent frame {kind} out of turn"))),
                // A frame begun but not finished by the deadline: the rank is late.
                Err(e) if wire::timed_out(&e) => {}
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                    return Err(gone(
                        r,
                        "its connection closed: the process exited or was killed".into(),
                    ))
                }
                Err(e) => return Err(gone(r, e.to_string())),
            }
        }
    }
    let all: Vec<Vec<u8>> = got.into_iter().map(|g| g.expect("every rank")).collect();
    let packed = pack(&all);
    for (r, s) in ranks.iter().enumerate() {
        if let Some(stream) = s {
            let mut io = wire::Until {
                stream,
                by: until(Instant::now(), timeout),
            };
            match wire::send(&mut io, wire::DATA, &packed) {
                Ok(()) => {}
                // It stopped reading: late, not gone.
                Err(e) if wire::timed_out(&e) => {
                    return Err(BootstrapError::Timeout {
                        ranks: vec![r as u32],
                        waited_ms: start.elapsed().as_millis() as u64,
                    })
                }
                Err(e) => return Err(gone(r, e.to_string())),
            }
        }
    }
    Ok(all)
}

/// Rank 0 tells every other rank that `peer` is gone.
fn tell_lost(ranks: &[Option<TcpStream>], peer: u32, detail: &str) {
    let mut note = peer.to_be_bytes().to_vec();
    note.extend_from_slice(detail.as_bytes());
    let by = Instant::now() + NOTICE;
    for (r, s) in ranks.iter().enumerate() {
        if let (Some(stream), true) = (s, r as u32 != peer) {
            let _ = wire::send(&mut wire::Until { stream, by }, wire::LOST, &note);
        }
    }
}

/// Everyone's bytes as one payload: count, then length and bytes of each.
fn pack(all: &[Vec<u8>]) -> Vec<u8> {
    let mut out = (all.len() as u64).to_be_bytes().to_vec();
    for a in all {
        out.extend_from_slice(&(a.len() as u64).to_be_bytes());
        out.extend_from_slice(a);
    }
    out
}

/// [`pack`]'s payload for a job of `size` ranks, if it is one.
fn unpack(b: &[u8], size: u32) -> Option<Vec<Vec<u8>>> {
    let u64_at = |at: usize| -> Option<usize> {
        usize::try_from(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?)).ok()
    };
    if u64_at(0)? != size as usize {
        return None;
    }
    let mut at = 8;
    let mut out = Vec::with_capacity(size as usize);
    for _ in 0..size {
        let len = u64_at(at)?;
        at += 8;
        out.push(b.get(at..at.checked_add(len)?)?.to_vec());
        at += len;
    }
    (at == b.len()).then_some(out)
}
