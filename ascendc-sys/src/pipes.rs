//! SetFlag / WaitFlag / PipeBarrier: pairing rules of the intra-core event flags.
//!
//! The twin runs a core's pipes in program order, so these calls order nothing here; the
//! pipe-hazard checker (hazard.rs) uses them to decide what the NPU would order, and this module
//! checks the rules the AscendC docs give for them on Atlas A2: event ids are 0..=7
//! (`EVENT_ID0`..`EVENT_ID7`), every SetFlag is matched by one WaitFlag of the same event and
//! id (a WaitFlag with no SetFlag before it waits forever; a second SetFlag before the WaitFlag
//! is undefined and makes a later `PipeBarrier<PIPE_ALL>` hang; a SetFlag still pending when the
//! kernel ends leaves the flag set for the next kernel on that core).

use crate::error::FaultKind;
use crate::hazard::Hazards;

/// `HardEvent` kinds (AscendC's enum up to, not including, `MAX`).
pub(crate) const HARD_EVENTS: usize = 35;
/// Event ids per HardEvent on Atlas A2.
pub(crate) const EVENT_IDS: usize = 8;
/// `pipe_t` value of PIPE_ALL.
pub(crate) const PIPE_ALL: u32 = 6;

/// AscendC's names of the HardEvent values, for messages.
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

/// Pending SetFlags of one block: a bit per event id, per HardEvent.
pub(crate) struct PipeState {
    pending: [u8; HARD_EVENTS],
}

impl Default for PipeState {
    fn default() -> Self {
        PipeState {
            pending: [0; HARD_EVENTS],
        }
    }
}

fn check_ids(event: u32, id: i32) -> Result<(usize, usize), FaultKind> {
    let e = event as usize;
    if e >= HARD_EVENTS {
        return Err(FaultKind::PipeSync {
            reason: format!("HardEvent value {event} is not an AscendC HardEvent"),
        });
    }
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
    /// `SetFlag<event>(id)`.
    pub fn set_flag(
        &mut self,
        hz: Option<&mut Hazards>,
        event: u32,
        id: i32,
    ) -> Result<(), FaultKind> {
        let (e, i) = check_ids(event, id)?;
        if self.pending[e] & (1 << i) != 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "SetFlag<HardEvent::{}>({i}) while the same flag is already set with no WaitFlag between: undefined on the NPU (a later PipeBarrier<PIPE_ALL> hangs)",
                    event_name(e)
                ),
            });
        }
        self.pending[e] |= 1 << i;
        if let Some(hz) = hz {
            hz.set_flag(e, i);
        }
        Ok(())
    }

    /// `WaitFlag<event>(id)`.
    pub fn wait_flag(
        &mut self,
        hz: Option<&mut Hazards>,
        event: u32,
        id: i32,
    ) -> Result<(), FaultKind> {
        let (e, i) = check_ids(event, id)?;
        if self.pending[e] & (1 << i) == 0 {
            return Err(FaultKind::PipeSync {
                reason: format!(
                    "WaitFlag<HardEvent::{}>({i}) with no matching SetFlag before it: the NPU would wait forever",
                    event_name(e)
                ),
            });
        }
        self.pending[e] &= !(1 << i);
        if let Some(hz) = hz {
            hz.wait_flag(e, i);
        }
        Ok(())
    }

    /// `PipeBarrier<pipe>`: PIPE_ALL joins every pipe; a barrier on one pipe orders that pipe's
    /// own instructions, which run in order on the twin anyway.
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
                return Err(FaultKind::PipeSync {
                    reason: format!(
                        "SetFlag<HardEvent::{}>({i}) was never waited for before the kernel ended: the flag stays set for the next kernel on this core",
                        event_name(e)
                    ),
                });
            }
        }
        Ok(())
    }
}
