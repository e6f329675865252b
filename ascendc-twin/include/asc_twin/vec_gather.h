/*
 * Data-rearrangement vector instructions that pick elements: Gather (an element per lane at a
 * byte offset), Gatherb (a 32-byte block per offset) and GatherMask (the elements a bit pattern
 * selects, packed), with GatherRepeatParams, GatherMaskParams and GatherMaskMode.
 *
 * Model (AscendC docs, Atlas A2):
 *  - Gather: lane l of repeat r (256 / sizeof(T) lanes a repeat, under the mask; counter mode
 *    too) reads srcOffset[r * lanes + l] (uint32_t, bytes) and writes
 *      dst lane = the element at byte srcBaseAddr + srcOffset of src
 *    at dst + r * dstRepStride * 32 + l * sizeof(T). The count form is the level-0 form with a
 *    continuous mask: whole repeats, then the tail (so it leaves that mask in the register).
 *    The level-0 forms always set the mask register (AscendC has no isSetMask here).
 *  - Gatherb: block j of repeat r (8 a repeat) copies the 32 bytes at src + offset[r * 8 + j]
 *    to dst + r * dstRepStride * 32 + j * dstBlkStride * 32 (dstBlkStride 0 means 1). The
 *    mask is not used; A2's implementation resets it to all lanes (ResetMask), and so does the
 *    twin.
 *  - GatherMask: repeat r considers elements j = 0 .. n-1 of src0 (n = 256 / sizeof(T) with
 *    reduceMode = false; n = mask with reduceMode = true, Atlas A2's "configuration one"), element
 *    j at src0 + r * src0RepeatStride * 32 + (j / (32 / sizeof(T))) * src0BlockStride * 32 +
 *    (j % (32 / sizeof(T))) * sizeof(T). It keeps element j when bit j of the pattern is 1: the
 *    built-in patterns 1-7, or bit j % 8 of byte j / 8 at src1Pattern + r * src1RepeatStride * 32.
 *    Kept elements are written one after another from dst[0] across all repeats; rsvdCnt is how
 *    many. Afterwards the vector unit is in normal mode (docs) and the mask register holds what
 *    A2's implementation wrote for the call (the docs do not say), so the twin marks it undefined:
 *    a later isSetMask = false call must SetVectorMask first.
 *
 * Errors, as the docs define them: operands not 32-byte aligned; an offset (plus srcBaseAddr) not
 * a multiple of sizeof(T) (Gatherb: of 32); repeatTime out of [0, 255]; a built-in pattern
 * outside [1, 7]; reduceMode = true with mask 0; Gather/Gatherb sources (src, offsets) sharing a
 * byte with the destination ("src and dst must not be the same memory"); a GatherMask repeat that
 * reads bytes an earlier repeat of the same call wrote (the docs' general overlap rule: dst and
 * src0 may be the same tensor, as their example does, because the packed output never overtakes
 * the input with dense strides).
 * Assumed (docs silent): an element Gather or Gatherb collects must lie inside the src
 * LocalTensor (the docs call it "the input tensor's element"; the NPU only faults outside the UB);
 * GatherMask reads all n elements of each repeat (so all must lie inside src0), and a repeat reads
 * its sources before it writes, as every vector instruction in the twin does.
 * GetGatherMaskRemainCount exists in A2's implementation but is not in the public docs: not
 * provided (rsvdCnt gives the same count).
 */
#ifndef ASC_TWIN_VEC_GATHER_H
#define ASC_TWIN_VEC_GATHER_H

#include <algorithm>
#include <vector>

#include "vec_base.h"

namespace AscendC {

/* Repeat parameters of Gatherb (strides in 32-byte blocks). Only dstBlkStride and dstRepStride
 * are used; the others are reserved (docs). */
struct GatherRepeatParams {
    __aicore__ GatherRepeatParams() {}
    __aicore__ GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn)
    {
    }
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

/* GatherMask's reserved template parameter (A2's default is VERSION_V2). */
enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
const GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;
const GatherMaskMode defaultGahterMaskMode = GatherMaskMode::VERSION_V2;

/* GatherMask's strides (32-byte blocks) and repeat count. */
struct GatherMaskParams {
    __aicore__ GatherMaskParams() {}
    __aicore__ GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn,
                                const uint16_t src0RepeatStrideIn, const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn)
    {
    }
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

} // namespace AscendC

