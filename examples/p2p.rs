//! Seed 002's send/recv demo on the CPU twin: 8 ranks; each even rank sends a buffer filled with
//! its rank id to the next odd rank, which receives it and prints what it got (rank 1 prints 0s,
//! rank 3 prints 2s, ...).
//!
//!     cargo run --example p2p

use aiv_comm::{Config, World};

fn main() -> aiv_comm::Result<()> {
    const RANKS: usize = 8;
    const COUNT: usize = 16;
    let world = World::sim_with(
        RANKS,
        Config {
            buffer_bytes: Some(16 << 20),
            ..Config::default()
        },
    )?;
    let lines = world.run(|comm| -> aiv_comm::Result<Option<String>> {
        let rank = comm.rank();
        if rank % 2 == 0 {
            let buf = comm.alloc_from(&[rank as i32; COUNT])?;
            comm.send(&buf, rank + 1)?;
            comm.synchronize()?;
            Ok(None)
        } else {
            let buf = comm.alloc(COUNT * 4)?;
            comm.recv(&buf, rank - 1)?;
            comm.synchronize()?;
            let got: Vec<i32> = buf.to_vec()?;
            Ok(Some(format!(
                "rank {rank} received from rank {}: {got:?}",
                rank - 1
            )))
        }
    });
    for line in lines {
        if let Some(l) = line? {
            println!("{l}");
        }
    }
    Ok(())
}
