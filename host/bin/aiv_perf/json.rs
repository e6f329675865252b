//! `--json`: one object on stdout instead of the table, serialized by serde_json from
//! [`Report`] and the structs under it (their fields, in order, are the keys). Numbers keep
//! the fixed decimals they have always had ([`Fixed`]); what is not known is null.

use ascendc_twin::{CheckedLaunches, RankCensus};
use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::cli::{config, redop, root, Opts};
use crate::measure::Checkers;
use crate::sweep::{Measure, Row, Sweep};

/// A number written with `D` decimals, as `format!("{:.D$}")` writes it, or null if it is not
/// finite. serde_json writes an `f64` in its shortest round-trip form (`12.5` for a time of
/// 12.500 us, `49752.0` for a byte count), which is not what aiv-perf's JSON has always said.
#[derive(Clone, Copy)]
pub struct Fixed<const D: usize>(pub f64);

impl<const D: usize> Serialize for Fixed<D> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.0.is_finite() {
            return s.serialize_none();
        }
        RawValue::from_string(format!("{:.*}", D, self.0))
            .map_err(S::Error::custom)?
            .serialize(s)
    }
}

/// A figure per checker of the twin: whether it ran, or how many launches it checked.
#[derive(Serialize)]
pub struct PerChecker<T> {
    /// The pipe-hazard checker.
    pub hazards: T,
    /// The GM race checker.
    pub races: T,
}

impl From<Checkers> for PerChecker<bool> {
    fn from(c: Checkers) -> Self {
        PerChecker {
            hazards: c.hazards,
            races: c.races,
        }
    }
}

impl From<CheckedLaunches> for PerChecker<u64> {
    fn from(c: CheckedLaunches) -> Self {
        PerChecker {
            hazards: c.hazards,
            races: c.races,
        }
    }
}

/// The run: its options, its rows, and the totals.
#[derive(Serialize)]
pub struct Report<'a> {
    /// The collective's name (not the alias it was given by).
    pub collective: &'a str,
    /// Ranks of the job.
    pub ranks: usize,
    /// Element type, nccl-tests' name.
    #[serde(rename = "type")]
    pub dtype: &'a str,
    /// Reduce op, or `none`.
    pub redop: &'a str,
    /// Root rank, or -1.
    pub root: i64,
    /// Timed iterations per row and placement (`-n`).
    pub iters: usize,
    /// Warm-up iterations (`-w`).
    pub warmup: usize,
    /// Results checked (`-c 1`).
    pub check: bool,
    /// Buffers registered as window memory (`-R 1`).
    pub registered: bool,
    /// The twin's checkers as they ran; null off the twin.
    pub twin_checks: Option<PerChecker<bool>>,
    /// `--checks-cost`: the checkers of its checked batches; null without.
    pub checked_batches: Option<PerChecker<bool>>,
    /// The deadline of device-side waits, in seconds.
    pub exec_timeout_s: Option<Fixed<2>>,
    /// One per size.
    pub rows: Vec<RowReport<'a>>,
    /// busbw averaged over every result, out of place and in place.
    pub avg_busbw: Fixed<6>,
    /// Results with a wrong element.
    pub out_of_bounds: usize,
    /// Wrong elements in all; null without `-c 1`.
    pub wrong: Option<usize>,
    /// The backend's name.
    pub backend: &'a str,
    /// Started by a launcher, one process per rank.
    pub processes: bool,
}

/// One size of the sweep.
#[derive(Serialize)]
pub struct RowReport<'a> {
    /// Bytes: the larger of a rank's send and receive buffers.
    pub size: usize,
    /// Per-rank elements, nccl-tests' count.
    pub count: usize,
    /// Element type, nccl-tests' name.
    #[serde(rename = "type")]
    pub dtype: &'a str,
    /// Reduce op, or `none`.
    pub redop: &'a str,
    /// Root rank, or -1.
    pub root: i64,
    /// Out of place.
    pub out_of_place: Placement,
    /// In place; null for a collective without an in-place form.
    pub in_place: Option<Placement>,
}

/// One placement's figures: in full on the twin, the timing and check alone elsewhere.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Placement {
    /// On the twin.
    Twin(Box<TwinPlacement>),
    /// On another backend (no DMA, core or census figures).
    Other(OtherPlacement),
}

