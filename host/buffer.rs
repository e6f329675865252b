//! Device buffers: GM on one rank, owned jointly by the host handles and the tasks that use it.
//!
//! Every task that references a buffer holds a [`Use`] of it from the moment it is enqueued
//! until it has run (or was dropped unrun): the memory cannot be freed under a running kernel.
//! Host copies and tasks exclude each other where they conflict: a host read waits for the
//! enqueued tasks that write the buffer, a host write for every enqueued task that uses it, and
//! a task about to start waits for the host copies in progress that conflict with it. So a host
//! copy never races a kernel's DMA, whatever threads the program uses. Claims are per allocation
//! (a view's claim covers the whole allocation), which is conservative.
//!
//! A task's write claim also names the bytes the task writes. If the task fails or is dropped
//! unrun, those bytes are *poisoned* with its error: a host read of any of them is
//! [`Error::Poisoned`] (naming that error) until a later task that writes them succeeds, the
//! host writes them, or [`DeviceBuffer::clear_poison`] accepts them as they are. So the output
//! of a failed or dropped launch never reads back as a result.

use std::sync::Arc;

use crate::backend::dynamic::Memory;
use crate::backend::Signal;
use bytemuck::Pod;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::poison::PoisonMap;

/// Who uses an allocation now.
#[derive(Default)]
struct Claims {
    /// Enqueued (or running) tasks that read it.
    task_reads: usize,
    /// Enqueued (or running) tasks that write it.
    task_writes: usize,
    /// Host reads in progress.
    host_reads: usize,
    /// Host writes in progress.
    host_writes: usize,
    /// Threads and host tasks waiting in `wait_then` (changes signal `changed` only then).
    waiters: usize,
    /// Byte ranges of the allocation that a failed or dropped task was to write, with its error.
    poison: PoisonMap,
}

/// One GM allocation of a world and its claims.
pub(crate) struct Alloc {
    gm: Memory,
    /// The world (backend) the memory belongs to.
    world: u64,
    claims: Mutex<Claims>,
    /// Bumped on every change of `claims`, for waiters.
    changed: Box<dyn Signal>,
}

impl Alloc {
    /// Waits until `ready` holds for the claims, then applies `then` (atomically with the
    /// check; None: nothing to change).
    fn wait_then(&self, ready: impl Fn(&Claims) -> bool, then: Option<fn(&mut Claims)>) {
        let mut c = self.claims.lock();
        let mut counted = false;
        while !ready(&c) {
            // Counted, and the signal read, under the lock: a change made after this look
            // sees the waiter and bumps the signal past `seen`.
            if !counted {
                counted = true;
                c.waiters += 1;
            }
            let seen = self.changed.get();
            drop(c);
            self.changed.wait_until(None, &|v| v != seen);
            c = self.claims.lock();
        }
        if counted {
            c.waiters -= 1;
        }
        if let Some(f) = then {
            f(&mut c);
            self.signal(c);
        }
    }

    fn change(&self, f: impl FnOnce(&mut Claims)) {
        let mut c = self.claims.lock();
        f(&mut c);
        self.signal(c);
    }

    /// Wakes the waiters after a change of the claims (`c`, still locked), if there are any:
    /// with none, no signal (its lock and fence are cache lines moving between the thread that
    /// enqueues and the worker that runs the task, twice per buffer and task).
    fn signal(&self, c: parking_lot::MutexGuard<'_, Claims>) {
        let wake = c.waiters > 0;
        drop(c);
        if wake {
            self.changed.update(&mut |v| v.wrapping_add(1));
        }
    }
}

/// A device buffer: a range of GM on one rank's device. Cheap to clone (shared).
///
/// Host copies ([`DeviceBuffer::write`], [`DeviceBuffer::read`], [`DeviceBuffer::fill`],
/// [`DeviceBuffer::to_vec`]) are ordered with the work enqueued on it: a read waits for the
/// enqueued tasks that write the buffer, a write for every enqueued task that uses it. So
/// `to_vec` after a collective returns its result even without `synchronize` (which still
/// reports the collective's errors).
///
/// ```
/// use aiv_comm::{World, DataType, ReduceOp};
/// let world = World::sim(2).unwrap();
/// let c = &world.comms()[0];
/// let x = c.alloc_from(&[1.0f32; 8]).unwrap();
/// assert_eq!(x.len(), 32);
/// x.write(2, &[5.0f32]).unwrap();
/// assert_eq!(x.to_vec::<f32>().unwrap()[2], 5.0);
/// ```
#[derive(Clone)]
pub struct DeviceBuffer {
    alloc: Arc<Alloc>,
    offset: usize,
    len: usize,
}

