//! Cache-line padding for hot shared state.
//!
//! The twin's hot shared state (park counters, waiter list, run queue bookkeeping) is written by
//! every worker thread; next to each other, or next to read-mostly values such as the knobs, they would
//! share cache lines and every write would evict the others from the other cores (false sharing,
//! measured at 10-15% of a small collective's time). Each gets a line pair of its own.

/// `T` alone on its own 128-byte block (two cache lines, covering adjacent-line prefetch).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
