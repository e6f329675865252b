//! The queue protocol of a stream (`stream.rs`): ops run one after another, in the order they
//! were enqueued, by at most one draining task at a time; threads wait for a position in the
//! queue; after an op fails every later op is dropped unrun until the error is cleared; a
//! cancellation drops the queued ops and every later one for good.
//!
//! What an op is, how it runs, how it is dropped unrun ([`Item`]) and how a draining task is
//! started (the closure given to [`OpQueue::enqueue`]) are the caller's: the stream's ops run
//! as host tasks of its backend stream, and the loom tests at the end of this file drive the
//! same code with tiny ops and threads through every interleaving
//! (`RUSTFLAGS="--cfg loom" cargo test -p aiv-comm --release --lib loom_`).

use std::collections::VecDeque;
use std::sync::Arc;

use self::sync::{Condvar, Mutex, MutexGuard};
use crate::error::Error;

/// An op as the queue sees it: run once, or dropped unrun once, never both.
pub(crate) trait Item {
    /// Runs the op; returns its error if it failed (the queue then drops every later op until
    /// [`OpQueue::clear_error`]).
    fn run(self) -> Option<Arc<Error>>;

    /// Drops the op unrun because of `cause` (the queue's error, or its cancellation).
    fn drop_unrun(self, cause: &Arc<Error>);
}

struct State<T> {
    /// Queued ops with their positions (the `next` at their enqueue).
    queue: VecDeque<(u64, T)>,
    /// Position of the next op enqueued (ops are numbered from 0 in enqueue order).
    next: u64,
    /// Position of the op running now.
    running: Option<u64>,
    /// A task is draining `queue` (at most one at a time, so ops run in order).
    draining: bool,
    /// The first error, kept until [`OpQueue::clear_error`]: every op after it is dropped
    /// unrun.
    error: Option<Arc<Error>>,
    /// Cancelled for good, with this error: every op from now on is dropped unrun, whatever
    /// [`OpQueue::clear_error`] clears.
    cancelled: Option<Arc<Error>>,
    /// The smallest position a waiting thread waits to be reached (`first_pending() >= it`):
    /// a finished op wakes the waiters only once that holds, not at every op (a thread woken
    /// per op steals a core from the twin's workers).
    wake_at: Option<u64>,
}

impl<T> State<T> {
    /// Why the queue drops its ops, if it does: its error, else its cancellation.
    fn failure(&self) -> Option<&Arc<Error>> {
        self.error.as_ref().or(self.cancelled.as_ref())
    }

    /// Position of the first op not finished (`next` when none is pending).
    fn first_pending(&self) -> u64 {
        self.running
            .or(self.queue.front().map(|(p, _)| *p))
            .unwrap_or(self.next)
    }
}

/// An in-order queue of ops of type `T` and its waiters.
pub(crate) struct OpQueue<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
}

