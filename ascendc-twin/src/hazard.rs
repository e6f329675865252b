//! Intra-core pipe-hazard checker.
//!
//! The twin runs a core's pipes in program order, so a kernel that reads in UB on MTE3 what MTE2
//! wrote, without a flag between them, gets the right answer here and a wrong one on the NPU,
//! where the pipes run concurrently. This checker finds such kernels with vector clocks.
//!
//! Model (Atlas A2 AIV: pipes MTE2, MTE3, V, and the scalar unit S that issues everything):
//! * every UB access by MTE2 (DataCopy GM->UB), MTE3 (UB->GM) or V (every vector instruction:
//!   the exact bytes its lanes read and write, reads before writes) is an event on that pipe; scalar stores to UB (LocalTensor::SetValue) are events on a scalar-store "pipe"
//!   SW whose completion the scalar unit itself does not wait for;
//! * `SetFlag<A_B>` snapshots A's clock (for A = S: the scalar stores so far and what S knows),
//!   the matching `WaitFlag<A_B>` joins it into B (B = S: into what the scalar unit knows);
//! * `PipeBarrier<PIPE_ALL>` joins every pipe with every other;
//! * an instruction is issued by S, so it starts after everything S knows has completed: issuing
//!   joins S's knowledge into the executing pipe;
//! * scalar loads (LocalTensor::GetValue) are synchronous: they need what they read to be known
//!   complete by S, and nothing needs to wait for them.
//!
//! Two accesses to overlapping UB bytes conflict when at least one writes and they are on
//! different pipes; the later one must know (through its clock) that the earlier one completed.
//! One exception: a write that would store exactly the bytes already there (a DMA load of the
//! same data, a scalar store or vector fill of the same value, into bytes another pipe is still
//! reading or writing) cannot change any result in any order; the caller says when that is so,
//! and such overwrites are counted, not reported. The bytes then keep their pending readers, and
//! an earlier writer the identical write did not wait for is kept too: a later write of other
//! bytes must be ordered after both.
//! A read of UB bytes none of which the kernel has written is reported too (it would read what an
//! earlier kernel left there).
//! The UB is tracked as a short list of byte ranges with their last writer and last readers.
//!
//! Automatic synchronisation (`auto_sync`, a kernel built with the compiler's `--cce-auto-sync`,
//! `ascendc-build`'s default; the AscendC docs: the compiler orders LocalTensor reads and writes
//! that depend on each other, so the kernel writes no sync for them). Modelled as the pair of
//! flags the compiler inserts next to the dependent access, for the scalar unit only:
//! * before a scalar load or store of UB bytes, the scalar unit waits for every pipe with an
//!   access of those bytes it would conflict with (`WaitFlag<X_S>` right after `SetFlag<X_S>`:
//!   all of X's instructions so far);
//! * before a pipe instruction accesses bytes a scalar store wrote, the pipe waits for the
//!   scalar unit (`SetFlag<S_X>` + `WaitFlag<S_X>`).
//!
//! Conflicts between two pipes (MTE2, MTE3, V) are still reported: the compiler orders
//! LocalTensor accesses by the scalar unit, and queues order the rest (TQue's EnQue/DeQue).
//! Assumed where the docs are silent: the inserted pair sits right before the dependent access
//! (so it orders everything the pipe did before), and a raw `__ubuf__` pointer access is not
//! covered (the twin does not see those accesses anyway).
//!
//! Not checked, on purpose: two vector instructions where the later reads what the earlier
//! wrote. On Atlas A2 they need `PipeBarrier<PIPE_V>` between them, but the bisheng compiler
//! inserts it itself with `--cce-auto-sync=on`, the default of AscendC's kernel projects and
//! `<<<>>>` launches (AscendC docs, PipeBarrier), so a kernel without it is correct as users
//! build it; reporting it would be a false alarm. aiv-comm's own kernels put it in anyway.

use smallvec::SmallVec;

use crate::pipes::EVENT_IDS;

/// Tracked pipes.
const MTE2: usize = 0;
const MTE3: usize = 1;
const V: usize = 2;
/// Scalar stores to UB.
const SW: usize = 3;
/// Pseudo-pipe for "the scalar unit" in HardEvent names.
const S: usize = 4;
const NAMES: [&str; 5] = ["MTE2", "MTE3", "V", "S (scalar store)", "S"];

type Vc = [u32; 4];

fn join(a: &mut Vc, b: &Vc) {
    for i in 0..4 {
        a[i] = a[i].max(b[i]);
    }
}

