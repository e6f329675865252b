//! AllGather and AllReduce (f32 sum, bf16 sum) on 2, 4 and 8 ranks of the twin, one benchmark
//! group per HCCL buffer (chunk) size: 1 MB, 16 MB, 200 MB; message sizes 64 KiB, 1 MiB, 16 MiB,
//! 64 MiB per rank (AllGather: per-rank input). Throughput is the per-rank message in bytes.
//!
//! Run all: `cargo bench --bench collectives` (long: about 100 benchmarks). One group:
//! `cargo bench --bench collectives -- 'buffer_16MB/'`.

use aiv_comm::{Communicator, Config, DataType, DeviceBuffer, ReduceOp, World};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const SIZES: [usize; 4] = [64 << 10, 1 << 20, 16 << 20, 64 << 20];

#[derive(Clone, Copy)]
enum Op {
    AllGather,
    AllReduce(DataType),
}

fn issue(op: Op, c: &Communicator, send: &DeviceBuffer, recv: &DeviceBuffer, bytes: usize) {
    match op {
        Op::AllGather => c.all_gather(send, recv, bytes, DataType::U8).unwrap(),
        Op::AllReduce(dt) => c
            .all_reduce(send, recv, bytes / dt.size(), dt, ReduceOp::Sum)
            .unwrap(),
    }
}

fn bench(c: &mut Criterion) {
    for (label, buffer) in [
        ("1MB", 1usize << 20),
        ("16MB", 16 << 20),
        ("200MB", 200 << 20),
    ] {
        let mut g = c.benchmark_group(format!("buffer_{label}"));
        g.sample_size(10);
        g.warm_up_time(std::time::Duration::from_millis(500));
        g.measurement_time(std::time::Duration::from_secs(2));
        for ranks in [2usize, 4, 8] {
            let w = World::sim_with(
                ranks,
                Config {
                    buffer_bytes: Some(buffer),
                    ..Config::default()
                },
            )
            .unwrap();
            let max = *SIZES.last().unwrap();
            let bufs: Vec<(DeviceBuffer, DeviceBuffer)> = w
                .comms()
                .iter()
                .map(|c| (c.alloc(max).unwrap(), c.alloc(max * ranks).unwrap()))
                .collect();
            // Inputs hold data: GM never written reads the system's shared zero page (these
            // are anonymous mappings), which stays in the caches and times copies too fast.
            // 0x3f bytes are ordinary f32 and bf16 values (about 0.75), so sums stay normal.
            for (s, _) in &bufs {
                s.fill(0x3f).unwrap();
            }
            for (name, op) in [
                ("all_gather", Op::AllGather),
                ("all_reduce_f32_sum", Op::AllReduce(DataType::F32)),
                ("all_reduce_bf16_sum", Op::AllReduce(DataType::Bf16)),
            ] {
                for size in SIZES {
                    g.throughput(Throughput::Bytes(size as u64));
                    let id = BenchmarkId::new(format!("{name}/{ranks}ranks"), size);
                    g.bench_with_input(id, &size, |b, &size| {
                        b.iter(|| {
                            w.run(|comm| {
                                let (s, r) = &bufs[comm.rank() as usize];
                                let recv_len = if matches!(op, Op::AllGather) {
                                    size * ranks
                                } else {
                                    size
                                };
                                issue(
                                    op,
                                    comm,
                                    &s.view(0, size).unwrap(),
                                    &r.view(0, recv_len).unwrap(),
                                    size,
                                );
                                comm.synchronize().unwrap();
                            })
                        })
                    });
                }
            }
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
