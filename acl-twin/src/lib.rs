//! acl-twin: an ACL runtime (`libascendcl.so`) implemented over aiv-comm's CPU twin.
//!
//! An ACL host program (or aiv-comm's ACL backend) run with this library on its loader path
//! (`LD_LIBRARY_PATH=<dir of libascendcl.so>`) gets a machine of `ACL_TWIN_DEVICES` devices
//! (default 32, as many as an aiv-comm world may have ranks) whose kernels run on the twin, checkers included (the
//! twin's `AIV_TWIN_*` variables apply).
//!
//! What it implements, with the documented prototypes, status codes and
//! `aclGetRecentErrMsg` text: init/finalize; devices (`aclrtSetDevice` binds a device to the
//! calling thread, as a context); streams (a host thread each, tasks in order; the null
//! stream is the device's default stream); events; device and pinned-host memory; synchronous
//! and asynchronous copies and memsets; binaries and kernels ([`binary`] says what a binary
//! is here); the launch calls of CANN 8.2+ ([`launch`] says what it assumes where the docs are
//! silent); IPC export/import, within the process and between processes of one user ([`ipc`]);
//! the package version queries (`aclsysGetVersionStr`, `aclsysGetCANNVersion`).
//!
//! **Its version.** acl-twin is not a CANN release and does not claim one: asked for the
//! version of the runtime package (`aclsysGetVersionStr("runtime")`, `aclsysGetCANNVersion`
//! with `ACL_PKG_NAME_RUNTIME`) or of CANN as a whole (`ACL_PKG_NAME_CANN`) it reports its own,
//! [`VERSION`]: "acl-twin " and this crate's version (e.g. "acl-twin 0.1.0"; in the parts of
//! `aclCANNPackageVersion`, the crate's major, minor and patch numbers, release "0", the
//! documented filler for a part there is none of). Every other package (compiler, HCCL,
//! driver, ...) is not installed: `ACL_ERROR_INVALID_FILE`, the code pyACL's page documents
//! for that. The queries need no `aclInit` (the documentation asks for none).
//!
//! A bad argument (a null pointer, `count > destMax`, a freed or foreign pointer or handle, an
//! unknown kernel, a device out of range, arguments of the wrong size) returns its error
//! code; nothing here unwinds into C.
//!
//! Three functions are acl-twin's own, absent from CANN (a program finds the first two with
//! `dlsym`; the third is what the twin's build of an `.asc` program calls):
//! - `aclError aclTwinMarkSync(void *devPtr, size_t size)`: marks device memory as flag
//!   memory for the twin's race checker (stores are releases, loads acquires), as the twin's
//!   `alloc_sync` does;
//! - `aclError aclTwinLaunchStats(uint64_t *launches, uint64_t *batch)`: kernel launches so
//!   far, and how many asked for batch scheduling;
//! - `aclError aclTwinLaunchChevron(...)`: a kernel launch written `kernel<<<blocks, dynUBufSize,
//!   stream>>>(args...)` in an AscendC program, as the twin's headers (`asc_twin_chevron.h`)
//!   turn it into a call (see [`aclTwinLaunchChevron`]).

#![allow(non_snake_case)]

pub mod binary;
mod fail;
pub mod ipc;
pub mod launch;
mod runtime;
mod stream;

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ascendc_sys::*;

use crate::fail::{call, fail, non_null, R};
use crate::runtime::{lookup, rt, Runtime};
use crate::stream::{Event, Stream};

/// The SoC name acl-twin reports.
const SOC_NAME: &CStr = c"Ascend910B-acl-twin";

/// The stream `s` names for the calling thread (null: its device's default stream).
fn stream_of(rt: &Runtime, s: aclrtStream) -> R<Arc<Stream>> {
    let (dev, _) = rt.current()?;
    let stream = if s.is_null() {
        let mut d = rt.handles.default_streams.lock();
        match d.get(&dev) {
            Some(s) => s.clone(),
            None => {
                let s = Stream::new(dev)?;
                d.insert(dev, s.clone());
                s
            }
        }
    } else {
        lookup(&rt.handles.streams, s, "stream")?
    };
    if stream.device != dev {
        return fail(
            ACL_ERROR_RT_STREAM_CONTEXT,
            format!(
                "the stream belongs to device {}, the calling thread's device is {dev}",
                stream.device
            ),
        );
    }
    Ok(stream)
}

/// # Safety
/// `p` is null or a NUL-terminated string.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> R<&'a CStr> {
    non_null(p, what)?;
    // SAFETY: the caller's contract.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// `aclInit`: `configPath` may be null or name a readable file (its contents are ignored).
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclInit(configPath: *const c_char) -> aclError {
    call("aclInit", || {
        if !configPath.is_null() {
            // SAFETY: a non-null path is NUL-terminated (the function's contract).
            let p = unsafe { CStr::from_ptr(configPath) }
                .to_string_lossy()
                .into_owned();
            if !p.is_empty() && std::fs::metadata(&p).is_err() {
                return fail(
                    ACL_ERROR_INVALID_FILE,
                    format!("config file `{p}` cannot be read"),
                );
            }
        }
        runtime::init()
    })
}

/// `aclFinalize`: waits for every stream's work.
#[no_mangle]
pub extern "C" fn aclFinalize() -> aclError {
    call("aclFinalize", runtime::finalize)
}

/// `aclGetRecentErrMsg`: the calling thread's latest error text, null if none since the last
/// call.
#[no_mangle]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    fail::take_recent()
}

/// `aclrtGetSocName`.
#[no_mangle]
pub extern "C" fn aclrtGetSocName() -> *const c_char {
    SOC_NAME.as_ptr()
}

/// The version acl-twin reports for the runtime package and for CANN (see the crate docs).
pub const VERSION: &str = concat!("acl-twin ", env!("CARGO_PKG_VERSION"));

