//! A twin: one isolated instance of the CPU twin of the AIV device.
//!
//! Everything the twin keeps (its devices' GM registry, the race checker's shadow state, the
//! deferred-staging list, the atomic units' page locks, the DMA counters, the sync census, the
//! knobs, the worker pool and its watchdog, the launches an abort must reach) belongs to one
//! [`Twin`] and is freed with it. Two twins in one process share nothing: a kernel of one cannot reach the other's
//! memory, a knob set on one does not change the other, and a stall in one is reported while
//! the other runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::atomics::Stripes;
use crate::device::{Device, DeviceConfig};
use crate::error::{FaultKind, TwinError};
use crate::knobs::{period_ms, Knobs, TwinConfig};
use crate::launch::LaunchShared;
use crate::meta::RegionMeta;
use crate::padded::Padded;
use crate::race::RaceShadow;
use crate::sched::{HostSignal, Pool, Stuck};
use crate::traffic::{GmTraffic, Traffic};

/// Source of unique twin ids (ids only name registries; no state hangs off this counter).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One instance of the CPU twin: the devices created from it, their memory, checkers and
/// worker threads. Cloning gives another handle to the same twin; it is freed (its threads
/// stopped) when the last handle, device, buffer and running block are gone.
#[derive(Clone)]
pub struct Twin {
    pub(crate) inner: Arc<TwinInner>,
}

/// The running launches one worker (or the other threads) started, and how many it started
/// with each checker on.
#[derive(Default)]
struct Launches {
    running: Vec<Weak<LaunchShared>>,
    checked: CheckedLaunches,
}

/// Launches of a twin so far that started with its checkers on ([`Twin::checked_launches`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckedLaunches {
    /// Launches with the pipe-hazard checker on.
    pub hazards: u64,
    /// Launches with the GM race checker on.
    pub races: u64,
}

impl CheckedLaunches {
    /// The launches counted since `earlier`, an earlier reading of the same twin's counts
    /// (they only grow).
    ///
    /// ```
    /// # use ascendc_twin::CheckedLaunches;
    /// let before = CheckedLaunches { hazards: 3, races: 1 };
    /// let after = CheckedLaunches { hazards: 5, races: 1 };
    /// assert_eq!(after.since(before), CheckedLaunches { hazards: 2, races: 0 });
    /// ```
    pub fn since(self, earlier: CheckedLaunches) -> CheckedLaunches {
        CheckedLaunches {
            hazards: self.hazards - earlier.hazards,
            races: self.races - earlier.races,
        }
    }
}

/// A device's own handle to its twin, which the device's blocks clone: cloning the twin's
/// `Arc` instead writes a reference count that every worker writes at every launch, a cache
/// line moving between the cores twice per block (this count is written by the device's
/// launches only).
pub(crate) struct TwinHandle(pub Arc<TwinInner>);

impl std::ops::Deref for TwinHandle {
    type Target = TwinInner;
    fn deref(&self) -> &TwinInner {
        &self.0
    }
}

pub(crate) struct TwinInner {
    pub id: u64,
    pub knobs: Knobs,
    pub mem: crate::mem::Memory,
    pub race: RaceShadow,
    pub lazy: crate::lazy::Live,
    pub stripes: Stripes,
    pub traffic: Traffic,
    /// The sync census (census.rs): built by the first launch with the census on.
    pub census: Arc<crate::census::Shared>,
    /// Launches running now (for [`Twin::abort`]) and counts of those started with each checker
    /// on ([`Twin::checked_launches`]), by the worker that started them (slot 0: other
    /// threads): every launch registers itself, and a list or counter the workers all wrote
    /// would move between their cores at every launch.
    launches: Box<[Padded<Mutex<Launches>>]>,
    /// Why the twin was aborted, if it was.
    pub aborted: Mutex<Option<String>>,
    /// `aborted` is set (read by every launch without taking the lock).
    aborted_flag: AtomicBool,
    /// Launches waiting for free cores, for stall reports: (rank, kernel, cores wanted).
    pub core_waits: Mutex<Vec<(u32, &'static str, u32)>>,
    /// Origin of `GetSystemCycle`.
    pub epoch: Instant,
    /// Kernel printf / DumpTensor / assert output.
    pub console: crate::console::Console,
    /// Unordered UB overwrites with identical bytes the pipe-hazard checker let pass.
    pub benign_overwrites: AtomicU64,
    /// Unordered GM stores of identical bytes the race checker let pass.
    pub benign_gm_overwrites: AtomicU64,
    pub pool: Pool,
    /// The job's shared GM, in a multi-process job ([`Twin::with_space`]).
    pub space: Option<Arc<crate::shared::Space>>,
}

impl Default for Twin {
    fn default() -> Self {
        Twin::new()
    }
}

impl Twin {
    /// A new twin with the settings of the `AIV_TWIN_*` environment variables
    /// ([`TwinConfig::from_env`]: a value that does not parse is ignored;
    /// `Twin::with_config(TwinConfig::try_from_env()?)` refuses it).
    pub fn new() -> Twin {
        Twin::with_config(TwinConfig::from_env())
    }