impl<T: Item> OpQueue<T> {
    /// An empty queue.
    pub fn new() -> OpQueue<T> {
        OpQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                next: 0,
                running: None,
                draining: false,
                error: None,
                cancelled: None,
                wake_at: None,
            }),
            cv: Condvar::new(),
        }
    }

    /// Queues `item` behind everything enqueued before it; if no task drains the queue,
    /// `start` is called (outside the lock) to start one, which must call
    /// [`OpQueue::drain`]. A cancelled queue drops `item` unrun at once instead.
    pub fn enqueue(self: &Arc<Self>, item: T, start: impl FnOnce(Arc<Self>)) {
        let start_one = {
            let mut st = self.state.lock();
            if let Some(e) = st.cancelled.clone() {
                drop(st);
                item.drop_unrun(&e);
                return;
            }
            let pos = st.next;
            st.next += 1;
            st.queue.push_back((pos, item));
            !std::mem::replace(&mut st.draining, true)
        };
        if start_one {
            start(self.clone());
        }
    }

    /// Runs the queued ops until the queue is empty (the draining task's body): each is run,
    /// or dropped unrun if the queue has failed; its end is seen (`running` cleared, waiters
    /// woken) only after it is run or dropped, and whatever it held is gone.
    pub fn drain(&self) {
        loop {
            let (item, skip) = {
                let mut st = self.state.lock();
                match st.queue.pop_front() {
                    Some((pos, item)) => {
                        st.running = Some(pos);
                        let skip = st.failure().cloned();
                        (item, skip)
                    }
                    None => {
                        st.draining = false;
                        return;
                    }
                }
            };
            let failed = match skip {
                Some(cause) => {
                    item.drop_unrun(&cause);
                    None
                }
                None => item.run(),
            };
            let mut st = self.state.lock();
            if let Some(e) = failed {
                st.error.get_or_insert(e);
            }
            st.running = None;
            self.wake(&mut st);
        }
    }

    /// Waits until every op enqueued before this call has run (or was dropped); returns the
    /// queue's error (or the error it was cancelled with), if it has one (kept: every later
    /// call returns it too).
    pub fn synchronize(&self) -> Result<(), Arc<Error>> {
        self.wait_for(self.position());
        match self.state.lock().failure() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// The position of the next op enqueued: [`OpQueue::wait_for`] it to wait for every op
    /// enqueued before now.
    pub fn position(&self) -> u64 {
        self.state.lock().next
    }

    /// Waits until every op enqueued before `position` ([`OpQueue::position`]) has run (or
    /// was dropped), whatever is enqueued meanwhile.
    pub fn wait_for(&self, position: u64) {
        let mut st = self.state.lock();
        self.wait_until(&mut st, |_| position);
    }

    /// Waits until `first_pending() >= target(state)` (re-read at every wake-up).
    fn wait_until(&self, st: &mut MutexGuard<'_, State<T>>, target: impl Fn(&State<T>) -> u64) {
        loop {
            let t = target(st);
            if st.first_pending() >= t {
                return;
            }
            st.wake_at = Some(st.wake_at.map_or(t, |w| w.min(t)));
            self.cv.wait(st);
        }
    }

    /// The queue's error (or the error it was cancelled with), if it has one (not cleared).
    pub fn first_error(&self) -> Option<Arc<Error>> {
        self.state.lock().failure().cloned()
    }

    /// True once the queue is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.state.lock().cancelled.is_some()
    }

    /// The error the queue was cancelled with, if it was.
    pub fn cancelled(&self) -> Option<Arc<Error>> {
        self.state.lock().cancelled.clone()
    }

    /// Waits for the ops enqueued before this call (those after the error are dropped
    /// unrun), then clears the error and returns it: the ops enqueued from now on run, unless
    /// the queue was cancelled (that stays).
    pub fn clear_error(&self) -> Option<Arc<Error>> {
        self.wait_for(self.position());
        self.state.lock().error.take()
    }

    /// True while ops are enqueued or running.
    pub fn busy(&self) -> bool {
        let st = self.state.lock();
        st.first_pending() < st.next
    }

    /// Waits until no op is pending, including those enqueued meanwhile (keeps the error).
    pub fn wait_idle(&self) {
        let mut st = self.state.lock();
        self.wait_until(&mut st, |st| st.next);
    }

    /// Stops the queue for good: queued ops and every later one are dropped unrun (with the
    /// queue's error as the cause), the op running now finishes, and `synchronize` reports
    /// `error` (unless an earlier error came first).
    pub fn cancel(&self, error: Error) {
        let (dropped, cause) = {
            let mut st = self.state.lock();
            let error = Arc::new(error);
            st.cancelled.get_or_insert(error.clone());
            let cause = st.error.get_or_insert(error).clone();
            let q: Vec<T> = st.queue.drain(..).map(|(_, item)| item).collect();
            self.wake(&mut st);
            (q, cause)
        };
        // Dropped outside the lock: an op's claims release buffers (and may wake others).
        for item in dropped {
            item.drop_unrun(&cause);
        }
    }

    /// Wakes the waiting threads if the position the first of them waits for is reached (each
    /// registers its position again if it is not its own).
    fn wake(&self, st: &mut State<T>) {
        if st.wake_at.is_some_and(|t| st.first_pending() >= t) {
            st.wake_at = None;
            self.cv.notify_all();
        }
    }
}

/// The lock and condition variable of the protocol: parking_lot's in every build, loom's under
/// `--cfg loom` (thin wrappers that give them parking_lot's interface, as
/// `ascendc-twin/src/sync.rs` does for the twin's scheduler).
mod sync {
    #[cfg(not(loom))]
    pub(super) use parking_lot::{Condvar, Mutex, MutexGuard};

    #[cfg(loom)]
    pub(super) use self::loom_locks::{Condvar, Mutex, MutexGuard};

    #[cfg(loom)]
    mod loom_locks {
        use std::ops::{Deref, DerefMut};

