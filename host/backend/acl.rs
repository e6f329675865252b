//! The ACL runtime as a [`Backend`]: Ascend NPUs through `libascendcl.so`, loaded at run time
//! ([`ascendc_sys`]), one device per rank.
//!
//! **What has been verified where.** Nothing here has run on an NPU. This backend is written
//! from the ACL documentation and tested against acl-twin (the workspace's ACL runtime over
//! the CPU twin), which implements the documented behaviour; where the documentation is
//! silent, the assumption is stated below and in acl-twin's docs.
//!
//! - **Devices and threads.** ACL binds a device's context to the calling thread
//!   (`aclrtSetDevice`); every thread that makes a call for a device first makes it current
//!   (cached per thread, so `aclrtSetDevice` is called once per thread and device change).
//! - **Streams.** Each stream is an ACL stream plus a host thread that runs the stream's host
//!   tasks in order. A launch is `aclrtLaunchKernelWithHostArgs` (CANN 8.5+) or the
//!   `aclrtKernelArgs*` builder + `aclrtLaunchKernelWithConfig` (8.2, 8.3), then
//!   `aclrtSynchronizeStream`: the trait's launch completes before it returns, so the host
//!   reads a failed launch's diagnostic records as on the twin.
//! - **Batch scheduling.** A launch of [`Blocks::Exactly`] blocks sets
//!   `ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE` = 1 (start only when every block has a core), as
//!   HCCL does for its AIV kernels; [`Blocks::UpTo`]`(n)` launches `n` blocks in normal mode.
//!   Every launch also sets `ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US` to twice the world's exec
//!   timeout, behind the kernels' own deadlines (HCCL also clamps its value to a multiple of
//!   `aclrtGetOpTimeOutInterval`, which is not done here).
//! - **Peers.** Every device is given access to every other device's memory
//!   (`aclrtDeviceEnablePeerAccess`, documented for the threads of one process), since a
//!   kernel reads and writes its peers' HCCL buffers and flags directly.
//! - **Kernels** are found by name ([`ascendc_twin::Kernel::name`]) in their library's binary.
//!   aiv-comm's own binary is loaded on every device at start: on acl-twin, the twin build of
//!   its kernels (`libaiv_kernels.twin.so`, built by `build.rs`); on an NPU, the device binary
//!   a build with the `npu` feature embeds. A user's kernel built with `ascendc-build` names
//!   its library's binaries ([`ascendc_twin::Kernel::binaries`]: the twin shared object, and
//!   the device ELF where `Build::npu` ran), and the backend loads that binary on a device at
//!   the first launch of one of its kernels there, so the same program launches its own
//!   kernels on the twin and through ACL. A kernel made without `ascendc-build` is looked for
//!   in aiv-comm's binary. A library without the binary this runtime needs, a binary that does
//!   not load, or a kernel missing from it is an error saying which.
//! - **Abort** cannot kill a running ACL kernel: it makes later launches fail at once
//!   ([`crate::FaultKind::PeerAborted`]), and running ones stop at their next long wait, which
//!   reads the ABORT cell the host sets before it aborts the backend (`WorldShared::abort`;
//!   a synchronous `aclrtMemcpy` while kernels of other streams run: that it lands while they
//!   run is assumed, UNTESTED on an NPU); [`Backend::wait_until_idle`] waits for them.
//! - **Description** ([`Backend::description`], the header of `aiv-perf`): "ACL (SoC, CANN
//!   version, library, launch path)": the SoC from `aclrtGetSocName`, the version from
//!   `aclsysGetVersionStr` of the runtime package (CANN 8.5+), else the deprecated
//!   `aclsysGetCANNVersion` (8.2+); "SoC unknown" / "CANN version unknown" where the runtime
//!   lacks the call or it fails, never an error.
//! - **Errors.** A failed launch is an [`Error::Fault`] whose detail is the runtime's status
//!   code and `aclGetRecentErrMsg` text; other failed calls are [`Error::Runtime`].
//! - The ACL runtime is initialised (`aclInit`) once per process and never finalised: other
//!   worlds, or the program itself, may still use it.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use ascendc_sys::*;
use ascendc_twin::{ArgBlock, Kernel};
use parking_lot::{Condvar, Mutex};

use super::{Backend, Blocks, CondvarSignal, MemKind, A2_AIV_CORES};
use crate::error::{Error, Fault, FaultKind, Result};

/// Where `build.rs` put the twin build of aiv-comm's kernels (the binary acl-twin loads).
const TWIN_BINARY: &str = env!("AIV_KERNELS_TWIN_BINARY");
/// Where `build.rs` put the NPU binary of aiv-comm's kernels (`npu` feature builds only).
const NPU_BINARY: Option<&str> = option_env!("AIV_KERNELS_NPU_BINARY");

/// (device, peer) pairs whose peer access this process enabled: the ACL runtime's own state is
/// per process, and so is this record of it.
static PEERS_ENABLED: Mutex<std::collections::BTreeSet<(u32, u32)>> =
    Mutex::new(std::collections::BTreeSet::new());

thread_local! {
    /// The device this thread made current through the ACL runtime.
    static CURRENT: Cell<Option<u32>> = const { Cell::new(None) };
}

