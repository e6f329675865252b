//! Simulated worlds of NPUs and their communicators.

use std::sync::Arc;
use std::time::Duration;

use ascendc_twin::{DeviceConfig, Kernel, Twin};
use bytemuck::Pod;
use parking_lot::Mutex;

use crate::backend::dynamic::{DynBackend, Memory};
use crate::backend::twin::TwinBackend;
use crate::backend::{Backend, MemKind};
use crate::buffer::{BufferAccess, DeviceBuffer};
use crate::error::{Error, Result};
use crate::ffi;
use crate::launcher::{Launcher, WorldShared};
use crate::link::{CommStream, Streams};
use crate::tags::Tags;

/// Default HCCL buffer per rank: 200 MB, as HCCL (`HCCL_BUFFSIZE` = 200).
pub const DEFAULT_BUFFER_BYTES: usize = 200 * 1024 * 1024;
/// Smallest HCCL buffer accepted: one 32-byte block per rank of the largest world plus room for
/// a two-shot slice.
pub const MIN_BUFFER_BYTES: usize = 4096;
/// Largest HCCL buffer accepted: with the push region after it
/// ([`crate::plan::PUSH_REGION_BYTES`]), at most `isize::MAX` bytes, the most one allocation can
/// hold. Whether a buffer of that size can be allocated depends on the machine: one that cannot
/// is an error naming the setting when the world is made.
pub const MAX_BUFFER_BYTES: usize = isize::MAX as usize - crate::plan::PUSH_REGION_BYTES;
/// Largest number of ranks in one world (the flag layout has cells for 32; collectives use one
/// block per rank).
pub const MAX_RANKS: usize = 32;
/// Default deadline of every device-side wait, when neither [`Config::exec_timeout`] nor
/// `HCCL_EXEC_TIMEOUT` ([`parse_hccl_exec_timeout`]) says otherwise. HCCL's AIV mode defaults
/// to 1091 s; aiv-comm waits 120 s, so that a test that hangs fails within minutes (the twin's
/// watchdog reports a deadlock sooner still).
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(120);
/// Shortest deadline accepted: HCCL reads `HCCL_EXEC_TIMEOUT` to two decimals of a second, and
/// the twin checks deadlines when a parked poll wakes (every few ms), so less would not mean
/// what it says.
pub const MIN_EXEC_TIMEOUT: Duration = Duration::from_millis(10);

/// Settings of a simulated world.
#[derive(Clone, Debug)]
pub struct Config {
    /// HCCL buffer bytes per rank, [`MIN_BUFFER_BYTES`] to [`MAX_BUFFER_BYTES`] (and as much as
    /// the device can allocate). `None`: `HCCL_BUFFSIZE` (MB) if set, else
    /// [`DEFAULT_BUFFER_BYTES`].
    pub buffer_bytes: Option<usize>,
    /// Deadline of every device-side wait, at least [`MIN_EXEC_TIMEOUT`] and at most
    /// [`HCCL_AIV_MAX_EXEC_TIMEOUT`]. `None`:
    /// `HCCL_EXEC_TIMEOUT` (read by [`parse_hccl_exec_timeout`]) if set, else
    /// [`DEFAULT_EXEC_TIMEOUT`].
    /// A wait that expires fails the launch with [`Error::WaitTimeout`].
    pub exec_timeout: Option<Duration>,
    /// AIV cores per simulated device (default 48, as a 910B), at least the number of ranks and
    /// at most 1024. Collectives and launches with tags
    /// ([`Communicator::launch_with_tags`]) run on at most 48 blocks (`ffi::AIV_MAX_BLOCKS`: the
    /// sync area and diagnostic records have cells for 48 blocks, as many AIV cores as an
    /// Atlas A2 has); more cores serve plain launches ([`CommStream::launch`]).
    pub cores: u32,
    /// Deterministic reductions: every AllReduce and ReduceScatter(V) gives the bits of the
    /// plain rank-order reduction, `((x_0 op x_1) op x_2) ...` with each step rounded to the
    /// element type, whatever the algorithm, the chunking and the HCCL buffer size (an AllReduce
    /// asked for [`crate::AllReduceAlgo::Hd`], whose pairwise tree cannot add in that order,
    /// runs the kernel `Auto` picks). So the same inputs on the same rank count give the same
    /// bits on every run and with every buffer size (as `HCCL_DETERMINISTIC=true` on A2).
    /// `None`: `HCCL_DETERMINISTIC` (`true`, `strict` or `false`, any case; unset is `false`;
    /// `strict` is the same order). It costs parallelism where adds into one output would
    /// otherwise land as they arrive: two-shot AllReduce and ReduceScatter (`BENCHMARKS.md` has
    /// figures; `benches/deterministic.sh` measures them).
    pub deterministic: Option<bool>,
    /// Blocks (cores) per peer of every collective launch,
    /// 1..=[`crate::plan::MAX_BLOCKS_PER_PEER`] (capped at `min(cores, 48) / ranks`; one-shot
    /// AllReduce and [`crate::AllGatherAlgo::PullParts`] run this many blocks in all, each a
    /// part of the chunk). `None`: by the bytes each block pair moves
    /// ([`crate::plan::blocks_per_peer`]). Results are the same either way; this is for
    /// experiments and tests of the split.
    pub blocks_per_peer: Option<u32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            buffer_bytes: None,
            exec_timeout: None,
            cores: ascendc_twin::DEFAULT_CORES,
            deterministic: None,
            blocks_per_peer: None,
        }
    }
}