        /// loom's mutex with parking_lot's interface.
        pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

        /// A guard of [`Mutex`]; `None` only while a [`Condvar`] waits with it.
        pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

        impl<T> Mutex<T> {
            pub(crate) fn new(v: T) -> Mutex<T> {
                Mutex(loom::sync::Mutex::new(v))
            }

            pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
                MutexGuard(Some(self.0.lock().expect("loom mutex poisoned")))
            }
        }

        impl<T> Deref for MutexGuard<'_, T> {
            type Target = T;

            fn deref(&self) -> &T {
                self.0.as_ref().expect("guard held")
            }
        }

        impl<T> DerefMut for MutexGuard<'_, T> {
            fn deref_mut(&mut self) -> &mut T {
                self.0.as_mut().expect("guard held")
            }
        }

        /// loom's condition variable with parking_lot's interface.
        pub(crate) struct Condvar(loom::sync::Condvar);

        impl Condvar {
            pub(crate) fn new() -> Condvar {
                Condvar(loom::sync::Condvar::new())
            }

            pub(crate) fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
                let inner = g.0.take().expect("guard held");
                g.0 = Some(self.0.wait(inner).expect("loom mutex poisoned"));
            }

            pub(crate) fn notify_all(&self) {
                self.0.notify_all();
            }
        }
    }
}

/// Models of the protocol under loom: the real [`OpQueue`] with ops that only record what
/// happened to them, and draining tasks that are loom threads.
#[cfg(all(test, loom))]
mod loom_tests {
    use loom::thread;

    use super::*;

    /// The preemption bound of the models that may run three threads (as ascendc-twin's and
    /// tokio's models bound theirs): unbounded, they take minutes; bounded so, each takes
    /// under a second and still catches every deliberate break of the protocol tried.
    const PREEMPTIONS: usize = 3;

