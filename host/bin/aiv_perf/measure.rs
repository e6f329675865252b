//! One rank's measurement of one placement of one row: inputs, warm-up, the timed iterations
//! (or `--checks-cost`'s batches), the twin's counters, the census call and the checked call.

use std::time::{Duration, Instant};

use aiv_comm::{CommStream, Communicator, DeviceBuffer};
use ascendc_twin::{Census, CheckedLaunches, GmTraffic, Twin};

use crate::check::{check_value, count_wrong, encode_all, POISON};
use crate::cli::Opts;
use crate::collectives::{cut, Call, RefCase};
use crate::meet::{Meet, RankError};

/// One rank's buffers and streams, allocated once for the largest row.
pub struct RankState {
    /// The out-of-place input.
    pub send: DeviceBuffer,
    /// The output (in place: input and output).
    pub recv: DeviceBuffer,
    /// The sub-stream, for a collective with [`crate::collectives::Collective::side_stream`].
    pub side: Option<CommStream>,
}

/// Out of place or in place.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Separate send and recv buffers.
    Out,
    /// Both in the recv buffer, as the collective's in-place layout puts them.
    In,
}

/// Which of the twin's checkers run.
#[derive(Clone, Copy)]
pub struct Checkers {
    /// The pipe-hazard checker.
    pub hazards: bool,
    /// The GM race checker.
    pub races: bool,
}

impl Checkers {
    /// Both off.
    pub const OFF: Checkers = Checkers {
        hazards: false,
        races: false,
    };
}

/// Turns the twin's checkers on or off for the launches that start afterwards.
pub fn set_checkers(twin: &Twin, c: Checkers) {
    twin.set_hazard_check(c.hazards);
    twin.set_race_check(c.races);
}

/// Batches a side of `--checks-cost` (fewer when `-n` is smaller). Each rank times a batch from
/// the rendezvous that starts it to the end of its stream synchronisation, and the batch's
/// time is its slowest rank's: the synchronisation is a fixed cost per batch, alike on both
/// sides, which brings the ratio closer to 1 the shorter the batch (in one call of a few us it
/// is a large part; in 25 calls of 100 us, or one of several ms, a small one). 32 pairs give the
/// median ratio a narrow spread on a noisy 2-vCPU VM.
pub const COST_BATCHES: usize = 32;

/// `--checks-cost`'s schedule of `iters` calls a side: (checkers on, calls) per batch, in the
/// order off, on, on, off, off, on, ... Each side comes first in half of the adjacent pairs, so
/// that a steady drift of the machine's speed over the run falls on both alike; each side makes
/// `iters` calls in `min(iters, COST_BATCHES)` batches of nearly equal size.
pub fn cost_schedule(iters: usize) -> Vec<(bool, usize)> {
    let b = iters.clamp(1, COST_BATCHES);
    let mut next = [0; 2];
    (0..2 * b)
        .map(|k| {
            let side = k.div_ceil(2) % 2;
            let i = next[side];
            next[side] += 1;
            (side == 1, cut(iters, i + 1, b) - cut(iters, i, b))
        })
        .collect()
}

/// What one rank measured of one placement.
pub struct RankMeasure {
    /// The timed iterations (zero with `--checks-cost`, whose times are in `batches`).
    pub time: Duration,
    /// `--checks-cost`: the time of every batch, in [`cost_schedule`]'s order (empty without).
    pub batches: Vec<Duration>,
    /// The calls the traffic counters below cover (both sides with `--checks-cost`).
    pub counted_calls: usize,
    /// Launches of the twin in those calls that ran with each checker on.
    pub checked_launches: CheckedLaunches,
    /// Wrong elements of its output; `None` without `-c 1`.
    pub wrong: Option<usize>,
    /// GM bytes every rank's DMA read plus wrote in the timed iterations (the twin's total).
    pub dma: u64,
    /// GM bytes this rank's kernels moved in the timed iterations, per block index.
    pub cores: Vec<GmTraffic>,
    /// The census call's figures (rank 0 collects them for every rank).
    pub census: Option<Census>,
}

