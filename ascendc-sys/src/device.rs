//! Simulated NPUs: GM allocations, AIV cores with Unified Buffers, and batch launches whose
//! blocks run as coroutines on the twin's worker threads (`sched.rs`).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::atomics::{AtomicOp, AtomicType};
use crate::error::{FaultKind, KernelFault, TwinError};
use crate::gm;

/// A kernel entry point as the twin calls it: AscendC's `extern "C" __global__ __aicore__ void
/// name(GM_ADDR args)`, with one GM pointer to the kernel's argument struct.
pub type KernelFn = unsafe extern "C" fn(*mut u8);

/// Default number of AIV cores of an Atlas A2 (910B) device.
pub const DEFAULT_CORES: u32 = 48;
/// Unified Buffer bytes per AIV core on Atlas A2 (192 KB).
pub const UB_BYTES: usize = 192 * 1024;
/// Frequency of `GetSystemCycle` on Atlas A2 and in the twin: 50 MHz (cycles / 50 = µs).
pub const SYSTEM_CYCLE_HZ: u64 = 50_000_000;
/// Number of `HardEvent` kinds the twin tracks for SetFlag/WaitFlag pairing.
pub(crate) const HARD_EVENTS: usize = 36;
/// Event ids per HardEvent the twin accepts (EVENT_ID0..EVENT_ID7 and the next eight).
pub(crate) const EVENT_IDS: usize = 16;

/// Configuration of one simulated device.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// AIV cores (max `block_dim` of a launch). Default [`DEFAULT_CORES`].
    pub cores: u32,
    /// Unified Buffer bytes per core. Default [`UB_BYTES`].
    pub ub_bytes: usize,
    /// Devices that work together (one communicator's ranks) share a group id, so that
    /// [`abort_group`] can stop all their running launches at once. 0: no group.
    pub group: u64,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            cores: DEFAULT_CORES,
            ub_bytes: UB_BYTES,
            group: 0,
        }
    }
}

/// State shared by the blocks of one launch.
pub(crate) struct LaunchShared {
    pub kernel: &'static str,
    pub rank: u32,
    pub block_dim: u32,
    pub group: u64,
    pub fault: Mutex<Option<KernelFault>>,
    pub aborted: AtomicBool,
}

/// Launches running now, for [`abort_group`].
static ACTIVE: crate::padded::Padded<Mutex<Vec<std::sync::Weak<LaunchShared>>>> =
    crate::padded::Padded(Mutex::new(Vec::new()));
/// Groups aborted so far, with the reason: later launches in them fail at once.
static ABORTED_GROUPS: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());

/// Stops every running launch of device group `group` (see [`DeviceConfig::group`]) and makes
/// its later launches fail at once, each with [`FaultKind::PeerAborted`] carrying `reason`.
///
/// For a host that knows one rank's kernel has faulted: on the NPU its peers would wait for it
/// until their deadlines; on the twin they can be told at once. Group 0 is never aborted.
pub fn abort_group(group: u64, reason: &str) {
    if group == 0 {
        return;
    }
    {
        let mut g = ABORTED_GROUPS.lock();
        if g.iter().any(|(id, _)| *id == group) {
            return;
        }
        g.push((group, reason.to_string()));
    }
    let active: Vec<_> = ACTIVE.lock().iter().filter_map(|w| w.upgrade()).collect();
    for l in active.into_iter().filter(|l| l.group == group) {
        l.record(
            u32::MAX,
            "launch",
            FaultKind::PeerAborted {
                reason: reason.to_string(),
            },
        );
    }
}

fn group_abort_reason(group: u64) -> Option<String> {
    if group == 0 {
        return None;
    }
    ABORTED_GROUPS
        .lock()
        .iter()
        .find(|(id, _)| *id == group)
        .map(|(_, r)| r.clone())
}

