//! `--json`: one object on stdout instead of the table.

use ascendc_twin::RankCensus;

use crate::cli::{config, redop, root, Opts};
use crate::sweep::{Measure, Sweep};

/// A JSON number (`null` if not finite).
pub fn json_num(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "null".into()
    }
}

/// A JSON string.
pub fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One rank's census figures as a JSON object.
pub fn json_rank_census(k: &RankCensus) -> String {
    format!(
        "{{\"gm_data_read\":{},\"gm_data_written\":{},\"gm_flag_read\":{},\"gm_flag_written\":{},\"flag_loads\":{},\"flag_stores\":{},\"flag_waits\":{},\"blocking_waits\":{},\"launches\":{},\"blocks\":{},\"depth\":{}}}",
        k.data_read,
        k.data_written,
        k.flag_read,
        k.flag_written,
        k.flag_loads,
        k.flag_stores,
        k.waits,
        k.blocking_waits,
        k.launches,
        k.blocks,
        k.depth
    )
}

pub fn json_measure(m: Option<&Measure>) -> String {
    let Some(m) = m else {
        return "null".into();
    };
    if !m.on_twin {
        // Not on the twin: no DMA, core or census figures.
        return format!(
            "{{\"time_us\":{},\"algbw\":{},\"busbw\":{},\"wrong\":{}}}",
            json_num(m.time_us, 3),
            json_num(m.algbw, 6),
            json_num(m.busbw, 6),
            m.wrong.map_or_else(|| "null".into(), |w| w.to_string()),
        );
    }
    let per_rank: Vec<String> = match m.census_known {
        true => m.census.ranks.iter().map(json_rank_census).collect(),
        false => Vec::new(),
    };
    format!(
        "{{\"time_us\":{},\"checked_time_us\":{},\"checks_ratio\":{},\"checks_pairs\":{},\"checked_launches\":{{\"hazards\":{},\"races\":{}}},\"algbw\":{},\"busbw\":{},\"wrong\":{},\"dma_bytes_per_op\":{},\"dmabw\":{},\"cores_used\":{},\"gm_read_per_rank\":{},\"gm_written_per_rank\":{},\"max_core_bytes\":{},\"gm_data_read_per_rank\":{},\"gm_data_written_per_rank\":{},\"gm_flag_read_per_rank\":{},\"gm_flag_written_per_rank\":{},\"flag_waits_per_rank\":{},\"blocking_waits_per_rank\":{},\"sync_rounds\":{},\"census\":[{}]}}",
        json_num(m.time_us, 3),
        m.cost
            .as_ref()
            .map_or_else(|| "null".into(), |c| json_num(c.time_us, 3)),
        m.cost
            .as_ref()
            .map_or_else(|| "null".into(), |c| json_num(c.ratio, 4)),
        m.cost.as_ref().map_or_else(
            || "null".into(),
            |c| {
                let p: Vec<String> = c
                    .pairs
                    .iter()
                    .map(|(off, on)| format!("[{},{}]", json_num(*off, 3), json_num(*on, 3)))
                    .collect();
                format!("[{}]", p.join(","))
            }
        ),
        m.checked_launches.hazards,
        m.checked_launches.races,
        json_num(m.algbw, 6),
        json_num(m.busbw, 6),
        m.wrong.map_or_else(|| "null".into(), |w| w.to_string()),
        json_num(m.dma_per_op, 0),
        json_num(m.dmabw, 6),
        m.cores_used,
        m.rank_gm.read,
        m.rank_gm.written,
        json_num(m.max_core_bytes, 0),
        census_json(m, |m| m.census_max(|k| k.data_read)),
        census_json(m, |m| m.census_max(|k| k.data_written)),
        census_json(m, |m| m.census_max(|k| k.flag_read)),
        census_json(m, |m| m.census_max(|k| k.flag_written)),
        census_json(m, |m| m.census_max(|k| k.waits)),
        census_json(m, |m| m.census_max(|k| k.blocking_waits)),
        census_json(m, |m| m.census.rounds),
        per_rank.join(",")
    )
}

/// A census figure of `m` in JSON (`null` where the census does not cover the job).
pub fn census_json<T: std::fmt::Display>(m: &Measure, f: impl FnOnce(&Measure) -> T) -> String {
    if m.census_known {
        f(m).to_string()
    } else {
        "null".into()
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
    let rows = &sweep.rows;
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{{\"size\":{},\"count\":{},\"type\":{},\"redop\":{},\"root\":{},\"out_of_place\":{},\"in_place\":{}}}",
                r.size,
                r.count,
                json_str(o.dtype.name()),
                json_str(redop(o)),
                root(o),
                json_measure(Some(&r.out)),
                json_measure(r.inp.as_ref())
            )
        })
        .collect();
    let timeout = config(o)
        .resolved_timeout()
        .map_or_else(|_| "null".into(), |t| json_num(t.as_secs_f64(), 2));
    format!(
        "{{\"collective\":{},\"ranks\":{},\"type\":{},\"redop\":{},\"root\":{},\"iters\":{},\"warmup\":{},\"check\":{},\"registered\":{},\"twin_checks\":{},\"checked_batches\":{},\"exec_timeout_s\":{},\"rows\":[{}],\"avg_busbw\":{},\"out_of_bounds\":{},\"wrong\":{},\"backend\":{},\"processes\":{}}}",
        json_str(o.coll.name),
        o.ranks,
        json_str(o.dtype.name()),
        json_str(redop(o)),
        root(o),
        o.iters,
        o.warmup,
        o.check,
        o.register,
        sweep.checkers.map_or_else(
            || "null".into(),
            |c| format!("{{\"hazards\":{},\"races\":{}}}", c.hazards, c.races)
        ),
        sweep.checked.map_or_else(
            || "null".into(),
            |c| format!("{{\"hazards\":{},\"races\":{}}}", c.hazards, c.races)
        ),
        timeout,
        items.join(","),
        json_num(avg, 6),
        failed,
        wrong.map_or_else(|| "null".into(), |w| w.to_string()),
        json_str(backend),
        o.launch.is_some()
    )
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
