//! Streams: in-order queues of device work, run as host tasks on the twin's worker pool.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

type Task = Box<dyn FnOnce() -> Result<()> + Send>;

struct State {
    queue: VecDeque<Task>,
    /// A host task is draining `queue` (at most one per stream, so tasks run in order).
    draining: bool,
    /// Tasks enqueued and not yet finished (or dropped).
    pending: usize,
    error: Option<Error>,
    /// Cancelled for good: every task from now on is dropped unrun.
    cancelled: bool,
}

struct Inner {
    name: String,
    affinity: usize,
    twin: ascendc_sys::Twin,
    state: Mutex<State>,
    cv: Condvar,
}

/// An in-order queue of device work (kernel launches and the host steps around them).
///
/// [`Stream::enqueue`] returns at once; tasks run one after another, in the order they were
/// enqueued. They run as a host task of the twin's worker pool
/// ([`ascendc_sys::Twin::spawn_host_task`]), next to the kernel blocks they launch: a launch and
/// the wait for its end cost coroutine switches, not OS thread hand-offs. After a task fails,
/// the following tasks are dropped unrun until [`Stream::synchronize`] reports the error, as a
/// CUDA/ACL stream stops at its first error. A task that panics fails the stream with
/// [`Error::Internal`]. Dropping the handle does not stop the work already enqueued: each task
/// owns what it needs.
pub struct Stream {
    inner: Arc<Inner>,
}

impl Stream {
    /// A new stream named `name` (named when one of its tasks panics), whose tasks run on the
    /// worker `affinity % workers` of `twin`.
    pub fn new(twin: ascendc_sys::Twin, name: String, affinity: usize) -> Stream {
        Stream {
            inner: Arc::new(Inner {
                name,
                affinity,
                twin,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    draining: false,
                    pending: 0,
                    error: None,
                    cancelled: false,
                }),
                cv: Condvar::new(),
            }),
        }
    }

    /// Queues `task` behind everything enqueued before it.
    pub fn enqueue(&self, task: impl FnOnce() -> Result<()> + Send + 'static) {
        let start = {
            let mut st = self.inner.state.lock();
            if st.cancelled {
                return; // dropped unrun
            }
            st.pending += 1;
            st.queue.push_back(Box::new(task));
            !std::mem::replace(&mut st.draining, true)
        };
        if start {
            let inner = self.inner.clone();
            self.inner
                .twin
                .spawn_host_task(self.inner.affinity, Box::new(move || drain(&inner)));
        }
    }

    /// Waits until every enqueued task has run; returns (and clears) the first error.
    pub fn synchronize(&self) -> Result<()> {
        match self.idle().error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The first error of the stream, if it has one (not cleared).
    pub fn first_error(&self) -> Option<Error> {
        self.inner.state.lock().error.clone()
    }

    /// True while tasks are enqueued or running.
    pub fn busy(&self) -> bool {
        self.inner.state.lock().pending > 0
    }

    /// Waits until no task is pending (keeps the error for `synchronize`).
    pub fn wait_idle(&self) {
        drop(self.idle());
    }

    /// Stops the stream for good: queued tasks and every later one are dropped unrun, the task
    /// running now finishes, and `synchronize` reports `error` (unless an earlier error came
    /// first).
    pub fn cancel(&self, error: Error) {
        let dropped: Vec<Task> = {
            let mut st = self.inner.state.lock();
            st.cancelled = true;
            st.error.get_or_insert(error);
            let q: Vec<Task> = st.queue.drain(..).collect();
            st.pending -= q.len();
            if st.pending == 0 {
                self.inner.cv.notify_all();
            }
            q
        };
        // Dropped outside the lock: a task's claims release buffers (and may wake others).
        drop(dropped);
    }

    /// Waits until no task is pending; returns the locked state.
    fn idle(&self) -> parking_lot::MutexGuard<'_, State> {
        let mut st = self.inner.state.lock();
        while st.pending > 0 {
            self.inner.cv.wait(&mut st);
        }
        st
    }
}

/// Runs the stream's tasks until its queue is empty.
fn drain(inner: &Inner) {
    loop {
        let (task, skip) = {
            let mut st = inner.state.lock();
            match st.queue.pop_front() {
                Some(t) => (t, st.error.is_some()),
                None => {
                    st.draining = false;
                    return;
                }
            }
        };
        let result = if skip {
            drop(task);
            Ok(())
        } else {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).unwrap_or_else(|p| {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(Error::Internal(format!(
                    "a task of stream `{}` panicked: {msg}",
                    inner.name
                )))
            })
        };
        let mut st = inner.state.lock();
        if let Err(e) = result {
            st.error.get_or_insert(e);
        }
        st.pending -= 1;
        if st.pending == 0 {
            inner.cv.notify_all();
        }
    }
}
