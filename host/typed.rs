//! The typed API: element types checked by the compiler, counts taken from lengths, outputs
//! by `&mut`, in the style of [cudarc](https://docs.rs/cudarc)'s `CudaSlice<T>` and NCCL
//! `Comm`.
//!
//! | cudarc | aiv-comm |
//! | --- | --- |
//! | `CudaSlice<T>`, `CudaView<'_, T>`, `CudaViewMut<'_, T>` | [`DeviceSlice`], [`DeviceView`], [`DeviceViewMut`] |
//! | `DevicePtr<T>`, `DevicePtrMut<T>` | [`DeviceRead`], [`DeviceWrite`] |
//! | `dev.alloc_zeros::<T>(n)` | `comm.typed().alloc_zeros::<T>(n)` |
//! | `dev.htod_copy(vec)`, `dev.htod_sync_copy(&slice)` | `t.htod_copy(src)` (a `Vec`, a slice or an array) |
//! | `dev.htod_sync_copy_into(&src, &mut dst)` | `t.htod_copy_into(&src, &mut dst)` |
//! | `dev.dtoh_sync_copy(&s)` | `t.dtoh_sync_copy(&s)` (or `s.to_vec()`) |
//! | `s.slice(a..b)`, `s.slice_mut(a..b)`, `s.split_at_mut(m)` | the same, returning `Result` |
//! | `comm.all_reduce(&send, &mut recv, &op)` | `t.all_reduce(&send, &mut recv, op)` |
//! | `comm.all_reduce_in_place(&mut buf, &op)` | `t.all_reduce_in_place(&mut buf, op)` |
//! | `comm.all_gather(&send, &mut recv)` | `t.all_gather(&send, &mut recv)` |
//! | `comm.send(&buf, peer)`, `comm.recv(&mut buf, peer)` | `t.send(&buf, peer)`, `t.recv(&mut buf, peer)` |
//! | `comm.reduce_scatter(&send, &mut recv, &op)` | `t.reduce_scatter(&send, &mut recv, op)`, `t.reduce_scatter_in_place(&mut buf, op)` |
//! | `comm.broadcast(Some(&send), &mut recv, root)` (`None` off the root) | `t.broadcast(Some(&send), &mut recv, root)`, `t.broadcast_in_place(&mut buf, root)` |
//! | (NCCL: `ncclGroupStart`, sends and recvs, `ncclGroupEnd`) | `t.batch_send_recv(&[P2p::send(&a, p), P2p::recv(&mut b, q)])` |
//!
//! And HCCL's collectives cudarc has no counterpart for, with the same rules:
//! [`Typed::all_to_all`], [`Typed::all_to_all_v`], [`Typed::all_to_all_vc`],
//! [`Typed::all_gather_v`], [`Typed::reduce_scatter_v`] and [`Typed::barrier`].
//!
//! # What the types guarantee
//!
//! * Only the element types the kernels know are device elements ([`DeviceElement`], sealed:
//!   exactly the types of [`DataType::ALL`]), and only the types the A2 atomic store units can
//!   reduce are [`Reducible`] (f32, f16, bf16, i32, i16, i8): an AllReduce of `u64` is a
//!   compile error, not a runtime [`Error::Unsupported`].
//! * Send and recv of one call have the same element type.
//! * Outputs are taken by `&mut`, so the borrow checker refuses the same slice (or a view of
//!   it) as input and output of one call: in place is said with the `_in_place` variants.
//!   [`DeviceView`] (read-only) cannot be an output.
//! * Counts come from lengths (in elements). A length that does not fit the call
//!   (`recv.len() != size() * send.len()` for AllGather, different lengths for AllReduce, ...)
//!   is an [`Error::Length`] returned before anything is enqueued: no rank's memory is touched.
//!   The `_v` collectives take counts and displacements in elements, one of each per rank;
//!   a slice of another length, a segment that does not fit its buffer, or this rank's own
//!   count differing from the length of its buffer is an [`Error::Length`] too.
//!   The check is local: if only some ranks get it, the others' collective waits for them
//!   until its deadline ([`Error::WaitTimeout`]), as with any collective the ranks disagree on.
//! * The runtime checks of the untyped API still apply underneath (this rank's memory, same
//!   world, overlaps, [`ReduceOp::Prod`]).
//!
//! Calls return once validated and enqueued, as the untyped ones:
//! [`Typed::synchronize`] waits and reports the main stream's error (sticky until recovered);
//! [`Typed::dtoh_sync_copy`] synchronizes, then copies back; [`DeviceSlice::to_vec`] copies
//! back once the enqueued work that writes the slice has run, and refuses
//! ([`Error::Poisoned`]) elements that work was to write if it failed or was dropped.
//!
//! # Why a handle
//!
//! [`Communicator`] already has runtime-typed collectives of the same names (buffers in bytes,
//! a count and a [`DataType`]). The typed ones live on [`Typed`], a
//! `Copy` handle borrowed from the communicator with [`Communicator::typed`], so that:
//!
//! * they keep cudarc's names. An extension trait could not (method syntax picks the inherent
//!   method of the same name, so `comm.all_reduce(&send, &mut recv, op)` would be a confusing
//!   arity error) and would have to be imported;
//! * the byte-counted API is not reached by accident: `Typed` does not dereference to
//!   [`Communicator`], so a call it has no typed form of (`all_reduce_hd`, streams, ...) is a
//!   compile error, not a silent fall-back ([`Typed::comm`] gets there on purpose);
//! * allocation, host copies and collectives are in one place, like cudarc's device and comm.
//!
//! # Differences from cudarc
//!
//! * Slicing returns a `Result` ([`Error::Length`]) instead of panicking.
//! * [`ReduceOp`] is taken by value (it is `Copy`).
//! * [`Typed::broadcast`] takes `Option<&dyn DeviceRead<T>>`, so ranks other than the root
//!   pass a bare `None` (no type to name). `Some(&send)` written in the call coerces; an
//!   `Option<&DeviceSlice<T>>` made beforehand needs `.map(|s| s as _)`.
//! * [`DeviceSlice`] is not `Clone`: cudarc's clone is a device copy, and a shallow clone
//!   would let two `&mut` outputs share memory. [`DeviceSlice::as_buffer`] gives the untyped
//!   [`DeviceBuffer`] (shared, `Clone`) for the runtime-typed API; the borrow rules of this
//!   module do not follow it there.
//!
//! # Adding a wrapper
//!
//! Each collective the runtime-typed API gains gets a typed wrapper of a few lines: check the
//! lengths with the private helpers here (`expect_len`, `times_size`, `per_rank`,
//! `check_segments`), then call the runtime-typed method with `as_buffer()`, the count and
//! `T::DTYPE`.
//!
//! # Example
//!
//! The example of the README's "Using it", verbatim (a test checks that they are the same): a
//! whole program, as it compiles when pasted into `src/main.rs`:
//!
//! ```
//! use aiv_comm::{Config, ReduceOp, World};
//!
//! fn main() -> aiv_comm::Result<()> {
//!     let world = World::sim_with(4, Config { buffer_bytes: Some(16 << 20), ..Config::default() })?;
//!     let sums = world.run(|comm| {
//!         let t = comm.typed(); // typed API (aiv_comm::typed); comm's own takes bytes + DataType
//!         let send = t.htod_copy(vec![comm.rank() as f32; 1 << 16])?;
//!         let mut recv = t.alloc_zeros::<f32>(send.len())?;
//!         t.all_reduce(&send, &mut recv, ReduceOp::Sum)?; // enqueued
//!         t.dtoh_sync_copy(&recv) // synchronized, copied back
//!     });
//!     for sum in sums {
//!         assert!(sum?.iter().all(|&x| x == 6.0)); // 0 + 1 + 2 + 3
//!     }
//!     Ok(())
//! }
//! ```
//!
//! A ReduceScatter of `bf16`: each rank sends `size()` blocks of `recv.len()` elements and
//! gets the sum of everyone's block `rank()`:
//!
//! ```
//! # fn main() -> aiv_comm::Result<()> {
//! use aiv_comm::{ReduceOp, World};
//! use half::bf16;
//!
//! let world = World::sim(4)?;
//! let blocks = world.run(|comm| {
//!     let t = comm.typed();
//!     // Rank r's block q is [r + q; 2].
//!     let send: Vec<bf16> = (0..4)
//!         .flat_map(|q| [bf16::from_f32((comm.rank() + q) as f32); 2])
//!         .collect();
//!     let send = t.htod_copy(send)?;
//!     let mut recv = t.alloc_zeros::<bf16>(2)?;
//!     t.reduce_scatter(&send, &mut recv, ReduceOp::Sum)?; // send.len() == 4 * recv.len()
//!     t.dtoh_sync_copy(&recv)
//! });
//! for (q, block) in blocks.into_iter().enumerate() {
//!     assert_eq!(block?, [bf16::from_f32(6.0 + 4.0 * q as f32); 2]); // (0 + 1 + 2 + 3) + 4q
//! }
//! # Ok(())
//! # }
//! ```
//!
//! An AllReduce of a type the device cannot reduce does not compile:
//!
//! ```compile_fail,E0277
//! # fn main() -> aiv_comm::Result<()> {
//! use aiv_comm::{ReduceOp, World};
//! let world = World::sim(1)?;
//! let t = world.comms()[0].typed();
//! let mut x = t.htod_copy([1u64, 2, 3])?;
//! t.all_reduce_in_place(&mut x, ReduceOp::Sum)?; // u64 is not Reducible
//! # Ok(())
//! # }
//! ```
//!
//! (The same with `f32` compiles and runs:)
//!
//! ```
//! # fn main() -> aiv_comm::Result<()> {
//! use aiv_comm::{ReduceOp, World};
//! let world = World::sim(1)?;
//! let t = world.comms()[0].typed();
//! let mut x = t.htod_copy([1f32, 2., 3.])?;
//! t.all_reduce_in_place(&mut x, ReduceOp::Sum)?;
//! assert_eq!(t.dtoh_sync_copy(&x)?, [1., 2., 3.]);
//! # Ok(())
//! # }
//! ```
//!
//! Nor does a read-only view as an output, a slice as both input and output, or send and recv
//! of different element types:
//!
//! ```compile_fail,E0277
//! # fn main() -> aiv_comm::Result<()> {
//! # let world = aiv_comm::World::sim(1)?;
//! # let t = world.comms()[0].typed();
//! let x = t.htod_copy([1f32, 2.])?;
//! let mut y = t.alloc_zeros::<f32>(4)?;
//! t.all_gather(&x, &mut y.slice(..2)?)?; // DeviceView is not DeviceWrite
//! # Ok(())
//! # }
//! ```
//!
//! ```compile_fail,E0502
//! # fn main() -> aiv_comm::Result<()> {
//! # let world = aiv_comm::World::sim(1)?;
//! # let t = world.comms()[0].typed();
//! let mut x = t.htod_copy([1f32, 2.])?;
//! t.all_reduce(&x.slice(..)?, &mut x, aiv_comm::ReduceOp::Sum)?; // use all_reduce_in_place
//! # Ok(())
//! # }
//! ```
//!
//! ```compile_fail,E0277
//! # fn main() -> aiv_comm::Result<()> {
//! # let world = aiv_comm::World::sim(1)?;
//! # let t = world.comms()[0].typed();
//! let x = t.htod_copy([1f32, 2.])?;
//! let mut y = t.alloc_zeros::<i32>(2)?;
//! t.all_reduce(&x, &mut y, aiv_comm::ReduceOp::Sum)?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};

