//! Streams: in-order queues of device work, one host thread each.

use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

type Task = Box<dyn FnOnce() -> Result<()> + Send>;

struct State {
    pending: usize,
    error: Option<Error>,
}

struct Inner {
    state: Mutex<State>,
    cv: Condvar,
}

/// An in-order queue of device work (kernel launches and the host steps around them).
///
/// [`Stream::enqueue`] returns at once; tasks run one after another on the stream's own thread,
/// in the order they were enqueued. After a task fails, the following tasks are skipped (not run)
/// until [`Stream::synchronize`] reports the error, as a CUDA/ACL stream stops at its first error.
pub struct Stream {
    inner: Arc<Inner>,
    tx: Option<Sender<Task>>,
    thread: Option<JoinHandle<()>>,
}

impl Stream {
    /// A new stream with its worker thread, named `name` (shown in debuggers).
    pub fn new(name: String) -> Stream {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                pending: 0,
                error: None,
            }),
            cv: Condvar::new(),
        });
        let (tx, rx) = channel::<Task>();
        let worker = inner.clone();
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                while let Ok(task) = rx.recv() {
                    let skip = worker.state.lock().error.is_some();
                    let result = if skip { Ok(()) } else { task() };
                    let mut st = worker.state.lock();
                    if let Err(e) = result {
                        st.error.get_or_insert(e);
                    }
                    st.pending -= 1;
                    if st.pending == 0 {
                        worker.cv.notify_all();
                    }
                }
            })
            .expect("cannot spawn a stream thread");
        Stream {
            inner,
            tx: Some(tx),
            thread: Some(thread),
        }
    }

    /// Queues `task` behind everything enqueued before it.
    pub fn enqueue(&self, task: impl FnOnce() -> Result<()> + Send + 'static) {
        self.inner.state.lock().pending += 1;
        self.tx
            .as_ref()
            .expect("stream is open until dropped")
            .send(Box::new(task))
            .expect("stream thread ends only on drop");
    }

    /// Waits until every enqueued task has run; returns (and clears) the first error.
    pub fn synchronize(&self) -> Result<()> {
        let mut st = self.inner.state.lock();
        while st.pending > 0 {
            self.inner.cv.wait(&mut st);
        }
        match st.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
