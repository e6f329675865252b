//! Simulated worlds of NPUs, communicators and device buffers.

use std::sync::Arc;
use std::time::Duration;

use ascendc_sys::{Device, DeviceConfig, GmBuffer, KernelFn, Twin};
use bytemuck::Pod;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::ffi;
use crate::link::CommStream;
use crate::tags::{Tags, DEFAULT_TAG_LIMIT};

/// Default HCCL buffer per rank: 200 MB, as HCCL (`HCCL_BUFFSIZE` = 200).
pub const DEFAULT_BUFFER_BYTES: usize = 200 * 1024 * 1024;
/// Smallest HCCL buffer accepted: one 32-byte block per rank of the largest world plus room for
/// a two-shot slice.
pub const MIN_BUFFER_BYTES: usize = 4096;
/// Largest number of ranks in one world (the flag layout has cells for 32; collectives use one
/// block per rank).
pub const MAX_RANKS: usize = 32;
/// Default deadline of every device-side wait, when neither [`Config::exec_timeout`] nor
/// `HCCL_EXEC_TIMEOUT` (seconds, as HCCL reads it) says otherwise.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings of a simulated world.
#[derive(Clone, Debug)]
pub struct Config {
    /// HCCL buffer bytes per rank. `None`: `HCCL_BUFFSIZE` (MB) if set, else
    /// [`DEFAULT_BUFFER_BYTES`].
    pub buffer_bytes: Option<usize>,
    /// Deadline of every device-side wait. `None`: `HCCL_EXEC_TIMEOUT` (seconds) if set, else
    /// [`DEFAULT_EXEC_TIMEOUT`]. A wait that expires fails the launch with
    /// [`Error::WaitTimeout`].
    pub exec_timeout: Option<Duration>,
    /// AIV cores per simulated device (default 48, as a 910B).
    pub cores: u32,
    /// Largest tag before the wrap protocol runs (see [`crate::tags`]). Tests set it tiny.
    pub tag_limit: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            buffer_bytes: None,
            exec_timeout: None,
            cores: ascendc_sys::DEFAULT_CORES,
            tag_limit: DEFAULT_TAG_LIMIT,
        }
    }
}

impl Config {
    /// The HCCL buffer size this configuration gives, after `HCCL_BUFFSIZE`.
    pub fn resolved_buffer_bytes(&self) -> Result<usize> {
        let bytes = match self.buffer_bytes {
            Some(b) => b,
            None => match std::env::var("HCCL_BUFFSIZE") {
                Ok(v) => {
                    let mb: usize = v.trim().parse().map_err(|_| {
                        Error::Config(format!(
                            "HCCL_BUFFSIZE must be a whole number of MB, got `{v}`"
                        ))
                    })?;
                    mb.checked_mul(1024 * 1024).ok_or_else(|| {
                        Error::Config(format!("HCCL_BUFFSIZE {mb} MB is too large"))
                    })?
                }
                Err(_) => DEFAULT_BUFFER_BYTES,
            },
        };
        if bytes < MIN_BUFFER_BYTES {
            return Err(Error::Config(format!(
                "HCCL buffer of {bytes} bytes is below the minimum of {MIN_BUFFER_BYTES} bytes"
            )));
        }
        Ok(bytes)
    }

    /// The wait deadline this configuration gives, after `HCCL_EXEC_TIMEOUT`.
    pub fn resolved_timeout(&self) -> Result<Duration> {
        let t = match self.exec_timeout {
            Some(t) => t,
            None => match std::env::var("HCCL_EXEC_TIMEOUT") {
                Ok(v) => Duration::from_secs(v.trim().parse().map_err(|_| {
                    Error::Config(format!(
                        "HCCL_EXEC_TIMEOUT must be whole seconds, got `{v}`"
                    ))
                })?),
                Err(_) => DEFAULT_EXEC_TIMEOUT,
            },
        };
        if t.is_zero() {
            return Err(Error::Config("exec timeout must be positive".into()));
        }
        Ok(t)
    }
}

/// A device buffer: a range of GM on one rank's device. Cheap to clone (shared).
///
/// Host copies ([`DeviceBuffer::write`], [`DeviceBuffer::read`]) happen at once, not in stream
/// order: call [`Communicator::synchronize`] before reading what a collective wrote.
#[derive(Clone)]
pub struct DeviceBuffer {
    gm: Arc<GmBuffer>,
    offset: usize,
    len: usize,
}

