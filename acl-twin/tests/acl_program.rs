//! A C program written against the documented ACL API alone (`acl_program.c`: its own
//! declarations, no header of this project) runs against acl-twin's `libascendcl.so` and gets
//! what the documentation promises, error returns included.

use std::path::PathBuf;
use std::process::Command;

/// The directory holding this build's `libascendcl.so`: `deps/`, next to the test binary,
/// where Cargo builds the library for the tests (the copy above it is refreshed only by
/// `cargo build`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().expect("target/<profile>/deps").to_path_buf();
    assert!(
        dir.join("libascendcl.so").exists(),
        "{} has no libascendcl.so: build acl-twin first (cargo build -p acl-twin)",
        dir.display()
    );
    dir
}

/// The test kernels built as the twin binary acl-twin loads.
fn kernel_binary(tmp: &std::path::Path) -> PathBuf {
    let out = tmp.join("kernels");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/accumulate.cpp");
    ascendc_build::Build::new()
        .kernels(&src, &["accumulate", "accumulate_indirect", "fault_kernel"])
        .twin_binary(true)
        .out_dir(&out)
        .try_compile("acl_twin_test_kernels")
        .expect("the test kernels build");
    ascendc_build::Build::twin_binary_path(&out, "acl_twin_test_kernels")
}

/// Compiles `acl-twin/tests/<name>.c` against acl-twin's `libascendcl.so` and runs it on the
/// test kernels; returns its output.
fn run_c_program(name: &str) -> std::process::Output {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&tmp).unwrap();
    let lib = library_dir();
    let kernels = kernel_binary(&tmp);
    let exe = tmp.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/{name}.c"));
    let status = Command::new(&cc)
        .args([
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            "-Wall",
            "-Werror",
            "-o",
        ])
        .arg(&exe)
        .arg(&src)
        .arg(format!("-L{}", lib.display()))
        .arg("-lascendcl")
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler `{cc}`: {e}"));
    assert!(status.success(), "{name}.c does not compile");
    Command::new(&exe)
        .arg(&kernels)
        .env("LD_LIBRARY_PATH", &lib)
        .env("ACL_TWIN_DEVICES", "4")
        .output()
        .expect("the C program runs")
}

#[test]
fn two_processes_share_device_memory_through_ipc_as_documented() {
    let out = run_c_program("acl_ipc");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_c_program_against_the_documented_api_gets_the_documented_results() {
    let out = run_c_program("acl_program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    // The version it reports is acl-twin's own, this crate's.
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        stdout.contains(&format!("runtime version: acl-twin {version}\n"))
            && stdout.contains(&format!("runtime version parts: {version}\n")),
        "{stdout}"
    );
}
