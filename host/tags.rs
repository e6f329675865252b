//! Tags for soft-sync flags: issued per launch, monotonic, never cleared between launches.
//!
//! Every kernel launch of a communicator gets fresh tags from [`Tags::reserve`] (one per launch
//! for the collectives; a range when a kernel needs several rounds). Waits on the device compare
//! wrap-safely ("reached" = the signed 32-bit difference observed - expected is >= 0), so a waiter
//! that sees a later tag never hangs and a flag never needs clearing between launches. Within one
//! launch different uses of flags use different cells, so tags cannot collide however many chunks
//! a collective has: each chunk is its own launch with its own tag.
//!
//! ## Wrap protocol
//! Tags run from 1 up to a limit (default [`DEFAULT_TAG_LIMIT`] = 2^30, far inside the range
//! where the signed comparison is exact). A reservation that would pass the limit first runs the
//! wrap kernel (`aiv_sync_wrap`) on every rank, at the same point of the launch sequence (every
//! rank issues the same collectives in the same order, as HCCL requires):
//! 1. cross-rank barrier on the WRAP cells with value `2*epoch + 1`: all ranks finished every
//!    launch of the old range, so no flag of the old range is read or written again;
//! 2. each rank clears its own flag cells (all but the WRAP cells);
//! 3. cross-rank barrier with value `2*epoch + 2`: nobody writes into a rank's area before that
//!    rank has cleared it.
//!
//! The WRAP cells hold the monotonic epoch count and are never cleared. Tags restart at 1.
//! [`crate::Config::tag_limit`] can force a tiny limit so tests run the wrap thousands of times.

/// Default largest tag before a wrap.
pub const DEFAULT_TAG_LIMIT: i32 = 1 << 30;

/// A communicator's tag counter.
#[derive(Debug, Clone)]
pub struct Tags {
    next: i32,
    limit: i32,
    epoch: i32,
}

/// The result of [`Tags::reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// First reserved tag; the launch owns `base .. base + n`.
    pub base: i32,
    /// `Some(epoch)`: run the wrap protocol with this epoch before the launch.
    pub wrap: Option<i32>,
}

impl Tags {
    /// A counter whose tags run from 1 to `limit` (at least 2) before wrapping.
    pub fn new(limit: i32) -> Tags {
        Tags {
            next: 1,
            limit: limit.max(2),
            epoch: 0,
        }
    }

    /// The largest tag before a wrap.
    pub fn limit(&self) -> i32 {
        self.limit
    }

    /// Wraps done so far.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// Reserves `n` (1..=limit) consecutive tags for one launch.
    pub fn reserve(&mut self, n: i32) -> Option<Reservation> {
        if n < 1 || n > self.limit {
            return None;
        }
        let mut wrap = None;
        if self.next > self.limit - n + 1 {
            wrap = Some(self.epoch);
            self.epoch = self.epoch.wrapping_add(1);
            self.next = 1;
        }
        let base = self.next;
        self.next += n;
        Some(Reservation { base, wrap })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_unique_and_wrap_at_the_limit() {
        let mut t = Tags::new(10);
        let mut seen = Vec::new();
        let mut wraps = 0;
        for i in 0..100 {
            let n = (i % 3) + 1;
            let r = t.reserve(n).unwrap();
            if r.wrap.is_some() {
                assert_eq!(r.wrap, Some(wraps));
                wraps += 1;
                seen.clear();
            }
            assert!(r.base >= 1 && r.base + n - 1 <= 10);
            for tag in r.base..r.base + n {
                assert!(!seen.contains(&tag), "tag {tag} reused within an epoch");
                seen.push(tag);
            }
        }
        assert!(wraps >= 15);
        assert_eq!(t.epoch(), wraps);
        assert!(t.reserve(11).is_none());
        assert!(t.reserve(0).is_none());
    }
}
