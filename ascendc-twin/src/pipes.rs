//! SetFlag / WaitFlag / PipeBarrier: pairing rules of the intra-core event flags.
//!
//! The twin runs a core's pipes in program order, so these calls order nothing here; the
//! pipe-hazard checker (hazard.rs) uses them to decide what the NPU would order, and this module
//! checks the rules the AscendC docs give for them on Atlas A2: event ids are 0..=7
//! (`EVENT_ID0`..`EVENT_ID7`), every SetFlag is matched by one WaitFlag of the same event and
//! id (a WaitFlag with no SetFlag before it waits forever; a second SetFlag before the WaitFlag
//! is undefined and makes a later `PipeBarrier<PIPE_ALL>` hang; a SetFlag still pending when the
//! kernel ends leaves the flag set for the next kernel on that core).
//!
//! It also keeps the event-id allocator of the block's `TPipe` (`AllocEventID` /
//! `ReleaseEventID` / `FetchEventID`, 8 ids per HardEvent), which the twin's TQue / TQueBind
//! draw their own ids from, as the real ones do. A flag the kernel sets or waits by hand on an
//! id a queue holds (between `EnQue` and `DeQue`, or `FreeTensor` and the next `AllocTensor`) is
//! a collision: the two would consume each other's flags. The twin reports it, so a fused
//! kernel's hard-coded ids cannot silently collide with a library's queues.

use crate::error::FaultKind;
use crate::hazard::Hazards;

/// `HardEvent` kinds (AscendC's enum up to, not including, `MAX`; the same number is pinned in
/// asc_twin/enums.h).
pub(crate) const HARD_EVENTS: usize = 35;
/// Event ids per HardEvent on Atlas A2 (`QUE_MAX_EVENT`, pinned in asc_twin/enums.h).
pub(crate) const EVENT_IDS: usize = 8;
/// `pipe_t` value of PIPE_ALL (pinned in asc_twin/base.h).
pub(crate) const PIPE_ALL: u32 = 6;

/// AscendC's names of the HardEvent values, for messages (index = value; abi.rs's tests compare
/// them with the C++ enum).
const EVENT_NAMES: [&str; HARD_EVENTS] = [
    "MTE2_MTE1",
    "MTE1_MTE2",
    "MTE1_M",
    "M_MTE1",
    "MTE2_V",
    "V_MTE2",
    "MTE3_V",
    "V_MTE3",
    "M_V",
    "V_M",
    "V_V",
    "MTE3_MTE1",
    "MTE1_MTE3",
    "MTE1_V",
    "MTE2_M",
    "M_MTE2",
    "V_MTE1",
    "M_FIX",
    "FIX_M",
    "MTE3_MTE2",
    "MTE2_MTE3",
    "S_V",
    "V_S",
    "S_MTE2",
    "MTE2_S",
    "S_MTE3",
    "MTE3_S",
    "MTE2_FIX",
    "FIX_MTE2",
    "FIX_S",
    "M_S",
    "FIX_MTE3",
    "MTE1_FIX",
    "FIX_MTE1",
    "FIX_FIX",
];

/// The name of HardEvent `e`.
pub(crate) fn event_name(e: usize) -> &'static str {
    EVENT_NAMES.get(e).copied().unwrap_or("?")
}

/// Who issues a flag operation or owns an event id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Owner {
    /// The kernel itself (SetFlag/WaitFlag, AllocEventID/ReleaseEventID).
    Kernel,
    /// A TQue / TQueBind's own synchronisation.
    Queue,
}

/// Pending SetFlags and reserved event ids of one block: a bit per event id, per HardEvent.
pub(crate) struct PipeState {
    pending: [u8; HARD_EVENTS],
    /// Pending SetFlags a queue issued.
    queue_pending: [u8; HARD_EVENTS],
    /// Ids reserved by AllocEventID or by a queue.
    reserved: [u8; HARD_EVENTS],
    /// The reserved ids a queue holds.
    queue_held: [u8; HARD_EVENTS],
}

impl Default for PipeState {
    fn default() -> Self {
        PipeState {
            pending: [0; HARD_EVENTS],
            queue_pending: [0; HARD_EVENTS],
            reserved: [0; HARD_EVENTS],
            queue_held: [0; HARD_EVENTS],
        }
    }
}

fn check_event(event: u32) -> Result<usize, FaultKind> {
    let e = event as usize;
    if e >= HARD_EVENTS {
        return Err(FaultKind::PipeSync {
            reason: format!("HardEvent value {event} is not an AscendC HardEvent"),
        });
    }
    Ok(e)
}

fn check_ids(event: u32, id: i32) -> Result<(usize, usize), FaultKind> {
    let e = check_event(event)?;
    if id < 0 || id as usize >= EVENT_IDS {
        return Err(FaultKind::PipeSync {
            reason: format!(
                "event id {id} of HardEvent::{} is out of range: Atlas A2 has EVENT_ID0..EVENT_ID7",
                event_name(e)
            ),
        });
    }
    Ok((e, id as usize))
}

