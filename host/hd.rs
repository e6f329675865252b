//! Recursive halving-doubling AllReduce orchestrated as tasks on a main stream and two
//! sub-streams, as HCCL's host algorithm of seed 004 (`RunPreCopy`, `RunAllReduceHDOptim`,
//! `RunFinalStep`).
//!
//! With `P = 2^k` the largest power of two <= ranks, each rank's HCCL buffer holds `k + 1`
//! segments of one chunk. For each chunk:
//!
//! * **pre-step** (main stream): rank `r < P` copies its input into segment 0. An extra rank
//!   `e >= P` folds into partner `q = e ^ P`: `q` acks once its segment 0 holds its input, `e`
//!   reduces its input into `q`'s segment 0 (atomic store into peer memory) and sends a data
//!   signal, `q` waits for it. Then `r < P` copies segment 0 into segment 1.
//! * **step s = 1..=k** (ranks `r < P`, partner `p = r ^ 2^(s-1)`): the main stream has segment
//!   `s` holding a copy of segment `s - 1` and posts "start" to both sub-streams. The rx
//!   sub-stream acks `p` ("my segment s may be reduced into") and waits for `p`'s data signal; the
//!   tx sub-stream waits for `p`'s ack, reduces its segment `s - 1` into `p`'s segment `s` and
//!   signals `p`. Both post "done"; the main stream waits for both before the next step, so no
//!   segment is rewritten while a peer may still read or write it.
//! * **final** (main stream): `r < P` copies segment `k` into its output; if it has an extra
//!   partner `e` it signals "result ready", `e` pulls `q`'s segment `k` into its output and acks,
//!   and `q` waits for that ack before the segment can be reused.

use crate::buffer::{DeviceBuffer, Uses};
use crate::communicator::{Communicator, HdStreams};
use crate::dtype::{DataType, ReduceOp};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::ffi;
use crate::fingerprint::{Algo, Call, CallOp};
use crate::stream::{Fp, Launch, Work};

impl Communicator {
    fn hd_streams(&self) -> Result<std::sync::Arc<HdStreams>> {
        let mut g = self.state.hd.lock();
        if let Some(h) = g.as_ref() {
            return Ok(h.clone());
        }
        let h = std::sync::Arc::new(HdStreams {
            tx: self.create_stream("hd-tx")?,
            rx: self.create_stream("hd-rx")?,
            start_tx: Event::new("hd start tx"),
            start_rx: Event::new("hd start rx"),
            done_tx: Event::new("hd done tx"),
            done_rx: Event::new("hd done rx"),
        });
        *g = Some(h.clone());
        Ok(h)
    }