use bytemuck::Pod;
use half::{bf16, f16};

use crate::batch::SendRecvItem;
use crate::buffer::DeviceBuffer;
use crate::communicator::Communicator;
use crate::dtype::{DataType, ReduceOp};
use crate::error::{Error, Result};
use crate::link::{CommStream, SendRecvKind};
use crate::plan::{AllGatherAlgo, AllReduceAlgo};

mod sealed {
    /// Seals [`super::DeviceElement`].
    pub trait Element {}
    /// Seals [`super::Reducible`].
    pub trait Reduce {}
    /// Seals [`super::DeviceRead`] and [`super::DeviceWrite`].
    pub trait Memory {}
}

/// An element type of device data: exactly the types of [`DataType::ALL`] (sealed).
///
/// Every device element can be allocated, copied, gathered and sent; the [`Reducible`] ones
/// can also be reduced.
///
/// ```
/// use aiv_comm::{DataType, DeviceElement};
/// assert_eq!(<half::bf16 as DeviceElement>::DTYPE, DataType::Bf16);
/// assert_eq!(u64::DTYPE.size(), 8);
/// ```
pub trait DeviceElement: sealed::Element + Pod + Default + Send + Sync {
    /// The runtime type tag of `Self` (its size is `size_of::<Self>()`).
    const DTYPE: DataType;
}

/// A [`DeviceElement`] the device can reduce (AllReduce): f32, f16, bf16, i32, i16 and i8,
/// what the Atlas A2 atomic store units support (sealed).
///
/// ```
/// fn sum_of<T: aiv_comm::Reducible>() -> aiv_comm::DataType {
///     T::DTYPE
/// }
/// assert_eq!(sum_of::<half::f16>(), aiv_comm::DataType::F16);
/// ```
///
/// ```compile_fail,E0277
/// fn sum_of<T: aiv_comm::Reducible>() {}
/// sum_of::<u8>(); // data movement only
/// ```
pub trait Reducible: DeviceElement + sealed::Reduce {}

macro_rules! elements {
    ($($t:ty => $dt:ident),* $(,)?) => {$(
        impl sealed::Element for $t {}
        impl DeviceElement for $t {
            const DTYPE: DataType = DataType::$dt;
        }
    )*};
}

elements! {
    f32 => F32, f16 => F16, bf16 => Bf16, i32 => I32, i16 => I16, i8 => I8,
    u8 => U8, i64 => I64, u64 => U64, f64 => F64, u16 => U16, u32 => U32,
}

macro_rules! reducible {
    ($($t:ty),*) => {$(
        impl sealed::Reduce for $t {}
        impl Reducible for $t {}
    )*};
}

reducible!(f32, f16, bf16, i32, i16, i8);

/// Typed device memory a call can read: [`DeviceSlice`], [`DeviceView`], [`DeviceViewMut`]
/// (sealed; cudarc's `DevicePtr`).
///
/// ```
/// use aiv_comm::{DeviceElement, DeviceRead, World};
/// fn bytes<T: DeviceElement>(x: &impl DeviceRead<T>) -> usize {
///     x.as_buffer().len()
/// }
/// let world = World::sim(1)?;
/// let t = world.comms()[0].typed();
/// let x = t.alloc_zeros::<i16>(10)?;
/// assert_eq!((bytes(&x), bytes(&x.slice(2..5)?)), (20, 6));
/// # Ok::<(), aiv_comm::Error>(())
/// ```
pub trait DeviceRead<T: DeviceElement>: sealed::Memory {
    /// The untyped memory: exactly `len() * size_of::<T>()` bytes.
    fn as_buffer(&self) -> &DeviceBuffer;

    /// Length in elements.
    fn len(&self) -> usize {
        self.as_buffer().len() / size_of::<T>()
    }

    /// True if there are no elements.
    fn is_empty(&self) -> bool {
        self.as_buffer().is_empty()
    }
}

/// Typed device memory a call can write: [`DeviceSlice`] and [`DeviceViewMut`], taken by
/// `&mut` (sealed; cudarc's `DevicePtrMut`).
///
/// ```
/// use aiv_comm::{DeviceWrite, Typed, World};
/// fn ones(t: Typed<'_>, x: &mut impl DeviceWrite<f32>) -> aiv_comm::Result<()> {
///     t.htod_copy_into(&vec![1.0; x.len()], x)
/// }
/// let world = World::sim(1)?;
/// let t = world.comms()[0].typed();
/// let mut x = t.alloc_zeros::<f32>(4)?;
/// ones(t, &mut x.slice_mut(1..3)?)?;
/// assert_eq!(x.to_vec()?, [0.0, 1.0, 1.0, 0.0]);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
pub trait DeviceWrite<T: DeviceElement>: DeviceRead<T> {}

