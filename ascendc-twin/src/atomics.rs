//! Atomic reduce on the UB -> GM store path (SetAtomicAdd/Max/Min), for the types Atlas A2
//! supports: f32, f16, bf16, i32, i16, i8.
//!
//! Many blocks of many ranks may reduce into the same GM range at once. Each 4 KiB page of GM is
//! guarded by one of [`STRIPES`] striped locks of the twin; a store takes the lock of each page it
//! touches, one page at a time, and reduces with compare-and-swaps of the aligned 8-byte words it
//! touches (the one width of every atomic GM access, so concurrent pollers reading flags with
//! atomic loads stay defined), after a release fence (a reduced flag publishes the block's
//! earlier writes, as a plain flag store does). The locks make each element's update
//! indivisible with respect to every other atomic store, which is what the hardware guarantees;
//! nothing is serialised globally.
//!
//! Numerics. The public AscendC docs say which types each mode supports and nothing about
//! rounding, NaN, signed zero or overflow, so the twin assumes, and every rank gets the same bits
//! whatever order the stores arrive in for max/min:
//! * add: the IEEE sum rounded to nearest-even into the storage type (f16/bf16 are added in f32
//!   and rounded once: f32 has more than twice their precision, so this is the correctly rounded
//!   f16/bf16 sum); integers wrap (two's complement);
//! * max/min: IEEE 754-2019 `maximum`/`minimum`: a NaN operand gives NaN, and -0 < +0. Both are
//!   commutative and associative, so the result does not depend on the order of the stores;
//! * every NaN result is the canonical quiet NaN (positive, payload 0): a NaN's payload would
//!   otherwise depend on which operand came first.

use std::sync::atomic::{fence, Ordering};

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

/// The page locks of one twin, each on its own cache lines: workers reducing into neighbouring
/// pages must not contend for one line. In a multi-process job, locks in the header of the
/// window written instead (every process must take the same lock for a page).
pub(crate) struct Stripes {
    local: Box<[Padded<Mutex<()>>]>,
    space: Option<std::sync::Arc<crate::shared::Space>>,
}

impl Default for Stripes {
    fn default() -> Self {
        Stripes::new(None)
    }
}

/// A held page lock.
enum StripeGuard<'a> {
    Local {
        _held: parking_lot::MutexGuard<'a, ()>,
    },
    Shared {
        _held: crate::shared::SharedLock<'a>,
    },
}

impl Stripes {
    /// The locks of a twin; with `space`, the job's.
    pub fn new(space: Option<std::sync::Arc<crate::shared::Space>>) -> Stripes {
        let local = match space {
            Some(_) => Box::default(),
            None => (0..STRIPES).map(|_| Padded(Mutex::new(()))).collect(),
        };
        Stripes { local, space }
    }

    fn lock(&self, addr: usize) -> StripeGuard<'_> {
        match &self.space {
            Some(s) => StripeGuard::Shared {
                _held: s.lock(addr),
            },
            None => StripeGuard::Local {
                _held: self.local[(addr >> PAGE_SHIFT) % STRIPES].lock(),
            },
        }
    }
}

/// The canonical quiet NaN of f32 (positive, payload 0).
const F32_NAN: u32 = 0x7fc0_0000;

/// `a + b`, any NaN result canonical.
#[inline]
fn add_f32(a: f32, b: f32) -> f32 {
    let r = a + b;
    if r.is_nan() {
        f32::from_bits(F32_NAN)
    } else {
        r
    }
}

/// IEEE 754-2019 maximum: NaN if either is NaN (canonical), +0 over -0.
#[inline]
fn max_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::from_bits(F32_NAN)
    } else if a == b {
        // Equal: the same value, or +0 and -0, of which the maximum is +0 (sign bit clear).
        f32::from_bits(a.to_bits() & b.to_bits())
    } else if a > b {
        a
    } else {
        b
    }
}

/// IEEE 754-2019 minimum: NaN if either is NaN (canonical), -0 under +0.
#[inline]
fn min_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::from_bits(F32_NAN)
    } else if a == b {
        f32::from_bits(a.to_bits() | b.to_bits())
    } else if a < b {
        a
    } else {
        b
    }
}

