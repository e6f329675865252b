/*
 * Element-wise vector instructions: Add Sub Mul Div Max Min And Or AddRelu SubRelu (two
 * tensors), Adds Muls Maxs Mins LeakyRelu ShiftLeft ShiftRight (tensor and scalar), Abs Exp Ln Sqrt Rsqrt Reciprocal Relu Not (one
 * tensor), Axpy (dst += scalar * src), each in AscendC's three forms: level 2 (count), level 0
 * with a bit mask (uint64_t mask[]) and level 0 with a continuous mask, plus the `dst = a + b`
 * operators.
 *
 * Types are those AscendC lists for Atlas A2; any other is a compile error, as on the NPU
 * (which has no instruction for it).
 */
#ifndef ASC_TWIN_VEC_ELEMENTWISE_H
#define ASC_TWIN_VEC_ELEMENTWISE_H

#include "vec_base.h"
#include "vec_math.h"

namespace asc_twin {
namespace vec {

template <typename T> constexpr bool ArithType()
{
    return AscendC::Std::is_one_of_v<T, int16_t, half, int32_t, float>;
}
template <typename T> constexpr bool FloatType() { return AscendC::Std::is_one_of_v<T, half, float>; }
template <typename T> constexpr bool ReluType() { return AscendC::Std::is_one_of_v<T, half, int32_t, float>; }
template <typename T> constexpr bool LogicType() { return AscendC::Std::is_one_of_v<T, int16_t, uint16_t>; }

/* Two-tensor instruction over `lanes`. `src1MayOverlap`: the API is one of those the docs'
 * overlap exception names (src1 with a zero repeat stride: Add/Sub/Mul/Max/Min/AddRelu/SubRelu),
 * which applies on half, int32_t and float. */
template <typename T, typename F>
inline void Bin(const char *api, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &a,
                const AscendC::LocalTensor<T> &b, const Lanes &lanes, const AscendC::BinaryRepeatParams &p, F f,
                bool src1MayOverlap)
{
    const bool exception = src1MayOverlap && AscendC::Std::is_one_of_v<T, half, int32_t, float>;
    Binary<T, T, T>(api, lanes, Op(dst, p.dstBlkStride, p.dstRepStride, true), Op(a, p.src0BlkStride, p.src0RepStride, false),
                    Op(b, p.src1BlkStride, p.src1RepStride, false), f, exception);
}

/* Validation of a scalar operand: none for most instructions. */
template <typename T> inline void NoScalarCheck(const char *, T) {}
template <typename T, typename F>
inline void BinCount(const char *api, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &a,
                     const AscendC::LocalTensor<T> &b, int32_t count, F f)
{
    const uint32_t per = LanesPerRepeat(sizeof(T));
    CheckCount(api, count, dst.GetSize(), true);
    CheckCount(api, count, a.GetSize(), false);
    CheckCount(api, count, b.GetSize(), false);
    const Lanes lanes = CountLanes(api, count, per);
    Binary<T, T, T>(api, lanes, Dense(dst, per, true), Dense(a, per, false), Dense(b, per, false), f);
    AfterLevel2();
}
/* One-tensor instruction over `lanes`. */
template <typename T, typename F>
inline void Una(const char *api, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                const Lanes &lanes, const AscendC::UnaryRepeatParams &p, F f)
{
    Unary<T, T>(api, lanes, Op(dst, p.dstBlkStride, p.dstRepStride, true), Op(src, p.srcBlkStride, p.srcRepStride, false),
                f);
}
template <typename T, typename F>
inline void UnaCount(const char *api, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                     int32_t count, F f)
{
    const uint32_t per = LanesPerRepeat(sizeof(T));
    CheckCount(api, count, dst.GetSize(), true);
    CheckCount(api, count, src.GetSize(), false);
    const Lanes lanes = CountLanes(api, count, per);
    Unary<T, T>(api, lanes, Dense(dst, per, true), Dense(src, per, false), f);
    AfterLevel2();
}

} // namespace vec
} // namespace asc_twin

/* Two tensors: the three forms. */
#define ASC_TWIN_BINARY(NAME, CHECK, TYPES, FN, OVERLAP)                                                              \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,    \
                                uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)    \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        Bin(#NAME, dst, src0, src1, BitLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))),          \
            repeatParams, [](T a, T b) { return FN(a, b); }, OVERLAP);                                                \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,    \
                                uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        Bin(#NAME, dst, src0, src1, ContLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))),         \
            repeatParams, [](T a, T b) { return FN(a, b); }, OVERLAP);                                                \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,    \
                                const int32_t &count)                                                                 \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        asc_twin::vec::BinCount(#NAME, dst, src0, src1, count, [](T a, T b) { return FN(a, b); });                    \
    }

