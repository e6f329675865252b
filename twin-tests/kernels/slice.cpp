/*
 * Kernel for DataCopy with SliceInfo: `slice_copy` fills a UB tile of `ubLen` floats from `ubImg`
 * (contiguous DataCopy), copies the slice `gmIn` of `src` into the slice `ub` of the tile, returns
 * the whole tile to `ubOut`, then copies the slice `ub` of the tile to the slice `gmOut` of `dst`.
 */
// kernels: slice_copy
#include "kernel_operator.h"

using namespace AscendC;

struct SliceArgs {
    uint32_t dim;
    uint32_t ubLen;      /* floats, a multiple of 8 */
    uint32_t gmIn[8][5]; /* startIndex, endIndex, stride, burstLen, shapeValue per dimension */
    uint32_t ub[8][5];
    uint32_t gmOut[8][5];
};

namespace {
__aicore__ inline void Load(SliceInfo *s, const uint32_t (*v)[5])
{
    for (uint32_t i = 0; i < 8; i++) {
        s[i] = SliceInfo(v[i][0], v[i][1], v[i][2], v[i][3], v[i][4]);
    }
}
} // namespace

extern "C" __global__ __aicore__ void slice_copy(GM_ADDR src, GM_ADDR ubImg, GM_ADDR ubOut, GM_ADDR dst, SliceArgs a)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> srcGm, imgGm, ubOutGm, dstGm;
    srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(src));
    imgGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(ubImg));
    ubOutGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(ubOut));
    dstGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dst));
    SliceInfo gmIn[K_MAX_DIM], ub[K_MAX_DIM], gmOut[K_MAX_DIM];
    Load(gmIn, a.gmIn);
    Load(ub, a.ub);
    Load(gmOut, a.gmOut);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, a.ubLen * sizeof(float));
    LocalTensor<float> tile = buf.Get<float>();
    DataCopy(tile, imgGm, a.ubLen);
    PipeBarrier<PIPE_MTE2>();
    DataCopy(tile, srcGm, ub, gmIn, a.dim);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(ubOutGm, tile, a.ubLen);
    DataCopy(dstGm, tile, gmOut, ub, a.dim);
}
