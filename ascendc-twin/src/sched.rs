//! The scheduler of one twin: every block of every launch is a stackful coroutine, run
//! cooperatively on the twin's own worker threads (one per host CPU by default).
//!
//! A host usually has far fewer cores than the simulated devices (2 here against 8 ranks x 8
//! blocks). With one OS thread per block, every flag wait that is not already satisfied costs a
//! futex round trip; as coroutines, a block that polls an unchanged flag suspends (a few
//! nanoseconds) and is resumed by the write that changes it.
//!
//! Each block is pinned to the worker that first runs it, so code inside a block never migrates
//! between OS threads (thread-local storage of Rust and of the C++ runtime stays valid across a
//! suspension). Blocks suspend only at twin calls (flag polls, injected delays, the end of a
//! time slice), never while a lock is held or a C++ exception is in flight.
//!
//! Fairness: a block that polls an unchanged value parks until it is written; any other block
//! is preempted at its next twin call once it has run for [`TIME_SLICE`] while others wait for
//! its worker. Progress (GM writes, changed reads, blocks starting and ending, host signals) is
//! counted per worker; the stall watchdog fires when live blocks exist and nothing progressed
//! for the watchdog period.
//!
//! The scheduler never dereferences a block's context: it holds the context as an opaque
//! pointer, hands it to the block's own code through [`current`] while the block runs, and gives
//! it back to the block's `finish` callback after the coroutine has returned.

use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult, Yielder};
use parking_lot::{Condvar, Mutex, MutexGuard};
use smallvec::SmallVec;

use crate::guard::{self, GuardedStack, TrapSite};
use crate::lot::{self, Lot};
use crate::meta::RegionMeta;
use crate::padded::Padded;
use crate::sync;

/// How long a block runs before it gives its worker to the others waiting for it (checked at
/// twin calls).
pub(crate) const TIME_SLICE: Duration = Duration::from_millis(2);

/// Why a coroutine suspended.
pub(crate) enum Req {
    /// Run again after the other ready tasks of this worker.
    Yield,
    /// Resume when the range is written, or at the deadline (see [`Park`]).
    Park(Park),
    /// A host task parks for the block it runs inline ([`PoolShared::run_inline`]): as `Park`,
    /// and the parked task counts as that block for aborts and the watchdog.
    ParkFor(Park, Inline),
}

/// The block a host task runs inline, as the scheduler sees it while the task is parked for it.
pub(crate) struct Inline {
    status: Arc<BlockStatus>,
    aborted: Arc<AtomicBool>,
}

/// A park request: resume when `[addr, addr + len)` is written, or at `until`. With `fresh`,
/// the worker re-reads the range after registering and resumes at once if it no longer hashes
/// to `hash`.
pub(crate) struct Park {
    pub addr: usize,
    pub len: usize,
    pub hash: u64,
    pub fresh: bool,
    pub until: Instant,
    /// Counters of the GM allocation the range lies in (None: not GM, e.g. a HostSignal).
    pub meta: Option<Arc<RegionMeta>>,
}

type Co = Coroutine<(), Req, i32, GuardedStack>;

/// What the watchdog and the fault handler know of a live block.
pub(crate) struct BlockStatus {
    /// Kernel, rank and block, for diagnostics.
    pub kernel: &'static str,
    pub rank: u32,
    pub block: u32,
    /// Nested twin-runtime calls on the block's stack (see guard.rs).
    pub depth: AtomicU32,
    /// Small GM ranges the block keeps reading unchanged (what it spins on), newest last.
    pub spinning: Mutex<SmallVec<[(usize, usize); 4]>>,
    /// The block has parked on an unchanged poll since it last read a new range or a changed
    /// value: between the parks of a poll that times out and looks again, it is still waiting
    /// on that poll (what it does meanwhile besides polling, e.g. a cross-core wait, does not
    /// clear it).
    pub poll_parked: AtomicBool,
    /// What the block waits in when it is not a GM poll (a cross-core flag, SyncAll).
    pub waits_for: Mutex<Option<String>>,
    /// The block's launch (opaque to the scheduler; the twin's stall handler knows its type).
    pub launch: Arc<dyn Any + Send + Sync>,
}

/// What a task of the pool runs: a block of a launch, or host code (a stream's tasks).
enum Kind {
    Block {
        /// The block's context, opaque here (see the module docs).
        ctx: *mut (),
        /// Called with the coroutine's return code once it has returned.
        finish: Box<dyn FnOnce(i32) + Send>,
        status: Arc<BlockStatus>,
        /// The launch's abort flag: a parked block of an aborted launch resumes at once.
        aborted: Arc<AtomicBool>,
        guard: (usize, usize),
    },
    Host {
        /// Set by the coroutine when it starts.
        yielder: Cell<*const Yielder<(), Req>>,
    },
}

struct Task {
    co: Co,
    kind: Kind,
    worker: usize,
}

// SAFETY: a Task is resumed only on its pinned worker thread (`worker`); between resumptions it
// is only moved (queue <-> waiter list), which touches no thread-affine state. The block context
// it points to is owned by the task and used only by the coroutine and the finish callback. A
// host task running a block inline holds that block's coroutine, context and finish closure on
// its own stack while suspended: they too are used only when the task is resumed, on the same
// worker.
unsafe impl Send for Task {}

