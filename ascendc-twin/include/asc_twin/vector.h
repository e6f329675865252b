/*
 * The vector unit's data movement inside UB: Duplicate (fill with a scalar) in its three forms
 * and Copy (UB to UB, masked, with CopyRepeatParams). The compute instructions are in
 * vec_elementwise.h, vec_cast.h, vec_cmpsel.h and vec_reduce.h; the shared machinery in
 * vec_base.h.
 */
#ifndef ASC_TWIN_VECTOR_H
#define ASC_TWIN_VECTOR_H

#include "vec_base.h"

#include <vector>

namespace asc_twin {
namespace vec {
template <typename T> constexpr bool DupType()
{
    return AscendC::Std::is_one_of_v<T, half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t, float>;
}

/* Duplicate over `lanes`: a fill of one value. A dense fill goes through asc_twin_ub_fill, so a
 * fill of the bytes already there is recognised as harmless by the hazard checker. */
template <typename T> inline void Fill(const AscendC::LocalTensor<T> &dst, const T &v, const Lanes &lanes, const Opnd &d)
{
    if (lanes.repeats == 0) {
        return;
    }
    if (lanes.Dense() && d.Dense(lanes.perRep)) {
        if ((reinterpret_cast<uintptr_t>(d.base) & 31u) != 0) {
            Fail("Duplicate", "operand address is not 32-byte aligned", reinterpret_cast<uintptr_t>(d.base) & 31u, 32);
        }
        const uint64_t n = lanes.Total();
        if (n > dst.GetSize()) {
            Fail("Duplicate", "writes past the end of its destination LocalTensor", n * sizeof(T),
                 static_cast<uint64_t>(dst.GetSize()) * sizeof(T));
        }
        T *p = Access::Ptr(dst);
        asc_twin_check(asc_twin_ub_fill(reinterpret_cast<const uint8_t *>(p), &v, sizeof(T), n));
        for (uint64_t i = 0; i < n; i++) {
            p[i] = v;
        }
        return;
    }
    Report("Duplicate", lanes, nullptr, 0, d);
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                std::memcpy(d.At(r, l), &v, sizeof(T));
            }
        }
    }
}
} // namespace vec
} // namespace asc_twin

namespace AscendC {

/* ---- Duplicate ---- */

template <typename T> __aicore__ inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const int32_t &count)
{
    static_assert(asc_twin::vec::DupType<T>(),
                  "Duplicate supports half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t and float");
    using namespace asc_twin::vec;
    if (count < 0 || static_cast<uint32_t>(count) > dst.GetSize()) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DUPLICATE, "Duplicate count exceeds the LocalTensor",
                                     static_cast<uint64_t>(count), dst.GetSize()));
    }
    const uint32_t per = LanesPerRepeat(sizeof(T));
    Fill(dst, scalarValue, CountLanes("Duplicate", count, per), Dense(dst, per, true));
    AfterLevel2();
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask[],
                                 const uint8_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride)
{
    static_assert(asc_twin::vec::DupType<T>(),
                  "Duplicate supports half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t and float");
    using namespace asc_twin::vec;
    Fill(dst, scalarValue, BitLanes<isSetMask>("Duplicate", mask, repeatTime, LanesPerRepeat(sizeof(T))),
         Op(dst, dstBlockStride, dstRepeatStride, true));
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, uint64_t mask,
                                 const uint8_t repeatTime, const uint16_t dstBlockStride, const uint8_t dstRepeatStride)
{
    static_assert(asc_twin::vec::DupType<T>(),
                  "Duplicate supports half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t and float");
    using namespace asc_twin::vec;
    Fill(dst, scalarValue, ContLanes<isSetMask>("Duplicate", mask, repeatTime, LanesPerRepeat(sizeof(T))),
         Op(dst, dstBlockStride, dstRepeatStride, true));
}

/* ---- Copy (UB -> UB on the vector unit) ---- */

/* Strides in 32-byte blocks: dstStride/srcStride between the blocks of a repeat (default 0:
 * pass 1 for contiguous), dstRepeatSize/srcRepeatSize between repeats. */
struct CopyRepeatParams {
    __aicore__ CopyRepeatParams() {}
    __aicore__ CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                                uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn)
    {
    }
    uint16_t dstStride = 0;
    uint16_t srcStride = 0;
    uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
    uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

