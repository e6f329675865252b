/*
 * The vector unit's machinery shared by every vector instruction: the mask registers
 * (SetVectorMask, SetMaskCount, SetMaskNorm, ResetMask), the repeat-parameter structs, and the
 * twin's engine that walks an instruction's lanes over its repeats and blocks, checks its operands
 * and reports its UB footprint to the pipe-hazard checker.
 *
 * Model (Atlas A2 vector unit, from AscendC's docs):
 *  - one repeat processes 256 bytes: 8 blocks of 32 bytes of the widest operand; a repeat has
 *    256 / sizeof(widest T) lanes (128 for 16-bit types, 64 for 32-bit ones);
 *  - lane l of repeat r of an operand of element size s lives at
 *      base + r * repStride * 32 + (l / (32 / s)) * blkStride * 32 + (l % (32 / s)) * s
 *    (strides in 32-byte blocks);
 *  - normal mode: lane l is active when bit l of the mask is set (mask[0] holds lanes 0..63,
 *    mask[1] lanes 64..127); counter mode: the mask holds a total element count, the first
 *    `count` lanes over as many repeats as they need are active and repeatTimes is ignored;
 *  - inactive lanes of the destination keep their bytes;
 *  - a repeat reads all of its sources before it writes its destination; repeats run in order.
 */
#ifndef ASC_TWIN_VEC_BASE_H
#define ASC_TWIN_VEC_BASE_H

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "tensor.h"

namespace AscendC {

constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr uint32_t DEFAULT_BLK_NUM = 8;
constexpr uint32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint32_t MAX_REPEAT_TIMES = 255;
constexpr uint64_t FULL_MASK = 0xffffffffffffffffULL;
/* A placeholder mask for level-0 calls with isSetMask = false (the mask register is used). */
constexpr uint64_t MASK_PLACEHOLDER = 0;
constexpr uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

/* Repeat parameters of two-source vector instructions (strides in 32-byte blocks). */
struct BinaryRepeatParams {
    __aicore__ BinaryRepeatParams() {}
    __aicore__ BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn,
                                  const uint8_t src1BlkStrideIn, const uint8_t dstRepStrideIn,
                                  const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn)
    {
    }
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

/* Repeat parameters of one-source vector instructions (strides in 32-byte blocks). */
struct UnaryRepeatParams {
    __aicore__ UnaryRepeatParams() {}
    __aicore__ UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn,
                                 const uint8_t dstRepStrideIn, const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn)
    {
    }
    __aicore__ UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn,
                                 const uint8_t dstRepStrideIn, const uint8_t srcRepStrideIn, const bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn), halfBlock(halfBlockIn)
    {
    }
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

} // namespace AscendC

/* The dense loops of the vector engine: GCC's -O2 does not vectorise loops that need an alias
 * check, so they ask for it (the operands of one element-wise instruction are identical or
 * disjoint, as the docs require, so no iteration depends on another: ivdep is true). */
#if defined(__GNUC__) && !defined(__clang__)
#define ASC_TWIN_VEC_LOOP __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#define ASC_TWIN_IVDEP _Pragma("GCC ivdep")
#elif defined(__clang__)
#define ASC_TWIN_VEC_LOOP
#define ASC_TWIN_IVDEP _Pragma("clang loop vectorize(enable)")
#else
#define ASC_TWIN_VEC_LOOP
#define ASC_TWIN_IVDEP
#endif