/// One worker thread's run queue, and the scheduler's bookkeeping of the tasks that run on it.
///
/// Everything a launch touches on its way through the pool lives here, with the worker its
/// blocks run on, not in one place for the whole pool: the parked tasks, block stacks, running
/// and live counts. With 2 workers, a pool-wide lock or counter written by both at every launch
/// moves its cache line between the cores each time, and measured on a 2-rank 2 KiB AllGather,
/// that made every step of a launch 2-4x slower while the other worker ran than while it idled.
/// Other workers touch a worker's state to hand it work (push a task, wake a task parked
/// there) and, when idle, to serve its parked tasks' deadlines; the watchdog reads all of them.
struct Worker {
    queue: Mutex<VecDeque<Box<Task>>>,
    cv: Condvar,
    /// Tasks in `queue`, readable without the lock.
    queued: AtomicUsize,
    /// Tasks of this worker parked on a range (or a host signal).
    lot: Lot<Waiter>,
    /// Earliest deadline in `lot`, ns since the pool's start (u64::MAX: none).
    next_deadline: AtomicU64,
    /// Stacks of this worker's finished tasks, for its next ones.
    stacks: Mutex<Vec<GuardedStack>>,
    /// Blocks placed on this worker and not finished.
    running: AtomicUsize,
    /// Their statuses (for the watchdog).
    live: Mutex<Vec<Arc<BlockStatus>>>,
    /// In a job of processes: the worker sleeps on its process's bell, not on `cv` (a push
    /// then rings the bell to wake it).
    bell_sleep: AtomicBool,
}

/// How long an idle worker yields for new work before sleeping: work usually arrives from the
/// other workers within microseconds while a collective runs, and a futex sleep and wake-up cost
/// more than that (measured: ~15% of a small collective's time went to the kernel's scheduler).
const IDLE_SPIN: Duration = Duration::from_micros(30);
/// Longest sleep of an idle worker (it then checks deadlines and the watchdog).
const IDLE_SLEEP: Duration = Duration::from_millis(20);

struct Waiter {
    addr: usize,
    len: usize,
    until: Instant,
    task: Box<Task>,
    meta: Option<Arc<RegionMeta>>,
    /// The rank whose shared window holds the range, in a multi-process job (counted in its
    /// header, so that writers in other processes ring this one's bell).
    remote: Option<u32>,
    /// The block a host task is parked for ([`PoolShared::run_inline`]); a block task's own
    /// status is in its kind.
    block: Option<Arc<BlockStatus>>,
}

/// A stuck block, as the watchdog reports it.
pub(crate) struct Stuck {
    pub status: Arc<BlockStatus>,
    /// `Some((addr, len))`: parked on a poll of that range; None: running (spinning).
    pub parked_on: Option<(usize, usize)>,
}

type StallHandler = Box<dyn Fn(Vec<Stuck>, Duration) + Send + Sync>;

struct Watch {
    last_sum: u64,
    since: Instant,
}

/// State shared by the workers of one pool.
pub(crate) struct PoolShared {
    workers: Box<[Padded<Worker>]>,
    start: Instant,
    /// Progress events per worker (slot 0: other threads).
    progress: Box<[Padded<AtomicU64>]>,
    watch: Mutex<Watch>,
    /// ns since `start` of the next watchdog check.
    next_check: Padded<AtomicU64>,
    /// Watchdog period in ms (0: off).
    pub watchdog_ms: AtomicU64,
    on_stall: StallHandler,
    shutdown: AtomicBool,
    /// The job's shared GM, in a multi-process job ([`PoolShared::set_space`]).
    space: std::sync::OnceLock<Arc<crate::shared::Space>>,
}

/// A pool of worker threads and the coroutines they run.
pub(crate) struct Pool {
    shared: Arc<PoolShared>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

thread_local! {
    /// The block running on this worker right now (null between blocks).
    static CURRENT: Cell<*mut ()> = const { Cell::new(std::ptr::null_mut()) };
    /// This worker's pool and index (null on other threads).
    static WORKER: Cell<(*const PoolShared, usize)> = const { Cell::new((std::ptr::null(), 0)) };
    /// The yielder of the host task running on this worker right now (null otherwise, and
    /// while that task runs a block inline: the block is not a host task).
    static HOST_YIELDER: Cell<*const Yielder<(), Req>> = const { Cell::new(std::ptr::null()) };
}

impl Pool {
    /// A pool of `workers` threads named `aiv-<name>-<i>`; `on_stall` is called (on a worker)
    /// when the watchdog finds live blocks that made no progress for its period.
    ///
    /// With `pin: Some(first)`, worker `i` runs only on CPU `first + i` (modulo their number) of
    /// those the process's main thread may run on, where the OS lets it (Linux).
    pub fn new(
        workers: usize,
        pin: Option<usize>,
        name: &str,
        watchdog_ms: u64,
        on_stall: StallHandler,
    ) -> Pool {
        guard::install();
        let n = workers.max(1);
        let cpus = if pin.is_some() {
            allowed_cpus()
        } else {
            Vec::new()
        };
        let first = pin.unwrap_or(0);
        let now = Instant::now();
        let shared = Arc::new(PoolShared {
            workers: (0..n)
                .map(|_| {
                    Padded(Worker {
                        queue: Mutex::new(VecDeque::new()),
                        cv: Condvar::new(),
                        queued: AtomicUsize::new(0),
                        lot: Lot::new(),
                        next_deadline: AtomicU64::new(u64::MAX),
                        stacks: Mutex::new(Vec::new()),
                        running: AtomicUsize::new(0),
                        live: Mutex::new(Vec::new()),
                        bell_sleep: AtomicBool::new(false),
                    })
                })
                .collect(),
            start: now,
            progress: (0..=n).map(|_| Padded(AtomicU64::new(0))).collect(),
            watch: Mutex::new(Watch {
                last_sum: 0,
                since: now,
            }),
            next_check: Padded(AtomicU64::new(0)),
            watchdog_ms: AtomicU64::new(watchdog_ms),
            on_stall,
            shutdown: AtomicBool::new(false),
            space: std::sync::OnceLock::new(),
        });
        let threads = (0..n)
            .map(|i| {
                let s = shared.clone();
                let cpu = (!cpus.is_empty()).then(|| cpus[first.wrapping_add(i) % cpus.len()]);
                std::thread::Builder::new()
                    .name(format!("aiv-{name}-{i}"))
                    .spawn(move || {
                        if let Some(c) = cpu {
                            pin_to(c);
                        }
                        worker_main(i, s)
                    })
                    .expect("cannot spawn a twin worker thread")
            })
            .collect();
        Pool {
            shared,
            threads: Mutex::new(threads),
        }
    }

