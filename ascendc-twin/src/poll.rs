//! Polling: what a block keeps reading, when it yields or parks, and what counts as progress.
//!
//! Every small GM read (a flag cell, a row of flags, a scalar) is remembered in a short history
//! of (address, length, value hash). Reading a remembered range and finding the same value is
//! not progress: the block yields its worker at once, and after a few such repeats parks on the
//! range until it is written (or a short timeout passes, so deadlines and the watchdog stay
//! live). A read of a new range, or of a changed value, is progress and restarts the count.
//! With the history, a block that polls several flags in turn is recognised as spinning too.
//!
//! A block parks on the range it has read unchanged most often, which need not be the one it
//! just read: a poll loop that also checks another cell now and then (aiv-comm's waits read
//! their rank's abort cell every 100 us once they have waited that long) parks on its flag,
//! and is woken when the flag is written, not only when the side cell is.

use std::sync::Arc;
use std::time::{Duration, Instant};

use smallvec::SmallVec;

use crate::block::BlockCtx;
use crate::error::FaultKind;
use crate::mem::Found;
use crate::meta::RegionMeta;
use crate::sched::{Park, Req};

/// Ranges a block's poll history remembers.
const HISTORY: usize = 8;

#[derive(Clone, Default)]
struct Seen {
    addr: usize,
    len: usize,
    hash: u64,
    repeats: u32,
    /// Whether its reads come from GM (see [`observe`]).
    fresh: bool,
    /// Counters of the GM allocation it lies in (for parking on it).
    meta: Option<Arc<RegionMeta>>,
}

/// The poll history of one block.
#[derive(Default)]
pub(crate) struct PollState {
    seen: SmallVec<[Seen; HISTORY]>,
    /// Parks since the last progress (timeouts back off with it).
    parks: u32,
}

/// FNV-1a over the polled bytes: a cheap fingerprint of "the same value again".
pub(crate) fn hash_bytes(b: &[u8]) -> u64 {
    // Eight bytes per step (a poll hashes every flag it reads; byte-wise FNV was 6% of a small
    // collective), the length folded in so that prefixes differ.
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ b.len() as u64;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let x = u64::from_le_bytes(w.try_into().expect("8-byte chunk"));
        h = (h ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A small read of `[addr, addr + seen.len())` returned `seen`; `fresh` says whether it came
/// from GM now (DMA, or a scalar read that missed the cache: a write can change it) or from the
/// block's scalar data cache (only a timeout can). `found`: the allocation. Yields or
/// parks a block that keeps finding the same values.
pub(crate) fn observe(
    ctx: &mut BlockCtx,
    addr: usize,
    seen: &[u8],
    fresh: bool,
    found: Option<&Found>,
) -> Result<(), FaultKind> {
    let len = seen.len();
    let hash = hash_bytes(seen);
    let p = &mut ctx.poll;
    let repeats = match p
        .seen
        .iter_mut()
        .position(|s| s.addr == addr && s.len == len)
    {
        Some(i) if p.seen[i].hash == hash => {
            p.seen[i].repeats += 1;
            p.seen[i].repeats
        }
        Some(i) => {
            p.seen[i].hash = hash;
            p.seen[i].repeats = 0;
            p.parks = 0;
            progressed(ctx);
            return Ok(());
        }
        None => {
            if p.seen.len() == HISTORY {
                p.seen.remove(0);
            }
            p.seen.push(Seen {
                addr,
                len,
                hash,
                repeats: 0,
                fresh,
                meta: found.map(Found::meta_arc),
            });
            p.parks = 0;
            progressed(ctx);
            return Ok(());
        }
    };
    // The host usually has far fewer cores than the simulated blocks: spinning steals time from
    // the blocks that move data, so back off at the first repeat. (Reading again before the
    // worker's other blocks ran rarely finds a change: only the other workers can write
    // meanwhile. Yielding at the third read instead cost 6% more instructions per 8-rank 64 KiB
    // AllReduce on one worker, 12% more with the checkers on.)
    match repeats {
        0..=9 => ctx.suspend(Req::Yield),
        _ => {
            let timeout = Duration::from_micros(50u64 << ctx.poll.parks.min(8));
            ctx.poll.parks += 1;
            set_spinning(ctx);
            ctx.status
                .poll_parked
                .store(true, std::sync::atomic::Ordering::SeqCst);
            // The range read unchanged most often (this one on a tie): the block's flag, not a
            // cell it checks on the side.
            let most = ctx
                .poll
                .seen
                .iter()
                .filter(|s| s.repeats > repeats)
                .max_by_key(|s| s.repeats);
            let park = match most {
                Some(s) => Park {
                    addr: s.addr,
                    len: s.len,
                    hash: s.hash,
                    fresh: s.fresh,
                    until: Instant::now() + timeout,
                    meta: s.meta.clone(),
                },
                None => Park {
                    addr,
                    len,
                    hash,
                    fresh,
                    until: Instant::now() + timeout,
                    meta: found.map(Found::meta_arc),
                },
            };
            ctx.suspend(Req::Park(park));
            if ctx.launch.is_aborted() {
                return Err(FaultKind::Aborted);
            }
        }
    }
    Ok(())
}

/// A read of a new range or a changed value: progress, and no longer parked on a poll.
fn progressed(ctx: &BlockCtx) {
    let parked = &ctx.status.poll_parked;
    if parked.load(std::sync::atomic::Ordering::Relaxed) {
        parked.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    ctx.progress();
}

/// Publishes the ranges the block keeps reading unchanged (for the watchdog's report).
fn set_spinning(ctx: &BlockCtx) {
    let mut s = ctx.status.spinning.lock();
    s.clear();
    s.extend(
        ctx.poll
            .seen
            .iter()
            .filter(|x| x.repeats >= 2)
            .rev()
            .take(4)
            .map(|x| (x.addr, x.len)),
    );
}
