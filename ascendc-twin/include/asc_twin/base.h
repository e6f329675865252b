/*
 * Compiler-level names of the bisheng toolchain for a host C++ compiler: kernel qualifiers,
 * address-space keywords, pipe_t / event_t, kernel task types, and the twin's error plumbing.
 */
#ifndef ASC_TWIN_BASE_H
#define ASC_TWIN_BASE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../asc_twin_abi.h"

/* Function and address-space qualifiers: meaningful to bisheng, nothing on the host. */
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __vector__
#define __cube__
#define __mix__(cube, vec)
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t *
#endif
#ifndef __inout_pipe__
#define __inout_pipe__(pipe)
#endif

/* Which core type the code is compiled for: the twin is an AIV (vector) core. Used as
 * `if ASCEND_IS_AIV { ... }`. */
#define ASCEND_IS_AIV constexpr(true)
#define ASCEND_IS_AIC constexpr(false)
#define ASCEND_IS_NOT_AIV constexpr(false)
#define ASCEND_IS_NOT_AIC constexpr(true)

/* Kernel task types (a compile-time marker for bisheng; nothing at run time). */
enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX,
};
enum KernelType {
    K_TYPE_AICORE = 1,
    K_TYPE_AIC = 2,
    K_TYPE_AIV = 3,
    K_TYPE_MIX_AIC_MAIN = 4,
    K_TYPE_MIX_AIV_MAIN = 5,
    K_TYPE_AIC_ROLLBACK = 6,
    K_TYPE_AIV_ROLLBACK = 7,
    K_TYPE_MAX
};
#define KERNEL_TASK_TYPE_DEFAULT(value) static_assert(static_cast<int>(value) >= 0, "kernel task type")
#define KERNEL_TASK_TYPE(key, value) static_assert(static_cast<int>(value) >= 0, "kernel task type")

/* Hardware pipes and event ids, global as in the CCE toolchain. */
enum pipe_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX };
/* PipeBarrier passes a pipe_t to the runtime (asc_twin_pipe), which knows PIPE_ALL's value. */
static_assert(PIPE_ALL == 6, "PIPE_ALL is pinned: change PIPE_ALL in src/pipes.rs too");
enum event_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

/* Thrown by the twin when the runtime has recorded an error for this block; caught by the twin's
 * launch trampoline. Kernel code never sees it. */
struct AscTwinAbort {};

inline void asc_twin_check(int32_t rc)
{
    if (rc != 0) {
        throw AscTwinAbort{};
    }
}

namespace asc_twin {
/* For static_asserts that must fire only when a template is used. */
template <typename... T> constexpr bool always_false = false;
/* Tag of the twin's internal LocalTensor constructor (not an AscendC API). */
struct RawTag {};
} // namespace asc_twin

#endif
