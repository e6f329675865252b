//! Atomic reduce on the UB -> GM store path (SetAtomicAdd/Max/Min), for the types Atlas A2
//! supports: f32, f16, bf16, i32, i16, i8.
//!
//! Many blocks of many ranks may reduce into the same GM range at once. Each 4 KiB page of GM is
//! guarded by one of [`STRIPES`] striped locks; a store takes the lock of each page it touches, one
//! page at a time, and reads/modifies/writes the elements with relaxed atomic accesses (so that
//! concurrent pollers reading flags with atomic loads stay defined). The locks make each element's
//! update indivisible with respect to every other atomic store, which is what the hardware
//! guarantees; nothing is serialised globally.
//!
//! Numerics: floats are combined in f32 and rounded to nearest-even into the storage type (for f32
//! that is the IEEE sum itself). Integer add wraps on overflow (two's complement), which is an
//! assumption: the public docs do not say what the atomic units do on overflow.

use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU8, Ordering};

use half::{bf16, f16};
use parking_lot::Mutex;

use crate::padded::Padded;

/// Atomic store mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// Plain store.
    None,
    /// dst = dst + src.
    Add,
    /// dst = max(dst, src).
    Max,
    /// dst = min(dst, src).
    Min,
}

/// Element types with atomic store support on Atlas A2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// 32-bit signed integer.
    I32,
    /// 16-bit signed integer.
    I16,
    /// 8-bit signed integer.
    I8,
}

impl AtomicType {
    /// Element size in bytes.
    pub fn size(self) -> usize {
        match self {
            AtomicType::F32 | AtomicType::I32 => 4,
            AtomicType::F16 | AtomicType::Bf16 | AtomicType::I16 => 2,
            AtomicType::I8 => 1,
        }
    }
}

const STRIPES: usize = 1024;
const PAGE_SHIFT: u32 = 12;

/// One lock per stripe of pages, each on its own cache lines: workers reducing into
/// neighbouring pages must not contend for one line.
#[allow(clippy::declare_interior_mutable_const)]
const STRIPE_INIT: Padded<Mutex<()>> = Padded(Mutex::new(()));
static STRIPE_LOCKS: [Padded<Mutex<()>>; STRIPES] = [STRIPE_INIT; STRIPES];

#[inline]
fn combine_f32(op: AtomicOp, a: f32, b: f32) -> f32 {
    match op {
        AtomicOp::Add => a + b,
        AtomicOp::Max => {
            if b > a {
                b
            } else {
                a
            }
        }
        AtomicOp::Min => {
            if b < a {
                b
            } else {
                a
            }
        }
        AtomicOp::None => b,
    }
}

macro_rules! combine_int {
    ($op:expr, $a:expr, $b:expr) => {
        match $op {
            AtomicOp::Add => $a.wrapping_add($b),
            AtomicOp::Max => $a.max($b),
            AtomicOp::Min => $a.min($b),
            AtomicOp::None => $b,
        }
    };
}

/// Reduces `len` bytes from `src` into GM at `dst` element by element.
///
/// # Safety
/// `dst..dst+len` must be inside a live GM allocation and aligned to `ty.size()`, `len` a
/// multiple of `ty.size()`, and `src..src+len` readable and not overlapping it.
pub(crate) unsafe fn reduce_store(
    op: AtomicOp,
    ty: AtomicType,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    let mut off = 0usize;
    while off < len {
        let addr = dst as usize + off;
        let page_end = ((addr >> PAGE_SHIFT) + 1) << PAGE_SHIFT;
        let n = (page_end - addr).min(len - off);
        let _guard = STRIPE_LOCKS[(addr >> PAGE_SHIFT) % STRIPES].lock();
        if len > BULK {
            // SAFETY: as below; bulk ranges are data, never flags that pollers read atomically.
            unsafe { reduce_bulk(op, ty, addr, src.add(off), n) };
        } else {
            // SAFETY: forwarded from the caller; [addr, addr+n) is a sub-range of dst and
            // src+off..src+off+n a sub-range of src.
            unsafe { reduce_run(op, ty, addr, src.add(off), n) };
        }
        off += n;
    }
    // Make the reduced values visible before any later flag store of this block.
    fence(Ordering::Release);
}

/// Stores longer than this reduce with plain (vectorisable) loads and stores under the page lock;
/// shorter ones (flag cells, counters that other blocks poll) element-wise with atomic accesses.
const BULK: usize = crate::gm::SMALL_ACCESS;

macro_rules! bulk_loop {
    ($op:expr, $t:ty, $addr:expr, $src:expr, $n:expr, |$a:ident, $b:ident| $add:expr, $max:expr, $min:expr) => {{
        let d = $addr as *mut $t;
        let s = $src as *const $t;
        let count = $n / std::mem::size_of::<$t>();
        // SAFETY: the caller guarantees d is aligned for $t with `count` elements inside GM under
        // this page's lock, and `count` elements readable at s (read unaligned).
        unsafe {
            match $op {
                AtomicOp::Add => {
                    for i in 0..count {
                        let ($a, $b) = (d.add(i).read(), s.add(i).read_unaligned());
                        d.add(i).write($add);
                    }
                }
                AtomicOp::Max => {
                    for i in 0..count {
                        let ($a, $b) = (d.add(i).read(), s.add(i).read_unaligned());
                        d.add(i).write($max);
                    }
                }
                AtomicOp::Min => {
                    for i in 0..count {
                        let ($a, $b) = (d.add(i).read(), s.add(i).read_unaligned());
                        d.add(i).write($min);
                    }
                }
                AtomicOp::None => {}
            }
        }
    }};
}