    /// The shared state (what tasks and signals refer to).
    pub fn shared(&self) -> &Arc<PoolShared> {
        &self.shared
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for w in &self.shared.workers {
            let _g = w.queue.lock();
            w.cv.notify_all();
        }
        if let Some(s) = self.shared.space.get() {
            // Workers of a job of processes sleep on the bell.
            s.ring_own();
        }
        // A worker of this pool cannot join itself (the last task's context may be dropped on
        // a worker): its threads then leave on their own once they see `shutdown`.
        let on_worker = WORKER.with(|w| std::ptr::eq(w.get().0, Arc::as_ptr(&self.shared)));
        let threads = std::mem::take(&mut *self.threads.lock());
        if !on_worker {
            for t in threads {
                let _ = t.join();
            }
        }
    }
}

impl PoolShared {
    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// Blocks started and not yet finished, over all launches of the twin.
    pub fn running_blocks(&self) -> usize {
        self.workers
            .iter()
            .map(|w| w.running.load(Ordering::Relaxed))
            .sum()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// A stack for a task that will run on `worker` (from the stacks its finished tasks left).
    fn take_stack(&self, worker: usize) -> GuardedStack {
        self.workers[worker]
            .stacks
            .lock()
            .pop()
            .unwrap_or_else(|| GuardedStack::new().unwrap_or_else(|e| stack_unavailable(e)))
    }

    /// Gives the stack of a coroutine that has run to its end back to `worker`'s pool of
    /// stacks (where [`PoolShared::take_stack`] finds it).
    fn put_stack(&self, worker: usize, co: Co) {
        self.workers[worker].stacks.lock().push(co.into_stack());
    }

    fn push(&self, worker: usize, t: Box<Task>) {
        let w = &self.workers[worker];
        {
            let mut q = w.queue.lock();
            q.push_back(t);
            w.queued.store(q.len(), Ordering::Release);
        }
        w.cv.notify_one();
        // Set before the worker's last look at its queue (under the queue's lock): either it
        // saw this task, or this sees it asleep on the bell.
        if w.bell_sleep.load(Ordering::SeqCst) {
            if let Some(s) = self.space.get() {
                s.ring_own();
            }
        }
    }

    /// Starts one block on worker `affinity % workers`: a coroutine running `body` (which gets
    /// the coroutine's yielder), with `ctx` as its [`current`] context; `finish` is called with
    /// the coroutine's return code, an `ASC_TWIN_BLOCK_*` of abi.rs (any but
    /// [`crate::abi::ASC_TWIN_BLOCK_OK`]: the kernel failed;
    /// [`crate::abi::ASC_TWIN_BLOCK_STACK_OVERFLOW`]: it overflowed its stack).
    pub fn spawn_block(
        self: &Arc<Self>,
        affinity: usize,
        ctx: *mut (),
        status: Arc<BlockStatus>,
        aborted: Arc<AtomicBool>,
        body: Box<dyn FnOnce(*const Yielder<(), Req>) -> i32>,
        finish: Box<dyn FnOnce(i32) + Send>,
    ) {
        let worker = affinity % self.workers.len();
        let stack = self.take_stack(worker);
        let guard = stack.guard();
        let co = Co::with_stack(stack, move |y: &Yielder<(), Req>, ()| body(y));
        self.block_started(worker, &status);
        self.push(
            worker,
            Box::new(Task {
                co,
                kind: Kind::Block {
                    ctx,
                    finish,
                    status,
                    aborted,
                    guard,
                },
                worker,
            }),
        );
    }

    /// The worker a block launched from here would run inline on ([`PoolShared::run_inline`]):
    /// Some(index of the calling worker) when the caller is a host task of this pool.
    pub fn inline_worker(&self) -> Option<usize> {
        let (p, i) = WORKER.with(|w| w.get());
        let host = !HOST_YIELDER.with(|h| h.get()).is_null();
        (host && std::ptr::eq(p, self)).then_some(i)
    }

    /// Runs one block as [`spawn_block`](Self::spawn_block) does, but driven by the calling
    /// host task (see [`inline_worker`](Self::inline_worker), which must have returned Some) and
    /// returning after `finish` ran.
    ///
    /// The block keeps a coroutine and stack of its own (a stack overflow ends the block, not
    /// the host task), but nothing goes through the run queue: the host task resumes the block
    /// directly and, when the block yields or parks, yields or parks in its place (parked, it
    /// counts as the block for aborts and the watchdog). A launch of one block from a stream
    /// thus costs no queue round trip at its start and no countdown wake-up at its end: a
    /// 2-rank AllGather of 64 KiB per rank took 7.20 us instead of 7.97 with it (`aiv-perf
    /// all_gather -b 128K -e 128K -p 2 -R 1`, checkers off, medians of 7 runs alternating the
    /// builds before and after commit 2dead18, whose message has the other cells).
    ///
    /// `body` and `finish` are not boxed: the coroutine keeps `body` on its own stack, and
    /// `finish` runs before this returns.
    pub fn run_inline(
        &self,
        ctx: *mut (),
        status: Arc<BlockStatus>,
        aborted: Arc<AtomicBool>,
        body: impl FnOnce(*const Yielder<(), Req>) -> i32 + 'static,
        finish: impl FnOnce(i32),
    ) {
        let worker = self
            .inline_worker()
            .expect("run_inline is called from a host task of the pool");
        let host = HOST_YIELDER.with(|h| h.get());
        // Queued, the block would have run after the worker's other ready tasks: give them the
        // worker first, or a stream launching back to back would keep it for as long as its
        // queue lasts (no short block reaches the end of a time slice).
        if self.others_waiting(worker) {
            // SAFETY: as for the suspensions below.
            unsafe { suspend(host, Req::Yield) };
        }
        let stack = self.take_stack(worker);
        let guard = stack.guard();
        let mut co = Co::with_stack(stack, move |y: &Yielder<(), Req>, ()| body(y));
        self.block_started(worker, &status);
        let rc = loop {
            // The host task's yielder is not the block's.
            HOST_YIELDER.with(|h| h.set(std::ptr::null()));
            let r = resume_block(&mut co, ctx, guard, &status.depth);
            HOST_YIELDER.with(|h| h.set(host));
            let req = match r {
                CoroutineResult::Return(rc) => break rc,
                CoroutineResult::Yield(Req::Yield) => Req::Yield,
                CoroutineResult::Yield(Req::Park(p) | Req::ParkFor(p, _)) => Req::ParkFor(
                    p,
                    Inline {
                        status: status.clone(),
                        aborted: aborted.clone(),
                    },
                ),
            };
            // SAFETY: `host` is the yielder of the host task running this code: read on entry,
            // while this task ran (`inline_worker` checked it is one), and the task stays on
            // this worker; HOST_YIELDER was restored to it above.
            unsafe { suspend(host, req) };
        };
        self.put_stack(worker, co);
        self.block_ended(worker, status, finish, rc);
    }

    /// A block placed on `worker` starts: counted as running and live (for the watchdog).
    fn block_started(&self, worker: usize, status: &Arc<BlockStatus>) {
        let w = &self.workers[worker];
        w.running.fetch_add(1, Ordering::SeqCst);
        w.live.lock().push(status.clone());
        self.progress();
    }

    /// The block of `status` on `worker` has returned `rc`: no longer running, then `finish`.
    fn block_ended(
        &self,
        worker: usize,
        status: Arc<BlockStatus>,
        finish: impl FnOnce(i32),
        rc: i32,
    ) {
        let w = &self.workers[worker];
        w.running.fetch_sub(1, Ordering::SeqCst);
        w.live.lock().retain(|s| !Arc::ptr_eq(s, &status));
        self.progress();
        drop(status);
        finish(rc);
    }

    /// Runs `f` as a host task: a coroutine on worker `affinity % workers`, next to the blocks.
    /// See [`crate::Twin::spawn_host_task`].
    pub fn spawn_host(self: &Arc<Self>, affinity: usize, f: Box<dyn FnOnce() + Send>) {
        let worker = affinity % self.workers.len();
        let stack = self.take_stack(worker);
        let co = Co::with_stack(stack, move |y: &Yielder<(), Req>, ()| {
            HOST_YIELDER.with(|h| h.set(y as *const Yielder<(), Req>));
            // Unwinding out of the coroutine would take the worker thread down with it; the
            // panic hook has already printed the message.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
                eprintln!("aiv twin: a host task panicked and was ended");
            }
            0
        });
        self.push(
            worker,
            Box::new(Task {
                co,
                kind: Kind::Host {
                    yielder: Cell::new(std::ptr::null()),
                },
                worker,
            }),
        );
    }

