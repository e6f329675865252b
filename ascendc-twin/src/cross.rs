//! Synchronisation across the cores of one launch: `CrossCoreSetFlag` / `CrossCoreWaitFlag` in
//! mode 0 and the hardware `SyncAll()` built on it.
//!
//! Mode 0 on Atlas A2 (AscendC docs, CrossCoreSetFlag): once every AIV core of the launch has
//! set flag `f`, the counter of `f` of every AIV core goes up by one; `CrossCoreWaitFlag(f)`
//! blocks while the core's counter is 0 and takes one. Counters hold 0..=15; leaving that range
//! is a hardware exception. `SyncAll()` (hardware form) is a barrier over flag 14 this way.
//! Modes 1 and 2 pair the AIVs of one AI Core with each other or with its cube core (AIC):
//! they need a mix kernel with more than one core per AI Core, which the twin does not model,
//! and are refused by name.
//!
//! A wait that can never be satisfied (a core of the launch ended without setting the flag
//! often enough) is reported at once, naming the cores that ended. For the GM race checker, a
//! core's n-th set of a flag releases into round n of that flag and its n-th completed wait
//! acquires round n: what a core wrote before its set is ordered before what every core reads
//! after the wait of that round, and nothing a faster core does for a later round is (as on
//! hardware, where a wait returns when its round completes, whatever came after).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::block::BlockCtx;
use crate::error::FaultKind;
use crate::sched::{Park, Req};

/// Flag ids of the cross-core counters.
pub(crate) const FLAGS: usize = 16;
/// Largest counter value.
const MAX_COUNT: u8 = 15;
/// Bytes of race-checker key per round (a cell of its own).
const KEY_BYTES: usize = 64;
/// Rounds with keys of their own, per flag (reused cyclically: no core can be this many rounds
/// ahead of another, as the counters hold at most 15; a key reused after that many rounds only
/// adds releases that were ordered before anyway).
const ROUND_KEYS: usize = 32;

struct State {
    /// Sets per core not yet matched by a completed round.
    sets: Vec<[u8; FLAGS]>,
    /// Counter of each flag of each core.
    counts: Vec<[u8; FLAGS]>,
    /// Cores that have ended.
    ended: Vec<bool>,
    /// Sets and completed waits of each flag of each core so far (their round numbers).
    set_rounds: Vec<[u64; FLAGS]>,
    wait_rounds: Vec<[u64; FLAGS]>,
}

/// The cross-core state of one launch.
pub(crate) struct Cross {
    state: Mutex<State>,
    /// Bumped on every change; waiting cores park on it.
    generation: AtomicU64,
    /// Race-checker keys: one cell per flag (host memory no GM access can name).
    keys: Box<[u8]>,
}

impl Cross {
    /// The state of a launch of `blocks` blocks, of which those in `ended` have ended.
    pub fn new(blocks: u32, ended: &[u32]) -> Cross {
        let n = blocks as usize;
        let mut gone = vec![false; n];
        for &b in ended {
            gone[b as usize] = true;
        }
        Cross {
            state: Mutex::new(State {
                sets: vec![[0; FLAGS]; n],
                counts: vec![[0; FLAGS]; n],
                ended: gone,
                set_rounds: vec![[0; FLAGS]; n],
                wait_rounds: vec![[0; FLAGS]; n],
            }),
            generation: AtomicU64::new(0),
            keys: vec![0u8; (FLAGS * ROUND_KEYS + 1) * KEY_BYTES].into_boxed_slice(),
        }
    }

    /// The race-checker key of round `round` of `flag`.
    fn key(&self, flag: usize, round: u64) -> usize {
        let base = self.keys.as_ptr() as usize;
        base.div_ceil(KEY_BYTES) * KEY_BYTES
            + (flag * ROUND_KEYS + (round % ROUND_KEYS as u64) as usize) * KEY_BYTES
    }

    fn bump(&self, ctx: &BlockCtx) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let pool = ctx.twin.pool.shared();
        pool.notify(self.generation.as_ptr() as usize, 8, None);
        pool.progress();
    }

    /// A core of the launch ended: waits that needed it can no longer be satisfied.
    pub fn block_end(&self, ctx: &BlockCtx) {
        self.state.lock().ended[ctx.block as usize] = true;
        self.bump(ctx);
    }
}

fn check_flag(flag: u32) -> Result<usize, FaultKind> {
    if flag as usize >= FLAGS {
        return Err(FaultKind::PipeSync {
            reason: format!("cross-core flag id {flag} is out of range: Atlas A2 has flags 0..=15"),
        });
    }
    Ok(flag as usize)
}

fn check_mode(mode: u32) -> Result<(), FaultKind> {
    match mode {
        0 => Ok(()),
        1 | 2 => Err(FaultKind::PipeSync {
            reason: format!(
                "cross-core sync mode {mode} pairs the cores inside one AI Core (mode 1: its AIVs, mode 2: its AIC and AIVs); it needs a mix kernel (__mix__(1, 1) or (1, 2)), which the aiv-comm twin does not model"
            ),
        }),
        _ => Err(FaultKind::PipeSync {
            reason: format!("cross-core sync mode {mode}: Atlas A2 has modes 0, 1 and 2"),
        }),
    }
}

