/*
 * aiv_copy: CpGM2GM of `bytes` split over the launch's blocks. Block b copies a contiguous slice
 * whose start is 32-byte aligned relative to the buffers (the last slice takes the remainder), so
 * each block moves whole DMA blocks except for one ragged tail.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "cp_gm2gm.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_copy(GM_ADDR argsAddr)
{
    __gm__ const AivCopyArgs *a = reinterpret_cast<__gm__ const AivCopyArgs *>(argsAddr);
    const uint64_t blocks = static_cast<uint64_t>(GetBlockNum());
    const uint64_t me = static_cast<uint64_t>(GetBlockIdx());
    const uint64_t bytes = a->bytes;
    // Slice size: an equal share rounded up to 32 bytes (and so to any element size).
    const uint64_t share = ((bytes + blocks - 1) / blocks + 31) / 32 * 32;
    const uint64_t begin = me * share;
    if (begin >= bytes) {
        return;
    }
    const uint64_t len = (bytes - begin) < share ? (bytes - begin) : share;
    TPipe pipe;
    TBuf<TPosition::VECCALC> stage;
    pipe.InitBuffer(stage, aiv::STAGE_BYTES);
    aiv::CpGM2GMTyped(a->dst + begin, a->src + begin, len, stage.Get<uint8_t>(), a->dtype, a->op);
}
