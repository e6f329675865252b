//! The public AscendC samples for Atlas A2 (asc-devkit's `examples/01_simd_cpp_api`) run
//! unchanged on the twin, as their READMEs run them on an NPU: the sample's `gen_data.py` makes
//! the inputs and the golden, the sample's own `.asc` source (host `main` and kernels) is built
//! with `ascendc_build::Program` and run on acl-twin with the checkers on, and the sample's
//! `verify_result.py` judges the output with the sample's tolerance. A README that shows the
//! kernel's printf lines (`[AIV Block b/n] ...`) must see each of them, with the twin's
//! `[rank 0] ` before it (the twin prints lines as the blocks run, so their order is not checked);
//! a README line without the block prefix that one of the kernel's `AscendC::printf` formats
//! makes must be printed by some block.
//!
//! Nothing of asc-devkit is in this repository. With a checkout of it (a work tree):
//!
//!     AIV_ASC_DEVKIT=/path/to/asc-devkit cargo test --release -p twin-tests --test samples -- --ignored
//!
//! (python3 with numpy and ml_dtypes is needed by the samples' scripts; `AIV_SAMPLES_ONLY=gather` runs the
//! cases whose path contains `gather`). [`CASES`] lists every sample scenario
//! this harness holds the twin to: most must pass; the scenarios written for Ascend 950 only
//! (their kernels compile to nothing on A2) must be refused by the checkers, since their output
//! would be whatever the Unified Buffer held.

// A test crate root looks for its modules beside it, not in a directory of its name.
#[path = "samples/cmake.rs"]
mod cmake;

use std::path::{Path, PathBuf};
use std::process::Command;

use cmake::{definitions, library, sources};

/// What the twin must make of a sample scenario.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The sample's own check passes, and acl-twin reports nothing.
    Pass,
    /// The kernel is stopped by a checker whose message contains this text.
    Refused(&'static str),
}

use Expect::*;

/// Stale UB copied out: what a 950-only scenario does on A2.
const STALE_UB: &str = "none of which this kernel has written";

