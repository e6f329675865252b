/*
 * utils/debug/asc_printf.h for the aiv-comm CPU twin: the kernel's `printf` (AscendC declares a
 * global-namespace `template <class... Args> printf(const __gm__ char *fmt, Args &&...args)` for
 * kernel code here; host code of the same source calls the C library's).
 *
 * The NPU compiler builds an `.asc` source twice, so each side sees its own printf. The twin
 * builds it once with the host compiler, where a template `::printf` would lose to the C
 * library's for a call without arguments (a non-template wins a tie) and would take host calls
 * with arguments. So here `printf(...)` is a function-like macro for asc_twin_printf, which
 * decides when it runs: in a kernel block it prints as AscendC::printf (the twin's
 * `[rank r] [AIV Block b/n] ` prefix, the NPU's conversions, ASCENDC_DUMP=0 turns it off);
 * anywhere else (the host) it is the C library's printf with its return value. `std::printf`,
 * `::printf` and `AscendC::printf` calls after this header go the same way.
 *
 * The macro applies to the source after this header: a function or member named `printf`
 * declared after it would be renamed too (the C library's declarations come before it).
 */
#ifndef ASC_TWIN_UTILS_DEBUG_ASC_PRINTF_H
#define ASC_TWIN_UTILS_DEBUG_ASC_PRINTF_H

#include <cstdio>
#include <type_traits>
#include <utility>

#include "kernel_operator.h"

namespace asc_twin {
/* Whether the C library's printf takes an argument of type T (through `...`). */
template <typename T> constexpr bool HostPrintfTakes()
{
    using U = std::decay_t<T>;
    return std::is_arithmetic<U>::value || std::is_pointer<U>::value || std::is_enum<U>::value ||
           std::is_null_pointer<U>::value;
}
} // namespace asc_twin

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
/* `printf` of a source that includes this header: the kernel's in a kernel block, else the C
 * library's (see the top of this file). */
template <class... Args> inline int asc_twin_printf(const char *fmt, Args &&...args)
{
    if (asc_twin_block_num() > 0) {
        if constexpr ((asc_twin::PrintfTakes<Args>() && ...)) {
            // The host's lines printed so far come first (the C library buffers them).
            std::fflush(stdout);
            AscendC::printf(fmt, std::forward<Args>(args)...);
        } else {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DEBUG,
                                         "printf in a kernel with an argument the NPU's printf does not take (double "
                                         "or a class type; it takes integers, float, half, bfloat16_t and pointers)",
                                         0, 0));
        }
        return 0;
    }
    if constexpr ((asc_twin::HostPrintfTakes<Args>() && ...)) {
        return std::printf(fmt, args...);
    } else {
        static_assert((asc_twin::PrintfTakes<Args>() && ...),
                      "printf with arguments neither the C library's nor the kernel's printf takes");
        std::fputs("[asc-twin] printf with half / bfloat16_t arguments outside a kernel\n", stderr);
        return -1;
    }
}
#pragma GCC diagnostic pop

namespace std {
using ::asc_twin_printf;
}
namespace AscendC {
using ::asc_twin_printf;
}

#define printf(...) asc_twin_printf(__VA_ARGS__)

#endif