/// Elements `range` of `len`, as `(start, end)`, or an [`Error::Length`] naming `what`.
fn bounds(len: usize, range: impl RangeBounds<usize>, what: &str) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => Err(Error::Length(format!(
            "slice {:?}..{:?} of {what} of {len} elements is out of range",
            range.start_bound(),
            range.end_bound()
        ))),
    }
}

/// Elements `start..end` of `buf` (elements of `T`), checked by [`bounds`].
fn sub<T: DeviceElement>(
    buf: &DeviceBuffer,
    range: impl RangeBounds<usize>,
    what: &str,
) -> Result<DeviceBuffer> {
    let es = size_of::<T>();
    let (s, e) = bounds(buf.len() / es, range, what)?;
    buf.view(s * es, (e - s) * es)
}

/// `buf` split at element `mid`.
fn split<T: DeviceElement>(
    buf: &DeviceBuffer,
    mid: usize,
    what: &str,
) -> Result<(DeviceBuffer, DeviceBuffer)> {
    Ok((sub::<T>(buf, ..mid, what)?, sub::<T>(buf, mid.., what)?))
}

/// A typed device buffer on one rank: `len()` elements of `T` (cudarc's `CudaSlice<T>`).
///
/// Made by [`Typed::alloc_zeros`], [`Typed::htod_copy`] or from an untyped buffer
/// (`DeviceSlice::try_from(buffer)`). Dropping it
/// frees the memory once the enqueued work that uses it has run.
///
/// ```
/// use aiv_comm::World;
/// let world = World::sim(1)?;
/// let t = world.comms()[0].typed();
/// let x = t.htod_copy(vec![half::f16::from_f32(1.5); 3])?;
/// assert_eq!((x.len(), x.as_buffer().len()), (3, 6));
/// assert_eq!(x.to_vec()?[2].to_f32(), 1.5);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
pub struct DeviceSlice<T: DeviceElement> {
    buf: DeviceBuffer,
    _t: PhantomData<T>,
}

/// A read-only view of elements of a [`DeviceSlice`] (cudarc's `CudaView`), borrowing it.
///
/// ```
/// use aiv_comm::World;
/// let world = World::sim(1)?;
/// let t = world.comms()[0].typed();
/// let x = t.htod_copy([1u32, 2, 3, 4, 5])?;
/// let v = x.slice(1..)?;
/// assert_eq!(v.slice(..=1)?.to_vec()?, [2, 3]);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
pub struct DeviceView<'a, T: DeviceElement> {
    buf: DeviceBuffer,
    _t: PhantomData<&'a [T]>,
}

/// A writable view of elements of a [`DeviceSlice`] (cudarc's `CudaViewMut`), borrowing it
/// mutably: an output of collectives.
///
/// ```
/// use aiv_comm::World;
/// let world = World::sim(1)?;
/// let t = world.comms()[0].typed();
/// let mut x = t.alloc_zeros::<i8>(4)?;
/// let mut v = x.slice_mut(2..)?;
/// t.htod_copy_into(&[7, 8], &mut v)?;
/// assert_eq!(x.to_vec()?, [0, 0, 7, 8]);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
pub struct DeviceViewMut<'a, T: DeviceElement> {
    buf: DeviceBuffer,
    _t: PhantomData<&'a mut [T]>,
}

impl<T: DeviceElement> sealed::Memory for DeviceSlice<T> {}
impl<T: DeviceElement> sealed::Memory for DeviceView<'_, T> {}
impl<T: DeviceElement> sealed::Memory for DeviceViewMut<'_, T> {}

impl<T: DeviceElement> DeviceRead<T> for DeviceSlice<T> {
    fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }
}
impl<T: DeviceElement> DeviceRead<T> for DeviceView<'_, T> {
    fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }
}
impl<T: DeviceElement> DeviceRead<T> for DeviceViewMut<'_, T> {
    fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }
}
impl<T: DeviceElement> DeviceWrite<T> for DeviceSlice<T> {}
impl<T: DeviceElement> DeviceWrite<T> for DeviceViewMut<'_, T> {}

impl<T: DeviceElement> DeviceSlice<T> {
    /// Length in elements.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// assert_eq!(t.alloc_zeros::<f64>(3)?.len(), 3);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        DeviceRead::len(self)
    }

    /// True if there are no elements.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// assert!(t.alloc_zeros::<f64>(0)?.is_empty());
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        DeviceRead::is_empty(self)
    }

    /// Rank of the device holding it.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(2)?;
    /// assert_eq!(world.comms()[1].typed().alloc_zeros::<u8>(1)?.rank(), 1);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn rank(&self) -> u32 {
        self.buf.rank()
    }

    /// The elements, copied to the host once the enqueued work that writes them has run;
    /// [`Error::Poisoned`] if that work failed or was dropped unrun (the stream's own error
    /// comes from [`Typed::synchronize`]).
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// assert_eq!(t.htod_copy([1i64, -1])?.to_vec()?, [1, -1]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.buf.to_vec()
    }

    /// The untyped memory (shared): for the runtime-typed API and your own kernels.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(1)?;
    /// let c = &world.comms()[0];
    /// let x = c.typed().htod_copy([1f32, 2.])?;
    /// let y = c.alloc(8)?;
    /// c.all_gather(x.as_buffer(), &y, x.len(), DataType::F32)?;
    /// assert_eq!(y.to_vec::<f32>()?, [1., 2.]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }

    /// The untyped memory, giving up the type.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let b = t.htod_copy([1u16, 2])?.into_buffer();
    /// assert_eq!(b.to_vec::<u8>()?, [1, 0, 2, 0]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn into_buffer(self) -> DeviceBuffer {
        self.buf
    }

    /// All of it as a read-only view.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.htod_copy([3u8; 4])?;
    /// assert_eq!(x.as_view().len(), 4);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView {
            buf: self.buf.clone(),
            _t: PhantomData,
        }
    }

    /// All of it as a writable view.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<u8>(2)?;
    /// t.htod_copy_into(&[1, 2], &mut x.as_view_mut())?;
    /// assert_eq!(x.to_vec()?, [1, 2]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn as_view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut {
            buf: self.buf.clone(),
            _t: PhantomData,
        }
    }

    /// Elements `range` as a read-only view; [`Error::Length`] if out of range.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.htod_copy([0i32, 1, 2, 3])?;
    /// assert_eq!(x.slice(1..3)?.to_vec()?, [1, 2]);
    /// assert!(x.slice(3..5).is_err());
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        Ok(DeviceView {
            buf: sub::<T>(&self.buf, range, "a DeviceSlice")?,
            _t: PhantomData,
        })
    }

    /// Elements `range` as a writable view; [`Error::Length`] if out of range.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<i32>(4)?;
    /// t.htod_copy_into(&[9], &mut x.slice_mut(3..)?)?;
    /// assert_eq!(x.to_vec()?, [0, 0, 0, 9]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        Ok(DeviceViewMut {
            buf: sub::<T>(&self.buf, range, "a DeviceSlice")?,
            _t: PhantomData,
        })
    }

    /// Two writable views, `..mid` and `mid..`; [`Error::Length`] if `mid > len()`.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<u8>(3)?;
    /// let (mut a, mut b) = x.split_at_mut(1)?;
    /// t.htod_copy_into(&[1], &mut a)?;
    /// t.htod_copy_into(&[2, 3], &mut b)?;
    /// assert_eq!(x.to_vec()?, [1, 2, 3]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        let (a, b) = split::<T>(&self.buf, mid, "a DeviceSlice")?;
        Ok((
            DeviceViewMut {
                buf: a,
                _t: PhantomData,
            },
            DeviceViewMut {
                buf: b,
                _t: PhantomData,
            },
        ))
    }
}