/// `CrossCoreSetFlag<mode, pipe>(flag)` (what = the API named in messages).
pub(crate) fn set(ctx: &mut BlockCtx, mode: u32, flag: u32, what: &str) -> Result<(), FaultKind> {
    check_mode(mode)?;
    let f = check_flag(flag)?;
    if ctx.twin.space.is_some() {
        // What this core staged must not wait for a write another process may make once the
        // core that waits for this flag has told it to (lazy.rs).
        crate::lazy::before_release(&mut ctx.lazy);
    }
    let cross = ctx.launch.cross();
    {
        let mut s = cross.state.lock();
        let me = ctx.block as usize;
        if s.sets[me][f] == MAX_COUNT {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "{what}: flag {f} set more than {MAX_COUNT} times before the other cores set it (a cross-core counter holds 0..=15)"
                ),
            });
        }
        if s.sets.iter().enumerate().all(|(b, c)| c[f] > 0 || b == me) {
            if let Some(b) = s.counts.iter().position(|c| c[f] == MAX_COUNT) {
                return Err(FaultKind::PipeSync {
                    reason: format!(
                        "{what}: the counter of flag {f} of block {b} would exceed {MAX_COUNT} (it was not waited for)"
                    ),
                });
            }
        }
        if let Some(rc) = ctx.race.as_mut() {
            rc.release(&ctx.twin.race, cross.key(f, s.set_rounds[me][f]), 1);
        }
        s.set_rounds[me][f] += 1;
        s.sets[me][f] += 1;
        if s.sets.iter().all(|c| c[f] > 0) {
            for c in s.sets.iter_mut() {
                c[f] -= 1;
            }
            for c in s.counts.iter_mut() {
                c[f] += 1;
            }
        }
    }
    cross.bump(ctx);
    Ok(())
}

/// `CrossCoreWaitFlag<mode>(flag)`: blocks until this core's counter of `flag` is positive.
pub(crate) fn wait(ctx: &mut BlockCtx, mode: u32, flag: u32, what: &str) -> Result<(), FaultKind> {
    check_mode(mode)?;
    let f = check_flag(flag)?;
    let cross = ctx.launch.cross();
    let me = ctx.block as usize;
    let mut backoff = 0u32;
    let round;
    loop {
        let seen = cross.generation.load(Ordering::SeqCst);
        {
            let mut s = cross.state.lock();
            if s.counts[me][f] > 0 {
                s.counts[me][f] -= 1;
                round = s.wait_rounds[me][f];
                s.wait_rounds[me][f] += 1;
                break;
            }
            let gone: Vec<String> = (0..s.ended.len())
                .filter(|&b| s.ended[b] && s.sets[b][f] == 0)
                .map(|b| b.to_string())
                .collect();
            if !gone.is_empty() {
                return Err(FaultKind::PipeSync {
                    reason: format!(
                        "{what} would wait forever: block(s) {} of the launch ended without setting cross-core flag {f} again",
                        gone.join(", ")
                    ),
                });
            }
        }
        *ctx.status.waits_for.lock() = Some(format!("waits in {what} (cross-core flag {f})"));
        let hash = crate::poll::hash_bytes(&seen.to_le_bytes());
        ctx.suspend(Req::Park(Park {
            addr: cross.generation.as_ptr() as usize,
            len: 8,
            hash,
            fresh: true,
            until: Instant::now() + Duration::from_micros(100u64 << backoff.min(10)),
            meta: None,
        }));
        backoff += 1;
        *ctx.status.waits_for.lock() = None;
        if ctx.launch.is_aborted() {
            return Err(FaultKind::Aborted);
        }
    }
    if let Some(rc) = ctx.race.as_mut() {
        rc.acquire(&ctx.twin.race, cross.key(f, round), 1);
    }
    ctx.progress();
    Ok(())
}

/// What a block waiting in a GM-workspace synchronisation API waits for, in the watchdog's
/// words (`api` an `ASC_TWIN_SYNC_*` code of [`crate::abi`]; `arg0`, `arg1` as its header passes
/// them). These APIs are DataCopy polls of ordinary flag words (the headers say how each is
/// laid out); a block in one parks like any unchanged poll, and the watchdog reports it by this.
pub(crate) fn wait_text(
    ctx: &BlockCtx,
    api: u32,
    gm: usize,
    len: usize,
    arg0: i64,
    arg1: i64,
) -> String {
    use crate::abi::*;
    let at = format!("GM {gm:#x} ({len} bytes)");
    match api {
        ASC_TWIN_SYNC_ALL_GM => format!(
            "waits in SyncAll(gmWorkspace) for all {arg0} blocks' slots at {at} to reach round {arg1} (a block of usedCores has not called it)"
        ),
        ASC_TWIN_SYNC_IB_SET => format!(
            "waits in IBSet(blockIdx {arg0}, eventID {arg1}) for its flag at {at} to be 0 again (no IBWait took its previous IBSet)"
        ),
        ASC_TWIN_SYNC_IB_WAIT => format!(
            "waits in IBWait(blockIdx {arg0}, eventID {arg1}) for its flag at {at} to become 1 (no IBSet with the same blockIdx and eventID)"
        ),
        ASC_TWIN_SYNC_WAIT_PRE_BLOCK if ctx.block == 0 => format!(
            "waits in WaitPreBlock (round {arg0}) for the last block's NotifyNextBlock of round {} to clear the workspace at {at}",
            arg0 - 1
        ),
        ASC_TWIN_SYNC_WAIT_PRE_BLOCK => format!(
            "waits in WaitPreBlock (round {arg0}) for block {}'s NotifyNextBlock at {at}",
            ctx.block - 1
        ),
        ASC_TWIN_SYNC_GROUP_ARRIVE => format!(
            "waits in GroupBarrier::Arrive({arg0}) for the Wait group's previous round: its counter at {at} to reach {arg1}"
        ),
        ASC_TWIN_SYNC_GROUP_WAIT => format!(
            "waits in GroupBarrier::Wait({arg0}) for the Arrive group: its counter at {at} to reach {arg1}"
        ),
        _ => format!(
            "waits in {} for the flags at {at}",
            crate::abi::sync_api_name(api)
        ),
    }
}
