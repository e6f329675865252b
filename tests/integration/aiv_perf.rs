//! Smoke tests of the aiv-perf binary (the README's main job): every subcommand, both
//! placements, the JSON output, the census columns, help, exit codes, sizes and the exec
//! timeout.

use std::process::Command;

use crate::common;

/// Runs aiv-perf with `args` and the environment `env`; returns (exit code, stdout, stderr).
fn aiv_perf_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aiv-perf"));
    cmd.args(args).env_remove("HCCL_EXEC_TIMEOUT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run aiv-perf");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One 4 KiB AllReduce on 2 ranks, no warm-up.
const ONE_SMALL_ALL_REDUCE: [&str; 11] = [
    "all_reduce",
    "-b",
    "4K",
    "-e",
    "4K",
    "-p",
    "2",
    "-n",
    "1",
    "-w",
    "0",
];

fn aiv_perf(args: &[&str]) -> (i32, String, String) {
    aiv_perf_env(args, &[])
}

/// The table's data rows, split into columns.
fn data_rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

// Columns: size count type redop root | time algbw busbw #wrong (out of place)
//          | time algbw busbw #wrong (in place) | dmabw (out) dmabw (in) | cores GMB/core
//          | rdKiB wrKiB waits rounds (the census call, out of place)
const SIZE: usize = 0;
const COUNT: usize = 1;
const TYPE: usize = 2;
const REDOP: usize = 3;
const ROOT: usize = 4;
const OOP_TIME: usize = 5;
const OOP_WRONG: usize = 8;
const IP_TIME: usize = 9;
const IP_WRONG: usize = 12;
const CORES: usize = 15;
const GMB_PER_CORE: usize = 16;
const RD_KIB: usize = 17;
const WR_KIB: usize = 18;
const WAITS: usize = 19;
const ROUNDS: usize = 20;
const COLUMNS: usize = 21;

/// Every subcommand, and whether it runs in place.
const SUBCOMMANDS: &[(&str, bool)] = &[
    ("all_gather", true),
    ("all_reduce", true),
    ("reduce_scatter", true),
    ("broadcast", true),
    ("alltoall", false),
    ("alltoallv", false),
    ("all_gather_v", true),
    ("reduce_scatter_v", true),
    ("sendrecv", false),
];

/// Quick settings: few ranks, one iteration, no warm-up, a small HCCL buffer.
const QUICK: &[&str] = &["-n", "1", "-w", "0", "--buffsize", "1"];

fn quick(args: &[&str]) -> Vec<String> {
    args.iter()
        .chain(QUICK)
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
}