#[inline]
fn combine_f32(op: AtomicOp, a: f32, b: f32) -> f32 {
    match op {
        AtomicOp::Add => add_f32(a, b),
        AtomicOp::Max => max_f32(a, b),
        AtomicOp::Min => min_f32(a, b),
        AtomicOp::None => b,
    }
}

/// `op` on two f16 values (bits), through f32; NaN results canonical (0x7e00).
#[inline]
fn combine_f16(op: AtomicOp, a: u16, b: u16) -> u16 {
    let r = combine_f32(op, f16::from_bits(a).to_f32(), f16::from_bits(b).to_f32());
    if r.is_nan() {
        0x7e00
    } else {
        f16::from_f32(r).to_bits()
    }
}

/// `op` on two bf16 values (bits), through f32; NaN results canonical (0x7fc0).
#[inline]
fn combine_bf16(op: AtomicOp, a: u16, b: u16) -> u16 {
    let r = combine_f32(op, bf16::from_bits(a).to_f32(), bf16::from_bits(b).to_f32());
    if r.is_nan() {
        0x7fc0
    } else {
        bf16::from_f32(r).to_bits()
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
    stripes: &Stripes,
    op: AtomicOp,
    ty: AtomicType,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    // Release this block's earlier writes by the stores below: a poller that sees a reduced
    // flag (a RecordNv1 count) sees what the block wrote before it, as after a plain flag store.
    fence(Ordering::Release);
    let mut off = 0usize;
    while off < len {
        let addr = dst as usize + off;
        let page_end = ((addr >> PAGE_SHIFT) + 1) << PAGE_SHIFT;
        let n = (page_end - addr).min(len - off);
        let _guard = stripes.lock(addr);
        // SAFETY (both arms): forwarded from the caller; [addr, addr+n) is a sub-range of dst
        // and src+off..src+off+n a sub-range of src.
        if len > BULK {
            // Bulk ranges are data, never flags that pollers read atomically; the partial words
            // at their ends go atomically, as another block may store into their other bytes.
            let (head, tail) = crate::mem::partial_words(addr, n);
            let mid = n - head - tail;
            // SAFETY: as above, for three consecutive sub-ranges.
            unsafe {
                let s = src.add(off);
                reduce_run(op, ty, addr, s, head);
                reduce_bulk(op, ty, addr + head, s.add(head), mid);
                reduce_run(op, ty, addr + head + mid, s.add(head + mid), tail);
            }
        } else {
            // SAFETY: as above.
            unsafe { reduce_run(op, ty, addr, src.add(off), n) };
        }
        off += n;
    }
}

/// Stores longer than this reduce with plain (vectorisable) loads and stores under the page lock;
/// shorter ones (flag cells, counters that other blocks poll) element-wise with atomic accesses.
const BULK: usize = crate::mem::SMALL_ACCESS;

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

/// Plain-access reduce of one run inside a single locked page: [`reduce_bulk_portable`],
/// compiled for AVX2 when the CPU has it (8 f32 lanes a step instead of baseline x86-64's 4;
/// the same source, so the same bits: `avx2_bulk_reduce_gives_the_portable_bits` checks both
/// against the element-wise loop of short stores).
///
/// # Safety
/// As [`reduce_bulk_portable`].
unsafe fn reduce_bulk(op: AtomicOp, ty: AtomicType, addr: usize, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above); the rest is forwarded from the caller.
        return unsafe { reduce_bulk_avx2(op, ty, addr, src, n) };
    }
    // SAFETY: forwarded from the caller.
    unsafe { reduce_bulk_portable(op, ty, addr, src, n) }
}

/// [`reduce_bulk_portable`] compiled for AVX2.
///
/// # Safety
/// As [`reduce_bulk_portable`], and the CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn reduce_bulk_avx2(op: AtomicOp, ty: AtomicType, addr: usize, src: *const u8, n: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { reduce_bulk_portable(op, ty, addr, src, n) }
}

