//! CpGM2GM on the twin (kernel/copy.cpp) for 64 KiB, 1 MiB and 16 MiB on 1 and 8 blocks, beside a
//! plain host memcpy of the same bytes measured in the same run.
//!
//! Run: `cargo bench --bench copy`. Throughput is in bytes copied, so criterion prints GB/s.

use aiv_comm::ffi::{self, AivCopyArgs};
use ascendc_sys::{DeviceConfig, Twin};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn bench_copy(c: &mut Criterion) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let mut g = c.benchmark_group("cp_gm2gm");
    g.sample_size(20);
    for size in [64usize << 10, 1 << 20, 16 << 20] {
        g.throughput(Throughput::Bytes(size as u64));
        let src = dev.alloc(size).unwrap();
        let dst = dev.alloc(size).unwrap();
        src.fill(0, size, 0x5a).unwrap();
        let args = dev.alloc(64).unwrap();
        let a = AivCopyArgs {
            dst: dst.addr() as u64,
            src: src.addr() as u64,
            bytes: size as u64,
            dtype: 0,
            op: ffi::AIV_OP_NONE,
        };
        args.write(0, bytemuck::bytes_of(&a)).unwrap();
        for blocks in [1u32, 8] {
            g.bench_with_input(
                BenchmarkId::new(format!("twin_{blocks}_blocks"), size),
                &size,
                |b, _| {
                    b.iter(|| {
                        // SAFETY: aiv_copy takes the GM address of an AivCopyArgs, held by `args`.
                        unsafe {
                            dev.launch_kernel(
                                &ffi::kernels::aiv_copy,
                                blocks,
                                &ascendc_sys::args![args.gm(0)],
                            )
                        }
                        .unwrap()
                    })
                },
            );
        }
        let hs = vec![0x5au8; size];
        let mut hd = vec![0u8; size];
        g.bench_with_input(BenchmarkId::new("memcpy", size), &size, |b, _| {
            b.iter(|| {
                hd.copy_from_slice(std::hint::black_box(&hs));
                std::hint::black_box(&hd);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_copy);
criterion_main!(benches);
