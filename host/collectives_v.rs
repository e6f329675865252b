//! The collectives whose ranks send or receive one piece per peer: ReduceScatter(V),
//! AllGatherV and AlltoAll(V). Validation, chunking against the HCCL buffer, one launch per chunk.
//!
//! Every rank's data is described as one *segment* per rank (a displacement and a count, in
//! elements). A call of segments of at most `m` elements is cut into `ceil(m / capacity)` chunks;
//! chunk `k` moves elements `k * capacity ..` of every segment (what is left of it, maybe
//! nothing), so that every rank launches the same number of chunks.

use std::sync::Arc;

use crate::backend::dynamic::Memory;
use crate::backend::{Blocks, MemKind};
use crate::buffer::{DeviceBuffer, Uses};
use crate::check::{check_aligned, elem_bytes, reduce_codes};
use crate::communicator::Communicator;
use crate::dtype::{DataType, ReduceOp};
use crate::error::{Error, Result};
use crate::ffi;
use crate::fingerprint::{counts_digest, Call, CallOp};
use crate::plan::{blocks_for, plan_chunks, slot_bytes, Chunk, Kind};
use crate::stream::{StreamCtx, Work};

/// Tags an AlltoAllV reserves: one for its count exchange and a window for its chunks (whose
/// number is known only once the counts are exchanged, while every rank must reserve the same
/// tags at the same call). Tags are 64-bit, so the window costs nothing.
const ALL_TO_ALL_V_TAGS: i64 = crate::plan::MAX_CHUNKS as i64 + 1;

/// One segment per rank: (displacement, count) in elements.
type Segments = Vec<(usize, usize)>;

/// Checks that `counts` and `displs` have one entry per rank and that every segment fits in
/// `buf` (of `dtype` elements); returns the segments.
fn segments(
    what: &'static str,
    buf: &DeviceBuffer,
    counts: &[usize],
    displs: &[usize],
    ranks: usize,
    dtype: DataType,
) -> Result<Segments> {
    if counts.len() != ranks || displs.len() != ranks {
        return Err(Error::InvalidArgument(format!(
            "{what}: {} counts and {} displacements for {ranks} ranks (one of each per rank)",
            counts.len(),
            displs.len()
        )));
    }
    let mut segs = Vec::with_capacity(ranks);
    for (q, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        if c == 0 {
            // An empty segment's displacement is never used (and may be anything, even past
            // the buffer): keep it at 0 so that no offset arithmetic can overflow.
            segs.push((0, 0));
            continue;
        }
        let end = d
            .checked_add(c)
            .and_then(|e| e.checked_mul(dtype.size()))
            .ok_or_else(|| {
                Error::Length(format!(
                    "{what}: segment of rank {q} ({c} elements at {d}) overflows"
                ))
            })?;
        if end > buf.len() {
            return Err(Error::BufferTooSmall {
                what,
                needed: end,
                len: buf.len(),
            });
        }
        segs.push((d, c));
    }
    Ok(segs)
}

/// Byte range of a segment in `buf`.
fn seg_range(buf: &DeviceBuffer, (d, c): (usize, usize), es: usize) -> (u64, u64) {
    let start = buf.addr() + (d * es) as u64;
    (start, start + (c * es) as u64)
}

fn meet(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

/// Refuses received segments that share a byte (two peers would write the same place).
fn check_disjoint_segments(
    what: &str,
    buf: &DeviceBuffer,
    segs: &Segments,
    es: usize,
) -> Result<()> {
    let mut ranges: Vec<(u64, u64, usize)> = segs
        .iter()
        .enumerate()
        .map(|(q, &s)| {
            let (a, b) = seg_range(buf, s, es);
            (a, b, q)
        })
        .filter(|r| r.0 < r.1)
        .collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(Error::Overlap(format!(
                "{what}: the segments of ranks {} and {} overlap",
                w[0].2, w[1].2
            )));
        }
    }
    Ok(())
}