/// (source, destination) pipes of AscendC's `HardEvent` values, for the pipes the checker
/// tracks; `None` for events between pipes an AIV kernel does not use (cube, FIX, MTE1).
fn event_pipes(e: usize) -> Option<(usize, usize)> {
    Some(match e {
        4 => (MTE2, V), // MTE2_V
        5 => (V, MTE2), // V_MTE2
        6 => (MTE3, V), // MTE3_V
        7 => (V, MTE3), // V_MTE3
        10 => (V, V),   // V_V
        19 => (MTE3, MTE2),
        20 => (MTE2, MTE3),
        21 => (S, V),
        22 => (V, S),
        23 => (S, MTE2),
        24 => (MTE2, S),
        25 => (S, MTE3),
        26 => (MTE3, S),
        _ => return None,
    })
}

/// Which access the checker is told about.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Access {
    /// DataCopy GM -> UB (MTE2 writes UB).
    Mte2Write,
    /// DataCopy UB -> GM (MTE3 reads UB).
    Mte3Read,
    /// Vector instruction writing UB.
    VWrite,
    /// Vector instruction reading UB.
    VRead,
    /// LocalTensor::SetValue.
    ScalarWrite,
    /// LocalTensor::GetValue.
    ScalarRead,
}

impl Access {
    /// The pipe (index) that makes the access, and whether it writes.
    fn pipe(self) -> (usize, bool) {
        match self {
            Access::Mte2Write => (MTE2, true),
            Access::Mte3Read => (MTE3, false),
            Access::VWrite => (V, true),
            Access::VRead => (V, false),
            Access::ScalarWrite => (SW, true),
            Access::ScalarRead => (S, false),
        }
    }
}

/// A range of UB bytes with one state: offsets in the core's UB (at most
/// [`crate::MAX_UB_BYTES`], which `Device::new` enforces, so they fit 32 bits), pipes as
/// indices. 32 bytes, so that a block's inline list fits in half a KiB, its checker state
/// in the allocator's small-size cache, and two segments in a cache line.
#[derive(Clone, Copy, PartialEq)]
struct Seg {
    start: u32,
    end: u32,
    w_time: u32,
    /// An earlier write of the same bytes that a later identical write did not wait for: it may
    /// still land, so a write of other bytes must be ordered after it too (a read is fine
    /// after either: both store the same bytes). Its time, 0 for none, and pipe.
    w_prev_time: u32,
    reads: [u32; 3],
    w_pipe: u8,
    w_prev_pipe: u8,
}

const _: () = assert!(std::mem::size_of::<Seg>() == 32);

impl Seg {
    /// `[start, end)` last written by `w_pipe` at `w_time` (0: never), no reads pending.
    fn written(start: usize, end: usize, w_pipe: usize, w_time: u32) -> Seg {
        Seg {
            start: start as u32,
            end: end as u32,
            w_time,
            w_prev_time: 0,
            reads: [0; 3],
            w_pipe: w_pipe as u8,
            w_prev_pipe: 0,
        }
    }
    /// First byte.
    fn start(&self) -> usize {
        self.start as usize
    }
    /// One past the last byte.
    fn end(&self) -> usize {
        self.end as usize
    }
    /// The pipe of the last write.
    fn w_pipe(&self) -> usize {
        self.w_pipe as usize
    }
    /// The earlier write still pending, as (pipe, time).
    fn w_prev(&self) -> Option<(usize, u32)> {
        (self.w_prev_time > 0).then_some((self.w_prev_pipe as usize, self.w_prev_time))
    }
}

/// Per-block checker state.
#[derive(Default)]
pub(crate) struct Hazards {
    vc: [Vc; 4],
    known: Vc,
    segs: SmallVec<[Seg; 16]>,
    /// Pending SetFlag snapshots, oldest first, keyed by (event, id); a kernel has few pending.
    tokens: SmallVec<[(usize, Vc); 8]>,
    /// Index of the segment the last access started in: a hint (checked before use, so a
    /// stale one costs a search, never a wrong answer). Polls touch one flag cell again and
    /// again, and the dependent loads of a search through a block's cold segment list were
    /// most of `access`'s time in a checked small collective.
    last: usize,
    /// UB bytes `[.0, .1)` that a scalar load checked with no report covered, all of them
    /// written, with nothing recorded since (empty when `.0 == .1`). A load inside them needs
    /// no check: it would see the same segments, and what the scalar unit knows only grows
    /// (flags and barriers join into it), so it is ordered after them too. Polls read several
    /// lanes of the cell one DMA brought in; each lane was a search and a check.
    loads_ok: (u32, u32),
    /// Unordered overwrites with identical bytes (harmless, not reported).
    pub benign: u64,
    /// The kernel was built with the compiler's automatic synchronisation (module docs).
    pub auto_sync: bool,
    /// Tests: take the general path for every access (the reference the fast paths must
    /// agree with).
    #[cfg(test)]
    force_general: bool,
    /// Tests: accesses the lean paths (whole segments, appended bytes) recorded.
    #[cfg(test)]
    lean_hits: u64,
    /// Tests: accesses inside one segment that [`Hazards::split_inside`] recorded.
    #[cfg(test)]
    inner_hits: u64,
    /// Tests: scalar loads that `loads_ok` covered.
    #[cfg(test)]
    cached_loads: u64,
}

