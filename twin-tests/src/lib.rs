//! Tests of the twin's AscendC API and its checkers, with the kernels they launch.
//!
//! Nothing here ships: the kernels in `kernels/` exist to pin what the twin's AscendC headers
//! compute and report (and, for the self-tests that were aiv-comm's, what its soft-sync
//! primitives and its launch paths do), and the tests in `tests/` launch them and compare with a
//! host reference. A kernel source names its kernels on a `// kernels: name ...` line;
//! `build.rs` compiles every `kernels/*.cpp` into one library.

#![warn(missing_docs)]

pub mod args;
pub mod util;

/// The kernels of `kernels/*.cpp`, one `ascendc_twin::Kernel` static each.
pub mod kernels {
    ascendc_twin::include_kernels!("twin_tests");
    // The sources built without the compiler's automatic synchronisation (build.rs).
    ascendc_twin::include_kernels!("twin_tests_manual_sync");
}
