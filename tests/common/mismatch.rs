//! The rule a mismatched call must follow: an error on every rank, named by at least one.

use std::time::Duration;

use aiv_comm::{Error, World};

/// Checks the results of one call on every rank of `w` where rank `odd_rank` made a different
/// call (`what` describes the two, for messages), which took `elapsed`: it ended well before
/// any wait's deadline (a mismatch, not a timeout), every rank failed with a message naming the
/// disagreement, at least one rank reported the mismatch itself (naming itself or the odd rank),
/// and every communicator is failed now.
pub fn assert_mismatch_on_every_rank(
    w: &World,
    res: &[aiv_comm::Result<()>],
    elapsed: Duration,
    odd_rank: u32,
    what: &str,
) {
    assert!(
        elapsed < Duration::from_secs(10),
        "{what}: took {elapsed:?} (a timeout, not a mismatch)"
    );
    let mut named = false;
    for (r, res) in res.iter().enumerate() {
        let e = match res {
            Err(e) => e,
            Ok(()) => panic!("{what}: rank {r} succeeded"),
        };
        let msg = e.to_string();
        assert!(
            msg.contains(" but rank ") && msg.contains("at the same point"),
            "{what}: rank {r}: {msg}"
        );
        if let Error::CollectiveMismatch {
            rank,
            peer,
            mine,
            theirs,
            ..
        } = e
        {
            assert_eq!(*rank, r as u32);
            assert_ne!(mine, theirs);
            assert!(*rank == odd_rank || *peer == odd_rank, "{msg}");
            named = true;
        }
    }
    assert!(named, "{what}: no rank reported the mismatch itself");
    assert!(w.comms().iter().all(|c| c.failure().is_some()));
}
