//! One process per rank: the communicator of a rank whose peers are other processes
//! ([`Communicator::from_rank`], [`Communicator::from_env`]), as programs run on NPUs (mpirun,
//! torchrun).
//!
//! The ranks meet through the bootstrap (`bootstrap/`), then get their devices:
//! - on the twin, they join a multi-process twin ([`ascendc_twin::Space`]): every rank's GM in
//!   a memory file each process maps at the same address, so a kernel reaches a peer's HCCL
//!   buffer and flags as in one process;
//! - through ACL, each takes the runtime's device `local_rank % devices`, as hccl_test does.
//!
//! Each rank allocates its HCCL buffer and sync area on its own device, exports them to its
//! peers ([`crate::backend::Backend::export`]: ACL's IPC keys, whitelisted for the peers'
//! processes; on the twin the address) and imports theirs, the handles travelling over the
//! bootstrap, as HCCL exchanges IPC names.
//!
//! A monitor thread watches the peers' processes (a pidfd each; their pids and whether they
//! left in order are on the job's board, `board.rs`). A peer that ends without
//! leaving the job in order (killed, crashed, or exited without dropping its communicator)
//! stops this rank at once: its running launches fail with an error naming the rank, and
//! later calls return [`Error::CommFailed`] with cause
//! [`StopCause::RankGone`]. A peer that dropped its communicator has left in order: its end
//! stops no one (a later collective that needs it times out, naming it).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::acl::AclBackend;
use crate::backend::dynamic::{DynBackend, Memory};
use crate::backend::twin::TwinBackend;
use crate::backend::MemKind;
use crate::board::Board;
use crate::bootstrap::{join, LaunchEnv, Peers, UniqueId};
use crate::communicator::{Communicator, JobLink};
use crate::config::{BackendChoice, Config, MAX_RANKS};
use crate::error::{BootstrapError, Error, Result, StopCause};
use crate::launcher::Launcher;
use crate::link::{stop_rank, Streams};
use crate::world::Settings;

/// How long ranks wait for each other at the rendezvous unless `HCCL_CONNECT_TIMEOUT` says
/// otherwise: 120 s, HCCL's default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(120);

/// The rendezvous deadline: `HCCL_CONNECT_TIMEOUT` (whole seconds, as HCCL reads it) if set,
/// else [`DEFAULT_CONNECT_TIMEOUT`].
fn connect_timeout() -> Result<Duration> {
    match std::env::var("HCCL_CONNECT_TIMEOUT") {
        Err(_) => Ok(DEFAULT_CONNECT_TIMEOUT),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(s) if s > 0 => Ok(Duration::from_secs(s)),
            _ => Err(Error::Config(format!(
                "HCCL_CONNECT_TIMEOUT={v}: expected a whole number of seconds above 0"
            ))),
        },
    }
}

/// What a rank of a multi-process job keeps beside its communicator: its peers, the job's
/// board, the monitor of the other processes.
struct Job {
    peers: Peers,
    board: Arc<Board>,
    monitor: Option<Monitor>,
}

impl JobLink for Job {
    fn peers(&self) -> &Peers {
        &self.peers
    }

    fn leave(&mut self) {
        self.board.leave();
        if let Some(m) = self.monitor.take() {
            m.stop();
        }
    }
}

