//! The shared suites (`suites/`) through aiv-comm's ACL backend over acl-twin: the path an NPU
//! takes, with the twin behind the ACL API. `twin.rs` runs them on the twin directly.

const BACKEND: crate::common::Backend = crate::common::Backend::AclTwin;

#[path = "suites/agreement.rs"]
mod agreement;
#[path = "suites/collectives.rs"]
mod collectives;
#[path = "suites/lifetimes.rs"]
mod lifetimes;
#[path = "suites/p2p.rs"]
mod p2p;
#[path = "suites/window.rs"]
mod window;
