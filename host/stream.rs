//! Streams: in-order queues of operations, each built whole when it is enqueued (a launch with
//! its packed arguments, a post or wait of an event, a host step), run by an executor on the
//! backend's stream.
//!
//! The order rules users rely on are expressed in the operations: stream order (the queue),
//! link turns across streams (an operation's [`LinkTurn`]: it waits for the operation enqueued
//! before it on the same link and lets the next go when done), claims that make host copies
//! wait for conflicting kernels (an operation's buffer claims, `buffer.rs`), and order between
//! streams (events). Drop = abort then wait is the World's (`world.rs`).

use std::borrow::Cow;
use std::sync::Arc;

use ascendc_twin::{ArgBlock, Kernel};

use crate::backend::dynamic::StreamHandle;
use crate::backend::Blocks;
use crate::buffer::Uses;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::ffi;
use crate::launcher::{LaunchSlots, Launcher};
use crate::op_queue::{Item, OpQueue};
use crate::trace::TraceEvent;
use crate::turns::Turn;

/// A call's fingerprint lanes (see `fingerprint.rs`).
pub(crate) type Fp = [i32; ffi::AIV_PAYLOAD_LANES as usize];

/// What an operation does.
pub(crate) enum Work {
    /// A launch (see [`Launch`]).
    Launch(Launch),
    /// Post the event.
    Post(Event),
    /// Wait for post `ticket` of the event.
    Wait {
        /// The event.
        event: Event,
        /// Which post (1, 2, ...).
        ticket: u64,
    },
    /// A step of host code between launches: AlltoAllV plans its chunks from the counts its
    /// first launch gathered (the one step that launches from the host side).
    Host(HostStep),
}

/// A host step's code.
pub(crate) type HostStep = Box<dyn FnOnce(&StreamCtx) -> Result<()> + Send>;

/// A launch, whole: built by the unsafe constructors only, which take the kernel's contract.
pub(crate) struct Launch {
    kernel: &'static Kernel,
    args: LaunchArgs,
}

/// An argument struct's bytes, inline up to the size of the common ones' tails.
type ArgBytes = smallvec::SmallVec<[u8; 128]>;

enum LaunchArgs {
    /// One of the library's kernels, which take the device address of an argument struct,
    /// written to the stream's argument slot: the stream's communicator part with `tag` (if
    /// set) followed by `bytes` (the rest of the struct; all of it without a tag).
    Struct {
        blocks: Blocks,
        tag: Option<i64>,
        bytes: ArgBytes,
        /// The call's fingerprint, for naming both calls of a mismatch.
        fp: Option<Fp>,
        /// If it fails, stop every launch of the world and wait until none runs: peers may be
        /// reading its input in place (window memory).
        stop_readers: bool,
    },
    /// A kernel of any signature with its argument block (boxed: it holds its bytes inline).
    Block { block_dim: u32, args: Box<ArgBlock> },
}

impl Launch {
    /// A launch of `kernel` on `blocks` with the argument struct `args`, as it is.
    ///
    /// # Safety
    /// `kernel` must take the GM address of an `A`, and every device address in `args` must
    /// stay allocated until the launch has run (the op's claims, or the world's memory).
    pub unsafe fn of_struct<A: bytemuck::Pod>(
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &A,
        fp: Option<Fp>,
        stop_readers: bool,
    ) -> Launch {
        Launch {
            kernel,
            args: LaunchArgs::Struct {
                blocks,
                tag: None,
                bytes: ArgBytes::from_slice(bytemuck::bytes_of(args)),
                fp,
                stop_readers,
            },
        }
    }

    /// [`Launch::of_struct`] of a struct whose communicator part (its first field) is the
    /// stream's, with `tag`: the op holds the tag and the rest of `args` (the communicator part
    /// is the same for every launch of a stream but for the tag, and copying it per op, from
    /// the thread that enqueues to the one that runs the op, cost 16% of a 64 KiB sendrecv).
    ///
    /// # Safety
    /// As [`Launch::of_struct`].
    pub unsafe fn of_comm_struct<A: ffi::WithComm>(
        kernel: &'static Kernel,
        blocks: Blocks,
        tag: i64,
        args: &A,
        fp: Option<Fp>,
        stop_readers: bool,
    ) -> Launch {
        let rest = &bytemuck::bytes_of(args)[std::mem::size_of::<ffi::AivCommArgs>()..];
        Launch {
            kernel,
            args: LaunchArgs::Struct {
                blocks,
                tag: Some(tag),
                bytes: ArgBytes::from_slice(rest),
                fp,
                stop_readers,
            },
        }
    }