/// Copies `text` into the C string field `field`, cut to fit, NUL-terminated.
fn set_field(field: &mut [c_char], text: &str) {
    let n = text.len().min(field.len() - 1);
    for (d, &b) in field.iter_mut().zip(&text.as_bytes()[..n]) {
        *d = b as c_char;
    }
    field[n] = 0;
}

/// `aclsysGetVersionStr`: for `runtime` (the package `libascendcl.so` is part of), acl-twin's
/// [`VERSION`]; any other package is not installed (`ACL_ERROR_INVALID_FILE`).
///
/// # Safety
/// As the ACL documentation states for this function: `pkgName` a NUL-terminated string,
/// `versionStr` a buffer of `ACL_PKG_VERSION_MAX_SIZE` bytes (only the version and its NUL
/// are written).
#[no_mangle]
pub unsafe extern "C" fn aclsysGetVersionStr(
    pkgName: *mut c_char,
    versionStr: *mut c_char,
) -> aclError {
    call("aclsysGetVersionStr", || {
        // SAFETY: non-null names are NUL-terminated (the function's contract).
        let name = unsafe { c_str(pkgName, "pkgName") }?;
        non_null(versionStr, "versionStr")?;
        if name != RUNTIME_PACKAGE {
            return fail(
                ACL_ERROR_INVALID_FILE,
                format!(
                    "package `{}` is not installed (acl-twin is the `runtime` package only)",
                    name.to_string_lossy()
                ),
            );
        }
        // SAFETY: non-null, the caller's buffer of ACL_PKG_VERSION_MAX_SIZE bytes, of which
        // the version and its NUL (fewer) are written.
        let out = unsafe {
            std::slice::from_raw_parts_mut(
                versionStr,
                (VERSION.len() + 1).min(ACL_PKG_VERSION_MAX_SIZE),
            )
        };
        set_field(out, VERSION);
        Ok(())
    })
}

/// `aclsysGetCANNVersion` (deprecated since CANN 8.5 for `aclsysGetVersionStr`): for
/// `ACL_PKG_NAME_CANN` and `ACL_PKG_NAME_RUNTIME`, acl-twin's [`VERSION`] and its parts; any
/// other package is not installed (`ACL_ERROR_INVALID_FILE`, as documented), a value that is
/// no `aclCANNPackageName` is `ACL_ERROR_INVALID_PARAM`.
///
/// # Safety
/// As the ACL documentation states for this function: `version` points to an
/// `aclCANNPackageVersion`.
#[no_mangle]
pub unsafe extern "C" fn aclsysGetCANNVersion(
    name: aclCANNPackageName,
    version: *mut aclCANNPackageVersion,
) -> aclError {
    call("aclsysGetCANNVersion", || {
        non_null(version, "version")?;
        match name {
            ACL_PKG_NAME_CANN | ACL_PKG_NAME_RUNTIME => {}
            ACL_PKG_NAME_COMPILER..=ACL_PKG_NAME_DRIVER => {
                return fail(
                    ACL_ERROR_INVALID_FILE,
                    format!("package {name} is not installed (acl-twin is the runtime only)"),
                )
            }
            _ => {
                return fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!("name {name} is not an aclCANNPackageName"),
                )
            }
        }
        let mut v = aclCANNPackageVersion::default();
        set_field(&mut v.version, VERSION);
        set_field(&mut v.majorVersion, env!("CARGO_PKG_VERSION_MAJOR"));
        set_field(&mut v.minorVersion, env!("CARGO_PKG_VERSION_MINOR"));
        set_field(&mut v.releaseVersion, "0");
        set_field(&mut v.patchVersion, env!("CARGO_PKG_VERSION_PATCH"));
        // SAFETY: non-null, the caller's aclCANNPackageVersion.
        unsafe { version.write(v) };
        Ok(())
    })
}

/// `aclrtGetDeviceCount`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtGetDeviceCount(count: *mut u32) -> aclError {
    call("aclrtGetDeviceCount", || {
        non_null(count, "count")?;
        let n = rt()?.device_count();
        // SAFETY: non-null, the caller's u32.
        unsafe { *count = n };
        Ok(())
    })
}

/// `aclrtSetDevice`.
#[no_mangle]
pub extern "C" fn aclrtSetDevice(deviceId: i32) -> aclError {
    call("aclrtSetDevice", || runtime::set_device(deviceId))
}

/// `aclrtResetDevice`.
#[no_mangle]
pub extern "C" fn aclrtResetDevice(deviceId: i32) -> aclError {
    call("aclrtResetDevice", || runtime::reset_device(deviceId))
}

/// `aclrtGetDevice`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtGetDevice(deviceId: *mut i32) -> aclError {
    call("aclrtGetDevice", || {
        non_null(deviceId, "deviceId")?;
        let (d, _) = rt()?.current()?;
        // SAFETY: non-null, the caller's i32.
        unsafe { *deviceId = d as i32 };
        Ok(())
    })
}

/// `aclrtDeviceCanAccessPeer`: 1 for two different devices of this runtime.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtDeviceCanAccessPeer(
    canAccessPeer: *mut i32,
    deviceId: i32,
    peerDeviceId: i32,
) -> aclError {
    call("aclrtDeviceCanAccessPeer", || {
        non_null(canAccessPeer, "canAccessPeer")?;
        let rt = rt()?;
        rt.device(deviceId)?;
        rt.device(peerDeviceId)?;
        // SAFETY: non-null, the caller's slot.
        unsafe { *canAccessPeer = (deviceId != peerDeviceId) as i32 };
        Ok(())
    })
}

