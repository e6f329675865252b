//! Smoke tests of the aiv-perf binary (the README's main job).

use std::process::Command;

fn aiv_perf(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_aiv-perf"))
        .args(args)
        .output()
        .expect("run aiv-perf");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn data_rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
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
        assert_eq!(row[0].parse::<u64>().unwrap(), size);
        assert_eq!(row[1].parse::<u64>().unwrap(), size / 4);
        assert_eq!(row[2], "float");
        assert_eq!(row[3], "sum");
        assert!(row[4].parse::<f64>().unwrap() > 0.0);
        assert_eq!(row[7], "0", "wrong elements: {out}");
    }
    assert!(out.contains("# Avg bus bandwidth"));
}

#[test]
fn all_gather_int8_rounds_sizes_to_whole_elements_per_rank() {
    let (code, out, err) = aiv_perf(&[
        "all_gather",
        "-b",
        "1000",
        "-e",
        "1000",
        "-d",
        "int8",
        "-p",
        "3",
        "-n",
        "2",
        "-w",
        "0",
        "-c",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows = data_rows(&out);
    assert_eq!(rows[0][0], "999"); // 333 per rank x 3
    assert_eq!(rows[0][2], "int8");
    assert_eq!(rows[0][7], "0");
}

#[test]
fn hd_algorithm_through_the_binary() {
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
        "-c",
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
    assert!(rows.iter().all(|r| r[7] == "0"), "{out}");
}

#[test]
fn json_output() {
    let (code, out, _) = aiv_perf(&[
        "all_reduce",
        "-b",
        "4K",
        "-e",
        "8K",
        "-d",
        "bf16",
        "-o",
        "max",
        "-p",
        "2",
        "-n",
        "1",
        "-w",
        "0",
        "--json",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("{\"collective\":\"all_reduce\",\"ranks\":2,\"rows\":[{\"size\":4096"),
        "{out}"
    );
    assert!(
        out.contains("\"redop\":\"max\"") && out.contains("\"wrong\":0}"),
        "{out}"
    );
}

#[test]
fn bad_arguments_exit_2_with_a_reason() {
    for args in [
        vec!["all_to_all"],
        vec!["all_reduce", "-d", "fp64"],
        vec!["all_reduce", "-o", "prod"],
        vec!["all_gather", "-b", "10X"],
        vec!["all_gather", "-p", "0"],
        vec!["all_gather", "-b", "2M", "-e", "1M"],
        vec!["all_gather", "-f"],
    ] {
        let (code, out, err) = aiv_perf(&args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert!(err.starts_with("aiv-perf: "), "{args:?}: {err}");
    }
}
