//! The CPU twin as a [`Backend`]: one [`ascendc_twin::Device`] per rank of a
//! [`ascendc_twin::Twin`] of the world's own.
//!
//! Host tasks are coroutines of the twin's worker pool, next to the kernel blocks they launch:
//! a launch and the wait for its end cost coroutine switches, and a launch of one block from a
//! host task runs inline (the task drives the block itself). Waits on a [`HostSignal`] from a
//! host task park its coroutine. None of it is visible above the trait.

use ascendc_twin::{
    ArgBlock, Device, DeviceConfig, FaultKind as TwinFault, GmBuffer, HostSignal, Kernel, Twin,
    TwinError,
};

use super::{Backend, Blocks, MemKind, Signal};
use crate::error::{Error, Fault, FaultKind, Result};

// The twin models an Atlas A2: its defaults are the device's facts the host plans with.
const _: () = assert!(ascendc_twin::DEFAULT_CORES == super::A2_AIV_CORES);
const _: () = assert!(ascendc_twin::SYSTEM_CYCLE_HZ == super::SYSTEM_CYCLE_HZ);

/// The CPU twin's devices of one world.
pub struct TwinBackend {
    twin: Twin,
    devices: Vec<Device>,
    /// This process's share of a job whose ranks are processes ([`TwinBackend::join_job`]).
    space: Option<std::sync::Arc<ascendc_twin::Space>>,
}

impl TwinBackend {
    /// `devices` devices of `twin`, each configured as `config`.
    pub fn new(twin: Twin, devices: u32, config: DeviceConfig) -> Result<TwinBackend> {
        let devices = (0..devices)
            .map(|r| twin.device(r, config.clone()).map_err(from_twin))
            .collect::<Result<_>>()?;
        Ok(TwinBackend {
            twin,
            devices,
            space: None,
        })
    }

    /// Rank `rank` of a job of `size` ranks, each a process of its own on this host: joins the
    /// job's multi-process twin ([`ascendc_twin::Space`], [`Twin::with_space`]) with devices
    /// of `cores` cores, whose windows leave room for `hccl_bytes` and as much again; `exchange` carries bytes between the
    /// processes (the bootstrap's all-gather). The twin's knobs come from the `AIV_TWIN_*`
    /// variables; unless `AIV_TWIN_WORKERS` says otherwise, the host's CPUs are shared out
    /// among the processes.
    pub(crate) fn join_job(
        rank: u32,
        size: u32,
        cores: u32,
        hccl_bytes: usize,
        exchange: ascendc_twin::Exchange<'_>,
    ) -> Result<TwinBackend> {
        let window = hccl_bytes
            .saturating_mul(2)
            .max(ascendc_twin::DEFAULT_WINDOW_BYTES);
        let space = ascendc_twin::Space::join(rank, size, window, exchange).map_err(from_twin)?;
        let mut knobs = ascendc_twin::TwinConfig::try_from_env().map_err(Error::Config)?;
        if std::env::var_os("AIV_TWIN_WORKERS").is_none() {
            // The job's processes share the host's CPUs (they are on one host): a worker per
            // CPU in every process would put `size` workers on each.
            knobs.workers = (knobs.workers / size as usize).max(1);
        }
        let twin = Twin::with_space(knobs, space.clone());
        let config = DeviceConfig {
            cores,
            ..DeviceConfig::default()
        };
        let mut b = TwinBackend::new(twin, size, config)?;
        b.space = Some(space);
        Ok(b)
    }

    /// The twin (its knobs, checkers, counters and watchdog).
    pub fn twin(&self) -> &Twin {
        &self.twin
    }

    /// The device of rank `device`.
    pub fn device(&self, device: u32) -> Option<&Device> {
        self.devices.get(device as usize)
    }

    fn dev(&self, device: u32) -> &Device {
        &self.devices[device as usize]
    }
}

/// A stream of the twin: where on the worker pool its host tasks run.
pub struct TwinStream {
    affinity: usize,
    device: u32,
}

impl Signal for HostSignal {
    fn get(&self) -> u64 {
        HostSignal::get(self)
    }
    fn update(&self, f: &mut dyn FnMut(u64) -> u64) -> u64 {
        HostSignal::update(self, f)
    }
    fn wait_until(
        &self,
        deadline: Option<std::time::Instant>,
        ready: &dyn Fn(u64) -> bool,
    ) -> bool {
        HostSignal::wait_until(self, deadline, ready)
    }
}

// SAFETY: a twin launch returns once its blocks have ended (Device::launch_kernel waits for
// them, aborted ones included); wait_until_idle waits until no launch of the twin runs; a
// GmBuffer stays mapped at its address until dropped; twin ids are unique per process; every
// host task spawned runs on the worker pool.
unsafe impl Backend for TwinBackend {
    type Memory = GmBuffer;
    type Stream = TwinStream;
    type Signal = HostSignal;