/// What the backend's handles share: the runtime, its binaries, the abort state.
struct Shared {
    acl: Acl,
    path: LaunchPath,
    /// The runtime's device of each of the backend's devices (ranks): itself in one process;
    /// in a job of processes ([`AclBackend::for_process`]) the rank's device for every rank
    /// (a peer's memory is imported into it).
    physical: Vec<u32>,
    /// aiv-comm's binary, loaded on each device (0: none, a peer's device in a job of
    /// processes).
    binaries: Vec<usize>,
    /// Binaries of users' kernel libraries, loaded on first launch of one of their kernels:
    /// by device and path.
    libraries: Mutex<HashMap<(u32, &'static str), usize>>,
    /// Kernels looked up so far, by device, binary and name.
    functions: Mutex<HashMap<(u32, usize, &'static str), usize>>,
    /// The first abort reason, and the launches running now: one lock, so that a launch is
    /// either refused by an abort or counted before `abort` returns (`wait_until_idle` then
    /// waits for it).
    launches: Mutex<Launches>,
    /// Each launch's time limit for the runtime (`TIMEOUT_US`), 0 for none.
    launch_timeout_us: AtomicU64,
    idle: Condvar,
}

/// See [`Shared::launches`].
#[derive(Default)]
struct Launches {
    aborted: Option<String>,
    running: u64,
}

/// A failed call `call` that returned `code`, with the runtime's text.
fn runtime_error(acl: &Acl, call: &'static str, code: aclError) -> Error {
    Error::Runtime {
        call,
        code,
        message: acl.api.recent_error(),
    }
}

impl Shared {
    /// `Ok` if `code` is success, else the runtime's error for `call`.
    fn check(&self, call: &'static str, code: aclError) -> Result<()> {
        if code == ACL_SUCCESS {
            Ok(())
        } else {
            Err(runtime_error(&self.acl, call, code))
        }
    }

    /// Makes `device`'s runtime device the calling thread's current device.
    fn set_device(&self, device: u32) -> Result<()> {
        let device = self.physical[device as usize];
        if CURRENT.with(|c| c.get()) == Some(device) {
            return Ok(());
        }
        // SAFETY: a plain call with a device number.
        let code = unsafe { (self.acl.api.aclrtSetDevice)(device as i32) };
        self.check("aclrtSetDevice", code)?;
        CURRENT.with(|c| c.set(Some(device)));
        Ok(())
    }

    /// Lets the kernels of `device` (the current one) reach the memory of every other device
    /// of the world (`aclrtDeviceEnablePeerAccess`, within one process). A runtime without the
    /// call is taken to need none.
    ///
    /// The documentation calls the setting device-level and says nothing of a second call for
    /// the same pair, so each pair is enabled once per process: [`PEERS_ENABLED`] mirrors the
    /// runtime's own process-wide state (a later world on the same devices finds it set).
    fn enable_peers(&self, device: u32, devices: u32) -> Result<()> {
        let Some(enable) = self.acl.api.aclrtDeviceEnablePeerAccess else {
            return Ok(());
        };
        let mut enabled = PEERS_ENABLED.lock();
        for peer in (0..devices).filter(|&p| p != device) {
            if enabled.contains(&(device, peer)) {
                continue;
            }
            if let Some(can) = self.acl.api.aclrtDeviceCanAccessPeer {
                let mut ok = 0;
                // SAFETY: writes one i32.
                let code = unsafe { can(&mut ok, device as i32, peer as i32) };
                self.check("aclrtDeviceCanAccessPeer", code)?;
                if ok == 0 {
                    return Err(Error::Runtime {
                        call: "aclrtDeviceCanAccessPeer",
                        code: 0,
                        message: format!(
                            "device {device} cannot access device {peer}'s memory: the ranks of one world must be on devices of one server"
                        ),
                    });
                }
            }
            // SAFETY: a plain call with a device number and no flags.
            let code = unsafe { enable(peer as i32, 0) };
            self.check("aclrtDeviceEnablePeerAccess", code)?;
            enabled.insert((device, peer));
        }
        Ok(())
    }

    /// Loads the binary at `path` on `device` (the current one).
    fn load_binary(&self, device: u32, path: &str) -> Result<usize> {
        let load = self
            .acl
            .api
            .aclrtBinaryLoadFromFile
            .expect("launch_path checked it");
        let cpath =
            CString::new(path).map_err(|_| Error::Config("binary path has a NUL".into()))?;
        // A device binary is loaded as a vector-core ELF (assumed from the documented magic
        // values; UNTESTED: no NPU here). acl-twin's binaries take no options.
        let mut magic = aclrtBinaryLoadOption {
            type_: ACL_RT_BINARY_LOAD_OPT_MAGIC,
            value: aclrtBinaryLoadOptionValue {
                magic: ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE,
            },
        };
        let mut options = aclrtBinaryLoadOptions {
            options: &mut magic,
            numOpt: 1,
        };
        let options_ptr: *mut aclrtBinaryLoadOptions = if self.acl.twin.is_some() {
            std::ptr::null_mut()
        } else {
            &mut options
        };
        self.set_device(device)?;
        let mut h: aclrtBinHandle = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path, null or live options, an out-pointer to our slot.
        let code = unsafe { load(cpath.as_ptr(), options_ptr, &mut h) };
        if code != ACL_SUCCESS {
            return Err(Error::Runtime {
                call: "aclrtBinaryLoadFromFile",
                code,
                message: format!("{path}: {}", self.acl.api.recent_error()),
            });
        }
        Ok(h as usize)
    }

    /// The binary holding `kernel` on `device`: aiv-comm's, or the kernel's own library's
    /// (loaded on first use; [`Kernel::binaries`], which `ascendc-build`'s statics carry).
    fn binary_of(&self, device: u32, kernel: &'static Kernel) -> Result<usize> {
        let own = self.binaries[device as usize];
        if own == 0 {
            return Err(Error::InvalidArgument(format!(
                "device {device} is another process's: this process launches on its own rank's only"
            )));
        }
        let Some(b) = kernel.binaries() else {
            // Made without ascendc-build (`Kernel::from_trampoline`): aiv-comm's binary is the
            // only place to look.
            return Ok(own);
        };
        let path = match (self.acl.twin.is_some(), b.twin, b.npu) {
            (true, Some(p), _) | (false, _, Some(p)) => p,
            (true, None, _) => {
                return Err(Error::Config(format!(
                    "kernel `{}`: its library `{}` was built without a twin binary, which acl-twin loads: leave ascendc_build::Build::twin_binary on",
                    kernel.name(),
                    b.library
                )))
            }
            (false, _, None) => {
                return Err(Error::Config(format!(
                    "kernel `{}`: its library `{}` was built without NPU kernels: call ascendc_build::Build::npu in its build.rs where CANN's bisheng is installed (ASCEND_HOME_PATH set)",
                    kernel.name(),
                    b.library
                )))
            }
        };
        if Some(path) == self.own_binary() {
            return Ok(own);
        }
        let mut libraries = self.libraries.lock();
        if let Some(&h) = libraries.get(&(device, path)) {
            return Ok(h);
        }
        let h = self.load_binary(device, path)?;
        libraries.insert((device, path), h);
        Ok(h)
    }

    /// The path of aiv-comm's binary on this runtime, if it has one.
    fn own_binary(&self) -> Option<&'static str> {
        match self.acl.twin {
            Some(_) => Some(TWIN_BINARY),
            None => NPU_BINARY,
        }
    }

    /// The function handle of `kernel` on `device`.
    fn function(&self, device: u32, kernel: &'static Kernel) -> Result<usize> {
        let binary = self.binary_of(device, kernel)?;
        let key = (device, binary, kernel.name());
        if let Some(&f) = self.functions.lock().get(&key) {
            return Ok(f);
        }
        let name = CString::new(kernel.name()).map_err(|_| {
            Error::InvalidArgument(format!("kernel name {:?} has a NUL", kernel.name()))
        })?;
        let mut f: aclrtFuncHandle = std::ptr::null_mut();
        // SAFETY: a live binary handle, a NUL-terminated name, an out-pointer to our slot.
        let code = unsafe {
            (self.acl.api.aclrtBinaryGetFunction)(binary as aclrtBinHandle, name.as_ptr(), &mut f)
        };
        if code != ACL_SUCCESS {
            let whose = match kernel.binaries() {
                Some(b) => format!("the binary of its library `{}`", b.library),
                None => "aiv-comm's binary (the kernel was made without ascendc-build, so its own binary is unknown)".into(),
            };
            return Err(Error::Runtime {
                call: "aclrtBinaryGetFunction",
                code,
                message: format!(
                    "kernel `{}` is not in {whose}: {}",
                    kernel.name(),
                    self.acl.api.recent_error()
                ),
            });
        }
        self.functions.lock().insert(key, f as usize);
        Ok(f as usize)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let own = self
            .binaries
            .iter()
            .enumerate()
            .map(|(d, &b)| (d as u32, b));
        let libraries: Vec<(u32, usize)> = self
            .libraries
            .lock()
            .iter()
            .map(|(&(d, _), &b)| (d, b))
            .collect();
        for (d, b) in own.chain(libraries) {
            if b != 0 && self.set_device(d).is_ok() {
                // SAFETY: a binary this backend loaded; nothing launches from it any more
                // (every handle that could holds this Shared).
                unsafe { (self.acl.api.aclrtBinaryUnLoad)(b as aclrtBinHandle) };
            }
        }
    }
}

/// Ascend NPUs through the ACL runtime (see the module docs).
pub struct AclBackend {
    id: u64,
    devices: u32,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AclBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclBackend")
            .field("library", &self.shared.acl.library())
            .field("devices", &self.devices)
            .finish()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1 << 62);

impl AclBackend {
    /// `devices` devices (0..devices) of the ACL runtime `libascendcl.so` on the loader's
    /// path.
    pub fn new(devices: u32) -> Result<AclBackend> {
        let acl = Acl::load().map_err(|e| Error::Runtime {
            call: "loading libascendcl.so",
            code: 0,
            message: e.to_string(),
        })?;
        AclBackend::with_runtime(acl, devices)
    }

