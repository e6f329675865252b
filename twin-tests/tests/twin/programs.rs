//! Whole AscendC programs (host `main` and kernels in one `.asc` source, kernels launched with
//! `<<<>>>`, the host on the ACL runtime) build unchanged for the twin with
//! `ascendc_build::Program` (the `asc-twin-cc` command) and run on acl-twin: their own `main`
//! checks the numbers, and a kernel the checkers stop is named on stderr and fails the stream.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `programs/<name>.asc` into the test's own directory, runs it, checks that it exited
/// with `code`, and returns its stdout and stderr.
fn build_and_run(name: &str, code: i32) -> (String, String) {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // acl-twin's libascendcl.so: Cargo builds it next to this test (a dev-dependency).
    let libdir: PathBuf = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let exe = libdir.join(format!("program-{name}"));
    ascendc_build::Program::new()
        .source(here.join("programs").join(format!("{name}.asc")))
        .acl_lib_dir(&libdir)
        .output(&exe)
        .build()
        .unwrap_or_else(|e| panic!("building {name}.asc: {e}"));
    let out = Command::new(&exe)
        .env("AIV_TWIN_WATCHDOG_MS", "20000")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    (stdout, stderr)
}

#[test]
fn a_program_with_a_template_kernel_launched_with_chevrons_runs_and_checks_itself() {
    let (stdout, stderr) = build_and_run("vadd", 0);
    assert!(stdout.contains("vadd: 0 of 4096 wrong"), "{stdout}");
    assert!(!stderr.contains("[acl-twin]"), "{stderr}");
}

#[test]
fn a_kernel_the_checkers_stop_is_named_on_stderr_and_fails_the_stream() {
    let (_, stderr) = build_and_run("unsynced", 3);
    assert!(
        stderr.contains("[acl-twin] kernel unsynced:") && stderr.contains("pipe hazard"),
        "{stderr}"
    );
}

#[test]
fn printf_of_asc_printf_h_is_the_kernels_in_a_kernel_and_the_c_librarys_on_the_host() {
    let (stdout, stderr) = build_and_run("host_and_kernel_printf", 0);
    let lines: Vec<&str> = stdout.lines().collect();
    let mut want = vec![
        "host without arguments".to_string(),
        "host n=42 pi=3.14 s=str".to_string(),
        "host std::printf 7".to_string(),
        // 24 characters: the C library's return value.
        "host printf returned 24".to_string(),
    ];
    for b in 0..2 {
        want.push(format!(
            "[rank 0] [AIV Block {b}/2] kernel without arguments"
        ));
        want.push(format!("[rank 0] [AIV Block {b}/2] kernel v=5 s=str"));
    }
    for w in &want {
        assert_eq!(
            lines.iter().filter(|l| **l == w.as_str()).count(),
            1,
            "{w:?} once in:\n{stdout}"
        );
    }
    assert_eq!(lines.len(), want.len(), "{stdout}");
    assert!(!stderr.contains("[acl-twin]"), "{stderr}");
}

#[test]
fn a_launch_without_a_stream_runs_on_the_default_stream() {
    let (stdout, _) = build_and_run("default_stream", 0);
    assert!(stdout.contains("default stream: 0 of 4 wrong"), "{stdout}");
}

#[test]
fn a_launch_asking_for_dynamic_ub_is_refused_and_named() {
    let (_, stderr) = build_and_run("dyn_ub", 0);
    assert!(
        stderr.contains("[acl-twin] kernel marks<<<1, 1024, ...>>> was not launched")
            && stderr.contains("dynUBufSize"),
        "{stderr}"
    );
}
