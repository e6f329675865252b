//! aiv-comm's integration tests, in one binary: linking each file as its own test binary (each
//! with the twin inside) cost minutes of CI and gigabytes of disk. Run one part with a filter on
//! its module path, e.g. `cargo test --test integration push::`.
//!
//! Tests that need a process to themselves stay apart, as files of `tests/`: `leaks.rs` (the
//! resident set of its process), `processes.rs` and `bootstrap.rs` (they start copies of their own
//! binary as ranks, selected by test name).

// Each shared suite is included once per backend (twin.rs, acl.rs), on purpose: a module per
// backend, each naming its own `BACKEND`.
#![allow(clippy::duplicate_mod)]

#[path = "../common/mod.rs"]
mod common;

mod acl;
mod acl_backend;
mod aiv_perf;
mod architecture;
mod backends;
mod benchmarks_md;
mod census;
mod collective_set;
mod copy;
mod doc_links;
mod hccl_kernels;
mod push;
mod reliability;
mod traffic;
mod twin;
mod typed;
