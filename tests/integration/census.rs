//! The twin's sync census (`ascendc_twin::Twin::set_census`) on collectives whose sync structure
//! and GM traffic are known from their protocols (kernel/all_gather.cpp, kernel/all_reduce.cpp):
//! the rounds, waits and data bytes it measures must be exactly those. Each test has its own
//! world, hence its own twin and census table.

use aiv_comm::{AllGatherAlgo, AllReduceAlgo, Config, DataType, ReduceOp, World};
use ascendc_twin::{Census, GmTraffic};

fn world(ranks: usize) -> World {
    World::sim_with(
        ranks,
        Config {
            buffer_bytes: Some(16 << 20),
            ..Config::default()
        },
    )
    .unwrap()
}

/// Runs one AllGather of `s` bytes per rank with `algo` and the census on; returns the census
/// and what each rank's cores moved meanwhile (the traffic counters).
fn census_all_gather(w: &World, s: usize, algo: AllGatherAlgo) -> (Census, Vec<GmTraffic>) {
    census_all_gather_from(w, s, algo, false)
}

/// [`census_all_gather`], every rank's input registered as window memory if `windows`.
fn census_all_gather_from(
    w: &World,
    s: usize,
    algo: AllGatherAlgo,
    windows: bool,
) -> (Census, Vec<GmTraffic>) {
    let n = w.comms().len();
    let bufs: Vec<_> = w
        .comms()
        .iter()
        .map(|c| (c.alloc(s).unwrap(), c.alloc(n * s).unwrap()))
        .collect();
    if windows {
        for (c, (i, _)) in w.comms().iter().zip(&bufs) {
            c.register(i).unwrap();
        }
    }
    let moved = |r: u32| {
        w.twin()
            .unwrap()
            .core_traffic(r)
            .iter()
            .fold(GmTraffic::default(), |a, t| GmTraffic {
                read: a.read + t.read,
                written: a.written + t.written,
            })
    };
    let before: Vec<_> = (0..n as u32).map(moved).collect();
    assert!(
        w.twin().unwrap().take_census().is_empty(),
        "nothing ran with it on"
    );
    w.twin().unwrap().set_census(true);
    w.run(|c| {
        let (i, o) = &bufs[c.rank() as usize];
        c.all_gather_with(i, o, s, DataType::U8, algo).unwrap();
        c.synchronize().unwrap();
    });
    w.twin().unwrap().set_census(false);
    let census = w.twin().unwrap().take_census();
    let traffic = (0..n as u32)
        .map(|r| moved(r).since(before[r as usize]))
        .collect();
    (census, traffic)
}

#[test]
fn all_gather_on_two_ranks_is_a_staged_flag_then_a_post_sync() {
    // Rank r, Pull: block r stages its input and stores "staged" (cell depth 1); block p waits
    // for p's "staged" (depth 1, a blocking wait), copies, stores "done reading" into p's cell
    // (depth 2) and waits for p's (depth 2, blocking). PullParts: one block does all of it in
    // that order. Either way two rounds, two waits per rank, both blocking, two flag stores per
    // rank (one 32-byte cell each).
    for (algo, blocks) in [(AllGatherAlgo::Pull, 2), (AllGatherAlgo::PullParts, 1)] {
        let w = world(2);
        let s = 64 << 10;
        let (c, traffic) = census_all_gather(&w, s, algo);
        assert_eq!(c.rounds, 2, "{algo:?} {c:?}");
        assert_eq!(c.ranks.len(), 2, "{c:?}");
        for (r, rc) in c.ranks.iter().enumerate() {
            let at = format!("{algo:?} rank {r}: {rc:?}");
            assert_eq!((rc.launches, rc.blocks), (1, blocks), "{at}");
            assert_eq!((rc.waits, rc.blocking_waits), (2, 2), "{at}");
            assert_eq!((rc.flag_stores, rc.flag_written), (2, 64), "{at}");
            assert_eq!(rc.depth, 2, "{at}");
            assert!(
                rc.flag_loads >= 2 && rc.flag_read == 32 * rc.flag_loads,
                "{at}"
            );
            // Reads: my input, the peer's staged copy; writes: my staging copy, my slot, the
            // peer's slot.
            assert_eq!(
                (rc.data_read, rc.data_written),
                (2 * s as u64, 3 * s as u64),
                "{at}"
            );
            // The census counts exactly what the traffic counters count, by memory kind.
            let t = traffic[r];
            assert_eq!(
                (t.read, t.written),
                (
                    rc.data_read + rc.flag_read,
                    rc.data_written + rc.flag_written
                ),
                "{at}"
            );
        }
        // Cells stored to: each rank's broadcast cell and one pair cell per rank.
        assert_eq!(c.cells, 4, "{algo:?} {c:?}");
    }
}

