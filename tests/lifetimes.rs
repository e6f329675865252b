//! The lifetimes suite (`suites/lifetimes.rs`) on the CPU twin. `acl_lifetimes.rs` runs it through the ACL
//! backend.

mod common;

const BACKEND: common::Backend = common::Backend::Twin;

#[path = "suites/lifetimes.rs"]
mod lifetimes;
