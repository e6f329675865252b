//! The device seam: what aiv-comm needs of a device runtime, as one trait.
//!
//! Everything above this module — communicators, collectives, the chunk planner, streams of
//! operations, buffer claims, errors — is written against [`Backend`] and names no type of a
//! particular runtime. A backend provides device memory, host <-> device copies, kernel
//! launches on a device's cores, a host-task executor next to those launches, a wait primitive
//! ([`Signal`]) host steps park on without holding up that executor, and an abort that stops
//! every launch. The CPU twin is one backend ([`twin::TwinBackend`]); the recording backend of
//! the tests is another.
//!
//! The shape is wgpu-hal's: the trait has associated types for its handles, so a backend is
//! written without downcasts; aiv-comm holds it behind an object-safe erasure (`DynBackend`,
//! wgpu's `DynDevice` in spirit), so that a `World` is not generic over it.
//!
//! Contracts the callers keep (validation stays above the trait): memory handed to a launch
//! stays allocated until the launch returns; host copies never overlap a running launch's
//! bytes (buffer claims, `buffer.rs`); a stream's host tasks run one at a time, in order
//! (`stream.rs`). What the host trusts of a backend for memory safety is the trait's own
//! contract: it is an `unsafe trait` (see [`Backend`]).
//!
//! Deliberately not in the trait: events between streams and per-stream synchronize are the
//! host's (a stream's ops run in order on one host task at a time; an event is a [`Signal`]
//! its post updates and its waits park on), and a launch's diagnostic record is read like any
//! device memory after the launch. So `launch` completes the kernel before it returns: one
//! host round trip per launch. An NPU runtime whose launches are asynchronous (ACL's) maps
//! that to launch-then-wait; letting several launches of a stream run ahead of the host (ops
//! that post and wait mapped to device events) is a later step of the trait, made when a
//! backend can use it.

use ascendc_twin::{ArgBlock, Kernel};

use crate::error::Result;

pub mod acl;
pub(crate) mod dynamic;
pub mod record;
pub mod twin;

/// AIV cores of an Atlas A2 (910B) device: the default of a simulated one.
pub const A2_AIV_CORES: u32 = 48;

/// Frequency of the AIV cores' system counter (`GetSystemCycle`) on Atlas A2: 50 MHz.
pub const SYSTEM_CYCLE_HZ: u64 = 50_000_000;

/// How many blocks a launch runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Blocks {
    /// Exactly this many, co-resident (the kernel's blocks work together).
    Exactly(u32),
    /// As many free cores as there are, from 1 up to this many (the kernel divides its work by
    /// `GetBlockNum()`): never waits for cores other launches hold, as long as one is free.
    UpTo(u32),
}

/// What a GM allocation holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemKind {
    /// Data.
    Data,
    /// Soft-sync flags (a rank's sync area): polled while other blocks and ranks write them.
    /// A backend with a race checker treats stores there as releases and loads as acquires.
    Flags,
}

/// A counter host steps wait on: buffer claims, link turns and events between streams.
///
/// A wait from a host task of the backend's executor must not hold up that executor (the twin
/// parks the task's coroutine); a wait from any other thread blocks it.
pub trait Signal: Send + Sync + 'static {
    /// The value now.
    fn get(&self) -> u64;
    /// Sets the value to `f(value)` and wakes the waiters; returns the new value.
    fn update(&self, f: &mut dyn FnMut(u64) -> u64) -> u64;
    /// Waits until `ready(value)` or `deadline` (none: no deadline); returns whether it became
    /// ready.
    fn wait_until(&self, deadline: Option<std::time::Instant>, ready: &dyn Fn(u64) -> bool)
        -> bool;

    /// [`Signal::wait_until`] `deadline`, giving up early once `stop()` holds (asked every
    /// [`STOP_CHECK`] at most): a wait of an op whose stream is being stopped (a World dropped
    /// with work queued) ends then rather than at its deadline. Returns whether it became
    /// ready.
    fn wait_or_stop(
        &self,
        deadline: std::time::Instant,
        ready: &dyn Fn(u64) -> bool,
        stop: &dyn Fn() -> bool,
    ) -> bool {
        loop {
            let now = std::time::Instant::now();
            if self.wait_until(Some(deadline.min(now + STOP_CHECK)), ready) {
                return true;
            }
            if stop() || std::time::Instant::now() >= deadline {
                return ready(self.get());
            }
        }
    }
}