    /// A new twin with `config`.
    pub fn with_config(config: TwinConfig) -> Twin {
        Twin::build(config, None)
    }

    /// A twin that is one process of a multi-process job: its device of rank
    /// [`Space::rank`](crate::Space::rank) allocates GM in that rank's window of `space`, which
    /// every process of the job maps at the same address, so its kernels reach the peers'
    /// memory as in one process (see [`crate::Space`]).
    ///
    /// Differences from a twin of one process, all because the other processes' blocks are not
    /// this twin's:
    /// - the GM race checker is off ([`Twin::set_race_check`] cannot turn it on): its
    ///   happens-before relation would miss the orderings made by flags of other processes,
    ///   and report races that are none. Run the same program with every rank in one process
    ///   (aiv-comm's `World::sim`) to check it for races;
    /// - deferred staging (lazy GM -> UB copies) materialises a block's snapshots before the
    ///   block publishes anything (a store to flag memory, a cross-core flag), since a write of
    ///   another process cannot materialise them: exact for kernels whose GM accesses flags
    ///   order, which the race checker of one process verifies;
    /// - the watchdog counts the progress of every process of the job, so a block waiting on a
    ///   peer that makes progress is not reported; a stall is reported by each process for its
    ///   own blocks;
    /// - only rank [`Space::rank`](crate::Space::rank)'s device may allocate.
    ///
    /// The pipe-hazard checker, the census, the bounds checks of every access (peers'
    /// allocations are mirrored from their windows' tables) and the abort of this process's
    /// launches work as in one process.
    ///
    /// With an open space ([`Space::open`](crate::Space::open), a process of no job: acl-twin's),
    /// every device allocates in the process's window, and the GM race checker works as in one
    /// process until the space is shared ([`Space::is_shared`](crate::Space::is_shared): it
    /// granted a range to other processes or attached one of theirs); launches that start
    /// afterwards check no races, and stage GM -> UB copies eagerly (their kernels, anyone's,
    /// may keep flags in memory not marked as flags).
    pub fn with_space(config: TwinConfig, space: Arc<crate::shared::Space>) -> Twin {
        let mut config = config;
        config.race_check &= space.is_open();
        let twin = Twin::build(config, Some(space.clone()));
        twin.inner.pool.shared().set_space(space);
        twin
    }

    fn build(config: TwinConfig, space: Option<Arc<crate::shared::Space>>) -> Twin {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let inner = Arc::new_cyclic(|weak: &Weak<TwinInner>| {
            let w = weak.clone();
            // Twins with fewer workers than CPUs start at different CPUs (a test suite's twins
            // of two workers each would all crowd onto the first two otherwise).
            // The processes of a job (one twin each) start at different CPUs by rank.
            let index = match &space {
                Some(s) if !s.is_open() => s.rank() as usize,
                _ => id as usize,
            };
            let first_cpu = index.wrapping_mul(config.workers.max(1));
            let pool = Pool::new(
                config.workers,
                config.pin_workers.then_some(first_cpu),
                &format!("twin{id}"),
                period_ms(config.watchdog),
                Box::new(move |stuck, stalled_for| {
                    if let Some(t) = w.upgrade() {
                        t.stalled(stuck, stalled_for);
                    }
                }),
            );
            TwinInner {
                id,
                knobs: Knobs::new(&config),
                mem: crate::mem::Memory::new(id, space.clone()),
                race: RaceShadow::default(),
                lazy: crate::lazy::Live::default(),
                stripes: Stripes::new(space.clone()),
                traffic: Traffic::new(config.workers.max(1)),
                census: Arc::default(),
                launches: (0..=config.workers.max(1))
                    .map(|_| Padded::default())
                    .collect(),
                aborted: Mutex::new(None),
                aborted_flag: AtomicBool::new(false),
                core_waits: Mutex::new(Vec::new()),
                epoch: Instant::now(),
                console: crate::console::Console::default(),
                benign_overwrites: AtomicU64::new(0),
                benign_gm_overwrites: AtomicU64::new(0),
                pool,
                space,
            }
        });
        Twin { inner }
    }

