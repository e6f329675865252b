/*
 * Compare, Compares, Compare into the CMPMASK register, GetCmpMask / SetCmpMask, Select, and
 * the `dst = a < b` operators.
 *
 * Bit layout (docs): element i of the compared range is bit (i % 8) of byte i / 8 of the result;
 * a repeat of 256 bytes gives 256 / sizeof(T) bits. Select takes src0 where the bit is 1 and
 * src1 where it is 0.
 * Atlas A2 facts the twin follows: Compare/Compares ignore their mask (a reserved parameter on
 * A2) and compare whole repeats; the count forms need count * sizeof(T) to be a multiple of 256
 * bytes (the docs' requirement: a partial repeat is not computed, so the twin rejects it).
 * Assumed (docs silent): the result bits of successive repeats are packed (the destination's
 * strides do not move them), and lanes a mask disables in Compare-to-register give 0 bits.
 * Comparisons are IEEE: every comparison with NaN is false except NE.
 */
#ifndef ASC_TWIN_VEC_CMPSEL_H
#define ASC_TWIN_VEC_CMPSEL_H

#include "vec_base.h"
#include "vec_math.h"

namespace asc_twin {
namespace vec {

template <typename T> constexpr bool CmpType() { return AscendC::Std::is_one_of_v<T, half, float, int32_t>; }

template <typename T> inline bool Cmp(T a, T b, AscendC::CMPMODE mode)
{
    const auto x = Num<T>::In(a);
    const auto y = Num<T>::In(b);
    switch (mode) {
    case AscendC::CMPMODE::LT:
        return x < y;
    case AscendC::CMPMODE::GT:
        return x > y;
    case AscendC::CMPMODE::EQ:
        return x == y;
    case AscendC::CMPMODE::LE:
        return x <= y;
    case AscendC::CMPMODE::GE:
        return x >= y;
    default:
        return x != y;
    }
}

template <typename T> inline void CheckCmpMode(const char *api, AscendC::CMPMODE mode)
{
    if (std::is_same<T, int32_t>::value && mode != AscendC::CMPMODE::EQ) {
        Fail(api, "int32_t compares only with CMPMODE::EQ on Atlas A2", static_cast<uint64_t>(mode), 0);
    }
}

/* Whole repeats of a compare: `repeats` of 256 bytes of each source, bits packed into dst.
 * `scalar`: compare src0 with *scalar instead of src1. */
template <typename T, typename U>
inline void CompareRun(const char *api, const AscendC::LocalTensor<U> &dst, const Opnd &a, const Opnd *b,
                       const T *scalar, AscendC::CMPMODE mode, uint32_t repeats)
{
    CheckCmpMode<T>(api, mode);
    const uint32_t per = LanesPerRepeat(sizeof(T));
    Lanes lanes;
    lanes.perRep = per;
    lanes.repeats = repeats;
    lanes.bits[0] = Lanes::FullBits(per >= 64 ? 64 : per);
    lanes.bits[1] = per > 64 ? Lanes::FullBits(per - 64) : 0;
    Footprint fp(api);
    fp.Operand(a, lanes);
    if (b != nullptr) {
        fp.Operand(*b, lanes);
    }
    const uint64_t outBytes = static_cast<uint64_t>(repeats) * per / 8;
    uint8_t *out = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    if ((reinterpret_cast<uintptr_t>(out) & 31u) != 0) {
        Fail(api, "destination address is not 32-byte aligned", reinterpret_cast<uintptr_t>(out) & 31u, 32);
    }
    if (outBytes > static_cast<uint64_t>(dst.GetSize()) * sizeof(U)) {
        Fail(api, "the result bits do not fit the destination LocalTensor", outBytes,
             static_cast<uint64_t>(dst.GetSize()) * sizeof(U));
    }
    fp.Add(2, out, outBytes);
    fp.Flush();
    for (uint32_t r = 0; r < repeats; r++) {
        for (uint32_t l = 0; l < per; l += 8) {
            uint8_t byte = 0;
            for (uint32_t k = 0; k < 8; k++) {
                T x, y;
                std::memcpy(&x, a.At(r, l + k), sizeof x);
                if (b != nullptr) {
                    std::memcpy(&y, b->At(r, l + k), sizeof y);
                } else {
                    y = *scalar;
                }
                byte = static_cast<uint8_t>(byte | (Cmp(x, y, mode) ? 1u << k : 0u));
            }
            out[(static_cast<uint64_t>(r) * per + l) / 8] = byte;
        }
    }
}

template <typename T> inline uint32_t CompareRepeats(const char *api, uint32_t count)
{
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    if (bytes % 256 != 0) {
        Fail(api,
             "count * sizeof(T) must be a multiple of 256 bytes (Atlas A2 compares whole repeats; a partial one "
             "is not computed)",
             bytes, 256);
    }
    return static_cast<uint32_t>(bytes / 256);
}

/* Select: lane l of repeat r takes src0 when its selection bit is 1. `perRepBits`: whether
 * each repeat moves on to the next bits (modes 1 and 2) or reuses the first ones (mode 0).
 * `bits`: the selection bits (UB bytes or the CMPMASK register). src1 is a tensor, or `scalar`. */
template <typename T>
inline void SelectRun(const char *api, const Lanes &lanes, const Opnd &dst, const Opnd &a, const Opnd *b,
                      const T *scalar, const uint8_t *bits, bool nextBits)
{
    Footprint fp(api);
    fp.Operand(a, lanes);
    if (b != nullptr) {
        fp.Operand(*b, lanes);
    }
    fp.Operand(dst, lanes);
    fp.Flush();
    T tmp[128];
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        const uint64_t base = nextBits ? static_cast<uint64_t>(r) * lanes.perRep : 0;
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (!lanes.Active(r, l)) {
                continue;
            }
            const uint64_t i = base + l;
            const bool take0 = (bits[i / 8] >> (i % 8)) & 1u;
            if (take0) {
                std::memcpy(&tmp[l], a.At(r, l), sizeof(T));
            } else if (b != nullptr) {
                std::memcpy(&tmp[l], b->At(r, l), sizeof(T));
            } else {
                tmp[l] = *scalar;
            }
        }
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (lanes.Active(r, l)) {
                std::memcpy(dst.At(r, l), &tmp[l], sizeof(T));
            }
        }
    }
}