/// The longest exec timeout of HCCL's AIV mode (and its default there): `HCCL_EXEC_TIMEOUT`
/// values of 0 or above this mean this.
pub const HCCL_AIV_MAX_EXEC_TIMEOUT: Duration = Duration::from_secs(1091);

/// Reads an `HCCL_EXEC_TIMEOUT` value as HCCL's AIV mode on Atlas A2 documents it: seconds in
/// [0, 1091] with at most two decimals (`30`, `0.05`, `.5`), where 0 and anything above 1091
/// mean 1091 s ([`HCCL_AIV_MAX_EXEC_TIMEOUT`]). `None` if `v` is not such a number.
///
/// On the NPU the deadline is further rounded up to a multiple of the hardware's operator
/// timeout interval (`aclrtGetOpTimeoutInterval`); the twin has no such interval and uses the
/// value as read.
///
/// ```
/// use std::time::Duration;
/// use aiv_comm::world::parse_hccl_exec_timeout;
/// assert_eq!(parse_hccl_exec_timeout("0.05"), Some(Duration::from_millis(50)));
/// assert_eq!(parse_hccl_exec_timeout("0"), Some(Duration::from_secs(1091)));
/// assert_eq!(parse_hccl_exec_timeout("5000"), Some(Duration::from_secs(1091)));
/// assert_eq!(parse_hccl_exec_timeout("0.001"), None);
/// ```
pub fn parse_hccl_exec_timeout(v: &str) -> Option<Duration> {
    let v = v.trim();
    let (whole, frac) = v.split_once('.').unwrap_or((v, ""));
    if whole.is_empty() && frac.is_empty()
        || frac.len() > 2
        || !whole
            .chars()
            .chain(frac.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    let max = HCCL_AIV_MAX_EXEC_TIMEOUT;
    // More digits than any u64 of seconds below the maximum can have: above the maximum.
    let s: u64 = match whole.len() {
        0 => 0,
        1..=6 => whole.parse().ok()?,
        _ => return Some(max),
    };
    let cs: u64 = format!("{frac:0<2}").parse().ok()?;
    let d = Duration::from_secs(s) + Duration::from_millis(cs * 10);
    Some(if d.is_zero() || d > max { max } else { d })
}

impl Config {
    /// The HCCL buffer size this configuration gives, after `HCCL_BUFFSIZE`.
    pub fn resolved_buffer_bytes(&self) -> Result<usize> {
        self.buffer_bytes_with(|k| std::env::var(k).ok())
    }

    /// The wait deadline this configuration gives, after `HCCL_EXEC_TIMEOUT`.
    pub fn resolved_timeout(&self) -> Result<Duration> {
        self.timeout_with(|k| std::env::var(k).ok())
    }

    /// [`Config::resolved_buffer_bytes`] with the environment given by `env` (testable without
    /// touching the process environment).
    ///
    /// Refused with [`Error::Config`] naming the setting (`Config::buffer_bytes` or
    /// `HCCL_BUFFSIZE`): a size below [`MIN_BUFFER_BYTES`], and one whose allocation (with the
    /// push region after it, [`crate::plan::PUSH_REGION_BYTES`]) would not fit the address
    /// space ([`MAX_BUFFER_BYTES`]).
    ///
    /// ```
    /// use aiv_comm::{Config, Error};
    /// let env = |v: &'static str| move |k: &str| (k == "HCCL_BUFFSIZE").then(|| v.to_string());
    /// assert_eq!(Config::default().buffer_bytes_with(env("3")).unwrap(), 3 << 20);
    /// let e = Config::default().buffer_bytes_with(env("0")).unwrap_err();
    /// assert!(e.to_string().contains("HCCL_BUFFSIZE"));
    /// let huge = Config { buffer_bytes: Some(usize::MAX), ..Config::default() };
    /// assert!(matches!(huge.buffer_bytes_with(env("3")), Err(Error::Config(m)) if m.contains("buffer_bytes")));
    /// ```
    pub fn buffer_bytes_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<usize> {
        let (bytes, setting) = match self.buffer_bytes {
            Some(b) => (b, format!("Config::buffer_bytes of {b} bytes")),
            None => match env("HCCL_BUFFSIZE") {
                Some(v) => {
                    let mb: usize = v.trim().parse().map_err(|_| {
                        Error::Config(format!(
                            "HCCL_BUFFSIZE must be a whole number of MB, got `{v}`"
                        ))
                    })?;
                    let setting = format!("HCCL_BUFFSIZE={mb} (MB)");
                    let bytes = mb.checked_mul(1024 * 1024).ok_or_else(|| {
                        Error::Config(format!("{setting} does not fit the address space"))
                    })?;
                    (bytes, setting)
                }
                None => return Ok(DEFAULT_BUFFER_BYTES),
            },
        };
        if bytes < MIN_BUFFER_BYTES {
            return Err(Error::Config(format!(
                "{setting}: an HCCL buffer of {bytes} bytes is below the minimum of {MIN_BUFFER_BYTES} bytes"
            )));
        }
        if bytes > MAX_BUFFER_BYTES {
            return Err(Error::Config(format!(
                "{setting}: an HCCL buffer of {bytes} bytes is above the maximum of {MAX_BUFFER_BYTES} bytes (with its {} bytes of push region, the largest allocation the address space can hold)",
                crate::plan::PUSH_REGION_BYTES
            )));
        }
        Ok(bytes)
    }

    /// The setting that gave the HCCL buffer size (for errors): `Config::buffer_bytes` or
    /// `HCCL_BUFFSIZE`.
    fn buffer_setting(&self) -> &'static str {
        match self.buffer_bytes {
            Some(_) => "Config::buffer_bytes",
            None => "HCCL_BUFFSIZE",
        }
    }

    /// Whether reductions are deterministic, after `HCCL_DETERMINISTIC`.
    pub fn resolved_deterministic(&self) -> Result<bool> {
        self.deterministic_with(|k| std::env::var(k).ok())
    }

    /// [`Config::resolved_deterministic`] with the environment given by `env`.
    pub fn deterministic_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<bool> {
        if let Some(d) = self.deterministic {
            return Ok(d);
        }
        match env("HCCL_DETERMINISTIC") {
            None => Ok(false),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                // `strict` (CANN: a strict fixed order for AllReduce and ReduceScatter(V)) is
                // what the fixed order here is already.
                "true" | "strict" => Ok(true),
                "false" => Ok(false),
                _ => Err(Error::Config(format!(
                    "HCCL_DETERMINISTIC must be `true`, `strict` or `false`, got `{v}`"
                ))),
            },
        }
    }

    /// [`Config::resolved_timeout`] with the environment given by `env`.
    pub fn timeout_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<Duration> {
        let t = match self.exec_timeout {
            Some(t) => t,
            None => match env("HCCL_EXEC_TIMEOUT") {
                Some(v) => parse_hccl_exec_timeout(&v).ok_or_else(|| {
                    Error::Config(format!(
                        "HCCL_EXEC_TIMEOUT must be seconds (0 to 1091, at most two decimals), got `{v}`"
                    ))
                })?,
                None => DEFAULT_EXEC_TIMEOUT,
            },
        };
        // HCCL_EXEC_TIMEOUT's values are within both bounds (parse_hccl_exec_timeout).
        if t < MIN_EXEC_TIMEOUT {
            return Err(Error::Config(format!(
                "Config::exec_timeout of {t:?} is below the minimum of {MIN_EXEC_TIMEOUT:?}"
            )));
        }
        if t > HCCL_AIV_MAX_EXEC_TIMEOUT {
            return Err(Error::Config(format!(
                "Config::exec_timeout of {t:?} is above the maximum of {HCCL_AIV_MAX_EXEC_TIMEOUT:?} (HCCL's AIV mode reads HCCL_EXEC_TIMEOUT up to that too)"
            )));
        }
        Ok(t)
    }

    fn check(&self, ranks: usize) -> Result<()> {
        self.check_blocks_per_peer()?;
        if self.cores < ranks as u32 {
            return Err(Error::Config(format!(
                "collectives run one block per rank: {ranks} ranks need {ranks} cores, the devices have {}",
                self.cores
            )));
        }
        Ok(())
    }

    fn check_blocks_per_peer(&self) -> Result<()> {
        if let Some(k) = self.blocks_per_peer {
            if !(1..=crate::plan::MAX_BLOCKS_PER_PEER).contains(&k) {
                return Err(Error::Config(format!(
                    "blocks_per_peer must be 1..={}, got {k}",
                    crate::plan::MAX_BLOCKS_PER_PEER
                )));
            }
        }
        Ok(())
    }
}

