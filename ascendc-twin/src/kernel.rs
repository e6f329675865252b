//! Kernels with ordinary signatures: `extern "C" __global__ __aicore__ void name(GM_ADDR x,
//! uint32_t n, Tiling t, …)`, launched with typed arguments.
//!
//! The host packs a kernel's arguments into one **argument block**, laid out as the BiSheng
//! compiler's kernel ABI lays it out for `aclrtLaunchKernelWithHostArgs` (CANN's host-stub
//! generator states the rule): parameters in declaration order, each at an offset aligned to
//! its type's alignment rounded up to a multiple of 4 bytes (so `bool` and `uint16_t` take
//! 4-aligned slots, pointers and 64-bit values 8-aligned ones), structs copied whole. On the twin,
//! a trampoline generated at build time (`asc_twin_launch.h`, used by the `ascendc-build` crate)
//! knows the kernel's C++ function type: it unpacks the block with the same rule and calls the
//! kernel. The trampoline also exports each parameter's size and alignment, so a launch whose
//! arguments do not match the kernel's parameters in number, size or alignment is an error, not
//! a kernel reading garbage. (Types of the same size and alignment, say `u32` and `f32`, cannot
//! be told apart this way.)
//!
//! On the NPU the same bytes are what `aclrtLaunchKernelWithHostArgs` takes, for kernels built
//! with overflow recording off (`ascendc-build`'s NPU mode; with it on, the host stub would
//! append the 8-byte address of an overflow-check GM buffer). UNTESTED here: no NPU.
//!
//! ```
//! use ascendc_twin::{ArgBlock, GmAddr};
//! #[repr(C)]
//! #[derive(Clone, Copy)]
//! struct Tiling { rows: u32, cols: u32 }
//! // SAFETY: two u32 fields, no padding.
//! unsafe impl bytemuck::Zeroable for Tiling {}
//! // SAFETY: as above.
//! unsafe impl bytemuck::Pod for Tiling {}
//! let args = ArgBlock::new()
//!     .arg(GmAddr(0x1000))
//!     .arg(true)
//!     .arg(7u16)
//!     .arg(Tiling { rows: 2, cols: 3 });
//! // pointer at 0, bool at 8, u16 in the next 4-aligned slot (12), the struct at 16
//! assert_eq!(args.offsets(), [0, 8, 12, 16]);
//! assert_eq!(args.as_bytes().len(), 24);
//! ```

use bytemuck::NoUninit;
use smallvec::SmallVec;

use crate::device::KernelFn;
use crate::error::TwinError;

/// Size and alignment of one kernel parameter (C++ `sizeof` / `alignof`), as the kernel's
/// generated trampoline reports them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// `sizeof` of the parameter type.
    pub size: u32,
    /// `alignof` of the parameter type.
    pub align: u32,
}

// The same numbers as the static_asserts after `asc_twin::ParamInfo` in asc_twin_launch.h.
const _: () = {
    assert!(std::mem::size_of::<ParamInfo>() == 8);
    assert!(std::mem::offset_of!(ParamInfo, size) == 0);
    assert!(std::mem::offset_of!(ParamInfo, align) == 4);
};

impl ParamInfo {
    /// Alignment of the parameter's slot in the argument block: its alignment rounded up to a
    /// multiple of 4 (BiSheng kernel ABI).
    pub fn slot_align(&self) -> usize {
        slot_align(self.align as usize)
    }
}

fn slot_align(align: usize) -> usize {
    align.div_ceil(4) * 4
}

/// Signature query a generated trampoline exports: returns the parameter count and points
/// `*params` at that many [`ParamInfo`]s (static data of the kernel's library).
pub type SignatureFn = unsafe extern "C" fn(params: *mut *const ParamInfo) -> u32;

/// A GM address as a kernel parameter (`GM_ADDR`, `__gm__ T *`): 8 bytes.
///
/// It is [`bytemuck::Pod`], so it may also be a field of an argument struct passed by value.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GmAddr(pub u64);

// SAFETY: a transparent u64.
unsafe impl bytemuck::Zeroable for GmAddr {}
// SAFETY: a transparent u64: no padding, every bit pattern valid.
unsafe impl bytemuck::Pod for GmAddr {}

impl GmAddr {
    /// The null GM address (a kernel parameter the kernel does not use).
    pub const NULL: GmAddr = GmAddr(0);

    /// This address plus `bytes`.
    pub fn offset(self, bytes: u64) -> GmAddr {
        GmAddr(self.0 + bytes)
    }
}

