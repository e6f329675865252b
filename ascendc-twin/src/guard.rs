//! Block stacks with guard regions, and stack overflows turned into named faults.
//!
//! Every block runs on a stack of its own ([`GuardedStack`]): [`STACK_BYTES`] usable, committed
//! by the OS only when touched, below them a [`GUARD_BYTES`] region that is never mapped
//! readable. A kernel that overflows its stack touches the guard region and the CPU raises
//! SIGSEGV. On x86_64 Linux the twin catches that signal on an alternate signal stack and, when
//! the faulting address is in the guard region of the block running on that thread and the block
//! was executing kernel code (not the twin's own runtime, which may hold locks), makes the
//! block's coroutine return [`ASC_TWIN_BLOCK_STACK_OVERFLOW`] at once: the block ends with a fault naming
//! kernel, rank and block, and the process goes on. The abandoned frames are not unwound (C++
//! destructors of the kernel's locals do not run; they only own UB and GM handles). Any other
//! SIGSEGV/SIGBUS goes to the handler that was installed before (Rust's own, or the default).
//! Kernels are compiled with stack-clash protection, so a large frame probes its pages one by
//! one and lands in the guard region instead of jumping over it.
//!
//! On other platforms an overflow still hits the guard region and stops the process.

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, AtomicU32, Ordering};

use corosensei::stack::{Stack, StackPointer};
use corosensei::trap::CoroutineTrapHandler;

use crate::abi::ASC_TWIN_BLOCK_STACK_OVERFLOW;

/// Usable stack of one block. AscendC kernels keep their data in UB and GM, so their frames are
/// small (TPipe, tensors, locals); 1 MiB leaves room for user kernels with larger locals.
pub(crate) const STACK_BYTES: usize = 1024 * 1024;
/// Inaccessible region below every block stack.
pub(crate) const GUARD_BYTES: usize = 64 * 1024;

/// A block stack: `[map, map + GUARD_BYTES)` inaccessible, then `STACK_BYTES` read/write.
pub(crate) struct GuardedStack {
    map: usize,
    len: usize,
}

impl GuardedStack {
    pub fn new() -> std::io::Result<GuardedStack> {
        let len = GUARD_BYTES + STACK_BYTES;
        // SAFETY: reserves address space with no access; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let s = GuardedStack {
            map: p as usize,
            len,
        };
        // SAFETY: the range lies inside the mapping made above.
        let rc = unsafe {
            libc::mprotect(
                (s.map + GUARD_BYTES) as *mut libc::c_void,
                STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(s)
    }

    /// The guard region `[lo, hi)`.
    pub fn guard(&self) -> (usize, usize) {
        (self.map, self.map + GUARD_BYTES)
    }
}

impl Drop for GuardedStack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, which no coroutine uses any more.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.len) };
    }
}

// SAFETY: `base` is the top of the read/write range and `limit` the bottom of the guard region,
// both page aligned; the stack has a guard region and far more than MIN_STACK_SIZE usable bytes.
unsafe impl Stack for GuardedStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.map + self.len).expect("mapping is not at address 0")
    }

    fn limit(&self) -> StackPointer {
        StackPointer::new(self.map).expect("mapping is not at address 0")
    }
}

/// Where the block running on this thread overflows to, and how to end it.
#[derive(Clone, Copy)]
pub(crate) struct TrapSite {
    pub handler: CoroutineTrapHandler<i32>,
    pub guard: (usize, usize),
    /// The block's runtime depth (> 0 while the twin's own code runs on its stack).
    pub depth: *const AtomicU32,
}

thread_local! {
    /// The trap site of the block this worker is running (None between blocks).
    static SITE: Cell<Option<TrapSite>> = const { Cell::new(None) };
}

/// Sets (Some) or clears (None) the trap site of this thread, around resuming a block.
pub(crate) fn set_site(site: Option<TrapSite>) {
    SITE.with(|s| s.set(site));
}

/// Counts nested twin-runtime calls on a block's stack (`depth` of its [`TrapSite`]).
///
/// Only the thread running the block writes its depth (every twin call enters here on the
/// block's own stack), and the one reader that must see it exactly, the fault handler, runs on
/// that same thread. So the count is a plain load and store, not a locked read-modify-write: it
/// is taken twice per twin call, and the locked pair was a third to a half of the cycles of
/// the small calls (SetFlag, WaitFlag, GetSystemCycle) in an 8-rank 64 KiB AllReduce. The
/// compiler fences keep the count around the runtime code it brackets, as the handler sees it.
pub(crate) struct RuntimeCall<'a>(&'a AtomicU32);

