/*
 * The vector unit's data movement inside UB: Duplicate (fill with a scalar) in its three forms,
 * Brcb (one element to a whole 32-byte block), CreateVecIndex (an arithmetic sequence) and Copy
 * (UB to UB, masked, with CopyRepeatParams) and DataCopy UB -> UB. The compute instructions are in
 * vec_elementwise.h, vec_cast.h, vec_cmpsel.h and vec_reduce.h; the shared machinery in
 * vec_base.h.
 */
#ifndef ASC_TWIN_VECTOR_H
#define ASC_TWIN_VECTOR_H

#include "vec_base.h"
#include "vec_math.h"

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

/* ---- Brcb ---- */

/* Repeat parameters of Brcb (strides in 32-byte blocks; only the two destination strides are
 * used, the other fields are kept for their names). */
struct BrcbRepeatParams {
    __aicore__ BrcbRepeatParams() {}
    __aicore__ BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn)
    {
    }
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

/*
 * Brcb: repeat r reads src elements 8r .. 8r+7 (contiguous, no stride) and fills destination
 * block j of that repeat (at r * dstRepStride + j * dstBlkStride blocks) with element 8r + j;
 * repeatTime 0 is a no-op (docs, Atlas A2). Refused, as the docs forbid or leave undefined:
 * dstBlkStride 0, a source and destination that share bytes, a source with fewer than
 * 8 * repeatTime elements, unaligned operands. The instruction has no mask: the A2
 * implementation resets the mask register (every lane) before issuing it, which the twin
 * reproduces; in counter mode that reset would be a count, not lanes, and the docs say nothing
 * of it, so the twin refuses Brcb there (an assumption, the conservative one).
 */
template <typename T>
__aicore__ inline void Brcb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint8_t repeatTime,
                            const BrcbRepeatParams &repeatParams)
{
    static_assert(Std::is_one_of_v<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "Brcb on Atlas A2 supports int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t and float");
    using namespace asc_twin::vec;
    AscTwinVecRegs &reg = Regs();
    if (reg.counter) {
        Fail("Brcb", "called in counter mode: Brcb resets the mask register, which counter mode reads as a count "
                     "(call SetMaskNorm first)",
             0, 0);
    }
    if (repeatParams.dstBlkStride == 0) {
        Fail("Brcb", "dstBlkStride 0 is undefined behaviour on the NPU (docs): use 1 for adjacent blocks", 0, 1);
    }
    reg.mask[0] = FULL_MASK;
    reg.mask[1] = FULL_MASK;
    reg.mask_undefined = 0;
    if (repeatTime == 0) {
        return;
    }
    const uint8_t *s = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src));
    if ((reinterpret_cast<uintptr_t>(s) & 31u) != 0) {
        Fail("Brcb", "operand address is not 32-byte aligned", reinterpret_cast<uintptr_t>(s) & 31u, 32);
    }
    const uint64_t nsrc = 8ULL * repeatTime;
    if (nsrc > src.GetSize()) {
        Fail("Brcb", "reads past the end of a source LocalTensor (each repeat reads 8 elements)", nsrc * sizeof(T),
             static_cast<uint64_t>(src.GetSize()) * sizeof(T));
    }
    /* The destination as a vector operand: a repeat covers 8 blocks, every lane enabled. */
    Lanes lanes;
    lanes.perRep = LanesPerRepeat(sizeof(T));
    lanes.repeats = repeatTime;
    lanes.bits[0] = Lanes::FullBits(lanes.perRep >= 64 ? 64 : lanes.perRep);
    lanes.bits[1] = lanes.perRep > 64 ? Lanes::FullBits(lanes.perRep - 64) : 0;
    const Opnd d = Op(dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, true);
    Footprint fp("Brcb");
    fp.Add(3, s, nsrc * sizeof(T));
    fp.Operand(d, lanes);
    const uint8_t *send = s + nsrc * sizeof(T);
    Footprint::ForEachRun(d, lanes, [&](const uint8_t *p, uint64_t n) {
        if (p < send && s < p + n) {
            Fail("Brcb", "the source and the destination share bytes (the docs do not support it)",
                 static_cast<uint64_t>(p > s ? p - s : s - p), 0);
        }
    });
    fp.Flush();
    std::vector<T> v(nsrc);
    std::memcpy(v.data(), s, nsrc * sizeof(T));
    constexpr uint32_t epb = 32 / sizeof(T);
    for (uint32_t r = 0; r < repeatTime; r++) {
        for (uint32_t j = 0; j < 8; j++) {
            for (uint32_t k = 0; k < epb; k++) {
                std::memcpy(d.At(r, j * epb + k), &v[r * 8 + j], sizeof(T));
            }
        }
    }
}