/// How a kernel of yours uses a device buffer (for [`crate::Communicator::launch_with_tags`]):
/// the buffer stays allocated until the launch has run, and host copies are ordered with it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum BufferAccess<'a> {
    /// The kernel only reads the buffer.
    Read(&'a DeviceBuffer),
    /// The kernel writes (and may read) the buffer: all of it, if the launch succeeds (its
    /// bytes are then no longer poisoned), and if the launch fails or is dropped unrun, every
    /// byte of it is poisoned ([`crate::Error::Poisoned`]). Declare the view the kernel writes.
    Write(&'a DeviceBuffer),
}

impl BufferAccess<'_> {
    pub(crate) fn buffer(&self) -> &DeviceBuffer {
        match self {
            BufferAccess::Read(b) | BufferAccess::Write(b) => b,
        }
    }

    pub(crate) fn claim(&self) -> Use {
        match self {
            BufferAccess::Read(b) => b.use_read(),
            BufferAccess::Write(b) => b.use_write(),
        }
    }
}

/// A task's claims on buffers, kept inline: a launch claims two (its input and its output), so
/// enqueuing a collective allocates no list for them.
pub(crate) type Uses = smallvec::SmallVec<[Use; 2]>;

/// The bytes of an allocation a task writes (all of them when it succeeds): `count` pieces of
/// `len` bytes, the first at `start`, each `stride` bytes after the one before (AllGather's
/// output: a piece per rank; one piece for most tasks).
#[derive(Clone, Copy)]
pub(crate) struct Written {
    start: usize,
    len: usize,
    stride: usize,
    count: usize,
}

impl Written {
    /// The pieces, as `[start, end)` ranges.
    fn pieces(self) -> impl Iterator<Item = (usize, usize)> {
        (0..self.count).map(move |k| {
            let s = self.start + k * self.stride;
            (s, s + self.len)
        })
    }
}

/// A task's claim on a buffer (see the module docs): held from enqueue until the task is done.
pub(crate) struct Use {
    alloc: Arc<Alloc>,
    /// For a write claim, the bytes of the allocation the task writes.
    write: Option<Written>,
    /// Released by [`Use::finish`] (else by drop, with no word on the bytes).
    finished: bool,
}

impl Use {
    /// The task is about to start: waits for the conflicting host copies in progress.
    pub fn begin(&self) {
        let write = self.write.is_some();
        self.alloc.wait_then(
            |c| c.host_writes == 0 && (!write || c.host_reads == 0),
            None,
        );
    }

    /// The task is done: `failed` with this error, or dropped unrun because of it (its write
    /// range is poisoned), or succeeded (`None`: its write range holds its result).
    pub fn finish(mut self, failed: Option<&Arc<Error>>) {
        self.finished = true;
        let write = self.write;
        self.alloc.change(|c| match write {
            Some(w) => {
                c.task_writes -= 1;
                for (start, end) in w.pieces() {
                    match failed {
                        Some(e) => c.poison.poison(start, end, e),
                        None => c.poison.clear(start, end),
                    }
                }
            }
            None => c.task_reads -= 1,
        });
    }
}

impl Drop for Use {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Never part of a task (a call refused after taking its claims): nothing was written.
        let write = self.write.is_some();
        self.alloc.change(|c| {
            if write {
                c.task_writes -= 1;
            } else {
                c.task_reads -= 1;
            }
        });
    }
}

/// A host copy in progress (see [`DeviceBuffer::read`] and friends).
struct HostCopy<'a> {
    alloc: &'a Alloc,
    write: bool,
}