impl DeviceBuffer {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rank of the device holding it.
    pub fn rank(&self) -> u32 {
        self.gm.rank()
    }

    /// GM address of its first byte.
    pub fn addr(&self) -> u64 {
        self.gm.addr() as u64 + self.offset as u64
    }

    /// A sub-range `[offset, offset + len)` of this buffer (shares the memory).
    pub fn view(&self, offset: usize, len: usize) -> Result<DeviceBuffer> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(DeviceBuffer {
                gm: self.gm.clone(),
                offset: self.offset + offset,
                len,
            }),
            _ => Err(Error::Length(format!(
                "view {offset}..{} of a {}-byte buffer",
                offset.saturating_add(len),
                self.len
            ))),
        }
    }

    /// Copies `data` into the buffer starting at element `elem_offset` (host -> device).
    pub fn write<T: Pod>(&self, elem_offset: usize, data: &[T]) -> Result<()> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let off = self.byte_range(elem_offset, std::mem::size_of::<T>(), bytes.len())?;
        self.gm.write(off, bytes)?;
        Ok(())
    }

    /// Copies elements starting at `elem_offset` into `out` (device -> host).
    pub fn read<T: Pod>(&self, elem_offset: usize, out: &mut [T]) -> Result<()> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        let off = self.byte_range(elem_offset, std::mem::size_of::<T>(), bytes.len())?;
        self.gm.read(off, bytes)?;
        Ok(())
    }

    /// The whole buffer as elements of `T` (trailing bytes that do not fill a `T` are left out).
    pub fn to_vec<T: Pod + Default>(&self) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.len / std::mem::size_of::<T>().max(1)];
        self.read(0, &mut v)?;
        Ok(v)
    }

    /// Sets every byte to `value`.
    pub fn fill(&self, value: u8) -> Result<()> {
        self.gm.fill(self.offset, self.len, value)?;
        Ok(())
    }

    fn byte_range(&self, elem_offset: usize, es: usize, bytes: usize) -> Result<usize> {
        let start = elem_offset.checked_mul(es);
        match start.and_then(|s| s.checked_add(bytes)) {
            Some(end) if end <= self.len => Ok(self.offset + elem_offset * es),
            _ => Err(Error::Length(format!(
                "host copy of {bytes} bytes at element {elem_offset} does not fit a {}-byte buffer",
                self.len
            ))),
        }
    }

    pub(crate) fn same_allocation(&self, other: &DeviceBuffer) -> bool {
        Arc::ptr_eq(&self.gm, &other.gm)
    }
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer {{ rank: {}, addr: {:#x}, len: {} }}",
            self.rank(),
            self.addr(),
            self.len
        )
    }
}

/// Addresses every rank's kernels need: all HCCL buffers and sync areas of the world.
pub(crate) struct Peers {
    pub hccl: Vec<u64>,
    pub sync: Vec<u64>,
    pub hccl_bytes: usize,
}

/// What the streams of a rank need to launch and check a kernel.
pub(crate) struct Launcher {
    pub rank: u32,
    pub size: u32,
    pub device: Device,
    pub sync: Arc<GmBuffer>,
    pub peers: Arc<Peers>,
    pub timeout_cycles: i64,
    pub exec_timeout: Duration,
    pub failed: Arc<Mutex<Option<String>>>,
    pub links: Mutex<crate::link::LinkSeqs>,
    pub trace: Arc<crate::trace::Trace>,
    pub streams_created: Mutex<u32>,
    /// The world's twin (every rank's device is one of its devices).
    pub twin: Twin,
}

impl Launcher {
    /// The communicator part of every kernel's arguments, for a launch with `tag` whose blocks
    /// write diagnostics from record `diag_base` on.
    pub fn comm_args(&self, tag: i32, diag_base: u32) -> ffi::AivCommArgs {
        let mut c = ffi::AivCommArgs {
            hccl_bytes: self.peers.hccl_bytes as u64,
            timeout_cycles: self.timeout_cycles,
            rank: self.rank as i32,
            rank_size: self.size as i32,
            tag,
            diag_base: diag_base as i32,
            ..Default::default()
        };
        for r in 0..self.size as usize {
            c.hccl[r] = self.peers.hccl[r];
            c.sync[r] = self.peers.sync[r];
        }
        c
    }

