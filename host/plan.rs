//! The chunk planner: how a collective is cut into launches that fit the HCCL buffer.
//!
//! Public are the sizing rules a user can plan against (the one-shot limit, the push region and
//! its slots, the staging slots, blocks per peer); the planning itself is the crate's own.
//!
//! ```
//! use aiv_comm::plan::{blocks_per_peer, one_shot_limit, slot_bytes, ONE_SHOT_MAX_BYTES};
//! assert_eq!(one_shot_limit(8), ONE_SHOT_MAX_BYTES);
//! ```
//! ```compile_fail,E0603
//! use aiv_comm::plan::plan_chunks; // how a call is cut: the crate's own
//! ```

use crate::dtype::DataType;
use crate::error::{Error, Result};

/// AllReduce calls of at most this many bytes per rank on 3 or more ranks use the one-shot
/// kernel (every rank stages its chunk, then reduces every rank's staged chunk itself, in rank
/// order); larger ones the two-shot kernel (reduce-scatter into slice owners, then all-gather).
/// One-shot moves about (ranks + 1) x the data per rank, two-shot about 3x but with more flag
/// rounds and n blocks per rank; see [`one_shot_limit`].
///
/// Chosen from `aiv-perf all_reduce --algo one_shot|two_shot -c 1` on the twin (2026-12-02, 2
/// cores, f32 sum, out-of-place µs per op, medians of 3 alternating runs), after one-shot became
/// one block per part of the chunk (it was a chain of one block per peer, whose limit was
/// 64 KiB x 2 / (n - 2): 21 KiB on 8 ranks):
///
/// | ranks | 16 KiB one/two | 64 KiB one/two | 128 KiB one/two | 256 KiB one/two | 1 MiB one/two | 4 MiB one/two |
/// |---|---|---|---|---|---|---|
/// | 3 | | 121 / 145 | | 199 / 185 | 616 / 608 | 6801 / 3639 |
/// | 4 | | 100 / 275 | 288 / 254 | 299 / 206 | 1426 / 972 | 10236 / 5967 |
/// | 8 | | 328 / 438 | 584 / 503 | 1167 / 587 | 5507 / 2478 | 30311 / 8837 |
/// | 16 | 558 / 1763 | 1158 / 1658 | | | | |
pub const ONE_SHOT_MAX_BYTES: usize = 64 * 1024;

/// Bytes of the push region that follows every rank's HCCL buffer (in the same allocation, past
/// the `buffer_bytes` every other kernel plans against, so no other kernel ever touches it): the
/// push-mode kernels (kernel/push.cpp) write each rank's input into a slot of it per writer,
/// [`push_slot_bytes`] each. HCCL's AIV mode has a separate buffer of its own for the same
/// reason.
pub const PUSH_REGION_BYTES: usize = 8 << 20;

/// One writer's slot in a push region on `ranks` ranks: an equal share of
/// [`PUSH_REGION_BYTES`], whole 32-byte blocks (the largest push chunk, in bytes per rank).
pub fn push_slot_bytes(ranks: usize) -> usize {
    PUSH_REGION_BYTES / ranks.max(1) / 32 * 32
}

/// Which AllReduce kernel to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AllReduceAlgo {
    /// By size and rank count: one-shot up to [`one_shot_limit`] bytes per rank, two-shot above.
    #[default]
    Auto,
    /// Every rank stages its chunk, then reduces every rank's staged chunk itself, in rank order
    /// (one flag round and a post-sync; blocks are parts of the chunk, by size).
    OneShot,
    /// Reduce-scatter into slice owners' HCCL buffers, then all-gather of the slices.
    TwoShot,
    /// Recursive halving-doubling orchestrated on streams ([`crate::Communicator::all_reduce_hd`]).
    Hd,
    /// Push-mode one-shot: every rank writes its chunk into a slot of each peer's push region
    /// and flags it; every rank then sums its input and the slots in rank order (one flag round;
    /// chunks of at most [`push_slot_bytes`]).
    Push,
}