impl<'a> HostCopy<'a> {
    /// Waits for the conflicting enqueued tasks, then claims the buffer for a host copy.
    fn start(alloc: &'a Alloc, write: bool) -> HostCopy<'a> {
        let claim: fn(&mut Claims) = if write {
            |c| c.host_writes += 1
        } else {
            |c| c.host_reads += 1
        };
        alloc.wait_then(
            |c| c.task_writes == 0 && (!write || c.task_reads == 0),
            Some(claim),
        );
        HostCopy { alloc, write }
    }

    /// [`HostCopy::start`] of a read of bytes `[start, end)` of the allocation: refused with
    /// [`Error::Poisoned`] if a failed or dropped task was to write any of them.
    fn read(alloc: &'a Alloc, start: usize, end: usize) -> Result<HostCopy<'a>> {
        let copy = HostCopy::start(alloc, false);
        let poisoned = alloc.claims.lock().poison.first(start, end).cloned();
        match poisoned {
            Some(cause) => Err(Error::Poisoned {
                cause: Box::new((*cause).clone()),
            }),
            None => Ok(copy),
        }
    }

    /// The host wrote bytes `[start, end)`: they hold what it wrote.
    fn wrote(&self, start: usize, end: usize) {
        self.alloc.claims.lock().poison.clear(start, end);
    }
}

impl Drop for HostCopy<'_> {
    fn drop(&mut self) {
        let write = self.write;
        self.alloc.change(|c| {
            if write {
                c.host_writes -= 1;
            } else {
                c.host_reads -= 1;
            }
        });
    }
}

impl DeviceBuffer {
    pub(crate) fn new(gm: Memory) -> DeviceBuffer {
        let len = gm.len();
        DeviceBuffer {
            alloc: Arc::new(Alloc {
                world: gm.world_id(),
                changed: gm.signal(0),
                gm,
                claims: Mutex::new(Claims::default()),
            }),
            offset: 0,
            len,
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rank of the device holding it.
    pub fn rank(&self) -> u32 {
        self.alloc.gm.device()
    }

    /// GM address of its first byte.
    pub fn addr(&self) -> u64 {
        self.alloc.gm.addr() + self.offset as u64
    }

    /// GM address of byte `offset`, as a kernel parameter ([`ascendc_twin::ArgBlock::arg`]).
    /// Panics if `offset` is past the end.
    pub fn gm(&self, offset: usize) -> ascendc_twin::GmAddr {
        assert!(
            offset <= self.len,
            "offset {offset} past the end of a {}-byte device buffer",
            self.len
        );
        ascendc_twin::GmAddr(self.addr() + offset as u64)
    }

    /// Identifies the world whose memory this is (see [`crate::World::id`]).
    pub fn world_id(&self) -> u64 {
        self.alloc.world
    }

    /// A sub-range `[offset, offset + len)` of this buffer (shares the memory).
    pub fn view(&self, offset: usize, len: usize) -> Result<DeviceBuffer> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(DeviceBuffer {
                alloc: self.alloc.clone(),
                offset: self.offset + offset,
                len,
            }),
            _ => Err(Error::Length(format!(
                "view {offset}..{} of a {}-byte buffer",
                offset.saturating_add(len),
                self.len
            ))),
        }
    }

    /// A claim for a task that reads the buffer (taken when the task is enqueued).
    pub(crate) fn use_read(&self) -> Use {
        self.alloc.change(|c| c.task_reads += 1);
        Use {
            alloc: self.alloc.clone(),
            write: None,
            finished: false,
        }
    }

    /// A claim for a task that writes (or reads and writes) the whole buffer.
    pub(crate) fn use_write(&self) -> Use {
        self.use_write_range(0, self.len)
    }

    /// A claim for a task that writes bytes `[offset, offset + len)` of the buffer (all of them
    /// if it succeeds; see the module docs), inside it.
    pub(crate) fn use_write_range(&self, offset: usize, len: usize) -> Use {
        self.use_write_strided(offset, len, 0, 1)
    }

    /// A claim for a task that writes `count` pieces of `len` bytes of the buffer, the first at
    /// `offset`, each `stride` bytes after the one before (all of them if it succeeds), inside
    /// it.
    pub(crate) fn use_write_strided(
        &self,
        offset: usize,
        len: usize,
        stride: usize,
        count: usize,
    ) -> Use {
        debug_assert!(count
            .checked_sub(1)
            .map_or(Some(0), |k| k.checked_mul(stride))
            .and_then(|last| last.checked_add(offset)?.checked_add(len))
            .is_some_and(|e| count == 0 || e <= self.len));
        self.alloc.change(|c| c.task_writes += 1);
        Use {
            alloc: self.alloc.clone(),
            write: Some(Written {
                start: self.offset + offset,
                len,
                stride,
                count,
            }),
            finished: false,
        }
    }

    /// Copies `data` into the buffer starting at element `elem_offset` (host -> device), after
    /// every enqueued task that uses the buffer. The bytes written are no longer poisoned.
    pub fn write<T: Pod>(&self, elem_offset: usize, data: &[T]) -> Result<()> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let off = self.byte_range(elem_offset, std::mem::size_of::<T>(), bytes.len())?;
        let copy = HostCopy::start(&self.alloc, true);
        self.alloc.gm.write(off, bytes)?;
        copy.wrote(off, off + bytes.len());
        Ok(())
    }