    /// `devices` devices of an opened runtime ([`Acl::open`] picks a library, or hides some of
    /// its functions, as a test might).
    pub fn with_runtime(acl: Acl, devices: u32) -> Result<AclBackend> {
        AclBackend::build(acl, devices, None)
    }

    /// Rank `rank` of a job of `size` ranks, each a process of its own on this host: the
    /// runtime's device `local_rank % devices` (as hccl_test picks it), on which this rank
    /// allocates and launches, and into which its peers' memory is imported
    /// ([`Backend::import`], ACL's IPC calls).
    pub(crate) fn for_process(rank: u32, size: u32, local_rank: u32) -> Result<AclBackend> {
        let acl = Acl::load().map_err(|e| Error::Runtime {
            call: "loading libascendcl.so",
            code: 0,
            message: e.to_string(),
        })?;
        AclBackend::build(acl, size, Some((rank, local_rank)))
    }

    /// `devices` devices, one per rank: all in this process (`process` None), or rank `r` of
    /// a job of processes on the runtime's device `local_rank % count` (`process`
    /// `Some((r, local_rank))`).
    fn build(acl: Acl, devices: u32, process: Option<(u32, u32)>) -> Result<AclBackend> {
        let path = acl.api.launch_path().map_err(|(f, v)| Error::Runtime {
            call: f,
            code: 0,
            message: format!(
                "`{}` has no `{f}`: aiv-comm's ACL backend needs CANN {v} or later",
                acl.library()
            ),
        })?;
        // SAFETY: a null config path is allowed.
        let code = unsafe { (acl.api.aclInit)(std::ptr::null()) };
        if code != ACL_SUCCESS && code != ACL_ERROR_REPEAT_INITIALIZE {
            return Err(runtime_error(&acl, "aclInit", code));
        }
        let mut count = 0u32;
        // SAFETY: writes one u32.
        let code = unsafe { (acl.api.aclrtGetDeviceCount)(&mut count) };
        if code != ACL_SUCCESS {
            return Err(runtime_error(&acl, "aclrtGetDeviceCount", code));
        }
        let physical: Vec<u32> = match process {
            None if count < devices => {
                return Err(Error::Config(format!(
                    "{devices} ranks need {devices} devices, the ACL runtime `{}` has {count}",
                    acl.library()
                )))
            }
            None => (0..devices).collect(),
            Some(_) if count == 0 => {
                return Err(Error::Config(format!(
                    "the ACL runtime `{}` has no device",
                    acl.library()
                )))
            }
            Some((_, local)) => vec![local % count; devices as usize],
        };
        if acl.twin.is_none() && NPU_BINARY.is_none() {
            return Err(Error::Runtime {
                call: "loading aiv-comm's kernels",
                code: 0,
                message: "aiv-comm was built without NPU kernels: rebuild it with `--features npu` where CANN's bisheng is installed (ASCEND_HOME_PATH set)".into(),
            });
        }
        let mut shared = Shared {
            acl,
            path,
            physical,
            binaries: vec![0; devices as usize],
            libraries: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            launches: Mutex::new(Launches::default()),
            idle: Condvar::new(),
            launch_timeout_us: AtomicU64::new(0),
        };
        let own: Vec<u32> = match process {
            None => (0..devices).collect(),
            Some((rank, _)) => vec![rank],
        };
        for d in own {
            shared.set_device(d)?;
            if process.is_none() {
                // In a job of processes peers' memory comes by IPC import (which enables the
                // access itself on 8.3+).
                shared.enable_peers(d, devices)?;
            }
            let binary = shared.own_binary().expect("checked above");
            let h = shared.load_binary(d, binary)?;
            shared.binaries[d as usize] = h;
        }
        Ok(AclBackend {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            devices,
            shared: Arc::new(shared),
        })
    }

