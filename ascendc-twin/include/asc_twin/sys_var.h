/*
 * System variables: block index and count (AscendC functions and the CCE builtins), sub-block
 * and task ratio, the system counter, Trap.
 */
#ifndef ASC_TWIN_SYS_VAR_H
#define ASC_TWIN_SYS_VAR_H

#include "enums.h"

namespace asc_twin {
/* The CCE builtin variables `block_idx` / `block_num`: read like an int64_t. */
struct BlockIdxVar {
    operator int64_t() const { return asc_twin_block_idx(); }
};
struct BlockNumVar {
    operator int64_t() const { return asc_twin_block_num(); }
};
} // namespace asc_twin

inline constexpr asc_twin::BlockIdxVar block_idx{};
inline constexpr asc_twin::BlockNumVar block_num{};

/* The CCE builtin trap(): stops the AI core. */
inline void trap() { asc_twin_check(asc_twin_trap()); }

namespace AscendC {

/* The twin launches AIV-only kernels: one vector sub-block per block, task ratio 1, so
 * GetBlockIdx() is block_idx. */
__aicore__ inline int64_t GetBlockIdx() { return asc_twin_block_idx(); }
__aicore__ inline int64_t GetBlockNum() { return asc_twin_block_num(); }
__aicore__ inline int64_t GetSubBlockIdx() { return 0; }
__aicore__ inline int64_t GetSubBlockNum() { return 1; }
__aicore__ inline int64_t GetTaskRatio() { return 1; }
__aicore__ inline int64_t GetTaskRation() { return GetTaskRatio(); }
/* A2 system counter: 50 MHz (cycles / 50 = microseconds), as the AscendC docs state. */
__aicore__ inline int64_t GetSystemCycle() { return asc_twin_system_cycle(); }

/* Stops the AI core (NPU) / fails the block with a named fault (twin). */
__aicore__ inline void Trap() { asc_twin_check(asc_twin_trap()); }

} // namespace AscendC

#endif
