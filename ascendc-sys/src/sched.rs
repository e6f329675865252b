//! The twin's block scheduler: every block of every launch is a stackful coroutine, run
//! cooperatively on a small pool of worker threads (one per host CPU).
//!
//! A host usually has far fewer cores than the simulated device (2 here against 8 ranks x 8
//! blocks). With one OS thread per block, every flag wait that is not already satisfied costs a
//! futex round trip and a trip through the kernel's scheduler; as coroutines, a block that polls
//! an unchanged flag suspends (a few nanoseconds) and is resumed by the write that changes it.
//!
//! Each block is pinned to the worker that first runs it, so code inside a block never migrates
//! between OS threads (thread-local storage of Rust and of the C++ runtime stays valid across a
//! suspension). Blocks suspend only at runtime calls (flag polls, injected delays), never while a
//! lock is held or a C++ exception is in flight.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;

use crate::padded::Padded;

use crate::device::{BlockCtx, KernelFn};
use crate::error::FaultKind;

/// Stack of one block. AscendC kernels keep their data in UB and GM, so their frames are small
/// (TPipe, tensors, locals); 1 MiB leaves room for user kernels with larger locals. Pages are
/// committed only when touched, and stacks are reused across launches. A kernel that overflows it
/// hits a guard page (the process stops with SIGSEGV).
const STACK_BYTES: usize = 1024 * 1024;

/// Why a block suspended.
pub(crate) enum Req {
    /// Run again after the other ready blocks of this worker.
    Yield,
    /// Resume when `[addr, addr + len)` is written, or at `until`. With `fresh`, the worker
    /// re-reads the range after registering and resumes at once if it no longer hashes to `hash`.
    Park {
        addr: usize,
        len: usize,
        hash: u64,
        fresh: bool,
        until: Instant,
    },
}

type Co = Coroutine<(), Req, i32, DefaultStack>;

/// What a task of the pool runs: a block of a launch, or host code (a stream's tasks).
enum Kind {
    /// A kernel block: its context and the countdown of its launch.
    Block {
        ctx: Box<BlockCtx>,
        done: Arc<Countdown>,
    },
    /// Host code; `yielder` is set by the coroutine when it starts.
    Host {
        yielder: std::cell::Cell<*const Yielder<(), Req>>,
    },
}

/// One coroutine of the pool and the worker it is pinned to.
pub(crate) struct BlockTask {
    co: Co,
    kind: Kind,
    worker: usize,
}

// SAFETY: a BlockTask is resumed only on its pinned worker thread (`worker`); between resumptions
// it is only moved (queue <-> waiter list), which touches no thread-affine state.
unsafe impl Send for BlockTask {}

/// Counts the blocks of a launch still running; the launcher waits for zero.
pub(crate) struct Countdown {
    left: HostSignal,
}

impl Countdown {
    pub fn new(n: u32) -> Arc<Countdown> {
        Arc::new(Countdown {
            left: HostSignal::new(u64::from(n)),
        })
    }

    /// Waits until every block has finished (suspends when called from a host task).
    pub fn wait(&self) {
        self.left.wait_until(None, |v| v == 0);
    }

    fn done_one(&self) {
        self.left.update(|v| v - 1);
    }
}

/// A 64-bit value that host code waits on: OS threads block on a condition variable, host
/// tasks of the pool ([`spawn_host_task`]) suspend their coroutine (parked on the value's
/// address like a block on a flag) and leave the worker free for blocks.
pub struct HostSignal {
    value: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
}

impl HostSignal {
    /// A signal holding `value`.
    pub fn new(value: u64) -> HostSignal {
        HostSignal {
            value: AtomicU64::new(value),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::SeqCst)
    }

    /// Replaces the value by `f(value)` and wakes every waiter; returns the new value.
    pub fn update(&self, f: impl FnOnce(u64) -> u64) -> u64 {
        let new = {
            let _g = self.lock.lock();
            let new = f(self.value.load(Ordering::SeqCst));
            self.value.store(new, Ordering::SeqCst);
            new
        };
        self.cv.notify_all();
        notify(self.value.as_ptr() as usize, 8);
        new
    }

