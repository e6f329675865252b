//! The twin's DMA traffic counters (`ascendc_twin::Twin::gm_traffic`), on which aiv-perf's dmabw
//! and the comparison's traffic figures rest. The counters belong to the world's twin, so other
//! tests running beside this one add nothing to them. (Its count of checked launches:
//! twin-tests/tests/twin/checked_launches.rs.)

use aiv_comm::{AllGatherAlgo, Config, DataType, ReduceOp, World};
use ascendc_twin::GmTraffic;

#[test]
fn dma_counters_match_what_the_kernels_move() {
    let w = World::sim_with(
        4,
        Config {
            buffer_bytes: Some(16 << 20),
            ..Config::default()
        },
    )
    .unwrap();
    let c = &w.comms()[0];
    let n = (1 << 20) + 96; // whole DMA blocks, several stage fills per block
    let src = c.alloc_from(&vec![3u32; n / 4]).unwrap();
    let dst = c.alloc(n).unwrap();

    // A plain copy reads and writes every byte once.
    let t0 = w.twin().unwrap().gm_traffic();
    c.stream().copy(&dst, &src, n, "copy").unwrap();
    c.synchronize().unwrap();
    let t1 = w.twin().unwrap().gm_traffic();
    assert_eq!(
        t1.since(t0),
        GmTraffic {
            read: n as u64,
            written: n as u64
        }
    );

    // An atomic reduce also reads its destination.
    c.stream()
        .reduce(&dst, &src, n / 4, DataType::I32, ReduceOp::Sum, "reduce")
        .unwrap();
    c.synchronize().unwrap();
    let t2 = w.twin().unwrap().gm_traffic();
    assert_eq!(
        t2.since(t1),
        GmTraffic {
            read: 2 * n as u64,
            written: n as u64
        }
    );
    assert!(dst.to_vec::<u32>().unwrap().iter().all(|&x| x == 6));

    // AllGather of S bytes per rank on 4 ranks: each rank reads its input and 3 peers' staged
    // copies (4 S) and writes its staging copy, its own slot and 3 peer slots (5 S); flags add
    // a few 32-byte cells per block (polls included), far below the slack allowed here.
    let s = 4 << 20;
    let bufs: Vec<_> = w
        .comms()
        .iter()
        .map(|c| (c.alloc(s).unwrap(), c.alloc(4 * s).unwrap()))
        .collect();
    let t3 = w.twin().unwrap().gm_traffic();
    w.run(|c| {
        let (i, o) = &bufs[c.rank() as usize];
        c.all_gather(i, o, s, DataType::U8).unwrap();
        c.synchronize().unwrap();
    });
    let t4 = w.twin().unwrap().gm_traffic();
    let GmTraffic { read, written } = t4.since(t3);
    let (want_read, want_written) = (4 * 4 * s as u64, 4 * 5 * s as u64);
    let slack = s as u64 / 4;
    assert!(
        (want_read..want_read + slack).contains(&read),
        "read {read}, want {want_read}"
    );
    assert!(
        (want_written..want_written + slack).contains(&written),
        "written {written}, want {want_written}"
    );
}

#[test]
fn per_core_counters_show_which_cores_moved_what() {
    for algo in [AllGatherAlgo::Pull, AllGatherAlgo::PullParts] {
        per_core_case(1, algo);
        per_core_case(3, algo);
    }
}

/// AllGather of 1 MiB per rank on 4 ranks with `parts` blocks per peer. Pull: block `p + 4 * j`
/// moves part j of the transfer with peer p. PullParts: block j moves part j of every transfer.
fn per_core_case(parts: u32, algo: AllGatherAlgo) {
    let w = World::sim_with(
        4,
        Config {
            buffer_bytes: Some(16 << 20),
            blocks_per_peer: Some(parts),
            ..Config::default()
        },
    )
    .unwrap();
    let s = 1 << 20;
    let bufs: Vec<_> = w
        .comms()
        .iter()
        .map(|c| (c.alloc(s).unwrap(), c.alloc(4 * s).unwrap()))
        .collect();
    let before: Vec<_> = (0..4).map(|r| w.twin().unwrap().core_traffic(r)).collect();
    w.run(|c| {
        let (i, o) = &bufs[c.rank() as usize];
        c.all_gather_with(i, o, s, DataType::U8, algo).unwrap();
        c.synchronize().unwrap();
    });
    let slack = 64 * 1024; // flag cells and polls
    let per_part = algo == AllGatherAlgo::PullParts;
    let used = if per_part { parts } else { 4 * parts } as usize; // blocks of a launch
    for r in 0..4u32 {
        let after = w.twin().unwrap().core_traffic(r);
        assert_eq!(after.len(), ascendc_twin::TRACKED_CORES);
        for (b, (a, z)) in after.iter().zip(&before[r as usize]).enumerate() {
            let GmTraffic { read, written } = a.since(*z);
            // Part j of 1 MiB in 32-byte blocks: 349_536, 349_536 and 349_504 bytes for 3.
            let j = if per_part { b } else { b / 4 } as u64;
            let per = (s as u64).div_ceil(parts as u64).div_ceil(32) * 32;
            let s = per.min((s as u64).saturating_sub(j * per));
            if per_part && b < used {
                // Input -> staging and my slot, then each peer's staging -> its slot.
                assert!(
                    read >= 4 * s && read < 4 * s + slack,
                    "rank {r} block {b}: read {read}"
                );
                assert!(
                    written >= 5 * s && written < 5 * s + slack,
                    "rank {r} block {b}: wrote {written}"
                );
            } else if b >= used {
                assert_eq!((read, written), (0, 0), "rank {r}: block {b} is not used");
            } else if b as u32 % 4 == r {
                // Input -> staging and my slot: one load, two stores.
                assert!(
                    read >= s && read < s + slack,
                    "rank {r} block {b}: read {read}"
                );
                assert!(
                    written >= 2 * s && written < 2 * s + slack,
                    "rank {r} block {b}: wrote {written}"
                );
            } else {
                // Peer b's staging -> my slot b.
                assert!(
                    read >= s && read < s + slack,
                    "rank {r} block {b}: read {read}"
                );
                assert!(
                    written >= s && written < s + slack,
                    "rank {r} block {b}: wrote {written}"
                );
            }
        }
    }
    assert!(w
        .twin()
        .unwrap()
        .core_traffic(ascendc_twin::TRACKED_DEVICES as u32)
        .is_empty());
}