#[test]
fn all_gather_bytes_follow_the_protocol_exactly() {
    // Per rank: reads n S (my input once, each peer's staged copy), writes (n + 1) S (staging,
    // my slot, n - 1 peer slots), whatever the split into blocks (1 MiB: two parts) and for
    // ragged sizes (DataCopyPad moves exactly the bytes asked). The chain stays two rounds
    // deep: more blocks run side by side, not after each other. Pull runs a block per peer and
    // part, PullParts a block per part: the same cells, flags and waits.
    for algo in [AllGatherAlgo::Pull, AllGatherAlgo::PullParts] {
        for (n, s) in [(3usize, 1000usize), (4, 64 << 10), (3, 1 << 20)] {
            let w = world(n);
            let (c, traffic) = census_all_gather(&w, s, algo);
            let s = s as u64;
            let at = format!("{algo:?} n {n} S {s}");
            assert_eq!(c.rounds, 2, "{at}: {c:?}");
            assert_eq!(c.ranks.len(), n);
            for (r, rc) in c.ranks.iter().enumerate() {
                assert_eq!(
                    (rc.data_read, rc.data_written),
                    (n as u64 * s, (n as u64 + 1) * s),
                    "{at} rank {r}"
                );
                let parts = match algo {
                    AllGatherAlgo::Pull => rc.blocks / n as u64,
                    _ => rc.blocks,
                };
                // One cell stored per peer and part ("staged", then one "done reading" per
                // peer); two waits per peer and part.
                assert_eq!(rc.flag_written, 32 * n as u64 * parts, "{at}: {rc:?}");
                assert_eq!(rc.waits, 2 * (n as u64 - 1) * parts, "{at}: {rc:?}");
                // Every Pull wait blocks (its block has nothing else to do); a PullParts block
                // may find a later peer's flag already there.
                if algo == AllGatherAlgo::Pull {
                    assert_eq!(rc.blocking_waits, rc.waits, "{at}: {rc:?}");
                } else {
                    assert!(rc.blocking_waits <= rc.waits, "{at}: {rc:?}");
                }
                let t = traffic[r];
                assert_eq!(t.read, rc.data_read + rc.flag_read, "{at} rank {r}");
                assert_eq!(t.written, rc.data_written + rc.flag_written);
                if s == 1 << 20 {
                    assert_eq!(parts, 2, "{at}: 1 MiB, two parts");
                }
            }
        }
    }
}