impl LaunchShared {
    /// Records the first fault of the launch and stops its other blocks.
    pub(crate) fn record(&self, block: u32, op: &str, kind: FaultKind) {
        let mut f = self.fault.lock();
        if f.is_none() {
            *f = Some(KernelFault {
                kernel: self.kernel.to_string(),
                rank: self.rank,
                block,
                op: op.to_string(),
                kind,
            });
        }
        drop(f);
        self.aborted.store(true, Ordering::SeqCst);
        crate::sched::wake_all();
    }
}

/// Polling state of a block: detects repeated reads of an unchanged GM address.
#[derive(Default)]
pub(crate) struct PollState {
    pub addr: usize,
    pub len: usize,
    pub hash: u64,
    pub repeats: u32,
    pub parks: u32,
    pub epoch: u64,
    pub since: Option<std::time::Instant>,
}

/// One line of the scalar data cache model (see ffi.rs).
pub(crate) struct CacheLine {
    pub data: [u8; 64],
    pub dirty: bool,
}

/// Per-block context, thread-local on the block's worker thread while the kernel runs.
pub(crate) struct BlockCtx {
    pub launch: Arc<LaunchShared>,
    pub block: u32,
    pub ub: *mut u8,
    pub ub_len: usize,
    pub atomic: Option<(AtomicOp, AtomicType)>,
    pub pipe_flags: [[u32; EVENT_IDS]; HARD_EVENTS],
    pub poll: PollState,
    pub dcache: HashMap<usize, CacheLine>,
    pub rng: u64,
    /// GM race checker state, when checking is on.
    pub race: Option<crate::race::RaceCtx>,
    /// Pipe-hazard checker state, when checking is on.
    pub hazards: Option<Box<crate::hazard::Hazards>>,
    /// Pending deferred GM -> UB copies of this block (lazy.rs).
    pub lazy: crate::lazy::Pending,
    /// Whether this launch defers large GM -> UB copies.
    pub lazy_on: bool,
    /// The block's coroutine yielder (set when the coroutine starts).
    pub yielder: *const corosensei::Yielder<(), crate::sched::Req>,
}

struct Cores {
    free: Vec<bool>,
    /// Unified Buffer of each core, allocated when the core first runs a block.
    ub: Vec<Option<UbArena>>,
}

pub(crate) struct DeviceInner {
    rank: u32,
    config: DeviceConfig,
    cores: Mutex<Cores>,
    /// Counts core releases; launches short of free cores wait for it to change.
    cores_released: crate::sched::HostSignal,
}

/// A simulated NPU (one rank): GM allocations and `cores` AIV cores.
///
/// Cloning gives another handle to the same device. Blocks run as coroutines on the twin's
/// worker threads (one per host CPU, shared by all devices; see `sched.rs`).
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

struct UbArena {
    ptr: *mut u8,
    layout: Layout,
}

impl UbArena {
    fn new(bytes: usize) -> UbArena {
        let layout = Layout::from_size_align(bytes.max(32), 64).expect("UB layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "cannot allocate a Unified Buffer arena");
        UbArena { ptr, layout }
    }
}

// SAFETY: an arena is plain heap memory owned by its device; it is used (through its raw pointer)
// only by the one block that holds its core, which the core accounting of `launch` guarantees.
unsafe impl Send for UbArena {}
// SAFETY: as above; shared references never touch the memory.
unsafe impl Sync for UbArena {}

impl Drop for UbArena {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

impl Device {
    /// Creates simulated device `rank` with the given configuration.
    pub fn new(rank: u32, config: DeviceConfig) -> Result<Device, TwinError> {
        if config.cores == 0 || config.cores > 1024 {
            return Err(TwinError::Config(format!(
                "cores must be 1..=1024, got {}",
                config.cores
            )));
        }
        if config.ub_bytes < 1024 || !config.ub_bytes.is_multiple_of(32) {
            return Err(TwinError::Config(format!(
                "ub_bytes must be a multiple of 32 and at least 1024, got {}",
                config.ub_bytes
            )));
        }
        let n = config.cores as usize;
        Ok(Device {
            inner: Arc::new(DeviceInner {
                rank,
                config,
                cores: Mutex::new(Cores {
                    free: vec![true; n],
                    ub: (0..n).map(|_| None).collect(),
                }),
                cores_released: crate::sched::HostSignal::new(0),
            }),
        })
    }

