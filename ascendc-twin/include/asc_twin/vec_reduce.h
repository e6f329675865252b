/*
 * Reductions: ReduceSum / ReduceMax / ReduceMin (a whole range to one value), WholeReduceSum /
 * Max / Min (= ReduceRepeat: one result per repeat) and BlockReduceSum / Max / Min
 * (= ReduceDataBlock: one result per 32-byte block), half and float.
 *
 * Orders of summation (AscendC docs, "key features"): inside a repeat or a block, a binary tree
 * of adjacent pairs; ReduceSum's count form adds the repeats' sums one after another; its mask
 * form reduces the repeats' sums with the same tree, a repeat's worth of partial sums at a time.
 * Every addition is rounded to T. Disabled lanes count as +0 in a sum.
 * Max / Min: ties give the smallest index (docs). Assumed (docs silent): a NaN wins (the first
 * NaN and its index), as Max/Min do in vec_math.h; WholeReduce writes nothing for a repeat
 * with no enabled lane (as BlockReduce does for such a block on A2, documented).
 * Index placement (docs): ReduceMax/Min store the index's integer bits in dst[1] (uint16_t for
 * half, uint32_t for float); WholeReduce stores them per ReduceOrder (ORDER_ONLY_INDEX always as
 * uint32_t).
 * The shared temporary buffer of ReduceMax/Min (and of ReduceSum's mask form) is written by the
 * NPU: the twin writes partial results there too, and checks it is at least the size the docs
 * give, so a kernel that keeps data in it, or gives too small a one, fails here as it would there.
 */
#ifndef ASC_TWIN_VEC_REDUCE_H
#define ASC_TWIN_VEC_REDUCE_H

#include "vec_base.h"
#include "vec_math.h"

#include <vector>

#define ASC_TWIN_COMMA ,