fn run_quick(args: &[&str]) -> (i32, String, String) {
    let a = quick(args);
    aiv_perf(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

/// [`run_quick`] with `--json` added: the run must succeed; its JSON object.
fn quick_json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let (code, out, err) = run_quick(&a);
    assert_eq!(code, 0, "{args:?}: {out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

#[test]
fn every_subcommand_runs_out_of_place_and_in_place() {
    for &(coll, in_place) in SUBCOMMANDS {
        let (code, out, err) = run_quick(&[coll, "-b", "1K", "-e", "8K", "-f", "8", "-p", "3"]);
        assert_eq!(code, 0, "{coll}: {out}\n{err}");
        assert!(
            err.is_empty(),
            "{coll}: no progress line without a terminal: {err}"
        );
        assert!(
            out.contains("out-of-place") && out.contains("in-place"),
            "{coll}: {out}"
        );
        let rows = data_rows(&out);
        assert_eq!(rows.len(), 2, "{coll}: {out}"); // 1K 8K
        for row in &rows {
            assert_eq!(row.len(), COLUMNS, "{coll}: {row:?}");
            let root = if coll == "broadcast" { "0" } else { "-1" };
            assert_eq!(row[ROOT], root, "{coll}: root");
            let cores: usize = row[CORES].parse().unwrap();
            assert!((1..=3).contains(&cores), "{coll}: {row:?}");
            assert!(
                row[GMB_PER_CORE].parse::<f64>().unwrap() > 0.0,
                "{coll}: {row:?}"
            );
            // The census call: every collective moves data and synchronises through flags.
            for col in [RD_KIB, WR_KIB] {
                assert!(row[col].parse::<f64>().unwrap() > 0.0, "{coll}: {row:?}");
            }
            assert!(row[WAITS].parse::<u64>().unwrap() >= 1, "{coll}: {row:?}");
            assert!(row[ROUNDS].parse::<u64>().unwrap() >= 1, "{coll}: {row:?}");
            assert!(
                row[OOP_TIME].parse::<f64>().unwrap() > 0.0,
                "{coll}: {row:?}"
            );
            assert_eq!(row[OOP_WRONG], "0", "{coll}: {out}");
            if in_place {
                assert!(
                    row[IP_TIME].parse::<f64>().unwrap() > 0.0,
                    "{coll}: {row:?}"
                );
                assert_eq!(row[IP_WRONG], "0", "{coll}: {out}");
            } else {
                assert!(
                    row[IP_TIME..=IP_WRONG].iter().all(|c| c == "N/A"),
                    "{row:?}"
                );
            }
        }
        assert!(out.contains("\n# Out of bounds values : 0 OK\n"), "{out}");
        assert!(out.contains("\n# Avg bus bandwidth    : "), "{out}");
        assert!(
            out.ends_with(&format!("# Collective test concluded: {coll}\n")),
            "{out}"
        );
    }
}

#[test]
fn all_reduce_sweep_with_check() {
    let (code, out, err) = aiv_perf(&[
        "all_reduce",
        "-b",
        "1K",
        "-e",
        "64K",
        "-f",
        "4",
        "-p",
        "3",
        "-n",
        "3",
        "-w",
        "1",
        "-c",
        "1",
        "--buffsize",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 4, "{out}"); // 1K 4K 16K 64K
    for (row, size) in rows.iter().zip([1024u64, 4096, 16384, 65536]) {
        assert_eq!(row[SIZE].parse::<u64>().unwrap(), size);
        assert_eq!(row[COUNT].parse::<u64>().unwrap(), size / 4);
        assert_eq!(row[TYPE], "float");
        assert_eq!(row[REDOP], "sum");
        assert_eq!(row[OOP_WRONG], "0", "wrong elements: {out}");
        assert_eq!(row[IP_WRONG], "0", "wrong elements: {out}");
    }
}

#[test]
fn all_gather_int8_rounds_sizes_to_whole_elements_per_rank() {
    let (code, out, err) = run_quick(&[
        "all_gather",
        "-b",
        "1000",
        "-e",
        "1000",
        "-d",
        "int8",
        "-p",
        "3",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows[0][SIZE], "999"); // 333 per rank x 3
    assert_eq!(rows[0][COUNT], "333"); // per rank, as nccl-tests counts
    assert_eq!(rows[0][TYPE], "int8");
    assert_eq!(rows[0][REDOP], "none");
    assert_eq!((&*rows[0][OOP_WRONG], &*rows[0][IP_WRONG]), ("0", "0"));
}

#[test]
fn hd_algorithm_in_place_and_out_of_place() {
    let (code, out, err) = aiv_perf(&[
        "all_reduce",
        "-b",
        "4K",
        "-e",
        "64K",
        "-f",
        "16",
        "-p",
        "5",
        "-n",
        "2",
        "-w",
        "1",
        "--algo",
        "hd",
        "-d",
        "int16",
        "-o",
        "max",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r[OOP_WRONG] == "0" && r[IP_WRONG] == "0" && r[REDOP] == "max"),
        "{out}"
    );
}

#[test]
fn json_output_is_valid_with_both_placements() {
    for (coll, extra) in [
        ("all_reduce", &["-d", "bf16", "-o", "max"][..]),
        ("all_gather", &["-d", "uint16"][..]),
        ("sendrecv", &["-d", "bfp16"][..]),
        ("reduce_scatter", &["-d", "int8", "-o", "min"][..]),
        ("broadcast", &["-d", "fp64"][..]),
        ("alltoall", &["-d", "uint32"][..]),
        ("alltoallv", &["-d", "int16"][..]),
        ("all_gather_v", &["-d", "fp16"][..]),
        ("reduce_scatter_v", &["-d", "bf16", "-o", "max"][..]),
    ] {
        let mut args = vec![coll, "-b", "4K", "-e", "8K", "-p", "2", "--json"];
        args.extend(extra);
        let (code, out, err) = run_quick(&args);
        assert_eq!(code, 0, "{coll}: {out}\n{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| {
            panic!("{coll}: not JSON ({e}): {out}");
        });
        assert_eq!(v["collective"], coll);
        assert_eq!(v["ranks"], 2);
        assert_eq!(v["root"], if coll == "broadcast" { 0 } else { -1 });
        assert_eq!(v["out_of_bounds"], 0);
        assert_eq!(v["wrong"], 0);
        assert!(v["avg_busbw"].as_f64().unwrap() >= 0.0);
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{coll}: {out}");
        assert_eq!(rows[0]["size"], 4096);
        let in_place = SUBCOMMANDS.iter().any(|&(c, i)| c == coll && i);
        for r in rows {
            let oop = &r["out_of_place"];
            assert_eq!(oop["wrong"], 0, "{coll}: {r}");
            assert!(oop["time_us"].as_f64().unwrap() > 0.0);
            assert!(oop["dmabw"].is_number());
            let cores = oop["cores_used"].as_u64().unwrap();
            assert!((1..=2).contains(&cores), "{coll}: {r}");
            let (read, written) = (
                oop["gm_read_per_rank"].as_u64().unwrap(),
                oop["gm_written_per_rank"].as_u64().unwrap(),
            );
            let max_core = oop["max_core_bytes"].as_f64().unwrap();
            assert!(read > 0 && written > 0, "{coll}: {r}");
            assert!(
                max_core > 0.0 && max_core <= (read + written) as f64 + 1.0,
                "{coll}: a core moves at most its rank's bytes: {r}"
            );
            // The census call's figures: the per-rank maxima match the per-rank list.
            let census = oop["census"].as_array().unwrap();
            assert_eq!(census.len(), 2, "{coll}: {r}");
            for (field, each) in [
                ("gm_data_read_per_rank", "gm_data_read"),
                ("gm_data_written_per_rank", "gm_data_written"),
                ("gm_flag_read_per_rank", "gm_flag_read"),
                ("gm_flag_written_per_rank", "gm_flag_written"),
                ("flag_waits_per_rank", "flag_waits"),
                ("blocking_waits_per_rank", "blocking_waits"),
            ] {
                let max = census.iter().map(|k| k[each].as_u64().unwrap()).max();
                assert_eq!(oop[field].as_u64(), max, "{coll}: {field}: {r}");
            }
            assert!(oop["gm_data_read_per_rank"].as_u64().unwrap() > 0, "{r}");
            assert!(oop["gm_data_written_per_rank"].as_u64().unwrap() > 0, "{r}");
            assert!(oop["flag_waits_per_rank"].as_u64().unwrap() >= 1, "{r}");
            let rounds = oop["sync_rounds"].as_u64().unwrap();
            let deepest = census.iter().map(|k| k["depth"].as_u64().unwrap()).max();
            assert!(rounds >= 1 && Some(rounds) == deepest, "{coll}: {r}");
            if in_place {
                assert_eq!(r["in_place"]["wrong"], 0, "{coll}: {r}");
                assert!(r["in_place"]["sync_rounds"].is_u64(), "{coll}: {r}");
                assert_eq!(r["in_place"]["census"].as_array().map(Vec::len), Some(2));
                assert!(r["in_place"]["busbw"].is_number());
                assert!(r["in_place"]["cores_used"].is_u64(), "{coll}: {r}");
                assert!(r["in_place"]["max_core_bytes"].is_number(), "{coll}: {r}");
            } else {
                assert!(r["in_place"].is_null(), "{r}");
            }
        }
        if coll == "all_reduce" {
            assert_eq!(rows[0]["redop"], "max");
            assert_eq!(rows[0]["type"], "bfloat16");
        }
    }
}

#[test]
fn unchecked_runs_print_na_and_json_null() {
    let (code, out, _) = run_quick(&["all_reduce", "-b", "4K", "-e", "4K", "-p", "2", "-c", "0"]);
    assert_eq!(code, 0);
    let rows = data_rows(&out);
    assert_eq!((&*rows[0][OOP_WRONG], &*rows[0][IP_WRONG]), ("N/A", "N/A"));
    let v = quick_json(&["all_reduce", "-b", "4K", "-e", "4K", "-p", "2", "-c", "0"]);
    assert!(v["wrong"].is_null() && v["rows"][0]["in_place"]["wrong"].is_null());
}

#[test]
fn bad_arguments_exit_2_with_a_one_line_reason() {
    for args in [
        vec![],
        vec!["reduce"],
        vec!["-b", "8K"],
        vec!["all_reduce", "-d", "fp64"],
        vec!["all_reduce", "-d", "fp8"],
        vec!["all_reduce", "-o", "prod"],
        vec!["all_reduce", "-o", "avg"],
        vec!["all_gather", "-o", "sum"],
        vec!["sendrecv", "-o", "max"],
        vec!["broadcast", "-o", "sum"],
        vec!["alltoallv", "-o", "max"],
        vec!["reduce_scatter", "-d", "uint8"],
        vec!["reduce_scatter_v", "-o", "prod"],
        vec!["broadcast", "-p", "3", "-r", "3"],
        vec!["all_gather", "--algo", "hd"],
        vec!["all_reduce", "--algo", "ring"],
        vec!["all_gather", "-b", "10X"],
        vec!["all_gather", "-b", "1.5M"],
        vec!["all_gather", "-p", "0"],
        vec!["all_gather", "-p", "33"],
        vec!["sendrecv", "-p", "1"],
        vec!["all_reduce", "-p", "4", "-r", "4"],
        vec!["all_reduce", "-r", "-1"],
        vec!["all_gather", "-b", "2M", "-e", "1M"],
        vec!["all_gather", "-f"],
        vec!["all_gather", "-f", "1"],
        vec!["all_gather", "-f", "2", "-i", "1K"],
        vec!["all_gather", "-n", "0"],
        vec!["all_gather", "-c", "2"],
        vec!["all_gather", "-R", "2"],
        vec!["all_gather", "--nope"],
        vec!["all_gather", "-x", "1"],
        vec!["all_reduce", "-T", "0.001"],
        vec!["all_reduce", "-T", "-1"],
        vec!["all_reduce", "-T", "soon"],
        vec!["all_gather", "-b", "4", "-e", "8", "-p", "4"],
        vec!["all_reduce", "--checks-cost", "--twin-checks"],
    ] {
        let (code, out, err) = aiv_perf(&args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.starts_with("aiv-perf: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn bad_environment_exits_2() {
    for env in [
        ("HCCL_EXEC_TIMEOUT", "soon"),
        ("HCCL_BUFFSIZE", "lots"),
        ("HCCL_BUFFSIZE", "0"),
        ("HCCL_DETERMINISTIC", "1"),
        ("AIV_TWIN_RACES", "garbage"),
        ("AIV_TWIN_JITTER_US", "5us"),
        ("AIV_TWIN_WATCHDOG_MS", "-3"),
    ] {
        let (code, _, err) = aiv_perf_env(&["all_reduce"], &[env]);
        assert_eq!(code, 2, "{env:?}: {err}");
        // One line naming the variable.
        assert!(
            err.starts_with("aiv-perf: ") && err.contains(env.0),
            "{env:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{env:?}: {err}");
    }
    // --checks-cost with both checkers turned off has nothing to time.
    let off = [("AIV_TWIN_HAZARDS", "0"), ("AIV_TWIN_RACES", "0")];
    let (code, out, err) = aiv_perf_env(&["all_reduce", "--checks-cost"], &off);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.starts_with("aiv-perf: ") && err.contains("--checks-cost"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_buffer_size_that_cannot_be_allocated_is_an_error_naming_the_setting() {
    // Sizes that do not fit the address space: refused as bad arguments.
    for mb in ["0", "17592186044415", "17592186044417"] {
        let (code, out, err) = aiv_perf(&["all_reduce", "--buffsize", mb]);
        assert_eq!(code, 2, "{mb}: {out} {err}");
        assert!(err.starts_with("aiv-perf: --buffsize"), "{mb}: {err}");
    }
    // Sizes that fit but that the machine cannot allocate (1 EiB): the world is not made.
    let (code, _, err) = aiv_perf_env(&["all_reduce"], &[("HCCL_BUFFSIZE", "1099511627776")]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("HCCL_BUFFSIZE") && err.contains("cannot be allocated"),
        "{err}"
    );
    let (code, _, err) = aiv_perf(&["all_reduce", "--buffsize", "1099511627776"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--buffsize") && err.contains("cannot be allocated"),
        "{err}"
    );
}

#[test]
fn deterministic_mode_is_said_in_the_header_only_when_on() {
    let header = |env: &[(&str, &str)], algo: &str| {
        let mut args = ONE_SMALL_ALL_REDUCE.to_vec();
        args.extend(["--algo", algo]);
        let (code, out, err) = aiv_perf_env(&args, env);
        assert_eq!(code, 0, "{err}");
        out.lines().next().unwrap().to_string()
    };
    let on = [("HCCL_DETERMINISTIC", "true")];
    assert!(!header(&[], "auto").contains("deterministic"));
    let h = header(&on, "auto");
    assert!(
        h.contains("deterministic reductions in rank order") && !h.contains("hd"),
        "{h}"
    );
    let h = header(&on, "hd");
    assert!(h.contains("--algo hd runs auto's kernel"), "{h}");
}

#[test]
fn help_anywhere_on_the_command_line() {
    for args in [
        &["-h"][..],
        &["--help"],
        &["all_reduce", "-b", "10X", "-h"],
        &["-p", "0", "--help"],
        &["bogus", "-h"],
    ] {
        let (code, out, err) = aiv_perf(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(out.contains("usage: aiv-perf"), "{args:?}: {out}");
        if args[0] != "all_reduce" {
            for &(c, _) in SUBCOMMANDS {
                assert!(out.contains(&format!("\n  {c} ")), "{c} listed: {out}");
            }
        }
    }
    for &(coll, _) in SUBCOMMANDS {
        let (code, out, _) = aiv_perf(&[coll, "--help"]);
        assert_eq!(code, 0);
        assert!(out.starts_with(&format!("aiv-perf {coll}: ")), "{out}");
        assert!(out.contains("busbw"), "{out}");
    }
}

#[test]
fn size_suffixes_k_m_and_kb_mb_in_any_case() {
    let (code, out, err) = run_quick(&["all_reduce", "-b", "1KB", "-e", "4k", "-p", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    let sizes: Vec<&str> = rows.iter().map(|r| r[SIZE].as_str()).collect();
    assert_eq!(sizes, ["1024", "2048", "4096"]);
    let (code, out, err) = run_quick(&[
        "all_gather",
        "-b",
        "64Kb",
        "-e",
        "1m",
        "-f",
        "16",
        "-p",
        "2",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!((&*rows[0][SIZE], &*rows[1][SIZE]), ("65536", "1048576"));
    // getopt's attached forms
    let (code, out, err) = run_quick(&["all_gather_perf", "-b2K", "--maxbytes=2KB", "-g", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(data_rows(&out)[0][SIZE], "2048");
}

#[test]
fn rows_below_one_element_per_rank_are_skipped() {
    // fp32 over 4 ranks: 4 and 8 bytes hold no element per rank, 16 holds one.
    let (code, out, err) = run_quick(&["all_gather", "-b", "4", "-e", "64", "-p", "4"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    let sizes: Vec<&str> = rows.iter().map(|r| r[SIZE].as_str()).collect();
    let counts: Vec<&str> = rows.iter().map(|r| r[COUNT].as_str()).collect();
    assert_eq!(sizes, ["16", "32", "64"], "{out}");
    assert_eq!(counts, ["1", "2", "4"], "{out}");
    // all_reduce: one element is the whole size; 1 byte of fp16 is skipped.
    let (code, out, _) = run_quick(&["all_reduce", "-b", "1", "-e", "2", "-d", "fp16", "-p", "2"]);
    assert_eq!(code, 0);
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][SIZE], "2");
}

#[test]
fn exec_timeout_flag_and_environment() {
    let header = |args: &[&str], env: &[(&str, &str)]| {
        let mut a = quick(&["sendrecv", "-b", "1K", "-e", "1K", "-p", "2"]);
        a.extend(args.iter().map(|s| s.to_string()));
        let (code, out, err) = aiv_perf_env(&a.iter().map(String::as_str).collect::<Vec<_>>(), env);
        assert_eq!(code, 0, "{args:?} {env:?}: {out}\n{err}");
        assert_eq!(data_rows(&out)[0][OOP_WRONG], "0");
        out.lines().next().unwrap().to_string()
    };
    assert!(header(&[], &[]).ends_with("exec timeout 120.00 s (default)"));
    assert!(header(&["-T", "2.5"], &[]).ends_with("exec timeout 2.50 s (-T)"));
    // HCCL's AIV mode: 0, and anything above 1091, mean 1091 s.
    assert!(header(&["-T", "0"], &[]).ends_with("exec timeout 1091.00 s (-T)"));
    assert!(header(&["-T", "5000"], &[]).ends_with("exec timeout 1091.00 s (-T)"));
    let env = [("HCCL_EXEC_TIMEOUT", "0.5")];
    assert!(header(&[], &env).ends_with("exec timeout 0.50 s (HCCL_EXEC_TIMEOUT)"));
    // -T overrides the environment, even a value that would be refused.
    let bad = [("HCCL_EXEC_TIMEOUT", "soon")];
    assert!(header(&["-T", "3"], &bad).ends_with("exec timeout 3.00 s (-T)"));
    let zero = [("HCCL_EXEC_TIMEOUT", "0")];
    assert!(header(&[], &zero).ends_with("exec timeout 1091.00 s (HCCL_EXEC_TIMEOUT)"));
}

#[test]
fn a_deadline_shorter_than_the_work_says_so_and_names_its_source() {
    // 32 MiB per rank on 4 ranks takes far longer than 10 ms on the twin.
    let (code, _, err) = aiv_perf(&[
        "all_reduce",
        "-b",
        "32M",
        "-e",
        "32M",
        "-p",
        "4",
        "-n",
        "1",
        "-w",
        "0",
        "-T",
        "0.01",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("takes longer than the deadline") && err.contains("0.01 s (-T)"),
        "{err}"
    );
}

#[test]
fn broadcast_prints_its_root() {
    let (code, out, err) = run_quick(&[
        "broadcast_perf",
        "-b",
        "1K",
        "-e",
        "1K",
        "-p",
        "3",
        "-r",
        "2",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0][ROOT], "2", "{out}");
    assert_eq!((&*rows[0][OOP_WRONG], &*rows[0][IP_WRONG]), ("0", "0"));
    let v = quick_json(&["broadcast", "-b", "1K", "-e", "1K", "-p", "3", "-r", "2"]);
    assert_eq!((&v["root"], &v["rows"][0]["root"]), (&2.into(), &2.into()));
    let (code, out, err) = aiv_perf(&["broadcast", "-p", "3", "-r", "3"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("-r 3"), "{err}");
}

#[test]
fn all_gather_pull_uses_one_core_per_peer_and_pull_parts_one() {
    // Pull runs one block per rank: block q moves peer q's piece; the busiest core (a rank's
    // own block: its input read once, written twice) moves about 3 x the per-rank input.
    // PullParts (what auto picks) runs one block per rank below 1 MiB, moving all of it: its
    // input read once and written twice, each peer's staged copy read and written once (7 x).
    for (algo, cores, per_core) in [("pull", "3", 3.0), ("auto", "1", 7.0)] {
        let (code, out, err) = run_quick(&[
            "all_gather",
            "-b",
            "3K",
            "-e",
            "96K",
            "-f",
            "32",
            "-p",
            "3",
            "--algo",
            algo,
        ]);
        assert_eq!(code, 0, "{out}\n{err}");
        let rows = data_rows(&out);
        assert_eq!(rows.len(), 2, "{out}");
        for row in &rows {
            assert_eq!(row[CORES], cores, "{algo}: {out}");
            // KiB per operation.
            let per_rank_kib = row[SIZE].parse::<f64>().unwrap() / 3.0 / 1024.0;
            let kib: f64 = row[GMB_PER_CORE].parse().unwrap();
            assert!(
                kib >= per_core * per_rank_kib && kib < per_core * per_rank_kib + 4.0,
                "{algo}: {kib} KiB for {per_rank_kib} KiB per rank: {out}"
            );
        }
    }
}

#[test]
fn uneven_collectives_document_their_counts() {
    for coll in ["alltoallv", "all_gather_v", "reduce_scatter_v"] {
        let (code, out, _) = aiv_perf(&[coll, "--help"]);
        assert_eq!(code, 0);
        assert!(out.contains("\n  counts "), "{coll}: {out}");
        assert!(out.contains("proportional to"), "{coll}: {out}");
    }
}

#[test]
fn a_wrong_element_is_counted_and_exits_1() {
    let (code, out, _) = aiv_perf_env(&ONE_SMALL_ALL_REDUCE, &[("AIV_PERF_INJECT_WRONG", "1")]);
    assert_eq!(code, 1, "{out}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 1, "{out}");
    // size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong | ...
    assert_eq!(rows[0][8], "1", "out-of-place #wrong: {out}");
    assert_eq!(rows[0][12], "1", "in-place #wrong: {out}");
    assert!(out.contains("# Out of bounds values : 2 FAILED"), "{out}");
    // The same run without the injection is clean.
    let (code, out, _) = aiv_perf(&ONE_SMALL_ALL_REDUCE);
    assert_eq!(code, 0, "{out}");
    assert_eq!(data_rows(&out)[0][8], "0");
}

#[test]
fn a_wrong_last_element_past_the_first_check_chunks_is_counted() {
    // The small AllReduce at 3000000 bytes of output: the check compares 1 MiB at a time, so
    // the last element lies in a third, ragged chunk.
    let mut args = ONE_SMALL_ALL_REDUCE;
    (args[2], args[4]) = ("3000000", "3000000");
    assert_eq!((args[1], args[3]), ("-b", "-e"));
    let (code, out, _) = aiv_perf_env(&args, &[("AIV_PERF_INJECT_WRONG", "last")]);
    assert_eq!(code, 1, "{out}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0][8], "1", "out-of-place #wrong: {out}");
    assert_eq!(rows[0][12], "1", "in-place #wrong: {out}");
    let (code, out, _) = aiv_perf(&args);
    assert_eq!(code, 0, "{out}");
    let rows = data_rows(&out);
    assert_eq!((rows[0][8].as_str(), rows[0][12].as_str()), ("0", "0"));
}

#[test]
fn the_census_gives_all_gathers_protocol_figures() {
    // AllGather of S = 64 KiB per rank on 2 ranks (kernel/all_gather.cpp): each rank reads its
    // input and the peer's staged copy (2 S) and writes its staging copy, its slot and the
    // peer's slot (3 S); its block waits for the peer's "staged" flag and then for its
    // post-sync flag: 2 waits, 2 rounds. In place (input = my slot of the output) the same.
    let (code, out, err) = run_quick(&["all_gather", "-b", "128K", "-e", "128K", "-p", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 1, "{out}");
    let cols: Vec<&str> = [RD_KIB, WR_KIB, WAITS, ROUNDS]
        .iter()
        .map(|&i| rows[0][i].as_str())
        .collect();
    assert_eq!(cols, ["128.00", "192.00", "2", "2"], "{out}");
    let v = quick_json(&["all_gather", "-b", "128K", "-e", "128K", "-p", "2"]);
    let s = 64 * 1024u64;
    for place in ["out_of_place", "in_place"] {
        let m = &v["rows"][0][place];
        assert_eq!(m["sync_rounds"], 2, "{place}: {m}");
        assert_eq!(m["flag_waits_per_rank"], 2, "{place}: {m}");
        assert_eq!(m["blocking_waits_per_rank"], 2, "{place}: {m}");
        for k in m["census"].as_array().unwrap() {
            assert_eq!(k["gm_data_read"], 2 * s, "{place}: {m}");
            assert_eq!(k["gm_data_written"], 3 * s, "{place}: {m}");
            // One 32-byte flag store per block: "staged" and "done reading".
            assert_eq!(k["gm_flag_written"], 64, "{place}: {m}");
            // One block (PullParts), whose waits are two deep.
            assert_eq!((&k["blocks"], &k["depth"]), (&1.into(), &2.into()), "{m}");
        }
    }
}

#[test]
fn the_output_says_which_twin_checkers_ran_and_the_environment_still_turns_one_off() {
    // aiv-perf measures with the checkers off; --twin-checks keeps the twin's configuration,
    // in which AIV_TWIN_RACES=0 / AIV_TWIN_HAZARDS=0 turn one checker off.
    let args = ONE_SMALL_ALL_REDUCE;
    let on = [("AIV_TWIN_HAZARDS", "1"), ("AIV_TWIN_RACES", "1")];
    for (flag, env, hazards, races) in [
        (false, on, false, false),
        (true, on, true, true),
        (
            true,
            [("AIV_TWIN_HAZARDS", "1"), ("AIV_TWIN_RACES", "0")],
            true,
            false,
        ),
        (
            true,
            [("AIV_TWIN_HAZARDS", "0"), ("AIV_TWIN_RACES", "1")],
            false,
            true,
        ),
    ] {
        let mut a: Vec<&str> = args.to_vec();
        if flag {
            a.push("--twin-checks");
        }
        let (code, out, err) = aiv_perf_env(&a, &env);
        assert_eq!(code, 0, "{out}\n{err}");
        let word = |b: bool| if b { "on" } else { "off" };
        let want = format!("pipe hazards {}, GM races {}", word(hazards), word(races));
        assert!(
            out.lines()
                .any(|l| l.starts_with("# Twin checkers") && l.ends_with(&want)),
            "{flag} {env:?}: {out}"
        );
        a.push("--json");
        let (code, out, err) = aiv_perf_env(&a, &env);
        assert_eq!(code, 0, "{out}\n{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["twin_checks"]["hazards"], hazards, "{flag} {env:?}: {v}");
        assert_eq!(v["twin_checks"]["races"], races, "{flag} {env:?}: {v}");
    }
}

#[test]
fn checks_cost_times_both_sides_in_one_run_with_traffic_per_operation_unchanged() {
    // --checks-cost: the timed iterations run with the checkers off and as many again with them
    // on (as configured: the environment still turns one off), in alternating batches of one
    // run. The main figures are the unchecked side's, the checked time and the ratio come beside
    // them: the median of the adjacent off/on pairs' ratios, every pair listed in the JSON. What
    // the kernels move per operation does not depend on the checkers: it is that of a plain run
    // (flag polls vary from run to run, a few hundred bytes in a megabyte). -n 7: 7 batches a
    // side of one call each, an odd number of pairs.
    let args = [
        "all_reduce",
        "-b",
        "64K",
        "-e",
        "64K",
        "-p",
        "4",
        "-n",
        "7",
        "-w",
        "1",
        "-R",
        "1",
        "--json",
    ];
    let on = [("AIV_TWIN_HAZARDS", "1"), ("AIV_TWIN_RACES", "1")];
    let no_races = [("AIV_TWIN_HAZARDS", "1"), ("AIV_TWIN_RACES", "0")];
    // Launches of one call, all ranks (the census of the extra call).
    let launches = |m: &serde_json::Value| -> u64 {
        m["census"]
            .as_array()
            .unwrap_or_else(|| panic!("{m}"))
            .iter()
            .map(|r| r["launches"].as_u64().unwrap())
            .sum()
    };
    let checked = |m: &serde_json::Value| {
        (
            m["checked_launches"]["hazards"].as_u64().unwrap(),
            m["checked_launches"]["races"].as_u64().unwrap(),
        )
    };
    let (code, out, err) = aiv_perf_env(&args, &on);
    assert_eq!(code, 0, "{out}\n{err}");
    let plain: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(plain["checked_batches"], serde_json::Value::Null, "{plain}");
    // A plain run times the twin without its checkers, --twin-checks with them.
    assert_eq!(
        checked(&plain["rows"][0]["out_of_place"]),
        (0, 0),
        "{plain}"
    );
    let mut a = args.to_vec();
    a.push("--twin-checks");
    let (code, out, err) = aiv_perf_env(&a, &on);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let m = &v["rows"][0]["out_of_place"];
    let all = 7 * launches(m);
    assert!(all >= 7 * 4, "{m}");
    assert_eq!(checked(m), (all, all), "{m}");
    assert_eq!(
        plain["rows"][0]["out_of_place"]["checked_time_us"],
        serde_json::Value::Null,
        "{plain}"
    );
    for (env, races) in [(on, true), (no_races, false)] {
        let mut a = args.to_vec();
        a.push("--checks-cost");
        let (code, out, err) = aiv_perf_env(&a, &env);
        assert_eq!(code, 0, "{env:?}: {out}\n{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["twin_checks"]["hazards"], false, "{v}");
        assert_eq!(v["twin_checks"]["races"], false, "{v}");
        assert_eq!(v["checked_batches"]["hazards"], true, "{v}");
        assert_eq!(v["checked_batches"]["races"], races, "{env:?}: {v}");
        for place in ["out_of_place", "in_place"] {
            let m = &v["rows"][0][place];
            let p = &plain["rows"][0][place];
            let f = |m: &serde_json::Value, k: &str| {
                m[k].as_f64().unwrap_or_else(|| panic!("{place} {k}: {m}"))
            };
            let (t, c, r) = (
                f(m, "time_us"),
                f(m, "checked_time_us"),
                f(m, "checks_ratio"),
            );
            assert!(t > 0.0 && c > 0.0, "{place}: {m}");
            // Each pair: (off, on) us per operation of one call each; the sides' times are
            // their means (the JSON rounds to 3 decimals) and the ratio the pairs' median.
            let pairs: Vec<(f64, f64)> = m["checks_pairs"]
                .as_array()
                .unwrap_or_else(|| panic!("{place}: {m}"))
                .iter()
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
                .collect();
            assert_eq!(pairs.len(), 7, "{place}: {m}");
            let mean = |f: fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / 7.0;
            assert!((mean(|p| p.0) - t).abs() < 0.01, "{place}: {m}");
            assert!((mean(|p| p.1) - c).abs() < 0.01, "{place}: {m}");
            let mut ratios: Vec<f64> = pairs.iter().map(|(off, on)| on / off).collect();
            ratios.sort_by(f64::total_cmp);
            assert!((r - ratios[3]).abs() <= 1e-3 * r, "{place}: {m}");
            assert_eq!(m["wrong"], 0, "{place}: {m}");
            // The checked batches, and only they, ran with the checkers on: as many launches
            // as 7 calls make.
            let half = 7 * launches(m);
            assert_eq!(
                checked(m),
                (half, if races { half } else { 0 }),
                "{place}: {m}"
            );
            for k in ["dma_bytes_per_op", "max_core_bytes", "gm_read_per_rank"] {
                let ratio = f(m, k) / f(p, k);
                assert!((0.9..1.1).contains(&ratio), "{place} {k}: {m} vs {p}");
            }
            assert_eq!(
                m["gm_data_read_per_rank"], p["gm_data_read_per_rank"],
                "{place}"
            );
        }
    }
    // The table: the checked time and the ratio after the census columns.
    let mut a = args[..args.len() - 1].to_vec();
    a.push("--checks-cost");
    let (code, out, err) = aiv_perf_env(&a, &on);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.lines().any(|l| l.starts_with("# Twin checkers")
            && l.contains("checked batches (--checks-cost): pipe hazards on")),
        "{out}"
    );
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0].len(), COLUMNS + 2, "{out}");
    let t: f64 = rows[0][OOP_TIME].parse().unwrap();
    let c: f64 = rows[0][COLUMNS].parse().unwrap();
    let r: f64 = rows[0][COLUMNS + 1].trim_end_matches('x').parse().unwrap();
    assert!(t > 0.0 && c > 0.0 && r > 0.0, "{out}");
}

#[test]
fn registered_buffers_move_the_floor_and_give_the_same_results() {
    // -R 1: every rank's send and recv buffers are windows. AllGather of 64 KiB per rank on 2
    // ranks then reads the peer's input in place: out of place, my input and the peer's (2 S)
    // into my two slots (2 S); in place my input is my slot already, so S and S. Still two
    // rounds. Every element checked, AllReduce too.
    let v = quick_json(&[
        "all_gather",
        "-b",
        "128K",
        "-e",
        "128K",
        "-p",
        "2",
        "-R",
        "1",
    ]);
    assert_eq!(v["registered"], true, "{v}");
    let s = 64 * 1024u64;
    for (place, moved) in [("out_of_place", 2 * s), ("in_place", s)] {
        let m = &v["rows"][0][place];
        assert_eq!(m["wrong"], 0, "{place}: {m}");
        assert_eq!(m["sync_rounds"], 2, "{place}: {m}");
        for k in m["census"].as_array().unwrap() {
            assert_eq!(k["gm_data_read"], moved, "{place}: {m}");
            assert_eq!(k["gm_data_written"], moved, "{place}: {m}");
        }
    }
    let (code, out, err) = run_quick(&[
        "all_reduce",
        "-b",
        "8K",
        "-e",
        "64K",
        "-f",
        "8",
        "-p",
        "3",
        "-R",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("buffers registered (-R 1)"), "{out}");
    for row in data_rows(&out) {
        assert_eq!((row[8].as_str(), row[12].as_str()), ("0", "0"), "{out}");
    }
}

#[test]
fn all_gather_algo_picks_push_or_seed_000s_staging_and_pull() {
    // Push (kernel/push.cpp): each rank writes its input into its peers' push regions and flags
    // them, one sync round; pull (seed 000's staging + pull) and pull_parts (the same on one
    // block per part, what auto picks for AllGather): the staged flag, then the post-sync, two
    // rounds. All are checked element by element.
    for (algo, rounds) in [
        ("push", "1"),
        ("pull", "2"),
        ("staging", "2"),
        ("pull_parts", "2"),
        ("auto", "2"),
    ] {
        let (code, out, err) = run_quick(&[
            "all_gather",
            "-b",
            "3000",
            "-e",
            "96K",
            "-f",
            "32",
            "-p",
            "3",
            "--algo",
            algo,
        ]);
        assert_eq!(code, 0, "{algo}: {out}\n{err}");
        let rows = data_rows(&out);
        assert_eq!(rows.len(), 2, "{algo}: {out}");
        for r in &rows {
            assert_eq!((&*r[OOP_WRONG], &*r[IP_WRONG]), ("0", "0"), "{algo}: {out}");
            assert_eq!(r[ROUNDS], rounds, "{algo}: {out}");
        }
    }
}

/// The directory of acl-twin's `libascendcl.so`: `deps/`, next to this test binary (aiv-comm's
/// tests depend on acl-twin, so Cargo builds it there).
fn acl_twin_dir() -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().expect("deps/");
    assert!(dir.join("libascendcl.so").exists(), "{}", dir.display());
    dir.to_string_lossy().into_owned()
}

#[test]
fn every_subcommand_runs_through_acl_on_acl_twin_with_right_results() {
    let lib = acl_twin_dir();
    let header = format!(
        "through ACL (Ascend910B-acl-twin, CANN {}, ",
        common::acl_twin_version()
    );
    let env = [("LD_LIBRARY_PATH", lib.as_str())];
    for &(coll, in_place) in SUBCOMMANDS {
        let a = quick(&[
            coll,
            "-b",
            "1K",
            "-e",
            "8K",
            "-f",
            "8",
            "-p",
            "3",
            "--backend",
            "acl",
        ]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (code, out, err) = aiv_perf_env(&a, &env);
        assert_eq!(code, 0, "{coll}: {out}\n{err}");
        assert!(
            out.contains(&header),
            "{coll}: the header names the backend, SoC and runtime version: {out}"
        );
        let rows = data_rows(&out);
        assert_eq!(rows.len(), 2, "{coll}: {out}");
        for r in &rows {
            assert_eq!(r.len(), COLUMNS, "{coll}: {out}");
            assert_eq!(r[OOP_WRONG], "0", "{coll}: {out}");
            assert_eq!(
                r[IP_WRONG],
                if in_place { "0" } else { "N/A" },
                "{coll}: {out}"
            );
            // The twin's own figures have nothing to say through ACL.
            assert!(r[CORES..].iter().all(|c| c == "N/A"), "{coll}: {out}");
        }
    }
    // auto does not pick acl-twin (it is the twin behind ACL: asked for by name only); the
    // twin's checker switches need the twin.
    let (code, out, _) = aiv_perf_env(&ONE_SMALL_ALL_REDUCE, &env);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("on the CPU twin"), "{out}");
    let mut a = ONE_SMALL_ALL_REDUCE.to_vec();
    a.extend(["--backend", "acl", "--twin-checks"]);
    let (code, _, err) = aiv_perf_env(&a, &env);
    assert_eq!(code, 1);
    assert!(
        err.contains("--twin-checks") && err.contains("acl"),
        "{err}"
    );
}

#[test]
fn the_acl_backend_without_a_runtime_is_a_clear_error_and_auto_is_the_twin() {
    let mut a = ONE_SMALL_ALL_REDUCE.to_vec();
    a.extend(["--backend", "acl"]);
    let (code, _, err) = aiv_perf_env(&a, &[("LD_LIBRARY_PATH", "/nonexistent")]);
    assert_eq!(code, 1);
    assert!(
        err.contains("libascendcl.so") && err.contains("set_env.sh"),
        "{err}"
    );
    let (code, out, _) = aiv_perf_env(
        &ONE_SMALL_ALL_REDUCE,
        &[("LD_LIBRARY_PATH", "/nonexistent")],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("on the CPU twin"), "{out}");
    let (code, _, err) = aiv_perf_env(&["all_reduce", "--backend", "npu"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown backend `npu`"), "{err}");
}

/// Runs aiv-perf as `n` rank processes of one job (`AIV_RANK`, `AIV_WORLD_SIZE`,
/// `AIV_UNIQUE_ID`, as a launcher would set them); returns each rank's (exit code, stdout).
fn aiv_perf_job(n: u32, args: &[&str], env: &[(&str, &str)]) -> Vec<(i32, String)> {
    let id = aiv_comm::bootstrap::UniqueId::new().unwrap();
    // Rank 0's process listens itself: pass the id's bytes only.
    let hex = id.to_hex();
    drop(id);
    let children: Vec<_> = (0..n)
        .map(|r| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_aiv-perf"));
            cmd.args(args)
                .env_remove("HCCL_EXEC_TIMEOUT")
                .env("AIV_RANK", r.to_string())
                .env("AIV_WORLD_SIZE", n.to_string())
                .env("AIV_UNIQUE_ID", &hex)
                .env("AIV_TWIN_WORKERS", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit());
            for (k, v) in env {
                cmd.env(k, v);
            }
            cmd.spawn().expect("run aiv-perf")
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        })
        .collect()
}

/// The columns of a row that do not depend on time: size count type redop root #wrong (out of
/// place and in place).
fn timeless(rows: &[Vec<String>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            [SIZE, COUNT, TYPE, REDOP, ROOT, OOP_WRONG, IP_WRONG]
                .iter()
                .map(|&c| r[c].clone())
                .collect()
        })
        .collect()
}

#[test]
fn a_job_of_rank_processes_runs_the_sweep_and_rank_0_prints_it() {
    for coll in ["all_reduce", "all_gather", "broadcast"] {
        let args = quick(&[coll, "-b", "1K", "-e", "256K", "-f", "16"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let job = aiv_perf_job(3, &args, &[]);
        for (r, (code, out)) in job.iter().enumerate() {
            assert_eq!(*code, 0, "{coll} rank {r}: {out}");
            if r > 0 {
                assert!(out.is_empty(), "{coll} rank {r} printed: {out}");
            }
        }
        let out = &job[0].1;
        assert!(
            out.contains("on the CPU twin, one process per rank (AIV_*)"),
            "{coll}: {out}"
        );
        assert!(out.contains("Out of bounds values : 0 OK"), "{coll}: {out}");
        // The rows of the same sweep with every rank in one process.
        let mut one = args.clone();
        one.extend(["-p", "3"]);
        let (code, single, err) = aiv_perf(&one);
        assert_eq!(code, 0, "{err}");
        assert!(single.contains("on the CPU twin, one process:"), "{single}");
        assert_eq!(
            timeless(&data_rows(out)),
            timeless(&data_rows(&single)),
            "{coll}"
        );
        assert_eq!(data_rows(out).len(), 3, "{coll}: {out}");
    }
}

#[test]
fn a_job_of_rank_processes_runs_through_acl_as_on_the_twin() {
    // This build's acl-twin, from deps/: the loader path Cargo gives tests also has the copy in
    // target/<profile>/, which only `cargo build` refreshes.
    let lib = acl_twin_dir();
    let args = quick(&["all_reduce", "-b", "1K", "-e", "256K", "-f", "16"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut acl = args.clone();
    acl.extend(["--backend", "acl"]);
    let job = aiv_perf_job(3, &acl, &[("LD_LIBRARY_PATH", lib.as_str())]);
    for (r, (code, out)) in job.iter().enumerate() {
        assert_eq!(*code, 0, "rank {r}: {out}");
    }
    let out = &job[0].1;
    assert!(
        out.contains(&format!(
            "through ACL (Ascend910B-acl-twin, CANN {}, ",
            common::acl_twin_version()
        )) && out.contains("one process per rank (AIV_*)"),
        "{out}"
    );
    let twin = aiv_perf_job(3, &args, &[]);
    assert_eq!(timeless(&data_rows(out)), timeless(&data_rows(&twin[0].1)));
    assert_eq!(data_rows(out).len(), 3, "{out}");
}

#[test]
fn a_wrong_element_on_a_rank_process_is_counted_by_rank_0() {
    let args = quick(&["all_reduce", "-b", "4K", "-e", "4K"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let job = aiv_perf_job(2, &args, &[("AIV_PERF_INJECT_WRONG", "1")]);
    let rows = data_rows(&job[0].1);
    assert_eq!(rows[0][OOP_WRONG], "1", "{}", job[0].1);
    assert!(job.iter().all(|(code, _)| *code == 1), "{job:?}");
}

#[test]
fn under_mpirun_each_process_is_a_rank() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("skipped: no mpirun on this machine (Debian: apt-get install openmpi-bin; .ci/run installs it)");
        return;
    }
    // As hccl_test is run: mpirun -n 4 ... -p 4 (-p: NPUs per node under a launcher).
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .arg(env!("CARGO_BIN_EXE_aiv-perf"))
        .args(["all_reduce", "-b", "8K", "-e", "1M", "-f", "4", "-p", "4"])
        .args(QUICK)
        .env("AIV_TWIN_WORKERS", "1")
        .env_remove("HCCL_EXEC_TIMEOUT")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mpirun: {}: {text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "on the CPU twin, one process per rank (Open MPI), -p 4 NPUs per node: 4 ranks"
        ),
        "{text}"
    );
    assert!(text.contains("Out of bounds values : 0 OK"), "{text}");
    // Rank 0 alone prints: one table.
    assert_eq!(
        text.matches("# Collective test concluded").count(),
        1,
        "{text}"
    );
    assert_eq!(data_rows(&text).len(), 4, "{text}");
}