    /// Waits until `ready(value)` holds (true) or `deadline` passes (false, `ready` still false).
    pub fn wait_until(&self, deadline: Option<Instant>, ready: impl Fn(u64) -> bool) -> bool {
        let host = HOST_YIELDER.with(|h| h.get());
        if host.is_null() {
            let mut g = self.lock.lock();
            loop {
                if ready(self.value.load(Ordering::SeqCst)) {
                    return true;
                }
                match deadline {
                    Some(d) => {
                        if self.cv.wait_until(&mut g, d).timed_out() {
                            return ready(self.value.load(Ordering::SeqCst));
                        }
                    }
                    None => self.cv.wait(&mut g),
                }
            }
        }
        loop {
            let v = self.value.load(Ordering::SeqCst);
            if ready(v) {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            let until = deadline.unwrap_or(now + Duration::from_secs(3600));
            let req = Req::Park {
                addr: self.value.as_ptr() as usize,
                len: 8,
                hash: crate::ffi::hash_bytes(&v.to_ne_bytes()),
                fresh: true,
                until,
            };
            // SAFETY: HOST_YIELDER is set only while this worker resumes a host task, and it is
            // that task's own yielder (we are running inside it).
            unsafe { (*host).suspend(req) };
        }
    }
}

impl std::fmt::Debug for HostSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HostSignal").field(&self.get()).finish()
    }
}

struct Worker {
    queue: Mutex<VecDeque<Box<BlockTask>>>,
    cv: Condvar,
    /// Tasks in `queue`, readable without the lock (an idle worker spins on it briefly).
    queued: AtomicUsize,
}

/// How long an idle worker spins for new work before sleeping: work usually arrives from the
/// other workers within microseconds while a collective runs, and a futex sleep and wake-up cost
/// more than that (measured: ~15% of a small collective's time went to the kernel's scheduler).
const IDLE_SPIN: Duration = Duration::from_micros(30);

struct Waiter {
    id: u64,
    addr: usize,
    len: usize,
    until: Instant,
    task: Box<BlockTask>,
    /// Counters of the GM allocation the range lies in (None: not GM, e.g. a HostSignal).
    meta: Option<Arc<crate::gm::RegionMeta>>,
}

struct Pool {
    workers: Vec<Arc<Worker>>,
}

static POOL: Padded<OnceLock<Pool>> = Padded(OnceLock::new());
static WAITERS: Padded<Mutex<Vec<Waiter>>> = Padded(Mutex::new(Vec::new()));
static PARKED: Padded<AtomicUsize> = Padded(AtomicUsize::new(0));
/// Parked host tasks (included in PARKED; the watchdog counts blocks only).
static HOST_PARKED: Padded<AtomicUsize> = Padded(AtomicUsize::new(0));
static WAITER_IDS: Padded<AtomicU64> = Padded(AtomicU64::new(0));
/// Earliest park deadline, ns since START (u64::MAX: none).
static NEXT_DEADLINE: Padded<AtomicU64> = Padded(AtomicU64::new(u64::MAX));
static START: Padded<OnceLock<Instant>> = Padded(OnceLock::new());
static STACKS: Padded<Mutex<Vec<DefaultStack>>> = Padded(Mutex::new(Vec::new()));
/// Blocks alive (started, not finished), over all devices.
pub(crate) static RUNNING: Padded<AtomicUsize> = Padded(AtomicUsize::new(0));

thread_local! {
    /// The block running on this worker right now (null between blocks).
    static CURRENT: std::cell::Cell<*mut BlockCtx> = const { std::cell::Cell::new(std::ptr::null_mut()) };
    /// Index of this worker thread (usize::MAX on other threads).
    static WORKER_INDEX: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    /// The yielder of the host task running on this worker right now (null otherwise).
    static HOST_YIELDER: std::cell::Cell<*const Yielder<(), Req>> = const { std::cell::Cell::new(std::ptr::null()) };
}

fn ns(t: Instant) -> u64 {
    t.saturating_duration_since(*START.get_or_init(Instant::now))
        .as_nanos() as u64
}

fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        START.get_or_init(Instant::now);
        let n = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(1);
        let workers: Vec<Arc<Worker>> = (0..n)
            .map(|_| {
                Arc::new(Worker {
                    queue: Mutex::new(VecDeque::new()),
                    cv: Condvar::new(),
                    queued: AtomicUsize::new(0),
                })
            })
            .collect();
        for (i, w) in workers.iter().enumerate() {
            let w = w.clone();
            std::thread::Builder::new()
                .name(format!("aiv-worker-{i}"))
                .spawn(move || worker_main(i, w))
                .expect("cannot spawn a twin worker thread");
        }
        Pool { workers }
    })
}

/// The context of the block running on this thread, if any.
pub(crate) fn current() -> *mut BlockCtx {
    CURRENT.with(|c| c.get())
}

/// Starts one block: a coroutine running `kernel(args)` with `ctx`.
///
/// Block `b` goes to worker `b % workers`: each launch spreads its blocks over all workers, and
/// in the collectives (block `i` works with peer `i`, block `r` of rank `r` does the local part)
/// the ranks' local-part blocks land on different workers, as do the peer blocks that wait for
/// them.
pub(crate) fn spawn(kernel: KernelFn, args: usize, mut ctx: Box<BlockCtx>, done: Arc<Countdown>) {
    let p = pool();
    let worker = ctx.block as usize % p.workers.len();
    let stack = take_stack();
    let ctx_ptr: *mut BlockCtx = &mut *ctx;
    let co = Co::with_stack(stack, move |y: &Yielder<(), Req>, ()| {
        // SAFETY: ctx_ptr points into the Box owned by this block's task, which outlives the
        // coroutine; only this coroutine uses `yielder`, and only while it runs.
        unsafe { (*ctx_ptr).yielder = y as *const Yielder<(), Req> };
        // SAFETY: the launcher guarantees kernel/args are valid for this launch; the trampoline
        // catches every C++ exception, so none unwinds out of the coroutine.
        unsafe { asc_twin_invoke(kernel, args as *mut u8) }
    });
    RUNNING.fetch_add(1, Ordering::SeqCst);
    push(
        worker,
        Box::new(BlockTask {
            co,
            kind: Kind::Block { ctx, done },
            worker,
        }),
    );
}

/// Runs `f` as a host task: a coroutine on worker `affinity % workers`, next to the blocks.
///
/// Host code that launches kernels and waits for them (a stream's tasks) runs here without an
/// OS thread of its own: waiting for a launch or a [`HostSignal`] suspends the coroutine instead
/// of blocking a thread, so issuing a launch and learning that it finished cost a coroutine
/// switch, not two trips through the OS scheduler. `f` must not block its thread on anything
/// that only the pool's blocks or host tasks can release (use [`HostSignal`] for that); a panic
/// in `f` is caught and printed, and ends only `f`.
pub fn spawn_host_task(affinity: usize, f: Box<dyn FnOnce() + Send>) {
    let p = pool();
    let worker = affinity % p.workers.len();
    let stack = take_stack();
    let task = Box::new(BlockTask {
        co: Co::with_stack(stack, move |y: &Yielder<(), Req>, ()| {
            HOST_YIELDER.with(|h| h.set(y as *const Yielder<(), Req>));
            // Unwinding out of the coroutine would take the worker thread down with it; the
            // panic hook has already printed the message.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
                eprintln!("aiv twin: a host task panicked and was ended");
            }
            0
        }),
        kind: Kind::Host {
            yielder: std::cell::Cell::new(std::ptr::null()),
        },
        worker,
    });
    push(worker, task);
}

/// True when called from a host task ([`spawn_host_task`]).
pub fn in_host_task() -> bool {
    !HOST_YIELDER.with(|h| h.get()).is_null()
}

fn take_stack() -> DefaultStack {
    STACKS
        .lock()
        .pop()
        .unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("cannot allocate a block stack"))
}

extern "C" {
    /// Runs a kernel for one block inside a C++ try/catch (twin_entry.cpp).
    fn asc_twin_invoke(kernel: KernelFn, args: *mut u8) -> i32;
}

fn push(worker: usize, t: Box<BlockTask>) {
    let w = &pool().workers[worker];
    {
        let mut q = w.queue.lock();
        q.push_back(t);
        w.queued.store(q.len(), Ordering::Release);
    }
    w.cv.notify_one();
}