    /// The backend [`crate::BackendChoice::Auto`] takes: `None` unless `libascendcl.so` loads,
    /// is a device runtime (not acl-twin, the twin behind the ACL API) and reports at least
    /// `devices` devices; then the backend on it, or why it cannot be used.
    pub fn auto(devices: u32) -> Option<Result<AclBackend>> {
        match Acl::load() {
            Ok(acl) if acl.twin.is_none() && AclBackend::has_devices(&acl, devices) => {
                Some(AclBackend::with_runtime(acl, devices))
            }
            _ => None,
        }
    }

    /// [`AclBackend::auto`] for rank `rank` of a job of processes
    /// ([`AclBackend::for_process`]): a device runtime with at least one device.
    pub(crate) fn auto_process(
        rank: u32,
        size: u32,
        local_rank: u32,
    ) -> Option<Result<AclBackend>> {
        match Acl::load() {
            Ok(acl) if acl.twin.is_none() && AclBackend::has_devices(&acl, 1) => {
                Some(AclBackend::build(acl, size, Some((rank, local_rank))))
            }
            _ => None,
        }
    }

    /// True if `acl` initialises and reports at least `devices` devices.
    fn has_devices(acl: &Acl, devices: u32) -> bool {
        // SAFETY: a null config path is allowed; the count is written to our u32.
        unsafe {
            let code = (acl.api.aclInit)(std::ptr::null());
            if code != ACL_SUCCESS && code != ACL_ERROR_REPEAT_INITIALIZE {
                return false;
            }
            let mut count = 0u32;
            (acl.api.aclrtGetDeviceCount)(&mut count) == ACL_SUCCESS && count >= devices
        }
    }

