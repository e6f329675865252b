//! The ACL backend's own logic, against acl-twin: the launch path each CANN version gets (and a
//! clear refusal where none), batch scheduling on every launch, the runtime's error text in
//! device errors, the same bits as the twin, and the backend a `World::new` picks.

use crate::common;

use std::time::Duration;

use aiv_comm::backend::acl::AclBackend;
use aiv_comm::{BackendChoice, Config, DataType, Error, ReduceOp, World};
use ascendc_sys::LaunchPath;

/// An AllReduce of 3000 elements on `w` (every rank's input distinct), the results by rank.
fn all_reduce(w: &World) -> Vec<Vec<f32>> {
    w.run(|c| -> aiv_comm::Result<Vec<f32>> {
        let input: Vec<f32> = (0..3000)
            .map(|i| (i as f32 * 0.37 + c.rank() as f32 * 1.3).sin())
            .collect();
        let x = c.alloc_from(&input)?;
        let y = c.alloc(3000 * 4)?;
        c.all_reduce(&x, &y, 3000, DataType::F32, ReduceOp::Sum)?;
        c.synchronize()?;
        y.to_vec::<f32>()
    })
    .into_iter()
    .map(|r| r.unwrap())
    .collect()
}

fn config() -> Config {
    Config {
        buffer_bytes: Some(8 << 10),
        exec_timeout: Some(Duration::from_secs(20)),
        deterministic: Some(true),
        ..Config::default()
    }
}

#[test]
fn a_program_gives_the_same_bits_on_the_twin_and_through_acl_on_either_launch_path() {
    let twin = all_reduce(&World::sim_with(4, config()).unwrap());
    // CANN 8.5+: host arguments.
    let b = AclBackend::with_runtime(common::acl_twin(), 4).unwrap();
    assert_eq!(b.launch_path(), LaunchPath::HostArgs);
    assert!(b.is_twin());
    let w = World::with_backend(4, config(), b).unwrap();
    assert_eq!(w.backend_name(), "acl");
    assert!(w.twin().is_none());
    let via_acl = all_reduce(&w);
    assert_eq!(twin, via_acl);
    // CANN 8.2-8.3: without the 8.5 launch, the argument builder.
    let acl =
        common::acl_twin_hiding(&["aclrtLaunchKernelWithHostArgs", "aclrtBinaryLoadFromData"]);
    let b = AclBackend::with_runtime(acl, 4).unwrap();
    assert_eq!(b.launch_path(), LaunchPath::ArgsBuilder);
    let via_builder = all_reduce(&World::with_backend(4, config(), b).unwrap());
    assert_eq!(twin, via_builder);
}

#[test]
fn the_description_names_the_soc_and_the_cann_version_the_runtime_reports() {
    let twin = all_reduce(&World::sim_with(2, config()).unwrap());
    let described = |hidden: &[&str]| {
        let b = AclBackend::with_runtime(common::acl_twin_hiding(hidden), 2).unwrap();
        let w = World::with_backend(2, config(), b).unwrap();
        // The backend works whatever the version calls say.
        assert_eq!(all_reduce(&w), twin, "{hidden:?}");
        w.backend_description()
    };
    let version = common::acl_twin_version();
    // CANN 8.5+: aclsysGetVersionStr; 8.2-8.3: the deprecated aclsysGetCANNVersion.
    for hidden in [&[][..], &["aclsysGetVersionStr"][..]] {
        let d = described(hidden);
        assert!(
            d.starts_with(&format!("ACL (Ascend910B-acl-twin, CANN {version}, ")),
            "{hidden:?}: {d}"
        );
    }
    // Neither: said, not an error.
    let d = described(&["aclsysGetVersionStr", "aclsysGetCANNVersion"]);
    assert!(
        d.starts_with("ACL (Ascend910B-acl-twin, CANN version unknown, "),
        "{d}"
    );
}

