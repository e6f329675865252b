//! The runtime's state between `aclInit` and `aclFinalize`: the twin and its devices, the
//! calling thread's device, device memory, and the handle tables.
//!
//! An ACL runtime is process-wide by definition (`aclInit` once per process), so this state is
//! a process-wide static; nothing else in the crate is.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use ascendc_sys::*;
use ascendc_twin::{Device, DeviceConfig, GmBuffer, Space, Twin, TwinConfig};
use parking_lot::{Mutex, RwLock};

use crate::fail::{fail, R};

/// Devices the runtime reports when `ACL_TWIN_DEVICES` is not set: as many as one aiv-comm
/// world may have ranks (an Atlas A2 server has 8 NPUs; devices cost nothing until used).
pub(crate) const DEFAULT_DEVICES: u32 = 32;
/// Most devices `ACL_TWIN_DEVICES` may ask for.
pub(crate) const MAX_DEVICES: u32 = 64;

/// One live allocation, or an IPC import of another process's.
pub(crate) struct Alloc {
    pub buf: Arc<GmBuffer>,
    /// Imported from another process (released with `aclrtIpcMemClose`, not `aclrtFree`).
    pub imported: bool,
}

/// The runtime (see the module docs).
pub(crate) struct Runtime {
    /// Made by a call other than `aclInit`, and no `aclInit` since.
    implicit: AtomicBool,
    pub twin: Twin,
    /// The process's window of the twin's node space, where device memory lives (`ipc`).
    pub space: Arc<Space>,
    devices: Vec<OnceLock<Device>>,
    /// Live allocations by start address.
    mem: RwLock<BTreeMap<usize, Alloc>>,
    pub handles: Handles,
    /// Launches, and how many of them asked for batch scheduling.
    pub launches: AtomicU64,
    pub batch_launches: AtomicU64,
    /// The `TIMEOUT_US` attribute of the latest launch (0: none).
    pub last_timeout_us: AtomicU64,
}

static RUNTIME: Mutex<Option<Arc<Runtime>>> = Mutex::new(None);
/// `aclFinalize` has run (a second one is `ACL_ERROR_REPEAT_FINALIZE`).
static FINALIZED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The device `aclrtSetDevice` bound to this thread.
    static CURRENT: Cell<Option<u32>> = const { Cell::new(None) };
}

/// `aclInit`. A runtime that an earlier call made without it (see [`rt`]) takes this first
/// `aclInit` as its own; a second one is `ACL_ERROR_REPEAT_INITIALIZE`.
pub(crate) fn init() -> R<()> {
    let mut rt = RUNTIME.lock();
    if let Some(r) = rt.as_ref() {
        if r.implicit.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was already called");
    }
    *rt = Some(create(false)?);
    Ok(())
}

/// A runtime with the configuration of the environment; `implicit`: made by a call other than
/// `aclInit`.
fn create(implicit: bool) -> R<Arc<Runtime>> {
    let config = TwinConfig::try_from_env().or_else(|e| fail(ACL_ERROR_INVALID_PARAM, e))?;
    let devices = match std::env::var("ACL_TWIN_DEVICES") {
        Err(_) => DEFAULT_DEVICES,
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_DEVICES).contains(&n) => n,
            _ => {
                return fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!(
                        "ACL_TWIN_DEVICES=`{v}`: expected a device count from 1 to {MAX_DEVICES}"
                    ),
                )
            }
        },
    };
    let space = Space::open().or_else(|e| {
        fail(
            ACL_ERROR_RT_INTERNAL_ERROR,
            format!("acl-twin cannot place its device memory: {e}"),
        )
    })?;
    Ok(Arc::new(Runtime {
        implicit: AtomicBool::new(implicit),
        twin: Twin::with_space(config, space.clone()),
        space,
        devices: (0..devices).map(|_| OnceLock::new()).collect(),
        mem: RwLock::new(BTreeMap::new()),
        handles: Handles::default(),
        launches: AtomicU64::new(0),
        batch_launches: AtomicU64::new(0),
        last_timeout_us: AtomicU64::new(0),
    }))
}

/// `aclFinalize`: waits for every stream, then drops the runtime.
pub(crate) fn finalize() -> R<()> {
    let rt = RUNTIME.lock().take();
    match rt {
        None if FINALIZED.load(Ordering::Relaxed) => {
            fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize was already called")
        }
        None => fail(ACL_ERROR_UNINITIALIZE, "aclInit was not called"),
        Some(rt) => {
            rt.handles.shutdown();
            FINALIZED.store(true, Ordering::Relaxed);
            Ok(())
        }
    }
}

