//! The user's kernel runs on the twin with its checkers on and gives the right answer, on a
//! bare device and on every rank of a World (ordered with the rank's collectives).

use aiv_comm::backend::acl::AclBackend;
use aiv_comm::{BufferAccess, Config, DataType, ReduceOp, World};
use ascendc_twin::{args, DeviceConfig, Kernel, KernelBinaries, Twin};
use custom_kernel_example::{kernels, tiling};

#[test]
fn accumulate_adds_x_into_y_on_a_device() {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    // Not a multiple of the tile, nor of 8 floats: the last tile is ragged.
    for n in [10_003u32, 256, 7] {
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let y0: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
        let xb = dev.alloc(n as usize * 4).unwrap();
        let yb = dev.alloc(n as usize * 4).unwrap();
        xb.write(0, &bytes(&x)).unwrap();
        yb.write(0, &bytes(&y0)).unwrap();
        let blocks = 8;
        // SAFETY: accumulate_custom reads n floats at x and adds them into n floats at y; both
        // buffers live until the launch returns.
        unsafe {
            dev.launch_kernel(
                &kernels::accumulate_custom,
                blocks,
                &args![xb.gm(0), yb.gm(0), n, tiling(n, blocks, 256)],
            )
        }
        .unwrap();
        let mut out = vec![0u8; n as usize * 4];
        yb.read(0, &mut out).unwrap();
        for (i, c) in out.chunks(4).enumerate() {
            let v = f32::from_le_bytes(c.try_into().unwrap());
            assert_eq!(v, y0[i] + x[i], "n {n} element {i}");
        }
    }
}

/// acl-twin's ACL runtime: the libascendcl.so Cargo builds next to this test (a
/// dev-dependency).
fn acl_twin() -> ascendc_sys::Acl {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libascendcl.so");
    ascendc_sys::Acl::open(lib.to_str().unwrap(), &[]).unwrap()
}

/// On every rank of `world`: y = AllReduce(x), then y += x with the user's kernel on the same
/// stream. Each rank's y.
fn reduce_then_accumulate(world: &World) -> Vec<Vec<f32>> {
    let n = 4096u32;
    let res = world.run(|c| -> aiv_comm::Result<Vec<f32>> {
        let x = c.alloc_from(&vec![c.rank() as f32 + 1.0; n as usize])?;
        let y = c.alloc_from(&vec![0.5f32; n as usize])?;
        c.all_reduce(&x, &y, n as usize, DataType::F32, ReduceOp::Sum)?;
        let t = tiling(n, 4, 256);
        // SAFETY: reads n floats of x, adds into n floats of y (both claimed).
        unsafe {
            c.stream().launch(
                &kernels::accumulate_custom,
                4,
                args![x.gm(0), y.gm(0), n, t],
                &[BufferAccess::Read(&x), BufferAccess::Write(&y)],
            )?
        };
        y.to_vec::<f32>()
    });
    res.into_iter().map(|v| v.unwrap()).collect()
}

#[test]
fn the_kernel_runs_on_every_rank_ordered_with_a_collective() {
    let res = reduce_then_accumulate(&World::sim(2).unwrap());
    for (r, v) in res.into_iter().enumerate() {
        // 1 + 2 from the AllReduce, plus this rank's own x.
        assert!(
            v.iter().all(|&e| e == 3.0 + r as f32 + 1.0),
            "rank {r}: {:?}",
            &v[..4]
        );
    }
}

/// The same program through the ACL backend, as on an NPU (here on acl-twin, the ACL runtime
/// over the twin): the user's kernel is loaded from its own library's binary and gives the
/// twin's bits.
#[test]
fn the_kernel_runs_through_acl_as_on_the_twin() {
    let backend = AclBackend::with_runtime(acl_twin(), 2).unwrap();
    let world = World::with_backend(2, Config::default(), backend).unwrap();
    assert_eq!(world.backend_name(), "acl");
    let twin = reduce_then_accumulate(&World::sim(2).unwrap());
    assert_eq!(reduce_then_accumulate(&world), twin);
}

/// The kernel as a library built without a twin binary would give it.
static NO_TWIN_BINARY: Kernel = kernels::accumulate_custom.with_binaries(&KernelBinaries {
    library: "example_kernels",
    twin: None,
    npu: None,
});
/// The kernel as a library whose twin binary is gone would give it.
static MISSING_BINARY: Kernel = kernels::accumulate_custom.with_binaries(&KernelBinaries {
    library: "example_kernels",
    twin: Some("/nonexistent/libexample_kernels.twin.so"),
    npu: None,
});

/// A kernel whose binary the runtime cannot load is an error that says why, never a crash.
#[test]
fn a_kernel_without_a_loadable_binary_is_a_clear_error_through_acl() {
    for (kernel, want) in [
        (&NO_TWIN_BINARY, "built without a twin binary"),
        (&MISSING_BINARY, "/nonexistent/libexample_kernels.twin.so"),
    ] {
        let backend = AclBackend::with_runtime(acl_twin(), 1).unwrap();
        let world = World::with_backend(1, Config::default(), backend).unwrap();
        let got = world.run(|c| -> aiv_comm::Result<()> {
            let x = c.alloc_from(&[1.0f32; 64])?;
            // SAFETY: reads 64 floats of x and adds them into x (claimed for writing).
            unsafe {
                c.stream().launch(
                    kernel,
                    1,
                    args![x.gm(0), x.gm(0), 64u32, tiling(64, 1, 64)],
                    &[BufferAccess::Write(&x)],
                )?
            };
            c.synchronize()
        });
        let e = got[0].as_ref().unwrap_err().to_string();
        assert!(e.contains(want), "{want}: {e}");
    }
}
