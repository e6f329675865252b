//! The streams of a communicator (the API: what each call enqueues, as operations of
//! `stream.rs`), and Send/Recv.
//!
//! The orchestration layer of HCCL's host algorithms (seed 004): work is a sequence of tasks on
//! streams; a rank has a main stream and may create sub-streams; an [`Event`] posted on one stream
//! and waited on another orders them (`LocalNotify::Post` / `Wait`). Tasks run as small kernel
//! launches on the device (copy, reduce, link signals with a peer) or as host steps (event post
//! and wait). Within a stream, program order; across streams, events; and on each link to a peer
//! (send/recv, acks, data signals), the order in which the operations were enqueued, whatever
//! streams they are on (`turns.rs`).

use std::borrow::Cow;
use std::sync::{Arc, Weak};

use ascendc_twin::{ArgBlock, GmAddr, Kernel};
use bytemuck::Pod;
use parking_lot::Mutex;

use crate::backend::dynamic::{Memory, StreamHandle};
use crate::backend::{Blocks, MemKind};
use crate::buffer::{BufferAccess, DeviceBuffer, Uses};
use crate::check::{check_aligned, check_disjoint, check_len, elem_bytes, reduce_codes};
use crate::dtype::{DataType, ReduceOp};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::ffi;
use crate::launcher::{LaunchSlots, Launcher};
use crate::stream::{Launch, LinkTurn, Op, StreamCtx, Work};

/// Blocks of the copy / reduce task kernels (at most: they take what is free, see `Blocks`).
const TASK_BLOCKS: u32 = 8;
/// Chunks of one send/recv message; a chunk's flag value is `(message << 20) | chunk`.
const MAX_P2P_CHUNKS: usize = 1 << 20;

/// Whether a point-to-point operation sends or receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SendRecvKind {
    /// Send `count` elements of the buffer to the peer.
    Send,
    /// Receive `count` elements from the peer into the buffer.
    Recv,
}

/// A stream of one rank: operations run in the order they are enqueued, one at a time.
/// Cheap to clone (shared). Dropping it does not stop what was enqueued.
#[derive(Clone)]
pub struct CommStream {
    pub(crate) inner: Arc<StreamCtx>,
}

/// Fails rank `launcher.rank` with `cause` and discards its queued work (the world is being
/// stopped: the caller aborts its launches).
pub(crate) fn stop_rank(launcher: &Launcher, streams: &Streams, cause: &Error) {
    launcher.fail(cause);
    for s in streams.live() {
        s.cancel(Error::CommFailed {
            rank: launcher.rank,
            cause: Box::new(cause.clone()),
        });
    }
}

/// A rank's streams (main, created, and those its calls use inside), for synchronizing and
/// closing the world.
#[derive(Default)]
pub(crate) struct Streams {
    list: Mutex<Vec<Weak<StreamCtx>>>,
    created: Mutex<u32>,
}

impl Streams {
    /// The streams still alive.
    pub fn live(&self) -> Vec<Arc<StreamCtx>> {
        let mut s = self.list.lock();
        s.retain(|w| w.strong_count() > 0);
        s.iter().filter_map(Weak::upgrade).collect()
    }

    /// The streams still alive, each with its position now ([`StreamCtx::position`]): waiting
    /// for those positions waits for the work enqueued before this call, not for what is
    /// enqueued while an earlier stream is waited for.
    pub fn positions(&self) -> Vec<(Arc<StreamCtx>, u64)> {
        let live = self.live();
        let at: Vec<u64> = live.iter().map(|s| s.position()).collect();
        live.into_iter().zip(at).collect()
    }

    /// A number for the next created stream (spreads streams over the backend's executor).
    pub fn next_index(&self) -> u32 {
        let mut n = self.created.lock();
        *n += 1;
        *n
    }
}