/// `aclrtDeviceEnablePeerAccess`: the calling thread's device may access `peerDeviceId`'s
/// memory. Recorded and checked (a device out of range, the device itself, flags other than
/// 0 are refused); the twin lets any kernel reach any device's memory either way.
#[no_mangle]
pub extern "C" fn aclrtDeviceEnablePeerAccess(peerDeviceId: i32, flags: u32) -> aclError {
    call("aclrtDeviceEnablePeerAccess", || {
        let rt = rt()?;
        let (me, _) = rt.current()?;
        rt.device(peerDeviceId)?;
        if flags != 0 {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("flags {flags} (must be 0)"),
            );
        }
        if peerDeviceId == me as i32 {
            return fail(ACL_ERROR_INVALID_PARAM, "a device cannot be its own peer");
        }
        Ok(())
    })
}

/// `aclrtCreateStream`: a stream of the calling thread's device.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateStream(stream: *mut aclrtStream) -> aclError {
    call("aclrtCreateStream", || {
        non_null(stream, "stream")?;
        let rt = rt()?;
        let (dev, _) = rt.current()?;
        let s = Stream::new(dev)?;
        let h = rt.handles.fresh();
        rt.handles.streams.lock().insert(h, s);
        // SAFETY: non-null, the caller's handle slot.
        unsafe { *stream = h as aclrtStream };
        Ok(())
    })
}

/// `aclrtDestroyStream`: lets its queued work finish first.
#[no_mangle]
pub extern "C" fn aclrtDestroyStream(stream: aclrtStream) -> aclError {
    call("aclrtDestroyStream", || {
        let rt = rt()?;
        let s = lookup(&rt.handles.streams, stream, "stream")?;
        rt.handles.streams.lock().remove(&(stream as usize));
        s.stop();
        Ok(())
    })
}

/// `aclrtSynchronizeStream`: the first failure of its tasks since the last synchronisation.
#[no_mangle]
pub extern "C" fn aclrtSynchronizeStream(stream: aclrtStream) -> aclError {
    call("aclrtSynchronizeStream", || {
        stream_of(&*rt()?, stream)?.synchronize(None)
    })
}

/// `aclrtSynchronizeStreamWithTimeout`: `timeout` in milliseconds, -1 without end.
#[no_mangle]
pub extern "C" fn aclrtSynchronizeStreamWithTimeout(stream: aclrtStream, timeout: i32) -> aclError {
    call("aclrtSynchronizeStreamWithTimeout", || {
        let t = match timeout {
            -1 => None,
            t if t > 0 => Some(Duration::from_millis(t as u64)),
            t => {
                return fail(
                    ACL_ERROR_INVALID_PARAM,
                    format!("timeout {t} ms (-1 or more than 0)"),
                )
            }
        };
        stream_of(&*rt()?, stream)?.synchronize(t)
    })
}

/// `aclrtCreateEvent`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateEvent(event: *mut aclrtEvent) -> aclError {
    call("aclrtCreateEvent", || {
        non_null(event, "event")?;
        let rt = rt()?;
        rt.current()?;
        let h = rt.handles.fresh();
        rt.handles
            .events
            .lock()
            .insert(h, Arc::new(Event::default()));
        // SAFETY: non-null, the caller's handle slot.
        unsafe { *event = h as aclrtEvent };
        Ok(())
    })
}

/// `aclrtDestroyEvent`.
#[no_mangle]
pub extern "C" fn aclrtDestroyEvent(event: aclrtEvent) -> aclError {
    call("aclrtDestroyEvent", || {
        let rt = rt()?;
        lookup(&rt.handles.events, event, "event")?;
        rt.handles.events.lock().remove(&(event as usize));
        Ok(())
    })
}

/// `aclrtRecordEvent`.
#[no_mangle]
pub extern "C" fn aclrtRecordEvent(event: aclrtEvent, stream: aclrtStream) -> aclError {
    call("aclrtRecordEvent", || {
        let rt = rt()?;
        let e = lookup(&rt.handles.events, event, "event")?;
        e.record(&*stream_of(&rt, stream)?)
    })
}

/// `aclrtStreamWaitEvent`: the stream waits for the event's latest record enqueued so far.
#[no_mangle]
pub extern "C" fn aclrtStreamWaitEvent(stream: aclrtStream, event: aclrtEvent) -> aclError {
    call("aclrtStreamWaitEvent", || {
        let rt = rt()?;
        let e = lookup(&rt.handles.events, event, "event")?;
        e.wait_on(&*stream_of(&rt, stream)?)
    })
}

/// `aclrtSynchronizeEvent`.
#[no_mangle]
pub extern "C" fn aclrtSynchronizeEvent(event: aclrtEvent) -> aclError {
    call("aclrtSynchronizeEvent", || {
        let rt = rt()?;
        lookup(&rt.handles.events, event, "event")?.synchronize();
        Ok(())
    })
}

/// `aclrtQueryEventStatus`: `ACL_EVENT_RECORDED_STATUS_COMPLETE` (1) or `..._NOT_READY` (0).
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtQueryEventStatus(event: aclrtEvent, status: *mut i32) -> aclError {
    call("aclrtQueryEventStatus", || {
        non_null(status, "status")?;
        let rt = rt()?;
        let done = lookup(&rt.handles.events, event, "event")?.complete();
        // SAFETY: non-null, the caller's status slot.
        unsafe { *status = done as i32 };
        Ok(())
    })
}

/// `aclrtMalloc`: zeroed device memory of the calling thread's device (the policy is
/// accepted and ignored).
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtMalloc(
    devPtr: *mut *mut c_void,
    size: usize,
    _policy: i32,
) -> aclError {
    call("aclrtMalloc", || {
        non_null(devPtr, "devPtr")?;
        let a = rt()?.malloc(size)?;
        // SAFETY: non-null, the caller's pointer slot.
        unsafe { *devPtr = a as *mut c_void };
        Ok(())
    })
}

/// `aclrtFree`.
#[no_mangle]
pub extern "C" fn aclrtFree(devPtr: *mut c_void) -> aclError {
    call("aclrtFree", || {
        non_null(devPtr, "devPtr")?;
        rt()?.free(devPtr as usize)
    })
}

