//! # ascendc-sys: the AscendC platform for aiv-comm
//!
//! Two halves:
//!
//! * `include/`: the subset of the AscendC API that aiv-comm's device code uses
//!   (`kernel_operator.h`), with AscendC's names and signatures, for a host C++ compiler. Kernel
//!   sources compiled against it also compile against the real AscendC headers.
//! * this crate: the Rust runtime of the **CPU twin** of an Atlas A2 AIV device. It owns simulated
//!   devices (ranks) with bounds-known GM, AIV cores with 192 KB Unified Buffers, blocks as
//!   coroutines on persistent worker threads, batch launches, atomics per dtype, the exact
//!   DataCopy / DataCopyPad rules, a scalar data-cache model and an intra-core pipe-hazard
//!   checker. Misuse becomes a [`KernelFault`] naming kernel, rank, block and operation.
//!
//! A kernel is a C function `void name(uint8_t *args)` (AscendC: `extern "C" __global__ __aicore__
//! void name(GM_ADDR args)`), compiled against `include/` and linked into the program;
//! [`Device::launch`] runs it on `block_dim` co-resident blocks.
//!
//! Blocks run as stackful coroutines on one worker thread per host CPU. Waiting is cheap: a
//! block that keeps reading an unchanged GM address (a flag poll) suspends until that address is
//! written. A watchdog reports launches in which every running block is parked
//! ([`FaultKind::Deadlock`]).
//!
//! The include directory is exported to dependent build scripts as `DEP_ASCENDC_TWIN_INCLUDE`.

#![warn(missing_docs)]

mod atomics;
mod device;
mod error;
mod ffi;
mod gm;
mod hazard;
mod knobs;
mod lazy;
mod padded;
mod race;
mod sched;

pub use atomics::{AtomicOp, AtomicType};
pub use device::{
    abort_group, Device, DeviceConfig, GmBuffer, KernelFn, DEFAULT_CORES, SYSTEM_CYCLE_HZ, UB_BYTES,
};
pub use error::{FaultKind, KernelFault, TwinError};
pub use ffi::POISON;
pub use gm::{gm_traffic, GmTraffic};
pub use knobs::{
    set_hazard_check, set_jitter_us, set_lazy_staging, set_race_check, set_watchdog,
    DEFAULT_WATCHDOG,
};
pub use sched::{in_host_task, spawn_host_task, HostSignal};

/// Path of the twin's AscendC headers (`kernel_operator.h`, `asc_twin_abi.h`).
pub const INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

/// Converts `GetSystemCycle` cycles to microseconds (A2: 50 cycles per µs).
pub fn cycles_to_us(cycles: u64) -> u64 {
    cycles / (SYSTEM_CYCLE_HZ / 1_000_000)
}
