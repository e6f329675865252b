//! The twin's tests, in one binary: linking each file as its own test binary (each with the twin
//! inside) cost minutes of CI and gigabytes of disk. Run one part with a filter on its module
//! path, e.g. `cargo test --test twin sort::`.
//!
//! Tests that need a process to themselves stay apart, as files of `tests/`:
//! `twin_parking.rs` and `cross_sync_parking.rs` (they measure the process's CPU time, and the
//! watchdog's view of an idle process), and `samples.rs` (ignored: it needs an asc-devkit
//! checkout).

mod api;
mod buf_pool;
mod checked_launches;
mod cross_sync;
mod fairness;
mod group_barrier;
mod init_output;
mod inline_launch;
mod isolation;
mod kernel_args;
mod kernel_faults;
mod list_tensor;
mod programs;
mod rearrange;
mod same_bytes;
mod slice;
mod soft_sync;
mod sort;
mod twin_rules;
mod ub_ops;
mod user_launches;
mod vector;
