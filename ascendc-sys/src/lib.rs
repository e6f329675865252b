//! Raw declarations of the Ascend ACL runtime (`libascendcl.so`) functions that aiv-comm's ACL
//! backend uses, resolved at run time.
//!
//! Every prototype, enum value and struct layout here was written from Huawei's public ACL
//! documentation (hiascend.com, "appdevgapi"/"runtimeapi" pages of CANN 8.2 to 9.x), not
//! generated from CANN's headers: their licence restricts them to software for Huawei AI
//! processors, and this crate is built everywhere. No CANN is needed to build it; [`Acl::load`]
//! opens the runtime the way a CANN user's environment finds it (the dynamic loader's search
//! path, which CANN's `set_env.sh` extends).
//!
//! Functions every supported CANN has are required: a library without one of them is refused
//! when it is loaded. Functions that appeared later are `Option`s, and [`Api::launch_path`]
//! says which way of loading and launching a kernel the library offers:
//!
//! | CANN | binary | launch | [`LaunchPath`] |
//! |---|---|---|---|
//! | 8.5 and later | `aclrtBinaryLoadFromFile` | `aclrtLaunchKernelWithHostArgs` | [`LaunchPath::HostArgs`] |
//! | 8.2, 8.3 | `aclrtBinaryLoadFromFile` | `aclrtKernelArgs*` builder + `aclrtLaunchKernelWithConfig` | [`LaunchPath::ArgsBuilder`] |
//! | older | | | refused: [`Api::launch_path`] names the missing function |
//!
//! These are raw `unsafe extern "C"` pointers: every call is the caller's responsibility, as
//! the ACL documentation states it.
//!
//! ```no_run
//! let acl = ascendc_sys::Acl::load().expect("libascendcl.so on the loader's path");
//! let mut n = 0u32;
//! // SAFETY: aclInit takes a null config path; aclrtGetDeviceCount writes one u32.
//! unsafe {
//!     assert_eq!((acl.api.aclInit)(std::ptr::null()), ascendc_sys::ACL_SUCCESS);
//!     assert_eq!((acl.api.aclrtGetDeviceCount)(&mut n), ascendc_sys::ACL_SUCCESS);
//! }
//! ```

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_void};

/// Status of an ACL call (`ACL_SUCCESS` or an error code).
pub type aclError = c_int;
/// A stream (opaque).
pub type aclrtStream = *mut c_void;
/// An event (opaque).
pub type aclrtEvent = *mut c_void;
/// A loaded binary (opaque).
pub type aclrtBinHandle = *mut c_void;
/// A kernel of a loaded binary (opaque).
pub type aclrtFuncHandle = *mut c_void;
/// An argument list under construction (`aclrtKernelArgs*`, opaque).
pub type aclrtArgsHandle = *mut c_void;
/// One parameter of an argument list (opaque).
pub type aclrtParamHandle = *mut c_void;