/// (sample directory under `examples/01_simd_cpp_api`, scenario (`SCENARIO_NUM`), expectation).
const CASES: &[(&str, Option<u32>, Expect)] = &[
    ("00_introduction/00_quickstart/hello_world", None, Pass),
    ("00_introduction/01_add/add", None, Pass),
    ("00_introduction/01_add/add_tpipe_tque", None, Pass),
    ("01_utilities/04_profiling/msprof", None, Pass),
    ("01_utilities/05_sanitizer/ms_sanitizer", None, Pass),
    ("01_utilities/06_cpu_debug", None, Pass),
    ("02_features/04_compile/00_basic_compile", None, Pass),
    ("02_features/04_compile/01_separate_compile", None, Pass),
    (
        "02_features/04_compile/02_dynamic_library_compile",
        None,
        Pass,
    ),
    (
        "02_features/04_compile/03_static_library_compile",
        None,
        Pass,
    ),
    (
        "02_features/02_tiling_selector/vector_tiling_strategy",
        Some(0),
        Pass,
    ),
    (
        "02_features/02_tiling_selector/vector_tiling_strategy",
        Some(1),
        Pass,
    ),
    (
        "02_features/02_tiling_selector/vector_tiling_strategy",
        Some(2),
        Pass,
    ),
    (
        "02_features/02_tiling_selector/vector_tiling_strategy",
        Some(3),
        Pass,
    ),
    ("03_basic_api/00_data_movement/copy_ub2ub", Some(1), Pass),
    ("03_basic_api/00_data_movement/copy_ub2ub", Some(2), Pass),
    ("03_basic_api/00_data_movement/copy_ub2ub", Some(3), Pass),
    (
        "03_basic_api/00_data_movement/data_copy_gm2ub_slice",
        None,
        Pass,
    ),
    (
        "03_basic_api/00_data_movement/data_copy_pad_gm2ub_ub2gm",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/00_data_movement/data_copy_pad_gm2ub_ub2gm",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/00_data_movement/data_copy_pad_gm2ub_ub2gm",
        Some(3),
        Refused(STALE_UB),
    ),
    ("03_basic_api/01_memory_vector_compute/brcb", None, Pass),
    ("03_basic_api/01_memory_vector_compute/cast", Some(0), Pass),
    ("03_basic_api/01_memory_vector_compute/cast", Some(1), Pass),
    (
        "03_basic_api/01_memory_vector_compute/compare",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/compare",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/compare",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/compare",
        Some(4),
        Refused(STALE_UB),
    ),
    (
        "03_basic_api/01_memory_vector_compute/create_vec_index",
        None,
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/duplicate",
        None,
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_arithmetic",
        None,
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_compound_compute",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_compound_compute",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_logic",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_logic",
        Some(2),
        Refused(STALE_UB),
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_logic",
        Some(3),
        Refused(STALE_UB),
    ),
    (
        "03_basic_api/01_memory_vector_compute/element_wise_logic",
        Some(4),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/gather",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/gather",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/gather",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/gather",
        Some(4),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/mrg_sort",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/mrg_sort",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/mrg_sort",
        Some(3),
        Pass,
    ),
    ("03_basic_api/01_memory_vector_compute/reduce", None, Pass),
    (
        "03_basic_api/01_memory_vector_compute/reduce_computation",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_computation",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_computation",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_computation",
        Some(4),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_computation",
        Some(5),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_computation",
        Some(6),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_data_block",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_data_block",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_data_block",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_pair_elem",
        None,
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_repeat",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_repeat",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_repeat",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/reduce_repeat",
        Some(4),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/select",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/select",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/select",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/select",
        Some(4),
        Refused(STALE_UB),
    ),
    (
        "03_basic_api/01_memory_vector_compute/transpose",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/transpose",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/01_memory_vector_compute/transpose",
        Some(3),
        Pass,
    ),
    (
        "03_basic_api/04_memory_management/list_tensor_desc_input",
        None,
        Pass,
    ),
    (
        "03_basic_api/04_memory_management/tbufpool_management",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/04_memory_management/tbufpool_management",
        Some(2),
        Pass,
    ),
    (
        "03_basic_api/04_memory_management/tbufpool_management",
        Some(3),
        Pass,
    ),
    ("03_basic_api/04_memory_management/tmp_buffer", None, Pass),
    ("03_basic_api/05_sync_control/data_sync_barrier", None, Pass),
    ("03_basic_api/05_sync_control/group_barrier", None, Pass),
    ("03_basic_api/05_sync_control/ib_set_wait", None, Pass),
    (
        "03_basic_api/05_sync_control/sequential_block_sync",
        None,
        Pass,
    ),
    ("03_basic_api/05_sync_control/sync_all", None, Pass),
    ("03_basic_api/05_sync_control/task_sync", None, Pass),
    (
        "03_basic_api/06_atomic/data_movement_with_atomic_operations",
        Some(1),
        Pass,
    ),
    (
        "03_basic_api/06_atomic/data_movement_with_atomic_operations",
        Some(2),
        Pass,
    ),
    ("03_basic_api/07_tpipe_tque/get_tpipe_ptr", None, Pass),
    ("03_basic_api/07_tpipe_tque/tpipe_reuse", None, Pass),
    ("03_basic_api/09_utils/gm_by_dcache", None, Pass),
    ("03_basic_api/09_utils/gm_by_pass_dcache", None, Pass),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(0),
        Pass,
    ),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(1),
        Pass,
    ),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(2),
        Pass,
    ),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(3),
        Pass,
    ),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(4),
        Pass,
    ),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(5),
        Pass,
    ),
    (
        "05_best_practices/00_vector_compute/add_high_performance",
        Some(6),
        Pass,
    ),
    (
        "05_best_practices/04_memory_access/bank_conflict_nd2nz",
        Some(1),
        Pass,
    ),
    (
        "05_best_practices/04_memory_access/bank_conflict_nd2nz",
        Some(2),
        Pass,
    ),
    (
        "05_best_practices/04_memory_access/bank_conflict_ub",
        Some(1),
        Pass,
    ),
    (
        "05_best_practices/04_memory_access/bank_conflict_ub",
        Some(8),
        Pass,
    ),
    ("06_compatibility_guide/scatter", None, Pass),
];

