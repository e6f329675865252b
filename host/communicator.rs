//! A rank's communicator: its handle for collectives, streams and device memory, and the state
//! its features keep (HD's sub-streams, batch links, AlltoAllV's scratch, push tags, windows).
//! The collectives themselves are `impl Communicator` blocks in their own modules.

use std::collections::HashMap;
use std::sync::Arc;

use bytemuck::Pod;
use parking_lot::Mutex;

use crate::backend::dynamic::Memory;
use crate::backend::MemKind;
use crate::buffer::{BufferAccess, DeviceBuffer};
use crate::dtype::DataType;
use crate::error::{Error, Result, StopCause};
use crate::event::Event;
use crate::ffi;
use crate::launcher::Launcher;
use crate::link::{CommStream, SendRecvKind, Streams};
use crate::Kernel;

/// The sub-streams and events of a communicator's HD AllReduce (`hd.rs`), made at its first
/// call.
pub(crate) struct HdStreams {
    pub tx: CommStream,
    pub rx: CommStream,
    pub start_tx: Event,
    pub start_rx: Event,
    pub done_tx: Event,
    pub done_rx: Event,
}

impl HdStreams {
    /// The sub-streams.
    pub fn streams(&self) -> [&CommStream; 2] {
        [&self.tx, &self.rx]
    }
}

/// What a communicator's features keep between calls.
#[derive(Default)]
pub(crate) struct FeatureState {
    /// HD AllReduce's sub-streams and events (`hd.rs`).
    pub hd: Mutex<Option<Arc<HdStreams>>>,
    /// The streams of [`Communicator::batch_send_recv`], one per (peer, direction).
    pub batch: Mutex<HashMap<(u32, SendRecvKind), CommStream>>,
    /// GM of AlltoAllV's count exchange (this rank's row, every rank's rows), made at the
    /// first call.
    pub a2av_scratch: Mutex<Option<Arc<(Memory, Memory)>>>,
    /// Tag of the last push-mode launch enqueued on this rank (0: none yet), which the next one
    /// passes to its kernel (`AivPushArgs::prev_tag`, kernel/push.cpp).
    pub push_prev: Mutex<i64>,
    /// Buffers registered as window memory ([`Communicator::register`], window.rs).
    pub windows: Mutex<Vec<DeviceBuffer>>,
}

/// One rank's handle for collectives: its device, HCCL buffer, sync area, stream and tags.
///
/// Calls validate their arguments, then enqueue one kernel launch per chunk on the rank's stream
/// and return; [`Communicator::synchronize`] waits for them. Every rank of a world must issue the
/// same collectives in the same order (as with HCCL).
///
/// A communicator may be shared between host threads, but calls that enqueue work must be
/// ordered by the program (as with HCCL): two threads racing to enqueue collectives on one rank
/// can enqueue them in an order the other ranks do not use.
///
/// **After a failure** (a wait timeout or a device fault) the communicator is marked failed:
/// its flags may be half-written, so every later call returns [`Error::CommFailed`]. Build a new
/// [`crate::World`] to continue.
pub struct Communicator {
    pub(crate) launcher: Arc<Launcher>,
    pub(crate) main: CommStream,
    /// Every stream of this rank (main, created, and those its calls use inside).
    pub(crate) streams: Arc<Streams>,
    /// What its features keep between calls.
    pub(crate) state: FeatureState,
    /// The job, when this rank is a process of its own ([`Communicator::from_rank`]).
    pub(crate) job: Option<Box<dyn JobLink>>,
}

/// What a rank that is a process of its own keeps of its job (`process.rs`).
pub(crate) trait JobLink: Send + Sync {
    /// The bootstrap's connections to the other ranks.
    fn peers(&self) -> &crate::bootstrap::Peers;
    /// Says to the peers that this rank leaves in order, and stops watching them.
    fn leave(&mut self);
}

impl Drop for Communicator {
    /// A rank of a multi-process job does what dropping a [`crate::World`] does for its ranks:
    /// work still queued is stopped (and the other ranks with it: they would wait for it),
    /// then the rank leaves the job in order. A communicator of a World leaves that to it.
    fn drop(&mut self) {
        let Some(mut job) = self.job.take() else {
            return;
        };
        let streams = self.streams.live();
        if streams.iter().any(|s| s.busy()) {
            let cause = Error::Stopped(StopCause::WorldDropped { busy: true });
            self.launcher.world.abort(&cause.to_string());
            crate::link::stop_rank(&self.launcher, &self.streams, &cause);
        } else {
            self.launcher
                .fail(&Error::Stopped(StopCause::WorldDropped { busy: false }));
        }
        for s in &streams {
            s.wait_idle();
        }
        job.leave();
    }
}