impl<'a, T: DeviceElement> DeviceView<'a, T> {
    /// Length in elements.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.alloc_zeros::<f32>(8)?;
    /// assert_eq!(x.slice(2..)?.len(), 6);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        DeviceRead::len(self)
    }

    /// True if there are no elements.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.alloc_zeros::<f32>(8)?;
    /// assert!(x.slice(8..)?.is_empty());
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        DeviceRead::is_empty(self)
    }

    /// The elements, copied to the host (see [`DeviceSlice::to_vec`]).
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.htod_copy([1u8, 2, 3])?;
    /// assert_eq!(x.slice(..2)?.to_vec()?, [1, 2]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.buf.to_vec()
    }

    /// The untyped memory of the view (see [`DeviceSlice::as_buffer`]).
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.alloc_zeros::<u32>(4)?;
    /// let v = x.slice(1..)?;
    /// assert_eq!(v.as_buffer().addr(), x.as_buffer().addr() + 4);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }

    /// Elements `range` of the view, borrowing the same slice; [`Error::Length`] if out of
    /// range.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let x = t.htod_copy([0u8, 1, 2, 3, 4])?;
    /// assert_eq!(x.slice(1..)?.slice(1..3)?.to_vec()?, [2, 3]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        Ok(DeviceView {
            buf: sub::<T>(&self.buf, range, "a DeviceView")?,
            _t: PhantomData,
        })
    }
}

impl<T: DeviceElement> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        DeviceView {
            buf: self.buf.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: DeviceElement> DeviceViewMut<'_, T> {
    /// Length in elements.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<f32>(8)?;
    /// assert_eq!(x.slice_mut(..3)?.len(), 3);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        DeviceRead::len(self)
    }

    /// True if there are no elements.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<f32>(8)?;
    /// assert!(x.slice_mut(3..3)?.is_empty());
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        DeviceRead::is_empty(self)
    }

    /// The elements, copied to the host (see [`DeviceSlice::to_vec`]).
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.htod_copy([1u8, 2, 3])?;
    /// assert_eq!(x.slice_mut(1..)?.to_vec()?, [2, 3]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.buf.to_vec()
    }

    /// The untyped memory of the view (see [`DeviceSlice::as_buffer`]).
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<u32>(4)?;
    /// assert_eq!(x.slice_mut(1..)?.as_buffer().len(), 12);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }

    /// Elements `range` as a read-only view; [`Error::Length`] if out of range.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.htod_copy([0u8, 1, 2, 3])?;
    /// let v = x.slice_mut(1..)?;
    /// assert_eq!(v.slice(..1)?.to_vec()?, [1]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        Ok(DeviceView {
            buf: sub::<T>(&self.buf, range, "a DeviceViewMut")?,
            _t: PhantomData,
        })
    }

    /// Elements `range` as a writable view; [`Error::Length`] if out of range.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<u8>(4)?;
    /// let mut v = x.slice_mut(1..)?;
    /// t.htod_copy_into(&[5], &mut v.slice_mut(2..)?)?;
    /// assert_eq!(x.to_vec()?, [0, 0, 0, 5]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        Ok(DeviceViewMut {
            buf: sub::<T>(&self.buf, range, "a DeviceViewMut")?,
            _t: PhantomData,
        })
    }

    /// Two writable views, `..mid` and `mid..`; [`Error::Length`] if `mid > len()`.
    ///
    /// ```
    /// # let world = aiv_comm::World::sim(1)?;
    /// # let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<u8>(4)?;
    /// let mut v = x.slice_mut(1..)?;
    /// let (_, mut tail) = v.split_at_mut(2)?;
    /// t.htod_copy_into(&[4], &mut tail)?;
    /// assert_eq!(x.to_vec()?, [0, 0, 0, 4]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        let (a, b) = split::<T>(&self.buf, mid, "a DeviceViewMut")?;
        Ok((
            DeviceViewMut {
                buf: a,
                _t: PhantomData,
            },
            DeviceViewMut {
                buf: b,
                _t: PhantomData,
            },
        ))
    }
}

/// An untyped buffer as elements of `T`: [`Error::Length`] if its length is not a multiple of
/// `size_of::<T>()`, [`Error::Misaligned`] if its address is not aligned to it. The slice
/// shares the memory with the buffer (and its other clones and views).
///
/// ```
/// use aiv_comm::{DeviceSlice, Error, World};
/// let world = World::sim(1)?;
/// let c = &world.comms()[0];
/// let b = c.alloc_from(&[1u16, 2, 3])?;
/// let x = DeviceSlice::<u16>::try_from(b.clone())?;
/// assert_eq!(x.to_vec()?, [1, 2, 3]);
/// assert!(matches!(DeviceSlice::<f32>::try_from(b.clone()), Err(Error::Length(_))));
/// let odd = b.view(1, 4)?;
/// assert!(matches!(DeviceSlice::<u16>::try_from(odd), Err(Error::Misaligned { .. })));
/// # Ok::<(), aiv_comm::Error>(())
/// ```
impl<T: DeviceElement> TryFrom<DeviceBuffer> for DeviceSlice<T> {
    type Error = Error;

    fn try_from(buf: DeviceBuffer) -> Result<Self> {
        let es = size_of::<T>();
        if !buf.len().is_multiple_of(es) {
            return Err(Error::Length(format!(
                "a buffer of {} bytes is not a whole number of {} elements ({es} bytes each)",
                buf.len(),
                T::DTYPE
            )));
        }
        if !buf.addr().is_multiple_of(es as u64) {
            return Err(Error::Misaligned {
                what: "buffer",
                addr: buf.addr(),
                align: es,
            });
        }
        Ok(DeviceSlice {
            buf,
            _t: PhantomData,
        })
    }
}

/// [`DeviceSlice::into_buffer`].
///
/// ```
/// # let world = aiv_comm::World::sim(1)?;
/// # let t = world.comms()[0].typed();
/// let b: aiv_comm::DeviceBuffer = t.alloc_zeros::<f32>(2)?.into();
/// assert_eq!(b.len(), 8);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
impl<T: DeviceElement> From<DeviceSlice<T>> for DeviceBuffer {
    fn from(s: DeviceSlice<T>) -> DeviceBuffer {
        s.buf
    }
}

fn debug(f: &mut fmt::Formatter<'_>, name: &str, dt: DataType, buf: &DeviceBuffer) -> fmt::Result {
    write!(
        f,
        "{name}<{dt}> {{ rank: {}, addr: {:#x}, len: {} }}",
        buf.rank(),
        buf.addr(),
        buf.len() / dt.size()
    )
}

impl<T: DeviceElement> fmt::Debug for DeviceSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug(f, "DeviceSlice", T::DTYPE, &self.buf)
    }
}
impl<T: DeviceElement> fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug(f, "DeviceView", T::DTYPE, &self.buf)
    }
}
impl<T: DeviceElement> fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug(f, "DeviceViewMut", T::DTYPE, &self.buf)
    }
}

/// The typed API of a [`Communicator`] (see the [module docs](self)): a `Copy` handle from
/// [`Communicator::typed`].
///
/// ```
/// use aiv_comm::World;
/// let world = World::sim(2)?;
/// let got = world.run(|comm| {
///     let t = comm.typed();
///     let send = t.htod_copy([comm.rank() as u8; 2])?;
///     let mut recv = t.alloc_zeros::<u8>(4)?;
///     t.all_gather(&send, &mut recv)?;
///     t.dtoh_sync_copy(&recv)
/// });
/// assert_eq!(got[1].as_ref().unwrap(), &[0, 0, 1, 1]);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Typed<'a> {
    comm: &'a Communicator,
}

impl fmt::Debug for Typed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Typed {{ rank: {}, size: {} }}",
            self.rank(),
            self.size()
        )
    }
}

impl Communicator {
    /// The typed API of this communicator ([`Typed`]; see [`crate::typed`]).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// let t = world.comms()[0].typed();
    /// assert_eq!(t.alloc_zeros::<f32>(4)?.to_vec()?, [0.0; 4]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn typed(&self) -> Typed<'_> {
        Typed { comm: self }
    }
}

/// The typed point-to-point calls of one stream ([`CommStream::typed`]): element types and
/// counts from slices and views, as [`Typed`]'s, on any stream of the rank (several streams
/// let sends and receives between two ranks overlap).
///
/// ```
/// let world = aiv_comm::World::sim(2)?;
/// let got = world.run(|comm| {
///     let t = comm.typed();
///     let (tx, rx) = (comm.create_stream("tx")?, comm.create_stream("rx")?);
///     let send = t.htod_copy([comm.rank() as f32; 3])?;
///     let mut recv = t.alloc_zeros::<f32>(3)?;
///     // Both directions at once: each rank sends on one stream and receives on the other.
///     tx.typed().send(&send, 1 - comm.rank())?;
///     rx.typed().recv(&mut recv, 1 - comm.rank())?;
///     tx.synchronize()?;
///     rx.synchronize()?;
///     recv.to_vec()
/// });
/// assert_eq!(got[0].as_ref().unwrap(), &[1.0; 3]);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct TypedStream<'a> {
    stream: &'a CommStream,
}

