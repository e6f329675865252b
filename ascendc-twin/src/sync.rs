//! The synchronisation primitives of the protocols checked with loom (the park/notify handshake
//! of `lot.rs` and [`crate::HostSignal`]'s): std's atomics and parking_lot's locks in every
//! build, loom's under `--cfg loom`, where the loom tests drive the real types through every
//! interleaving of a few threads (`RUSTFLAGS="--cfg loom" cargo test -p ascendc-twin --release
//! --lib loom_`).
//!
//! Without `--cfg loom` these are plain re-exports: the twin compiles to the same types as when
//! it named std and parking_lot directly. Under loom, thin wrappers give loom's `Mutex` and
//! `Condvar` parking_lot's interface (no poisoning, a `Condvar` that waits on `&mut` guard).
//! Only the code of those protocols uses this module; the rest of the twin keeps std and
//! parking_lot (under loom it is built, but only the `loom_` tests run).

#[cfg(not(loom))]
pub(crate) use parking_lot::{Condvar, Mutex};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom_locks::{Condvar, Mutex};

/// The address of an atomic's value (where a task parked on it is registered).
#[cfg(not(loom))]
pub(crate) fn addr_of(a: &AtomicU64) -> usize {
    a.as_ptr() as usize
}

/// The address of an atomic's value (where a task parked on it is registered): under loom, the
/// atomic's own address, never read through.
#[cfg(loom)]
pub(crate) fn addr_of(a: &AtomicU64) -> usize {
    a as *const AtomicU64 as usize
}

#[cfg(loom)]
mod loom_locks {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    /// loom's mutex with parking_lot's interface.
    #[derive(Debug, Default)]
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

    /// What a timed wait returned.
    pub(crate) struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        pub(crate) fn timed_out(&self) -> bool {
            self.0
        }
    }

    /// loom's condition variable with parking_lot's interface. A timed wait never times out
    /// (loom does not model time): loom tests wait without a deadline.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Condvar {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
            let inner = g.0.take().expect("guard held");
            g.0 = Some(self.0.wait(inner).expect("loom mutex poisoned"));
        }

        pub(crate) fn wait_until<T>(
            &self,
            g: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> WaitTimeoutResult {
            self.wait(g);
            WaitTimeoutResult(false)
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