    /// A simulated NPU of this twin with rank `rank`.
    pub fn device(&self, rank: u32, config: DeviceConfig) -> Result<Device, TwinError> {
        Device::new(self.inner.clone(), rank, config)
    }

    /// A number that identifies this twin among all twins of the process.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Turns the intra-core pipe-hazard checker on or off for launches that start afterwards.
    pub fn set_hazard_check(&self, on: bool) {
        self.inner.knobs.hazards.store(on, Ordering::Relaxed);
    }

    /// Turns the GM race checker (happens-before over flags between blocks and ranks) on or off
    /// for launches that start afterwards.
    /// A twin of a multi-process job ([`Twin::with_space`]) keeps it off.
    pub fn set_race_check(&self, on: bool) {
        let on = on && self.inner.space.as_ref().is_none_or(|s| s.is_open());
        self.inner.knobs.races.store(on, Ordering::Relaxed);
    }

    /// Whether launches that start now check pipe hazards ([`Twin::set_hazard_check`];
    /// `AIV_TWIN_HAZARDS` at creation).
    pub fn hazard_check(&self) -> bool {
        self.inner.knobs.hazards.load(Ordering::Relaxed)
    }

    /// Whether launches that start now check GM races ([`Twin::set_race_check`];
    /// `AIV_TWIN_RACES` at creation).
    pub fn race_check(&self) -> bool {
        self.inner.knobs.races.load(Ordering::Relaxed)
    }

    /// How many launches of this twin so far started with each checker on: what a run that
    /// switches them ([`Twin::set_hazard_check`], [`Twin::set_race_check`]) really checked.
    /// Subtract two readings to count a span.
    pub fn checked_launches(&self) -> CheckedLaunches {
        self.inner.checked_launches()
    }

    /// Turns deferred GM -> UB staging on or off for launches that start afterwards. With it, a
    /// large DataCopy GM -> UB records a snapshot and the following DataCopy UB -> GM copies GM
    /// to GM directly; results are identical either way.
    pub fn set_lazy_staging(&self, on: bool) {
        self.inner.knobs.lazy.store(on, Ordering::Relaxed);
    }

    /// Injects random delays of up to `max_us` microseconds before about one in four GM accesses
    /// of every block of launches that start afterwards (0 = off). Tests use it to shake out
    /// ordering bugs that a lucky schedule would hide.
    pub fn set_jitter_us(&self, max_us: u32) {
        self.inner.knobs.jitter_us.store(max_us, Ordering::Relaxed);
    }

    /// Sets the stall watchdog: when live blocks of this twin make no progress (no GM write, no
    /// changed read, no block starting or ending) for `period`, every stuck launch fails with
    /// [`FaultKind::Deadlock`] (all stuck blocks parked on polls) or [`FaultKind::Livelock`]
    /// (some keep running), naming every stuck block and what it reads. `None` turns it off.
    pub fn set_watchdog(&self, period: Option<Duration>) {
        let ms = period_ms(period);
        self.inner.knobs.watchdog_ms.store(ms, Ordering::Relaxed);
        self.inner
            .pool
            .shared()
            .watchdog_ms
            .store(ms, Ordering::Relaxed);
    }

    /// The watchdog period (None: off).
    pub fn watchdog(&self) -> Option<Duration> {
        self.inner.knobs.watchdog()
    }

    /// Captures kernels' console output (`printf`, `DumpTensor`, failed asserts) instead of
    /// printing it to stdout, for [`Twin::take_output`]; `false` prints again.
    pub fn capture_output(&self, on: bool) {
        self.inner.console.set_capture(on);
    }

    /// The console lines captured so far, each prefixed `[rank r] [AIV Block b/n] `, in the
    /// order they were printed; forgets them.
    pub fn take_output(&self) -> Vec<String> {
        self.inner.console.take()
    }