    /// Writes `args` to a stream's argument slot, launches `kernel`, then checks the sync area's
    /// diagnostics. Any failure but a send/recv size mismatch marks the communicator failed.
    pub fn launch<A: Pod>(
        &self,
        slot: &GmBuffer,
        diag: std::ops::Range<u32>,
        name: &'static str,
        kernel: KernelFn,
        block_dim: u32,
        args: &A,
    ) -> Result<()> {
        let r = self.launch_inner(slot, diag, name, kernel, block_dim, args);
        if let Err(e) = &r {
            if matches!(e, Error::SizeMismatch { .. }) {
                return r;
            }
            // Peers waiting for this rank would sit until their deadlines; on the twin they can
            // be stopped at once, naming the cause.
            let from_peer = matches!(
                e,
                Error::Device(ascendc_sys::TwinError::Fault(ascendc_sys::KernelFault {
                    kind: ascendc_sys::FaultKind::PeerAborted { .. },
                    ..
                }))
            );
            if !from_peer {
                self.twin.abort(&format!("rank {} failed: {e}", self.rank));
            }
            let mut f = self.failed.lock();
            if f.is_none() {
                *f = Some(e.to_string());
            }
        }
        r
    }

    fn launch_inner<A: Pod>(
        &self,
        slot: &GmBuffer,
        diag: std::ops::Range<u32>,
        name: &'static str,
        kernel: KernelFn,
        block_dim: u32,
        args: &A,
    ) -> Result<()> {
        slot.write(0, bytemuck::bytes_of(args))?;
        // SAFETY: every kernel of launch.h takes the GM address of its argument struct, which
        // `slot` holds for the whole synchronous launch; the struct type matches the kernel
        // by construction of the callers in this crate.
        let launched = unsafe { self.device.launch(name, kernel, block_dim, slot.addr()) };
        // Block b writes record diag.start + b: only the launch's blocks can have written one.
        let used = diag.start..diag.end.min(diag.start.saturating_add(block_dim));
        if let Some(timeout) = self.take_diagnostic(used)? {
            return Err(timeout);
        }
        launched.map_err(Error::from)
    }

    /// Reads (and clears) the first valid diagnostic record among `records` of this rank's
    /// sync area (each stream owns its own records, so concurrent streams never see each
    /// other's).
    fn take_diagnostic(&self, records: std::ops::Range<u32>) -> Result<Option<Error>> {
        const REC: usize = ffi::AIV_DIAG_BYTES as usize;
        let mut buf = [0u8; ffi::AIV_MAX_BLOCKS as usize * REC];
        let n = records.len().min(ffi::AIV_MAX_BLOCKS as usize);
        let base = ffi::AIV_DIAG_OFFSET as usize + records.start as usize * REC;
        let raw = &mut buf[..n * REC];
        self.sync.read(base, raw)?;
        let mut first = None;
        for b in 0..n {
            let d: ffi::AivDiag = bytemuck::pod_read_unaligned(&raw[b * REC..(b + 1) * REC]);
            if d.magic as u32 == ffi::AIV_DIAG_MAGIC && first.is_none() {
                first = Some(diag_error(&d));
            }
        }
        if first.is_some() {
            self.sync.fill(base, n * REC, 0)?;
        }
        Ok(first)
    }
}

/// Name of the sync-area region holding byte `cell`.
pub fn cell_name(cell: u64) -> String {
    let fb = ffi::AIV_FLAG_BYTES as u64;
    let c = cell;
    if c < ffi::AIV_ONE2N_OFFSET as u64 {
        let i = (c - ffi::AIV_PAIR_OFFSET as u64) / fb;
        format!(
            "pairwise cell from rank {}, slot {}",
            i / ffi::AIV_PAIR_SLOTS as u64,
            i % ffi::AIV_PAIR_SLOTS as u64
        )
    } else if c < ffi::AIV_COUNT_OFFSET as u64 {
        format!(
            "broadcast cell, slot {}",
            (c - ffi::AIV_ONE2N_OFFSET as u64) / fb
        )
    } else if c < ffi::AIV_BARRIER_OFFSET as u64 {
        format!(
            "counting cell, slot {}",
            (c - ffi::AIV_COUNT_OFFSET as u64) / fb
        )
    } else if c < ffi::AIV_WRAP_OFFSET as u64 {
        format!(
            "barrier cell of block {}",
            (c - ffi::AIV_BARRIER_OFFSET as u64) / fb
        )
    } else if c < ffi::AIV_DIAG_OFFSET as u64 {
        format!(
            "tag-wrap cell from rank {}",
            (c - ffi::AIV_WRAP_OFFSET as u64) / fb
        )
    } else {
        "diagnostics".to_string()
    }
}