namespace asc_twin {
namespace vec {

enum class Red { SUM, MAX, MIN };

template <typename T> constexpr bool RedType() { return AscendC::Std::is_one_of_v<T, half, float>; }

/* Pairwise tree sum of v[0..n) (n a power of two), each addition rounded to T. */
template <typename T> inline T TreeSum(T *v, uint32_t n)
{
    while (n > 1) {
        for (uint32_t i = 0; i < n / 2; i++) {
            v[i] = OpAdd(v[2 * i], v[2 * i + 1]);
        }
        n /= 2;
    }
    return v[0];
}

/* Whether `x` (at index i) replaces `best` for a max (min) reduction. */
template <typename T> inline bool Better(Red kind, T x, T best)
{
    const float a = static_cast<float>(Num<T>::In(x)), b = static_cast<float>(Num<T>::In(best));
    if (b != b) return false;
    if (a != a) return true;
    return kind == Red::MAX ? a > b : a < b;
}

/* Reduces the enabled lanes [l0, l1) of repeat r of `o`. Returns false when none is enabled. */
template <typename T>
inline bool ReduceRange(Red kind, const Opnd &o, const Lanes &lanes, uint32_t r, uint32_t l0, uint32_t l1, T &value,
                        uint32_t &index)
{
    if (kind == Red::SUM) {
        T v[128];
        bool any = false;
        uint32_t n = 1;
        while (n < l1 - l0) {
            n *= 2;
        }
        for (uint32_t l = l0; l < l0 + n; l++) {
            if (l < l1 && lanes.Active(r, l)) {
                std::memcpy(&v[l - l0], o.At(r, l), sizeof(T));
                any = true;
            } else {
                v[l - l0] = Num<T>::Out(0.0f);
            }
        }
        value = TreeSum(v, n);
        index = 0;
        return any;
    }
    bool any = false;
    for (uint32_t l = l0; l < l1; l++) {
        if (!lanes.Active(r, l)) {
            continue;
        }
        T x;
        std::memcpy(&x, o.At(r, l), sizeof x);
        if (!any || Better(kind, x, value)) {
            value = x;
            index = l;
            any = true;
        }
    }
    return any;
}

/* The integer bits of an index in a T slot: uint16_t for half, uint32_t for float. */
template <typename T> inline T IndexSlot(uint32_t index)
{
    T slot;
    if constexpr (sizeof(T) == 2) {
        const uint16_t i = static_cast<uint16_t>(index);
        std::memcpy(&slot, &i, 2);
    } else {
        std::memcpy(&slot, &index, 4);
    }
    return slot;
}

inline void Out(Footprint &fp, const char *api, uint8_t *p, uint64_t bytes, uint8_t *base, uint64_t cap)
{
    if (static_cast<uint64_t>(p - base) + bytes > cap) {
        Fail(api, "results run past the end of the destination LocalTensor", static_cast<uint64_t>(p - base) + bytes,
             cap);
    }
    fp.Add(2, p, bytes);
}

/* Work-buffer elements ReduceMax/Min need for `reps` first-round repeats (the docs' formula). */
template <typename T> inline uint64_t MaxMinWork(uint64_t reps, bool calIndex)
{
    const uint64_t epb = 32 / sizeof(T), epr = 256 / sizeof(T);
    auto up = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
    if (!calIndex) {
        return up(reps * 2, epb) * epb;
    }
    const uint64_t it1 = reps * 2;
    const uint64_t it2Start = up(it1, epb) * epb;
    const uint64_t it2 = up(it1, epr) * 2;
    const uint64_t it2End = up(it2, epb) * epb;
    uint64_t size = it2Start + it2End;
    if (it2 > 2) {
        const uint64_t it3 = up(it2, epr) * 2;
        size += up(it3, epb) * epb;
    }
    return size;
}

/* A SetFlag / WaitFlag pair the AscendC implementation issues itself (on a free id). */
inline void ImplFlag(AscendC::HardEvent e)
{
    const int32_t id = asc_twin_event(ASC_TWIN_FETCH_EVENT, static_cast<uint32_t>(e), 0);
    asc_twin_check(id < 0 ? ASC_TWIN_FAULT : ASC_TWIN_OK);
    asc_twin_check(asc_twin_pipe(ASC_TWIN_SET_FLAG, static_cast<uint32_t>(e), id));
    asc_twin_check(asc_twin_pipe(ASC_TWIN_WAIT_FLAG, static_cast<uint32_t>(e), id));
}

/*
 * ReduceSum / ReduceMax / ReduceMin over `lanes` of `src` (rep stride `srcRepStride`).
 * `countForm`: the level-2 form (repeat sums added in order; no work buffer for sums).
 */
template <typename T>
inline void WholeRange(const char *api, Red kind, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                       const AscendC::LocalTensor<T> &work, const Lanes &lanes, uint32_t srcRepStride, bool calIndex,
                       bool countForm)
{
    if (lanes.repeats == 0) {
        return;
    }
    const uint32_t per = lanes.perRep;
    const uint32_t epb = 32 / sizeof(T);
    const Opnd s = Op(src, 1, srcRepStride, false);
    T *d = Access::Ptr(dst);
    T *w = Access::Ptr(work);
    /* Work buffer: what the NPU's algorithm uses, at least what the docs' formula asks. */
    uint64_t workNeed = 0;
    uint64_t workWrite = 0;
    if (kind == Red::SUM) {
        if (!countForm) {
            workNeed = (static_cast<uint64_t>(lanes.repeats) + epb - 1) / epb * epb;
            workWrite = lanes.repeats;
        }
    } else {
        const uint64_t first = countForm ? lanes.count / per : lanes.repeats;
        workNeed = MaxMinWork<T>(first, calIndex);
        workWrite = static_cast<uint64_t>(lanes.repeats) * 2;
    }
    if (workNeed > work.GetSize()) {
        Fail(api, "sharedTmpBuffer is smaller than the documented size for this call", workNeed * sizeof(T),
             static_cast<uint64_t>(work.GetSize()) * sizeof(T));
    }
    /* A2 writes the whole documented work area (later rounds past the first's pairs), except
     * a single-repeat max/min with the index, which goes straight to dst. */
    if (kind != Red::SUM && calIndex && lanes.repeats == 1 && !countForm) {
        workNeed = 0;
    }
    workWrite = workWrite < workNeed ? workWrite : workNeed;
    const uint64_t dstBytes = (kind != Red::SUM && calIndex ? 2 : 1) * sizeof(T);
    if (static_cast<uint64_t>(dst.GetSize()) * sizeof(T) < dstBytes) {
        Fail(api, "the destination is too small for the result", dstBytes, static_cast<uint64_t>(dst.GetSize()) * sizeof(T));
    }
    {
        Footprint fp(api);
        fp.Operand(s, lanes);
        fp.Flush();
    }
    std::vector<T> wv;
    wv.reserve(workWrite);

    T acc = Num<T>::Out(0.0f);
    uint32_t accIdx = 0;
    bool have = false;
    std::vector<T> partial((lanes.repeats + per - 1) / per + 1);
    uint32_t np = 0;
    T pending[128];
    uint32_t npend = 0;
    bool anyLane = false;
    auto flushPartials = [&](bool last) {
        /* Mask form of ReduceSum: partial sums a repeat's worth at a time, tree-reduced. */
        while (npend == per || (last && npend > 0)) {
            uint32_t n = 1;
            while (n < npend) {
                n *= 2;
            }
            for (uint32_t i = npend; i < n; i++) {
                pending[i] = Num<T>::Out(0.0f);
            }
            partial[np++] = TreeSum(pending, n);
            npend = 0;
        }
    };
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        T v{};
        uint32_t idx = 0;
        const bool any = ReduceRange<T>(kind, s, lanes, r, 0, per, v, idx);
        anyLane = anyLane || any;
        if (wv.size() < workWrite) {
            wv.push_back(v);
            if (kind != Red::SUM && wv.size() < workWrite) {
                wv.push_back(IndexSlot<T>(idx));
            }
        }
        if (kind == Red::SUM) {
            if (countForm) {
                acc = have ? OpAdd(acc, v) : v;
                have = true;
            } else {
                pending[npend++] = v;
                flushPartials(false);
            }
            continue;
        }
        if (any && (!have || Better(kind, v, acc))) {
            acc = v;
            accIdx = static_cast<uint32_t>(static_cast<uint64_t>(r) * srcRepStride * epb + idx);
            have = true;
        }
    }
    if (kind == Red::SUM && !countForm) {
        flushPartials(true);
        /* Further rounds until one value is left. */
        while (np > 1) {
            uint32_t out = 0;
            for (uint32_t i = 0; i < np; i += per) {
                const uint32_t k = np - i < per ? np - i : per;
                uint32_t n = 1;
                while (n < k) {
                    n *= 2;
                }
                T v[128];
                for (uint32_t j = 0; j < n; j++) {
                    v[j] = j < k ? partial[i + j] : Num<T>::Out(0.0f);
                }
                partial[out++] = TreeSum(v, n);
            }
            np = out;
        }
        acc = partial[0];
        have = true;
    }
    if (!anyLane) {
        return; /* no lane enabled: a no-op (docs) */
    }
    /* What the NPU writes: the work area (partial results, then its later rounds, shown here
     * as all-ones bytes) and the result. */
    Footprint fw(api);
    fw.Add(2, reinterpret_cast<uint8_t *>(w), workNeed * sizeof(T));
    const bool scalarStore = kind == Red::SUM && countForm;
    if (!scalarStore) {
        fw.Add(2, reinterpret_cast<uint8_t *>(d), dstBytes);
    }
    fw.Flush();
    for (uint64_t i = 0; i < workNeed; i++) {
        if (i < wv.size()) {
            w[i] = wv[i];
        } else {
            std::memset(&w[i], 0xff, sizeof(T));
        }
    }
    if (scalarStore) {
        /* The count form of ReduceSum on A2: the vector unit leaves the sum in its accumulator
         * register and the implementation stores it with the scalar unit, between its own
         * V_S and S_V / S_MTE3 flags (so the kernel may read dst[0] at once). */
        uint64_t bits = 0;
        std::memcpy(&bits, &acc, sizeof(T));
        Regs().acc = bits;
        ImplFlag(AscendC::HardEvent::V_S);
        asc_twin_check(asc_twin_ub_store(reinterpret_cast<const uint8_t *>(d), &acc, sizeof(T)));
        d[0] = acc;
        ImplFlag(AscendC::HardEvent::S_V);
        ImplFlag(AscendC::HardEvent::S_MTE3);
        return;
    }
    d[0] = acc;
    if (kind != Red::SUM && calIndex) {
        d[1] = IndexSlot<T>(accIdx);
    }
}

/* WholeReduce (ReduceRepeat): one result per repeat. */
template <typename T>
inline void PerRepeat(const char *api, Red kind, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                      const Lanes &lanes, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                      AscendC::ReduceOrder order)
{
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) {
        Fail(api, "strides must be in [0, 65535]", 0, 65535);
    }
    const Opnd s = Op(src, static_cast<uint32_t>(srcBlkStride), static_cast<uint32_t>(srcRepStride), false);
    using O = AscendC::ReduceOrder;
    uint32_t unit = sizeof(T);
    if (kind != Red::SUM) {
        unit = order == O::ORDER_ONLY_VALUE ? sizeof(T) : (order == O::ORDER_ONLY_INDEX ? 4 : 2 * sizeof(T));
    }
    uint8_t *base = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    if (reinterpret_cast<uintptr_t>(base) % unit != 0) {
        Fail(api, "destination not aligned to one repeat's result", reinterpret_cast<uintptr_t>(base) % unit, unit);
    }
    const uint64_t cap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    Footprint fp(api);
    fp.Operand(s, lanes);
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        bool any = false;
        for (uint32_t l = 0; l < lanes.perRep && !any; l++) {
            any = lanes.Active(r, l);
        }
        if (any) { /* a repeat with no enabled lane writes nothing */
            Out(fp, api, base + static_cast<uint64_t>(r) * dstRepStride * unit, unit, base, cap);
        }
    }
    fp.Flush();
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        T v{};
        uint32_t idx = 0;
        if (!ReduceRange<T>(kind, s, lanes, r, 0, lanes.perRep, v, idx)) {
            continue;
        }
        uint8_t *p = base + static_cast<uint64_t>(r) * dstRepStride * unit;
        const T is = IndexSlot<T>(idx);
        if (kind == Red::SUM || order == O::ORDER_ONLY_VALUE) {
            std::memcpy(p, &v, sizeof(T));
        } else if (order == O::ORDER_VALUE_INDEX) {
            std::memcpy(p, &v, sizeof(T));
            std::memcpy(p + sizeof(T), &is, sizeof(T));
        } else if (order == O::ORDER_INDEX_VALUE) {
            std::memcpy(p, &is, sizeof(T));
            std::memcpy(p + sizeof(T), &v, sizeof(T));
        } else {
            std::memcpy(p, &idx, 4);
        }
    }
}

