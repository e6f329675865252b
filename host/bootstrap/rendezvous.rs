//! [`join`]: the ranks of a job meet at rank 0; [`Peers`]: what they can do afterwards.

use std::io::{self, ErrorKind};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
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

/// Joins the job of `id` as `rank` of `size`: rank 0 waits for every other rank, the others
/// connect to it (retrying until it listens). Returns when every rank has arrived, or fails at
/// rank 0's deadline (`timeout` after rank 0 started waiting) naming the ranks that did not,
/// on rank 0 and on every rank that did arrive. A rank that cannot reach rank 0 within
/// `timeout` fails naming rank 0's address; one that reaches it waits at most `2 * timeout` in
/// all for rank 0's verdict.
///
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

/// Rank 0's side: accept, check, and admit ranks until all are in or the deadline passes.
fn root(size: u32, id: &UniqueId, timeout: Duration) -> Result<Links> {
    let start = Instant::now();
    let deadline = until(start, timeout);
    let bound;
    let listener = match id.listener() {
        Some(l) => l,
        None => {
            bound = TcpListener::bind(id.addr()).map_err(|e| {
                err(BootstrapError::Listen {
                    addr: id.addr().to_string(),
                    detail: e.to_string(),
                })
            })?;
            &bound
        }
    };
    let listen_err = |e: io::Error| {
        err(BootstrapError::Listen {
            addr: id.addr().to_string(),
            detail: e.to_string(),
        })
    };
    listener.set_nonblocking(true).map_err(listen_err)?;
    let mut ranks: Vec<Option<TcpStream>> = (0..size).map(|_| None).collect();
    let mut joined = 1;
    while joined < size {
        match listener.accept() {
            Ok((stream, _)) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Some((r, s)) = admit(stream, size, id.secret(), &ranks, left) {
                    ranks[r as usize] = Some(s);
                    joined += 1;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(listen_err(e)),
        }
    }
    if joined < size {
        let missing: Vec<u32> = (1..size).filter(|&r| ranks[r as usize].is_none()).collect();
        let waited_ms = start.elapsed().as_millis() as u64;
        let mut note = waited_ms.to_be_bytes().to_vec();
        for r in &missing {
            note.extend_from_slice(&r.to_be_bytes());
        }
        for s in ranks.iter_mut().flatten() {
            // The rank may be gone already: it learns nothing more either way.
            let _ = wire::send(s, wire::MISSING, &note);
        }
        return Err(err(BootstrapError::Missing {
            ranks: missing,
            size,
            waited_ms,
        }));
    }
    let mut lost = None;
    for (r, s) in ranks.iter_mut().enumerate() {
        if let Some(s) = s {
            if let Err(e) = wire::send(s, wire::READY, &[]) {
                lost.get_or_insert((r as u32, e.to_string()));
            }
        }
    }
    if let Some((peer, detail)) = lost {
        tell_lost(&mut ranks, peer, &detail);
        return Err(err(BootstrapError::PeerLost { peer, detail }));
    }
    Ok(Links::Root(ranks))
}

/// Rank 0 checks one connection: `Some` with its rank if it is a rank of this job that may
/// join now; `None` (and a refusal it can read, where it proved anything) otherwise.
fn admit(
    mut s: TcpStream,
    size: u32,
    secret: &[u8; 32],
    ranks: &[Option<TcpStream>],
    left: Duration,
) -> Option<(u32, TcpStream)> {
    let limit = HANDSHAKE.min(left).max(Duration::from_millis(50));
    s.set_nonblocking(false).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.set_write_timeout(Some(limit)).ok()?;
    s.set_nodelay(true).ok()?;
    let nonce = wire::nonce().ok()?;
    let mut challenge = wire::MAGIC.to_vec();
    challenge.push(wire::VERSION);
    challenge.extend_from_slice(&nonce);
    wire::send(&mut s, wire::CHALLENGE, &challenge).ok()?;
    // Silence, garbage or a slow peer: not a rank of any aiv-comm job; drop it unanswered.
    let (kind, hello) = wire::recv(&mut s, wire::MAX_HANDSHAKE_FRAME).ok()?;
    if kind != wire::HELLO || hello.len() != 8 + wire::NONCE + wire::PROOF {
        return None;
    }
    let rank = wire::u32_at(&hello, 0)?;
    let their_size = wire::u32_at(&hello, 4)?;
    let their_nonce = &hello[8..8 + wire::NONCE];
    let proof = &hello[8 + wire::NONCE..];
    let refusal = if !wire::verify(secret, Side::Rank, &nonce, rank, their_size, proof) {
        Some("it is not a rank of this job: its proof does not match this job's secret (a rank of another job, or a UniqueId from another run)".to_string())
    } else if their_size != size {
        Some(format!(
            "it joins a job of {their_size} ranks, this job has {size}"
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
        let _ = wire::send(&mut s, wire::REFUSE, why.as_bytes());
        return None;
    }
    let answer = wire::prove(secret, Side::Root, their_nonce, rank, size);
    wire::send(&mut s, wire::WELCOME, &answer).ok()?;
    s.set_read_timeout(None).ok()?;
    s.set_write_timeout(None).ok()?;
    Some((rank, s))
}

/// A member's side: reach rank 0, prove membership, check rank 0's proof, wait for the verdict.
fn member(rank: u32, size: u32, id: &UniqueId, timeout: Duration) -> Result<Links> {
    let start = Instant::now();
    let deadline = until(start, timeout);
    let addr = id.addr();
    let mut s = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match TcpStream::connect_timeout(&addr, left.clamp(Duration::from_millis(1), HANDSHAKE)) {
            Ok(s) => break s,
            Err(e) => {
                if Instant::now() + RETRY >= deadline {
                    return Err(err(BootstrapError::Unreachable {
                        addr: addr.to_string(),
                        waited_ms: start.elapsed().as_millis() as u64,
                        detail: e.to_string(),
                    }));
                }
                std::thread::sleep(RETRY);
            }
        }
    };
    let foreign = |detail: String| {
        err(BootstrapError::ForeignRoot {
            addr: addr.to_string(),
            detail,
        })
    };
    let io_foreign = |e: io::Error| foreign(format!("the handshake failed: {e}"));
    s.set_nodelay(true).map_err(io_foreign)?;
    s.set_read_timeout(Some(HANDSHAKE.max(timeout.min(Duration::from_secs(10)))))
        .map_err(io_foreign)?;
    let (kind, challenge) = wire::recv(&mut s, wire::MAX_HANDSHAKE_FRAME).map_err(io_foreign)?;
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
    let nonce = wire::nonce().map_err(io_foreign)?;
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
    wire::send(&mut s, wire::HELLO, &hello).map_err(io_foreign)?;
    let (kind, answer) = wire::recv(&mut s, wire::MAX_HANDSHAKE_FRAME).map_err(io_foreign)?;
    match kind {
        wire::WELCOME if wire::verify(id.secret(), Side::Root, &nonce, rank, size, &answer) => {}
        wire::WELCOME => {
            return Err(foreign(
                "its proof does not match this job's secret: it is another job's rank 0".into(),
            ))
        }
        wire::REFUSE => {
            return Err(err(BootstrapError::Refused(
                String::from_utf8_lossy(&answer).into_owned(),
            )))
        }
        _ => return Err(foreign("it answered out of turn".into())),
    }
    // Rank 0's deadline decides; its verdict comes by then (bounded here at twice the timeout).
    let verdict_by =
        until(start, timeout.saturating_mul(2)).saturating_duration_since(Instant::now());
    s.set_read_timeout(Some(verdict_by.max(Duration::from_millis(1))))
        .map_err(io_foreign)?;
    let lost = |detail: String| err(BootstrapError::PeerLost { peer: 0, detail });
    match wire::recv(&mut s, wire::MAX_FRAME) {
        Ok((wire::READY, _)) => {}
        Ok((wire::MISSING, note)) => {
            let waited_ms = note
                .get(..8)
                .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
                .unwrap_or(0);
            let ranks = (8..note.len())
                .step_by(4)
                .filter_map(|at| wire::u32_at(&note, at))
                .collect();
            return Err(err(BootstrapError::Missing {
                ranks,
                size,
                waited_ms,
            }));
        }
        Ok((kind, _)) => return Err(lost(format!("rank 0 sent frame {kind} out of turn"))),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            return Err(err(BootstrapError::Timeout {
                ranks: vec![0],
                waited_ms: start.elapsed().as_millis() as u64,
            }))
        }
        Err(e) => return Err(lost(e.to_string())),
    }
    s.set_read_timeout(None).map_err(|e| lost(e.to_string()))?;
    Ok(Links::Member(s))
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

    /// Every rank's `mine`, in rank order, on every rank. Fails naming a rank whose connection
    /// closed, or the ranks that did not contribute within the timeout given to [`join`]; after
    /// a failure every call returns the same error.
    pub fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut st = self.state.lock();
        if let Some(e) = &st.failed {
            return Err(err(e.clone()));
        }
        let r = match &mut st.links {
            Links::Alone => Ok(vec![mine.to_vec()]),
            Links::Member(s) => member_gather(s, mine, self.timeout),
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
    s: &mut TcpStream,
    mine: &[u8],
    timeout: Duration,
) -> std::result::Result<Vec<Vec<u8>>, BootstrapError> {
    let lost = |e: io::Error| BootstrapError::PeerLost {
        peer: 0,
        detail: e.to_string(),
    };
    wire::send(s, wire::DATA, mine).map_err(lost)?;
    s.set_read_timeout(Some(timeout)).map_err(lost)?;
    match wire::recv(s, wire::MAX_FRAME) {
        Ok((wire::DATA, all)) => unpack(&all).ok_or_else(|| BootstrapError::PeerLost {
            peer: 0,
            detail: "rank 0 sent a malformed gather".into(),
        }),
        Ok((wire::LOST, note)) => Err(BootstrapError::PeerLost {
            peer: wire::u32_at(&note, 0).unwrap_or(0),
            detail: String::from_utf8_lossy(note.get(4..).unwrap_or_default()).into_owned(),
        }),
        Ok((wire::MISSING, note)) => Err(BootstrapError::Timeout {
            ranks: (8..note.len())
                .step_by(4)
                .filter_map(|at| wire::u32_at(&note, at))
                .collect(),
            waited_ms: note
                .get(..8)
                .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
                .unwrap_or(0),
        }),
        Ok((kind, _)) => Err(BootstrapError::PeerLost {
            peer: 0,
            detail: format!("rank 0 sent frame {kind} out of turn"),
        }),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Err(BootstrapError::Timeout {
                ranks: vec![0],
                waited_ms: timeout.as_millis() as u64,
            })
        }
        Err(e) => Err(lost(e)),
    }
}

/// Rank 0's gather: waits on every rank's connection at once (poll), so a rank that dies is
/// named as soon as its connection closes, whatever the others are doing.
fn root_gather(
    ranks: &mut [Option<TcpStream>],
    mine: &[u8],
    timeout: Duration,
) -> std::result::Result<Vec<Vec<u8>>, BootstrapError> {
    let start = Instant::now();
    let mut got: Vec<Option<Vec<u8>>> = (0..ranks.len()).map(|_| None).collect();
    got[0] = Some(mine.to_vec());
    loop {
        let pending: Vec<usize> = (1..ranks.len()).filter(|&r| got[r].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            let missing: Vec<u32> = pending.iter().map(|&r| r as u32).collect();
            let waited_ms = start.elapsed().as_millis() as u64;
            let mut note = waited_ms.to_be_bytes().to_vec();
            for r in &missing {
                note.extend_from_slice(&r.to_be_bytes());
            }
            for (r, s) in ranks.iter_mut().enumerate() {
                if let (Some(s), false) = (s, pending.contains(&r)) {
                    let _ = wire::send(s, wire::MISSING, &note);
                }
            }
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
        // `revents`, and every fd is open (owned by `ranks`, borrowed mutably here).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(BootstrapError::PeerLost {
                peer: 0,
                detail: format!("poll: {e}"),
            });
        }
        for (fd, &r) in fds.iter().zip(&pending) {
            if fd.revents == 0 {
                continue;
            }
            let s = ranks[r].as_mut().expect("a member's connection");
            match wire::recv(s, wire::MAX_FRAME) {
                Ok((wire::DATA, data)) => got[r] = Some(data),
                Ok((kind, _)) => {
                    let detail = format!("it sent frame {kind} out of turn");
                    tell_lost(ranks, r as u32, &detail);
                    return Err(BootstrapError::PeerLost {
                        peer: r as u32,
                        detail,
                    });
                }
                Err(e) => {
                    let detail = if e.kind() == ErrorKind::UnexpectedEof {
                        "its connection closed: the process exited or was killed".to_string()
                    } else {
                        e.to_string()
                    };
                    tell_lost(ranks, r as u32, &detail);
                    return Err(BootstrapError::PeerLost {
                        peer: r as u32,
                        detail,
                    });
                }
            }
        }
    }
    let all: Vec<Vec<u8>> = got.into_iter().map(|g| g.expect("every rank")).collect();
    let packed = pack(&all);
    let mut lost = None;
    for (r, s) in ranks.iter_mut().enumerate() {
        if let Some(s) = s {
            if let Err(e) = wire::send(s, wire::DATA, &packed) {
                lost.get_or_insert((r as u32, e.to_string()));
            }
        }
    }
    if let Some((peer, detail)) = lost {
        tell_lost(ranks, peer, &detail);
        return Err(BootstrapError::PeerLost { peer, detail });
    }
    Ok(all)
}

/// Rank 0 tells every other rank that `peer` is gone.
fn tell_lost(ranks: &mut [Option<TcpStream>], peer: u32, detail: &str) {
    let mut note = peer.to_be_bytes().to_vec();
    note.extend_from_slice(detail.as_bytes());
    for (r, s) in ranks.iter_mut().enumerate() {
        if let (Some(s), true) = (s, r as u32 != peer) {
            let _ = wire::send(s, wire::LOST, &note);
        }
    }
}

/// Everyone's bytes as one payload: count, then length and bytes of each.
fn pack(all: &[Vec<u8>]) -> Vec<u8> {
    let mut out = (all.len() as u32).to_be_bytes().to_vec();
    for a in all {
        out.extend_from_slice(&(a.len() as u32).to_be_bytes());
        out.extend_from_slice(a);
    }
    out
}

fn unpack(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let n = wire::u32_at(b, 0)? as usize;
    let mut at = 4;
    let mut out = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let len = wire::u32_at(b, at)? as usize;
        at += 4;
        out.push(b.get(at..at.checked_add(len)?)?.to_vec());
        at += len;
    }
    (at == b.len()).then_some(out)
}
