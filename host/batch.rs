//! BatchSendRecv: a list of sends and receives to several peers issued as one operation
//! (HCCL's `HcclBatchSendRecv`), which never deadlocks whatever the order of the list.
//!
//! Each (peer, direction) of the list gets a stream of its own (created on first use and kept
//! by the communicator), so a send waiting for its receiver never holds up another link: the
//! items of one link run in list order, and match the peer's items of that link in its list
//! order, as separate sends and receives do. The batch starts after what was enqueued before it
//! on the main stream and the main stream's later work waits for all of it (events).

use std::collections::BTreeMap;

use crate::buffer::DeviceBuffer;
use crate::communicator::Communicator;
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::link::{CommStream, SendRecvKind};

/// One item of [`Communicator::batch_send_recv`] (`HcclSendRecvItem`).
#[derive(Clone, Copy, Debug)]
pub struct SendRecvItem<'a> {
    /// Send or receive.
    pub kind: SendRecvKind,
    /// The buffer (this rank's): its first `count` elements are sent or received.
    pub buf: &'a DeviceBuffer,
    /// Elements.
    pub count: usize,
    /// Element type (any).
    pub dtype: DataType,
    /// The other rank.
    pub peer: u32,
}

impl<'a> SendRecvItem<'a> {
    /// An item sending `count` elements of `buf` to `peer`.
    pub fn send(buf: &'a DeviceBuffer, count: usize, dtype: DataType, peer: u32) -> Self {
        SendRecvItem {
            kind: SendRecvKind::Send,
            buf,
            count,
            dtype,
            peer,
        }
    }

    /// An item receiving `count` elements from `peer` into `buf`.
    pub fn recv(buf: &'a DeviceBuffer, count: usize, dtype: DataType, peer: u32) -> Self {
        SendRecvItem {
            kind: SendRecvKind::Recv,
            buf,
            count,
            dtype,
            peer,
        }
    }
}

impl Communicator {
    /// Issues `items` as one operation on the main stream: every send and receive of the list
    /// runs, each link (peer and direction) in list order and the links independently, so no
    /// order of the list deadlocks (a rank may list its receive from `p` before its send to `p`
    /// while `p` does the same). Each send must meet a receive of the same size on its peer
    /// (else [`Error::SizeMismatch`] on both sides, as [`CommStream::send`]).
    ///
    /// Every item is validated before anything is enqueued (peer in range and not this rank,
    /// this rank's buffer, large enough, aligned to the element size; no receive into bytes
    /// another item receives into or sends, since the items run at the same time): a bad list
    /// returns an error and runs nothing.
    ///
    /// ```
    /// use aiv_comm::{DataType, SendRecvItem, World};
    /// let world = World::sim(3).unwrap();
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<u32>> {
    ///     let (r, n) = (comm.rank(), comm.size());
    ///     let mine = comm.alloc_from(&[r; 4])?;
    ///     let from_left = comm.alloc(16)?;
    ///     // Receive first, then send: on separate sends and receives this would deadlock.
    ///     comm.batch_send_recv(&[
    ///         SendRecvItem::recv(&from_left, 4, DataType::U32, (r + n - 1) % n),
    ///         SendRecvItem::send(&mine, 4, DataType::U32, (r + 1) % n),
    ///     ])?;
    ///     comm.synchronize()?;
    ///     from_left.to_vec::<u32>()
    /// });
    /// assert_eq!(out[0].as_ref().unwrap(), &[2; 4]);
    /// ```
    pub fn batch_send_recv(&self, items: &[SendRecvItem]) -> Result<()> {
        self.check_usable()?;
        let me = self.rank();
        let mut recvs: Vec<(u64, u64, usize)> = Vec::new();
        let mut sends: Vec<(u64, u64, usize)> = Vec::new();
        for (i, it) in items.iter().enumerate() {
            if it.peer >= self.size() {
                return Err(Error::RankOutOfRange {
                    rank: it.peer,
                    size: self.size(),
                });
            }
            if it.peer == me {
                return Err(Error::SelfPeer { rank: me });
            }
            let what = match it.kind {
                SendRecvKind::Send => "batch send buffer",
                SendRecvKind::Recv => "batch recv buffer",
            };
            self.check_owner(what, it.buf, true)?;
            let bytes = crate::check::elem_bytes(it.count, it.dtype)?;
            if it.buf.len() < bytes {
                return Err(Error::BufferTooSmall {
                    what,
                    needed: bytes,
                    len: it.buf.len(),
                });
            }
            crate::check::check_aligned(what, it.buf, it.dtype)?;
            crate::link::p2p_chunks(self.buffer_bytes(), self.size(), bytes)?;
            if bytes > 0 {
                let range = (it.buf.addr(), it.buf.addr() + bytes as u64, i);
                match it.kind {
                    SendRecvKind::Recv => recvs.push(range),
                    SendRecvKind::Send => sends.push(range),
                }
            }
        }
        // The links run at once: a receive may not write bytes another item reads or writes.
        recvs.sort_unstable();
        for w in recvs.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(Error::Overlap(format!(
                    "batch_send_recv: items {} and {} receive into overlapping bytes",
                    w[0].2, w[1].2
                )));
            }
        }
        for s in &sends {
            if let Some(r) = recvs.iter().find(|r| r.0 < s.1 && s.0 < r.1) {
                return Err(Error::Overlap(format!(
                    "batch_send_recv: item {} sends bytes that item {} receives into (the items run at the same time)",
                    s.2, r.2
                )));
            }
        }
        // The links of the list, each with its items in list order.
        let mut links: BTreeMap<(u32, SendRecvKind), Vec<&SendRecvItem>> = BTreeMap::new();
        for it in items {
            links.entry((it.peer, it.kind)).or_default().push(it);
        }
        let streams = links
            .keys()
            .map(|&k| self.batch_stream(k))
            .collect::<Result<Vec<_>>>()?;
        let start = Event::new("batch_send_recv start");
        let end = Event::new("batch_send_recv end");
        for _ in &streams {
            self.main.post(&start, "batch_send_recv");
        }
        for (s, its) in streams.iter().zip(links.values()) {
            s.wait(&start, "batch_send_recv");
            for it in its {
                let bytes = it.count * it.dtype.size();
                match it.kind {
                    SendRecvKind::Send => s.in_call().send(it.buf, bytes, it.peer)?,
                    SendRecvKind::Recv => s.in_call().recv(it.buf, bytes, it.peer)?,
                }
            }
            s.post(&end, "batch_send_recv");
        }
        for _ in &streams {
            self.main.wait(&end, "batch_send_recv");
        }
        Ok(())
    }

    /// The stream of `link` for batches, created on first use.
    fn batch_stream(&self, link: (u32, SendRecvKind)) -> Result<CommStream> {
        if let Some(s) = self.state.batch.lock().get(&link) {
            return Ok(s.clone());
        }
        let dir = match link.1 {
            SendRecvKind::Send => "send to",
            SendRecvKind::Recv => "recv from",
        };
        let s = self.create_stream(&format!("batch {dir} {}", link.0))?;
        self.state.batch.lock().insert(link, s.clone());
        Ok(s)
    }
}
