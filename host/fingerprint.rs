//! Call fingerprints: what a collective launch stores next to its tag, so that peers running
//! another call notice at their first wait.
//!
//! Every rank of a world must issue the same collectives in the same order with the same
//! arguments. When one does not (all_gather against all_reduce, another count, dtype, op or
//! algorithm), the kernels would happily mix data whenever each call fits one chunk. Each launch
//! therefore carries a fingerprint of (operation, count, dtype, op, algorithm, chunk, and the
//! root or a digest of the per-rank counts) in the
//! payload lanes of its broadcast cells (`AivCollArgs::fp`); a peer's wait compares it with its
//! own, and a difference fails both sides with [`crate::Error::CollectiveMismatch`], naming both
//! calls. It costs nothing extra: the cell is moved by the same 32-byte DMA as the tag.

use crate::dtype::{DataType, ReduceOp};
use crate::ffi;

/// The collective a launch belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallOp {
    AllGather = 1,
    AllReduce = 2,
    ReduceScatter = 3,
    ReduceScatterV = 4,
    AllGatherV = 5,
    Broadcast = 6,
    AllToAll = 7,
    AllToAllV = 8,
    Barrier = 9,
    /// The count exchange that starts an AlltoAllV.
    AllToAllVCounts = 10,
    AllToAllVC = 11,
}

// The operation takes bits 24-27 of a fingerprint's first lane; bit 30 is AIV_FP_ANNOUNCED.
static_assertions::const_assert!(CALL_OPS.len() < 16);

const CALL_OPS: [CallOp; 11] = [
    CallOp::AllGather,
    CallOp::AllReduce,
    CallOp::ReduceScatter,
    CallOp::ReduceScatterV,
    CallOp::AllGatherV,
    CallOp::Broadcast,
    CallOp::AllToAll,
    CallOp::AllToAllV,
    CallOp::Barrier,
    CallOp::AllToAllVCounts,
    CallOp::AllToAllVC,
];

impl CallOp {
    fn name(self) -> &'static str {
        match self {
            CallOp::AllGather => "all_gather",
            CallOp::AllReduce => "all_reduce",
            CallOp::ReduceScatter => "reduce_scatter",
            CallOp::ReduceScatterV => "reduce_scatter_v",
            CallOp::AllGatherV => "all_gather_v",
            CallOp::Broadcast => "broadcast",
            CallOp::AllToAll => "all_to_all",
            CallOp::AllToAllV => "all_to_all_v",
            CallOp::Barrier => "barrier",
            CallOp::AllToAllVCounts => "all_to_all_v's count exchange",
            CallOp::AllToAllVC => "all_to_all_vc",
        }
    }
}

/// A 32-bit digest (FNV-1a) of per-rank counts: what the V collectives fingerprint, since every
/// rank must pass the same counts.
pub(crate) fn counts_digest(counts: impl IntoIterator<Item = u64>) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for c in counts {
        for b in c.to_le_bytes() {
            h = (h ^ b as u32).wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// An AllReduce algorithm as fingerprinted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algo {
    None = 0,
    OneShot = 1,
    TwoShot = 2,
    Hd = 3,
    /// Push-mode one-shot (AllGather or AllReduce, kernel/push.cpp).
    Push = 4,
}

impl From<crate::plan::Kind> for Algo {
    /// The fingerprint's name for the kernel a chunk runs: the AllReduce kernels and the push
    /// kernels are told apart; the other kinds are the only kernel of their collective.
    fn from(kind: crate::plan::Kind) -> Algo {
        use crate::plan::Kind;
        match kind {
            Kind::AllReduceOneShot => Algo::OneShot,
            Kind::AllReduceTwoShot => Algo::TwoShot,
            Kind::AllGatherPush | Kind::AllReducePush => Algo::Push,
            Kind::AllGather
            | Kind::AllGatherV
            | Kind::Broadcast
            | Kind::ReduceScatter
            | Kind::AllToAll => Algo::None,
        }
    }
}

/// One launch of a call, as its fingerprint describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Call {
    pub op: CallOp,
    /// Elements per rank of the whole call.
    pub count: u64,
    pub dtype: DataType,
    pub redop: Option<ReduceOp>,
    pub algo: Algo,
    /// This launch's chunk, and the call's number of chunks.
    pub chunk: u32,
    pub chunks: u32,
    /// Broadcast: the root; the V collectives: [`counts_digest`] of the counts every rank must
    /// agree on; otherwise 0.
    pub extra: u32,
}

const REDOPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];
const ALGOS: [Algo; 5] = [
    Algo::None,
    Algo::OneShot,
    Algo::TwoShot,
    Algo::Hd,
    Algo::Push,
];

impl Call {
    /// A call of `op` on `count` elements of `dtype` (reduced with `redop`), no algorithm,
    /// chunk fields and extra 0 (set them with struct update syntax).
    pub fn of(op: CallOp, count: u64, dtype: DataType, redop: Option<ReduceOp>) -> Call {
        Call {
            op,
            count,
            dtype,
            redop,
            algo: Algo::None,
            chunk: 0,
            chunks: 0,
            extra: 0,
        }
    }