/* BlockReduce (ReduceDataBlock): one result per 32-byte block, 8 per repeat. */
template <typename T>
inline void PerBlock(const char *api, Red kind, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                     const Lanes &lanes, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride)
{
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) {
        Fail(api, "strides must be in [0, 65535]", 0, 65535);
    }
    const Opnd s = Op(src, static_cast<uint32_t>(srcBlkStride), static_cast<uint32_t>(srcRepStride), false);
    const uint32_t epb = 32 / sizeof(T);
    const uint64_t repOut = 8 * sizeof(T);
    uint8_t *base = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    if (reinterpret_cast<uintptr_t>(base) % repOut != 0) {
        Fail(api, "destination must be aligned to 8 results (16 bytes for half, 32 for float)",
             reinterpret_cast<uintptr_t>(base) % repOut, repOut);
    }
    const uint64_t cap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    Footprint fp(api);
    fp.Operand(s, lanes);
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t b = 0; b < 8; b++) {
            bool any = false;
            for (uint32_t l = b * epb; l < (b + 1) * epb; l++) {
                any = any || lanes.Active(r, l);
            }
            if (any) {
                Out(fp, api, base + r * static_cast<uint64_t>(dstRepStride) * repOut + b * sizeof(T), sizeof(T), base,
                    cap);
            }
        }
    }
    fp.Flush();
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t b = 0; b < 8; b++) {
            T v{};
            uint32_t idx = 0;
            if (ReduceRange<T>(kind, s, lanes, r, b * epb, (b + 1) * epb, v, idx)) {
                std::memcpy(base + r * static_cast<uint64_t>(dstRepStride) * repOut + b * sizeof(T), &v, sizeof(T));
            }
        }
    }
}

