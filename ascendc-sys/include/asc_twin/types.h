/*
 * Data types (half, bfloat16_t, the fp8 storage types), AscendC::Std traits and the small
 * arithmetic helpers kernels use (DivCeil, AlignUp, ...).
 */
#ifndef ASC_TWIN_TYPES_H
#define ASC_TWIN_TYPES_H

#include "base.h"

inline uint16_t asc_twin_f32_to_f16_bits(float value)
{
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu) {
        return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    }
    const int32_t e = static_cast<int32_t>(exp) - 127 + 15;
    if (e >= 31) {
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (e <= 0) {
        if (e < -10) {
            return static_cast<uint16_t>(sign);
        }
        mant |= 0x800000u;
        const uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t half_mant = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) {
            half_mant++;
        }
        return static_cast<uint16_t>(sign | half_mant);
    }
    uint32_t out = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (out & 1u))) {
        out++;
    }
    return static_cast<uint16_t>(out);
}

inline float asc_twin_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                exp--;
            }
            x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
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

/* (a + b - 1) / b, as AscendC's. */
__aicore__ constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
/* a rounded up to a multiple of b. */
__aicore__ constexpr inline uint32_t AlignUp(uint32_t a, uint32_t b) { return DivCeil(a, b) * b; }
template <typename T, typename U> __aicore__ constexpr inline auto ConstCeil(T a, U b) { return (a + b - 1) / b; }
template <typename T, typename U> __aicore__ inline auto Ceil(T a, U b) { return (a + b - 1) / b; }
/* a / b rounded up; 0 when b is 0. */
__aicore__ inline int32_t CeilDivision(int32_t a, int32_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

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