/* Reports the selection mask bytes a Select reads, checks they fit, returns them. */
template <typename U>
inline const uint8_t *SelBits(const char *api, const AscendC::LocalTensor<U> &sel, const Lanes &lanes, bool nextBits)
{
    uint64_t bitsUsed = lanes.perRep;
    if (nextBits) {
        bitsUsed = lanes.counter ? lanes.count : static_cast<uint64_t>(lanes.repeats) * lanes.perRep;
    }
    const uint64_t bytes = (bitsUsed + 7) / 8;
    const uint8_t *p = reinterpret_cast<const uint8_t *>(Access::Ptr(sel));
    if ((reinterpret_cast<uintptr_t>(p) & 31u) != 0) {
        Fail(api, "selMask address is not 32-byte aligned", reinterpret_cast<uintptr_t>(p) & 31u, 32);
    }
    if (bytes > static_cast<uint64_t>(sel.GetSize()) * sizeof(U)) {
        Fail(api, "the selection bits run past the end of selMask", bytes, static_cast<uint64_t>(sel.GetSize()) * sizeof(U));
    }
    if (lanes.repeats > 0) {
        Footprint fp(api);
        fp.Add(3, p, bytes);
        fp.Flush();
    }
    return p;
}

template <typename T, typename U> constexpr bool SelTypes()
{
    return AscendC::Std::is_one_of_v<T, half, float> && AscendC::Std::is_one_of_v<U, uint8_t, uint16_t, uint32_t, uint64_t>;
}

