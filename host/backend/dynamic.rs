//! The erasure of a [`Backend`]: the host holds a world's backend as `Arc<dyn DynBackend>` and
//! its handles as [`Memory`] and [`StreamHandle`], which carry the backend that made them, so a
//! handle is only ever given back to its own backend (the downcasts cannot fail).

use std::any::Any;
use std::sync::Arc;

use ascendc_twin::{ArgBlock, Kernel};

use super::{Backend, Blocks, MemKind, Signal};
use crate::error::{Error, Result};

/// A backend handle, type-erased.
type Handle = Box<dyn Any + Send + Sync>;

/// [`Backend`] without associated types (every handle a [`Handle`]).
pub(crate) trait DynBackend: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn name(&self) -> &'static str;
    fn description(&self) -> String;
    fn id(&self) -> u64;
    fn devices(&self) -> u32;
    fn cores(&self, device: u32) -> u32;
    fn alloc(&self, device: u32, bytes: usize, kind: MemKind) -> Result<(Handle, u64)>;
    fn process_id(&self) -> Result<u32>;
    fn export(&self, mem: &Handle, importers: &[u32]) -> Result<Vec<u8>>;
    fn import(
        &self,
        device: u32,
        handle: &[u8],
        bytes: usize,
        kind: MemKind,
    ) -> Result<(Handle, u64)>;
    fn write(&self, mem: &Handle, offset: usize, data: &[u8]) -> Result<()>;
    fn read(&self, mem: &Handle, offset: usize, out: &mut [u8]) -> Result<()>;
    fn fill(&self, mem: &Handle, offset: usize, len: usize, value: u8) -> Result<()>;
    fn create_stream(&self, device: u32, affinity: usize) -> Result<Handle>;
    fn host_task(&self, stream: &Handle, task: Box<dyn FnOnce() + Send>);
    /// # Safety
    /// As [`Backend::launch`].
    unsafe fn launch(
        &self,
        stream: &Handle,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32>;
    fn set_launch_deadline(&self, exec_timeout: std::time::Duration);
    fn signal(&self, value: u64) -> Box<dyn Signal>;
    fn abort(&self, reason: &str);
    fn wait_until_idle(&self);
}

fn downcast<T: 'static>(h: &Handle) -> &T {
    h.downcast_ref::<T>()
        .expect("a handle is only given back to the backend that made it")
}

impl<B: Backend> DynBackend for B {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn name(&self) -> &'static str {
        Backend::name(self)
    }
    fn description(&self) -> String {
        Backend::description(self)
    }
    fn id(&self) -> u64 {
        Backend::id(self)
    }
    fn devices(&self) -> u32 {
        Backend::devices(self)
    }
    fn cores(&self, device: u32) -> u32 {
        Backend::cores(self, device)
    }
    fn alloc(&self, device: u32, bytes: usize, kind: MemKind) -> Result<(Handle, u64)> {
        let m = Backend::alloc(self, device, bytes, kind)?;
        let addr = Backend::addr(self, &m);
        Ok((Box::new(m), addr))
    }
    fn process_id(&self) -> Result<u32> {
        Backend::process_id(self)
    }
    fn export(&self, mem: &Handle, importers: &[u32]) -> Result<Vec<u8>> {
        Backend::export(self, downcast::<B::Memory>(mem), importers)
    }
    fn import(
        &self,
        device: u32,
        handle: &[u8],
        bytes: usize,
        kind: MemKind,
    ) -> Result<(Handle, u64)> {
        let m = Backend::import(self, device, handle, bytes, kind)?;
        let addr = Backend::addr(self, &m);
        Ok((Box::new(m), addr))
    }
    fn write(&self, mem: &Handle, offset: usize, data: &[u8]) -> Result<()> {
        Backend::write(self, downcast::<B::Memory>(mem), offset, data)
    }
    fn read(&self, mem: &Handle, offset: usize, out: &mut [u8]) -> Result<()> {
        Backend::read(self, downcast::<B::Memory>(mem), offset, out)
    }
    fn fill(&self, mem: &Handle, offset: usize, len: usize, value: u8) -> Result<()> {
        Backend::fill(self, downcast::<B::Memory>(mem), offset, len, value)
    }
    fn create_stream(&self, device: u32, affinity: usize) -> Result<Handle> {
        Ok(Box::new(Backend::create_stream(self, device, affinity)?))
    }
    fn host_task(&self, stream: &Handle, task: Box<dyn FnOnce() + Send>) {
        Backend::host_task(self, downcast::<B::Stream>(stream), task)
    }
    unsafe fn launch(
        &self,
        stream: &Handle,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32> {
        // SAFETY: forwarded from the caller.
        unsafe { Backend::launch(self, downcast::<B::Stream>(stream), kernel, blocks, args) }
    }
    fn set_launch_deadline(&self, exec_timeout: std::time::Duration) {
        Backend::set_launch_deadline(self, exec_timeout)
    }
    fn signal(&self, value: u64) -> Box<dyn Signal> {
        Box::new(Backend::signal(self, value))
    }
    fn abort(&self, reason: &str) {
        Backend::abort(self, reason)
    }
    fn wait_until_idle(&self) {
        Backend::wait_until_idle(self)
    }
}