impl CommStream {
    /// A new stream of `launcher`'s rank named `name`, registered in `streams`.
    pub(crate) fn new(
        launcher: &Arc<Launcher>,
        streams: &Streams,
        name: &str,
        index: u32,
    ) -> Result<CommStream> {
        let backend = &launcher.world.backend;
        let rank = launcher.rank;
        let slots = LaunchSlots {
            args: Memory::alloc(backend, rank, 4096, MemKind::Data)?,
            diag: Memory::alloc(
                backend,
                rank,
                ffi::AIV_DIAG_AREA_BYTES as usize,
                MemKind::Data,
            )?,
        };
        let handle = StreamHandle::new(backend, rank, rank as usize + index as usize)?;
        let inner = Arc::new(StreamCtx::new(
            launcher.clone(),
            name.to_string(),
            slots,
            handle,
        ));
        streams.list.lock().push(Arc::downgrade(&inner));
        Ok(CommStream { inner })
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Waits for every task enqueued on this stream before the call (not for those enqueued
    /// meanwhile by other threads); returns the stream's error if one of its tasks failed, else
    /// [`Error::CommFailed`] if the communicator failed.
    ///
    /// Errors are sticky, as a CUDA stream's: once a task failed, this and every later call
    /// return its error, and the stream drops every later task unrun (what those were to write
    /// is poisoned: [`Error::Poisoned`]) until [`CommStream::clear_error`].
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()?;
        self.inner.launcher.check_usable()
    }

    /// Recovers the stream from an error that did not fail the communicator (a send/recv
    /// [`Error::SizeMismatch`], an [`Error::EventTimeout`]): waits for the tasks enqueued
    /// before the call (those after the error are dropped unrun), then clears the stream's
    /// error and returns it; tasks enqueued from then on run again. `None` if the stream had no
    /// error. [`Event`]s whose posts were dropped stay failed: make new ones.
    ///
    /// What the failed and dropped tasks were to write stays poisoned ([`Error::Poisoned`]):
    /// a later task that writes those bytes, a host write, or
    /// [`DeviceBuffer::clear_poison`] ends that. A failed communicator stays failed, whatever
    /// its streams' state: [`CommStream::synchronize`] keeps returning [`Error::CommFailed`]
    /// (build a new [`crate::World`] to continue).
    pub fn clear_error(&self) -> Option<Error> {
        self.inner.clear_error()
    }

    /// Enqueues `work` labelled `stage` / `task` (recorded when tracing is on). `uses` are its
    /// claims on device buffers: it starts once no conflicting host copy runs, and releases
    /// them when done (or dropped unrun). `turn`: its place on a link to a peer.
    ///
    /// A `'static` label (a kernel name, what every collective passes) is borrowed, and copied
    /// only if the trace records the op; other labels (user stage names, event names) are
    /// strings made at enqueue.
    pub(crate) fn op(
        &self,
        stage: impl Into<Cow<'static, str>>,
        task: impl Into<Cow<'static, str>>,
        uses: Uses,
        work: Work,
        turn: Option<LinkTurn>,
    ) {
        self.inner.enqueue(Op {
            work,
            uses,
            turn,
            stage: stage.into(),
            task: task.into(),
        });
    }

    /// The communicator part of a kernel's arguments for a launch with `tag` on this stream.
    pub(crate) fn comm_args(&self, tag: i64) -> ffi::AivCommArgs {
        self.inner.comm_args(tag)
    }

    fn check_usable(&self) -> Result<()> {
        self.inner.launcher.check_usable()
    }

    fn check_peer(&self, peer: u32) -> Result<()> {
        let l = &self.inner.launcher;
        if peer >= l.size {
            return Err(Error::RankOutOfRange {
                rank: peer,
                size: l.size,
            });
        }
        Ok(())
    }

    fn check_world(&self, what: &'static str, b: &DeviceBuffer) -> Result<()> {
        if b.world_id() != self.inner.launcher.world.id() {
            return Err(Error::WrongWorld { what });
        }
        Ok(())
    }

    /// Enqueues a launch of your own `kernel` on this stream, on `block_dim` blocks, with fresh
    /// tags (`n` of them, from the rank's counter: every rank must enqueue its tagged launches
    /// in the same order); `make` builds the argument struct from the communicator part.
    /// `buffers` are the device buffers the kernel reads and writes: they stay allocated until
    /// the launch has run, and host copies of them are ordered with it.
    ///
    /// `block_dim` of 0, above the device's cores or above 48 (`ffi::AIV_MAX_BLOCKS`: every
    /// block of a tagged launch has a diagnostic record and flag cells of its own in the sync
    /// area, which has room for 48, as many AIV cores as an Atlas A2 has) is refused here,
    /// before anything is enqueued. A wait of the kernel that times out in any block comes back
    /// from [`CommStream::synchronize`] as [`Error::WaitTimeout`] naming that block.
    ///
    /// `make` runs here, on the calling thread, before the launch is enqueued. If it panics,
    /// the world is stopped at once (as [`crate::World::run`] does for a panicking rank: the
    /// peers' calls fail naming this rank instead of waiting for it until their deadlines),
    /// this rank is marked failed, and the panic goes on to the caller.
    ///
    /// # Safety
    /// `kernel` must be a kernel taking the GM address of an `A`; every GM address inside `A`
    /// must point into `buffers` (used as declared; a buffer declared as written is taken to be
    /// written whole when the launch succeeds) or the world's HCCL buffers and sync areas.
    pub unsafe fn launch_with_tags<A: Pod + Send + 'static>(
        &self,
        kernel: &'static Kernel,
        block_dim: u32,
        n: i64,
        buffers: &[BufferAccess],
        make: impl FnOnce(ffi::AivCommArgs) -> A,
    ) -> Result<()> {
        if block_dim > ffi::AIV_MAX_BLOCKS {
            return Err(Error::Config(format!(
                "kernel `{}`: block_dim {block_dim} refused: a launch with tags runs on at most {} blocks (the sync area's cells and diagnostic records per block)",
                kernel.name(),
                ffi::AIV_MAX_BLOCKS
            )));
        }
        let uses = self.check_launch(
            kernel,
            block_dim,
            &ArgBlock::new().arg(GmAddr::NULL),
            buffers,
        )?;
        let tag = self.inner.launcher.reserve_tags(n)?;
        let comm = self.comm_args(tag);
        let args = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(comm))) {
            Ok(a) => a,
            Err(p) => {
                self.inner
                    .launcher
                    .stop_for_panic(crate::error::StopCause::ArgumentClosure {
                        rank: self.inner.launcher.rank,
                        kernel: kernel.name().to_string(),
                        message: crate::stream::panic_message(&*p),
                    });
                std::panic::resume_unwind(p);
            }
        };
        // SAFETY: the caller's contract (`kernel` takes the address of an `A`, whose addresses
        // point into `buffers`, held by the claims, or the world's memory).
        let work = Work::Launch(unsafe {
            Launch::of_struct(kernel, Blocks::Exactly(block_dim), &args, None, false)
        });
        self.op(kernel.name(), kernel.name(), uses, work, None);
        Ok(())
    }

    /// Enqueues a launch of `kernel` (any signature, see [`ascendc_twin::Kernel`]) with the
    /// typed arguments `args` on `block_dim` co-resident blocks.
    ///
    /// `buffers` are the device buffers the kernel reads and writes: they stay allocated until
    /// the launch has run, and host copies of them are ordered with it. Arguments that do not
    /// match the kernel's parameters, and a `block_dim` of 0 or above the device's cores, are
    /// refused here, before anything is enqueued. A fault of the kernel fails the communicator
    /// (as a collective's would) and comes back from [`CommStream::synchronize`].
    ///
    /// ```
    /// use aiv_comm::{args, BufferAccess, Kernel, World};
    /// /// Runs `kernel`, your `scale(GM_ADDR out, uint32_t n, float factor)` built with
    /// /// ascendc-build (as examples/custom-kernel builds its kernels), on 2 blocks.
    /// fn run(kernel: &'static Kernel) -> aiv_comm::Result<Vec<f32>> {
    ///     let world = World::sim(1)?;
    ///     let comm = &world.comms()[0];
    ///     let out = comm.alloc(2 * 128)?;
    ///     let a = args![out.gm(0), 32u32, 0.5f32];
    ///     // SAFETY: `scale` writes 128 bytes per block into `out`, claimed for writing.
    ///     unsafe { comm.stream().launch(kernel, 2, a, &[BufferAccess::Write(&out)])? };
    ///     out.to_vec::<f32>() // waits for the launch
    /// }
    /// ```
    ///
    /// # Safety
    /// Every GM address among `args` must be what the kernel expects there and point into
    /// `buffers` (used as declared; a buffer declared as written is taken to be written whole
    /// when the launch succeeds) or the world's HCCL buffers and sync areas.
    pub unsafe fn launch(
        &self,
        kernel: &'static Kernel,
        block_dim: u32,
        args: ArgBlock,
        buffers: &[BufferAccess],
    ) -> Result<()> {
        let uses = self.check_launch(kernel, block_dim, &args, buffers)?;
        // SAFETY: the caller's contract; the claims in `uses` hold the buffers until the op is
        // done.
        let work = Work::Launch(unsafe { Launch::of_block(kernel, block_dim, args) });
        self.op(kernel.name(), kernel.name(), uses, work, None);
        Ok(())
    }

    /// What every launch checks before it is enqueued; returns the buffer claims.
    fn check_launch(
        &self,
        kernel: &'static Kernel,
        block_dim: u32,
        args: &ArgBlock,
        buffers: &[BufferAccess],
    ) -> Result<Uses> {
        self.check_usable()?;
        let cores = self.inner.launcher.cores();
        let name = kernel.name();
        if block_dim == 0 || block_dim > cores {
            return Err(Error::Config(format!(
                "kernel `{name}`: block_dim {block_dim} refused: the device has {cores} AIV cores (need 1..={cores})"
            )));
        }
        crate::backend::check_args(kernel, args)?;
        for b in buffers {
            self.check_world("kernel buffer", b.buffer())?;
        }
        Ok(buffers.iter().map(BufferAccess::claim).collect())
    }

    /// Posts `event` once this stream reaches this point.
    pub fn post(&self, event: &Event, stage: &str) {
        event.enqueue_post(self.inner.backend());
        let task = format!("post {}", event.name());
        self.op(
            stage.to_owned(),
            task,
            Uses::new(),
            Work::Post(event.clone()),
            None,
        );
    }

    /// Makes this stream wait, at this point, for one post of `event` (in enqueue order).
    ///
    /// If no matching post has been enqueued within the communicator's exec timeout, the stream
    /// fails with [`Error::EventTimeout`]. If the post is enqueued but its stream is still busy,
    /// the wait goes on (up to twice the exec timeout): that stream's own device waits reach
    /// their deadlines first and, if they fail, this wait fails at once with their error, which
    /// names the peer and flag the work was waiting for.
    pub fn wait(&self, event: &Event, stage: &str) {
        let ticket = event.enqueue_wait(self.inner.backend());
        let task = format!("wait {}", event.name());
        let work = Work::Wait {
            event: event.clone(),
            ticket,
        };
        self.op(stage.to_owned(), task, Uses::new(), work, None);
    }

    /// Device-to-device copy of `bytes` from `src` to `dst` (GM addresses of any rank), as a
    /// CpGM2GM launch on as many free cores as there are, up to 8.
    ///
    /// # Safety
    /// Both ranges must be inside live GM allocations until the task has run: inside the
    /// buffers claimed by `uses`, or the world's HCCL buffers.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn copy_raw(
        &self,
        stage: &str,
        dst: u64,
        src: u64,
        bytes: u64,
        dtype: u32,
        op: u32,
        uses: Uses,
    ) {
        let task = if op == ffi::AIV_OP_NONE {
            "copy"
        } else {
            "reduce"
        };
        let work = if bytes == 0 {
            // Nothing to move; the op keeps its place (and its claims' order) in the stream.
            Work::Host(Box::new(|_| Ok(())))
        } else {
            let args = ffi::AivCopyArgs {
                dst,
                src,
                bytes,
                dtype,
                op,
            };
            // Any number of blocks can run the copy: taking only the free cores means a copy
            // never waits for cores held by waiting ops of other streams (which might wait for
            // it).
            // SAFETY: aiv_copy takes an AivCopyArgs; the ranges are the caller's contract.
            Work::Launch(unsafe {
                Launch::of_struct(
                    &ffi::kernels::aiv_copy,
                    Blocks::UpTo(TASK_BLOCKS),
                    &args,
                    None,
                    false,
                )
            })
        };
        self.op(stage.to_owned(), task, uses, work, None);
    }

    /// Enqueues a device-to-device copy of `bytes` from `src` to `dst` (either may live on any
    /// rank of the world, as HCCS peers' memory is reachable from the AIV cores). The ranges
    /// must not overlap unless they are the same range (copying a range onto itself changes
    /// nothing).
    pub fn copy(
        &self,
        dst: &DeviceBuffer,
        src: &DeviceBuffer,
        bytes: usize,
        stage: &str,
    ) -> Result<()> {
        self.check_usable()?;
        self.check_world("copy dst", dst)?;
        self.check_world("copy src", src)?;
        check_len("copy dst", dst, bytes)?;
        check_len("copy src", src, bytes)?;
        check_disjoint("copy", dst, src, bytes)?;
        let uses = Uses::from_iter([src.use_read(), dst.use_write_range(0, bytes)]);
        // SAFETY: the ranges were checked against the buffers, which `uses` hold until the
        // task has run.
        unsafe {
            self.copy_raw(
                stage,
                dst.addr(),
                src.addr(),
                bytes as u64,
                0,
                ffi::AIV_OP_NONE,
                uses,
            )
        };
        Ok(())
    }

    /// Enqueues `dst = dst op src` over `count` elements (atomic reduce on the store). The ranges
    /// must not overlap unless they are the same range.
    pub fn reduce(
        &self,
        dst: &DeviceBuffer,
        src: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        stage: &str,
    ) -> Result<()> {
        self.check_usable()?;
        let (opc, dt) = reduce_codes(dtype, op)?;
        let bytes = elem_bytes(count, dtype)?;
        self.check_world("reduce dst", dst)?;
        self.check_world("reduce src", src)?;
        check_len("reduce dst", dst, bytes)?;
        check_len("reduce src", src, bytes)?;
        for (what, b) in [("reduce dst", dst), ("reduce src", src)] {
            check_aligned(what, b, dtype)?;
        }
        check_disjoint("reduce", dst, src, bytes)?;
        let uses = Uses::from_iter([src.use_read(), dst.use_write_range(0, bytes)]);
        // SAFETY: as in `copy`.
        unsafe { self.copy_raw(stage, dst.addr(), src.addr(), bytes as u64, dt, opc, uses) };
        Ok(())
    }

    fn signal(&self, peer: u32, kind: u32, wait: bool, stage: &str) -> Result<()> {
        self.check_usable()?;
        self.enqueue_signal(peer, kind, wait, stage)
    }

    /// [`CommStream::signal`] without the check that the rank has not failed: for the steps a
    /// library call enqueues after its own check (see [`InCall`]).
    fn enqueue_signal(&self, peer: u32, kind: u32, wait: bool, stage: &str) -> Result<()> {
        self.check_peer(peer)?;
        let turn = self.inner.launcher.links.lock().next((peer, kind, !wait));
        let seq = turn.n as i64;
        let task = match (kind, wait) {
            (ffi::AIV_LINK_ACK, false) => "tx_ack",
            (ffi::AIV_LINK_ACK, true) => "rx_ack",
            (_, false) => "tx_data_signal",
            (_, true) => "rx_data_signal",
        };
        let args = ffi::AivSignalArgs {
            comm: Default::default(),
            peer: peer as i32,
            kind: kind as i32,
            seq,
            is_wait: wait as i32,
            reserved: 0,
        };
        // SAFETY: aiv_link_signal takes an AivSignalArgs, which points into the world's memory.
        let work = Work::Launch(unsafe {
            Launch::of_comm_struct(
                &ffi::kernels::aiv_link_signal,
                Blocks::Exactly(1),
                0,
                &args,
                None,
                false,
            )
        });
        let turn = LinkTurn {
            turn,
            wait: true,
            peer,
            op: task,
        };
        self.op(stage.to_owned(), task, Uses::new(), work, Some(turn));
        Ok(())
    }

    /// Tells `peer` "ready": its matching [`CommStream::rx_ack`] passes.
    pub fn tx_ack(&self, peer: u32, stage: &str) -> Result<()> {
        self.signal(peer, ffi::AIV_LINK_ACK, false, stage)
    }

    /// Waits for `peer`'s matching [`CommStream::tx_ack`].
    pub fn rx_ack(&self, peer: u32, stage: &str) -> Result<()> {
        self.signal(peer, ffi::AIV_LINK_ACK, true, stage)
    }

    /// Tells `peer` "data written" (after this stream's earlier tasks).
    pub fn tx_data_signal(&self, peer: u32, stage: &str) -> Result<()> {
        self.signal(peer, ffi::AIV_LINK_DATA, false, stage)
    }

    /// Waits for `peer`'s matching [`CommStream::tx_data_signal`].
    pub fn rx_data_signal(&self, peer: u32, stage: &str) -> Result<()> {
        self.signal(peer, ffi::AIV_LINK_DATA, true, stage)
    }

    fn p2p(&self, buf: &DeviceBuffer, bytes: usize, peer: u32, send: bool) -> Result<()> {
        self.check_usable()?;
        self.enqueue_p2p(buf, bytes, peer, send)
    }

    /// [`CommStream::p2p`] without the check that the rank has not failed (see [`InCall`]).
    fn enqueue_p2p(&self, buf: &DeviceBuffer, bytes: usize, peer: u32, send: bool) -> Result<()> {
        self.check_peer(peer)?;
        let l = self.inner.launcher.clone();
        if peer == l.rank {
            return Err(Error::SelfPeer { rank: peer });
        }
        let what = if send { "send buffer" } else { "recv buffer" };
        self.check_world(what, buf)?;
        if buf.rank() != l.rank {
            return Err(Error::WrongDevice {
                what,
                buffer_rank: buf.rank(),
                comm_rank: l.rank,
            });
        }
        check_len(what, buf, bytes)?;
        let (slot, chunks) = p2p_chunks(l.world.hccl_bytes, l.size, bytes)?;
        let kind = if send {
            ffi::AIV_LINK_P2P_DATA
        } else {
            ffi::AIV_LINK_P2P_DONE
        };
        // One turn for the whole message: its chunks run in order on this stream, and the
        // next message on the link (from any stream) waits until the last of them is done.
        let turn = l.links.lock().next((peer, kind, send));
        let msg = turn.n as i64;
        let name = if send { "send" } else { "recv" };
        for k in 0..chunks {
            let off = k * slot;
            let n = slot.min(bytes - off);
            let addr = buf.addr() + off as u64;
            let seq = msg << 20 | k as i64;
            let uses = Uses::from_iter([if send {
                buf.use_read()
            } else {
                buf.use_write_range(off, n)
            }]);
            let args = ffi::AivP2PArgs {
                comm: Default::default(),
                buf: addr,
                bytes: n as u64,
                total: bytes as u64,
                slot_bytes: slot as u64,
                peer: peer as i32,
                seq,
                is_send: send as i32,
            };
            // SAFETY: aiv_p2p takes an AivP2PArgs; `buf` (claimed) holds the chunk.
            let work = Work::Launch(unsafe {
                Launch::of_comm_struct(
                    &ffi::kernels::aiv_p2p,
                    Blocks::Exactly(1),
                    0,
                    &args,
                    None,
                    false,
                )
            });
            // The first chunk waits for the link's earlier operations; the message's turn goes
            // when its last chunk is done.
            let turn = LinkTurn {
                turn: turn.clone(),
                wait: k == 0,
                peer,
                op: name,
            };
            self.op(name, name, uses, work, Some(turn));
        }
        Ok(())
    }

    /// Sends the first `count` elements of `dtype` of `buf` to `peer` (HCCL's `HcclSend`; any
    /// element type, `buf` aligned to it), which must post a matching [`CommStream::recv`] of
    /// the same number of bytes (else both sides get [`Error::SizeMismatch`] and nothing is
    /// written). Each chunk completes when the receiver has read it. Sends and recvs between
    /// two ranks that should overlap (both directions at once, rings) go on different streams.
    /// Sends to one peer from several streams of a rank run in the order they were enqueued
    /// (each waits for the one before), and match the peer's recvs in that order. The typed
    /// form is [`CommStream::typed`]'s `send`.
    ///
    /// Chunks are staged in this rank's HCCL buffer, in a slot per destination (buffer / ranks
    /// bytes each); collectives use the same buffer, so do not run them at the same time as
    /// sends on another stream (order them with an [`Event`] or keep them on one stream).
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|c| -> aiv_comm::Result<Vec<u16>> {
    ///     let s = c.create_stream("p2p")?;
    ///     let buf = c.alloc_from(&[c.rank() as u16 + 1; 4])?;
    ///     if c.rank() == 0 { s.send(&buf, 3, DataType::U16, 1)? } else { s.recv(&buf, 3, DataType::U16, 0)? }
    ///     s.synchronize()?;
    ///     buf.to_vec()
    /// });
    /// assert_eq!(out[1].as_ref().unwrap(), &[1, 1, 1, 2]);
    /// ```
    pub fn send(&self, buf: &DeviceBuffer, count: usize, dtype: DataType, peer: u32) -> Result<()> {
        let bytes = self.p2p_bytes("send buffer", buf, count, dtype)?;
        self.p2p(buf, bytes, peer, true)
    }

    /// Receives `count` elements of `dtype` from `peer` into the start of `buf` (HCCL's
    /// `HcclRecv`; see [`CommStream::send`]).
    pub fn recv(&self, buf: &DeviceBuffer, count: usize, dtype: DataType, peer: u32) -> Result<()> {
        let bytes = self.p2p_bytes("recv buffer", buf, count, dtype)?;
        self.p2p(buf, bytes, peer, false)
    }

    /// The bytes of `count` elements of `dtype`, refusing a `buf` not aligned to the element.
    fn p2p_bytes(
        &self,
        what: &'static str,
        buf: &DeviceBuffer,
        count: usize,
        dtype: DataType,
    ) -> Result<usize> {
        let bytes = elem_bytes(count, dtype)?;
        check_aligned(what, buf, dtype)?;
        Ok(bytes)
    }

    /// This stream as the steps of a library call see it, after the call checked the rank.
    pub(crate) fn in_call(&self) -> InCall<'_> {
        InCall(self)
    }
}

