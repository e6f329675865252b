//! BENCHMARKS.md's aiv-perf tables are rendered from the results kept in `benches/data/`
//! (`benches/data/run.sh` writes them): every block between
//! `<!-- generated from benches/data/...: do not edit; ... -->` and `<!-- end generated -->` must
//! be what the data renders, or this test names the first line that differs.
//! `AIV_BLESS=1 cargo test --test integration benchmarks_md` rewrites the blocks instead.
//!
//! The floors beside the census figures are docs/benchmarks.md's ("The census and the
//! floors"), computed here; the uneven collectives' counts are aiv-perf's
//! (`host/bin/aiv_perf/collectives.rs`, `RANK_WEIGHTED` and `PAIR_WEIGHTED`).

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

const BEGIN: &str = "<!-- generated from ";
const BEGIN_TAIL: &str =
    ": do not edit; AIV_BLESS=1 cargo test --test integration benchmarks_md rewrites it -->";
const END: &str = "<!-- end generated -->";

/// Bytes per element: every run here is f32.
const ES: usize = 4;

/// The ranks and per-rank sizes of the census tables.
const RANKS: [usize; 3] = [2, 4, 8];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v:.80}"))
}

fn int(v: &Value, key: &str) -> usize {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no integer {key} in {v:.80}")) as usize
}

// ---- aiv-perf's uneven counts (host/bin/aiv_perf/collectives.rs), in elements ----

/// floor(total x before / sum): where the cut before a part falls.
fn cut(total: usize, before: usize, sum: usize) -> usize {
    (total as u128 * before as u128 / sum as u128) as usize
}

/// all_gather_v / reduce_scatter_v (`RANK_WEIGHTED`): rank q's share of T = count x n.
fn weighted_count(q: usize, count: usize, n: usize) -> usize {
    let displ = |q: usize| cut(count * n, q * (q + 1) / 2, n * (n + 1) / 2);
    displ(q + 1) - displ(q)
}

/// alltoallv (`PAIR_WEIGHTED`): elements rank p sends rank q.
fn a2av_count(p: usize, q: usize, count: usize, n: usize) -> usize {
    let displ = |q: usize| {
        let before: usize = (0..q).map(|j| (p + j) % n + 1).sum();
        cut(count * n, before, n * (n + 1) / 2)
    };
    displ(q + 1) - displ(q)
}

// ---- the floors (docs/benchmarks.md, "Floors") ----

/// Per-rank floors in bytes: (read, written), staged and direct.
#[derive(Debug, PartialEq)]
struct Floors {
    staged: (f64, f64),
    direct: (f64, f64),
}

/// The floors of rank `r` for a row of `count` elements (aiv-perf's count column) on `n` ranks,
/// broadcast's root being rank 0.
fn floors(collective: &str, n: usize, count: usize, r: usize) -> Floors {
    let nf = n as f64;
    let b = |elems: usize| (elems * ES) as f64;
    let (staged, direct) = match collective {
        "all_gather" => {
            let s = b(count);
            ((nf * s, (nf + 1.0) * s), (nf * s, nf * s))
        }
        "all_reduce" => {
            let s = b(count);
            (((3.0 * nf - 2.0) * s / nf, 2.0 * s), (s, s))
        }
        "reduce_scatter" => {
            let s = b(count * n);
            (((2.0 * nf - 1.0) * s / nf, s), (s, s / nf))
        }
        "broadcast" => {
            let s = b(count);
            let root = if r == 0 { 2.0 } else { 1.0 };
            ((s, root * s), (s, s))
        }
        "alltoall" => {
            let s = b(count * n);
            let x = (2.0 * nf - 1.0) * s / nf;
            ((x, x), (s, s))
        }
        "alltoallv" => {
            let sent: usize = (0..n).map(|q| a2av_count(r, q, count, n)).sum();
            let recv: usize = (0..n).map(|p| a2av_count(p, r, count, n)).sum();
            let both = b(sent + recv - a2av_count(r, r, count, n));
            ((both, both), (b(sent), b(recv)))
        }
        "all_gather_v" => {
            let t = b(count * n);
            ((t, t + b(weighted_count(r, count, n))), (t, t))
        }
        "reduce_scatter_v" => {
            let t = b(count * n);
            let c = b(weighted_count(r, count, n));
            ((t + (nf - 1.0) * c, t), (nf * c, c))
        }
        "sendrecv" => {
            let s = b(count);
            ((2.0 * s, 2.0 * s), (s, s))
        }
        other => panic!("no floors for {other}"),
    };
    Floors { staged, direct }
}

