/*
 * Kernels of tests/twin/sort.rs: Sort32, MrgSort (+ GetMrgSortResult) and ReducePairElem, each driven
 * by a small parameter block in GM so the test can vary lengths, list counts, masks, strides and
 * operand placement, and provoke the misuse the twin must report. One block each.
 */
// kernels: sort32_f32 sort32_f16 mrgsort_f32 mrgsort_f16 pair_f32 pair_f16

#include "kernel_operator.h"

using namespace AscendC;

/*
 * Sort32 of `rep` groups. p (uint32): [0] rep, [1] case:
 *   0 plain; 1 src0 at +16 bytes (misaligned); 2 src0 is dst's buffer (overlap);
 *   3 dst starts 32 structures into its buffer (runs past its end); 4 no MTE2 -> V flag (a pipe hazard).
 * in0: 32 * rep scores, in1: 32 * rep indexes; out: 32 * rep structures (64 * rep T of 4 bytes,
 * i.e. 8 * 32 * rep bytes).
 */
template <typename T> __aicore__ inline void Sort32Kernel(GM_ADDR in0, GM_ADDR in1, GM_ADDR out, GM_ADDR p)
{
    GlobalTensor<uint32_t> prm;
    prm.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(p), 8);
    const uint32_t rep = prm.GetValue(0);
    const uint32_t mode = prm.GetValue(1);
    const uint32_t n = 32 * (rep == 0 ? 1 : rep);
    const uint32_t structT = 8 / sizeof(T); /* T elements per structure */
    GlobalTensor<T> g0;
    GlobalTensor<uint32_t> g1;
    GlobalTensor<T> go;
    g0.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(in0), n);
    g1.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(in1), n);
    go.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(out), n * structT);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b0, b1, bo;
    pipe.InitBuffer(b0, n * sizeof(T) + 64);
    pipe.InitBuffer(b1, n * sizeof(uint32_t));
    pipe.InitBuffer(bo, n * 8);
    LocalTensor<T> s0 = b0.Get<T>();
    LocalTensor<uint32_t> s1 = b1.Get<uint32_t>();
    LocalTensor<T> d = bo.Get<T>();
    DataCopy(s0, g0, n);
    DataCopy(s1, g1, n);
    if (mode != 4) {
        DataCopy(d, go, n * structT); /* what the output held before: kept where nothing is written */
    }
    if (mode != 4) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    if (mode == 1) {
        Sort32<T>(d, s0[16 / sizeof(T)], s1, static_cast<int32_t>(rep));
    } else if (mode == 2) {
        Sort32<T>(d, d, s1, static_cast<int32_t>(rep));
    } else if (mode == 3) {
        Sort32<T>(d[32 * structT], s0, s1, static_cast<int32_t>(rep));
    } else {
        Sort32<T>(d, s0, s1, static_cast<int32_t>(rep));
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, d, n * structT);
}

extern "C" __global__ __aicore__ void sort32_f32(GM_ADDR in0, GM_ADDR in1, GM_ADDR out, GM_ADDR p)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    Sort32Kernel<float>(in0, in1, out, p);
}
extern "C" __global__ __aicore__ void sort32_f16(GM_ADDR in0, GM_ADDR in1, GM_ADDR out, GM_ADDR p)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    Sort32Kernel<half>(in0, in1, out, p);
}

/*
 * MrgSort over one UB buffer holding the input image (`inBytes` from `in`) and, at `dstOff`, the
 * destination; the `outBytes` from `dstOff` rounded down to 32 bytes are first loaded from
 * `out`, and copied back to it.
 * p (uint32): [0..4) elementLengths, [4] validBit, [5] ifExhaustedSuspension, [6] repeatTimes,
 * [7..11) list offsets (bytes), [11] dstOff (bytes), [12] inBytes, [13] outBytes,
 * [14] 1: call GetMrgSortResult into cnt[0..4) (uint32 each), [15] buffer bytes,
 * [16] 1: no MTE2 -> V flag before MrgSort (a pipe hazard), and no destination load,
 * [17] 1: the high-level API's overload (elementCountList, sortedNum; its counts into cnt[4..8)),
 * lists at GetSortOffset<T>(p[7..11) / 8) instead of p[7..11) / sizeof(T).
 */