impl<'a> RuntimeCall<'a> {
    pub fn enter(depth: &'a AtomicU32) -> RuntimeCall<'a> {
        depth.store(depth.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        RuntimeCall(depth)
    }
}

impl Drop for RuntimeCall<'_> {
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        self.0
            .store(self.0.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod handler {
    use super::*;
    use std::sync::Once;

    static INSTALL: Once = Once::new();
    /// The actions replaced for SIGSEGV and SIGBUS (written once, before the handler can run).
    static mut PREVIOUS: [std::mem::MaybeUninit<libc::sigaction>; 2] = [
        std::mem::MaybeUninit::zeroed(),
        std::mem::MaybeUninit::zeroed(),
    ];

    const ALT_BYTES: usize = 64 * 1024;

    /// Installs the fault handler (once per process).
    pub fn install() {
        INSTALL.call_once(|| {
            for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
                // SAFETY: a zeroed sigaction is a valid starting value; the handler has the
                // SA_SIGINFO signature; PREVIOUS[i] is written here, before any fault can reach
                // `on_fault`, and never again.
                unsafe {
                    let mut act: libc::sigaction = std::mem::zeroed();
                    act.sa_sigaction = on_fault as *const () as usize;
                    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut act.sa_mask);
                    let prev = std::ptr::addr_of_mut!(PREVIOUS[i]);
                    libc::sigaction(sig, &act, (*prev).as_mut_ptr());
                }
            }
        });
    }

    /// An alternate signal stack for the calling thread, removed when dropped.
    pub struct AltStack(usize);

    impl AltStack {
        pub fn new() -> Option<AltStack> {
            // SAFETY: a fresh anonymous mapping, checked; sigaltstack gets a stack_t describing
            // exactly that mapping.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    ALT_BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    return None;
                }
                let ss = libc::stack_t {
                    ss_sp: p,
                    ss_flags: 0,
                    ss_size: ALT_BYTES,
                };
                if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
                    libc::munmap(p, ALT_BYTES);
                    return None;
                }
                Some(AltStack(p as usize))
            }
        }
    }

    impl Drop for AltStack {
        fn drop(&mut self) {
            // SAFETY: disables the alternate stack of this thread (no handler runs on it now,
            // since this runs outside any signal handler), then unmaps it.
            unsafe {
                let ss = libc::stack_t {
                    ss_sp: std::ptr::null_mut(),
                    ss_flags: libc::SS_DISABLE,
                    ss_size: 0,
                };
                libc::sigaltstack(&ss, std::ptr::null_mut());
                libc::munmap(self.0 as *mut libc::c_void, ALT_BYTES);
            }
        }
    }

    unsafe extern "C" fn on_fault(
        sig: libc::c_int,
        info: *mut libc::siginfo_t,
        ctx: *mut libc::c_void,
    ) {
        let site = SITE.with(|s| s.get());
        if let Some(site) = site {
            // SAFETY: the kernel passes a valid siginfo_t and ucontext_t to an SA_SIGINFO handler.
            let (addr, uc) = unsafe {
                (
                    (*info).si_addr() as usize,
                    &mut *(ctx as *mut libc::ucontext_t),
                )
            };
            let sp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
            if addr >= site.guard.0 && addr < site.guard.1 && site.handler.stack_ptr_in_bounds(sp) {
                // SAFETY: `depth` points into the running block's status, alive while it runs.
                let depth = unsafe { (*site.depth).load(Ordering::Relaxed) };
                if depth == 0 {
                    // SAFETY: the fault's stack pointer is inside the running coroutine (checked
                    // above) and the registers are updated as the returned set says; the kernel
                    // code abandoned here holds no lock of the twin (depth 0).
                    let regs = unsafe {
                        site.handler
                            .setup_trap_handler(|| ASC_TWIN_BLOCK_STACK_OVERFLOW)
                    };
                    uc.uc_mcontext.gregs[libc::REG_RIP as usize] = regs.rip as i64;
                    uc.uc_mcontext.gregs[libc::REG_RSP as usize] = regs.rsp as i64;
                    uc.uc_mcontext.gregs[libc::REG_RBP as usize] = regs.rbp as i64;
                    uc.uc_mcontext.gregs[libc::REG_RDI as usize] = regs.rdi as i64;
                    uc.uc_mcontext.gregs[libc::REG_RSI as usize] = regs.rsi as i64;
                    return;
                }
                let msg = b"aiv twin: a kernel block overflowed its stack inside the twin's runtime; cannot recover\n";
                // SAFETY: write(2) and abort(3) are async-signal-safe.
                unsafe {
                    libc::write(2, msg.as_ptr().cast(), msg.len());
                    libc::abort();
                }
            }
        }
        let i = usize::from(sig == libc::SIGBUS);
        // SAFETY: PREVIOUS was written before this handler was installed.
        let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS[i])).assume_init_ref() };
        if prev.sa_flags & libc::SA_SIGINFO != 0 && prev.sa_sigaction > 1 {
            // SAFETY: the previous handler was installed with this signature.
            let f: unsafe extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(prev.sa_sigaction) };
            // SAFETY: the previous handler, called as the kernel would have called it, with
            // this signal's own arguments.
            unsafe { f(sig, info, ctx) };
        } else if prev.sa_sigaction > 1 {
            // SAFETY: as above, the one-argument form.
            let f: unsafe extern "C" fn(libc::c_int) =
                unsafe { std::mem::transmute(prev.sa_sigaction) };
            // SAFETY: as above, with the one argument this form takes.
            unsafe { f(sig) };
        } else {
            // Default (or ignored): restore the default action; returning re-runs the faulting
            // instruction, which then takes it.
            // SAFETY: resets the disposition of `sig` to SIG_DFL.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod handler {
    /// No recovery on this platform: an overflow hits the guard region and stops the process.
    pub fn install() {}

    /// Placeholder: no alternate signal stack is needed without the handler.
    pub struct AltStack;

    impl AltStack {
        pub fn new() -> Option<AltStack> {
            Some(AltStack)
        }
    }
}

pub(crate) use handler::{install, AltStack};