/// Success.
pub const ACL_SUCCESS: aclError = 0;
/// A parameter failed verification.
pub const ACL_ERROR_INVALID_PARAM: aclError = 100000;
/// `aclInit` was not called.
pub const ACL_ERROR_UNINITIALIZE: aclError = 100001;
/// Initialised (or loaded) twice.
pub const ACL_ERROR_REPEAT_INITIALIZE: aclError = 100002;
/// A file that does not exist or cannot be read.
pub const ACL_ERROR_INVALID_FILE: aclError = 100003;
/// A file whose contents cannot be parsed.
pub const ACL_ERROR_PARSE_FILE: aclError = 100006;
/// Host memory could not be allocated.
pub const ACL_ERROR_BAD_ALLOC: aclError = 200000;
/// The runtime rejected a parameter (the runtime's code for a copy longer than its
/// destination, among others).
pub const ACL_ERROR_RT_PARAM_INVALID: aclError = 107000;
/// A device index out of range.
pub const ACL_ERROR_RT_INVALID_DEVICEID: aclError = 107001;
/// No context is current on the calling thread (no `aclrtSetDevice`).
pub const ACL_ERROR_RT_CONTEXT_NULL: aclError = 107002;
/// A stream not of the current context.
pub const ACL_ERROR_RT_STREAM_CONTEXT: aclError = 107003;
/// An invalid handle (a binary, function, stream or event).
pub const ACL_ERROR_RT_INVALID_HANDLE: aclError = 107017;
/// A feature the device or runtime does not support.
pub const ACL_ERROR_RT_FEATURE_NOT_SUPPORT: aclError = 207000;
/// Device memory could not be allocated.
pub const ACL_ERROR_RT_MEMORY_ALLOCATION: aclError = 207001;
/// An internal runtime error.
pub const ACL_ERROR_RT_INTERNAL_ERROR: aclError = 507000;
/// A kernel on an AI Core faulted.
pub const ACL_ERROR_RT_AICORE_EXCEPTION: aclError = 507015;
/// A stream synchronisation ran out of time.
pub const ACL_ERROR_RT_STREAM_SYNC_TIMEOUT: aclError = 507046;
/// A stream synchronisation with an event ran out of time.
pub const ACL_ERROR_RT_EVENT_SYNC_TIMEOUT: aclError = 507047;
/// A kernel on a vector core ran out of time.
pub const ACL_ERROR_RT_VECTOR_CORE_TIMEOUT: aclError = 507034;
/// A kernel on a vector core faulted.
pub const ACL_ERROR_RT_VECTOR_CORE_EXCEPTION: aclError = 507035;
/// A kernel on a vector core trapped.
pub const ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION: aclError = 507036;
/// A kernel that is not registered (not in the binary).
pub const ACL_ERROR_RT_KERNEL_LOOKUP: aclError = 507027;
/// `aclFinalize` called twice.
pub const ACL_ERROR_REPEAT_FINALIZE: aclError = 100037;
/// An unrecognised internal error.
pub const ACL_ERROR_INTERNAL_ERROR: aclError = 500000;

/// `aclrtMemcpyKind`: host to host.
pub const ACL_MEMCPY_HOST_TO_HOST: c_int = 0;
/// `aclrtMemcpyKind`: host to device.
pub const ACL_MEMCPY_HOST_TO_DEVICE: c_int = 1;
/// `aclrtMemcpyKind`: device to host.
pub const ACL_MEMCPY_DEVICE_TO_HOST: c_int = 2;
/// `aclrtMemcpyKind`: device to device.
pub const ACL_MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
/// `aclrtMemcpyKind`: the runtime infers the direction from the addresses.
pub const ACL_MEMCPY_DEFAULT: c_int = 4;

/// `aclrtMemMallocPolicy`: huge pages first, normal pages if none are left.
pub const ACL_MEM_MALLOC_HUGE_FIRST: c_int = 0;
/// `aclrtMemMallocPolicy`: huge pages only.
pub const ACL_MEM_MALLOC_HUGE_ONLY: c_int = 1;
/// `aclrtMemMallocPolicy`: normal pages only.
pub const ACL_MEM_MALLOC_NORMAL_ONLY: c_int = 2;

/// `aclrtLaunchKernelAttrId`: scheduling mode (value `schemMode`).
pub const ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE: c_int = 1;
/// `aclrtLaunchKernelAttrId`: the scheduler's wait for the task, in microseconds (value
/// `timeoutUs`).
pub const ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US: c_int = 8;
/// `schemMode` 1: batch, start only when every requested core is free.
pub const ACL_RT_SCHEM_MODE_BATCH: u8 = 1;

/// `aclrtBinaryLoadOptionType`: lazy loading (value `isLazyLoad`).
pub const ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD: c_int = 1;
/// `aclrtBinaryLoadOptionType`: the binary's magic (value `magic`).
pub const ACL_RT_BINARY_LOAD_OPT_MAGIC: c_int = 2;
/// Magic of a vector-core (AIV) ELF.
pub const ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE: u32 = 0x4141_5246;

/// Length of an IPC export key, terminating NUL included.
pub const ACL_IPC_KEY_LEN: usize = 65;
/// `aclrtIpcMemGetExportKey` flag: importers' PIDs are not checked (8.3 and later).
pub const ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION: u64 = 1;
/// `aclrtIpcMemImportByKey` flag: enable peer access on import (8.3 and later).
pub const ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS: u64 = 1;