/// The bugs the `ms_sanitizer` sample describes in its comments (each a one-line change of its
/// kernel), applied one at a time: (what the sample has, what the bug makes of it, text the
/// twin's report must contain).
const SEEDED: &[(&str, &str, &str)] = &[
    (
        "    zGm.SetGlobalBuffer(z + block_idx * blockLength, blockLength);\n",
        "",
        "outside every live GM allocation",
    ),
    (
        "    AscendC::DataCopy(xLocal, xGm, blockLength);\n",
        "    AscendC::DataCopy(xLocal, xGm, blockLength * 2);\n",
        "exceeds its buffer",
    ),
    (
        "    AscendC::DataCopy(xLocal, xGm, blockLength);\n",
        "    AscendC::DataCopy(xLocal[5], xGm, blockLength);\n",
        "aligned",
    ),
    (
        "    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);\n    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);\n",
        "",
        "pipe hazard",
    ),
];

/// The samples' root in the checkout `AIV_ASC_DEVKIT` names.
fn samples_root() -> PathBuf {
    let Some(dir) = std::env::var_os("AIV_ASC_DEVKIT") else {
        panic!("set AIV_ASC_DEVKIT to a checkout of asc-devkit (see tests/samples.rs)");
    };
    let root = PathBuf::from(dir).join("examples/01_simd_cpp_api");
    assert!(root.is_dir(), "{} is not a directory", root.display());
    root
}

/// The command of the sample's README that starts with `python3 ../scripts/<script>`, with the
/// scenario put in.
fn readme_command(readme: &str, script: &str, scenario: Option<u32>) -> Option<String> {
    let at = readme.find(&format!("python3 ../scripts/{script}"))?;
    let line = readme[at..].lines().next()?;
    let line = line.split('#').next()?.trim();
    Some(line.replace("$SCENARIO_NUM", &scenario.unwrap_or(1).to_string()))
}

/// The kernel printf lines the README shows, one per line: `[AIV Block b/n] text` as the NPU
/// prints it (`true`), or a bare `text` that one of the kernel's `formats` makes (`false`): a
/// README may leave out the `[AIV Block b/n] ` the NPU puts before every kernel line, and such
/// a line must still be printed, by some block.
fn readme_prints<'a>(readme: &'a str, formats: &[String]) -> Vec<(&'a str, bool)> {
    readme
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            if l.starts_with("[AIV Block ") {
                Some((l, true))
            } else if formats.iter().any(|f| format_makes(f, l)) {
                Some((l, false))
            } else {
                None
            }
        })
        .collect()
}

/// The format strings of the `AscendC::printf` / `AscendC::PRINTF` calls in `text` (kernel
/// code only: a host's `printf` is not among them), without their final newline.
fn kernel_formats(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in ["AscendC::printf(\"", "AscendC::PRINTF(\""] {
        for (at, _) in text.match_indices(call) {
            let mut f = String::new();
            let mut chars = text[at + call.len()..].chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => f.push('\n'),
                        Some('t') => f.push('\t'),
                        Some(e) => f.push(e),
                        None => break,
                    },
                    c => f.push(c),
                }
            }
            out.push(f.trim_end_matches('\n').to_string());
        }
    }
    out
}

/// Whether `line` is what the printf format `f` prints for some arguments: its literal pieces
/// in order, anything in place of each conversion (`%d`, `%lu`, ...; `%%` is a `%`). A format
/// with no literal text makes nothing here (it would match any line).
fn format_makes(f: &str, line: &str) -> bool {
    let mut pieces = vec![String::new()];
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            pieces.last_mut().unwrap().push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            pieces.last_mut().unwrap().push('%');
            continue;
        }
        // Flags, width, precision and length, then the conversion letter.
        while chars
            .next_if(|c| c.is_ascii_digit() || "-+ #.lhzjtL".contains(*c))
            .is_some()
        {}
        chars.next();
        pieces.push(String::new());
    }
    if pieces.iter().all(|p| p.trim().is_empty()) {
        return false;
    }
    let (first, last) = (&pieces[0], &pieces[pieces.len() - 1]);
    if pieces.len() == 1 {
        return line == first;
    }
    let Some(mut rest) = line.strip_prefix(first.as_str()) else {
        return false;
    };
    for p in &pieces[1..pieces.len() - 1] {
        match rest.find(p.as_str()) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.ends_with(last.as_str())
}

