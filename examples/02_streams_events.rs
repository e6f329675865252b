//! Two streams of one rank ordered by events. On each of 4 simulated NPUs, a sub-stream stages
//! the input (a device-to-device copy) and posts `input ready`; the main stream waits for that
//! event, AllReduces, and posts `reduced`; the sub-stream waits for `reduced` and copies the
//! sum out. Without the events the streams would run independently: the AllReduce could read
//! the input before it was staged, and the copy-out could read the sum before it existed.
//!
//! ```text
//! cargo run --release --example 02_streams_events
//! ```
//!
//! prints `streams and events on 4 ranks: staged, reduced, copied out: 4096 × 10`.

use aiv_comm::{Config, Event, ReduceOp, World};

const RANKS: usize = 4;
const LEN: usize = 4096;
const BYTES: usize = LEN * std::mem::size_of::<f32>();

fn main() -> aiv_comm::Result<()> {
    let config = Config {
        buffer_bytes: Some(16 << 20),
        ..Config::default()
    };
    let world = World::sim_with(RANKS, config)?;
    let outs = world.run(|comm| {
        let t = comm.typed();
        let main = comm.stream(); // collectives run here
        let side = comm.create_stream("side")?;

        let staged = t.htod_copy(vec![comm.rank() as f32 + 1.0; LEN])?;
        let send = t.alloc_zeros::<f32>(LEN)?;
        let mut sum = t.alloc_zeros::<f32>(LEN)?;
        let out = t.alloc_zeros::<f32>(LEN)?;
        let input_ready = Event::new("input ready");
        let reduced = Event::new("reduced");

        // Sub-stream: stage the input, then let the main stream go on.
        side.copy(send.as_buffer(), staged.as_buffer(), BYTES, "stage")?;
        side.post(&input_ready, "stage");
        // Main stream: wait for the input, reduce, then let the sub-stream go on.
        main.wait(&input_ready, "all_reduce");
        t.all_reduce(&send, &mut sum, ReduceOp::Sum)?;
        main.post(&reduced, "all_reduce");
        // Sub-stream: wait for the sum and copy it out.
        side.wait(&reduced, "copy out");
        side.copy(out.as_buffer(), sum.as_buffer(), BYTES, "copy out")?;

        // Everything above was only enqueued; wait for both streams, then read the result.
        side.synchronize()?;
        main.synchronize()?;
        t.dtoh_sync_copy(&out)
    });
    let expected = (1..=RANKS).sum::<usize>() as f32;
    for (rank, out) in outs.into_iter().enumerate() {
        let out = out?;
        assert_eq!(out.len(), LEN);
        assert!(
            out.iter().all(|&x| x == expected),
            "rank {rank}: expected {expected} everywhere"
        );
    }
    println!(
        "streams and events on {RANKS} ranks: staged, reduced, copied out: {LEN} × {expected}"
    );
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
