/*
 * Kernels for the data-rearrangement APIs (Gather, Gatherb, GatherMask, Transpose,
 * TransDataTo5HD): `rearrange` copies a UB image of `img` bytes from GM into the UB, runs one API
 * call on views of it at byte offsets the test chooses (so operands can be misaligned, overlap,
 * or run off their tensor), and copies the whole image back, so the test sees every byte the call
 * wrote, not only the destination. GatherMask's rsvdCnt goes to `cnt`.
 */
// kernels: rearrange
#include "kernel_operator.h"

using namespace AscendC;

/* Which call `rearrange` makes (RearrangeArgs::op). */
enum RearrangeOp : uint32_t {
    GATHER_COUNT = 0,    /* Gather(dst, src, aux, p[0] base, p[1] count) */
    GATHER_BITS = 1,     /* Gather(dst, src, aux, p[0], mask[], p[2] repeat, p[3] dstRepStride) */
    GATHER_CONT = 2,     /* Gather(dst, src, aux, p[0], p[4] mask, p[2], p[3]) */
    GATHERB = 3,         /* Gatherb(dst, src, aux, p[2] repeat, {p[5] dstBlk, p[3] dstRep}) */
    GATHER_MASK_USER = 4, /* GatherMask(dst, src, aux, p[6] reduceMode, p[4] mask, {p[7], p[2], p[3], p[5]}) */
    GATHER_MASK_BUILTIN = 5, /* as 4 with pattern p[1] */
    TRANSPOSE = 6,       /* Transpose(dst, src) */
    TRANSPOSE_EXT = 7,   /* Transpose(dst, src, tmp, {p[1] n, p[2] c, p[3] h, p[4] w, p[0] type}) */
    TRANS_5HD = 8        /* TransDataTo5HD, form p[5] (0 addresses, 1 LocalTensor lists, 2 address tensors):
                            dstHighHalf p[0], srcHighHalf p[1], repeatTimes p[2], dstRepStride p[3],
                            srcRepStride p[4]; the 16 + 16 block offsets in the image come from `lists` */
};

/* Element types (RearrangeArgs::dtype). */
enum RearrangeType : uint32_t { U16 = 0, U32, F16, F32, I16, I32, BF16, U8, I8 };

