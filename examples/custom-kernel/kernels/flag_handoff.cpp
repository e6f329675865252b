/*
 * flag_handoff: block 0 writes `n` int32 (41 each) to `data` and then raises a flag in an
 * ordinary GM buffer; block 1 waits for the flag, reads the data, adds 1 and writes it to `out`.
 * The flag lives in plain data memory and uses the scalar GM accesses the AscendC docs give for
 * synchronisation through GM, as the public samples do:
 *   mode 0: WriteGmByPassDCache after DataSyncBarrier / polled with ReadGmByPassDCache;
 *   mode 1: SetValue + DataCacheCleanAndInvalid / polled with DataCacheCleanAndInvalid + GetValue.
 * Two broken modes show what a race checker must still catch:
 *   mode 2: block 1 does not wait for the flag;
 *   mode 3: block 0 raises the flag before it writes the data.
 * `n` is a multiple of 8 (32 bytes). Launch with 2 blocks.
 */
#include "kernel_operator.h"

using namespace AscendC;

namespace {

__aicore__ inline void Raise(__gm__ int32_t *flag, uint32_t mode)
{
    if (mode == 1) {
        GlobalTensor<int32_t> f;
        f.SetGlobalBuffer(flag, 8);
        f.SetValue(0, 1);
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(f);
    } else {
        DataSyncBarrier<MemDsbT::ALL>();
        WriteGmByPassDCache(flag, static_cast<int32_t>(1));
    }
}

__aicore__ inline bool Raised(__gm__ int32_t *flag, uint32_t mode)
{
    if (mode == 1) {
        GlobalTensor<int32_t> f;
        f.SetGlobalBuffer(flag, 8);
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(f);
        return f.GetValue(0) == 1;
    }
    return ReadGmByPassDCache(flag) == 1;
}

} // namespace

extern "C" __global__ __aicore__ void flag_handoff(GM_ADDR data, GM_ADDR flag, GM_ADDR out, uint32_t n,
                                                   uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ int32_t *f = reinterpret_cast<__gm__ int32_t *>(flag);
    GlobalTensor<int32_t> dataGm;
    dataGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(data), n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, n * sizeof(int32_t));
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    if (GetBlockIdx() == 0) {
        if (mode == 3) {
            Raise(f, mode);
        }
        Duplicate(t, static_cast<int32_t>(41), n);
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopy(dataGm, t, n);
        SetFlag<HardEvent::MTE3_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);
        if (mode != 3) {
            Raise(f, mode);
        }
        return;
    }
    if (GetBlockIdx() != 1) {
        return;
    }
    if (mode != 2) {
        while (!Raised(f, mode)) {
        }
    }
    DataCopy(t, dataGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Adds(t, t, static_cast<int32_t>(1), n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    GlobalTensor<int32_t> outGm;
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(out), n);
    DataCopy(outGm, t, n);
}
