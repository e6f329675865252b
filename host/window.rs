//! Window memory: device buffers a rank registers with its communicator so that its peers read
//! them in place, without the copy into the HCCL buffer every collective makes otherwise.
//!
//! HCCL registers user memory with a communicator (`HcclCommRegister`) and maps it into peers
//! (`HcclCommExchangeMem`); its graph-mode AIV AllGather reads peers' inputs where they are. Here
//! [`Communicator::register`] does both for one buffer: from then on, an AllGather or an
//! AllReduce (one-shot out of place, two-shot also in place) whose send buffer lies inside a
//! registered buffer skips the staging copy, and its kernel announces the input's address next
//! to its "ready" flag (`SoftSync::Record1vNAt`); every peer reads from wherever a rank
//! announced, so ranks with and without windows work together and get the same bits. The rank's own launch still ends only
//! after every peer has read its input (the kernels' post-sync), so the input is free to change
//! once the collective has run, as always. A launch that fails before its post-sync stops every
//! launch of the world and ends only when none runs (`Launcher::stop_readers_of_input`).

use crate::buffer::DeviceBuffer;
use crate::communicator::Communicator;
use crate::error::{Error, Result};

impl Communicator {
    /// Registers `buf` (this rank's, non-empty) as window memory of this communicator: memory
    /// every peer may read in place.
    ///
    /// Afterwards, [`Communicator::all_gather`] and [`Communicator::all_reduce`] (one-shot out
    /// of place, two-shot in place too) read a send buffer that lies inside a registered buffer
    /// directly from it, one copy per rank fewer; results are the same bit for bit. The
    /// communicator keeps a handle to the buffer until [`Communicator::deregister`], so the
    /// memory stays allocated. A failed communicator refuses registrations
    /// ([`Error::CommFailed`]) but still deregisters.
    /// Buffers of one rank must not overlap (a view of a registered allocation that does not
    /// overlap the registered range is another window). Peers need not register anything.
    /// Refused ([`Error::Config`]) for ranks that are processes on the ACL backend: peers
    /// read a window at the address its rank announces, which an NPU's IPC import need not
    /// share.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|c| {
    ///     let send = c.alloc_from(&[c.rank() as f32 + 1.0; 64])?;
    ///     c.register(&send)?; // peers read `send` where it is
    ///     let recv = c.alloc(2 * 64 * 4)?;
    ///     c.all_gather(&send, &recv, 64, DataType::F32)?;
    ///     c.synchronize()?;
    ///     c.deregister(&send)?;
    ///     recv.to_vec::<f32>()
    /// });
    /// for r in out {
    ///     let r = r.unwrap();
    ///     assert_eq!((r[0], r[64]), (1.0, 2.0));
    /// }
    /// ```
    pub fn register(&self, buf: &DeviceBuffer) -> Result<()> {
        self.check_usable()?;
        if self.job.is_some() && self.launcher.world.backend.name() == "acl" {
            // The kernels announce a window's address to the peers, which read it there; an
            // NPU's IPC import need not map memory at the same address in every process.
            return Err(Error::Config(
                "window memory is not supported for ranks that are processes on the ACL backend: peers could not read the address a window announces".into(),
            ));
        }
        self.check_owner("window buffer", buf, true)?;
        if buf.is_empty() {
            return Err(Error::InvalidArgument(
                "a window buffer must hold at least one byte".into(),
            ));
        }
        let mut windows = self.state.windows.lock();
        if let Some(w) = windows.iter().find(|w| w.overlaps(buf, w.len(), buf.len())) {
            return Err(Error::Overlap(format!(
                "window buffer [{:#x}, +{}) overlaps the registered [{:#x}, +{}) of rank {}",
                buf.addr(),
                buf.len(),
                w.addr(),
                w.len(),
                self.rank()
            )));
        }
        windows.push(buf.clone());
        Ok(())
    }

    /// Ends the registration of `buf` (exactly a range [`Communicator::register`] took), after
    /// every task enqueued on this rank's streams before the call has run (not those enqueued
    /// meanwhile by other threads): no launch of this rank reads
    /// it in place any more, nor a peer's (a rank's launch ends only after its peers have read
    /// its input). The communicator's handle to the buffer goes.
    pub fn deregister(&self, buf: &DeviceBuffer) -> Result<()> {
        self.check_owner("window buffer", buf, true)?;
        let same = |w: &DeviceBuffer| w.addr() == buf.addr() && w.len() == buf.len();
        // Out of the list first, so that no launch enqueued from now on reads it in place;
        // then wait for those enqueued before.
        let handle = {
            let mut windows = self.state.windows.lock();
            match windows.iter().position(same) {
                Some(i) => windows.remove(i),
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "[{:#x}, +{}) is not a registered window of rank {}",
                        buf.addr(),
                        buf.len(),
                        self.rank()
                    )))
                }
            }
        };
        for (s, p) in self.streams.positions() {
            s.wait_for(p);
        }
        drop(handle);
        Ok(())
    }

    /// The ranges registered as windows on this rank, as (GM address, bytes).
    pub fn windows(&self) -> Vec<(u64, usize)> {
        self.state
            .windows
            .lock()
            .iter()
            .map(|w| (w.addr(), w.len()))
            .collect()
    }

    /// Whether `[buf, buf + bytes)` lies inside one registered window.
    pub(crate) fn in_window(&self, buf: &DeviceBuffer, bytes: usize) -> bool {
        let (a, e) = (buf.addr(), buf.addr() + bytes as u64);
        bytes > 0
            && self
                .state
                .windows
                .lock()
                .iter()
                .any(|w| w.addr() <= a && e <= w.addr() + w.len() as u64)
    }
}
