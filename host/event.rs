//! Events: local notifies between the streams of one rank (HCCL's `LocalNotify`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;

use crate::backend::dynamic::DynBackend;
use crate::backend::Signal;
use crate::error::Error;

/// A local notify between streams of one rank (`LocalNotify` of HCCL): [`crate::CommStream::post`]
/// signals it once, [`crate::CommStream::wait`] consumes one signal, waiting until it has been
/// posted. Waits are served in the order they were enqueued. If the stream that was to post
/// fails first, the waits fail at once with that stream's error, and so does every later wait:
/// an event whose post was dropped is failed for good (after
/// [`crate::CommStream::clear_error`], make a new one).
#[derive(Clone)]
pub struct Event {
    inner: Arc<Inner>,
}

struct Inner {
    name: Box<str>,
    /// Posts so far (`u64::MAX`: a post will never come, see `failed`): a signal of the
    /// backend of the first stream that posts or waits on the event, made then, with that
    /// backend's id (an event orders the streams of one rank: another world's are refused).
    posted: OnceLock<(u64, Box<dyn Signal>)>,
    /// Waits enqueued so far (each takes the next ticket).
    waits: Mutex<u64>,
    /// Posts enqueued so far (run or not).
    enqueued: AtomicU64,
    /// The error of the stream whose post was dropped unrun.
    failed: Mutex<Option<Error>>,
}

impl Event {
    /// A new event named `name` (named in timeout errors and traces).
    pub fn new(name: &str) -> Event {
        Event {
            inner: Arc::new(Inner {
                name: name.into(),
                posted: OnceLock::new(),
                waits: Mutex::new(0),
                enqueued: AtomicU64::new(0),
                failed: Mutex::new(None),
            }),
        }
    }

    /// The event's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The posts signal, made from `backend` if no stream has used the event yet; an error if
    /// streams of another world did.
    fn signal(&self, backend: &Arc<dyn DynBackend>) -> Result<&dyn Signal, Error> {
        let (id, s) = self
            .inner
            .posted
            .get_or_init(|| (backend.id(), backend.signal(0)));
        if *id != backend.id() {
            return Err(Error::InvalidArgument(format!(
                "event `{}` was used by streams of another world: an event orders the streams of one rank",
                self.name()
            )));
        }
        Ok(&**s)
    }

    /// A post is being enqueued on a stream of `backend` (if streams of another world used the
    /// event already, the post fails when it runs).
    pub(crate) fn enqueue_post(&self, backend: &Arc<dyn DynBackend>) {
        let _ = self.signal(backend);
        self.inner.enqueued.fetch_add(1, Ordering::SeqCst);
    }

    /// A wait is being enqueued on a stream of `backend`: its ticket (1, 2, ...).
    pub(crate) fn enqueue_wait(&self, backend: &Arc<dyn DynBackend>) -> u64 {
        let _ = self.signal(backend);
        let mut w = self.inner.waits.lock();
        *w += 1;
        *w
    }

    /// An enqueued post runs.
    pub(crate) fn post(&self, backend: &Arc<dyn DynBackend>) -> Result<(), Error> {
        self.signal(backend)?.update(&mut |p| p.saturating_add(1));
        Ok(())
    }

    /// An enqueued post was dropped unrun because of `cause`: every wait fails with it.
    pub(crate) fn fail(&self, backend: &Arc<dyn DynBackend>, cause: &Error) {
        self.inner
            .failed
            .lock()
            .get_or_insert_with(|| cause.clone());
        if let Ok(s) = self.signal(backend) {
            s.update(&mut |_| u64::MAX);
        }
    }

    /// Waits for post `ticket` until `deadline`, and (if that post is enqueued by then) until
    /// `then` at the latest, or until `stop()`. `Ok(true)`: posted; `Ok(false)`: not by the
    /// deadline (or stopped); `Err`: the post was dropped unrun, with its stream's error.
    pub(crate) fn wait(
        &self,
        backend: &Arc<dyn DynBackend>,
        ticket: u64,
        (deadline, then): (Instant, Instant),
        stop: &dyn Fn() -> bool,
    ) -> Result<bool, Error> {
        let signal = self.signal(backend)?;
        let ready = |p| p >= ticket;
        let mut posted = signal.wait_or_stop(deadline, &ready, stop);
        if !posted && !stop() && self.inner.enqueued.load(Ordering::SeqCst) >= ticket {
            posted = signal.wait_or_stop(then, &ready, stop);
        }
        if let Some(e) = self.inner.failed.lock().clone() {
            return Err(e);
        }
        Ok(posted)
    }
}
