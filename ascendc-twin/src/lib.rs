//! # ascendc-twin: the AscendC platform for aiv-comm
//!
//! Two halves:
//!
//! * `include/`: the AscendC API for a host C++ compiler (`kernel_operator.h`), with AscendC's
//!   names and signatures, so that kernel sources written for the real toolkit compile for the
//!   twin unchanged.
//! * this crate: the Rust runtime of the **CPU twin** of an Atlas A2 AIV device. A [`Twin`] owns
//!   simulated devices (ranks) with bounds-known GM, AIV cores with 192 KB Unified Buffers,
//!   blocks as coroutines on the twin's own worker threads, batch launches, atomics per dtype,
//!   the exact DataCopy / DataCopyPad rules, a scalar data-cache model, an intra-core
//!   pipe-hazard checker and a GM race checker. Misuse becomes a [`KernelFault`] naming kernel,
//!   rank, block and operation.
//!
//! ```
//! use ascendc_twin::{DeviceConfig, Twin};
//! let twin = Twin::new();
//! let dev = twin.device(0, DeviceConfig::default()).unwrap();
//! let buf = dev.alloc(64).unwrap();
//! buf.write(0, &[7; 64]).unwrap();
//! let mut out = [0u8; 64];
//! buf.read(0, &mut out).unwrap();
//! assert_eq!(out, [7; 64]);
//! ```
//!
//! A kernel is a C function `void name(uint8_t *args)` (AscendC: `extern "C" __global__ __aicore__
//! void name(GM_ADDR args)`), compiled against `include/` and linked into the program;
//! [`Device::launch`] runs it on `block_dim` co-resident blocks.
//!
//! Twins are isolated: each has its own memory, knobs, threads and watchdog, all freed with it.
//! Waiting is cheap: a block that keeps reading an unchanged GM address (a flag poll) suspends
//! until that address is written; a block that runs for a time slice while others wait gives way
//! at its next twin call. The watchdog reports live blocks that stop making progress
//! ([`FaultKind::Deadlock`], [`FaultKind::Livelock`]).
//!
//! The include directory is exported to dependent build scripts as `DEP_ASCENDC_TWIN_INCLUDE`.

#![warn(missing_docs)]

mod abi;
mod atomics;
mod block;
mod census;
mod console;
mod cross;
mod dcache;
mod device;
mod dma;
mod error;
mod guard;
mod hazard;
mod kernel;
mod knobs;
mod launch;
mod lazy;
mod lot;
mod mem;
mod meta;
mod padded;
mod pipes;
mod poll;
mod race;
mod sched;
mod shared;
mod sync;
#[cfg(test)]
mod test_rng;
mod traffic;
mod twin;

pub use atomics::{AtomicOp, AtomicType};
pub use census::{Census, RankCensus};
pub use device::{
    Device, DeviceConfig, GmBuffer, KernelFn, DEFAULT_CORES, MAX_UB_BYTES, SYSTEM_CYCLE_HZ,
    UB_BYTES, UB_RESERVED_BYTES,
};
pub use dma::POISON;
pub use error::{FaultKind, KernelFault, TwinError};
pub use kernel::{ArgBlock, GmAddr, Kernel, KernelBinaries, ParamInfo, SignatureFn};
pub use knobs::{TwinConfig, DEFAULT_WATCHDOG, STREAM_AFTER_MAX};
pub use sched::{in_host_task, HostSignal};
pub use shared::{
    Exchange, Grant, Space, DEFAULT_WINDOW_BYTES, GRANTS, GRANT_PIDS, MAX_PROCS, NODE_WINDOW_BYTES,
};
pub use traffic::{GmTraffic, TRACKED_CORES, TRACKED_DEVICES};
pub use twin::{CheckedLaunches, Twin};

/// Path of the twin's AscendC headers (`kernel_operator.h`, `asc_twin_abi.h`).
pub const INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

/// Converts `GetSystemCycle` cycles to microseconds (A2: 50 cycles per µs).
pub fn cycles_to_us(cycles: u64) -> u64 {
    cycles / (SYSTEM_CYCLE_HZ / 1_000_000)
}
