//! Compiles aiv-comm's device sources (kernel/*.cpp, with the headers under kernel/ and sync/)
//! into a static library.
//!
//! * default: the host C++ compiler against ascendc-sys's AscendC headers -> the CPU twin.
//! * `npu` feature with ASCEND_HOME_PATH set: CANN's bisheng for dav-c220-vec, linking ACL.
//!   UNTESTED: no NPU or CANN toolkit is available where this project is built and tested.
//! * `regen-bindings` feature: regenerates host/bindings.rs from kernel/launch.h (needs libclang).

use std::path::{Path, PathBuf};

fn device_sources(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut cpp = Vec::new();
    let mut all = Vec::new();
    for dir in ["kernel", "sync"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            match p.extension().and_then(|x| x.to_str()) {
                Some("cpp") if dir == "kernel" => {
                    cpp.push(p.clone());
                    all.push(p);
                }
                Some("h") | Some("cpp") => all.push(p),
                _ => {}
            }
        }
    }
    cpp.sort();
    all.sort();
    (cpp, all)
}

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let (cpp, all) = device_sources(&root);
    println!("cargo:rerun-if-changed=kernel");
    println!("cargo:rerun-if-changed=sync");
    for f in &all {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-env-changed=ASCEND_HOME_PATH");
    // Dependents' build scripts see these as DEP_AIV_KERNELS_SYNC_INCLUDE / _KERNEL_INCLUDE, to
    // compile their own kernels against aiv-comm's device headers (README, "Your own kernels").
    println!("cargo:sync_include={}", root.join("sync").display());
    println!("cargo:kernel_include={}", root.join("kernel").display());

    #[cfg(feature = "regen-bindings")]
    regen_bindings(&root);

    let npu_home = std::env::var("ASCEND_HOME_PATH").ok();
    if cfg!(feature = "npu") {
        if let Some(home) = npu_home {
            build_npu(&root, &cpp, Path::new(&home));
            return;
        }
        println!("cargo:warning=feature `npu` without ASCEND_HOME_PATH: building the CPU twin");
    }

    let twin_include = std::env::var("DEP_ASCENDC_TWIN_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("ascendc-sys/include"));
    println!("cargo:twin_include={}", twin_include.display());
    let mut b = cc::Build::new();
    b.cpp(true)
        .std("c++17")
        .include(&twin_include)
        .include(root.join("kernel"))
        .include(root.join("sync"))
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        // The twin's headers forward every AscendC call through small inline functions; inline
        // them even in debug builds so the twin stays fast under `cargo test`.
        .opt_level(2)
        .flag_if_supported("-fno-strict-aliasing")
        // Large frames probe their pages one by one, so a stack overflow lands in the guard
        // region below the block's stack (the twin then reports it) instead of jumping over it.
        .flag_if_supported("-fstack-clash-protection");
    for f in &cpp {
        b.file(f);
    }
    b.compile("aiv_kernels");
}

/// UNTESTED (no CANN here): compile the same sources for the AIV cores of Atlas A2 with bisheng
/// and link the ACL runtime. Kept deliberately small; see README "NPU build".
fn build_npu(root: &Path, cpp: &[PathBuf], home: &Path) {
    let bisheng = home.join("compiler/ccec_compiler/bin/bisheng");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut objs = Vec::new();
    for f in cpp {
        let obj = out.join(
            f.file_stem()
                .expect("file name")
                .to_string_lossy()
                .to_string()
                + ".o",
        );
        let status = std::process::Command::new(&bisheng)
            .args([
                "-xcce",
                "--cce-aicore-arch=dav-c220-vec",
                "-O2",
                "-std=c++17",
                "-c",
            ])
            .arg(format!("-I{}", home.join("include").display()))
            .arg(format!(
                "-I{}",
                home.join("compiler/tikcpp/tikcfw").display()
            ))
            .arg(format!("-I{}", root.join("kernel").display()))
            .arg(format!("-I{}", root.join("sync").display()))
            .arg(f)
            .arg("-o")
            .arg(&obj)
            .status()
            .expect("cannot run bisheng");
        assert!(status.success(), "bisheng failed on {}", f.display());
        objs.push(obj);
    }
    let lib = out.join("libaiv_kernels.a");
    let status = std::process::Command::new("ar")
        .arg("crs")
        .arg(&lib)
        .args(&objs)
        .status()
        .expect("cannot run ar");
    assert!(status.success(), "ar failed");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=aiv_kernels");
    println!(
        "cargo:rustc-link-search=native={}",
        home.join("lib64").display()
    );
    println!("cargo:rustc-link-lib=dylib=ascendcl");
}

#[cfg(feature = "regen-bindings")]
fn regen_bindings(root: &Path) {
    let bindings = bindgen::Builder::default()
        .header(root.join("kernel/launch.h").to_string_lossy())
        .clang_arg(format!("-I{}", root.join("kernel").display()))
        .clang_arg(format!("-I{}", root.join("sync").display()))
        .allowlist_type("Aiv.*")
        .allowlist_function("aiv_.*")
        .allowlist_var("AIV_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(true)
        .generate()
        .expect("bindgen failed on kernel/launch.h");
    let text = format!(
        "//! Generated by bindgen from kernel/launch.h: do not edit.\n//! Regenerate: `cargo build --features regen-bindings`; layouts are pinned in host/ffi.rs.\n#![allow(non_camel_case_types, non_upper_case_globals, dead_code, missing_docs, clippy::all)]\n\n{}",
        bindings
    );
    std::fs::write(root.join("host/bindings.rs"), text).expect("cannot write host/bindings.rs");
}