impl fmt::Debug for TypedStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypedStream {{ stream: {:?} }}", self.stream.name())
    }
}

impl CommStream {
    /// This stream's typed point-to-point calls (element types and lengths from slices).
    pub fn typed(&self) -> TypedStream<'_> {
        TypedStream::new(self)
    }
}

impl<'a> TypedStream<'a> {
    pub(crate) fn new(stream: &'a CommStream) -> Self {
        TypedStream { stream }
    }

    /// The stream (for its runtime-typed API).
    pub fn stream(&self) -> &'a CommStream {
        self.stream
    }

    /// Sends all of `buf` to `peer` on this stream ([`CommStream::send`]); `peer` must post a
    /// receive of the same number of bytes.
    pub fn send<T: DeviceElement>(&self, buf: &impl DeviceRead<T>, peer: u32) -> Result<()> {
        self.stream.send(buf.as_buffer(), buf.len(), T::DTYPE, peer)
    }

    /// Receives all of `buf` from `peer` on this stream ([`CommStream::recv`]).
    pub fn recv<T: DeviceElement>(&self, buf: &mut impl DeviceWrite<T>, peer: u32) -> Result<()> {
        self.stream.recv(buf.as_buffer(), buf.len(), T::DTYPE, peer)
    }

    /// Waits for what was enqueued on this stream before the call ([`CommStream::synchronize`]).
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize()
    }
}

/// [`Error::Length`] unless `got == want` (element counts of argument `what` of `op`).
fn expect_len(op: &str, what: &str, got: usize, want: usize, rule: &str) -> Result<()> {
    if got == want {
        return Ok(());
    }
    Err(Error::Length(format!(
        "{op}: {what} has {got} elements but the call needs {want} ({rule})"
    )))
}

/// `size * len`, or an [`Error::Length`] if it overflows.
fn times_size(op: &str, len: usize, size: u32) -> Result<usize> {
    len.checked_mul(size as usize)
        .ok_or_else(|| Error::Length(format!("{op}: {len} elements x {size} ranks overflow")))
}

/// `len / size`, or an [`Error::Length`] if `len` is not a multiple of `size`.
fn per_rank(op: &str, what: &str, len: usize, size: u32) -> Result<usize> {
    let n = size as usize;
    if !len.is_multiple_of(n) {
        return Err(Error::Length(format!(
            "{op}: {what} has {len} elements, not a multiple of the {n} ranks"
        )));
    }
    Ok(len / n)
}

/// Checks the per-rank `counts` and `displs` (in elements) of argument `what` of `op`: one of
/// each per rank, and every segment of a nonzero count within the `len` elements of `what`
/// (as the runtime-typed check, which ignores the displacement of an empty segment).
fn check_segments(
    op: &str,
    what: &str,
    len: usize,
    counts: &[usize],
    displs: &[usize],
    size: u32,
) -> Result<()> {
    let n = size as usize;
    if counts.len() != n || displs.len() != n {
        return Err(Error::Length(format!(
            "{op}: {} counts and {} displacements for {what}, the call needs {n} of each (one per rank)",
            counts.len(),
            displs.len()
        )));
    }
    for (q, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        if c > 0 && d.checked_add(c).is_none_or(|end| end > len) {
            return Err(Error::Length(format!(
                "{op}: the segment of rank {q} ({c} elements at {d}) does not fit {what} of {len} elements"
            )));
        }
    }
    Ok(())
}

/// An item of [`Typed::batch_send_recv`]: a send of a typed slice or view to a peer, or a
/// receive into one from a peer, of all its elements (HCCL's `HcclSendRecvItem`, with the
/// count and type from the slice).
///
/// It borrows its memory for as long as it lives, as the call it stands for would: a receive
/// borrows mutably, so one list cannot receive twice into the same memory or send what it
/// receives into. The items of one list may have different element types (a message is its
/// bytes: each send must meet a receive of the same number of bytes).
///
/// ```
/// use aiv_comm::typed::P2p;
/// use aiv_comm::{SendRecvKind, World};
/// let world = World::sim(2)?;
/// let t = world.comms()[0].typed();
/// let (a, mut b) = (t.alloc_zeros::<f32>(3)?, t.alloc_zeros::<u8>(2)?);
/// let items = [P2p::send(&a, 1), P2p::recv(&mut b, 1)];
/// assert_eq!((items[0].kind(), items[0].len(), items[0].peer()), (SendRecvKind::Send, 3, 1));
/// assert_eq!(items[1].dtype(), aiv_comm::DataType::U8);
/// # Ok::<(), aiv_comm::Error>(())
/// ```
///
/// ```compile_fail,E0502
/// # let world = aiv_comm::World::sim(2).unwrap();
/// # let t = world.comms()[0].typed();
/// use aiv_comm::typed::P2p;
/// let mut x = t.alloc_zeros::<f32>(4).unwrap();
/// // Sending what is received in the same list: refused by the borrow checker.
/// t.batch_send_recv(&[P2p::send(&x, 1), P2p::recv(&mut x, 1)]).unwrap();
/// ```
pub struct P2p<'a> {
    kind: SendRecvKind,
    buf: &'a DeviceBuffer,
    count: usize,
    dtype: DataType,
    peer: u32,
}

impl<'a> P2p<'a> {
    /// Sends all of `buf` to `peer`.
    pub fn send<T: DeviceElement>(buf: &'a impl DeviceRead<T>, peer: u32) -> Self {
        P2p {
            kind: SendRecvKind::Send,
            buf: buf.as_buffer(),
            count: buf.len(),
            dtype: T::DTYPE,
            peer,
        }
    }

    /// Receives all of `buf` from `peer`.
    pub fn recv<T: DeviceElement>(buf: &'a mut impl DeviceWrite<T>, peer: u32) -> Self {
        let buf: &'a _ = buf;
        P2p {
            kind: SendRecvKind::Recv,
            buf: buf.as_buffer(),
            count: buf.len(),
            dtype: T::DTYPE,
            peer,
        }
    }

    /// Send or receive.
    pub fn kind(&self) -> SendRecvKind {
        self.kind
    }

    /// The other rank.
    pub fn peer(&self) -> u32 {
        self.peer
    }

    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Elements sent or received (all of the slice).
    pub fn len(&self) -> usize {
        self.count
    }

    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn item(&self) -> SendRecvItem<'a> {
        SendRecvItem {
            kind: self.kind,
            buf: self.buf,
            count: self.count,
            dtype: self.dtype,
            peer: self.peer,
        }
    }
}

impl fmt::Debug for P2p<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "P2p {{ {:?} {} x {} with rank {} }}",
            self.kind, self.count, self.dtype, self.peer
        )
    }
}

