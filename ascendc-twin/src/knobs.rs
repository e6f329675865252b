//! The knobs of one twin: checkers, deferred staging, injected delays, the watchdog, the census.
//!
//! Each twin reads the `AIV_TWIN_*` environment variables once, when it is created, and keeps
//! its own copy: a test that turns a knob of its twin off changes nothing for another twin in
//! the same process. Launches read the knobs when they start.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Default stall watchdog period.
pub const DEFAULT_WATCHDOG: Duration = Duration::from_secs(30);

/// Largest default [`TwinConfig::stream_after`] (64 MiB), whatever cache size the host reports.
/// A virtual machine sees its host's whole last-level cache (480 MiB on the 2-vCPU Intel Xeon
/// VM this project ran on on 2026-12-02) but gets a share of it: there, two threads' memcpy drops
/// from 27 GB/s at 16 MiB per thread to 13 at 64 MiB (`benches/compare/memcpy_bw.c`), and with
/// half the reported cache (240 MiB) as the threshold, nothing streamed and the 16-64 MiB
/// collectives on 4 and 8 ranks ran 1.2-1.5x slower than with 32 or 64 MiB (64 MiB also left
/// the 2-rank 16 MiB AllReduce alone, which 32 MiB slowed): medians of 3 aiv-perf runs per
/// `AIV_TWIN_STREAM_MIB` of 0, 32, 64 and 128, in the message of commit a390cb7.
pub const STREAM_AFTER_MAX: u64 = 64 << 20;

/// Settings of a new twin. [`TwinConfig::from_env`] (what [`crate::Twin::new`] uses) reads the
/// `AIV_TWIN_*` environment variables; [`TwinConfig::default`] ignores the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwinConfig {
    /// Intra-core pipe-hazard checker (`AIV_TWIN_HAZARDS=0` turns it off). Default on.
    pub hazard_check: bool,
    /// GM race checker (`AIV_TWIN_RACES=0`). Default on.
    pub race_check: bool,
    /// Deferred GM -> UB staging (`AIV_TWIN_LAZY=0`). Default on.
    pub lazy_staging: bool,
    /// Random delays of up to this many microseconds before about one in four GM accesses of
    /// every block (`AIV_TWIN_JITTER_US`). Default 0 (off).
    pub jitter_us: u32,
    /// Stall watchdog period (`AIV_TWIN_WATCHDOG_MS`, 0 = off). Default [`DEFAULT_WATCHDOG`].
    pub watchdog: Option<Duration>,
    /// Worker threads running blocks (`AIV_TWIN_WORKERS`). Default: one per host CPU.
    pub workers: usize,
    /// Each worker runs on one CPU, and only there, among those the process's main thread may
    /// use: a twin's workers on consecutive ones (several per CPU when there are more workers
    /// than CPUs), twins with fewer workers than CPUs starting at different ones
    /// (`AIV_TWIN_PIN=0` leaves the workers to the OS). Default on: the workers
    /// of a twin hand work to each other all the time, and Linux tends to wake a thread on the
    /// CPU of the thread that woke it, so unpinned, both workers of a 2-CPU machine often shared
    /// one CPU while the other idled (timelines of 2-rank collectives showed it; runs of the
    /// same 2-rank 64 KiB AllGather took 8.7-17.8 us unpinned, 8.5-9.5 pinned).
    pub pin_workers: bool,
    /// GM bytes after which DMA stores bypass the host's caches (non-temporal stores): once a
    /// block has written `stream_after / running blocks` bytes, so that the running blocks
    /// together have written about this much (`AIV_TWIN_STREAM_MIB`, in MiB; 0 = never).
    /// Default: half the host's last-level cache as Linux reports it (else 16 MiB), at most
    /// [`STREAM_AFTER_MAX`]: on an AMD EPYC VM with 32 MiB of L3, 16 MiB ran the 16-64 MiB
    /// collectives faster than 32 MiB did and left the 1-4 MiB ones as they were
    /// (`aiv-perf -c 0`, medians of 3 runs interleaved with `AIV_TWIN_STREAM_MIB=0`: the 16 MiB
    /// cells in 0.62-0.70x the time of never streaming, a 32 MiB threshold 3-5 points worse,
    /// the 1-4 MiB cells 0.85-1.15x over two sweeps; commit dce6ffe). Only speed depends on it.
    pub stream_after: u64,
}

impl Default for TwinConfig {
    fn default() -> Self {
        TwinConfig {
            hazard_check: true,
            race_check: true,
            lazy_staging: true,
            jitter_us: 0,
            watchdog: Some(DEFAULT_WATCHDOG),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            pin_workers: true,
            stream_after: (last_level_cache().unwrap_or(32 << 20) / 2).min(STREAM_AFTER_MAX),
        }
    }
}