#[test]
fn all_gather_from_windows_moves_the_floor() {
    // Inputs in windows (Communicator::register): nothing is staged. Per rank: reads n S (my
    // input for my slot, each peer's input where it is), writes n S (the n slots of my output),
    // the least any AllGather can move. Still two rounds. Per part: two cells stored by the
    // owner (the address, then "ready") and one "done reading" per peer; the waits are the
    // "ready" and "done" polls of each peer plus the one load of its address cell (a run of one
    // load of a flag range).
    for algo in [AllGatherAlgo::Pull, AllGatherAlgo::PullParts] {
        for (n, s) in [(2usize, 64usize << 10), (3, 1000), (3, 1 << 20)] {
            let w = world(n);
            let (c, traffic) = census_all_gather_from(&w, s, algo, true);
            let s = s as u64;
            let at = format!("{algo:?} n {n} S {s}");
            assert_eq!(c.rounds, 2, "{at}: {c:?}");
            for (r, rc) in c.ranks.iter().enumerate() {
                let n = n as u64;
                assert_eq!(
                    (rc.data_read, rc.data_written),
                    (n * s, n * s),
                    "{at} rank {r}"
                );
                let parts = match algo {
                    AllGatherAlgo::Pull => rc.blocks / n,
                    _ => rc.blocks,
                };
                assert_eq!(rc.flag_written, 32 * (n + 1) * parts, "{at}: {rc:?}");
                assert_eq!(rc.waits, 3 * (n - 1) * parts, "{at}: {rc:?}");
                let t = traffic[r];
                assert_eq!(t.read, rc.data_read + rc.flag_read, "{at} rank {r}");
                assert_eq!(t.written, rc.data_written + rc.flag_written);
            }
        }
    }
}

#[test]
fn two_shot_all_reduce_is_four_rounds() {
    // Rank r, slice r of S/n bytes is r's (kernel/all_reduce.cpp, two-shot):
    //   block r:  input -> A, slice r also -> B; "A staged" (1); Wait1vN: every peer reduced
    //             into my B (count cell at 2, a blocking wait); B -> output; "B final" (3);
    //   block i:  waits for i's "A staged" (1, blocking) and mine (1, not: already that deep);
    //             atomic add of i's A slice r into my B, count (2); waits for i's "B final"
    //             (3, blocking); i's B slice i -> my output; post-sync Record / Wait (4,
    //             blocking).
    // Bytes: block r reads S, writes S + S/n, then reads and writes S/n (B -> output); each
    // block i reads S/n + S/n (the atomic add reads its destination), writes S/n, then reads
    // and writes S/n.
    // With the inputs in windows, block r copies only slice r (S/n) into B, and peers read A
    // from the input: S - S/n fewer bytes read and S fewer written per rank; block i also reads
    // i's address cell (one more wait, not blocking, and not deeper). The same four rounds.
    for windows in [false, true] {
        let n = 3usize;
        let s = 96 << 10; // slices of 32 KiB, whole DMA blocks
        let w = world(n);
        let bufs: Vec<_> = w
            .comms()
            .iter()
            .map(|c| (c.alloc(s).unwrap(), c.alloc(s).unwrap()))
            .collect();
        if windows {
            for (c, (i, _)) in w.comms().iter().zip(&bufs) {
                c.register(i).unwrap();
            }
        }
        w.twin().unwrap().set_census(true);
        w.run(|c| {
            let (i, o) = &bufs[c.rank() as usize];
            c.all_reduce_with(
                i,
                o,
                s / 4,
                DataType::F32,
                ReduceOp::Sum,
                AllReduceAlgo::TwoShot,
            )
            .unwrap();
            c.synchronize().unwrap();
        });
        let c = w.twin().unwrap().take_census();
        assert_eq!(c.rounds, 4, "windows {windows}: {c:?}");
        let (s, k) = (s as u64, n as u64 - 1);
        let slice = s / n as u64;
        let (staged_read, staged_written, address_reads) =
            if windows { (slice, 0, k) } else { (s, s, 0) };
        for rc in &c.ranks {
            let at = format!("windows {windows}: {rc:?}");
            assert_eq!(rc.blocks, n as u64, "{at}");
            assert_eq!(
                (rc.waits, rc.blocking_waits),
                (4 * k + 1 + address_reads, 3 * k + 1),
                "{at}"
            );
            assert_eq!(rc.depth, 4, "{at}");
            assert_eq!(rc.data_read, staged_read + slice + k * 3 * slice, "{at}");
            assert_eq!(
                rc.data_written,
                staged_written + slice + slice + k * 2 * slice,
                "{at}"
            );
        }
    }
}