namespace asc_twin_copy {
/* Copy's counter mode differs from the other instructions' (docs): the count is the elements of
 * *each* repeat (ceil(count * sizeof(T) / 32) blocks, possibly more than 8), and repeatTime
 * counts. */
template <typename T>
__aicore__ inline void CounterCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t count,
                                   uint32_t repeatTime, const CopyRepeatParams &p)
{
    using namespace asc_twin::vec;
    constexpr uint32_t epb = 32 / sizeof(T);
    if (count > TOTAL_UB_SIZE / sizeof(T)) {
        Fail("Copy", "the counter-mode count (elements per repeat) exceeds the Unified Buffer", count,
             TOTAL_UB_SIZE / sizeof(T));
    }
    uint8_t *d = reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(dst));
    const uint8_t *s = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src));
    const uint64_t dcap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    const uint64_t scap = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
    if ((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 31u) {
        Fail("Copy", "operand address is not 32-byte aligned", 0, 32);
    }
    auto at = [&](uint32_t stride, uint32_t repSize, uint32_t r, uint64_t e) {
        return static_cast<uint64_t>(r) * repSize * 32 + (e / epb) * stride * 32 + (e % epb) * sizeof(T);
    };
    /* Footprint: per repeat, one run per block (reads first). */
    Footprint fp("Copy");
    for (int pass = 0; pass < 2; pass++) {
        const bool w = pass == 1;
        for (uint32_t r = 0; r < repeatTime; r++) {
            for (uint64_t e = 0; e < count; e += epb) {
                const uint64_t n = count - e < epb ? count - e : epb;
                const uint64_t off = w ? at(p.dstStride, p.dstRepeatSize, r, e) : at(p.srcStride, p.srcRepeatSize, r, e);
                if (off + n * sizeof(T) > (w ? dcap : scap)) {
                    Fail("Copy", w ? "writes past the end of its destination LocalTensor"
                                   : "reads past the end of a source LocalTensor",
                         off + n * sizeof(T), w ? dcap : scap);
                }
                fp.Add(w ? 2 : 3, (w ? d : s) + off, n * sizeof(T));
            }
        }
    }
    fp.Flush();
    std::vector<T> tmp(count);
    for (uint32_t r = 0; r < repeatTime; r++) {
        for (uint64_t e = 0; e < count; e++) {
            std::memcpy(&tmp[e], s + at(p.srcStride, p.srcRepeatSize, r, e), sizeof(T));
        }
        for (uint64_t e = 0; e < count; e++) {
            std::memcpy(d + at(p.dstStride, p.dstRepeatSize, r, e), &tmp[e], sizeof(T));
        }
    }
}

template <typename T>
__aicore__ inline void Run(const LocalTensor<T> &dst, const LocalTensor<T> &src, asc_twin::vec::Lanes lanes,
                           uint32_t repeatTime, const CopyRepeatParams &p)
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4,
                  "Copy (UB to UB) on Atlas A2 supports 16- and 32-bit types (int16_t, uint16_t, half, bfloat16_t, "
                  "int32_t, uint32_t, float)");
    using namespace asc_twin::vec;
    if (p.dstRepeatSize > 4095 || p.srcRepeatSize > 4095) {
        Fail("Copy", "dstRepeatSize / srcRepeatSize out of range [0, 4095]",
             p.dstRepeatSize > p.srcRepeatSize ? p.dstRepeatSize : p.srcRepeatSize, 4095);
    }
    if (lanes.counter) {
        CounterCopy(dst, src, lanes.count, repeatTime, p);
        return;
    }
    Unary<T, T>("Copy", lanes, Op(dst, p.dstStride, p.dstRepeatSize, true), Op(src, p.srcStride, p.srcRepeatSize, false),
                [](T v) { return v; });
}
} // namespace asc_twin_copy

template <typename T, bool isSetMask = true>
__aicore__ inline void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],
                            const uint8_t repeatTime, const CopyRepeatParams &repeatParams)
{
    using namespace asc_twin::vec;
    asc_twin_copy::Run(dst, src, BitLanes<isSetMask>("Copy", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatTime,
                       repeatParams);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask,
                            const uint8_t repeatTime, const CopyRepeatParams &repeatParams)
{
    using namespace asc_twin::vec;
    /* (In counter mode ContLanes refuses the continuous form: AscendC writes it as a lane
     * pattern, not Copy's per-repeat count.) */
    asc_twin_copy::Run(dst, src, ContLanes<isSetMask>("Copy", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatTime,
                       repeatParams);
}

} // namespace AscendC

#endif
