//! Streams: in-order queues of device work, run as host tasks on the twin's worker pool.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::backend::dynamic::StreamHandle;
use crate::buffer::Uses;
use crate::error::{Error, Result};

/// One queued task: its claims on device buffers and the work itself.
struct Task {
    /// Held from enqueue until the task is done; a write claim's range is poisoned if the task
    /// fails or is dropped unrun, and cleared if it succeeds (see `buffer.rs`).
    uses: Uses,
    run: Box<dyn FnOnce() -> Result<()> + Send>,
}

struct State {
    /// Queued tasks with their positions (the `next` at their enqueue).
    queue: VecDeque<(u64, Task)>,
    /// Position of the next task enqueued (tasks are numbered from 0 in enqueue order).
    next: u64,
    /// Position of the task running now.
    running: Option<u64>,
    /// A host task is draining `queue` (at most one per stream, so tasks run in order).
    draining: bool,
    /// The first error, kept until [`Stream::clear_error`]: every task after it is dropped unrun.
    error: Option<Arc<Error>>,
    /// Cancelled for good, with this error: every task from now on is dropped unrun, whatever
    /// [`Stream::clear_error`] clears.
    cancelled: Option<Arc<Error>>,
    /// The smallest position a waiting thread waits to be reached (`first_pending() >= it`):
    /// a finished task wakes the waiters only once that holds, not at every task (a thread
    /// woken per task steals a core from the twin's workers).
    wake_at: Option<u64>,
}

impl State {
    /// Why the stream drops its tasks, if it does: its error, else its cancellation.
    fn failure(&self) -> Option<&Arc<Error>> {
        self.error.as_ref().or(self.cancelled.as_ref())
    }

    /// Position of the first task not finished (`next` when none is pending).
    fn first_pending(&self) -> u64 {
        self.running
            .or(self.queue.front().map(|(p, _)| *p))
            .unwrap_or(self.next)
    }
}

struct Inner {
    name: String,
    /// The backend's stream: where the tasks run, and the launches they make.
    handle: StreamHandle,
    state: Mutex<State>,
    cv: Condvar,
}

/// An in-order queue of device work (kernel launches and the host steps around them).
///
/// [`Stream::enqueue`] returns at once; tasks run one after another, in the order they were
/// enqueued, as host tasks of the backend's stream (`Backend::host_task`: on the twin,
/// coroutines of its worker pool next to the kernel blocks they launch). After a task fails,
/// every later task is dropped unrun until [`Stream::clear_error`], and every
/// [`Stream::synchronize`] reports the error, as a CUDA stream's sticky errors do. A task that
/// panics fails the stream with [`Error::Internal`]. Dropping the handle does not stop the work
/// already enqueued: each task owns what it needs.
pub struct Stream {
    inner: Arc<Inner>,
}

impl Stream {
    /// A new stream named `name` (named when one of its tasks panics), whose tasks run as host
    /// tasks of the backend stream `handle`.
    pub fn new(handle: StreamHandle, name: String) -> Stream {
        Stream {
            inner: Arc::new(Inner {
                name,
                handle,
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
            }),
        }
    }

    /// Queues `run` behind everything enqueued before it; `uses` are its buffer claims.
    pub fn enqueue(&self, uses: Uses, run: impl FnOnce() -> Result<()> + Send + 'static) {
        let task = Task {
            uses,
            run: Box::new(run),
        };
        let start = {
            let mut st = self.inner.state.lock();
            if let Some(e) = st.cancelled.clone() {
                drop(st);
                finish(task.uses, Some(&e));
                return; // dropped unrun
            }
            let pos = st.next;
            st.next += 1;
            st.queue.push_back((pos, task));
            !std::mem::replace(&mut st.draining, true)
        };
        if start {
            let inner = self.inner.clone();
            self.inner.handle.host_task(Box::new(move || drain(&inner)));
        }
    }

    /// Waits until every task enqueued before this call has run (or was dropped); returns the
    /// stream's error (or the error it was cancelled with), if it has one (kept: every later
    /// call returns it too).
    pub fn synchronize(&self) -> Result<()> {
        self.wait_for(self.position());
        match self.inner.state.lock().failure() {
            Some(e) => Err((**e).clone()),
            None => Ok(()),
        }
    }

    /// The backend stream the tasks run on (and launch on).
    pub fn handle(&self) -> &StreamHandle {
        &self.inner.handle
    }

    /// The position of the next task enqueued: [`Stream::wait_for`] it to wait for every task
    /// enqueued before now.
    pub fn position(&self) -> u64 {
        self.inner.state.lock().next
    }

    /// Waits until every task enqueued before `position` ([`Stream::position`]) has run (or
    /// was dropped), whatever is enqueued meanwhile.
    pub fn wait_for(&self, position: u64) {
        let mut st = self.inner.state.lock();
        self.wait_until(&mut st, |_| position);
    }