/* ---- CreateVecIndex ---- */

namespace asc_twin_index {
/*
 * Lane l of repeat r of CreateVecIndex is firstValue + r * (lanes of a repeat) + l, formed as
 * the A2 implementation forms it (public dav-c220 headers), so that half rounding above 2048
 * (and float rounding above 2^24) matches: the first block (the whole first repeat, for the
 * bit-mask form: `perBlock` false) is written by the scalar unit as firstValue + offset computed
 * in float (in 64-bit integers for integer types); each later block of the first repeat adds the
 * elements of a block to the block before it, and each later repeat adds the lanes of a repeat to
 * the repeat before it, rounding to T at each step.
 */
template <typename T> inline T First(T first, uint32_t l, bool perBlock)
{
    using namespace asc_twin::vec;
    constexpr uint32_t epb = 32 / sizeof(T);
    const uint32_t off = perBlock ? l % epb : l;
    T v;
    if constexpr (IsFloat<T>()) {
        v = Num<T>::Out(Num<T>::In(first) + static_cast<float>(off));
    } else {
        v = static_cast<T>(static_cast<int64_t>(first) + static_cast<int64_t>(off));
    }
    if (perBlock) {
        for (uint32_t b = 0; b < l / epb; b++) {
            v = OpAdd(v, static_cast<T>(static_cast<int>(epb)));
        }
    }
    return v;
}

/* Writes the active lanes, after reporting them. The docs do not say what the mask register
 * holds afterwards (the A2 implementation issues level-0 Adds with masks of its own), so a later
 * isSetMask = false instruction must set it first. */
template <typename T>
inline void Run(const T &firstValue, const asc_twin::vec::Lanes &lanes, const asc_twin::vec::Opnd &d, bool perBlock)
{
    using namespace asc_twin::vec;
    if (lanes.repeats == 0) {
        return; /* count or repeatTime 0: a no-op (docs, Atlas A2) */
    }
    Report("CreateVecIndex", lanes, nullptr, 0, d);
    T v[128];
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            v[l] = r == 0 ? First(firstValue, l, perBlock) : OpAdd(v[l], static_cast<T>(static_cast<int>(lanes.perRep)));
            if (lanes.Active(r, l)) {
                std::memcpy(d.At(r, l), &v[l], sizeof(T));
            }
        }
    }
    Regs().mask_undefined = 1;
}

/* The implementation's internal level-0 instructions use lane masks, which counter mode would
 * read as counts; the docs are silent, so the twin refuses it (the conservative choice). */
inline void CheckNormalMode()
{
    if (asc_twin::vec::Regs().counter) {
        asc_twin::vec::Fail("CreateVecIndex",
                            "called in counter mode: its implementation issues level-0 instructions with lane "
                            "masks, which counter mode reads as counts (call SetMaskNorm first)",
                            0, 0);
    }
}
} // namespace asc_twin_index

/* The first `count` elements: firstValue, firstValue + 1, ...; count 0 is a no-op (docs). */
template <typename T> __aicore__ inline void CreateVecIndex(LocalTensor<T> dst, const T &firstValue, uint32_t count)
{
    static_assert(Std::is_one_of_v<T, int16_t, half, int32_t, float>,
                  "CreateVecIndex on Atlas A2 supports int16_t, half, int32_t and float");
    using namespace asc_twin::vec;
    asc_twin_index::CheckNormalMode();
    if (count > dst.GetSize()) {
        Fail("CreateVecIndex", "count exceeds the destination LocalTensor", count, dst.GetSize());
    }
    const uint32_t per = LanesPerRepeat(sizeof(T));
    Lanes lanes;
    lanes.perRep = per;
    lanes.counter = true;
    lanes.count = count;
    lanes.repeats = (count + per - 1) / per;
    asc_twin_index::Run(firstValue, lanes, Dense(dst, per, true), true);
}