fn diag_error(d: &ffi::AivDiag) -> Error {
    if d.kind as u32 == ffi::AIV_DIAG_SIZE {
        return Error::SizeMismatch {
            rank: d.rank as u32,
            peer: d.peer as u32,
            mine: d.waited_cycles,
            theirs: d.cell,
        };
    }
    let what = match d.kind as u32 {
        ffi::AIV_DIAG_WAIT => "Wait",
        ffi::AIV_DIAG_WAIT_NV1 => "WaitNv1",
        ffi::AIV_DIAG_WAIT_1VN => "Wait1vN",
        ffi::AIV_DIAG_BARRIER => "BarrierAll",
        ffi::AIV_DIAG_LINK => "link wait",
        _ => "tag wrap",
    };
    let us = ascendc_sys::cycles_to_us(d.waited_cycles);
    Error::WaitTimeout {
        rank: d.rank as u32,
        block: d.block as u32,
        peer: d.peer as u32,
        cell: d.cell,
        cell_name: cell_name(d.cell),
        expected: d.expected,
        observed: d.observed,
        what,
        waited_ms: us / 1000,
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
    pub(crate) hccl: Arc<GmBuffer>,
    pub(crate) tags: Mutex<Tags>,
    pub(crate) main: CommStream,
    pub(crate) hd: crate::hd::HdSlot,
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
        self.hccl.len()
    }

    /// The rank's simulated device.
    pub fn device(&self) -> &Device {
        &self.launcher.device
    }

    /// Allocates a zeroed device buffer of `bytes` on this rank.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer> {
        let gm = self.launcher.device.alloc(bytes)?;
        Ok(DeviceBuffer {
            gm: Arc::new(gm),
            offset: 0,
            len: bytes,
        })
    }

    /// Allocates a device buffer holding `data`.
    pub fn alloc_from<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer> {
        let b = self.alloc(std::mem::size_of_val(data))?;
        b.write(0, data)?;
        Ok(b)
    }

    /// Waits for every operation enqueued so far; returns the first error among them.
    pub fn synchronize(&self) -> Result<()> {
        self.main.synchronize()
    }

    /// `Some(cause)` if an earlier operation failed this communicator.
    pub fn failure(&self) -> Option<String> {
        self.launcher.failed.lock().clone()
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        match self.failure() {
            Some(cause) => Err(Error::CommFailed {
                rank: self.rank(),
                cause,
            }),
            None => Ok(()),
        }
    }

    /// Reserves `n` tags for one launch, enqueueing the wrap protocol first if the range wraps.
    pub(crate) fn reserve_tags(&self, n: i32) -> Result<i32> {
        let r = self.tags.lock().reserve(n).ok_or_else(|| {
            Error::Config(format!(
                "a launch cannot use {n} tags with the configured tag limit"
            ))
        })?;
        if let Some(epoch) = r.wrap {
            self.main.task("tag wrap", "aiv_sync_wrap", move |ctx| {
                let args = ffi::AivWrapArgs {
                    comm: ctx.comm_args(0),
                    epoch,
                    reserved: 0,
                };
                ctx.launch("aiv_sync_wrap", ffi::aiv_sync_wrap, 1, &args)
            });
        }
        Ok(r.base)
    }

    /// Wraps done so far by this communicator's tag counter (see [`crate::tags`]).
    pub fn tag_epoch(&self) -> i32 {
        self.tags.lock().epoch()
    }

    /// Enqueues a launch of `kernel` with fresh tags (`n` of them); `make` builds the argument
    /// struct from the communicator part; `keep` (typically the device buffers the kernel
    /// touches) is held until the launch has run. `make` runs on the stream, a host task of the
    /// twin's worker pool: it must not block on other streams or threads.
    ///
    /// # Safety
    /// `kernel` must be a kernel of `launch.h` taking the GM address of an `A`, and the addresses
    /// inside `A` must stay valid until the launch has run (hold their buffers in `keep`).
    pub unsafe fn launch_with_tags<A: Pod + Send + 'static, K: Send + 'static>(
        &self,
        name: &'static str,
        kernel: KernelFn,
        block_dim: u32,
        n: i32,
        keep: K,
        make: impl FnOnce(ffi::AivCommArgs) -> A + Send + 'static,
    ) -> Result<()> {
        self.check_usable()?;
        let tag = self.reserve_tags(n)?;
        self.main.task(name, name, move |ctx| {
            let args = make(ctx.comm_args(tag));
            let r = ctx.launch(name, kernel, block_dim, &args);
            drop(keep);
            r
        });
        Ok(())
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
pub struct World {
    comms: Vec<Communicator>,
    trace: Arc<crate::trace::Trace>,
    twin: Twin,
}

impl World {
    /// `ranks` simulated NPUs with the default [`Config`].
    pub fn sim(ranks: usize) -> Result<World> {
        World::sim_with(ranks, Config::default())
    }

    /// `ranks` (1..=[`MAX_RANKS`]) simulated NPUs with `config`.
    pub fn sim_with(ranks: usize, config: Config) -> Result<World> {
        if ranks == 0 || ranks > MAX_RANKS {
            return Err(Error::RankCount {
                ranks,
                max: MAX_RANKS,
            });
        }
        let buffer = config.resolved_buffer_bytes()?;
        let timeout = config.resolved_timeout()?;
        if config.cores < ranks as u32 {
            return Err(Error::Config(format!(
                "collectives run one block per rank: {ranks} ranks need {ranks} cores, the devices have {}",
                config.cores
            )));
        }
        let timeout_cycles = (timeout.as_micros() as u64)
            .saturating_mul(ascendc_sys::SYSTEM_CYCLE_HZ / 1_000_000)
            .min(i64::MAX as u64) as i64;
        let twin = Twin::new();
        let mut devices = Vec::new();
        let mut hccl = Vec::new();
        let mut sync = Vec::new();
        for r in 0..ranks {
            let dev = twin.device(
                r as u32,
                DeviceConfig {
                    cores: config.cores,
                    ..DeviceConfig::default()
                },
            )?;
            hccl.push(Arc::new(dev.alloc(buffer)?));
            sync.push(Arc::new(dev.alloc_sync(ffi::AIV_SYNC_AREA_BYTES as usize)?));
            devices.push(dev);
        }
        let peers = Arc::new(Peers {
            hccl: hccl.iter().map(|b| b.addr() as u64).collect(),
            sync: sync.iter().map(|b| b.addr() as u64).collect(),
            hccl_bytes: buffer,
        });
        let trace = Arc::new(crate::trace::Trace::default());
        let mut comms = Vec::new();
        for (r, dev) in devices.into_iter().enumerate() {
            let launcher = Arc::new(Launcher {
                rank: r as u32,
                size: ranks as u32,
                device: dev,
                sync: sync[r].clone(),
                peers: peers.clone(),
                timeout_cycles,
                exec_timeout: timeout,
                failed: Arc::new(Mutex::new(None)),
                links: Mutex::new(crate::link::LinkSeqs::default()),
                trace: trace.clone(),
                streams_created: Mutex::new(0),
                twin: twin.clone(),
            });
            let main = CommStream::new(&launcher, "main", 0)?;
            comms.push(Communicator {
                launcher,
                hccl: hccl[r].clone(),
                tags: Mutex::new(Tags::new(config.tag_limit)),
                main,
                hd: Mutex::new(None),
            });
        }
        Ok(World { comms, trace, twin })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.comms.len()
    }

    /// The CPU twin the world's ranks run on (its knobs, DMA counters, watchdog).
    pub fn twin(&self) -> &Twin {
        &self.twin
    }

    /// Turns recording of stream tasks (rank, stream, stage, task, start, end) on or off.
    pub fn set_tracing(&self, on: bool) {
        self.trace.set_enabled(on);
    }

    /// The tasks recorded since tracing was turned on, in completion order.
    pub fn trace(&self) -> Vec<crate::trace::TraceEvent> {
        self.trace.events()
    }

    /// The recorded tasks as Chrome trace JSON (open in chrome://tracing or Perfetto).
    pub fn trace_chrome_json(&self) -> String {
        crate::trace::chrome_json(&self.trace.events())
    }

    /// The communicators, indexed by rank.
    pub fn comms(&self) -> &[Communicator] {
        &self.comms
    }

    /// Runs `f` once per rank, each on its own host thread (as one process per NPU would), and
    /// returns the results in rank order.
    pub fn run<R: Send>(&self, f: impl Fn(&Communicator) -> R + Sync) -> Vec<R> {
        std::thread::scope(|s| {
            let handles: Vec<_> = self.comms.iter().map(|c| s.spawn(|| f(c))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    }
}