/// The link steps (signals, sends, receives) of one library call that enqueues several tasks
/// (HD AllReduce, a batch of sends and receives), after the call's own check that the rank has
/// not failed. They do not check it again: the call's first tasks may already have run and
/// failed while later ones are being enqueued, and the call must then report that failure at
/// `synchronize` (a mismatch the rank found itself, say), not [`Error::CommFailed`], which
/// says an *earlier* call failed. The call is enqueued whole either way. What then runs of it:
/// the failed stream drops its later tasks, and so do the streams that wait on it through an
/// [`Event`]; a fault or a mismatch stops the world, which refuses every later launch of every
/// rank. After a timeout (which does not stop the world), a batch's other links still run
/// their items, as they would had they been enqueued a moment before the failure.
pub(crate) struct InCall<'a>(&'a CommStream);

impl InCall<'_> {
    /// [`CommStream::tx_ack`], without checking the rank again.
    pub fn tx_ack(&self, peer: u32, stage: &str) -> Result<()> {
        self.0.enqueue_signal(peer, ffi::AIV_LINK_ACK, false, stage)
    }

    /// [`CommStream::rx_ack`], without checking the rank again.
    pub fn rx_ack(&self, peer: u32, stage: &str) -> Result<()> {
        self.0.enqueue_signal(peer, ffi::AIV_LINK_ACK, true, stage)
    }

    /// [`CommStream::tx_data_signal`], without checking the rank again.
    pub fn tx_data_signal(&self, peer: u32, stage: &str) -> Result<()> {
        self.0
            .enqueue_signal(peer, ffi::AIV_LINK_DATA, false, stage)
    }

    /// [`CommStream::rx_data_signal`], without checking the rank again.
    pub fn rx_data_signal(&self, peer: u32, stage: &str) -> Result<()> {
        self.0.enqueue_signal(peer, ffi::AIV_LINK_DATA, true, stage)
    }

    /// [`CommStream::send`], without checking the rank again.
    pub fn send(&self, buf: &DeviceBuffer, bytes: usize, peer: u32) -> Result<()> {
        self.0.enqueue_p2p(buf, bytes, peer, true)
    }

    /// [`CommStream::recv`], without checking the rank again.
    pub fn recv(&self, buf: &DeviceBuffer, bytes: usize, peer: u32) -> Result<()> {
        self.0.enqueue_p2p(buf, bytes, peer, false)
    }
}

/// The staging slot and the chunks of a send/recv of `bytes` between ranks of a world of
/// `size` ranks with HCCL buffers of `hccl_bytes`: each destination has its own slot in every
/// HCCL buffer.
pub(crate) fn p2p_chunks(hccl_bytes: usize, size: u32, bytes: usize) -> Result<(usize, usize)> {
    let slot = crate::plan::slot_bytes(hccl_bytes, size as usize);
    if slot == 0 {
        return Err(Error::Config(format!(
            "HCCL buffer of {hccl_bytes} bytes has no room for a send slot per rank"
        )));
    }
    let chunks = bytes.div_ceil(slot).max(1);
    if chunks > MAX_P2P_CHUNKS {
        return Err(Error::Length(format!(
            "a message of {bytes} bytes needs {chunks} chunks of {slot} bytes; at most {MAX_P2P_CHUNKS}"
        )));
    }
    Ok((slot, chunks))
}