    /// A launch of `kernel` on `block_dim` blocks with the argument block `args`.
    ///
    /// # Safety
    /// Every device address among `args` must be what the kernel expects there and stay
    /// allocated until the launch has run (the op's claims, or the world's memory).
    pub unsafe fn of_block(kernel: &'static Kernel, block_dim: u32, args: ArgBlock) -> Launch {
        Launch {
            kernel,
            args: LaunchArgs::Block {
                block_dim,
                args: Box::new(args),
            },
        }
    }
}

/// An operation's place on a link to a peer (`turns.rs`).
pub(crate) struct LinkTurn {
    pub turn: Arc<Turn>,
    /// Wait for the link's earlier operations first (the first chunk of a message does; its
    /// other chunks share the turn, which goes when the last of them is done).
    pub wait: bool,
    pub peer: u32,
    /// The operation, for the error if the wait times out.
    pub op: &'static str,
}

/// One operation of a stream, as enqueued.
pub(crate) struct Op {
    pub work: Work,
    /// Held from enqueue until the op is done; a write claim's range is poisoned if the op
    /// fails or is dropped unrun, and cleared if it succeeds (see `buffer.rs`).
    pub uses: Uses,
    pub turn: Option<LinkTurn>,
    /// Trace labels.
    pub stage: Cow<'static, str>,
    pub task: Cow<'static, str>,
}

/// An op queued with the stream it runs on: the draining host task holds only the queue, and
/// lets an op's stream go with the op, before the op's end is seen (so nothing of a stream is
/// held once its last op is seen done: a World dropped then frees its memory at once).
struct Queued {
    ctx: Arc<StreamCtx>,
    op: Op,
}

impl Item for Queued {
    fn run(self) -> Option<Arc<Error>> {
        run(&self.ctx, self.op)
    }

    fn drop_unrun(self, cause: &Arc<Error>) {
        self.ctx.drop_unrun(self.op, cause);
    }
}

/// A stream of one rank: its queue of operations and what running them needs (the rank's
/// launcher, the backend stream, the stream's own argument slot and diagnostic records).
///
/// [`StreamCtx::enqueue`] returns at once; ops run one after another, in the order they were
/// enqueued, as host tasks of the backend's stream (`Backend::host_task`: on the twin,
/// coroutines of its worker pool next to the kernel blocks they launch). After an op fails,
/// every later op is dropped unrun until [`StreamCtx::clear_error`], and every
/// [`StreamCtx::synchronize`] reports the error, as a CUDA stream's sticky errors do. An op
/// that panics fails the stream with [`Error::Internal`]. Dropping the handles does not stop
/// the ops already enqueued: each op owns what it needs.
pub(crate) struct StreamCtx {
    pub name: String,
    pub launcher: Arc<Launcher>,
    /// The communicator part of every launch's arguments on this stream, but for the tag.
    comm: ffi::AivCommArgs,
    slots: LaunchSlots,
    /// The backend's stream: where the ops run, and the launches they make.
    handle: StreamHandle,
    /// The ops' order, errors and waiters (`op_queue.rs`).
    queue: Arc<OpQueue<Queued>>,
}

impl StreamCtx {
    /// A new stream of `launcher`'s rank named `name` (in errors and traces), with its own
    /// argument slot and diagnostic records `slots`, whose ops run as host tasks of the
    /// backend stream `handle`.
    pub fn new(
        launcher: Arc<Launcher>,
        name: String,
        slots: LaunchSlots,
        handle: StreamHandle,
    ) -> StreamCtx {
        StreamCtx {
            name,
            comm: launcher.comm_args(0, slots.diag.addr()),
            launcher,
            slots,
            handle,
            queue: Arc::new(OpQueue::new()),
        }
    }

    /// Queues `op` behind everything enqueued before it.
    pub fn enqueue(self: &Arc<Self>, op: Op) {
        let item = Queued {
            ctx: self.clone(),
            op,
        };
        self.queue.enqueue(item, |q| {
            self.handle.host_task(Box::new(move || q.drain()));
        });
    }