impl Communicator {
    /// This rank.
    pub fn rank(&self) -> u32 {
        self.launcher.rank
    }

    /// Ranks in the world.
    pub fn size(&self) -> u32 {
        self.launcher.size
    }

    /// The bootstrap's connections to the other ranks' processes, when this rank is a process
    /// of its own ([`Communicator::from_rank`]): for exchanging host data (results to print on
    /// one rank, ...). None in a [`crate::World`] of one process.
    pub fn peers(&self) -> Option<&crate::bootstrap::Peers> {
        self.job.as_deref().map(JobLink::peers)
    }

    /// The name of the backend this rank runs on (`twin`, `acl`, ...), as
    /// [`crate::World::backend_name`].
    pub fn backend_name(&self) -> &'static str {
        self.launcher.world.backend.name()
    }

    /// What the backend runs on, for people, as [`crate::World::backend_description`].
    pub fn backend_description(&self) -> String {
        self.launcher.world.backend.description()
    }

    /// HCCL buffer bytes of every rank.
    pub fn buffer_bytes(&self) -> usize {
        self.launcher.world.hccl_bytes
    }

    /// True if reductions give the rank-order sum whatever the algorithm
    /// ([`crate::Config::deterministic`]).
    pub fn deterministic(&self) -> bool {
        self.launcher.world.deterministic
    }

    /// Blocks per peer of a collective launch whose block pairs each move `pair_bytes`
    /// ([`crate::Config::blocks_per_peer`], else [`crate::plan::blocks_per_peer`]).
    pub fn blocks_per_peer(&self, pair_bytes: usize) -> u32 {
        let n = self.size();
        let cores = self.cores();
        crate::plan::blocks_for(
            self.launcher.world.blocks_per_peer,
            pair_bytes,
            n as usize,
            cores,
        )
    }

    /// AIV cores of this rank's device (the most blocks one launch can have).
    pub fn cores(&self) -> u32 {
        self.launcher.cores()
    }

    /// Identifies the world (see [`crate::World::id`]).
    pub fn world_id(&self) -> u64 {
        self.launcher.world.id()
    }

    /// Allocates a zeroed device buffer of `bytes` on this rank.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer> {
        let mem = Memory::alloc(
            &self.launcher.world.backend,
            self.rank(),
            bytes,
            MemKind::Data,
        )?;
        Ok(DeviceBuffer::new(mem))
    }

    /// Allocates a device buffer holding `data`.
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer> {
        let b = self.alloc(std::mem::size_of_val(data))?;
        b.write(0, data)?;
        Ok(b)
    }

    /// Waits for every operation enqueued on the main stream before the call (not for those
    /// enqueued meanwhile by other threads); returns the error of the first one that failed, or
    /// [`Error::CommFailed`] if the communicator has failed ([`CommStream::synchronize`]).
    ///
    /// Errors are sticky: every later call returns the same error until the stream is
    /// recovered ([`CommStream::clear_error`], for errors that do not fail the communicator),
    /// and a failed communicator never recovers. What a failed or dropped operation was to
    /// write reads back as [`Error::Poisoned`], not as data.
    pub fn synchronize(&self) -> Result<()> {
        self.main.synchronize()
    }

    /// Recovers this rank's streams from an error that did not fail the communicator (a
    /// send/recv [`Error::SizeMismatch`], an AlltoAllV counts [`Error::CollectiveMismatch`],
    /// an [`Error::EventTimeout`]): the main stream and the streams the communicator's own
    /// calls use inside ([`Communicator::batch_send_recv`]'s links, HD AllReduce's
    /// sub-streams), each as [`CommStream::clear_error`]. Returns the main stream's error (else
    /// the first of the others), `None` if none had one. Streams made with
    /// [`Communicator::create_stream`] are the caller's to recover.
    ///
    /// What failed or dropped operations were to write stays poisoned ([`Error::Poisoned`]);
    /// a failed communicator ([`Communicator::failure`]) stays failed.
    ///
    /// ```
    /// use aiv_comm::{Error, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|c| {
    ///     let b = c.alloc(if c.rank() == 0 { 8 } else { 12 })?; // sizes disagree
    ///     if c.rank() == 0 { c.send(&b, 1)? } else { c.recv(&b, 0)? }
    ///     assert!(matches!(c.synchronize(), Err(Error::SizeMismatch { .. })));
    ///     assert!(matches!(c.synchronize(), Err(Error::SizeMismatch { .. }))); // sticky
    ///     assert!(matches!(c.clear_error(), Some(Error::SizeMismatch { .. })));
    ///     c.synchronize() // recovered: the stream runs what is enqueued from now on
    /// });
    /// assert!(out.iter().all(|r| r.is_ok()));
    /// ```
    pub fn clear_error(&self) -> Option<Error> {
        let mut streams: Vec<CommStream> = self.state.batch.lock().values().cloned().collect();
        // HD's events stay failed once a post was dropped: its next call makes fresh ones.
        let hd = self.state.hd.lock().take();
        if let Some(hd) = hd {
            streams.extend(hd.streams().into_iter().cloned());
        }
        let mut other = None;
        for s in &streams {
            let e = s.clear_error(); // every stream is cleared, whichever error is returned
            other = other.or(e);
        }
        let main = self.main.clear_error();
        main.or(other)
    }

    /// `Some(cause)` if an earlier operation failed this communicator: the first error of the
    /// rank (every later call returns it as the cause of [`Error::CommFailed`]).
    pub fn failure(&self) -> Option<Error> {
        self.launcher.failed.lock().clone()
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        self.launcher.check_usable()
    }

    /// Refuses a buffer of another world, or of another rank when `own_rank` is set.
    pub(crate) fn check_owner(
        &self,
        what: &'static str,
        buf: &DeviceBuffer,
        own_rank: bool,
    ) -> Result<()> {
        if buf.world_id() != self.world_id() {
            return Err(Error::WrongWorld { what });
        }
        if own_rank && buf.rank() != self.rank() {
            return Err(Error::WrongDevice {
                what,
                buffer_rank: buf.rank(),
                comm_rank: self.rank(),
            });
        }
        Ok(())
    }

    /// Reserves `n` tags for one launch (see [`crate::tags`]).
    pub(crate) fn reserve_tags(&self, n: i64) -> Result<i64> {
        self.launcher.reserve_tags(n)
    }

    /// Tags issued so far by this communicator.
    pub fn tags_issued(&self) -> i64 {
        self.launcher.tags.lock().issued()
    }

    /// Enqueues a launch of your own `kernel` on the main stream; see
    /// [`CommStream::launch_with_tags`].
    ///
    /// # Safety
    /// As [`CommStream::launch_with_tags`].
    pub unsafe fn launch_with_tags<A: Pod + Send + 'static>(
        &self,
        kernel: &'static Kernel,
        block_dim: u32,
        n: i64,
        buffers: &[BufferAccess],
        make: impl FnOnce(ffi::AivCommArgs) -> A,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.main
                .launch_with_tags(kernel, block_dim, n, buffers, make)
        }
    }
}

impl Communicator {
    /// The rank's main stream (collectives and the `send`/`recv` shorthands use it).
    pub fn stream(&self) -> &CommStream {
        &self.main
    }

    /// Creates another stream on this rank (a sub-stream), named `name` in errors and traces.
    ///
    /// Every stream has its argument slot and diagnostic records of its own, so a wait timeout
    /// is reported by the stream whose launch timed out.
    pub fn create_stream(&self, name: &str) -> Result<CommStream> {
        self.check_usable()?;
        let index = self.streams.next_index();
        CommStream::new(&self.launcher, &self.streams, name, index)
    }

    /// [`CommStream::send`] on the main stream: all of `buf` (as bytes) to `peer`.
    pub fn send(&self, buf: &DeviceBuffer, peer: u32) -> Result<()> {
        self.main.send(buf, buf.len(), DataType::U8, peer)
    }

    /// [`CommStream::recv`] on the main stream: all of `buf` (as bytes) from `peer`.
    pub fn recv(&self, buf: &DeviceBuffer, peer: u32) -> Result<()> {
        self.main.recv(buf, buf.len(), DataType::U8, peer)
    }
}
