/*
 * Cast: element type conversion with a RoundMode, and SetDeqScale (the scale of int32 -> half).
 *
 * The (source, destination) pairs and the round modes each accepts are Atlas A2's, from the
 * AscendC Cast docs: a pair A2 lacks is a compile error; a round mode the pair does not accept is
 * a runtime error (the NPU build silently issues nothing). CAST_NONE is an exact conversion
 * where nothing is lost and CAST_RINT where something is. Modes: RINT nearest-even, FLOOR,
 * CEIL, ROUND nearest with ties away from zero, TRUNC toward zero, ODD round-to-odd.
 *
 * Out of range: integer results saturate (CTRL[59] = 0, AscendC's default). Assumed where the
 * docs are silent: NaN to an integer gives 0; half results overflow to inf and keep NaN (the
 * INF_NAN mode, as vec_math.h).
 *
 * int4b_t (A2 pairs: half -> int4b_t with any rounding mode or CAST_NONE, int4b_t -> half with
 * CAST_NONE): a repeat has the 128 lanes of half; an int4b_t operand packs two lanes in a byte
 * (lane 2k in the low nibble), so a 32-byte block holds 64 of them and a repeat 2 blocks. The
 * docs require lanes to come in byte pairs: an even count (level 2, counter mode) or continuous
 * mask, and in a bit mask bits 2k and 2k + 1 equal; anything else is refused. half -> int4b_t
 * saturates to [-8, 7] (as the other integer results; assumed: the docs are silent) and
 * CAST_NONE rounds to nearest even (as half -> int8_t).
 */
#ifndef ASC_TWIN_VEC_CAST_H
#define ASC_TWIN_VEC_CAST_H

#include "vec_base.h"
#include "vec_math.h"