    /// AllReduce by recursive halving-doubling across streams (see the module docs); same
    /// types, ops, chunking, validation and results as [`Communicator::all_reduce`]. Every rank
    /// must call it at the same point. Returns after enqueueing; call
    /// [`Communicator::synchronize`].
    ///
    /// With [`crate::Config::deterministic`] this is [`Communicator::all_reduce`]: the pairwise
    /// tree cannot add in rank order (see [`Communicator::all_reduce_with`]).
    pub fn all_reduce_hd(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<()> {
        self.all_reduce_with(send, recv, count, dtype, op, crate::plan::AllReduceAlgo::Hd)
    }

    /// Enqueues the call check of one HD chunk: my fingerprint next to a fresh tag in my
    /// broadcast cell, checked against `partner`'s (see `fingerprint.rs`). A rank running
    /// another collective meanwhile fails here, as do the ranks it then fails.
    fn enqueue_handshake(&self, partner: u32, fp: Fp) -> Result<()> {
        let tag = self.reserve_tags(1)?;
        let args = ffi::AivHandshakeArgs {
            comm: Default::default(),
            fp,
            partner: partner as i32,
            reserved: 0,
        };
        // SAFETY: aiv_handshake takes an AivHandshakeArgs; it touches only the sync areas.
        let work = Work::Launch(unsafe {
            Launch::of_comm_struct(
                &ffi::kernels::aiv_handshake,
                crate::backend::Blocks::Exactly(1),
                tag,
                &args,
                Some(fp),
                false,
            )
        });
        self.stream()
            .op("handshake", "aiv_handshake", Uses::new(), work, None);
        Ok(())
    }

    /// Enqueues a validated HD AllReduce (device codes `opc`/`dt`, `bytes` per rank).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn enqueue_hd(
        &self,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        opc: u32,
        dt: u32,
        bytes: usize,
    ) -> Result<()> {
        let es = dtype.size();
        let n = self.size() as usize;
        let rank = self.rank() as usize;
        let main = self.stream().clone();
        // Claims for the tasks that read the input and the ones that write the output.
        let reads = || Uses::from_iter([send.use_read()]);
        let writes =
            |off: usize, len: u64| Uses::from_iter([recv.use_write_range(off, len as usize)]);
        if n == 1 {
            // SAFETY: both ranges were validated against the buffers the claims hold.
            unsafe {
                main.copy_raw(
                    "final",
                    recv.addr(),
                    send.addr(),
                    bytes as u64,
                    0,
                    ffi::AIV_OP_NONE,
                    Uses::from_iter([send.use_read(), recv.use_write_range(0, bytes)]),
                )
            };
            return Ok(());
        }
        let hd = self.hd_streams()?;
        let k = usize::BITS as usize - 1 - n.leading_zeros() as usize; // floor(log2 n)
        let p2 = 1usize << k;
        let seg_bytes = self.buffer_bytes() / (k + 1) / 32 * 32;
        let cap = seg_bytes / es;
        if cap == 0 {
            return Err(Error::Config(format!(
                "HCCL buffer of {} bytes cannot hold {} segments for HD AllReduce",
                self.buffer_bytes(),
                k + 1
            )));
        }
        let world = &self.launcher.world;
        let seg = |r: usize, i: usize| world.hccl_addr(r) + (i * seg_bytes) as u64;
        let extra_partner = rank ^ p2; // valid when < n
                                       // The handshake partner: my step-1 partner, or for an extra rank the rank it folds into
                                       // (every rank is checked by someone, and each partner pair meets again in the chunk's
                                       // steps, so neither overwrites its broadcast cell before the other has read it).
        let partner = if rank < p2 { rank ^ 1 } else { extra_partner } as u32;
        let chunks = count.div_ceil(cap);
        if chunks > crate::plan::MAX_CHUNKS {
            return Err(Error::Length(format!(
                "HD AllReduce of {count} elements of {dtype} needs {chunks} launches of at most {cap} elements; at most {}",
                crate::plan::MAX_CHUNKS
            )));
        }
        let chunks = chunks as u32;
        for (chunk, c0) in (0..count.max(1)).step_by(cap).enumerate() {
            if count == 0 {
                break;
            }
            let call = Call {
                op: CallOp::AllReduce,
                count: count as u64,
                dtype,
                redop: Some(op),
                algo: Algo::Hd,
                chunk: chunk as u32,
                chunks,
                extra: 0,
            };
            self.enqueue_handshake(partner, call.encode())?;
            let cb = (cap.min(count - c0) * es) as u64;
            let input = send.addr() + (c0 * es) as u64;
            let output = recv.addr() + (c0 * es) as u64;
            // SAFETY: (every copy_raw below) addresses are inside the validated user buffers
            // (held by the tasks' claims) or inside the world's HCCL buffers (which every task
            // holds through its stream's launcher).
            unsafe {
                // ---- pre-step ----
                if rank >= p2 {
                    let q = extra_partner as u32;
                    main.in_call().rx_ack(q, "pre-step")?;
                    main.copy_raw("pre-step", seg(q as usize, 0), input, cb, dt, opc, reads());
                    main.in_call().tx_data_signal(q, "pre-step")?;
                } else {
                    main.copy_raw(
                        "pre-step",
                        seg(rank, 0),
                        input,
                        cb,
                        dt,
                        ffi::AIV_OP_NONE,
                        reads(),
                    );
                    if extra_partner < n {
                        main.in_call().tx_ack(extra_partner as u32, "pre-step")?;
                        main.in_call()
                            .rx_data_signal(extra_partner as u32, "pre-step")?;
                    }
                    main.copy_raw(
                        "pre-step",
                        seg(rank, 1),
                        seg(rank, 0),
                        cb,
                        dt,
                        ffi::AIV_OP_NONE,
                        Uses::new(),
                    );
                }
                // ---- exchange steps ----
                if rank < p2 {
                    for s in 1..=k {
                        let stage = format!("step {s}");
                        let p = (rank ^ (1 << (s - 1))) as u32;
                        if s > 1 {
                            main.copy_raw(
                                &stage,
                                seg(rank, s),
                                seg(rank, s - 1),
                                cb,
                                dt,
                                ffi::AIV_OP_NONE,
                                Uses::new(),
                            );
                        }
                        main.post(&hd.start_tx, &stage);
                        main.post(&hd.start_rx, &stage);
                        hd.rx.wait(&hd.start_rx, &stage);
                        hd.rx.in_call().tx_ack(p, &stage)?;
                        hd.rx.in_call().rx_data_signal(p, &stage)?;
                        hd.rx.post(&hd.done_rx, &stage);
                        hd.tx.wait(&hd.start_tx, &stage);
                        hd.tx.in_call().rx_ack(p, &stage)?;
                        hd.tx.copy_raw(
                            &stage,
                            seg(p as usize, s),
                            seg(rank, s - 1),
                            cb,
                            dt,
                            opc,
                            Uses::new(),
                        );
                        hd.tx.in_call().tx_data_signal(p, &stage)?;
                        hd.tx.post(&hd.done_tx, &stage);
                        main.wait(&hd.done_tx, &stage);
                        main.wait(&hd.done_rx, &stage);
                    }
                }
                // ---- final ----
                if rank < p2 {
                    main.copy_raw(
                        "final",
                        output,
                        seg(rank, k),
                        cb,
                        dt,
                        ffi::AIV_OP_NONE,
                        writes(c0 * es, cb),
                    );
                    if extra_partner < n {
                        main.in_call()
                            .tx_data_signal(extra_partner as u32, "final")?;
                        main.in_call().rx_ack(extra_partner as u32, "final")?;
                    }
                } else {
                    let q = extra_partner as u32;
                    main.in_call().rx_data_signal(q, "final")?;
                    main.copy_raw(
                        "final",
                        output,
                        seg(q as usize, k),
                        cb,
                        dt,
                        ffi::AIV_OP_NONE,
                        writes(c0 * es, cb),
                    );
                    main.in_call().tx_ack(q, "final")?;
                }
            }
        }
        Ok(())
    }
}
