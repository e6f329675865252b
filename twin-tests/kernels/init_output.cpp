/*
 * InitOutput: each block b fills `size` elements of T at dst + offset + b * size with value + b
 * (T from `dtype`: 0 int32_t, 1 float, 2 half). The block's TPipe first takes `reserve` bytes of
 * UB (a TBuf), so InitOutput's UB scratch starts there.
 *   mode 0: InitOutput(gm, size, value + b);
 *   mode 1: as 0 under SetAtomicAdd<T>: InitOutput keeps the atomic mode (adds to what is there);
 *   mode 2: no TPipe (InitOutput needs one);
 *   mode 3: InitOutput(gm, size), the default value (0);
 *   mode 4: InitOutput with value + b, then at once with value + b + 1, nothing between: the second
 *           fill of the UB scratch (V) may overwrite it while the first's MTE3 still reads it;
 *   mode 5: as 4 with SetFlag/WaitFlag<MTE3_V> between: the second value lands;
 *   mode 6: every block fills the same elements (those of block 0), with its own value: the
 *           blocks' copies race;
 *   mode 7: as 6 with block 0's value everywhere: the same bytes, harmless.
 */
// kernels: init_output
// auto_sync: off
#include "kernel_operator.h"

using namespace AscendC;

template <typename T>
__aicore__ inline void FillGm(GM_ADDR dst, uint32_t size, uint32_t mode, uint32_t reserve, float value,
                              uint32_t offset)
{
    const uint32_t b = static_cast<uint32_t>(GetBlockIdx());
    GlobalTensor<T> gm;
    const uint32_t slice = mode == 6 || mode == 7 ? 0 : b;
    gm.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(dst) + offset + static_cast<uint64_t>(slice) * size);
    const T v = static_cast<T>(value + static_cast<float>(mode == 7 ? 0 : b));
    if (mode == 2) {
        InitOutput<T>(gm, size, v);
        return;
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    if (reserve != 0) {
        pipe.InitBuffer(tb, reserve);
    }
    switch (mode) {
    case 1:
        SetAtomicAdd<T>();
        InitOutput<T>(gm, size, v);
        SetAtomicNone();
        break;
    case 3:
        InitOutput<T>(gm, size);
        break;
    case 4:
    case 5: {
        InitOutput<T>(gm, size, v);
        if (mode == 5) {
            SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
        }
        InitOutput<T>(gm, size, static_cast<T>(value + static_cast<float>(b) + 1.0f));
        break;
    }
    default:
        InitOutput<T>(gm, size, v);
        break;
    }
}

extern "C" __global__ __aicore__ void init_output(GM_ADDR dst, uint32_t size, uint32_t dtype, uint32_t mode,
                                                 uint32_t reserve, float value, uint32_t offset)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    if (dtype == 0) {
        FillGm<int32_t>(dst, size, mode, reserve, value, offset);
    } else if (dtype == 1) {
        FillGm<float>(dst, size, mode, reserve, value, offset);
    } else {
        FillGm<half>(dst, size, mode, reserve, value, offset);
    }
}