/// The rank `rank` of `size` of the job `id` names, on the devices `config` asks for
/// (through ACL: the runtime's device `local_rank % devices`).
pub(crate) fn from_rank(
    rank: u32,
    size: u32,
    local_rank: u32,
    id: &UniqueId,
    config: Config,
) -> Result<Communicator> {
    if size == 0 || size as usize > MAX_RANKS {
        return Err(Error::RankCount {
            ranks: size as usize,
            max: MAX_RANKS,
        });
    }
    if rank >= size {
        return Err(Error::InvalidArgument(format!(
            "rank {rank} of a job of {size} ranks"
        )));
    }
    config.check(size as usize)?;
    let choice = config.resolved_backend()?;
    let peers = join(rank, size, id, connect_timeout()?)?;
    let acl = match choice {
        BackendChoice::Acl => Some(AclBackend::for_process(rank, size, local_rank)?),
        BackendChoice::Auto => AclBackend::auto_process(rank, size, local_rank).transpose()?,
        BackendChoice::Twin => None,
    };
    // Every rank must have picked the same backend, or the exchanges below mean nothing.
    let name = if acl.is_some() { "acl" } else { "twin" };
    let names = peers.all_gather(name.as_bytes())?;
    if names.iter().any(|n| n.as_slice() != name.as_bytes()) {
        let backends = names
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned());
        return Err(Error::Bootstrap(BootstrapError::MixedBackends {
            backends: backends.collect(),
        }));
    }
    let backend: Arc<dyn DynBackend> = match acl {
        Some(a) => Arc::new(a),
        None => Arc::new(TwinBackend::join_job(
            rank,
            size,
            config.cores,
            config.resolved_buffer_bytes()? + crate::plan::PUSH_REGION_BYTES,
            &mut |b| peers.all_gather(b).map_err(|e| e.to_string()),
        )?),
    };
    let board = Arc::new(Board::join(&peers)?);
    let settings = Settings::check(&backend, size as usize, &config)?;
    let (hccl, sync) = settings.alloc_areas(&backend, rank, &config)?;

    // Every rank's areas: exported to the peers' processes, the handles over the bootstrap,
    // each peer's imported.
    let ids = peers.all_gather(&backend.process_id()?.to_le_bytes())?;
    let importers = ids
        .iter()
        .enumerate()
        .filter(|&(p, _)| p as u32 != rank)
        .map(|(_, b)| {
            b.get(..4)
                .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                .ok_or_else(|| malformed("process ids"))
        })
        .collect::<Result<Vec<u32>>>()?;
    let (hccl_handle, sync_handle) = (hccl.export(&importers)?, sync.export(&importers)?);
    let mut mine = (hccl_handle.len() as u32).to_le_bytes().to_vec();
    mine.extend_from_slice(&hccl_handle);
    mine.extend_from_slice(&sync_handle);
    let all = peers.all_gather(&mine)?;
    let (hccl_len, sync_len) = (hccl.len(), sync.len());
    let mut hccls = Vec::with_capacity(size as usize);
    let mut syncs = Vec::with_capacity(size as usize);
    let mut own = Some((hccl, sync));
    for (p, b) in all.iter().enumerate() {
        let p = p as u32;
        if p == rank {
            let (h, s) = own.take().expect("own areas once");
            hccls.push(h);
            syncs.push(s);
            continue;
        }
        let n = b
            .get(..4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")) as usize)
            .filter(|&n| 4 + n <= b.len())
            .ok_or_else(|| malformed("memory handles"))?;
        let (h, s) = b[4..].split_at(n);
        hccls.push(Memory::import(&backend, p, h, hccl_len, MemKind::Data)?);
        syncs.push(Memory::import(&backend, p, s, sync_len, MemKind::Flags)?);
    }
    let shared = settings.shared(backend, &config, hccls, syncs, Some(rank));
    let mut comm = Communicator::of_world(&shared, rank, size)?;
    // Nobody launches before every rank has imported every area.
    peers.barrier()?;
    let monitor = Monitor::start(rank, size, &board, &comm.launcher, &comm.streams)?;
    comm.job = Some(Box::new(Job {
        peers,
        board,
        monitor: Some(monitor),
    }));
    Ok(comm)
}

/// A rank sent bytes that do not parse as `what`.
fn malformed(what: &str) -> Error {
    Error::Bootstrap(BootstrapError::Io(format!("a rank sent malformed {what}")))
}

/// The rank of the launcher's variables ([`LaunchEnv::from_env`]).
pub(crate) fn from_env(config: Config) -> Result<Communicator> {
    let env = LaunchEnv::from_env()?.ok_or_else(|| {
        Error::Bootstrap(BootstrapError::Environment(
            "no launcher's rank and world size are set (AIV_RANK/AIV_WORLD_SIZE, torchrun's RANK/WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_*, PMI_RANK/PMI_SIZE)".into(),
        ))
    })?;
    from_rank(
        env.rank,
        env.world_size,
        env.local_rank,
        env.unique_id(),
        config,
    )
}

