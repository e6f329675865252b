//! # ascendc-build: compile AscendC kernels for aiv-comm's CPU twin from a `build.rs`
//!
//! Your kernels stay ordinary AscendC sources (`#include "kernel_operator.h"`,
//! `extern "C" __global__ __aicore__ void name(GM_ADDR x, uint32_t n, Tiling t)`). Name the
//! sources and their kernels; the helper compiles them with the host C++ compiler against the
//! twin's AscendC headers, generates a launch trampoline for each kernel (its C++ function type
//! tells the compiler how to unpack the argument block), and writes a Rust file with one
//! `ascendc_twin::Kernel` static per kernel.
//!
//! `build.rs` (with `ascendc-build` under `[build-dependencies]` and `ascendc-twin` under
//! `[dependencies]`):
//!
//! ```no_run
//! ascendc_build::Build::new()
//!     .kernels("kernels/add.cpp", &["add_custom"])
//!     .compile("my_kernels");
//! ```
//!
//! and in the crate: `mod kernels { ascendc_twin::include_kernels!("my_kernels"); }`, then
//! `unsafe { device.launch_kernel(&kernels::add_custom, 8, &ascendc_twin::args![x, y, z, n]) }`.
//!
//! What it sets: C++17, the twin's include directory (from `DEP_ASCENDC_TWIN_INCLUDE`, else
//! aiv-comm's `DEP_AIV_KERNELS_TWIN_INCLUDE`, else the `ascendc-twin` next to this crate), aiv-comm's
//! device headers when the crate depends on aiv-comm (`DEP_AIV_KERNELS_SYNC_INCLUDE`,
//! `DEP_AIV_KERNELS_KERNEL_INCLUDE`), the macros the A2 vector-core compiler predefines
//! (`__NPU_ARCH__=2201`, `__DAV_C220__`, `__DAV_C220_VEC__`, `__DAV_VEC__`, `__CCE_AICORE__=220`),
//! `-O2` (the twin's headers are thin inline shims: inlined, they keep the twin fast even in debug
//! builds), `-fno-strict-aliasing` (kernels reinterpret UB freely, as on the NPU), and
//! `-fstack-clash-protection` (a kernel that overflows its stack is reported by the twin instead
//! of corrupting memory). Warnings are shown (`-Wall -Wextra`), never fatal unless you ask
//! ([`Build::warnings_into_errors`]).
//!
//! With [`Build::npu`] the same sources are also compiled by CANN's `bisheng` for the AIV cores
//! of Atlas A2 (`dav-c220-vec`), one object per source in `OUT_DIR/<lib>.npu/`, for loading with
//! `aclrtBinaryLoadFromFile`. UNTESTED: no NPU or CANN toolkit exists where this crate is built.

#![warn(missing_docs)]

mod chevron;
mod program;
pub use chevron::chevrons_to_calls;
pub use program::Program;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Macros the bisheng compiler predefines for an Atlas A2 vector core (`dav-c220-vec`).
pub const A2_VECTOR_DEFINES: &[(&str, Option<&str>)] = &[
    ("__NPU_ARCH__", Some("2201")),
    ("__DAV_C220__", None),
    ("__DAV_C220_VEC__", None),
    ("__DAV_VEC__", None),
    ("__CCE_AICORE__", Some("220")),
];

/// What went wrong in a build.
#[derive(Debug)]
pub enum Error {
    /// The twin's AscendC headers were not found.
    NoTwinHeaders(String),
    /// A kernel name is not a C identifier, or a source was named twice.
    BadInput(String),
    /// Writing a generated file failed.
    Io(PathBuf, std::io::Error),
    /// The C++ compiler failed (its diagnostics were printed as cargo warnings).
    Compile(String),
    /// `bisheng` failed or could not be run.
    Npu(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NoTwinHeaders(s) => write!(f, "ascendc-build: the twin's AscendC headers: {s}"),
            Error::BadInput(s) => write!(f, "ascendc-build: {s}"),
            Error::Io(p, e) => write!(f, "ascendc-build: cannot write {}: {e}", p.display()),
            Error::Compile(s) => write!(f, "ascendc-build: compiling the kernels failed: {s}"),
            Error::Npu(s) => write!(f, "ascendc-build: bisheng: {s}"),
        }
    }
}

impl std::error::Error for Error {}

