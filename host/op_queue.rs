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