#[test]
fn a_runtime_without_a_needed_function_is_refused_naming_it_and_the_cann_version() {
    for (hidden, missing) in [
        (&["aclrtBinaryLoadFromFile"][..], "aclrtBinaryLoadFromFile"),
        (
            &["aclrtLaunchKernelWithHostArgs", "aclrtKernelArgsFinalize"][..],
            "aclrtKernelArgsFinalize",
        ),
    ] {
        match AclBackend::with_runtime(common::acl_twin_hiding(hidden), 2) {
            Err(Error::Runtime { call, message, .. }) => {
                assert_eq!(call, missing);
                assert!(
                    message.contains(missing) && message.contains("CANN 8.2"),
                    "{message}"
                );
            }
            other => panic!("{hidden:?}: {other:?}"),
        }
    }
}

#[test]
fn every_collective_launch_asks_for_batch_scheduling() {
    let b = AclBackend::with_runtime(common::acl_twin(), 2).unwrap();
    let before = b.twin_launch_stats().unwrap();
    let w = World::with_backend(2, config(), b).unwrap();
    all_reduce(&w);
    w.run(|c| {
        let x = c.alloc(4096).unwrap();
        let y = c.alloc(8192).unwrap();
        c.all_gather(&x, &y, 1024, DataType::F32).unwrap();
        c.barrier().unwrap();
        c.synchronize().unwrap();
    });
    // acl-twin counts for the whole process (other tests run beside this one): every launch
    // made while this test ran was a batch one, this test's among them.
    let b = AclBackend::with_runtime(common::acl_twin(), 1).unwrap();
    let (all, batch, _) = b.twin_launch_stats().unwrap();
    assert!(all - before.0 >= 4, "{all} launches, {} before", before.0);
    assert_eq!(
        all - before.0,
        batch - before.1,
        "a launch without batch scheduling"
    );
}

#[test]
fn a_world_asks_for_the_backend_it_gets() {
    let with = |b| Config {
        backend: Some(b),
        ..Config::default()
    };
    // acl-twin may be on the loader's path (Cargo puts deps/ there for tests): auto does not
    // take it, being the twin behind ACL. (A real device runtime on the path would be taken.)
    let device_runtime = ascendc_sys::Acl::load().is_ok_and(|a| a.twin.is_none());
    if !device_runtime {
        let w = World::new(2, with(BackendChoice::Auto)).unwrap();
        assert_eq!(w.backend_name(), "twin");
    }
    let w = World::new(2, with(BackendChoice::Twin)).unwrap();
    assert_eq!(w.backend_name(), "twin");
    // ACL by name: acl-twin if the loader finds it, else a clear error.
    match (
        ascendc_sys::Acl::load(),
        World::new(2, with(BackendChoice::Acl)),
    ) {
        (Ok(_), Ok(w)) => {
            assert_eq!(w.backend_name(), "acl");
            assert!(
                w.backend_description().contains("acl-twin"),
                "{}",
                w.backend_description()
            );
        }
        (Err(_), Err(Error::Runtime { message, .. })) => assert!(
            message.contains("libascendcl.so") && message.contains("set_env.sh"),
            "{message}"
        ),
        (lib, w) => panic!("{:?} / {:?}", lib.map(|_| ()), w.map(|w| w.backend_name())),
    }
}

#[test]
fn a_launchs_time_limit_backs_up_the_kernels_deadline() {
    // The only test of this binary whose exec timeout is 7 s: the latest launch's time limit
    // is twice that, unless another test launched in between (then it tries again).
    let cfg = Config {
        exec_timeout: Some(Duration::from_secs(7)),
        ..Config::default()
    };
    for attempt in 0.. {
        let b = AclBackend::with_runtime(common::acl_twin(), 1).unwrap();
        let w = World::with_backend(1, cfg.clone(), b).unwrap();
        let c = &w.comms()[0];
        let x = c.alloc_from(&[1.0f32; 64]).unwrap();
        c.all_reduce(&x, &x, 64, DataType::F32, ReduceOp::Sum)
            .unwrap();
        c.synchronize().unwrap();
        let probe = AclBackend::with_runtime(common::acl_twin(), 1).unwrap();
        let (_, _, timeout_us) = probe.twin_launch_stats().unwrap();
        if timeout_us == 14_000_000 {
            return;
        }
        assert!(
            attempt < 20,
            "the latest launch's TIMEOUT_US is {timeout_us}"
        );
    }
}