/// One rank's handle for collectives: its device, HCCL buffer, sync area, stream and tags.
///
/// Calls validate their arguments, then enqueue one kernel launch per chunk on the rank's stream
/// and return; [`Communicator::synchronize`] waits for them. Every rank of a world must issue the
/// same collectives in the same order (as with HCCL).
///
/// A communicator may be shared between host threads, but calls that enqueue work must be
/// ordered by the program (as with HCCL): two threads racing to enqueue collectives on one rank
/// can enqueue them in an order the other ranks do not use.
///
/// **After a failure** (a wait timeout or a device fault) the communicator is marked failed:
/// its flags may be half-written, so every later call returns [`Error::CommFailed`]. Build a new
/// [`World`] to continue.
pub struct Communicator {
    pub(crate) launcher: Arc<Launcher>,
    pub(crate) main: CommStream,
    /// Every stream of this rank (main, created, and those its calls use inside).
    pub(crate) streams: Streams,
    pub(crate) hd: crate::hd::HdSlot,
    /// The streams of [`Communicator::batch_send_recv`], one per (peer, direction).
    pub(crate) batch:
        Mutex<std::collections::HashMap<(u32, crate::batch::SendRecvKind), CommStream>>,
    /// GM of AlltoAllV's count exchange (this rank's row, every rank's rows), made at the
    /// first call.
    pub(crate) a2av_scratch: Mutex<Option<Arc<(Memory, Memory)>>>,
    /// Tag of the last push-mode launch enqueued on this rank (0: none yet), which the next one
    /// passes to its kernel (`AivPushArgs::prev_tag`, kernel/push.cpp).
    pub(crate) push_prev: Mutex<i64>,
    /// Buffers registered as window memory ([`Communicator::register`], host/window.rs).
    pub(crate) windows: Mutex<Vec<DeviceBuffer>>,
}