    /// The device's rank id (named in every fault).
    pub fn rank(&self) -> u32 {
        self.inner.rank
    }

    /// Number of AIV cores.
    pub fn cores(&self) -> u32 {
        self.inner.config.cores
    }

    /// Allocates `bytes` of zeroed GM on this device (page aligned).
    pub fn alloc(&self, bytes: usize) -> Result<GmBuffer, TwinError> {
        let ptr = gm::gm_alloc(bytes, self.inner.rank).ok_or(TwinError::OutOfMemory {
            rank: self.inner.rank,
            bytes,
        })?;
        Ok(GmBuffer {
            ptr,
            len: bytes,
            rank: self.inner.rank,
        })
    }

    /// Launches `kernel` on `block_dim` blocks, all co-resident, and waits for them to finish.
    ///
    /// Refuses `block_dim` of 0 or above the core count. If the device's free cores are busy
    /// with other launches, waits for them (as the hardware queues work). Returns the first fault
    /// of any block; the device stays usable either way.
    ///
    /// # Safety
    /// `kernel` must be a kernel compiled against the twin's headers and `args` whatever that
    /// kernel expects (normally a GM pointer to its argument struct), valid until this returns.
    pub unsafe fn launch(
        &self,
        name: &'static str,
        kernel: KernelFn,
        block_dim: u32,
        args: *mut u8,
    ) -> Result<(), TwinError> {
        let inner = &self.inner;
        if block_dim == 0 || block_dim > inner.config.cores {
            return Err(TwinError::BlockDim {
                kernel: name.to_string(),
                rank: inner.rank,
                requested: block_dim,
                cores: inner.config.cores,
            });
        }
        if let Some(reason) = group_abort_reason(inner.config.group) {
            return Err(TwinError::Fault(KernelFault {
                kernel: name.to_string(),
                rank: inner.rank,
                block: u32::MAX,
                op: "launch".to_string(),
                kind: FaultKind::PeerAborted { reason },
            }));
        }
        let launch = Arc::new(LaunchShared {
            kernel: name,
            rank: inner.rank,
            block_dim,
            group: inner.config.group,
            fault: Mutex::new(None),
            aborted: AtomicBool::new(false),
        });
        {
            let mut a = ACTIVE.lock();
            a.retain(|w| w.strong_count() > 0);
            a.push(Arc::downgrade(&launch));
        }
        let done = crate::sched::Countdown::new(block_dim);
        let check_hazards = crate::knobs::hazard_check();
        let check_races = crate::knobs::race_check() && inner.config.group != 0;
        let lazy_on = crate::knobs::lazy_staging();
        let mut taken = Vec::with_capacity(block_dim as usize);
        let mut ubs = Vec::with_capacity(block_dim as usize);
        {
            let mut cores = inner.cores.lock();
            // Launches of other streams hold the cores: wait for a release (read under the lock,
            // so none is missed).
            while cores.free.iter().filter(|f| **f).count() < block_dim as usize {
                let seen = inner.cores_released.get();
                drop(cores);
                inner.cores_released.wait_until(None, |v| v != seen);
                cores = inner.cores.lock();
            }
            for i in 0..cores.free.len() {
                if taken.len() == block_dim as usize {
                    break;
                }
                if cores.free[i] {
                    cores.free[i] = false;
                    taken.push(i);
                    let arena =
                        cores.ub[i].get_or_insert_with(|| UbArena::new(inner.config.ub_bytes));
                    ubs.push(arena.ptr as usize);
                }
            }
        }
        for (block, (ub, core)) in ubs.into_iter().zip(taken.iter().copied()).enumerate() {
            let ctx = Box::new(BlockCtx {
                launch: launch.clone(),
                block: block as u32,
                ub: ub as *mut u8,
                ub_len: inner.config.ub_bytes,
                atomic: None,
                pipe_flags: [[0; EVENT_IDS]; HARD_EVENTS],
                poll: PollState::default(),
                dcache: HashMap::new(),
                rng: 0x9e37_79b9_7f4a_7c15u64 ^ ((inner.rank as u64) << 32 | block as u64),
                hazards: check_hazards.then(Box::default),
                race: if check_races {
                    crate::race::RaceCtx::start(inner.config.group, inner.rank, core)
                } else {
                    None
                },
                lazy: Default::default(),
                lazy_on,
                yielder: std::ptr::null(),
            });
            crate::sched::spawn(kernel, args as usize, ctx, done.clone());
        }
        done.wait();
        {
            let mut cores = inner.cores.lock();
            for &i in &taken {
                cores.free[i] = true;
            }
            drop(cores);
            inner.cores_released.update(|v| v.wrapping_add(1));
        }
        let fault = launch.fault.lock().take();
        match fault {
            Some(f) => Err(TwinError::Fault(f)),
            None => Ok(()),
        }
    }
}

/// A GM allocation on one device. Freed on drop.
///
/// Its address ([`GmBuffer::addr`]) is what kernels use; any device's kernel may access it (as
/// peers do through HCCS), and every access is bounds-checked against live allocations.
pub struct GmBuffer {
    ptr: *mut u8,
    len: usize,
    rank: u32,
}

// SAFETY: the buffer is plain memory; all accesses go through bounds-checked, defined
// (atomic or fenced) operations, so it may be shared and sent between threads.
unsafe impl Send for GmBuffer {}
// SAFETY: as above.
unsafe impl Sync for GmBuffer {}

impl GmBuffer {
    /// GM address of the first byte.
    pub fn addr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rank of the device that owns it.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    fn check(&self, offset: usize, bytes: usize) -> Result<(), TwinError> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(TwinError::HostOutOfBounds {
                len: self.len,
                offset,
                bytes,
            }),
        }
    }

