/*
 * accumulate_custom: y[i] += x[i] for `totalLength` floats, split over the launch's blocks in
 * tiles of `tiling.tileLength` elements. An ordinary AscendC kernel, written against the public
 * API only: a double-buffered TQueBind<VECIN, VECOUT> moves each tile GM -> UB -> GM, and the
 * store adds into y with the DMA atomics. A last tile shorter than a tile moves with DataCopyPad
 * (any length), so no byte past totalLength is read or written.
 */
#include "kernel_operator.h"

using namespace AscendC;

struct AccumulateTiling {
    uint32_t tileLength;   /* floats per tile, a multiple of 8 (32 bytes) */
    uint32_t blockLength;  /* floats per block, a multiple of tileLength */
};

extern "C" __global__ __aicore__ void accumulate_custom(GM_ADDR x, GM_ADDR y, uint32_t totalLength,
                                                        AccumulateTiling tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    const uint64_t start = static_cast<uint64_t>(GetBlockIdx()) * tiling.blockLength;
    if (start >= totalLength) {
        return;
    }
    const uint32_t mine = totalLength - start < tiling.blockLength ? static_cast<uint32_t>(totalLength - start)
                                                                   : tiling.blockLength;
    GlobalTensor<float> xGm;
    GlobalTensor<float> yGm;
    xGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x) + start, mine);
    yGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(y) + start, mine);

    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> queue;
    pipe.InitBuffer(queue, 2, tiling.tileLength * sizeof(float));
    SetAtomicAdd<float>();
    for (uint32_t off = 0; off < mine; off += tiling.tileLength) {
        const uint32_t len = mine - off < tiling.tileLength ? mine - off : tiling.tileLength;
        LocalTensor<float> t = queue.AllocTensor<float>();
        if (len == tiling.tileLength) {
            DataCopy(t, xGm[off], len);
        } else {
            DataCopyExtParams p(1, len * sizeof(float), 0, 0, 0);
            DataCopyPadExtParams<float> pad(false, 0, 0, 0.0f);
            DataCopyPad(t, xGm[off], p, pad);
        }
        queue.EnQue(t);
        t = queue.DeQue<float>();
        if (len == tiling.tileLength) {
            DataCopy(yGm[off], t, len);
        } else {
            DataCopyExtParams p(1, len * sizeof(float), 0, 0, 0);
            DataCopyPad(yGm[off], t, p);
        }
        queue.FreeTensor(t);
    }
    SetAtomicNone();
}