/* What the A2 implementation of Select does besides selecting: it loads the CMPMASK register
 * (mode 0: the first 128 bits of selMask; modes 1 and 2: the start of 32 elements it first
 * writes at UB 184 KiB, the reserved area: the scalar src1 (mode 1) or selMask's UB address as
 * uint32_t (mode 2), repeated). The twin does the same, so a kernel keeping data in the reserved 8 KiB,
 * or relying on CMPMASK across a Select, sees what it would on the NPU. */
template <typename T, typename U>
inline void SelectSideEffects(AscendC::SELMODE mode, const uint8_t *bits, const AscendC::LocalTensor<U> &sel,
                              const T *scalar, const Lanes &lanes)
{
    if (lanes.repeats == 0) {
        return;
    }
    AscTwinVecRegs &reg = Regs();
    if (mode == AscendC::SELMODE::VSEL_CMPMASK_SPR) {
        const uint64_t have = static_cast<uint64_t>(sel.GetSize()) * sizeof(U);
        uint8_t m[16] = {0};
        std::memcpy(m, bits, have < 16 ? have : 16);
        std::memcpy(reg.cmp, m, 16);
        return;
    }
    /* 32 elements: of T (the scalar, mode 1) or of uint32_t (the address, mode 2). */
    uint8_t block[128];
    const uint32_t blockBytes = scalar != nullptr ? 32 * static_cast<uint32_t>(sizeof(T)) : 128;
    if (scalar != nullptr) {
        for (uint32_t i = 0; i < blockBytes; i += sizeof(T)) {
            std::memcpy(block + i, scalar, sizeof(T));
        }
    } else {
        const uint32_t addr = static_cast<uint32_t>(sel.GetPhyAddr());
        for (uint32_t i = 0; i < blockBytes; i += 4) {
            std::memcpy(block + i, &addr, 4);
        }
    }
    uint8_t *base = nullptr;
    uint64_t cap = 0;
    asc_twin_check(asc_twin_ub_arena(&base, &cap));
    constexpr uint64_t kTmp = 184 * 1024;
    if (cap >= kTmp + blockBytes) {
        Footprint fp("Select");
        fp.Add(2, base + kTmp, blockBytes);
        fp.Flush();
        std::memcpy(base + kTmp, block, blockBytes);
    }
    std::memcpy(reg.cmp, block, 16);
}

template <typename T, typename U>
inline void SelectAny(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<U> &sel,
                      const AscendC::LocalTensor<T> &src0, const AscendC::LocalTensor<T> *src1, const T *scalar,
                      AscendC::SELMODE mode, const Lanes &lanes, const AscendC::BinaryRepeatParams &p,
                      bool level0 = true)
{
    const bool scalarMode = mode == AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE;
    if (scalarMode != (src1 == nullptr) || static_cast<uint32_t>(mode) > 2) {
        Fail("Select", scalarMode ? "VSEL_TENSOR_SCALAR_MODE takes a scalar src1"
                                  : "this SELMODE takes a tensor src1 (VSEL_TENSOR_SCALAR_MODE takes a scalar)",
             static_cast<uint64_t>(mode), 0);
    }
    const bool nextBits = mode != AscendC::SELMODE::VSEL_CMPMASK_SPR;
    if (level0 && nextBits && lanes.counter) {
        /* Modes 1 and 2 first Duplicate 32 elements under SetMask(32), a lane pattern that
         * counter mode takes as a count of 2^32 - 1: that fill runs off the UB on the NPU. */
        Fail("Select", "level-0 Select in modes 1 and 2 cannot run in counter mode (its internal fill runs off the UB)",
             static_cast<uint64_t>(mode), 0);
    }
    const uint8_t *bits = SelBits("Select", sel, lanes, nextBits);
    SelectSideEffects(mode, bits, sel, scalar, lanes);
    const Opnd a = Op(src0, p.src0BlkStride, p.src0RepStride, false);
    const Opnd d = Op(dst, p.dstBlkStride, p.dstRepStride, true);
    if (src1 != nullptr) {
        const Opnd b = Op(*src1, p.src1BlkStride, p.src1RepStride, false);
        SelectRun<T>("Select", lanes, d, a, &b, nullptr, bits, nextBits);
    } else {
        SelectRun<T>("Select", lanes, d, a, nullptr, scalar, bits, nextBits);
    }
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

#define ASC_TWIN_CMP_TYPES()                                                                                          \
    static_assert(asc_twin::vec::CmpType<T>() && AscendC::Std::is_one_of_v<U, int8_t, uint8_t>,                                \
                  "Compare on Atlas A2: T is half, float or int32_t (EQ only), the result U is int8_t or uint8_t")

/* Compare, level 2: count elements (count * sizeof(T) a multiple of 256 bytes). */
template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                               CMPMODE cmpMode, uint32_t count)
{
    ASC_TWIN_CMP_TYPES();
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T));
    const uint32_t reps = CompareRepeats<T>("Compare", count);
    const Opnd a = Dense(src0, per, false), b = Dense(src1, per, false);
    /* The A2 implementation issues whole repeats and leaves the mask register alone. */
    CompareRun<T, U>("Compare", dst, a, &b, nullptr, cmpMode, reps);
}