/// `aclrtMallocHost`: ordinary host memory (64-byte aligned).
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtMallocHost(hostPtr: *mut *mut c_void, size: usize) -> aclError {
    call("aclrtMallocHost", || {
        non_null(hostPtr, "hostPtr")?;
        let rt = rt()?;
        if size == 0 {
            return fail(ACL_ERROR_INVALID_PARAM, "size 0");
        }
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: posix_memalign writes `p` on success.
        if unsafe { libc::posix_memalign(&mut p, 64, size) } != 0 {
            return fail(
                ACL_ERROR_BAD_ALLOC,
                format!("cannot allocate {size} bytes of host memory"),
            );
        }
        rt.handles.host_allocs.lock().insert(p as usize);
        // SAFETY: non-null, the caller's pointer slot.
        unsafe { *hostPtr = p };
        Ok(())
    })
}

/// `aclrtFreeHost`: a pointer `aclrtMallocHost` did not give out (or one freed already) is
/// refused.
// Safe for any pointer: it is freed only if it is in the table of live host allocations.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[no_mangle]
pub extern "C" fn aclrtFreeHost(hostPtr: *mut c_void) -> aclError {
    call("aclrtFreeHost", || {
        non_null(hostPtr, "hostPtr")?;
        if !rt()?.handles.host_allocs.lock().remove(&(hostPtr as usize)) {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("{hostPtr:p} is not host memory aclrtMallocHost gave out, or it was freed already"),
            );
        }
        // SAFETY: memory posix_memalign gave out (it was in the table), freed once (removed).
        unsafe { libc::free(hostPtr) };
        Ok(())
    })
}

/// One checked copy: where from and to.
enum Copy {
    H2H,
    H2D(Arc<ascendc_twin::GmBuffer>, usize),
    D2H(Arc<ascendc_twin::GmBuffer>, usize),
    D2D(
        Arc<ascendc_twin::GmBuffer>,
        usize,
        Arc<ascendc_twin::GmBuffer>,
        usize,
    ),
}

/// Checks a copy's arguments (`kind` as `aclrtMemcpyKind`; `ACL_MEMCPY_DEFAULT` infers it).
fn plan_copy(
    rt: &Runtime,
    dst: usize,
    dest_max: usize,
    src: usize,
    count: usize,
    kind: i32,
) -> R<Copy> {
    non_null(dst as *const u8, "dst")?;
    non_null(src as *const u8, "src")?;
    if count > dest_max {
        return fail(
            ACL_ERROR_RT_PARAM_INVALID,
            format!("count {count} is more than destMax {dest_max}"),
        );
    }
    let kind = match kind {
        ACL_MEMCPY_DEFAULT => match (rt.is_device(src), rt.is_device(dst)) {
            (false, false) => ACL_MEMCPY_HOST_TO_HOST,
            (false, true) => ACL_MEMCPY_HOST_TO_DEVICE,
            (true, false) => ACL_MEMCPY_DEVICE_TO_HOST,
            (true, true) => ACL_MEMCPY_DEVICE_TO_DEVICE,
        },
        k => k,
    };
    Ok(match kind {
        ACL_MEMCPY_HOST_TO_HOST => Copy::H2H,
        ACL_MEMCPY_HOST_TO_DEVICE => {
            let (b, o) = rt.locate(dst, count, "dst")?;
            Copy::H2D(b, o)
        }
        ACL_MEMCPY_DEVICE_TO_HOST => {
            let (b, o) = rt.locate(src, count, "src")?;
            Copy::D2H(b, o)
        }
        ACL_MEMCPY_DEVICE_TO_DEVICE => {
            let (sb, so) = rt.locate(src, count, "src")?;
            let (db, d) = rt.locate(dst, count, "dst")?;
            Copy::D2D(sb, so, db, d)
        }
        k => {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("copy kind {k} (acl-twin supports 0-4)"),
            )
        }
    })
}

/// Runs a checked copy.
///
/// # Safety
/// For host sides, `[src, src + count)` is readable and `[dst, dst + count)` writable.
unsafe fn run_copy(c: Copy, dst: usize, src: usize, count: usize) -> R<()> {
    let err = |e: ascendc_twin::TwinError| {
        Err(fail::Fail {
            code: ACL_ERROR_RT_INTERNAL_ERROR,
            msg: e.to_string(),
        })
    };
    match c {
        // SAFETY: the caller's contract; `copy` allows overlap.
        Copy::H2H => unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, count) },
        Copy::H2D(b, o) => {
            // SAFETY: the caller's contract.
            let data = unsafe { std::slice::from_raw_parts(src as *const u8, count) };
            b.write(o, data).or_else(err)?
        }
        Copy::D2H(b, o) => {
            // SAFETY: the caller's contract.
            let out = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, count) };
            b.read(o, out).or_else(err)?
        }
        Copy::D2D(sb, so, db, d) => {
            let mut tmp = vec![0u8; count];
            sb.read(so, &mut tmp).or_else(err)?;
            db.write(d, &tmp).or_else(err)?
        }
    }
    Ok(())
}

/// `aclrtMemcpy`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtMemcpy(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> aclError {
    call("aclrtMemcpy", || {
        let c = plan_copy(&*rt()?, dst as usize, destMax, src as usize, count, kind)?;
        // SAFETY: the caller's contract for the host sides; device sides were checked.
        unsafe { run_copy(c, dst as usize, src as usize, count) }
    })
}

/// `aclrtMemcpyAsync`: host memory is read or written when the copy runs on the stream.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtMemcpyAsync(
    dst: *mut c_void,
    destMax: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
    stream: aclrtStream,
) -> aclError {
    call("aclrtMemcpyAsync", || {
        let rt = rt()?;
        let c = plan_copy(&rt, dst as usize, destMax, src as usize, count, kind)?;
        let (d, s) = (dst as usize, src as usize);
        stream_of(&rt, stream)?.push(Box::new(move || {
            // SAFETY: the caller keeps host memory valid until the copy has run (ACL's rule).
            unsafe { run_copy(c, d, s, count) }
        }))
    })
}

