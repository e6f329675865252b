//! Simulated NPUs of a twin: GM allocations, AIV cores with Unified Buffers, and batch launches
//! whose blocks run as coroutines on the twin's worker threads (`sched.rs`).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::block::BlockCtx;
use crate::error::{FaultKind, KernelFault, TwinError};
use crate::kernel::{ArgBlock, Kernel, ARGS_INLINE};
use crate::launch::LaunchShared;
use crate::mem::GmKind;
use crate::sched::{BlockStatus, Countdown, HostSignal};
use crate::twin::{TwinHandle, TwinInner};

/// A kernel entry point as the twin calls it: AscendC's `extern "C" __global__ __aicore__ void
/// name(GM_ADDR args)`, with one GM pointer to the kernel's argument block.
pub type KernelFn = unsafe extern "C" fn(*mut u8);

/// Default number of AIV cores of an Atlas A2 (910B) device.
pub const DEFAULT_CORES: u32 = 48;
/// Unified Buffer bytes per AIV core on Atlas A2 (192 KB).
pub const UB_BYTES: usize = 192 * 1024;
/// Largest Unified Buffer a [`DeviceConfig`] may ask for (1 GiB, thousands of times any
/// Ascend core's): the twin's checkers keep UB offsets in 32 bits.
pub const MAX_UB_BYTES: usize = 1 << 30;
/// UB bytes AscendC uses for its own temporaries at the top of the Unified Buffer on Atlas A2:
/// 8 KB for Select, AddDeqRelu and some advanced APIs (from 184 KB, `TOTAL_VEC_LOCAL_SIZE`),
/// unless the kernel is compiled with `--cce-disable-asc-reserved-ubuf` (AscendC docs, NPU
/// architecture 2201 storage table). Nothing stops a TPipe from allocating there (HCCL's AIV
/// kernels use up to 195 264 bytes), but a kernel that does must not call those APIs; aiv-comm's
/// own kernels stay below it so that fused kernels may.
pub const UB_RESERVED_BYTES: usize = 8 * 1024;
/// Frequency of `GetSystemCycle` on Atlas A2 and in the twin: 50 MHz (cycles / 50 = µs).
pub const SYSTEM_CYCLE_HZ: u64 = 50_000_000;

/// Configuration of one simulated device.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// AIV cores (max `block_dim` of a launch). Default [`DEFAULT_CORES`].
    pub cores: u32,
    /// Unified Buffer bytes per core: a multiple of 32 from 1024 to [`MAX_UB_BYTES`]. Default
    /// [`UB_BYTES`].
    pub ub_bytes: usize,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            cores: DEFAULT_CORES,
            ub_bytes: UB_BYTES,
        }
    }
}

struct Cores {
    free: Vec<bool>,
    /// Launches waiting in `take_cores` for a release (`release_cores` signals only then).
    waiting: usize,
    /// Unified Buffer of each core, allocated when the core first runs a block.
    ub: Vec<Option<UbArena>>,
}

struct DeviceInner {
    twin: Arc<TwinInner>,
    rank: u32,
    config: DeviceConfig,
    cores: Mutex<Cores>,
    /// Counts core releases; launches short of free cores wait for it to change.
    cores_released: HostSignal,
    /// What this device's blocks hold of the twin (see [`TwinHandle`]).
    twin_handle: Arc<TwinHandle>,
}