namespace asc_twin {
namespace vec {

/* Bits of the A2 round modes a pair accepts. */
constexpr uint32_t RM_NONE = 1u << 0, RM_RINT = 1u << 1, RM_FLOOR = 1u << 2, RM_CEIL = 1u << 3, RM_ROUND = 1u << 4,
                   RM_TRUNC = 1u << 5, RM_ODD = 1u << 6;
constexpr uint32_t RM_ROUNDING = RM_RINT | RM_FLOOR | RM_CEIL | RM_ROUND | RM_TRUNC;

/* The round modes Atlas A2 accepts for Cast<D, S>; 0: the pair does not exist on A2. */
template <typename D, typename S> constexpr uint32_t CastModes()
{
    using namespace AscendC::Std;
    if (is_same_v<S, AscendC::int4b_t> && is_same_v<D, half>) return RM_NONE;
    if (is_same_v<S, half> && is_same_v<D, AscendC::int4b_t>) return RM_NONE | RM_ROUNDING;
    if (is_same_v<S, int8_t> && is_same_v<D, half>) return RM_NONE;
    if (is_same_v<S, uint8_t> && is_same_v<D, half>) return RM_NONE;
    if (is_same_v<S, int16_t> && is_same_v<D, half>) return RM_NONE | RM_ROUNDING;
    if (is_same_v<S, int16_t> && is_same_v<D, float>) return RM_NONE;
    if (is_same_v<S, half> && (is_same_v<D, int8_t> || is_same_v<D, uint8_t>)) return RM_NONE | RM_ROUNDING;
    if (is_same_v<S, half> && (is_same_v<D, int16_t> || is_same_v<D, int32_t>)) return RM_ROUNDING;
    if (is_same_v<S, half> && is_same_v<D, float>) return RM_NONE;
    if (is_same_v<S, bfloat16_t> && is_same_v<D, int32_t>) return RM_ROUNDING;
    if (is_same_v<S, bfloat16_t> && is_same_v<D, float>) return RM_NONE;
    if (is_same_v<S, int32_t> && is_same_v<D, int16_t>) return RM_NONE;
    if (is_same_v<S, int32_t> && is_same_v<D, half>) return RM_NONE | RM_ROUNDING | RM_ODD; /* mode ignored: DEQSCALE */
    if (is_same_v<S, int32_t> && is_same_v<D, float>) return RM_NONE | RM_ROUNDING;
    if (is_same_v<S, int32_t> && is_same_v<D, int64_t>) return RM_NONE;
    if (is_same_v<S, float> && is_same_v<D, int16_t>) return RM_ROUNDING;
    if (is_same_v<S, float> && is_same_v<D, half>) return RM_NONE | RM_ROUNDING | RM_ODD;
    if (is_same_v<S, float> && is_same_v<D, bfloat16_t>) return RM_ROUNDING;
    if (is_same_v<S, float> && is_same_v<D, int32_t>) return RM_ROUNDING;
    if (is_same_v<S, float> && is_same_v<D, float>) return RM_ROUNDING;
    if (is_same_v<S, float> && is_same_v<D, int64_t>) return RM_ROUNDING;
    if (is_same_v<S, int64_t> && is_same_v<D, int32_t>) return RM_NONE;
    if (is_same_v<S, int64_t> && is_same_v<D, float>) return RM_ROUNDING;
    return 0;
}

/* A 16-bit sign-magnitude float format (half, bfloat16_t) seen through its bits. */
template <typename T> struct Bits16 {
    static uint16_t Get(T v) { return v.bits; }
    static T Make(uint16_t b)
    {
        T v;
        v.bits = b;
        return v;
    }
    /* The next representable value above / below (inf stays inf). */
    static uint16_t Up(uint16_t b)
    {
        if (b == 0x8000u) return 1;
        return (b & 0x8000u) ? static_cast<uint16_t>(b - 1) : static_cast<uint16_t>(b + 1);
    }
    static uint16_t Down(uint16_t b)
    {
        if (b == 0) return 0x8001u;
        return (b & 0x8000u) ? static_cast<uint16_t>(b + 1) : static_cast<uint16_t>(b - 1);
    }
};

/* `x` (a finite or infinite value) rounded to the float format T by `mode`. `Rne` gives the
 * nearest-even result; the others are derived from it and its neighbours. */
template <typename T> inline T RoundFloat(float x, AscendC::RoundMode mode)
{
    using B = Bits16<T>;
    const T rne = T(x);
    if (x != x || mode == AscendC::RoundMode::CAST_RINT || mode == AscendC::RoundMode::CAST_NONE) {
        return rne;
    }
    const float r = static_cast<float>(rne);
    if (r == x) {
        return rne;
    }
    uint16_t lo, hi;
    if (r < x) {
        lo = B::Get(rne);
        hi = B::Up(lo);
    } else {
        hi = B::Get(rne);
        lo = B::Down(hi);
    }
    const double dl = static_cast<double>(static_cast<float>(B::Make(lo)));
    double dh = static_cast<double>(static_cast<float>(B::Make(hi)));
    double dlv = dl;
    if (std::isinf(dl) && !std::isinf(dh)) {
        dlv = 2 * dh - static_cast<double>(static_cast<float>(B::Make(B::Up(hi))));
    }
    if (std::isinf(dh) && !std::isinf(dl)) {
        /* Above the largest finite value: the next grid point (where nearest rounding
         * overflows to inf) is one ulp further, as if the exponent went on. */
        dh = 2 * dl - static_cast<double>(static_cast<float>(B::Make(B::Down(lo))));
    }
    switch (mode) {
    case AscendC::RoundMode::CAST_FLOOR:
        return B::Make(lo);
    case AscendC::RoundMode::CAST_CEIL:
        return B::Make(hi);
    case AscendC::RoundMode::CAST_TRUNC:
        return B::Make(x > 0 ? lo : hi);
    case AscendC::RoundMode::CAST_ROUND: {
        const double a = static_cast<double>(x) - dlv, b = dh - static_cast<double>(x);
        if (a == b) return B::Make(x > 0 ? hi : lo);
        return B::Make(a < b ? lo : hi);
    }
    case AscendC::RoundMode::CAST_ODD:
        /* Inexact: the neighbour whose last mantissa bit is 1. */
        return B::Make((lo & 1u) ? lo : hi);
    default:
        return rne;
    }
}

/* `x` (exact in long double) rounded to float by `mode`. */
inline float RoundToF32(long double x, AscendC::RoundMode mode)
{
    const float rne = static_cast<float>(x);
    if (x != x || mode == AscendC::RoundMode::CAST_RINT || mode == AscendC::RoundMode::CAST_NONE ||
        static_cast<long double>(rne) == x) {
        return rne;
    }
    float lo, hi;
    if (static_cast<long double>(rne) < x) {
        lo = rne;
        hi = std::nextafter(rne, std::numeric_limits<float>::infinity());
    } else {
        hi = rne;
        lo = std::nextafter(rne, -std::numeric_limits<float>::infinity());
    }
    switch (mode) {
    case AscendC::RoundMode::CAST_FLOOR:
        return lo;
    case AscendC::RoundMode::CAST_CEIL:
        return hi;
    case AscendC::RoundMode::CAST_TRUNC:
        return x > 0 ? lo : hi;
    case AscendC::RoundMode::CAST_ROUND: {
        const long double a = x - lo, b = hi - x;
        if (a == b) return x > 0 ? hi : lo;
        return a < b ? lo : hi;
    }
    default:
        return rne;
    }
}

/* A float value rounded to an integer value by `mode` (CAST_NONE = RINT). */
inline long double RoundIntegral(long double x, AscendC::RoundMode mode)
{
    switch (mode) {
    case AscendC::RoundMode::CAST_FLOOR:
        return std::floor(x);
    case AscendC::RoundMode::CAST_CEIL:
        return std::ceil(x);
    case AscendC::RoundMode::CAST_ROUND:
        return std::round(x);
    case AscendC::RoundMode::CAST_TRUNC:
        return std::trunc(x);
    default:
        return std::nearbyint(x); /* the host's default rounding: nearest-even */
    }
}

/* A value of any source type converted to the integer type D: rounded, then saturated;
 * NaN gives 0 (assumed). */
template <typename D> inline D SatInt(long double v)
{
    if (v != v) return 0;
    const long double lo = static_cast<long double>(std::numeric_limits<D>::min());
    const long double hi = static_cast<long double>(std::numeric_limits<D>::max());
    if (v <= lo) return std::numeric_limits<D>::min();
    if (v >= hi) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
}

template <typename S> inline long double Wide(S v)
{
    if constexpr (AscendC::Std::is_one_of_v<S, half, bfloat16_t>) {
        return static_cast<long double>(static_cast<float>(v));
    } else {
        return static_cast<long double>(v);
    }
}

/* One element of Cast<D, S>. `deq`: DEQSCALE, for int32 -> half. */
template <typename D, typename S> inline D CastOne(S v, AscendC::RoundMode mode, float deq)
{
    if constexpr (std::is_same<D, half>::value && std::is_same<S, int32_t>::value) {
        /* int32 -> half multiplies by DEQSCALE and ignores the round mode (docs). */
        return half(static_cast<float>(v) * deq);
    } else if constexpr (std::is_integral<D>::value) {
        return SatInt<D>(RoundIntegral(Wide(v), mode));
    } else if constexpr (std::is_same<D, float>::value && std::is_same<S, float>::value) {
        return static_cast<float>(RoundIntegral(v, mode));
    } else if constexpr (std::is_same<D, float>::value) {
        return RoundToF32(Wide(v), mode);
    } else {
        /* half / bfloat16_t from float, int8/uint8/int16: every source is exact in float. */
        return RoundFloat<D>(static_cast<float>(Wide(v)), mode);
    }
}

template <typename D, typename S> inline void CheckMode(AscendC::RoundMode mode)
{
    const uint32_t m = static_cast<uint32_t>(mode);
    if (m > 6 || (CastModes<D, S>() & (1u << m)) == 0) {
        Fail("Cast", "this round mode is not supported for this (source, destination) pair on Atlas A2 (the NPU "
                     "would issue nothing)",
             m, CastModes<D, S>());
    }
    if (std::is_same<D, half>::value && std::is_same<S, int32_t>::value && Regs().deq_set == 0) {
        Fail("Cast", "int32_t -> half scales by DEQSCALE: call SetDeqScale(half) first (its reset value is not "
                     "documented)",
             0, 0);
    }
}

/* The byte pairs of an int4b_t operand: lanes 2k and 2k + 1 of `lanes` as byte-lane k (64 per
 * repeat), refusing lanes that split a byte (docs). */
inline Lanes Int4Pairs(const Lanes &lanes)
{
    Lanes p;
    p.perRep = lanes.perRep / 2;
    p.repeats = lanes.repeats;
    p.counter = lanes.counter;
    if (lanes.counter) {
        if (lanes.count % 2 != 0) {
            Fail("Cast", "with int4b_t the element count must be even (docs)", lanes.count, 0);
        }
        p.count = lanes.count / 2;
        return p;
    }
    for (uint32_t k = 0; k < p.perRep; k++) {
        const bool lo = lanes.Active(0, 2 * k), hi = lanes.Active(0, 2 * k + 1);
        if (lo != hi) {
            Fail("Cast",
                 "with int4b_t the mask must enable lanes in byte pairs: bits 2k and 2k + 1 equal, a continuous mask "
                 "even (docs)",
                 2 * k, 0);
        }
        if (lo) {
            p.bits[k >> 6] |= 1ULL << (k & 63);
        }
    }
    return p;
}

/* Cast between half and int4b_t: `h` the half operand (lanes of `lanes`), `q` the int4b_t one
 * as bytes (lanes of Int4Pairs(lanes)). */
template <typename D, typename S>
inline void RunCast4(AscendC::RoundMode mode, const Lanes &lanes, const Opnd &od, const Opnd &os)
{
    CheckMode<D, S>(mode);
    constexpr bool toInt4 = std::is_same<D, AscendC::int4b_t>::value;
    const Lanes pairs = Int4Pairs(lanes);
    const Lanes &dl = toInt4 ? pairs : lanes;
    const Lanes &sl = toInt4 ? lanes : pairs;
    Footprint fp("Cast");
    fp.Operand(os, sl);
    fp.Operand(od, dl);
    /* No overlap at all: the operands differ in size, so no overlap is an identical one. */
    std::vector<std::pair<const uint8_t *, const uint8_t *>> rs, rd;
    Footprint::ForEachRun(os, sl, [&](const uint8_t *p, uint64_t n) { rs.emplace_back(p, p + n); });
    Footprint::ForEachRun(od, dl, [&](const uint8_t *p, uint64_t n) { rd.emplace_back(p, p + n); });
    for (const auto &a : rs) {
        for (const auto &b : rd) {
            if (a.first < b.second && b.first < a.second) {
                Fail("Cast", "the source overlaps the destination (operands of different sizes must be disjoint)",
                     static_cast<uint64_t>(a.first > b.first ? a.first - b.first : b.first - a.first), 0);
            }
        }
    }
    fp.Flush();
    /* The half operand's lane l of repeat r, and the int4b_t one's byte and nibble. */
    auto nib = [](const Opnd &o, uint32_t r, uint32_t l, uint32_t &shift) {
        shift = (l % 2) * 4;
        return o.base + static_cast<uint64_t>(r) * o.rep * 32 + static_cast<uint64_t>(l / 64) * o.blk * 32 +
               (l % 64) / 2;
    };
    int8_t q[128];
    half h[128];
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (!lanes.Active(r, l)) {
                continue;
            }
            if constexpr (toInt4) {
                half x;
                std::memcpy(&x, os.At(r, l), sizeof x);
                const long double v = RoundIntegral(Wide(x), mode);
                q[l] = v != v ? 0 : v <= -8 ? -8 : v >= 7 ? 7 : static_cast<int8_t>(v);
            } else {
                uint32_t sh = 0;
                const uint8_t b = *nib(os, r, l, sh);
                h[l] = half(static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(b >> sh) << 4) >> 4));
            }
        }
        for (uint32_t l = 0; l < lanes.perRep; l++) {
            if (!lanes.Active(r, l)) {
                continue;
            }
            if constexpr (toInt4) {
                uint32_t sh = 0;
                uint8_t *b = nib(od, r, l, sh);
                *b = static_cast<uint8_t>((*b & ~(0xfu << sh)) | ((static_cast<uint8_t>(q[l]) & 0xfu) << sh));
            } else {
                std::memcpy(od.At(r, l), &h[l], sizeof(half));
            }
        }
    }
}

