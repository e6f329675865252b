//! The sweep: every row's buffers, every rank's measurements of it, and their combination into
//! the figures the report prints.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use ascendc_twin::{Census, CheckedLaunches, GmTraffic, RankCensus};

use crate::cli::{row_count, sizes, timeout_note, Opts};
use crate::measure::{
    cost_schedule, measure, set_checkers, Checkers, Place, RankMeasure, RankState,
};
use crate::meet::{Meet, RankError, Rendezvous};
use crate::ranks::{gather_results, Ranks};

/// One placement's figures of one row.
pub struct Measure {
    /// Time per operation, us: the slowest rank's (with `--checks-cost`, the unchecked side's).
    pub time_us: f64,
    /// `--checks-cost`: the checked side.
    pub cost: Option<Checked>,
    /// Launches of the timed calls (both sides with `--checks-cost`) that ran with each of the
    /// twin's checkers on, all ranks.
    pub checked_launches: CheckedLaunches,
    /// GB/s: the row's size over the time.
    pub algbw: f64,
    /// GB/s: algbw x the collective's busbw factor.
    pub busbw: f64,
    /// GM bytes the kernels' DMA read plus wrote, per operation (all ranks).
    pub dma_per_op: f64,
    /// Those bytes as copy bandwidth: (read + written) / 2 per second, all ranks together.
    pub dmabw: f64,
    /// Block indices with GM traffic on a rank (the cores its kernels used), max over ranks.
    pub cores_used: usize,
    /// GM bytes read and written per operation by the busiest rank (the most read + written).
    pub rank_gm: GmTraffic,
    /// GM bytes read + written per operation by the busiest core of any rank.
    pub max_core_bytes: f64,
    /// The twin's sync census of one more call (untimed, same arguments): per rank, GM data and
    /// flag bytes, flag waits, sync depth.
    pub census: Census,
    /// Wrong elements over all ranks; `None` without `-c 1`.
    pub wrong: Option<usize>,
    /// The twin's figures (DMA, cores, census) were measured: the world runs on the twin.
    pub on_twin: bool,
    /// The census covers the job: every rank in this process. In a job of processes each
    /// process's census sees its own rank only (its sync depth stops at the flags other
    /// processes wrote), so it is not shown.
    pub census_known: bool,
}

impl Measure {
    /// The largest figure `f` of any rank in the census.
    pub fn census_max(&self, f: impl Fn(&RankCensus) -> u64) -> u64 {
        self.census.ranks.iter().map(f).max().unwrap_or(0)
    }
}

/// One row: a size, out of place and (if the collective runs in place) in place.
pub struct Row {
    /// The size column, bytes.
    pub size: usize,
    /// The count column, elements.
    pub count: usize,
    /// Out of place.
    pub out: Measure,
    /// In place (`None`: the collective has no in-place form).
    pub inp: Option<Measure>,
}

/// What a sweep measured: its rows, and which of the twin's checkers were on.
pub struct Sweep {
    /// One per size, in order.
    pub rows: Vec<Row>,
    /// The twin's checkers as they ran (`None`: not on the twin).
    pub checkers: Option<Checkers>,
    /// `--checks-cost`: the checkers of the checked batches.
    pub checked: Option<Checkers>,
}

/// `--checks-cost`'s figures of one placement.
pub struct Checked {
    /// Time per operation with the checkers on: the checked batches' times (each its slowest
    /// rank's) over the calls they made.
    pub time_us: f64,
    /// The median, over the adjacent pairs of batches (one of each side, as many calls each), of
    /// the checked batch's time over the unchecked one's. A pair runs back to back, so a slow
    /// stretch of the machine or a descheduled worker (one batch taking several times its
    /// neighbours) moves one pair's ratio, not the median; a ratio of the two sides' total
    /// times would take such a batch whole. (It would also take whole a cost the checkers pay
    /// in a few batches only; the totals are in [`Checked::time_us`] and the main time.)
    pub ratio: f64,
    /// Every pair's time per operation, (checkers off, on), in run order.
    pub pairs: Vec<(f64, f64)>,
}

