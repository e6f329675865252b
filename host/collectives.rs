//! AllGather, AllReduce, Broadcast and Barrier: validation, chunking, one launch per chunk.

use crate::backend::Blocks;
use crate::buffer::{DeviceBuffer, Uses};
use crate::check::{check_aligned, elem_bytes, reduce_codes};
use crate::communicator::Communicator;
use crate::dtype::{DataType, ReduceOp};
use crate::error::{Error, Result};
use crate::ffi;
use crate::fingerprint::{Call, CallOp};
use crate::plan::{
    all_gather_push, all_reduce_kind, plan_chunks, push_slot_bytes, AllGatherAlgo, AllReduceAlgo,
    Kind,
};
use crate::stream::{Fp, Launch, Work};

/// The claims of one chunk's launch of a collective: `send` read, and the bytes of `recv` the
/// chunk `c` writes (elements of `es` bytes): one piece at the chunk's offset, or with
/// `out_stride` bytes per rank (AllGather), one such piece in each of the `n` ranks' parts.
pub(crate) fn chunk_uses(
    send: &DeviceBuffer,
    recv: &DeviceBuffer,
    c: &crate::plan::Chunk,
    es: usize,
    n: u32,
    out_stride: usize,
) -> Uses {
    let (off, len) = (c.offset * es, c.count * es);
    let pieces = if out_stride == 0 { 1 } else { n as usize };
    Uses::from_iter([
        send.use_read(),
        recv.use_write_strided(off, len, out_stride, pieces),
    ])
}