/// A placement's figures off the twin.
#[derive(Serialize)]
pub struct OtherPlacement {
    /// Time per operation.
    pub time_us: Fixed<3>,
    /// GB/s: size / time.
    pub algbw: Fixed<6>,
    /// GB/s: algbw x the collective's factor.
    pub busbw: Fixed<6>,
    /// Wrong elements; null without `-c 1`.
    pub wrong: Option<usize>,
}

/// A placement's figures on the twin (`--help` describes them).
#[derive(Serialize)]
pub struct TwinPlacement {
    /// Time per operation (with `--checks-cost`: its unchecked side's).
    pub time_us: Fixed<3>,
    /// `--checks-cost`: time per operation with the checkers on.
    pub checked_time_us: Option<Fixed<3>>,
    /// `--checks-cost`: the median on/off ratio over adjacent pairs of batches.
    pub checks_ratio: Option<Fixed<4>>,
    /// `--checks-cost`: every pair's us per operation, (off, on).
    pub checks_pairs: Option<Vec<(Fixed<3>, Fixed<3>)>>,
    /// Timed launches that ran with each checker on.
    pub checked_launches: PerChecker<u64>,
    /// GB/s: size / time.
    pub algbw: Fixed<6>,
    /// GB/s: algbw x the collective's factor.
    pub busbw: Fixed<6>,
    /// Wrong elements; null without `-c 1`.
    pub wrong: Option<usize>,
    /// GM bytes the kernels' DMA read plus wrote per operation, all ranks.
    pub dma_bytes_per_op: Fixed<0>,
    /// Those bytes as copy bandwidth, GB/s.
    pub dmabw: Fixed<6>,
    /// Cores (block indices) a rank's kernels used, the most of any rank.
    pub cores_used: usize,
    /// GM bytes read per operation by the rank that moved the most.
    pub gm_read_per_rank: u64,
    /// GM bytes written per operation by that rank.
    pub gm_written_per_rank: u64,
    /// GM bytes read + written per operation by the busiest core of any rank.
    pub max_core_bytes: Fixed<0>,
    /// The census's GM data bytes read, the most of any rank (null: the census does not cover
    /// the job, as in a job of processes; so for the census figures below).
    pub gm_data_read_per_rank: Option<u64>,
    /// The census's GM data bytes written, the most of any rank.
    pub gm_data_written_per_rank: Option<u64>,
    /// The census's GM flag bytes read, the most of any rank.
    pub gm_flag_read_per_rank: Option<u64>,
    /// The census's GM flag bytes written, the most of any rank.
    pub gm_flag_written_per_rank: Option<u64>,
    /// The census's flag waits, the most of any rank.
    pub flag_waits_per_rank: Option<u64>,
    /// The census's waits that raised a rank's depth, the most of any rank.
    pub blocking_waits_per_rank: Option<u64>,
    /// Sync rounds on the critical path of a launch.
    pub sync_rounds: Option<u32>,
    /// One object per rank (empty where the census does not cover the job).
    pub census: Vec<RankCensusReport>,
}

/// One rank's census figures (`ascendc_twin::RankCensus`, under the JSON's names).
#[derive(Serialize)]
pub struct RankCensusReport {
    /// Bytes of GM data memory its DMA read.
    pub gm_data_read: u64,
    /// Bytes of GM data memory its DMA wrote.
    pub gm_data_written: u64,
    /// Bytes of GM flag memory its DMA read.
    pub gm_flag_read: u64,
    /// Bytes of GM flag memory its DMA wrote.
    pub gm_flag_written: u64,
    /// Flag loads.
    pub flag_loads: u64,
    /// Flag stores.
    pub flag_stores: u64,
    /// Flag waits (poll loops).
    pub flag_waits: u64,
    /// Waits that raised the rank's depth.
    pub blocking_waits: u64,
    /// Launches.
    pub launches: u64,
    /// Blocks.
    pub blocks: u64,
    /// Sync depth.
    pub depth: u32,
}

impl From<&RankCensus> for RankCensusReport {
    fn from(k: &RankCensus) -> Self {
        RankCensusReport {
            gm_data_read: k.data_read,
            gm_data_written: k.data_written,
            gm_flag_read: k.flag_read,
            gm_flag_written: k.flag_written,
            flag_loads: k.flag_loads,
            flag_stores: k.flag_stores,
            flag_waits: k.waits,
            blocking_waits: k.blocking_waits,
            launches: k.launches,
            blocks: k.blocks,
            depth: k.depth,
        }
    }
}

