/*
 * Intra-core pipe synchronisation: SetFlag / WaitFlag / PipeBarrier, TQueSync, and the CCE
 * builtins set_flag / wait_flag / pipe_barrier.
 *
 * The twin runs the pipes of a core in program order on one host thread. These calls are still
 * reported to the runtime, which checks they pair up (a WaitFlag with no SetFlag before it
 * would hang the NPU) and feeds the pipe-hazard checker.
 */
#ifndef ASC_TWIN_FLAGS_H
#define ASC_TWIN_FLAGS_H

#include "enums.h"

namespace asc_twin {
/* The HardEvent of a (src, dst) pipe pair, or HardEvent::MAX. */
constexpr AscendC::HardEvent EventOf(pipe_t src, pipe_t dst)
{
    using H = AscendC::HardEvent;
    if (src == PIPE_MTE2 && dst == PIPE_V) return H::MTE2_V;
    if (src == PIPE_V && dst == PIPE_MTE2) return H::V_MTE2;
    if (src == PIPE_MTE3 && dst == PIPE_V) return H::MTE3_V;
    if (src == PIPE_V && dst == PIPE_MTE3) return H::V_MTE3;
    if (src == PIPE_V && dst == PIPE_V) return H::V_V;
    if (src == PIPE_MTE3 && dst == PIPE_MTE2) return H::MTE3_MTE2;
    if (src == PIPE_MTE2 && dst == PIPE_MTE3) return H::MTE2_MTE3;
    if (src == PIPE_S && dst == PIPE_V) return H::S_V;
    if (src == PIPE_V && dst == PIPE_S) return H::V_S;
    if (src == PIPE_S && dst == PIPE_MTE2) return H::S_MTE2;
    if (src == PIPE_MTE2 && dst == PIPE_S) return H::MTE2_S;
    if (src == PIPE_S && dst == PIPE_MTE3) return H::S_MTE3;
    if (src == PIPE_MTE3 && dst == PIPE_S) return H::MTE3_S;
    if (src == PIPE_MTE2 && dst == PIPE_MTE1) return H::MTE2_MTE1;
    if (src == PIPE_MTE1 && dst == PIPE_MTE2) return H::MTE1_MTE2;
    if (src == PIPE_MTE1 && dst == PIPE_M) return H::MTE1_M;
    if (src == PIPE_M && dst == PIPE_MTE1) return H::M_MTE1;
    if (src == PIPE_M && dst == PIPE_V) return H::M_V;
    if (src == PIPE_V && dst == PIPE_M) return H::V_M;
    if (src == PIPE_MTE3 && dst == PIPE_MTE1) return H::MTE3_MTE1;
    if (src == PIPE_MTE1 && dst == PIPE_MTE3) return H::MTE1_MTE3;
    if (src == PIPE_MTE1 && dst == PIPE_V) return H::MTE1_V;
    if (src == PIPE_MTE2 && dst == PIPE_M) return H::MTE2_M;
    if (src == PIPE_M && dst == PIPE_MTE2) return H::M_MTE2;
    if (src == PIPE_V && dst == PIPE_MTE1) return H::V_MTE1;
    if (src == PIPE_M && dst == PIPE_FIX) return H::M_FIX;
    if (src == PIPE_FIX && dst == PIPE_M) return H::FIX_M;
    if (src == PIPE_MTE2 && dst == PIPE_FIX) return H::MTE2_FIX;
    if (src == PIPE_FIX && dst == PIPE_MTE2) return H::FIX_MTE2;
    if (src == PIPE_FIX && dst == PIPE_S) return H::FIX_S;
    if (src == PIPE_M && dst == PIPE_S) return H::M_S;
    if (src == PIPE_FIX && dst == PIPE_MTE3) return H::FIX_MTE3;
    if (src == PIPE_MTE1 && dst == PIPE_FIX) return H::MTE1_FIX;
    if (src == PIPE_FIX && dst == PIPE_MTE1) return H::FIX_MTE1;
    if (src == PIPE_FIX && dst == PIPE_FIX) return H::FIX_FIX;
    return H::MAX;
}

inline void Flag(uint32_t op, pipe_t src, pipe_t dst, int32_t id)
{
    const AscendC::HardEvent e = EventOf(src, dst);
    if (e == AscendC::HardEvent::MAX) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_FLAG, "set_flag/wait_flag between two pipes that have no HardEvent",
                                     static_cast<uint64_t>(src), static_cast<uint64_t>(dst)));
    }
    asc_twin_check(asc_twin_pipe(op, static_cast<uint32_t>(e), id));
}
} // namespace asc_twin

/* CCE builtins. */
inline void set_flag(pipe_t src, pipe_t dst, event_t id) { asc_twin::Flag(ASC_TWIN_SET_FLAG, src, dst, id); }
inline void wait_flag(pipe_t src, pipe_t dst, event_t id) { asc_twin::Flag(ASC_TWIN_WAIT_FLAG, src, dst, id); }
inline void pipe_barrier(pipe_t pipe) { asc_twin_check(asc_twin_pipe(ASC_TWIN_PIPE_BARRIER, pipe, 0)); }

namespace AscendC {

template <HardEvent event> __aicore__ inline void SetFlag(int32_t eventID)
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_SET_FLAG, static_cast<uint32_t>(event), eventID));
}
template <HardEvent event> __aicore__ inline void WaitFlag(int32_t eventID)
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_WAIT_FLAG, static_cast<uint32_t>(event), eventID));
}
template <pipe_t pipe> __aicore__ inline void PipeBarrier()
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_PIPE_BARRIER, static_cast<uint32_t>(pipe), 0));
}

/* SetFlag/WaitFlag between two fixed pipes. */
template <pipe_t src, pipe_t dst> class TQueSync {
public:
    static_assert(asc_twin::EventOf(src, dst) != HardEvent::MAX, "TQueSync: these two pipes have no HardEvent");
    __aicore__ inline void SetFlag(TEventID id) { asc_twin::Flag(ASC_TWIN_SET_FLAG, src, dst, id); }
    __aicore__ inline void WaitFlag(TEventID id) { asc_twin::Flag(ASC_TWIN_WAIT_FLAG, src, dst, id); }
};

} // namespace AscendC

#endif