struct RearrangeArgs {
    uint32_t op;
    uint32_t dtype;
    uint32_t img;    /* bytes of the UB image, a multiple of 32 */
    uint32_t dstOff; /* views: byte offset in the image and length in elements */
    uint32_t dstLen;
    uint32_t srcOff;
    uint32_t srcLen;
    uint32_t auxOff; /* offsets / pattern / address tensors */
    uint32_t auxLen;
    uint32_t tmpOff; /* Transpose's sharedTmpBuffer (bytes) */
    uint32_t tmpLen;
    uint32_t p[8];
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

template <typename T> struct Is {
    static constexpr bool gather = !std::is_same<T, uint8_t>::value && !std::is_same<T, int8_t>::value;
    static constexpr bool gatherb = std::is_same<T, uint16_t>::value || std::is_same<T, uint32_t>::value;
    static constexpr bool b16 = std::is_same<T, uint16_t>::value || std::is_same<T, int16_t>::value ||
                                std::is_same<T, half>::value;
    static constexpr bool fivehd = !std::is_same<T, bfloat16_t>::value;
};

template <typename T>
__aicore__ inline uint64_t Run(const RearrangeArgs &a, const LocalTensor<uint8_t> &all, __gm__ uint64_t *lists)
{
    const uint64_t mask64 = static_cast<uint64_t>(a.p[4]);
    const uint64_t mask[2] = {static_cast<uint64_t>(a.mask[0]) | (static_cast<uint64_t>(a.mask[1]) << 32),
                              static_cast<uint64_t>(a.mask[2]) | (static_cast<uint64_t>(a.mask[3]) << 32)};
    LocalTensor<T> dst = View<T>(all, a.dstOff, a.dstLen);
    LocalTensor<T> src = View<T>(all, a.srcOff, a.srcLen);
    uint64_t cnt = 0;
    if constexpr (Is<T>::gather) {
        LocalTensor<uint32_t> offs = View<uint32_t>(all, a.auxOff, a.auxLen);
        using U = typename std::conditional<sizeof(T) == 2, uint16_t, uint32_t>::type;
        const GatherMaskParams gm(static_cast<uint8_t>(a.p[7]), static_cast<uint16_t>(a.p[2]),
                                  static_cast<uint16_t>(a.p[3]), static_cast<uint8_t>(a.p[5]));
        switch (a.op) {
        case GATHER_COUNT:
            Gather(dst, src, offs, a.p[0], a.p[1]);
            break;
        case GATHER_BITS:
            Gather(dst, src, offs, a.p[0], mask, static_cast<uint8_t>(a.p[2]), static_cast<uint16_t>(a.p[3]));
            break;
        case GATHER_CONT:
            Gather(dst, src, offs, a.p[0], mask64, static_cast<uint8_t>(a.p[2]), static_cast<uint16_t>(a.p[3]));
            break;
        case GATHER_MASK_USER:
            GatherMask(dst, src, View<U>(all, a.auxOff, a.auxLen), a.p[6] != 0, a.p[4], gm, cnt);
            break;
        case GATHER_MASK_BUILTIN:
            GatherMask(dst, src, static_cast<uint8_t>(a.p[1]), a.p[6] != 0, a.p[4], gm, cnt);
            break;
        default:
            break;
        }
        if constexpr (Is<T>::gatherb) {
            if (a.op == GATHERB) {
                GatherRepeatParams rp(static_cast<uint8_t>(a.p[5]), static_cast<uint8_t>(a.p[3]));
                Gatherb(dst, src, offs, static_cast<uint8_t>(a.p[2]), rp);
            }
        }
    }
    if constexpr (Is<T>::b16) {
        if (a.op == TRANSPOSE) {
            Transpose(dst, src);
        }
    }
    if constexpr (Is<T>::fivehd) {
        if (a.op == TRANSPOSE_EXT) {
            TransposeParamsExt tp(static_cast<uint16_t>(a.p[1]), static_cast<uint16_t>(a.p[2]),
                                  static_cast<uint16_t>(a.p[3]), static_cast<uint16_t>(a.p[4]),
                                  static_cast<TransposeType>(a.p[0]));
            Transpose(dst, src, View<uint8_t>(all, a.tmpOff, a.tmpLen), tp);
        }
        if (a.op == TRANS_5HD) {
            TransDataTo5HDParams tp(a.p[0] != 0, a.p[1] != 0, static_cast<uint8_t>(a.p[2]),
                                    static_cast<uint16_t>(a.p[3]), static_cast<uint16_t>(a.p[4]));
            GlobalTensor<uint64_t> lg;
            lg.SetGlobalBuffer(lists);
            const uint64_t base = (uint64_t)(all.GetPhyAddr()); /* a pointer in the real headers */
            if (a.p[5] == 0) {
                uint64_t d[NCHW_CONV_ADDR_LIST_SIZE];
                uint64_t s[NCHW_CONV_ADDR_LIST_SIZE];
                for (uint32_t i = 0; i < NCHW_CONV_ADDR_LIST_SIZE; i++) {
                    d[i] = base + lg.GetValue(i);
                    s[i] = base + lg.GetValue(16 + i);
                }
                TransDataTo5HD<T>(d, s, tp);
            } else if (a.p[5] == 1) {
                LocalTensor<T> d[NCHW_CONV_ADDR_LIST_SIZE];
                LocalTensor<T> s[NCHW_CONV_ADDR_LIST_SIZE];
                for (uint32_t i = 0; i < NCHW_CONV_ADDR_LIST_SIZE; i++) {
                    const uint32_t dOff = static_cast<uint32_t>(lg.GetValue(i));
                    const uint32_t sOff = static_cast<uint32_t>(lg.GetValue(16 + i));
                    d[i] = View<T>(all, dOff, (a.img - dOff) / sizeof(T));
                    s[i] = View<T>(all, sOff, (a.img - sOff) / sizeof(T));
                }
                TransDataTo5HD<T>(d, s, tp);
            } else {
                LocalTensor<uint64_t> d = View<uint64_t>(all, a.auxOff, 16);
                LocalTensor<uint64_t> s = View<uint64_t>(all, a.auxOff + 128, 16);
                for (uint32_t i = 0; i < NCHW_CONV_ADDR_LIST_SIZE; i++) {
                    d.SetValue(i, base + lg.GetValue(i));
                    s.SetValue(i, base + lg.GetValue(16 + i));
                }
                TransDataTo5HD<T>(d, s, tp);
            }
        }
    }
    return cnt;
}

} // namespace

extern "C" __global__ __aicore__ void rearrange(GM_ADDR image, GM_ADDR out, GM_ADDR cnt, GM_ADDR lists,
                                                RearrangeArgs a)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<uint8_t> inGm;
    GlobalTensor<uint8_t> outGm;
    GlobalTensor<uint64_t> cntGm;
    inGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(image), a.img);
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(out), a.img);
    cntGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t *>(cnt), 1);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, a.img);
    LocalTensor<uint8_t> all = buf.Get<uint8_t>();
    DataCopy(all, inGm, a.img);
    if ((a.flags & 1u) == 0) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    __gm__ uint64_t *l = reinterpret_cast<__gm__ uint64_t *>(lists);
    uint64_t n = 0;
    switch (a.dtype) {
    case U16:
        n = Run<uint16_t>(a, all, l);
        break;
    case U32:
        n = Run<uint32_t>(a, all, l);
        break;
    case F16:
        n = Run<half>(a, all, l);
        break;
    case F32:
        n = Run<float>(a, all, l);
        break;
    case I16:
        n = Run<int16_t>(a, all, l);
        break;
    case I32:
        n = Run<int32_t>(a, all, l);
        break;
    case BF16:
        n = Run<bfloat16_t>(a, all, l);
        break;
    case U8:
        n = Run<uint8_t>(a, all, l);
        break;
    default:
        n = Run<int8_t>(a, all, l);
        break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(outGm, all, a.img);
    cntGm.SetValue(0, n);
}