/// The per-rank size a census row is labelled with: all_gather(_v)'s input per rank (the mean
/// for all_gather_v), every other collective's size.
fn per_rank_size(collective: &str, row: &Value, n: usize) -> usize {
    match collective {
        "all_gather" | "all_gather_v" => int(row, "size") / n,
        _ => int(row, "size"),
    }
}

// ---- formatting ----

/// KiB as the tables give them: one decimal below 10, whole above.
fn kib(bytes: f64) -> String {
    let k = bytes / 1024.0;
    if k < 10.0 {
        format!("{k:.1}")
    } else {
        format!("{k:.0}")
    }
}

fn size_label(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn us(t: f64) -> String {
    if t < 100.0 {
        format!("{t:.1}")
    } else {
        format!("{t:.0}")
    }
}

fn row_line(cells: &[String]) -> String {
    format!("| {} |", cells.join(" | "))
}

fn header(cells: &[&str]) -> String {
    let rule: Vec<&str> = cells.iter().map(|_| "---").collect();
    format!("| {} |\n| {} |\n", cells.join(" | "), rule.join(" | "))
}

// ---- the blocks ----

/// The rank a census row's floors are taken for: broadcast's root, or the rank whose census
/// moved the most data (read + written; the lowest such rank), which the uneven collectives'
/// maxima come from.
fn busiest_rank(out: &Value) -> usize {
    let census = out["census"].as_array().expect("census per rank");
    let mut best = (0, 0);
    for (r, c) in census.iter().enumerate() {
        let moved = int(c, "gm_data_read") + int(c, "gm_data_written");
        if moved > best.1 {
            best = (r, moved);
        }
    }
    best.0
}

/// The census files of a name (`all_gather`, `all_reduce.one_shot`, ...), one per rank count.
fn census_runs(data: &Path, name: &str) -> Vec<(usize, Value)> {
    RANKS
        .iter()
        .map(|&n| (n, load(&data.join(format!("census/{name}.np{n}.json")))))
        .collect()
}

/// A census table: the measured figures with (staged floor, direct floor) beside them.
fn census_table(data: &Path, name: &str) -> String {
    let collective = name.split('.').next().unwrap();
    let labelled = matches!(
        collective,
        "broadcast" | "alltoallv" | "all_gather_v" | "reduce_scatter_v"
    );
    let mut out = header(&[
        "ranks",
        "per-rank size",
        "read / rank: measured (staged floor, direct floor) KiB",
        "written / rank: measured (staged, direct) KiB",
        "flag waits / rank (blocking)",
        "rounds",
        "launches",
        "cores",
        "flag bytes / rank r+w (KiB)",
    ]);
    for (n, run) in census_runs(data, name) {
        for row in run["rows"].as_array().unwrap() {
            let o = &row["out_of_place"];
            let r = busiest_rank(o);
            let f = floors(collective, n, int(row, "count"), r);
            let launches = o["census"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| int(c, "launches"))
                .max()
                .unwrap();
            let mut size = size_label(per_rank_size(collective, row, n));
            if labelled {
                size = format!("{size} (rank {r})");
            }
            let cells = [
                n.to_string(),
                size,
                format!(
                    "{} ({}, {})",
                    kib(num(o, "gm_data_read_per_rank")),
                    kib(f.staged.0),
                    kib(f.direct.0)
                ),
                format!(
                    "{} ({}, {})",
                    kib(num(o, "gm_data_written_per_rank")),
                    kib(f.staged.1),
                    kib(f.direct.1)
                ),
                format!(
                    "{} ({})",
                    int(o, "flag_waits_per_rank"),
                    int(o, "blocking_waits_per_rank")
                ),
                int(o, "sync_rounds").to_string(),
                launches.to_string(),
                int(o, "cores_used").to_string(),
                format!(
                    "{} + {}",
                    kib(num(o, "gm_flag_read_per_rank")),
                    kib(num(o, "gm_flag_written_per_rank"))
                ),
            ];
            out += &row_line(&cells);
            out.push('\n');
        }
    }
    out
}

/// Window memory (`-R 1`) beside the same kernels staging through the HCCL buffer (`-R 0`).
fn windows_table(data: &Path) -> String {
    let mut out = header(&[
        "collective",
        "ranks",
        "per-rank size",
        "read / rank: windows (staged; direct floor) KiB",
        "written / rank: windows (staged; direct floor) KiB",
        "flag waits / rank: windows (staged)",
        "rounds: windows (staged)",
    ]);
    for (name, label) in [
        ("all_gather", "all_gather"),
        ("all_reduce.one_shot", "all_reduce, one-shot"),
        ("all_reduce.two_shot", "all_reduce, two-shot"),
    ] {
        let collective = name.split('.').next().unwrap();
        let staged = census_runs(data, name);
        let windows = census_runs(data, &format!("{name}.R1"));
        for ((n, s), (_, w)) in staged.iter().zip(&windows) {
            let rows = s["rows"].as_array().unwrap().iter();
            for (srow, wrow) in rows.zip(w["rows"].as_array().unwrap()) {
                assert_eq!(srow["size"], wrow["size"], "{name} on {n} ranks");
                let (so, wo) = (&srow["out_of_place"], &wrow["out_of_place"]);
                let f = floors(collective, *n, int(wrow, "count"), busiest_rank(wo));
                let pair = |key: &str, floor: f64| {
                    format!(
                        "{} ({}; {})",
                        kib(num(wo, key)),
                        kib(num(so, key)),
                        kib(floor)
                    )
                };
                let cells = [
                    label.to_string(),
                    n.to_string(),
                    size_label(per_rank_size(collective, wrow, *n)),
                    pair("gm_data_read_per_rank", f.direct.0),
                    pair("gm_data_written_per_rank", f.direct.1),
                    format!(
                        "{} ({})",
                        int(wo, "flag_waits_per_rank"),
                        int(so, "flag_waits_per_rank")
                    ),
                    format!("{} ({})", int(wo, "sync_rounds"), int(so, "sync_rounds")),
                ];
                out += &row_line(&cells);
                out.push('\n');
            }
        }
    }
    out
}

/// The collective set on 4 ranks: busbw, time and cores per size, from `set4/`.
fn set4_table(data: &Path) -> String {
    let mut out = header(&[
        "collective",
        "busbw (GB/s) at 64 KiB / 1 MiB / 16 MiB",
        "time (us) at 64 KiB / 1 MiB / 16 MiB",
        "cores at 64 KiB / 1 MiB / 16 MiB",
        "GMB/core at 16 MiB (KiB)",
    ]);
    for run in provenance_runs(data, "set4") {
        let v = load(&data.join("set4").join(&run.0));
        let rows: Vec<&Value> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["out_of_place"])
            .collect();
        let join = |f: &dyn Fn(&Value) -> String| {
            rows.iter().map(|o| f(o)).collect::<Vec<_>>().join(" / ")
        };
        let cells = [
            v["collective"].as_str().unwrap().to_string(),
            join(&|o| format!("{:.2}", num(o, "busbw"))),
            join(&|o| us(num(o, "time_us"))),
            join(&|o| int(o, "cores_used").to_string()),
            format!(
                "{:.0}",
                num(rows.last().unwrap(), "max_core_bytes") / 1024.0
            ),
        ];
        out += &row_line(&cells);
        out.push('\n');
    }
    out
}

