/*
 * Launch trampolines of the CPU twin for kernels with ordinary signatures.
 *
 * A kernel `extern "C" __global__ __aicore__ void name(GM_ADDR x, uint32_t n, Tiling t)` is
 * launched from Rust with one argument block (ascendc-twin `ArgBlock`). `ASC_TWIN_KERNEL(name)`,
 * written after the kernel's definition (the ascendc-build crate generates it), defines
 *
 *   extern "C" void asc_twin_entry_name(uint8_t *block);   unpacks the block, calls the kernel
 *   extern "C" uint32_t asc_twin_sig_name(const asc_twin::ParamInfo **params);
 *                                                         each parameter's sizeof and alignof
 *
 * The C++ compiler knows the kernel's function type, so nothing about the parameters is written
 * by hand. The block layout is the BiSheng kernel ABI's: parameters in declaration order, each
 * at an offset aligned to alignof(T) rounded up to a multiple of 4 (so bool and uint16_t take
 * 4-aligned slots), structs copied whole. The Rust side packs with the same rule and checks the
 * sizes and alignments reported here before a launch.
 */
#ifndef ASC_TWIN_LAUNCH_H
#define ASC_TWIN_LAUNCH_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "asc_twin_abi.h"

namespace asc_twin {

/* Mirrors ascendc_twin::ParamInfo. */
struct ParamInfo {
    uint32_t size;
    uint32_t align;
};
/* Pinned to the same numbers after ascendc_twin::ParamInfo (src/kernel.rs). */
static_assert(sizeof(ParamInfo) == 8, "sizeof(ParamInfo) is pinned: change its mirror in src/kernel.rs too");
static_assert(offsetof(ParamInfo, size) == 0, "offsetof(ParamInfo, size) is pinned: see src/kernel.rs");
static_assert(offsetof(ParamInfo, align) == 4, "offsetof(ParamInfo, align) is pinned: see src/kernel.rs");

constexpr size_t SlotAlign(size_t align) { return (align + 3) / 4 * 4; }

template <typename... A> struct Params {
    static constexpr size_t N = sizeof...(A);
    /* One extra entry so a kernel without parameters still has an array. */
    static constexpr ParamInfo info[N + 1] = {{static_cast<uint32_t>(sizeof(A)), static_cast<uint32_t>(alignof(A))}...,
                                              {0, 0}};

    struct Offsets {
        size_t at[N + 1];
    };
    static constexpr Offsets Layout()
    {
        Offsets o{};
        const size_t sizes[N + 1] = {sizeof(A)..., 0};
        const size_t aligns[N + 1] = {SlotAlign(alignof(A))..., 1};
        size_t end = 0;
        for (size_t i = 0; i < N; i++) {
            end = (end + aligns[i] - 1) / aligns[i] * aligns[i];
            o.at[i] = end;
            end += sizes[i];
        }
        o.at[N] = end;
        return o;
    }
    static constexpr Offsets offsets = Layout();
};

/* Copies a T out of the block (which need not be aligned for T). */
template <typename T> inline T Load(const uint8_t *p)
{
    static_assert(std::is_trivially_copyable<T>::value,
                  "an AscendC kernel parameter must be a basic type, a GM pointer or a POD struct "
                  "(trivially copyable)");
    static_assert(!std::is_reference<T>::value, "an AscendC kernel parameter cannot be a reference");
    static_assert(std::is_default_constructible<T>::value,
                  "the twin's launch trampoline needs kernel parameter types to be default-constructible");
    T v;
    std::memcpy(static_cast<void *>(&v), p, sizeof(T));
    return v;
}

template <typename... A, size_t... I>
inline void Call(void (*kernel)(A...), const uint8_t *block, std::index_sequence<I...>)
{
    kernel(Load<A>(block + Params<A...>::offsets.at[I])...);
}

template <typename... A> inline void Invoke(void (*kernel)(A...), uint8_t *block)
{
    Call(kernel, block, std::index_sequence_for<A...>{});
}

template <typename... A> inline uint32_t Signature(void (*)(A...), const ParamInfo **params)
{
    *params = Params<A...>::info;
    return static_cast<uint32_t>(sizeof...(A));
}

} // namespace asc_twin

/* Whether the kernels of this translation unit were built with the compiler's automatic
 * synchronisation (`--cce-auto-sync`, on in AscendC kernel projects): ascendc-build defines it
 * (Build::auto_sync); on unless told otherwise. */
#ifndef ASC_TWIN_AUTO_SYNC
#define ASC_TWIN_AUTO_SYNC 1
#endif

#define ASC_TWIN_KERNEL(name)                                                                                         \
    extern "C" void asc_twin_entry_##name(uint8_t *block)                                                           \
    {                                                                                                                 \
        asc_twin_auto_sync(ASC_TWIN_AUTO_SYNC);                                                                       \
        asc_twin::Invoke(&name, block);                                                                               \
    }                                                                                                                 \
    extern "C" uint32_t asc_twin_sig_##name(const asc_twin::ParamInfo **params)                                      \
    {                                                                                                                 \
        return asc_twin::Signature(&name, params);                                                                    \
    }

#endif /* ASC_TWIN_LAUNCH_H */