    /// The backend the stream runs on.
    pub fn backend(&self) -> &Arc<dyn crate::backend::dynamic::DynBackend> {
        self.handle.backend()
    }

    /// The communicator part of a kernel's arguments for a launch with `tag` on this stream
    /// (its blocks write their diagnostic records to the stream's own).
    pub fn comm_args(&self, tag: i64) -> ffi::AivCommArgs {
        ffi::AivCommArgs { tag, ..self.comm }
    }

    /// Launches `kernel` from a host step ([`Work::Host`]) and waits for it, as an op of
    /// [`Launch::of_struct`] would.
    ///
    /// # Safety
    /// As [`Launch::of_struct`].
    pub unsafe fn launch_now<A: bytemuck::Pod>(
        &self,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &A,
        fp: Option<&Fp>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.launcher.launch(
                &self.handle,
                &self.slots,
                fp.map(|f| &f[..]),
                kernel,
                blocks,
                bytemuck::bytes_of(args),
            )
        }
    }

    /// An op dropped unrun because of `cause`: what it was to write is poisoned, and an event
    /// it was to post fails its waiters.
    fn drop_unrun(&self, op: Op, cause: &Arc<Error>) {
        finish(op.uses, Some(cause));
        if let Work::Post(ev) = &op.work {
            ev.fail(self.handle.backend(), cause);
        }
    }

    /// Waits until every op enqueued before this call has run (or was dropped); returns the
    /// stream's error (or the error it was cancelled with), if it has one (kept: every later
    /// call returns it too).
    pub fn synchronize(&self) -> Result<()> {
        self.queue.synchronize().map_err(|e| (*e).clone())
    }

    /// The position of the next op enqueued: [`StreamCtx::wait_for`] it to wait for every task
    /// enqueued before now.
    pub fn position(&self) -> u64 {
        self.queue.position()
    }

    /// Waits until every op enqueued before `position` ([`StreamCtx::position`]) has run (or
    /// was dropped), whatever is enqueued meanwhile.
    pub fn wait_for(&self, position: u64) {
        self.queue.wait_for(position);
    }

    /// The stream's error (or the error it was cancelled with), if it has one (not cleared).
    pub fn first_error(&self) -> Option<Error> {
        self.queue.first_error().map(|e| (*e).clone())
    }

    /// Waits for the ops enqueued before this call (those after the error are dropped
    /// unrun), then clears the error and returns it: the ops enqueued from now on run, unless
    /// the stream was cancelled (that stays).
    pub fn clear_error(&self) -> Option<Error> {
        self.queue.clear_error().map(Arc::unwrap_or_clone)
    }

    /// True while ops are enqueued or running.
    pub fn busy(&self) -> bool {
        self.queue.busy()
    }

    /// Waits until no op is pending, including those enqueued meanwhile (keeps the error).
    pub fn wait_idle(&self) {
        self.queue.wait_idle();
    }

    /// Stops the stream for good: queued ops and every later one are dropped unrun (what
    /// they were to write is poisoned with the stream's error), the op running now finishes,
    /// and `synchronize` reports `error` (unless an earlier error came first).
    pub fn cancel(&self, error: Error) {
        self.queue.cancel(error);
    }
}

/// Ends an op's claims: its write claims' ranges are poisoned with `failed`, or, if it
/// succeeded (`None`), hold its result.
fn finish(uses: Uses, failed: Option<&Arc<Error>>) {
    for u in uses {
        u.finish(failed);
    }
}

/// Runs `op` on `ctx`: its claims first wait for conflicting host copies, then its work; the
/// claims end with its result (a failure poisons what it was to write). Returns its error.
fn run(ctx: &StreamCtx, op: Op) -> Option<Arc<Error>> {
    let Op {
        work,
        uses,
        turn,
        stage,
        task,
    } = op;
    for u in &uses {
        u.begin();
    }
    let trace = &ctx.launcher.world.trace;
    let start = trace.enabled().then(|| trace.now_us());
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(ctx, work, turn)))
            .unwrap_or_else(|p| {
                Err(Error::Internal(format!(
                    "an operation of rank {}'s stream `{}` panicked: {}",
                    ctx.launcher.rank,
                    ctx.name,
                    panic_message(&*p)
                )))
            });
    if let Some(start_us) = start {
        trace.push(TraceEvent {
            rank: ctx.launcher.rank,
            stream: ctx.name.clone(),
            stage: stage.into_owned(),
            task: task.into_owned(),
            start_us,
            end_us: trace.now_us(),
        });
    }
    let failed = result.err().map(Arc::new);
    finish(uses, failed.as_ref());
    failed
}