    /// The runtime's library, as it was opened.
    pub fn library(&self) -> &str {
        self.shared.acl.library()
    }

    /// The way kernels are launched ([`LaunchPath`]).
    pub fn launch_path(&self) -> LaunchPath {
        self.shared.path
    }

    /// The SoC name the runtime reports (`aclrtGetSocName`), if it has the function.
    pub fn soc_name(&self) -> Option<String> {
        let f = self.shared.acl.api.aclrtGetSocName?;
        // SAFETY: returns null or a NUL-terminated string owned by the runtime.
        unsafe {
            let p = f();
            (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    }

    /// The CANN version the runtime reports ([`Api::cann_version`]: `aclsysGetVersionStr`,
    /// else the deprecated `aclsysGetCANNVersion`), `None` if it has neither call or they
    /// fail. acl-twin reports its own version (`acl-twin <version>`), not a CANN release.
    pub fn cann_version(&self) -> Option<String> {
        self.shared.acl.api.cann_version()
    }

    /// True if the runtime is acl-twin (the CPU twin behind the ACL API).
    pub fn is_twin(&self) -> bool {
        self.shared.acl.twin.is_some()
    }

    /// acl-twin's launch counters: (launches, launches that asked for batch scheduling,
    /// the time limit (`TIMEOUT_US`) of the latest launch, 0 for none).
    pub fn twin_launch_stats(&self) -> Option<(u64, u64, u64)> {
        let t = self.shared.acl.twin?;
        let (mut all, mut batch, mut timeout) = (0, 0, 0);
        // SAFETY: writes three u64s.
        let code = unsafe { (t.aclTwinLaunchStats)(&mut all, &mut batch, &mut timeout) };
        (code == ACL_SUCCESS).then_some((all, batch, timeout))
    }
}

/// Device memory of the ACL backend.
pub struct AclMemory {
    addr: u64,
    len: usize,
    device: u32,
    /// An import of another process's memory: its key (closed, not freed, on drop).
    imported: Option<CString>,
    /// Keys this memory was exported under (closed before it is freed).
    exports: Mutex<Vec<CString>>,
    shared: Arc<Shared>,
}

impl Drop for AclMemory {
    fn drop(&mut self) {
        if self.shared.set_device(self.device).is_err() {
            return;
        }
        let api = &self.shared.acl.api;
        if let Some(key) = &self.imported {
            if let Some(close) = api.aclrtIpcMemClose {
                // SAFETY: a key this process imported, closed once.
                unsafe { close(key.as_ptr()) };
            }
            return;
        }
        // Importers should close first (the documented order); each process closes its
        // imports when its communicator drops, which this process cannot wait for: the
        // exporter's close is assumed not to pull the memory from under a live import
        // (acl-twin keeps imports mapped; UNTESTED on an NPU).
        for key in self.exports.lock().drain(..) {
            if let Some(close) = api.aclrtIpcMemClose {
                // SAFETY: a key this process exported, closed once.
                unsafe { close(key.as_ptr()) };
            }
        }
        // SAFETY: memory this backend allocated, freed once (the host frees it only when no
        // launch uses it: the trait's contract).
        unsafe { (api.aclrtFree)(self.addr as *mut c_void) };
    }
}

/// A host task, as a stream's thread runs it.
type Task = Box<dyn FnOnce() + Send>;

/// A stream of the ACL backend: an ACL stream and the host thread of its tasks.
pub struct AclStream {
    device: u32,
    raw: usize,
    tasks: Mutex<Option<mpsc::Sender<Task>>>,
    shared: Arc<Shared>,
}

impl Drop for AclStream {
    fn drop(&mut self) {
        // The thread ends once its queue is empty; the ACL stream is destroyed by whoever
        // drops this (tasks that were given have run: the host drains a stream before it
        // drops it).
        self.tasks.lock().take();
        if self.shared.set_device(self.device).is_ok() {
            // SAFETY: our stream, destroyed once.
            unsafe { (self.shared.acl.api.aclrtDestroyStream)(self.raw as aclrtStream) };
        }
    }
}

/// Maps a failed launch's status code to a fault kind.
fn fault_kind(code: aclError) -> FaultKind {
    match code {
        ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION => FaultKind::Trap,
        _ => FaultKind::Exception,
    }
}

// SAFETY: launch returns after aclrtSynchronizeStream of the launch's stream, i.e. once the
// kernel ended (or failed); wait_until_idle waits until no launch is between its start and
// that synchronisation; memory is freed only when its AclMemory drops; ids come from one
// process-wide counter; host tasks run on their stream's thread, each once.
unsafe impl Backend for AclBackend {
    type Memory = AclMemory;
    type Stream = AclStream;
    type Signal = CondvarSignal;

    fn name(&self) -> &'static str {
        "acl"
    }

    fn description(&self) -> String {
        let path = match self.shared.path {
            LaunchPath::HostArgs => "host-argument launches (CANN 8.5+)",
            LaunchPath::ArgsBuilder => "argument-builder launches (CANN 8.2/8.3)",
        };
        format!(
            "ACL ({}, {}, {}, {path})",
            self.soc_name().unwrap_or_else(|| "SoC unknown".into()),
            self.cann_version()
                .map_or_else(|| "CANN version unknown".into(), |v| format!("CANN {v}")),
            self.library()
        )
    }

    fn id(&self) -> u64 {
        self.id
    }

    fn devices(&self) -> u32 {
        self.devices
    }

    fn cores(&self, _device: u32) -> u32 {
        // Assumed, not queried: an Atlas A2's vector cores.
        A2_AIV_CORES
    }

    fn alloc(&self, device: u32, bytes: usize, kind: MemKind) -> Result<AclMemory> {
        let s = &self.shared;
        s.set_device(device)?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: an out-pointer to our slot.
        let code =
            unsafe { (s.acl.api.aclrtMalloc)(&mut p, bytes.max(1), ACL_MEM_MALLOC_HUGE_FIRST) };
        if code != ACL_SUCCESS {
            return Err(Error::OutOfMemory {
                rank: device,
                bytes,
            });
        }
        let mem = AclMemory {
            addr: p as u64,
            len: bytes.max(1),
            device,
            imported: None,
            exports: Mutex::new(Vec::new()),
            shared: s.clone(),
        };
        // ACL leaves new memory as it was: zero it, as the trait promises.
        self.fill(&mem, 0, bytes, 0)?;
        if let (MemKind::Flags, Some(t)) = (kind, s.acl.twin) {
            // SAFETY: our allocation, `bytes` long.
            let code = unsafe { (t.aclTwinMarkSync)(p, bytes) };
            s.check("aclTwinMarkSync", code)?;
        }
        Ok(mem)
    }

    fn process_id(&self) -> Result<u32> {
        let s = &self.shared;
        let Some(tgid) = s.acl.api.aclrtDeviceGetBareTgid else {
            return Ok(std::process::id());
        };
        let mut pid = 0i32;
        // SAFETY: writes one i32.
        let code = unsafe { tgid(&mut pid) };
        s.check("aclrtDeviceGetBareTgid", code)?;
        Ok(pid as u32)
    }

    fn export(&self, mem: &AclMemory, importers: &[u32]) -> Result<Vec<u8>> {
        let s = &self.shared;
        let missing = |f: &'static str| Error::Runtime {
            call: f,
            code: 0,
            message: format!(
                "`{}` has no `{f}`: ranks as processes need CANN 8.2 or later",
                s.acl.library()
            ),
        };
        let get = s
            .acl
            .api
            .aclrtIpcMemGetExportKey
            .ok_or_else(|| missing("aclrtIpcMemGetExportKey"))?;
        let set = s
            .acl
            .api
            .aclrtIpcMemSetImportPid
            .ok_or_else(|| missing("aclrtIpcMemSetImportPid"))?;
        s.set_device(mem.device)?;
        let mut key = [0u8; ACL_IPC_KEY_LEN];
        // SAFETY: a whole allocation of this backend and a key buffer of the documented size;
        // flags 0 (the PID whitelist is set below, as 8.2 requires).
        let code = unsafe {
            get(
                mem.addr as *mut c_void,
                mem.len,
                key.as_mut_ptr().cast(),
                key.len(),
                0,
            )
        };
        s.check("aclrtIpcMemGetExportKey", code)?;
        let n = key.iter().position(|&b| b == 0).unwrap_or(key.len());
        let key = CString::new(&key[..n]).expect("cut at the first NUL");
        let mut pids: Vec<i32> = importers.iter().map(|&p| p as i32).collect();
        if !pids.is_empty() {
            // SAFETY: a key just made and `pids.len()` pids.
            let code = unsafe { set(key.as_ptr(), pids.as_mut_ptr(), pids.len()) };
            s.check("aclrtIpcMemSetImportPid", code)?;
        }
        let bytes = key.as_bytes().to_vec();
        mem.exports.lock().push(key);
        Ok(bytes)
    }