namespace asc_twin {
namespace vec {

/* A byte range [b, e) of the UB. */
struct Span {
    const uint8_t *b;
    const uint8_t *e;
};

/* Whether any range of `a` shares a byte with any range of `b` (both sorted here). */
inline bool SpansMeet(std::vector<Span> &a, std::vector<Span> &b)
{
    auto less = [](const Span &x, const Span &y) { return x.b < y.b; };
    std::sort(a.begin(), a.end(), less);
    std::sort(b.begin(), b.end(), less);
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].b < b[j].e && b[j].b < a[i].e) {
            return true;
        }
        if (a[i].e <= b[j].e) {
            i++;
        } else {
            j++;
        }
    }
    return false;
}

/* The runs of enabled lanes of `o` as spans. */
inline std::vector<Span> OperandSpans(const Opnd &o, const Lanes &lanes)
{
    std::vector<Span> v;
    Footprint::ForEachRun(o, lanes, [&](const uint8_t *p, uint64_t n) { v.push_back(Span{p, p + n}); });
    return v;
}

inline void CheckAligned(const char *api, const char *what, const void *p)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if ((a & 31u) != 0) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "%s address is not 32-byte aligned", what);
        Fail(api, msg, a & 31u, 32);
    }
}

template <typename T> constexpr bool GatherType()
{
    return AscendC::Std::is_one_of_v<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;
}

/* Gather over `lanes` (see the header comment). */
template <typename T>
inline void GatherRun(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                      const AscendC::LocalTensor<uint32_t> &srcOffset, uint32_t srcBaseAddr, const Lanes &lanes,
                      uint16_t dstRepStride)
{
    const char *api = "Gather";
    if (srcBaseAddr % sizeof(T) != 0) {
        Fail(api, "srcBaseAddr is not a multiple of sizeof(T)", srcBaseAddr, sizeof(T));
    }
    const uint8_t *s = reinterpret_cast<const uint8_t *>(Access::Ptr(src));
    CheckAligned(api, "src", s);
    const uint64_t scap = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
    const Opnd d = Op(dst, 1, dstRepStride, true);
    /* The offsets of a repeat's lanes are contiguous, repeat after repeat. */
    const Opnd o = Op(srcOffset, 1, lanes.perRep * 4 / 32, false);
    Footprint fp(api);
    fp.Operand(o, lanes);
    /* The offsets must be in the UB before they are read (the runtime completes the accesses
     * it is told of). */
    fp.Flush();
    std::vector<Span> reads = OperandSpans(o, lanes);
    std::vector<uint64_t> at; /* byte offset in src of each enabled lane, in order */
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (!lanes.Active(r, l)) {
                continue;
            }
            uint32_t off;
            std::memcpy(&off, o.At(r, l), sizeof off);
            const uint64_t b = static_cast<uint64_t>(srcBaseAddr) + off;
            if (b % sizeof(T) != 0) {
                Fail(api, "srcOffset + srcBaseAddr is not a multiple of sizeof(T)", b, sizeof(T));
            }
            if (b + sizeof(T) > scap) {
                Fail(api, "gathers an element past the end of the src LocalTensor (srcBaseAddr + srcOffset, bytes)", b,
                     scap);
            }
            fp.Add(ASC_TWIN_UB_VECTOR_READ, s + b, sizeof(T));
            reads.push_back(Span{s + b, s + b + sizeof(T)});
            at.push_back(b);
        }
    }
    fp.Operand(d, lanes);
    std::vector<Span> writes = OperandSpans(d, lanes);
    if (SpansMeet(reads, writes)) {
        Fail(api, "the destination shares bytes with src or srcOffset (the docs do not support it)", 0, 0);
    }
    fp.Flush();
    size_t k = 0;
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                std::memcpy(d.At(r, l), s + at[k++], sizeof(T));
            }
        }
    }
}

/* The built-in GatherMask patterns: whether element j is kept. */
inline bool BuiltinKeeps(uint8_t pattern, uint64_t j)
{
    switch (pattern) {
    case 1:
        return j % 2 == 0;
    case 2:
        return j % 2 == 1;
    case 3:
    case 4:
    case 5:
    case 6:
        return j % 4 == static_cast<uint64_t>(pattern - 3);
    default:
        return true;
    }
}