impl From<&Measure> for Placement {
    fn from(m: &Measure) -> Self {
        if !m.on_twin {
            return Placement::Other(OtherPlacement {
                time_us: Fixed(m.time_us),
                algbw: Fixed(m.algbw),
                busbw: Fixed(m.busbw),
                wrong: m.wrong,
            });
        }
        // A census figure, where the census covers the job.
        let census = |f: fn(&RankCensus) -> u64| m.census_known.then(|| m.census_max(f));
        Placement::Twin(Box::new(TwinPlacement {
            time_us: Fixed(m.time_us),
            checked_time_us: m.cost.as_ref().map(|c| Fixed(c.time_us)),
            checks_ratio: m.cost.as_ref().map(|c| Fixed(c.ratio)),
            checks_pairs: m.cost.as_ref().map(|c| {
                c.pairs
                    .iter()
                    .map(|&(off, on)| (Fixed(off), Fixed(on)))
                    .collect()
            }),
            checked_launches: m.checked_launches.into(),
            algbw: Fixed(m.algbw),
            busbw: Fixed(m.busbw),
            wrong: m.wrong,
            dma_bytes_per_op: Fixed(m.dma_per_op),
            dmabw: Fixed(m.dmabw),
            cores_used: m.cores_used,
            gm_read_per_rank: m.rank_gm.read,
            gm_written_per_rank: m.rank_gm.written,
            max_core_bytes: Fixed(m.max_core_bytes),
            gm_data_read_per_rank: census(|k| k.data_read),
            gm_data_written_per_rank: census(|k| k.data_written),
            gm_flag_read_per_rank: census(|k| k.flag_read),
            gm_flag_written_per_rank: census(|k| k.flag_written),
            flag_waits_per_rank: census(|k| k.waits),
            blocking_waits_per_rank: census(|k| k.blocking_waits),
            sync_rounds: m.census_known.then_some(m.census.rounds),
            census: match m.census_known {
                true => m.census.ranks.iter().map(RankCensusReport::from).collect(),
                false => Vec::new(),
            },
        }))
    }
}

impl<'a> RowReport<'a> {
    /// Row `r` of a sweep with options `o`.
    fn new(o: &'a Opts, r: &Row) -> Self {
        RowReport {
            size: r.size,
            count: r.count,
            dtype: o.dtype.name(),
            redop: redop(o),
            root: root(o),
            out_of_place: Placement::from(&r.out),
            in_place: r.inp.as_ref().map(Placement::from),
        }
    }
}

/// Prints the run's JSON object ([`render`]) on stdout.
pub fn print_json(
    o: &Opts,
    sweep: &Sweep,
    avg: f64,
    failed: usize,
    wrong: Option<usize>,
    backend: &str,
) {
    out!("{}", render(o, sweep, avg, failed, wrong, backend));
}