/* ReduceMax/ReduceMin (every form) and ReduceSum's mask forms leave the mask register as their
 * last internal step set it (A2 implementation), which the docs do not define. The twin
 * assumes normal mode afterwards and makes the next isSetMask = false instruction an error. */
inline void MaskLeftUndefined()
{
    AscTwinVecRegs &reg = Regs();
    reg.counter = 0;
    reg.mask_undefined = 1;
}

inline void RedLanes(const char *api, int32_t repeatTime)
{
    if (repeatTime < 0) {
        Fail(api, "repeatTime is negative", static_cast<uint64_t>(static_cast<int64_t>(repeatTime)), 0);
    }
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

/* ---- ReduceSum / ReduceMax / ReduceMin ---- */

template <typename T, bool isSetMask = true>
__aicore__ inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                 const LocalTensor<T> &sharedTmpBuffer, const int32_t count)
{
    static_assert(asc_twin::vec::RedType<T>(), "ReduceSum on Atlas A2 supports half and float");
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T));
    Lanes lanes;
    if (isSetMask) {
        CheckCount("ReduceSum", count, src.GetSize(), false);
        lanes = CountLanes("ReduceSum", count, per);
    } else {
        lanes = BitLanes<false>("ReduceSum", MASK_PLACEHOLDER_LIST, 1, per);
    }
    WholeRange("ReduceSum", Red::SUM, dst, src, sharedTmpBuffer, lanes, 8, false, true);
    if (isSetMask) {
        AfterLevel2(); /* with isSetMask = false the A2 implementation leaves mode and mask alone */
    }
}