/// Whether `out` has `line` as a kernel's console line: `[rank 0] line` if the README shows
/// the block prefix (`prefixed`), else `[rank 0] [AIV Block b/n] line` for some block.
fn printed(out: &str, line: &str, prefixed: bool) -> bool {
    out.lines().map(str::trim_end).any(|o| {
        let Some(o) = o.strip_prefix("[rank 0] ") else {
            return false;
        };
        if prefixed {
            return o == line;
        }
        o.strip_prefix("[AIV Block ")
            .and_then(|r| r.split_once("] "))
            .is_some_and(|(_, text)| text == line)
    })
}

fn sh(cmd: &str, cwd: &Path) -> (bool, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(cwd)
        .env("AIV_TWIN_WATCHDOG_MS", "20000")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs one sample scenario in a copy of its directory: `Ok` with the run's output, or what
/// failed.
fn run(
    root: &Path,
    sample: &str,
    scenario: Option<u32>,
    edit: Option<(&str, &str)>,
) -> Result<String, String> {
    let src = root.join(sample);
    // One directory per run: the two tests run at once and share samples.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let work = std::env::temp_dir().join(format!(
        "twin-sample-{}-{}-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        sample.replace('/', "_"),
        scenario.unwrap_or(0)
    ));
    let _ = std::fs::remove_dir_all(&work);
    let copied = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&work)
        .status()
        .unwrap();
    assert!(copied.success(), "copying {}", src.display());
    let build = work.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let readme = std::fs::read_to_string(work.join("README.md")).unwrap_or_default();
    let result = (|| {
        if let Some((from, to)) = edit {
            let asc = sources(&work)
                .into_iter()
                .find(|s| std::fs::read_to_string(s).is_ok_and(|t| t.contains(from)));
            let asc = asc.ok_or_else(|| format!("no source of {sample} contains {from:?}"))?;
            let text = std::fs::read_to_string(&asc).unwrap();
            std::fs::write(&asc, text.replacen(from, to, 1)).unwrap();
        }
        if let Some(gen) = readme_command(&readme, "gen_data.py", scenario) {
            let (ok, out) = sh(&gen, &build);
            if !ok {
                return Err(format!("gen_data.py: {out}"));
            }
        }
        let libdir = std::env::current_exe()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let mut p = ascendc_build::Program::new();
        for s in sources(&work) {
            p.source(s);
        }
        // A library the executable links (`add_library(NAME SHARED|STATIC ...)`), built first as
        // the README's bisheng commands do: `-shared -fPIC`, or an object put in an archive.
        if let Some((name, kind, srcs)) = library(&work) {
            let mut l = ascendc_build::Program::new();
            for s in &srcs {
                l.source(s);
            }
            l.acl_lib_dir(&libdir);
            if kind == "SHARED" {
                l.flag("-shared").flag("-fPIC");
                l.output(build.join(format!("lib{name}.so")));
                l.build().map_err(|e| format!("build lib{name}.so: {e}"))?;
            } else {
                let obj = build.join(format!("{name}.o"));
                l.flag("-c").output(&obj);
                l.build().map_err(|e| format!("build {name}.o: {e}"))?;
                let (ok, out) = sh(&format!("ar rcs lib{name}.a {name}.o"), &build);
                if !ok {
                    return Err(format!("ar: {out}"));
                }
            }
            p.flag(&format!("-L{}", build.display()))
                .flag(&format!("-l{name}"))
                .flag(&format!("-Wl,-rpath,{}", build.display()));
        }
        let defs = definitions(&work, scenario);
        for (name, value) in &defs {
            p.define(name, Some(value));
        }
        if let Some(n) = scenario {
            if !defs.iter().any(|(name, _)| name == "SCENARIO_NUM") {
                p.define("SCENARIO_NUM", Some(&n.to_string()));
            }
        }
        p.acl_lib_dir(libdir).output(build.join("demo"));
        p.build().map_err(|e| format!("build: {e}"))?;
        let (ok, out) = sh("./demo", &build);
        if !ok || out.contains("[acl-twin]") {
            return Err(format!("run: {out}"));
        }
        let formats: Vec<String> = sources(&work)
            .iter()
            .flat_map(|s| kernel_formats(&std::fs::read_to_string(s).unwrap_or_default()))
            .collect();
        let missing: Vec<&str> = readme_prints(&readme, &formats)
            .into_iter()
            .filter(|&(l, prefixed)| !printed(&out, l, prefixed))
            .map(|(l, _)| l)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the README's printf lines {missing:?} are not in the output:\n{out}"
            ));
        }
        if let Some(verify) = readme_command(&readme, "verify_result.py", scenario) {
            let (ok, vout) = sh(&verify, &build);
            if !ok || !vout.to_lowercase().contains("pass") {
                return Err(format!("verify_result.py: {vout}"));
            }
        }
        Ok(out)
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}

