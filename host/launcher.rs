//! What a rank's streams need to launch kernels: the world's shared device resources, the
//! rank's failure state, its tags and link turns, and the diagnostics kernels leave behind.

use std::sync::Arc;
use std::time::Duration;

use ascendc_twin::{ArgBlock, GmAddr, Kernel};
use parking_lot::Mutex;

use crate::backend::dynamic::{DynBackend, Memory, StreamHandle};
use crate::backend::Blocks;
use crate::error::{Error, FaultKind, Result, StopCause};
use crate::ffi;

/// Device resources of a world shared by all its ranks' tasks: every rank's HCCL buffer and
/// sync area live here, owned, so no rank's memory can go while any task of any rank runs
/// (every task holds its stream, which holds its rank's launcher, which holds this).
pub(crate) struct WorldShared {
    /// The world's devices.
    pub backend: Arc<dyn DynBackend>,
    /// Each rank's HCCL buffer.
    pub hccl: Vec<Memory>,
    /// Each rank's sync area (flag memory).
    pub sync: Vec<Memory>,
    pub hccl_bytes: usize,
    pub timeout_cycles: i64,
    pub exec_timeout: Duration,
    /// Reductions add in a fixed order (`Config::deterministic`).
    pub deterministic: bool,
    /// `Config::blocks_per_peer`.
    pub blocks_per_peer: Option<u32>,
    pub trace: crate::trace::Trace,
    /// The first reason the world was stopped for ([`WorldShared::abort`]).
    pub aborted: Mutex<Option<String>>,
    /// The rank this process runs when each rank is a process of its own (`process.rs`): its
    /// aborts write it into every ABORT cell, so that the other processes can say who stopped
    /// them (None: every rank is in this process, which knows the reason).
    pub process_rank: Option<u32>,
}

impl WorldShared {
    /// Stops every launch of the world with `reason` (the first reason given stays): sets the
    /// ABORT cell of every rank's sync area, which the kernels' long waits check (so a
    /// backend that cannot kill a running kernel still stops them), then aborts the
    /// backend's launches.
    pub fn abort(&self, reason: &str) {
        {
            let mut r = self.aborted.lock();
            if r.is_none() {
                *r = Some(reason.to_string());
            }
        }
        let mut cell = [0u8; ffi::AIV_FLAG_BYTES as usize];
        cell[..8].copy_from_slice(&abort_cell_value(self.process_rank).to_le_bytes());
        for s in &self.sync {
            // Best effort: a backend whose copies fail has failed anyway.
            let _ = s.write(ffi::AIV_ABORT_OFFSET as usize, &cell);
        }
        self.backend.abort(reason);
    }

    /// The reason the world was stopped, if it was.
    pub fn abort_reason(&self) -> Option<String> {
        self.aborted.lock().clone()
    }

    /// GM address of rank `r`'s HCCL buffer.
    pub fn hccl_addr(&self, r: usize) -> u64 {
        self.hccl[r].addr()
    }

    /// Identifies the world (its backend).
    pub fn id(&self) -> u64 {
        self.backend.id()
    }
}

/// A stream's own GM for its launches: the argument block and the diagnostic records (one per
/// block, so every block of any launch has its own).
pub(crate) struct LaunchSlots {
    pub args: Memory,
    pub diag: Memory,
}

/// One rank's launch machinery.
pub(crate) struct Launcher {
    pub rank: u32,
    pub size: u32,
    pub world: Arc<WorldShared>,
    /// The first failure of this rank (then every later call fails with it).
    pub failed: Mutex<Option<Error>>,
    pub links: Mutex<crate::turns::Links>,
    /// The rank's tag counter (every stream's launches draw from it).
    pub tags: Mutex<crate::tags::Tags>,
}

impl Launcher {
    /// Marks the rank failed with `cause` (the first cause wins).
    pub fn fail(&self, cause: &Error) {
        let mut f = self.failed.lock();
        if f.is_none() {
            *f = Some(cause.clone());
        }
    }

    /// `Err(CommFailed)` if the rank failed earlier.
    pub fn check_usable(&self) -> Result<()> {
        match &*self.failed.lock() {
            Some(cause) => Err(Error::CommFailed {
                rank: self.rank,
                cause: Box::new(cause.clone()),
            }),
            None => Ok(()),
        }
    }