/// A GM allocation of a world's backend: its device, device address and length, freed (by its
/// backend) with the last handle.
pub(crate) struct Memory {
    backend: Arc<dyn DynBackend>,
    raw: Handle,
    addr: u64,
    len: usize,
    device: u32,
}

impl Memory {
    /// Allocates `bytes` of zeroed GM of `kind` on `device` of `backend`.
    pub fn alloc(
        backend: &Arc<dyn DynBackend>,
        device: u32,
        bytes: usize,
        kind: MemKind,
    ) -> Result<Memory> {
        let (raw, addr) = backend.alloc(device, bytes, kind)?;
        Ok(Memory {
            backend: backend.clone(),
            raw,
            addr,
            len: bytes,
            device,
        })
    }

    /// A handle by which the processes `importers` may import this memory
    /// ([`Backend::export`]).
    pub fn export(&self, importers: &[u32]) -> Result<Vec<u8>> {
        self.backend.export(&self.raw, importers)
    }

    /// `bytes` of `device`'s memory that another process of the job exported as `handle`
    /// ([`Backend::import`]).
    pub fn import(
        backend: &Arc<dyn DynBackend>,
        device: u32,
        handle: &[u8],
        bytes: usize,
        kind: MemKind,
    ) -> Result<Memory> {
        let (raw, addr) = backend.import(device, handle, bytes, kind)?;
        Ok(Memory {
            backend: backend.clone(),
            raw,
            addr,
            len: bytes,
            device,
        })
    }

    /// Device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The device (rank) it lives on.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// The world (backend) it belongs to.
    pub fn world_id(&self) -> u64 {
        self.backend.id()
    }

    /// A new signal of its backend.
    pub fn signal(&self, value: u64) -> Box<dyn Signal> {
        self.backend.signal(value)
    }

    /// Refuses `[offset, offset + bytes)` outside the allocation.
    fn check(&self, offset: usize, bytes: usize) -> Result<()> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::Length(format!(
                "host copy of {bytes} bytes at byte {offset} of a {}-byte device allocation is out of its bounds",
                self.len
            ))),
        }
    }

    /// Copies `data` to byte `offset` (host -> device).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len())?;
        self.backend.write(&self.raw, offset, data)
    }

    /// Copies bytes from `offset` into `out` (device -> host).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len())?;
        self.backend.read(&self.raw, offset, out)
    }

    /// Sets `len` bytes from `offset` to `value`.
    pub fn fill(&self, offset: usize, len: usize, value: u8) -> Result<()> {
        self.check(offset, len)?;
        self.backend.fill(&self.raw, offset, len, value)
    }
}

/// A stream of a world's backend.
pub(crate) struct StreamHandle {
    backend: Arc<dyn DynBackend>,
    raw: Handle,
}

impl StreamHandle {
    /// A new stream on `device` of `backend`.
    pub fn new(backend: &Arc<dyn DynBackend>, device: u32, affinity: usize) -> Result<Self> {
        Ok(StreamHandle {
            backend: backend.clone(),
            raw: backend.create_stream(device, affinity)?,
        })
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn DynBackend> {
        &self.backend
    }

    /// Runs `task` on the stream's executor ([`Backend::host_task`]).
    pub fn host_task(&self, task: Box<dyn FnOnce() + Send>) {
        self.backend.host_task(&self.raw, task)
    }

    /// Launches on the stream ([`Backend::launch`]); returns the block count used.
    ///
    /// # Safety
    /// As [`Backend::launch`].
    pub unsafe fn launch(
        &self,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32> {
        // SAFETY: forwarded from the caller.
        unsafe { self.backend.launch(&self.raw, kernel, blocks, args) }
    }
}
