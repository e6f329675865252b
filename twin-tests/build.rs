//! Compiles every `kernels/*.cpp` into the kernel libraries of `twin_tests::kernels`. A source
//! names its kernels on a line of its own near the top: `// kernels: name_a name_b`. Adding a
//! test kernel is adding a file: nothing here lists them.
//!
//! A source may also say `// auto_sync: off`: it is then built as aiv-comm builds its own
//! kernels, without the compiler's automatic synchronisation (the kernel writes every pipe order
//! itself, and the hazard checker sees exactly those) and with warnings as errors. Those sources
//! go into a library of their own, `twin_tests_manual_sync`; the others into `twin_tests`, with
//! ascendc-build's defaults (a user's kernel project's).
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=kernels");
    let mut sources: Vec<_> = std::fs::read_dir("kernels")
        .expect("twin-tests: cannot read kernels/")
        .map(|e| e.expect("twin-tests: cannot read kernels/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cpp"))
        .collect();
    sources.sort();
    let (manual, auto): (Vec<PathBuf>, Vec<PathBuf>) =
        sources.into_iter().partition(|p| manual_sync(p));
    library("twin_tests", &auto, |_| {});
    library("twin_tests_manual_sync", &manual, |b| {
        b.auto_sync(false).warnings_into_errors(true);
    });
}

/// Compiles `sources` into the kernel library `lib` (an empty module if there are none).
fn library(lib: &str, sources: &[PathBuf], setup: impl FnOnce(&mut ascendc_build::Build)) {
    if sources.is_empty() {
        let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join(format!("{lib}.rs"));
        std::fs::write(&out, "").unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        return;
    }
    let mut build = ascendc_build::Build::new();
    setup(&mut build);
    for path in sources {
        build.kernels(path, &kernel_names(path));
    }
    build.compile(lib);
}

/// The first 40 lines of the source at `path`.
fn head(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().take(40).map(str::to_string).collect()
}

/// Whether the source says `// auto_sync: off` (any other value is an error).
fn manual_sync(path: &Path) -> bool {
    let head = head(path);
    let Some(value) = head
        .iter()
        .find_map(|l| l.trim().strip_prefix("// auto_sync:"))
    else {
        return false;
    };
    match value.trim() {
        "off" => true,
        "on" => false,
        v => panic!("{}: `// auto_sync: {v}`: say `off` or `on`", path.display()),
    }
}

/// The names on the source's `// kernels:` line; a source without one is an error, so a kernel
/// cannot be left out by accident.
fn kernel_names(path: &Path) -> Vec<&'static str> {
    let head = head(path);
    let line = head
        .iter()
        .find_map(|l| l.trim().strip_prefix("// kernels:"))
        .unwrap_or_else(|| {
            panic!(
                "{}: no `// kernels: name ...` line in its first 40 lines",
                path.display()
            )
        });
    let names: Vec<&'static str> = line
        .split_whitespace()
        .map(|n| &*Box::leak(n.to_string().into_boxed_str()))
        .collect();
    assert!(
        !names.is_empty(),
        "{}: the `// kernels:` line names no kernel",
        path.display()
    );
    names
}