/// Where the binaries of a kernel library are (`ascendc-build` writes them into each of its
/// kernel statics): a runtime that loads kernels by name from a binary (the ACL runtime: an
/// NPU, or acl-twin) loads the library's binary and finds the kernel in it.
///
/// The paths are the build's output files, as the build script saw them: a program runs its
/// kernels through ACL where it was built (or where those files were copied to the same paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelBinaries {
    /// The library's name (`ascendc_build::Build::compile`'s argument).
    pub library: &'static str,
    /// The kernels linked into a shared object for acl-twin (`ascendc_build::Build::twin_binary`).
    pub twin: Option<&'static str>,
    /// The device binary for the NPU's vector cores (`ascendc_build::Build::npu`).
    pub npu: Option<&'static str>,
}

/// A kernel compiled for the twin with a generated trampoline (see the `ascendc-build` crate,
/// which writes one `static` of this type per kernel it is told to build).
#[derive(Clone, Copy)]
pub struct Kernel {
    name: &'static str,
    entry: KernelFn,
    signature: SignatureFn,
    binaries: Option<&'static KernelBinaries>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).finish()
    }
}

impl Kernel {
    /// A kernel from its generated trampoline and signature query.
    ///
    /// # Safety
    /// `entry` must be the `asc_twin_entry_<name>` trampoline and `signature` the
    /// `asc_twin_sig_<name>` query that `ASC_TWIN_KERNEL(name)` (asc_twin_launch.h) generates
    /// for one kernel: `entry` unpacks an argument block with the layout `signature` reports.
    pub const unsafe fn from_trampoline(
        name: &'static str,
        entry: KernelFn,
        signature: SignatureFn,
    ) -> Kernel {
        Kernel {
            name,
            entry,
            signature,
            binaries: None,
        }
    }

    /// This kernel, with the binaries of its library: what a runtime that loads kernels by
    /// name from a binary (ACL's `aclrtBinaryLoadFromFile` + `aclrtBinaryGetFunction`) loads it
    /// from. `ascendc-build`'s statics carry them.
    pub const fn with_binaries(self, binaries: &'static KernelBinaries) -> Kernel {
        Kernel {
            binaries: Some(binaries),
            ..self
        }
    }

    /// The binaries of the kernel's library, if it was built with them ([`Kernel::with_binaries`]).
    pub fn binaries(&self) -> Option<&'static KernelBinaries> {
        self.binaries
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The trampoline: what [`crate::Device::launch`] calls with the address of an argument
    /// block.
    pub fn entry(&self) -> KernelFn {
        self.entry
    }

    /// The kernel's parameters, in declaration order.
    pub fn params(&self) -> &'static [ParamInfo] {
        let mut p: *const ParamInfo = std::ptr::null();
        // SAFETY: `signature` is the kernel's generated query (constructor contract); it writes
        // a pointer to `n` static ParamInfo entries.
        let n = unsafe { (self.signature)(&mut p) } as usize;
        if n == 0 || p.is_null() {
            return &[];
        }
        // SAFETY: as above: `p` points at `n` entries that live as long as the program.
        unsafe { std::slice::from_raw_parts(p, n) }
    }

    /// Bytes of the argument block this kernel takes.
    pub fn args_bytes(&self) -> usize {
        layout(
            self.params()
                .iter()
                .map(|p| (p.size as usize, p.slot_align())),
        )
        .1
    }

    /// `Ok` if `args` matches this kernel's parameters one by one in size and alignment (not
    /// type: a `u32` passes for a `float`); else an error naming the first parameter that
    /// differs (or the count).
    pub fn check_args(&self, args: &ArgBlock) -> Result<(), TwinError> {
        let want = self.params();
        let got = &args.params;
        let mismatch = |what: String| TwinError::Args {
            kernel: self.name.to_string(),
            message: what,
        };
        if want.len() != got.len() {
            return Err(mismatch(format!(
                "the kernel takes {} parameters ({}), the launch gives {} ({})",
                want.len(),
                describe(want),
                got.len(),
                describe(got)
            )));
        }
        for (i, (w, g)) in want.iter().zip(got).enumerate() {
            if w != g {
                return Err(mismatch(format!(
                    "parameter {i} is {} bytes aligned to {}, the launch gives {} bytes aligned to {}",
                    w.size, w.align, g.size, g.align
                )));
            }
        }
        Ok(())
    }
}

fn describe(p: &[ParamInfo]) -> String {
    let sizes: Vec<String> = p.iter().map(|p| format!("{}", p.size)).collect();
    format!("sizes {}", sizes.join(", "))
}