namespace asc_twin {
namespace vec {

/* Dense element-wise loops (see ASC_TWIN_VEC_LOOP). */
template <typename D, typename S0, typename F>
ASC_TWIN_VEC_LOOP inline void DenseUnary(D *d, const S0 *s, uint64_t n, F f)
{
    ASC_TWIN_IVDEP
    for (uint64_t i = 0; i < n; i++) {
        d[i] = f(s[i]);
    }
}
template <typename D, typename S0, typename S1, typename F>
ASC_TWIN_VEC_LOOP inline void DenseBinary(D *d, const S0 *x, const S1 *y, uint64_t n, F f)
{
    ASC_TWIN_IVDEP
    for (uint64_t i = 0; i < n; i++) {
        d[i] = f(x[i], y[i]);
    }
}

/* The running core's vector registers. */
inline AscTwinVecRegs &Regs()
{
    AscTwinVecRegs *r = asc_twin_vec_regs();
    if (r == nullptr) {
        asc_twin_check(ASC_TWIN_NO_BLOCK);
    }
    return *r;
}

/* Raises a vector-instruction misuse naming the API. */
[[noreturn]] inline void Fail(const char *api, const char *what, uint64_t value, uint64_t limit)
{
    char msg[256];
    std::snprintf(msg, sizeof msg, "%s: %s", api, what);
    asc_twin_check(asc_twin_fail(ASC_TWIN_OP_VECTOR, msg, value, limit));
    throw AscTwinAbort{};
}

/* Which lanes of which repeats an instruction processes. */
struct Lanes {
    uint32_t perRep = 0;  /* lanes of one repeat */
    uint32_t repeats = 0; /* repeats issued */
    bool counter = false; /* counter mode: the first `count` lanes are active */
    uint64_t count = 0;
    uint64_t bits[2] = {0, 0}; /* normal mode */

