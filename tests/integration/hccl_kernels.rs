//! HCCL's own 910B AIV kernels (public cann-hccl sources, compiled unchanged) run on the twin
//! with its checkers on: AllReduce, AllGather and ReduceScatter on 2, 4 and 8 ranks at small,
//! middle and big sizes give the right answers, without a hang, a livelock or a false hazard.
//!
//! Needs a cann-hccl checkout at build time (nothing of it is in this repository):
//!
//!     AIV_HCCL_AIV_DIR=/path/to/cann-hccl/src/domain/collective_communication/algorithm/base/alg_aiv_template \
//!         cargo test --release --test integration hccl_kernels -- --ignored
//!
//! The harness does what HCCL's host does for one-server, op-base launches on Atlas A2
//! (`hccl_aiv.cc`, the mesh AIV executors): every rank's input buffer (its 35 MB AIV buffer, or
//! the 200 MB CCL buffer for big AllReduce) and 3 MB flag buffer, zeroed; a tag per call that
//! starts at 1; `blockDim` as `GetBlockDim`; the 47 parameters packed by the kernel ABI.

#[cfg(not(aiv_hccl))]
#[test]
#[ignore = "needs AIV_HCCL_AIV_DIR at build time (see the file's docs)"]
fn hccl_kernels_need_a_cann_hccl_checkout() {
    panic!("built without AIV_HCCL_AIV_DIR: HCCL's kernels were not compiled (see tests/integration/hccl_kernels.rs)");
}

#[cfg(aiv_hccl)]
mod hccl {
    use std::time::Duration;

    use aiv_comm::ffi::hccl_kernels;
    use ascendc_twin::{ArgBlock, Device, DeviceConfig, GmAddr, GmBuffer, Kernel, Twin};

    const MAX_RANK_SIZE: usize = 16;
    const AIV_DATA_SIZE: usize = 35 << 20;
    const CCL_SIZE: usize = 200 << 20;
    const AIV_FLAG_SIZE: usize = 3 << 20;
    const HCCL_DATA_TYPE_FP32: u32 = 4;
    const HCCL_REDUCE_SUM: u32 = 0;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub(super) enum Op {
        AllReduce,
        AllGather,
        ReduceScatter,
        AllToAll,
    }

    struct Rank {
        dev: Device,
        aiv_in: GmBuffer,
        ccl_in: GmBuffer,
        flags: GmBuffer,
    }

    struct Cluster {
        twin: Twin,
        ranks: Vec<Rank>,
        tag: i32,
    }

    impl Cluster {
        fn new(n: usize) -> Cluster {
            let twin = Twin::new();
            twin.set_watchdog(Some(Duration::from_secs(20)));
            let ranks = (0..n)
                .map(|r| {
                    let dev = twin.device(r as u32, DeviceConfig::default()).unwrap();
                    let aiv_in = dev.alloc(AIV_DATA_SIZE).unwrap();
                    let ccl_in = dev.alloc(CCL_SIZE).unwrap();
                    let flags = dev.alloc(AIV_FLAG_SIZE).unwrap();
                    // HCCL's flag regions: the whole flag buffer and the last 3 MB of the AIV
                    // input buffer (zeroed at creation, polled by every rank).
                    flags.mark_sync(0, AIV_FLAG_SIZE).unwrap();
                    aiv_in
                        .mark_sync(AIV_DATA_SIZE - AIV_FLAG_SIZE, AIV_FLAG_SIZE)
                        .unwrap();
                    ccl_in
                        .mark_sync(CCL_SIZE - AIV_FLAG_SIZE, AIV_FLAG_SIZE)
                        .unwrap();
                    Rank {
                        dev,
                        aiv_in,
                        ccl_in,
                        flags,
                    }
                })
                .collect();
            Cluster {
                twin,
                ranks,
                tag: 0,
            }
        }