impl TwinConfig {
    /// The defaults, with every `AIV_TWIN_*` variable that is set applied; a value that does
    /// not parse is ignored ([`TwinConfig::try_from_env`] refuses it).
    pub fn from_env() -> TwinConfig {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The defaults, with every `AIV_TWIN_*` variable that is set applied, or the first one
    /// whose value does not parse (named, with its value and what it takes): on/off knobs
    /// (`AIV_TWIN_HAZARDS`, `_RACES`, `_LAZY`, `_PIN`) take `0`/`1`, `off`/`on`, `false`/`true`
    /// or `no`/`yes` in any case; the others (`AIV_TWIN_JITTER_US`, `_WATCHDOG_MS`, `_WORKERS`,
    /// `_STREAM_MIB`) a whole number.
    pub fn try_from_env() -> Result<TwinConfig, String> {
        Self::try_from_lookup(|k| std::env::var(k).ok())
    }

    /// [`TwinConfig::from_env`] with the variables `lookup` returns (testable without touching
    /// the process environment). Unparsable values are ignored.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> TwinConfig {
        Self::apply(lookup, false).unwrap_or_default()
    }

    /// [`TwinConfig::try_from_env`] with the variables `lookup` returns.
    ///
    /// ```
    /// use ascendc_twin::TwinConfig;
    /// let env = |k: &'static str, v: &'static str| move |q: &str| (q == k).then(|| v.to_string());
    /// assert!(!TwinConfig::try_from_lookup(env("AIV_TWIN_RACES", "off")).unwrap().race_check);
    /// let e = TwinConfig::try_from_lookup(env("AIV_TWIN_RACES", "nope")).unwrap_err();
    /// assert!(e.contains("AIV_TWIN_RACES") && e.contains("nope"));
    /// assert!(TwinConfig::try_from_lookup(env("AIV_TWIN_JITTER_US", "5us")).is_err());
    /// ```
    pub fn try_from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<TwinConfig, String> {
        Self::apply(lookup, true)
    }

    /// The defaults with the variables applied; a value that does not parse is an error if
    /// `strict`, else ignored.
    fn apply(lookup: impl Fn(&str) -> Option<String>, strict: bool) -> Result<TwinConfig, String> {
        let mut c = TwinConfig::default();
        // An unparsable value: an error if strict, else ignored.
        let bad = |k: &str, v: &str, takes: &str| -> Result<(), String> {
            if strict {
                return Err(format!("{k}={v:?}: {k} takes {takes}"));
            }
            Ok(())
        };
        let on = |k: &str| -> Result<Option<bool>, String> {
            let Some(v) = lookup(k) else { return Ok(None) };
            match v.trim().to_ascii_lowercase().as_str() {
                "0" | "off" | "false" | "no" => Ok(Some(false)),
                "1" | "on" | "true" | "yes" => Ok(Some(true)),
                _ => bad(k, &v, "0 or 1 (off/on, false/true, no/yes)").map(|()| None),
            }
        };
        let num = |k: &str| -> Result<Option<u64>, String> {
            let Some(v) = lookup(k) else { return Ok(None) };
            match v.trim().parse::<u64>() {
                Ok(n) => Ok(Some(n)),
                Err(_) => bad(k, &v, "a whole number").map(|()| None),
            }
        };
        if let Some(b) = on("AIV_TWIN_HAZARDS")? {
            c.hazard_check = b;
        }
        if let Some(b) = on("AIV_TWIN_RACES")? {
            c.race_check = b;
        }
        if let Some(b) = on("AIV_TWIN_LAZY")? {
            c.lazy_staging = b;
        }
        if let Some(b) = on("AIV_TWIN_PIN")? {
            c.pin_workers = b;
        }
        if let Some(us) = num("AIV_TWIN_JITTER_US")? {
            c.jitter_us = us.min(u32::MAX as u64) as u32;
        }
        if let Some(ms) = num("AIV_TWIN_WATCHDOG_MS")? {
            c.watchdog = (ms != 0).then(|| Duration::from_millis(ms));
        }
        if let Some(n) = num("AIV_TWIN_WORKERS")? {
            c.workers = (n as usize).clamp(1, 256);
        }
        if let Some(mib) = num("AIV_TWIN_STREAM_MIB")? {
            c.stream_after = mib.saturating_mul(1 << 20);
        }
        Ok(c)
    }
}

/// The size of CPU 0's highest-level cache, from Linux's sysfs (e.g. `32768K`). Read once per
/// process: a fact of the host, not a setting (every `TwinConfig::default` asks for it).
fn last_level_cache() -> Option<u64> {
    static SIZE: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *SIZE.get_or_init(read_last_level_cache)
}

