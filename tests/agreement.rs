//! The agreement suite (`suites/agreement.rs`) on the CPU twin. `acl_agreement.rs` runs it through the ACL
//! backend.

mod common;

const BACKEND: common::Backend = common::Backend::Twin;

#[path = "suites/agreement.rs"]
mod agreement;
