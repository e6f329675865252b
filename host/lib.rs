//! aiv-comm (work in progress)
/// The kernels' C ABI (generated from kernel/launch.h).
pub mod ffi;