/// A simulated NPU (one rank) of a [`crate::Twin`]: GM allocations and `cores` AIV cores.
///
/// Cloning gives another handle to the same device. Blocks run as coroutines on the twin's
/// worker threads (see `sched.rs`).
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
    pub(crate) fn new(
        twin: Arc<TwinInner>,
        rank: u32,
        config: DeviceConfig,
    ) -> Result<Device, TwinError> {
        if config.cores == 0 || config.cores > 1024 {
            return Err(TwinError::Config(format!(
                "cores must be 1..=1024, got {}",
                config.cores
            )));
        }
        if !(1024..=MAX_UB_BYTES).contains(&config.ub_bytes) || !config.ub_bytes.is_multiple_of(32)
        {
            return Err(TwinError::Config(format!(
                "ub_bytes must be a multiple of 32 from 1024 to {MAX_UB_BYTES}, got {}",
                config.ub_bytes
            )));
        }

        let n = config.cores as usize;
        let twin_handle = Arc::new(TwinHandle(twin.clone()));
        Ok(Device {
            inner: Arc::new(DeviceInner {
                twin,
                rank,
                config,
                cores: Mutex::new(Cores {
                    free: vec![true; n],
                    waiting: 0,
                    ub: (0..n).map(|_| None).collect(),
                }),
                cores_released: HostSignal::new(0),
                twin_handle,
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

    /// The twin this device belongs to.
    pub fn twin(&self) -> crate::Twin {
        crate::Twin {
            inner: self.inner.twin.clone(),
        }
    }

    fn alloc_kind(&self, bytes: usize, kind: GmKind) -> Result<GmBuffer, TwinError> {
        let twin = &self.inner.twin;
        let ptr = twin
            .mem
            .alloc(bytes, self.inner.rank, kind)
            .ok_or(TwinError::OutOfMemory {
                rank: self.inner.rank,
                bytes,
            })?;
        Ok(GmBuffer {
            ptr,
            len: bytes,
            rank: self.inner.rank,
            twin: twin.clone(),
            host: parking_lot::RwLock::new(()),
            owned: true,
        })
    }

    /// A handle to `[addr, addr + len)` of this device's GM that another process of a
    /// multi-process job allocated ([`crate::Twin::with_space`]): what an IPC import is on an
    /// NPU. The range must lie inside one live allocation of this device's rank, of flag memory
    /// if `flags` (as [`Device::alloc_sync`] makes) and of data memory if not; dropping the
    /// handle leaves the memory to its owner.
    pub fn import(&self, addr: u64, len: usize, flags: bool) -> Result<GmBuffer, TwinError> {
        let want = if flags { GmKind::Sync } else { GmKind::Data };
        let (rank, kind) = self.imported(addr, len)?;
        let bad = |why: String| {
            TwinError::Config(format!(
                "cannot import {len} bytes at {addr:#x} of rank {}: {why}",
                self.inner.rank
            ))
        };
        if rank != self.inner.rank {
            return Err(bad(format!("it is rank {rank}'s")));
        }
        if kind != want {
            return Err(bad(format!("it is {kind:?} memory, not {want:?}")));
        }
        Ok(self.imported_buffer(addr, len, rank))
    }

    /// A handle to `[addr, addr + len)` of another process's GM that this process maps (an
    /// ACL IPC import, which names neither the device nor the kind): it must lie inside one
    /// live allocation; the handle has that allocation's device.
    pub fn import_any(&self, addr: u64, len: usize) -> Result<GmBuffer, TwinError> {
        let (rank, _) = self.imported(addr, len)?;
        Ok(self.imported_buffer(addr, len, rank))
    }

    /// The device and kind of the live allocation of another process that holds `[addr,
    /// addr + len)`.
    fn imported(&self, addr: u64, len: usize) -> Result<(u32, GmKind), TwinError> {
        let twin = &self.inner.twin;
        let bad = |why: &str| {
            TwinError::Config(format!(
                "cannot import {len} bytes at {addr:#x} of rank {}: {why}",
                self.inner.rank
            ))
        };
        if twin.space.is_none() {
            return Err(bad("only a twin of a multi-process job imports memory"));
        }
        // The owner's table as it is now: an allocation it freed and made again since this
        // process last looked may differ in kind.
        twin.mem.mirror_holding(addr as usize);
        match twin.mem.region(addr as usize, len.max(1)) {
            Some((_, _, rank, kind)) => Ok((rank, kind)),
            None => Err(bad("no live allocation holds it")),
        }
    }

    fn imported_buffer(&self, addr: u64, len: usize, rank: u32) -> GmBuffer {
        GmBuffer {
            ptr: addr as *mut u8,
            len,
            rank,
            twin: self.inner.twin.clone(),
            host: parking_lot::RwLock::new(()),
            owned: false,
        }
    }

    /// Allocates `bytes` of zeroed GM data memory on this device (page aligned).
    pub fn alloc(&self, bytes: usize) -> Result<GmBuffer, TwinError> {
        self.alloc_kind(bytes, GmKind::Data)
    }

    /// Allocates `bytes` of zeroed GM *flag* memory (soft-sync cells): the GM race checker
    /// treats stores to it as releases and loads as acquires, and never as data races.
    pub fn alloc_sync(&self, bytes: usize) -> Result<GmBuffer, TwinError> {
        self.alloc_kind(bytes, GmKind::Sync)
    }

    /// Launches `kernel` on `block_dim` blocks, all co-resident, and waits for them to finish.
    ///
    /// Refuses `block_dim` of 0 or above the core count. If the device's free cores are busy
    /// with other launches, waits for them (as the hardware queues work). Returns the first fault
    /// of any block; the device stays usable either way.
    ///
    /// # Safety
    /// `kernel` must be a kernel compiled against the twin's headers and `args` whatever that
    /// kernel expects (normally a GM pointer to its argument block), valid until this returns;
    /// every GM address the kernel reaches must stay allocated until this returns, and no host
    /// copy ([`GmBuffer::read`], [`GmBuffer::write`]) may touch bytes the kernel writes, nor
    /// write bytes it reads, while it runs (flags the kernel polls excepted: small host writes
    /// are atomic).
    pub unsafe fn launch(
        &self,
        name: &'static str,
        kernel: KernelFn,
        block_dim: u32,
        args: *mut u8,
    ) -> Result<(), TwinError> {
        let cores = self.inner.config.cores;
        if block_dim == 0 || block_dim > cores {
            return Err(TwinError::BlockDim {
                kernel: name.to_string(),
                rank: self.inner.rank,
                requested: block_dim,
                cores,
            });
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.run(name, kernel, block_dim, block_dim, args) }.map(|_| ())
    }

    /// [`Device::launch`] of a kernel that works on any number of blocks (it divides its work
    /// by `GetBlockNum()`): runs on as many free cores as there are, from 1 up to `max_blocks`,
    /// waiting only while none is free. Returns the block count used.
    ///
    /// # Safety
    /// As [`Device::launch`].
    pub unsafe fn launch_flexible(
        &self,
        name: &'static str,
        kernel: KernelFn,
        max_blocks: u32,
        args: *mut u8,
    ) -> Result<u32, TwinError> {
        let max = max_blocks.clamp(1, self.inner.config.cores);
        // SAFETY: forwarded from the caller.
        unsafe { self.run(name, kernel, 1, max, args) }
    }

    /// Launches a [`Kernel`] with typed arguments on `block_dim` co-resident blocks, as
    /// [`Device::launch`]: refuses `args` that do not match the kernel's parameters
    /// ([`TwinError::Args`]), then runs the kernel's trampoline on a copy of the block.
    ///
    /// # Safety
    /// Every GM address among the arguments must be what the kernel expects there, and the
    /// rest of [`Device::launch`]'s contract holds (memory the kernel reaches stays allocated,
    /// no conflicting host copies while it runs).
    pub unsafe fn launch_kernel(
        &self,
        kernel: &Kernel,
        block_dim: u32,
        args: &ArgBlock,
    ) -> Result<(), TwinError> {
        kernel.check_args(args)?;
        let mut block = SmallVec::<[u8; ARGS_INLINE]>::from_slice(args.as_bytes());
        // SAFETY: the trampoline reads exactly the layout `check_args` verified, from `block`,
        // which lives until the launch returns; the rest is the caller's contract.
        unsafe { self.launch(kernel.name(), kernel.entry(), block_dim, block.as_mut_ptr()) }
    }

    /// [`Device::launch_kernel`] of a kernel that works on any number of blocks, as
    /// [`Device::launch_flexible`]. Returns the block count used.
    ///
    /// # Safety
    /// As [`Device::launch_kernel`].
    pub unsafe fn launch_kernel_flexible(
        &self,
        kernel: &Kernel,
        max_blocks: u32,
        args: &ArgBlock,
    ) -> Result<u32, TwinError> {
        kernel.check_args(args)?;
        let mut block = SmallVec::<[u8; ARGS_INLINE]>::from_slice(args.as_bytes());
        // SAFETY: as in `launch_kernel`.
        unsafe {
            self.launch_flexible(
                kernel.name(),
                kernel.entry(),
                max_blocks,
                block.as_mut_ptr(),
            )
        }
    }

    /// Takes between `min` and `max` free cores (waiting while fewer than `min` are free);
    /// returns their indices and UB arenas.
    fn take_cores(&self, name: &'static str, min: u32, max: u32) -> (CoreList, CoreList) {
        let inner = &self.inner;
        let mut cores = inner.cores.lock();
        // Launches of other streams hold the cores: wait for a release (read under the lock,
        // so none is missed).
        let mut waiting = false;
        while cores.free.iter().filter(|f| **f).count() < min as usize {
            if !waiting {
                waiting = true;
                cores.waiting += 1;
                inner.twin.core_waits.lock().push((inner.rank, name, min));
            }
            let seen = inner.cores_released.get();
            drop(cores);
            inner.cores_released.wait_until(None, |v| v != seen);
            cores = inner.cores.lock();
        }
        if waiting {
            cores.waiting -= 1;
            let mut w = inner.twin.core_waits.lock();
            if let Some(i) = w
                .iter()
                .position(|&(r, k, m)| r == inner.rank && k == name && m == min)
            {
                w.swap_remove(i);
            }
        }
        let mut taken = CoreList::new();
        let mut ubs = CoreList::new();
        for i in 0..cores.free.len() {
            if taken.len() == max as usize {
                break;
            }
            if cores.free[i] {
                cores.free[i] = false;
                taken.push(i);
                let arena = cores.ub[i].get_or_insert_with(|| UbArena::new(inner.config.ub_bytes));
                ubs.push(arena.ptr as usize);
            }
        }
        (taken, ubs)
    }

    /// # Safety
    /// As [`Device::launch`].
    unsafe fn run(
        &self,
        name: &'static str,
        kernel: KernelFn,
        min: u32,
        max: u32,
        args: *mut u8,
    ) -> Result<u32, TwinError> {
        let inner = &self.inner;
        let twin = &inner.twin;
        let refused = |reason: String| {
            TwinError::Fault(KernelFault {
                kernel: name.to_string(),
                rank: inner.rank,
                block: u32::MAX,
                op: "launch".to_string(),
                kind: FaultKind::PeerAborted { reason },
            })
        };
        if let Some(reason) = twin.aborted_reason() {
            return Err(refused(reason));
        }
        let (taken, ubs) = self.take_cores(name, min, max);
        let block_dim = taken.len() as u32;
        let pool = twin.pool.shared();
        let launch = Arc::new(LaunchShared::new(name, inner.rank, block_dim, pool));
        let knobs = &twin.knobs;
        let check_hazards = knobs.hazards.load(std::sync::atomic::Ordering::Relaxed);
        // An open space shared with other processes checks no races (see Twin::with_space).
        let check_races = knobs.races.load(std::sync::atomic::Ordering::Relaxed)
            && twin.space.as_ref().is_none_or(|s| !s.is_shared());
        if let Err(reason) = twin.start_launch(&launch, check_hazards, check_races) {
            self.release_cores(&taken);
            return Err(refused(reason));
        }
        // An open space shared with other processes stages eagerly: its kernels' flags may lie
        // in memory not marked as flags, before whose stores a block would not materialise
        // its snapshots (see Twin::with_space).
        let lazy_on = knobs.lazy.load(std::sync::atomic::Ordering::Relaxed)
            && twin
                .space
                .as_ref()
                .is_none_or(|s| !s.is_open() || !s.is_shared());
        let jitter_us = knobs.jitter_us.load(std::sync::atomic::Ordering::Relaxed);
        let stream_after = knobs
            .stream_after
            .load(std::sync::atomic::Ordering::Relaxed);
        let census = knobs
            .census
            .load(std::sync::atomic::Ordering::Relaxed)
            .then(|| twin.census.launch(inner.rank));
        let workers = pool.workers();
        // A launch of one block from a stream's task runs inline, on that task's worker.
        let inline = if block_dim == 1 {
            pool.inline_worker()
        } else {
            None
        };
        // Queued blocks count down as they end, and the launch waits for zero; an inline block
        // has ended when `run_inline` returns, so it needs no countdown.
        let done = inline.is_none().then(|| Countdown::new(block_dim));
        for (block, (ub, core)) in ubs.into_iter().zip(taken.iter().copied()).enumerate() {
            let block = block as u32;
            let status = Arc::new(BlockStatus {
                kernel: name,
                rank: inner.rank,
                block,
                depth: Default::default(),
                spinning: Default::default(),
                poll_parked: Default::default(),
                waits_for: Default::default(),
                launch: launch.clone(),
            });
            // Block b goes to worker b % workers: each launch spreads its blocks over all
            // workers, and in the collectives (block i works with peer i, block r of rank r does
            // the local part) the ranks' local-part blocks land on different workers. A launch
            // of fewer blocks than workers starts at worker rank * block_dim instead, so that
            // the ranks' small launches (one-shot AllReduce runs one block) do not all queue
            // on worker 0. A launch of one block from a stream's task runs on that task's worker
            // (a stream's worker follows its rank too: Stream::new's affinity).
            let first = if (block_dim as usize) < workers {
                inner.rank as usize * block_dim as usize
            } else {
                0
            };
            let worker = inline.unwrap_or((first + block as usize) % workers);
            let ctx = Box::new(BlockCtx {
                twin: inner.twin_handle.clone(),
                launch: launch.clone(),
                status: status.clone(),
                block,
                worker,
                ub: ub as *mut u8,
                ub_len: inner.config.ub_bytes,
                atomic: None,
                pipes: Default::default(),
                poll: Default::default(),
                dcache: HashMap::new(),
                rng: 0x9e37_79b9_7f4a_7c15u64 ^ ((inner.rank as u64) << 32 | block as u64),
                hazards: check_hazards.then(Box::default),
                census: census.as_ref().map(|c| c.block()),
                race: if check_races {
                    crate::race::RaceCtx::start(&twin.race, inner.rank, core)
                } else {
                    None
                },
                lazy: Default::default(),
                lazy_on,
                jitter_us,
                yielder: std::ptr::null(),
                slice_calls: 0,
                tpipe: std::ptr::null_mut(),
                vec_regs: crate::abi::AscTwinVecRegs::AT_KERNEL_START,
                slice_start: None,
                dma_written: 0,
                stream_after,
            });
            let ctx = Box::into_raw(ctx);
            let ctx_addr = ctx as usize;
            let args_addr = args as usize;
            let body = move |y: *const corosensei::Yielder<(), crate::sched::Req>| {
                let ctx = ctx_addr as *mut BlockCtx;
                // SAFETY: the context is this block's own (see block.rs); nothing else uses it
                // while the coroutine runs.
                unsafe { (*ctx).yielder = y };
                // SAFETY: the launcher guarantees kernel/args are valid for this launch; the
                // trampoline catches every C++ exception, so none unwinds out of the coroutine.
                unsafe { crate::sched::asc_twin_invoke(kernel, args_addr as *mut u8) }
            };
            let done = done.clone();
            let finish = move |rc: i32| {
                // SAFETY: made by Box::into_raw above; the coroutine has returned, so this is
                // the only reference left to it.
                let ctx = unsafe { Box::from_raw(ctx_addr as *mut BlockCtx) };
                crate::abi::end_block(ctx, rc);
                if let Some(done) = &done {
                    done.done_one();
                }
            };
            // Inline, the closures live on this stack and the block's (no allocation); queued,
            // the task owns them.
            if inline.is_some() {
                pool.run_inline(ctx as *mut (), status, launch.aborted.clone(), body, finish);
            } else {
                pool.spawn_block(
                    worker,
                    ctx as *mut (),
                    status,
                    launch.aborted.clone(),
                    Box::new(body),
                    Box::new(finish),
                );
            }
        }
        if let Some(done) = done {
            done.wait();
        }
        self.release_cores(&taken);
        match launch.take_fault() {
            Some(f) => Err(TwinError::Fault(f)),
            None => Ok(block_dim),
        }
    }

    fn release_cores(&self, taken: &[usize]) {
        let inner = &self.inner;
        let mut cores = inner.cores.lock();
        for &i in taken {
            cores.free[i] = true;
        }
        // A launch that starts waiting after this sees the cores free (it counts itself and
        // reads the signal under the lock); one counted before is woken. Nobody waiting: no
        // signal (its lock and fence are a cache line moving between workers at every launch).
        let wake = cores.waiting > 0;
        drop(cores);
        if wake {
            inner.cores_released.update(|v| v.wrapping_add(1));
        }
    }
}

/// The cores of a launch (indices, or their UB arenas' addresses): inline up to 8, so that a
/// launch of a small collective (one block per rank) allocates no list for them.
type CoreList = SmallVec<[usize; 8]>;

/// A GM allocation on one device. Freed on drop.
///
/// Its address ([`GmBuffer::addr`]) is what kernels use; any device of the same twin may access
/// it (as peers do through HCCS), and every kernel access is bounds-checked against the twin's
/// live allocations.
pub struct GmBuffer {
    ptr: *mut u8,
    len: usize,
    rank: u32,
    twin: Arc<TwinInner>,
    /// Host copies: reads share it, writes take it alone, so two host threads never race.
    host: parking_lot::RwLock<()>,
    /// Freed on drop (false: imported from another process, [`Device::import`]).
    owned: bool,
}

// SAFETY: the buffer is plain memory owned by this value. Host accesses go through `read`,
// `write` and `fill`, which exclude each other's conflicting copies (the `host` lock) and use
// word-wise atomics for small ranges; kernels reach the memory only through `Device::launch`,
// whose contract forbids host copies of the bytes a running kernel writes. So the handle may be
// shared and sent between threads.
unsafe impl Send for GmBuffer {}
// SAFETY: as above.
unsafe impl Sync for GmBuffer {}

impl GmBuffer {
    /// GM address of the first byte.
    pub fn addr(&self) -> *mut u8 {
        self.ptr
    }

    /// GM address of byte `offset`, as a kernel parameter ([`crate::ArgBlock::arg`]).
    /// Panics if `offset` is past the end.
    pub fn gm(&self, offset: usize) -> crate::GmAddr {
        assert!(
            offset <= self.len,
            "offset {offset} past the end of a {}-byte GM buffer",
            self.len
        );
        crate::GmAddr(self.ptr as u64 + offset as u64)
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

    /// The twin whose memory this is.
    pub fn twin_id(&self) -> u64 {
        self.twin.id
    }

    /// Marks `[offset, offset + len)` of this buffer as flag memory (see [`Device::alloc_sync`]):
    /// for kernels that keep their flags inside a data buffer (a workspace, a region of an HCCL
    /// buffer).
    pub fn mark_sync(&self, offset: usize, len: usize) -> Result<(), TwinError> {
        self.check(offset, len)?;
        if len > 0 {
            self.twin.mem.mark_sync(self.ptr as usize + offset, len);
        }
        Ok(())
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

    /// Copies `data` into the buffer at `offset` (host -> device), excluding other host copies
    /// of this buffer meanwhile.
    ///
    /// Not ordered with kernels: the caller of [`Device::launch`] promises that no host copy
    /// touches what its kernel writes while it runs (small copies, at most 2 KiB, are word-wise
    /// atomic stores, which a kernel polling them may read). aiv-comm's device buffers order
    /// host copies with their streams.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), TwinError> {
        self.check(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let _excl = self.host.write();
        let dst = self.ptr as usize + offset;
        let meta = self.twin.mem.lookup(dst, data.len());
        let meta = meta.as_ref().map(|f| f.meta());
        self.twin.before_write(meta, dst, data.len());
        // SAFETY: bounds checked above; `data` is a separate host slice; no other host copy of
        // this buffer runs meanwhile (the lock) and no kernel touches these bytes (the contract
        // of `Device::launch`).
        unsafe { crate::mem::write(dst as *mut u8, data.as_ptr(), data.len()) };
        self.twin.after_host_write(meta, dst, data.len());
        Ok(())
    }

    /// Copies bytes from the buffer at `offset` into `out` (device -> host), beside other host
    /// reads but excluding host writes of this buffer. The same rule about kernels as
    /// [`GmBuffer::write`] applies.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), TwinError> {
        self.check(offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let _shared = self.host.read();
        // SAFETY: bounds checked above; `out` is a separate host slice; no host write runs
        // meanwhile (the lock) and no kernel writes these bytes (the contract of
        // `Device::launch`).
        unsafe { crate::mem::read(out.as_mut_ptr(), self.ptr.add(offset), out.len()) };
        Ok(())
    }

    /// Sets `bytes` bytes at `offset` to `value` (same rules as [`GmBuffer::write`]).
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
        if !self.owned {
            return;
        }
        let (addr, len) = (self.ptr as usize, self.len.max(1));
        // Deferred copies of this memory take their bytes now; the race checker forgets it.
        let found = self.twin.mem.lookup(addr, len);
        self.twin
            .before_write(found.as_ref().map(|f| f.meta()), addr, len);
        self.twin.race.forget(addr, addr, len);
        // SAFETY: ptr/len come from this twin's `alloc`; whoever launches kernels on it keeps
        // the buffer alive until they end (the contract of `Device::launch`), so nothing uses
        // it any more.
        unsafe { self.twin.mem.free(self.ptr, self.len) };
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