/// The loops of [`reduce_bulk`], for any target.
///
/// # Safety
/// As [`reduce_store`]; additionally no other thread may access `[addr, addr+n)` except under
/// the same page lock (true for correct kernels: bulk atomic destinations are data, ordered by
/// flags against every plain access).
#[allow(clippy::macro_metavars_in_unsafe)]
#[inline(always)]
unsafe fn reduce_bulk_portable(
    op: AtomicOp,
    ty: AtomicType,
    addr: usize,
    src: *const u8,
    n: usize,
) {
    match ty {
        AtomicType::F32 => bulk_loop!(
            op,
            f32,
            addr,
            src,
            n,
            |a, b| add_f32(a, b),
            max_f32(a, b),
            min_f32(a, b)
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
            |a, b| combine_f16(AtomicOp::Add, a, b),
            combine_f16(AtomicOp::Max, a, b),
            combine_f16(AtomicOp::Min, a, b)
        ),
        AtomicType::Bf16 => bulk_loop!(
            op,
            u16,
            addr,
            src,
            n,
            |a, b| combine_bf16(AtomicOp::Add, a, b),
            combine_bf16(AtomicOp::Max, a, b),
            combine_bf16(AtomicOp::Min, a, b)
        ),
    }
}

/// `op` of one element of `ty` at `d` with the element at `s` (native byte order), in place.
#[inline]
fn combine_in_place(op: AtomicOp, ty: AtomicType, d: &mut [u8], s: &[u8]) {
    match ty {
        AtomicType::F32 | AtomicType::I32 => {
            let (a, b) = (
                u32::from_ne_bytes(d.try_into().expect("4 bytes")),
                u32::from_ne_bytes(s.try_into().expect("4 bytes")),
            );
            let r = if ty == AtomicType::F32 {
                combine_f32(op, f32::from_bits(a), f32::from_bits(b)).to_bits()
            } else {
                combine_int!(op, a as i32, b as i32) as u32
            };
            d.copy_from_slice(&r.to_ne_bytes());
        }
        AtomicType::F16 | AtomicType::Bf16 | AtomicType::I16 => {
            let (a, b) = (
                u16::from_ne_bytes(d.try_into().expect("2 bytes")),
                u16::from_ne_bytes(s.try_into().expect("2 bytes")),
            );
            let r = match ty {
                AtomicType::F16 => combine_f16(op, a, b),
                AtomicType::Bf16 => combine_bf16(op, a, b),
                _ => combine_int!(op, a as i16, b as i16) as u16,
            };
            d.copy_from_slice(&r.to_ne_bytes());
        }
        AtomicType::I8 => d[0] = combine_int!(op, d[0] as i8, s[0] as i8) as u8,
    }
}