impl Communicator {
    /// This rank.
    pub fn rank(&self) -> u32 {
        self.launcher.rank
    }

    /// Ranks in the world.
    pub fn size(&self) -> u32 {
        self.launcher.size
    }

    /// HCCL buffer bytes of every rank.
    pub fn buffer_bytes(&self) -> usize {
        self.launcher.world.hccl_bytes
    }

    /// True if reductions add in a fixed order ([`Config::deterministic`]).
    pub fn deterministic(&self) -> bool {
        self.launcher.world.deterministic
    }

    /// Blocks per peer of a collective launch whose block pairs each move `pair_bytes`
    /// ([`Config::blocks_per_peer`], else [`crate::plan::blocks_per_peer`]).
    pub fn blocks_per_peer(&self, pair_bytes: usize) -> u32 {
        let n = self.size();
        let cores = self.cores();
        crate::plan::blocks_for(
            self.launcher.world.blocks_per_peer,
            pair_bytes,
            n as usize,
            cores,
        )
    }

    /// AIV cores of this rank's device (the most blocks one launch can have).
    pub fn cores(&self) -> u32 {
        self.launcher.cores()
    }

    /// Identifies the world (see [`World::id`]).
    pub fn world_id(&self) -> u64 {
        self.launcher.world.id()
    }