#[test]
fn the_census_is_off_by_default_and_builds_nothing() {
    let w = world(2);
    let bufs: Vec<_> = w
        .comms()
        .iter()
        .map(|c| (c.alloc(4096).unwrap(), c.alloc(8192).unwrap()))
        .collect();
    w.run(|c| {
        let (i, o) = &bufs[c.rank() as usize];
        c.all_gather(i, o, 4096, DataType::U8).unwrap();
        c.synchronize().unwrap();
    });
    let c = w.twin().unwrap().take_census();
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(c, Census::default());
    // Turned on and off again without a launch in between: still nothing.
    w.twin().unwrap().set_census(true);
    w.twin().unwrap().set_census(false);
    w.run(|c| {
        let (i, o) = &bufs[c.rank() as usize];
        c.all_gather(i, o, 4096, DataType::U8).unwrap();
        c.synchronize().unwrap();
    });
    assert_eq!(w.twin().unwrap().take_census(), Census::default());
}

#[test]
fn every_chunk_of_an_operation_is_a_launch_of_the_same_rounds() {
    // An AllGather larger than the HCCL buffer runs one launch per chunk; every launch's blocks
    // start at depth 0 and the chunks repeat the same chain, so the census gives the rounds of
    // one launch and counts the launches (the chunks run one after the other: 3 x 2 rounds).
    let n = 2;
    let w = World::sim_with(
        n,
        Config {
            buffer_bytes: Some(1 << 20),
            ..Config::default()
        },
    )
    .unwrap();
    let s = 3 << 20; // three chunks of 1 MiB
    let bufs: Vec<_> = w
        .comms()
        .iter()
        .map(|c| (c.alloc(s).unwrap(), c.alloc(n * s).unwrap()))
        .collect();
    w.twin().unwrap().set_census(true);
    w.run(|c| {
        let (i, o) = &bufs[c.rank() as usize];
        c.all_gather(i, o, s, DataType::U8).unwrap();
        c.synchronize().unwrap();
    });
    let c = w.twin().unwrap().take_census();
    assert_eq!(c.rounds, 2, "{c:?}");
    for rc in &c.ranks {
        assert_eq!(rc.launches, 3, "{rc:?}");
        assert_eq!(
            (rc.data_read, rc.data_written),
            (2 * s as u64, 3 * s as u64)
        );
    }
}

#[test]
fn a_send_and_a_receive_on_two_streams_are_two_rounds() {
    // sendrecv on 2 ranks: each rank sends on one stream and receives on another (two launches
    // that may start in any order). Send: stage, "data ready" (1), wait "read done"; receive:
    // wait "data ready" (1), pull, "read done" (2). Whatever the order of the launches, two
    // rounds, and one wait in each launch.
    let w = world(2);
    let s = 64 << 10;
    let bufs: Vec<_> = w
        .comms()
        .iter()
        .map(|c| {
            let side = c.create_stream("side").unwrap();
            (c.alloc(s).unwrap(), c.alloc(s).unwrap(), side)
        })
        .collect();
    for _ in 0..3 {
        w.twin().unwrap().set_census(true);
        w.run(|c| {
            let r = c.rank();
            let (i, o, side) = &bufs[r as usize];
            side.send(i, s, DataType::U8, 1 - r).unwrap();
            c.stream().recv(o, s, DataType::U8, 1 - r).unwrap();
            c.synchronize().unwrap();
            side.synchronize().unwrap();
        });
        w.twin().unwrap().set_census(false);
        let c = w.twin().unwrap().take_census();
        assert_eq!(c.rounds, 2, "{c:?}");
        for rc in &c.ranks {
            assert_eq!(
                (rc.launches, rc.waits, rc.blocking_waits),
                (2, 2, 2),
                "{rc:?}"
            );
            assert_eq!(
                (rc.data_read, rc.data_written),
                (2 * s as u64, 2 * s as u64)
            );
        }
    }
}
