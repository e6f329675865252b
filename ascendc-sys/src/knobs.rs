//! Process-wide knobs of the twin: injected delays and the deadlock watchdog.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::padded::Padded;

static JITTER_US: Padded<AtomicU32> = Padded(AtomicU32::new(0));
/// Pipe-hazard checking: 0 off, 1 on, 2 not yet read from the environment.
static HAZARDS: Padded<AtomicU32> = Padded(AtomicU32::new(2));

/// Deferred GM -> UB staging (lazy.rs): 0 off, 1 on, 2 not yet read from the environment.
static LAZY: Padded<AtomicU32> = Padded(AtomicU32::new(2));

/// Turns deferred GM -> UB staging on or off for launches from now on (default on;
/// `AIV_TWIN_LAZY=0` turns it off). With it, a large DataCopy GM -> UB records a snapshot and
/// the following DataCopy UB -> GM copies GM to GM directly; results are identical either way.
pub fn set_lazy_staging(on: bool) {
    LAZY.store(on as u32, Ordering::Relaxed);
}

pub(crate) fn lazy_staging() -> bool {
    on_unless_env_zero(&LAZY, "AIV_TWIN_LAZY")
}

/// GM race checking: 0 off, 1 on, 2 not yet read from the environment.
static RACES: Padded<AtomicU32> = Padded(AtomicU32::new(2));

/// Turns the GM race checker (happens-before over flags between blocks and ranks) on or off for
/// launches that start afterwards. Default: on, unless the environment sets `AIV_TWIN_RACES=0`.
pub fn set_race_check(on: bool) {
    RACES.store(on as u32, Ordering::Relaxed);
}

pub(crate) fn race_check() -> bool {
    on_unless_env_zero(&RACES, "AIV_TWIN_RACES")
}

/// Turns the intra-core pipe-hazard checker on or off for launches that start afterwards.
/// Default: on, unless the environment sets `AIV_TWIN_HAZARDS=0`.
pub fn set_hazard_check(on: bool) {
    HAZARDS.store(on as u32, Ordering::Relaxed);
}

pub(crate) fn hazard_check() -> bool {
    on_unless_env_zero(&HAZARDS, "AIV_TWIN_HAZARDS")
}

/// An on/off knob that defaults to on: `cell` holds 0 (off), 1 (on) or 2 (not yet read), and the
/// first read takes `var` from the environment (`0` turns it off).
fn on_unless_env_zero(cell: &AtomicU32, var: &str) -> bool {
    let mut v = cell.load(Ordering::Relaxed);
    if v == 2 {
        v = match std::env::var(var) {
            Ok(s) if s.trim() == "0" => 0,
            _ => 1,
        };
        cell.store(v, Ordering::Relaxed);
    }
    v == 1
}

/// Watchdog period in ms; u64::MAX = not yet read from the environment; 0 = off.
static WATCHDOG_MS: Padded<AtomicU64> = Padded(AtomicU64::new(u64::MAX));

/// Default deadlock watchdog period.
pub const DEFAULT_WATCHDOG: Duration = Duration::from_secs(30);

/// Injects random delays of up to `max_us` microseconds before about one in four GM accesses of
/// every block (0 = off, the default). Tests use it to shake out ordering bugs that a lucky
/// schedule would hide.
pub fn set_jitter_us(max_us: u32) {
    JITTER_US.store(max_us, Ordering::Relaxed);
}

pub(crate) fn jitter_us() -> u32 {
    JITTER_US.load(Ordering::Relaxed)
}

/// Sets the deadlock watchdog: when every running block of every launch has been parked on a GM
/// poll with no GM write for `period`, the polling blocks fail with [`crate::FaultKind::Deadlock`].
/// `None` turns it off. Default: the `AIV_TWIN_WATCHDOG_MS` environment variable (0 = off), else
/// [`DEFAULT_WATCHDOG`].
pub fn set_watchdog(period: Option<Duration>) {
    let ms = period.map_or(0, |d| (d.as_millis() as u64).clamp(1, u64::MAX - 1));
    WATCHDOG_MS.store(ms, Ordering::Relaxed);
}

pub(crate) fn watchdog() -> Option<Duration> {
    let mut ms = WATCHDOG_MS.load(Ordering::Relaxed);
    if ms == u64::MAX {
        ms = std::env::var("AIV_TWIN_WATCHDOG_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_WATCHDOG.as_millis() as u64)
            .min(u64::MAX - 1);
        WATCHDOG_MS.store(ms, Ordering::Relaxed);
    }
    (ms != 0).then(|| Duration::from_millis(ms))
}