/// A [`Signal`] made of a mutex and a condition variable: for backends whose host tasks are
/// threads of their own (a wait blocks its thread).
#[derive(Default)]
pub struct CondvarSignal {
    value: parking_lot::Mutex<u64>,
    cv: parking_lot::Condvar,
}

impl CondvarSignal {
    /// A signal holding `value`.
    pub fn new(value: u64) -> CondvarSignal {
        CondvarSignal {
            value: parking_lot::Mutex::new(value),
            cv: parking_lot::Condvar::new(),
        }
    }
}

impl Signal for CondvarSignal {
    fn get(&self) -> u64 {
        *self.value.lock()
    }
    fn update(&self, f: &mut dyn FnMut(u64) -> u64) -> u64 {
        let mut v = self.value.lock();
        *v = f(*v);
        self.cv.notify_all();
        *v
    }
    fn wait_until(
        &self,
        deadline: Option<std::time::Instant>,
        ready: &dyn Fn(u64) -> bool,
    ) -> bool {
        let mut v = self.value.lock();
        loop {
            if ready(*v) {
                return true;
            }
            match deadline {
                Some(d) => {
                    if self.cv.wait_until(&mut v, d).timed_out() {
                        return ready(*v);
                    }
                }
                None => self.cv.wait(&mut v),
            }
        }
    }
}

