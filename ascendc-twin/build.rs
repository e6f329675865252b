//! Builds the twin's launch trampoline (C++ try/catch around a kernel block) and the C side of
//! its ABI tests (src/abi_probe.cpp), which also compiles the layout pins of its headers, and
//! exports the include directory to dependents as DEP_ASCENDC_TWIN_INCLUDE.
fn main() {
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    println!("cargo:rerun-if-changed=src/twin_entry.cpp");
    println!("cargo:rerun-if-changed=src/abi_probe.cpp");
    println!("cargo:rerun-if-changed=include");
    println!("cargo:include={}", include.display());
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .warnings(true)
        .extra_warnings(true)
        .include(&include)
        .file("src/twin_entry.cpp")
        .file("src/abi_probe.cpp")
        .compile("ascendc_twin_entry");
}
