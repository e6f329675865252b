//! One order per link across streams.
//!
//! A rank's signals to a peer (send/recv chunks, tx_ack, tx_data_signal, and their waits) carry
//! sequence numbers per (peer, kind, direction), taken when the operation is enqueued: the k-th
//! send to a peer matches the peer's k-th recv. Two streams of a rank may both use one link;
//! they would run in either order, making a flag go backwards (a hang) or two sends share one
//! staging slot (the wrong message received). So every operation on a link waits, before it
//! starts, until the operation enqueued before it on the same link (on whatever stream) is done:
//! a link's operations run in enqueue order.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::backend::dynamic::DynBackend;
use crate::backend::Signal;

/// One link: a peer, a signal kind, a direction.
pub(crate) type LinkKey = (u32, u32, bool);

/// The operations of one link.
struct Link {
    /// Operations enqueued so far.
    issued: u64,
    state: Arc<LinkState>,
}

struct LinkState {
    /// Operations 1..=done are finished; `ahead` holds finished ones above the watermark.
    done: Mutex<(u64, BTreeSet<u64>)>,
    /// The watermark, for the waiters (the backend's signal: a host task waiting on it does not
    /// hold up the backend's executor).
    signal: Box<dyn Signal>,
}

/// The links of one rank.
pub(crate) struct Links {
    backend: Arc<dyn DynBackend>,
    links: HashMap<LinkKey, Link>,
}

impl Links {
    /// No link yet; their signals will be `backend`'s.
    pub fn new(backend: Arc<dyn DynBackend>) -> Links {
        Links {
            backend,
            links: HashMap::new(),
        }
    }

    /// Enqueues the next operation of `key`: its turn (1, 2, ...).
    pub fn next(&mut self, key: LinkKey) -> Arc<Turn> {
        let backend = &self.backend;
        let l = self.links.entry(key).or_insert_with(|| Link {
            issued: 0,
            state: Arc::new(LinkState {
                done: Mutex::new((0, BTreeSet::new())),
                signal: backend.signal(0),
            }),
        });
        l.issued += 1;
        Arc::new(Turn {
            state: l.state.clone(),
            n: l.issued,
        })
    }
}

/// An operation's place on its link. Waiting for it orders the operation after the previous
/// one; dropping the last handle (the operation ran, or was dropped unrun) lets the next go.
pub(crate) struct Turn {
    state: Arc<LinkState>,
    /// 1-based position on the link.
    pub n: u64,
}

impl Turn {
    /// Waits until every earlier operation of the link is done; false after `timeout`, or
    /// once `stop()` holds.
    pub fn wait(&self, timeout: Duration, stop: &dyn Fn() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let prev = self.n - 1;
        self.state
            .signal
            .wait_or_stop(deadline, &|done| done >= prev, stop)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let watermark = {
            let mut d = self.state.done.lock();
            let (watermark, ahead) = &mut *d;
            ahead.insert(self.n);
            while ahead.remove(&(*watermark + 1)) {
                *watermark += 1;
            }
            *watermark
        };
        self.state.signal.update(&mut |_| watermark);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_come_in_enqueue_order_whatever_order_they_finish() {
        let backend = crate::backend::record::RecordingBackend::new(1, 48);
        let mut links = Links::new(Arc::new(backend));
        let a = links.next((1, 2, true));
        let b = links.next((1, 2, true));
        let c = links.next((1, 2, true));
        let other = links.next((1, 2, false));
        assert!(a.wait(Duration::ZERO, &|| false));
        assert!(
            other.wait(Duration::ZERO, &|| false),
            "another link is independent"
        );
        assert!(!b.wait(Duration::from_millis(1), &|| false));
        drop(c); // finished out of order: b still waits for a
        assert!(!b.wait(Duration::from_millis(1), &|| false));
        drop(a);
        assert!(b.wait(Duration::ZERO, &|| false));
        let d = links.next((1, 2, true));
        assert!(!d.wait(Duration::from_millis(1), &|| false));
        drop(b);
        assert!(d.wait(Duration::ZERO, &|| false), "c already finished");
    }
}