/* An operand of Cast: an int4b_t one as bytes (element size 1, its byte capacity). */
template <typename T> inline Opnd CastOp(const AscendC::LocalTensor<T> &t, uint32_t blk, uint32_t rep, bool write)
{
    Opnd o = Op(t, blk, rep, write);
    if constexpr (std::is_same<T, AscendC::int4b_t>::value) {
        o.cap = ElemBytes<T>(t.GetSize());
    }
    return o;
}
template <typename T> inline Opnd CastDense(const AscendC::LocalTensor<T> &t, uint32_t perRep, bool write)
{
    return CastOp(t, 1, static_cast<uint32_t>(ElemBytes<T>(perRep) / 32), write);
}

template <typename D, typename S>
inline void RunCast(const AscendC::LocalTensor<D> &dst, const AscendC::LocalTensor<S> &src, AscendC::RoundMode mode,
                    const Lanes &lanes, const Opnd &od, const Opnd &os)
{
    if constexpr (std::is_same<D, AscendC::int4b_t>::value || std::is_same<S, AscendC::int4b_t>::value) {
        (void)dst;
        (void)src;
        RunCast4<D, S>(mode, lanes, od, os);
    } else {
        CheckMode<D, S>(mode);
        const float deq = Regs().deq;
        (void)dst;
        (void)src;
        Unary<D, S>("Cast", lanes, od, os, [mode, deq](S v) { return CastOne<D, S>(v, mode, deq); });
    }
}