/// What an access is not ordered after.
#[derive(Clone, Copy)]
enum Unordered {
    /// The (last or earlier) write of the bytes by this pipe.
    Write(usize),
    /// A pending read of the bytes by this pipe (the access writes).
    Read(usize),
}

/// What an access to segment `s` by `pipe` (a write or not) that knows `knows` is not ordered
/// after, or None when it is ordered after everything the segment records. Inlined (every
/// access checks every segment it touches); the messages are built apart, by [`message`].
#[inline(always)]
fn conflict(s: &Seg, pipe: usize, write: bool, knows: &Vc) -> Option<Unordered> {
    let writer_unknown =
        |w: usize, t: u32| t > 0 && w != pipe && !(pipe == S && w == SW) && knows[w] < t;
    let last_unknown = writer_unknown(s.w_pipe(), s.w_time);
    let prev_unknown = s.w_prev().is_some_and(|(w, t)| writer_unknown(w, t));
    let unordered_write = if write {
        last_unknown || prev_unknown
    } else {
        // A read needs the bytes from either write of them.
        last_unknown && (s.w_prev().is_none() || prev_unknown)
    };
    if unordered_write {
        return Some(Unordered::Write(if last_unknown {
            s.w_pipe()
        } else {
            s.w_prev().map_or(s.w_pipe(), |(w, _)| w)
        }));
    }
    if write {
        if let Some(q) = [MTE2, MTE3, V]
            .into_iter()
            .find(|&q| q != pipe && s.reads[q] > knows[q])
        {
            return Some(Unordered::Read(q));
        }
    }
    None
}

/// The report of an access to UB bytes `[start, end)` by `pipe` (a write or not) that is not
/// ordered after `what`.
#[cold]
#[inline(never)]
fn message(what: Unordered, start: usize, end: usize, pipe: usize, write: bool) -> String {
    match what {
        Unordered::Write(w) => unordered_write_message(start, end, pipe, write, w),
        Unordered::Read(q) => pending_read_message(start, end, pipe, q),
    }
}

/// The message of an access to `[start, end)` by `pipe` not ordered after writer `w`.
fn unordered_write_message(start: usize, end: usize, pipe: usize, write: bool, w: usize) -> String {
    format!(
        "{} {} UB bytes {:#x}..{:#x} that {} wrote, with no SetFlag/WaitFlag or PipeBarrier ordering them ({} before {} on the NPU is not guaranteed)",
        NAMES[pipe],
        if write { "overwrites" } else { "reads" },
        start,
        end,
        NAMES[w],
        NAMES[w],
        NAMES[pipe]
    )
}

/// The message of a write of `[start, end)` by `pipe` not ordered after reader `q`.
fn pending_read_message(start: usize, end: usize, pipe: usize, q: usize) -> String {
    format!(
        "{} overwrites UB bytes {:#x}..{:#x} that {} may still be reading, with no SetFlag/WaitFlag or PipeBarrier ordering them",
        NAMES[pipe], start, end, NAMES[q]
    )
}

/// The message of a read of `[start, end)` by `pipe` none of whose bytes the kernel wrote.
#[cold]
#[inline(never)]
fn stale(pipe: usize, start: usize, end: usize) -> String {
    format!(
        "{} reads UB bytes {:#x}..{:#x}, none of which this kernel has written (stale data from an earlier kernel)",
        NAMES[pipe], start, end
    )
}

// A block's checker state is boxed per block run: at this size glibc's per-thread cache
// (requests up to 1032 bytes) serves it; at 1344 bytes (64-byte segments) every block run went
// through malloc's slow paths, 6M instructions per checked 8-rank 64 KiB AllReduce run of 122
// operations.
#[cfg(not(test))]
const _: () = assert!(std::mem::size_of::<Hazards>() <= 1024);

impl Hazards {
    /// Whether accesses may take the paths that skip splitting (always, but in tests that
    /// compare them with the general path).
    #[inline]
    fn fast_paths(&self) -> bool {
        #[cfg(test)]
        {
            !self.force_general
        }
        #[cfg(not(test))]
        {
            true
        }
    }

