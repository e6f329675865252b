//! Poisoned byte ranges of an allocation: the bytes a device task was to write, where the task
//! failed or was dropped unrun, each with the error that says why (see `buffer.rs`).
//!
//! Disjoint ranges in a sorted map, neighbours with the same cause merged, so that a failure
//! that drops thousands of chunks (each poisoning its piece of one output) costs a logarithmic
//! step per chunk and leaves a handful of ranges, not a list scanned at every step.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::Error;

/// The poisoned ranges of one allocation.
#[derive(Default)]
pub(crate) struct PoisonMap {
    /// start -> (end, cause); the ranges are disjoint and not empty.
    ranges: BTreeMap<usize, (usize, Arc<Error>)>,
}

/// Whether two causes are the same (one failure poisoning several pieces shares its `Arc`).
fn same(a: &Arc<Error>, b: &Arc<Error>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

impl PoisonMap {
    /// True if no byte is poisoned.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges that meet `[start, end)`, as (start, end), in order.
    fn meeting(&self, start: usize, end: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        if let Some((&s, &(e, _))) = self.ranges.range(..=start).next_back() {
            if e > start {
                out.push((s, e));
            }
        }
        if let Some(after) = start.checked_add(1) {
            out.extend(self.ranges.range(after..end).map(|(&s, &(e, _))| (s, e)));
        }
        out
    }

    /// Poisons the bytes of `[start, end)` that are not poisoned yet with `cause` (bytes already
    /// poisoned keep their first cause).
    pub fn poison(&mut self, start: usize, end: usize, cause: &Arc<Error>) {
        if start >= end {
            return;
        }
        let mut at = start;
        for (s, e) in self.meeting(start, end) {
            if s > at {
                self.ranges.insert(at, (s, cause.clone()));
            }
            at = at.max(e);
        }
        if at < end {
            self.ranges.insert(at, (end, cause.clone()));
        }
        self.merge_around(start, end);
    }

    /// Merges neighbouring ranges with the same cause among those meeting or touching
    /// `[start, end]`.
    fn merge_around(&mut self, start: usize, end: usize) {
        let lo = self
            .ranges
            .range(..start)
            .next_back()
            .map_or(start, |(&s, _)| s);
        let keys: Vec<usize> = self.ranges.range(lo..=end).map(|(&s, _)| s).collect();
        let mut prev: Option<usize> = None;
        for s in keys {
            if let Some(p) = prev {
                let (pe, pc) = self.ranges[&p].clone();
                let (e, c) = self.ranges[&s].clone();
                if pe == s && same(&pc, &c) {
                    self.ranges.remove(&s);
                    self.ranges.insert(p, (e, pc));
                    continue;
                }
            }
            prev = Some(s);
        }
    }

    /// Clears the poison of `[start, end)` (the bytes hold what was written there since).
    pub fn clear(&mut self, start: usize, end: usize) {
        if start >= end || self.is_empty() {
            return;
        }
        for (s, e) in self.meeting(start, end) {
            let (_, cause) = self.ranges.remove(&s).expect("a range found above");
            if s < start {
                self.ranges.insert(s, (start, cause.clone()));
            }
            if end < e {
                self.ranges.insert(end, (e, cause));
            }
        }
    }

    /// The cause of the first poisoned byte of `[start, end)`, if any.
    pub fn first(&self, start: usize, end: usize) -> Option<&Arc<Error>> {
        if start >= end || self.is_empty() {
            return None;
        }
        let (s, _) = *self.meeting(start, end).first()?;
        self.ranges.get(&s).map(|(_, c)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map against an array of bytes, each with its cause (a tiny xorshift drives both).
    #[test]
    fn agrees_with_a_byte_array_oracle() {
        const LEN: usize = 96;
        let causes: Vec<Arc<Error>> = (0..4)
            .map(|i| Arc::new(Error::Config(format!("cause {i}"))))
            .collect();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        for _round in 0..200 {
            let mut map = PoisonMap::default();
            let mut bytes: Vec<Option<usize>> = vec![None; LEN];
            for _op in 0..40 {
                let a = next(LEN + 1);
                let b = next(LEN + 1);
                let (s, e) = (a.min(b), a.max(b));
                if next(3) == 0 {
                    map.clear(s, e);
                    bytes[s..e].iter_mut().for_each(|c| *c = None);
                } else {
                    let k = next(causes.len());
                    map.poison(s, e, &causes[k]);
                    for c in &mut bytes[s..e] {
                        c.get_or_insert(k);
                    }
                }
                // Disjoint, not empty, neighbours with one cause merged.
                let mut last: Option<(usize, &Arc<Error>)> = None;
                for (&s, (e, c)) in &map.ranges {
                    assert!(s < *e);
                    if let Some((pe, pc)) = last {
                        assert!(pe <= s);
                        assert!(pe < s || !same(pc, c), "unmerged neighbours at {s}");
                    }
                    last = Some((*e, c));
                }
                for _q in 0..8 {
                    let a = next(LEN + 1);
                    let b = next(LEN + 1);
                    let (s, e) = (a.min(b), a.max(b));
                    let want = bytes[s..e].iter().flatten().next().map(|&k| &causes[k]);
                    let got = map.first(s, e);
                    assert_eq!(got.map(|c| c.to_string()), want.map(|c| c.to_string()));
                }
                assert_eq!(map.is_empty(), bytes.iter().all(Option::is_none));
            }
        }
    }

    #[test]
    fn thousands_of_adjacent_pieces_of_one_failure_are_one_range() {
        let mut map = PoisonMap::default();
        let cause = Arc::new(Error::Config("timed out".into()));
        // A strided output (4 pieces per chunk) over 10 000 chunks, as an AllGather leaves it.
        for c in 0..10_000 {
            for r in 0..4 {
                let s = r * 1_000_000 + c * 32;
                map.poison(s, s + 32, &cause);
            }
        }
        assert_eq!(map.ranges.len(), 4);
        map.clear(0, 4_000_000);
        assert!(map.is_empty());
    }
}
