//! The user's kernel runs on the twin with its checkers on and gives the right answer, on a
//! bare device and on every rank of a World (ordered with the rank's collectives).

use aiv_comm::{BufferAccess, DataType, ReduceOp, World};
use ascendc_twin::{args, DeviceConfig, Twin};
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

#[test]
fn the_kernel_runs_on_every_rank_ordered_with_a_collective() {
    let world = World::sim(2).unwrap();
    let n = 4096u32;
    let res = world.run(|c| -> aiv_comm::Result<Vec<f32>> {
        let x = c.alloc_from(&vec![c.rank() as f32 + 1.0; n as usize])?;
        let y = c.alloc_from(&vec![0.5f32; n as usize])?;
        // y = AllReduce(x) ... then y += x with the user's kernel, on the same stream.
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
    for (r, v) in res.into_iter().enumerate() {
        let v = v.unwrap();
        // 1 + 2 from the AllReduce, plus this rank's own x.
        assert!(
            v.iter().all(|&e| e == 3.0 + r as f32 + 1.0),
            "rank {r}: {:?}",
            &v[..4]
        );
    }
}