    fn name(&self) -> &'static str {
        "twin"
    }

    fn id(&self) -> u64 {
        self.twin.id()
    }

    fn devices(&self) -> u32 {
        self.devices.len() as u32
    }

    fn cores(&self, device: u32) -> u32 {
        self.dev(device).cores()
    }

    fn alloc(&self, device: u32, bytes: usize, kind: MemKind) -> Result<GmBuffer> {
        let dev = self.dev(device);
        match kind {
            MemKind::Data => dev.alloc(bytes),
            MemKind::Flags => dev.alloc_sync(bytes),
        }
        .map_err(from_twin)
    }

    /// The handle is the address: every process of a job maps every window at the same one.
    fn export(&self, mem: &GmBuffer, _importers: &[u32]) -> Result<Vec<u8>> {
        if self.space.is_none() {
            return Err(Error::Config(
                "only a twin of a job of processes exports memory".into(),
            ));
        }
        Ok((mem.addr() as u64).to_le_bytes().to_vec())
    }

    fn import(&self, device: u32, handle: &[u8], bytes: usize, kind: MemKind) -> Result<GmBuffer> {
        let addr = <[u8; 8]>::try_from(handle)
            .map(u64::from_le_bytes)
            .map_err(|_| {
                Error::Config(format!(
                    "a twin memory handle is 8 bytes, not {}",
                    handle.len()
                ))
            })?;
        self.dev(device)
            .import(addr, bytes, kind == MemKind::Flags)
            .map_err(from_twin)
    }

    fn addr(&self, mem: &GmBuffer) -> u64 {
        mem.addr() as u64
    }

    fn write(&self, mem: &GmBuffer, offset: usize, data: &[u8]) -> Result<()> {
        mem.write(offset, data).map_err(from_twin)
    }

    fn read(&self, mem: &GmBuffer, offset: usize, out: &mut [u8]) -> Result<()> {
        mem.read(offset, out).map_err(from_twin)
    }

    fn fill(&self, mem: &GmBuffer, offset: usize, len: usize, value: u8) -> Result<()> {
        mem.fill(offset, len, value).map_err(from_twin)
    }

    fn create_stream(&self, device: u32, affinity: usize) -> Result<TwinStream> {
        Ok(TwinStream { affinity, device })
    }

    fn host_task(&self, stream: &TwinStream, task: Box<dyn FnOnce() + Send>) {
        self.twin.spawn_host_task(stream.affinity, task)
    }

    unsafe fn launch(
        &self,
        stream: &TwinStream,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32> {
        let dev = self.dev(stream.device);
        // SAFETY: forwarded from the caller (the twin checks the layout of `args`).
        unsafe {
            match blocks {
                Blocks::Exactly(n) => dev.launch_kernel(kernel, n, args).map(|()| n),
                Blocks::UpTo(n) => dev.launch_kernel_flexible(kernel, n, args),
            }
        }
        .map_err(from_twin)
    }

    fn signal(&self, value: u64) -> HostSignal {
        HostSignal::new(value)
    }

    fn abort(&self, reason: &str) {
        self.twin.abort(reason)
    }

    fn wait_until_idle(&self) {
        self.twin.wait_until_idle()
    }
}

/// aiv-comm's backend-neutral error for a twin error (the twin's own words kept as the detail).
pub(crate) fn from_twin(e: TwinError) -> Error {
    match e {
        TwinError::Fault(f) => {
            let kind = match &f.kind {
                TwinFault::MisalignedUb { .. } | TwinFault::MisalignedGm { .. } => {
                    FaultKind::Misaligned
                }
                TwinFault::BadLength { .. } => FaultKind::BadLength,
                TwinFault::GmOutOfBounds { .. } | TwinFault::UbOutOfBounds { .. } => {
                    FaultKind::OutOfBounds
                }
                TwinFault::UnsupportedAtomic { .. } => FaultKind::UnsupportedAtomic,
                TwinFault::PipeSync { .. } => FaultKind::PipeSync,
                TwinFault::PipeHazard { .. } => FaultKind::PipeHazard,
                TwinFault::GmRace { .. } => FaultKind::GmRace,
                TwinFault::Misuse { .. } => FaultKind::Misuse,
                TwinFault::UnknownException => FaultKind::Exception,
                TwinFault::Trap => FaultKind::Trap,
                TwinFault::AssertFailed { .. } => FaultKind::AssertFailed,
                TwinFault::StackOverflow => FaultKind::StackOverflow,
                TwinFault::TwinPanic { .. } => FaultKind::Internal,
                TwinFault::Aborted => FaultKind::Aborted,
                TwinFault::PeerAborted { .. } => FaultKind::PeerAborted,
                TwinFault::Deadlock { .. } => FaultKind::Deadlock,
                TwinFault::Livelock { .. } => FaultKind::Livelock,
            };
            Error::Fault(Fault::new(
                f.kernel,
                f.rank,
                (f.block != u32::MAX).then_some(f.block),
                f.op,
                kind,
                f.kind.to_string(),
            ))
        }
        TwinError::OutOfMemory { rank, bytes } => Error::OutOfMemory { rank, bytes },
        TwinError::BlockDim {
            kernel,
            rank,
            requested,
            cores,
        } => Error::Config(format!(
            "kernel `{kernel}` on rank {rank}: block_dim {requested} refused: the device has {cores} AIV cores (need 1..={cores})"
        )),
        TwinError::Args { kernel, message } => Error::LaunchArgs { kernel, message },
        TwinError::HostOutOfBounds { len, offset, bytes } => Error::Length(format!(
            "host access to a GM buffer of {len} bytes at offset {offset}, {bytes} bytes, is out of bounds"
        )),
        TwinError::Config(m) => Error::Config(m),
    }
}