    /// A launch whose input peers read in place (window memory) failed: peers may still be
    /// reading the input, since the post-sync that tells this rank they are done was never
    /// reached. Stops every launch of the world (the first failure's cause stays the reason)
    /// and waits until none runs, so that the input can be released (the task's claim ends)
    /// and freed or rewritten without a peer reading it. Aborting peers here, even for a
    /// timeout, trades their own timeout reports for that guarantee.
    pub fn stop_readers_of_input(&self, e: &Error) {
        self.abort_world(e);
        self.world.backend.wait_until_idle();
    }

    /// A panic in the user's code of this rank (`cause` says where): marks the rank failed and
    /// stops every launch of the world, so that peers fail at once naming this rank instead of
    /// waiting for it until their deadlines.
    pub fn stop_for_panic(&self, cause: StopCause) {
        let e = Error::Stopped(cause);
        self.fail(&e);
        self.world.abort(&e.to_string());
    }

    /// Stops every launch of the world, this rank's failure `e` as the reason (unless an
    /// earlier one was given).
    fn abort_world(&self, e: &Error) {
        self.world.abort(&format!("rank {} failed: {e}", self.rank));
    }

    /// AIV cores of this rank's device.
    pub fn cores(&self) -> u32 {
        self.world.backend.cores(self.rank)
    }

    /// Reserves `n` tags for one launch (see [`crate::tags`]).
    pub fn reserve_tags(&self, n: i64) -> Result<i64> {
        self.tags
            .lock()
            .reserve(n)
            .ok_or_else(|| Error::Config(format!("a launch needs at least one tag, asked for {n}")))
    }

    /// The communicator part of every kernel's arguments, for a launch with `tag` whose blocks
    /// write their diagnostic records at GM `diag`.
    pub fn comm_args(&self, tag: i64, diag: u64) -> ffi::AivCommArgs {
        let w = &self.world;
        let mut c = ffi::AivCommArgs {
            hccl_bytes: w.hccl_bytes as u64,
            timeout_cycles: w.timeout_cycles,
            rank: self.rank as i32,
            rank_size: self.size as i32,
            tag,
            diag,
            ..Default::default()
        };
        for r in 0..self.size as usize {
            c.hccl[r] = w.hccl_addr(r);
            c.sync[r] = w.sync[r].addr();
        }
        c
    }

    /// Writes `args` (an argument struct's bytes) to a stream's argument slot, launches `kernel`
    /// on `stream` with its address, then reads the diagnostic records its blocks left in the
    /// stream's records. `fp`: the fingerprint of the launch's call, for naming both calls of a
    /// mismatch. Failures follow [`Launcher::settle`].
    ///
    /// # Safety
    /// `kernel` must take the GM address of a struct whose bytes are `args`, and every device
    /// address in them must stay allocated until this returns (`Launch::of_struct`'s contract).
    pub unsafe fn launch(
        &self,
        stream: &StreamHandle,
        slots: &LaunchSlots,
        fp: Option<&[i32]>,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &[u8],
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        self.settle(unsafe { self.launch_inner(stream, slots, fp, kernel, blocks, args) })
    }

    /// Launches `kernel` with a typed argument block (a kernel of any signature) on `stream`,
    /// then [`Launcher::settle`]s the result.
    ///
    /// # Safety
    /// The GM addresses among `args` must be what the kernel expects and stay allocated until
    /// this returns (held by the task's buffer claims or the world).
    pub unsafe fn launch_args(
        &self,
        stream: &StreamHandle,
        kernel: &'static Kernel,
        block_dim: u32,
        args: &ArgBlock,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        let r = unsafe { stream.launch(kernel, Blocks::Exactly(block_dim), args) };
        self.settle(r.map(|_| ()))
    }

    /// The failure policy of a launch's result: any failure but a send/recv size mismatch
    /// fails this rank; a fault or a mismatch also stops its peers' launches at once (on the
    /// NPU they would wait for their deadlines), a timeout does not (see below).
    fn settle(&self, r: Result<()>) -> Result<()> {
        if let Err(e) = &r {
            match e {
                // A size mismatch fails the pair's transfer, not the communicator.
                Error::SizeMismatch { .. } => return r,
                // A peer that stopped this launch has already stopped everyone.
                Error::Fault(f) if f.kind == FaultKind::PeerAborted => {}
                // A timeout is not aborted onward: the rank waited for may itself be waiting
                // for the one really missing, and its own timeout names that rank; stopping
                // it now would hide the cause.
                Error::WaitTimeout { .. } => {}
                _ => self.abort_world(e),
            }
            self.fail(e);
        }
        r
    }