/// The thread that watches the other processes of the job.
struct Monitor {
    /// Written to stop the thread.
    stop: OwnedFd,
    thread: std::thread::JoinHandle<()>,
}

impl Monitor {
    fn start(
        me: u32,
        size: u32,
        board: &Arc<Board>,
        launcher: &Arc<Launcher>,
        streams: &Arc<Streams>,
    ) -> Result<Monitor> {
        // SAFETY: plain flags; the result is checked.
        let ev = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if ev < 0 {
            return Err(Error::Config(format!(
                "eventfd: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: a new descriptor owned from here on.
        let stop = unsafe { OwnedFd::from_raw_fd(ev) };
        let stop_read = stop.try_clone().map_err(|e| Error::Config(e.to_string()))?;
        // A peer already gone counts as ended now.
        let watched: Vec<(u32, Watch)> = (0..size)
            .filter(|&p| p != me)
            .map(|p| (p, watch_of(Some(board.pid(p)))))
            .collect();
        let board = board.clone();
        let launcher = Arc::downgrade(launcher);
        let streams = Arc::downgrade(streams);
        let thread = std::thread::Builder::new()
            .name(format!("aiv-rank{me}-monitor"))
            .spawn(move || {
                if let Some(gone) = watch(watched, &stop_read, &board) {
                    if let (Some(l), Some(s)) = (launcher.upgrade(), streams.upgrade()) {
                        let cause = Error::Stopped(StopCause::RankGone { rank: gone });
                        l.world.abort(&cause.to_string());
                        stop_rank(&l, &s, &cause);
                    }
                }
            })
            .map_err(|e| Error::Config(format!("cannot start the monitor thread: {e}")))?;
        Ok(Monitor { stop, thread })
    }

    fn stop(self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes to an eventfd this value owns.
        unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), 8) };
        let _ = self.thread.join();
    }
}

/// How the monitor watches one peer's process.
enum Watch {
    /// A pidfd: readable once the process has ended.
    Fd(OwnedFd),
    /// No pidfd (a kernel before 5.3, or no descriptor left): the process is looked at every
    /// [`POLL_PERIOD`].
    Poll,
    /// The process has ended.
    Ended,
}

/// How often a peer without a pidfd is looked at.
const POLL_PERIOD: Duration = Duration::from_millis(100);

/// How to watch process `pid` (None: unknown, as outside a job).
fn watch_of(pid: Option<u32>) -> Watch {
    let Some(pid) = pid else {
        return Watch::Poll;
    };
    // SAFETY: pidfd_open takes a pid and flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd >= 0 {
        // SAFETY: a new descriptor owned from here on.
        return Watch::Fd(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Watch::Ended,
        _ => Watch::Poll,
    }
}

/// Waits until a watched process ends without having left the job (returns its rank) or `stop`
/// is written (returns None). Processes that left in order are watched no more.
fn watch(mut watched: Vec<(u32, Watch)>, stop: &OwnedFd, board: &Board) -> Option<u32> {
    loop {
        for w in watched.iter_mut() {
            if matches!(w.1, Watch::Poll) && board.has_ended(w.0) {
                w.1 = Watch::Ended;
            }
        }
        if let Some(&(p, _)) = watched.iter().find(|(_, w)| matches!(w, Watch::Ended)) {
            if !board.has_left(p) {
                return Some(p);
            }
            watched.retain(|(q, _)| *q != p);
            continue;
        }
        let with_fd: Vec<(usize, i32)> = watched
            .iter()
            .enumerate()
            .filter_map(|(i, (_, w))| match w {
                Watch::Fd(f) => Some((i, f.as_raw_fd())),
                _ => None,
            })
            .collect();
        let mut fds: Vec<libc::pollfd> = std::iter::once(stop.as_raw_fd())
            .chain(with_fd.iter().map(|&(_, fd)| fd))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let polling = watched.iter().any(|(_, w)| matches!(w, Watch::Poll));
        let timeout = if polling {
            POLL_PERIOD.as_millis() as i32
        } else {
            -1
        };
        // SAFETY: `fds` is a valid array of its length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if fds[0].revents != 0 {
            return None;
        }
        for (k, f) in fds.iter().enumerate().skip(1) {
            if f.revents != 0 {
                // The process ended: its pidfd has done its work.
                watched[with_fd[k - 1].0].1 = Watch::Ended;
            }
        }
    }
}