impl std::str::FromStr for AllReduceAlgo {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(AllReduceAlgo::Auto),
            "one_shot" | "oneshot" => Ok(AllReduceAlgo::OneShot),
            "two_shot" | "twoshot" => Ok(AllReduceAlgo::TwoShot),
            "hd" => Ok(AllReduceAlgo::Hd),
            "push" => Ok(AllReduceAlgo::Push),
            _ => Err(format!(
                "unknown AllReduce algorithm `{s}` (auto one_shot two_shot hd push)"
            )),
        }
    }
}

/// Which AllGather kernel to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AllGatherAlgo {
    /// By size and rank count; so far always [`AllGatherAlgo::PullParts`] (push is no faster on
    /// the twin at any size measured: `tests/integration/push.rs`' ignored `measure`).
    #[default]
    Auto,
    /// Seed 000's staging and pull: every rank stages its chunk in its own HCCL buffer, every
    /// peer pulls it from there, then a pairwise post-sync (two flag rounds). One block per peer
    /// (and part of the chunk, by size).
    Pull,
    /// The same protocol, cells and copies as [`AllGatherAlgo::Pull`] on fewer blocks: one per
    /// part of the chunk (one below 1 MiB), each staging its part and then pulling it from
    /// every peer in turn. Ranks running `Pull` and `PullParts` work together.
    PullParts,
    /// Push-mode one-shot: every rank writes its chunk into a slot of each peer's push region
    /// and flags it; the peer copies the slot into its output (one flag round; chunks of at
    /// most [`push_slot_bytes`]).
    Push,
}

impl std::str::FromStr for AllGatherAlgo {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(AllGatherAlgo::Auto),
            "pull" | "staging" => Ok(AllGatherAlgo::Pull),
            "pull_parts" => Ok(AllGatherAlgo::PullParts),
            "push" => Ok(AllGatherAlgo::Push),
            _ => Err(format!(
                "unknown AllGather algorithm `{s}` (auto pull pull_parts push)"
            )),
        }
    }
}

/// Which kernel a collective's chunks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Kind {
    /// AllGather: each rank stages its chunk in its own HCCL buffer.
    AllGather,
    /// One-shot AllReduce: the chunk is staged whole.
    AllReduceOneShot,
    /// Two-shot AllReduce: the chunk (32-byte aligned) plus one slice must fit.
    AllReduceTwoShot,
    /// Push-mode AllGather: each rank writes its chunk into a slot of every peer's push region.
    AllGatherPush,
    /// Push-mode AllReduce: as [`Kind::AllGatherPush`], then every rank reduces the slots.
    AllReducePush,
    /// AllGatherV: each rank stages its piece of the chunk in its own HCCL buffer.
    AllGatherV,
    /// Broadcast: the root stages the chunk in its HCCL buffer.
    Broadcast,
    /// ReduceScatter(V): each rank stages one piece per destination, in a slot of
    /// [`slot_bytes`] per rank; chunk counts are per destination.
    ReduceScatter,
    /// AlltoAll(V): as ReduceScatter, a slot per destination.
    AllToAll,
}

impl Kind {
    /// The `algo` code of `aiv_all_reduce`'s arguments (`AivCollArgs::algo`) for the AllReduce
    /// kinds that kernel runs; `None` for the others.
    pub(crate) fn all_reduce_code(self) -> Option<u32> {
        match self {
            Kind::AllReduceOneShot => Some(crate::ffi::AIV_AR_ONE_SHOT),
            Kind::AllReduceTwoShot => Some(crate::ffi::AIV_AR_TWO_SHOT),
            _ => None,
        }
    }
}

