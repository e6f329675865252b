//! A user's own AscendC kernel on aiv-comm's CPU twin: `kernels/accumulate.cpp` is ordinary
//! AscendC (it compiles unchanged for the NPU), `build.rs` names it, and this file launches it
//! with typed arguments.

#![warn(missing_docs)]

/// The kernels `build.rs` compiled (one `ascendc_sys::Kernel` static each).
pub mod kernels {
    ascendc_sys::include_kernels!("example_kernels");
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