    /// Copies `data` into the buffer at `offset` (host -> device).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), TwinError> {
        self.check(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: bounds checked above; `data` is a separate host slice.
        unsafe { gm::gm_write(self.ptr.add(offset), data.as_ptr(), data.len()) };
        Ok(())
    }

    /// Copies bytes from the buffer at `offset` into `out` (device -> host).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), TwinError> {
        self.check(offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: bounds checked above; `out` is a separate host slice.
        unsafe { gm::gm_read(out.as_mut_ptr(), self.ptr.add(offset), out.len()) };
        Ok(())
    }

    /// Sets `bytes` bytes at `offset` to `value`.
    pub fn fill(&self, offset: usize, bytes: usize, value: u8) -> Result<(), TwinError> {
        self.check(offset, bytes)?;
        const CHUNK: usize = 64 * 1024;
        let buf = vec![value; bytes.min(CHUNK)];
        let mut done = 0;
        while done < bytes {
            let n = (bytes - done).min(CHUNK);
            self.write(offset + done, &buf[..n])?;
            done += n;
        }
        Ok(())
    }
}

impl Drop for GmBuffer {
    fn drop(&mut self) {
        // SAFETY: ptr/len come from gm_alloc; the owner guarantees no launch still uses it
        // (launches are synchronous and borrow buffers only for their duration).
        unsafe { gm::gm_free(self.ptr, self.len) };
    }
}

impl std::fmt::Debug for GmBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GmBuffer {{ rank: {}, addr: {:p}, len: {} }}",
            self.rank, self.ptr, self.len
        )
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Device {{ rank: {}, cores: {} }}",
            self.inner.rank, self.inner.config.cores
        )
    }
}