    /// What happened to an op.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Fate {
        Ran,
        Dropped,
    }

    /// What happened to the ops, in order: a loom mutex, so that recording is a step of its
    /// own, apart from the queue's (an op takes time: the queue must not see it ended early).
    type Log = Arc<loom::sync::Mutex<Vec<(usize, Fate)>>>;

    /// A tiny op: records its fate in the log, and fails if told to.
    struct TestOp {
        id: usize,
        fails: bool,
        log: Log,
    }

    impl Item for TestOp {
        fn run(self) -> Option<Arc<Error>> {
            self.log.lock().unwrap().push((self.id, Fate::Ran));
            self.fails
                .then(|| Arc::new(Error::Config(format!("op {} failed", self.id))))
        }

        fn drop_unrun(self, _cause: &Arc<Error>) {
            self.log.lock().unwrap().push((self.id, Fate::Dropped));
        }
    }

    /// A queue of [`TestOp`]s whose draining tasks are loom threads, kept to be joined (the
    /// list is the test's bookkeeping, not the protocol's: a std mutex, never held across a
    /// loom operation, as loom runs its threads one at a time, so it adds no interleavings).
    struct Harness {
        q: Arc<OpQueue<TestOp>>,
        log: Log,
        drains: Arc<std::sync::Mutex<Vec<thread::JoinHandle<()>>>>,
    }

    impl Harness {
        fn new() -> Arc<Harness> {
            Arc::new(Harness {
                q: Arc::new(OpQueue::new()),
                log: Arc::default(),
                drains: Arc::default(),
            })
        }

        /// Enqueues op `id`; a draining task it starts is a new thread.
        fn enqueue(&self, id: usize, fails: bool) {
            let log = self.log.clone();
            let drains = self.drains.clone();
            self.q.enqueue(TestOp { id, fails, log }, move |q| {
                let t = thread::spawn(move || q.drain());
                drains.lock().unwrap().push(t);
            });
        }

        /// The fates recorded so far, in order.
        fn log(&self) -> Vec<(usize, Fate)> {
            self.log.lock().unwrap().clone()
        }

        /// Joins every draining task started so far.
        fn join_drains(&self) {
            loop {
                let t = self.drains.lock().unwrap().pop();
                match t {
                    Some(t) => t.join().unwrap(),
                    None => return,
                }
            }
        }
    }

    /// (a) `synchronize` waits for the ops enqueued before it, with the drain on another
    /// thread: it always wakes (loom reports a deadlock if the wake-up is lost, as when
    /// `wake_at` is taken before the position is reached) and sees every op run.
    #[test]
    fn loom_synchronize_never_misses_the_end_it_waits_for() {
        loom::model(|| {
            let h = Harness::new();
            h.enqueue(0, false);
            h.enqueue(1, false);
            assert!(h.q.synchronize().is_ok());
            assert_eq!(h.log(), [(0, Fate::Ran), (1, Fate::Ran)]);
            h.join_drains();
        });
    }

    /// (a) Two waiters with different targets share `wake_at` (the smaller one): each wakes
    /// once its own op has ended, whichever registered first (a lost wake-up of either, as with
    /// `notify_one`, is a deadlock).
    #[test]
    fn loom_two_waiters_with_different_targets_both_wake() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(PREEMPTIONS);
        model.check(|| {
            let h = Harness::new();
            h.enqueue(0, false);
            let first = h.q.position();
            h.enqueue(1, false);
            let h2 = h.clone();
            let waiter = thread::spawn(move || {
                h2.q.wait_for(first);
                assert_eq!(h2.log()[0], (0, Fate::Ran));
            });
            h.q.wait_for(h.q.position());
            assert_eq!(h.log(), [(0, Fate::Ran), (1, Fate::Ran)]);
            waiter.join().unwrap();
            h.join_drains();
        });
    }

    /// (b) An op enqueued while the draining task finishes (it may be about to clear
    /// `draining`) is always run: by that task, or by a new one started because the flag was
    /// already clear; never stranded (`wait_idle` would deadlock), and in order.
    #[test]
    fn loom_an_op_enqueued_as_the_drain_ends_is_run() {
        loom::model(|| {
            let h = Harness::new();
            h.enqueue(0, false);
            h.enqueue(1, false);
            h.q.wait_idle();
            assert_eq!(h.log(), [(0, Fate::Ran), (1, Fate::Ran)]);
            assert!(!h.q.busy());
            h.join_drains();
        });
    }

    /// (c) `cancel` races the drain: every op is run or dropped unrun exactly once (those run
    /// first, in order), a waiter wakes, the queue reports the cancellation, and an op enqueued
    /// later is dropped unrun without starting a drain.
    #[test]
    fn loom_cancel_drops_or_runs_each_op_once_and_wakes_the_waiters() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(PREEMPTIONS);
        model.check(|| {
            let h = Harness::new();
            h.enqueue(0, false);
            h.enqueue(1, false);
            let h2 = h.clone();
            let canceller = thread::spawn(move || h2.q.cancel(Error::Config("cancelled".into())));
            // Ok only if both ops ran before the cancellation.
            let _ = h.q.synchronize();
            canceller.join().unwrap();
            assert!(h.q.synchronize().is_err());
            h.enqueue(2, false);
            h.join_drains();
            let log = h.log();
            assert_eq!(log.len(), 3, "{log:?}");
            for id in 0..3 {
                assert_eq!(log.iter().filter(|(i, _)| *i == id).count(), 1, "{log:?}");
            }
            let ran: Vec<usize> = log
                .iter()
                .filter(|(_, f)| *f == Fate::Ran)
                .map(|(i, _)| *i)
                .collect();
            assert_eq!(ran, (0..ran.len()).collect::<Vec<_>>(), "{log:?}");
            assert_eq!(log.last(), Some(&(2, Fate::Dropped)));
            assert!(!h.q.busy());
        });
    }

    /// (d) An op fails while the next is enqueued: its error is seen as soon as its end is, the
    /// next op is dropped unrun, the error is sticky, `clear_error` returns it once (after
    /// waiting for both), and an op enqueued after it runs, even while the first draining
    /// task is still ending.
    #[test]
    fn loom_a_failed_op_drops_the_later_ones_until_clear_error() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(PREEMPTIONS);
        model.check(|| {
            let h = Harness::new();
            h.enqueue(0, true);
            let after_0 = h.q.position();
            h.enqueue(1, false);
            h.q.wait_for(after_0);
            assert!(h.q.first_error().is_some());
            let e = h.q.clear_error().expect("op 0's error");
            assert!(matches!(&*e, Error::Config(m) if m == "op 0 failed"));
            assert_eq!(h.log(), [(0, Fate::Ran), (1, Fate::Dropped)]);
            assert!(h.q.clear_error().is_none());
            h.enqueue(2, false);
            assert!(h.q.synchronize().is_ok());
            assert_eq!(h.log()[2], (2, Fate::Ran));
            h.join_drains();
        });
    }
}