    bool Active(uint32_t r, uint32_t l) const
    {
        if (counter) {
            return static_cast<uint64_t>(r) * perRep + l < count;
        }
        return (bits[l >> 6] >> (l & 63)) & 1u;
    }
    /* Whether every lane of every issued repeat is active (or, in counter mode, the active lanes
     * are one prefix): then an operand with dense strides is one contiguous range. */
    bool Dense() const
    {
        if (counter) {
            return true;
        }
        const uint64_t lo = perRep >= 64 ? FullBits(64) : FullBits(perRep);
        const uint64_t hi = perRep > 64 ? FullBits(perRep - 64) : 0;
        return (bits[0] & lo) == lo && (bits[1] & hi) == hi;
    }
    /* Active lanes in total (Dense() only). */
    uint64_t Total() const { return counter ? count : static_cast<uint64_t>(repeats) * perRep; }
    static uint64_t FullBits(uint32_t n) { return n >= 64 ? ~0ULL : ((1ULL << n) - 1); }
};

/* Lanes per repeat of an instruction whose widest operand has `widest` bytes per element. */
constexpr uint32_t LanesPerRepeat(uint32_t widest) { return AscendC::ONE_REPEAT_BYTE_SIZE / widest; }

/* Level-2 form: `count` elements from the start of each operand, contiguous. */
inline Lanes CountLanes(const char *api, int32_t count, uint32_t perRep)
{
    if (count < 0) {
        Fail(api, "calCount is negative", static_cast<uint64_t>(static_cast<int64_t>(count)), 0);
    }
    Lanes l;
    l.perRep = perRep;
    l.counter = true;
    l.count = static_cast<uint64_t>(count);
    l.repeats = static_cast<uint32_t>((l.count + perRep - 1) / perRep);
    return l;
}

/* Counter mode of a level-0 call: the count comes from the mask register (isSetMask = false)
 * or from the call's mask (written to the register). */
inline Lanes CounterLanes(const char *api, uint64_t count, uint32_t perRep)
{
    /* A count beyond the Unified Buffer can only run off it (and would overflow the
     * arithmetic below): name it. (A negative int32 count written to the register lands here
     * as a huge one.) */
    const uint64_t maxCount = static_cast<uint64_t>(AscendC::TOTAL_UB_SIZE) * perRep / AscendC::ONE_REPEAT_BYTE_SIZE;
    if (count > maxCount) {
        Fail(api, "the counter-mode element count exceeds the Unified Buffer", count, maxCount);
    }
    Lanes l;
    l.perRep = perRep;
    l.counter = true;
    l.count = count;
    l.repeats = static_cast<uint32_t>((count + perRep - 1) / perRep);
    return l;
}

/* The mask register as an instruction with isSetMask = false finds it. */
inline void CheckMaskDefined(const char *api, const AscTwinVecRegs &reg)
{
    if (reg.mask_undefined) {
        Fail(api,
             "isSetMask = false, but the mask register was left in an undocumented state by an earlier API "
             "(ReduceMax/ReduceMin, or a mask form of ReduceSum): call SetVectorMask first",
             0, 0);
    }
}

inline void CheckRepeat(const char *api, uint32_t repeatTimes)
{
    if (repeatTimes > AscendC::MAX_REPEAT_TIMES) {
        Fail(api, "repeatTimes out of range [0, 255]", repeatTimes, AscendC::MAX_REPEAT_TIMES);
    }
}

/* The registers as a level-0 call finds them: its repeat count checked, and (isSetMask = false)
 * the mask it will use defined; a call that sets the mask defines it. */
inline AscTwinVecRegs &LevelZeroRegs(const char *api, uint32_t repeatTimes, bool isSetMask)
{
    CheckRepeat(api, repeatTimes);
    AscTwinVecRegs &reg = Regs();
    if (isSetMask) {
        reg.mask_undefined = 0;
    } else {
        CheckMaskDefined(api, reg);
    }
    return reg;
}

/* The lanes the mask register selects: counter mode, its count; normal mode, its bits over
 * `repeatTimes` repeats. */
inline Lanes RegisterLanes(const char *api, const AscTwinVecRegs &reg, uint32_t repeatTimes, uint32_t perRep)
{
    if (reg.counter) {
        return CounterLanes(api, reg.mask[0], perRep);
    }
    Lanes l;
    l.perRep = perRep;
    l.repeats = repeatTimes;
    l.bits[0] = reg.mask[0] & Lanes::FullBits(perRep >= 64 ? 64 : perRep);
    l.bits[1] = perRep > 64 ? reg.mask[1] & Lanes::FullBits(perRep - 64) : 0;
    return l;
}

/* Level-0 form with a bit mask (`mask[0]` lanes 0..63, `mask[1]` lanes 64..127). */
template <bool isSetMask>
inline Lanes BitLanes(const char *api, const uint64_t mask[], uint32_t repeatTimes, uint32_t perRep)
{
    AscTwinVecRegs &reg = LevelZeroRegs(api, repeatTimes, isSetMask);
    if (isSetMask) {
        if (!reg.counter && perRep <= 64 && mask[1] != 0) {
            Fail(api, "mask[1] must be 0 for 32-bit types (a repeat has 64 lanes)", mask[1], 0);
        }
        /* SetVectorMask(mask[1], mask[0]); in counter mode the count is the low word. */
        reg.mask[0] = mask[0];
        reg.mask[1] = mask[1];
    }
    return RegisterLanes(api, reg, repeatTimes, perRep);
}

/* Level-0 form with a continuous mask: the first `mask` lanes of each repeat (clamped to a
 * repeat, as the docs say; 0 is a no-op). */
template <bool isSetMask>
inline Lanes ContLanes(const char *api, uint64_t mask, uint32_t repeatTimes, uint32_t perRep)
{
    AscTwinVecRegs &reg = LevelZeroRegs(api, repeatTimes, isSetMask);
    if (isSetMask) {
        if (reg.counter) {
            /* AscendC converts the continuous mask to a lane pattern before writing the
             * register, so in counter mode the count would be that pattern, not `mask`. */
            Fail(api,
                 "continuous-mask form called in counter mode: AscendC writes it as a lane pattern, not a count "
                 "(use uint64_t mask[2] = {count, 0} or SetVectorMask<T, MaskMode::COUNTER>(count) with "
                 "isSetMask = false)",
                 mask, 0);
        }
        const uint32_t n = mask > perRep ? perRep : static_cast<uint32_t>(mask);
        reg.mask[0] = Lanes::FullBits(n >= 64 ? 64 : n);
        reg.mask[1] = n > 64 ? Lanes::FullBits(n - 64) : 0;
    }
    return RegisterLanes(api, reg, repeatTimes, perRep);
}

/* What a level-2 (count) call that sets the mask itself leaves behind on A2: normal mode, every
 * lane enabled (the implementation switches to counter mode for the call and back). Compare,
 * the isSetMask = false forms and the max/min reductions differ: see their headers. */
inline void AfterLevel2()
{
    AscTwinVecRegs &reg = Regs();
    reg.counter = 0;
    reg.mask_undefined = 0;
    reg.mask[0] = ~0ULL;
    reg.mask[1] = ~0ULL;
}

/* One operand of a vector instruction. */
struct Opnd {
    uint8_t *base;
    uint32_t es;     /* element size */
    uint32_t blk;    /* block stride, 32-byte blocks */
    uint32_t rep;    /* repeat stride, 32-byte blocks */
    uint64_t cap;    /* bytes the LocalTensor owns from base */
    bool write;

