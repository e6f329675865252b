//! The error type of aiv-comm: backend-neutral (no variant names a type of a device runtime).

use crate::dtype::{DataType, ReduceOp};

/// What kind of fault a kernel hit, whatever backend reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// An address not aligned as the operation requires (UB 32 bytes, GM the element).
    Misaligned,
    /// A length or count the hardware would reject, truncate or misread.
    BadLength,
    /// A GM range outside every live allocation, or a UB range outside its buffer.
    OutOfBounds,
    /// An atomic store mode for a type the atomic units do not support.
    UnsupportedAtomic,
    /// A pipe synchronisation that would hang or misorder the device (an unpaired flag, ...).
    PipeSync,
    /// Two accesses to the same UB bytes on different pipes that nothing orders.
    PipeHazard,
    /// GM accesses of different blocks or ranks, at least one a write, that no flag orders.
    GmRace,
    /// Misuse of an AscendC API (over-allocated UB, an index out of range, a queue misused).
    Misuse,
    /// The kernel ended with an exception it did not raise itself.
    Exception,
    /// The kernel called `AscendC::Trap()` (soft-sync waits do so after writing their record).
    Trap,
    /// An `assert` in the kernel failed.
    AssertFailed,
    /// A block overflowed its stack.
    StackOverflow,
    /// The backend itself failed while serving the kernel (a bug of the backend).
    Internal,
    /// Stopped because another block of the same launch faulted first.
    Aborted,
    /// Stopped (or refused) because another rank of the world failed first.
    PeerAborted,
    /// Every live block waits for something no block will do.
    Deadlock,
    /// The live blocks keep running without progress.
    Livelock,
}

/// A kernel fault, as the backend reported it: where, what kind, and the backend's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fault {
    /// The kernel.
    pub kernel: String,
    /// The rank (device) it ran on.
    pub rank: u32,
    /// The block that faulted, `None` for the launch as a whole.
    pub block: Option<u32>,
    /// The AscendC operation, e.g. `DataCopy(GM->UB)` (empty if the backend does not say).
    pub op: String,
    /// What kind of fault.
    pub kind: FaultKind,
    /// The backend's description of it.
    pub detail: String,
}

impl Fault {
    /// A fault of `kernel` on `rank`, in `block` (`None`: the launch as a whole), at the
    /// AscendC operation `op` (empty if the backend does not know it), of `kind`, in the
    /// backend's words `detail` (how a backend reports one: [`Error::Fault`]).
    pub fn new(
        kernel: impl Into<String>,
        rank: u32,
        block: Option<u32>,
        op: impl Into<String>,
        kind: FaultKind,
        detail: impl Into<String>,
    ) -> Fault {
        Fault {
            kernel: kernel.into(),
            rank,
            block,
            op: op.into(),
            kind,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.block {
            Some(b) => write!(
                f,
                "kernel `{}` on rank {}, block {b}: {}: {}",
                self.kernel, self.rank, self.op, self.detail
            ),
            None => write!(
                f,
                "kernel `{}` on rank {}: {}",
                self.kernel, self.rank, self.detail
            ),
        }
    }
}

impl std::error::Error for Fault {}

/// Why the host side stopped a world's launches, when no device error did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StopCause {
    /// The host thread of `rank` panicked inside [`crate::World::run`].
    #[error("the host thread of rank {rank} panicked (see its panic message)")]
    HostPanic {
        /// The rank whose thread panicked.
        rank: u32,
    },
    /// The argument closure of a [`crate::CommStream::launch_with_tags`] panicked.
    #[error(
        "the argument closure of rank {rank}'s launch_with_tags of `{kernel}` panicked: {message}"
    )]
    ArgumentClosure {
        /// The rank that launched.
        rank: u32,
        /// The kernel being launched.
        kernel: String,
        /// The panic's message.
        message: String,
    },
    /// The [`crate::World`] was dropped; `busy`: while work was still queued (that work was
    /// discarded).
    #[error("the World was dropped{}", if *busy { " while work was still queued" } else { "" })]
    WorldDropped {
        /// Work was still queued.
        busy: bool,
    },
    /// The process of `rank`, a peer of a multi-process job ([`crate::Communicator::from_rank`]),
    /// ended without leaving the job: it was killed, crashed, or exited without dropping its
    /// communicator.
    #[error("rank {rank}'s process ended without leaving the job (killed, crashed, or exited without dropping its communicator)")]
    RankGone {
        /// The rank whose process ended.
        rank: u32,
    },
}