/// Checks a memset's arguments.
fn plan_set(
    rt: &Runtime,
    ptr: usize,
    max: usize,
    count: usize,
) -> R<(Arc<ascendc_twin::GmBuffer>, usize)> {
    non_null(ptr as *const u8, "devPtr")?;
    if count > max {
        return fail(
            ACL_ERROR_RT_PARAM_INVALID,
            format!("count {count} is more than maxCount {max}"),
        );
    }
    rt.locate(ptr, count, "devPtr")
}

/// `aclrtMemset`: `value`'s low byte.
#[no_mangle]
pub extern "C" fn aclrtMemset(
    devPtr: *mut c_void,
    maxCount: usize,
    value: i32,
    count: usize,
) -> aclError {
    call("aclrtMemset", || {
        let (b, o) = plan_set(&*rt()?, devPtr as usize, maxCount, count)?;
        b.fill(o, count, value as u8)
            .or_else(|e| fail(ACL_ERROR_RT_INTERNAL_ERROR, e.to_string()))
    })
}

/// `aclrtMemsetAsync`.
#[no_mangle]
pub extern "C" fn aclrtMemsetAsync(
    devPtr: *mut c_void,
    maxCount: usize,
    value: i32,
    count: usize,
    stream: aclrtStream,
) -> aclError {
    call("aclrtMemsetAsync", || {
        let rt = rt()?;
        let (b, o) = plan_set(&rt, devPtr as usize, maxCount, count)?;
        stream_of(&rt, stream)?.push(Box::new(move || {
            b.fill(o, count, value as u8)
                .or_else(|e| fail(ACL_ERROR_RT_INTERNAL_ERROR, e.to_string()))
        }))
    })
}

fn register_binary(rt: &Runtime, b: binary::Binary, out: *mut aclrtBinHandle) {
    let h = rt.handles.fresh();
    rt.handles.binaries.lock().insert(h, Arc::new(b));
    // SAFETY: checked non-null by the callers, the caller's handle slot.
    unsafe { *out = h as aclrtBinHandle };
}

/// `aclrtBinaryLoadFromFile` ([`binary`] says what a binary is).
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtBinaryLoadFromFile(
    binPath: *const c_char,
    _options: *mut aclrtBinaryLoadOptions,
    binHandle: *mut aclrtBinHandle,
) -> aclError {
    call("aclrtBinaryLoadFromFile", || {
        non_null(binHandle, "binHandle")?;
        // SAFETY: the function's contract.
        let path = unsafe { c_str(binPath, "binPath")? };
        let rt = rt()?;
        rt.current()?;
        let b = binary::Binary::from_file(path)?;
        register_binary(&rt, b, binHandle);
        Ok(())
    })
}

/// `aclrtBinaryLoadFromData`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtBinaryLoadFromData(
    data: *const c_void,
    length: usize,
    _options: *const aclrtBinaryLoadOptions,
    binHandle: *mut aclrtBinHandle,
) -> aclError {
    call("aclrtBinaryLoadFromData", || {
        non_null(binHandle, "binHandle")?;
        non_null(data, "data")?;
        if length == 0 {
            return fail(ACL_ERROR_INVALID_PARAM, "length 0");
        }
        let rt = rt()?;
        rt.current()?;
        // SAFETY: the function's contract: `length` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, length) };
        let b = binary::Binary::from_data(bytes)?;
        register_binary(&rt, b, binHandle);
        Ok(())
    })
}

/// `aclrtBinaryUnLoad`.
#[no_mangle]
pub extern "C" fn aclrtBinaryUnLoad(binHandle: aclrtBinHandle) -> aclError {
    call("aclrtBinaryUnLoad", || {
        let rt = rt()?;
        binary::binary(&rt, binHandle)?;
        rt.handles.binaries.lock().remove(&(binHandle as usize));
        rt.handles
            .functions
            .lock()
            .retain(|_, f| f.binary != binHandle as usize);
        Ok(())
    })
}

/// `aclrtBinaryGetFunction`: `ACL_ERROR_RT_KERNEL_LOOKUP` for a name the binary lacks.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtBinaryGetFunction(
    binHandle: aclrtBinHandle,
    kernelName: *const c_char,
    funcHandle: *mut aclrtFuncHandle,
) -> aclError {
    call("aclrtBinaryGetFunction", || {
        non_null(funcHandle, "funcHandle")?;
        // SAFETY: the function's contract.
        let name = unsafe { c_str(kernelName, "kernelName")? };
        let rt = rt()?;
        let b = binary::binary(&rt, binHandle)?;
        let f = b.function(&name.to_string_lossy(), binHandle as usize)?;
        let h = rt.handles.fresh();
        rt.handles.functions.lock().insert(h, Arc::new(f));
        // SAFETY: non-null, the caller's handle slot.
        unsafe { *funcHandle = h as aclrtFuncHandle };
        Ok(())
    })
}

fn function(rt: &Runtime, f: aclrtFuncHandle) -> R<Arc<binary::Function>> {
    lookup(&rt.handles.functions, f, "function handle")
}

/// Runs `f` on the builder `h`.
fn with_args<T>(
    rt: &Runtime,
    h: aclrtArgsHandle,
    f: impl FnOnce(&mut launch::ArgsBuilder) -> R<T>,
) -> R<T> {
    let mut table = rt.handles.args.lock();
    match table.get_mut(&(h as usize)) {
        Some(b) => f(b),
        None if h.is_null() => fail(ACL_ERROR_INVALID_PARAM, "argsHandle is null"),
        None => fail(
            ACL_ERROR_RT_INVALID_HANDLE,
            format!("{h:p} is not a live argument list (a launch consumes it)"),
        ),
    }
}