/// (file, command) of every run of a set, in the order run.sh ran them.
fn provenance_runs(data: &Path, set: &str) -> Vec<(String, String)> {
    let p = load(&data.join(set).join("provenance.json"));
    p["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["command"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Where, when and at which commit a set was run, and what its results say of themselves.
fn provenance(data: &Path, set: &str) -> String {
    let p = load(&data.join(set).join("provenance.json"));
    let runs = provenance_runs(data, set);
    let (mut rows, mut wrong) = (0, 0);
    for (file, _) in &runs {
        let v = load(&data.join(set).join(file));
        for row in v["rows"].as_array().unwrap() {
            for place in ["out_of_place", "in_place"] {
                if let Some(w) = row[place]["wrong"].as_u64() {
                    rows += 1;
                    wrong += w;
                }
            }
        }
    }
    let m = &p["machine"];
    let differs = if p["sources_differ_from_commit"].as_bool().unwrap() {
        " (with uncommitted changes to the sources)"
    } else {
        ""
    };
    format!(
        "Run by `bash benches/data/run.sh` at commit {}{differs} on {} ({} s for this set), \
         {} vCPUs ({}), load average {} before: {} aiv-perf runs, {} checked rows and \
         placements, {} wrong elements. {}.\n",
        p["commit"].as_str().unwrap(),
        p["date"].as_str().unwrap(),
        num(&p, "seconds"),
        num(m, "nproc"),
        m["cpu"].as_str().unwrap(),
        m["loadavg_before"].as_str().unwrap(),
        runs.len(),
        rows,
        wrong,
        p["note"].as_str().unwrap(),
    )
}

/// What a block's key (the text after "generated from ") renders to.
fn render_block(data: &Path, key: &str) -> String {
    let rel = key
        .strip_prefix("benches/data/")
        .unwrap_or_else(|| panic!("generated block {key:?}: not under benches/data/"));
    if let Some(set) = rel.strip_suffix("/provenance.json") {
        return provenance(data, set);
    }
    match rel {
        "set4/*.json" => set4_table(data),
        "census/*.R1.np*.json" => windows_table(data),
        _ => match rel
            .strip_prefix("census/")
            .and_then(|r| r.strip_suffix(".np*.json"))
        {
            Some(name) => census_table(data, name),
            None => panic!("generated block {key:?}: no renderer for it"),
        },
    }
}

/// `text` with every generated block rendered from `data`.
fn render(text: &str, data: &Path) -> String {
    let mut out = String::new();
    let mut lines = text.split_inclusive('\n');
    let mut blocks = 0;
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(key) = line
            .trim_end()
            .strip_prefix(BEGIN)
            .and_then(|l| l.strip_suffix(BEGIN_TAIL))
        else {
            assert!(
                !line.contains(BEGIN),
                "BENCHMARKS.md: a malformed marker: {line}"
            );
            continue;
        };
        out.push_str(&render_block(data, key));
        blocks += 1;
        loop {
            let inner = lines
                .next()
                .unwrap_or_else(|| panic!("BENCHMARKS.md: {key} has no {END}"));
            if inner.trim_end() == END {
                out.push_str(inner);
                break;
            }
        }
    }
    assert!(blocks > 0, "BENCHMARKS.md has no generated blocks");
    out
}

#[test]
fn benchmarks_md_is_what_the_data_renders() {
    let path = root().join("BENCHMARKS.md");
    let text = fs::read_to_string(&path).expect("BENCHMARKS.md");
    let rendered = render(&text, &root().join("benches/data"));
    if std::env::var_os("AIV_BLESS").is_some_and(|v| v == "1") {
        if rendered != text {
            fs::write(&path, &rendered).expect("rewrite BENCHMARKS.md");
        }
        return;
    }
    let mut have = text.lines();
    let mut want = rendered.lines();
    for i in 1.. {
        match (have.next(), want.next()) {
            (None, None) => break,
            (h, w) if h == w => continue,
            (h, w) => panic!(
                "BENCHMARKS.md line {i} is not what benches/data renders:\n  \
                 BENCHMARKS.md: {}\n  rendered:      {}\n\
                 AIV_BLESS=1 cargo test --test integration benchmarks_md rewrites it \
                 (after bash benches/data/run.sh, or an edit of a generated block)",
                h.unwrap_or("(end of file)"),
                w.unwrap_or("(end of file)"),
            ),
        }
    }
}

#[test]
fn floors_of_hand_computed_cells() {
    const K: f64 = 1024.0;
    // all_reduce, 4 ranks, 64 KiB: staged (3n - 2) S / n = 10 x 64 / 4 = 160 KiB read, 2 S
    // written; direct S, S.
    assert_eq!(
        floors("all_reduce", 4, 16384, 0),
        Floors {
            staged: (160.0 * K, 128.0 * K),
            direct: (64.0 * K, 64.0 * K)
        }
    );
    // reduce_scatter, 8 ranks, 64 KiB of input: staged 15/8 S = 120 KiB, S; direct S, S/8.
    assert_eq!(
        floors("reduce_scatter", 8, 2048, 3),
        Floors {
            staged: (120.0 * K, 64.0 * K),
            direct: (64.0 * K, 8.0 * K)
        }
    );
    // all_gather, 2 ranks, 1 MiB per rank: staged 2 MiB, 3 MiB; direct 2 MiB, 2 MiB.
    assert_eq!(
        floors("all_gather", 2, 262144, 1).staged,
        (2048.0 * K, 3072.0 * K)
    );
    // broadcast, root and not: 2 S written at the root only.
    assert_eq!(
        floors("broadcast", 4, 16384, 0).staged,
        (64.0 * K, 128.0 * K)
    );
    assert_eq!(
        floors("broadcast", 4, 16384, 2).staged,
        (64.0 * K, 64.0 * K)
    );
    // alltoallv, 2 ranks, 64 KiB input (8192 elements per peer on average, T = 16384): rank 0
    // sends itself floor(T/3) = 5461 and rank 1 the other 10923; rank 1 sends rank 0
    // floor(2T/3) = 10922 and itself 5462. Rank 1 sends 16384, receives 10923 + 5462 = 16385,
    // staged: 16384 + 16385 - 5462 = 27307 elements each way.
    assert_eq!(
        floors("alltoallv", 2, 8192, 1),
        Floors {
            staged: (27307.0 * 4.0, 27307.0 * 4.0),
            direct: (16384.0 * 4.0, 16385.0 * 4.0)
        }
    );
    // reduce_scatter_v, 2 ranks, 64 KiB input: rank 1's block is 16384 - 5461 = 10923
    // elements; staged T + c = 27307 read, T written; direct 2c read, c written.
    assert_eq!(
        floors("reduce_scatter_v", 2, 8192, 1),
        Floors {
            staged: (27307.0 * 4.0, 16384.0 * 4.0),
            direct: (21846.0 * 4.0, 10923.0 * 4.0)
        }
    );
    // all_gather_v, 2 ranks, 64 KiB per rank on average (T = 32768): rank 1 has 21846.
    assert_eq!(
        floors("all_gather_v", 2, 16384, 1).staged,
        (32768.0 * 4.0, (32768.0 + 21846.0) * 4.0)
    );
    assert_eq!(kib(8.0 * K), "8.0");
    assert_eq!(kib(27307.0 * 4.0), "107");
}

#[test]
fn uneven_counts_add_up() {
    for n in 1..=8 {
        for count in [1, 7, 2048, 16384] {
            let total: usize = (0..n).map(|q| weighted_count(q, count, n)).sum();
            assert_eq!(total, count * n);
            for p in 0..n {
                let sent: usize = (0..n).map(|q| a2av_count(p, q, count, n)).sum();
                assert_eq!(sent, count * n);
            }
        }
    }
}
