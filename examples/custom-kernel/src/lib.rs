//! A user's own AscendC kernel on aiv-comm's CPU twin: `kernels/accumulate.cpp` is ordinary
//! AscendC (it compiles unchanged for the NPU), `build.rs` names it, and this file launches it
//! with typed arguments.

#![warn(missing_docs)]

/// The kernels `build.rs` compiled (one `ascendc_twin::Kernel` static each).
pub mod kernels {
    ascendc_twin::include_kernels!("example_kernels");
}

/// The tiling struct `accumulate_custom` takes by value (same layout as the C++ one).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AccumulateTiling {
    /// Floats per tile (a multiple of 8).
    pub tile_length: u32,
    /// Floats per block (a multiple of `tile_length`).
    pub block_length: u32,
}

// SAFETY: two u32 fields, no padding: every bit pattern is valid.
unsafe impl bytemuck::Zeroable for AccumulateTiling {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for AccumulateTiling {}

/// The tiling of `total` floats over `blocks` blocks in tiles of `tile` floats.
pub fn tiling(total: u32, blocks: u32, tile: u32) -> AccumulateTiling {
    let per_block = total.div_ceil(blocks).div_ceil(tile) * tile;
    AccumulateTiling {
        tile_length: tile,
        block_length: per_block,
    }
}

/// The argument struct of `relu_scale_all_reduce` (kernels/fused_all_reduce.cpp), same layout
/// as the C++ one: the communicator part first, filled in by `launch_with_tags`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ReluScaleAllReduceArgs {
    /// Every rank's sync area and HCCL buffer, this launch's tag, rank, rank count.
    pub comm: aiv_comm::ffi::AivCommArgs,
    /// GM address of this rank's chunk of x.
    pub x: u64,
    /// GM address of this rank's chunk of y.
    pub y: u64,
    /// Floats in this chunk.
    pub count: u64,
    /// The scale.
    pub scale: f32,
    /// The bias.
    pub bias: f32,
}

// SAFETY: plain C data: integers and floats, no padding (552 + 3 * 8 + 2 * 4 bytes, 8-aligned).
unsafe impl bytemuck::Zeroable for ReluScaleAllReduceArgs {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for ReluScaleAllReduceArgs {}

/// `y = sum over ranks of Relu(x * scale + bias)` for `count` floats, as one fused kernel per
/// chunk of the HCCL buffer (compute in UB, then AllReduce, in one launch) on `block_dim`
/// blocks; every rank must call it with the same `count`, `block_dim` and order of calls.
/// Every rank gets the same bits: the sum runs in rank order.
///
/// Enqueued on the communicator's main stream, ordered with its collectives; `x` and `y` stay
/// allocated until it has run. Bad arguments are an error before anything is enqueued.
///
/// ```
/// use aiv_comm::World;
/// let world = World::sim(2).unwrap();
/// let out = world.run(|c| -> aiv_comm::Result<Vec<f32>> {
///     let x = c.alloc_from(&[1.0f32, -4.0, 2.0])?;
///     let y = c.alloc(3 * 4)?;
///     custom_kernel_example::relu_scale_all_reduce(c, &x, &y, 3, 2.0, 1.0, 2)?;
///     c.synchronize()?; // a fault of the kernel comes back here
///     y.to_vec::<f32>()
/// });
/// // Each rank: Relu([3, -7, 5]) = [3, 0, 5]; summed over 2 ranks.
/// assert_eq!(out[1].as_ref().unwrap(), &[6.0, 0.0, 10.0]);
/// ```
pub fn relu_scale_all_reduce(
    comm: &aiv_comm::Communicator,
    x: &aiv_comm::DeviceBuffer,
    y: &aiv_comm::DeviceBuffer,
    count: usize,
    scale: f32,
    bias: f32,
    block_dim: u32,
) -> aiv_comm::Result<()> {
    use aiv_comm::{BufferAccess, Error};
    let bytes = count
        .checked_mul(4)
        .ok_or_else(|| Error::Length(format!("{count} floats overflow a byte count")))?;
    for (what, b) in [("x", x), ("y", y)] {
        if b.len() < bytes {
            return Err(Error::BufferTooSmall {
                what,
                needed: bytes,
                len: b.len(),
            });
        }
        if b.addr() % 4 != 0 {
            return Err(Error::Misaligned {
                what,
                addr: b.addr(),
                align: 4,
            });
        }
    }
    if !(1..=48).contains(&block_dim) {
        return Err(Error::Length(format!(
            "block_dim {block_dim} is not in 1..=48 (one AIV core per block)"
        )));
    }
    // Chunks of the HCCL buffer, a multiple of 8 floats so every slice starts 32-byte aligned.
    let chunk = (comm.buffer_bytes() / 4) / 8 * 8;
    if chunk == 0 {
        return Err(Error::Config(
            "the HCCL buffer holds fewer than 8 floats".into(),
        ));
    }
    let (xa, ya) = (x.addr(), y.addr());
    let mut off = 0usize;
    while off < count {
        let n = chunk.min(count - off);
        let (cx, cy) = (xa + off as u64 * 4, ya + off as u64 * 4);
        // The bytes this launch writes: a launch that succeeds is taken to write all of what it
        // declares, and one that fails poisons it.
        let y_chunk = y.view(off * 4, n * 4)?;
        // SAFETY: relu_scale_all_reduce reads n floats at cx (inside x, claimed for reading),
        // writes n floats at cy (all of y_chunk, claimed for writing), and otherwise touches
        // only the world's HCCL buffers (n * 4 <= buffer_bytes) and sync areas.
        unsafe {
            comm.launch_with_tags(
                &kernels::relu_scale_all_reduce,
                block_dim,
                1,
                &[BufferAccess::Read(x), BufferAccess::Write(&y_chunk)],
                move |c| ReluScaleAllReduceArgs {
                    comm: c,
                    x: cx,
                    y: cy,
                    count: n as u64,
                    scale,
                    bias,
                },
            )?;
        }
        off += n;
    }
    Ok(())
}
