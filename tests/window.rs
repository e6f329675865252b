//! The window suite (`suites/window.rs`) on the CPU twin. `acl_window.rs` runs it through the ACL
//! backend.

mod common;

const BACKEND: common::Backend = common::Backend::Twin;

#[path = "suites/window.rs"]
mod window;