    /// Waits until `first_pending() >= target(state)` (re-read at every wake-up).
    fn wait_until(
        &self,
        st: &mut parking_lot::MutexGuard<'_, State>,
        target: impl Fn(&State) -> u64,
    ) {
        loop {
            let t = target(st);
            if st.first_pending() >= t {
                return;
            }
            st.wake_at = Some(st.wake_at.map_or(t, |w| w.min(t)));
            self.inner.cv.wait(st);
        }
    }

    /// The stream's error (or the error it was cancelled with), if it has one (not cleared).
    pub fn first_error(&self) -> Option<Error> {
        self.inner.state.lock().failure().map(|e| (**e).clone())
    }

    /// Waits for the tasks enqueued before this call (those after the error are dropped
    /// unrun), then clears the error and returns it: the tasks enqueued from now on run, unless
    /// the stream was cancelled (that stays).
    pub fn clear_error(&self) -> Option<Error> {
        self.wait_for(self.position());
        self.inner
            .state
            .lock()
            .error
            .take()
            .map(Arc::unwrap_or_clone)
    }

    /// True while tasks are enqueued or running.
    pub fn busy(&self) -> bool {
        let st = self.inner.state.lock();
        st.first_pending() < st.next
    }

    /// Waits until no task is pending, including those enqueued meanwhile (keeps the error).
    pub fn wait_idle(&self) {
        let mut st = self.inner.state.lock();
        self.wait_until(&mut st, |st| st.next);
    }

    /// Stops the stream for good: queued tasks and every later one are dropped unrun (what
    /// they were to write is poisoned with the stream's error), the task running now finishes,
    /// and `synchronize` reports `error` (unless an earlier error came first).
    pub fn cancel(&self, error: Error) {
        let (dropped, cause) = {
            let mut st = self.inner.state.lock();
            let error = Arc::new(error);
            st.cancelled.get_or_insert(error.clone());
            let cause = st.error.get_or_insert(error).clone();
            let q: Vec<(u64, Task)> = st.queue.drain(..).collect();
            wake(&self.inner, &mut st);
            (q, cause)
        };
        // Released outside the lock: a task's claims release buffers (and may wake others);
        // each closure is dropped unrun (an event post's guard tells the event's waiters).
        for (_, t) in dropped {
            finish(t.uses, Some(&cause));
            drop(t.run);
        }
    }
}

/// Ends a task's claims: its write claims' ranges are poisoned with `failed`, or, if it
/// succeeded (`None`), hold its result.
fn finish(uses: Uses, failed: Option<&Arc<Error>>) {
    for u in uses {
        u.finish(failed);
    }
}

/// Runs the stream's tasks until its queue is empty.
fn drain(inner: &Inner) {
    loop {
        let (task, skip) = {
            let mut st = inner.state.lock();
            match st.queue.pop_front() {
                Some((pos, t)) => {
                    st.running = Some(pos);
                    (t, st.failure().cloned())
                }
                None => {
                    st.draining = false;
                    return;
                }
            }
        };
        let failed = match skip {
            Some(cause) => {
                finish(task.uses, Some(&cause));
                drop(task.run);
                None
            }
            None => {
                for u in &task.uses {
                    u.begin();
                }
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task.run))
                    .unwrap_or_else(|p| {
                        Err(Error::Internal(format!(
                            "a task of stream `{}` panicked: {}",
                            inner.name,
                            panic_message(&*p)
                        )))
                    });
                let failed = result.err().map(Arc::new);
                finish(task.uses, failed.as_ref());
                failed
            }
        };
        let mut st = inner.state.lock();
        if let Some(e) = failed {
            st.error.get_or_insert(e);
        }
        st.running = None;
        wake(inner, &mut st);
    }
}

/// Wakes the waiting threads if the position the first of them waits for is reached (each
/// registers its position again if it is not its own).
fn wake(inner: &Inner, st: &mut State) {
    if st.wake_at.is_some_and(|t| st.first_pending() >= t) {
        st.wake_at = None;
        inner.cv.notify_all();
    }
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
    use crate::buffer::DeviceBuffer;

    #[test]
    fn a_cancelled_stream_drops_its_tasks_whatever_clear_error_clears() {
        let backend: Arc<dyn crate::backend::dynamic::DynBackend> = Arc::new(
            crate::backend::twin::TwinBackend::new(
                ascendc_twin::Twin::new(),
                1,
                ascendc_twin::DeviceConfig::default(),
            )
            .unwrap(),
        );
        let mem =
            crate::backend::dynamic::Memory::alloc(&backend, 0, 64, crate::backend::MemKind::Data)
                .unwrap();
        let buf = DeviceBuffer::new(mem);
        let s = Stream::new(
            StreamHandle::new(&backend, 0, 0).unwrap(),
            "cancelled".into(),
        );
        s.cancel(Error::Config("stopped".into()));
        assert!(matches!(s.clear_error(), Some(Error::Config(_))));
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = ran.clone();
        s.enqueue(Uses::from_iter([buf.use_write()]), move || {
            r.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
        assert!(matches!(s.synchronize(), Err(Error::Config(_))));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        // What the dropped task was to write is poisoned with the cancellation.
        assert!(matches!(buf.to_vec::<u8>(), Err(Error::Poisoned { .. })));
    }
}
