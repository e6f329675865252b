//! [`UniqueId`]: where rank 0 listens and the job's secret, as bytes any transport can carry.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::Arc;

use crate::error::{BootstrapError, Error, Result};

const MAGIC: &[u8; 4] = b"AIVU";
const VERSION: u8 = 1;

/// The identity of one job's rendezvous: rank 0's address and the job's secret, made once (on
/// any rank, usually rank 0) and given to every rank, as NCCL's `ncclUniqueId` or HCCL's root
/// info is.
///
/// [`UniqueId::to_bytes`] and [`UniqueId::from_bytes`] carry it over any channel (MPI, a file,
/// an environment variable in hex). Whoever holds the bytes can join the job, so treat them as
/// a secret; `Debug` shows neither the address nor the secret.
///
/// [`UniqueId::new`] also binds rank 0's listening socket and keeps it in the id (and its
/// clones): rank 0 should [`join`](super::join) with the id it made. An id rebuilt from bytes
/// holds no socket; rank 0 joining with one binds the address itself.
#[derive(Clone)]
pub struct UniqueId {
    addr: SocketAddr,
    /// Where rank 0 binds: `addr`, or every interface on `addr`'s port when the address came
    /// from a launcher as a host's own name or address (see [`super::LaunchEnv`]).
    bind: SocketAddr,
    secret: [u8; 32],
    listener: Option<Arc<TcpListener>>,
}

impl UniqueId {
    /// The length of [`UniqueId::to_bytes`].
    pub const BYTES: usize = 56;

    /// A new job: rank 0 will listen on the loopback, on a port the system picks now, with a
    /// random secret. For ranks on several hosts, use [`UniqueId::listen_on`] with an address
    /// the others can reach.
    pub fn new() -> Result<UniqueId> {
        UniqueId::listen_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
    }