    uint8_t *At(uint32_t r, uint32_t l) const
    {
        const uint32_t epb = 32 / es;
        return base + static_cast<uint64_t>(r) * rep * 32 + static_cast<uint64_t>(l / epb) * blk * 32 +
               static_cast<uint64_t>(l % epb) * es;
    }
    /* Whether the operand's lanes, repeat after repeat, are one contiguous run. */
    bool Dense(uint32_t perRep) const
    {
        const uint32_t blocks = (perRep * es + 31) / 32;
        return (blk == 1 || blocks == 1) && static_cast<uint64_t>(rep) * 32 == static_cast<uint64_t>(perRep) * es;
    }
};

template <typename T> inline Opnd Op(const AscendC::LocalTensor<T> &t, uint32_t blk, uint32_t rep, bool write)
{
    Opnd o;
    o.base = reinterpret_cast<uint8_t *>(Access::Ptr(t));
    o.es = sizeof(T);
    o.blk = blk;
    o.rep = rep;
    o.cap = static_cast<uint64_t>(t.GetSize()) * sizeof(T);
    o.write = write;
    return o;
}
/* A dense operand (the level-2 forms). */
template <typename T> inline Opnd Dense(const AscendC::LocalTensor<T> &t, uint32_t perRep, bool write)
{
    return Op(t, 1, perRep * static_cast<uint32_t>(sizeof(T)) / 32, write);
}

/* The UB footprint of one instruction, sent to the runtime in one call (reads first). */
class Footprint {
public:
    explicit Footprint(const char *api) : api_(api) {}
    void Add(uint32_t kind, const uint8_t *p, uint64_t bytes)
    {
        if (bytes == 0) {
            return;
        }
        if (n_ > 0) {
            AscTwinUbRange &last = buf_[n_ - 1];
            if (last.kind == kind && last.ub + last.bytes == p) {
                last.bytes += bytes;
                return;
            }
        }
        if (n_ == kCap) {
            Flush();
        }
        buf_[n_++] = AscTwinUbRange{kind, 0, p, bytes};
    }
    void Flush()
    {
        if (n_ > 0) {
            asc_twin_check(asc_twin_ub_accesses(buf_, n_));
            n_ = 0;
        }
    }
    /* Adds operand `o`'s bytes over `lanes`, checking they stay inside its tensor; returns the
     * end of its extent (bytes from o.base). */
    uint64_t Operand(const Opnd &o, const Lanes &lanes)
    {
        if ((reinterpret_cast<uintptr_t>(o.base) & 31u) != 0) {
            Fail(api_, "operand address is not 32-byte aligned", reinterpret_cast<uintptr_t>(o.base) & 31u, 32);
        }
        const uint32_t kind = o.write ? ASC_TWIN_UB_VECTOR_WRITE : ASC_TWIN_UB_VECTOR_READ;
        uint64_t end = 0;
        ForEachRun(o, lanes, [&](const uint8_t *p, uint64_t bytes) {
            const uint64_t e = static_cast<uint64_t>(p - o.base) + bytes;
            end = e > end ? e : end;
            Bound(o, e); /* before the range can reach the runtime */
            Add(kind, p, bytes);
        });
        return end;
    }

