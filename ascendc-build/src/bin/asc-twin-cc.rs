//! `asc-twin-cc`: builds an AscendC program (host `main` and kernels in `.asc` sources, as
//! AscendC's own compiler takes them) into a host executable that runs its kernels on the twin,
//! through acl-twin's ACL runtime (`ascendc_build::Program`).
//!
//! ```text
//! asc-twin-cc [--npu-arch=dav-2201] [-o OUT] [-I DIR] [-D NAME[=VALUE]] [C++ flags] SOURCE...
//! ```
//!
//! Sources are the arguments ending in `.asc`, `.cpp`, `.cc` or `.cxx`; every other argument goes
//! to the C++ compiler as it is. acl-twin's `libascendcl.so` is taken from `ACL_TWIN_LIB_DIR`,
//! else from this program's own directory, where `cargo build` puts both.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str =
    "usage: asc-twin-cc [--npu-arch=dav-2201] [-o OUT] [-I DIR] [-D NAME[=VALUE]] [C++ flags] SOURCE...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match program(&args).and_then(|p| p.build().map_err(|e| e.to_string())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("asc-twin-cc: {e}");
            ExitCode::from(1)
        }
    }
}

fn program(args: &[String]) -> Result<ascendc_build::Program, String> {
    let mut p = ascendc_build::Program::new();
    let mut sources = 0;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--npu-arch" || a.starts_with("--npu-arch=") {
            let arch = match a.strip_prefix("--npu-arch=") {
                Some(v) => v.to_string(),
                None => it.next().cloned().unwrap_or_default(),
            };
            if arch != "dav-2201" {
                return Err(format!(
                    "--npu-arch {arch}: the twin models the vector cores of Atlas A2 (dav-2201) only"
                ));
            }
        } else if a == "-o" {
            p.output(it.next().ok_or("-o needs a file name")?);
        } else if !a.starts_with('-')
            && matches!(
                Path::new(a).extension().and_then(|e| e.to_str()),
                Some("asc" | "cpp" | "cc" | "cxx")
            )
        {
            p.source(a);
            sources += 1;
        } else {
            p.flag(a);
        }
    }
    if sources == 0 {
        return Err(format!(
            "no source file (.asc, .cpp, .cc, .cxx) given\n{USAGE}"
        ));
    }
    if std::env::var_os("ACL_TWIN_LIB_DIR").is_none() {
        let own: PathBuf = std::env::current_exe()
            .map_err(|e| format!("cannot find this program's directory: {e}"))?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        p.acl_lib_dir(own);
    }
    Ok(p)
}