#define ASC_TWIN_REDUCE_L0(NAME, KIND, IDXP, IDXA)                                                                    \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                 \
                                const LocalTensor<T> &sharedTmpBuffer, const uint64_t mask[],                         \
                                const int32_t repeatTime, const int32_t srcRepStride IDXP)                            \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        RedLanes(#NAME, repeatTime);                                                                                  \
        uint64_t m[2] = {mask[0], mask[1]};                                                                           \
        Lanes lanes = BitLanes<true>(#NAME, m, 0, LanesPerRepeat(sizeof(T)));                                         \
        lanes.repeats = static_cast<uint32_t>(repeatTime);                                                            \
        WholeRange(#NAME, KIND, dst, src, sharedTmpBuffer, lanes, static_cast<uint32_t>(srcRepStride), IDXA, false);  \
        MaskLeftUndefined();                                                                                          \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                 \
                                const LocalTensor<T> &sharedTmpBuffer, const int32_t mask, const int32_t repeatTime,  \
                                const int32_t srcRepStride IDXP)                                                      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        RedLanes(#NAME, repeatTime);                                                                                  \
        Lanes lanes = ContLanes<true>(#NAME, mask < 0 ? 0 : static_cast<uint64_t>(mask), 0, LanesPerRepeat(sizeof(T))); \
        lanes.repeats = static_cast<uint32_t>(repeatTime);                                                            \
        WholeRange(#NAME, KIND, dst, src, sharedTmpBuffer, lanes, static_cast<uint32_t>(srcRepStride), IDXA, false);  \
        MaskLeftUndefined();                                                                                          \
    }

ASC_TWIN_REDUCE_L0(ReduceSum, Red::SUM, , false)
ASC_TWIN_REDUCE_L0(ReduceMax, Red::MAX, ASC_TWIN_COMMA bool calIndex = 0, calIndex)
ASC_TWIN_REDUCE_L0(ReduceMin, Red::MIN, ASC_TWIN_COMMA bool calIndex = 0, calIndex)

#define ASC_TWIN_REDUCE_L2(NAME, KIND)                                                                                \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                 \
                                const LocalTensor<T> &sharedTmpBuffer, const int32_t count, bool calIndex = 0)        \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        CheckCount(#NAME, count, src.GetSize(), false);                                                               \
        const Lanes lanes = CountLanes(#NAME, count, LanesPerRepeat(sizeof(T)));                                      \
        WholeRange(#NAME, KIND, dst, src, sharedTmpBuffer, lanes, 8, calIndex, true);                                 \
        MaskLeftUndefined();                                                                                          \
    }
ASC_TWIN_REDUCE_L2(ReduceMax, Red::MAX)
ASC_TWIN_REDUCE_L2(ReduceMin, Red::MIN)

/* ---- WholeReduceSum / Max / Min (ReduceRepeat) ---- */

#define ASC_TWIN_WHOLE(NAME, KIND, ORDP, ORDA)                                                                        \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],          \
                                const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,     \
                                const int32_t srcRepStride ORDP)                                                      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        RedLanes(#NAME, repeatTime);                                                                                  \
        CheckRepeat(#NAME, static_cast<uint32_t>(repeatTime));                                                        \
        const Lanes lanes = BitLanes<isSetMask>(#NAME, mask, static_cast<uint32_t>(repeatTime),                       \
                                                LanesPerRepeat(sizeof(T)));                                           \
        PerRepeat(#NAME, KIND, dst, src, lanes, dstRepStride, srcBlkStride, srcRepStride, ORDA);                      \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,             \
                                const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,     \
                                const int32_t srcRepStride ORDP)                                                      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        RedLanes(#NAME, repeatTime);                                                                                  \
        CheckRepeat(#NAME, static_cast<uint32_t>(repeatTime));                                                        \
        const Lanes lanes = ContLanes<isSetMask>(#NAME, mask < 0 ? 0 : static_cast<uint64_t>(mask),                   \
                                                 static_cast<uint32_t>(repeatTime), LanesPerRepeat(sizeof(T)));       \
        PerRepeat(#NAME, KIND, dst, src, lanes, dstRepStride, srcBlkStride, srcRepStride, ORDA);                      \
    }

ASC_TWIN_WHOLE(WholeReduceSum, Red::SUM, , ReduceOrder::ORDER_ONLY_VALUE)
ASC_TWIN_WHOLE(WholeReduceMax, Red::MAX, ASC_TWIN_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
ASC_TWIN_WHOLE(WholeReduceMin, Red::MIN, ASC_TWIN_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)

/* ---- BlockReduceSum / Max / Min (ReduceDataBlock; note repeatTime before mask) ---- */

#define ASC_TWIN_BLOCK(NAME, KIND)                                                                                    \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,       \
                                const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,        \
                                const int32_t srcRepStride)                                                           \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        RedLanes(#NAME, repeatTime);                                                                                  \
        CheckRepeat(#NAME, static_cast<uint32_t>(repeatTime));                                                        \
        const Lanes lanes = BitLanes<isSetMask>(#NAME, mask, static_cast<uint32_t>(repeatTime),                       \
                                                LanesPerRepeat(sizeof(T)));                                           \
        PerBlock(#NAME, KIND, dst, src, lanes, dstRepStride, srcBlkStride, srcRepStride);                             \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,       \
                                const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,           \
                                const int32_t srcRepStride)                                                           \
    {                                                                                                                 \
        static_assert(asc_twin::vec::RedType<T>(), #NAME " on Atlas A2 supports half and float");                     \
        using namespace asc_twin::vec;                                                                                \
        RedLanes(#NAME, repeatTime);                                                                                  \
        CheckRepeat(#NAME, static_cast<uint32_t>(repeatTime));                                                        \
        const Lanes lanes = ContLanes<isSetMask>(#NAME, mask < 0 ? 0 : static_cast<uint64_t>(mask),                   \
                                                 static_cast<uint32_t>(repeatTime), LanesPerRepeat(sizeof(T)));       \
        PerBlock(#NAME, KIND, dst, src, lanes, dstRepStride, srcBlkStride, srcRepStride);                             \
    }

ASC_TWIN_BLOCK(BlockReduceSum, Red::SUM)
ASC_TWIN_BLOCK(BlockReduceMax, Red::MAX)
ASC_TWIN_BLOCK(BlockReduceMin, Red::MIN)

/* ---- the 9.1 names: ReduceRepeat / ReduceDataBlock (mask before repeatTime) ---- */

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true, typename M>
__aicore__ inline void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, M mask, const int32_t repeatTime,
                                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                                    ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX)
{
    static_assert(std::is_same<T, U>::value, "ReduceRepeat on Atlas A2: the destination type is the source type");
    static_assert(reduceType != ReduceType::NONE, "ReduceRepeat needs SUM, MAX or MIN");
    if constexpr (reduceType == ReduceType::SUM) {
        (void)order;
        WholeReduceSum<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
    } else if constexpr (reduceType == ReduceType::MAX) {
        WholeReduceMax<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);
    } else {
        WholeReduceMin<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, order);
    }
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true, typename M>
__aicore__ inline void ReduceDataBlock(const LocalTensor<T> &dst, const LocalTensor<U> &src, M mask,
                                       const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                       const int32_t srcRepStride)
{
    static_assert(std::is_same<T, U>::value, "ReduceDataBlock on Atlas A2: the destination type is the source type");
    static_assert(reduceType != ReduceType::NONE, "ReduceDataBlock needs SUM, MAX or MIN");
    if constexpr (reduceType == ReduceType::SUM) {
        BlockReduceSum<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride);
    } else if constexpr (reduceType == ReduceType::MAX) {
        BlockReduceMax<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride);
    } else {
        BlockReduceMin<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride);
    }
}

/* The sum of the last count-form ReduceSum (the accumulator register; docs: valid only after
 * that form). */
template <typename T> __aicore__ inline T GetReduceRepeatSumSpr()
{
    static_assert(asc_twin::vec::RedType<T>(), "GetReduceRepeatSumSpr on Atlas A2 supports half and float");
    T v;
    const uint64_t bits = asc_twin::vec::Regs().acc;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
}
/* The 9.0 name of GetReduceRepeatSumSpr. */
template <typename T> __aicore__ inline T GetAccVal() { return GetReduceRepeatSumSpr<T>(); }

#undef ASC_TWIN_REDUCE_L0
#undef ASC_TWIN_REDUCE_L2
#undef ASC_TWIN_WHOLE
#undef ASC_TWIN_BLOCK
#undef ASC_TWIN_COMMA

} // namespace AscendC

#endif
