//! Errors of the twin: refused launches and faults raised by kernels.

use std::fmt;

/// What a kernel did wrong (or what happened to it), as the twin detected it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// A UB address that must be 32-byte aligned is not; `offset` is the byte offset in UB.
    MisalignedUb {
        /// Byte offset from the start of the core's Unified Buffer.
        offset: u64,
    },
    /// A GM address is not aligned as the call requires.
    MisalignedGm {
        /// The GM address.
        addr: u64,
        /// The alignment it needs, in bytes.
        align: u32,
    },
    /// A length or count the hardware would reject, truncate or misread.
    BadLength {
        /// The offending value.
        len: u64,
        /// Which rule it breaks.
        reason: String,
    },
    /// A GM range that is not inside one live allocation of any device.
    GmOutOfBounds {
        /// First byte of the access.
        addr: u64,
        /// Length of the access in bytes.
        len: u64,
    },
    /// A UB range outside the LocalTensor's buffer or the core's Unified Buffer.
    UbOutOfBounds {
        /// Byte offset from the start of UB.
        offset: u64,
        /// Length of the access in bytes.
        len: u64,
        /// Bytes available from `offset` (the tensor's buffer end).
        limit: u64,
    },
    /// An atomic store mode set for a type the A2 atomic units do not support.
    UnsupportedAtomic {
        /// The element type requested.
        dtype: String,
    },
    /// A pipe synchronisation that would hang or misorder the NPU.
    PipeSync {
        /// What is wrong.
        reason: String,
    },
    /// Two accesses to the same UB bytes on different pipes with nothing ordering them: the
    /// twin runs pipes in order and got an answer, the NPU runs them concurrently and may not.
    PipeHazard {
        /// What conflicts with what.
        reason: String,
    },
    /// Two GM accesses of different blocks (or ranks), at least one a plain write, that no flag
    /// orders: the result depends on timing.
    GmRace {
        /// What conflicts with what.
        reason: String,
    },
    /// Misuse found by the twin's AscendC headers (UB over-allocation, index out of range, ...).
    Misuse {
        /// What is wrong.
        reason: String,
        /// First value the check named (address, index, ...).
        value: u64,
        /// Second value the check named (limit, length, ...).
        limit: u64,
    },
    /// The block ended with a C++ exception the twin did not throw.
    UnknownException,
    /// The kernel called `AscendC::Trap()` (on the NPU this stops the AI core).
    Trap,
    /// An `assert` / `ascendc_assert` in the kernel failed (on the NPU it prints and traps).
    AssertFailed {
        /// `file:line: function: Assertion `expr' failed.` and the message, if any.
        message: String,
    },
    /// The block overflowed its stack (the twin gives each block 1 MiB); it was stopped there.
    StackOverflow,
    /// The twin's own code panicked while serving the block (a bug of the twin).
    TwinPanic {
        /// The panic message.
        message: String,
    },
    /// The block was stopped because another block of the same launch faulted first.
    Aborted,
    /// The launch was stopped (or refused) because a peer device of its group failed first.
    PeerAborted {
        /// What happened to the peer.
        reason: String,
    },
    /// The twin's live blocks made no progress for the watchdog period and every one of them
    /// was parked (on a GM poll, a cross-core flag or SyncAll): on hardware these launches
    /// would hang.
    Deadlock {
        /// One line per stuck block (who polls which address), and per launch waiting for cores.
        waiters: Vec<String>,
    },
    /// The twin's live blocks made no progress for the watchdog period (no GM write, no changed
    /// read) and some of them kept running: they spin on values that never change.
    Livelock {
        /// One line per stuck block: what it keeps reading, or that it runs without progress.
        blocks: Vec<String>,
    },
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::MisalignedUb { offset } => {
                write!(f, "UB address {offset:#x} is not 32-byte aligned")
            }
            FaultKind::MisalignedGm { addr, align } => {
                write!(f, "GM address {addr:#x} is not {align}-byte aligned")
            }
            FaultKind::BadLength { len, reason } => write!(f, "bad length {len}: {reason}"),
            FaultKind::GmOutOfBounds { addr, len } => write!(
                f,
                "GM range {addr:#x}..{:#x} ({len} bytes) is outside every live GM allocation",
                addr.wrapping_add(*len)
            ),
            FaultKind::UbOutOfBounds { offset, len, limit } => write!(
                f,
                "UB range at offset {offset:#x}, {len} bytes, exceeds its buffer ({limit} bytes available)"
            ),
            FaultKind::UnsupportedAtomic { dtype } => write!(
                f,
                "atomic store on type {dtype} is not supported on Atlas A2 (f32, f16, bf16, i32, i16, i8 only)"
            ),
            FaultKind::PipeSync { reason } => write!(f, "pipe synchronisation: {reason}"),
            FaultKind::PipeHazard { reason } => write!(f, "pipe hazard: {reason}"),
            FaultKind::GmRace { reason } => write!(f, "GM race: {reason}"),
            FaultKind::Misuse {
                reason,
                value,
                limit,
            } => write!(f, "{reason} (value {value}, limit {limit})"),
            FaultKind::UnknownException => write!(f, "kernel threw a C++ exception"),
            FaultKind::Trap => write!(f, "the kernel called Trap(), which stops the AI core"),
            FaultKind::AssertFailed { message } => write!(f, "[ASSERT] {message}"),
            FaultKind::StackOverflow => write!(
                f,
                "the block overflowed its 1 MiB stack (deep recursion or large local arrays: keep data in UB/GM)"
            ),
            FaultKind::TwinPanic { message } => {
                write!(f, "internal error of the CPU twin (please report): {message}")
            }
            FaultKind::Aborted => write!(f, "stopped because another block of this launch faulted"),
            FaultKind::PeerAborted { reason } => write!(f, "stopped because a peer failed first: {reason}"),
            FaultKind::Deadlock { waiters } => {
                write!(f, "deadlock: every live block waits (on a GM poll, a cross-core flag or SyncAll) for something no block will do")?;
                for w in waiters {
                    write!(f, "\n  {w}")?;
                }
                Ok(())
            }
            FaultKind::Livelock { blocks } => {
                write!(f, "livelock: the live blocks keep running but make no progress")?;
                for b in blocks {
                    write!(f, "\n  {b}")?;
                }
                Ok(())
            }
        }
    }
}

