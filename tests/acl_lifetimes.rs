//! The lifetimes suite (`suites/lifetimes.rs`) through aiv-comm's ACL backend over acl-twin: the path an
//! NPU takes, with the twin behind the ACL API.

mod common;

const BACKEND: common::Backend = common::Backend::AclTwin;

#[path = "suites/lifetimes.rs"]
mod lifetimes;
