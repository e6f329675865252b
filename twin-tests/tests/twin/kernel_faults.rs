//! A user's kernel that faults, as the host reports it on each backend: a backend-neutral
//! `Error::Fault` naming the kernel, rank, block and kind on the twin, and the runtime's own text
//! through ACL (on acl-twin). The kernel is `aiv_args_probe`, built here as a user's kernel is.

use aiv_comm::backend::acl::AclBackend;
use aiv_comm::{BufferAccess, Communicator, Config, DeviceBuffer, Error, FaultKind, World};
use twin_tests::kernels;

/// acl-twin's ACL runtime, from the `deps/` directory of this test binary (where Cargo builds
/// it: this crate's tests depend on acl-twin).
fn acl_twin() -> ascendc_sys::Acl {
    let exe = std::env::current_exe().expect("test binary path");
    let lib = exe.parent().expect("deps/").join("libascendcl.so");
    ascendc_sys::Acl::open(lib.to_str().expect("a UTF-8 path"), &[])
        .unwrap_or_else(|e| panic!("{e} (build acl-twin: cargo build -p acl-twin --tests)"))
}

/// Enqueues `aiv_args_probe` on `c`'s stream with an output of 64 bytes: the kernel writes 128
/// bytes per block there, so its first block faults. Returns that output, for the caller to hold.
fn launch_overrun(c: &Communicator) -> DeviceBuffer {
    let out = c.alloc(64).unwrap();
    let a = super::kernel_args::probe_args(out.gm(0), out.gm(0));
    // SAFETY: the twin (directly, or behind acl-twin) checks every GM access against the live
    // allocations and stops the block at the first one outside them, so the overrun is
    // reported, not performed.
    unsafe {
        c.stream()
            .launch(&kernels::aiv_args_probe, 1, a, &[BufferAccess::Write(&out)])
            .unwrap()
    };
    out
}

#[test]
fn a_kernel_fault_is_a_backend_neutral_error_naming_kernel_rank_block_and_kind() {
    let w = World::sim(1).unwrap();
    let c = &w.comms()[0];
    let _out = launch_overrun(c);
    match c.synchronize() {
        Err(Error::Fault(f)) => {
            assert_eq!(f.kind, FaultKind::OutOfBounds, "{f}");
            assert_eq!(
                (f.kernel.as_str(), f.rank, f.block),
                ("aiv_args_probe", 0, Some(0))
            );
            assert!(!f.op.is_empty() && f.to_string().contains("outside"), "{f}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_kernel_fault_through_acl_is_a_fault_naming_the_kernel_with_the_runtimes_text() {
    let w = World::with_backend(
        1,
        Config::default(),
        AclBackend::with_runtime(acl_twin(), 1).unwrap(),
    )
    .unwrap();
    let c = &w.comms()[0];
    let _out = launch_overrun(c);
    match c.synchronize() {
        Err(Error::Fault(f)) => {
            assert_eq!((f.kernel.as_str(), f.rank), ("aiv_args_probe", 0));
            assert_eq!(f.kind, FaultKind::Exception);
            // ACL's status code and acl-twin's aclGetRecentErrMsg text, the twin's words in it.
            assert!(
                f.detail.contains("507035") && f.detail.contains("outside"),
                "{f}"
            );
        }
        other => panic!("{other:?}"),
    }
}