/// Why the ranks of a job could not meet or stay in touch ([`crate::bootstrap`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// Bytes that are not a [`crate::bootstrap::UniqueId`].
    #[error("bad UniqueId: {0}")]
    BadId(String),
    /// Rank 0 cannot listen on the job's address.
    #[error("rank 0 cannot listen on {addr}: {detail}")]
    Listen {
        /// The address.
        addr: String,
        /// What the system said.
        detail: String,
    },
    /// A rank could not reach rank 0 before its deadline.
    #[error("rank 0 at {addr} could not be reached within {waited_ms} ms: {detail}")]
    Unreachable {
        /// Rank 0's address.
        addr: String,
        /// How long the rank tried.
        waited_ms: u64,
        /// The last error of a connection attempt.
        detail: String,
    },
    /// The rendezvous deadline passed before these ranks arrived.
    #[error("rank(s) {ranks:?} of {size} did not join within {waited_ms} ms")]
    Missing {
        /// The ranks that did not arrive.
        ranks: Vec<u32>,
        /// The number of ranks of the job.
        size: u32,
        /// How long rank 0 waited.
        waited_ms: u64,
    },
    /// Rank 0 refused this rank; the reason is rank 0's.
    #[error("rank 0 refused this rank: {0}")]
    Refused(String),
    /// What listens at rank 0's address is not this job's rank 0.
    #[error("{addr} is not this job's rank 0: {detail}")]
    ForeignRoot {
        /// The address.
        addr: String,
        /// What gave it away.
        detail: String,
    },
    /// A rank's connection closed or broke (its process exited or was killed), or it broke the
    /// protocol.
    #[error("rank {peer} is gone: {detail}")]
    PeerLost {
        /// The rank.
        peer: u32,
        /// What was seen.
        detail: String,
    },
    /// These ranks did not take part in an exchange within the timeout.
    #[error("rank(s) {ranks:?} did not answer within {waited_ms} ms")]
    Timeout {
        /// The ranks waited for.
        ranks: Vec<u32>,
        /// How long.
        waited_ms: u64,
    },
    /// The ranks of the job picked different backends (e.g. one `AIV_BACKEND=acl`, one
    /// `twin`, or `auto` finding a device on some ranks only): they cannot share memory.
    #[error(
        "the ranks of this job picked different backends ({}): give every rank the same AIV_BACKEND or Config::backend",
        describe_backends(.backends)
    )]
    MixedBackends {
        /// Each rank's backend, by rank ([`crate::Communicator::backend_name`]).
        backends: Vec<String>,
    },
    /// A local socket call failed (not a peer's doing).
    #[error("a local socket call failed: {0}")]
    Io(String),
    /// The launcher's variables are missing or wrong (see [`crate::bootstrap::LaunchEnv`]).
    #[error("launch environment: {0}")]
    Environment(String),
}

/// `backends` (one per rank) as runs of ranks: "rank 0: acl; ranks 1-2: twin".
fn describe_backends(backends: &[String]) -> String {
    let mut runs: Vec<(usize, usize, &str)> = Vec::new();
    for (r, b) in backends.iter().enumerate() {
        match runs.last_mut() {
            Some((_, end, name)) if *name == b.as_str() => *end = r,
            _ => runs.push((r, r, b)),
        }
    }
    let run = |&(first, last, name): &(usize, usize, &str)| match first == last {
        true => format!("rank {first}: {name}"),
        false => format!("ranks {first}-{last}: {name}"),
    };
    runs.iter().map(run).collect::<Vec<_>>().join("; ")
}

