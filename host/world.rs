//! Worlds of ranks on one backend: one [`Communicator`] each; the CPU twin's simulated NPUs
//! ([`World::sim`]) or any [`Backend`] ([`World::with_backend`]).

use std::sync::Arc;

use ascendc_twin::{DeviceConfig, Twin};
use parking_lot::Mutex;

use crate::backend::acl::AclBackend;
use crate::backend::dynamic::{DynBackend, Memory};
use crate::backend::twin::TwinBackend;
use crate::backend::{Backend, MemKind};
use crate::communicator::{Communicator, FeatureState};
use crate::config::BackendChoice;
use crate::error::{Error, Result, StopCause};
use crate::ffi;
use crate::launcher::{Launcher, WorldShared};
use crate::link::{stop_rank, CommStream, Streams};
use crate::tags::Tags;

pub use crate::config::{
    parse_hccl_exec_timeout, Config, DEFAULT_BUFFER_BYTES, DEFAULT_EXEC_TIMEOUT,
    HCCL_AIV_MAX_EXEC_TIMEOUT, MAX_BUFFER_BYTES, MAX_RANKS, MIN_BUFFER_BYTES, MIN_EXEC_TIMEOUT,
};

/// A set of ranks on one backend, one [`Communicator`] each: simulated NPUs on the CPU twin
/// ([`World::sim`]), or the devices of any [`Backend`] ([`World::with_backend`]).
///
/// ```
/// use aiv_comm::{World, Config, DataType, ReduceOp};
/// let cfg = Config { buffer_bytes: Some(1 << 20), ..Config::default() };
/// let world = World::sim_with(4, cfg).unwrap();
/// let results = world.run(|comm| {
///     let x = vec![comm.rank() as f32 + 1.0; 1000];
///     let send = comm.alloc_from(&x)?;
///     let recv = comm.alloc(x.len() * 4)?;
///     comm.all_reduce(&send, &recv, x.len(), DataType::F32, ReduceOp::Sum)?;
///     comm.synchronize()?;
///     recv.to_vec::<f32>()
/// });
/// for r in results {
///     assert!(r.unwrap().iter().all(|&v| v == 10.0)); // 1 + 2 + 3 + 4
/// }
/// ```
///
/// **Dropping a world** with work still queued stops that work: launches running are aborted,
/// queued tasks are discarded, and the drop returns once nothing of the world runs (call
/// [`World::synchronize`] or each communicator's `synchronize` first to keep the results).
/// Device buffers may outlive their world; their memory is freed with the last of them.
pub struct World {
    comms: Vec<Communicator>,
    shared: Arc<WorldShared>,
}

impl World {
    /// `ranks` ranks on the devices `config` asks for ([`Config::backend`], `AIV_BACKEND`):
    /// NPUs through ACL, or the CPU twin. [`BackendChoice::Auto`] picks ACL when
    /// `libascendcl.so` loads, is a device runtime (not acl-twin, which runs the twin behind
    /// the ACL API and is used only when asked for) and has at least `ranks` devices, else
    /// the twin; [`World::backend_name`] says which. On a machine with such a runtime, a build
    /// without NPU kernels is then an error (it says how to build them), not the twin.
    pub fn new(ranks: usize, config: Config) -> Result<World> {
        match config.resolved_backend()? {
            BackendChoice::Twin => World::sim_with(ranks, config),
            BackendChoice::Acl => {
                let b = AclBackend::new(ranks as u32)?;
                World::with_backend(ranks, config, b)
            }
            BackendChoice::Auto => match AclBackend::auto(ranks as u32) {
                Some(b) => World::with_backend(ranks, config, b?),
                None => World::sim_with(ranks, config),
            },
        }
    }

    /// `ranks` simulated NPUs with the default [`Config`].
    pub fn sim(ranks: usize) -> Result<World> {
        World::sim_with(ranks, Config::default())
    }

