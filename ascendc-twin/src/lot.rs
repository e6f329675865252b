//! The park/notify handshake: where a task waits for a value to be written without losing the
//! write that happens while it parks.
//!
//! A task that read an unchanged value parks in its worker's [`Lot`] ([`Lot::park`]): it is
//! counted, registered, and then looks at the value once more, and takes itself out again if
//! the value changed meanwhile. A writer stores the value, calls [`written`], and takes out the
//! waiters of what it wrote ([`release`], [`Lot::take`]), skipping every lot that counts no
//! waiter without taking its lock (most writes go where nobody waits).
//!
//! Why no wake-up is lost: the parker's count and registration come before a `SeqCst` fence and
//! its last look after it; the writer's store comes before [`written`]'s `SeqCst` fence and its
//! look at the count after it. Of two `SeqCst` fences one comes first: if the parker's does,
//! the writer sees the count (and takes the lock, under which it finds the waiter registered);
//! if the writer's does, the parker's last look sees the new value. Both may happen: then the
//! one that takes the waiter out first resumes it, and the other finds nothing.
//!
//! The loom tests at the end drive [`Lot`] and [`written`] through every interleaving of a
//! parker and writers (`RUSTFLAGS="--cfg loom" cargo test -p ascendc-twin --release --lib
//! loom_`); the scheduler (`sched.rs`) uses them with a waiter per parked task.

use smallvec::SmallVec;

use crate::sync::{fence, AtomicUsize, Mutex, Ordering};

/// The tasks parked on one worker, `W` each.
pub(crate) struct Lot<W> {
    /// Waiters in `waiters`, readable without the lock: counted before a waiter is registered,
    /// uncounted after it is taken out (so never below the number registered).
    parked: AtomicUsize,
    waiters: Mutex<Waiters<W>>,
}

struct Waiters<W> {
    /// The waiters with their ids.
    list: Vec<(u64, W)>,
    /// Id of the next waiter (unique per lot).
    next_id: u64,
}

impl<W> Lot<W> {
    /// An empty lot.
    pub fn new() -> Lot<W> {
        Lot {
            parked: AtomicUsize::new(0),
            waiters: Mutex::new(Waiters {
                list: Vec::new(),
                next_id: 0,
            }),
        }
    }

    /// Waiters registered or about to be (a writer that counts none has nothing to wake here).
    pub fn count(&self) -> usize {
        self.parked.load(Ordering::SeqCst)
    }

    /// Parks `w`: counts and registers it (`registered` runs under the lot's lock, with `w`
    /// registered), then asks `changed` whether the value it waits on changed meanwhile (or
    /// whatever else should resume it now). If it did, takes `w` out again and returns it,
    /// unless a writer took it out first (then the writer resumes it); None: `w` stays parked
    /// until a writer or [`Lot::take`] takes it out.
    pub fn park(
        &self,
        w: W,
        registered: impl FnOnce(&W),
        changed: impl FnOnce() -> bool,
    ) -> Option<W> {
        self.parked.fetch_add(1, Ordering::SeqCst);
        let id = {
            let mut ws = self.waiters.lock();
            let id = ws.next_id;
            ws.next_id += 1;
            registered(&w);
            ws.list.push((id, w));
            id
        };
        // Pairs with the fence of `written`: either the writer sees us counted, or we see its
        // store now.
        fence(Ordering::SeqCst);
        if !changed() {
            return None;
        }
        let mut ws = self.waiters.lock();
        let i = ws.list.iter().position(|x| x.0 == id)?;
        let (_, w) = ws.list.swap_remove(i);
        drop(ws);
        self.parked.fetch_sub(1, Ordering::SeqCst);
        Some(w)
    }

    /// Takes out the waiters `pick` chooses and hands each to `wake` (outside the lock);
    /// without looking when none is counted (see [`written`]). True if it took any.
    pub fn take(&self, pick: impl FnMut(&W) -> bool, wake: impl FnMut(W)) -> bool {
        if self.count() == 0 {
            return false;
        }
        self.take_then(pick, || (), wake)
    }

    /// Takes out the waiters `pick` chooses (it sees each once), then calls `then`, both under
    /// the lot's lock, whether or not any waiter is counted; then hands each waiter taken out
    /// to `wake`. True if it took any.
    pub fn take_then(
        &self,
        mut pick: impl FnMut(&W) -> bool,
        then: impl FnOnce(),
        mut wake: impl FnMut(W),
    ) -> bool {
        // Inline up to a few (a SmallVec returned by value would be copied whole).
        let mut taken: SmallVec<[W; 8]> = SmallVec::new();
        {
            let mut ws = self.waiters.lock();
            let mut j = 0;
            while j < ws.list.len() {
                if pick(&ws.list[j].1) {
                    taken.push(ws.list.swap_remove(j).1);
                } else {
                    j += 1;
                }
            }
            then();
        }
        if taken.is_empty() {
            return false;
        }
        self.parked.fetch_sub(taken.len(), Ordering::SeqCst);
        for w in taken {
            wake(w);
        }
        true
    }

    /// Calls `f` with each waiter, under the lot's lock.
    pub fn for_each(&self, f: impl FnMut(&W)) {
        self.waiters.lock().list.iter().map(|x| &x.1).for_each(f);
    }
}

/// The writer's half of the handshake: call it after the write and before looking for the
/// waiters of what was written ([`Lot::count`], [`Lot::take`], [`release`]).
pub(crate) fn written() {
    // Pairs with the fence of `Lot::park`: either the parker sees this write, or this sees it
    // counted.
    fence(Ordering::SeqCst);
}

