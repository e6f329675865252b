//! Tags for soft-sync flags: issued per launch, 64-bit, only growing, never cleared.
//!
//! Every kernel launch of a communicator gets fresh tags from [`Tags::reserve`] (one per launch
//! for the collectives; a range when a kernel needs several rounds). A flag cell holds a 64-bit
//! tag, and waits on the device compare wrap-safely ("reached" = the signed 64-bit difference
//! observed - expected is >= 0), so a waiter that sees a later tag never hangs and a flag never
//! needs clearing between launches. Within one launch different uses of flags use different
//! cells, so tags cannot collide however many chunks a collective has: each chunk is its own
//! launch with its own tag.
//!
//! Why 64 bits: with 32-bit tags the counter wraps after ~10^9 launches and a wrap protocol
//! (a cross-rank barrier kernel that clears every flag) had to run at the same point on every
//! rank, reserved in a separate step from the launch it preceded. At 2^63 launches a wrap is out
//! of reach (at a million launches a second, 292 000 years), so there is no wrap and no protocol.
//! The comparison is still wrap-safe, and tested across the signed boundary.

/// A communicator's tag counter.
#[derive(Debug, Clone)]
pub struct Tags {
    next: i64,
}

impl Default for Tags {
    fn default() -> Self {
        Tags::new()
    }
}

impl Tags {
    /// A counter whose first tag is 1.
    pub fn new() -> Tags {
        Tags { next: 1 }
    }

    /// Reserves `n` (at least 1) consecutive tags for one launch; returns the first. The launch
    /// owns `base .. base + n`.
    pub fn reserve(&mut self, n: i64) -> Option<i64> {
        if n < 1 {
            return None;
        }
        let base = self.next;
        self.next = self.next.checked_add(n)?;
        Some(base)
    }

    /// Tags issued so far.
    pub fn issued(&self) -> i64 {
        self.next - 1
    }
}

/// Wrap-safe "observed has reached expected", as the device compares tags (the unit tests hold
/// the tags to it).
#[cfg_attr(not(test), allow(dead_code))]
pub fn reached(observed: i64, expected: i64) -> bool {
    observed.wrapping_sub(expected) >= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_unique_and_grow() {
        let mut t = Tags::new();
        let mut last = 0;
        for i in 0..1000 {
            let n = (i % 3) + 1;
            let base = t.reserve(n).unwrap();
            assert!(base > last);
            last = base + n - 1;
        }
        assert_eq!(t.issued(), last);
        assert!(t.reserve(0).is_none());
    }

    #[test]
    fn reached_is_wrap_safe_across_the_signed_boundary() {
        assert!(reached(5, 5) && reached(6, 5) && !reached(4, 5));
        assert!(reached(i64::MIN, i64::MAX), "one past the maximum");
        assert!(!reached(i64::MAX, i64::MIN));
        assert!(reached(i64::MIN + 10, i64::MAX - 10));
    }
}