/// `aclCANNPackageName`: the package `aclsysGetCANNVersion` reports on. `ACL_PKG_NAME_CANN`
/// is CANN as a whole, the others one package of it.
/// <https://www.hiascend.com/document/detail/en/canncommercial/850/API/appdevgapi/aclcppdevg_03_1790.html>
pub type aclCANNPackageName = c_int;
/// `aclCANNPackageName`: CANN as a whole.
pub const ACL_PKG_NAME_CANN: aclCANNPackageName = 0;
/// `aclCANNPackageName`: the runtime package (the one `libascendcl.so` belongs to).
pub const ACL_PKG_NAME_RUNTIME: aclCANNPackageName = 1;
/// `aclCANNPackageName`: the compiler package.
pub const ACL_PKG_NAME_COMPILER: aclCANNPackageName = 2;
/// `aclCANNPackageName`: HCCL.
pub const ACL_PKG_NAME_HCCL: aclCANNPackageName = 3;
/// `aclCANNPackageName`: the toolkit.
pub const ACL_PKG_NAME_TOOLKIT: aclCANNPackageName = 4;
/// `aclCANNPackageName`: the operator package (OPP).
pub const ACL_PKG_NAME_OPP: aclCANNPackageName = 5;
/// `aclCANNPackageName`: the operator kernels package.
pub const ACL_PKG_NAME_OPP_KERNEL: aclCANNPackageName = 6;
/// `aclCANNPackageName`: the NPU driver.
pub const ACL_PKG_NAME_DRIVER: aclCANNPackageName = 7;

/// Bytes of a whole version string (`aclsysGetVersionStr`'s buffer, `aclCANNPackageVersion`'s
/// `version` and `reserved`), terminating NUL included.
pub const ACL_PKG_VERSION_MAX_SIZE: usize = 128;
/// Bytes of each part of an `aclCANNPackageVersion`, terminating NUL included.
pub const ACL_PKG_VERSION_PARTS_MAX_SIZE: usize = 64;
/// The name aiv-comm asks `aclsysGetVersionStr` for the runtime's version by (not an ACL
/// constant): the documentation names packages as their directories under
/// `<CANN>/share/info/`, and CANN 8.5 and later install the runtime's as `runtime`.
pub const RUNTIME_PACKAGE: &std::ffi::CStr = c"runtime";

/// `aclCANNPackageVersion` (512 bytes): a package's version, each field a NUL-terminated
/// string; a part that cannot be found is "0".
/// <https://www.hiascend.com/document/detail/en/canncommercial/850/API/appdevgapi/aclcppdevg_03_1791.html>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclCANNPackageVersion {
    /// The whole version, e.g. `8.2.RC1`.
    pub version: [c_char; ACL_PKG_VERSION_MAX_SIZE],
    /// Major version.
    pub majorVersion: [c_char; ACL_PKG_VERSION_PARTS_MAX_SIZE],
    /// Minor version.
    pub minorVersion: [c_char; ACL_PKG_VERSION_PARTS_MAX_SIZE],
    /// Release number ("0" if none).
    pub releaseVersion: [c_char; ACL_PKG_VERSION_PARTS_MAX_SIZE],
    /// Patch number ("0" if none).
    pub patchVersion: [c_char; ACL_PKG_VERSION_PARTS_MAX_SIZE],
    /// Reserved.
    pub reserved: [c_char; ACL_PKG_VERSION_MAX_SIZE],
}

impl Default for aclCANNPackageVersion {
    fn default() -> Self {
        aclCANNPackageVersion {
            version: [0; ACL_PKG_VERSION_MAX_SIZE],
            majorVersion: [0; ACL_PKG_VERSION_PARTS_MAX_SIZE],
            minorVersion: [0; ACL_PKG_VERSION_PARTS_MAX_SIZE],
            releaseVersion: [0; ACL_PKG_VERSION_PARTS_MAX_SIZE],
            patchVersion: [0; ACL_PKG_VERSION_PARTS_MAX_SIZE],
            reserved: [0; ACL_PKG_VERSION_MAX_SIZE],
        }
    }
}

/// `aclrtTimeoutUs`: a 64-bit microsecond count as two 32-bit halves.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct aclrtTimeoutUs {
    /// Low 32 bits.
    pub timeoutLow: u32,
    /// High 32 bits.
    pub timeoutHigh: u32,
}

/// `aclrtLaunchKernelAttrValue`: the value of one launch attribute (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub union aclrtLaunchKernelAttrValue {
    /// [`ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE`].
    pub schemMode: u8,
    /// [`ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US`].
    pub timeoutUs: aclrtTimeoutUs,
    /// Reserved; sizes the union.
    pub rsv: [u32; 4],
}