/* Level 0, bit mask: lane l of repeat r (at r * dstRepStride + (l / per block) * dstBlkStride
 * blocks) gets firstValue + r * (lanes of a repeat) + l when its mask bit is set. */
template <typename T>
__aicore__ inline void CreateVecIndex(LocalTensor<T> &dst, const T &firstValue, uint64_t mask[], uint8_t repeatTime,
                                      uint16_t dstBlkStride, uint8_t dstRepStride)
{
    static_assert(Std::is_one_of_v<T, int16_t, half, int32_t, float>,
                  "CreateVecIndex on Atlas A2 supports int16_t, half, int32_t and float");
    using namespace asc_twin::vec;
    asc_twin_index::CheckNormalMode();
    const Lanes lanes = BitLanes<true>("CreateVecIndex", mask, repeatTime, LanesPerRepeat(sizeof(T)));
    asc_twin_index::Run(firstValue, lanes, Op(dst, dstBlkStride, dstRepStride, true), false);
}

/* Level 0, continuous mask: the first `mask` lanes of each repeat (clamped to a repeat). */
template <typename T>
__aicore__ inline void CreateVecIndex(LocalTensor<T> &dst, const T &firstValue, uint64_t mask, uint8_t repeatTime,
                                      uint16_t dstBlkStride, uint8_t dstRepStride)
{
    static_assert(Std::is_one_of_v<T, int16_t, half, int32_t, float>,
                  "CreateVecIndex on Atlas A2 supports int16_t, half, int32_t and float");
    using namespace asc_twin::vec;
    asc_twin_index::CheckNormalMode();
    const Lanes lanes = ContLanes<true>("CreateVecIndex", mask, repeatTime, LanesPerRepeat(sizeof(T)));
    asc_twin_index::Run(firstValue, lanes, Op(dst, dstBlkStride, dstRepStride, true), true);
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

/* ---- DataCopy UB -> UB (VECIN -> VECCALC, VECCALC -> VECOUT) ----
 *
 * Model (docs: DataCopy (UBToUB contiguous) and (UBToUB high-dimensional slicing), Atlas A2):
 *  - it runs on PIPE_V (docs appendix, API pipe types: "DataCopy(UB->UB) | AIV | PIPE_V"; the
 *    C-API overview lists UB -> UB moves under PIPE_MTE3, but that page is not per product and
 *    the per-product table is the one followed here);
 *  - both UB addresses must be 32-byte aligned;
 *  - DataCopyParams form: blockCount blocks of blockLen x 32 bytes; srcGap / dstGap are the
 *    32-byte blocks between the end of one block and the start of the next; blockCount in
 *    [0, 4095]; blockCount or blockLen 0 makes the call a NOP;
 *  - count form: count * sizeof(T) bytes; the NPU rounds a ragged length down to whole 32-byte
 *    blocks, silently: the twin reports it, as it does for DataCopy GM <-> UB.
 * Assumptions where the docs are silent: a source that overlaps the destination other than
 * exactly (src == dst, same layout: a copy onto itself) is refused, since what lands depends on
 * the order the engine reads and writes; the whole source is read before anything is written.
 */
namespace asc_twin {
namespace vec {
template <typename T> constexpr bool UbCopyType()
{
    return AscendC::Std::is_one_of_v<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t,
                                     float, int64_t, uint64_t, double>;
}

template <typename T>
inline void UbToUb(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src, uint32_t blockCount,
                   uint32_t blockLen, uint32_t srcGap, uint32_t dstGap)
{
    const char *api = "DataCopy(UB->UB)";
    if (blockCount > 4095) {
        Fail(api, "blockCount out of range [0, 4095]", blockCount, 4095);
    }
    uint8_t *d = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    const uint8_t *s = reinterpret_cast<const uint8_t *>(Access::Ptr(src));
    if ((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 31u) {
        Fail(api, "UB address is not 32-byte aligned",
             (reinterpret_cast<uintptr_t>(d) & 31u) ? reinterpret_cast<uintptr_t>(d) & 31u
                                                     : reinterpret_cast<uintptr_t>(s) & 31u,
             32);
    }
    if (blockCount == 0 || blockLen == 0) {
        return; /* a NOP (docs) */
    }
    const uint64_t len = static_cast<uint64_t>(blockLen) * 32;
    const uint64_t sstep = len + static_cast<uint64_t>(srcGap) * 32;
    const uint64_t dstep = len + static_cast<uint64_t>(dstGap) * 32;
    const uint64_t send = (blockCount - 1) * sstep + len;
    const uint64_t dend = (blockCount - 1) * dstep + len;
    const uint64_t scap = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
    const uint64_t dcap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    if (send > scap) {
        Fail(api, "reads past the end of its source LocalTensor", send, scap);
    }
    if (dend > dcap) {
        Fail(api, "writes past the end of its destination LocalTensor", dend, dcap);
    }
    const bool same = s == d && sstep == dstep;
    if (!same && s < d + dend && d < s + send) {
        /* Spans meet: do any source and destination blocks share a byte? */
        for (uint32_t i = 0; i < blockCount; i++) {
            for (uint32_t j = 0; j < blockCount; j++) {
                const uint8_t *a = s + i * sstep;
                const uint8_t *b = d + j * dstep;
                if (a < b + len && b < a + len) {
                    Fail(api,
                         "the source overlaps the destination (the docs define no order of reads and writes; "
                         "use disjoint buffers)",
                         static_cast<uint64_t>(a > b ? a - b : b - a), 0);
                }
            }
        }
    }
    /* The footprint before any byte is read: reads, then writes (vector-pipe accesses). */
    Footprint fp(api);
    for (uint32_t i = 0; i < blockCount; i++) {
        fp.Add(ASC_TWIN_UB_VECTOR_READ, s + i * sstep, len);
    }
    for (uint32_t i = 0; i < blockCount; i++) {
        fp.Add(ASC_TWIN_UB_VECTOR_WRITE, d + i * dstep, len);
    }
    fp.Flush();
    if (same) {
        return;
    }
    for (uint32_t i = 0; i < blockCount; i++) {
        std::memcpy(d + i * dstep, s + i * sstep, len);
    }
}
} // namespace vec
} // namespace asc_twin

namespace AscendC {

/* UB -> UB, `count` elements (count * sizeof(T) a multiple of 32 bytes). */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count)
{
    static_assert(asc_twin::vec::UbCopyType<T>(),
                  "DataCopy (UB to UB) on Atlas A2 supports int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, "
                  "int32_t, uint32_t, float, int64_t, uint64_t and double");
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    if (bytes % 32 != 0) {
        asc_twin::vec::Fail("DataCopy(UB->UB)",
                            "count * sizeof(T) is not a multiple of 32 bytes: the NPU would silently copy only the "
                            "whole 32-byte blocks (value: bytes asked, limit: bytes copied)",
                            bytes, bytes / 32 * 32);
    }
    asc_twin::vec::UbToUb(dst, src, 1, static_cast<uint32_t>(bytes / 32), 0, 0);
}

/* UB -> UB, strided: blockCount blocks of blockLen x 32 bytes, gaps in 32-byte blocks. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &repeatParams)
{
    static_assert(asc_twin::vec::UbCopyType<T>(),
                  "DataCopy (UB to UB) on Atlas A2 supports int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, "
                  "int32_t, uint32_t, float, int64_t, uint64_t and double");
    asc_twin::vec::UbToUb(dst, src, repeatParams.blockCount, repeatParams.blockLen, repeatParams.srcStride,
                          repeatParams.dstStride);
}

} // namespace AscendC

#endif
