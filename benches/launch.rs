//! The twin's fixed cost of a kernel launch: `aiv_copy` moving 32 bytes per block (one
//! DataCopyPad in, one out, and the pipe flags between) on 1, 8 and 32 blocks of one device,
//! launched straight on the device (no stream, no communicator). What it measures is what every
//! small collective pays per launch and per block before any data moves: the block's coroutine,
//! its context, the TPipe set-up, and the twin calls of a minimal copy.
//!
//! Run: `cargo bench --bench launch`. Criterion prints the time per launch; divide by the block
//! count for the cost per block.

use aiv_comm::ffi::{self, AivCopyArgs};
use ascendc_sys::{DeviceConfig, Twin};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn bench_launch(c: &mut Criterion) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let mut g = c.benchmark_group("launch");
    g.sample_size(30);
    for blocks in [1u32, 8, 32] {
        let size = 32 * blocks as usize;
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
        g.bench_with_input(
            BenchmarkId::new("aiv_copy_32B_per_block", blocks),
            &blocks,
            |b, &n| {
                b.iter(|| {
                    // SAFETY: aiv_copy takes the GM address of an AivCopyArgs, held by `args`, and
                    // touches only `src` and `dst`, both alive for the whole launch.
                    unsafe {
                        dev.launch_kernel(
                            &ffi::kernels::aiv_copy,
                            n,
                            &ascendc_sys::args![args.gm(0)],
                        )
                    }
                    .unwrap()
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench_launch);
criterion_main!(benches);