/// Takes out the waiters `pick` chooses from each lot that counts any, and hands each to
/// `wake` with the index of its lot; true if there were any.
pub(crate) fn release<'a, W: 'a>(
    lots: impl Iterator<Item = &'a Lot<W>>,
    pick: impl Fn(&W) -> bool,
    mut wake: impl FnMut(usize, W),
) -> bool {
    let mut any = false;
    for (i, lot) in lots.enumerate() {
        any |= lot.take(&pick, |w| wake(i, w));
    }
    any
}

/// A parked task as the loom tests see it: a thread that waits until it is resumed (as a
/// worker resumes a task pushed to its queue).
#[cfg(all(test, loom))]
pub(crate) mod task {
    use loom::sync::atomic::AtomicBool;
    use loom::sync::{Arc, Notify};

    use crate::sync::Ordering;

    /// A parked task: resumed once its flag is set.
    #[derive(Clone, Default)]
    pub(crate) struct Task(Arc<(AtomicBool, Notify)>);

    impl Task {
        /// Resumes the task (a worker's push of it).
        pub(crate) fn resume(&self) {
            self.0 .0.store(true, Ordering::Release);
            self.0 .1.notify();
        }

        /// Waits until the task is resumed (loom's notify may wake spuriously).
        pub(crate) fn wait(&self) {
            while !self.0 .0.load(Ordering::Acquire) {
                self.0 .1.wait();
            }
        }
    }
}

#[cfg(all(test, loom))]
mod tests {
    use loom::sync::atomic::AtomicU64;
    use loom::sync::Arc;
    use loom::thread;

    use super::task::Task;
    use super::*;

    /// The parker of a value, as a worker parks a task on a GM flag (`PoolShared::park`): it
    /// parks unless the value changed since it read `seen`, and, parked, waits to be resumed.
    /// Returns the value it then reads.
    fn park_on(lot: &Lot<Task>, value: &AtomicU64, seen: u64) -> u64 {
        let me = Task::default();
        // GM reads are Acquire loads (mem::atomic_read).
        match lot.park(me.clone(), |_| (), || value.load(Ordering::Acquire) != seen) {
            Some(_) => {}
            None => me.wait(),
        }
        value.load(Ordering::Acquire)
    }

    /// A writer of the value, as a kernel's GM write wakes its pollers (`PoolShared::notify`):
    /// a Release store (mem::atomic_write), then the handshake.
    fn write(lots: &[Lot<Task>], value: &AtomicU64, v: u64) {
        value.store(v, Ordering::Release);
        written();
        release(lots.iter(), |_| true, |_, t| t.resume());
    }

    /// A task parks on a value while another thread writes it: it is always resumed (loom
    /// reports a deadlock if the write's wake-up is lost) and then sees the write.
    #[test]
    fn loom_park_never_misses_the_write_it_waits_for() {
        loom::model(|| {
            let lots = Arc::new([Lot::new()]);
            let value = Arc::new(AtomicU64::new(0));
            let (l, v) = (lots.clone(), value.clone());
            let writer = thread::spawn(move || write(&l[..], &v, 1));
            assert_eq!(park_on(&lots[0], &value, 0), 1);
            writer.join().unwrap();
            assert_eq!(lots[0].count(), 0);
            assert!(!lots[0].take_then(|_| true, || (), |_| ()));
        });
    }

    /// Two tasks of two workers park on one value; one write resumes both, whichever of them
    /// had registered when it looked. (Three threads: bounded to 2 preemptions, as tokio's CI
    /// bounds its models, or the run takes many minutes.)
    #[test]
    fn loom_one_write_resumes_the_parked_tasks_of_every_worker() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let lots = Arc::new([Lot::new(), Lot::new()]);
            let value = Arc::new(AtomicU64::new(0));
            let (l, v) = (lots.clone(), value.clone());
            let other = thread::spawn(move || park_on(&l[1], &v, 0));
            let (l, v) = (lots.clone(), value.clone());
            let writer = thread::spawn(move || write(&l[..], &v, 1));
            assert_eq!(park_on(&lots[0], &value, 0), 1);
            assert_eq!(other.join().unwrap(), 1);
            writer.join().unwrap();
            assert_eq!(lots[0].count() + lots[1].count(), 0);
        });
    }

    /// A write of another value than the one a task waits for does not resume it for good:
    /// the count never drops below the waiters registered, and a waiter taken out by a writer
    /// is not also returned by its own late look.
    #[test]
    fn loom_a_waiter_is_resumed_once() {
        loom::model(|| {
            let lot = Arc::new(Lot::new());
            let value = Arc::new(AtomicU64::new(0));
            let resumed = Arc::new(AtomicUsize::new(0));
            let (l, v, r) = (lot.clone(), value.clone(), resumed.clone());
            let writer = thread::spawn(move || {
                v.store(1, Ordering::Release);
                written();
                l.take(
                    |_| true,
                    |_| {
                        r.fetch_add(1, Ordering::SeqCst);
                    },
                );
            });
            let own = lot.park((), |_| (), || value.load(Ordering::Acquire) != 0);
            writer.join().unwrap();
            let by_writer = resumed.load(Ordering::SeqCst);
            // Exactly one of the two took it out, and the count is back to zero.
            assert_eq!(by_writer + usize::from(own.is_some()), 1);
            assert_eq!(lot.count(), 0);
        });
    }
}