template <typename T> __aicore__ inline void MrgSortKernel(GM_ADDR in, GM_ADDR out, GM_ADDR cnt, GM_ADDR p)
{
    GlobalTensor<uint32_t> prm;
    prm.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(p), 18);
    const bool noFlag = prm.GetValue(16) != 0;
    GlobalTensor<T> gi;
    GlobalTensor<T> go;
    GlobalTensor<uint32_t> gc;
    const uint32_t inBytes = prm.GetValue(12);
    const uint32_t outBytes = prm.GetValue(13);
    gi.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(in), inBytes / sizeof(T));
    go.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(out), outBytes / sizeof(T));
    gc.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(cnt), 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, prm.GetValue(15));
    LocalTensor<T> all = buf.Get<T>();
    LocalTensor<T> dst = all[prm.GetValue(11) / sizeof(T)];
    LocalTensor<T> win = all[(prm.GetValue(11) & ~31u) / sizeof(T)]; /* DataCopy needs 32 bytes */
    DataCopy(all, gi, inBytes / sizeof(T));
    if (!noFlag) {
        DataCopy(win, go, outBytes / sizeof(T));
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    MrgSort4Info info;
    for (int32_t i = 0; i < 4; i++) {
        info.elementLengths[i] = static_cast<uint16_t>(prm.GetValue(i));
    }
    info.validBit = static_cast<uint16_t>(prm.GetValue(4));
    info.ifExhaustedSuspension = prm.GetValue(5) != 0;
    info.repeatTimes = static_cast<uint8_t>(prm.GetValue(6));
    if (prm.GetValue(17) != 0) {
        MrgSortSrcList<T> list(all[GetSortOffset<T>(prm.GetValue(7) / 8)],
                               all[GetSortOffset<T>(prm.GetValue(8) / 8)],
                               all[GetSortOffset<T>(prm.GetValue(9) / 8)],
                               all[GetSortOffset<T>(prm.GetValue(10) / 8)]);
        uint32_t sortedNum[4] = {0, 0, 0, 0};
        if (info.ifExhaustedSuspension) {
            MrgSort<T, true>(dst, list, info.elementLengths, sortedNum, info.validBit, info.repeatTimes);
        } else {
            MrgSort<T, false>(dst, list, info.elementLengths, sortedNum, info.validBit, info.repeatTimes);
        }
        for (int32_t i = 0; i < 4; i++) {
            gc.SetValue(4 + i, sortedNum[i]);
        }
        DataCacheCleanAndInvalid<uint32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(gc);
    } else {
        MrgSortSrcList<T> list(all[prm.GetValue(7) / sizeof(T)], all[prm.GetValue(8) / sizeof(T)],
                               all[prm.GetValue(9) / sizeof(T)], all[prm.GetValue(10) / sizeof(T)]);
        MrgSort<T>(dst, list, info);
    }
    if (prm.GetValue(14) != 0) {
        uint16_t c[4] = {0, 0, 0, 0};
        GetMrgSortResult(c[0], c[1], c[2], c[3]);
        for (int32_t i = 0; i < 4; i++) {
            gc.SetValue(i, c[i]);
        }
        DataCacheCleanAndInvalid<uint32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(gc);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, win, outBytes / sizeof(T));
}

extern "C" __global__ __aicore__ void mrgsort_f32(GM_ADDR in, GM_ADDR out, GM_ADDR cnt, GM_ADDR p)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    MrgSortKernel<float>(in, out, cnt, p);
}
extern "C" __global__ __aicore__ void mrgsort_f16(GM_ADDR in, GM_ADDR out, GM_ADDR cnt, GM_ADDR p)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    MrgSortKernel<half>(in, out, cnt, p);
}

