/*
 * Data types (half, bfloat16_t, the fp8 storage types), AscendC::Std traits and the small
 * arithmetic helpers kernels use (DivCeil, AlignUp, ...).
 */
#ifndef ASC_TWIN_TYPES_H
#define ASC_TWIN_TYPES_H

#include "base.h"

/* c ? a : b without a branch. */
inline uint32_t asc_twin_select(bool c, uint32_t a, uint32_t b)
{
    const uint32_t m = 0u - static_cast<uint32_t>(c);
    return (a & m) | (b & ~m);
}

/* float -> binary16, round to nearest even; NaN -> quiet NaN of the same sign. Written
 * without data-dependent branches (selects only), so loops of conversions vectorise. */
inline uint16_t asc_twin_f32_to_f16_bits(float value)
{
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t a = x & 0x7fffffffu;
    /* Normal results: rebias the exponent, round the 13 dropped bits to nearest even. */
    const uint32_t normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    /* Subnormal results (|value| < 2^-14): adding 0.5 puts the value's 2^-24 units in the low
     * mantissa bits, rounded by the FPU to nearest even. */
    float af;
    std::memcpy(&af, &a, 4);
    const float sum = af + 0.5f;
    uint32_t sbits;
    std::memcpy(&sbits, &sum, 4);
    const uint32_t sub = sbits - 0x3f000000u;
    uint32_t out = asc_twin_select(a < (113u << 23), sub, normal);
    out = asc_twin_select(a >= (143u << 23), 0x7c00u, out); /* overflow (>= 65520 after rounding) */
    out = asc_twin_select(a > 0x7f800000u, 0x7e00u, out);   /* NaN */
    return static_cast<uint16_t>(sign | out);
}

/* binary16 -> float (exact). Branch-free as above. */
inline float asc_twin_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    const uint32_t em = static_cast<uint32_t>(h) & 0x7fffu;
    const uint32_t exp = em & 0x7c00u;
    /* Normal: rebias. Inf/NaN: exponent all ones. Subnormal: scale the integer mantissa. */
    const uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    const uint32_t special = (em << 13) | 0x7f800000u;
    const float subf = static_cast<float>(em) * 5.9604644775390625e-8f; /* 2^-24 */
    uint32_t sub;
    std::memcpy(&sub, &subf, 4);
    uint32_t out = asc_twin_select(exp == 0, sub, normal);
    out = asc_twin_select(exp == 0x7c00u, special, out);
    out |= sign;
    float f;
    std::memcpy(&f, &out, 4);
    return f;
}

/* IEEE binary16, as AscendC's `half`. */
struct half {
    uint16_t bits;
    half() = default;
    half(float v) : bits(asc_twin_f32_to_f16_bits(v)) {}
    half(double v) : bits(asc_twin_f32_to_f16_bits(static_cast<float>(v))) {}
    half(int v) : bits(asc_twin_f32_to_f16_bits(static_cast<float>(v))) {}
    operator float() const { return asc_twin_f16_bits_to_f32(bits); }
};

/* bfloat16, as AscendC's `bfloat16_t`. */
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    bfloat16_t(float v)
    {
        uint32_t x;
        std::memcpy(&x, &v, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) {
            bits = static_cast<uint16_t>((x >> 16) | 0x40u);
        } else {
            x += 0x7fffu + ((x >> 16) & 1u);
            bits = static_cast<uint16_t>(x >> 16);
        }
    }
    bfloat16_t(double v) : bfloat16_t(static_cast<float>(v)) {}
    bfloat16_t(int v) : bfloat16_t(static_cast<float>(v)) {}
    operator float() const
    {
        const uint32_t x = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
};

/* The fp8 storage types: on Atlas A2 (__NPU_ARCH__ 2201) AscendC defines them as plain bytes
 * (no fp8 arithmetic on this core). hifloat8_t does not exist for A2: the NPU compiler rejects
 * it, so any real use of it is a compile error here too. */
