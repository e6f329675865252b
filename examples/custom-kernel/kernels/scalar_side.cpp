/*
 * scalar_side: the scalar unit and the pipes sharing UB the way kernels built with the
 * compiler's automatic synchronisation (`--cce-auto-sync`, the default of AscendC kernel
 * projects) do: the compiler orders LocalTensor::GetValue/SetValue after and before the pipe
 * instructions that touch the same bytes, so these kernels write no SetFlag/WaitFlag for them.
 *   mode 0: GetValue of bytes a DataCopy GM->UB (MTE2) just loaded;
 *   mode 1: GetValue of a vector instruction's (V) result;
 *   mode 2: SetValue into a buffer, then DataCopy UB->GM (MTE3) of it;
 *   mode 3: DataCopy GM->UB then UB->GM of the same buffer, no flag: a pipe hazard the compiler
 *           does not fix (it orders LocalTensor scalar accesses only), still reported.
 * `out` gets 8 int32; launch with 1 block.
 */
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void scalar_side(GM_ADDR in, GM_ADDR out, uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<int32_t> inGm;
    GlobalTensor<int32_t> outGm;
    inGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(in), 8);
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(out), 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 64 * sizeof(int32_t));
    LocalTensor<int32_t> a = buf.Get<int32_t>();
    LocalTensor<int32_t> b = a[8];
    switch (mode) {
    case 0:
        DataCopy(a, inGm, 8);
        outGm.SetValue(0, a.GetValue(0) + 1);
        break;
    case 1:
        Duplicate(a, static_cast<int32_t>(5), 8);
        Adds(b, a, static_cast<int32_t>(2), 8);
        outGm.SetValue(0, b.GetValue(3));
        break;
    case 2:
        for (int32_t i = 0; i < 8; i++) {
            a.SetValue(i, 10 + i);
        }
        DataCopy(outGm, a, 8);
        break;
    default:
        DataCopy(a, inGm, 8);
        DataCopy(outGm, a, 8);
        break;
    }
}
