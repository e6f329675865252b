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

/// One block: its coroutine and context.
pub(crate) struct BlockTask {
    co: Co,
    ctx: Box<BlockCtx>,
    worker: usize,
    done: Arc<Countdown>,
}

// SAFETY: a BlockTask is resumed only on its pinned worker thread (`worker`); between resumptions
// it is only moved (queue <-> waiter list), which touches no thread-affine state.
unsafe impl Send for BlockTask {}

/// Counts the blocks of a launch still running; the launcher waits for zero.
pub(crate) struct Countdown {
    left: Mutex<u32>,
    cv: Condvar,
}

impl Countdown {
    pub fn new(n: u32) -> Arc<Countdown> {
        Arc::new(Countdown {
            left: Mutex::new(n),
            cv: Condvar::new(),
        })
    }

    pub fn wait(&self) {
        let mut l = self.left.lock();
        while *l > 0 {
            self.cv.wait(&mut l);
        }
    }

    fn done_one(&self) {
        let mut l = self.left.lock();
        *l -= 1;
        if *l == 0 {
            self.cv.notify_all();
        }
    }
}

struct Worker {
    queue: Mutex<VecDeque<Box<BlockTask>>>,
    cv: Condvar,
}

struct Waiter {
    id: u64,
    addr: usize,
    len: usize,
    until: Instant,
    task: Box<BlockTask>,
}

struct Pool {
    workers: Vec<Arc<Worker>>,
}

static POOL: OnceLock<Pool> = OnceLock::new();
static WAITERS: Mutex<Vec<Waiter>> = Mutex::new(Vec::new());
static PARKED: AtomicUsize = AtomicUsize::new(0);
static WAITER_IDS: AtomicU64 = AtomicU64::new(0);
/// Earliest park deadline, ns since START (u64::MAX: none).
static NEXT_DEADLINE: AtomicU64 = AtomicU64::new(u64::MAX);
static START: OnceLock<Instant> = OnceLock::new();
static STACKS: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
/// Blocks alive (started, not finished), over all devices.
pub(crate) static RUNNING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The block running on this worker right now (null between blocks).
    static CURRENT: std::cell::Cell<*mut BlockCtx> = const { std::cell::Cell::new(std::ptr::null_mut()) };
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
    let stack = STACKS
        .lock()
        .pop()
        .unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("cannot allocate a block stack"));
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
            ctx,
            worker,
            done,
        }),
    );
}

extern "C" {
    /// Runs a kernel for one block inside a C++ try/catch (twin_entry.cpp).
    fn asc_twin_invoke(kernel: KernelFn, args: *mut u8) -> i32;
}

fn push(worker: usize, t: Box<BlockTask>) {
    let w = &pool().workers[worker];
    w.queue.lock().push_back(t);
    w.cv.notify_one();
}

/// Suspends the running block with `req`. Must be called from inside a block.
pub(crate) fn suspend(ctx: &BlockCtx, req: Req) {
    // SAFETY: `yielder` was set by this block's coroutine and is valid while it runs.
    unsafe { (*ctx.yielder).suspend(req) };
}

fn worker_main(index: usize, w: Arc<Worker>) {
    loop {
        if ns(Instant::now()) >= NEXT_DEADLINE.load(Ordering::Relaxed) {
            wake_expired();
        }
        let task = {
            let mut q = w.queue.lock();
            match q.pop_front() {
                Some(t) => Some(t),
                None => {
                    drop(q);
                    let next = wake_expired();
                    let mut q = w.queue.lock();
                    if q.is_empty() {
                        let wait = next
                            .map(|d| d.saturating_duration_since(Instant::now()))
                            .unwrap_or(Duration::from_millis(50))
                            .min(Duration::from_millis(50));
                        let _ = w.cv.wait_for(&mut q, wait);
                    }
                    q.pop_front()
                }
            }
        };
        if let Some(t) = task {
            run(index, t);
        }
    }
}

fn run(index: usize, mut t: Box<BlockTask>) {
    let ctx_ptr: *mut BlockCtx = &mut *t.ctx;
    CURRENT.with(|c| c.set(ctx_ptr));
    let r = t.co.resume(());
    CURRENT.with(|c| c.set(std::ptr::null_mut()));
    match r {
        CoroutineResult::Yield(Req::Yield) => push(index, t),
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

fn finish(mut t: BlockTask, rc: i32) {
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    // Dirty scalar-cache lines reach GM when the kernel ends.
    crate::ffi::flush_dcache(&mut t.ctx, None);
    if let Some(r) = t.ctx.race.as_ref() {
        r.finish();
    }
    if rc == 2 {
        t.ctx
            .launch
            .record(t.ctx.block, "kernel body", FaultKind::UnknownException);
    }
    let BlockTask { co, done, .. } = t;
    STACKS.lock().push(co.into_stack());
    done.done_one();
}

fn park(t: Box<BlockTask>, addr: usize, len: usize, hash: u64, fresh: bool, until: Instant) {
    let id = WAITER_IDS.fetch_add(1, Ordering::Relaxed);
    let launch = t.ctx.launch.clone();
    PARKED.fetch_add(1, Ordering::SeqCst);
    {
        let mut w = WAITERS.lock();
        w.push(Waiter {
            id,
            addr,
            len: len.max(1),
            until,
            task: t,
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
    if changed || launch.aborted.load(Ordering::SeqCst) {
        let mut w = WAITERS.lock();
        if let Some(i) = w.iter().position(|x| x.id == id) {
            let x = w.swap_remove(i);
            PARKED.fetch_sub(1, Ordering::SeqCst);
            drop(w);
            push(x.task.worker, x.task);
        }
    }
}

/// Resumes the blocks parked on any byte of `[addr, addr + len)`. Cheap when nobody is parked.
pub(crate) fn notify(addr: usize, len: usize) {
    fence(Ordering::SeqCst);
    if PARKED.load(Ordering::SeqCst) == 0 {
        return;
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
    let mut woken = Vec::new();
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
        PARKED.fetch_sub(1, Ordering::SeqCst);
        push(x.task.worker, x.task);
    }
}

/// Resumes parked blocks whose deadline has passed; returns the next deadline.
fn wake_expired() -> Option<Instant> {
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
        PARKED.fetch_sub(1, Ordering::SeqCst);
        push(x.task.worker, x.task);
    }
    next
}

/// Blocks parked right now.
pub(crate) fn parked_count() -> usize {
    PARKED.load(Ordering::SeqCst)
}