/// Both sides of `--checks-cost` from the ranks' batch times.
pub struct CostSides {
    /// The unchecked side's time per operation: its batches' times (each its slowest rank's)
    /// over the calls they made.
    pub time_us: f64,
    /// The checked side, and the ratio.
    pub checked: Checked,
}

/// [`CostSides`] of `iters` calls a side, from every rank's batches.
pub fn cost_sides(iters: usize, per_rank: &[RankMeasure]) -> CostSides {
    let schedule = cost_schedule(iters);
    // Per batch: (checkers on, time per call of the slowest rank, time of the slowest rank).
    let batches: Vec<(bool, f64, f64)> = schedule
        .iter()
        .enumerate()
        .map(|(k, &(checks, calls))| {
            let t = per_rank
                .iter()
                .filter_map(|m| m.batches.get(k))
                .max()
                .map_or(0.0, |t| t.as_secs_f64() * 1e6);
            (checks, t / calls as f64, t)
        })
        .collect();
    let side = |on: bool| -> f64 {
        batches
            .iter()
            .filter(|b| b.0 == on)
            .map(|b| b.2)
            .sum::<f64>()
            / iters as f64
    };
    let pairs: Vec<(f64, f64)> = batches
        .chunks_exact(2)
        .map(|p| {
            if p[0].0 {
                (p[1].1, p[0].1)
            } else {
                (p[0].1, p[1].1)
            }
        })
        .collect();
    let mut ratios: Vec<f64> = pairs
        .iter()
        .filter(|(off, _)| *off > 0.0)
        .map(|(off, on)| on / off)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let ratio = match ratios.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ratios[n / 2],
        n => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
    };
    CostSides {
        time_us: side(false),
        checked: Checked {
            time_us: side(true),
            ratio,
            pairs,
        },
    }
}

/// Combines the ranks' measurements of one placement.
pub fn combine(o: &Opts, size: usize, per_rank: &[RankMeasure], on_twin: bool) -> Measure {
    let time = per_rank
        .iter()
        .map(|m| m.time)
        .max()
        .unwrap_or(Duration::ZERO);
    let wrong = if o.check {
        Some(per_rank.iter().filter_map(|m| m.wrong).sum())
    } else {
        None
    };
    let cost = o.checks_cost.then(|| cost_sides(o.iters, per_rank));
    let time_us = match &cost {
        Some(c) => c.time_us,
        None => time.as_secs_f64() * 1e6 / o.iters as f64,
    };
    let per_us = |bytes: f64| {
        if time_us > 0.0 {
            bytes / time_us / 1e3
        } else {
            0.0
        }
    };
    let algbw = per_us(size as f64);
    // The calls the traffic counters covered (both sides with `--checks-cost`).
    let counted = per_rank.first().map_or(o.iters, |m| m.counted_calls) as u64;
    // A twin's counters cover its ranks: every rank's in one process, the process's own in a
    // job of processes.
    let dma = match o.launch {
        None => per_rank.first().map_or(0, |m| m.dma),
        Some(_) => per_rank.iter().map(|m| m.dma).sum(),
    };
    let dma_per_op = dma as f64 / counted as f64;
    let moved = |t: &GmTraffic| t.read + t.written;
    let cores_used = per_rank
        .iter()
        .map(|m| m.cores.iter().filter(|t| moved(t) > 0).count())
        .max()
        .unwrap_or(0);
    let max_core = per_rank
        .iter()
        .flat_map(|m| m.cores.iter().map(moved))
        .max()
        .unwrap_or(0);
    let busiest = per_rank
        .iter()
        .map(|m| {
            m.cores.iter().fold(GmTraffic::default(), |a, t| GmTraffic {
                read: a.read + t.read,
                written: a.written + t.written,
            })
        })
        .max_by_key(moved)
        .unwrap_or_default();
    Measure {
        time_us,
        cost: cost.map(|c| c.checked),
        checked_launches: per_rank
            .first()
            .map_or_else(CheckedLaunches::default, |m| m.checked_launches),
        algbw,
        busbw: algbw * (o.coll.busbw_factor)(o.ranks),
        dma_per_op,
        dmabw: per_us(dma_per_op / 2.0),
        cores_used,
        rank_gm: GmTraffic {
            read: busiest.read / counted,
            written: busiest.written / counted,
        },
        max_core_bytes: max_core as f64 / counted as f64,
        census: per_rank
            .iter()
            .find_map(|m| m.census.clone())
            .unwrap_or_default(),
        wrong,
        on_twin,
        census_known: o.launch.is_none(),
    }
}

