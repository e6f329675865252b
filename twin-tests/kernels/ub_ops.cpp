/*
 * Kernels for DataCopy UB -> UB and Cast with int4b_t: `ub_ops` copies a UB image of `img`
 * bytes from GM into the UB, runs one call on views of it at byte offsets the test chooses, and
 * copies the whole image back, so the test sees every byte the call wrote.
 */
// kernels: ub_ops
#include "kernel_operator.h"

using namespace AscendC;

/* Which call `ub_ops` makes (UbOpsArgs::op). */
enum UbOp : uint32_t {
    UB_COPY_COUNT = 0,  /* DataCopy(dst, src, p[0] count) */
    UB_COPY_PARAMS = 1, /* DataCopy(dst, src, {p[0] blockCount, p[1] blockLen, p[2] srcGap, p[3] dstGap}) */
    CAST_TO_I4_COUNT = 2,   /* Cast<int4b_t, half>(dst, src, mode p[5], p[0] count) */
    CAST_FROM_I4_COUNT = 3, /* Cast<half, int4b_t>(dst, src, CAST_NONE, p[0] count) */
    CAST_TO_I4_CONT = 4,    /* Cast<int4b_t, half>(dst, src, p[5], p[4] mask, p[2] repeat,
                               {p[6] dstBlk, p[7] srcBlk, p[8] dstRep, p[9] srcRep}) */
    CAST_TO_I4_BITS = 5,    /* as 4 with the bit mask `mask` */
    CAST_FROM_I4_BITS = 6,  /* Cast<half, int4b_t>, bit mask, as 5 */
    INT4_SET_GET = 7        /* dst as int4b_t: SetValue(p[0], p[1]) then GetValue(p[2]) to `out` */
};

/* Element types of the copies (UbOpsArgs::dtype). */
enum UbType : uint32_t { T_U8 = 0, T_I16, T_F16, T_F32, T_I64, T_BF16 };

struct UbOpsArgs {
    uint32_t op;
    uint32_t dtype;
    uint32_t img;    /* bytes of the UB image, a multiple of 32 */
    uint32_t dstOff; /* views: byte offset in the image and length in elements */
    uint32_t dstLen;
    uint32_t srcOff;
    uint32_t srcLen;
    uint32_t p[10];
    uint32_t mask[4]; /* mask[0] low, mask[0] high, mask[1] low, mask[1] high */
    uint32_t flags;   /* bit 0: leave out the MTE2 -> V synchronisation (a hazard) */
};

namespace {

template <typename T> __aicore__ inline LocalTensor<T> View(const LocalTensor<uint8_t> &all, uint32_t off, uint32_t len)
{
    LocalTensor<T> t = all[off].template ReinterpretCast<T>();
    t.SetSize(len);
    return t;
}

template <typename T> __aicore__ inline void Copy(const UbOpsArgs &a, const LocalTensor<uint8_t> &all)
{
    LocalTensor<T> dst = View<T>(all, a.dstOff, a.dstLen);
    LocalTensor<T> src = View<T>(all, a.srcOff, a.srcLen);
    if (a.op == UB_COPY_COUNT) {
        DataCopy(dst, src, a.p[0]);
    } else {
        DataCopyParams cp;
        cp.blockCount = static_cast<uint16_t>(a.p[0]);
        cp.blockLen = static_cast<uint16_t>(a.p[1]);
        cp.srcGap = static_cast<uint16_t>(a.p[2]);
        cp.dstGap = static_cast<uint16_t>(a.p[3]);
        DataCopy(dst, src, cp);
    }
}

__aicore__ inline int32_t CastOp(const UbOpsArgs &a, const LocalTensor<uint8_t> &all)
{
    const uint64_t mask[2] = {static_cast<uint64_t>(a.mask[0]) | (static_cast<uint64_t>(a.mask[1]) << 32),
                              static_cast<uint64_t>(a.mask[2]) | (static_cast<uint64_t>(a.mask[3]) << 32)};
    const RoundMode mode = static_cast<RoundMode>(a.p[5]);
    const UnaryRepeatParams rp(static_cast<uint16_t>(a.p[6]), static_cast<uint16_t>(a.p[7]),
                               static_cast<uint8_t>(a.p[8]), static_cast<uint8_t>(a.p[9]));
    LocalTensor<int8_t> d8 = View<int8_t>(all, a.dstOff, a.dstLen / 2);
    LocalTensor<int8_t> s8 = View<int8_t>(all, a.srcOff, a.srcLen / 2);
    LocalTensor<int4b_t> d4 = d8.ReinterpretCast<int4b_t>();
    LocalTensor<int4b_t> s4 = s8.ReinterpretCast<int4b_t>();
    LocalTensor<half> dh = View<half>(all, a.dstOff, a.dstLen);
    LocalTensor<half> sh = View<half>(all, a.srcOff, a.srcLen);
    switch (a.op) {
    case CAST_TO_I4_COUNT:
        Cast(d4, sh, mode, a.p[0]);
        break;
    case CAST_FROM_I4_COUNT:
        Cast(dh, s4, RoundMode::CAST_NONE, a.p[0]);
        break;
    case CAST_TO_I4_CONT:
        Cast<int4b_t, half>(d4, sh, mode, static_cast<uint64_t>(a.p[4]), static_cast<uint8_t>(a.p[2]), rp);
        break;
    case CAST_TO_I4_BITS:
        Cast<int4b_t, half>(d4, sh, mode, mask, static_cast<uint8_t>(a.p[2]), rp);
        break;
    case CAST_FROM_I4_BITS:
        Cast<half, int4b_t>(dh, s4, RoundMode::CAST_NONE, mask, static_cast<uint8_t>(a.p[2]), rp);
        break;
    case INT4_SET_GET: {
        PipeBarrier<PIPE_ALL>();
        d4.SetValue(a.p[0], int4b_t(static_cast<int32_t>(a.p[1])));
        return static_cast<int32_t>(d4.GetValue(a.p[2]));
    }
    default:
        break;
    }
    return 0;
}

} // namespace

extern "C" __global__ __aicore__ void ub_ops(GM_ADDR image, GM_ADDR out, GM_ADDR val, UbOpsArgs a)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<uint8_t> inGm;
    GlobalTensor<uint8_t> outGm;
    GlobalTensor<int32_t> valGm;
    inGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(image), a.img);
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(out), a.img);
    valGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(val), 1);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, a.img);
    LocalTensor<uint8_t> all = buf.Get<uint8_t>();
    DataCopy(all, inGm, a.img);
    if ((a.flags & 1u) == 0) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    int32_t v = 0;
    if (a.op <= UB_COPY_PARAMS) {
        switch (a.dtype) {
        case T_U8:
            Copy<uint8_t>(a, all);
            break;
        case T_I16:
            Copy<int16_t>(a, all);
            break;
        case T_F16:
            Copy<half>(a, all);
            break;
        case T_F32:
            Copy<float>(a, all);
            break;
        case T_I64:
            Copy<int64_t>(a, all);
            break;
        default:
            Copy<bfloat16_t>(a, all);
            break;
        }
    } else {
        v = CastOp(a, all);
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(outGm, all, a.img);
    valGm.SetValue(0, v);
    PipeBarrier<PIPE_ALL>();
}
