//! A backend that runs no kernel: it records every launch (device, stream, kernel, blocks,
//! arguments) and completes it at once, so that what the host plans — chunks, blocks per peer,
//! tags, fingerprints, the order of launches on each stream — is tested in microseconds.
//!
//! Memory is host memory at made-up device addresses; host tasks run on threads of their own
//! (a stream's ops may wait on events other streams post); nothing a kernel would write is
//! written, so outputs keep what the host put there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ascendc_twin::{ArgBlock, Kernel};
use parking_lot::Mutex;

use super::{Backend, Blocks, CondvarSignal, MemKind};
use crate::error::{Error, Fault, FaultKind, Result};

/// Where the made-up device addresses start.
const BASE: u64 = 0x1000_0000_0000;

/// One launch, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedLaunch {
    /// The device (rank) it was launched on.
    pub device: u32,
    /// The stream (numbered from 0 per backend, in the order they were made).
    pub stream: u64,
    /// The kernel's name.
    pub kernel: &'static str,
    /// The block count asked for.
    pub blocks: Blocks,
    /// The argument block as packed for the launch.
    pub args: Vec<u8>,
    /// If the first argument is the device address of this backend's memory (the library's
    /// kernels take their argument struct that way), the bytes from there to the end of that
    /// allocation, as they were at the launch: decode the struct from its first bytes.
    pub arg_struct: Option<Vec<u8>>,
}

#[derive(Default)]
struct Log {
    launches: Mutex<Vec<RecordedLaunch>>,
    aborted: Mutex<Option<String>>,
    /// Every live allocation: (device address, memory).
    memory: Mutex<Vec<(u64, std::sync::Weak<RecMemory>)>>,
}

/// The recording backend (see the module docs).
pub struct RecordingBackend {
    id: u64,
    devices: u32,
    cores: u32,
    next_addr: AtomicU64,
    next_stream: AtomicU64,
    log: Arc<Log>,
}

/// What a [`RecordingBackend`] recorded; stays readable after the backend moved into a world.
#[derive(Clone)]
pub struct Recording {
    log: Arc<Log>,
}

impl Recording {
    /// Every launch so far, in the order they were made.
    pub fn launches(&self) -> Vec<RecordedLaunch> {
        self.log.launches.lock().clone()
    }

    /// Forgets the launches recorded so far.
    pub fn clear(&self) {
        self.log.launches.lock().clear();
    }
}

impl RecordingBackend {
    /// `devices` devices of `cores` AIV cores each.
    pub fn new(devices: u32, cores: u32) -> RecordingBackend {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1 << 62);
        RecordingBackend {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            devices,
            cores,
            next_addr: AtomicU64::new(BASE),
            next_stream: AtomicU64::new(0),
            log: Arc::default(),
        }
    }

    /// A handle to what this backend records.
    pub fn recording(&self) -> Recording {
        Recording {
            log: self.log.clone(),
        }
    }
}

/// Host memory standing in for a device allocation.
pub struct RecMemory {
    addr: u64,
    bytes: Mutex<Vec<u8>>,
}

/// A stream of the recording backend.
pub struct RecStream {
    id: u64,
    device: u32,
}

// SAFETY: no launch ever runs (launch returns at once, having run nothing), so launch and
// wait_until_idle keep their promise trivially; memory is never freed while a handle exists
// and its made-up addresses are never reused; ids are unique per process; every host task runs
// on a thread of its own.
unsafe impl Backend for RecordingBackend {
    type Memory = Arc<RecMemory>;
    type Stream = RecStream;
    type Signal = CondvarSignal;