        /// One call of `op` on every rank: `len` is HCCL's count (per rank for AllReduce and
        /// AllGather, the output count for ReduceScatter).
        fn run(&mut self, op: Op, len: usize, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
            let n = self.ranks.len();
            let bytes = len * 4;
            // `big`: the executors that stage through the 200 MB CCL buffer instead of the AIV one.
            let (kernel, blocks, big): (&'static Kernel, usize, bool) = match op {
                Op::AllReduce => {
                    let big = bytes >= 16 << 20;
                    (
                        &hccl_kernels::aiv_all_reduce_float,
                        if big { 2 * n } else { n },
                        big,
                    )
                }
                Op::AllGather => {
                    let big = bytes > 700 << 10;
                    (
                        &hccl_kernels::aiv_all_gather_float,
                        if big { n + 1 } else { n },
                        big,
                    )
                }
                Op::ReduceScatter => (
                    &hccl_kernels::aiv_reduce_scatter_float,
                    if bytes > 2 << 20 { 2 * n } else { n },
                    bytes > 190 << 10,
                ),
                // Only HCCL's small AlltoAll (< 512 KB per peer) is an AIV kernel on A2.
                Op::AllToAll => (&hccl_kernels::aiv_all_to_all_float, n, false),
            };
            let out_len = match op {
                Op::AllReduce | Op::ReduceScatter => len,
                Op::AllGather | Op::AllToAll => len * n,
            };
            self.tag += 1;
            let tag = self.tag;
            let inputs_gm: Vec<GmBuffer> = self
                .ranks
                .iter()
                .zip(inputs)
                .map(|(r, x)| {
                    let b = r.dev.alloc(x.len() * 4).unwrap();
                    b.write(
                        0,
                        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
                    )
                    .unwrap();
                    b
                })
                .collect();
            let outputs: Vec<GmBuffer> = self
                .ranks
                .iter()
                .map(|r| r.dev.alloc(out_len * 4).unwrap())
                .collect();
            let buffer_size = if big { CCL_SIZE } else { AIV_DATA_SIZE };
            let block = |rank: usize| {
                let mut a = ArgBlock::new();
                for i in 0..MAX_RANK_SIZE {
                    a.push(&if i < n {
                        let r = &self.ranks[i];
                        if big {
                            r.ccl_in.gm(0)
                        } else {
                            r.aiv_in.gm(0)
                        }
                    } else {
                        GmAddr::NULL
                    });
                }
                for i in 0..MAX_RANK_SIZE {
                    a.push(&if i < n {
                        self.ranks[i].flags.gm(0)
                    } else {
                        GmAddr::NULL
                    });
                }
                a.arg(inputs_gm[rank].gm(0))
                    .arg(outputs[rank].gm(0))
                    .arg(rank as u32)
                    .arg(n as u32)
                    .arg(len as u64)
                    .arg(HCCL_DATA_TYPE_FP32)
                    .arg(HCCL_REDUCE_SUM)
                    .arg(0u32) // root
                    .arg(tag)
                    .arg(true) // isOpBase
                    .arg(buffer_size as u64)
                    .arg(-1i32) // aivRdmaStep: one server
                    .arg(false) // useAivRdmaSmall
                    .arg(1i32) // serverNum
                    .arg(2u32) // devType: 910B
            };
            let results: Vec<Result<(), ascendc_twin::TwinError>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..n)
                    .map(|r| {
                        let args = block(r);
                        let dev = self.ranks[r].dev.clone();
                        s.spawn(move || {
                            // SAFETY: HCCL's kernel reads and writes the buffers named in its
                            // arguments (all alive until this scope ends), as on the NPU.
                            unsafe { dev.launch_kernel(kernel, blocks as u32, &args) }
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (r, res) in results.iter().enumerate() {
                if let Err(e) = res {
                    panic!("{op:?} len {len} on {n} ranks: rank {r}: {e}");
                }
            }
            outputs
                .iter()
                .map(|b| {
                    let mut v = vec![0u8; out_len * 4];
                    b.read(0, &mut v).unwrap();
                    v.chunks(4)
                        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                        .collect()
                })
                .collect()
        }
    }

    /// Small integers in f32: sums are exact whatever the order.
    fn input(rank: usize, count: usize, call: usize) -> Vec<f32> {
        (0..count)
            .map(|i| ((i * 7 + rank * 13 + call * 5) % 61) as f32)
            .collect()
    }

    pub(super) fn check_public(op: Op, n: usize, len: usize, calls: usize) {
        check(op, n, len, calls)
    }

    fn check(op: Op, n: usize, len: usize, calls: usize) {
        let mut c = Cluster::new(n);
        for call in 0..calls {
            let in_count = if matches!(op, Op::ReduceScatter | Op::AllToAll) {
                len * n
            } else {
                len
            };
            let inputs: Vec<Vec<f32>> = (0..n).map(|r| input(r, in_count, call)).collect();
            let outs = c.run(op, len, &inputs);
            for (r, out) in outs.iter().enumerate() {
                let want: Vec<f32> = match op {
                    Op::AllReduce => (0..len)
                        .map(|i| inputs.iter().map(|x| x[i]).sum())
                        .collect(),
                    Op::AllGather => inputs.concat(),
                    Op::ReduceScatter => (0..len)
                        .map(|i| inputs.iter().map(|x| x[r * len + i]).sum())
                        .collect(),
                    // Block j of rank r's output is block r of rank j's input.
                    Op::AllToAll => (0..n)
                        .flat_map(|j| inputs[j][r * len..(r + 1) * len].to_vec())
                        .collect(),
                };
                let bad = out.iter().zip(&want).filter(|(a, b)| a != b).count();
                assert_eq!(
                    bad, 0,
                    "{op:?} len {len} on {n} ranks, call {call}: rank {r} has {bad} wrong"
                );
            }
        }
        assert!(c.twin.aborted().is_none());
    }

    #[test]
    #[ignore = "needs AIV_HCCL_AIV_DIR at build time; minutes"]
    fn hccl_all_reduce_runs_correctly_on_the_twin() {
        for n in [2, 4, 8] {
            for len in [1024, 300 << 10, 4 << 20] {
                check(Op::AllReduce, n, len, 2);
            }
        }
    }

    #[test]
    #[ignore = "needs AIV_HCCL_AIV_DIR at build time; minutes"]
    fn hccl_all_gather_runs_correctly_on_the_twin() {
        for n in [2, 4, 8] {
            for len in [1024, 256 << 10] {
                check(Op::AllGather, n, len, 2);
            }
        }
    }

    #[test]
    #[ignore = "needs AIV_HCCL_AIV_DIR at build time; minutes"]
    fn hccl_reduce_scatter_runs_correctly_on_the_twin() {
        for n in [2, 4, 8] {
            for len in [1024, 128 << 10, 1 << 20] {
                check(Op::ReduceScatter, n, len, 2);
            }
        }
    }
}

#[cfg(aiv_hccl)]
mod hccl_all_to_all {
    #[test]
    #[ignore = "needs AIV_HCCL_AIV_DIR at build time; minutes"]
    fn hccl_all_to_all_runs_correctly_on_the_twin() {
        for n in [2, 4, 8] {
            for len in [256, 16 << 10] {
                super::hccl::check_public(super::hccl::Op::AllToAll, n, len, 2);
            }
        }
    }
}