/// The runtime. A call before `aclInit` makes it with the defaults, as CANN's runtime does:
/// the public AscendC samples for Atlas A2 call `aclrtSetDevice` and the rest without `aclInit`.
/// After `aclFinalize` it is `ACL_ERROR_UNINITIALIZE`.
pub(crate) fn rt() -> R<Arc<Runtime>> {
    let mut rt = RUNTIME.lock();
    if let Some(r) = rt.as_ref() {
        return Ok(r.clone());
    }
    if FINALIZED.load(Ordering::Relaxed) {
        return fail(ACL_ERROR_UNINITIALIZE, "aclFinalize was called");
    }
    let r = create(true)?;
    *rt = Some(r.clone());
    Ok(r)
}

impl Runtime {
    /// Number of devices.
    pub fn device_count(&self) -> u32 {
        self.devices.len() as u32
    }

    /// Device `id`, created on first use.
    pub fn device(&self, id: i32) -> R<&Device> {
        let slot = usize::try_from(id)
            .ok()
            .and_then(|i| self.devices.get(i))
            .map_or_else(
                || {
                    fail(
                        ACL_ERROR_RT_INVALID_DEVICEID,
                        format!(
                            "device {id} does not exist (devices 0..{})",
                            self.devices.len()
                        ),
                    )
                },
                Ok,
            )?;
        if let Some(d) = slot.get() {
            return Ok(d);
        }
        let d = self
            .twin
            .device(id as u32, DeviceConfig::default())
            .or_else(|e| fail(ACL_ERROR_RT_INTERNAL_ERROR, e.to_string()))?;
        Ok(slot.get_or_init(|| d))
    }

    /// The calling thread's device, or `ACL_ERROR_RT_CONTEXT_NULL`.
    pub fn current(&self) -> R<(u32, &Device)> {
        match CURRENT.with(|c| c.get()) {
            Some(id) if (id as usize) < self.devices.len() => Ok((id, self.device(id as i32)?)),
            _ => fail(
                ACL_ERROR_RT_CONTEXT_NULL,
                "no device is set on this thread (call aclrtSetDevice first)",
            ),
        }
    }

    /// Allocates `bytes` on the calling thread's device.
    pub fn malloc(&self, bytes: usize) -> R<usize> {
        let (_, dev) = self.current()?;
        if bytes == 0 {
            return fail(ACL_ERROR_INVALID_PARAM, "size 0");
        }
        let buf = dev
            .alloc(bytes)
            .or_else(|e| fail(ACL_ERROR_RT_MEMORY_ALLOCATION, e.to_string()))?;
        let addr = buf.addr() as usize;
        self.mem.write().insert(
            addr,
            Alloc {
                buf: Arc::new(buf),
                imported: false,
            },
        );
        Ok(addr)
    }

    /// Frees the allocation that starts at `addr` (its IPC keys go with it).
    pub fn free(&self, addr: usize) -> R<()> {
        let mut mem = self.mem.write();
        match mem.get(&addr) {
            Some(a) if a.imported => fail(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "{addr:#x} was imported from another process: release it with aclrtIpcMemClose"
                ),
            ),
            Some(_) => {
                mem.remove(&addr);
                Ok(())
            }
            None => fail(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "{addr:#x} is not an address aclrtMalloc returned, or it was freed already"
                ),
            ),
        }
    }

    /// The allocation holding `[addr, addr + len)` and the offset of `addr` in it.
    pub fn locate(&self, addr: usize, len: usize, what: &str) -> R<(Arc<GmBuffer>, usize)> {
        let mem = self.mem.read();
        if let Some((&start, a)) = mem.range(..=addr).next_back() {
            let off = addr - start;
            if off.checked_add(len).is_some_and(|end| end <= a.buf.len()) {
                return Ok((a.buf.clone(), off));
            }
            if off < a.buf.len() {
                return fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!(
                        "{what}: {len} bytes at {addr:#x} run past the end of its allocation ({} bytes at {start:#x})",
                        a.buf.len()
                    ),
                );
            }
        }
        fail(
            ACL_ERROR_INVALID_PARAM,
            format!("{what}: {addr:#x} is not in device memory this runtime allocated (or it was freed)"),
        )
    }

    /// Registers an IPC import of another process's `len` bytes at `addr` (already mapped).
    pub fn add_import(&self, addr: usize, len: usize) -> R<()> {
        let (_, dev) = self.current()?;
        let buf = dev
            .import_any(addr as u64, len)
            .or_else(|e| fail(ACL_ERROR_INVALID_PARAM, e.to_string()))?;
        self.mem.write().insert(
            addr,
            Alloc {
                buf: Arc::new(buf),
                imported: true,
            },
        );
        Ok(())
    }

    /// Drops the IPC import at `addr`.
    pub fn drop_import(&self, addr: usize) {
        let mut mem = self.mem.write();
        if mem.get(&addr).is_some_and(|a| a.imported) {
            mem.remove(&addr);
        }
    }

    /// True if `[addr, addr + 1)` is device memory of this runtime.
    pub fn is_device(&self, addr: usize) -> bool {
        self.locate(addr, 1, "").is_ok()
    }
}

