//! Builds the twin's launch trampoline (C++ try/catch around a kernel block), and exports the
//! include directory to dependents as DEP_ASCENDC_TWIN_INCLUDE.
//!
//! Also builds the C side of the twin's ABI tests (src/abi_probe.cpp, which compiles every
//! header and their layout pins) as a library of its own that nothing links but those tests:
//! their `extern` block in src/abi.rs names it, under `cfg(test)`.
fn main() {
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    println!("cargo:rerun-if-changed=src/twin_entry.cpp");
    println!("cargo:rerun-if-changed=src/abi_probe.cpp");
    println!("cargo:rerun-if-changed=include");
    println!("cargo:include={}", include.display());
    let build = || {
        let mut b = cc::Build::new();
        b.cpp(true)
            .std("c++17")
            .warnings(true)
            .extra_warnings(true)
            .include(&include);
        b
    };
    build()
        .file("src/twin_entry.cpp")
        .compile("ascendc_twin_entry");
    // No cargo metadata: the library is not linked into the crate (the search path, OUT_DIR,
    // is the entry library's).
    build()
        .cargo_metadata(false)
        .file("src/abi_probe.cpp")
        .compile("ascendc_twin_abi_probe");
}