/// `aclrtLaunchKernelAttr`: one attribute of a launch.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct aclrtLaunchKernelAttr {
    /// `aclrtLaunchKernelAttrId`.
    pub id: c_int,
    /// Its value.
    pub value: aclrtLaunchKernelAttrValue,
}

/// `aclrtLaunchKernelCfg`: the attributes of a launch.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclrtLaunchKernelCfg {
    /// `numAttrs` attributes.
    pub attrs: *mut aclrtLaunchKernelAttr,
    /// How many.
    pub numAttrs: usize,
}

/// `aclrtPlaceHolderInfo`: in host arguments, the 8 bytes at `addrOffset` are replaced by the
/// device address of the data at `dataOffset` once the runtime has copied it to the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct aclrtPlaceHolderInfo {
    /// Offset of the pointer slot.
    pub addrOffset: u32,
    /// Offset of the data it points to.
    pub dataOffset: u32,
}

/// `aclrtBinaryLoadOptionValue`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union aclrtBinaryLoadOptionValue {
    /// [`ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD`].
    pub isLazyLoad: u32,
    /// [`ACL_RT_BINARY_LOAD_OPT_MAGIC`].
    pub magic: u32,
    /// Reserved; sizes the union.
    pub rsv: [u32; 4],
}

/// `aclrtBinaryLoadOption`: one option of a binary load.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct aclrtBinaryLoadOption {
    /// `aclrtBinaryLoadOptionType`.
    pub type_: c_int,
    /// Its value.
    pub value: aclrtBinaryLoadOptionValue,
}

/// `aclrtBinaryLoadOptions`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclrtBinaryLoadOptions {
    /// `numOpt` options.
    pub options: *mut aclrtBinaryLoadOption,
    /// How many.
    pub numOpt: usize,
}