impl PipeState {
    /// A kernel's own flag operation on an id a queue holds is a collision.
    fn check_collision(&self, op: &str, owner: Owner, e: usize, i: usize) -> Result<(), FaultKind> {
        if owner == Owner::Kernel && self.queue_held[e] & (1 << i) != 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "{op}<HardEvent::{}>({i}) on an event id a TQue/TQueBind holds for its own synchronisation (between EnQue and DeQue, or FreeTensor and the next AllocTensor): the kernel's flag and the queue's would consume each other; take ids from GetTPipePtr()->AllocEventID<HardEvent::{}>()",
                    event_name(e),
                    event_name(e)
                ),
            });
        }
        Ok(())
    }

    /// `SetFlag<event>(id)` by `owner`.
    pub fn set_flag(
        &mut self,
        hz: Option<&mut Hazards>,
        owner: Owner,
        event: u32,
        id: i32,
    ) -> Result<(), FaultKind> {
        let (e, i) = check_ids(event, id)?;
        self.check_collision("SetFlag", owner, e, i)?;
        if self.pending[e] & (1 << i) != 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "SetFlag<HardEvent::{}>({i}) while the same flag is already set with no WaitFlag between: undefined on the NPU (a later PipeBarrier<PIPE_ALL> hangs)",
                    event_name(e)
                ),
            });
        }
        self.pending[e] |= 1 << i;
        if owner == Owner::Queue {
            self.queue_pending[e] |= 1 << i;
        }
        if let Some(hz) = hz {
            hz.set_flag(e, i);
        }
        Ok(())
    }

    /// `WaitFlag<event>(id)` by `owner`.
    pub fn wait_flag(
        &mut self,
        hz: Option<&mut Hazards>,
        owner: Owner,
        event: u32,
        id: i32,
    ) -> Result<(), FaultKind> {
        let (e, i) = check_ids(event, id)?;
        self.check_collision("WaitFlag", owner, e, i)?;
        if self.pending[e] & (1 << i) == 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "WaitFlag<HardEvent::{}>({i}) with no matching SetFlag before it: the NPU would wait forever",
                    event_name(e)
                ),
            });
        }
        self.pending[e] &= !(1 << i);
        self.queue_pending[e] &= !(1 << i);
        if let Some(hz) = hz {
            hz.wait_flag(e, i);
        }
        Ok(())
    }

    /// `AllocEventID<event>()` (or a queue taking an id): reserves the lowest free id.
    pub fn alloc_event(&mut self, owner: Owner, event: u32) -> Result<i32, FaultKind> {
        let e = check_event(event)?;
        let free = !self.reserved[e];
        if free == 0 {
            let by_queues = self.queue_held[e].count_ones();
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "AllocEventID<HardEvent::{}>: all {EVENT_IDS} event ids are reserved ({by_queues} by TQue/TQueBind buffers waiting to be dequeued or reallocated, {} by AllocEventID without ReleaseEventID)",
                    event_name(e),
                    EVENT_IDS as u32 - by_queues
                ),
            });
        }
        let i = free.trailing_zeros() as usize;
        self.reserved[e] |= 1 << i;
        if owner == Owner::Queue {
            self.queue_held[e] |= 1 << i;
        }
        Ok(i as i32)
    }

    /// `ReleaseEventID<event>(id)` (or a queue giving its id back).
    pub fn release_event(&mut self, owner: Owner, event: u32, id: i32) -> Result<(), FaultKind> {
        let (e, i) = check_ids(event, id)?;
        if self.reserved[e] & (1 << i) == 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "ReleaseEventID<HardEvent::{}>({i}) of an id that is not reserved (never allocated, or released twice)",
                    event_name(e)
                ),
            });
        }
        self.check_collision("ReleaseEventID", owner, e, i)?;
        self.reserved[e] &= !(1 << i);
        self.queue_held[e] &= !(1 << i);
        Ok(())
    }

    /// `FetchEventID<event>()`: the lowest id not reserved, without reserving it.
    pub fn fetch_event(&self, event: u32) -> Result<i32, FaultKind> {
        let e = check_event(event)?;
        let free = !self.reserved[e];
        if free == 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "FetchEventID<HardEvent::{}>: all {EVENT_IDS} event ids are reserved",
                    event_name(e)
                ),
            });
        }
        Ok(free.trailing_zeros() as i32)
    }

    /// `PipeBarrier<pipe>`: PIPE_ALL joins every pipe; a barrier on one pipe orders that pipe's
    /// own instructions, which run in order on the twin anyway (see hazard.rs for why a
    /// missing `PipeBarrier<PIPE_V>` is not reported).
    pub fn barrier(&mut self, hz: Option<&mut Hazards>, pipe: u32) {
        if pipe == PIPE_ALL {
            if let Some(hz) = hz {
                hz.barrier_all();
            }
        }
    }

    /// The kernel ended: a SetFlag still pending is reported.
    pub fn at_end(&self) -> Result<(), FaultKind> {
        for (e, &ids) in self.pending.iter().enumerate() {
            if ids != 0 {
                let i = ids.trailing_zeros();
                let by_queue = self.queue_pending[e] & (1 << i) != 0;
                return Err(FaultKind::PipeSync {
                    reason: if by_queue {
                        format!(
                            "a TQue/TQueBind tensor was EnQue'd and never DeQue'd before the kernel ended: the queue's SetFlag<HardEvent::{}>({i}) stays set for the next kernel on this core",
                            event_name(e)
                        )
                    } else {
                        format!(
                            "SetFlag<HardEvent::{}>({i}) was never waited for before the kernel ended: the flag stays set for the next kernel on this core",
                            event_name(e)
                        )
                    },
                });
            }
        }
        Ok(())
    }
}
