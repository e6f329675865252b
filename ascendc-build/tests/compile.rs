//! What users see when they build their kernels: warnings shown but not fatal (unless asked),
//! and AscendC APIs the twin does not model (or the NPU compiler rejects) refused at compile
//! time with a message that names them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("ascendc-build-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn host() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "macos" => format!("{arch}-apple-darwin"),
        os => format!("{arch}-unknown-{os}-gnu"),
    }
}

fn compiler() -> cc::Tool {
    cc::Build::new()
        .cpp(true)
        .target(&host())
        .host(&host())
        .opt_level(0)
        .cargo_metadata(false)
        .get_compiler()
}

/// Compiles `body` (after `#include "kernel_operator.h"`) for syntax only; returns stderr.
fn check(body: &str) -> Result<(), String> {
    let dir = scratch("check");
    let src = dir.join("k.cpp");
    std::fs::write(
        &src,
        format!("#include \"kernel_operator.h\"\nusing namespace AscendC;\n{body}\n"),
    )
    .unwrap();
    let out = Command::new(compiler().path())
        .args(["-std=c++17", "-fsyntax-only"])
        .arg(format!(
            "-I{}",
            ascendc_build::twin_include_dir().unwrap().display()
        ))
        .arg(&src)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn refused(body: &str, says: &str) {
    let err = check(body).expect_err("must not compile");
    assert!(err.contains(says), "expected `{says}` in:\n{err}");
}

#[test]
fn apis_the_twin_does_not_model_are_refused_by_name() {
    check("extern \"C\" __global__ __aicore__ void k(GM_ADDR x) { (void)x; }").unwrap();
    refused(
        "void k() { LocalTensor<float> a; Mmad(a, a, a, 0); }",
        "Mmad is a cube-unit (AIC) API",
    );
    refused(
        "void k() { TQue<TPosition::A1, 1> q; (void)q; }",
        "cube-unit (AIC) position",
    );
    refused(
        "void k() { TQue<TPosition::VECCALC, 1> q; (void)q; }",
        "use TBuf<TPosition::VECCALC>",
    );
    refused(
        "void k() { LocalMemAllocator<Hardware::L1> a; (void)a; }",
        "only Hardware::UB exists on an AIV core",
    );
    refused(
        "void k() { CrossCoreSetFlag<0, PIPE_S>(1); }",
        "cannot be PIPE_S or PIPE_ALL",
    );
}

#[test]
fn what_the_npu_compiler_rejects_is_rejected_here_too() {
    // printf takes no double on the NPU (3.14 is a double literal).
    refused(
        "void k() { AscendC::printf(\"%f\", 3.14); }",
        "does not take double",
    );
    check("void k() { AscendC::printf(\"%f\", 3.14f); }").unwrap();
    // hifloat8_t does not exist on Atlas A2.
    refused(
        "void k() { hifloat8_t h; (void)h; }",
        "hifloat8_t is not available on Atlas A2",
    );
    // The CCE builtins take an event_t, not an int.
    refused("void k() { set_flag(PIPE_MTE2, PIPE_V, 0); }", "event_t");
    check("void k() { set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0); }").unwrap();
}

#[test]
fn vector_types_atlas_a2_lacks_are_compile_errors() {
    let k = |body: &str| {
        format!("void k(LocalTensor<T> d, LocalTensor<T> a, LocalTensor<T> b) {{ {body} }}")
    };
    // The supported types compile...
    check(&format!(
        "using T = half;\n{}",
        k("Add(d, a, b, 64); Exp(d, a, 64); d = a / b;")
    ))
    .unwrap();
    check(&format!(
        "using T = int32_t;\n{}",
        k("Mul(d, a, b, 64); Relu(d, a, 64); d = a + b;")
    ))
    .unwrap();
    check("void k(LocalTensor<half> h, LocalTensor<float> f) { Cast(h, f, RoundMode::CAST_ODD, 64); }").unwrap();
    // ... and the others are refused, naming the API and what it supports.
    refused(
        &format!("using T = uint8_t;\n{}", k("Add(d, a, b, 64);")),
        "Add on Atlas A2 supports",
    );
    refused(
        &format!("using T = int32_t;\n{}", k("Div(d, a, b, 64);")),
        "Div on Atlas A2 supports half and float",
    );
    refused(
        &format!("using T = int16_t;\n{}", k("Relu(d, a, 64);")),
        "Relu on Atlas A2 supports",
    );
    refused(
        &format!("using T = bfloat16_t;\n{}", k("Exp(d, a, 64);")),
        "Exp on Atlas A2 supports",
    );
    refused(
        &format!("using T = float;\n{}", k("And(d, a, b, 64);")),
        "And on Atlas A2 supports",
    );
    refused(
        &format!("using T = int32_t;\n{}", k("d = a / b;")),
        "operator/ (Div) on Atlas A2",
    );
    refused(
        "void k(LocalTensor<bfloat16_t> d, LocalTensor<half> s) { Cast(d, s, RoundMode::CAST_RINT, 64); }",
        "does not exist on Atlas A2",
    );
    refused(
        "void k(LocalTensor<uint8_t> d, LocalTensor<int16_t> a) { Compare(d, a, a, CMPMODE::EQ, 128u); }",
        "Compare on Atlas A2",
    );
    refused(
        "void k(LocalTensor<int32_t> d, LocalTensor<int32_t> s, LocalTensor<int32_t> w) { ReduceSum(d, s, w, 64); }",
        "ReduceSum on Atlas A2 supports half and float",
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_users_warnings_are_shown_not_fatal_unless_asked() {
    let dir = scratch("warn");
    let src = write(
        &dir,
        "warn.cpp",
        "#include \"kernel_operator.h\"\nextern \"C\" __global__ __aicore__ void warn_kernel(GM_ADDR x, uint32_t n)\n{ int unused = 0; (void)x; (void)n; }\n",
    );
    let rs = ascendc_build::Build::new()
        .out_dir(&dir)
        .kernels(&src, &["warn_kernel"])
        .try_compile("warn_lib")
        .unwrap();
    let text = std::fs::read_to_string(rs).unwrap();
    assert!(text.contains("pub static r#warn_kernel"), "{text}");
    assert!(text.contains("asc_twin_entry_warn_kernel"), "{text}");
    assert!(dir.join("libwarn_lib.a").is_file());
    let e = ascendc_build::Build::new()
        .out_dir(&dir)
        .kernels(&src, &["warn_kernel"])
        .warnings_into_errors(true)
        .try_compile("warn_lib2")
        .unwrap_err();
    assert!(matches!(e, ascendc_build::Error::Compile(_)), "{e}");
    // A kernel name the source does not define is a compile error naming it.
    let e = ascendc_build::Build::new()
        .out_dir(&dir)
        .kernels(&src, &["no_such_kernel"])
        .try_compile("warn_lib3")
        .unwrap_err();
    assert!(matches!(e, ascendc_build::Error::Compile(_)), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