/// Suspends the running block with `req`. Must be called from inside a block.
pub(crate) fn suspend(ctx: &BlockCtx, req: Req) {
    // SAFETY: `yielder` was set by this block's coroutine and is valid while it runs.
    unsafe { (*ctx.yielder).suspend(req) };
}

/// Index of the worker thread calling (a large number on other threads).
pub(crate) fn worker_index() -> usize {
    WORKER_INDEX.with(|w| w.get())
}

fn worker_main(index: usize, w: Arc<Worker>) {
    WORKER_INDEX.with(|w| w.set(index));
    loop {
        if ns(Instant::now()) >= NEXT_DEADLINE.load(Ordering::SeqCst) {
            wake_expired();
        }
        if w.queued.load(Ordering::Acquire) == 0 {
            let spin_until = Instant::now() + IDLE_SPIN;
            let mut i = 0u32;
            while w.queued.load(Ordering::Acquire) == 0 {
                // Yield rather than spin: a host thread waiting to run on this CPU (a launcher
                // about to learn that its launch finished) gets it at once.
                std::thread::yield_now();
                i += 1;
                if i.is_multiple_of(8) && Instant::now() >= spin_until {
                    break;
                }
            }
        }
        let task = {
            let mut q = w.queue.lock();
            if q.is_empty() {
                // Sleep until work arrives or the earliest park deadline (at most 50 ms).
                let next = NEXT_DEADLINE.load(Ordering::SeqCst);
                let now = ns(Instant::now());
                if now < next {
                    let wait = Duration::from_nanos(next - now).min(Duration::from_millis(50));
                    let _ = w.cv.wait_for(&mut q, wait);
                }
            }
            let t = q.pop_front();
            w.queued.store(q.len(), Ordering::Release);
            t
        };
        if let Some(t) = task {
            run(t);
        }
    }
}

fn run(mut t: Box<BlockTask>) {
    match &mut t.kind {
        Kind::Block { ctx, .. } => {
            let ctx_ptr: *mut BlockCtx = &mut **ctx;
            CURRENT.with(|c| c.set(ctx_ptr));
        }
        Kind::Host { yielder } => HOST_YIELDER.with(|h| h.set(yielder.get())),
    }
    let r = t.co.resume(());
    CURRENT.with(|c| c.set(std::ptr::null_mut()));
    if let Kind::Host { yielder } = &t.kind {
        // The coroutine set HOST_YIELDER when it started; keep it for the next resumption.
        yielder.set(HOST_YIELDER.with(|h| h.replace(std::ptr::null())));
    }
    match r {
        CoroutineResult::Yield(Req::Yield) => push(t.worker, t),
        CoroutineResult::Yield(Req::Park {
            addr,
            len,
            hash,
            fresh,
            until,
        }) => park(t, addr, len, hash, fresh, until),
        CoroutineResult::Return(rc) => finish(*t, rc),
    }
}

fn finish(t: BlockTask, rc: i32) {
    let BlockTask { co, kind, .. } = t;
    STACKS.lock().push(co.into_stack());
    let Kind::Block { mut ctx, done } = kind else {
        return;
    };
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    // Dirty scalar-cache lines reach GM when the kernel ends; deferred UB copies die with it.
    crate::ffi::flush_dcache(&mut ctx, None);
    crate::lazy::finish(&mut ctx.lazy);
    if let Some(r) = ctx.race.as_mut() {
        r.finish();
    }
    if rc == 2 {
        ctx.launch
            .record(ctx.block, "kernel body", FaultKind::UnknownException);
    }
    drop(ctx);
    done.done_one();
}

