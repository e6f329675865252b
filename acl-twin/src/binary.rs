//! Binaries and their kernels.
//!
//! What acl-twin loads as a "binary" is the twin's build of kernels, not a device ELF: a host
//! shared object (ELF `ET_DYN` for the host's machine) whose kernels were compiled against
//! the twin's AscendC headers with `ascendc-twin`'s `ASC_TWIN_KERNEL` trampolines, as
//! `ascendc-build`'s `Build::twin_binary` produces. Kernel `name` is found through its two
//! trampoline symbols, `asc_twin_entry_<name>` and `asc_twin_sig_<name>`. The object's
//! references to the twin's runtime (`asc_twin_*`) are resolved against this library, so
//! its kernels run on this runtime's twin. A device ELF (another machine) is refused with
//! `ACL_ERROR_PARSE_FILE`, naming what was expected.
//!
//! Load options (lazy loading, magic) are accepted and ignored. Unloading makes the handle
//! and its functions invalid; the object itself stays mapped until the process ends, since a
//! queued launch may still run its code.

use std::ffi::{c_void, CStr, CString};
use std::sync::Arc;

use ascendc_sys::*;
use ascendc_twin::{Kernel, ParamInfo};

use crate::fail::{fail, R};

/// A loaded binary: its `dlopen` handle.
pub(crate) struct Binary {
    handle: usize,
    /// Where it was loaded from (for messages).
    pub origin: String,
}

/// A kernel of a binary.
pub(crate) struct Function {
    pub kernel: Kernel,
    /// The binary's handle value (a function of an unloaded binary is refused).
    pub binary: usize,
}

/// The ELF machine of the host (`EM_X86_64`, `EM_AARCH64`).
const HOST_MACHINE: u16 = if cfg!(target_arch = "x86_64") {
    62
} else if cfg!(target_arch = "aarch64") {
    183
} else {
    0
};

/// Checks that `head` (the whole file) is an ELF shared object for this host, and complete: its
/// program and section headers and every segment it loads lie inside it (the dynamic loader
/// maps a truncated object and the process dies of SIGBUS when it touches the missing pages).
fn check_elf(head: &[u8], origin: &str) -> R<()> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" {
        return fail(
            ACL_ERROR_PARSE_FILE,
            format!("{origin} is not an ELF file; acl-twin loads the twin's builds of kernels (host shared objects from ascendc-build's Build::twin_binary)"),
        );
    }
    let e_type = u16::from_le_bytes([head[16], head[17]]);
    let machine = u16::from_le_bytes([head[18], head[19]]);
    if machine != HOST_MACHINE || e_type != 3 {
        return fail(
            ACL_ERROR_PARSE_FILE,
            format!("{origin} is an ELF of type {e_type} for machine {machine}, not a shared object for this host (machine {HOST_MACHINE}): a device binary cannot run on acl-twin, which loads the twin's builds of kernels (ascendc-build's Build::twin_binary)"),
        );
    }
    let u16_at = |o: usize| u16::from_le_bytes([head[o], head[o + 1]]) as u64;
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[o..o + 8]);
        u64::from_le_bytes(b)
    };
    let len = head.len() as u64;
    let truncated = || {
        fail(
            ACL_ERROR_PARSE_FILE,
            format!("{origin}: a truncated or malformed ELF ({len} bytes)"),
        )
    };
    if head[4] != 2 || head[5] != 1 {
        return fail(
            ACL_ERROR_PARSE_FILE,
            format!("{origin} is not a 64-bit little-endian ELF"),
        );
    }
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    let (shoff, shentsize, shnum) = (u64_at(40), u16_at(58), u16_at(60));
    let ends_inside = |off: u64, n: u64| off.checked_add(n).is_some_and(|e| e <= len);
    if phentsize < 56
        || !ends_inside(phoff, phentsize * phnum)
        || !ends_inside(shoff, shentsize * shnum)
    {
        return truncated();
    }
    for i in 0..phnum {
        let ph = (phoff + i * phentsize) as usize;
        let (offset, filesz) = (u64_at(ph + 8), u64_at(ph + 32));
        if !ends_inside(offset, filesz) {
            return truncated();
        }
    }
    Ok(())
}