/// The run's JSON object, on one line: the options, every row's figures, the average busbw
/// (`avg`), the results with a wrong element (`failed`), the wrong elements (`wrong`, `None`
/// without `-c 1`) and the backend's name.
pub fn render(
    o: &Opts,
    sweep: &Sweep,
    avg: f64,
    failed: usize,
    wrong: Option<usize>,
    backend: &str,
) -> String {
    let report = Report {
        collective: o.coll.name,
        ranks: o.ranks,
        dtype: o.dtype.name(),
        redop: redop(o),
        root: root(o),
        iters: o.iters,
        warmup: o.warmup,
        check: o.check,
        registered: o.register,
        twin_checks: sweep.checkers.map(PerChecker::from),
        checked_batches: sweep.checked.map(PerChecker::from),
        exec_timeout_s: config(o)
            .resolved_timeout()
            .ok()
            .map(|t| Fixed(t.as_secs_f64())),
        rows: sweep.rows.iter().map(|r| RowReport::new(o, r)).collect(),
        avg_busbw: Fixed(avg),
        out_of_bounds: failed,
        wrong,
        backend,
        processes: o.launch.is_some(),
    };
    // Plain structs of numbers, strings and options: nothing in them can fail to serialize
    // (a finite `Fixed` is always a valid JSON number).
    serde_json::to_string(&report).expect("aiv-perf's report serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{parse, Parsed};
    use crate::measure::Checkers;
    use crate::sweep::{Checked, Row};
    use ascendc_twin::{Census, CheckedLaunches, GmTraffic};

    fn opts(s: &str) -> Opts {
        let args: Vec<String> = s.split_whitespace().map(String::from).collect();
        match parse(&args, |_| None) {
            Ok(Parsed::Run(o)) => *o,
            _ => panic!("{s}"),
        }
    }

    /// A placement's figures on the twin, every number with digits past what JSON prints.
    fn on_twin(cost: Option<Checked>, census_known: bool, wrong: Option<usize>) -> Measure {
        let rank = |k: u64| RankCensus {
            data_read: 4096 * k,
            data_written: 2048 * k,
            flag_read: 96 + k,
            flag_written: 64,
            flag_loads: 3 + k,
            flag_stores: 2,
            waits: 2 + k,
            blocking_waits: 1 + k,
            launches: 1,
            blocks: 2,
            depth: 2 + k as u32,
        };
        Measure {
            time_us: 12.34567,
            cost,
            checked_launches: CheckedLaunches {
                hazards: 8,
                races: 6,
            },
            algbw: 0.123_456_789,
            busbw: 1e-7,
            dma_per_op: 49752.5,
            dmabw: f64::INFINITY,
            cores_used: 3,
            rank_gm: GmTraffic {
                read: 12592,
                written: 12352,
            },
            max_core_bytes: 24944.49,
            census: Census {
                ranks: vec![rank(0), rank(1)],
                rounds: 4,
                ..Census::default()
            },
            wrong,
            on_twin: true,
            census_known,
        }
    }

    /// A placement's figures off the twin (no DMA, core or census figures).
    fn off_twin(wrong: Option<usize>) -> Measure {
        Measure {
            dmabw: 0.0,
            on_twin: false,
            census_known: false,
            time_us: 1e20,
            ..on_twin(None, false, wrong)
        }
    }

    /// The bytes of `--json`, pinned: every key in its place, numbers with their decimals
    /// (integers from figures kept as floats), null for what is not known or not finite.
    #[test]
    fn the_json_bytes_are_pinned() {
        let o = opts("broadcast -p 2 -r 1 -d bfp16 -n 7 -w 3 -R 1 -T 2.5 --checks-cost");
        let cost = || Checked {
            time_us: 20.0005,
            ratio: 1.234_56,
            pairs: vec![(1.0, 2.5), (10.123_45, f64::NAN)],
        };
        let nan_ratio = Checked {
            ratio: f64::NAN,
            pairs: Vec::new(),
            ..cost()
        };
        let sweep = Sweep {
            rows: vec![
                Row {
                    size: 4096,
                    count: 2048,
                    out: on_twin(Some(cost()), true, Some(0)),
                    inp: Some(on_twin(Some(nan_ratio), false, Some(2))),
                },
                Row {
                    size: 8192,
                    count: 4096,
                    out: off_twin(Some(1)),
                    inp: None,
                },
            ],
            checkers: Some(Checkers::OFF),
            checked: Some(Checkers {
                hazards: true,
                races: false,
            }),
        };
        let want = concat!(
            "{\"collective\":\"broadcast\",\"ranks\":2,\"type\":\"bfloat16\",\"redop\":\"none\",",
            "\"root\":1,\"iters\":7,\"warmup\":3,\"check\":true,\"registered\":true,",
            "\"twin_checks\":{\"hazards\":false,\"races\":false},",
            "\"checked_batches\":{\"hazards\":true,\"races\":false},\"exec_timeout_s\":2.50,",
            "\"rows\":[{\"size\":4096,\"count\":2048,\"type\":\"bfloat16\",\"redop\":\"none\",",
            "\"root\":1,\"out_of_place\":{\"time_us\":12.346,\"checked_time_us\":20.000,",
            "\"checks_ratio\":1.2346,\"checks_pairs\":[[1.000,2.500],[10.123,null]],",
            "\"checked_launches\":{\"hazards\":8,\"races\":6},\"algbw\":0.123457,",
            "\"busbw\":0.000000,\"wrong\":0,\"dma_bytes_per_op\":49752,\"dmabw\":null,",
            "\"cores_used\":3,\"gm_read_per_rank\":12592,\"gm_written_per_rank\":12352,",
            "\"max_core_bytes\":24944,\"gm_data_read_per_rank\":4096,",
            "\"gm_data_written_per_rank\":2048,\"gm_flag_read_per_rank\":97,",
            "\"gm_flag_written_per_rank\":64,\"flag_waits_per_rank\":3,",
            "\"blocking_waits_per_rank\":2,\"sync_rounds\":4,\"census\":[{\"gm_data_read\":0,",
            "\"gm_data_written\":0,\"gm_flag_read\":96,\"gm_flag_written\":64,\"flag_loads\":3,",
            "\"flag_stores\":2,\"flag_waits\":2,\"blocking_waits\":1,\"launches\":1,\"blocks\":2,",
            "\"depth\":2},{\"gm_data_read\":4096,\"gm_data_written\":2048,\"gm_flag_read\":97,",
            "\"gm_flag_written\":64,\"flag_loads\":4,\"flag_stores\":2,\"flag_waits\":3,",
            "\"blocking_waits\":2,\"launches\":1,\"blocks\":2,\"depth\":3}]},",
            "\"in_place\":{\"time_us\":12.346,\"checked_time_us\":20.000,\"checks_ratio\":null,",
            "\"checks_pairs\":[],\"checked_launches\":{\"hazards\":8,\"races\":6},",
            "\"algbw\":0.123457,\"busbw\":0.000000,\"wrong\":2,\"dma_bytes_per_op\":49752,",
            "\"dmabw\":null,\"cores_used\":3,\"gm_read_per_rank\":12592,",
            "\"gm_written_per_rank\":12352,\"max_core_bytes\":24944,",
            "\"gm_data_read_per_rank\":null,\"gm_data_written_per_rank\":null,",
            "\"gm_flag_read_per_rank\":null,\"gm_flag_written_per_rank\":null,",
            "\"flag_waits_per_rank\":null,\"blocking_waits_per_rank\":null,\"sync_rounds\":null,",
            "\"census\":[]}},{\"size\":8192,\"count\":4096,\"type\":\"bfloat16\",",
            "\"redop\":\"none\",\"root\":1,",
            "\"out_of_place\":{\"time_us\":100000000000000000000.000,\"algbw\":0.123457,",
            "\"busbw\":0.000000,\"wrong\":1},\"in_place\":null}],\"avg_busbw\":1.250000,",
            "\"out_of_bounds\":2,\"wrong\":3,\"backend\":\"tw\\\"in\\\\\\u0001\",",
            "\"processes\":false}",
        );
        assert_eq!(render(&o, &sweep, 1.25, 2, Some(3), "tw\"in\\\u{1}"), want);
        let o = opts("all_reduce -p 3 -c 0 -T 0.05");
        let sweep = Sweep {
            rows: vec![Row {
                size: 12,
                count: 3,
                out: off_twin(None),
                inp: Some(off_twin(None)),
            }],
            checkers: None,
            checked: None,
        };
        let want = concat!(
            "{\"collective\":\"all_reduce\",\"ranks\":3,\"type\":\"float\",\"redop\":\"sum\",",
            "\"root\":-1,\"iters\":20,\"warmup\":5,\"check\":false,\"registered\":false,",
            "\"twin_checks\":null,\"checked_batches\":null,\"exec_timeout_s\":0.05,",
            "\"rows\":[{\"size\":12,\"count\":3,\"type\":\"float\",\"redop\":\"sum\",\"root\":-1,",
            "\"out_of_place\":{\"time_us\":100000000000000000000.000,\"algbw\":0.123457,",
            "\"busbw\":0.000000,\"wrong\":null},",
            "\"in_place\":{\"time_us\":100000000000000000000.000,\"algbw\":0.123457,",
            "\"busbw\":0.000000,\"wrong\":null}}],\"avg_busbw\":null,\"out_of_bounds\":0,",
            "\"wrong\":null,\"backend\":\"acl\",\"processes\":false}",
        );
        assert_eq!(render(&o, &sweep, f64::NAN, 0, None, "acl"), want);
    }
}