    /* Calls f(first byte, bytes) for every run of enabled lanes of `o`, in order. */
    template <typename F> static void ForEachRun(const Opnd &o, const Lanes &lanes, F f)
    {
        if (lanes.repeats == 0) {
            return;
        }
        if (lanes.Dense() && o.Dense(lanes.perRep)) {
            f(o.base, lanes.Total() * o.es);
            return;
        }
        const uint32_t epb = 32 / o.es;
        for (uint32_t r = 0; r < lanes.repeats; r++) {
            for (uint32_t l0 = 0; l0 < lanes.perRep; l0 += epb) {
                /* Runs of active lanes inside this block. */
                uint32_t l = l0;
                const uint32_t lend = l0 + epb < lanes.perRep ? l0 + epb : lanes.perRep;
                while (l < lend) {
                    while (l < lend && !lanes.Active(r, l)) {
                        l++;
                    }
                    const uint32_t s = l;
                    while (l < lend && lanes.Active(r, l)) {
                        l++;
                    }
                    if (l > s) {
                        f(o.At(r, s), static_cast<uint64_t>(l - s) * o.es);
                    }
                }
            }
        }
    }

private:
    void Bound(const Opnd &o, uint64_t bytes)
    {
        if (bytes > o.cap) {
            Fail(api_, o.write ? "writes past the end of its destination LocalTensor"
                               : "reads past the end of a source LocalTensor",
                 bytes, o.cap);
        }
    }
    static constexpr uint64_t kCap = 64;
    const char *api_;
    AscTwinUbRange buf_[kCap];
    uint64_t n_ = 0;
};

/* Whether the bytes two operands' enabled lanes touch intersect (not just their spans:
 * interleaved strided operands that share no byte are fine). */
inline bool BytesMeet(const Opnd &a, const Opnd &b, const Lanes &lanes)
{
    std::vector<std::pair<const uint8_t *, const uint8_t *>> ra, rb;
    Footprint::ForEachRun(a, lanes, [&](const uint8_t *p, uint64_t n) { ra.emplace_back(p, p + n); });
    Footprint::ForEachRun(b, lanes, [&](const uint8_t *p, uint64_t n) { rb.emplace_back(p, p + n); });
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    size_t i = 0, j = 0;
    while (i < ra.size() && j < rb.size()) {
        if (ra[i].first < rb[j].second && rb[j].first < ra[i].second) {
            return true;
        }
        if (ra[i].second <= rb[j].second) {
            i++;
        } else {
            j++;
        }
    }
    return false;
}

/* Reports the footprint of an instruction with `nsrc` sources and one destination, and refuses
 * a source that overlaps the destination other than exactly (same address, element size and
 * strides): the docs do not support partial overlap (general constraints, address overlap),
 * and the result would depend on the order the hardware reads and writes. `src1MayOverlap`:
 * the documented exception of Add/Sub/Mul/Max/Min, whose src1 may overlap the destination
 * across repeats when src1's or the destination's repeat stride is 0. */
inline void Report(const char *api, const Lanes &lanes, const Opnd *srcs, uint32_t nsrc, const Opnd &dst,
                   bool src1MayOverlap = false)
{
    Footprint fp(api);
    uint64_t ends[2] = {0, 0};
    for (uint32_t i = 0; i < nsrc; i++) {
        const uint64_t e = fp.Operand(srcs[i], lanes);
        if (i < 2) {
            ends[i] = e;
        }
    }
    const uint64_t dend = fp.Operand(dst, lanes);
    for (uint32_t i = 0; i < nsrc && i < 2; i++) {
        const Opnd &s = srcs[i];
        const bool spansMeet = s.base < dst.base + dend && dst.base < s.base + ends[i];
        const bool same = s.base == dst.base && s.es == dst.es && s.blk == dst.blk && s.rep == dst.rep;
        const bool exempt = i == 1 && src1MayOverlap && (s.rep == 0 || dst.rep == 0);
        if (spansMeet && !same && !exempt && dend > 0 && ends[i] > 0 && BytesMeet(s, dst, lanes)) {
            Fail(api,
                 "a source partially overlaps the destination (only identical operands, or disjoint ones, are "
                 "supported)",
                 static_cast<uint64_t>(s.base > dst.base ? s.base - dst.base : dst.base - s.base), 0);
        }
    }
    fp.Flush();
}

/*
 * Runs an element-wise instruction: dst lane = f(src lanes). `S` is a pack of source element
 * types. Dense operands (the level-2 forms, and level-0 with full masks and dense strides) take
 * a straight loop the host compiler vectorises; otherwise the lanes of each repeat are read
 * into a scratch repeat, computed, and the active ones written back.
 */
template <typename D, typename S0, typename F>
inline void Unary(const char *api, const Lanes &lanes, const Opnd &dst, const Opnd &src, F f)
{
    Report(api, lanes, &src, 1, dst);
    if (lanes.repeats == 0) {
        return;
    }
    if (lanes.Dense() && dst.Dense(lanes.perRep) && src.Dense(lanes.perRep)) {
        DenseUnary(reinterpret_cast<D *>(dst.base), reinterpret_cast<const S0 *>(src.base), lanes.Total(), f);
        return;
    }
    D tmp[128];
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                S0 a;
                std::memcpy(&a, src.At(r, l), sizeof a);
                tmp[l] = f(a);
            }
        }
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                std::memcpy(dst.At(r, l), &tmp[l], sizeof(D));
            }
        }
    }
}