/// Runs one op's work on `ctx`, in its link turn if it has one.
fn execute(ctx: &StreamCtx, work: Work, turn: Option<LinkTurn>) -> Result<()> {
    // Host-side waits end early when the stream is cancelled (the World is being stopped).
    let stop = || ctx.queue.is_cancelled();
    let stopped = || ctx.queue.cancelled().map(|e| (*e).clone());
    if let Some(t) = turn.as_ref().filter(|t| t.wait) {
        let timeout = ctx.launcher.world.exec_timeout;
        if !t.turn.wait(timeout, &stop) {
            if let Some(e) = stopped() {
                return Err(e);
            }
            return Err(Error::LinkTurnTimeout {
                rank: ctx.launcher.rank,
                stream: ctx.name.clone(),
                peer: t.peer,
                op: t.op,
                waited_ms: timeout.as_millis() as u64,
            });
        }
    }
    let backend = ctx.handle.backend();
    let r = match work {
        Work::Launch(Launch { kernel, args }) => match args {
            LaunchArgs::Struct {
                blocks,
                tag,
                bytes,
                fp,
                stop_readers,
            } => {
                let mut whole = smallvec::SmallVec::<[u8; 2048]>::new();
                if let Some(tag) = tag {
                    whole.extend_from_slice(bytemuck::bytes_of(&ctx.comm_args(tag)));
                }
                whole.extend_from_slice(&bytes);
                // SAFETY: `Launch::of_struct` / `of_comm_struct`'s contract, taken by whoever
                // built the op (`whole` is the struct they were given, its communicator part the
                // stream's); the op's claims and the world hold the memory until it is done.
                let r = unsafe {
                    ctx.launcher.launch(
                        &ctx.handle,
                        &ctx.slots,
                        fp.as_ref().map(|f| &f[..]),
                        kernel,
                        blocks,
                        &whole,
                    )
                };
                if let Err(e) = &r {
                    if stop_readers {
                        ctx.launcher.stop_readers_of_input(e);
                    }
                }
                r
            }
            LaunchArgs::Block { block_dim, args } => {
                // SAFETY: `Launch::of_block`'s contract, taken by whoever built the op; the
                // op's claims hold its buffers until it is done.
                unsafe {
                    ctx.launcher
                        .launch_args(&ctx.handle, kernel, block_dim, &args)
                }
            }
        },
        Work::Post(ev) => ev.post(backend),
        Work::Wait { event, ticket } => {
            let timeout = ctx.launcher.world.exec_timeout;
            let start = std::time::Instant::now();
            let deadlines = (start + timeout, start + 2 * timeout);
            match event.wait(backend, ticket, deadlines, &stop) {
                Ok(true) => Ok(()),
                Ok(false) => Err(stopped().unwrap_or_else(|| Error::EventTimeout {
                    rank: ctx.launcher.rank,
                    stream: ctx.name.clone(),
                    event: event.name().to_string(),
                    waited_ms: start.elapsed().as_millis() as u64,
                })),
                Err(e) => Err(e),
            }
        }
        Work::Host(f) => f(ctx),
    };
    // The link's next operation may go (the last handle of a message's turn).
    drop(turn);
    r
}

/// The message of a panic payload (a `&str` or `String`), or "" for any other payload.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_stream_drops_its_ops_whatever_clear_error_clears() {
        let world = crate::World::sim(1).unwrap();
        let c = &world.comms()[0];
        let buf = c.alloc(64).unwrap();
        let s = c.stream().inner.clone();
        s.cancel(Error::Config("stopped".into()));
        assert!(matches!(s.clear_error(), Some(Error::Config(_))));
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = ran.clone();
        s.enqueue(Op {
            work: Work::Host(Box::new(move |_| {
                r.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            })),
            uses: Uses::from_iter([buf.use_write()]),
            turn: None,
            stage: "test".into(),
            task: "host".into(),
        });
        assert!(matches!(s.synchronize(), Err(Error::Config(_))));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        // What the dropped op was to write is poisoned with the cancellation.
        assert!(matches!(buf.to_vec::<u8>(), Err(Error::Poisoned { .. })));
    }
}