/* GatherMask: `bits` is the pattern tensor's first byte (user pattern) or null (built-in
 * `pattern`). Returns the count of kept elements. */
template <typename T>
inline uint64_t GatherMaskRun(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src0,
                              const uint8_t *bits, uint64_t bitsCap, uint8_t pattern, bool reduceMode, uint32_t mask,
                              const AscendC::GatherMaskParams &p)
{
    const char *api = "GatherMask";
    if (bits == nullptr && (pattern < 1 || pattern > 7)) {
        Fail(api, "the built-in src1Pattern must be in [1, 7]", pattern, 7);
    }
    if (reduceMode && mask == 0) {
        Fail(api, "reduceMode = true (counter mode) needs mask in [1, 2^32 - 1]", 0, 1);
    }
    if (p.repeatTimes > AscendC::MAX_REPEAT_TIMES) {
        /* Assumed: the instruction's repeat field is 8 bits wide, as every A2 vector repeat. */
        Fail(api, "repeatTimes out of range [0, 255]", p.repeatTimes, AscendC::MAX_REPEAT_TIMES);
    }
    const uint64_t n = reduceMode ? mask : LanesPerRepeat(sizeof(T));
    const uint32_t epb = 32 / sizeof(T);
    uint8_t *s = reinterpret_cast<uint8_t *>(Access::Ptr(src0));
    uint8_t *out = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    CheckAligned(api, "src0", s);
    CheckAligned(api, "dst", out);
    if (bits != nullptr) {
        CheckAligned(api, "src1Pattern", bits);
    }
    const uint64_t scap = static_cast<uint64_t>(src0.GetSize()) * sizeof(T);
    const uint64_t dcap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    const uint64_t patBytes = (n + 7) / 8;
    auto elem = [&](uint32_t r, uint64_t j) {
        return static_cast<uint64_t>(r) * p.src0RepeatStride * 32 + (j / epb) * p.src0BlockStride * 32 +
               (j % epb) * sizeof(T);
    };
    /* Footprint and checks, repeat by repeat: every byte a repeat reads must lie outside the
     * packed output of the earlier repeats, [out, out + written). */
    Footprint fp(api);
    uint64_t written = 0;
    std::vector<T> tmp;
    std::vector<uint8_t> keep;
    for (uint32_t r = 0; r < p.repeatTimes; r++) {
        const uint8_t *pb = bits == nullptr ? nullptr : bits + static_cast<uint64_t>(r) * p.src1RepeatStride * 32;
        if (pb != nullptr) {
            if (static_cast<uint64_t>(pb - bits) + patBytes > bitsCap) {
                Fail(api, "the pattern bits run past the end of src1Pattern", static_cast<uint64_t>(pb - bits) + patBytes,
                     bitsCap);
            }
            fp.Add(ASC_TWIN_UB_VECTOR_READ, pb, patBytes);
            if (pb < out + written && out < pb + patBytes) {
                Fail(api, "a repeat reads src1Pattern bytes an earlier repeat of the same call wrote", r, 0);
            }
        }
        uint64_t kept = 0;
        for (uint64_t j = 0; j < n; j++) {
            const uint64_t e = elem(r, j);
            if (e + sizeof(T) > scap) {
                Fail(api, "reads past the end of the src0 LocalTensor", e + sizeof(T), scap);
            }
            fp.Add(ASC_TWIN_UB_VECTOR_READ, s + e, sizeof(T));
            if (s + e < out + written && out < s + e + sizeof(T)) {
                Fail(api, "a repeat reads src0 bytes an earlier repeat of the same call wrote (dst overtakes src0)", r,
                     0);
            }
            const bool k = pb != nullptr ? ((pb[j / 8] >> (j % 8)) & 1u) != 0 : BuiltinKeeps(pattern, j);
            kept += k ? 1 : 0;
        }
        if (written + kept * sizeof(T) > dcap) {
            Fail(api, "writes past the end of its destination LocalTensor", written + kept * sizeof(T), dcap);
        }
        fp.Add(ASC_TWIN_UB_VECTOR_WRITE, out + written, kept * sizeof(T));
        written += kept * sizeof(T);
    }
    fp.Flush();
    /* Compute: each repeat reads its elements, then writes the kept ones. */
    uint64_t pos = 0;
    for (uint32_t r = 0; r < p.repeatTimes; r++) {
        const uint8_t *pb = bits == nullptr ? nullptr : bits + static_cast<uint64_t>(r) * p.src1RepeatStride * 32;
        tmp.clear();
        for (uint64_t j = 0; j < n; j++) {
            const bool k = pb != nullptr ? ((pb[j / 8] >> (j % 8)) & 1u) != 0 : BuiltinKeeps(pattern, j);
            if (k) {
                T v;
                std::memcpy(&v, s + elem(r, j), sizeof v);
                tmp.push_back(v);
            }
        }
        if (!tmp.empty()) {
            std::memcpy(out + pos * sizeof(T), tmp.data(), tmp.size() * sizeof(T));
        }
        pos += tmp.size();
    }
    /* A2 ends in normal mode (docs); the mask register holds what the call wrote into it. */
    AscTwinVecRegs &reg = Regs();
    reg.counter = 0;
    reg.mask_undefined = 1;
    return pos;
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

#define ASC_TWIN_GATHER_TYPES()                                                                                       \
    static_assert(asc_twin::vec::GatherType<T>(),                                                                     \
                  "Gather on Atlas A2: T is int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float")

/* Gather, level 0, bit mask. */
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
                              const uint32_t srcBaseAddr, const uint64_t mask[], const uint8_t repeatTime,
                              const uint16_t dstRepStride)
{
    ASC_TWIN_GATHER_TYPES();
    using namespace asc_twin::vec;
    const Lanes lanes = BitLanes<true>("Gather", mask, repeatTime, LanesPerRepeat(sizeof(T)));
    GatherRun(dst, src, srcOffset, srcBaseAddr, lanes, dstRepStride);
}