using fp8_e5m2_t = uint8_t;
using fp8_e4m3fn_t = uint8_t;
using fp8_e8m0_t = uint8_t;
template <bool B = false> struct asc_twin_hifloat8_not_on_a2 {
    static_assert(B, "hifloat8_t is not available on Atlas A2 (__NPU_ARCH__ 2201): the NPU compiler defines it "
                     "only for later architectures");
};
using hifloat8_t = asc_twin_hifloat8_not_on_a2<>;

namespace AscendC {

/* int4b_t (docs: built-in data types): a 4-bit signed integer in [-8, 7]; in a LocalTensor two
 * of them share a byte, element 2k in the low nibble and 2k + 1 in the high one. The twin's
 * scalar (sizeof 1) holds one value; tensors of it are addressed by nibble (tensor.h). Host
 * code does not use it (docs, Cast: "host side does not support int4b_t yet"). */
struct int4b_t {
    int8_t v = 0;
    int4b_t() = default;
    /* Keeps the low 4 bits, sign-extended (as storing into a nibble does). */
    template <typename I, typename = std::enable_if_t<std::is_arithmetic<I>::value>>
    constexpr int4b_t(I x) : v(static_cast<int8_t>(static_cast<int8_t>(static_cast<int>(x) << 4) >> 4))
    {
    }
    constexpr operator int() const { return v; }
};

/* (a + b - 1) / b, as AscendC's. */
__aicore__ constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
/* a rounded up to a multiple of b. */
__aicore__ constexpr inline uint32_t AlignUp(uint32_t a, uint32_t b) { return DivCeil(a, b) * b; }
template <typename T, typename U> __aicore__ constexpr inline auto ConstCeil(T a, U b) { return (a + b - 1) / b; }
template <typename T, typename U> __aicore__ inline auto Ceil(T a, U b) { return (a + b - 1) / b; }
/* a / b rounded up; 0 when b is 0. */
__aicore__ inline int32_t CeilDivision(int32_t a, int32_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

/* Conditional<b, T1, T2>::type: T1 if b, else T2. */
template <bool b, typename T1, typename T2> struct Conditional {
    using type = T1;
};
template <typename T1, typename T2> struct Conditional<false, T1, T2> {
    using type = T2;
};

template <typename T, typename U> struct IsSameType {
    static constexpr bool value = false;
};
template <typename T> struct IsSameType<T, T> {
    static constexpr bool value = true;
};

/* AscendC::Std: the subset of <type_traits> AscendC re-exports for device code. */
namespace Std {
using std::add_const;
using std::add_cv;
using std::add_lvalue_reference;
using std::add_pointer;
using std::add_rvalue_reference;
using std::add_volatile;
using std::bool_constant;
using std::conditional;
using std::conditional_t;
using std::decay;
using std::decay_t;
using std::enable_if;
using std::enable_if_t;
using std::false_type;
using std::integral_constant;
using std::is_array;
using std::is_base_of;
using std::is_class;
using std::is_const;
using std::is_convertible;
using std::is_floating_point;
using std::is_function;
using std::is_integral;
using std::is_pointer;
using std::is_reference;
using std::is_same;
using std::is_same_v;
using std::is_union;
using std::is_void;
using std::remove_const;
using std::remove_cv;
using std::remove_pointer;
using std::remove_reference;
using std::remove_reference_t;
using std::remove_volatile;
using std::true_type;
template <typename T> struct remove_cvref {
    using type = std::remove_cv_t<std::remove_reference_t<T>>;
};
template <typename T> using remove_cvref_t = typename remove_cvref<T>::type;
template <typename T, typename U> struct IsSame : std::is_same<T, U> {};
template <typename T, typename U> struct IsNotSame : std::bool_constant<!std::is_same<T, U>::value> {};
template <typename T, typename... U> struct is_one_of : std::bool_constant<(std::is_same<T, U>::value || ...)> {};
template <typename T, typename... U> constexpr bool is_one_of_v = is_one_of<T, U...>::value;
} // namespace Std

} // namespace AscendC

#endif