/* Compare, level 0 (the mask is a reserved parameter on A2: whole repeats are compared). */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                               CMPMODE cmpMode, const uint64_t mask[], uint8_t repeatTime,
                               const BinaryRepeatParams &repeatParams)
{
    ASC_TWIN_CMP_TYPES();
    (void)mask;
    using namespace asc_twin::vec;
    const Opnd a = Op(src0, repeatParams.src0BlkStride, repeatParams.src0RepStride, false);
    const Opnd b = Op(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, false);
    CompareRun<T, U>("Compare", dst, a, &b, nullptr, cmpMode, repeatTime);
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                               CMPMODE cmpMode, const uint64_t mask, uint8_t repeatTime,
                               const BinaryRepeatParams &repeatParams)
{
    const uint64_t m[2] = {mask, 0};
    Compare<T, U, isSetMask>(dst, src0, src1, cmpMode, m, repeatTime, repeatParams);
}

#undef ASC_TWIN_CMP_TYPES
#define ASC_TWIN_CMPS_TYPES()                                                                                         \
    static_assert(asc_twin::vec::CmpType<T>() && std::is_same<U, uint8_t>::value,                                     \
                  "Compares on Atlas A2: T is half, float or int32_t (EQ only), the result U is uint8_t")

/* Compares: tensor against a scalar, level 2. */
template <typename T, typename U>
__aicore__ inline void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar,
                                CMPMODE cmpMode, uint32_t count)
{
    ASC_TWIN_CMPS_TYPES();
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T));
    const uint32_t reps = CompareRepeats<T>("Compares", count);
    CompareRun<T, U>("Compares", dst, Dense(src0, per, false), nullptr, &src1Scalar, cmpMode, reps);
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar,
                                CMPMODE cmpMode, const uint64_t mask[], uint8_t repeatTime,
                                const UnaryRepeatParams &repeatParams)
{
    ASC_TWIN_CMPS_TYPES();
    (void)mask;
    using namespace asc_twin::vec;
    CompareRun<T, U>("Compares", dst, Op(src0, repeatParams.srcBlkStride, repeatParams.srcRepStride, false), nullptr,
                     &src1Scalar, cmpMode, repeatTime);
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar,
                                CMPMODE cmpMode, const uint64_t mask, uint8_t repeatTime,
                                const UnaryRepeatParams &repeatParams)
{
    const uint64_t m[2] = {mask, 0};
    Compares<T, U, isSetMask>(dst, src0, src1Scalar, cmpMode, m, repeatTime, repeatParams);
}
#undef ASC_TWIN_CMPS_TYPES

