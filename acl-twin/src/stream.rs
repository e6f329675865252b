//! Streams and events: a stream is a host thread that runs its tasks in order (copies, kernel
//! launches, event records and waits); an event counts the records that have completed.
//!
//! A failed task does not stop its stream (ACL's default failure mode): its error is kept and
//! returned by the stream's next synchronisation, which then forgets it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ascendc_sys::*;
use parking_lot::{Condvar, Mutex};

use crate::fail::{fail, Fail, R};

/// One task of a stream.
pub(crate) type Task = Box<dyn FnOnce() -> R<()> + Send>;

struct Queue {
    tasks: VecDeque<Task>,
    /// Tasks enqueued so far, and finished so far (a synchronisation waits for the tasks
    /// enqueued before it, not for later ones).
    enqueued: u64,
    finished: u64,
    /// The first failure since the last synchronisation.
    error: Option<Fail>,
    stopping: bool,
}

/// A stream (see the module docs).
pub(crate) struct Stream {
    /// The device its tasks run on.
    pub device: u32,
    queue: Mutex<Queue>,
    /// Signalled when a task is enqueued, when one finishes, and on stop.
    cv: Condvar,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Stream {
    /// A stream of `device` with its thread started.
    pub fn new(device: u32) -> R<Arc<Stream>> {
        let s = Arc::new(Stream {
            device,
            queue: Mutex::new(Queue {
                tasks: VecDeque::new(),
                enqueued: 0,
                finished: 0,
                error: None,
                stopping: false,
            }),
            cv: Condvar::new(),
            thread: Mutex::new(None),
        });
        let worker = s.clone();
        let t = std::thread::Builder::new()
            .name(format!("acl-twin-stream-dev{device}"))
            .spawn(move || worker.run())
            .or_else(|e| {
                fail(
                    ACL_ERROR_RT_INTERNAL_ERROR,
                    format!("cannot start a stream thread: {e}"),
                )
            })?;
        *s.thread.lock() = Some(t);
        Ok(s)
    }

    fn run(&self) {
        // Kernel launches and copies from this thread act for the stream's device.
        let _ = crate::runtime::set_device(self.device as i32);
        loop {
            let task = {
                let mut q = self.queue.lock();
                loop {
                    if let Some(t) = q.tasks.pop_front() {
                        break t;
                    }
                    if q.stopping {
                        return;
                    }
                    self.cv.wait(&mut q);
                }
            };
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).unwrap_or_else(|_| {
                    fail(
                        ACL_ERROR_RT_INTERNAL_ERROR,
                        "a stream task panicked (a bug of acl-twin)",
                    )
                });
            let mut q = self.queue.lock();
            if let Err(e) = r {
                q.error.get_or_insert(e);
            }
            q.finished += 1;
            self.cv.notify_all();
        }
    }

    /// Enqueues `task`.
    pub fn push(&self, task: Task) -> R<()> {
        let mut q = self.queue.lock();
        if q.stopping {
            return fail(ACL_ERROR_RT_INVALID_HANDLE, "the stream was destroyed");
        }
        q.tasks.push_back(task);
        q.enqueued += 1;
        self.cv.notify_all();
        Ok(())
    }

    /// Waits until every task enqueued before the call has finished (at most `timeout`), then
    /// returns and forgets the first failure since the last synchronisation.
    pub fn synchronize(&self, timeout: Option<Duration>) -> R<()> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = self.queue.lock();
        let ticket = q.enqueued;
        while q.finished < ticket {
            match deadline {
                None => self.cv.wait(&mut q),
                Some(d) => {
                    if self.cv.wait_until(&mut q, d).timed_out() && q.finished < ticket {
                        return fail(
                            ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                            format!(
                                "{} tasks still running after {} ms",
                                ticket - q.finished,
                                timeout.unwrap_or_default().as_millis()
                            ),
                        );
                    }
                }
            }
        }
        match q.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Lets the queued tasks finish, then ends the thread.
    pub fn stop(&self) {
        {
            let mut q = self.queue.lock();
            q.stopping = true;
            self.cv.notify_all();
        }
        if let Some(t) = self.thread.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// An event: how many records were enqueued and how many have completed.
#[derive(Default)]
pub(crate) struct Event {
    state: Mutex<(u64, u64)>,
    cv: Condvar,
}

impl Event {
    /// Enqueues a record on `stream`.
    pub fn record(self: &Arc<Self>, stream: &Stream) -> R<()> {
        // Counted only once enqueued (a destroyed stream refuses it); held meanwhile, so that
        // records from two threads take distinct numbers in the order they were enqueued.
        let mut s = self.state.lock();
        let n = s.0 + 1;
        let ev = self.clone();
        stream.push(Box::new(move || {
            let mut s = ev.state.lock();
            s.1 = s.1.max(n);
            ev.cv.notify_all();
            Ok(())
        }))?;
        s.0 = n;
        Ok(())
    }

    /// Enqueues on `stream` a wait for the latest record enqueued so far (none: no wait).
    pub fn wait_on(self: &Arc<Self>, stream: &Stream) -> R<()> {
        let target = self.state.lock().0;
        let ev = self.clone();
        stream.push(Box::new(move || {
            ev.wait_for(target);
            Ok(())
        }))
    }

    /// Blocks until the latest record enqueued so far has completed.
    pub fn synchronize(&self) {
        let target = self.state.lock().0;
        self.wait_for(target);
    }

    /// True if the latest record enqueued so far has completed (or there was none).
    pub fn complete(&self) -> bool {
        let s = self.state.lock();
        s.1 >= s.0
    }

    fn wait_for(&self, target: u64) {
        let mut s = self.state.lock();
        while s.1 < target {
            self.cv.wait(&mut s);
        }
    }
}