    /// The payload lanes of the call's broadcast cells.
    pub fn encode(&self) -> [i32; ffi::AIV_PAYLOAD_LANES as usize] {
        let dt = DataType::ALL
            .iter()
            .position(|d| *d == self.dtype)
            .map_or(0, |i| i + 1) as u32;
        let op = self
            .redop
            .and_then(|r| REDOPS.iter().position(|x| *x == r))
            .map_or(0, |i| i + 1) as u32;
        let head = (self.op as u32) << 24 | (self.algo as u32) << 16 | dt << 8 | op;
        [
            head as i32,
            self.count as u32 as i32,
            (self.count >> 32) as u32 as i32,
            self.chunk as i32,
            self.chunks as i32,
            self.extra as i32,
        ]
    }

    /// The call a fingerprint describes, if it is one.
    pub fn decode(fp: &[i32]) -> Option<Call> {
        // A writer that announced its data's address marks the first lane (AIV_FP_ANNOUNCED).
        let head = *fp.first()? as u32 & !ffi::AIV_FP_ANNOUNCED;
        let op = *CALL_OPS.get(((head >> 24) as usize).checked_sub(1)?)?;
        let algo = *ALGOS.get(((head >> 16) & 0xff) as usize)?;
        let dtype = *DataType::ALL.get((((head >> 8) & 0xff) as usize).checked_sub(1)?)?;
        let redop = match head & 0xff {
            0 => None,
            i => Some(*REDOPS.get(i as usize - 1)?),
        };
        Some(Call {
            op,
            count: fp[1] as u32 as u64 | (fp[2] as u32 as u64) << 32,
            dtype,
            redop,
            algo,
            chunk: fp[3] as u32,
            chunks: fp[4] as u32,
            extra: fp[5] as u32,
        })
    }

    /// In words, e.g. `all_reduce of 1000 x float, sum, one_shot (chunk 1 of 3)`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} of {} x {}", self.op.name(), self.count, self.dtype);
        match self.op {
            CallOp::Broadcast => s += &format!(" from root {}", self.extra),
            CallOp::ReduceScatterV
            | CallOp::AllGatherV
            | CallOp::AllToAllV
            | CallOp::AllToAllVCounts
            | CallOp::AllToAllVC => s += &format!(", counts #{:08x}", self.extra),
            _ => {}
        }
        if let Some(r) = self.redop {
            s += &format!(", {r}");
        }
        match self.algo {
            Algo::None => {}
            Algo::OneShot => s += ", one_shot",
            Algo::TwoShot => s += ", two_shot",
            Algo::Hd => s += ", hd",
            Algo::Push => s += ", push",
        }
        s + &format!(" (chunk {} of {})", self.chunk + 1, self.chunks)
    }
}

/// The description of a fingerprint seen in a peer's cell.
pub(crate) fn describe(fp: &[i32]) -> String {
    match Call::decode(fp) {
        Some(c) => c.describe(),
        None if fp.iter().all(|&x| x == 0) => "no collective (a cell without a call)".into(),
        None => format!("an unknown call (fingerprint {fp:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_and_any_difference_shows() {
        let base = Call {
            op: CallOp::AllReduce,
            count: (1 << 40) + 7,
            dtype: DataType::Bf16,
            redop: Some(ReduceOp::Max),
            algo: Algo::TwoShot,
            chunk: 3,
            chunks: 9,
            extra: 0,
        };
        assert_eq!(Call::decode(&base.encode()), Some(base));
        let variants = [
            Call {
                op: CallOp::AllGather,
                redop: None,
                algo: Algo::None,
                ..base
            },
            Call { count: 7, ..base },
            Call {
                dtype: DataType::F16,
                ..base
            },
            Call {
                redop: Some(ReduceOp::Sum),
                ..base
            },
            Call {
                algo: Algo::OneShot,
                ..base
            },
            Call { chunk: 4, ..base },
            Call { chunks: 8, ..base },
            Call { extra: 5, ..base },
            Call {
                op: CallOp::Broadcast,
                ..base
            },
        ];
        for v in variants {
            assert_ne!(v.encode(), base.encode(), "{v:?}");
            assert_eq!(Call::decode(&v.encode()), Some(v));
        }
        for dt in DataType::ALL {
            let c = Call { dtype: dt, ..base };
            assert_eq!(Call::decode(&c.encode()), Some(c));
        }
        assert_eq!(
            base.describe(),
            "all_reduce of 1099511627783 x bfloat16, max, two_shot (chunk 4 of 9)"
        );
        assert!(describe(&[0; 6]).starts_with("no collective"));
        for op in CALL_OPS {
            let c = Call { op, ..base };
            assert_eq!(Call::decode(&c.encode()), Some(c));
        }
        assert_eq!(
            Call {
                op: CallOp::Broadcast,
                redop: None,
                algo: Algo::None,
                extra: 2,
                ..base
            }
            .describe(),
            "broadcast of 1099511627783 x bfloat16 from root 2 (chunk 4 of 9)"
        );
        assert_ne!(counts_digest([1, 2, 3]), counts_digest([1, 3, 2]));
        assert_ne!(counts_digest([0, 0]), counts_digest([0]));
    }
}