fn park(t: Box<BlockTask>, addr: usize, len: usize, hash: u64, fresh: bool, until: Instant) {
    let id = WAITER_IDS.fetch_add(1, Ordering::Relaxed);
    let launch = match &t.kind {
        Kind::Block { ctx, .. } => Some(ctx.launch.clone()),
        Kind::Host { .. } => None,
    };
    PARKED.fetch_add(1, Ordering::SeqCst);
    if launch.is_none() {
        HOST_PARKED.fetch_add(1, Ordering::SeqCst);
    }
    // Writers into this allocation check its count instead of the global list (see `notify`).
    let meta = crate::gm::with_region(addr, len.max(1), |m| m.clone());
    if let Some(m) = &meta {
        m.parked.fetch_add(1, Ordering::SeqCst);
    }
    {
        let mut w = WAITERS.lock();
        w.push(Waiter {
            id,
            addr,
            len: len.max(1),
            until,
            task: t,
            meta,
        });
        NEXT_DEADLINE.fetch_min(ns(until), Ordering::SeqCst);
    }
    // Pairs with the fence in `notify`: either the writer sees us registered, or we see its
    // store now.
    fence(Ordering::SeqCst);
    let changed = fresh && {
        // Polls are tracked only for small reads, so the range fits a SMALL_ACCESS buffer.
        let mut now = [0u8; crate::gm::SMALL_ACCESS];
        let len = len.min(crate::gm::SMALL_ACCESS);
        // SAFETY: the range was bounds-checked by the access that polled it.
        unsafe { crate::gm::atomic_read(now.as_mut_ptr(), addr as *const u8, len) };
        crate::ffi::hash_bytes(&now[..len]) != hash
    };
    if changed || launch.is_some_and(|l| l.aborted.load(Ordering::SeqCst)) {
        let mut w = WAITERS.lock();
        if let Some(i) = w.iter().position(|x| x.id == id) {
            let x = w.swap_remove(i);
            drop(w);
            unparked(&x);
            push(x.task.worker, x.task);
        }
    }
}

fn unparked(x: &Waiter) {
    PARKED.fetch_sub(1, Ordering::SeqCst);
    if let Kind::Host { .. } = x.task.kind {
        HOST_PARKED.fetch_sub(1, Ordering::SeqCst);
    }
    if let Some(m) = &x.meta {
        m.parked.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Resumes the blocks parked on any byte of `[addr, addr + len)`. Cheap when nobody is parked
/// there: a write into a GM allocation reads only that allocation's parked count (data buffers
/// have none), other addresses (host signals) the global one.
pub(crate) fn notify(addr: usize, len: usize) {
    // Pairs with the fence in `park`: either the parker sees this store, or this sees its count.
    fence(Ordering::SeqCst);
    match crate::gm::with_region(addr, len.max(1), |m| m.parked.load(Ordering::SeqCst)) {
        Some(0) => return,
        None if PARKED.load(Ordering::SeqCst) == 0 => return,
        _ => {}
    }
    crate::gm::WRITE_EPOCH.fetch_add(1, Ordering::Relaxed);
    let end = addr + len.max(1);
    release(|x| x.addr < end && addr < x.addr + x.len);
}

/// Resumes every parked block (abort of a launch).
pub(crate) fn wake_all() {
    release(|_| true);
}

fn release(pred: impl Fn(&Waiter) -> bool) {
    let mut woken: SmallVec<[Waiter; 8]> = SmallVec::new();
    {
        let mut w = WAITERS.lock();
        let mut i = 0;
        while i < w.len() {
            if pred(&w[i]) {
                woken.push(w.swap_remove(i));
            } else {
                i += 1;
            }
        }
    }
    for x in woken {
        unparked(&x);
        push(x.task.worker, x.task);
    }
}

/// Resumes parked blocks whose deadline has passed and sets NEXT_DEADLINE to the next one.
fn wake_expired() {
    let now = Instant::now();
    let mut next: Option<Instant> = None;
    let mut woken = Vec::new();
    {
        let mut w = WAITERS.lock();
        let mut i = 0;
        while i < w.len() {
            if w[i].until <= now {
                woken.push(w.swap_remove(i));
            } else {
                next = Some(next.map_or(w[i].until, |n| n.min(w[i].until)));
                i += 1;
            }
        }
        NEXT_DEADLINE.store(next.map_or(u64::MAX, ns), Ordering::SeqCst);
    }
    for x in woken {
        unparked(&x);
        push(x.task.worker, x.task);
    }
}

/// Blocks parked right now (host tasks not counted).
pub(crate) fn parked_count() -> usize {
    PARKED
        .load(Ordering::SeqCst)
        .saturating_sub(HOST_PARKED.load(Ordering::SeqCst))
}