    /// `ranks` (1..=[`MAX_RANKS`]) simulated NPUs with `config`, on a twin of their own (its
    /// knobs from the `AIV_TWIN_*` environment variables; a value that does not parse is an
    /// [`Error::Config`] naming it, see [`ascendc_twin::TwinConfig::try_from_env`]).
    pub fn sim_with(ranks: usize, config: Config) -> Result<World> {
        let twin = ascendc_twin::TwinConfig::try_from_env().map_err(Error::Config)?;
        World::on_twin(ranks, config, Twin::with_config(twin))
    }

    /// [`World::sim_with`] on a given (fresh) twin, e.g. one made with
    /// [`ascendc_twin::Twin::with_config`].
    pub fn on_twin(ranks: usize, config: Config, twin: Twin) -> Result<World> {
        if ranks == 0 || ranks > MAX_RANKS {
            return Err(Error::RankCount {
                ranks,
                max: MAX_RANKS,
            });
        }
        config.check(ranks)?;
        let devices = DeviceConfig {
            cores: config.cores,
            ..DeviceConfig::default()
        };
        let backend = TwinBackend::new(twin, ranks as u32, devices)?;
        World::with_backend(ranks, config, backend)
    }

    /// `ranks` (1..=[`MAX_RANKS`]) ranks with `config`, one per device of `backend` (which must
    /// have at least `ranks` devices, each with at least `ranks` cores). [`Config::cores`] is
    /// the twin's: the backend's devices have the cores they have.
    pub fn with_backend<B: Backend>(ranks: usize, config: Config, backend: B) -> Result<World> {
        let backend: Arc<dyn DynBackend> = Arc::new(backend);
        let settings = Settings::check(&backend, ranks, &config)?;
        let mut hccl = Vec::new();
        let mut sync = Vec::new();
        for r in 0..ranks as u32 {
            let (h, s) = settings.alloc_areas(&backend, r, &config)?;
            hccl.push(h);
            sync.push(s);
        }
        let shared = settings.shared(backend, &config, hccl, sync, None);
        let comms = (0..ranks as u32)
            .map(|r| Communicator::of_world(&shared, r, ranks as u32))
            .collect::<Result<_>>()?;
        Ok(World { comms, shared })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.comms.len()
    }

    /// Identifies this world among the worlds of the process (its backend's id); device
    /// buffers carry it ([`crate::DeviceBuffer::world_id`]) and a buffer of another world is refused.
    pub fn id(&self) -> u64 {
        self.shared.id()
    }