template <typename D, typename S> constexpr uint32_t CastLanes()
{
    /* (int4b_t is stored in one byte: the other side, half, is the wider.) */
    return LanesPerRepeat(sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

#define ASC_TWIN_CAST_PAIR_CHECK()                                                                                    \
    static_assert(asc_twin::vec::CastModes<T, U>() != 0,                                                              \
                  "Cast: this (source U, destination T) type pair does not exist on Atlas A2")

/* Level 2: the first `count` elements. */
template <typename T, typename U>
__aicore__ inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                            const uint32_t count)
{
    ASC_TWIN_CAST_PAIR_CHECK();
    using namespace asc_twin::vec;
    const uint32_t per = CastLanes<T, U>();
    const int32_t n = count > 0x7fffffffu ? -1 : static_cast<int32_t>(count);
    CheckCount("Cast", n, dst.GetSize(), true);
    CheckCount("Cast", n, src.GetSize(), false);
    RunCast(dst, src, roundMode, CountLanes("Cast", n, per), CastDense(dst, per, true), CastDense(src, per, false));
    AfterLevel2();
}

/* Level 0, bit mask (lanes of the wider type). */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                            const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    ASC_TWIN_CAST_PAIR_CHECK();
    using namespace asc_twin::vec;
    RunCast(dst, src, roundMode, BitLanes<isSetMask>("Cast", mask, repeatTime, CastLanes<T, U>()),
            CastOp(dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, true),
            CastOp(src, repeatParams.srcBlkStride, repeatParams.srcRepStride, false));
}

/* Level 0, continuous mask. */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                            const uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    ASC_TWIN_CAST_PAIR_CHECK();
    using namespace asc_twin::vec;
    RunCast(dst, src, roundMode, ContLanes<isSetMask>("Cast", mask, repeatTime, CastLanes<T, U>()),
            CastOp(dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, true),
            CastOp(src, repeatParams.srcBlkStride, repeatParams.srcRepStride, false));
}

#undef ASC_TWIN_CAST_PAIR_CHECK

/* DEQSCALE for Cast int32_t -> half. */
__aicore__ inline void SetDeqScale(half scale)
{
    AscTwinVecRegs &reg = asc_twin::vec::Regs();
    reg.deq = static_cast<float>(scale);
    reg.deq_set = 1;
}

} // namespace AscendC

#endif
