//! Whole AscendC programs (a host `main` and its kernels in `.asc` sources, launched with
//! `<<<>>>`) built into host executables that run their kernels on the twin, through acl-twin's
//! ACL runtime. The `asc-twin-cc` command is a front end of [`Program`].

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{chevrons_to_calls, Error, A2_VECTOR_DEFINES};

/// An AscendC program to build for the twin: its sources are compiled by the host C++ compiler
/// (`CXX`, else `c++`) against the twin's AscendC and ACL headers, with each `<<<>>>` launch
/// rewritten to a call ([`chevrons_to_calls`]), the macros of an Atlas A2 vector core, the
/// compiler's automatic synchronisation on (as AscendC projects build), C++17 and `-O2`
/// unless the flags say otherwise, and linked with acl-twin's `libascendcl.so`.
///
/// ```no_run
/// ascendc_build::Program::new()
///     .source("add.asc")
///     .define("SCENARIO_NUM", Some("1"))
///     .acl_lib_dir("target/debug")
///     .output("demo")
///     .build()
///     .unwrap();
/// ```
#[derive(Default)]
pub struct Program {
    sources: Vec<PathBuf>,
    flags: Vec<String>,
    acl_lib_dir: Option<PathBuf>,
    twin_include: Option<PathBuf>,
    output: Option<PathBuf>,
}

impl Program {
    /// A program with nothing in it yet.
    pub fn new() -> Program {
        Program::default()
    }

    /// Adds a C++ source (`.asc`, `.cpp`, ...): its `<<<>>>` launches are rewritten.
    pub fn source(&mut self, path: impl AsRef<Path>) -> &mut Program {
        self.sources.push(path.as_ref().to_path_buf());
        self
    }

    /// Defines a macro (`-DNAME` or `-DNAME=VALUE`).
    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut Program {
        self.flags.push(match value {
            Some(v) => format!("-D{name}={v}"),
            None => format!("-D{name}"),
        });
        self
    }

    /// Adds an include directory.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Program {
        self.flags.push(format!("-I{}", dir.as_ref().display()));
        self
    }

    /// Passes a flag to the C++ compiler (and linker) as it is: an object or a library, `-O0`,
    /// `-std=c++20`, ...
    pub fn flag(&mut self, flag: &str) -> &mut Program {
        self.flags.push(flag.to_string());
        self
    }

    /// Where acl-twin's `libascendcl.so` is (default: `ACL_TWIN_LIB_DIR`).
    pub fn acl_lib_dir(&mut self, dir: impl AsRef<Path>) -> &mut Program {
        self.acl_lib_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where the twin's headers are (default: [`crate::twin_include_dir`]).
    pub fn twin_include(&mut self, dir: impl AsRef<Path>) -> &mut Program {
        self.twin_include = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The executable to write (default: `a.out`).
    pub fn output(&mut self, path: impl AsRef<Path>) -> &mut Program {
        self.output = Some(path.as_ref().to_path_buf());
        self
    }

    /// Builds the program; a compiler failure's diagnostics are on stderr.
    pub fn build(&self) -> Result<(), Error> {
        if self.sources.is_empty() {
            return Err(Error::BadInput(
                "a program needs at least one source".into(),
            ));
        }
        let twin_include = match &self.twin_include {
            Some(d) => d.clone(),
            None => crate::twin_include_dir()?,
        };
        let acl_dir = match (&self.acl_lib_dir, std::env::var_os("ACL_TWIN_LIB_DIR")) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => PathBuf::from(d),
            (None, None) => {
                return Err(Error::BadInput(
                    "where is acl-twin's libascendcl.so? Call Program::acl_lib_dir or set ACL_TWIN_LIB_DIR".into(),
                ))
            }
        };
        if !acl_dir.join("libascendcl.so").is_file() {
            return Err(Error::BadInput(format!(
                "acl-twin's libascendcl.so is not in {} (build it with `cargo build -p acl-twin`)",
                acl_dir.display()
            )));
        }
        let work = tempdir()?;
        let result = self.compile(&twin_include, &acl_dir, &work);
        let _ = std::fs::remove_dir_all(&work);
        result
    }

    fn compile(&self, twin_include: &Path, acl_dir: &Path, work: &Path) -> Result<(), Error> {
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let mut cmd = Command::new(&cxx);
        cmd.arg("-xc++");
        if !self.flags.iter().any(|f| f.starts_with("-std=")) {
            cmd.arg("-std=c++17");
        }
        if !self.flags.iter().any(|f| f.starts_with("-O")) {
            cmd.arg("-O2");
        }
        cmd.args([
            "-fno-strict-aliasing",
            "-fstack-clash-protection",
            "-DASC_TWIN_AUTO_SYNC=1",
        ]);
        for (k, v) in A2_VECTOR_DEFINES {
            cmd.arg(match v {
                Some(v) => format!("-D{k}={v}"),
                None => format!("-D{k}"),
            });
        }
        cmd.arg(format!("-I{}", twin_include.display()));
        cmd.args(["-include", "asc_twin_chevron.h"]);
        for (i, src) in self.sources.iter().enumerate() {
            let abs = std::fs::canonicalize(src)
                .map_err(|e| Error::BadInput(format!("{}: {e}", src.display())))?;
            let text = std::fs::read_to_string(&abs)
                .map_err(|e| Error::BadInput(format!("{}: {e}", abs.display())))?;
            let rewritten = chevrons_to_calls(&text)
                .map_err(|e| Error::BadInput(format!("{}: {e}", abs.display())))?;
            let tu = work.join(format!("{i}.cpp"));
            std::fs::write(&tu, format!("#line 1 \"{}\"\n{rewritten}", abs.display()))
                .map_err(|e| Error::Io(tu.clone(), e))?;
            // Quoted includes are looked up next to the source, as the source expects.
            if let Some(dir) = abs.parent() {
                cmd.arg(format!("-iquote{}", dir.display()));
            }
            cmd.arg(&tu);
        }
        // Flags after the sources: objects and libraries are not C++.
        cmd.arg("-xnone");
        cmd.args(&self.flags);
        cmd.arg(format!("-L{}", acl_dir.display()))
            .arg("-lascendcl")
            // RPATH, not RUNPATH: the program loads the libascendcl.so it was linked with, even
            // where LD_LIBRARY_PATH (cargo test sets one) names another.
            .arg(format!(
                "-Wl,--disable-new-dtags,-rpath,{}",
                acl_dir.display()
            ))
            .arg("-pthread")
            .arg("-o")
            .arg(self.output.as_deref().unwrap_or(Path::new("a.out")));
        let status = cmd
            .status()
            .map_err(|e| Error::Compile(format!("cannot run {cxx}: {e}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Compile(format!("{cxx} failed ({status})")))
        }
    }
}

/// A fresh private directory for the rewritten sources.
fn tempdir() -> Result<PathBuf, Error> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("asc-twin-cc.{}.{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::Io(dir.clone(), e))?;
    Ok(dir)
}