/// Declares the function table: required functions are plain pointers, optional ones
/// `Option`s with the CANN version that introduced them.
macro_rules! api {
    (
        required { $( $(#[$rdoc:meta])* $r:ident : fn($($ra:ty),*) $(-> $rr:ty)?; )* }
        optional { $( $(#[$odoc:meta])* [$since:literal] $o:ident : fn($($oa:ty),*) $(-> $or:ty)?; )* }
    ) => {
        /// The ACL runtime functions aiv-comm uses, resolved from one library.
        #[derive(Clone, Copy)]
        pub struct Api {
            $( $(#[$rdoc])* pub $r: unsafe extern "C" fn($($ra),*) $(-> $rr)?, )*
            $( $(#[$odoc])* #[doc = concat!("(CANN ", $since, " and later.)")]
               pub $o: Option<unsafe extern "C" fn($($oa),*) $(-> $or)?>, )*
        }

        impl Api {
            /// Resolves every function from `lib`; `hidden` names are treated as absent.
            fn resolve(lib: &libloading::Library, path: &str, hidden: &[&str]) -> Result<Api, LoadError> {
                Ok(Api {
                    $( $r: {
                        let name = stringify!($r);
                        // SAFETY: the type is the documented prototype of `name`.
                        match unsafe { symbol(lib, name, hidden) } {
                            Some(f) => f,
                            None => return Err(LoadError::MissingFunction {
                                library: path.to_string(),
                                function: name,
                            }),
                        }
                    }, )*
                    // SAFETY: each type is the documented prototype of its name.
                    $( $o: unsafe { symbol(lib, stringify!($o), hidden) }, )*
                })
            }

            /// The optional functions and the CANN version each needs.
            pub const OPTIONAL: &'static [(&'static str, &'static str)] = &[
                $( (stringify!($o), $since), )*
            ];
        }
    };
}

api! {
    required {
        /// `aclError aclInit(const char *configPath)`.
        aclInit: fn(*const c_char) -> aclError;
        /// `aclError aclFinalize()`.
        aclFinalize: fn() -> aclError;
        /// `const char *aclGetRecentErrMsg()`: the calling thread's latest error text, or null.
        aclGetRecentErrMsg: fn() -> *const c_char;
        /// `aclError aclrtGetDeviceCount(uint32_t *count)`.
        aclrtGetDeviceCount: fn(*mut u32) -> aclError;
        /// `aclError aclrtSetDevice(int32_t deviceId)`: binds the device's default context to
        /// the calling thread.
        aclrtSetDevice: fn(i32) -> aclError;
        /// `aclError aclrtResetDevice(int32_t deviceId)`.
        aclrtResetDevice: fn(i32) -> aclError;
        /// `aclError aclrtCreateStream(aclrtStream *stream)`.
        aclrtCreateStream: fn(*mut aclrtStream) -> aclError;
        /// `aclError aclrtDestroyStream(aclrtStream stream)`.
        aclrtDestroyStream: fn(aclrtStream) -> aclError;
        /// `aclError aclrtSynchronizeStream(aclrtStream stream)`.
        aclrtSynchronizeStream: fn(aclrtStream) -> aclError;
        /// `aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)`
        /// (milliseconds; -1 waits without end).
        aclrtSynchronizeStreamWithTimeout: fn(aclrtStream, i32) -> aclError;
        /// `aclError aclrtCreateEvent(aclrtEvent *event)`.
        aclrtCreateEvent: fn(*mut aclrtEvent) -> aclError;
        /// `aclError aclrtDestroyEvent(aclrtEvent event)`.
        aclrtDestroyEvent: fn(aclrtEvent) -> aclError;
        /// `aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)`.
        aclrtRecordEvent: fn(aclrtEvent, aclrtStream) -> aclError;
        /// `aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)`.
        aclrtStreamWaitEvent: fn(aclrtStream, aclrtEvent) -> aclError;
        /// `aclError aclrtSynchronizeEvent(aclrtEvent event)`.
        aclrtSynchronizeEvent: fn(aclrtEvent) -> aclError;
        /// `aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)`.
        aclrtMalloc: fn(*mut *mut c_void, usize, c_int) -> aclError;
        /// `aclError aclrtFree(void *devPtr)`.
        aclrtFree: fn(*mut c_void) -> aclError;
        /// `aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
        /// aclrtMemcpyKind kind)`.
        aclrtMemcpy: fn(*mut c_void, usize, *const c_void, usize, c_int) -> aclError;
        /// `aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
        /// aclrtMemcpyKind kind, aclrtStream stream)`.
        aclrtMemcpyAsync: fn(*mut c_void, usize, *const c_void, usize, c_int, aclrtStream) -> aclError;
        /// `aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)`.
        aclrtMemset: fn(*mut c_void, usize, i32, usize) -> aclError;
        /// `aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char
        /// *kernelName, aclrtFuncHandle *funcHandle)`.
        aclrtBinaryGetFunction: fn(aclrtBinHandle, *const c_char, *mut aclrtFuncHandle) -> aclError;
        /// `aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle)`.
        aclrtBinaryUnLoad: fn(aclrtBinHandle) -> aclError;
    }
    optional {
        /// `const char *aclrtGetSocName()`.
        ["8.0"] aclrtGetSocName: fn() -> *const c_char;
        /// `aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch)`: the ACL
        /// interface version (not CANN's release number).
        ["8.0"] aclrtGetVersion: fn(*mut i32, *mut i32, *mut i32) -> aclError;
        /// `aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion
        /// *version)`: the version of package `name`; an error if it is not installed (100003,
        /// `ACL_ERROR_INVALID_FILE`, says pyACL's page). Documented in 8.2.RC1 to 9.x; marked
        /// deprecated from 8.5 on, for `aclsysGetVersionStr`.
        /// <https://www.hiascend.com/document/detail/en/canncommercial/850/API/appdevgapi/aclcppdevg_03_1789.html>
        ["8.2"] aclsysGetCANNVersion: fn(aclCANNPackageName, *mut aclCANNPackageVersion) -> aclError;
        /// `aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t
        /// peerDeviceId)`.
        ["8.0"] aclrtDeviceCanAccessPeer: fn(*mut i32, i32, i32) -> aclError;
        /// `aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags)`: the
        /// current device may access `peerDeviceId`'s memory (one direction, within one
        /// process).
        ["8.0"] aclrtDeviceEnablePeerAccess: fn(i32, u32) -> aclError;
        /// `aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions
        /// *options, aclrtBinHandle *binHandle)`.
        ["8.2"] aclrtBinaryLoadFromFile: fn(*const c_char, *mut aclrtBinaryLoadOptions, *mut aclrtBinHandle) -> aclError;
        /// `aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle
        /// *argsHandle)`.
        ["8.2"] aclrtKernelArgsInit: fn(aclrtFuncHandle, *mut aclrtArgsHandle) -> aclError;
        /// `aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t
        /// paramSize, aclrtParamHandle *paramHandle)`.
        ["8.2"] aclrtKernelArgsAppend: fn(aclrtArgsHandle, *mut c_void, usize, *mut aclrtParamHandle) -> aclError;
        /// `aclError aclrtKernelArgsAppendPlaceHolder(aclrtArgsHandle argsHandle,
        /// aclrtParamHandle *paramHandle)`.
        ["8.2"] aclrtKernelArgsAppendPlaceHolder: fn(aclrtArgsHandle, *mut aclrtParamHandle) -> aclError;
        /// `aclError aclrtKernelArgsGetPlaceHolderBuffer(aclrtArgsHandle argsHandle,
        /// aclrtParamHandle paramHandle, size_t dataSize, void **bufferAddr)`.
        ["8.2"] aclrtKernelArgsGetPlaceHolderBuffer: fn(aclrtArgsHandle, aclrtParamHandle, usize, *mut *mut c_void) -> aclError;
        /// `aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle)`.
        ["8.2"] aclrtKernelArgsFinalize: fn(aclrtArgsHandle) -> aclError;
        /// `aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t
        /// numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg, aclrtArgsHandle
        /// argsHandle, void *reserve)`.
        ["8.2"] aclrtLaunchKernelWithConfig: fn(aclrtFuncHandle, u32, aclrtStream, *mut aclrtLaunchKernelCfg, aclrtArgsHandle, *mut c_void) -> aclError;
        /// `aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len,
        /// uint64_t flags)`.
        ["8.2"] aclrtIpcMemGetExportKey: fn(*mut c_void, usize, *mut c_char, usize, u64) -> aclError;
        /// `aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num)`.
        ["8.2"] aclrtIpcMemSetImportPid: fn(*const c_char, *mut i32, usize) -> aclError;
        /// `aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags)`.
        ["8.2"] aclrtIpcMemImportByKey: fn(*mut *mut c_void, *const c_char, u64) -> aclError;
        /// `aclError aclrtIpcMemClose(const char *key)`.
        ["8.2"] aclrtIpcMemClose: fn(*const c_char) -> aclError;
        /// `aclError aclrtDeviceGetBareTgid(int32_t *pid)`.
        ["8.2"] aclrtDeviceGetBareTgid: fn(*mut i32) -> aclError;
        /// `aclError aclrtBinaryLoadFromData(const void *data, size_t length, const
        /// aclrtBinaryLoadOptions *options, aclrtBinHandle *binHandle)`.
        ["8.2"] aclrtBinaryLoadFromData: fn(*const c_void, usize, *const aclrtBinaryLoadOptions, *mut aclrtBinHandle) -> aclError;
        /// `aclError aclsysGetVersionStr(char *pkgName, char *versionStr)`: the version of the
        /// package named `pkgName` (its directory under `<CANN>/share/info/`, e.g.
        /// [`RUNTIME_PACKAGE`]) as its `version.info` gives it, into a buffer of
        /// [`ACL_PKG_VERSION_MAX_SIZE`] bytes; non-zero on failure.
        /// <https://www.hiascend.com/document/detail/zh/canncommercial/900/API/runtimeapi/aclcppdevg_03_2096.html>
        ["8.5"] aclsysGetVersionStr: fn(*mut c_char, *mut c_char) -> aclError;
        /// `aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t
        /// numBlocks, aclrtStream stream, aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t
        /// argsSize, aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum)`.
        ["8.5"] aclrtLaunchKernelWithHostArgs: fn(aclrtFuncHandle, u32, aclrtStream, *mut aclrtLaunchKernelCfg, *mut c_void, usize, *mut aclrtPlaceHolderInfo, usize) -> aclError;
    }
}

/// # Safety
/// `T` must be the function pointer type of `name`'s prototype.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str, hidden: &[&str]) -> Option<T> {
    if hidden.contains(&name) {
        return None;
    }
    let mut cname = name.as_bytes().to_vec();
    cname.push(0);
    // SAFETY: the caller's contract on `T`.
    unsafe { lib.get::<T>(&cname).ok().map(|s| *s) }
}

/// How a library lets a kernel be loaded and launched (see the crate docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchPath {
    /// `aclrtLaunchKernelWithHostArgs` (CANN 8.5 and later): host arguments with placeholders.
    HostArgs,
    /// The `aclrtKernelArgs*` builder and `aclrtLaunchKernelWithConfig` (CANN 8.2, 8.3).
    ArgsBuilder,
}

impl Api {
    /// The best way this library offers to load a binary from a file and launch a kernel with
    /// launch attributes, or the first function missing for the oldest supported way, with
    /// the CANN version that has it.
    pub fn launch_path(&self) -> Result<LaunchPath, (&'static str, &'static str)> {
        if self.aclrtBinaryLoadFromFile.is_none() {
            return Err(("aclrtBinaryLoadFromFile", "8.2"));
        }
        if self.aclrtLaunchKernelWithHostArgs.is_some() {
            return Ok(LaunchPath::HostArgs);
        }
        // What a launch through the builder calls (aiv-comm's launches need no placeholder).
        let builder = [
            (self.aclrtKernelArgsInit.is_some(), "aclrtKernelArgsInit"),
            (
                self.aclrtKernelArgsAppend.is_some(),
                "aclrtKernelArgsAppend",
            ),
            (
                self.aclrtKernelArgsFinalize.is_some(),
                "aclrtKernelArgsFinalize",
            ),
            (
                self.aclrtLaunchKernelWithConfig.is_some(),
                "aclrtLaunchKernelWithConfig",
            ),
        ];
        match builder.iter().find(|(present, _)| !present) {
            Some((_, missing)) => Err((missing, "8.2")),
            None => Ok(LaunchPath::ArgsBuilder),
        }
    }

    /// The version of CANN the library belongs to, as it reports it: `aclsysGetVersionStr` of
    /// the runtime package ([`RUNTIME_PACKAGE`], CANN 8.5 and later), else the deprecated
    /// `aclsysGetCANNVersion` of the runtime package, then of CANN as a whole (8.2 and later).
    /// `None` if the library has neither call or every attempt fails (a failure's error text is
    /// consumed, so that it is not taken for a later call's).
    pub fn cann_version(&self) -> Option<String> {
        if let Some(get) = self.aclsysGetVersionStr {
            let mut name = RUNTIME_PACKAGE.to_bytes_with_nul().to_vec();
            let mut out = [0 as c_char; ACL_PKG_VERSION_MAX_SIZE];
            // SAFETY: a NUL-terminated name (read only, for the call) and an output buffer of
            // the size the documentation asks for.
            let code = unsafe { get(name.as_mut_ptr().cast(), out.as_mut_ptr()) };
            if code != ACL_SUCCESS {
                self.recent_error();
            } else if let Some(v) = text_of(&out) {
                return Some(v);
            }
        }
        if let Some(get) = self.aclsysGetCANNVersion {
            for package in [ACL_PKG_NAME_RUNTIME, ACL_PKG_NAME_CANN] {
                let mut v = aclCANNPackageVersion::default();
                // SAFETY: writes one aclCANNPackageVersion, ours.
                let code = unsafe { get(package, &mut v) };
                if code != ACL_SUCCESS {
                    self.recent_error();
                } else if let Some(v) = text_of(&v.version) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// The calling thread's latest error text (`aclGetRecentErrMsg`), empty if none.
    pub fn recent_error(&self) -> String {
        // SAFETY: the function takes no argument and returns null or a NUL-terminated string
        // owned by the runtime, valid until the thread's next ACL call.
        unsafe {
            let p = (self.aclGetRecentErrMsg)();
            if p.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }
}

/// The text of a fixed-size string field up to its first NUL (or its end), trimmed; `None`
/// if empty.
fn text_of(field: &[c_char]) -> Option<String> {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Why a library could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadError {
    /// The library could not be opened.
    Open {
        /// The name or path tried.
        library: String,
        /// The dynamic loader's message.
        message: String,
    },
    /// The library lacks a function every supported CANN has.
    MissingFunction {
        /// The library.
        library: String,
        /// The function.
        function: &'static str,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Open { library, message } => write!(
                f,
                "cannot open the ACL runtime `{library}`: {message} (on a machine with CANN, source its set_env.sh so that the dynamic loader finds it)"
            ),
            LoadError::MissingFunction { library, function } => write!(
                f,
                "`{library}` has no `{function}`: it is not an ACL runtime aiv-comm supports (CANN 8.2 or later)"
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// The functions acl-twin (aiv-comm's ACL runtime over its CPU twin) adds to the ACL API;
/// absent from CANN, so their presence says the runtime is acl-twin.
#[derive(Clone, Copy)]
pub struct TwinApi {
    /// `aclError aclTwinMarkSync(void *devPtr, size_t size)`: marks device memory as flag
    /// memory for the twin's race checker.
    pub aclTwinMarkSync: unsafe extern "C" fn(*mut c_void, usize) -> aclError,
    /// `aclError aclTwinLaunchStats(uint64_t *launches, uint64_t *batch, uint64_t
    /// *timeoutUs)`: kernel launches so far, how many asked for batch scheduling, and the
    /// `TIMEOUT_US` of the latest launch (0: none).
    pub aclTwinLaunchStats: unsafe extern "C" fn(*mut u64, *mut u64, *mut u64) -> aclError,
}

/// An opened ACL runtime: its functions.
///
/// The library is never unloaded (an ACL runtime has threads and device state that outlive
/// any one user, and is initialised once per process), so the function pointers stay valid
/// for the life of the process, copies of them included.
pub struct Acl {
    /// The functions.
    pub api: Api,
    /// acl-twin's own functions, if the library is acl-twin.
    pub twin: Option<TwinApi>,
    path: String,
}

impl std::fmt::Debug for Acl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acl").field("library", &self.path).finish()
    }
}

impl Acl {
    /// The library's name, as the dynamic loader looks it up.
    pub const LIBRARY: &'static str = "libascendcl.so";

    /// Opens [`Acl::LIBRARY`] from the dynamic loader's search path.
    pub fn load() -> Result<Acl, LoadError> {
        Acl::open(Acl::LIBRARY, &[])
    }

    /// Opens `library` (a name the loader searches for, or a path), treating the functions
    /// named in `hidden` as absent (to see what a library without them would do). A library
    /// that is refused (it lacks a required function) is unloaded again.
    pub fn open(library: &str, hidden: &[&str]) -> Result<Acl, LoadError> {
        // SAFETY: loading runs the library's initialisers; an ACL runtime's are meant to run
        // in any process that links it.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| LoadError::Open {
            library: library.to_string(),
            message: e.to_string(),
        })?;
        let api = Api::resolve(&lib, library, hidden)?;
        // SAFETY: the types are acl-twin's prototypes of these names.
        let twin = unsafe {
            match (
                symbol(&lib, "aclTwinMarkSync", hidden),
                symbol(&lib, "aclTwinLaunchStats", hidden),
            ) {
                (Some(aclTwinMarkSync), Some(aclTwinLaunchStats)) => Some(TwinApi {
                    aclTwinMarkSync,
                    aclTwinLaunchStats,
                }),
                _ => None,
            }
        };
        // Never unloaded (see the type's docs): the pointers above stay valid.
        std::mem::forget(lib);
        Ok(Acl {
            api,
            twin,
            path: library.to_string(),
        })
    }

    /// The name or path the library was opened by.
    pub fn library(&self) -> &str {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_the_documented_ones() {
        assert_eq!(std::mem::size_of::<aclrtLaunchKernelAttrValue>(), 16);
        assert_eq!(std::mem::size_of::<aclrtLaunchKernelAttr>(), 20);
        assert_eq!(std::mem::size_of::<aclrtPlaceHolderInfo>(), 8);
        assert_eq!(std::mem::size_of::<aclrtLaunchKernelCfg>(), 16);
        assert_eq!(std::mem::size_of::<aclrtBinaryLoadOption>(), 20);
        assert_eq!(std::mem::size_of::<aclCANNPackageVersion>(), 512);
        assert_eq!(
            std::mem::offset_of!(aclCANNPackageVersion, reserved),
            128 + 4 * 64
        );
    }

    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        let e = Acl::open("libascendcl-does-not-exist.so", &[]).unwrap_err();
        match &e {
            LoadError::Open { library, .. } => assert_eq!(library, "libascendcl-does-not-exist.so"),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("set_env.sh"), "{e}");
    }

    #[test]
    fn a_library_that_is_not_acl_lacks_a_required_function() {
        // The C library is loaded in every process and has none of ACL's functions.
        let e = Acl::open("libc.so.6", &[]).unwrap_err();
        assert!(
            matches!(
                e,
                LoadError::MissingFunction {
                    function: "aclInit",
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