/// Blocks per peer by the bytes each pair of blocks moves in one launch: `(at least, blocks)`,
/// largest first. One block per peer is the small-message shape (fewest coroutines on the twin,
/// fewest flags); on the NPU a single AIV core's DMA cannot fill HCCS / HBM bandwidth, so
/// HCCL's big-data AIV kernels spread a peer's transfer over several cores (2n blocks for
/// AllReduce from 16 MB, for example). Each block moves a 32-byte-aligned part of the
/// transfer with flags of its own, so results are identical whatever the split.
pub const BLOCKS_PER_PEER: [(usize, u32); 3] = [(16 << 20, 8), (4 << 20, 4), (1 << 20, 2)];

/// Most blocks per peer (two-shot AllReduce counts per part in one of its 8 counting cells).
pub const MAX_BLOCKS_PER_PEER: u32 = 8;

/// Blocks per peer for a launch on `ranks` ranks of devices with `cores` AIV cores whose block
/// pairs each move `pair_bytes` ([`BLOCKS_PER_PEER`]), at most [`MAX_BLOCKS_PER_PEER`] and
/// `min(cores, 48) / ranks` (the flag layout has cells for 48 blocks, `AIV_MAX_BLOCKS`), at
/// least 1.
///
/// ```
/// use aiv_comm::plan::blocks_per_peer;
/// assert_eq!(blocks_per_peer(64 << 10, 8, 48), 1);
/// assert_eq!(blocks_per_peer(2 << 20, 8, 48), 2);
/// assert_eq!(blocks_per_peer(64 << 20, 8, 48), 6); // 48 cores / 8 ranks
/// assert_eq!(blocks_per_peer(64 << 20, 2, 48), 8);
/// assert_eq!(blocks_per_peer(64 << 20, 32, 48), 1);
/// assert_eq!(blocks_per_peer(64 << 20, 8, 64), 6); // 48 flag cells / 8 ranks
/// ```
pub fn blocks_per_peer(pair_bytes: usize, ranks: usize, cores: u32) -> u32 {
    let k = BLOCKS_PER_PEER
        .iter()
        .find(|(min, _)| pair_bytes >= *min)
        .map_or(1, |&(_, k)| k);
    capped_blocks_per_peer(k, ranks, cores)
}

/// Blocks per peer with a forced split (`Config::blocks_per_peer`) or, with none, by size:
/// `forced` capped as [`capped_blocks_per_peer`], else [`blocks_per_peer`].
pub(crate) fn blocks_for(forced: Option<u32>, pair_bytes: usize, ranks: usize, cores: u32) -> u32 {
    match forced {
        Some(k) => capped_blocks_per_peer(k, ranks, cores),
        None => blocks_per_peer(pair_bytes, ranks, cores),
    }
}

/// `k` blocks per peer within the limits of [`blocks_per_peer`].
pub(crate) fn capped_blocks_per_peer(k: u32, ranks: usize, cores: u32) -> u32 {
    let cores = cores.min(crate::ffi::AIV_MAX_BLOCKS) as usize;
    // `cores / ranks` <= 48: the cast back cannot truncate.
    k.min((cores / ranks.max(1)) as u32)
        .clamp(1, MAX_BLOCKS_PER_PEER)
}

/// The staging slot per destination rank in an HCCL buffer of `buffer_bytes` (ReduceScatter,
/// AlltoAll, send/recv): an equal share, whole 32-byte blocks.
pub fn slot_bytes(buffer_bytes: usize, ranks: usize) -> usize {
    buffer_bytes / ranks.max(1) / 32 * 32
}

/// One launch of a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// First element of the chunk.
    pub(crate) offset: usize,
    /// Elements in the chunk.
    pub(crate) count: usize,
    /// Index of the chunk (its tag is the base tag of the call plus this).
    pub(crate) index: usize,
}

