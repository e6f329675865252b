//! The twin's count of checked launches (`ascendc_twin::Twin::checked_launches`), by checker:
//! launches from the caller's thread (the twin self-test) and from a world's workers.

use aiv_comm::{DataType, ReduceOp, World};
use ascendc_twin::CheckedLaunches;
use twin_tests::args::{AivTwinTestArgs, AIV_TT_COPY};
use twin_tests::util as common;

#[test]
fn checked_launches_count_what_each_launch_ran_with() {
    // From the caller's thread: one launch per setting of the two checkers.
    let dev = common::device(0);
    let twin = dev.twin();
    let src = dev.alloc(4096).unwrap();
    let dst = dev.alloc(4096).unwrap();
    let copy = AivTwinTestArgs {
        mode: AIV_TT_COPY,
        src: common::gm(&src, 0),
        dst: common::gm(&dst, 0),
        len: 4096,
        ..Default::default()
    };
    let start = twin.checked_launches();
    let settings = [
        (true, true),
        (true, false),
        (true, false),
        (false, true),
        (false, false),
    ];
    for (hazards, races) in settings {
        twin.set_hazard_check(hazards);
        twin.set_race_check(races);
        common::selftest(&dev, copy, 1).unwrap();
    }
    let end = twin.checked_launches();
    assert_eq!(
        end.since(start),
        CheckedLaunches {
            hazards: 3,
            races: 2
        }
    );
    // From the workers (a stream's tasks launch there, on the worker of their rank): the
    // counts of all of them add up, and only launches with a checker on count for it.
    let w = World::sim(2).unwrap();
    let calls = |w: &World| {
        w.run(|c| {
            let x = c.alloc_from(&[1.0f32; 1024]).unwrap();
            let y = c.alloc(4096).unwrap();
            for _ in 0..3 {
                c.all_reduce(&x, &y, 1024, DataType::F32, ReduceOp::Sum)
                    .unwrap();
            }
            c.synchronize().unwrap();
        });
    };
    w.twin().unwrap().set_census(true);
    w.twin().unwrap().set_hazard_check(true);
    w.twin().unwrap().set_race_check(false);
    let before = w.twin().unwrap().checked_launches();
    calls(&w);
    let after = w.twin().unwrap().checked_launches();
    let launches: u64 = w
        .twin()
        .unwrap()
        .take_census()
        .ranks
        .iter()
        .map(|r| r.launches)
        .sum();
    assert!(launches >= 6, "{launches}");
    assert_eq!(
        after.since(before),
        CheckedLaunches {
            hazards: launches,
            races: 0,
        }
    );
}