    fn import(&self, device: u32, handle: &[u8], bytes: usize, kind: MemKind) -> Result<AclMemory> {
        let s = &self.shared;
        let import = s
            .acl
            .api
            .aclrtIpcMemImportByKey
            .ok_or_else(|| Error::Runtime {
                call: "aclrtIpcMemImportByKey",
                code: 0,
                message: format!(
                "`{}` has no `aclrtIpcMemImportByKey`: ranks as processes need CANN 8.2 or later",
                s.acl.library()
            ),
            })?;
        let key = CString::new(handle)
            .map_err(|_| Error::Config("an IPC key with a NUL in it".into()))?;
        s.set_device(device)?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // Peer access with the import (8.3+); 8.2 reserves the flag (must be 0) and needs
        // peer-to-peer enabled otherwise (HCCL calls rtEnableP2P, which is not done here:
        // UNTESTED on an NPU).
        // SAFETY: an out-pointer to our slot and a NUL-terminated key.
        let mut code = unsafe {
            import(
                &mut p,
                key.as_ptr(),
                ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS,
            )
        };
        if code == ACL_ERROR_INVALID_PARAM {
            // SAFETY: as above.
            code = unsafe { import(&mut p, key.as_ptr(), 0) };
        }
        s.check("aclrtIpcMemImportByKey", code)?;
        if let (MemKind::Flags, Some(t)) = (kind, s.acl.twin) {
            // acl-twin: the peer's flags are flags here too (its race checker and staging).
            // SAFETY: the imported range, `bytes` long.
            let code = unsafe { (t.aclTwinMarkSync)(p, bytes) };
            s.check("aclTwinMarkSync", code)?;
        }
        Ok(AclMemory {
            addr: p as u64,
            len: bytes,
            device,
            imported: Some(key),
            exports: Mutex::new(Vec::new()),
            shared: s.clone(),
        })
    }

