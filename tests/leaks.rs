//! Creating and dropping worlds leaks nothing (issue 10, item 3): 1000 cycles, each with a
//! plain AllReduce and a halving-doubling one (whose streams and race-checker state used to
//! stay behind), keep the resident set flat. One test in this binary: RSS is per process.

use aiv_comm::{AllReduceAlgo, Config, DataType, ReduceOp, World};

/// Resident set size of this process, bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn cycle() {
    let w = World::sim_with(
        3,
        Config {
            buffer_bytes: Some(64 * 1024),
            cores: 8,
            ..Config::default()
        },
    )
    .unwrap();
    let r = w.run(|c| -> aiv_comm::Result<()> {
        let x = c.alloc_from(&[c.rank() as f32; 256])?;
        let y = c.alloc(1024)?;
        c.all_reduce(&x, &y, 256, DataType::F32, ReduceOp::Sum)?;
        c.all_reduce_with(&x, &y, 256, DataType::F32, ReduceOp::Sum, AllReduceAlgo::Hd)?;
        c.synchronize()?;
        assert!(y.to_vec::<f32>()?.iter().all(|&v| v == 3.0));
        Ok(())
    });
    r.into_iter().for_each(|x| x.unwrap());
}

#[test]
fn a_thousand_world_cycles_keep_the_resident_set_flat() {
    // Warm up: allocator arenas, thread-local caches, the pool of block stacks.
    for _ in 0..100 {
        cycle();
    }
    let before = rss();
    for _ in 0..1000 {
        cycle();
    }
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 4 << 20,
        "RSS grew by {:.1} MB over 1000 world cycles",
        grown as f64 / (1 << 20) as f64
    );
}