    /// Copies elements starting at `elem_offset` into `out` (device -> host), after every
    /// enqueued task that writes the buffer.
    ///
    /// [`Error::Poisoned`] (nothing copied) if a task that was to write any of those bytes
    /// failed or was dropped unrun: they do not hold its result. The error names the task's
    /// error; [`DeviceBuffer::clear_poison`] accepts the bytes as they are.
    pub fn read<T: Pod>(&self, elem_offset: usize, out: &mut [T]) -> Result<()> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        let off = self.byte_range(elem_offset, std::mem::size_of::<T>(), bytes.len())?;
        let _copy = HostCopy::read(&self.alloc, off, off + bytes.len())?;
        self.alloc.gm.read(off, bytes)?;
        Ok(())
    }

    /// The whole buffer as elements of `T` (trailing bytes that do not fill a `T` are left out),
    /// after every enqueued task that writes the buffer; [`Error::Poisoned`] as
    /// [`DeviceBuffer::read`].
    pub fn to_vec<T: Pod + Default>(&self) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.len / std::mem::size_of::<T>().max(1)];
        self.read(0, &mut v)?;
        Ok(v)
    }

    /// Sets every byte to `value`, after every enqueued task that uses the buffer. No byte of
    /// the buffer is poisoned afterwards.
    pub fn fill(&self, value: u8) -> Result<()> {
        let copy = HostCopy::start(&self.alloc, true);
        self.alloc.gm.fill(self.offset, self.len, value)?;
        copy.wrote(self.offset, self.offset + self.len);
        Ok(())
    }

    /// The error of the failed or dropped task that left some byte of this buffer poisoned
    /// (see [`Error::Poisoned`]), after every enqueued task that writes the buffer; `None` if
    /// every byte reads.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aiv_comm::{Config, DataType, Error, ReduceOp, World};
    /// let cfg = Config { exec_timeout: Some(Duration::from_millis(100)), ..Config::default() };
    /// let world = World::sim_with(2, cfg).unwrap();
    /// let c = &world.comms()[0]; // rank 1 never joins: the AllReduce times out
    /// let x = c.alloc_from(&[1.0f32; 16]).unwrap();
    /// let y = c.alloc(64).unwrap();
    /// c.all_reduce(&x, &y, 16, DataType::F32, ReduceOp::Sum).unwrap();
    /// assert!(matches!(y.poisoned(), Some(Error::WaitTimeout { .. })));
    /// assert!(matches!(y.to_vec::<f32>(), Err(Error::Poisoned { .. })));
    /// y.clear_poison(); // take the bytes as they are (partly written)
    /// assert!(y.to_vec::<f32>().is_ok());
    /// ```
    pub fn poisoned(&self) -> Option<Error> {
        let _copy = HostCopy::start(&self.alloc, false);
        let c = self.alloc.claims.lock();
        let cause = c.poison.first(self.offset, self.offset + self.len).cloned();
        drop(c); // before `_copy`, whose drop takes the lock
        cause.map(|e| (*e).clone())
    }

    /// Accepts the bytes of this buffer as they are: reads of them no longer fail with
    /// [`Error::Poisoned`] (what a failed launch left there is not its result, and may be part
    /// of it). Waits for the enqueued tasks that write the buffer first, so a failure of one of
    /// them poisons the bytes again.
    pub fn clear_poison(&self) {
        let copy = HostCopy::start(&self.alloc, false);
        copy.wrote(self.offset, self.offset + self.len);
    }

    fn byte_range(&self, elem_offset: usize, es: usize, bytes: usize) -> Result<usize> {
        let start = elem_offset.checked_mul(es);
        match start.and_then(|s| s.checked_add(bytes)) {
            Some(end) if end <= self.len => Ok(self.offset + elem_offset * es),
            _ => Err(Error::Length(format!(
                "host copy of {bytes} bytes at element {elem_offset} does not fit a {}-byte buffer",
                self.len
            ))),
        }
    }

    pub(crate) fn same_allocation(&self, other: &DeviceBuffer) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
    }

    /// True if the two ranges share a byte.
    pub(crate) fn overlaps(&self, other: &DeviceBuffer, len: usize, other_len: usize) -> bool {
        let (a, b) = (self.addr(), other.addr());
        self.same_allocation(other)
            && len > 0
            && other_len > 0
            && a < b + other_len as u64
            && b < a + len as u64
    }
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer {{ rank: {}, addr: {:#x}, len: {} }}",
            self.rank(),
            self.addr(),
            self.len
        )
    }
}