/// The directory of the twin's AscendC headers (`kernel_operator.h`): `DEP_ASCENDC_TWIN_INCLUDE`
/// (a crate depending on `ascendc-twin`), else `DEP_AIV_KERNELS_TWIN_INCLUDE` (one depending on
/// aiv-comm), else `../ascendc-twin/include` next to this crate.
pub fn twin_include_dir() -> Result<PathBuf, Error> {
    for var in ["DEP_ASCENDC_TWIN_INCLUDE", "DEP_AIV_KERNELS_TWIN_INCLUDE"] {
        if let Some(dir) = std::env::var_os(var) {
            return Ok(PathBuf::from(dir));
        }
    }
    let sibling = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ascendc-twin/include");
    if sibling.join("kernel_operator.h").is_file() {
        return Ok(sibling);
    }
    Err(Error::NoTwinHeaders(
        "DEP_ASCENDC_TWIN_INCLUDE is not set: add `ascendc-twin` to [dependencies] of the crate \
         whose build.rs compiles kernels, or call Build::twin_include"
            .into(),
    ))
}

struct Source {
    path: PathBuf,
    kernels: Vec<String>,
}

/// A build of kernel sources into one static library plus its Rust kernel statics.
pub struct Build {
    sources: Vec<Source>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    flags: Vec<String>,
    werror: bool,
    runtime: String,
    twin_include: Option<PathBuf>,
    npu_home: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    emit: bool,
    twin_binary: bool,
    auto_sync: bool,
}

impl Default for Build {
    fn default() -> Self {
        Build::new()
    }
}

impl Build {
    /// A build with the settings described in the crate docs.
    pub fn new() -> Build {
        Build {
            sources: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            werror: false,
            runtime: "::ascendc_twin".into(),
            twin_include: None,
            npu_home: None,
            out_dir: None,
            emit: true,
            twin_binary: true,
            auto_sync: true,
        }
    }

    /// Compiles `source` and generates a launch trampoline and a `Kernel` static for each of
    /// `kernels` (names of `extern "C"` kernel functions defined in it; may be empty for a source
    /// without entry points of its own). A kernel name must be unique in the program: two
    /// libraries defining the same one collide when linked.
    pub fn kernels(&mut self, source: impl AsRef<Path>, kernels: &[&str]) -> &mut Build {
        self.sources.push(Source {
            path: source.as_ref().to_path_buf(),
            kernels: kernels.iter().map(|k| k.to_string()).collect(),
        });
        self
    }

    /// Adds an include directory (searched after the twin's and aiv-comm's).
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a preprocessor macro for the kernel sources.
    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut Build {
        self.defines
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    /// Whether the kernels are built with the compiler's automatic synchronisation (on by
    /// default, as AscendC kernel projects build them): the compiler orders each
    /// `LocalTensor::GetValue`/`SetValue` with the pipe instructions touching the same bytes, so
    /// the kernel needs no `SetFlag`/`WaitFlag` for them. The twin's pipe-hazard checker then
    /// orders them the same way instead of reporting them (hazards between two pipes are
    /// reported either way); [`Build::npu`] passes `--cce-auto-sync` to bisheng. Off: every
    /// such order must be written in the kernel, and a missing one is reported.
    pub fn auto_sync(&mut self, on: bool) -> &mut Build {
        self.auto_sync = on;
        self
    }

    /// Adds a compiler flag (passed only if the host compiler accepts it).
    pub fn flag(&mut self, flag: &str) -> &mut Build {
        self.flags.push(flag.to_string());
        self
    }

    /// Makes warnings errors (`-Werror`; off by default: your kernels' warnings are shown).
    pub fn warnings_into_errors(&mut self, on: bool) -> &mut Build {
        self.werror = on;
        self
    }

    /// Rust path of the runtime crate the generated statics name (default `::ascendc_twin`).
    pub fn runtime_crate(&mut self, path: &str) -> &mut Build {
        self.runtime = path.to_string();
        self
    }

    /// Uses `dir` as the twin's include directory instead of looking it up.
    pub fn twin_include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.twin_include = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Also compiles each source with the `bisheng` of the CANN toolkit at `ascend_home`
    /// (`ASCEND_HOME_PATH`) for `dav-c220-vec`. UNTESTED (no CANN here).
    pub fn npu(&mut self, ascend_home: impl AsRef<Path>) -> &mut Build {
        self.npu_home = Some(ascend_home.as_ref().to_path_buf());
        self
    }

    /// Whether to also link the kernels into `lib<lib>.twin.so` next to the static library (on
    /// by default): the binary acl-twin (the ACL runtime over the twin) loads with
    /// `aclrtBinaryLoadFromFile`, whose kernels it finds by name, so that a program launches the
    /// kernels through aiv-comm's ACL backend on acl-twin as on an NPU. Its references to the
    /// twin's runtime are left undefined and resolved against the runtime that loads it.
    /// [`Build::twin_binary_path`] names the file; the kernel statics carry its path
    /// (`ascendc_twin::KernelBinaries`).
    pub fn twin_binary(&mut self, on: bool) -> &mut Build {
        self.twin_binary = on;
        self
    }

    /// Where [`Build::twin_binary`] puts the binary of library `lib` (in `dir`, the output
    /// directory).
    pub fn twin_binary_path(dir: impl AsRef<Path>, lib: &str) -> PathBuf {
        dir.as_ref().join(format!("lib{lib}.twin.so"))
    }

    /// Writes generated files and the library under `dir` instead of `OUT_DIR`, and prints no
    /// `cargo:` lines (for building outside a build script, e.g. in tests).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self.emit = false;
        self
    }

