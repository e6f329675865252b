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

pub fn print_json(
    o: &Opts,
    sweep: &Sweep,
    avg: f64,
    failed: usize,
    wrong: Option<usize>,
    backend: &str,
) {
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
    out!(
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
    );
}