    /// # Safety
    /// As [`Launcher::launch`].
    unsafe fn launch_inner(
        &self,
        stream: &StreamHandle,
        slots: &LaunchSlots,
        fp: Option<&[i32]>,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &[u8],
    ) -> Result<()> {
        let slot = &slots.args;
        slot.write(0, args)?;
        let block = ArgBlock::new().arg(GmAddr(slot.addr()));
        // SAFETY: the kernel takes the GM address of a struct whose bytes are `args` (this
        // function's contract; the parameter count and size are checked against the kernel),
        // which `slot` holds for the whole launch (`Backend::launch` returns once it ended; no
        // host copy touches the slot meanwhile: the stream runs one op at a time); the memory
        // the arguments point to stays allocated until this returns (the contract again: held
        // by the op's claims and the world's HCCL buffers and sync areas).
        let launched = unsafe { stream.launch(kernel, blocks, &block) };
        // A block writes its diagnostic record only on its way to a fault (SoftSync's
        // WriteDiag ends in AscendC::Trap, a named fault), so a launch that succeeded left none
        // to read.
        let Err(e) = launched else {
            return Ok(());
        };
        let block_dim = match blocks {
            Blocks::Exactly(n) | Blocks::UpTo(n) => n,
        };
        match take_diagnostic(&slots.diag, block_dim)? {
            Some(d) if d.kind as u32 == ffi::AIV_DIAG_ABORTED => {
                Err(Error::Fault(crate::error::Fault::new(
                    kernel.name(),
                    d.rank as u32,
                    Some(d.block as u32),
                    "",
                    FaultKind::PeerAborted,
                    format!(
                        "stopped while waiting: {}",
                        self.world
                            .abort_reason()
                            .or_else(|| aborted_by(d.observed))
                            .unwrap_or_default()
                    ),
                )))
            }
            Some(d) => Err(crate::diag::diag_error(&d, fp)),
            None => Err(e),
        }
    }
}

/// What an ABORT cell holds once the world is stopped: 1 when every rank is in one process
/// (which knows why), 2 + the rank whose process stopped it in a job of processes.
fn abort_cell_value(process_rank: Option<u32>) -> i64 {
    process_rank.map_or(1, |r| 2 + i64::from(r))
}

/// Why another process stopped this one, from the ABORT cell a wait found set (`observed`).
fn aborted_by(observed: i64) -> Option<String> {
    (observed >= 2).then(|| {
        format!(
            "rank {}'s process stopped the job (its own error says why: a fault, a wait that timed out, a peer it found gone, or a communicator dropped with work queued)",
            observed - 2
        )
    })
}

/// Reads (and clears) the record of the `blocks` records a launch's blocks may have written in
/// `diag` (the launching stream's own records: block b writes record b) that names the cause: the
/// first valid one that is not an abort (a block stopped by the host is a consequence), else the
/// first abort.
fn take_diagnostic(diag: &Memory, blocks: u32) -> Result<Option<ffi::AivDiag>> {
    const REC: usize = ffi::AIV_DIAG_BYTES as usize;
    let mut buf = [0u8; ffi::AIV_DIAG_AREA_BYTES as usize];
    let n = (blocks as usize).min(ffi::AIV_MAX_BLOCKS as usize);
    let raw = &mut buf[..n * REC];
    diag.read(0, raw)?;
    let valid: Vec<ffi::AivDiag> = raw
        .chunks_exact(REC)
        .map(bytemuck::pod_read_unaligned::<ffi::AivDiag>)
        .filter(|d| d.magic as u32 == ffi::AIV_DIAG_MAGIC)
        .collect();
    let first = valid
        .iter()
        .find(|d| d.kind as u32 != ffi::AIV_DIAG_ABORTED)
        .or(valid.first())
        .copied();
    if first.is_some() {
        diag.fill(0, n * REC, 0)?;
    }
    Ok(first)
}