impl Communicator {
    /// Rank `rank` of a job of `world_size` ranks, each a process of its own (as `mpirun` or
    /// `torchrun` start them), meeting through `id`: one rank makes it
    /// ([`UniqueId::new`]) and any means carries its bytes to the others ([`UniqueId::to_bytes`],
    /// as NCCL's and cudarc's `Comm::from_rank`). Every rank calls this with the same
    /// `world_size` and `id`; it returns once all have arrived (within
    /// `HCCL_CONNECT_TIMEOUT` seconds, default 120; a rank that does not come is named on every
    /// rank that did) and each has mapped its peers' memory.
    ///
    /// The ranks run one process per rank, all on one host, on the backend `config` picks
    /// ([`Config::backend`], `AIV_BACKEND`; `auto` takes ACL where a device runtime is found):
    /// - on the CPU twin, every rank's GM lies in shared memory every process maps
    ///   ([`ascendc_twin::Space`]; [`ascendc_twin::Twin::with_space`] says what the checkers
    ///   cover across processes);
    /// - through ACL, rank `rank` uses the runtime's device `rank % devices` (from
    ///   [`Communicator::from_env`], `local_rank % devices`), and maps its peers' HCCL buffers
    ///   and sync areas with ACL's IPC calls (CANN 8.2+). Verified on acl-twin only.
    ///   [`Communicator::register`] is refused through ACL: a window's address is announced
    ///   to peers, and an NPU need not map it at the same address in every process.
    ///
    /// A peer process that ends without dropping its communicator (killed, crashed) stops this
    /// rank at once with an error naming it. Dropping the communicator leaves the job: work
    /// still queued is stopped as a dropped [`crate::World`]'s is.
    ///
    /// ```no_run
    /// use aiv_comm::{bootstrap::UniqueId, Communicator, Config, DataType, ReduceOp};
    /// # fn send_to_all(_: &[u8]) {}
    /// # fn receive_from_rank0() -> Vec<u8> { unimplemented!() }
    /// # let (rank, size) = (0, 2);
    /// // Rank 0 makes the id; the launcher (MPI, a file, ...) carries its bytes to the others.
    /// let id = if rank == 0 {
    ///     let id = UniqueId::new()?;
    ///     send_to_all(&id.to_bytes());
    ///     id
    /// } else {
    ///     UniqueId::from_bytes(&receive_from_rank0())?
    /// };
    /// let comm = Communicator::from_rank(rank, size, &id, Config::default())?;
    /// let x = comm.alloc_from(&[1.0f32; 1024])?;
    /// comm.all_reduce(&x, &x, 1024, DataType::F32, ReduceOp::Sum)?;
    /// comm.synchronize()?;
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn from_rank(
        rank: u32,
        world_size: u32,
        id: &UniqueId,
        config: Config,
    ) -> Result<Communicator> {
        // One host: the rank is the local rank.
        from_rank(rank, world_size, rank, id, config)
    }

    /// This process's rank of the job its launcher started ([`LaunchEnv::from_env`]: aiv-comm's
    /// `AIV_*` variables, torchrun's, Open MPI's or PMI's), as [`Communicator::from_rank`].
    /// An error if none of them is set.
    pub fn from_env(config: Config) -> Result<Communicator> {
        from_env(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_without_a_pidfd_is_polled_and_one_gone_has_ended() {
        assert!(matches!(watch_of(Some(std::process::id())), Watch::Fd(_)));
        assert!(matches!(watch_of(None), Watch::Poll));
        // No process has this pid (above pid_max).
        assert!(matches!(watch_of(Some(i32::MAX as u32)), Watch::Ended));
    }
}