#[test]
#[ignore = "needs AIV_ASC_DEVKIT (an asc-devkit checkout) and python3 with numpy: see the file's docs"]
fn public_a2_samples_run_unchanged_with_the_checkers_on() {
    let root = samples_root();
    // AIV_SAMPLES_ONLY=text runs the cases whose path contains it.
    let only = std::env::var("AIV_SAMPLES_ONLY").unwrap_or_default();
    let cases: Vec<_> = CASES.iter().filter(|c| c.0.contains(&only)).collect();
    let mut wrong = Vec::new();
    for &&(sample, scenario, expect) in &cases {
        let got = run(&root, sample, scenario, None);
        let ok = match (expect, &got) {
            (Pass, Ok(_)) => true,
            (Refused(why), Err(e)) => e.contains("[acl-twin] kernel") && e.contains(why),
            _ => false,
        };
        eprintln!(
            "{} {sample} scenario {scenario:?}: expected {expect:?}",
            if ok { "ok  " } else { "FAIL" }
        );
        if !ok {
            wrong.push(format!(
                "{sample} scenario {scenario:?}: expected {expect:?}, got {got:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        CASES.len(),
        wrong.join("\n\n")
    );
}

#[test]
#[ignore = "needs AIV_ASC_DEVKIT (an asc-devkit checkout) and python3 with numpy: see the file's docs"]
fn the_bugs_the_sanitizer_sample_describes_are_each_caught() {
    let root = samples_root();
    let sample = "01_utilities/05_sanitizer/ms_sanitizer";
    let mut wrong = Vec::new();
    for &(from, to, why) in SEEDED {
        let got = run(&root, sample, None, Some((from, to)));
        let ok = matches!(&got, Err(e) if e.contains("[acl-twin] kernel") && e.contains(why));
        eprintln!("{} {to:?} for {from:?}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            wrong.push(format!(
                "{from:?} -> {to:?}: expected a report with {why:?}, got {got:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_readme_line_without_the_block_prefix_is_checked_by_the_kernel_formats() {
    let src =
        r#"AscendC::printf("[Block (%lu/%d)]: OUTPUT = %d\n", id, n, v); printf("test pass!\n");"#;
    let formats = kernel_formats(src);
    assert_eq!(formats, ["[Block (%lu/%d)]: OUTPUT = %d"]);
    let readme = "```\n  [Block (0/6)]: OUTPUT = 24\n  test pass!\n  [AIV Block 0/8] hi\n```";
    assert_eq!(
        readme_prints(readme, &formats),
        [
            ("[Block (0/6)]: OUTPUT = 24", false),
            ("[AIV Block 0/8] hi", true)
        ]
    );
    assert!(
        !format_makes("%d", "24"),
        "a format of no text matches nothing"
    );
    assert!(format_makes("100%% of %s", "100% of it"));
    let out = "[rank 0] [AIV Block 3/8] [Block (0/6)]: OUTPUT = 24\n[rank 0] [AIV Block 0/8] hi\n";
    assert!(printed(out, "[Block (0/6)]: OUTPUT = 24", false));
    assert!(!printed(out, "[Block (0/6)]: OUTPUT = 0", false));
    assert!(printed(out, "[AIV Block 0/8] hi", true));
    assert!(!printed(out, "[Block (0/6)]: OUTPUT = 24", true));
}