/// The views a placement uses on one rank: (send, recv).
pub fn views(
    o: &Opts,
    st: &RankState,
    place: Place,
    rank: usize,
    count: usize,
) -> aiv_comm::Result<(DeviceBuffer, DeviceBuffer)> {
    let es = o.dtype.size();
    let n = o.ranks;
    let sb = (o.coll.send_elems)(rank, count, n) * es;
    let rb = (o.coll.recv_elems)(rank, count, n) * es;
    match (place, &o.coll.in_place) {
        (Place::In, Some(ip)) => Ok((
            st.recv.view((ip.send_offset)(rank, count, n) * es, sb)?,
            st.recv.view((ip.recv_offset)(rank, count, n) * es, rb)?,
        )),
        _ => Ok((st.send.view(0, sb)?, st.recv.view(0, rb)?)),
    }
}

/// Waits for the rank's streams (its main stream, and its sub-stream if it has one).
pub fn sync(comm: &Communicator, st: &RankState) -> aiv_comm::Result<()> {
    comm.synchronize()?;
    if let Some(s) = &st.side {
        s.synchronize()?;
    }
    Ok(())
}

/// One rank's share of one placement of one row: inputs written, warm-up, timed iterations,
/// one untimed call with the twin's sync census on, then (with `-c 1`) one call from fresh
/// inputs over a poisoned output, checked against the reference.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    o: &Opts,
    twin: Option<&Twin>,
    comm: &Communicator,
    st: &RankState,
    place: Place,
    count: usize,
    rv: &Meet,
    checked: Option<Checkers>,
) -> Result<RankMeasure, RankError> {
    let r = comm.rank() as usize;
    // Who switches the twin's knobs: rank 0 for every rank of one process, each process of a
    // job for its own share of the twin.
    let switches = r == 0 || o.launch.is_some();
    let (send, recv) = views(o, st, place, r, count)?;
    let call = Call {
        comm,
        side: st.side.as_ref(),
        send: &send,
        recv: &recv,
        count,
        dtype: o.dtype,
        op: o.op,
        root: o.root as u32,
        ar_algo: o.ar_algo,
        ag_algo: o.ag_algo,
    };
    let send_elems = (o.coll.send_elems)(r, count, o.ranks);
    // The inputs are written with or without `-c 1`: GM the host never wrote reads the
    // system's shared zero page (a GM buffer of 1 MiB or more is an anonymous mapping),
    // which stays in the CPU's caches, and timed the twin's copies 1.7x too fast at 1-16 MiB
    // per rank.
    let input = encode_all(o.dtype, (0..send_elems).map(|i| check_value(r, i)));
    // Nobody starts before every rank has finished the previous placement.
    rv.wait()?;
    send.write(0, &input)?;
    // Kept for the check only (at 32 ranks of 64 MiB, 2 GiB of host memory).
    let input = o.check.then_some(input);
    rv.wait()?;
    for _ in 0..o.warmup {
        (o.coll.run)(&call)?;
    }
    sync(comm, st)?;
    // `--checks-cost`: as many warm-up calls with the checkers on, so that the first checked
    // batch does not pay for what the checkers build at their first launches (participants,
    // flag cells, shadow segments). Rank 0 switches while the others wait, as in the batches.
    if let Some(on) = checked {
        rv.wait()?;
        // `checked` is only ever Some on the twin.
        let twin = twin.expect("--checks-cost runs on the twin");
        if switches {
            set_checkers(twin, on);
        }
        rv.wait()?;
        for _ in 0..o.warmup {
            (o.coll.run)(&call)?;
        }
        sync(comm, st)?;
        rv.wait()?;
        if switches {
            set_checkers(twin, Checkers::OFF);
        }
    }
    // Every rank's warm-up has finished (and moved its last byte) before the twin's DMA
    // counters are read; nobody starts before that reading (the rendezvous that starts
    // `calls_from_rendezvous`).
    rv.wait()?;
    // The twin's counters (none on another backend: its figures stay zero and print N/A).
    let counters = |t: Option<&Twin>| {
        t.map(|t| {
            (
                t.gm_traffic(),
                t.core_traffic(r as u32),
                t.checked_launches(),
            )
        })
    };
    let before = counters(twin);
    // Makes `calls` calls once every rank is ready, and waits for them to finish on this rank;
    // returns when they started.
    let calls_from_rendezvous = |calls: usize| -> Result<Instant, RankError> {
        rv.wait()?;
        let t0 = Instant::now();
        for _ in 0..calls {
            (o.coll.run)(&call)?;
        }
        sync(comm, st)?;
        Ok(t0)
    };
    let mut batches = Vec::new();
    let time = match checked {
        None => {
            // From the moment every rank is ready to the moment every rank's last call has
            // finished.
            let t0 = calls_from_rendezvous(o.iters)?;
            rv.wait()?;
            t0.elapsed()
        }
        Some(on) => {
            let twin = twin.expect("--checks-cost runs on the twin");
            for (checks, calls) in cost_schedule(o.iters) {
                // Rank 0 switches while the others wait (a launch reads the knobs when it
                // starts; every rank's calls of the batch before have finished).
                if switches {
                    set_checkers(twin, if checks { on } else { Checkers::OFF });
                }
                let t0 = calls_from_rendezvous(calls)?;
                // This rank's time, before the rendezvous (its wake-up is no part of the
                // batch); the batch's time is the slowest rank's.
                batches.push(t0.elapsed());
                rv.wait()?;
            }
            if switches {
                set_checkers(twin, Checkers::OFF);
            }
            Duration::ZERO
        }
    };
    let mut m = RankMeasure {
        time,
        batches,
        counted_calls: o.iters * if checked.is_some() { 2 } else { 1 },
        checked_launches: CheckedLaunches::default(),
        wrong: None,
        dma: 0,
        cores: Vec::new(),
        census: None,
    };
    if let (Some((dma0, cores0, launches0)), Some((dma1, cores1, launches1))) =
        (before, counters(twin))
    {
        m.checked_launches = launches1.since(launches0);
        m.dma = (dma1.read - dma0.read) + (dma1.written - dma0.written);
        m.cores = cores1
            .iter()
            .zip(&cores0)
            .map(|(b, a)| b.since(*a))
            .collect();
    }
    // The census (on the twin): one more call with the same arguments, untimed, with the twin's
    // sync census on. Rank 0 switches it while the others wait (a launch reads the knob when it
    // starts), and off again before anyone starts the next call.
    if let Some(twin) = twin {
        if switches {
            let _stale = twin.take_census();
            twin.set_census(true);
        }
        rv.wait()?;
        (o.coll.run)(&call)?;
        sync(comm, st)?;
        rv.wait()?;
        if switches {
            twin.set_census(false);
            m.census = Some(twin.take_census());
        }
    }
    let Some(input) = input else {
        return Ok(m);
    };
    // The timed iterations may have accumulated (in place) or left the right answer from an
    // earlier call: check one call from fresh inputs over an output nobody's result matches.
    recv.fill(POISON)?;
    send.write(0, &input)?;
    rv.wait()?;
    (o.coll.run)(&call)?;
    sync(comm, st)?;
    let case = RefCase {
        ranks: o.ranks,
        rank: r,
        count,
        op: o.op,
        root: o.root,
    };
    m.wrong = Some(count_wrong(
        o.dtype,
        (o.coll.reference)(&case, &check_value),
        &recv,
        o.inject_wrong.filter(|_| r == 0),
    )?);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_cost_batches_alternate_in_pairs_of_equal_calls() {
        for iters in [1, 2, 7, 31, 32, 33, 100, 800] {
            let s = cost_schedule(iters);
            let b = iters.min(COST_BATCHES);
            assert_eq!(s.len(), 2 * b, "{iters}");
            for side in [false, true] {
                let calls: Vec<usize> = s.iter().filter(|x| x.0 == side).map(|x| x.1).collect();
                assert_eq!(calls.iter().sum::<usize>(), iters, "{iters}");
                assert!(calls
                    .iter()
                    .all(|&c| c == iters / b || c == iters.div_ceil(b)));
            }
            // Off, on | on, off | off, on | ...: each pair one of each side, as many calls.
            for (i, p) in s.chunks_exact(2).enumerate() {
                assert_eq!((p[0].0, p[1].0), (i % 2 == 1, i % 2 == 0), "{iters}: {s:?}");
                assert_eq!(p[0].1, p[1].1, "{iters}: {s:?}");
            }
        }
    }
}
