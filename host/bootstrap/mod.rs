//! How the ranks of one job find each other when each rank is a process of its own (started by
//! `mpirun`, `torchrun` or any other means): a [`UniqueId`] made on one rank and carried to the
//! others by any means (bytes in, bytes out), or the launcher's environment ([`LaunchEnv`]);
//! then a rendezvous over TCP ([`join`]) after which the ranks can exchange bytes ([`Peers`]).
//!
//! This is the bootstrap under one-process-per-rank communicators; it needs no MPI library.
//!
//! # The rendezvous
//!
//! Rank 0 listens on the id's address (the loopback unless the id or the launcher says
//! otherwise); every other rank connects to it, retrying until the deadline. Each connection
//! proves, both ways, that it belongs to the job: rank 0 sends a fresh nonce, the rank answers
//! with an HMAC-SHA256 of it under the job's secret, its rank and the world size, and rank 0
//! answers the rank's own nonce the same way. The secret itself never crosses the wire. So:
//!
//! - a connection that says nothing, says something else or is too slow is dropped, and rank
//!   0 goes on waiting for the job's ranks: each connection is checked on a thread of its own
//!   within a second (64 at a time; more are closed at once, and the job's ranks retry), so no
//!   number of them holds any rank past its deadline;
//! - a rank of another job (another secret), a second job whose ranks find this rank 0 on their
//!   port, a rank number out of range or taken twice, or a different world size is refused
//!   with a message saying which, and the job goes on;
//! - a rank that finds another job's rank 0 on its port (a stale or foreign listener) says so;
//! - when the deadline passes before every rank has arrived, every rank that did arrive gets
//!   [`crate::error::BootstrapError::Missing`] naming the ranks that did not.
//!
//! After the rendezvous the connections stay open: rank 0 relays [`Peers::all_gather`] and
//! [`Peers::barrier`], and a rank whose connection closes (its process exited or was killed) is
//! named to the others as [`crate::error::BootstrapError::PeerLost`]. A rank that is alive but
//! does not call in time is named as [`crate::error::BootstrapError::Timeout`].
//! A rank that gives up or dies during the rendezvous frees its place: it can come again.
//!
//! # Example
//!
//! Two ranks as two threads of one process (in a real job each is a process, and the id's
//! bytes travel by MPI, a file or the launcher):
//!
//! ```
//! use std::time::Duration;
//! use aiv_comm::bootstrap::{join, UniqueId};
//!
//! let id = UniqueId::new()?;               // on rank 0: it listens
//! let bytes = id.to_bytes();               // carried to the other ranks by any means
//! let other = std::thread::spawn(move || -> aiv_comm::Result<Vec<Vec<u8>>> {
//!     let id = UniqueId::from_bytes(&bytes)?;
//!     let peers = join(1, 2, &id, Duration::from_secs(10))?;
//!     peers.all_gather(b"from rank 1")
//! });
//! let peers = join(0, 2, &id, Duration::from_secs(10))?;
//! let all = peers.all_gather(b"from rank 0")?;
//! assert_eq!(all, other.join().unwrap()?);
//! assert_eq!(all[1], b"from rank 1");
//! # Ok::<(), aiv_comm::Error>(())
//! ```

mod env;
mod id;
mod rendezvous;
mod wire;

pub use env::{LaunchEnv, Launcher};
pub use id::UniqueId;
pub use rendezvous::{join, Peers};