/*
 * ReducePairElem<SUM> with src and dst in one UB buffer: src at byte 0 (`inBytes` from `in`),
 * dst at `dstOff`; the `outBytes` from `dstOff` rounded down to 32 bytes are first loaded from
 * `out`, and copied back.
 * p (uint64): [0] form: 0 bit mask, 1 continuous mask, 2 counter mode (SetMaskCount, the count
 * in mask lo, isSetMask = false), 3 PairReduceSum with the bit mask, 4 bit mask already in the
 * register (isSetMask = false); [1] mask lo (or the continuous mask), [2] mask hi,
 * [3] repeatTime, [4] dstRepStride, [5] srcBlkStride, [6] srcRepStride, [7] dstOff (bytes),
 * [8] inBytes, [9] outBytes, [10] buffer bytes, [11] 1: no MTE2 -> V flag (a pipe hazard) and no
 * destination load.
 */
template <typename T> __aicore__ inline void PairKernel(GM_ADDR in, GM_ADDR out, GM_ADDR p)
{
    GlobalTensor<uint64_t> prm;
    prm.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t *>(p), 12);
    const bool noFlag = prm.GetValue(11) != 0;
    const uint32_t inBytes = static_cast<uint32_t>(prm.GetValue(8));
    const uint32_t outBytes = static_cast<uint32_t>(prm.GetValue(9));
    GlobalTensor<T> gi;
    GlobalTensor<T> go;
    gi.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(in), inBytes / sizeof(T));
    go.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(out), outBytes / sizeof(T));
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, static_cast<uint32_t>(prm.GetValue(10)));
    LocalTensor<T> src = buf.Get<T>();
    const uint32_t dstOff = static_cast<uint32_t>(prm.GetValue(7));
    LocalTensor<T> dst = src[dstOff / sizeof(T)];
    LocalTensor<T> win = src[(dstOff & ~31u) / sizeof(T)]; /* DataCopy needs 32 bytes */
    DataCopy(src, gi, inBytes / sizeof(T));
    if (!noFlag) {
        DataCopy(win, go, outBytes / sizeof(T));
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    const uint64_t form = prm.GetValue(0);
    uint64_t mask[2] = {prm.GetValue(1), prm.GetValue(2)};
    const int32_t rep = static_cast<int32_t>(prm.GetValue(3));
    const int32_t dRep = static_cast<int32_t>(prm.GetValue(4));
    const int32_t sBlk = static_cast<int32_t>(prm.GetValue(5));
    const int32_t sRep = static_cast<int32_t>(prm.GetValue(6));
    if (form == 0) {
        ReducePairElem<ReduceType::SUM, T>(dst, src, mask, rep, dRep, sBlk, sRep);
    } else if (form == 1) {
        ReducePairElem<ReduceType::SUM, T>(dst, src, static_cast<int32_t>(mask[0]), rep, dRep, sBlk, sRep);
    } else if (form == 2) {
        SetMaskCount();
        SetVectorMask<T, MaskMode::COUNTER>(0, mask[0]);
        ReducePairElem<ReduceType::SUM, T, T, false>(dst, src, MASK_PLACEHOLDER, rep, dRep, sBlk, sRep);
        SetMaskNorm();
        ResetMask();
    } else if (form == 3) {
        PairReduceSum<T>(dst, src, rep, mask, dRep, sBlk, sRep);
    } else {
        SetVectorMask<T>(mask[1], mask[0]);
        ReducePairElem<ReduceType::SUM, T, T, false>(dst, src, MASK_PLACEHOLDER_LIST, rep, dRep, sBlk, sRep);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, win, outBytes / sizeof(T));
}

extern "C" __global__ __aicore__ void pair_f32(GM_ADDR in, GM_ADDR out, GM_ADDR p)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    PairKernel<float>(in, out, p);
}
extern "C" __global__ __aicore__ void pair_f16(GM_ADDR in, GM_ADDR out, GM_ADDR p)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    PairKernel<half>(in, out, p);
}