/// The AllReduce kernel for a call of `bytes` per rank: one-shot up to [`one_shot_limit`] and
/// two-shot above. The push-mode kernel ([`Kind::AllReducePush`]) is never picked here: on the
/// twin it is not faster when the machine is quiet, whatever it saves on the NPU.
///
/// On 2 ranks push AllReduce moves fewer bytes than one-shot (it sums in UB with the vector
/// unit and stores the result once: reads 3 B, writes 2 B per rank, one-shot reads 3 B and
/// writes 3 B) and has one flag round instead of two; on 3 or more ranks it reads (2n - 1) B per
/// rank against two-shot's ~3 B. Measured first with two other builds running on the 2 cores
/// (`cargo test --release --test integration push::measure -- --ignored`, µs per op, medians of 5 samples,
/// three runs), where push won on 2 ranks from 64 KiB (the one-shot columns here and below are
/// of the chain kernel one-shot replaced on 2026-12-02, see [`ONE_SHOT_MAX_BYTES`]):
///
/// | ranks | bytes/rank | one-shot | two-shot | push |
/// |---|---|---|---|---|
/// | 2 | 8 KiB | 28 34 25 | 28 42 29 | 30 34 24 |
/// | 2 | 32 KiB | 71 36 42 | 85 71 43 | 67 63 45 |
/// | 2 | 64 KiB | 96 102 99 | 97 92 109 | 84 97 92 |
/// | 2 | 128 KiB | 155 152 146 | 98 124 101 | 83 100 73 |
/// | 2 | 512 KiB | 486 342 461 | 313 189 183 | 150 145 165 |
/// | 2 | 1 MiB | 547 504 545 | 419 379 700 | 337 318 431 |
/// | 2 | 2 MiB | 1001 1024 1004 | 1085 704 722 | 575 527 550 |
/// | 4 | 64 KiB | 436 465 463 | 283 287 295 | 345 534 340 |
/// | 4 | 1 MiB | 5187 5329 5552 | 2186 2656 2398 | 4247 5168 4640 |
/// | 8 | 64 KiB | 2636 | 1026 | 1682 |
///
/// then on a quiet machine, interleaved, medians of 7 runs of `aiv-perf all_reduce -b 64K -e 2M
/// -f 8 -p 2 -c 1 -n 200 --algo ALGO` (2026-12-01): 64 KiB one-shot 32.3, two-shot 30.5, push
/// 43.7 µs; 512 KiB one-shot 110, two-shot 130, push 158 µs. A guess, not profiled: under
/// contention its single round means fewer polls competing for the cores, alone its in-UB
/// reduction and two block barriers cost more than the round saves. So `Auto` keeps one-shot /
/// two-shot, and push stays a choice (`AllReduceAlgo::Push`, `aiv-perf --algo push`).
pub(crate) fn all_reduce_kind(bytes: usize, ranks: usize) -> Kind {
    if bytes <= one_shot_limit(ranks) {
        Kind::AllReduceOneShot
    } else {
        Kind::AllReduceTwoShot
    }
}

/// True if an AllGather of `bytes` per rank on `ranks` ranks uses the push-mode kernel
/// ([`crate::AllGatherAlgo::Auto`]): never so far. On the twin push AllGather is no faster than
/// staging + pull at any size or rank count measured (2 ranks: within noise from 8 KiB to 2 MiB;
/// 4 and 8 ranks: 10-70% slower from 16 KiB up), because the twin's DMA cost is the bytes it
/// moves and push moves more: per rank per op it reads (2n - 1) B and writes (2n - 1) B
/// (every pushed byte is written once into the peer's region and copied once more into the
/// output), staging + pull reads n B and writes (n + 1) B. What push saves is a flag round and
/// remote reads, which the twin does not price (a remote read costs what a local one does).
///
/// Measured with `cargo test --release --test integration push::measure -- --ignored` (2026-12-01, 2 cores
/// shared with two other builds, checkers off, f32, µs per op, medians of 5 samples, three
/// runs):
///
/// | ranks | bytes/rank | pull | push |
/// |---|---|---|---|
/// | 2 | 8 KiB | 23 26 22 | 22 25 22 |
/// | 2 | 64 KiB | 64 52 53 | 54 59 55 |
/// | 2 | 256 KiB | 149 106 132 | 119 135 131 |
/// | 2 | 1 MiB | 372 455 392 | 695 509 459 |
/// | 4 | 64 KiB | 155 162 170 | 191 200 205 |
/// | 4 | 1 MiB | 1935 2780 2346 | 3372 8072 3911 |
pub(crate) fn all_gather_push(bytes: usize, ranks: usize) -> bool {
    let _ = (bytes, ranks);
    false
}