/// `aclrtKernelArgsInit`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtKernelArgsInit(
    funcHandle: aclrtFuncHandle,
    argsHandle: *mut aclrtArgsHandle,
) -> aclError {
    call("aclrtKernelArgsInit", || {
        non_null(argsHandle, "argsHandle")?;
        let rt = rt()?;
        let f = function(&rt, funcHandle)?;
        let h = rt.handles.fresh();
        rt.handles
            .args
            .lock()
            .insert(h, launch::ArgsBuilder::new(f));
        // SAFETY: non-null, the caller's handle slot.
        unsafe { *argsHandle = h as aclrtArgsHandle };
        Ok(())
    })
}

/// A parameter handle: its index in the list, plus one (never null).
fn param_handle(index: usize) -> aclrtParamHandle {
    (index + 1) as aclrtParamHandle
}

/// `aclrtKernelArgsAppend`: copies `paramSize` bytes at `param`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtKernelArgsAppend(
    argsHandle: aclrtArgsHandle,
    param: *mut c_void,
    paramSize: usize,
    paramHandle: *mut aclrtParamHandle,
) -> aclError {
    call("aclrtKernelArgsAppend", || {
        non_null(param, "param")?;
        non_null(paramHandle, "paramHandle")?;
        // SAFETY: the function's contract: `paramSize` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(param as *const u8, paramSize) };
        let i = with_args(&*rt()?, argsHandle, |b| b.append(bytes))?;
        // SAFETY: non-null, the caller's handle slot.
        unsafe { *paramHandle = param_handle(i) };
        Ok(())
    })
}

/// `aclrtKernelArgsAppendPlaceHolder`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtKernelArgsAppendPlaceHolder(
    argsHandle: aclrtArgsHandle,
    paramHandle: *mut aclrtParamHandle,
) -> aclError {
    call("aclrtKernelArgsAppendPlaceHolder", || {
        non_null(paramHandle, "paramHandle")?;
        let i = with_args(&*rt()?, argsHandle, |b| b.append_placeholder())?;
        // SAFETY: non-null, the caller's handle slot.
        unsafe { *paramHandle = param_handle(i) };
        Ok(())
    })
}

/// `aclrtKernelArgsGetPlaceHolderBuffer`: a host buffer of `dataSize` bytes owned by the
/// argument list, copied to the device at the launch.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtKernelArgsGetPlaceHolderBuffer(
    argsHandle: aclrtArgsHandle,
    paramHandle: aclrtParamHandle,
    dataSize: usize,
    bufferAddr: *mut *mut c_void,
) -> aclError {
    call("aclrtKernelArgsGetPlaceHolderBuffer", || {
        non_null(bufferAddr, "bufferAddr")?;
        let index = (paramHandle as usize).wrapping_sub(1);
        let p = with_args(&*rt()?, argsHandle, |b| {
            b.placeholder_buffer(index, dataSize)
        })?;
        // SAFETY: non-null, the caller's pointer slot.
        unsafe { *bufferAddr = p };
        Ok(())
    })
}

/// `aclrtKernelArgsFinalize`.
#[no_mangle]
pub extern "C" fn aclrtKernelArgsFinalize(argsHandle: aclrtArgsHandle) -> aclError {
    call("aclrtKernelArgsFinalize", || {
        with_args(&*rt()?, argsHandle, |b| b.finalize())
    })
}

/// `aclrtLaunchKernelWithConfig`: consumes the argument list.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtLaunchKernelWithConfig(
    funcHandle: aclrtFuncHandle,
    numBlocks: u32,
    stream: aclrtStream,
    cfg: *mut aclrtLaunchKernelCfg,
    argsHandle: aclrtArgsHandle,
    reserve: *mut c_void,
) -> aclError {
    call("aclrtLaunchKernelWithConfig", || {
        if !reserve.is_null() {
            return fail(ACL_ERROR_INVALID_PARAM, "reserve must be null");
        }
        let rt = rt()?;
        let f = function(&rt, funcHandle)?;
        let s = stream_of(&rt, stream)?;
        // SAFETY: the function's contract on `cfg`.
        let attrs = unsafe { launch::attrs(cfg)? };
        with_args(&rt, argsHandle, |_| Ok(()))?;
        // Taken out of the table: the launch consumes it (another thread may have taken it
        // since the check above).
        let Some(builder) = rt.handles.args.lock().remove(&(argsHandle as usize)) else {
            return fail(
                ACL_ERROR_RT_INVALID_HANDLE,
                "the argument list was consumed meanwhile",
            );
        };
        let (bf, args) = builder.into_args()?;
        if !Arc::ptr_eq(&bf, &f) && bf.kernel.name() != f.kernel.name() {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!(
                    "the argument list was built for kernel `{}`, the launch is of `{}`",
                    bf.kernel.name(),
                    f.kernel.name()
                ),
            );
        }
        launch::launch(&rt, &f, numBlocks, &s, attrs, args)
    })
}

/// `aclrtLaunchKernelWithHostArgs`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtLaunchKernelWithHostArgs(
    funcHandle: aclrtFuncHandle,
    numBlocks: u32,
    stream: aclrtStream,
    cfg: *mut aclrtLaunchKernelCfg,
    hostArgs: *mut c_void,
    argsSize: usize,
    placeHolderArray: *mut aclrtPlaceHolderInfo,
    placeHolderNum: usize,
) -> aclError {
    call("aclrtLaunchKernelWithHostArgs", || {
        let rt = rt()?;
        let f = function(&rt, funcHandle)?;
        let s = stream_of(&rt, stream)?;
        // SAFETY: the function's contract on `cfg`.
        let attrs = unsafe { launch::attrs(cfg)? };
        let host: &[u8] = if argsSize == 0 {
            &[]
        } else {
            non_null(hostArgs, "hostArgs")?;
            // SAFETY: the function's contract: `argsSize` readable bytes.
            unsafe { std::slice::from_raw_parts(hostArgs as *const u8, argsSize) }
        };
        let ph: &[aclrtPlaceHolderInfo] = if placeHolderNum == 0 {
            &[]
        } else {
            non_null(placeHolderArray, "placeHolderArray")?;
            // SAFETY: the function's contract: `placeHolderNum` entries.
            unsafe { std::slice::from_raw_parts(placeHolderArray, placeHolderNum) }
        };
        let args = launch::Args::from_host(host, ph)?;
        launch::launch(&rt, &f, numBlocks, &s, attrs, args)
    })
}