/// Everything that can go wrong in aiv-comm. Argument errors are returned before anything is
/// launched or written; device errors come from a launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A soft-sync wait reached its deadline: `rank`'s `block` waited for `peer`.
    #[error(
        "rank {rank}, block {block}: {what} timed out after {waited_ms} ms: the flag at byte {cell:#x} of rank {peer}'s sync area ({cell_name}) shows {observed}, expected {expected}: rank {peer} had not got there by the deadline. Either the work before that point takes longer than the deadline (raise Config::exec_timeout / HCCL_EXEC_TIMEOUT), or rank {peer} never gets there (check that every rank issues the same collectives in the same order)"
    )]
    WaitTimeout {
        /// The waiting rank.
        rank: u32,
        /// The waiting block.
        block: u32,
        /// The rank whose flag it polled (its own for counting cells and barriers).
        peer: u32,
        /// Byte offset of the polled cell in `peer`'s sync area.
        cell: u64,
        /// Which region that cell is in.
        cell_name: String,
        /// Tag (or count) waited for.
        expected: i64,
        /// Last value seen.
        observed: i64,
        /// The primitive: `Wait`, `WaitNv1`, `Wait1vN`, `BarrierAll`, `link wait`, or a wait for
        /// an earlier block of the same rank (an ordered reduction).
        what: &'static str,
        /// How long it waited.
        waited_ms: u64,
    },
    /// Ranks issued different collectives at the same point (another operation, count, dtype,
    /// op, algorithm or chunking): reported on every rank that saw it, naming both calls.
    #[error("rank {rank} runs {mine} but rank {peer} runs {theirs} at the same point: every rank must issue the same collectives, with the same arguments, in the same order")]
    CollectiveMismatch {
        /// The reporting rank.
        rank: u32,
        /// The rank running another call.
        peer: u32,
        /// This rank's call.
        mine: String,
        /// The peer's call.
        theirs: String,
    },
    /// A send and its recv disagree on the message size; reported on both ranks, nothing copied.
    #[error("rank {rank}: send/recv with rank {peer} disagree on the size: this side has {mine} bytes, rank {peer} has {theirs}")]
    SizeMismatch {
        /// The reporting rank.
        rank: u32,
        /// Its partner.
        peer: u32,
        /// Bytes on this side.
        mine: u64,
        /// Bytes on the partner's side.
        theirs: u64,
    },
    /// A stream waited for an event that was not posted in time.
    #[error("rank {rank}: stream `{stream}` waited {waited_ms} ms for event `{event}`, which was never posted")]
    EventTimeout {
        /// The rank.
        rank: u32,
        /// The waiting stream.
        stream: String,
        /// The event.
        event: String,
        /// How long it waited.
        waited_ms: u64,
    },
    /// A kernel faulted on the device.
    #[error("device error: {0}")]
    Fault(#[source] Fault),
    /// Device memory could not be allocated.
    #[error("device error: rank {rank}: cannot allocate {bytes} bytes of GM")]
    OutOfMemory {
        /// The rank (device).
        rank: u32,
        /// Bytes asked for.
        bytes: usize,
    },
    /// A launch's arguments do not match its kernel's parameters (refused before it ran).
    #[error("kernel `{kernel}`: arguments do not match its parameters: {message}")]
    LaunchArgs {
        /// The kernel.
        kernel: String,
        /// What differs.
        message: String,
    },
    /// A communicator whose earlier operation failed; its flags may be inconsistent.
    #[error("communicator of rank {rank} failed earlier and cannot be used: {cause}")]
    CommFailed {
        /// The rank.
        rank: u32,
        /// The first error of the rank (a device error, a timeout, or [`Error::Stopped`]), as
        /// the value it was; also this error's [`source`](std::error::Error::source) (a
        /// `Box<Error>` there).
        #[source]
        cause: Box<Error>,
    },
    /// The host side stopped the world (no device error): see [`StopCause`]. Displays as the
    /// cause itself, whose own source this error's is.
    #[error(transparent)]
    Stopped(StopCause),
    /// Number of ranks out of range.
    #[error("a communicator needs 1..={max} ranks, got {ranks}")]
    RankCount {
        /// Requested ranks.
        ranks: usize,
        /// Maximum supported.
        max: usize,
    },
    /// A rank (peer) id out of range.
    #[error("rank {rank} is out of range for a communicator of {size} ranks")]
    RankOutOfRange {
        /// The rank given.
        rank: u32,
        /// Communicator size.
        size: u32,
    },
    /// A send or recv whose peer is the calling rank itself.
    #[error("rank {rank} cannot send to or receive from itself (use a stream copy task instead)")]
    SelfPeer {
        /// The rank.
        rank: u32,
    },
    /// A buffer is too small for the call.
    #[error("{what} holds {len} bytes but the call needs {needed}")]
    BufferTooSmall {
        /// Which argument.
        what: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        len: usize,
    },
    /// A buffer address is not aligned to the element size.
    #[error("{what} at {addr:#x} is not aligned to {align} bytes (the element size)")]
    Misaligned {
        /// Which argument.
        what: &'static str,
        /// The address.
        addr: u64,
        /// Needed alignment.
        align: usize,
    },
    /// A buffer belongs to another world (even a dropped one): its memory is not reachable by
    /// this world's kernels.
    #[error("{what} belongs to another World")]
    WrongWorld {
        /// Which argument.
        what: &'static str,
    },
    /// An operation on a link to a peer waited for the operation enqueued before it on the same
    /// link (from another stream), which did not run within the exec timeout.
    #[error("rank {rank}: `{op}` on stream `{stream}` waited {waited_ms} ms for the earlier operation on its link to rank {peer} (enqueued on another stream) to run: order the streams with an Event, or use one stream per link")]
    LinkTurnTimeout {
        /// The rank.
        rank: u32,
        /// The waiting stream.
        stream: String,
        /// The peer of the link.
        peer: u32,
        /// The waiting operation (`send`, `recv`, `tx_ack`, ...).
        op: &'static str,
        /// How long it waited.
        waited_ms: u64,
    },
    /// A buffer belongs to another rank's device.
    #[error("{what} lives on rank {buffer_rank} but the communicator is rank {comm_rank}")]
    WrongDevice {
        /// Which argument.
        what: &'static str,
        /// Rank owning the buffer.
        buffer_rank: u32,
        /// Rank of the communicator.
        comm_rank: u32,
    },
    /// Input and output overlap in a way the collective cannot handle.
    #[error("{0}")]
    Overlap(String),
    /// The device cannot reduce this type with this op.
    #[error("reduction with op {op} on {dtype} is not supported: {reason}")]
    Unsupported {
        /// The op.
        op: ReduceOp,
        /// The element type.
        dtype: DataType,
        /// Why.
        reason: &'static str,
    },
    /// Invalid configuration (buffer size, timeout, ...).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A host-side length or offset does not fit.
    #[error("{0}")]
    Length(String),
    /// An argument out of its domain (a root out of range, a counts or displacements slice of
    /// the wrong length, a count that contradicts another argument, a bad send/recv list).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A host read of device memory that a device task was to write, where that task failed or
    /// was dropped unrun (its stream or communicator had failed): the bytes are not its result.
    /// `cause` is the task's error, or the error that made its stream drop it. See
    /// [`crate::DeviceBuffer::clear_poison`].
    #[error("the bytes read were to be written by a device task that failed or never ran, so they do not hold its result (DeviceBuffer::clear_poison accepts them as they are): {cause}")]
    Poisoned {
        /// Why the task failed or was dropped; also this error's
        /// [`source`](std::error::Error::source) (a `Box<Error>` there).
        #[source]
        cause: Box<Error>,
    },
    /// The ranks of a job could not meet or lost one another (processes, [`crate::bootstrap`]).
    #[error("bootstrap: {0}")]
    Bootstrap(#[source] BootstrapError),
    /// A call of the device runtime (ACL) failed outside a kernel, or the runtime cannot be
    /// used; `message` is the runtime's own text (`aclGetRecentErrMsg`).
    #[error("device runtime: {call} failed (error {code}): {message}")]
    Runtime {
        /// The runtime function (or step) that failed.
        call: &'static str,
        /// Its status code (0 if the failure was not a call's).
        code: i32,
        /// What went wrong.
        message: String,
    },
    /// A bug in aiv-comm (a stream task panicked); the message says where.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_wrapping_error_keeps_its_typed_cause_as_its_source() {
        let fault = Fault::new("k", 1, Some(2), "DataCopy", FaultKind::Trap, "trapped");
        let failed = Error::CommFailed {
            rank: 1,
            cause: Box::new(Error::Fault(fault.clone())),
        };
        // CommFailed -> the rank's first error (boxed, as the field holds it) -> the fault,
        // each as the value it was.
        let cause = failed.source().expect("CommFailed has a source");
        assert_eq!(
            cause.downcast_ref::<Box<Error>>().map(|b| &**b),
            Some(&Error::Fault(fault.clone()))
        );
        assert_eq!(cause.to_string(), Error::Fault(fault.clone()).to_string());
        let inner = cause.source().expect("Fault has a source");
        assert_eq!(inner.downcast_ref::<Fault>(), Some(&fault));
        let poisoned = Error::Poisoned {
            cause: Box::new(failed.clone()),
        };
        assert_eq!(
            poisoned
                .source()
                .and_then(|e| e.downcast_ref::<Box<Error>>())
                .map(|b| &**b),
            Some(&failed)
        );
        let boot = BootstrapError::Refused("no".into());
        assert_eq!(
            Error::Bootstrap(boot.clone())
                .source()
                .and_then(|e| e.downcast_ref::<BootstrapError>()),
            Some(&boot)
        );
        // A stop the host made displays as its cause, with nothing under it.
        let stop = Error::Stopped(StopCause::WorldDropped { busy: true });
        assert_eq!(
            stop.to_string(),
            StopCause::WorldDropped { busy: true }.to_string()
        );
        assert!(stop.source().is_none());
    }
}