    /// How many unordered UB overwrites the pipe-hazard checker let pass because they stored
    /// exactly the bytes already there (a DMA load of the same data, a scalar store or vector
    /// fill of the same value, into bytes another pipe was still reading or writing: no order
    /// of the two can change a result).
    pub fn benign_overwrites(&self) -> u64 {
        self.inner.benign_overwrites.load(Ordering::Relaxed)
    }

    /// How many DMA stores (DataCopy / DataCopyPad bursts to GM) the GM race checker let pass
    /// although no flag ordered them after another block's DMA store of the same bytes,
    /// because they stored exactly the bytes that store, already landed, had left there (say,
    /// every block writing the same result to one output): no order of the two can change what
    /// GM holds. Only plain stores count: an unordered write after an atomic or scalar store,
    /// an atomic store after a plain one, and any read after a write or write after a read are
    /// races whatever the bytes.
    pub fn benign_gm_overwrites(&self) -> u64 {
        self.inner.benign_gm_overwrites.load(Ordering::Relaxed)
    }

    /// GM traffic of this twin's kernels so far (see [`GmTraffic`]); subtract two readings to
    /// measure a span.
    pub fn gm_traffic(&self) -> GmTraffic {
        self.inner.traffic.total()
    }

    /// GM traffic of device `rank`'s kernels so far, per block index (one entry per index below
    /// [`crate::TRACKED_CORES`]; empty for ranks from [`crate::TRACKED_DEVICES`] on): what each
    /// core moved, since a launch runs block `i` on one core. Subtract two readings to measure a
    /// span; the indices with traffic are the cores the kernels used.
    pub fn core_traffic(&self, rank: u32) -> Vec<GmTraffic> {
        self.inner.traffic.core(rank)
    }

    /// Turns the sync census on or off for launches that start afterwards (default off; see
    /// [`crate::Census`]): per rank, the GM bytes the kernels' DMA moved (data and flag memory
    /// apart), their flag waits, and the sync rounds (Lamport depth over flag stores and loads)
    /// of the longest chain. It costs a lock per flag access: meant for one untimed run beside
    /// timed ones. Off, nothing is recorded and no table exists.
    pub fn set_census(&self, on: bool) {
        self.inner.knobs.census.store(on, Ordering::Relaxed);
    }

    /// What the census recorded since the last call (empty if no launch ran with it on), and
    /// forgets it: the next launch with the census on starts a new table, at depth 0. Call it
    /// when no launch that started with the census on is running (after the host has
    /// synchronized them); a block still running adds to the next table.
    pub fn take_census(&self) -> crate::Census {
        self.inner.census.take()
    }

    /// Stops every running launch of this twin and makes its later launches fail at once, each
    /// with [`FaultKind::PeerAborted`] carrying `reason` (the first reason given wins).
    ///
    /// For a host that knows one rank has failed: on the NPU its peers would wait for it until
    /// their deadlines; on the twin they can be told at once.
    pub fn abort(&self, reason: &str) {
        self.inner.abort(reason);
    }

    /// Why the twin was aborted, if it was.
    pub fn aborted(&self) -> Option<String> {
        self.inner.aborted_reason()
    }

    /// Waits until no launch of this twin runs (from a host task, without holding its worker).
    /// After [`Twin::abort`], running launches end at their blocks' next twin call and new ones
    /// are refused, so this returns promptly; otherwise it waits for whatever runs to end.
    pub fn wait_until_idle(&self) {
        // Looked at now and then: a rare path (a failure), kept off the launches' own way.
        let tick = HostSignal::new(0);
        while !self.inner.active().is_empty() {
            tick.wait_until(Some(Instant::now() + Duration::from_micros(200)), |_| false);
        }
    }

    /// Runs `f` as a host task of this twin: a coroutine on worker `affinity % workers`, next to
    /// the blocks.
    ///
    /// Host code that launches kernels and waits for them (a stream's tasks) runs here without an
    /// OS thread of its own: waiting for a launch or a [`crate::HostSignal`] suspends the
    /// coroutine instead of blocking a thread. `f` must not block its thread on anything that
    /// only the pool's blocks or host tasks can release (use a `HostSignal` for that); a panic in
    /// `f` is caught and printed, and ends only `f`. A launch of one block made here runs on this
    /// task's worker, driven by the task itself (no run-queue round trip); it yields, parks and
    /// faults as any block does.
    pub fn spawn_host_task(&self, affinity: usize, f: Box<dyn FnOnce() + Send>) {
        self.inner.pool.shared().spawn_host(affinity, f);
    }