/// A fault raised inside a kernel, naming where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFault {
    /// Kernel name given at launch.
    pub kernel: String,
    /// Device (rank) the launch ran on.
    pub rank: u32,
    /// Block index (GetBlockIdx) that faulted; `u32::MAX` for the launch as a whole.
    pub block: u32,
    /// The AscendC operation, e.g. `DataCopy(GM->UB)`.
    pub op: String,
    /// What went wrong.
    pub kind: FaultKind,
}

impl fmt::Display for KernelFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.block == u32::MAX {
            // A fault of the launch as a whole (e.g. stopped because a peer failed).
            return write!(
                f,
                "kernel `{}` on rank {}: {}",
                self.kernel, self.rank, self.kind
            );
        }
        write!(
            f,
            "kernel `{}` on rank {}, block {}: {}: {}",
            self.kernel, self.rank, self.block, self.op, self.kind
        )
    }
}

impl std::error::Error for KernelFault {}

/// Errors of the twin runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TwinError {
    /// A launch asked for more blocks than the device has cores (they could not all be
    /// co-resident, so cross-block waits would deadlock), or for zero blocks.
    #[error("kernel `{kernel}` on rank {rank}: block_dim {requested} refused: the device has {cores} AIV cores (need 1..={cores})")]
    BlockDim {
        /// Kernel name.
        kernel: String,
        /// Device (rank).
        rank: u32,
        /// Requested block_dim.
        requested: u32,
        /// Cores of the device.
        cores: u32,
    },
    /// A kernel faulted; the first fault of the launch.
    #[error(transparent)]
    Fault(#[from] KernelFault),
    /// A GM allocation could not be made.
    #[error("rank {rank}: cannot allocate {bytes} bytes of GM")]
    OutOfMemory {
        /// Device (rank).
        rank: u32,
        /// Requested bytes.
        bytes: usize,
    },
    /// A host-side access to a GM buffer was out of its bounds.
    #[error("host access to GM buffer of {len} bytes at offset {offset}, {bytes} bytes, is out of bounds")]
    HostOutOfBounds {
        /// Buffer length.
        len: usize,
        /// Requested offset.
        offset: usize,
        /// Requested byte count.
        bytes: usize,
    },
    /// The device configuration is invalid.
    #[error("invalid device configuration: {0}")]
    Config(String),
    /// A launch's arguments do not match the kernel's parameters.
    #[error("kernel `{kernel}`: arguments do not match its parameters: {message}")]
    Args {
        /// Kernel name.
        kernel: String,
        /// What differs.
        message: String,
    },
}