/// Plain-access reduce of one run inside a single locked page.
///
/// # Safety
/// As [`reduce_store`]; additionally no other thread may access `[addr, addr+n)` except under
/// the same page lock (true for correct kernels: bulk atomic destinations are data, ordered by
/// flags against every plain access).
#[allow(clippy::macro_metavars_in_unsafe)]
unsafe fn reduce_bulk(op: AtomicOp, ty: AtomicType, addr: usize, src: *const u8, n: usize) {
    match ty {
        AtomicType::F32 => bulk_loop!(
            op,
            f32,
            addr,
            src,
            n,
            |a, b| a + b,
            if b > a { b } else { a },
            if b < a { b } else { a }
        ),
        AtomicType::I32 => bulk_loop!(
            op,
            i32,
            addr,
            src,
            n,
            |a, b| a.wrapping_add(b),
            a.max(b),
            a.min(b)
        ),
        AtomicType::I16 => bulk_loop!(
            op,
            i16,
            addr,
            src,
            n,
            |a, b| a.wrapping_add(b),
            a.max(b),
            a.min(b)
        ),
        AtomicType::I8 => bulk_loop!(
            op,
            i8,
            addr,
            src,
            n,
            |a, b| a.wrapping_add(b),
            a.max(b),
            a.min(b)
        ),
        AtomicType::F16 => bulk_loop!(
            op,
            u16,
            addr,
            src,
            n,
            |a, b| f16::from_f32(f16::from_bits(a).to_f32() + f16::from_bits(b).to_f32()).to_bits(),
            f16::from_f32(combine_f32(
                AtomicOp::Max,
                f16::from_bits(a).to_f32(),
                f16::from_bits(b).to_f32()
            ))
            .to_bits(),
            f16::from_f32(combine_f32(
                AtomicOp::Min,
                f16::from_bits(a).to_f32(),
                f16::from_bits(b).to_f32()
            ))
            .to_bits()
        ),
        AtomicType::Bf16 => bulk_loop!(
            op,
            u16,
            addr,
            src,
            n,
            |a, b| bf16::from_f32(bf16::from_bits(a).to_f32() + bf16::from_bits(b).to_f32())
                .to_bits(),
            bf16::from_f32(combine_f32(
                AtomicOp::Max,
                bf16::from_bits(a).to_f32(),
                bf16::from_bits(b).to_f32()
            ))
            .to_bits(),
            bf16::from_f32(combine_f32(
                AtomicOp::Min,
                bf16::from_bits(a).to_f32(),
                bf16::from_bits(b).to_f32()
            ))
            .to_bits()
        ),
    }
}

/// # Safety
/// As [`reduce_store`], for one run inside a single locked page.
unsafe fn reduce_run(op: AtomicOp, ty: AtomicType, addr: usize, src: *const u8, n: usize) {
    match ty {
        AtomicType::F32 | AtomicType::I32 => {
            for i in 0..n / 4 {
                // SAFETY: addr is 4-aligned (checked by the caller) and inside GM.
                let cell = unsafe { &*((addr + 4 * i) as *const AtomicU32) };
                // SAFETY: src+4i..src+4i+4 is inside the source.
                let s = unsafe { std::ptr::read_unaligned(src.add(4 * i) as *const u32) };
                let d = cell.load(Ordering::Relaxed);
                let r = if ty == AtomicType::F32 {
                    combine_f32(op, f32::from_bits(d), f32::from_bits(s)).to_bits()
                } else {
                    combine_int!(op, d as i32, s as i32) as u32
                };
                cell.store(r, Ordering::Relaxed);
            }
        }
        AtomicType::F16 | AtomicType::Bf16 | AtomicType::I16 => {
            for i in 0..n / 2 {
                // SAFETY: addr is 2-aligned (checked by the caller) and inside GM.
                let cell = unsafe { &*((addr + 2 * i) as *const AtomicU16) };
                // SAFETY: src+2i..src+2i+2 is inside the source.
                let s = unsafe { std::ptr::read_unaligned(src.add(2 * i) as *const u16) };
                let d = cell.load(Ordering::Relaxed);
                let r = match ty {
                    AtomicType::F16 => f16::from_f32(combine_f32(
                        op,
                        f16::from_bits(d).to_f32(),
                        f16::from_bits(s).to_f32(),
                    ))
                    .to_bits(),
                    AtomicType::Bf16 => bf16::from_f32(combine_f32(
                        op,
                        bf16::from_bits(d).to_f32(),
                        bf16::from_bits(s).to_f32(),
                    ))
                    .to_bits(),
                    _ => combine_int!(op, d as i16, s as i16) as u16,
                };
                cell.store(r, Ordering::Relaxed);
            }
        }
        AtomicType::I8 => {
            for i in 0..n {
                // SAFETY: addr+i is inside GM.
                let cell = unsafe { &*((addr + i) as *const AtomicU8) };
                // SAFETY: src+i is inside the source.
                let s = unsafe { *src.add(i) } as i8;
                let d = cell.load(Ordering::Relaxed) as i8;
                cell.store(combine_int!(op, d, s) as u8, Ordering::Relaxed);
            }
        }
    }
}