    /// A new job whose rank 0 listens on `addr` (port 0: any free port), with a random secret.
    pub fn listen_on(addr: SocketAddr) -> Result<UniqueId> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            Error::Bootstrap(BootstrapError::Listen {
                addr: addr.to_string(),
                detail: e.to_string(),
            })
        })?;
        let addr = listener.local_addr().map_err(|e| {
            Error::Bootstrap(BootstrapError::Listen {
                addr: addr.to_string(),
                detail: e.to_string(),
            })
        })?;
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).map_err(|e| {
            Error::Bootstrap(BootstrapError::Listen {
                addr: addr.to_string(),
                detail: format!("no randomness for the job's secret: {e}"),
            })
        })?;
        Ok(UniqueId {
            addr,
            bind: addr,
            secret,
            listener: Some(Arc::new(listener)),
        })
    }

    /// An id from an address and a secret agreed by other means (the launcher's environment).
    pub(crate) fn from_parts(addr: SocketAddr, secret: [u8; 32]) -> UniqueId {
        UniqueId {
            addr,
            bind: addr,
            secret,
            listener: None,
        }
    }

    /// The same id, with rank 0 listening on every interface (on the same port).
    pub(crate) fn binding_any(mut self) -> UniqueId {
        let any: IpAddr = match self.addr {
            SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
            SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
        };
        self.bind = SocketAddr::new(any, self.addr.port());
        self
    }

    /// Where rank 0 binds its listening socket.
    pub(crate) fn bind_addr(&self) -> SocketAddr {
        self.bind
    }

    /// The id as bytes, for [`UniqueId::from_bytes`] on the other ranks.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        b[..4].copy_from_slice(MAGIC);
        b[4] = VERSION;
        match self.addr.ip() {
            IpAddr::V4(ip) => {
                b[5] = 4;
                b[6..10].copy_from_slice(&ip.octets());
            }
            IpAddr::V6(ip) => {
                b[5] = 6;
                b[6..22].copy_from_slice(&ip.octets());
            }
        }
        b[22..24].copy_from_slice(&self.addr.port().to_be_bytes());
        b[24..56].copy_from_slice(&self.secret);
        b
    }

    /// The id [`UniqueId::to_bytes`] gave. Bytes of another length, or not made by
    /// `to_bytes` (of this version), are an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let bad = |why: &str| Error::Bootstrap(BootstrapError::BadId(why.to_string()));
        if bytes.len() != Self::BYTES {
            return Err(bad(&format!(
                "{} bytes, a UniqueId has {}",
                bytes.len(),
                Self::BYTES
            )));
        }
        if &bytes[..4] != MAGIC {
            return Err(bad("not the bytes of an aiv-comm UniqueId"));
        }
        if bytes[4] != VERSION {
            return Err(bad(&format!(
                "made by another version of aiv-comm (id version {}, this one reads {VERSION})",
                bytes[4]
            )));
        }
        let ip = match bytes[5] {
            4 => IpAddr::V4(Ipv4Addr::new(bytes[6], bytes[7], bytes[8], bytes[9])),
            6 => {
                let mut o = [0u8; 16];
                o.copy_from_slice(&bytes[6..22]);
                IpAddr::V6(Ipv6Addr::from(o))
            }
            _ => return Err(bad("unknown address family")),
        };
        let port = u16::from_be_bytes([bytes[22], bytes[23]]);
        if port == 0 {
            return Err(bad("port 0"));
        }
        let mut secret = [0u8; 32];
        secret.copy_from_slice(&bytes[24..56]);
        Ok(UniqueId::from_parts(SocketAddr::new(ip, port), secret))
    }

    /// [`UniqueId::to_bytes`] in lowercase hex, for an environment variable
    /// (`AIV_UNIQUE_ID`, read by [`super::LaunchEnv`]) or a command line.
    pub fn to_hex(&self) -> String {
        self.to_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The id [`UniqueId::to_hex`] gave.
    pub fn from_hex(hex: &str) -> Result<UniqueId> {
        let hex = hex.trim();
        let bad = || Error::Bootstrap(BootstrapError::BadId("not the hex of a UniqueId".into()));
        if hex.len() != 2 * Self::BYTES || !hex.is_ascii() {
            return Err(bad());
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad()))
            .collect::<Result<Vec<u8>>>()?;
        UniqueId::from_bytes(&bytes)
    }

    /// Where rank 0 listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The job's secret.
    pub(crate) fn secret(&self) -> &[u8; 32] {
        &self.secret
    }

    /// The socket [`UniqueId::new`] bound, if this id (or the id it was cloned from) made one.
    pub(crate) fn listener(&self) -> Option<&TcpListener> {
        self.listener.as_deref()
    }
}

impl PartialEq for UniqueId {
    fn eq(&self, other: &UniqueId) -> bool {
        self.addr == other.addr && self.secret == other.secret
    }
}

impl Eq for UniqueId {}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UniqueId { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_debug_hides_them() {
        let id = UniqueId::new().unwrap();
        let back = UniqueId::from_bytes(&id.to_bytes()).unwrap();
        assert_eq!(back, id);
        assert!(back.listener().is_none() && id.listener().is_some());
        let v6 = UniqueId::from_parts("[::1]:4000".parse().unwrap(), [7; 32]);
        assert_eq!(UniqueId::from_bytes(&v6.to_bytes()).unwrap(), v6);
        let shown = format!("{id:?}");
        assert!(!shown.contains("127.0.0.1") && !shown.contains(&id.addr.port().to_string()));
        assert_ne!(UniqueId::new().unwrap(), id, "every job has its own secret");
        assert_eq!(UniqueId::from_hex(&id.to_hex()).unwrap(), id);
        assert!(UniqueId::from_hex("zz").is_err());
    }

    #[test]
    fn foreign_bytes_are_refused() {
        let good = UniqueId::new().unwrap().to_bytes();
        for (bytes, what) in [
            (good[..10].to_vec(), "bytes, a UniqueId"),
            ([b"XXXX".as_slice(), &good[4..]].concat(), "not the bytes"),
            ([&good[..4], &[9u8], &good[5..]].concat(), "another version"),
        ] {
            let e = UniqueId::from_bytes(&bytes).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
    }
}