    /// [`Build::try_compile`], panicking with the error (the build-script convention).
    pub fn compile(&mut self, lib: &str) {
        if let Err(e) = self.try_compile(lib) {
            panic!("{e}");
        }
    }

    /// Compiles the static library `lib` (linked into the crate) and writes `<lib>.rs` with
    /// the kernel statics to the output directory. Returns the path of `<lib>.rs`.
    pub fn try_compile(&mut self, lib: &str) -> Result<PathBuf, Error> {
        let out = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or_else(|| {
                Error::BadInput("OUT_DIR is not set: call this from a build script".into())
            })?),
        };
        if !is_c_identifier(lib) {
            return Err(Error::BadInput(format!(
                "library name `{lib}` must be a C identifier"
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for s in &self.sources {
            for k in &s.kernels {
                if !is_c_identifier(k) {
                    return Err(Error::BadInput(format!(
                        "kernel name `{k}` (in {}) is not a C identifier",
                        s.path.display()
                    )));
                }
                if ["self", "Self", "super", "crate"].contains(&k.as_str()) {
                    return Err(Error::BadInput(format!(
                        "kernel name `{k}` cannot name a Rust static"
                    )));
                }
                if !seen.insert(k.clone()) {
                    return Err(Error::BadInput(format!("kernel `{k}` is named twice")));
                }
            }
        }
        let twin_include = match &self.twin_include {
            Some(d) => d.clone(),
            None => twin_include_dir()?,
        };
        let gen_dir = out.join(format!("{lib}.twin"));
        std::fs::create_dir_all(&gen_dir).map_err(|e| Error::Io(gen_dir.clone(), e))?;

        let mut includes = vec![twin_include];
        for var in [
            "DEP_AIV_KERNELS_SYNC_INCLUDE",
            "DEP_AIV_KERNELS_KERNEL_INCLUDE",
        ] {
            if let Some(dir) = std::env::var_os(var) {
                includes.push(PathBuf::from(dir));
            }
        }
        includes.extend(self.includes.iter().cloned());

        let mut b = cc::Build::new();
        b.cpp(true)
            .std("c++17")
            .opt_level(2)
            .warnings(true)
            .extra_warnings(true)
            .warnings_into_errors(self.werror)
            .flag_if_supported("-fno-strict-aliasing")
            .flag_if_supported("-fstack-clash-protection")
            .cargo_metadata(self.emit)
            .cargo_warnings(self.emit)
            .out_dir(&out);
        if !self.emit {
            // Outside a build script cc cannot read these from the environment.
            let host = host_triple();
            b.target(&host).host(&host).debug(false);
        }
        for inc in &includes {
            b.include(inc);
        }
        for (k, v) in A2_VECTOR_DEFINES {
            b.define(k, *v);
        }
        for (k, v) in &self.defines {
            b.define(k, v.as_deref());
        }
        b.define(
            "ASC_TWIN_AUTO_SYNC",
            Some(if self.auto_sync { "1" } else { "0" }),
        );
        for f in &self.flags {
            b.flag_if_supported(f);
        }
        for (i, s) in self.sources.iter().enumerate() {
            let path = std::fs::canonicalize(&s.path)
                .map_err(|e| Error::BadInput(format!("kernel source {}: {e}", s.path.display())))?;
            if self.emit {
                println!("cargo:rerun-if-changed={}", s.path.display());
                // Headers next to the source (printing any rerun-if-changed turns Cargo's
                // default of watching the whole package off).
                if let Some(dir) = path.parent() {
                    println!("cargo:rerun-if-changed={}", dir.display());
                }
            }
            let stem = path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tu = gen_dir.join(format!("{i}_{}.cpp", sanitize(&stem)));
            let text = translation_unit(&path, &s.kernels);
            write_if_changed(&tu, &text)?;
            b.file(&tu);
        }
        if self.emit {
            for inc in &self.includes {
                println!("cargo:rerun-if-changed={}", inc.display());
            }
        }
        b.try_compile(lib)
            .map_err(|e| Error::Compile(e.to_string()))?;
        if self.twin_binary {
            link_twin_binary(&b, &out, lib)?;
        }

        if let Some(home) = self.npu_home.clone() {
            self.build_npu(&home, &out.join(format!("{lib}.npu")), &includes, lib)?;
        }

        let twin = self.twin_binary.then(|| Build::twin_binary_path(&out, lib));
        let npu = self
            .npu_home
            .as_ref()
            .map(|_| Build::npu_binary_path(out.join(format!("{lib}.npu")), lib));
        let rs = out.join(format!("{lib}.rs"));
        write_if_changed(
            &rs,
            &self.rust_statics(lib, twin.as_deref(), npu.as_deref()),
        )?;
        Ok(rs)
    }

    /// The Rust file of kernel statics of library `lib`, whose binaries are at `twin` and
    /// `npu` (where built).
    fn rust_statics(&self, lib: &str, twin: Option<&Path>, npu: Option<&Path>) -> String {
        let rt = &self.runtime;
        let mut s =
            format!("// Generated by ascendc-build for the kernel library `{lib}`: do not edit.\n");
        // A path as a Rust `Option<&str>` expression (Debug quotes and escapes it).
        let path = |p: Option<&Path>| match p {
            Some(p) => format!("Some({:?})", p.display().to_string()),
            None => "None".to_string(),
        };
        let binaries = format!(
            "{rt}::KernelBinaries {{ library: {lib:?}, twin: {}, npu: {} }}",
            path(twin),
            path(npu)
        );
        for src in &self.sources {
            for k in &src.kernels {
                let _ = write!(
                    s,
                    r#"
/// Kernel `{k}` of `{src}` (launch with `{rt}::Device::launch_kernel`).
#[allow(non_upper_case_globals)]
pub static r#{k}: {rt}::Kernel = {{
    extern "C" {{
        fn asc_twin_entry_{k}(block: *mut u8);
        fn asc_twin_sig_{k}(params: *mut *const {rt}::ParamInfo) -> u32;
    }}
    // SAFETY: both symbols are what ASC_TWIN_KERNEL({k}) generated for this kernel.
    unsafe {{ {rt}::Kernel::from_trampoline("{k}", asc_twin_entry_{k}, asc_twin_sig_{k}) }}
        .with_binaries(&{binaries})
}};
"#,
                    src = src.path.display().to_string().replace('\\', "/"),
                );
            }
        }
        s
    }

    /// The device binary of library `lib` that [`Build::npu`] links in `dir` (the `.npu`
    /// directory under the output directory): one ELF with every kernel, for
    /// `aclrtBinaryLoadFromFile`.
    pub fn npu_binary_path(dir: impl AsRef<Path>, lib: &str) -> PathBuf {
        dir.as_ref().join(format!("{lib}.npu.o"))
    }

    /// UNTESTED (no CANN here): compiles every source with bisheng for the AIV cores alone
    /// (`--cce-aicore-only`: a device object, no host stubs), with overflow recording off (with
    /// it on, a kernel expects a hidden trailing 8-byte argument that the ACL backend does not
    /// pass) and HCCL's stack sizes, then links the objects into one device ELF with the
    /// toolkit's `ld.lld -m aicorelinux` ([`Build::npu_binary_path`]). The flags are those
    /// HCCL's own AIV kernel build and its custom-operator example use.
    fn build_npu(
        &self,
        home: &Path,
        dir: &Path,
        includes: &[PathBuf],
        lib: &str,
    ) -> Result<(), Error> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
        let bin = home.join("compiler/ccec_compiler/bin");
        let bisheng = bin.join("bisheng");
        let mut objects = Vec::new();
        for (i, s) in self.sources.iter().enumerate() {
            let stem = s
                .path
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_default();
            let obj = dir.join(format!("{i}_{}.o", sanitize(&stem)));
            let mut cmd = std::process::Command::new(&bisheng);
            cmd.args([
                "-xcce",
                "--cce-aicore-arch=dav-c220-vec",
                "--cce-aicore-only",
                "-O2",
                "-std=c++17",
                "-c",
                "-mllvm",
                "-cce-aicore-record-overflow=false",
                "-mllvm",
                "-cce-aicore-function-stack-size=0x8000",
                "-mllvm",
                "-cce-aicore-stack-size=0x8000",
            ])
            .arg(format!("-I{}", home.join("include").display()))
            .arg(format!(
                "-I{}",
                home.join("compiler/tikcpp/tikcfw").display()
            ));
            // The twin's headers stand in for CANN's: never on bisheng's path.
            for inc in includes.iter().skip(1) {
                cmd.arg(format!("-I{}", inc.display()));
            }
            for (k, v) in &self.defines {
                cmd.arg(match v {
                    Some(v) => format!("-D{k}={v}"),
                    None => format!("-D{k}"),
                });
            }
            // The bisheng option that turns automatic synchronisation on (its docs list it as
            // enabling it; without it, assumed off).
            if self.auto_sync {
                cmd.arg("--cce-auto-sync");
            }
            let status = cmd
                .arg(&s.path)
                .arg("-o")
                .arg(&obj)
                .status()
                .map_err(|e| Error::Npu(format!("cannot run {}: {e}", bisheng.display())))?;
            if !status.success() {
                return Err(Error::Npu(format!("failed on {}", s.path.display())));
            }
            objects.push(obj);
        }
        let out = Build::npu_binary_path(dir, lib);
        let lld = bin.join("ld.lld");
        let status = std::process::Command::new(&lld)
            .args(["-m", "aicorelinux", "-Ttext=0", "-static"])
            .args(&objects)
            .arg("-o")
            .arg(&out)
            .status()
            .map_err(|e| Error::Npu(format!("cannot run {}: {e}", lld.display())))?;
        if !status.success() {
            return Err(Error::Npu(format!("linking {} failed", out.display())));
        }
        Ok(())
    }
}