/* Compare into the CMPMASK register: one repeat, under the mask. */
template <typename T, bool isSetMask = true>
__aicore__ inline void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                               const uint64_t mask[], const BinaryRepeatParams &repeatParams)
{
    static_assert(AscendC::Std::is_one_of_v<T, half, float>, "Compare (to the CMPMASK register) on Atlas A2 supports half and float");
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T));
    Lanes lanes = BitLanes<isSetMask>("Compare", mask, 1, per);
    /* One repeat, in counter mode too (the result is one repeat's bits). */
    lanes.repeats = lanes.repeats > 1 ? 1 : lanes.repeats;
    const Opnd a = Op(src0, repeatParams.src0BlkStride, repeatParams.src0RepStride, false);
    const Opnd b = Op(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, false);
    Footprint fp("Compare");
    fp.Operand(a, lanes);
    fp.Operand(b, lanes);
    fp.Flush();
    uint64_t out[2] = {0, 0};
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < per; l++) {
            if (lanes.Active(r, l)) {
                T x, y;
                std::memcpy(&x, a.At(r, l), sizeof x);
                std::memcpy(&y, b.At(r, l), sizeof y);
                if (Cmp(x, y, cmpMode)) {
                    out[l / 64] |= 1ULL << (l % 64);
                }
            }
        }
    }
    AscTwinVecRegs &reg = Regs();
    reg.cmp[0] = out[0];
    reg.cmp[1] = out[1];
}
template <typename T, bool isSetMask = true>
__aicore__ inline void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                               const uint64_t mask, const BinaryRepeatParams &repeatParams)
{
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T));
    const uint32_t n = mask > per ? per : static_cast<uint32_t>(mask);
    const uint64_t m[2] = {Lanes::FullBits(n >= 64 ? 64 : n), n > 64 ? Lanes::FullBits(n - 64) : 0};
    Compare<T, isSetMask>(src0, src1, cmpMode, m, repeatParams);
}

/* The 128-bit CMPMASK register to / from UB (16 bytes). */
template <typename T> __aicore__ inline void GetCmpMask(const LocalTensor<T> &dst)
{
    using namespace asc_twin::vec;
    uint8_t *p = reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(dst));
    if (static_cast<uint64_t>(dst.GetSize()) * sizeof(T) < 16) {
        Fail("GetCmpMask", "the destination holds fewer than 16 bytes", static_cast<uint64_t>(dst.GetSize()) * sizeof(T), 16);
    }
    Footprint fp("GetCmpMask");
    fp.Add(2, p, 16);
    fp.Flush();
    std::memcpy(p, Regs().cmp, 16);
}
template <typename T> __aicore__ inline void SetCmpMask(const LocalTensor<T> &src)
{
    using namespace asc_twin::vec;
    const uint8_t *p = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src));
    if (static_cast<uint64_t>(src.GetSize()) * sizeof(T) < 16) {
        Fail("SetCmpMask", "the source holds fewer than 16 bytes", static_cast<uint64_t>(src.GetSize()) * sizeof(T), 16);
    }
    Footprint fp("SetCmpMask");
    fp.Add(3, p, 16);
    fp.Flush();
    std::memcpy(Regs().cmp, p, 16);
}

#define ASC_TWIN_SEL_TYPES()                                                                                          \
    static_assert(asc_twin::vec::SelTypes<T, U>(),                                                                    \
                  "Select on Atlas A2: T is half or float, selMask U is uint8_t, uint16_t, uint32_t or uint64_t")

