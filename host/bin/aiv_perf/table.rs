//! The table (nccl-tests' columns and more): header, a row per size, the summary, and C's
//! number formats.

use aiv_comm::AllReduceAlgo;

use crate::cli::{config, redop, root, timeout_note, Opts};
use crate::ranks::Ranks;
use crate::sweep::{Measure, Row, Sweep};

/// C's `%g`: 6 significant digits, trailing zeros dropped, exponent form outside 1e-4..1e6.
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() { "nan" } else { "inf" }.into();
    }
    let e = format!("{v:.5e}");
    let (mant, exp) = e.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if !(-4..6).contains(&exp) {
        format!("{}{}", strip_zeros(mant), c_exponent(exp))
    } else {
        strip_zeros(&format!("{:.*}", (5 - exp) as usize, v)).to_string()
    }
}

/// `s` without the trailing zeros of its fraction (and the point, if nothing is left after it).
pub fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// C's exponent suffix: `e+06`, `e-05`.
pub fn c_exponent(exp: i32) -> String {
    format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// nccl-tests' number cell: `width` characters, 2, 1 or 0 decimals as they fit, else exponent.
pub fn fmt_cell(v: f64, width: usize) -> String {
    for prec in [2, 1, 0] {
        let s = format!("{v:>width$.prec$}");
        if s.len() <= width {
            return s;
        }
    }
    let prec = if width >= 7 { 1 } else { 0 };
    let e = format!("{v:.prec$e}");
    let (mant, exp) = e.split_once('e').expect("exponent form");
    let s = format!("{mant}{}", c_exponent(exp.parse().expect("exponent")));
    format!("{s:>width$}")
}

/// The header: the run's settings, then the column titles.
pub fn print_header(o: &Opts, world: &Ranks) {
    let buffer = config(o)
        .resolved_buffer_bytes()
        .map_or_else(|e| e.to_string(), |b| format!("{} MB", b >> 20));
    // Said only when on (HCCL_DETERMINISTIC): every AllReduce algorithm then gives the
    // rank-order sum, and `--algo hd` runs the kernel `auto` picks.
    let deterministic = match config(o).resolved_deterministic() {
        Ok(true) if o.ar_algo == AllReduceAlgo::Hd => {
            ", deterministic reductions in rank order (HCCL_DETERMINISTIC; --algo hd runs auto's kernel)"
        }
        Ok(true) => ", deterministic reductions in rank order (HCCL_DETERMINISTIC)",
        _ => "",
    };
    let on = match (world, &o.launch) {
        (Ranks::Process(_), Some(l)) => format!(
            "{}, one process per rank ({}){}",
            if world.twin().is_some() {
                "on the CPU twin".to_string()
            } else {
                format!("through {}", world.backend_description())
            },
            l.launcher,
            o.npus_per_node
                .map_or_else(String::new, |p| format!(", -p {p} NPUs per node"))
        ),
        (_, _) if world.twin().is_some() => "on the CPU twin, one process".to_string(),
        _ => format!("through {}", world.backend_description()),
    };
    out!(
        "# aiv-perf {} {on}: {} ranks, HCCL buffer {buffer}, exec timeout {}{}{deterministic}",
        o.coll.name,
        o.ranks,
        timeout_note(o),
        if o.register {
            ", buffers registered (-R 1)"
        } else {
            ""
        }
    );
    let step = match (o.step, o.factor) {
        (Some(s), _) => format!("{s}(bytes)"),
        (None, f) => format!("{}(factor)", f.unwrap_or(2)),
    };
    out!(
        "# minBytes {} maxBytes {} step: {step} warmup iters: {} iters: {} validation: {}",
        o.begin,
        o.end,
        o.warmup,
        o.iters,
        o.check as u8
    );
    out!("#");
    // `--checks-cost`: two more columns, the checked time and its ratio to the time (out of
    // place).
    let [cost0, cost1, cost2] = if o.checks_cost {
        [
            "  checkers on (out)".to_string(),
            format!("  {:>7}  {:>6}", "time", "on/off"),
            format!("  {:>7}  {:>6}", "(us)", ""),
        ]
    } else {
        Default::default()
    };
    out!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place           twin DMA   NPU cores (out)   census (out, per rank and op){cost0}",
        "", "", "", "", ""
    );
    out!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}{cost1}",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong", "dmabw", "dmabw", "cores", "GMB/core", "rdKiB", "wrKiB",
        "waits", "rounds"
    );
    out!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}{cost2}",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
        "(GB/s)", "", "(out)", "(in)", "", "(KiB/op)", "(data)", "(data)", "", ""
    );
}