    /// A scalar load of `[start, end)` that knows `knows`: the checks of [`Hazards::access`]
    /// on the overlapped segments as they are (each clipped to the range, so messages name
    /// the bytes the general path's split would), recording nothing.
    fn check_load(&mut self, start: usize, end: usize, knows: &Vc) -> Result<(), String> {
        let (lo, hi) = match self.segs.get(self.last) {
            Some(s) if s.start() <= start && end <= s.end() => (self.last, self.last + 1),
            _ => (
                self.segs.partition_point(|s| s.end() <= start),
                self.segs.partition_point(|s| s.start() < end),
            ),
        };
        self.last = lo;
        let overlapped = &self.segs[lo..hi.max(lo)];
        if overlapped.iter().all(|s| s.w_time == 0) {
            return Err(stale(S, start, end));
        }
        for s in overlapped {
            if let Some(what) = conflict(s, S, false, knows) {
                return Err(message(
                    what,
                    s.start().max(start),
                    s.end().min(end),
                    S,
                    false,
                ));
            }
        }
        // Cover the segments for later loads only if all were written (a later load of a
        // never-written part alone must still be reported).
        self.loads_ok = match (overlapped.first(), overlapped.last()) {
            (Some(a), Some(b)) if overlapped.iter().all(|s| s.w_time > 0) => (a.start, b.end),
            _ => (0, 0),
        };
        Ok(())
    }

    /// `SetFlag<event>(id)`.
    pub fn set_flag(&mut self, event: usize, id: usize) {
        if let Some((src, _)) = event_pipes(event) {
            let token = if src == S {
                let mut t = self.vc[SW];
                join(&mut t, &self.known);
                t
            } else {
                self.vc[src]
            };
            self.tokens.push((event * EVENT_IDS + id, token));
        }
    }

    /// `WaitFlag<event>(id)` (the pairing itself is checked by the caller).
    pub fn wait_flag(&mut self, event: usize, id: usize) {
        if let Some((_, dst)) = event_pipes(event) {
            let key = event * EVENT_IDS + id;
            let Some(i) = self.tokens.iter().position(|(k, _)| *k == key) else {
                return;
            };
            let token = self.tokens.remove(i).1;
            if dst == S {
                join(&mut self.known, &token);
            } else {
                join(&mut self.vc[dst], &token);
            }
        }
    }

    /// `PipeBarrier<PIPE_ALL>`.
    pub fn barrier_all(&mut self) {
        let mut all = self.known;
        for v in &self.vc {
            join(&mut all, v);
        }
        self.vc = [all; 4];
        self.known = all;
    }