/// Largest per-rank AllReduce (bytes) that uses the one-shot kernel on `ranks` ranks:
/// unlimited on 1-2 ranks (one-shot moves no more than two-shot there and has fewer flag
/// rounds: 1 MiB ~255 vs ~460 µs, 16 MiB within noise), [`ONE_SHOT_MAX_BYTES`] from 3 on.
pub fn one_shot_limit(ranks: usize) -> usize {
    match ranks {
        0..=2 => usize::MAX,
        _ => ONE_SHOT_MAX_BYTES,
    }
}

/// Largest chunk (elements) of `kind` that fits an HCCL buffer of `buffer_bytes`.
pub(crate) fn chunk_capacity(
    kind: Kind,
    dtype: DataType,
    ranks: usize,
    buffer_bytes: usize,
) -> usize {
    let es = dtype.size();
    let bytes = match kind {
        Kind::AllGather | Kind::AllReduceOneShot | Kind::AllGatherV | Kind::Broadcast => {
            buffer_bytes
        }
        Kind::ReduceScatter | Kind::AllToAll => slot_bytes(buffer_bytes, ranks),
        Kind::AllGatherPush | Kind::AllReducePush => push_slot_bytes(ranks),
        Kind::AllReduceTwoShot => {
            // A (len rounded up to 32) + B (one slice: len / ranks rounded up to 32) <= buffer.
            let n = ranks.max(1);
            let usable = buffer_bytes.saturating_sub(64);
            usable / (n + 1) * n
        }
    };
    // Whole 32-byte blocks when possible, so every chunk but the last moves by DataCopy only.
    let bytes = if bytes >= 32 { bytes / 32 * 32 } else { bytes };
    bytes / es
}

/// Most chunks (launches) one call may be cut into: 2^24 - 1, a wait of days on any device.
/// AlltoAllV reserves tags for this many chunks before it knows how many it needs.
pub(crate) const MAX_CHUNKS: usize = (1 << 24) - 1;

