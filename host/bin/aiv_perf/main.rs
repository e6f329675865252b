//! aiv-perf: hccl_test / nccl-tests style bandwidth sweep of aiv-comm's collectives on the CPU
//! twin (or, with the `npu` feature, the device).
//!
//! ```text
//! aiv-perf <collective> [-b 8K] [-e 64M] [-f 2 | -i STEP] [-d fp32] [-o sum] [-r 0] [-p RANKS]
//!          [-n ITERS] [-w WARMUP] [-c 0|1] [-T SECONDS] [--buffsize MB] [--blocks-per-peer K] [--algo ALGO]
//!          [-R 0|1] [--twin-checks | --checks-cost] [--json]
//! aiv-perf [<collective>] --help
//! ```
//!
//! One subcommand per collective, each an entry of [`collectives::COLLECTIVES`] (name and
//! aliases, how the size argument becomes a per-rank count, buffer shapes, the busbw factor,
//! whether it has a root or a reduce op, its in-place layout, how to run it and the reference it
//! is checked against).
//! Every row is run out of place and then in place, as nccl-tests does, and printed with
//! nccl-tests' columns, plus the twin's `dmabw` (what the kernels' DMA moved in GM, all ranks
//! together, as copy bandwidth: (GM bytes read + GM bytes written) / 2 per second,
//! `ascendc_twin::Twin::gm_traffic`) and two figures in NPU terms from the twin's per-core
//! counters (`ascendc_twin::Twin::core_traffic`): how many cores (block indices) a rank's kernels
//! used, and what the busiest core moved per operation. After the timed iterations of each
//! placement, one more call with the same arguments runs untimed with the twin's sync census on
//! (`ascendc_twin::Twin::set_census`), so the timed calls never pay for it: per rank, the GM
//! bytes of data and flag memory its DMA read and wrote, its flag waits, and the sync rounds on
//! the critical path (the Lamport depth over flag stores and loads, `ascendc_twin::Census`);
//! the table shows them out of place, JSON for both placements. `--checks-cost` times the
//! iterations with the twin's checkers off and on in alternating batches of one process
//! ([`measure::cost_schedule`], [`sweep::cost_sides`]). Exit status: 0 ok, 1 if any element is
//! wrong (or the run failed), 2 on bad arguments.
//!
//! The modules, as nccl-tests splits its harness (each uses only those above it):
//!
//! * [`collectives`]: the table of collectives, one entry per subcommand;
//! * [`check`]: the inputs, their encoding, and the comparison of an output with its reference;
//! * [`help`]: `--help`, from the table;
//! * [`cli`]: the command line and environment into [`cli::Opts`] (or help, or an error);
//! * [`meet`]: where the ranks meet between the phases of a row;
//! * [`measure`]: one rank's measurement of one placement of one row;
//! * [`ranks`]: the ranks this process runs, and the gathering of their figures;
//! * [`sweep`]: the rows, and the ranks' measurements combined into each row's figures;
//! * [`stdout`], [`table`], [`json`]: the report, as nccl-tests' table or one JSON object.

#[macro_use]
mod stdout;

mod check;
mod cli;
mod collectives;
mod help;
mod json;
mod measure;
mod meet;
mod ranks;
mod sweep;
mod table;

use std::process::ExitCode;

use crate::cli::{parse, Parsed};
use crate::json::print_json;
use crate::ranks::make_world;
use crate::sweep::{run, Measure};
use crate::table::{print_header, print_row, print_summary};

/// Parses, runs and reports; exits 0, 1 (wrong elements or a failed run) or 2 (bad arguments).
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args, |k| std::env::var(k).ok()) {
        Ok(Parsed::Help(text)) => {
            out!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(o)) => o,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(2);
        }
    };
    let world = match make_world(&o) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(1);
        }
    };
    if !o.json && world.prints() {
        print_header(&o, &world);
    }
    let sweep = match run(&o, &world, |row| {
        if !o.json && world.prints() {
            print_row(&o, row);
        }
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aiv-perf: {e}");
            return ExitCode::from(1);
        }
    };
    let rows = &sweep.rows;
    let measures: Vec<&Measure> = rows
        .iter()
        .flat_map(|r| std::iter::once(&r.out).chain(r.inp.as_ref()))
        .collect();
    // As nccl-tests: the average over every result, out of place and in place; "out of
    // bounds" counts the results with a wrong element.
    let avg = measures.iter().map(|m| m.busbw).sum::<f64>() / measures.len().max(1) as f64;
    let failed = measures
        .iter()
        .filter(|m| m.wrong.is_some_and(|w| w > 0))
        .count();
    let wrong = o
        .check
        .then(|| measures.iter().filter_map(|m| m.wrong).sum::<usize>());
    if !world.prints() {
        // Rank 0 of the job prints; it has every rank's figures.
    } else if o.json {
        print_json(&o, &sweep, avg, failed, wrong, world.backend_name());
    } else {
        print_summary(&o, &sweep, avg, failed, world.backend_name());
    }
    if failed > 0 {
        eprintln!(
            "aiv-perf: {} wrong elements in {failed} results",
            wrong.unwrap_or(0)
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    /// The modules in the order the crate's documentation lists them.
    const LAYERS: &[&str] = &[
        "collectives",
        "check",
        "help",
        "cli",
        "meet",
        "measure",
        "ranks",
        "sweep",
        "stdout",
        "table",
        "json",
    ];

    /// Each module names (`crate::module`) only itself and the modules listed before it, so
    /// that none depends on itself through others; every module is in the list.
    #[test]
    fn each_module_uses_only_those_before_it() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("host/bin/aiv_perf");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "main.rs")
            .collect();
        files.sort();
        let mut listed: Vec<String> = LAYERS.iter().map(|m| format!("{m}.rs")).collect();
        listed.sort();
        assert_eq!(
            files, listed,
            "a module missing from LAYERS (or a stale entry)"
        );
        for (k, module) in LAYERS.iter().enumerate() {
            let text = std::fs::read_to_string(dir.join(format!("{module}.rs"))).unwrap();
            // Its code, without comments and unit tests.
            let code: Vec<&str> = text
                .lines()
                .take_while(|l| l.trim() != "#[cfg(test)]")
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            for used in code.join("\n").split("crate::").skip(1) {
                let used: String = used
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    LAYERS[..=k].contains(&used.as_str()),
                    "{module} uses {used}, which is not listed before it"
                );
            }
        }
    }
}