/* Gather, level 0, continuous mask (the first `mask` lanes of each repeat). */
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
                              const uint32_t srcBaseAddr, const uint64_t mask, const uint8_t repeatTime,
                              const uint16_t dstRepStride)
{
    ASC_TWIN_GATHER_TYPES();
    using namespace asc_twin::vec;
    const Lanes lanes = ContLanes<true>("Gather", mask, repeatTime, LanesPerRepeat(sizeof(T)));
    GatherRun(dst, src, srcOffset, srcBaseAddr, lanes, dstRepStride);
}

/* Gather, the first `count` elements: as A2 implements it, the continuous-mask form over whole
 * repeats, then one repeat for the tail. */
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
                              const uint32_t srcBaseAddr, const uint32_t count)
{
    ASC_TWIN_GATHER_TYPES();
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T));
    if (Regs().counter) {
        Fail("Gather", "the count form in counter mode: A2 implements it with a continuous mask, a lane pattern",
             count, 0);
    }
    if (count / per > MAX_REPEAT_TIMES) {
        /* A2's implementation narrows count / lanes-per-repeat to a uint8_t repeat count. */
        Fail("Gather", "count needs more than 255 repeats", count, static_cast<uint64_t>(MAX_REPEAT_TIMES) * per);
    }
    const uint32_t reps = count / per;
    const uint32_t tail = count % per;
    if (reps > 0) {
        Gather(dst, src, srcOffset, srcBaseAddr, static_cast<uint64_t>(per), static_cast<uint8_t>(reps),
               static_cast<uint16_t>(DEFAULT_REPEAT_STRIDE));
    }
    if (tail > 0) {
        const uint32_t at = count - tail;
        Gather(dst[at], src, srcOffset[at], srcBaseAddr, static_cast<uint64_t>(tail), static_cast<uint8_t>(1),
               static_cast<uint16_t>(DEFAULT_REPEAT_STRIDE));
    }
}
#undef ASC_TWIN_GATHER_TYPES