template <typename D, typename S0, typename S1, typename F>
inline void Binary(const char *api, const Lanes &lanes, const Opnd &dst, const Opnd &a, const Opnd &b, F f,
                   bool src1MayOverlap = false)
{
    const Opnd srcs[2] = {a, b};
    Report(api, lanes, srcs, 2, dst, src1MayOverlap);
    if (lanes.repeats == 0) {
        return;
    }
    if (lanes.Dense() && dst.Dense(lanes.perRep) && a.Dense(lanes.perRep) && b.Dense(lanes.perRep)) {
        DenseBinary(reinterpret_cast<D *>(dst.base), reinterpret_cast<const S0 *>(a.base),
                    reinterpret_cast<const S1 *>(b.base), lanes.Total(), f);
        return;
    }
    D tmp[128];
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                S0 x;
                S1 y;
                std::memcpy(&x, a.At(r, l), sizeof x);
                std::memcpy(&y, b.At(r, l), sizeof y);
                tmp[l] = f(x, y);
            }
        }
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                std::memcpy(dst.At(r, l), &tmp[l], sizeof(D));
            }
        }
    }
}

/* Checks that a level-2 call's count fits every operand (a clearer error than the footprint's). */
inline void CheckCount(const char *api, int32_t count, uint32_t size, bool dst)
{
    if (count > 0 && static_cast<uint32_t>(count) > size) {
        Fail(api, dst ? "calCount exceeds the destination LocalTensor" : "calCount exceeds a source LocalTensor",
             static_cast<uint64_t>(count), size);
    }
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

/* ---- the mask registers ---- */

/* Normal mode: lanes by bit (maskHigh lanes 64..127, maskLow lanes 0..63); counter mode: the
 * element count is maskLow. */
template <typename T, MaskMode mode = MaskMode::NORMAL>
__aicore__ inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow)
{
    AscTwinVecRegs &reg = asc_twin::vec::Regs();
    reg.mask[0] = maskLow;
    reg.mask[1] = maskHigh;
    reg.mask_undefined = 0;
}

/* Normal mode: the first `len` lanes; counter mode: `len` elements. */
template <typename T, MaskMode mode = MaskMode::NORMAL> __aicore__ inline void SetVectorMask(int32_t len)
{
    AscTwinVecRegs &reg = asc_twin::vec::Regs();
    reg.mask_undefined = 0;
    if (mode == MaskMode::COUNTER) {
        reg.mask[0] = static_cast<uint64_t>(static_cast<int64_t>(len));
        reg.mask[1] = 0;
        return;
    }
    if (reg.counter) {
        /* The NORMAL form converts len to a lane pattern, which counter mode takes as a count. */
        asc_twin::vec::Fail("SetVectorMask",
                            "SetVectorMask<T>(len) in counter mode writes a lane pattern, not a count (use "
                            "SetVectorMask<T, MaskMode::COUNTER>(len))",
                            static_cast<uint64_t>(len), 0);
    }
    if (len < 0) {
        asc_twin::vec::Fail("SetVectorMask", "len is negative (undefined on the NPU)", static_cast<uint64_t>(len), 0);
    }
    /* Above one repeat's lanes it still means one full repeat (docs, mask). */
    const uint32_t perRep = asc_twin::vec::LanesPerRepeat(sizeof(T));
    const uint32_t n = static_cast<uint32_t>(len) > perRep ? perRep : static_cast<uint32_t>(len);
    reg.mask[0] = asc_twin::vec::Lanes::FullBits(n >= 64 ? 64 : n);
    reg.mask[1] = n > 64 ? asc_twin::vec::Lanes::FullBits(n - 64) : 0;
}

/* Every lane enabled (normal mode). */
__aicore__ inline void ResetMask()
{
    AscTwinVecRegs &reg = asc_twin::vec::Regs();
    reg.mask[0] = FULL_MASK;
    reg.mask[1] = FULL_MASK;
    reg.mask_undefined = 0;
}

/* Counter mode: the mask register holds an element count. */
__aicore__ inline void SetMaskCount() { asc_twin::vec::Regs().counter = 1; }

/* Normal mode: the mask register holds lane bits. */
__aicore__ inline void SetMaskNorm() { asc_twin::vec::Regs().counter = 0; }

} // namespace AscendC

#endif