    /// Counts a progress event (for the watchdog) on the calling thread's slot.
    pub fn progress(&self) {
        let slot = match WORKER.with(|w| w.get()) {
            (p, i) if std::ptr::eq(p, self) => i + 1,
            _ => 0,
        };
        let c = &self.progress[slot];
        if slot == 0 {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            // The slot's only writer.
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// Resumes the tasks parked on any byte of `[addr, addr + len)`; true if it resumed any.
    /// `meta`: the counters of the GM allocation written (None: not GM).
    pub fn notify(&self, addr: usize, len: usize, meta: Option<&RegionMeta>) -> bool {
        // The writer's half of the park/notify handshake (lot.rs): either the parker sees this
        // store, or this sees its count (of the allocation and of the worker: both are counted
        // before the parker's last look).
        lot::written();
        match meta {
            Some(m) if m.parked.load(Ordering::SeqCst) == 0 => return false,
            None if self.workers.iter().all(|w| w.lot.count() == 0) => return false,
            _ => {}
        }
        let end = addr + len.max(1);
        self.release(|x| x.addr < end && addr < x.addr + x.len)
    }

    /// Resumes every task parked on a range of the job's shared GM (another process rang this
    /// one's bell: it wrote where some of them poll). Each looks again, and parks again if
    /// nothing changed for it.
    pub fn wake_remote(&self) -> bool {
        self.release(|x| x.remote.is_some())
    }

    /// Makes this pool one process of a multi-process job: its parks on shared GM are counted
    /// in the job's headers, and its watchdog counts every process's progress.
    pub fn set_space(&self, space: Arc<crate::shared::Space>) {
        let _ = self.space.set(space);
    }

    /// Resumes every parked task (an abort).
    pub fn wake_all(&self) {
        self.release(|_| true);
    }

    /// Resumes the tasks `pred` picks, on every worker that has parked tasks.
    fn release(&self, pred: impl Fn(&Waiter) -> bool) -> bool {
        // A task parking on a worker counts itself before its last look at the value (see
        // `park`), so a worker counted empty here has nothing this write must wake.
        lot::release(self.workers.iter().map(|w| &w.lot), pred, |_, x| {
            self.unparked(&x);
            self.push(x.task.worker, x.task);
        })
    }

    /// `x`, taken out of its worker's lot, is no longer parked.
    fn unparked(&self, x: &Waiter) {
        if let Some(m) = &x.meta {
            m.parked.fetch_sub(1, Ordering::SeqCst);
        }
        if let (Some(p), Some(s)) = (x.remote, self.space.get()) {
            s.unpark(p, x.addr, x.len);
        }
    }

    /// Parks `t` on `req`; `inline`: the block a host task parks for.
    fn park(&self, t: Box<Task>, req: Park, inline: Option<Inline>) {
        let Park {
            addr,
            len,
            hash,
            fresh,
            until,
            meta,
        } = req;
        let (aborted, block) = match (&t.kind, inline) {
            (Kind::Block { aborted, .. }, _) => (Some(aborted.clone()), None),
            (Kind::Host { .. }, Some(Inline { status, aborted })) => (Some(aborted), Some(status)),
            (Kind::Host { .. }, None) => (None, None),
        };
        // A task parks with the worker it runs on (this thread). Counted in its allocation
        // (and a job's shared window) before the worker's lot counts it, hence before its last
        // look at the value (see `notify`).
        let w = &self.workers[t.worker];
        if let Some(m) = &meta {
            m.parked.fetch_add(1, Ordering::SeqCst);
        }
        let remote = self.space.get().and_then(|s| s.park(addr, len));
        let waiter = Waiter {
            addr,
            len: len.max(1),
            until,
            task: t,
            meta,
            remote,
            block,
        };
        let registered = |_: &Waiter| {
            // The deadline changes only under the lot's lock (`wake_expired` takes it too): no
            // read-modify-write when it is not earlier.
            let ns = self.ns(until);
            if ns < w.next_deadline.load(Ordering::SeqCst) {
                w.next_deadline.store(ns, Ordering::SeqCst);
            }
        };
        let changed = || {
            let changed = fresh && {
                // Polls are tracked only for small reads, so the range fits a SMALL_ACCESS
                // buffer.
                let mut now = [0u8; crate::mem::SMALL_ACCESS];
                let len = len.min(crate::mem::SMALL_ACCESS);
                // SAFETY: the range was bounds-checked by the access that polled it and stays
                // allocated while its poller is parked (the poller's launch holds its buffers).
                unsafe { crate::mem::atomic_read(now.as_mut_ptr(), addr as *const u8, len) };
                crate::poll::hash_bytes(&now[..len]) != hash
            };
            changed || aborted.is_some_and(|a| a.load(Ordering::SeqCst))
        };
        if let Some(x) = w.lot.park(waiter, registered, changed) {
            self.unparked(&x);
            self.push(x.task.worker, x.task);
        }
    }

    /// Resumes the tasks parked on `worker` whose deadline has passed and sets its
    /// `next_deadline` to the next one.
    fn wake_expired(&self, worker: usize) {
        let now = Instant::now();
        let next: Cell<Option<Instant>> = Cell::new(None);
        let w = &self.workers[worker];
        w.lot.take_then(
            |x| {
                if x.until <= now {
                    return true;
                }
                next.set(Some(next.get().map_or(x.until, |n| n.min(x.until))));
                false
            },
            || {
                w.next_deadline.store(
                    next.get().map_or(u64::MAX, |t| self.ns(t)),
                    Ordering::SeqCst,
                )
            },
            |x| {
                self.unparked(&x);
                self.push(x.task.worker, x.task);
            },
        );
    }

    /// Resumes the tasks parked on `worker` whose deadline has passed, if any has.
    pub fn serve_deadlines(&self, worker: usize) {
        if self.ns(Instant::now()) >= self.workers[worker].next_deadline.load(Ordering::SeqCst) {
            self.wake_expired(worker);
        }
    }

    /// The earliest park deadline of any worker, ns since `start` (u64::MAX: none).
    fn earliest_deadline(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| w.next_deadline.load(Ordering::SeqCst))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// True when another task waits for the calling worker.
    pub fn others_waiting(&self, worker: usize) -> bool {
        self.workers[worker].queued.load(Ordering::Relaxed) > 0
    }

    /// Runs the watchdog if a check is due: live blocks that made no progress for the period
    /// are handed to the stall handler.
    pub fn check_stall(&self) {
        let now = Instant::now();
        let t = self.ns(now);
        if t < self.next_check.load(Ordering::Relaxed) {
            return;
        }
        self.next_check.store(t + 5_000_000, Ordering::Relaxed);
        let ms = self.watchdog_ms.load(Ordering::Relaxed);
        let mut sum: u64 = self
            .progress
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        if let Some(s) = self.space.get() {
            // A stall is one of the whole job: a block waiting for a peer that progresses is
            // not stuck.
            sum = s.job_progress(sum);
        }
        let mut w = self.watch.lock();
        if sum != w.last_sum || self.running_blocks() == 0 || ms == 0 {
            w.last_sum = sum;
            w.since = now;
            return;
        }
        let stalled_for = now.saturating_duration_since(w.since);
        if stalled_for < Duration::from_millis(ms) {
            return;
        }
        // Report once per stall: the handler aborts the stuck launches, whose ends count as
        // progress.
        w.since = now;
        drop(w);
        let parked: Vec<(*const BlockStatus, usize, usize)> = self
            .workers
            .iter()
            .flat_map(|w| {
                let mut parked = Vec::new();
                w.lot.for_each(|x| {
                    let status = match (&x.task.kind, &x.block) {
                        (Kind::Block { status, .. }, _) | (Kind::Host { .. }, Some(status)) => {
                            status
                        }
                        (Kind::Host { .. }, None) => return,
                    };
                    parked.push((Arc::as_ptr(status), x.addr, x.len));
                });
                parked
            })
            .collect();
        let live: Vec<Arc<BlockStatus>> = self
            .workers
            .iter()
            .flat_map(|w| w.live.lock().clone())
            .collect();
        // A block parked on a poll that has just timed out looks again before it parks again:
        // if it has parked on that one range since its last progress, it is still parked on it.
        let reparking = |s: &BlockStatus| {
            let ranges = s.spinning.lock();
            (s.poll_parked.load(Ordering::SeqCst) && ranges.len() == 1).then(|| ranges[0])
        };
        let stuck: Vec<Stuck> = live
            .iter()
            .map(|s| Stuck {
                status: s.clone(),
                parked_on: parked
                    .iter()
                    .find(|(p, _, _)| std::ptr::eq(*p, Arc::as_ptr(s)))
                    .map(|&(_, a, l)| (a, l))
                    .or_else(|| reparking(s)),
            })
            .collect();
        (self.on_stall)(stuck, stalled_for);
    }
}

/// The CPUs the process's main thread may run on, in ascending order (empty if unknown): not the
/// calling thread's, which may be a pinned worker of another twin.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: getpid() names the main thread; the size is the set's.
    let r = unsafe {
        libc::sched_getaffinity(
            libc::getpid(),
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if r != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` is initialised and `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Restricts the calling thread to CPU `cpu` (best effort: a refusal leaves it unpinned).
#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, `cpu` came from the allowed set (below
    // CPU_SETSIZE), and pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) {}

/// A coroutine stack could not be mapped (address space or `vm.max_map_count` exhausted). As a
/// failed allocation does in Rust, this ends the process: a panic here would unwind out of a
/// launch that has already queued some of its blocks, freeing the argument block and contexts
/// they still use.
#[cold]
fn stack_unavailable(e: std::io::Error) -> ! {
    eprintln!("aiv twin: cannot map a coroutine stack ({e}); aborting");
    std::process::abort()
}

/// The context of the block running on this thread (null outside blocks).
pub(crate) fn current() -> *mut () {
    CURRENT.with(|c| c.get())
}

/// The calling worker's pool and index, if this thread is a worker.
pub(crate) fn worker() -> Option<(*const PoolShared, usize)> {
    let (p, i) = WORKER.with(|w| w.get());
    (!p.is_null()).then_some((p, i))
}

/// Suspends the running coroutine with `req`.
///
/// # Safety
/// `yielder` must be the yielder of the coroutine running on this thread.
pub(crate) unsafe fn suspend(yielder: *const Yielder<(), Req>, req: Req) {
    // SAFETY: forwarded from the caller.
    unsafe { (*yielder).suspend(req) };
}

/// True when called from a host task of any twin.
pub fn in_host_task() -> bool {
    !HOST_YIELDER.with(|h| h.get()).is_null()
}

extern "C" {
    /// Runs a kernel for one block inside a C++ try/catch (twin_entry.cpp); returns an
    /// `ASC_TWIN_BLOCK_*` code (asc_twin_abi.h, mirrored in abi.rs).
    pub(crate) fn asc_twin_invoke(kernel: crate::device::KernelFn, args: *mut u8) -> i32;
}

fn worker_main(index: usize, p: Arc<PoolShared>) {
    WORKER.with(|w| w.set((Arc::as_ptr(&p), index)));
    let _alt = guard::AltStack::new();
    let w = &p.workers[index];
    // In a job of processes: the bell of this process as this worker last served it (set at
    // the first look after the twin joined its space, before any task of it can park).
    let mut bell_seen: Option<u32> = None;
    loop {
        p.serve_deadlines(index);
        if let Some(s) = p.space.get() {
            // Another process wrote where tasks here may be parked: they look again.
            let now = s.bell();
            if bell_seen.is_some_and(|seen| seen != now) {
                p.wake_remote();
            }
            bell_seen = Some(now);
        }
        if w.queued.load(Ordering::Acquire) == 0 {
            let spin_until = Instant::now() + IDLE_SPIN;
            let mut i = 0u32;
            // In a job of processes, another process's write rings this one's bell: an idle
            // worker that sees it goes back to the top of the loop, which serves it.
            while w.queued.load(Ordering::Acquire) == 0 {
                // Yield rather than spin: a host thread waiting to run on this CPU (a launcher
                // about to learn that its launch finished) gets it at once.
                std::thread::yield_now();
                if let (Some(s), Some(seen)) = (p.space.get(), bell_seen) {
                    if s.bell() != seen {
                        break;
                    }
                }
                i += 1;
                if i.is_multiple_of(8) && Instant::now() >= spin_until {
                    break;
                }
            }
        }
        let task = {
            let mut q = w.queue.lock();
            if q.is_empty() {
                if p.shutdown.load(Ordering::SeqCst) {
                    break;
                }
                // Sleep until work arrives or the earliest park deadline of any worker.
                let next = p.earliest_deadline();
                let now = p.ns(Instant::now());
                if now < next {
                    let wait = Duration::from_nanos(next - now).min(IDLE_SLEEP);
                    match p.space.get() {
                        // In a job of processes the worker sleeps on its process's bell: a
                        // write of another process wakes it directly (pushes ring it too).
                        Some(s) => {
                            w.bell_sleep.store(true, Ordering::SeqCst);
                            // The value last served: a ring since then ends the wait at once
                            // (the loop serves it).
                            let seen = bell_seen.unwrap_or_else(|| s.bell());
                            MutexGuard::unlocked(&mut q, || {
                                s.wait_bell(seen, wait);
                                w.bell_sleep.store(false, Ordering::SeqCst);
                            });
                        }
                        None => {
                            let _ = w.cv.wait_for(&mut q, wait);
                        }
                    }
                }
            }
            let t = q.pop_front();
            w.queued.store(q.len(), Ordering::Release);
            t
        };
        match task {
            Some(t) => run(&p, t),
            None => {
                // Idle: let the watchdog look (before waking anything below: a task woken at
                // its deadline is back in a queue for a moment, and would look like a spinning
                // block rather than a parked one), then serve the other workers' deadlines too,
                // in case one of them is busy with a block that runs without yielding (the woken
                // task then waits in its queue, and that block gives way at the end of its time
                // slice).
                p.check_stall();
                for j in 0..p.workers.len() {
                    p.serve_deadlines(j);
                }
            }
        }
    }
    WORKER.with(|w| w.set((std::ptr::null(), 0)));
}

/// Resumes a block's coroutine `co` until it suspends or returns, with `ctx` as the
/// [`current`] context and its stack's guard region `guard` armed for overflows (`depth`: the
/// block's runtime-call depth); both are cleared again afterwards.
fn resume_block(
    co: &mut Co,
    ctx: *mut (),
    guard: (usize, usize),
    depth: &AtomicU32,
) -> CoroutineResult<Req, i32> {
    CURRENT.with(|c| c.set(ctx));
    guard::set_site(Some(TrapSite {
        handler: co.trap_handler(),
        guard,
        depth,
    }));
    let r = co.resume(());
    CURRENT.with(|c| c.set(std::ptr::null_mut()));
    guard::set_site(None);
    r
}

fn run(p: &Arc<PoolShared>, mut t: Box<Task>) {
    let Task { co, kind, .. } = &mut *t;
    let r = match kind {
        Kind::Block {
            ctx, status, guard, ..
        } => resume_block(co, *ctx, *guard, &status.depth),
        Kind::Host { yielder } => {
            HOST_YIELDER.with(|h| h.set(yielder.get()));
            let r = co.resume(());
            // The coroutine set HOST_YIELDER when it started; keep it for the next resumption.
            yielder.set(HOST_YIELDER.with(|h| h.replace(std::ptr::null())));
            r
        }
    };
    match r {
        CoroutineResult::Yield(Req::Yield) => p.push(t.worker, t),
        CoroutineResult::Yield(Req::Park(req)) => p.park(t, req, None),
        CoroutineResult::Yield(Req::ParkFor(req, inline)) => p.park(t, req, Some(inline)),
        CoroutineResult::Return(rc) => finish(p, *t, rc),
    }
}

fn finish(p: &PoolShared, t: Task, rc: i32) {
    let Task { co, kind, worker } = t;
    p.put_stack(worker, co);
    if let Kind::Block { finish, status, .. } = kind {
        p.block_ended(worker, status, finish, rc);
    }
}

/// A 64-bit value that host code waits on: OS threads block on a condition variable, host
/// tasks of a twin's pool ([`crate::Twin::spawn_host_task`]) suspend their coroutine (parked on
/// the value's address like a block on a flag) and leave the worker free for blocks.
///
/// Its handshakes (an update against a thread's wait, and against a host task's park) run under
/// loom in the tests at the end of this file, with the atomics and locks of `sync.rs`.
pub struct HostSignal {
    value: sync::AtomicU64,
    lock: sync::Mutex<()>,
    cv: sync::Condvar,
    /// Pools with host tasks parked on this signal: an update wakes them there.
    pools: Mutex<SmallVec<[Weak<PoolShared>; 2]>>,
    /// Host tasks parked on this signal now (or about to park): an update with none skips the
    /// pools (whose wake-up looks through their parked tasks, on every worker that has some).
    parked: sync::AtomicUsize,
}

impl HostSignal {
    /// A signal holding `value`.
    pub fn new(value: u64) -> HostSignal {
        HostSignal {
            value: sync::AtomicU64::new(value),
            lock: sync::Mutex::new(()),
            cv: sync::Condvar::new(),
            pools: Mutex::new(SmallVec::new()),
            parked: sync::AtomicUsize::new(0),
        }
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.value.load(sync::Ordering::SeqCst)
    }

    /// Replaces the value by `f(value)` and wakes every waiter; returns the new value.
    pub fn update(&self, f: impl FnOnce(u64) -> u64) -> u64 {
        let new = self.set(f);
        if self.tasks_parked() {
            self.wake_pools();
        }
        new
    }

    /// Replaces the value by `f(value)` and wakes the threads waiting for it; returns the new
    /// value.
    fn set(&self, f: impl FnOnce(u64) -> u64) -> u64 {
        let new = {
            // Under the lock that a waiting thread holds from its look at the value until it
            // waits: the notification below cannot fall between the two.
            let _g = self.lock.lock();
            let new = f(self.value.load(sync::Ordering::SeqCst));
            self.value.store(new, sync::Ordering::SeqCst);
            new
        };
        self.cv.notify_all();
        new
    }

    /// After [`HostSignal::set`]: true if host tasks may be parked on the signal (its pools
    /// must then look for them).
    fn tasks_parked(&self) -> bool {
        // Pairs with the park of `wait_parked`: a host task counts itself before the worker's
        // last look at the value (after which it parks), so either it is counted here, or that
        // look sees the new value and it does not stay parked.
        sync::fence(sync::Ordering::SeqCst);
        self.parked.load(sync::Ordering::SeqCst) != 0
    }

    /// Resumes the host tasks parked on the signal, in every pool they park in.
    fn wake_pools(&self) {
        // The pool of the calling worker is alive while it runs (its thread holds an Arc), so
        // it is used without upgrading its Weak: the upgrade's reference count is a cache line
        // every worker would write at every launch's end. Other pools are upgraded.
        let own = worker().map_or(std::ptr::null(), |(p, _)| p);
        let mut wake_own = false;
        let others: SmallVec<[Arc<PoolShared>; 2]> = self
            .pools
            .lock()
            .iter()
            .filter_map(|w| {
                if std::ptr::eq(w.as_ptr(), own) {
                    wake_own = true;
                    None
                } else {
                    w.upgrade()
                }
            })
            .collect();
        let addr = sync::addr_of(&self.value);
        if wake_own {
            // SAFETY: `own` is the pool of the worker running this code, which holds an Arc to
            // it for as long as it runs.
            let p = unsafe { &*own };
            if p.notify(addr, 8, None) {
                p.progress();
            }
        }
        for p in others {
            if p.notify(addr, 8, None) {
                p.progress();
            }
        }
    }

    /// Waits until `ready(value)` holds (true) or `deadline` passes (false, `ready` still false).
    pub fn wait_until(&self, deadline: Option<Instant>, ready: impl Fn(u64) -> bool) -> bool {
        let host = HOST_YIELDER.with(|h| h.get());
        if host.is_null() {
            return self.wait_blocking(deadline, ready);
        }
        // Already there (e.g. a launch whose blocks all ended before it waited): no
        // registration.
        if ready(self.get()) {
            return true;
        }
        self.register_pool();
        // SAFETY: HOST_YIELDER is set only while this worker resumes a host task, and it is
        // that task's own yielder (we are running inside it).
        self.wait_parked(deadline, ready, |req| unsafe {
            suspend(host, Req::Park(req))
        })
    }

    /// [`HostSignal::wait_until`] of an OS thread: blocks on the condition variable.
    fn wait_blocking(&self, deadline: Option<Instant>, ready: impl Fn(u64) -> bool) -> bool {
        let mut g = self.lock.lock();
        loop {
            if ready(self.get()) {
                return true;
            }
            match deadline {
                Some(d) => {
                    if self.cv.wait_until(&mut g, d).timed_out() {
                        return ready(self.get());
                    }
                }
                None => self.cv.wait(&mut g),
            }
        }
    }

    /// [`HostSignal::wait_until`] of a host task: `park` suspends it with a park request on the
    /// value (the worker parks it, see [`PoolShared::park`]), and returns once it is resumed.
    fn wait_parked(
        &self,
        deadline: Option<Instant>,
        ready: impl Fn(u64) -> bool,
        mut park: impl FnMut(Park),
    ) -> bool {
        loop {
            let v = self.get();
            if ready(v) {
                return true;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return false;
            }
            let until = deadline.unwrap_or(now + Duration::from_secs(3600));
            let req = Park {
                addr: sync::addr_of(&self.value),
                len: 8,
                hash: crate::poll::hash_bytes(&v.to_ne_bytes()),
                fresh: true,
                until,
                meta: None,
            };
            // Counted before the park re-reads the value (see `tasks_parked`).
            self.parked.fetch_add(1, sync::Ordering::SeqCst);
            park(req);
            self.parked.fetch_sub(1, sync::Ordering::SeqCst);
        }
    }

    /// Records the calling worker's pool among those to wake on update.
    fn register_pool(&self) {
        let Some((p, _)) = worker() else {
            return;
        };
        let mut pools = self.pools.lock();
        pools.retain(|w| w.strong_count() > 0);
        if !pools.iter().any(|w| std::ptr::eq(w.as_ptr(), p)) {
            // SAFETY: `p` is the pool of the worker running this code; the worker holds an Arc
            // to it for as long as it runs, so the pointer is live and came from an Arc.
            let arc = unsafe {
                Arc::increment_strong_count(p);
                Arc::from_raw(p)
            };
            pools.push(Arc::downgrade(&arc));
        }
    }
}

impl std::fmt::Debug for HostSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HostSignal").field(&self.get()).finish()
    }
}

/// Counts the queued blocks of a launch still running; the launcher waits for zero (a block run
/// inline has ended when its launch waits, and needs none).
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

    pub fn done_one(&self) {
        self.left.update(|v| v - 1);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use loom::sync::Arc;
    use loom::thread;

    use super::*;
    use crate::lot::task::Task;

    /// An OS thread waits for a value another thread sets: it always wakes (loom reports a
    /// deadlock if the notification is lost) and sees it.
    #[test]
    fn loom_host_signal_wakes_a_waiting_thread() {
        loom::model(|| {
            let s = Arc::new(HostSignal::new(0));
            let s2 = s.clone();
            let setter = thread::spawn(move || s2.update(|v| v + 1));
            assert!(s.wait_until(None, |v| v == 1));
            assert_eq!(setter.join().unwrap(), 1);
        });
    }

    /// A host task waits for a value another thread sets: the task's half is the real
    /// `wait_parked` with its park suspending into a worker's lot as `PoolShared::park` does
    /// (the value re-read under its `changed`), the setter's the real `set` and
    /// `tasks_parked`, then the pool's wake-up (`PoolShared::notify` of the signal's address:
    /// `lot::written`, then `lot::release`). The task is always resumed, and sees the value.
    #[test]
    fn loom_host_signal_resumes_a_parked_host_task() {
        loom::model(|| {
            let s = Arc::new(HostSignal::new(0));
            let lots: Arc<[Lot<Task>; 1]> = Arc::new([Lot::new()]);
            let (s2, l2) = (s.clone(), lots.clone());
            let setter = thread::spawn(move || {
                let new = s2.set(|v| v + 1);
                if s2.tasks_parked() {
                    lot::written();
                    lot::release(l2.iter(), |_| true, |_, t| t.resume());
                }
                new
            });
            let ok = s.wait_parked(
                None,
                |v| v == 1,
                |req| {
                    let me = Task::default();
                    let changed = || crate::poll::hash_bytes(&s.get().to_ne_bytes()) != req.hash;
                    if lots[0].park(me.clone(), |_| (), changed).is_none() {
                        me.wait();
                    }
                },
            );
            assert!(ok);
            assert_eq!(setter.join().unwrap(), 1);
            assert_eq!(s.get(), 1);
        });
    }
}