/// Links the static library `lib` in `out` into the shared object acl-twin loads.
fn link_twin_binary(b: &cc::Build, out: &Path, lib: &str) -> Result<(), Error> {
    let so = Build::twin_binary_path(out, lib);
    let archive = out.join(format!("lib{lib}.a"));
    let tool = b
        .try_get_compiler()
        .map_err(|e| Error::Compile(e.to_string()))?;
    let mut cmd = tool.to_command();
    cmd.arg("-shared")
        .arg("-o")
        .arg(&so)
        .arg("-Wl,--whole-archive")
        .arg(&archive)
        .arg("-Wl,--no-whole-archive");
    let output = cmd
        .output()
        .map_err(|e| Error::Compile(format!("running {cmd:?}: {e}")))?;
    if !output.status.success() {
        return Err(Error::Compile(format!(
            "linking {}: {}",
            so.display(),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(())
}

/// The generated translation unit: the kernel source itself, then its trampolines.
fn translation_unit(source: &Path, kernels: &[String]) -> String {
    let p = source
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let mut s = format!(
        "// Generated by ascendc-build: {p} with the twin's launch trampolines of its kernels.\n#include \"{p}\"\n#include \"asc_twin_launch.h\"\n"
    );
    for k in kernels {
        let _ = writeln!(s, "ASC_TWIN_KERNEL({k})");
    }
    s
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), Error> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| Error::Io(path.to_path_buf(), e))
}

fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn host_triple() -> String {
    std::env::var("TARGET").unwrap_or_else(|_| {
        let arch = std::env::consts::ARCH;
        match std::env::consts::OS {
            "linux" => format!("{arch}-unknown-linux-gnu"),
            "macos" => format!("{arch}-apple-darwin"),
            os => format!("{arch}-unknown-{os}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_c_identifiers() {
        assert!(is_c_identifier("aiv_all_reduce_910b_bigdata"));
        assert!(is_c_identifier("_k1"));
        assert!(!is_c_identifier("1k"));
        assert!(!is_c_identifier("my-kernel"));
        assert!(!is_c_identifier(""));
        let dir = std::env::temp_dir().join(format!("ascendc-build-test-{}", std::process::id()));
        let e = Build::new()
            .out_dir(&dir)
            .kernels("k.cpp", &["bad name"])
            .try_compile("lib")
            .unwrap_err();
        assert!(e.to_string().contains("`bad name`"), "{e}");
        let e = Build::new()
            .out_dir(&dir)
            .kernels("a.cpp", &["k"])
            .kernels("b.cpp", &["k"])
            .try_compile("lib")
            .unwrap_err();
        assert!(e.to_string().contains("named twice"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_translation_unit_includes_the_source_then_the_trampolines() {
        let tu = translation_unit(Path::new("/k/add.cpp"), &["add".into(), "sub".into()]);
        assert_eq!(
            tu.lines().skip(1).collect::<Vec<_>>(),
            [
                "#include \"/k/add.cpp\"",
                "#include \"asc_twin_launch.h\"",
                "ASC_TWIN_KERNEL(add)",
                "ASC_TWIN_KERNEL(sub)"
            ]
        );
    }
}