    fn addr(&self, mem: &AclMemory) -> u64 {
        mem.addr
    }

    fn write(&self, mem: &AclMemory, offset: usize, data: &[u8]) -> Result<()> {
        let s = &self.shared;
        s.set_device(mem.device)?;
        // SAFETY: the host checked `offset + data.len()` against the allocation; `data` is
        // readable for its length.
        let code = unsafe {
            (s.acl.api.aclrtMemcpy)(
                (mem.addr + offset as u64) as *mut c_void,
                data.len(),
                data.as_ptr().cast(),
                data.len(),
                ACL_MEMCPY_HOST_TO_DEVICE,
            )
        };
        s.check("aclrtMemcpy", code)
    }

    fn read(&self, mem: &AclMemory, offset: usize, out: &mut [u8]) -> Result<()> {
        let s = &self.shared;
        s.set_device(mem.device)?;
        // SAFETY: as in `write`; `out` is writable for its length.
        let code = unsafe {
            (s.acl.api.aclrtMemcpy)(
                out.as_mut_ptr().cast(),
                out.len(),
                (mem.addr + offset as u64) as *const c_void,
                out.len(),
                ACL_MEMCPY_DEVICE_TO_HOST,
            )
        };
        s.check("aclrtMemcpy", code)
    }

    fn fill(&self, mem: &AclMemory, offset: usize, len: usize, value: u8) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let s = &self.shared;
        s.set_device(mem.device)?;
        // SAFETY: the host checked the range against the allocation.
        let code = unsafe {
            (s.acl.api.aclrtMemset)(
                (mem.addr + offset as u64) as *mut c_void,
                len,
                value as i32,
                len,
            )
        };
        s.check("aclrtMemset", code)
    }

    fn create_stream(&self, device: u32, _affinity: usize) -> Result<AclStream> {
        let s = &self.shared;
        s.set_device(device)?;
        let mut raw: aclrtStream = std::ptr::null_mut();
        // SAFETY: an out-pointer to our slot.
        let code = unsafe { (s.acl.api.aclrtCreateStream)(&mut raw) };
        s.check("aclrtCreateStream", code)?;
        let (tx, rx) = mpsc::channel::<Task>();
        std::thread::Builder::new()
            .name(format!("aiv-acl-dev{device}"))
            .spawn(move || {
                for task in rx {
                    task();
                }
            })
            .map_err(|e| Error::Runtime {
                call: "starting a stream thread",
                code: 0,
                message: e.to_string(),
            })?;
        Ok(AclStream {
            device,
            raw: raw as usize,
            tasks: Mutex::new(Some(tx)),
            shared: s.clone(),
        })
    }

    fn host_task(&self, stream: &AclStream, task: Task) {
        let tx = stream.tasks.lock().clone();
        match tx {
            Some(tx) => {
                if let Err(mpsc::SendError(task)) = tx.send(task) {
                    task()
                }
            }
            // A stream being dropped still runs what it is given (the trait's promise).
            None => task(),
        }
    }

