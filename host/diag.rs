//! Diagnostic records kernels leave in a rank's sync area, turned into errors in the user's
//! terms: which rank waited for whom, on which flag, for what.

use crate::error::Error;
use crate::ffi;

/// What the sync-area cell at byte `cell` is, in words a user can act on.
pub fn cell_name(cell: u64) -> String {
    let fb = ffi::AIV_FLAG_BYTES as u64;
    let c = cell;
    let index = |base: u32| (c - base as u64) / fb;
    if c < ffi::AIV_ONE2N_OFFSET as u64 {
        let i = index(ffi::AIV_PAIR_OFFSET);
        format!(
            "pairwise cell from rank {}, slot {}",
            i / ffi::AIV_PAIR_SLOTS as u64,
            i % ffi::AIV_PAIR_SLOTS as u64
        )
    } else if c < ffi::AIV_COUNT_OFFSET as u64 {
        format!("broadcast cell, slot {}", index(ffi::AIV_ONE2N_OFFSET))
    } else if c < ffi::AIV_BARRIER_OFFSET as u64 {
        format!("counting cell, slot {}", index(ffi::AIV_COUNT_OFFSET))
    } else if c < ffi::AIV_LINK_OFFSET as u64 {
        format!("barrier cell of block {}", index(ffi::AIV_BARRIER_OFFSET))
    } else if c < ffi::AIV_SRC_OFFSET as u64 {
        let i = index(ffi::AIV_LINK_OFFSET);
        let from = i / ffi::AIV_LINK_KINDS as u64;
        let what = match (i % ffi::AIV_LINK_KINDS as u64) as u32 {
            ffi::AIV_LINK_P2P_DATA => "send -> recv \"chunk staged\" cell",
            ffi::AIV_LINK_P2P_DONE => "recv -> send \"chunk read\" cell",
            ffi::AIV_LINK_ACK => "ack cell (tx_ack / rx_ack)",
            _ => "data-signal cell (tx_data_signal / rx_data_signal)",
        };
        format!("{what} from rank {from}")
    } else if c < ffi::AIV_ABORT_OFFSET as u64 {
        format!(
            "address cell of broadcast slot {} (where a window's data is)",
            index(ffi::AIV_SRC_OFFSET)
        )
    } else if c < ffi::AIV_SYNC_AREA_BYTES as u64 {
        "abort cell (set when the host stops the world)".to_string()
    } else {
        format!("byte {c:#x}, past the sync area")
    }
}

/// The error a diagnostic record describes; `mine` is the fingerprint of the failed launch's own
/// call, for a mismatch (see `fingerprint.rs`).
pub(crate) fn diag_error(d: &ffi::AivDiag, mine: Option<&[i32]>) -> Error {
    match d.kind as u32 {
        ffi::AIV_DIAG_SIZE => {
            return Error::SizeMismatch {
                rank: d.rank as u32,
                peer: d.peer as u32,
                mine: d.expected as u64,
                theirs: d.observed as u64,
            }
        }
        ffi::AIV_DIAG_MISMATCH => {
            return Error::CollectiveMismatch {
                rank: d.rank as u32,
                peer: d.peer as u32,
                mine: mine.map_or_else(|| "this call".to_string(), crate::fingerprint::describe),
                theirs: crate::fingerprint::describe(&d.seen),
            }
        }
        ffi::AIV_DIAG_SOURCE => {
            return Error::Internal(format!(
                "rank {} block {}: rank {}'s ready flag for tag {} announced where its data is, \
                 but its {} holds tag {} (the address cell is stored before the flag: a kernel \
                 that sets AIV_FP_ANNOUNCED without SoftSync::Record1vNAt, or memory overwritten)",
                d.rank,
                d.block,
                d.peer,
                d.expected,
                cell_name(d.cell),
                d.observed
            ))
        }
        _ => {}
    }
    let what = match d.kind as u32 {
        ffi::AIV_DIAG_WAIT => "Wait",
        ffi::AIV_DIAG_WAIT_NV1 => "WaitNv1",
        ffi::AIV_DIAG_WAIT_1VN => "Wait1vN",
        ffi::AIV_DIAG_BARRIER => "BarrierAll",
        ffi::AIV_DIAG_CHAIN => "a wait for an earlier block of the same rank",
        _ => "link wait",
    };
    let us = d.waited_cycles / (crate::backend::SYSTEM_CYCLE_HZ / 1_000_000);
    Error::WaitTimeout {
        rank: d.rank as u32,
        block: d.block as u32,
        peer: d.peer as u32,
        cell: d.cell,
        cell_name: cell_name(d.cell),
        expected: d.expected,
        observed: d.observed,
        what,
        waited_ms: us / 1000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_region_has_a_name_with_the_right_rank() {
        let fb = ffi::AIV_FLAG_BYTES as u64;
        assert_eq!(
            cell_name(ffi::AIV_PAIR_OFFSET as u64 + (2 * ffi::AIV_PAIR_SLOTS as u64 + 5) * fb),
            "pairwise cell from rank 2, slot 5"
        );
        let link = |from: u64, kind: u32| {
            cell_name(
                ffi::AIV_LINK_OFFSET as u64
                    + (from * ffi::AIV_LINK_KINDS as u64 + kind as u64) * fb,
            )
        };
        assert_eq!(
            link(3, ffi::AIV_LINK_ACK),
            "ack cell (tx_ack / rx_ack) from rank 3"
        );
        assert!(link(7, ffi::AIV_LINK_DATA).starts_with("data-signal cell"));
        assert!(link(7, ffi::AIV_LINK_DATA).ends_with("from rank 7"));
        assert!(link(0, ffi::AIV_LINK_P2P_DATA).contains("chunk staged"));
        assert!(cell_name(ffi::AIV_SYNC_AREA_BYTES as u64).contains("past the sync area"));
        assert!(link(31, ffi::AIV_LINK_DATA).ends_with("from rank 31"));
        assert_eq!(
            cell_name(ffi::AIV_SRC_OFFSET as u64 + 3 * fb),
            "address cell of broadcast slot 3 (where a window's data is)"
        );
    }

    #[test]
    fn an_address_cell_that_does_not_match_its_flag_is_named() {
        let d = ffi::AivDiag {
            magic: ffi::AIV_DIAG_MAGIC as i32,
            kind: ffi::AIV_DIAG_SOURCE as i32,
            rank: 1,
            block: 2,
            peer: 3,
            cell: ffi::AIV_SRC_OFFSET as u64 + 4 * ffi::AIV_FLAG_BYTES as u64,
            expected: 17,
            observed: 16,
            ..Default::default()
        };
        let msg = diag_error(&d, None).to_string();
        assert!(
            msg.contains("rank 1 block 2: rank 3's ready flag for tag 17"),
            "{msg}"
        );
        assert!(msg.contains("address cell of broadcast slot 4"), "{msg}");
        assert!(msg.contains("holds tag 16"), "{msg}");
    }
}