    /// The name of the backend the world runs on (`twin`, `acl`, ...).
    pub fn backend_name(&self) -> &'static str {
        self.shared.backend.name()
    }

    /// What the backend runs on, for people (for ACL: the SoC, the library, the launch API).
    pub fn backend_description(&self) -> String {
        self.shared.backend.description()
    }

    /// The CPU twin the world's ranks run on (its knobs, DMA counters, watchdog), if it runs on
    /// the twin ([`World::sim`], [`World::on_twin`]).
    pub fn twin(&self) -> Option<&Twin> {
        self.twin_backend().map(TwinBackend::twin)
    }

    /// The twin's device of `rank` (its cores, memory use, launches), if the world runs on the
    /// twin and has that rank.
    pub fn twin_device(&self, rank: u32) -> Option<&ascendc_twin::Device> {
        self.twin_backend()?.device(rank)
    }

    fn twin_backend(&self) -> Option<&TwinBackend> {
        self.shared.backend.as_any().downcast_ref::<TwinBackend>()
    }

    /// Turns recording of stream tasks (rank, stream, stage, task, start, end) on or off.
    pub fn set_tracing(&self, on: bool) {
        self.shared.trace.set_enabled(on);
    }

    /// The tasks recorded since tracing was turned on, in completion order.
    pub fn trace(&self) -> Vec<crate::trace::TraceEvent> {
        self.shared.trace.events()
    }

    /// The recorded tasks as Chrome trace JSON (open in chrome://tracing or Perfetto).
    pub fn trace_chrome_json(&self) -> String {
        crate::trace::chrome_json(&self.shared.trace.events())
    }

    /// The communicators, indexed by rank.
    pub fn comms(&self) -> &[Communicator] {
        &self.comms
    }

    /// Waits for the work enqueued before the call on every stream of every rank; returns the
    /// first error (in rank order; sticky, as [`Communicator::synchronize`]'s).
    pub fn synchronize(&self) -> Result<()> {
        // Every rank's positions first, before any stream is waited for.
        let streams: Vec<_> = self.comms.iter().map(|c| c.streams.positions()).collect();
        let mut first = Ok(());
        for (c, streams) in self.comms.iter().zip(streams) {
            for (s, at) in streams {
                s.wait_for(at);
                if first.is_ok() {
                    first = s.first_error().map_or(Ok(()), Err);
                }
            }
            if first.is_ok() {
                first = c.check_usable();
            }
        }
        first
    }

    /// Stops the world: every rank fails with `cause`, running launches are aborted, queued
    /// tasks are discarded (their buffers released).
    fn stop(&self, cause: StopCause) {
        let cause = Error::Stopped(cause);
        self.shared.abort(&cause.to_string());
        for c in &self.comms {
            stop_rank(&c.launcher, &c.streams, &cause);
        }
    }

    /// Runs `f` once per rank, each on its own host thread (as one process per NPU would), and
    /// returns the results in rank order.
    ///
    /// If `f` panics on a rank, the world is stopped at once (the other ranks' pending and later
    /// calls fail instead of waiting for the panicked rank until their deadlines) and the panic
    /// is resumed once every rank's `f` has returned.
    pub fn run<R: Send>(&self, f: impl Fn(&Communicator) -> R + Sync) -> Vec<R> {
        let results: Vec<std::thread::Result<R>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .comms
                .iter()
                .map(|c| {
                    let f = &f;
                    s.spawn(move || {
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(c)));
                        if r.is_err() {
                            self.stop(StopCause::HostPanic { rank: c.rank() });
                        }
                        r
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(Err))
                .collect()
        });
        let mut out = Vec::with_capacity(results.len());
        for r in results {
            match r {
                Ok(v) => out.push(v),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    }
}

/// The settings of a world, checked against its backend.
pub(crate) struct Settings {
    buffer: usize,
    timeout: std::time::Duration,
    timeout_cycles: i64,
    deterministic: bool,
}

impl Settings {
    /// Checks `ranks` and `config` against `backend` (one device per rank, one core per rank
    /// at least) and resolves the settings; tells the backend the exec timeout.
    pub(crate) fn check(
        backend: &Arc<dyn DynBackend>,
        ranks: usize,
        config: &Config,
    ) -> Result<Settings> {
        if ranks == 0 || ranks > MAX_RANKS {
            return Err(Error::RankCount {
                ranks,
                max: MAX_RANKS,
            });
        }
        if backend.devices() < ranks as u32 {
            return Err(Error::Config(format!(
                "{ranks} ranks need {ranks} devices, the {} backend has {}",
                backend.name(),
                backend.devices()
            )));
        }
        if let Some(r) = (0..ranks as u32).find(|&r| backend.cores(r) < ranks as u32) {
            return Err(Error::Config(format!(
                "collectives run one block per rank: {ranks} ranks need {ranks} cores, device {r} has {}",
                backend.cores(r)
            )));
        }
        config.check_blocks_per_peer()?;
        let buffer = config.resolved_buffer_bytes()?;
        let timeout = config.resolved_timeout()?;
        let deterministic = config.resolved_deterministic()?;
        // At most 1091 s (`timeout_with`): 54.55e9 cycles, far inside an i64.
        let timeout_cycles = i64::try_from(
            timeout.as_micros() * u128::from(crate::backend::SYSTEM_CYCLE_HZ / 1_000_000),
        )
        .unwrap_or(i64::MAX);
        backend.set_launch_deadline(timeout);
        Ok(Settings {
            buffer,
            timeout,
            timeout_cycles,
            deterministic,
        })
    }