    /// Merges neighbours among segments `lo..hi` that hold the same state (keeps the list short).
    fn coalesce(&mut self, lo: usize, hi: usize) {
        let mut i = lo;
        let mut end = hi;
        while i + 1 < end {
            let (a, b) = (self.segs[i], self.segs[i + 1]);
            let same = Seg {
                start: b.start,
                end: b.end,
                ..a
            } == b;
            if same && a.end == b.start {
                self.segs[i].end = b.end;
                self.segs.remove(i + 1);
                end -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// Makes sure a segment boundary exists at `x`.
    fn split(&mut self, x: usize) {
        let i = self.segs.partition_point(|s| s.end() <= x);
        if i < self.segs.len() && self.segs[i].start() < x {
            let mut right = self.segs[i];
            right.start = x as u32;
            self.segs[i].end = x as u32;
            self.segs.insert(i + 1, right);
        }
    }

    /// Records an access to UB bytes `[start, end)` (offsets in the core's UB); returns a
    /// description of the hazard if it conflicts with an earlier access it is not ordered after.
    /// `identical(a, b)`: whether a write stores into `[a, b)` exactly the bytes already there
    /// (then overwriting them unordered is harmless: counted in `benign`, not reported).
    ///
    /// Inlined into its callers: scalar loads, half of a small collective's accesses and most
    /// of them inside bytes a load already checked (`loads_ok`), are decided here without the
    /// call, register saves and dispatch of the recording paths ([`Hazards::record`]).
    #[inline]
    pub fn access(
        &mut self,
        kind: Access,
        start: usize,
        end: usize,
        identical: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<(), String> {
        if self.auto_sync && start < end {
            self.auto_sync_waits(kind, start, end);
        }
        if kind == Access::ScalarRead && start < end && self.fast_paths() {
            let (a, b) = self.loads_ok;
            if a as usize <= start && end <= b as usize {
                #[cfg(test)]
                {
                    self.cached_loads += 1;
                }
                return Ok(());
            }
            // A scalar load records nothing: check the segments it overlaps where they lie,
            // without splitting them (polls read a lane of a cell a DMA just filled whole; a
            // split there would be merged back by the next fill, every poll). What it knows:
            // what the scalar unit knows.
            let knows = self.known;
            return self.check_load(start, end, &knows);
        }
        self.record(kind, start, end, identical)
    }

    /// The flags the compiler's automatic synchronisation inserts before an access of `kind`
    /// to `[start, end)` (module docs): the scalar unit waits for the pipes whose accesses of
    /// the bytes a scalar access conflicts with; a pipe waits for the scalar unit before it
    /// accesses bytes a scalar store wrote.
    #[cold]
    fn auto_sync_waits(&mut self, kind: Access, start: usize, end: usize) {
        let lo = self.segs.partition_point(|s| s.end() <= start);
        let hi = self.segs.partition_point(|s| s.start() < end).max(lo);
        let (pipe, write) = kind.pipe();
        match pipe {
            S | SW => {
                let mut known = self.known;
                for s in &self.segs[lo..hi] {
                    let writes = [(s.w_pipe(), s.w_time), s.w_prev().unwrap_or((SW, 0))];
                    for (w, t) in writes {
                        if w != SW && t > 0 && known[w] < t {
                            join(&mut known, &self.vc[w]);
                        }
                    }
                    if write {
                        for q in [MTE2, MTE3, V] {
                            if s.reads[q] > known[q] {
                                join(&mut known, &self.vc[q]);
                            }
                        }
                    }
                }
                // Only grows: the scalar loads' cache (`loads_ok`) stays valid.
                self.known = known;
            }
            _ => {
                let scalar_wrote = self.segs[lo..hi].iter().any(|s| {
                    let writes = [(s.w_pipe(), s.w_time), s.w_prev().unwrap_or((S, 0))];
                    writes
                        .iter()
                        .any(|&(w, t)| w == SW && t > 0 && self.vc[pipe][SW] < t)
                });
                if scalar_wrote {
                    let mut token = self.vc[SW];
                    join(&mut token, &self.known);
                    join(&mut self.vc[pipe], &token);
                }
            }
        }
    }

    /// [`Hazards::access`] of anything but a scalar load on the fast paths (also of an empty
    /// range, and of every access in tests that force the general path): checks and records
    /// it.
    #[inline(never)]
    fn record(
        &mut self,
        kind: Access,
        start: usize,
        end: usize,
        identical: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<(), String> {
        if start >= end {
            return Ok(());
        }
        let (pipe, write) = kind.pipe();
        // What the access knows has completed before it.
        let knows: Vc = match pipe {
            S | SW => self.known,
            p => {
                let k = self.known;
                join(&mut self.vc[p], &k);
                self.vc[p]
            }
        };
        if pipe != S {
            // Anything recorded may change what a scalar load of the bytes must be after. (Here,
            // before every path below: the general one may split segments, then report.)
            self.loads_ok = (0, 0);
        }
        if !self.fast_paths() || pipe == S {
            // (A scalar load gets here only in tests that force the general path.)
            return self.access_general(pipe, write, &knows, (start, end), None, identical);
        }
        let tracked = self.segs.last().map_or(0, Seg::end);
        if write && start >= tracked {
            // Bytes the list does not reach yet (a block's first touch of a buffer or cell):
            // nothing to be ordered after; append them, after a never-written gap if any.
            #[cfg(test)]
            {
                self.lean_hits += 1;
            }
            if start > tracked {
                self.segs.push(Seg::written(tracked, start, 0, 0));
            }
            self.vc[pipe][pipe] += 1;
            self.segs
                .push(Seg::written(start, end, pipe, self.vc[pipe][pipe]));
            self.last = self.segs.len() - 1;
            return Ok(());
        }
        // An access of whole tracked segments (a flag cell polled again, a buffer reloaded
        // whole, a cell stored after lanes of it were set) needs no split: the hint or one
        // search finds the first, a short walk the last. When it is also ordered after what
        // they record (the common case by far), it is recorded here; else the general path
        // decides (a stale read, an identical rewrite, a report).
        let segs: &mut [Seg] = &mut self.segs;
        let lo = match segs.get(self.last) {
            Some(s) if s.start() == start => self.last,
            _ => segs.partition_point(|s| s.end() <= start),
        };
        // `lo..hi`: the segments from the one `start` opens to the one `end` closes, if both
        // are boundaries (`whole`); one pass checks them as it goes.
        let (mut hi, mut whole, mut written, mut ordered) = (lo, false, write, true);
        if segs.get(lo).is_some_and(|s| s.start() == start) {
            for s in &segs[lo..] {
                hi += 1;
                written |= s.w_time > 0;
                ordered &= conflict(s, pipe, write, &knows).is_none();
                if s.end() >= end {
                    whole = s.end() == end;
                    break;
                }
            }
        }
        if whole && written && ordered {
            #[cfg(test)]
            {
                self.lean_hits += 1;
            }
            self.last = lo;
            self.vc[pipe][pipe] += 1;
            let t = self.vc[pipe][pipe];
            if write {
                // One state over the whole range: one segment.
                segs[lo] = Seg::written(start, end, pipe, t);
                if hi > lo + 1 {
                    self.segs.drain(lo + 1..hi);
                }
            } else {
                for s in &mut segs[lo..hi] {
                    s.reads[pipe] = t;
                }
            }
            return Ok(());
        }
        if !whole {
            if let Some(&s) = segs.get(lo) {
                // Inside one segment, not all of it: a scalar store of a lane in a cell a DMA or
                // vector instruction filled, a DMA into part of a never-written stretch (a
                // flag cell, a tile after the ones before it). The general path would split
                // the segment at both ends, check the middle (it holds the segment's state)
                // and record it, merging nothing. When the middle is ordered after that state
                // and is not a stale read, do the same here without the searches.
                let inside = s.start() <= start && end <= s.end();
                if inside && (write || s.w_time > 0) && conflict(&s, pipe, write, &knows).is_none()
                {
                    self.split_inside(lo, s, pipe, write, (start, end));
                    return Ok(());
                }
            }
        }
        let exact = (whole && hi == lo + 1).then_some(lo);
        self.access_general(pipe, write, &knows, (start, end), exact, identical)
    }

    /// Records an access by `pipe` (a write or not), already checked, of `[start, end)`, which
    /// lies inside segment `lo` (a copy of it: `s`): the segment becomes up to three, the
    /// middle one recording the access, the others keeping `s`'s state.
    fn split_inside(
        &mut self,
        lo: usize,
        s: Seg,
        pipe: usize,
        write: bool,
        (start, end): (usize, usize),
    ) {
        #[cfg(test)]
        {
            self.inner_hits += 1;
        }
        self.vc[pipe][pipe] += 1;
        let t = self.vc[pipe][pipe];
        let mid = if write {
            Seg::written(start, end, pipe, t)
        } else {
            let mut m = s;
            (m.start, m.end) = (start as u32, end as u32);
            m.reads[pipe] = t;
            m
        };
        // At most two insertions, each one move of the (short) list's tail.
        let mut i = lo;
        if s.start() < start {
            self.segs[i] = Seg {
                end: start as u32,
                ..s
            };
            i += 1;
            self.segs.insert(i, mid);
        } else {
            self.segs[i] = mid;
        }
        self.last = i;
        if end < s.end() {
            self.segs.insert(
                i + 1,
                Seg {
                    start: end as u32,
                    ..s
                },
            );
        }
    }

    /// [`Hazards::access`] of `[start, end)` by a recording pipe (any pipe, without the fast
    /// paths) that knows `knows`: splits the tracked segments at the range's ends (unless
    /// `exact` names the one segment the range is), checks each, counts identical rewrites,
    /// records. Out of line: the lean path above is what polls and whole-buffer copies take.
    #[inline(never)]
    fn access_general(
        &mut self,
        pipe: usize,
        write: bool,
        knows: &Vc,
        (start, end): (usize, usize),
        exact: Option<usize>,
        identical: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<(), String> {
        let (lo, hi) = if let Some(i) = exact {
            (i, i + 1)
        } else {
            // Make the tracked list cover [start, end).
            if self.segs.last().is_none_or(|s| s.end() < end) {
                let from = self.segs.last().map_or(0, |s| s.end());
                self.segs.push(Seg::written(from, end.max(from), 0, 0));
            }
            self.split(start);
            self.split(end);
            (
                self.segs.partition_point(|s| s.end() <= start),
                self.segs.partition_point(|s| s.start() < end),
            )
        };
        self.last = lo;
        if !write && self.segs[lo..hi].iter().all(|s| s.w_time == 0) {
            // Not one byte of what is read was written by this kernel: the NPU would return
            // whatever an earlier kernel left in UB. (Partly written ranges are accepted: a
            // kernel may move a whole 32-byte block of which it filled only a lane.)
            return Err(stale(pipe, start, end));
        }
        let mut benign = SmallVec::<[bool; 8]>::new();
        for s in &self.segs[lo..hi] {
            match conflict(s, pipe, write, knows) {
                None => benign.push(false),
                Some(_) if write && identical(s.start(), s.end()) => {
                    self.benign += 1;
                    benign.push(true);
                }
                Some(what) => return Err(message(what, s.start(), s.end(), pipe, write)),
            }
        }
        if pipe == S {
            return Ok(()); // synchronous scalar loads need no record
        }
        self.vc[pipe][pipe] += 1;
        let t = self.vc[pipe][pipe];
        if write {
            for (s, &same) in self.segs[lo..hi].iter_mut().zip(&benign) {
                if same {
                    // The bytes did not change: readers still pending stay pending, and an
                    // earlier writer this one did not wait for may still land.
                    let pending =
                        s.w_time > 0 && s.w_pipe() != pipe && knows[s.w_pipe()] < s.w_time;
                    if pending {
                        (s.w_prev_pipe, s.w_prev_time) = (s.w_pipe, s.w_time);
                    }
                    s.w_pipe = pipe as u8;
                    s.w_time = t;
                } else {
                    *s = Seg::written(s.start(), s.end(), pipe, t);
                }
            }
            self.coalesce(lo, hi);
        } else {
            for s in &mut self.segs[lo..hi] {
                s.reads[pipe] = t;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    /// The verdict without the byte range (the two paths may cut the UB into segments
    /// differently, so the first conflicting piece they name can differ in its bounds).
    fn verdict(r: &Result<(), String>) -> Option<String> {
        r.as_ref().err().map(|m| {
            let (a, b) = m.split_once("UB bytes ").expect("names UB bytes");
            let rest = b.split_once(' ').map_or("", |x| x.1);
            format!("{a}{rest}")
        })
    }

    /// With automatic synchronisation the scalar unit's accesses are ordered with the pipes as
    /// the compiler orders them, each case being reported without it; a hazard between two
    /// pipes, and one the inserted flags do not cover (a pipe after a scalar store of other
    /// bytes, then a third pipe), is reported either way.
    #[test]
    fn automatic_synchronisation_orders_the_scalar_unit_only() {
        use Access::*;
        let run = |auto_sync: bool, steps: &[(Access, usize, usize)]| -> Result<(), String> {
            let mut h = Hazards {
                auto_sync,
                ..Hazards::default()
            };
            for &(kind, a, b) in steps {
                h.access(kind, a, b, &mut |_, _| false)?;
            }
            Ok(())
        };
        let scalar_cases: [&[(Access, usize, usize)]; 5] = [
            // GetValue of what MTE2 loaded.
            &[(Mte2Write, 0, 32), (ScalarRead, 0, 4)],
            // GetValue of a vector result.
            &[
                (VWrite, 0, 32),
                (VRead, 0, 32),
                (VWrite, 32, 64),
                (ScalarRead, 36, 40),
            ],
            // SetValue, then MTE3 stores the buffer.
            &[(ScalarWrite, 0, 4), (Mte3Read, 0, 32)],
            // SetValue into bytes MTE3 may still be reading.
            &[(ScalarWrite, 0, 32), (Mte3Read, 0, 32), (ScalarWrite, 0, 4)],
            // SetValue, then a vector instruction reads it.
            &[(ScalarWrite, 0, 32), (VRead, 0, 32), (VWrite, 32, 64)],
        ];
        for (i, steps) in scalar_cases.iter().enumerate() {
            assert!(run(false, steps).is_err(), "case {i} without auto-sync");
            assert_eq!(run(true, steps), Ok(()), "case {i} with auto-sync");
        }
        let pipe_cases: [&[(Access, usize, usize)]; 2] = [
            // MTE2 loads, MTE3 stores the same bytes: a queue's job, not the compiler's.
            &[(Mte2Write, 0, 32), (Mte3Read, 0, 32)],
            // A scalar access of other bytes orders nothing between MTE2 and V here.
            &[(Mte2Write, 0, 32), (ScalarWrite, 64, 68), (VRead, 0, 32)],
        ];
        for (i, steps) in pipe_cases.iter().enumerate() {
            assert!(run(true, steps).is_err(), "pipe case {i} with auto-sync");
        }
    }

    /// Random kernels (accesses on every pipe over 256 UB bytes, flags, barriers, some writes of
    /// the bytes already there) give the same verdict at every step with the fast paths as on
    /// the general path, and the cases include every kind of report.
    #[test]
    fn fast_paths_agree_with_the_general_path() {
        const EVENTS: [usize; 13] = [4, 5, 6, 7, 10, 19, 20, 21, 22, 23, 24, 25, 26];
        const KINDS: [Access; 6] = [
            Access::Mte2Write,
            Access::Mte3Read,
            Access::VWrite,
            Access::VRead,
            Access::ScalarWrite,
            Access::ScalarRead,
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut reports = std::collections::BTreeMap::<String, usize>::new();
        let mut fast_loads = 0;
        let mut lean_hits = 0;
        let mut inner_hits = 0;
        let mut cached_loads = 0;
        for _case in 0..10_000 {
            let mut fast = Hazards::default();
            let mut general = Hazards {
                force_general: true,
                ..Hazards::default()
            };
            // What UB holds, one value per byte from a small alphabet (so identical rewrites
            // happen).
            let mut ub = [0u8; 256];
            let mut last = (0, 32);
            if rng.below(10) > 0 {
                // Most kernels start by loading what they work on.
                let (start, end) = (4 * rng.below(4) as usize, 256);
                for h in [&mut fast, &mut general] {
                    h.access(Access::Mte2Write, start, end, &mut |_, _| false)
                        .expect("first write");
                    h.barrier_all();
                }
            }
            for _step in 0..40 {
                let op = rng.below(10);
                if op == 0 {
                    let (e, id) = (EVENTS[rng.below(13) as usize], rng.below(2) as usize);
                    fast.set_flag(e, id);
                    general.set_flag(e, id);
                    continue;
                }
                if op == 1 {
                    let (e, id) = (EVENTS[rng.below(13) as usize], rng.below(2) as usize);
                    fast.wait_flag(e, id);
                    general.wait_flag(e, id);
                    continue;
                }
                if op == 2 {
                    fast.barrier_all();
                    general.barrier_all();
                    continue;
                }
                let kind = KINDS[rng.below(6) as usize];
                // Kernels touch the same bytes again (a flag cell polled, a tile reloaded):
                // a third of the accesses reuse the last range or a part of it, so that the
                // last-segment hint is taken, and found stale, often.
                let (start, end) = match rng.below(6) {
                    0 => last,
                    1 if last.1 - last.0 > 4 => {
                        let a = last.0 + 4 * rng.below(((last.1 - last.0) / 4) as u64) as usize;
                        (a, (a + 4).min(last.1))
                    }
                    _ => {
                        let start = 4 * rng.below(60) as usize;
                        (start, (start + 4 * (1 + rng.below(12) as usize)).min(256))
                    }
                };
                last = (start, end);
                let value = rng.below(2) as u8;
                let mut new = ub;
                let writes = matches!(
                    kind,
                    Access::Mte2Write | Access::VWrite | Access::ScalarWrite
                );
                if writes {
                    new[start..end].fill(value);
                }
                let benign = (fast.benign, general.benign);
                let mut same = |a: usize, b: usize| ub[a..b] == new[a..b];
                let f = fast.access(kind, start, end, &mut same);
                let mut same = |a: usize, b: usize| ub[a..b] == new[a..b];
                let g = general.access(kind, start, end, &mut same);
                assert_eq!(verdict(&f), verdict(&g), "{kind:?} {start:#x}..{end:#x}");
                // Both see a harmless identical rewrite, or neither (they may count it in
                // different numbers of pieces).
                assert_eq!(fast.benign > benign.0, general.benign > benign.1);
                if kind == Access::ScalarRead {
                    fast_loads += 1;
                }
                lean_hits += fast.lean_hits;
                fast.lean_hits = 0;
                inner_hits += fast.inner_hits;
                fast.inner_hits = 0;
                cached_loads += fast.cached_loads;
                fast.cached_loads = 0;
                if let Some(v) = verdict(&f) {
                    *reports
                        .entry(v.split_once(',').map_or(v.clone(), |x| x.0.to_string()))
                        .or_default() += 1;
                    break;
                }
                ub = new;
            }
        }
        assert!(fast_loads > 10_000, "{fast_loads} scalar loads {reports:?}");
        assert!(lean_hits > 1_000, "{lean_hits} records on the lean paths");
        assert!(
            cached_loads > 500,
            "{cached_loads} scalar loads inside bytes a load had checked"
        );
        assert!(
            inner_hits > 1_000,
            "{inner_hits} records inside one segment"
        );
        // Every kind of report came up, scalar loads' among them.
        for (who, what) in [
            ("S reads", "that MTE2 wrote"),
            ("S reads", "that V wrote"),
            ("S reads", "none of which this kernel has written"),
            ("MTE3 reads", "that S (scalar store) wrote"),
            ("MTE2 overwrites", "that MTE3 may still be reading"),
            ("V overwrites", "that S (scalar store) wrote"),
        ] {
            assert!(
                reports
                    .keys()
                    .any(|k| k.starts_with(who) && k.contains(what)),
                "no `{who} .. {what}` among {reports:?}"
            );
        }
    }
}
