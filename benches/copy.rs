//! CpGM2GM on the twin (kernel/copy.cpp), launched straight on a device (no stream, no
//! communicator):
//!
//! * `cp_gm2gm`: 64 KiB, 1 MiB and 16 MiB on 1 and 8 blocks, beside a plain host memcpy of the
//!   same bytes measured in the same run (throughput in bytes copied, so criterion prints GB/s);
//! * `launch`: 32 bytes per block on 1, 8 and 32 blocks, the fixed cost every small collective
//!   pays per launch and per block before any data moves (the block's coroutine and context,
//!   the TPipe set-up, the twin calls of a minimal copy). Divide the growth by the added
//!   blocks for the cost per block;
//! * `offsets`: 64 KiB from and to ragged byte offsets (GM-to-GM copies at any distance).
//!
//! Run: `cargo bench --bench copy` (one group: `cargo bench --bench copy -- launch`).

use aiv_comm::ffi::{self, AivCopyArgs};
use ascendc_twin::{Device, DeviceConfig, GmBuffer, Twin};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// A source, a destination and the argument block of an `aiv_copy` of `size` bytes, from byte
/// `src_off` of the source buffer to byte `dst_off` of the destination buffer.
struct CopyJob {
    /// Held (not read) so the kernel's source and destination outlive every launch.
    _src: GmBuffer,
    _dst: GmBuffer,
    args: GmBuffer,
}

impl CopyJob {
    fn new(dev: &Device, size: usize) -> CopyJob {
        CopyJob::at(dev, size, 0, 0)
    }

    fn at(dev: &Device, size: usize, src_off: usize, dst_off: usize) -> CopyJob {
        let src = dev.alloc(size + src_off).unwrap();
        let dst = dev.alloc(size + dst_off).unwrap();
        src.fill(0, size + src_off, 0x5a).unwrap();
        let args = dev.alloc(64).unwrap();
        let a = AivCopyArgs {
            dst: dst.addr() as u64 + dst_off as u64,
            src: src.addr() as u64 + src_off as u64,
            bytes: size as u64,
            dtype: 0,
            op: ffi::AIV_OP_NONE,
        };
        args.write(0, bytemuck::bytes_of(&a)).unwrap();
        CopyJob {
            _src: src,
            _dst: dst,
            args,
        }
    }

    /// One launch on `blocks` blocks.
    fn launch(&self, dev: &Device, blocks: u32) {
        // SAFETY: aiv_copy takes the GM address of an AivCopyArgs, held by `args`, and touches
        // only `src` and `dst`, both held by the job as long as it lives.
        unsafe {
            dev.launch_kernel(
                &ffi::kernels::aiv_copy,
                blocks,
                &ascendc_twin::args![self.args.gm(0)],
            )
        }
        .unwrap()
    }
}

fn bench_copy(c: &mut Criterion) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let mut g = c.benchmark_group("cp_gm2gm");
    g.sample_size(20);
    for size in [64usize << 10, 1 << 20, 16 << 20] {
        g.throughput(Throughput::Bytes(size as u64));
        let job = CopyJob::new(&dev, size);
        for blocks in [1u32, 8] {
            g.bench_with_input(
                BenchmarkId::new(format!("twin_{blocks}_blocks"), size),
                &size,
                |b, _| b.iter(|| job.launch(&dev, blocks)),
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

fn bench_launch(c: &mut Criterion) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let mut g = c.benchmark_group("launch");
    g.sample_size(30);
    for blocks in [1u32, 8, 32] {
        let job = CopyJob::new(&dev, 32 * blocks as usize);
        g.bench_with_input(
            BenchmarkId::new("aiv_copy_32B_per_block", blocks),
            &blocks,
            |b, &n| b.iter(|| job.launch(&dev, n)),
        );
    }
    g.finish();
}

/// 64 KiB at source / destination byte offsets within page-aligned buffers: ragged GM offsets
/// are what DataCopyPad is for, and the twin's GM-to-GM copy must not depend on them.
fn bench_offsets(c: &mut Criterion) {
    let twin = Twin::new();
    let dev = twin.device(0, DeviceConfig::default()).unwrap();
    let mut g = c.benchmark_group("offsets");
    g.sample_size(20);
    let size = 64 << 10;
    g.throughput(Throughput::Bytes(size as u64));
    for (so, d_o) in [(0usize, 0usize), (0, 16), (16, 0), (8, 40)] {
        let job = CopyJob::at(&dev, size, so, d_o);
        g.bench_function(format!("src+{so}_dst+{d_o}"), |b| {
            b.iter(|| job.launch(&dev, 1))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_copy, bench_launch, bench_offsets);
criterion_main!(benches);