/* Tensor and scalar: the three forms (the scalar has the element type, as in AscendC). With
 * isSetMask = false the level-2 form issues one instruction under the current mask and
 * ignores count (AscendC's documented behaviour). */
#define ASC_TWIN_SCALAR(NAME, CHECK, TYPES, FN, VALIDATE)                                                             \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,           \
                                uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)     \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        VALIDATE(#NAME, scalarValue);                                                                                 \
        const T s = scalarValue;                                                                                      \
        Una(#NAME, dst, src, BitLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams,   \
            [s](T a) { return FN(a, s); });                                                                           \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,           \
                                uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)       \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        VALIDATE(#NAME, scalarValue);                                                                                 \
        const T s = scalarValue;                                                                                      \
        Una(#NAME, dst, src, ContLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams,  \
            [s](T a) { return FN(a, s); });                                                                           \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,           \
                                const int32_t &count)                                                                 \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        VALIDATE(#NAME, scalarValue);                                                                                 \
        const T s = scalarValue;                                                                                      \
        if (!isSetMask) {                                                                                             \
            Una(#NAME, dst, src, BitLanes<false>(#NAME, MASK_PLACEHOLDER_LIST, 1, LanesPerRepeat(sizeof(T))),         \
                UnaryRepeatParams(), [s](T a) { return FN(a, s); });                                                  \
            return;                                                                                                   \
        }                                                                                                             \
        UnaCount(#NAME, dst, src, count, [s](T a) { return FN(a, s); });                                              \
    }

/* One tensor: the three forms. */
#define ASC_TWIN_UNARY(NAME, CHECK, TYPES, FN)                                                                        \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask[],                \
                                const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)                      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        Una(#NAME, dst, src, BitLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams,   \
            [](T a) { return FN(a); });                                                                               \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask,                  \
                                const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)                      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        using namespace asc_twin::vec;                                                                                \
        Una(#NAME, dst, src, ContLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams,  \
            [](T a) { return FN(a); });                                                                               \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t &count)           \
    {                                                                                                                 \
        static_assert(asc_twin::vec::CHECK<T>(), #NAME " on Atlas A2 supports " TYPES);                               \
        asc_twin::vec::UnaCount(#NAME, dst, src, count, [](T a) { return FN(a); });                                   \
    }

namespace asc_twin {
namespace vec {
template <typename T> inline T OpAnd(T a, T b) { return static_cast<T>(a & b); }
template <typename T> inline T OpOr(T a, T b) { return static_cast<T>(a | b); }
template <typename T> inline T OpNot(T a) { return static_cast<T>(~a); }
} // namespace vec
} // namespace asc_twin

namespace asc_twin {
namespace vec {
template <typename T> constexpr bool AddReluType() { return AscendC::Std::is_one_of_v<T, int16_t, half, float>; }
template <typename T> constexpr bool ShiftType()
{
    return AscendC::Std::is_one_of_v<T, int16_t, uint16_t, int32_t, uint32_t>;
}
template <typename T> inline T OpAddRelu(T a, T b) { return OpRelu(OpAdd(a, b)); }
template <typename T> inline T OpSubRelu(T a, T b) { return OpRelu(OpSub(a, b)); }

/* Shift amounts A2 accepts: [0, 16] for 16-bit types, [0, 32] for 32-bit ones (docs). */
template <typename T> inline void CheckShift(const char *api, T n)
{
    const int64_t v = static_cast<int64_t>(n);
    if (v < 0 || v > static_cast<int64_t>(8 * sizeof(T))) {
        Fail(api, "shift amount out of range [0, bit width of T]", static_cast<uint64_t>(v), 8 * sizeof(T));
    }
}
/* ShiftLeft: logical for unsigned types; for signed ones the sign bit stays and the bits below
 * it shift (docs: the second-highest bit is dropped). */
template <typename T> inline T OpShl(T a, T n)
{
    using U = typename std::make_unsigned<T>::type;
    const uint64_t w = 8 * sizeof(T);
    const uint64_t k = static_cast<uint64_t>(n);
    const uint64_t mask = (w == 64) ? ~0ULL : ((1ULL << w) - 1);
    const uint64_t x = static_cast<uint64_t>(static_cast<U>(a));
    if (std::is_unsigned<T>::value) {
        return static_cast<T>(static_cast<U>(k >= w ? 0 : (x << k) & mask));
    }
    const uint64_t sign = x & (1ULL << (w - 1));
    const uint64_t body = k >= w ? 0 : (x << k) & (mask >> 1);
    return static_cast<T>(static_cast<U>(sign | body));
}
/* ShiftRight: logical for unsigned types, arithmetic for signed ones; `round`: add the last bit
 * shifted out (docs, roundEn; int16_t / int32_t only). */
template <typename T> inline T OpShr(T a, T n, bool round)
{
    const int64_t w = 8 * sizeof(T);
    const int64_t k = static_cast<int64_t>(n);
    if (std::is_unsigned<T>::value) {
        const uint64_t x = static_cast<uint64_t>(a);
        return static_cast<T>(k >= w ? 0 : x >> k);
    }
    const int64_t x = static_cast<int64_t>(a);
    int64_t r = k >= w ? (x < 0 ? -1 : 0) : (x >> k);
    if (round && k > 0 && k <= w) {
        r += (x >> (k - 1)) & 1;
    }
    return static_cast<T>(r);
}
} // namespace vec
} // namespace asc_twin

namespace AscendC {

ASC_TWIN_BINARY(AddRelu, AddReluType, "int16_t, half and float", asc_twin::vec::OpAddRelu<T>, true)
ASC_TWIN_BINARY(SubRelu, AddReluType, "int16_t, half and float", asc_twin::vec::OpSubRelu<T>, true)

/* ShiftLeft (the shift amount is a scalar of the element type). */
ASC_TWIN_SCALAR(ShiftLeft, ShiftType, "int16_t, uint16_t, int32_t and uint32_t", asc_twin::vec::OpShl<T>,
                asc_twin::vec::CheckShift<T>)

/* ShiftRight: its level-0 forms also take roundEn. */
namespace asc_twin_shift {
template <typename T, typename P>
__aicore__ inline void Right(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,
                             const asc_twin::vec::Lanes &lanes, const P &repeatParams, bool roundEn)
{
    static_assert(asc_twin::vec::ShiftType<T>(), "ShiftRight on Atlas A2 supports int16_t, uint16_t, int32_t and uint32_t");
    using namespace asc_twin::vec;
    CheckShift("ShiftRight", scalarValue);
    const T n = scalarValue;
    const bool rnd = roundEn && std::is_signed<T>::value;
    Una("ShiftRight", dst, src, lanes, repeatParams, [n, rnd](T a) { return OpShr(a, n, rnd); });
}
} // namespace asc_twin_shift

template <typename T, bool isSetMask = true>
__aicore__ inline void ShiftRight(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,
                                  uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,
                                  bool roundEn = false)
{
    using namespace asc_twin::vec;
    asc_twin_shift::Right(dst, src, scalarValue,
                          BitLanes<isSetMask>("ShiftRight", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams,
                          roundEn);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void ShiftRight(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,
                                  uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams &repeatParams,
                                  bool roundEn = false)
{
    using namespace asc_twin::vec;
    asc_twin_shift::Right(dst, src, scalarValue,
                          ContLanes<isSetMask>("ShiftRight", mask, repeatTime, LanesPerRepeat(sizeof(T))), repeatParams,
                          roundEn);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void ShiftRight(const LocalTensor<T> &dst, const LocalTensor<T> &src, const T &scalarValue,
                                  const int32_t &count)
{
    static_assert(asc_twin::vec::ShiftType<T>(), "ShiftRight on Atlas A2 supports int16_t, uint16_t, int32_t and uint32_t");
    using namespace asc_twin::vec;
    CheckShift("ShiftRight", scalarValue);
    const T n = scalarValue;
    UnaCount("ShiftRight", dst, src, count, [n](T a) { return OpShr(a, n, false); });
}

ASC_TWIN_BINARY(Add, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpAdd<T>, true)
ASC_TWIN_BINARY(Sub, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpSub<T>, true)
ASC_TWIN_BINARY(Mul, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpMul<T>, true)
ASC_TWIN_BINARY(Div, FloatType, "half and float", asc_twin::vec::OpDiv<T>, false)
ASC_TWIN_BINARY(Max, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpMax<T>, true)
ASC_TWIN_BINARY(Min, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpMin<T>, true)

ASC_TWIN_SCALAR(Adds, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpAdd<T>,
                asc_twin::vec::NoScalarCheck<T>)
ASC_TWIN_SCALAR(Muls, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpMul<T>,
                asc_twin::vec::NoScalarCheck<T>)
ASC_TWIN_SCALAR(Maxs, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpMax<T>,
                asc_twin::vec::NoScalarCheck<T>)
ASC_TWIN_SCALAR(Mins, ArithType, "int16_t, half, int32_t and float", asc_twin::vec::OpMin<T>,
                asc_twin::vec::NoScalarCheck<T>)
ASC_TWIN_SCALAR(LeakyRelu, FloatType, "half and float", asc_twin::vec::OpLeakyRelu<T>, asc_twin::vec::NoScalarCheck<T>)

ASC_TWIN_UNARY(Abs, FloatType, "half and float", asc_twin::vec::OpAbs<T>)
ASC_TWIN_UNARY(Exp, FloatType, "half and float", asc_twin::vec::OpExp<T>)
ASC_TWIN_UNARY(Ln, FloatType, "half and float", asc_twin::vec::OpLn<T>)
ASC_TWIN_UNARY(Sqrt, FloatType, "half and float", asc_twin::vec::OpSqrt<T>)
ASC_TWIN_UNARY(Rsqrt, FloatType, "half and float", asc_twin::vec::OpRsqrt<T>)
ASC_TWIN_UNARY(Reciprocal, FloatType, "half and float", asc_twin::vec::OpRec<T>)
ASC_TWIN_UNARY(Relu, ReluType, "half, int32_t and float", asc_twin::vec::OpRelu<T>)
ASC_TWIN_UNARY(Not, LogicType, "int16_t and uint16_t", asc_twin::vec::OpNot<T>)

/* ---- Axpy: dst = scalarValue * src + dst ----
 *
 * Atlas A2 pairs (dst T, src and scalar U): half/half and float/float, and half sources into a
 * float destination, whose repeats have 64 lanes (the float width: a repeat reads 4 blocks of
 * src). dst is read as well as written, so it is a source of the instruction for the
 * overlap and pipe-hazard checks; src may be dst itself when T and U are the same type, and may
 * not share any byte with dst when they differ (docs). The docs give the formula only: the
 * twin rounds the product to T and then the sum (as Muls then Add would); whether the NPU fuses
 * them is not documented, so results may differ from it in the last bit. */
} // namespace AscendC

namespace asc_twin {
namespace vec {
template <typename T, typename U> constexpr bool AxpyPair()
{
    return (std::is_same<T, half>::value && std::is_same<U, half>::value) ||
           (std::is_same<T, float>::value && std::is_same<U, float>::value) ||
           (std::is_same<T, float>::value && std::is_same<U, half>::value);
}
template <typename T, typename U> inline T OpAxpy(T d, U s, U scalar)
{
    using F = typename Num<T>::F; /* float for both destination types */
    const T prod = Num<T>::Out(static_cast<F>(Num<U>::In(s)) * static_cast<F>(Num<U>::In(scalar)));
    return OpAdd(prod, d);
}
template <typename T, typename U>
inline void AxpyRun(const U &scalarValue, const Lanes &lanes, const Opnd &d, const Opnd &s)
{
    const U k = scalarValue;
    Opnd dread = d;
    dread.write = false;
    Binary<T, T, U>("Axpy", lanes, d, dread, s, [k](T x, U y) { return OpAxpy<T, U>(x, y, k); });
}
} // namespace vec
} // namespace asc_twin

namespace AscendC {

template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, uint64_t mask[],
                            const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    static_assert(asc_twin::vec::AxpyPair<T, U>(),
                  "Axpy on Atlas A2 supports (dst, src) = (half, half), (float, float) and (float, half)");
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    asc_twin::vec::AxpyRun<T, U>(scalarValue, BitLanes<isSetMask>("Axpy", mask, repeatTime, per),
                        Op(dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, true),
                        Op(src, repeatParams.srcBlkStride, repeatParams.srcRepStride, false));
}
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue, uint64_t mask,
                            const uint8_t repeatTime, const UnaryRepeatParams &repeatParams)
{
    static_assert(asc_twin::vec::AxpyPair<T, U>(),
                  "Axpy on Atlas A2 supports (dst, src) = (half, half), (float, float) and (float, half)");
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    asc_twin::vec::AxpyRun<T, U>(scalarValue, ContLanes<isSetMask>("Axpy", mask, repeatTime, per),
                        Op(dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, true),
                        Op(src, repeatParams.srcBlkStride, repeatParams.srcRepStride, false));
}
/* Level 2: the first `count` elements of each operand (a half source is read 64 elements a
 * repeat, contiguously). Leaves the mask register in normal mode, every lane enabled. */
template <typename T, typename U>
__aicore__ inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U &scalarValue,
                            const int32_t &count)
{
    static_assert(asc_twin::vec::AxpyPair<T, U>(),
                  "Axpy on Atlas A2 supports (dst, src) = (half, half), (float, float) and (float, half)");
    using namespace asc_twin::vec;
    const uint32_t per = LanesPerRepeat(sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    CheckCount("Axpy", count, dst.GetSize(), true);
    CheckCount("Axpy", count, src.GetSize(), false);
    asc_twin::vec::AxpyRun<T, U>(scalarValue, CountLanes("Axpy", count, per), Dense(dst, per, true),
                        Dense(src, per, false));
    AfterLevel2();
}

/* And / Or: level 0 on 16-bit integers; level 2 also on 32-bit integers, which AscendC runs
 * as 16-bit ones with count doubled (the caller passes the doubled count, as documented). */
#define ASC_TWIN_LOGIC(NAME, FN)                                                                                      \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,    \
                                uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)    \
    {                                                                                                                 \
        static_assert(asc_twin::vec::LogicType<T>(), #NAME " on Atlas A2 supports int16_t and uint16_t");             \
        using namespace asc_twin::vec;                                                                                \
        Bin(#NAME, dst, src0, src1, BitLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))),          \
            repeatParams, [](T a, T b) { return FN(a, b); }, false);                                                  \
    }                                                                                                                 \
    template <typename T, bool isSetMask = true>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,    \
                                uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams &repeatParams)      \
    {                                                                                                                 \
        static_assert(asc_twin::vec::LogicType<T>(), #NAME " on Atlas A2 supports int16_t and uint16_t");             \
        using namespace asc_twin::vec;                                                                                \
        Bin(#NAME, dst, src0, src1, ContLanes<isSetMask>(#NAME, mask, repeatTime, LanesPerRepeat(sizeof(T))),         \
            repeatParams, [](T a, T b) { return FN(a, b); }, false);                                                  \
    }                                                                                                                 \
    template <typename T>                                                                                             \
    __aicore__ inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,    \
                                const int32_t &count)                                                                 \
    {                                                                                                                 \
        static_assert(AscendC::Std::is_one_of_v<T, int16_t, uint16_t, int32_t, uint32_t>,                                      \
                      #NAME " on Atlas A2 supports int16_t and uint16_t (and 32-bit integers as 16-bit pairs)");      \
        if constexpr (sizeof(T) == 4) {                                                                               \
            NAME(dst.template ReinterpretCast<int16_t>(), src0.template ReinterpretCast<int16_t>(),                   \
                 src1.template ReinterpretCast<int16_t>(), count);                                                    \
        } else {                                                                                                      \
            asc_twin::vec::BinCount(#NAME, dst, src0, src1, count, [](T a, T b) { return FN(a, b); });                \
        }                                                                                                             \
    }

ASC_TWIN_LOGIC(And, asc_twin::vec::OpAnd<T>)
ASC_TWIN_LOGIC(Or, asc_twin::vec::OpOr<T>)

#undef ASC_TWIN_LOGIC
#undef ASC_TWIN_BINARY
#undef ASC_TWIN_SCALAR
#undef ASC_TWIN_UNARY

} // namespace AscendC

/* ---- `dst = a + b`: the LocalTensor operators (count = the destination's size) ---- */
namespace asc_twin {
namespace vec {
template <typename T> void EvalExpr(const AscendC::LocalTensor<T> &dst, const Expr<T> &e)
{
    const int32_t n = static_cast<int32_t>(dst.GetSize());
    switch (e.op) {
    case ExprOp::ADD:
        if constexpr (ArithType<T>()) {
            AscendC::Add(dst, *e.a, *e.b, n);
        }
        break;
    case ExprOp::SUB:
        if constexpr (ArithType<T>()) {
            AscendC::Sub(dst, *e.a, *e.b, n);
        }
        break;
    case ExprOp::MUL:
        if constexpr (ArithType<T>()) {
            AscendC::Mul(dst, *e.a, *e.b, n);
        }
        break;
    case ExprOp::DIV:
        if constexpr (FloatType<T>()) {
            AscendC::Div(dst, *e.a, *e.b, n);
        }
        break;
    case ExprOp::AND:
    case ExprOp::OR:
        if constexpr (AscendC::Std::is_one_of_v<T, int16_t, uint16_t, int32_t, uint32_t>) {
            /* 32-bit integers run as 16-bit pairs: twice the count. */
            const int32_t m = sizeof(T) == 4 ? 2 * n : n;
            if (e.op == ExprOp::AND) {
                AscendC::And(dst, *e.a, *e.b, m);
            } else {
                AscendC::Or(dst, *e.a, *e.b, m);
            }
        }
        break;
    }
}
} // namespace vec
} // namespace asc_twin

#endif
