//! Point-to-point send/recv (seed 002's protocol) between 4 simulated NPUs, through the typed
//! API: ranks pair up (0 with 1, 2 with 3) and swap buffers filled with their rank id. The even
//! rank sends first and the odd one receives first: a send completes only when its peer has
//! read it, so two ranks that both sent first on their main stream would wait for each other
//! (sends and recvs meant to overlap go on different streams).
//!
//! ```text
//! cargo run --release --example 03_send_recv
//! ```
//!
//! prints one line per rank, `rank 0 received 16 × 1 from rank 1` and so on.

use aiv_comm::{Config, World};

const RANKS: usize = 4;
const LEN: usize = 16;

fn main() -> aiv_comm::Result<()> {
    let config = Config {
        buffer_bytes: Some(16 << 20),
        ..Config::default()
    };
    let world = World::sim_with(RANKS, config)?;
    let got = world.run(|comm| {
        let t = comm.typed();
        let rank = comm.rank();
        let peer = rank ^ 1; // 0 <-> 1, 2 <-> 3
        let mine = t.htod_copy(vec![rank as i32; LEN])?;
        let mut theirs = t.alloc_zeros::<i32>(LEN)?;
        if rank % 2 == 0 {
            t.send(&mine, peer)?;
            t.recv(&mut theirs, peer)?;
        } else {
            t.recv(&mut theirs, peer)?;
            t.send(&mine, peer)?;
        }
        t.dtoh_sync_copy(&theirs)
    });
    for (rank, theirs) in got.into_iter().enumerate() {
        let theirs = theirs?;
        let peer = rank ^ 1;
        assert_eq!(theirs, vec![peer as i32; LEN], "rank {rank}");
        println!("rank {rank} received {LEN} × {peer} from rank {peer}");
    }
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
