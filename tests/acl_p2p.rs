//! The p2p suite (`suites/p2p.rs`) through aiv-comm's ACL backend over acl-twin: the path an
//! NPU takes, with the twin behind the ACL API.

mod common;

const BACKEND: common::Backend = common::Backend::AclTwin;

#[path = "suites/p2p.rs"]
mod p2p;