/// `aclrtIpcMemGetExportKey`: `devPtr` must start an allocation, `size` at most its length,
/// `len` at least 65.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtIpcMemGetExportKey(
    devPtr: *mut c_void,
    size: usize,
    key: *mut c_char,
    len: usize,
    flags: u64,
) -> aclError {
    call("aclrtIpcMemGetExportKey", || {
        non_null(key, "key")?;
        non_null(devPtr, "devPtr")?;
        if len < ACL_IPC_KEY_LEN {
            return fail(
                ACL_ERROR_INVALID_PARAM,
                format!("key length {len} (it must hold {ACL_IPC_KEY_LEN} bytes)"),
            );
        }
        let rt = rt()?;
        let (_, off) = rt.locate(devPtr as usize, size.max(1), "devPtr")?;
        if off != 0 || size == 0 {
            return fail(ACL_ERROR_INVALID_PARAM, "only whole allocations can be exported (devPtr as aclrtMalloc returned it, size > 0)");
        }
        let k = rt
            .handles
            .ipc
            .lock()
            .export(&rt.space, devPtr as usize, size, flags)?;
        let bytes = k.as_bytes();
        // SAFETY: `key` holds `len` >= 65 bytes; keys are shorter than 64.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), key as *mut u8, bytes.len());
            *key.add(bytes.len()) = 0;
        }
        Ok(())
    })
}

/// `aclrtIpcMemSetImportPid`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtIpcMemSetImportPid(
    key: *const c_char,
    pid: *mut i32,
    num: usize,
) -> aclError {
    call("aclrtIpcMemSetImportPid", || {
        // SAFETY: the function's contract.
        let k = unsafe { c_str(key, "key")? }.to_string_lossy().into_owned();
        non_null(pid, "pid")?;
        if num == 0 {
            return fail(ACL_ERROR_INVALID_PARAM, "num 0");
        }
        // SAFETY: the function's contract: `num` entries.
        let pids = unsafe { std::slice::from_raw_parts(pid, num) };
        let rt = rt()?;
        let r = rt.handles.ipc.lock().set_pids(&rt.space, &k, pids);
        r
    })
}

/// `aclrtIpcMemImportByKey`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtIpcMemImportByKey(
    devPtr: *mut *mut c_void,
    key: *const c_char,
    flags: u64,
) -> aclError {
    call("aclrtIpcMemImportByKey", || {
        non_null(devPtr, "devPtr")?;
        // SAFETY: the function's contract.
        let k = unsafe { c_str(key, "key")? }.to_string_lossy().into_owned();
        let rt = rt()?;
        rt.current()?;
        let mut ipc = rt.handles.ipc.lock();
        let (a, len, new) = ipc.import(&rt.space, &k, flags)?;
        if new {
            if let Err(e) = rt.add_import(a, len) {
                let _ = ipc.close(&rt.space, &k);
                return Err(e);
            }
        }
        // The allocation is still there (freeing it drops its keys).
        rt.locate(a, 1, "the exported allocation")?;
        // SAFETY: non-null, the caller's pointer slot.
        unsafe { *devPtr = a as *mut c_void };
        Ok(())
    })
}

/// `aclrtIpcMemClose`.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtIpcMemClose(key: *const c_char) -> aclError {
    call("aclrtIpcMemClose", || {
        // SAFETY: the function's contract.
        let k = unsafe { c_str(key, "key")? }.to_string_lossy().into_owned();
        let rt = rt()?;
        let mut ipc = rt.handles.ipc.lock();
        if let Some(a) = ipc.close(&rt.space, &k)? {
            if !ipc.is_import(a) {
                rt.drop_import(a);
            }
        }
        Ok(())
    })
}

/// `aclrtDeviceGetBareTgid`: the process id.
///
/// # Safety
/// As the ACL documentation states for this function.
#[no_mangle]
pub unsafe extern "C" fn aclrtDeviceGetBareTgid(pid: *mut i32) -> aclError {
    call("aclrtDeviceGetBareTgid", || {
        non_null(pid, "pid")?;
        // SAFETY: non-null, the caller's slot.
        unsafe { *pid = std::process::id() as i32 };
        Ok(())
    })
}

/// acl-twin's own: marks `[devPtr, devPtr + size)` of one allocation as flag memory.
#[no_mangle]
pub extern "C" fn aclTwinMarkSync(devPtr: *mut c_void, size: usize) -> aclError {
    call("aclTwinMarkSync", || {
        let (b, o) = rt()?.locate(devPtr as usize, size, "devPtr")?;
        b.mark_sync(o, size)
            .or_else(|e| fail(ACL_ERROR_INVALID_PARAM, e.to_string()))
    })
}

/// acl-twin's own: kernel launches so far, how many asked for batch scheduling, and the
/// `TIMEOUT_US` of the latest launch (0: none).
///
/// # Safety
/// Each pointer is null or points at a writable `u64`.
#[no_mangle]
pub unsafe extern "C" fn aclTwinLaunchStats(
    launches: *mut u64,
    batch: *mut u64,
    timeoutUs: *mut u64,
) -> aclError {
    call("aclTwinLaunchStats", || {
        non_null(launches, "launches")?;
        non_null(batch, "batch")?;
        non_null(timeoutUs, "timeoutUs")?;
        let rt = rt()?;
        // SAFETY: non-null, the caller's slots.
        unsafe {
            *launches = rt.launches.load(Ordering::Relaxed);
            *batch = rt.batch_launches.load(Ordering::Relaxed);
            *timeoutUs = rt.last_timeout_us.load(Ordering::Relaxed);
        }
        Ok(())
    })
}