/// Offsets of parameters of the given (size, slot alignment) and the block's total bytes.
fn layout(params: impl Iterator<Item = (usize, usize)>) -> (Vec<usize>, usize) {
    let mut offsets = Vec::new();
    let mut end = 0usize;
    for (size, align) in params {
        let at = end.div_ceil(align) * align;
        offsets.push(at);
        end = at + size;
    }
    (offsets, end)
}

/// The argument block of one kernel launch, built parameter by parameter (see the module docs
/// for the layout).
///
/// Up to 64 bytes in up to 8 parameters are kept inline (a kernel taking the GM address of its
/// argument struct, as most do, needs 8 bytes in one): building one then costs no allocation.
/// Larger blocks spill to the heap.
#[derive(Clone, Debug, Default)]
pub struct ArgBlock {
    bytes: SmallVec<[u8; ARGS_INLINE]>,
    params: SmallVec<[ParamInfo; PARAMS_INLINE]>,
    offsets: SmallVec<[usize; PARAMS_INLINE]>,
}

/// Argument bytes an [`ArgBlock`] (and a launch's copy of them) keeps inline.
pub(crate) const ARGS_INLINE: usize = 64;
/// Parameters an [`ArgBlock`] keeps inline.
const PARAMS_INLINE: usize = 8;

impl ArgBlock {
    /// An empty block (a kernel without parameters).
    pub fn new() -> ArgBlock {
        ArgBlock::default()
    }

    /// Appends the next parameter: a fixed-width integer, float, `bool`, [`GmAddr`], or a
    /// `#[repr(C)]` struct passed by value (any size).
    pub fn arg<T: NoUninit>(mut self, value: T) -> ArgBlock {
        self.push(&value);
        self
    }

    /// [`ArgBlock::arg`] in place.
    pub fn push<T: NoUninit>(&mut self, value: &T) {
        let size = std::mem::size_of::<T>();
        let align = std::mem::align_of::<T>();
        let at = self.bytes.len().div_ceil(slot_align(align)) * slot_align(align);
        self.bytes.resize(at, 0);
        self.bytes.extend_from_slice(bytemuck::bytes_of(value));
        self.offsets.push(at);
        self.params.push(ParamInfo {
            size: size as u32,
            align: align as u32,
        });
    }

    /// The packed block.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Byte offset of each parameter.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Size and alignment of each parameter.
    pub fn params(&self) -> &[ParamInfo] {
        &self.params
    }
}

/// An argument block from a list of parameters: `args![x, n, tiling]` is
/// `ArgBlock::new().arg(x).arg(n).arg(tiling)`.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        $crate::ArgBlock::new() $(.arg($a))*
    };
}

/// Includes the kernel statics `ascendc-build` generated for the library `name` in the crate's
/// `OUT_DIR` (write it where the kernels should live, e.g. inside `mod kernels { … }`).
#[macro_export]
macro_rules! include_kernels {
    ($name:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_follows_the_bisheng_rule() {
        #[repr(C, align(16))]
        #[derive(Clone, Copy)]
        struct Wide([u8; 32]);
        // SAFETY: a byte array, no padding (32 is a multiple of 16).
        unsafe impl bytemuck::Zeroable for Wide {}
        // SAFETY: as above.
        unsafe impl bytemuck::Pod for Wide {}
        let a = ArgBlock::new()
            .arg(1u8)
            .arg(2u64)
            .arg(3u16)
            .arg(4u16)
            .arg(Wide([5; 32]))
            .arg(6i32);
        assert_eq!(a.offsets(), [0, 8, 16, 20, 32, 64]);
        assert_eq!(a.as_bytes().len(), 68);
        assert_eq!(a.as_bytes()[8], 2);
        assert_eq!(a.as_bytes()[20], 4);
        assert!(a.as_bytes()[32..64].iter().all(|&b| b == 5));
        let (offsets, end) = layout(a.params().iter().map(|p| (p.size as usize, p.slot_align())));
        assert_eq!((offsets.as_slice(), end), (a.offsets(), 68));
    }

    #[test]
    fn the_args_macro_builds_the_same_block() {
        let a = args![GmAddr(8), 3u32, true];
        let b = ArgBlock::new().arg(GmAddr(8)).arg(3u32).arg(true);
        assert_eq!(a.as_bytes(), b.as_bytes());
        assert_eq!(a.offsets(), [0, 8, 12]);
    }
}
