//! The p2p suite (`suites/p2p.rs`) on the CPU twin. `acl_p2p.rs` runs it through the ACL
//! backend.

mod common;

const BACKEND: common::Backend = common::Backend::Twin;

#[path = "suites/p2p.rs"]
mod p2p;