    /// Allocates a zeroed device buffer of `bytes` on this rank.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer> {
        let mem = Memory::alloc(
            &self.launcher.world.backend,
            self.rank(),
            bytes,
            MemKind::Data,
        )?;
        Ok(DeviceBuffer::new(mem))
    }

    /// Allocates a device buffer holding `data`.
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer> {
        let b = self.alloc(std::mem::size_of_val(data))?;
        b.write(0, data)?;
        Ok(b)
    }

    /// Waits for every operation enqueued on the main stream before the call (not for those
    /// enqueued meanwhile by other threads); returns the error of the first one that failed, or
    /// [`Error::CommFailed`] if the communicator has failed ([`CommStream::synchronize`]).
    ///
    /// Errors are sticky: every later call returns the same error until the stream is
    /// recovered ([`CommStream::clear_error`], for errors that do not fail the communicator),
    /// and a failed communicator never recovers. What a failed or dropped operation was to
    /// write reads back as [`Error::Poisoned`], not as data.
    pub fn synchronize(&self) -> Result<()> {
        self.main.synchronize()
    }

    /// Recovers this rank's streams from an error that did not fail the communicator (a
    /// send/recv [`Error::SizeMismatch`], an AlltoAllV counts [`Error::CollectiveMismatch`],
    /// an [`Error::EventTimeout`]): the main stream and the streams the communicator's own
    /// calls use inside ([`Communicator::batch_send_recv`]'s links, HD AllReduce's
    /// sub-streams), each as [`CommStream::clear_error`]. Returns the main stream's error (else
    /// the first of the others), `None` if none had one. Streams made with
    /// [`Communicator::create_stream`] are the caller's to recover.
    ///
    /// What failed or dropped operations were to write stays poisoned ([`Error::Poisoned`]);
    /// a failed communicator ([`Communicator::failure`]) stays failed.
    ///
    /// ```
    /// use aiv_comm::{Error, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|c| {
    ///     let b = c.alloc(if c.rank() == 0 { 8 } else { 12 })?; // sizes disagree
    ///     if c.rank() == 0 { c.send(&b, 1)? } else { c.recv(&b, 0)? }
    ///     assert!(matches!(c.synchronize(), Err(Error::SizeMismatch { .. })));
    ///     assert!(matches!(c.synchronize(), Err(Error::SizeMismatch { .. }))); // sticky
    ///     assert!(matches!(c.clear_error(), Some(Error::SizeMismatch { .. })));
    ///     c.synchronize() // recovered: the stream runs what is enqueued from now on
    /// });
    /// assert!(out.iter().all(|r| r.is_ok()));
    /// ```
    pub fn clear_error(&self) -> Option<Error> {
        let mut streams: Vec<CommStream> = self.batch.lock().values().cloned().collect();
        // HD's events stay failed once a post was dropped: its next call makes fresh ones.
        let hd = self.hd.lock().take();
        if let Some(hd) = hd {
            streams.extend(hd.streams().into_iter().cloned());
        }
        let mut other = None;
        for s in &streams {
            let e = s.clear_error(); // every stream is cleared, whichever error is returned
            other = other.or(e);
        }
        let main = self.main.clear_error();
        main.or(other)
    }

    /// `Some(cause)` if an earlier operation failed this communicator.
    pub fn failure(&self) -> Option<String> {
        self.launcher.failed.lock().clone()
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        self.launcher.check_usable()
    }

    /// Refuses a buffer of another world, or of another rank when `own_rank` is set.
    pub(crate) fn check_owner(
        &self,
        what: &'static str,
        buf: &DeviceBuffer,
        own_rank: bool,
    ) -> Result<()> {
        if buf.world_id() != self.world_id() {
            return Err(Error::WrongWorld { what });
        }
        if own_rank && buf.rank() != self.rank() {
            return Err(Error::WrongDevice {
                what,
                buffer_rank: buf.rank(),
                comm_rank: self.rank(),
            });
        }
        Ok(())
    }

    /// Reserves `n` tags for one launch (see [`crate::tags`]).
    pub(crate) fn reserve_tags(&self, n: i64) -> Result<i64> {
        self.launcher.reserve_tags(n)
    }

    /// Tags issued so far by this communicator.
    pub fn tags_issued(&self) -> i64 {
        self.launcher.tags.lock().issued()
    }

    /// Enqueues a launch of your own `kernel` on the main stream; see
    /// [`CommStream::launch_with_tags`].
    ///
    /// # Safety
    /// As [`CommStream::launch_with_tags`].
    pub unsafe fn launch_with_tags<A: Pod + Send + 'static>(
        &self,
        kernel: &'static Kernel,
        block_dim: u32,
        n: i64,
        buffers: &[BufferAccess],
        make: impl FnOnce(ffi::AivCommArgs) -> A,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.main
                .launch_with_tags(kernel, block_dim, n, buffers, make)
        }
    }
}