/// `aclrtSynchronizeDevice`: waits for every stream of the calling thread's device (its default
/// stream included), and returns the first of their failures.
#[no_mangle]
pub extern "C" fn aclrtSynchronizeDevice() -> aclError {
    call("aclrtSynchronizeDevice", || {
        let rt = rt()?;
        let (dev, _) = rt.current()?;
        let mut streams: Vec<Arc<Stream>> = rt
            .handles
            .streams
            .lock()
            .values()
            .filter(|s| s.device == dev)
            .cloned()
            .collect();
        streams.extend(rt.handles.default_streams.lock().get(&dev).cloned());
        let mut first = Ok(());
        for s in streams {
            let r = s.synchronize(None);
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

/// `aclrtCreateContext`: binds `deviceId` to the calling thread, as `aclrtSetDevice` does, and
/// returns a handle of the context. acl-twin has one context per device: streams and memory
/// belong to the device.
///
/// # Safety
/// `context` is null (an error) or points at a writable `aclrtContext`.
#[no_mangle]
pub unsafe extern "C" fn aclrtCreateContext(context: *mut *mut c_void, deviceId: i32) -> aclError {
    call("aclrtCreateContext", || {
        non_null(context, "context")?;
        runtime::set_device(deviceId)?;
        let rt = rt()?;
        let h = rt.handles.fresh();
        rt.handles.contexts.lock().insert(h, deviceId as u32);
        // SAFETY: non-null, the caller's slot.
        unsafe { *context = h as *mut c_void };
        Ok(())
    })
}

/// `aclrtDestroyContext`: forgets a context `aclrtCreateContext` made (an unknown or destroyed
/// one is `ACL_ERROR_RT_INVALID_HANDLE`).
#[no_mangle]
pub extern "C" fn aclrtDestroyContext(context: *mut c_void) -> aclError {
    call("aclrtDestroyContext", || {
        if context.is_null() {
            return fail(ACL_ERROR_INVALID_PARAM, "context is null");
        }
        match rt()?.handles.contexts.lock().remove(&(context as usize)) {
            Some(_) => Ok(()),
            None => fail(
                ACL_ERROR_RT_INVALID_HANDLE,
                format!("{context:p} is not a live context"),
            ),
        }
    })
}

/// `aclFloat16ToFloat`: an IEEE half as a float (exact).
#[no_mangle]
pub extern "C" fn aclFloat16ToFloat(value: u16) -> f32 {
    half::f16::from_bits(value).to_f32()
}

/// `aclFloatToFloat16`: a float as an IEEE half, rounded to nearest even.
#[no_mangle]
pub extern "C" fn aclFloatToFloat16(value: f32) -> u16 {
    half::f16::from_f32(value).to_bits()
}

/// acl-twin's own: launches the kernel an AscendC program wrote as
/// `kernel<<<numBlocks, dynUBufSize, stream>>>(args...)`. The twin's headers turn that statement into
/// this call (`asc_twin_chevron.h`): `entry` and `signature` are the kernel's trampolines (as
/// `ASC_TWIN_KERNEL` makes them, generated per kernel by the compiler), `args` the argument
/// block packed by the kernel's parameter types. The launch goes on `stream` (null: the
/// default stream) as `aclrtLaunchKernelWithHostArgs` would; since such a program has no status
/// to look at, a failure (of the launch, or of the kernel when it runs: a fault the twin's
/// checkers found) is also printed on stderr, naming the kernel.
///
/// # Safety
/// `name` is a NUL-terminated string; `entry` and `signature` are one kernel's trampolines;
/// `args` points at `argsSize` readable bytes (or is null with `argsSize` 0).
#[no_mangle]
pub unsafe extern "C" fn aclTwinLaunchChevron(
    name: *const c_char,
    entry: ascendc_twin::KernelFn,
    signature: ascendc_twin::SignatureFn,
    numBlocks: u32,
    stream: aclrtStream,
    args: *const u8,
    argsSize: usize,
) -> aclError {
    let mut shown = String::from("(unnamed)");
    let r = (|| {
        non_null(name, "name")?;
        // SAFETY: the function's contract: a NUL-terminated string.
        shown = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let rt = rt()?;
        let name = *rt
            .handles
            .chevron_names
            .lock()
            .entry(shown.clone())
            .or_insert_with(|| Box::leak(shown.clone().into_boxed_str()));
        // SAFETY: the function's contract: the kernel's own trampolines.
        let kernel = unsafe { ascendc_twin::Kernel::from_trampoline(name, entry, signature) };
        let func = Arc::new(binary::Function { kernel, binary: 0 });
        let s = stream_of(&rt, stream)?;
        let block = if argsSize == 0 {
            Vec::new()
        } else {
            non_null(args, "args")?;
            // SAFETY: the function's contract: `argsSize` readable bytes.
            unsafe { std::slice::from_raw_parts(args, argsSize) }.to_vec()
        };
        let attrs = launch::Attrs {
            report: true,
            ..Default::default()
        };
        let args = launch::Args {
            block,
            holders: Vec::new(),
        };
        launch::launch(&rt, &func, numBlocks, &s, attrs, args)
    })();
    if let Err(e) = &r {
        eprintln!(
            "[acl-twin] kernel {shown}<<<{numBlocks}, ...>>> was not launched: {} (error {})",
            e.msg, e.code
        );
    }
    call("aclTwinLaunchChevron", || r)
}