fn read_last_level_cache() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u32, u64)> = None;
    for e in dir.flatten() {
        let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
        let (Some(level), Some(size)) = (read("level"), read("size")) else {
            continue;
        };
        let Ok(level) = level.trim().parse::<u32>() else {
            continue;
        };
        let size = size.trim();
        let (digits, unit) = size.split_at(size.trim_end_matches(char::is_alphabetic).len());
        let Ok(n) = digits.parse::<u64>() else {
            continue;
        };
        let bytes = n.saturating_mul(match unit {
            "K" => 1 << 10,
            "M" => 1 << 20,
            "G" => 1 << 30,
            _ => 1,
        });
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, bytes));
        }
    }
    best.map(|(_, b)| b).filter(|&b| b > 0)
}

/// The live knobs of a twin (changed through [`crate::Twin`]'s setters).
pub(crate) struct Knobs {
    pub hazards: AtomicBool,
    pub races: AtomicBool,
    pub lazy: AtomicBool,
    pub jitter_us: AtomicU32,
    /// Watchdog period in ms; 0 = off.
    pub watchdog_ms: AtomicU64,
    /// The sync census (census.rs); off unless turned on, never from the environment.
    pub census: AtomicBool,
    /// [`TwinConfig::stream_after`].
    pub stream_after: AtomicU64,
}

impl Knobs {
    pub fn new(c: &TwinConfig) -> Knobs {
        Knobs {
            hazards: AtomicBool::new(c.hazard_check),
            races: AtomicBool::new(c.race_check),
            lazy: AtomicBool::new(c.lazy_staging),
            jitter_us: AtomicU32::new(c.jitter_us),
            watchdog_ms: AtomicU64::new(period_ms(c.watchdog)),
            census: AtomicBool::new(false),
            stream_after: AtomicU64::new(c.stream_after),
        }
    }

    pub fn watchdog(&self) -> Option<Duration> {
        match self.watchdog_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

/// A watchdog period in whole ms (at least 1), 0 for off.
pub(crate) fn period_ms(p: Option<Duration>) -> u64 {
    p.map_or(0, |d| (d.as_millis() as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_lookup_applies_each_variable() {
        let c = TwinConfig::from_lookup(|k| match k {
            "AIV_TWIN_RACES" => Some("0".into()),
            "AIV_TWIN_WATCHDOG_MS" => Some("250".into()),
            "AIV_TWIN_JITTER_US" => Some(" 7 ".into()),
            "AIV_TWIN_LAZY" => Some("yes".into()),
            "AIV_TWIN_STREAM_MIB" => Some("3".into()),
            "AIV_TWIN_PIN" => Some("0".into()),
            _ => None,
        });
        assert!(c.hazard_check && !c.race_check && c.lazy_staging && !c.pin_workers);
        // Strictly read, the same variables apply; a value that does not parse is named.
        let strict = |k: &'static str, v: &'static str| {
            TwinConfig::try_from_lookup(move |q| (q == k).then(|| v.to_string()))
        };
        assert!(!strict("AIV_TWIN_HAZARDS", "OFF").unwrap().hazard_check);
        assert!(strict("AIV_TWIN_LAZY", "yes").unwrap().lazy_staging);
        assert_eq!(strict("AIV_TWIN_WORKERS", " 3 ").unwrap().workers, 3);
        for (k, v) in [
            ("AIV_TWIN_LAZY", "maybe"),
            ("AIV_TWIN_PIN", ""),
            ("AIV_TWIN_WATCHDOG_MS", "1s"),
            ("AIV_TWIN_STREAM_MIB", "-1"),
        ] {
            let e = strict(k, v).unwrap_err();
            assert!(e.starts_with(k), "{e}");
        }
        assert_eq!(c.stream_after, 3 << 20);
        assert_eq!(c.jitter_us, 7);
        assert_eq!(c.watchdog, Some(Duration::from_millis(250)));
        let off = TwinConfig::from_lookup(|k| (k == "AIV_TWIN_WATCHDOG_MS").then(|| "0".into()));
        assert_eq!(off.watchdog, None);
        assert_eq!(TwinConfig::from_lookup(|_| None), TwinConfig::default());
    }

    #[test]
    fn the_default_streaming_threshold_is_capped_whatever_the_host_reports() {
        let d = TwinConfig::default().stream_after;
        assert!(d > 0 && d <= STREAM_AFTER_MAX, "{d}");
        if let Some(llc) = last_level_cache() {
            assert_eq!(d, (llc / 2).min(STREAM_AFTER_MAX));
        }
    }
}