/* Gatherb: 32-byte blocks at byte offsets of src, 8 a repeat (uint16_t and uint32_t on A2). */
template <typename T>
__aicore__ inline void Gatherb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &offset,
                               const uint8_t repeatTime, const GatherRepeatParams &repeatParams)
{
    static_assert(Std::is_one_of_v<T, uint16_t, uint32_t>, "Gatherb on Atlas A2: T is uint16_t or uint32_t");
    using namespace asc_twin::vec;
    const char *api = "Gatherb";
    AscTwinVecRegs &reg = Regs();
    /* A2's implementation resets the mask before the instruction. */
    reg.mask[0] = FULL_MASK;
    reg.mask[1] = FULL_MASK;
    reg.mask_undefined = 0;
    uint8_t *d = reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(dst));
    const uint8_t *s = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src));
    const uint8_t *o = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(offset));
    CheckAligned(api, "dst", d);
    CheckAligned(api, "src", s);
    CheckAligned(api, "offset", o);
    if (repeatTime == 0) {
        return;
    }
    const uint64_t nblk = static_cast<uint64_t>(repeatTime) * 8;
    if (nblk * 4 > static_cast<uint64_t>(offset.GetSize()) * 4) {
        Fail(api, "reads past the end of the offset LocalTensor (8 offsets a repeat)", nblk * 4,
             static_cast<uint64_t>(offset.GetSize()) * 4);
    }
    const uint64_t scap = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
    const uint64_t dcap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    const uint64_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
    Footprint fp(api);
    fp.Add(ASC_TWIN_UB_VECTOR_READ, o, nblk * 4);
    fp.Flush(); /* before the offsets are read */
    std::vector<Span> reads{Span{o, o + nblk * 4}};
    std::vector<Span> writes;
    std::vector<uint32_t> offs(nblk);
    std::memcpy(offs.data(), o, nblk * 4);
    for (uint64_t i = 0; i < nblk; i++) {
        const uint64_t b = offs[i];
        if (b % 32 != 0) {
            Fail(api, "an offset does not give a 32-byte aligned address (src + offset)", b, 32);
        }
        if (b + 32 > scap) {
            Fail(api, "gathers a block past the end of the src LocalTensor (offset, bytes)", b, scap);
        }
        fp.Add(ASC_TWIN_UB_VECTOR_READ, s + b, 32);
        reads.push_back(Span{s + b, s + b + 32});
    }
    for (uint64_t i = 0; i < nblk; i++) {
        const uint64_t at = (i / 8) * repeatParams.dstRepStride * 32 + (i % 8) * blk * 32;
        if (at + 32 > dcap) {
            Fail(api, "writes past the end of its destination LocalTensor", at + 32, dcap);
        }
        fp.Add(ASC_TWIN_UB_VECTOR_WRITE, d + at, 32);
        writes.push_back(Span{d + at, d + at + 32});
    }
    if (SpansMeet(reads, writes)) {
        Fail(api, "the destination shares bytes with src or offset (the docs do not support it)", 0, 0);
    }
    fp.Flush();
    for (uint64_t i = 0; i < nblk; i++) {
        const uint64_t at = (i / 8) * repeatParams.dstRepStride * 32 + (i % 8) * blk * 32;
        std::memcpy(d + at, s + offs[i], 32);
    }
}

/* GatherMask with a user pattern: bit j of src1Pattern keeps element j of a repeat. */
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
__aicore__ inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<U> &src1Pattern,
                                  const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams,
                                  uint64_t &rsvdCnt)
{
    static_assert(asc_twin::vec::GatherType<T>() && Std::is_one_of_v<U, uint16_t, uint32_t> && sizeof(U) == sizeof(T),
                  "GatherMask on Atlas A2: T is int16_t, uint16_t, half or bfloat16_t with a uint16_t pattern, or "
                  "int32_t, uint32_t or float with a uint32_t pattern");
    const uint8_t *bits = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src1Pattern));
    rsvdCnt = asc_twin::vec::GatherMaskRun(dst, src0, bits, static_cast<uint64_t>(src1Pattern.GetSize()) * sizeof(U),
                                           0, reduceMode, mask, gatherMaskParams);
}

/* GatherMask with a built-in pattern (1-7). */
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
__aicore__ inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const uint8_t src1Pattern,
                                  const bool reduceMode, const uint32_t mask, const GatherMaskParams &gatherMaskParams,
                                  uint64_t &rsvdCnt)
{
    static_assert(asc_twin::vec::GatherType<T>(),
                  "GatherMask on Atlas A2: T is int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t or float");
    rsvdCnt = asc_twin::vec::GatherMaskRun(dst, src0, nullptr, 0, src1Pattern, reduceMode, mask, gatherMaskParams);
}

} // namespace AscendC

#endif
