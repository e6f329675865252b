//! An AllReduce over a World of 4 simulated NPUs, through the typed API: rank `r` contributes
//! a buffer filled with `r + 1`, and every rank gets back the element-wise sum, 1 + 2 + 3 + 4.
//!
//! ```text
//! cargo run --release --example 01_all_reduce
//! ```
//!
//! prints `all_reduce over 4 ranks: every rank holds 65536 × 10`.

use aiv_comm::{Config, ReduceOp, World};

const RANKS: usize = 4;
const LEN: usize = 1 << 16;

fn main() -> aiv_comm::Result<()> {
    // A 16 MB HCCL buffer per rank (the default is 200 MB, HCCL's).
    let config = Config {
        buffer_bytes: Some(16 << 20),
        ..Config::default()
    };
    let world = World::sim_with(RANKS, config)?;
    // One thread per rank runs the closure; `run` returns each rank's result, in rank order.
    let sums = world.run(|comm| {
        let t = comm.typed();
        let send = t.htod_copy(vec![comm.rank() as f32 + 1.0; LEN])?;
        let mut recv = t.alloc_zeros::<f32>(LEN)?;
        t.all_reduce(&send, &mut recv, ReduceOp::Sum)?; // enqueued on the rank's main stream
        t.dtoh_sync_copy(&recv) // waits for it, then copies the result back
    });
    let expected = (1..=RANKS).sum::<usize>() as f32;
    for (rank, sum) in sums.into_iter().enumerate() {
        let sum = sum?;
        assert_eq!(sum.len(), LEN);
        assert!(
            sum.iter().all(|&x| x == expected),
            "rank {rank}: expected {expected} everywhere, got {:?}...",
            &sum[..4]
        );
    }
    println!("all_reduce over {RANKS} ranks: every rank holds {LEN} × {expected}");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example ([[example]] `test = true` in Cargo.toml).
    #[test]
    fn example_runs() -> aiv_comm::Result<()> {
        super::main()
    }
}