    fn name(&self) -> &'static str {
        "recording"
    }

    fn id(&self) -> u64 {
        self.id
    }

    fn devices(&self) -> u32 {
        self.devices
    }

    fn cores(&self, _device: u32) -> u32 {
        self.cores
    }

    fn alloc(&self, _device: u32, bytes: usize, _kind: MemKind) -> Result<Arc<RecMemory>> {
        // Page-aligned made-up addresses, never reused.
        let span = (bytes.max(1) as u64).div_ceil(4096) * 4096;
        let addr = self.next_addr.fetch_add(span, Ordering::Relaxed);
        // Only what is written is backed: a 200 MB HCCL buffer costs nothing until touched.
        let mem = Arc::new(RecMemory {
            addr,
            bytes: Mutex::new(Vec::new()),
        });
        let mut all = self.log.memory.lock();
        all.retain(|(_, w)| w.strong_count() > 0);
        all.push((addr, Arc::downgrade(&mem)));
        Ok(mem)
    }

    fn addr(&self, mem: &Arc<RecMemory>) -> u64 {
        mem.addr
    }

    fn write(&self, mem: &Arc<RecMemory>, offset: usize, data: &[u8]) -> Result<()> {
        let mut b = mem.bytes.lock();
        if b.len() < offset + data.len() {
            b.resize(offset + data.len(), 0);
        }
        b[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, mem: &Arc<RecMemory>, offset: usize, out: &mut [u8]) -> Result<()> {
        let b = mem.bytes.lock();
        for (i, o) in out.iter_mut().enumerate() {
            *o = b.get(offset + i).copied().unwrap_or(0);
        }
        Ok(())
    }

    fn fill(&self, mem: &Arc<RecMemory>, offset: usize, len: usize, value: u8) -> Result<()> {
        let mut b = mem.bytes.lock();
        if b.len() < offset + len {
            b.resize(offset + len, 0);
        }
        b[offset..offset + len].fill(value);
        Ok(())
    }

    fn create_stream(&self, device: u32, _affinity: usize) -> Result<RecStream> {
        Ok(RecStream {
            id: self.next_stream.fetch_add(1, Ordering::Relaxed),
            device,
        })
    }

    fn host_task(&self, _stream: &RecStream, task: Box<dyn FnOnce() + Send>) {
        std::thread::spawn(task);
    }

    unsafe fn launch(
        &self,
        stream: &RecStream,
        kernel: &'static Kernel,
        blocks: Blocks,
        args: &ArgBlock,
    ) -> Result<u32> {
        crate::backend::check_args(kernel, args)?;
        let n = match blocks {
            Blocks::Exactly(n) | Blocks::UpTo(n) => n,
        };
        if n == 0 || (matches!(blocks, Blocks::Exactly(_)) && n > self.cores) {
            // As the twin refuses it: a launch whose blocks could not all be co-resident.
            return Err(Error::Config(format!(
                "kernel `{}` on rank {}: block_dim {n} refused: the device has {} AIV cores (need 1..={})",
                kernel.name(),
                stream.device,
                self.cores,
                self.cores
            )));
        }
        if let Some(reason) = self.log.aborted.lock().clone() {
            return Err(Error::Fault(Fault::new(
                kernel.name(),
                stream.device,
                None,
                "",
                FaultKind::PeerAborted,
                format!("stopped because a peer failed first: {reason}"),
            )));
        }
        let bytes = args.as_bytes().to_vec();
        let first = bytes
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        let arg_struct = first.and_then(|addr| {
            let all = self.log.memory.lock();
            let (start, mem) = all
                .iter()
                .filter_map(|(a, w)| w.upgrade().map(|m| (*a, m)))
                .find(|(a, _)| *a == addr)?;
            let b = mem.bytes.lock();
            Some(b[(addr - start) as usize..].to_vec())
        });
        self.log.launches.lock().push(RecordedLaunch {
            device: stream.device,
            stream: stream.id,
            kernel: kernel.name(),
            blocks,
            args: bytes,
            arg_struct,
        });
        Ok(match blocks {
            Blocks::Exactly(n) => n,
            Blocks::UpTo(n) => n.min(self.cores),
        })
    }

    fn signal(&self, value: u64) -> CondvarSignal {
        CondvarSignal::new(value)
    }

    fn abort(&self, reason: &str) {
        self.log
            .aborted
            .lock()
            .get_or_insert_with(|| reason.to_string());
    }

    fn wait_until_idle(&self) {
        // Launches end when they are made: none ever runs.
    }
}