/// A placement's time, algbw, busbw and #wrong cells (N/A without the placement).
pub fn body(m: Option<&Measure>) -> String {
    match m {
        Some(m) => format!(
            "  {}  {}  {}  {:>6}",
            fmt_cell(m.time_us, 7),
            fmt_cell(m.algbw, 6),
            fmt_cell(m.busbw, 6),
            m.wrong.map_or_else(|| "N/A".into(), |w| fmt_g(w as f64))
        ),
        None => format!("  {:>7}  {:>6}  {:>6}  {:>6}", "N/A", "N/A", "N/A", "N/A"),
    }
}

/// One row of the table.
pub fn print_row(o: &Opts, r: &Row) {
    let c = &r.out;
    if !c.on_twin {
        // Not on the twin: its DMA, core and census columns have nothing to say.
        out!(
            "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:>6}  {:>6}  {:>5}  {:>8}  {:>8}  {:>8}  {:>5}  {:>6}",
            r.size,
            r.count,
            o.dtype.name(),
            redop(o),
            root(o),
            body(Some(&r.out)),
            body(r.inp.as_ref()),
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A",
            "N/A"
        );
        return;
    }
    out!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {}  {:>6}  {:>5}  {}  {}  {}  {:>5}  {:>6}{}",
        r.size,
        r.count,
        o.dtype.name(),
        redop(o),
        root(o),
        body(Some(&r.out)),
        body(r.inp.as_ref()),
        fmt_cell(r.out.dmabw, 6),
        r.inp
            .as_ref()
            .map_or_else(|| "N/A".into(), |m| fmt_cell(m.dmabw, 6)),
        r.out.cores_used,
        fmt_cell(r.out.max_core_bytes / 1024.0, 8),
        census_cell(
            c,
            || fmt_cell(c.census_max(|k| k.data_read) as f64 / 1024.0, 8),
            8
        ),
        census_cell(
            c,
            || fmt_cell(c.census_max(|k| k.data_written) as f64 / 1024.0, 8),
            8
        ),
        census_cell(c, || c.census_max(|k| k.waits).to_string(), 0),
        census_cell(c, || c.census.rounds.to_string(), 0),
        cost_cells(&r.out)
    );
}

/// A census figure of `m` as `f` formats it, or N/A (right-aligned in `width`) where the census
/// does not cover the job.
pub fn census_cell(m: &Measure, f: impl FnOnce() -> String, width: usize) -> String {
    if m.census_known {
        f()
    } else {
        format!("{:>width$}", "N/A")
    }
}

/// `--checks-cost`'s columns of a placement: the checked time per operation and its ratio to
/// the unchecked one (nothing in a plain run).
pub fn cost_cells(m: &Measure) -> String {
    m.cost.as_ref().map_or_else(String::new, |c| {
        let ratio = match c.ratio {
            r if !r.is_finite() => "-".to_string(),
            r if r < 10.0 => format!("{r:.3}x"),
            r => format!("{r:.0}x"),
        };
        format!("  {}  {ratio:>6}", fmt_cell(c.time_us, 7))
    })
}

/// The lines after the rows: wrong results, the average busbw, the twin's checkers, the end.
pub fn print_summary(o: &Opts, sweep: &Sweep, avg: f64, failed: usize, backend: &str) {
    out!(
        "# {:<20} : {} {}",
        "Out of bounds values",
        failed,
        if failed == 0 { "OK" } else { "FAILED" }
    );
    out!("# {:<20} : {} ", "Avg bus bandwidth", fmt_g(avg));
    let on = |b: bool| if b { "on" } else { "off" };
    let cost = sweep.checked.map_or_else(String::new, |c| {
        format!(
            "; checked batches (--checks-cost): pipe hazards {}, GM races {}",
            on(c.hazards),
            on(c.races)
        )
    });
    match sweep.checkers {
        Some(c) => out!(
            "# {:<20} : pipe hazards {}, GM races {}{cost}",
            "Twin checkers",
            on(c.hazards),
            on(c.races)
        ),
        None => out!(
            "# {:<20} : N/A (the {} backend; acl-twin's come from its AIV_TWIN_* environment)",
            "Twin checkers",
            backend
        ),
    }
    out!("#");
    out!("# Collective test concluded: {}", o.coll.name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_number_formats() {
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(0.601234567), "0.601235");
        assert_eq!(fmt_g(12.5), "12.5");
        assert_eq!(fmt_g(3.0), "3");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(0.00001234), "1.234e-05");
        assert_eq!(fmt_cell(167.7, 7), " 167.70");
        assert_eq!(fmt_cell(58684.56, 7), "58684.6");
        assert_eq!(fmt_cell(1234567.0, 7), "1234567");
        assert_eq!(fmt_cell(123456789.0, 7), "1.2e+08");
        assert_eq!(fmt_cell(0.05, 6), "  0.05");
    }
}
