//! The whole build recipe for an AscendC kernel on the twin: name the source and its kernels.
fn main() {
    ascendc_build::Build::new()
        .kernels("kernels/accumulate.cpp", &["accumulate_custom"])
        .compile("example_kernels");
}