/// A set of simulated NPUs (ranks) on the CPU twin, one [`Communicator`] each.
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
        if ranks == 0 || ranks > MAX_RANKS {
            return Err(Error::RankCount {
                ranks,
                max: MAX_RANKS,
            });
        }
        let backend: Arc<dyn DynBackend> = Arc::new(backend);
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
            timeout.as_micros() * u128::from(ascendc_twin::SYSTEM_CYCLE_HZ / 1_000_000),
        )
        .unwrap_or(i64::MAX);
        let mut hccl = Vec::new();
        let mut sync = Vec::new();
        for r in 0..ranks as u32 {
            // The HCCL buffer, then the push region only the push kernels use (kernel/push.cpp);
            // `buffer_bytes_with` keeps the sum within MAX_BUFFER_BYTES + the region.
            let total = buffer + crate::plan::PUSH_REGION_BYTES;
            hccl.push(
                Memory::alloc(&backend, r, total, MemKind::Data).map_err(|e| {
                    Error::Config(format!(
                        "{}: rank {r}'s HCCL buffer of {buffer} bytes (and {} bytes of push region) cannot be allocated: {e}",
                        config.buffer_setting(),
                        crate::plan::PUSH_REGION_BYTES
                    ))
                })?,
            );
            let flags = ffi::AIV_SYNC_AREA_BYTES as usize;
            sync.push(Memory::alloc(&backend, r, flags, MemKind::Flags)?);
        }
        let shared = Arc::new(WorldShared {
            backend: backend.clone(),
            hccl,
            sync,
            hccl_bytes: buffer,
            timeout_cycles,
            exec_timeout: timeout,
            deterministic,
            blocks_per_peer: config.blocks_per_peer,
            trace: crate::trace::Trace::default(),
        });
        let mut comms = Vec::new();
        for r in 0..ranks {
            let launcher = Arc::new(Launcher {
                rank: r as u32,
                size: ranks as u32,
                world: shared.clone(),
                failed: Mutex::new(None),
                links: Mutex::new(crate::turns::Links::new(backend.clone())),
                tags: Mutex::new(Tags::new()),
            });
            let streams = Streams::default();
            let main = CommStream::new(&launcher, &streams, "main", 0)?;
            comms.push(Communicator {
                launcher,
                main,
                streams,
                hd: Mutex::new(None),
                batch: Mutex::new(Default::default()),
                a2av_scratch: Mutex::new(None),
                push_prev: Mutex::new(0),
                windows: Mutex::new(Vec::new()),
            });
        }
        Ok(World { comms, shared })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.comms.len()
    }

    /// Identifies this world among the worlds of the process (its backend's id); device
    /// buffers carry it ([`DeviceBuffer::world_id`]) and a buffer of another world is refused.
    pub fn id(&self) -> u64 {
        self.shared.id()
    }

    /// The name of the backend the world runs on (`twin`, ...).
    pub fn backend_name(&self) -> &'static str {
        self.shared.backend.name()
    }

    /// The CPU twin the world's ranks run on (its knobs, DMA counters, watchdog), if it runs on
    /// the twin ([`World::sim`], [`World::on_twin`]).
    pub fn twin(&self) -> Option<&Twin> {
        self.shared
            .backend
            .as_any()
            .downcast_ref::<TwinBackend>()
            .map(TwinBackend::twin)
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
        // Every stream's position first: work enqueued while an earlier stream is waited for
        // is not waited for.
        let streams: Vec<Vec<_>> = self
            .comms
            .iter()
            .map(|c| {
                let live = c.streams.live();
                let at: Vec<u64> = live.iter().map(|s| s.position()).collect();
                live.into_iter().zip(at).collect()
            })
            .collect();
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
    fn stop(&self, cause: &str) {
        self.shared.backend.abort(cause);
        for c in &self.comms {
            c.launcher.fail(cause);
            for s in c.streams.live() {
                s.cancel(crate::error::Error::CommFailed {
                    rank: c.rank(),
                    cause: cause.to_string(),
                });
            }
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
                            self.stop(&format!(
                                "the host thread of rank {} panicked (see its panic message)",
                                c.rank()
                            ));
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

impl Drop for World {
    fn drop(&mut self) {
        let streams: Vec<_> = self.comms.iter().flat_map(|c| c.streams.live()).collect();
        if streams.iter().any(|s| s.busy()) {
            self.stop("the World was dropped while work was still queued");
        } else {
            for c in &self.comms {
                c.launcher.fail("the World was dropped");
            }
        }
        for s in &streams {
            s.wait_idle();
        }
    }
}
