/*
 * Test kernels for acl-twin, written against the public AscendC API only.
 *
 * accumulate: y[i] += x[i] for n floats, the launch's blocks taking equal parts (n / blocks a
 * multiple of 8). accumulate_indirect: the same, its arguments in a struct in GM (the way a
 * launch with a placeholder passes them). fault_kernel: ends in AscendC::Trap(), a kernel fault.
 */
#include "kernel_operator.h"

using namespace AscendC;

struct IndirectArgs {
    uint64_t x;
    uint64_t y;
    uint32_t n;
    uint32_t pad;
};

__aicore__ inline void Accumulate(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    const uint32_t part = n / GetBlockNum();
    const uint64_t start = static_cast<uint64_t>(GetBlockIdx()) * part;
    GlobalTensor<float> xGm;
    GlobalTensor<float> yGm;
    xGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x) + start, part);
    yGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(y) + start, part);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> queue;
    pipe.InitBuffer(queue, 1, part * sizeof(float));
    LocalTensor<float> t = queue.AllocTensor<float>();
    DataCopy(t, xGm, part);
    queue.EnQue(t);
    t = queue.DeQue<float>();
    SetAtomicAdd<float>();
    DataCopy(yGm, t, part);
    SetAtomicNone();
    queue.FreeTensor(t);
}

extern "C" __global__ __aicore__ void accumulate(GM_ADDR x, GM_ADDR y, uint32_t n)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    Accumulate(x, y, n);
}

extern "C" __global__ __aicore__ void accumulate_indirect(GM_ADDR args)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ IndirectArgs *a = reinterpret_cast<__gm__ IndirectArgs *>(args);
    Accumulate(reinterpret_cast<GM_ADDR>(a->x), reinterpret_cast<GM_ADDR>(a->y), a->n);
}

extern "C" __global__ __aicore__ void fault_kernel(GM_ADDR unused)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    (void)unused;
    Trap();
}