/// Cuts `count` elements into chunks of at most the capacity of `kind`; every element is in
/// exactly one chunk, in order. `count == 0` gives no chunks. More than [`MAX_CHUNKS`] chunks
/// is an [`Error::Length`] (a count no buffer could hold, or an HCCL buffer far too small for
/// it).
pub(crate) fn plan_chunks(
    kind: Kind,
    count: usize,
    dtype: DataType,
    ranks: usize,
    buffer_bytes: usize,
) -> Result<Vec<Chunk>> {
    let cap = chunk_capacity(kind, dtype, ranks, buffer_bytes);
    if cap == 0 {
        return Err(Error::Config(format!(
            "HCCL buffer of {buffer_bytes} bytes cannot hold one {dtype} element for {kind:?}"
        )));
    }
    let chunks = count.div_ceil(cap);
    if chunks > MAX_CHUNKS {
        return Err(Error::Length(format!(
            "{count} elements of {dtype} need {chunks} launches of at most {cap} elements (an HCCL buffer of {buffer_bytes} bytes); at most {MAX_CHUNKS}"
        )));
    }
    Ok((0..count.div_ceil(cap))
        .map(|i| Chunk {
            offset: i * cap,
            count: cap.min(count - i * cap),
            index: i,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_that_fits_is_one_chunk_and_one_no_buffer_could_hold_is_refused() {
        assert_eq!(
            plan_chunks(Kind::AllGather, 1000, DataType::F32, 2, 4096)
                .unwrap()
                .len(),
            1
        );
        assert!(matches!(
            plan_chunks(Kind::AllGather, usize::MAX, DataType::F32, 2, 4096),
            Err(Error::Length(_))
        ));
    }

    fn covers(chunks: &[Chunk], count: usize) {
        let mut next = 0;
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c.index, i);
            assert_eq!(c.offset, next, "gap or overlap at chunk {i}");
            assert!(c.count > 0);
            next += c.count;
        }
        assert_eq!(next, count);
    }

    #[test]
    fn every_element_exactly_once_and_chunks_fit() {
        for kind in [
            Kind::AllGather,
            Kind::AllReduceOneShot,
            Kind::AllReduceTwoShot,
            Kind::AllGatherV,
            Kind::Broadcast,
            Kind::ReduceScatter,
            Kind::AllToAll,
            Kind::AllGatherPush,
            Kind::AllReducePush,
        ] {
            for dtype in DataType::ALL {
                for ranks in [1usize, 2, 3, 5, 8, 16] {
                    for buffer in [4096usize, 65536 + 17, 200 << 20] {
                        for count in [0usize, 1, 7, 1000, 123_457, 10_000_000] {
                            let chunks = plan_chunks(kind, count, dtype, ranks, buffer).unwrap();
                            covers(&chunks, count);
                            let es = dtype.size();
                            for c in &chunks {
                                let bytes = c.count * es;
                                let need = match kind {
                                    Kind::AllReduceTwoShot => {
                                        bytes.div_ceil(32) * 32
                                            + (bytes.div_ceil(ranks).div_ceil(32) * 32)
                                    }
                                    // One slot per destination, all of them in one buffer.
                                    Kind::ReduceScatter | Kind::AllToAll => {
                                        assert!(bytes <= slot_bytes(buffer, ranks));
                                        bytes * ranks
                                    }
                                    Kind::AllGatherPush | Kind::AllReducePush => {
                                        assert!(bytes <= push_slot_bytes(ranks));
                                        0
                                    }
                                    _ => bytes,
                                };
                                assert!(
                                    need <= buffer,
                                    "{kind:?} {dtype} chunk {bytes} B needs {need} > {buffer}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn exact_buffer_is_one_chunk_and_one_more_element_is_two() {
        let buf = 1 << 20;
        let n = buf / 4;
        assert_eq!(
            plan_chunks(Kind::AllGather, n, DataType::F32, 4, buf)
                .unwrap()
                .len(),
            1
        );
        let two = plan_chunks(Kind::AllGather, n + 1, DataType::F32, 4, buf).unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(
            two[1],
            Chunk {
                offset: n,
                count: 1,
                index: 1
            }
        );
    }

    #[test]
    fn one_shot_on_2_ranks_and_up_to_64_kib_from_3() {
        assert_eq!(all_reduce_kind(1 << 30, 2), Kind::AllReduceOneShot);
        assert_eq!(all_reduce_kind(64 << 10, 2), Kind::AllReduceOneShot);
        assert_eq!(all_reduce_kind(2 << 20, 2), Kind::AllReduceOneShot);
        for n in [3, 4, 8, 16, 32] {
            assert_eq!(all_reduce_kind(64 << 10, n), Kind::AllReduceOneShot, "{n}");
            assert_eq!(
                all_reduce_kind((64 << 10) + 1, n),
                Kind::AllReduceTwoShot,
                "{n}"
            );
        }
    }

    #[test]
    fn tiny_buffer_is_an_error() {
        assert!(plan_chunks(Kind::AllGather, 10, DataType::F64, 2, 4).is_err());
    }
}

/// What the host plans for whole calls, checked on the recording backend.
#[cfg(test)]
#[path = "plan_tests.rs"]
mod launches;