    unsafe fn launch(
        &self,
        stream: &AclStream,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32> {
        super::check_args(kernel, args)?;
        let s = &self.shared;
        let (n, batch) = match blocks {
            Blocks::Exactly(n) => (n, true),
            Blocks::UpTo(n) => (n.min(A2_AIV_CORES), false),
        };
        if n == 0 || n > A2_AIV_CORES {
            return Err(Error::InvalidArgument(format!(
                "kernel `{}`: {n} blocks, the device has {A2_AIV_CORES} vector cores",
                kernel.name()
            )));
        }
        s.set_device(stream.device)?;
        let func = s.function(stream.device, kernel)? as aclrtFuncHandle;
        {
            let mut l = s.launches.lock();
            if let Some(reason) = l.aborted.clone() {
                return Err(Error::Fault(Fault::new(
                    kernel.name(),
                    stream.device,
                    None,
                    "",
                    FaultKind::PeerAborted,
                    reason,
                )));
            }
            l.running += 1;
        }
        let r = (|| {
            let mut attrs = [aclrtLaunchKernelAttr {
                id: ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE,
                value: aclrtLaunchKernelAttrValue { rsv: [0; 4] },
            }; 2];
            attrs[0].value.schemMode = if batch { ACL_RT_SCHEM_MODE_BATCH } else { 0 };
            let timeout_us = s.launch_timeout_us.load(Ordering::Relaxed);
            attrs[1].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US;
            attrs[1].value.timeoutUs = aclrtTimeoutUs {
                timeoutLow: timeout_us as u32,
                timeoutHigh: (timeout_us >> 32) as u32,
            };
            let mut cfg = aclrtLaunchKernelCfg {
                attrs: attrs.as_mut_ptr(),
                numAttrs: if timeout_us > 0 { 2 } else { 1 },
            };
            let raw = stream.raw as aclrtStream;
            let code = match s.path {
                LaunchPath::HostArgs => {
                    let launch = s
                        .acl
                        .api
                        .aclrtLaunchKernelWithHostArgs
                        .expect("HostArgs path");
                    let mut bytes = args.as_bytes().to_vec();
                    // SAFETY: the argument block is the kernel's (checked above), no
                    // placeholders; the addresses in it are the caller's contract.
                    unsafe {
                        launch(
                            func,
                            n,
                            raw,
                            &mut cfg,
                            bytes.as_mut_ptr().cast(),
                            bytes.len(),
                            std::ptr::null_mut(),
                            0,
                        )
                    }
                }
                LaunchPath::ArgsBuilder => {
                    // SAFETY: as above; each parameter's bytes are appended in order.
                    unsafe { launch_with_builder(s, func, n, raw, &mut cfg, args) }?
                }
            };
            if code != ACL_SUCCESS {
                return Err(launch_fault(s, kernel, stream.device, code));
            }
            // SAFETY: our stream.
            let code = unsafe { (s.acl.api.aclrtSynchronizeStream)(raw) };
            if code != ACL_SUCCESS {
                return Err(launch_fault(s, kernel, stream.device, code));
            }
            Ok(n)
        })();
        let mut l = s.launches.lock();
        l.running -= 1;
        if l.running == 0 {
            s.idle.notify_all();
        }
        r
    }

    fn set_launch_deadline(&self, exec_timeout: std::time::Duration) {
        // Twice the kernels' own deadline: theirs fire first and name the cause (a launch's
        // waits run one after another, each from its own start); the runtime's ends a kernel
        // that hangs outside any wait.
        let us = u64::try_from(exec_timeout.as_micros().saturating_mul(2)).unwrap_or(u64::MAX);
        self.shared.launch_timeout_us.store(us, Ordering::Relaxed);
    }

    fn signal(&self, value: u64) -> CondvarSignal {
        CondvarSignal::new(value)
    }

    fn abort(&self, reason: &str) {
        self.shared
            .launches
            .lock()
            .aborted
            .get_or_insert_with(|| reason.to_string());
    }

    fn wait_until_idle(&self) {
        let mut l = self.shared.launches.lock();
        while l.running > 0 {
            self.shared.idle.wait(&mut l);
        }
    }
}

/// A launch's failure: a fault of `kernel` with the runtime's code and text.
fn launch_fault(s: &Shared, kernel: &Kernel, device: u32, code: aclError) -> Error {
    Error::Fault(Fault::new(
        kernel.name(),
        device,
        None,
        "",
        fault_kind(code),
        format!("ACL error {code}: {}", s.acl.api.recent_error()),
    ))
}

/// Launches through the argument builder (CANN 8.2, 8.3): each parameter of `args` appended.
///
/// # Safety
/// `func` is a live function handle whose kernel takes `args`; `cfg` is valid.
unsafe fn launch_with_builder(
    s: &Shared,
    func: aclrtFuncHandle,
    n: u32,
    stream: aclrtStream,
    cfg: &mut aclrtLaunchKernelCfg,
    args: &ArgBlock,
) -> Result<aclError> {
    let api = &s.acl.api;
    let (init, append, finalize, launch) = (
        api.aclrtKernelArgsInit.expect("ArgsBuilder path"),
        api.aclrtKernelArgsAppend.expect("ArgsBuilder path"),
        api.aclrtKernelArgsFinalize.expect("ArgsBuilder path"),
        api.aclrtLaunchKernelWithConfig.expect("ArgsBuilder path"),
    );
    let mut h: aclrtArgsHandle = std::ptr::null_mut();
    // SAFETY: a live function handle, an out-pointer to our slot.
    s.check("aclrtKernelArgsInit", unsafe { init(func, &mut h) })?;
    let bytes = args.as_bytes();
    for (p, &at) in args.params().iter().zip(args.offsets()) {
        let mut param = bytes[at..at + p.size as usize].to_vec();
        let mut ph: aclrtParamHandle = std::ptr::null_mut();
        // SAFETY: `param` is readable for its length; an out-pointer to our slot.
        let code = unsafe { append(h, param.as_mut_ptr().cast(), param.len(), &mut ph) };
        s.check("aclrtKernelArgsAppend", code)?;
    }
    // SAFETY: the handle made above.
    s.check("aclrtKernelArgsFinalize", unsafe { finalize(h) })?;
    // SAFETY: the function's contract.
    Ok(unsafe { launch(func, n, stream, cfg, h, std::ptr::null_mut()) })
}
