//! The collectives suite (`suites/collectives.rs`) on the CPU twin. `acl_collectives.rs` runs it through the ACL
//! backend.

mod common;

const BACKEND: common::Backend = common::Backend::Twin;

#[path = "suites/collectives.rs"]
mod collectives;