/// Binds device `id` to the calling thread (`aclrtSetDevice`).
pub(crate) fn set_device(id: i32) -> R<()> {
    let rt = rt()?;
    rt.device(id)?;
    CURRENT.with(|c| c.set(Some(id as u32)));
    Ok(())
}

/// Unbinds device `id` from the calling thread if bound (`aclrtResetDevice`).
pub(crate) fn reset_device(id: i32) -> R<()> {
    let rt = rt()?;
    rt.device(id)?;
    CURRENT.with(|c| {
        if c.get() == Some(id as u32) {
            c.set(None)
        }
    });
    Ok(())
}

/// Tables of live handles: a handle is a number, so a freed or foreign one is an error, not a
/// dangling pointer.
#[derive(Default)]
pub(crate) struct Handles {
    next: AtomicU64,
    pub streams: Mutex<HashMap<usize, Arc<crate::stream::Stream>>>,
    /// Each device's default stream (the null stream).
    pub default_streams: Mutex<HashMap<u32, Arc<crate::stream::Stream>>>,
    pub events: Mutex<HashMap<usize, Arc<crate::stream::Event>>>,
    pub binaries: Mutex<HashMap<usize, Arc<crate::binary::Binary>>>,
    pub functions: Mutex<HashMap<usize, Arc<crate::binary::Function>>>,
    pub args: Mutex<HashMap<usize, crate::launch::ArgsBuilder>>,
    /// Host memory `aclrtMallocHost` gave out and not yet freed.
    pub host_allocs: Mutex<std::collections::HashSet<usize>>,
    pub ipc: Mutex<crate::ipc::Ipc>,
    /// Contexts `aclrtCreateContext` made, with their device.
    pub contexts: Mutex<HashMap<usize, u32>>,
    /// The names of kernels launched with `<<<>>>` (`aclTwinLaunchChevron`), each kept once for
    /// the process's life, as a loaded binary's are.
    pub chevron_names: Mutex<HashMap<String, &'static str>>,
}

impl Handles {
    /// A fresh handle value (never null, never reused).
    pub fn fresh(&self) -> usize {
        0x1000 + 16 * self.next.fetch_add(1, Ordering::Relaxed) as usize
    }

    /// Waits for every stream's work and stops their threads.
    fn shutdown(&self) {
        let streams: Vec<_> = self.streams.lock().drain().map(|(_, s)| s).collect();
        let defaults: Vec<_> = self
            .default_streams
            .lock()
            .drain()
            .map(|(_, s)| s)
            .collect();
        for s in streams.iter().chain(&defaults) {
            s.stop();
        }
    }
}

/// Looks up `handle` in `table`, or `ACL_ERROR_RT_INVALID_HANDLE` naming `what`.
pub(crate) fn lookup<T: Clone>(
    table: &Mutex<HashMap<usize, T>>,
    handle: *mut std::ffi::c_void,
    what: &str,
) -> R<T> {
    match table.lock().get(&(handle as usize)) {
        Some(t) => Ok(t.clone()),
        None if handle.is_null() => fail(ACL_ERROR_INVALID_PARAM, format!("{what} is null")),
        None => fail(
            ACL_ERROR_RT_INVALID_HANDLE,
            format!("{handle:p} is not a live {what} of this runtime"),
        ),
    }
}