/// Runs the sweep on `world`, handing each row to `done` as soon as it is measured (the table
/// prints it then).
pub fn run(o: &Opts, world: &Ranks, mut done: impl FnMut(&Row)) -> Result<Sweep, String> {
    // A bandwidth run measures the twin at full speed; its pipe-hazard and GM race checkers
    // (on by default in the library, for development and tests) are opt-in here. With
    // `--twin-checks` the twin keeps its configuration, so `AIV_TWIN_HAZARDS=0` or
    // `AIV_TWIN_RACES=0` still turns one of them off (to measure the other alone).
    // `--checks-cost` runs half its timed batches with the checkers as configured.
    let twin = world.twin();
    if twin.is_none() && (o.twin_checks || o.checks_cost) {
        return Err(format!(
            "--twin-checks and --checks-cost switch the twin's checkers, and this world runs on the {} backend (acl-twin takes them from its AIV_TWIN_* environment)",
            world.backend_name()
        ));
    }
    let configured = twin.map(|t| Checkers {
        hazards: t.hazard_check(),
        races: t.race_check(),
    });
    if let (Some(t), false) = (twin, o.twin_checks) {
        set_checkers(t, Checkers::OFF);
    }
    let checked = if o.checks_cost { configured } else { None };
    let es = o.dtype.size();
    let n = o.ranks;
    let list: Vec<usize> = sizes(o)
        .into_iter()
        .filter(|&s| row_count(o, s) > 0)
        .collect();
    // One length for every rank and row: the largest any needs (a v-collective's rounded
    // counts need not grow with the row), at least one element.
    let (mut send_len, mut recv_len) = (es, es);
    for &size in &list {
        let count = row_count(o, size);
        for r in 0..n {
            let (se, re) = (
                (o.coll.send_elems)(r, count, n),
                (o.coll.recv_elems)(r, count, n),
            );
            send_len = send_len.max(se * es);
            recv_len = recv_len.max(re * es);
            if let Some(ip) = &o.coll.in_place {
                let ends = [
                    (ip.send_offset)(r, count, n) + se,
                    (ip.recv_offset)(r, count, n) + re,
                ];
                recv_len = recv_len.max(ends[0] * es).max(ends[1] * es);
            }
        }
    }
    let states: Vec<RankState> = world
        .comms()
        .iter()
        .map(|c| -> aiv_comm::Result<RankState> {
            let st = RankState {
                send: c.alloc(send_len)?,
                recv: c.alloc(recv_len)?,
                side: if o.coll.side_stream {
                    Some(c.create_stream("aiv-perf-side")?)
                } else {
                    None
                },
            };
            if o.register {
                c.register(&st.send)?;
                c.register(&st.recv)?;
            }
            Ok(st)
        })
        .collect::<aiv_comm::Result<_>>()
        .map_err(|e| e.to_string())?;
    let progress = std::io::stderr().is_terminal();
    let t_start = Instant::now();
    let mut shown = false;
    let mut rows = Vec::new();
    for (k, &size) in list.iter().enumerate() {
        let count = row_count(o, size);
        let size = (o.coll.size_elems)(count, n) * es;
        let rv = match world.peers() {
            None => Meet::Threads(Rendezvous::new(n)),
            Some(p) => Meet::Processes(p),
        };
        let results = world.run(|comm| {
            let here = world.comms().iter().position(|c| c.rank() == comm.rank());
            let st = &states[here.expect("a rank of this process")];
            let r = (|| -> Result<(RankMeasure, Option<RankMeasure>), RankError> {
                let out = measure(o, twin, comm, st, Place::Out, count, &rv, checked)?;
                let inp = match o.coll.in_place {
                    Some(_) => Some(measure(o, twin, comm, st, Place::In, count, &rv, checked)?),
                    None => None,
                };
                Ok((out, inp))
            })();
            if r.is_err() {
                rv.break_it();
            }
            r
        });
        let results = gather_results(world, results)?;
        let mut outs = Vec::new();
        let mut ins = Vec::new();
        let mut peer_failed = false;
        for (r, res) in results.into_iter().enumerate() {
            match res {
                Ok((out, inp)) => {
                    outs.push(out);
                    ins.extend(inp);
                }
                // A deadline shorter than the work fails a healthy run: say which deadline.
                Err(RankError::Own(e @ aiv_comm::Error::WaitTimeout { .. })) => {
                    return Err(format!(
                        "rank {r}: {e} [this run's exec timeout: {}]",
                        timeout_note(o)
                    ))
                }
                Err(RankError::Own(e)) => return Err(format!("rank {r}: {e}")),
                Err(RankError::PeerFailed) => peer_failed = true,
            }
        }
        if peer_failed {
            return Err("a rank failed".into());
        }
        let row = Row {
            size,
            count,
            out: combine(o, size, &outs, twin.is_some()),
            inp: o
                .coll
                .in_place
                .as_ref()
                .map(|_| combine(o, size, &ins, twin.is_some())),
        };
        done(&row);
        rows.push(row);
        if progress && world.prints() && t_start.elapsed() > Duration::from_secs(1) {
            eprint!(
                "\raiv-perf: {}/{} sizes done, {:.1} s elapsed   ",
                k + 1,
                list.len(),
                t_start.elapsed().as_secs_f64()
            );
            let _ = std::io::stderr().flush();
            shown = true;
        }
    }
    if shown {
        eprintln!();
    }
    Ok(Sweep {
        rows,
        checkers: twin.map(|t| Checkers {
            hazards: t.hazard_check(),
            races: t.race_check(),
        }),
        checked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_cost_takes_each_batchs_slowest_rank_and_the_median_of_the_pairs() {
        // 4 calls a side in 4 one-call batches: off, on | on, off | off, on | on, off.
        let rank = |us: [u64; 8]| RankMeasure {
            time: Duration::ZERO,
            batches: us.iter().map(|&u| Duration::from_micros(u)).collect(),
            counted_calls: 8,
            checked_launches: CheckedLaunches::default(),
            wrong: None,
            dma: 0,
            cores: Vec::new(),
            census: None,
        };
        let ranks = [
            rank([10, 12, 30, 10, 10, 11, 14, 10]),
            rank([9, 13, 12, 20, 10, 10, 14, 10]),
        ];
        let c = cost_sides(4, &ranks);
        // Per batch, the slower rank: 10 13 | 30 20 | 10 11 | 14 10.
        assert_eq!(
            c.checked.pairs,
            vec![(10.0, 13.0), (20.0, 30.0), (10.0, 11.0), (10.0, 14.0)]
        );
        assert!((c.time_us - 12.5).abs() < 1e-9 && (c.checked.time_us - 17.0).abs() < 1e-9);
        // Ratios 1.3 1.5 1.1 1.4: an even count, the mean of the middle two.
        assert!((c.checked.ratio - 1.35).abs() < 1e-9, "{}", c.checked.ratio);
        // A pair whose unchecked batch took no time has no ratio; none at all: NaN.
        let zero = [rank([0, 12, 30, 10, 10, 11, 14, 10])];
        let c = cost_sides(4, &zero);
        assert!((c.checked.ratio - 1.4).abs() < 1e-9, "{}", c.checked.ratio);
        assert!(cost_sides(1, &[rank([0, 5, 0, 0, 0, 0, 0, 0])])
            .checked
            .ratio
            .is_nan());
    }
}
