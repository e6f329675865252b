//! Compiles aiv-comm's device sources (kernel/*.cpp, with the headers under kernel/ and sync/)
//! into a static library.
//!
//! * always: the host C++ compiler against ascendc-twin's AscendC headers -> the CPU twin, with a
//!   launch trampoline per kernel and `$OUT_DIR/aiv_kernels.rs` (ascendc-build).
//! * `npu` feature with ASCEND_HOME_PATH set: also CANN's bisheng for dav-c220-vec, linked into one
//!   device ELF that the ACL backend loads on an NPU. UNTESTED: no NPU or CANN toolkit is
//!   available where this project is built and tested.
//! * `regen-bindings` feature: regenerates host/bindings.rs from kernel/launch.h (needs libclang).

#[cfg(feature = "regen-bindings")]
use std::path::Path;
use std::path::PathBuf;

/// Every kernel source and the kernels (entry points) it defines.
const KERNELS: &[(&str, &[&str])] = &[
    ("kernel/all_gather.cpp", &["aiv_all_gather"]),
    ("kernel/all_gather_v.cpp", &["aiv_all_gather_v"]),
    ("kernel/all_reduce.cpp", &["aiv_all_reduce"]),
    ("kernel/all_to_all.cpp", &["aiv_all_to_all"]),
    ("kernel/barrier.cpp", &["aiv_barrier"]),
    ("kernel/broadcast.cpp", &["aiv_broadcast"]),
    ("kernel/copy.cpp", &["aiv_copy"]),
    (
        "kernel/push.cpp",
        &["aiv_all_gather_push", "aiv_all_reduce_push"],
    ),
    ("kernel/reduce_scatter.cpp", &["aiv_reduce_scatter"]),
    (
        "kernel/link.cpp",
        &["aiv_p2p", "aiv_link_signal", "aiv_handshake"],
    ),
];

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=kernel");
    println!("cargo:rerun-if-changed=sync");
    println!("cargo:rerun-if-env-changed=ASCEND_HOME_PATH");
    // Every kernel/*.cpp must be in KERNELS, so a new source is never silently left out.
    let mut on_disk: Vec<String> = std::fs::read_dir(root.join("kernel"))
        .expect("kernel/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .map(|p| {
            format!(
                "kernel/{}",
                p.file_name().expect("file name").to_string_lossy()
            )
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = KERNELS.iter().map(|(s, _)| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "build.rs KERNELS must list every kernel/*.cpp"
    );

    // Dependents' build scripts see these as DEP_AIV_KERNELS_SYNC_INCLUDE / _KERNEL_INCLUDE /
    // _TWIN_INCLUDE (ascendc-build picks them up; docs/kernels.md).
    println!("cargo:sync_include={}", root.join("sync").display());
    println!("cargo:kernel_include={}", root.join("kernel").display());

    #[cfg(feature = "regen-bindings")]
    regen_bindings(&root);

    let twin_include = std::env::var("DEP_ASCENDC_TWIN_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("ascendc-twin/include"));
    println!("cargo:twin_include={}", twin_include.display());

    let mut b = ascendc_build::Build::new();
    b.twin_include(&twin_include)
        .include(root.join("kernel"))
        .include(root.join("sync"))
        // Our own kernels are held to no warnings; users' kernels are not (ascendc-build's
        // default).
        .warnings_into_errors(true)
        // Our own kernels write every pipe order themselves and are checked for all of them
        // (users' kernels get the compiler's automatic synchronisation by default).
        .auto_sync(false);
    for (src, kernels) in KERNELS {
        b.kernels(root.join(src), kernels);
    }
    let mut npu = false;
    if cfg!(feature = "npu") {
        match std::env::var("ASCEND_HOME_PATH") {
            // UNTESTED: no NPU or CANN toolkit where this is built. The device binary the ACL
            // backend loads on an NPU (AIV_KERNELS_NPU_BINARY below).
            Ok(home) => {
                b.npu(home);
                npu = true;
            }
            Err(_) => println!("cargo:warning=feature `npu` without ASCEND_HOME_PATH: twin only"),
        }
    }
    // The same kernels as one shared object: the binary the ACL backend loads on acl-twin.
    b.twin_binary(true);
    b.compile("aiv_kernels");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!(
        "cargo:rustc-env=AIV_KERNELS_TWIN_BINARY={}",
        ascendc_build::Build::twin_binary_path(&out, "aiv_kernels").display()
    );
    if npu {
        println!(
            "cargo:rustc-env=AIV_KERNELS_NPU_BINARY={}",
            ascendc_build::Build::npu_binary_path(out.join("aiv_kernels.npu"), "aiv_kernels")
                .display()
        );
    }

    hccl_kernels(&twin_include);
}

/// With `AIV_HCCL_AIV_DIR` set to the `alg_aiv_template` directory of a cann-hccl checkout,
/// also builds HCCL's own AIV kernels for the twin (unchanged: their own sources, never copied
/// here) so that `tests/integration/hccl_kernels.rs` can run them; sets `cfg(aiv_hccl)`.
fn hccl_kernels(twin_include: &std::path::Path) {
    println!("cargo::rustc-check-cfg=cfg(aiv_hccl)");
    println!("cargo:rerun-if-env-changed=AIV_HCCL_AIV_DIR");
    let Ok(dir) = std::env::var("AIV_HCCL_AIV_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut b = ascendc_build::Build::new();
    b.twin_include(twin_include)
        .include(&dir)
        // Their warnings are theirs: thousands of unused parameters.
        .flag("-w");
    b.kernels(
        dir.join("aiv_communication.h"),
        &[
            "aiv_all_reduce_float",
            "aiv_all_gather_float",
            "aiv_reduce_scatter_float",
            "aiv_all_to_all_float",
        ],
    );
    b.compile("hccl_aiv");
    println!("cargo:rustc-cfg=aiv_hccl");
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