    /// Rank `r`'s HCCL buffer (with the push region after it) and sync area.
    pub(crate) fn alloc_areas(
        &self,
        backend: &Arc<dyn DynBackend>,
        r: u32,
        config: &Config,
    ) -> Result<(Memory, Memory)> {
        let buffer = self.buffer;
        // The HCCL buffer, then the push region only the push kernels use (kernel/push.cpp);
        // `buffer_bytes_with` keeps the sum within MAX_BUFFER_BYTES + the region.
        let total = buffer + crate::plan::PUSH_REGION_BYTES;
        let hccl = Memory::alloc(backend, r, total, MemKind::Data).map_err(|e| {
            Error::Config(format!(
                "{}: rank {r}'s HCCL buffer of {buffer} bytes (and {} bytes of push region) cannot be allocated: {e}",
                config.buffer_setting(),
                crate::plan::PUSH_REGION_BYTES
            ))
        })?;
        let flags = ffi::AIV_SYNC_AREA_BYTES as usize;
        let sync = Memory::alloc(backend, r, flags, MemKind::Flags)?;
        Ok((hccl, sync))
    }

    /// The state the communicators of a world share; `hccl[r]` and `sync[r]` are rank `r`'s.
    /// `process_rank`: this process's rank when each rank is a process of its own.
    pub(crate) fn shared(
        self,
        backend: Arc<dyn DynBackend>,
        config: &Config,
        hccl: Vec<Memory>,
        sync: Vec<Memory>,
        process_rank: Option<u32>,
    ) -> Arc<WorldShared> {
        Arc::new(WorldShared {
            backend,
            hccl,
            sync,
            hccl_bytes: self.buffer,
            timeout_cycles: self.timeout_cycles,
            exec_timeout: self.timeout,
            deterministic: self.deterministic,
            blocks_per_peer: config.blocks_per_peer,
            trace: crate::trace::Trace::default(),
            aborted: Mutex::new(None),
            process_rank,
        })
    }
}

impl Communicator {
    /// The CPU twin this rank runs on (its knobs, DMA counters, census), if it runs on the
    /// twin: its world's ([`World::twin`]), or, when the rank is a process of its own
    /// ([`Communicator::from_rank`]), its process's share of the job's twin.
    pub fn twin(&self) -> Option<&Twin> {
        self.launcher
            .world
            .backend
            .as_any()
            .downcast_ref::<TwinBackend>()
            .map(TwinBackend::twin)
    }

    /// Rank `rank`'s communicator of the world `shared` (of `size` ranks).
    pub(crate) fn of_world(
        shared: &Arc<WorldShared>,
        rank: u32,
        size: u32,
    ) -> Result<Communicator> {
        let launcher = Arc::new(Launcher {
            rank,
            size,
            world: shared.clone(),
            failed: Mutex::new(None),
            links: Mutex::new(crate::turns::Links::new(shared.backend.clone())),
            tags: Mutex::new(Tags::new()),
        });
        let streams = Arc::new(Streams::default());
        let main = CommStream::new(&launcher, &streams, "main", 0)?;
        Ok(Communicator {
            launcher,
            main,
            streams,
            state: FeatureState::default(),
            job: None,
        })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let streams: Vec<_> = self.comms.iter().flat_map(|c| c.streams.live()).collect();
        if streams.iter().any(|s| s.busy()) {
            self.stop(StopCause::WorldDropped { busy: true });
        } else {
            let cause = Error::Stopped(StopCause::WorldDropped { busy: false });
            for c in &self.comms {
                c.launcher.fail(&cause);
            }
        }
        for s in &streams {
            s.wait_idle();
        }
    }
}