    /// Worker threads of this twin.
    pub fn workers(&self) -> usize {
        self.inner.pool.shared().workers()
    }

    /// Live GM allocations of this twin and their bytes.
    pub fn memory_usage(&self) -> (usize, usize) {
        self.inner.mem.usage()
    }

    /// Converts `GetSystemCycle` cycles to microseconds (A2: 50 cycles per µs).
    pub fn cycles_to_us(cycles: u64) -> u64 {
        crate::cycles_to_us(cycles)
    }
}

impl std::fmt::Debug for Twin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Twin {{ id: {} }}", self.inner.id)
    }
}

impl TwinInner {
    /// Materialises the deferred snapshots of GM `[addr, addr + len)` (in the allocation with
    /// counters `meta`) before anything writes there.
    pub fn before_write(&self, meta: Option<&RegionMeta>, addr: usize, len: usize) {
        crate::lazy::before_gm_write(&self.lazy, meta, addr, len);
    }

    /// After a kernel's GM write: wakes the blocks parked on the range and counts the progress.
    pub fn after_write(&self, meta: Option<&RegionMeta>, addr: usize, len: usize) {
        let pool = self.pool.shared();
        pool.notify(addr, len, meta);
        pool.progress();
        if let Some(s) = &self.space {
            s.after_write(addr, len);
        }
    }

    /// After a host GM write: wakes the blocks parked on the range; progress only if it woke
    /// one (a host writing memory no block waits for does not unstick anything).
    pub fn after_host_write(&self, meta: Option<&RegionMeta>, addr: usize, len: usize) {
        let pool = self.pool.shared();
        if pool.notify(addr, len, meta) {
            pool.progress();
        }
        if let Some(s) = &self.space {
            s.after_write(addr, len);
        }
    }

    /// Why the twin was aborted, if it was (without a lock while it was not).
    pub fn aborted_reason(&self) -> Option<String> {
        if !self.aborted_flag.load(Ordering::SeqCst) {
            return None;
        }
        self.aborted.lock().clone()
    }

    /// Registers a launch that starts now, with the pipe-hazard checker on if `hazards` and the
    /// race checker on if `races`; Err(reason) if the twin was aborted.
    pub fn start_launch(
        &self,
        l: &Arc<LaunchShared>,
        hazards: bool,
        races: bool,
    ) -> Result<(), String> {
        let pool = Arc::as_ptr(self.pool.shared());
        let slot = match crate::sched::worker() {
            Some((p, i)) if std::ptr::eq(p, pool) => i + 1,
            _ => 0,
        };
        let mut a = self.launches[slot.min(self.launches.len() - 1)].lock();
        // `abort` sets the flag while it holds every slot's lock: under this one, the flag is
        // settled, and a launch registered here is one the abort will find.
        if self.aborted_flag.load(Ordering::SeqCst) {
            return Err(self.aborted_reason().unwrap_or_default());
        }
        a.running.retain(|w| w.strong_count() > 0);
        a.running.push(Arc::downgrade(l));
        a.checked.hazards += u64::from(hazards);
        a.checked.races += u64::from(races);
        Ok(())
    }

    /// [`Twin::checked_launches`].
    pub fn checked_launches(&self) -> CheckedLaunches {
        self.launches
            .iter()
            .fold(CheckedLaunches::default(), |t, s| {
                let c = s.lock().checked;
                CheckedLaunches {
                    hazards: t.hazards + c.hazards,
                    races: t.races + c.races,
                }
            })
    }