/// Checks the buffer of a V call that holds only this rank's piece (`one`: ReduceScatterV's
/// recv, AllGatherV's send) against the segmented one (`segmented`, cut into `segs`): `count`
/// must be this rank's entry of the counts, `one` must hold it, and it may overlap the
/// segmented buffer only by being exactly this rank's own segment (in place).
/// `names`: (call, `one`'s name in errors, what its in-place place is called).
#[allow(clippy::too_many_arguments)]
fn own_piece(
    names: (&str, &'static str, &str),
    one: &DeviceBuffer,
    count: usize,
    (counts_name, counts): (&str, &[usize]),
    segmented: &DeviceBuffer,
    segs: &Segments,
    me: usize,
    dtype: DataType,
) -> Result<()> {
    let (call, one_name, place) = names;
    if counts[me] != count {
        return Err(Error::InvalidArgument(format!(
            "{call}: rank {me}'s {one_name} count is {count} but its {counts_name}[{me}] is {}",
            counts[me]
        )));
    }
    let bytes = elem_bytes(count, dtype)?;
    if one.len() < bytes {
        return Err(Error::BufferTooSmall {
            what: one_name,
            needed: bytes,
            len: one.len(),
        });
    }
    let es = dtype.size();
    let range = (one.addr(), one.addr() + bytes as u64);
    let own = seg_range(segmented, segs[me], es);
    for (q, &s) in segs.iter().enumerate() {
        let r = seg_range(segmented, s, es);
        if one.same_allocation(segmented) && meet(r, range) && !(q == me && r == range) {
            return Err(Error::Overlap(format!(
                "{call}: {one_name} overlaps rank {q}'s {place}; in place, {one_name} must be exactly this rank's {place} ({} bytes at {:#x})",
                own.1 - own.0,
                own.0
            )));
        }
    }
    Ok(())
}

/// What one chunk's pieces are: elements `chunk.offset ..` of each segment, at most
/// `chunk.count` of them.
fn piece(seg: (usize, usize), c: &Chunk) -> usize {
    seg.1.saturating_sub(c.offset).min(c.count)
}

/// A V-collective call ready to launch.
struct VCall {
    /// A kernel taking an `AivCollVArgs`.
    kernel: &'static ascendc_twin::Kernel,
    kind: Kind,
    call: Call,
    /// Longest segment (elements): the chunks are planned for it.
    longest: usize,
    tags_per_launch: i64,
    /// Fills a chunk's arguments (everything but comm and fp).
    fill: Box<dyn Fn(&Chunk) -> ffi::AivCollVArgs + Send + Sync>,
    /// The segments of `recv` the call writes (elements): a chunk writes its piece of each.
    out: Segments,
}

impl Communicator {
    /// Enqueues one launch of `v.kernel` per chunk (blocks per rank by size,
    /// [`crate::plan::blocks_per_peer`]). `send` and `recv` are
    /// claimed until their launches have run.
    fn launch_v(&self, v: VCall, send: &DeviceBuffer, recv: &DeviceBuffer) -> Result<()> {
        let n = self.size();
        let chunks = plan_chunks(
            v.kind,
            v.longest,
            v.call.dtype,
            n as usize,
            self.buffer_bytes(),
        )?;
        let total = chunks.len() as u32;
        let fill = Arc::new(v.fill);
        for c in chunks {
            // The chunk's longest piece: what the busiest pair of blocks moves.
            let pair_bytes = c.count * v.call.dtype.size();
            let blocks = n * self.blocks_per_peer(pair_bytes);
            let fp = Call {
                chunk: c.index as u32,
                chunks: total,
                ..v.call
            }
            .encode();
            let args = ffi::AivCollVArgs { fp, ..fill(&c) };
            let tag = self.reserve_tags(v.tags_per_launch)?;
            let es = v.call.dtype.size();
            let mut uses = Uses::from_iter([send.use_read()]);
            for &seg in &v.out {
                let len = piece(seg, &c) * es;
                if len > 0 {
                    uses.push(recv.use_write_range((seg.0 + c.offset) * es, len));
                }
            }
            // SAFETY: every V kernel takes an AivCollVArgs (`VCall::kernel`); the pieces are
            // inside the validated, claimed buffers.
            unsafe { self.enqueue_launch(v.kernel, blocks, tag, fp, uses, args) };
        }
        Ok(())
    }

    /// Checks `buf` is usable by this rank for elements of `dtype` (owner and alignment).
    fn check_v_buffer(
        &self,
        what: &'static str,
        buf: &DeviceBuffer,
        dtype: DataType,
    ) -> Result<()> {
        self.check_owner(what, buf, true)?;
        check_aligned(what, buf, dtype)
    }

    /// ReduceScatter: every rank's `send` holds `size() * recv_count` elements of `dtype`;
    /// rank `r`'s `recv` gets the element-wise `op` over every rank's block `r` (elements
    /// `r * recv_count ..`).
    ///
    /// Types and ops as [`Communicator::all_reduce`]; with [`crate::Config::deterministic`]
    /// the ranks' blocks are added in rank order. In place: `recv` may be exactly this rank's
    /// block of `send` (`send.view(r * recv_count * es, recv_count * es)` with
    /// `es = dtype.size()`); any other
    /// overlap is refused. Returns after validation and enqueueing.
    ///
    /// ```
    /// use aiv_comm::{DataType, ReduceOp, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<i32>> {
    ///     let r = comm.rank() as i32;
    ///     let send = comm.alloc_from(&[r, r, 10 + r, 10 + r])?; // block 0, block 1
    ///     let recv = comm.alloc(2 * 4)?;
    ///     comm.reduce_scatter(&send, &recv, 2, DataType::I32, ReduceOp::Sum)?;
    ///     comm.synchronize()?;
    ///     recv.to_vec::<i32>()
    /// });
    /// assert_eq!(out[0].as_ref().unwrap(), &[1, 1]);
    /// assert_eq!(out[1].as_ref().unwrap(), &[21, 21]);
    /// ```
    pub fn reduce_scatter(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        recv_count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<()> {
        let n = self.size() as usize;
        let counts = vec![recv_count; n];
        let displs: Vec<usize> = (0..n)
            .map(|q| q.checked_mul(recv_count))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::Length(format!("{recv_count} elements x {n} ranks overflow")))?;
        self.reduce_scatter_impl(send, &counts, &displs, recv, recv_count, dtype, op, false)
    }

    /// ReduceScatterV: rank `q`'s block of every rank's `send` is `send_counts[q]` elements at
    /// element `send_displs[q]`; rank `r`'s `recv` gets the element-wise `op` over every rank's
    /// block `r` (`recv_count` elements, which must equal `send_counts[r]`).
    ///
    /// Every rank must pass the same `send_counts` (the fingerprint carries a digest of them: a
    /// difference is [`Error::CollectiveMismatch`] on every rank); the displacements are each
    /// rank's own. In place as [`Communicator::reduce_scatter`]: `recv` may be exactly this
    /// rank's block of `send`, provided no other block overlaps it.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_scatter_v(
        &self,
        send: &DeviceBuffer,
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &DeviceBuffer,
        recv_count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<()> {
        self.reduce_scatter_impl(
            send,
            send_counts,
            send_displs,
            recv,
            recv_count,
            dtype,
            op,
            true,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_scatter_impl(
        &self,
        send: &DeviceBuffer,
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &DeviceBuffer,
        recv_count: usize,
        dtype: DataType,
        op: ReduceOp,
        v: bool,
    ) -> Result<()> {
        self.check_usable()?;
        let (opc, dt) = reduce_codes(dtype, op)?;
        let n = self.size() as usize;
        let me = self.rank() as usize;
        let es = dtype.size();
        self.check_v_buffer("send buffer", send, dtype)?;
        self.check_v_buffer("recv buffer", recv, dtype)?;
        let segs = segments("send buffer", send, send_counts, send_displs, n, dtype)?;
        own_piece(
            ("reduce_scatter", "recv buffer", "block of send"),
            recv,
            recv_count,
            ("send_counts", send_counts),
            send,
            &segs,
            me,
            dtype,
        )?;
        let slot = slot_bytes(self.buffer_bytes(), n) as u64;
        let flags = if self.deterministic() {
            ffi::AIV_COLL_DETERMINISTIC
        } else {
            0
        };
        let (send_addr, recv_addr) = (send.addr(), recv.addr());
        let fill = move |c: &Chunk| {
            let mut a = ffi::AivCollVArgs {
                input: send_addr,
                output: recv_addr + (c.offset * es) as u64,
                dtype: dt,
                op: opc,
                flags,
                ..Default::default()
            };
            for (q, &s) in segs.iter().enumerate() {
                a.send_off[q] = ((s.0 + c.offset) * es) as u64;
                a.send_len[q] = (piece(s, c) * es) as u64;
                a.slot_off[q] = q as u64 * slot;
            }
            a
        };
        let op_code = if v {
            CallOp::ReduceScatterV
        } else {
            CallOp::ReduceScatter
        };
        // What every rank agrees on: the elements reduced (the counts may differ per rank).
        let total = send_counts.iter().sum::<usize>() as u64;
        let call = Call {
            extra: if v {
                counts_digest(send_counts.iter().map(|&c| c as u64))
            } else {
                0
            },
            ..Call::of(op_code, total, dtype, Some(op))
        };
        let v = VCall {
            kernel: &ffi::kernels::aiv_reduce_scatter,
            kind: Kind::ReduceScatter,
            call,
            longest: send_counts.iter().copied().max().unwrap_or(0),
            tags_per_launch: 2,
            fill: Box::new(fill),
            out: vec![(0, recv_count)],
        };
        self.launch_v(v, send, recv)
    }

    /// AllGatherV: rank `q` contributes `recv_counts[q]` elements, which land at element
    /// `recv_displs[q]` of every rank's `recv`; this rank's `send` holds its `send_count`
    /// elements (which must equal `recv_counts[rank]`). Any element type.
    ///
    /// Every rank must pass the same `recv_counts` (a difference is
    /// [`Error::CollectiveMismatch`] on every rank); displacements are each rank's own, and the
    /// received segments may not overlap. In place: `send` may be exactly this rank's segment of
    /// `recv`.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<u8>> {
    ///     let mine = vec![comm.rank() as u8 + 1; 1 + comm.rank() as usize]; // 1 and 2 bytes
    ///     let send = comm.alloc_from(&mine)?;
    ///     let recv = comm.alloc(4)?;
    ///     comm.all_gather_v(&send, mine.len(), &recv, &[1, 2], &[3, 0], DataType::U8)?;
    ///     comm.synchronize()?;
    ///     recv.to_vec::<u8>()
    /// });
    /// assert_eq!(out[1].as_ref().unwrap(), &[2, 2, 0, 1]);
    /// ```
    pub fn all_gather_v(
        &self,
        send: &DeviceBuffer,
        send_count: usize,
        recv: &DeviceBuffer,
        recv_counts: &[usize],
        recv_displs: &[usize],
        dtype: DataType,
    ) -> Result<()> {
        self.check_usable()?;
        let n = self.size() as usize;
        let me = self.rank() as usize;
        let es = dtype.size();
        self.check_v_buffer("send buffer", send, dtype)?;
        self.check_v_buffer("recv buffer", recv, dtype)?;
        let segs = segments("recv buffer", recv, recv_counts, recv_displs, n, dtype)?;
        own_piece(
            ("all_gather_v", "send buffer", "segment of recv"),
            send,
            send_count,
            ("recv_counts", recv_counts),
            recv,
            &segs,
            me,
            dtype,
        )?;
        check_disjoint_segments("all_gather_v recv buffer", recv, &segs, es)?;
        let (send_addr, recv_addr) = (send.addr(), recv.addr());
        let out = segs.clone();
        let fill = move |c: &Chunk| {
            let mut a = ffi::AivCollVArgs {
                input: send_addr + (c.offset * es) as u64,
                output: recv_addr,
                ..Default::default()
            };
            for (q, &s) in segs.iter().enumerate() {
                a.recv_off[q] = ((s.0 + c.offset) * es) as u64;
                a.recv_len[q] = (piece(s, c) * es) as u64;
            }
            a
        };
        // What every rank agrees on: the elements gathered (the counts differ per rank).
        let total = recv_counts.iter().sum::<usize>() as u64;
        let call = Call {
            extra: counts_digest(recv_counts.iter().map(|&c| c as u64)),
            ..Call::of(CallOp::AllGatherV, total, dtype, None)
        };
        let v = VCall {
            kernel: &ffi::kernels::aiv_all_gather_v,
            kind: Kind::AllGatherV,
            call,
            longest: recv_counts.iter().copied().max().unwrap_or(0),
            tags_per_launch: 1,
            fill: Box::new(fill),
            out,
        };
        self.launch_v(v, send, recv)
    }

    /// AlltoAll: block `q` of this rank's `send` (`count` elements at `q * count`) goes to rank
    /// `q`, and rank `q`'s block for this rank lands at `q * count` of `recv`. Any element type;
    /// `send` and `recv` may not overlap.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<u16>> {
    ///     let r = comm.rank() as u16;
    ///     let send = comm.alloc_from(&[10 * r, 10 * r + 1])?; // for rank 0, for rank 1
    ///     let recv = comm.alloc(2 * 2)?;
    ///     comm.all_to_all(&send, &recv, 1, DataType::U16)?;
    ///     comm.synchronize()?;
    ///     recv.to_vec::<u16>()
    /// });
    /// assert_eq!(out[0].as_ref().unwrap(), &[0, 10]);
    /// assert_eq!(out[1].as_ref().unwrap(), &[1, 11]);
    /// ```
    pub fn all_to_all(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
    ) -> Result<()> {
        let n = self.size() as usize;
        let counts = vec![count; n];
        let displs: Vec<usize> = (0..n)
            .map(|q| q.checked_mul(count))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::Length(format!("{count} elements x {n} ranks overflow")))?;
        let (segs_s, segs_r) =
            self.check_all_to_all(send, &counts, &displs, recv, &counts, &displs, dtype)?;
        let call = Call::of(CallOp::AllToAll, count as u64, dtype, None);
        let v = VCall {
            kernel: &ffi::kernels::aiv_all_to_all,
            kind: Kind::AllToAll,
            call,
            longest: count,
            tags_per_launch: 1,
            out: segs_r.clone(),
            fill: Box::new(all_to_all_fill(
                send.addr(),
                recv.addr(),
                segs_s,
                segs_r,
                dtype.size(),
                slot_bytes(self.buffer_bytes(), n) as u64,
            )),
        };
        self.launch_v(v, send, recv)
    }

    /// Validates an AlltoAll(V) call; returns the send and receive segments.
    #[allow(clippy::too_many_arguments)]
    fn check_all_to_all(
        &self,
        send: &DeviceBuffer,
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &DeviceBuffer,
        recv_counts: &[usize],
        recv_displs: &[usize],
        dtype: DataType,
    ) -> Result<(Segments, Segments)> {
        self.check_usable()?;
        let n = self.size() as usize;
        let me = self.rank() as usize;
        let es = dtype.size();
        self.check_v_buffer("send buffer", send, dtype)?;
        self.check_v_buffer("recv buffer", recv, dtype)?;
        let s = segments("send buffer", send, send_counts, send_displs, n, dtype)?;
        let r = segments("recv buffer", recv, recv_counts, recv_displs, n, dtype)?;
        if send_counts[me] != recv_counts[me] {
            return Err(Error::InvalidArgument(format!(
                "rank {me} sends itself {} elements but expects {} from itself",
                send_counts[me], recv_counts[me]
            )));
        }
        check_disjoint_segments("all_to_all recv buffer", recv, &r, es)?;
        if send.same_allocation(recv) {
            for &a in &s {
                for &b in &r {
                    if meet(seg_range(send, a, es), seg_range(recv, b, es)) {
                        return Err(Error::Overlap(
                            "all_to_all: send and recv overlap (AlltoAll has no in-place form)"
                                .into(),
                        ));
                    }
                }
            }
        }
        Ok((s, r))
    }

    /// AlltoAllVC (HCCL's `HcclAlltoAllVC`): every rank passes the whole counts matrix,
    /// `send_count_matrix[p * size() + q]` = the elements rank `p` sends rank `q`. This rank's
    /// pieces are packed in rank order: its piece for `q` starts at element
    /// `sum(matrix[rank][..q])` of `send`, and rank `p`'s piece for it lands at element
    /// `sum(matrix[..p][rank])` of `recv`. Any element type; `send` and `recv` may not overlap.
    ///
    /// Since every rank holds the matrix there is no count exchange (unlike
    /// [`Communicator::all_to_all_v`]); the fingerprint carries a digest of it, so ranks that
    /// pass different matrices get [`Error::CollectiveMismatch`] on every rank.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(2).unwrap();
    /// // Rank 0 sends 1 element to itself and 2 to rank 1; rank 1 sends 3 to rank 0, 0 to itself.
    /// let m = [1, 2, 3, 0];
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<u8>> {
    ///     let r = comm.rank() as u8;
    ///     let send = comm.alloc_from(&[10 * r, 10 * r + 1, 10 * r + 2])?;
    ///     let recv = comm.alloc(if r == 0 { 4 } else { 2 })?;
    ///     comm.all_to_all_vc(&send, &m, &recv, DataType::U8)?;
    ///     comm.synchronize()?;
    ///     recv.to_vec::<u8>()
    /// });
    /// assert_eq!(out[0].as_ref().unwrap(), &[0, 10, 11, 12]);
    /// assert_eq!(out[1].as_ref().unwrap(), &[1, 2]);
    /// ```
    pub fn all_to_all_vc(
        &self,
        send: &DeviceBuffer,
        send_count_matrix: &[usize],
        recv: &DeviceBuffer,
        dtype: DataType,
    ) -> Result<()> {
        let n = self.size() as usize;
        let me = self.rank() as usize;
        if send_count_matrix.len() != n * n {
            return Err(Error::InvalidArgument(format!(
                "all_to_all_vc: a counts matrix of {} entries for {n} ranks ({} expected)",
                send_count_matrix.len(),
                n * n
            )));
        }
        let m = |p: usize, q: usize| send_count_matrix[p * n + q];
        let packed = |counts: Vec<usize>| -> Result<(Vec<usize>, Vec<usize>)> {
            let mut displs = Vec::with_capacity(n);
            let mut at = 0usize;
            for &c in &counts {
                displs.push(at);
                at = at.checked_add(c).ok_or_else(|| {
                    Error::Length("all_to_all_vc: the counts overflow".to_string())
                })?;
            }
            Ok((counts, displs))
        };
        let (sc, sd) = packed((0..n).map(|q| m(me, q)).collect())?;
        let (rc, rd) = packed((0..n).map(|p| m(p, me)).collect())?;
        let (segs_s, segs_r) = self.check_all_to_all(send, &sc, &sd, recv, &rc, &rd, dtype)?;
        let longest = send_count_matrix.iter().copied().max().unwrap_or(0);
        let call = Call {
            extra: counts_digest(send_count_matrix.iter().map(|&c| c as u64)),
            ..Call::of(CallOp::AllToAllVC, longest as u64, dtype, None)
        };
        let v = VCall {
            kernel: &ffi::kernels::aiv_all_to_all,
            kind: Kind::AllToAll,
            call,
            longest,
            tags_per_launch: 1,
            out: segs_r.clone(),
            fill: Box::new(all_to_all_fill(
                send.addr(),
                recv.addr(),
                segs_s,
                segs_r,
                dtype.size(),
                slot_bytes(self.buffer_bytes(), n) as u64,
            )),
        };
        self.launch_v(v, send, recv)
    }

    /// AlltoAllV: this rank's `send_counts[q]` elements at element `send_displs[q]` of `send` go
    /// to rank `q`, and rank `q`'s elements for this rank (`recv_counts[q]` of them) land at
    /// element `recv_displs[q]` of `recv`. Any element type; `send` and `recv` may not overlap,
    /// nor may the received segments.
    ///
    /// Each rank knows only its own row of the counts matrix, so the call starts by exchanging
    /// the rows (one small extra launch); a matrix in which rank `p` sends rank `q` another count
    /// than `q` expects from `p` is [`Error::CollectiveMismatch`] on every rank, before any data
    /// moves. The call then runs in as many chunks as its largest message needs.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(2).unwrap();
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<i64>> {
    ///     // Rank 0 sends 1 element to rank 0 and 2 to rank 1; rank 1 sends 3 to each.
    ///     let r = comm.rank() as usize;
    ///     let (sc, rc): (Vec<usize>, Vec<usize>) =
    ///         if r == 0 { (vec![1, 2], vec![1, 3]) } else { (vec![3, 3], vec![2, 3]) };
    ///     let data: Vec<i64> = (0..6).map(|i| 100 * r as i64 + i).collect();
    ///     let send = comm.alloc_from(&data)?;
    ///     let recv = comm.alloc(rc.iter().sum::<usize>() * 8)?;
    ///     let sd = vec![0, sc[0]];
    ///     let rd = vec![0, rc[0]];
    ///     comm.all_to_all_v(&send, &sc, &sd, &recv, &rc, &rd, DataType::I64)?;
    ///     comm.synchronize()?;
    ///     recv.to_vec::<i64>()
    /// });
    /// assert_eq!(out[0].as_ref().unwrap(), &[0, 100, 101, 102]);
    /// assert_eq!(out[1].as_ref().unwrap(), &[1, 2, 103, 104, 105]);
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn all_to_all_v(
        &self,
        send: &DeviceBuffer,
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &DeviceBuffer,
        recv_counts: &[usize],
        recv_displs: &[usize],
        dtype: DataType,
    ) -> Result<()> {
        let (segs_s, segs_r) = self.check_all_to_all(
            send,
            send_counts,
            send_displs,
            recv,
            recv_counts,
            recv_displs,
            dtype,
        )?;
        let n = self.size() as usize;
        // My row of the counts matrix: what I send to each rank, what I expect from each.
        let row: Vec<u64> = send_counts
            .iter()
            .chain(recv_counts)
            .map(|&c| c as u64)
            .collect();
        let row_bytes = row.len() * 8;
        // The exchange's GM (my row, everyone's rows): one pair per communicator, reused by
        // every call (they run one after another on the main stream). Allocating per call made
        // queued calls slower and slower: every allocation rebuilds the twin's region caches.
        let scratch = {
            let (backend, rank) = (&self.launcher.world.backend, self.rank());
            let mut s = self.state.a2av_scratch.lock();
            match &*s {
                Some(pair) => pair.clone(),
                None => {
                    let pair = Arc::new((
                        Memory::alloc(backend, rank, row_bytes, MemKind::Data)?,
                        Memory::alloc(backend, rank, row_bytes * n, MemKind::Data)?,
                    ));
                    *s = Some(pair.clone());
                    pair
                }
            }
        };
        let base = self.reserve_tags(ALL_TO_ALL_V_TAGS)?;
        let buffer = self.buffer_bytes();
        let slot = slot_bytes(buffer, n);
        // The task writes every segment of `recv` when it succeeds.
        let es = dtype.size();
        let mut uses = Uses::from_iter([send.use_read()]);
        uses.extend(
            segs_r
                .iter()
                .filter(|s| s.1 > 0)
                .map(|s| recv.use_write_range(s.0 * es, s.1 * es)),
        );
        let fill = all_to_all_fill(
            send.addr(),
            recv.addr(),
            segs_s,
            segs_r,
            dtype.size(),
            slot as u64,
        );
        let exchange = Call {
            chunks: 1,
            ..Call::of(CallOp::AllToAllVCounts, n as u64, dtype, None)
        };
        let name = "all_to_all_v";
        let me = self.rank();
        let forced = self.launcher.world.blocks_per_peer;
        let cores = self.cores();
        let host = move |ctx: &StreamCtx| -> Result<()> {
            let nn = n as u32;
            let (mine, all) = (&scratch.0, &scratch.1);
            mine.write(0, bytemuck::cast_slice(&row))?;
            let fp = exchange.encode();
            let args = ffi::AivCollArgs {
                comm: ctx.comm_args(base),
                input: mine.addr(),
                output: all.addr(),
                bytes: row_bytes as u64,
                out_stride: row_bytes as u64,
                elem_size: 8,
                fp,
                ..Default::default()
            };
            // SAFETY: aiv_all_gather takes an AivCollArgs; the scratch pair is held by the
            // closure.
            unsafe {
                ctx.launch_now(
                    &ffi::kernels::aiv_all_gather,
                    Blocks::Exactly(nn),
                    &args,
                    Some(&fp),
                )?
            };
            let mut matrix = vec![0u64; 2 * n * n];
            all.read(0, bytemuck::cast_slice_mut(&mut matrix))?;
            // Row p: p's send counts (n), then p's receive counts (n). Every rank holds the same
            // matrix, so every rank reaches the same verdict.
            let (sends, recvs) = (
                |p: usize, q: usize| matrix[p * 2 * n + q],
                |p: usize, q: usize| matrix[p * 2 * n + n + q],
            );
            for q in 0..n {
                for p in 0..n {
                    if sends(p, q) != recvs(q, p) {
                        return Err(Error::CollectiveMismatch {
                            rank: me,
                            peer: p as u32,
                            mine: format!(
                                "all_to_all_v in which rank {q} expects {} x {dtype} from rank {p}",
                                recvs(q, p)
                            ),
                            theirs: format!(
                                "all_to_all_v sending {} x {dtype} to rank {q}",
                                sends(p, q)
                            ),
                        });
                    }
                }
            }
            let longest = (0..n * n).map(|i| sends(i / n, i % n)).max().unwrap_or(0) as usize;
            // At most MAX_CHUNKS chunks: tags base + 1 .. base + ALL_TO_ALL_V_TAGS.
            let chunks = plan_chunks(Kind::AllToAll, longest, dtype, n, buffer)?;
            let digest = counts_digest(matrix.iter().copied());
            let total = chunks.len() as u32;
            for c in &chunks {
                let fp = Call {
                    op: CallOp::AllToAllV,
                    count: longest as u64,
                    chunk: c.index as u32,
                    chunks: total,
                    extra: digest,
                    ..exchange
                }
                .encode();
                let args = ffi::AivCollVArgs {
                    comm: ctx.comm_args(base + 1 + c.index as i64),
                    fp,
                    ..fill(c)
                };
                let parts = blocks_for(forced, c.count * dtype.size(), n, cores);
                // SAFETY: aiv_all_to_all takes an AivCollVArgs; the segments are inside the
                // validated `send` and `recv`, which the op claims.
                unsafe {
                    ctx.launch_now(
                        &ffi::kernels::aiv_all_to_all,
                        Blocks::Exactly(nn * parts),
                        &args,
                        Some(&fp),
                    )?
                };
            }
            Ok(())
        };
        self.main
            .op(name, name, uses, Work::Host(Box::new(host)), None);
        Ok(())
    }
}

/// The chunk arguments of AlltoAll(V): my piece for `q` from `send`, staged in slot `q`;
/// `q`'s piece for me into `recv`.
fn all_to_all_fill(
    send_addr: u64,
    recv_addr: u64,
    segs_s: Segments,
    segs_r: Segments,
    es: usize,
    slot: u64,
) -> impl Fn(&Chunk) -> ffi::AivCollVArgs + Send + Sync + 'static {
    move |c: &Chunk| {
        let mut a = ffi::AivCollVArgs {
            input: send_addr,
            output: recv_addr,
            ..Default::default()
        };
        for (q, (&s, &r)) in segs_s.iter().zip(&segs_r).enumerate() {
            a.send_off[q] = ((s.0 + c.offset) * es) as u64;
            a.send_len[q] = (piece(s, c) * es) as u64;
            a.recv_off[q] = ((r.0 + c.offset) * es) as u64;
            a.recv_len[q] = (piece(r, c) * es) as u64;
            a.slot_off[q] = q as u64 * slot;
        }
        a
    }
}
