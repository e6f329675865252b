//! The shared suites (`suites/`) on the CPU twin. `acl.rs` runs the same suites through the ACL
//! backend.

const BACKEND: crate::common::Backend = crate::common::Backend::Twin;

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