/// Reduces element-wise with atomic compare-and-swaps of the aligned 8-byte words the run
/// touches: the width of every other atomic GM access ([`crate::mem`]), so pollers reading the
/// words race with nothing undefined; a word's bytes outside the run stay as they are.
///
/// # Safety
/// As [`reduce_store`], for one run inside a single locked page.
unsafe fn reduce_run(op: AtomicOp, ty: AtomicType, addr: usize, src: *const u8, n: usize) {
    let size = ty.size();
    let (start, end) = (addr, addr + n);
    let mut w = start & !7;
    while w < end {
        let (lo, hi) = (start.max(w), end.min(w + 8));
        // SAFETY: w is 8-aligned and a word of GM the run touches (GM is whole words, see
        // crate::mem).
        let cell = unsafe { crate::mem::word(w) };
        // SAFETY: [lo, hi) is inside the run, so src + (lo - start) .. + (hi - lo) is inside
        // the source.
        let part = unsafe { std::slice::from_raw_parts(src.add(lo - start), hi - lo) };
        // Elements are aligned to their size (checked by the caller), so none straddles words.
        let reduce = |old: u64| {
            let mut b = old.to_ne_bytes();
            for (d, s) in b[lo - w..hi - w]
                .chunks_exact_mut(size)
                .zip(part.chunks_exact(size))
            {
                combine_in_place(op, ty, d, s);
            }
            Some(u64::from_ne_bytes(b))
        };
        // Relaxed: reduce_store's fence releases; the page lock orders reduces of one word.
        let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, reduce);
        w += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce_f32(op: AtomicOp, vals: &[f32]) -> u32 {
        let stripes = Stripes::default();
        let mut dst = vals[0];
        for v in &vals[1..] {
            // SAFETY: both are one aligned f32 on the stack.
            unsafe {
                reduce_store(
                    &stripes,
                    op,
                    AtomicType::F32,
                    (&mut dst as *mut f32).cast(),
                    (v as *const f32).cast(),
                    4,
                )
            };
        }
        dst.to_bits()
    }

    /// `len` bytes of inputs of type `ty`: one element in four a special value of the type's
    /// width (NaNs with payloads of either sign, infinities of f32, f16 and bf16, both zeros,
    /// the smallest subnormal, extremes, +-1), the rest pseudo-random bits.
    fn bulk_inputs(ty: AtomicType, len: usize, seed: u64) -> Vec<u8> {
        const S32: [u32; 10] = [
            0x7fc0_0001,
            0xffc0_1234,
            0x7f80_0000,
            0xff80_0000,
            0,
            0x8000_0000,
            1,
            0x7f7f_ffff,
            0x3f80_0000,
            0xbf80_0000,
        ];
        const S16: [u16; 12] = [
            0x7e01, 0xfe00, 0x7c00, 0xfc00, 0x7fc1, 0xffc0, 0x7f80, 0xff80, 0, 0x8000, 1, 0x7bff,
        ];
        const S8: [u8; 5] = [0x7f, 0x80, 0, 0xff, 1];
        let mut x = seed;
        let mut out = Vec::with_capacity(len + 4);
        while out.len() < len {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 32) as u32;
            let special = r.is_multiple_of(4);
            let k = (r >> 8) as usize;
            match ty.size() {
                4 => out.extend(if special { S32[k % S32.len()] } else { r }.to_le_bytes()),
                2 => out.extend(
                    if special {
                        S16[k % S16.len()]
                    } else {
                        r as u16
                    }
                    .to_le_bytes(),
                ),
                _ => out.push(if special { S8[k % S8.len()] } else { r as u8 }),
            }
        }
        out.truncate(len);
        out
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_bulk_reduce_gives_the_portable_bits() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let types = [
            AtomicType::F32,
            AtomicType::F16,
            AtomicType::Bf16,
            AtomicType::I32,
            AtomicType::I16,
            AtomicType::I8,
        ];
        for ty in types {
            for op in [AtomicOp::Add, AtomicOp::Max, AtomicOp::Min] {
                // Lengths around the vector widths, and one 4 KiB page.
                for elems in [1usize, 7, 8, 9, 31, 33, 4096 / ty.size()] {
                    let len = elems * ty.size();
                    let src = bulk_inputs(ty, len, 7 + elems as u64);
                    let dst = bulk_inputs(ty, len, 1000 + elems as u64);
                    // u64 backing: aligned for every type. a: AVX2, b: portable, c: the
                    // element-wise atomic loop the short stores take (the reference).
                    let mut a = vec![0u64; len.div_ceil(8)];
                    let mut b = a.clone();
                    let mut c = a.clone();
                    let [pa, pb, pc] = [&mut a, &mut b, &mut c].map(|v| v.as_mut_ptr() as *mut u8);
                    // SAFETY: a, b and c hold len bytes each, aligned to 8; src holds len bytes;
                    // nothing else touches them; the CPU has AVX2 (checked above).
                    let (ra, rb, rc) = unsafe {
                        for p in [pa, pb, pc] {
                            std::ptr::copy_nonoverlapping(dst.as_ptr(), p, len);
                        }
                        reduce_bulk_avx2(op, ty, pa as usize, src.as_ptr(), len);
                        reduce_bulk_portable(op, ty, pb as usize, src.as_ptr(), len);
                        reduce_run(op, ty, pc as usize, src.as_ptr(), len);
                        (
                            std::slice::from_raw_parts(pa, len),
                            std::slice::from_raw_parts(pb, len),
                            std::slice::from_raw_parts(pc, len),
                        )
                    };
                    assert_eq!(ra, rb, "{ty:?} {op:?} {elems} elements: AVX2 vs portable");
                    assert_eq!(
                        rb, rc,
                        "{ty:?} {op:?} {elems} elements: bulk vs element-wise"
                    );
                    if elems >= 31 {
                        assert_ne!(ra, &dst[..], "{ty:?} {op:?} {elems}: nothing reduced");
                    }
                }
            }
        }
    }

    /// The counting cell's store/poll pair, as `RecordNv1` and `Wait1vN` use it: a block writes
    /// data, then adds 1 to lane 0 of a 32-byte cell with an atomic-add store; a poller reads the
    /// whole cell (as its DataCopy does) and, once it sees the count, reads the data. Under Miri
    /// (`cargo +nightly miri test -p ascendc-twin --lib memory_model`) this checks the memory
    /// model itself: the data read must happen after the data write (no data race), and the
    /// cell must be accessed with one atomic width (no mixed-size race).
    #[test]
    fn memory_model_a_poller_that_sees_a_count_sees_the_data_written_before_it() {
        let stripes = Stripes::default();
        // Words 0-3: the cell; word 4: the data.
        let mut gm = vec![0u64; 5];
        let base = gm.as_mut_ptr() as usize;
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: word 4 of gm; the poller reads it only after the count (the rule).
                unsafe { ((base + 32) as *mut u64).write(42) };
                let one = [1i32, 0, 0, 0, 0, 0, 0, 0];
                // SAFETY: the cell is gm's first 32 bytes, 8-aligned; `one` is 32 bytes.
                unsafe {
                    reduce_store(
                        &stripes,
                        AtomicOp::Add,
                        AtomicType::I32,
                        base as *mut u8,
                        one.as_ptr().cast(),
                        32,
                    )
                };
            });
            s.spawn(|| {
                let mut cell = [0i32; 8];
                loop {
                    // SAFETY: gm's first 32 bytes into a 32-byte buffer.
                    unsafe { crate::mem::read(cell.as_mut_ptr().cast(), base as *const u8, 32) };
                    if cell[0] == 1 {
                        break;
                    }
                    std::thread::yield_now();
                }
                // SAFETY: word 4 of gm, written before the count that was seen.
                assert_eq!(unsafe { ((base + 32) as *const u64).read() }, 42);
            });
        });
        assert_eq!(gm[0], 1);
    }

    #[test]
    fn max_min_and_nan_sums_do_not_depend_on_the_order() {
        let nan_a = f32::from_bits(0x7fc0_0001);
        let nan_b = f32::from_bits(0xffc0_1234);
        let sets: [&[f32]; 4] = [
            &[0.0, -0.0, -0.0],
            &[1.0, nan_a, -3.0, nan_b],
            &[-0.0, 2.5, f32::NEG_INFINITY, 0.0],
            &[f32::INFINITY, f32::NEG_INFINITY, 1.0],
        ];
        for vals in sets {
            for op in [AtomicOp::Max, AtomicOp::Min, AtomicOp::Add] {
                let mut v = vals.to_vec();
                let first = reduce_f32(op, &v);
                v.reverse();
                assert_eq!(reduce_f32(op, &v), first, "{op:?} {vals:?}");
                v.rotate_left(1);
                assert_eq!(reduce_f32(op, &v), first, "{op:?} {vals:?}");
            }
        }
        assert_eq!(reduce_f32(AtomicOp::Max, &[0.0, -0.0]), 0);
        assert_eq!(reduce_f32(AtomicOp::Max, &[-0.0, 0.0]), 0);
        assert_eq!(reduce_f32(AtomicOp::Min, &[0.0, -0.0]), 0x8000_0000);
        assert_eq!(reduce_f32(AtomicOp::Max, &[1.0, nan_a]), F32_NAN);
        assert_eq!(reduce_f32(AtomicOp::Add, &[nan_b, nan_a]), F32_NAN);
        assert_eq!(
            reduce_f32(AtomicOp::Add, &[f32::INFINITY, f32::NEG_INFINITY]),
            F32_NAN
        );
        assert_eq!(combine_f16(AtomicOp::Max, 0x7e01, 0x3c00), 0x7e00);
        assert_eq!(combine_bf16(AtomicOp::Min, 0x8000, 0x0000), 0x8000);
        assert_eq!(combine_bf16(AtomicOp::Add, 0xffc1, 0x3f80), 0x7fc0);
    }
}
