/*
 * Element arithmetic of the vector unit, as the twin computes it.
 *
 * Documented: IEEE round-to-nearest-even for float results; half results are the float result
 * rounded once to half (exact for + - * / sqrt: float carries more than twice half's precision).
 * Assumed where the docs are silent (each is named in the function that does it):
 *  - half/bfloat16 overflow gives inf and NaN stays NaN (the INF_NAN overflow mode of A2's
 *    runtime, not the saturation mode of CTRL[48]);
 *  - integer Add/Sub/Mul wrap around (CTRL[53] = 0, truncation);
 *  - Max/Min return NaN when either input is NaN, and Max(-0, +0) = +0, Min(-0, +0) = -0;
 *  - Exp/Ln/Sqrt/Reciprocal/Rsqrt are the correctly rounded host results (the NPU's may
 *    differ in the last bits; the docs give no error bound except that Rsqrt/Reciprocal are
 *    less precise than Div), and inputs the docs call "unknown result" (Sqrt/Rsqrt of
 *    non-positive values, Reciprocal of 0) give the IEEE result.
 */
#ifndef ASC_TWIN_VEC_MATH_H
#define ASC_TWIN_VEC_MATH_H

#include <cmath>
#include <limits>

#include "types.h"

namespace asc_twin {
namespace vec {

/* Float view of an element: what the vector unit computes in. */
template <typename T> struct Num {
    using F = T;
    static F In(T v) { return v; }
    static T Out(F v) { return v; }
};
template <> struct Num<half> {
    using F = float;
    static float In(half v) { return static_cast<float>(v); }
    static half Out(float v) { return half(v); }
};
template <> struct Num<bfloat16_t> {
    using F = float;
    static float In(bfloat16_t v) { return static_cast<float>(v); }
    static bfloat16_t Out(float v) { return bfloat16_t(v); }
};

template <typename T> constexpr bool IsFloat()
{
    return std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value;
}

/* Two's-complement wrap-around arithmetic for integers (CTRL[53] = 0). */
template <typename T> inline T WrapAdd(T a, T b)
{
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T> inline T WrapSub(T a, T b)
{
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T> inline T WrapMul(T a, T b)
{
    using U = typename std::conditional<sizeof(T) < 4, uint32_t, typename std::make_unsigned<T>::type>::type;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

template <typename T> inline T OpAdd(T a, T b)
{
    if constexpr (IsFloat<T>()) {
        return Num<T>::Out(Num<T>::In(a) + Num<T>::In(b));
    } else {
        return WrapAdd(a, b);
    }
}
template <typename T> inline T OpSub(T a, T b)
{
    if constexpr (IsFloat<T>()) {
        return Num<T>::Out(Num<T>::In(a) - Num<T>::In(b));
    } else {
        return WrapSub(a, b);
    }
}
template <typename T> inline T OpMul(T a, T b)
{
    if constexpr (IsFloat<T>()) {
        return Num<T>::Out(Num<T>::In(a) * Num<T>::In(b));
    } else {
        return WrapMul(a, b);
    }
}
template <typename T> inline T OpDiv(T a, T b) { return Num<T>::Out(Num<T>::In(a) / Num<T>::In(b)); }

/* Max/Min (assumed: NaN in gives NaN out; +0 is above -0). */
template <typename T> inline T OpMax(T a, T b)
{
    if constexpr (IsFloat<T>()) {
        const float x = static_cast<float>(Num<T>::In(a)), y = static_cast<float>(Num<T>::In(b));
        if (x != x) return a;
        if (y != y) return b;
        if (x == y) return std::signbit(x) ? b : a;
        return x > y ? a : b;
    } else {
        return a > b ? a : b;
    }
}
template <typename T> inline T OpMin(T a, T b)
{
    if constexpr (IsFloat<T>()) {
        const float x = static_cast<float>(Num<T>::In(a)), y = static_cast<float>(Num<T>::In(b));
        if (x != x) return a;
        if (y != y) return b;
        if (x == y) return std::signbit(x) ? a : b;
        return x < y ? a : b;
    } else {
        return a < b ? a : b;
    }
}

template <typename T> inline T OpAbs(T a)
{
    if constexpr (std::is_same<T, half>::value) {
        half r;
        r.bits = static_cast<uint16_t>(a.bits & 0x7fffu);
        return r;
    } else {
        return std::fabs(a);
    }
}
template <typename T> inline T OpExp(T a) { return Num<T>::Out(std::exp(Num<T>::In(a))); }
template <typename T> inline T OpLn(T a) { return Num<T>::Out(std::log(Num<T>::In(a))); }
template <typename T> inline T OpSqrt(T a) { return Num<T>::Out(std::sqrt(Num<T>::In(a))); }
template <typename T> inline T OpRsqrt(T a) { return Num<T>::Out(1.0f / std::sqrt(Num<T>::In(a))); }
template <typename T> inline T OpRec(T a) { return Num<T>::Out(1.0f / Num<T>::In(a)); }
/* Relu = Max(x, 0): NaN stays NaN (assumed, as Max), -0 becomes +0. */
template <typename T> inline T OpRelu(T a)
{
    if constexpr (IsFloat<T>()) {
        const float x = Num<T>::In(a);
        return x > 0.0f || x != x ? a : Num<T>::Out(0.0f);
    } else {
        return a > 0 ? a : T(0);
    }
}
/* LeakyRelu: x for x >= 0, slope * x below (docs). */
template <typename T> inline T OpLeakyRelu(T a, T slope)
{
    const float x = Num<T>::In(a);
    return x >= 0.0f || x != x ? a : Num<T>::Out(x * Num<T>::In(slope));
}

} // namespace vec
} // namespace asc_twin

#endif
