//! Compiles every `kernels/*.cpp` into one library, `twin_tests`. A source names its kernels on
//! a line of its own near the top: `// kernels: name_a name_b`. Adding a test kernel is adding a
//! file: nothing here lists them.
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=kernels");
    let mut sources: Vec<_> = std::fs::read_dir("kernels")
        .expect("twin-tests: cannot read kernels/")
        .map(|e| e.expect("twin-tests: cannot read kernels/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cpp"))
        .collect();
    sources.sort();
    if sources.is_empty() {
        // Nothing to compile yet: an empty kernel module.
        let out =
            std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("twin_tests.rs");
        std::fs::write(out, "").expect("twin-tests: cannot write OUT_DIR/twin_tests.rs");
        return;
    }
    let mut build = ascendc_build::Build::new();
    for path in &sources {
        build.kernels(path, &kernel_names(path));
    }
    build.compile("twin_tests");
}

/// The names on the source's `// kernels:` line; a source without one is an error, so a kernel
/// cannot be left out by accident.
fn kernel_names(path: &Path) -> Vec<&'static str> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let line = text
        .lines()
        .take(40)
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
