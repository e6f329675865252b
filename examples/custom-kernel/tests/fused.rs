//! The fused compute + AllReduce template (kernels/fused_all_reduce.cpp) on 2..8 ranks: the
//! result is the host reference, bit for bit, on every rank, for every size class (one float,
//! ragged, many chunks of a tiny HCCL buffer), with the checkers on; bad arguments are errors.

use aiv_comm::{Config, Error, World};
use custom_kernel_example::relu_scale_all_reduce;

/// Rank r's input: deterministic, positive and negative.
fn input(r: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + r * 13) % 23) as f32 * 0.37 - 3.0 + r as f32 * 0.01)
        .collect()
}

/// The host reference: each rank's Relu(x * scale + bias) in f32 (the multiply and the add
/// each rounded, as Muls then Adds), summed in rank order.
fn reference(ranks: usize, n: usize, scale: f32, bias: f32) -> Vec<f32> {
    let mut y = vec![0f32; n];
    for r in 0..ranks {
        for (i, v) in input(r, n).into_iter().enumerate() {
            let z = (v * scale + bias).max(0.0);
            y[i] = if r == 0 { z } else { y[i] + z };
        }
    }
    y
}

fn run(ranks: usize, n: usize, buffer_bytes: usize, block_dim: u32) {
    let cfg = Config {
        buffer_bytes: Some(buffer_bytes),
        ..Config::default()
    };
    let world = World::sim_with(ranks, cfg).unwrap();
    let (scale, bias) = (1.5f32, -0.25f32);
    let out = world.run(|c| -> aiv_comm::Result<Vec<f32>> {
        let x = c.alloc_from(&input(c.rank() as usize, n))?;
        let y = c.alloc_from(&vec![f32::NAN; n])?;
        relu_scale_all_reduce(c, &x, &y, n, scale, bias, block_dim)?;
        // A fault of the kernel (a hazard the checkers found, a wait that timed out) comes back
        // from synchronize; a host copy alone only waits for the launch.
        c.synchronize()?;
        y.to_vec::<f32>()
    });
    let want = reference(ranks, n, scale, bias);
    for (r, got) in out.into_iter().enumerate() {
        let got = got.unwrap();
        assert_eq!(got.len(), n);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "ranks {ranks} n {n} rank {r} element {i}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn every_rank_gets_the_reference_bits_on_2_to_8_ranks() {
    for ranks in 2..=8 {
        run(ranks, 10_003, 1 << 20, ranks as u32);
    }
}

#[test]
fn every_size_class_and_block_count() {
    for (n, blocks) in [(1, 1), (7, 4), (8, 8), (4096, 3), (100_001, 8)] {
        run(3, n, 1 << 20, blocks);
    }
    // Many chunks: a 4 KiB HCCL buffer holds 1024 floats.
    run(4, 5_000, 4096, 2);
    // More blocks than 8-float slices: some blocks own nothing.
    run(2, 20, 1 << 20, 8);
    // One rank: the sum is its own contribution.
    run(1, 1000, 1 << 20, 2);
}

#[test]
fn bad_arguments_are_errors_before_anything_runs() {
    let world = World::sim(2).unwrap();
    let c = &world.comms()[0];
    let x = c.alloc(64).unwrap();
    let y = c.alloc(32).unwrap();
    match relu_scale_all_reduce(c, &x, &y, 16, 1.0, 0.0, 2) {
        Err(Error::BufferTooSmall { what: "y", .. }) => {}
        other => panic!("expected y too small, got {other:?}"),
    }
    assert!(matches!(
        relu_scale_all_reduce(c, &x, &x, 16, 1.0, 0.0, 0),
        Err(Error::Length(_))
    ));
}