    fn active(&self) -> Vec<Arc<LaunchShared>> {
        self.launches
            .iter()
            .flat_map(|s| {
                s.lock()
                    .running
                    .iter()
                    .filter_map(Weak::upgrade)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn abort(&self, reason: &str) {
        {
            let _slots: Vec<_> = self.launches.iter().map(|s| s.lock()).collect();
            let mut a = self.aborted.lock();
            if a.is_some() {
                return;
            }
            *a = Some(reason.to_string());
            self.aborted_flag.store(true, Ordering::SeqCst);
        }
        if let Some(s) = &self.space {
            s.abort();
        }
        for l in self.active() {
            l.record(
                u32::MAX,
                "launch",
                FaultKind::PeerAborted {
                    reason: reason.to_string(),
                },
            );
        }
        self.pool.shared().wake_all();
    }

    /// The watchdog found live blocks without progress for `stalled_for`: every launch with a
    /// stuck block fails, naming all of them.
    fn stalled(&self, stuck: Vec<Stuck>, stalled_for: Duration) {
        if stuck.is_empty() {
            return;
        }
        let owner = |addr: usize| {
            self.mem
                .owner(addr)
                .map_or_else(|| "no rank's".to_string(), |r| format!("rank {r}'s"))
        };
        // A block parked on one range it keeps finding unchanged waits for someone (a
        // deadlock); one that keeps re-reading several ranges in turn, or runs without reading
        // anything new, spins (a livelock).
        let reads = |s: &Stuck| s.status.spinning.lock().clone();
        let spins = |s: &Stuck| s.parked_on.is_none() || reads(s).len() >= 2;
        let mut lines: Vec<String> = stuck
            .iter()
            .map(|s| {
                let who = format!(
                    "rank {} block {} (kernel `{}`)",
                    s.status.rank, s.status.block, s.status.kernel
                );
                let r = reads(s);
                if let Some(w) = s.status.waits_for.lock().clone() {
                    return format!("{who} {w}, for {stalled_for:?}");
                }
                match s.parked_on {
                    Some((addr, len)) if r.len() < 2 => format!(
                        "{who} is parked on a poll of GM {addr:#x} ({len} bytes of {} memory), unchanged for {stalled_for:?}",
                        owner(addr)
                    ),
                    _ if r.is_empty() => format!(
                        "{who} runs without progress (no GM write, no changed read) for {stalled_for:?}"
                    ),
                    _ => {
                        let list: Vec<String> = r
                            .iter()
                            .map(|&(a, l)| format!("{a:#x} ({l} bytes of {} memory)", owner(a)))
                            .collect();
                        format!(
                            "{who} spins reading GM {}, unchanged for {stalled_for:?}",
                            list.join(", ")
                        )
                    }
                }
            })
            .collect();
        for &(rank, kernel, cores) in self.core_waits.lock().iter() {
            lines.push(format!(
                "rank {rank}: a launch of `{kernel}` waits for {cores} free cores, held by the launches above"
            ));
        }
        let kind = if !stuck.iter().any(spins) {
            FaultKind::Deadlock { waiters: lines }
        } else {
            FaultKind::Livelock { blocks: lines }
        };
        for s in &stuck {
            if let Ok(l) = s.status.launch.clone().downcast::<LaunchShared>() {
                l.record(s.status.block, "watchdog", kind.clone());
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The `Cpus_allowed_list` of a /proc `status` file.
    fn cpus_allowed(status: &str) -> String {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// The CPUs each worker thread of `twin` may run on, by worker index (from /proc).
    fn worker_cpus(twin: &Twin) -> Vec<(usize, String)> {
        let prefix = format!("aiv-twin{}-", twin.id());
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            let Some(i) = comm.trim().strip_prefix(&prefix) else {
                continue;
            };
            let status = std::fs::read_to_string(e.path().join("status")).unwrap();
            out.push((i.parse().unwrap(), cpus_allowed(&status)));
        }
        out.sort();
        out
    }

    #[test]
    fn pinned_workers_each_get_their_own_cpu_and_unpinned_ones_keep_all() {
        let mine = cpus_allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let config = |pin_workers| TwinConfig {
            workers: 2,
            pin_workers,
            ..TwinConfig::default()
        };
        // Workers name and pin themselves when they start: look until both have.
        let settled = |twin: &Twin, pinned: bool| {
            let t0 = std::time::Instant::now();
            loop {
                let got = worker_cpus(twin);
                let done = got.len() == 2
                    && got
                        .iter()
                        .all(|(_, c)| !pinned || c.parse::<usize>().is_ok());
                if done || t0.elapsed() > Duration::from_secs(5) {
                    return got;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        let pinned = Twin::with_config(config(true));
        let got = settled(&pinned, true);
        assert_eq!(got.len(), 2, "{got:?}");
        for (_, c) in &got {
            assert!(c.parse::<usize>().is_ok(), "one CPU each: {got:?}");
        }
        if cpus >= 2 {
            assert_ne!(got[0].1, got[1].1, "different CPUs: {got:?}");
        }
        let free = Twin::with_config(config(false));
        let got = settled(&free, false);
        assert_eq!(got.len(), 2, "{got:?}");
        for (i, c) in got {
            assert_eq!(c, mine, "worker {i} unpinned");
        }
    }
}
