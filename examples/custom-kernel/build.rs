//! The whole build recipe for AscendC kernels on the twin: name the sources and their kernels.
fn main() {
    ascendc_build::Build::new()
        .kernels("kernels/accumulate.cpp", &["accumulate_custom"])
        .kernels("kernels/fused_all_reduce.cpp", &["relu_scale_all_reduce"])
        .kernels("kernels/flag_handoff.cpp", &["flag_handoff"])
        .kernels("kernels/scalar_side.cpp", &["scalar_side"])
        .compile("example_kernels");
}