/// Makes this library's symbols global, so that a kernel object loaded next resolves its
/// `asc_twin_*` references against it.
fn export_self() -> R<()> {
    // SAFETY: Dl_info is a C struct of pointers and integers, for which all zeros is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr writes `info` for an address inside a loaded object; this function is one.
    let ok = unsafe { libc::dladdr(export_self as *const c_void, &mut info) };
    if ok == 0 || info.dli_fname.is_null() {
        return fail(
            ACL_ERROR_RT_INTERNAL_ERROR,
            "cannot find acl-twin's own library",
        );
    }
    // SAFETY: `dli_fname` is the loaded object's path; RTLD_NOLOAD only re-opens it (adding
    // RTLD_GLOBAL), the reference it takes is never released (the library stays loaded).
    let h = unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL,
        )
    };
    if h.is_null() {
        return fail(
            ACL_ERROR_RT_INTERNAL_ERROR,
            format!("cannot make acl-twin's symbols global: {}", dl_error()),
        );
    }
    Ok(())
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated message of the calling thread.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Binary {
    /// Loads the kernel object at `path`.
    pub fn from_file(path: &CStr) -> R<Binary> {
        let origin = path.to_string_lossy().into_owned();
        let bytes = std::fs::read(&origin)
            .or_else(|e| fail(ACL_ERROR_INVALID_FILE, format!("{origin}: {e}")))?;
        check_elf(&bytes, &origin)?;
        Binary::open(path, origin)
    }

    /// Loads a kernel object from memory (through an anonymous file).
    pub fn from_data(data: &[u8]) -> R<Binary> {
        check_elf(data, "the data")?;
        // SAFETY: a plain syscall with a static name; the descriptor is closed below.
        let fd = unsafe { libc::memfd_create(c"acl-twin-binary".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return fail(
                ACL_ERROR_RT_INTERNAL_ERROR,
                format!("memfd_create: {}", std::io::Error::last_os_error()),
            );
        }
        let mut written = 0;
        while written < data.len() {
            // SAFETY: writes from `data`, which is valid for its length.
            let n =
                unsafe { libc::write(fd, data[written..].as_ptr().cast(), data.len() - written) };
            if n <= 0 {
                // SAFETY: our descriptor.
                unsafe { libc::close(fd) };
                return fail(
                    ACL_ERROR_RT_INTERNAL_ERROR,
                    format!("writing the binary: {}", std::io::Error::last_os_error()),
                );
            }
            written += n as usize;
        }
        let path = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
        let r = Binary::open(&path, format!("{} bytes of data", data.len()));
        // SAFETY: our descriptor; the loaded object keeps its own mapping.
        unsafe { libc::close(fd) };
        r
    }

    fn open(path: &CStr, origin: String) -> R<Binary> {
        export_self()?;
        // SAFETY: loading runs the object's initialisers: a kernel object's are the C++ static
        // initialisers of its translation units.
        let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return fail(ACL_ERROR_PARSE_FILE, format!("{origin}: {}", dl_error()));
        }
        Ok(Binary {
            handle: h as usize,
            origin,
        })
    }

    /// Kernel `name` of this binary.
    pub fn function(&self, name: &str, binary: usize) -> R<Function> {
        let sym = |prefix: &str| -> Option<*mut c_void> {
            let s = CString::new(format!("{prefix}{name}")).ok()?;
            // SAFETY: a live dlopen handle and a NUL-terminated name.
            let p = unsafe { libc::dlsym(self.handle as *mut c_void, s.as_ptr()) };
            (!p.is_null()).then_some(p)
        };
        let (Some(entry), Some(sig)) = (sym("asc_twin_entry_"), sym("asc_twin_sig_")) else {
            return fail(
                ACL_ERROR_RT_KERNEL_LOOKUP,
                format!("{} has no kernel `{name}`", self.origin),
            );
        };
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        // SAFETY: the two symbols are the trampoline and signature query ASC_TWIN_KERNEL
        // generates for kernel `name` (the names say so; the binary's contract above).
        let kernel = unsafe {
            Kernel::from_trampoline(
                name,
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut u8)>(entry),
                std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut *const ParamInfo) -> u32,
                >(sig),
            )
        };
        Ok(Function { kernel, binary })
    }
}

/// A registered binary by handle.
pub(crate) fn binary(rt: &crate::runtime::Runtime, h: aclrtBinHandle) -> R<Arc<Binary>> {
    crate::runtime::lookup(&rt.handles.binaries, h, "binary handle")
}