impl<'a> Typed<'a> {
    /// The communicator (for its runtime-typed API).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// let t = world.comms()[0].typed();
    /// assert_eq!(t.comm().buffer_bytes(), world.comms()[0].buffer_bytes());
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn comm(&self) -> &'a Communicator {
        self.comm
    }

    /// This rank.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// assert_eq!(world.comms()[1].typed().rank(), 1);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn rank(&self) -> u32 {
        self.comm.rank()
    }

    /// Ranks in the world.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// assert_eq!(world.comms()[0].typed().size(), 2);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn size(&self) -> u32 {
        self.comm.size()
    }

    /// Waits for everything enqueued on the main stream before the call; returns its error,
    /// sticky until recovered ([`Communicator::synchronize`]).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// world.comms()[0].typed().synchronize()?;
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.comm.synchronize()
    }

    /// A zeroed slice of `len` elements on this rank (cudarc's `alloc_zeros`).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// let x = world.comms()[0].typed().alloc_zeros::<half::bf16>(3)?;
    /// assert_eq!(x.to_vec()?, [half::bf16::ZERO; 3]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn alloc_zeros<T: DeviceElement>(&self, len: usize) -> Result<DeviceSlice<T>> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::Length(format!("{len} elements of {} overflow", T::DTYPE)))?;
        Ok(DeviceSlice {
            buf: self.comm.alloc(bytes)?,
            _t: PhantomData,
        })
    }

    /// A slice on this rank holding a copy of `src`: a `Vec<T>`, `&[T]` or `[T; N]` (cudarc's
    /// `htod_copy` / `htod_sync_copy`).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// let t = world.comms()[0].typed();
    /// let v = vec![1.0f64, 2.0];
    /// assert_eq!(t.htod_copy(&v)?.to_vec()?, v);
    /// assert_eq!(t.htod_copy(v)?.len(), 2);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn htod_copy<T: DeviceElement>(&self, src: impl AsRef<[T]>) -> Result<DeviceSlice<T>> {
        let src = src.as_ref();
        let dst = self.alloc_zeros::<T>(src.len())?;
        dst.buf.write(0, src)?;
        Ok(dst)
    }

    /// Copies `src` into `dst` (cudarc's `htod_sync_copy_into`), after the enqueued work that
    /// uses `dst`. [`Error::Length`] unless the lengths are equal (nothing written).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// let t = world.comms()[0].typed();
    /// let mut x = t.alloc_zeros::<i16>(2)?;
    /// t.htod_copy_into(&[-1, 1], &mut x)?;
    /// assert!(t.htod_copy_into(&[1, 2, 3], &mut x).is_err());
    /// assert_eq!(x.to_vec()?, [-1, 1]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn htod_copy_into<T: DeviceElement>(
        &self,
        src: &[T],
        dst: &mut impl DeviceWrite<T>,
    ) -> Result<()> {
        expect_len("htod_copy_into", "dst", dst.len(), src.len(), "src.len()")?;
        dst.as_buffer().write(0, src)
    }

    /// Waits for the work enqueued on this rank's main stream before the call, then copies
    /// `src` to the host (cudarc's `dtoh_sync_copy`). The main stream's error, if it has one
    /// ([`Typed::synchronize`]: sticky until recovered), is returned instead of data; so is
    /// [`Error::Poisoned`] if a failed or dropped operation of any stream was to write `src`.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(1)?;
    /// let t = world.comms()[0].typed();
    /// let x = t.htod_copy([1u32, 2, 3])?;
    /// assert_eq!(t.dtoh_sync_copy(&x.slice(1..)?)?, [2, 3]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn dtoh_sync_copy<T: DeviceElement>(&self, src: &impl DeviceRead<T>) -> Result<Vec<T>> {
        self.synchronize()?;
        src.as_buffer().to_vec()
    }

    /// AllGather ([`Communicator::all_gather`]): every rank's `send`, in rank order, into every
    /// rank's `recv`. [`Error::Length`] unless `recv.len() == size() * send.len()` (nothing
    /// enqueued).
    ///
    /// ```
    /// use half::f16;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let send = t.htod_copy([f16::from_f32(comm.rank() as f32 + 0.5)])?;
    ///     let mut recv = t.alloc_zeros::<f16>(2)?;
    ///     t.all_gather(&send, &mut recv)?;
    ///     assert!(t.all_gather(&send, &mut recv.slice_mut(1..)?).is_err());
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[f16::from_f32(0.5), f16::from_f32(1.5)]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_gather<T: DeviceElement>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
    ) -> Result<()> {
        self.all_gather_with(send, recv, AllGatherAlgo::Auto)
    }

    /// [`Typed::all_gather`] with the kernel chosen by the caller
    /// ([`Communicator::all_gather_with`]); every rank must pass the same `algo`.
    ///
    /// ```
    /// use aiv_comm::AllGatherAlgo;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let send = t.htod_copy([comm.rank() as i32; 3])?;
    ///     let mut recv = t.alloc_zeros::<i32>(6)?;
    ///     t.all_gather_with(&send, &mut recv, AllGatherAlgo::Push)?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[1].as_ref().unwrap(), &[0, 0, 0, 1, 1, 1]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_gather_with<T: DeviceElement>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
        algo: AllGatherAlgo,
    ) -> Result<()> {
        let want = times_size("all_gather", send.len(), self.size())?;
        expect_len(
            "all_gather",
            "recv",
            recv.len(),
            want,
            "size() * send.len()",
        )?;
        self.comm.all_gather_with(
            send.as_buffer(),
            recv.as_buffer(),
            send.len(),
            T::DTYPE,
            algo,
        )
    }

    /// AllGather in place: `buf` holds `size()` slots of `buf.len() / size()` elements, this
    /// rank's slot is its input, and every slot is filled with that rank's. [`Error::Length`]
    /// unless `buf.len()` is a multiple of `size()`.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let mut buf = t.alloc_zeros::<i64>(4)?;
    ///     let r = comm.rank() as usize;
    ///     t.htod_copy_into(&[r as i64 + 1; 2], &mut buf.slice_mut(2 * r..2 * r + 2)?)?;
    ///     t.all_gather_in_place(&mut buf)?;
    ///     t.dtoh_sync_copy(&buf)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[1, 1, 2, 2]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_gather_in_place<T: DeviceElement>(
        &self,
        buf: &mut impl DeviceWrite<T>,
    ) -> Result<()> {
        let count = per_rank("all_gather_in_place", "buf", buf.len(), self.size())?;
        let es = size_of::<T>();
        let b = buf.as_buffer();
        let mine = b.view(self.rank() as usize * count * es, count * es)?;
        self.comm.all_gather(&mine, b, count, T::DTYPE)
    }

    /// AllReduce ([`Communicator::all_reduce`]): element-wise `op` (sum, max or min) over every
    /// rank's `send` into every rank's `recv`. [`Error::Length`] unless
    /// `recv.len() == send.len()` (nothing enqueued).
    ///
    /// ```
    /// use aiv_comm::ReduceOp;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let send = t.htod_copy([comm.rank() as i32, 10])?;
    ///     let mut recv = t.alloc_zeros::<i32>(2)?;
    ///     t.all_reduce(&send, &mut recv, ReduceOp::Max)?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[1, 10]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_reduce<T: Reducible>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.all_reduce_with(send, recv, op, AllReduceAlgo::Auto)
    }

    /// [`Typed::all_reduce`] with the kernel chosen by the caller
    /// ([`Communicator::all_reduce_with`]; every rank must pass the same `algo`).
    ///
    /// ```
    /// use aiv_comm::{AllReduceAlgo, ReduceOp};
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let send = t.htod_copy([1i8; 64])?;
    ///     let mut recv = t.alloc_zeros::<i8>(64)?;
    ///     t.all_reduce_with(&send, &mut recv, ReduceOp::Sum, AllReduceAlgo::TwoShot)?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert!(got[1].as_ref().unwrap().iter().all(|&x| x == 2));
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_reduce_with<T: Reducible>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
        op: ReduceOp,
        algo: AllReduceAlgo,
    ) -> Result<()> {
        expect_len("all_reduce", "recv", recv.len(), send.len(), "send.len()")?;
        self.comm.all_reduce_with(
            send.as_buffer(),
            recv.as_buffer(),
            send.len(),
            T::DTYPE,
            op,
            algo,
        )
    }

    /// AllReduce in place: `buf` is input and output.
    ///
    /// ```
    /// use aiv_comm::ReduceOp;
    /// use half::bf16;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let mut buf = t.htod_copy([bf16::from_f32(1.0 + comm.rank() as f32); 3])?;
    ///     t.all_reduce_in_place(&mut buf, ReduceOp::Sum)?;
    ///     t.dtoh_sync_copy(&buf)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[bf16::from_f32(3.0); 3]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_reduce_in_place<T: Reducible>(
        &self,
        buf: &mut impl DeviceWrite<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let b = buf.as_buffer();
        self.comm.all_reduce(b, b, buf.len(), T::DTYPE, op)
    }

    /// Sends all of `buf` to `peer` on the main stream ([`Communicator::send`]); `peer` must
    /// post a [`Typed::recv`] (or an untyped recv) of the same number of bytes.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let mut buf = t.htod_copy([comm.rank() as u16 + 7; 3])?;
    ///     if comm.rank() == 0 {
    ///         t.send(&buf, 1)?;
    ///     } else {
    ///         t.recv(&mut buf, 0)?;
    ///     }
    ///     t.dtoh_sync_copy(&buf)
    /// });
    /// assert_eq!(got[1].as_ref().unwrap(), &[7, 7, 7]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn send<T: DeviceElement>(&self, buf: &impl DeviceRead<T>, peer: u32) -> Result<()> {
        self.comm.stream().typed().send(buf, peer)
    }

    /// Receives all of `buf` from `peer` on the main stream ([`Communicator::recv`]; see
    /// [`Typed::send`]).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let mut buf = t.alloc_zeros::<u32>(4)?;
    ///     if comm.rank() == 1 {
    ///         t.send(&t.htod_copy([5u32; 2])?, 0)?;
    ///     } else {
    ///         t.recv(&mut buf.slice_mut(2..)?, 1)?;
    ///     }
    ///     t.dtoh_sync_copy(&buf)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[0, 0, 5, 5]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn recv<T: DeviceElement>(&self, buf: &mut impl DeviceWrite<T>, peer: u32) -> Result<()> {
        self.comm.stream().typed().recv(buf, peer)
    }

    /// ReduceScatter ([`Communicator::reduce_scatter`]): `send` is `size()` blocks of
    /// `recv.len()` elements, and rank `r`'s `recv` gets the element-wise `op` (sum, max or min)
    /// over every rank's block `r`. [`Error::Length`] unless
    /// `send.len() == size() * recv.len()` (nothing enqueued).
    ///
    /// ```
    /// use aiv_comm::ReduceOp;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let r = comm.rank() as i16;
    ///     let send = t.htod_copy([r, r, 10 + r, 10 + r])?; // block 0, block 1
    ///     let mut recv = t.alloc_zeros::<i16>(2)?;
    ///     t.reduce_scatter(&send, &mut recv, ReduceOp::Sum)?;
    ///     assert!(t.reduce_scatter(&send, &mut recv.slice_mut(1..)?, ReduceOp::Sum).is_err());
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[1].as_ref().unwrap(), &[21, 21]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn reduce_scatter<T: Reducible>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let want = times_size("reduce_scatter", recv.len(), self.size())?;
        expect_len(
            "reduce_scatter",
            "send",
            send.len(),
            want,
            "size() * recv.len()",
        )?;
        self.comm
            .reduce_scatter(send.as_buffer(), recv.as_buffer(), recv.len(), T::DTYPE, op)
    }

    /// ReduceScatter in place: `buf` is `size()` blocks of `buf.len() / size()` elements, the
    /// input; the result lands in block `rank()`, the other blocks are not written.
    /// [`Error::Length`] unless `buf.len()` is a multiple of `size()`.
    ///
    /// ```
    /// use aiv_comm::ReduceOp;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let r = comm.rank() as f32;
    ///     let mut buf = t.htod_copy([r, 10. + r])?;
    ///     t.reduce_scatter_in_place(&mut buf, ReduceOp::Max)?;
    ///     t.dtoh_sync_copy(&buf)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[1., 10.]); // block 0 reduced
    /// assert_eq!(got[1].as_ref().unwrap(), &[1., 11.]); // block 1 reduced
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn reduce_scatter_in_place<T: Reducible>(
        &self,
        buf: &mut impl DeviceWrite<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let count = per_rank("reduce_scatter_in_place", "buf", buf.len(), self.size())?;
        let es = size_of::<T>();
        let b = buf.as_buffer();
        let mine = b.view(self.rank() as usize * count * es, count * es)?;
        self.comm.reduce_scatter(b, &mine, count, T::DTYPE, op)
    }

    /// ReduceScatterV ([`Communicator::reduce_scatter_v`]): rank `q`'s block of every rank's
    /// `send` is `send_counts[q]` elements at element `send_displs[q]`, and rank `r`'s `recv`
    /// gets the element-wise `op` over every rank's block `r`. Every rank passes the same
    /// `send_counts`; the displacements are each rank's own.
    ///
    /// [`Error::Length`] (nothing enqueued) unless `send_counts` and `send_displs` have
    /// `size()` entries, every block fits in `send`, and `recv.len() == send_counts[rank()]`.
    ///
    /// ```
    /// use aiv_comm::ReduceOp;
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let r = comm.rank() as i32;
    ///     // Block 1 (2 elements) first, then block 0 (1 element).
    ///     let send = t.htod_copy([r, 2 * r, 100 + r])?;
    ///     let mut recv = t.alloc_zeros::<i32>(1 + comm.rank() as usize)?;
    ///     t.reduce_scatter_v(&send, &[1, 2], &[2, 0], &mut recv, ReduceOp::Sum)?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[201]);
    /// assert_eq!(got[1].as_ref().unwrap(), &[1, 2]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn reduce_scatter_v<T: Reducible>(
        &self,
        send: &impl DeviceRead<T>,
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut impl DeviceWrite<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let op_name = "reduce_scatter_v";
        check_segments(
            op_name,
            "send",
            send.len(),
            send_counts,
            send_displs,
            self.size(),
        )?;
        let rule = "send_counts[rank()]";
        expect_len(
            op_name,
            "recv",
            recv.len(),
            send_counts[self.rank() as usize],
            rule,
        )?;
        self.comm.reduce_scatter_v(
            send.as_buffer(),
            send_counts,
            send_displs,
            recv.as_buffer(),
            recv.len(),
            T::DTYPE,
            op,
        )
    }

    /// AllGatherV ([`Communicator::all_gather_v`]): rank `q`'s `send` (`recv_counts[q]`
    /// elements) lands at element `recv_displs[q]` of every rank's `recv`. Every rank passes the
    /// same `recv_counts`; the displacements are each rank's own, and the segments may not
    /// overlap.
    ///
    /// [`Error::Length`] (nothing enqueued) unless `recv_counts` and `recv_displs` have
    /// `size()` entries, every segment fits in `recv`, and `send.len() == recv_counts[rank()]`.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let r = comm.rank() as usize;
    ///     let send = t.htod_copy(vec![r as u64 + 1; r + 1])?; // 1 and 2 elements
    ///     let mut recv = t.alloc_zeros::<u64>(4)?;
    ///     t.all_gather_v(&send, &mut recv, &[1, 2], &[3, 0])?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[2, 2, 0, 1]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_gather_v<T: DeviceElement>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let op_name = "all_gather_v";
        check_segments(
            op_name,
            "recv",
            recv.len(),
            recv_counts,
            recv_displs,
            self.size(),
        )?;
        let rule = "recv_counts[rank()]";
        expect_len(
            op_name,
            "send",
            send.len(),
            recv_counts[self.rank() as usize],
            rule,
        )?;
        self.comm.all_gather_v(
            send.as_buffer(),
            send.len(),
            recv.as_buffer(),
            recv_counts,
            recv_displs,
            T::DTYPE,
        )
    }

    /// AlltoAll ([`Communicator::all_to_all`]): `send` and `recv` are `size()` blocks of
    /// `send.len() / size()` elements; block `q` of `send` goes to rank `q`, and rank `q`'s
    /// block for this rank lands in block `q` of `recv`. [`Error::Length`] unless
    /// `recv.len() == send.len()`, a multiple of `size()` (nothing enqueued).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let r = comm.rank() as i8;
    ///     let send = t.htod_copy([10 * r, 10 * r, 10 * r + 1, 10 * r + 1])?; // for 0, for 1
    ///     let mut recv = t.alloc_zeros::<i8>(4)?;
    ///     t.all_to_all(&send, &mut recv)?;
    ///     assert!(t.all_to_all(&send.slice(1..)?, &mut recv.slice_mut(1..)?).is_err());
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[1].as_ref().unwrap(), &[1, 1, 11, 11]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_to_all<T: DeviceElement>(
        &self,
        send: &impl DeviceRead<T>,
        recv: &mut impl DeviceWrite<T>,
    ) -> Result<()> {
        expect_len("all_to_all", "recv", recv.len(), send.len(), "send.len()")?;
        let count = per_rank("all_to_all", "send", send.len(), self.size())?;
        self.comm
            .all_to_all(send.as_buffer(), recv.as_buffer(), count, T::DTYPE)
    }

    /// AlltoAllV ([`Communicator::all_to_all_v`]): `send_counts[q]` elements at element
    /// `send_displs[q]` of `send` go to rank `q`, and rank `q`'s `recv_counts[q]` elements for
    /// this rank land at element `recv_displs[q]` of `recv`. Each rank's counts are its own
    /// (what `p` sends `q` must be what `q` expects from `p`: else
    /// [`Error::CollectiveMismatch`] on every rank, at [`Typed::synchronize`]).
    ///
    /// [`Error::Length`] (nothing enqueued) unless each of the four slices has `size()`
    /// entries and every segment fits in its buffer.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     // Rank 0 sends 1 element to itself and 2 to rank 1; rank 1 sends 3 to each.
    ///     let r = comm.rank() as usize;
    ///     let (sc, rc) = if r == 0 { ([1, 2], [1, 3]) } else { ([3, 3], [2, 3]) };
    ///     let send = t.htod_copy((0..6).map(|i| 100 * r as u32 + i).collect::<Vec<_>>())?;
    ///     let mut recv = t.alloc_zeros::<u32>(rc[0] + rc[1])?;
    ///     t.all_to_all_v(&send, &sc, &[0, sc[0]], &mut recv, &rc, &[0, rc[0]])?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[0, 100, 101, 102]);
    /// assert_eq!(got[1].as_ref().unwrap(), &[1, 2, 103, 104, 105]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_to_all_v<T: DeviceElement>(
        &self,
        send: &impl DeviceRead<T>,
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut impl DeviceWrite<T>,
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let n = self.size();
        check_segments(
            "all_to_all_v",
            "send",
            send.len(),
            send_counts,
            send_displs,
            n,
        )?;
        check_segments(
            "all_to_all_v",
            "recv",
            recv.len(),
            recv_counts,
            recv_displs,
            n,
        )?;
        self.comm.all_to_all_v(
            send.as_buffer(),
            send_counts,
            send_displs,
            recv.as_buffer(),
            recv_counts,
            recv_displs,
            T::DTYPE,
        )
    }

    /// AlltoAllVC ([`Communicator::all_to_all_vc`]): every rank passes the whole counts matrix
    /// (`matrix[p * size() + q]` elements from rank `p` to rank `q`), pieces packed in rank
    /// order in `send` and `recv`; the call's buffers are the runtime-typed one's, checked for
    /// length there (`recv` must hold this rank's column, `send` its row).
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let m = [1, 2, 3, 0]; // rank 0 -> 0: 1, 0 -> 1: 2, 1 -> 0: 3, 1 -> 1: 0
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let r = comm.rank() as i32;
    ///     let send = t.htod_copy([10 * r, 10 * r + 1, 10 * r + 2])?;
    ///     let mut recv = t.alloc_zeros::<i32>(if r == 0 { 4 } else { 2 })?;
    ///     t.all_to_all_vc(&send, &m, &mut recv)?;
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[0, 10, 11, 12]);
    /// assert_eq!(got[1].as_ref().unwrap(), &[1, 2]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn all_to_all_vc<T: DeviceElement>(
        &self,
        send: &impl DeviceRead<T>,
        matrix: &[usize],
        recv: &mut impl DeviceWrite<T>,
    ) -> Result<()> {
        self.comm
            .all_to_all_vc(send.as_buffer(), matrix, recv.as_buffer(), T::DTYPE)
    }

    /// Broadcast ([`Communicator::broadcast`]): `root`'s `send` into every rank's `recv` (the
    /// root's included), cudarc's form. `send` is used on the root only, which must pass
    /// `Some` of `recv.len()` elements; the other ranks pass `None` (a `Some` there is ignored).
    ///
    /// [`Error::Length`] if the root's `send.len() != recv.len()`, [`Error::InvalidArgument`]
    /// if the root passes `None` (nothing enqueued). Every rank must pass the same
    /// `recv.len()` and `root`. In place is [`Typed::broadcast_in_place`].
    ///
    /// ```
    /// use half::f16;
    /// let world = aiv_comm::World::sim(3)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let mut recv = t.alloc_zeros::<f16>(2)?;
    ///     if comm.rank() == 1 {
    ///         let send = t.htod_copy([f16::from_f32(1.5), f16::from_f32(-2.0)])?;
    ///         t.broadcast(Some(&send), &mut recv, 1)?;
    ///     } else {
    ///         t.broadcast(None, &mut recv, 1)?;
    ///     }
    ///     t.dtoh_sync_copy(&recv)
    /// });
    /// assert_eq!(got[2].as_ref().unwrap(), &[f16::from_f32(1.5), f16::from_f32(-2.0)]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn broadcast<T: DeviceElement>(
        &self,
        send: Option<&dyn DeviceRead<T>>,
        recv: &mut impl DeviceWrite<T>,
        root: u32,
    ) -> Result<()> {
        let r = recv.as_buffer();
        if root != self.rank() {
            return self.comm.broadcast(r, r, recv.len(), T::DTYPE, root);
        }
        let Some(send) = send else {
            return Err(Error::InvalidArgument(format!(
                "broadcast: rank {root} is the root and must pass Some(send) (or use broadcast_in_place)"
            )));
        };
        expect_len("broadcast", "send", send.len(), recv.len(), "recv.len()")?;
        self.comm
            .broadcast(send.as_buffer(), r, recv.len(), T::DTYPE, root)
    }

    /// Broadcast in place (HCCL's form): `root`'s `buf` into every rank's `buf`. Every rank must
    /// pass the same `buf.len()` and `root`.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(3)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let mut buf = t.htod_copy([comm.rank() as i64; 3])?;
    ///     t.broadcast_in_place(&mut buf, 2)?;
    ///     t.dtoh_sync_copy(&buf)
    /// });
    /// assert!(got.iter().all(|g| g.as_ref().unwrap() == &[2; 3]));
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn broadcast_in_place<T: DeviceElement>(
        &self,
        buf: &mut impl DeviceWrite<T>,
        root: u32,
    ) -> Result<()> {
        self.comm
            .broadcast_in_place(buf.as_buffer(), buf.len(), T::DTYPE, root)
    }

    /// Barrier ([`Communicator::barrier`]): enqueued; it completes on each rank once every rank
    /// has run what it enqueued before its barrier. [`Typed::synchronize`] waits for it.
    ///
    /// ```
    /// let world = aiv_comm::World::sim(2)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     t.barrier()?;
    ///     t.synchronize()
    /// });
    /// assert!(got.iter().all(|g| g.is_ok()));
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        self.comm.barrier()
    }

    /// BatchSendRecv ([`Communicator::batch_send_recv`]): the sends and receives of `items`
    /// ([`P2p`]) as one operation, which no order of the list deadlocks. Counts and element
    /// types come from the slices; the runtime-typed checks (peers, overlapping receives) run
    /// before anything is enqueued.
    ///
    /// ```
    /// use aiv_comm::typed::P2p;
    /// let world = aiv_comm::World::sim(3)?;
    /// let got = world.run(|comm| {
    ///     let t = comm.typed();
    ///     let (r, n) = (comm.rank(), comm.size());
    ///     let mine = t.htod_copy([r as u16; 4])?;
    ///     let mut from_left = t.alloc_zeros::<u16>(4)?;
    ///     // Receive first, then send: on separate sends and receives this would deadlock.
    ///     t.batch_send_recv(&[
    ///         P2p::recv(&mut from_left, (r + n - 1) % n),
    ///         P2p::send(&mine, (r + 1) % n),
    ///     ])?;
    ///     t.dtoh_sync_copy(&from_left)
    /// });
    /// assert_eq!(got[0].as_ref().unwrap(), &[2; 4]);
    /// # Ok::<(), aiv_comm::Error>(())
    /// ```
    pub fn batch_send_recv(&self, items: &[P2p<'_>]) -> Result<()> {
        let items: Vec<SendRecvItem<'_>> = items.iter().map(P2p::item).collect();
        self.comm.batch_send_recv(&items)
    }
}