impl Communicator {
    /// Enqueues one launch of `kernel` (blocks per rank by size, one fresh tag) per chunk of
    /// `count` elements; `template` carries the call-wide fields, the chunk's input/output/bytes and
    /// fingerprint (from `call`) are set here. `send` and `recv` are claimed until their
    /// launches have run.
    ///
    /// # Safety
    /// `kernel` must take an `AivCollArgs`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_chunks(
        &self,
        kernel: &'static ascendc_twin::Kernel,
        kind: Kind,
        call: Call,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        template: ffi::AivCollArgs,
    ) -> Result<()> {
        let es = call.dtype.size();
        let n = self.size();
        let chunks = plan_chunks(
            kind,
            call.count as usize,
            call.dtype,
            n as usize,
            self.buffer_bytes(),
        )?;
        let total = chunks.len() as u32;
        for c in chunks {
            // What each pair of blocks moves: the chunk, or a two-shot slice. One-shot has no
            // block per peer: its blocks are parts of the chunk, each reducing every rank's.
            let pair_bytes = match kind {
                Kind::AllReduceTwoShot => c.count * es / n as usize,
                _ => c.count * es,
            };
            let parts = self.blocks_per_peer(pair_bytes);
            let per_part = kind == Kind::AllReduceOneShot
                || template.flags & ffi::AIV_COLL_BLOCK_PER_PART != 0;
            let blocks = if per_part { parts } else { n * parts };
            let fp = Call {
                chunk: c.index as u32,
                chunks: total,
                ..call
            }
            .encode();
            let args = ffi::AivCollArgs {
                input: send.addr() + (c.offset * es) as u64,
                output: recv.addr() + (c.offset * es) as u64,
                bytes: (c.count * es) as u64,
                fp,
                ..template
            };
            let tag = self.reserve_tags(1)?;
            let uses = chunk_uses(send, recv, &c, es, n, template.out_stride as usize);
            // SAFETY: `kernel` takes an AivCollArgs (this function's contract); the chunk's
            // addresses are inside the validated, claimed buffers.
            unsafe { self.enqueue_launch(kernel, blocks, tag, fp, uses, args) };
        }
        Ok(())
    }

    /// Enqueues on the main stream one launch of `kernel` on `blocks` blocks with `args` (its
    /// communicator arguments the stream's, with tag `tag`) and fingerprint `fp`; `uses` (its
    /// input and the bytes of its output it writes, [`chunk_uses`]) are claimed until it has
    /// run.
    ///
    /// # Safety
    /// `kernel` must take an `A`, whose addresses point into the claimed buffers or the world's
    /// memory.
    pub(crate) unsafe fn enqueue_launch<A: ffi::WithComm>(
        &self,
        kernel: &'static ascendc_twin::Kernel,
        blocks: u32,
        tag: i64,
        fp: Fp,
        uses: Uses,
        args: A,
    ) {
        // A launch whose input peers read in place (window memory) that fails stops every
        // launch of the world and waits until none runs (`Launcher::stop_readers_of_input`).
        let stop_readers = args.peers_read_input();
        // SAFETY: the caller's contract.
        let work = Work::Launch(unsafe {
            Launch::of_comm_struct(
                kernel,
                Blocks::Exactly(blocks),
                tag,
                &args,
                Some(fp),
                stop_readers,
            )
        });
        self.main.op(kernel.name(), kernel.name(), uses, work, None);
    }

    /// Enqueues one push-mode launch of `kernel` (kernel/push.cpp) per chunk of `kind` (a push
    /// kind), each with `tags` fresh tags and the tag of this rank's previous push launch, which
    /// the kernel waits for its peers to have acknowledged before overwriting their slots.
    ///
    /// # Safety
    /// `kernel` must take an `AivPushArgs`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_push(
        &self,
        kernel: &'static ascendc_twin::Kernel,
        kind: Kind,
        call: Call,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        template: ffi::AivPushArgs,
        tags: i64,
    ) -> Result<()> {
        let es = call.dtype.size();
        let n = self.size();
        let chunks = plan_chunks(
            kind,
            call.count as usize,
            call.dtype,
            n as usize,
            self.buffer_bytes(),
        )?;
        let total = chunks.len() as u32;
        let template = ffi::AivPushArgs {
            region_off: self.buffer_bytes() as u64,
            slot_bytes: push_slot_bytes(n as usize) as u64,
            ..template
        };
        for c in chunks {
            let bytes = c.count * es;
            let parts = self.blocks_per_peer(bytes).min(ffi::AIV_PUSH_MAX_PARTS);
            let fp = Call {
                algo: kind.into(),
                chunk: c.index as u32,
                chunks: total,
                ..call
            }
            .encode();
            let tag = self.reserve_tags(tags)?;
            // Every rank makes the same calls, so every rank passes the same previous tag.
            let prev_tag = std::mem::replace(&mut *self.state.push_prev.lock(), tag);
            let args = ffi::AivPushArgs {
                input: send.addr() + (c.offset * es) as u64,
                output: recv.addr() + (c.offset * es) as u64,
                bytes: bytes as u64,
                prev_tag,
                fp,
                ..template
            };
            let uses = chunk_uses(send, recv, &c, es, n, template.out_stride as usize);
            // SAFETY: `kernel` takes an AivPushArgs (this function's contract); the chunk's
            // addresses are inside the validated, claimed buffers.
            unsafe { self.enqueue_launch(kernel, n * parts, tag, fp, uses, args) };
        }
        Ok(())
    }

    /// Validates an AllReduce call (communicator usable, reducible dtype/op, buffers) and
    /// returns the device op and dtype codes and the bytes per rank.
    pub(crate) fn prepare_all_reduce(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<(u32, u32, usize)> {
        self.check_usable()?;
        let (opc, dt) = reduce_codes(dtype, op)?;
        let bytes = elem_bytes(count, dtype)?;
        self.check_reduce_buffers(send, recv, bytes, dtype)?;
        Ok((opc, dt, bytes))
    }

    /// Validates AllReduce buffers: this rank's, large and aligned enough, and either disjoint
    /// or exactly the same range (in place).
    fn check_reduce_buffers(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        bytes: usize,
        dtype: DataType,
    ) -> Result<()> {
        self.check_buffer("send buffer", send, bytes, dtype)?;
        self.check_buffer("recv buffer", recv, bytes, dtype)?;
        if bytes > 0 && send.same_allocation(recv) {
            let (s0, r0) = (send.addr(), recv.addr());
            let b = bytes as u64;
            if s0 != r0 && s0 < r0 + b && r0 < s0 + b {
                return Err(Error::Overlap(
                    "AllReduce send and recv overlap without being the same range (in place)"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    fn check_buffer(
        &self,
        what: &'static str,
        buf: &DeviceBuffer,
        needed: usize,
        dtype: DataType,
    ) -> Result<()> {
        self.check_owner(what, buf, true)?;
        if buf.len() < needed {
            return Err(Error::BufferTooSmall {
                what,
                needed,
                len: buf.len(),
            });
        }
        check_aligned(what, buf, dtype)
    }

    /// AllGather: every rank contributes `count` elements of `dtype` from `send`; afterwards
    /// every rank's `recv` holds all contributions in rank order (`size() * count` elements).
    ///
    /// Any element type can be gathered. In place: `send` may be exactly rank `r`'s slot of
    /// `recv` (`recv.view(r * count * es, count * es)` with `es = dtype.size()`); any other
    /// overlap is refused.
    /// Returns after validation and enqueueing; call [`Communicator::synchronize`].
    pub fn all_gather(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
    ) -> Result<()> {
        self.all_gather_with(send, recv, count, dtype, AllGatherAlgo::Auto)
    }

    /// [`Communicator::all_gather`] with the kernel chosen by the caller (`Auto` picks by size).
    /// Every rank must pass the same `algo`, except that ranks on [`AllGatherAlgo::Pull`],
    /// [`AllGatherAlgo::PullParts`] and `Auto` (which runs `PullParts`) may be mixed.
    pub fn all_gather_with(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        algo: AllGatherAlgo,
    ) -> Result<()> {
        self.check_usable()?;
        let n = self.size() as usize;
        let es = dtype.size();
        let bytes = elem_bytes(count, dtype)?;
        let total = bytes
            .checked_mul(n)
            .ok_or_else(|| Error::Length(format!("{count} elements x {n} ranks overflow")))?;
        self.check_buffer("send buffer", send, bytes, dtype)?;
        self.check_buffer("recv buffer", recv, total, dtype)?;
        if bytes > 0 && send.same_allocation(recv) {
            let slot = recv.addr() + (self.rank() as u64) * bytes as u64;
            let (s0, s1) = (send.addr(), send.addr() + bytes as u64);
            let (r0, r1) = (recv.addr(), recv.addr() + total as u64);
            if s0 < r1 && r0 < s1 && s0 != slot {
                return Err(Error::Overlap(format!(
                    "AllGather send buffer overlaps recv buffer; in place, send must be exactly rank {}'s slot (recv + {} bytes)",
                    self.rank(),
                    self.rank() as usize * bytes
                )));
            }
        }
        let push = match algo {
            AllGatherAlgo::Auto => all_gather_push(bytes, n),
            AllGatherAlgo::Pull | AllGatherAlgo::PullParts => false,
            AllGatherAlgo::Push => true,
        };
        // Auto's staging + pull runs on one block per part: it beat a block per peer and part
        // at every size measured (aiv-perf all_gather --algo pull|pull_parts, 2026-12-02, µs
        // per op, 3 runs each): 8 ranks 64 KiB per rank 237-265 vs 340-387, 4 ranks 1 MiB
        // 1517-1855 vs 1994-2601, 2 ranks within noise from 64 KiB to 1 MiB.
        let per_part = matches!(algo, AllGatherAlgo::Auto | AllGatherAlgo::PullParts);
        if push {
            let template = ffi::AivPushArgs {
                out_stride: bytes as u64,
                ..Default::default()
            };
            let call = Call::of(CallOp::AllGather, count as u64, dtype, None);
            // SAFETY: aiv_all_gather_push takes an AivPushArgs.
            return unsafe {
                self.launch_push(
                    &ffi::kernels::aiv_all_gather_push,
                    Kind::AllGatherPush,
                    call,
                    send,
                    recv,
                    template,
                    1,
                )
            };
        }
        let mut flags = 0;
        if per_part {
            flags |= ffi::AIV_COLL_BLOCK_PER_PART;
        }
        // Peers read my input in place if it lies in a window (in place too: my slot is my
        // input then, and I write only the other slots).
        if self.in_window(send, bytes) {
            flags |= ffi::AIV_COLL_IN_WINDOW;
        }
        let template = ffi::AivCollArgs {
            out_stride: bytes as u64,
            elem_size: es as u32,
            flags,
            ..Default::default()
        };
        let call = Call::of(CallOp::AllGather, count as u64, dtype, None);
        // SAFETY: aiv_all_gather takes an AivCollArgs.
        unsafe {
            self.launch_chunks(
                &ffi::kernels::aiv_all_gather,
                Kind::AllGather,
                call,
                send,
                recv,
                template,
            )
        }
    }

    /// AllReduce: element-wise `op` over every rank's `send` (`count` elements of `dtype`) into
    /// every rank's `recv`.
    ///
    /// Types f32, f16, bf16, i32, i16, i8 with sum, max or min (what the A2 atomic store units
    /// can do); anything else is refused before any launch. Integer sums wrap on overflow. In
    /// place (`send` and `recv` the same range) is allowed; other overlaps are refused.
    /// Small calls use the one-shot kernel, large ones two-shot ([`crate::plan::one_shot_limit`]);
    /// [`Communicator::all_reduce_with`] picks one.
    /// Returns after validation and enqueueing; call [`Communicator::synchronize`].
    pub fn all_reduce(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<()> {
        self.all_reduce_with(send, recv, count, dtype, op, AllReduceAlgo::Auto)
    }

    /// [`Communicator::all_reduce`] with the kernel chosen by the caller (`Auto` picks by size).
    /// Every rank must pass the same `algo`.
    ///
    /// With [`crate::Config::deterministic`], every algorithm gives the bits of the plain
    /// rank-order reduction (`((x_0 op x_1) op x_2) ...`, each step rounded to the element
    /// type), whatever the chunking and HCCL buffer size; [`AllReduceAlgo::Hd`], whose pairwise
    /// tree cannot add in that order, then runs the kernel `Auto` picks.
    pub fn all_reduce_with(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        algo: AllReduceAlgo,
    ) -> Result<()> {
        let (opc, dt, bytes) = self.prepare_all_reduce(send, recv, count, dtype, op)?;
        let n = self.size() as usize;
        let es = dtype.size();
        let kind = match algo {
            // HD's pairwise tree cannot add in rank order: deterministic mode runs the kernel
            // `Auto` picks (every rank is in the same mode: it is the world's).
            AllReduceAlgo::Hd if !self.deterministic() => {
                return self.enqueue_hd(send, recv, count, dtype, op, opc, dt, bytes)
            }
            AllReduceAlgo::Auto | AllReduceAlgo::Hd => all_reduce_kind(bytes, n),
            AllReduceAlgo::OneShot => Kind::AllReduceOneShot,
            AllReduceAlgo::TwoShot => Kind::AllReduceTwoShot,
            AllReduceAlgo::Push => Kind::AllReducePush,
        };
        if kind == Kind::AllReducePush {
            let template = ffi::AivPushArgs {
                dtype: dt,
                op: opc,
                ..Default::default()
            };
            let call = Call::of(CallOp::AllReduce, count as u64, dtype, Some(op));
            // SAFETY: aiv_all_reduce_push takes an AivPushArgs. Two tags: its two barriers.
            return unsafe {
                self.launch_push(
                    &ffi::kernels::aiv_all_reduce_push,
                    kind,
                    call,
                    send,
                    recv,
                    template,
                    2,
                )
            };
        }
        let algo = kind
            .all_reduce_code()
            .expect("only one-shot and two-shot are left");
        // Peers read my input in place if it lies in a window; one-shot not in place (I write
        // my output while peers read my input; the buffers are disjoint or the same range),
        // two-shot either way (I write each slice of my output only after its reader is done).
        let in_place = send.same_allocation(recv) && send.addr() == recv.addr();
        let window = (kind == Kind::AllReduceTwoShot || !in_place) && self.in_window(send, bytes);
        let mut flags = 0;
        if self.deterministic() {
            flags |= ffi::AIV_COLL_DETERMINISTIC;
        }
        if window {
            flags |= ffi::AIV_COLL_IN_WINDOW;
        }
        let template = ffi::AivCollArgs {
            dtype: dt,
            op: opc,
            algo,
            elem_size: es as u32,
            flags,
            ..Default::default()
        };
        let call = Call {
            algo: kind.into(),
            ..Call::of(CallOp::AllReduce, count as u64, dtype, Some(op))
        };
        // SAFETY: aiv_all_reduce takes an AivCollArgs.
        unsafe {
            self.launch_chunks(
                &ffi::kernels::aiv_all_reduce,
                kind,
                call,
                send,
                recv,
                template,
            )
        }
    }

    /// Broadcast: `count` elements of `dtype` from `root`'s `send` into every rank's `recv`
    /// (the root's included). Any element type. `send` is read on the root only (other ranks
    /// may pass any buffer of theirs, e.g. `recv`); on the root, `send` and `recv` may be the
    /// same range (in place, see [`Communicator::broadcast_in_place`]) but not overlap
    /// otherwise. Every rank must pass the same `count`, `dtype` and `root`.
    ///
    /// ```
    /// use aiv_comm::{DataType, World};
    /// let world = World::sim(3).unwrap();
    /// let out = world.run(|comm| -> aiv_comm::Result<Vec<f32>> {
    ///     let buf = comm.alloc_from(&[comm.rank() as f32; 4])?;
    ///     comm.broadcast_in_place(&buf, 4, DataType::F32, 2)?;
    ///     comm.synchronize()?;
    ///     buf.to_vec::<f32>()
    /// });
    /// assert!(out.iter().all(|r| r.as_ref().unwrap() == &[2.0; 4]));
    /// ```
    pub fn broadcast(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        root: u32,
    ) -> Result<()> {
        self.check_usable()?;
        if root >= self.size() {
            return Err(Error::InvalidArgument(format!(
                "broadcast root {root} is out of range for {} ranks",
                self.size()
            )));
        }
        let bytes = elem_bytes(count, dtype)?;
        self.check_buffer("recv buffer", recv, bytes, dtype)?;
        let is_root = root == self.rank();
        if is_root {
            self.check_buffer("send buffer", send, bytes, dtype)?;
            if send.overlaps(recv, bytes, bytes) && send.addr() != recv.addr() {
                return Err(Error::Overlap(
                    "broadcast send and recv overlap without being the same range (in place)"
                        .into(),
                ));
            }
        } else {
            self.check_owner("send buffer", send, true)?;
        }
        let template = ffi::AivCollArgs {
            root: root as i32,
            elem_size: dtype.size() as u32,
            ..Default::default()
        };
        let call = Call {
            extra: root,
            ..Call::of(CallOp::Broadcast, count as u64, dtype, None)
        };
        // Only the root reads `send`; elsewhere it is passed as the recv buffer's claim partner
        // (`launch_chunks` claims both), so use `recv` twice.
        let input = if is_root { send } else { recv };
        // SAFETY: aiv_broadcast takes an AivCollArgs.
        unsafe {
            self.launch_chunks(
                &ffi::kernels::aiv_broadcast,
                Kind::Broadcast,
                call,
                input,
                recv,
                template,
            )
        }
    }

    /// Broadcast in place (HCCL's form): `root`'s `buf` (`count` elements) into every rank's
    /// `buf`.
    pub fn broadcast_in_place(
        &self,
        buf: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        root: u32,
    ) -> Result<()> {
        self.broadcast(buf, buf, count, dtype, root)
    }

    /// Barrier: enqueues a launch that completes on each rank only once every rank has reached
    /// its barrier (what was enqueued before it on this rank's main stream has run, and every
    /// other rank has run what it enqueued before its barrier). Call
    /// [`Communicator::synchronize`] to wait for it on the host.
    pub fn barrier(&self) -> Result<()> {
        self.check_usable()?;
        let n = self.size();
        let fp = Call {
            chunks: 1,
            ..Call::of(CallOp::Barrier, 0, DataType::U8, None)
        }
        .encode();
        let tag = self.reserve_tags(1)?;
        let args = ffi::AivCollArgs {
            fp,
            ..Default::default()
        };
        // SAFETY: aiv_barrier takes an AivCollArgs; it touches only the sync areas.
        let work = Work::Launch(unsafe {
            Launch::of_comm_struct(
                &ffi::kernels::aiv_barrier,
                Blocks::Exactly(n),
                tag,
                &args,
                Some(fp),
                false,
            )
        });
        self.main
            .op("barrier", "aiv_barrier", Uses::new(), work, None);
        Ok(())
    }
}