/// How often a long host-side wait asks whether its stream is being stopped.
pub const STOP_CHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// A device runtime aiv-comm drives: the devices of one world (one device per rank).
///
/// Errors are aiv-comm's [`crate::Error`], in its backend-neutral variants (a kernel fault is
/// [`crate::Error::Fault`], made with [`crate::Fault::new`], with a [`crate::FaultKind`]; a
/// failed allocation [`crate::Error::OutOfMemory`], ...).
///
/// # Safety
/// The host frees and reuses memory on the strength of these promises, so an implementation
/// must keep them:
/// - [`Backend::launch`] returns only once no block of the launch runs any more (it ended,
///   faulted or was aborted); [`Backend::wait_until_idle`] returns only once no launch of the
///   world runs;
/// - a [`Backend::Memory`] stays allocated, at the address [`Backend::addr`] gave, until it is
///   dropped, and holds at least the bytes asked for;
/// - [`Backend::id`] is unique among the worlds of the process;
/// - [`Backend::host_task`] runs every task it is given, once.
pub unsafe trait Backend: Send + Sync + 'static {
    /// A GM allocation on one device, freed when dropped.
    type Memory: Send + Sync + 'static;
    /// An in-order queue of work on one device: the context its host tasks and launches run
    /// in.
    type Stream: Send + Sync + 'static;
    /// The backend's wait primitive.
    type Signal: Signal;

    /// The backend's name, as `aiv-perf` prints it (`twin`, ...).
    fn name(&self) -> &'static str;

    /// What the backend runs on, for people (`aiv-perf`'s header): by default its name.
    fn description(&self) -> String {
        self.name().to_string()
    }

    /// Identifies the world this backend serves among the worlds of the process: memory of
    /// another world is refused above the trait.
    fn id(&self) -> u64;

    /// The number of devices (device numbers are `0..devices()`).
    fn devices(&self) -> u32;

    /// AIV cores of `device` (the most blocks one launch can have).
    fn cores(&self, device: u32) -> u32;

    /// Allocates `bytes` of zeroed GM of `kind` on `device`.
    fn alloc(&self, device: u32, bytes: usize, kind: MemKind) -> Result<Self::Memory>;

    /// The id of this process other processes whitelist when they export memory to it (ACL's
    /// `aclrtDeviceGetBareTgid`; the process id by default).
    fn process_id(&self) -> Result<u32> {
        Ok(std::process::id())
    }

    /// A handle (bytes) by which the processes `importers` ([`Backend::process_id`] of each)
    /// may [`Backend::import`] `mem`, a whole allocation of this process, as an IPC export is
    /// on an NPU. The export lasts as long as `mem`. By default refused: a backend of one
    /// process has every device's memory.
    fn export(&self, mem: &Self::Memory, importers: &[u32]) -> Result<Vec<u8>> {
        let _ = (mem, importers);
        Err(crate::Error::Config(format!(
            "the {} backend cannot export memory to other processes",
            self.name()
        )))
    }

    /// The `bytes` (of `kind`, as allocated) of `device`'s memory that another process of the
    /// job exported as `handle` ([`Backend::export`]), mapped into this process. Dropping the
    /// handle closes the import and leaves the memory to its owner. By default refused.
    fn import(
        &self,
        device: u32,
        handle: &[u8],
        bytes: usize,
        kind: MemKind,
    ) -> Result<Self::Memory> {
        let _ = (handle, kind);
        Err(crate::Error::Config(format!(
            "the {} backend cannot import {bytes} bytes of device {device}: it runs in one process",
            self.name()
        )))
    }

    /// The device address of `mem`'s first byte, as kernels see it.
    fn addr(&self, mem: &Self::Memory) -> u64;

    /// Copies `data` to byte `offset` of `mem` (host -> device).
    fn write(&self, mem: &Self::Memory, offset: usize, data: &[u8]) -> Result<()>;

    /// Copies bytes from `offset` of `mem` into `out` (device -> host).
    fn read(&self, mem: &Self::Memory, offset: usize, out: &mut [u8]) -> Result<()>;

    /// Sets `len` bytes of `mem` from `offset` to `value`.
    fn fill(&self, mem: &Self::Memory, offset: usize, len: usize, value: u8) -> Result<()>;

    /// A new stream on `device`; `affinity` spreads the streams of a world over the backend's
    /// executor (streams with equal affinity may share a worker).
    fn create_stream(&self, device: u32, affinity: usize) -> Result<Self::Stream>;

    /// Runs `task` on `stream`'s executor, next to the launches it makes (a host callback).
    /// The caller runs at most one task of a stream at a time.
    fn host_task(&self, stream: &Self::Stream, task: Box<dyn FnOnce() + Send>);

    /// Launches `kernel` with `args` on `blocks` blocks of `stream`'s device and waits for it;
    /// returns the block count it ran on. Called from a host task of `stream`. A launch of
    /// [`Blocks::Exactly`] blocks starts only when all of them can be co-resident (batch
    /// scheduling: the blocks of a collective wait on each other); one of [`Blocks::UpTo`]
    /// runs on the free cores, at least one. A block count of 0, or above the device's cores,
    /// and `args` that do not match the kernel's parameters (`Kernel::check_args`) are refused
    /// with an error.
    ///
    /// # Safety
    /// `args` must be what `kernel` expects (the backend checks their layout, not the
    /// addresses in them), and every device address among them must stay allocated, untouched
    /// by host copies that conflict with the kernel, until this returns.
    unsafe fn launch(
        &self,
        stream: &Self::Stream,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32>;

    /// The world's exec timeout (the deadline of every device-side wait): a backend whose
    /// runtime can bound a launch's time backs the kernels' own deadlines up with it. By
    /// default nothing.
    fn set_launch_deadline(&self, _exec_timeout: std::time::Duration) {}

    /// A new signal holding `value`.
    fn signal(&self, value: u64) -> Self::Signal;

    /// Stops every running launch of the world and makes later ones fail at once, each with a
    /// [`crate::FaultKind::PeerAborted`] fault carrying `reason` (the first reason given wins).
    fn abort(&self, reason: &str);

    /// Waits until no launch of the world runs (promptly after [`Backend::abort`]).
    fn wait_until_idle(&self);
}

/// Checks `args` against the parameters of `kernel` (the kernel ABI every backend shares:
/// [`ascendc_twin::Kernel`] knows each parameter's size and alignment).
pub(crate) fn check_args(kernel: &Kernel, args: &ArgBlock) -> Result<()> {
    kernel.check_args(args).map_err(twin::from_twin)
}