/* Select, level 2, src1 a tensor (modes 0 and 2). */
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                              const LocalTensor<T> &src1, SELMODE selMode, uint32_t count)
{
    ASC_TWIN_SEL_TYPES();
    using namespace asc_twin::vec;
    const int32_t n = count > 0x7fffffffu ? -1 : static_cast<int32_t>(count);
    CheckCount("Select", n, dst.GetSize(), true);
    CheckCount("Select", n, src0.GetSize(), false);
    CheckCount("Select", n, src1.GetSize(), false);
    SelectAny(dst, selMask, src0, &src1, static_cast<const T *>(nullptr), selMode,
              CountLanes("Select", n, LanesPerRepeat(sizeof(T))), BinaryRepeatParams(), false);
    AfterLevel2();
}
/* Select, level 2, src1 a scalar (mode 1). */
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                              T src1, SELMODE selMode, uint32_t count)
{
    ASC_TWIN_SEL_TYPES();
    using namespace asc_twin::vec;
    const int32_t n = count > 0x7fffffffu ? -1 : static_cast<int32_t>(count);
    CheckCount("Select", n, dst.GetSize(), true);
    CheckCount("Select", n, src0.GetSize(), false);
    SelectAny<T, U>(dst, selMask, src0, nullptr, &src1, selMode, CountLanes("Select", n, LanesPerRepeat(sizeof(T))),
                    BinaryRepeatParams(), false);
    AfterLevel2();
}
/* Select, level 0 (AscendC always sets the mask here: isSetMask is reserved). */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                              const LocalTensor<T> &src1, SELMODE selMode, uint64_t mask[], uint8_t repeatTime,
                              const BinaryRepeatParams &repeatParams)
{
    ASC_TWIN_SEL_TYPES();
    using namespace asc_twin::vec;
    SelectAny(dst, selMask, src0, &src1, static_cast<const T *>(nullptr), selMode,
              BitLanes<true>("Select", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                              const LocalTensor<T> &src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                              const BinaryRepeatParams &repeatParams)
{
    ASC_TWIN_SEL_TYPES();
    using namespace asc_twin::vec;
    SelectAny(dst, selMask, src0, &src1, static_cast<const T *>(nullptr), selMode,
              ContLanes<true>("Select", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                              T src1, SELMODE selMode, uint64_t mask[], uint8_t repeatTime,
                              const BinaryRepeatParams &repeatParams)
{
    ASC_TWIN_SEL_TYPES();
    using namespace asc_twin::vec;
    SelectAny<T, U>(dst, selMask, src0, nullptr, &src1, selMode,
                    BitLanes<true>("Select", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                              T src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                              const BinaryRepeatParams &repeatParams)
{
    ASC_TWIN_SEL_TYPES();
    using namespace asc_twin::vec;
    SelectAny<T, U>(dst, selMask, src0, nullptr, &src1, selMode,
                    ContLanes<true>("Select", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams);
}
#undef ASC_TWIN_SEL_TYPES

/* Select with the bits already in the CMPMASK register (SetCmpMask / Compare to register),
 * under the current vector mask: mode 0 (each repeat reuses the register's bits). */
template <typename T, SELMODE selMode>
__aicore__ inline void Select(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                              uint8_t repeatTime, const BinaryRepeatParams &repeatParams)
{
    static_assert(AscendC::Std::is_one_of_v<T, half, float>, "Select on Atlas A2 supports half and float");
    static_assert(selMode == SELMODE::VSEL_CMPMASK_SPR,
                  "the aiv-comm twin models the register form of Select in VSEL_CMPMASK_SPR mode only (mode 2 keeps "
                  "a UB address in the register)");
    using namespace asc_twin::vec;
    const Lanes lanes = BitLanes<false>("Select", MASK_PLACEHOLDER_LIST, repeatTime, LanesPerRepeat(sizeof(T)));
    uint8_t bits[16];
    std::memcpy(bits, Regs().cmp, 16);
    const Opnd a = Op(src0, repeatParams.src0BlkStride, repeatParams.src0RepStride, false);
    const Opnd b = Op(src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, false);
    SelectRun<T>("Select", lanes, Op(dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, true), a, &b, nullptr,
                 bits, false);
}

} // namespace AscendC

namespace asc_twin {
namespace vec {
template <typename D, typename T> void EvalCmp(const AscendC::LocalTensor<D> &dst, const CmpExpr<T> &e)
{
    AscendC::Compare(dst, *e.a, *e.b, e.mode, e.a->GetSize());
}

} // namespace vec
} // namespace asc_twin

#endif
