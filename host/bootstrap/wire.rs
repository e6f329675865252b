//! The rendezvous's frames (`kind`, big-endian `u32` length, payload) and its proofs of
//! membership (HMAC-SHA256 under the job's secret).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// First bytes of rank 0's challenge: a client that reads anything else is not talking to an
/// aiv-comm rank 0.
pub(super) const MAGIC: &[u8; 4] = b"AIVR";
/// Version of this protocol, in the challenge.
pub(super) const VERSION: u8 = 1;
/// Bytes of a nonce.
pub(super) const NONCE: usize = 16;
/// Bytes of a proof.
pub(super) const PROOF: usize = 32;
/// The longest frame during the handshake: a stray connection cannot make rank 0 allocate.
/// After it, frames come from proven ranks and have no limit but memory.
pub(super) const MAX_HANDSHAKE_FRAME: usize = 4096;

/// Rank 0 -> rank: `MAGIC`, `VERSION`, rank 0's nonce.
pub(super) const CHALLENGE: u8 = 1;
/// Rank -> rank 0: rank, world size (u32 each), the rank's nonce, its proof.
pub(super) const HELLO: u8 = 2;
/// Rank 0 -> rank: rank 0's proof of the rank's nonce.
pub(super) const WELCOME: u8 = 3;
/// Rank 0 -> rank: why it is refused (UTF-8).
pub(super) const REFUSE: u8 = 4;
/// Rank 0 -> rank: every rank has arrived.
pub(super) const READY: u8 = 5;
/// Rank 0 -> rank: the deadline passed; waited ms (u64), then the missing ranks (u32 each).
pub(super) const MISSING: u8 = 6;
/// Either way: one rank's contribution (rank -> 0) or everyone's (0 -> rank).
pub(super) const DATA: u8 = 7;
/// Rank 0 -> rank: a rank's connection closed; the rank (u32), then what was seen (UTF-8).
pub(super) const LOST: u8 = 8;

/// Which side proves: a rank to rank 0, or rank 0 to a rank.
#[derive(Clone, Copy)]
pub(super) enum Side {
    Rank,
    Root,
}

fn mac(secret: &[u8; 32], side: Side, nonce: &[u8], rank: u32, size: u32) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(match side {
        Side::Rank => b"aiv-comm rendezvous: rank",
        Side::Root => b"aiv-comm rendezvous: root",
    });
    m.update(nonce);
    m.update(&rank.to_be_bytes());
    m.update(&size.to_be_bytes());
    m
}

/// The proof that `side` knows `secret`, bound to the other side's `nonce`, the rank and the
/// world size.
pub(super) fn prove(secret: &[u8; 32], side: Side, nonce: &[u8], rank: u32, size: u32) -> [u8; 32] {
    mac(secret, side, nonce, rank, size)
        .finalize()
        .into_bytes()
        .into()
}

/// Whether `proof` is [`prove`]'s (compared in constant time).
pub(super) fn verify(
    secret: &[u8; 32],
    side: Side,
    nonce: &[u8],
    rank: u32,
    size: u32,
    proof: &[u8],
) -> bool {
    mac(secret, side, nonce, rank, size)
        .verify_slice(proof)
        .is_ok()
}

/// A fresh nonce.
pub(super) fn nonce() -> io::Result<[u8; NONCE]> {
    let mut n = [0u8; NONCE];
    getrandom::getrandom(&mut n).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(n)
}

/// Writes one frame.
pub(super) fn send(w: &mut impl Write, kind: u8, payload: &[u8]) -> io::Result<()> {
    let mut head = [0u8; 9];
    head[0] = kind;
    head[1..].copy_from_slice(&(payload.len() as u64).to_be_bytes());
    w.write_all(&head)?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame of at most `max` payload bytes.
pub(super) fn recv(r: &mut impl Read, max: usize) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head)?;
    let len = u64::from_be_bytes(head[1..].try_into().expect("8 bytes"));
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= max)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a frame of {len} bytes (at most {max} here)"),
            )
        })?;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok((head[0], payload))
}

/// A connection whose reads and writes all end by `by`: each call re-arms the socket's timeout
/// with the time left, so a peer that trickles bytes cannot stretch a frame past it. A call
/// after `by` fails with [`io::ErrorKind::TimedOut`].
pub(super) struct Until<'a> {
    pub(super) stream: &'a TcpStream,
    pub(super) by: Instant,
}

impl Until<'_> {
    fn left(&self) -> io::Result<Duration> {
        let left = self.by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
        } else {
            Ok(left)
        }
    }
}

impl Read for Until<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        (&mut &*self.stream).read(buf)
    }
}

impl Write for Until<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        (&mut &*self.stream).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `e` is a timeout (of [`Until`] or of a socket timeout).
pub(super) fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// The `u32` at byte `at` of `b` (big-endian), if there is one.
pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_holds_only_for_its_secret_side_nonce_rank_and_size() {
        let s = [1u8; 32];
        let p = prove(&s, Side::Rank, b"nonce", 3, 8);
        assert!(verify(&s, Side::Rank, b"nonce", 3, 8, &p));
        assert!(!verify(&[2u8; 32], Side::Rank, b"nonce", 3, 8, &p));
        assert!(!verify(&s, Side::Root, b"nonce", 3, 8, &p));
        assert!(!verify(&s, Side::Rank, b"other", 3, 8, &p));
        assert!(!verify(&s, Side::Rank, b"nonce", 4, 8, &p));
        assert!(!verify(&s, Side::Rank, b"nonce", 3, 9, &p));
    }

    #[test]
    fn frames_round_trip_and_long_ones_are_refused() {
        let mut buf = Vec::new();
        send(&mut buf, DATA, b"hello").unwrap();
        let (kind, payload) = recv(&mut buf.as_slice(), 16).unwrap();
        assert_eq!((kind, payload.as_slice()), (DATA, b"hello".as_slice()));
        let e = recv(&mut buf.as_slice(), 4).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
