// The twin's C ABI as the C++ compiler sees it, for the unit tests of src/abi.rs: every code,
// constant and layout number of asc_twin_abi.h (and the AscendC values that cross it), by name,
// and two kernels that go through the real boundary. Only the tests reference these symbols, so
// this object is linked into nothing else.
#include <cstddef>
#include <cstdint>

#include "asc_twin_launch.h"
#include "kernel_operator.h"

/* One fact: a C expression, as written here, and its value. */
struct AscTwinAbiFact {
    const char *name;
    int64_t value;
};

#define ASC_TWIN_FACT(x) {#x, static_cast<int64_t>(x)}
#define ASC_TWIN_SIZE(t) {"sizeof(" #t ")", static_cast<int64_t>(sizeof(t))}
#define ASC_TWIN_OFFSET(t, f) {"offsetof(" #t ", " #f ")", static_cast<int64_t>(offsetof(t, f))}
#define ASC_TWIN_EVENT(e) {"HardEvent::" #e, static_cast<int64_t>(AscendC::HardEvent::e)}

extern "C" const AscTwinAbiFact asc_twin_abi_facts[] = {
    ASC_TWIN_FACT(ASC_TWIN_OK),
    ASC_TWIN_FACT(ASC_TWIN_FAULT),
    ASC_TWIN_FACT(ASC_TWIN_NO_BLOCK),
    ASC_TWIN_FACT(ASC_TWIN_EVENT_FAILED),
    ASC_TWIN_FACT(ASC_TWIN_BLOCK_OK),
    ASC_TWIN_FACT(ASC_TWIN_BLOCK_ABORTED),
    ASC_TWIN_FACT(ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION),
    ASC_TWIN_FACT(ASC_TWIN_BLOCK_STACK_OVERFLOW),
    ASC_TWIN_FACT(ASC_TWIN_DATA_COPY),
    ASC_TWIN_FACT(ASC_TWIN_DATA_COPY_STRIDED),
    ASC_TWIN_FACT(ASC_TWIN_DATA_COPY_PAD),
    ASC_TWIN_FACT(ASC_TWIN_GM_TO_UB),
    ASC_TWIN_FACT(ASC_TWIN_UB_TO_GM),
    ASC_TWIN_FACT(ASC_TWIN_DT_UNSUPPORTED),
    ASC_TWIN_FACT(ASC_TWIN_DT_F32),
    ASC_TWIN_FACT(ASC_TWIN_DT_F16),
    ASC_TWIN_FACT(ASC_TWIN_DT_BF16),
    ASC_TWIN_FACT(ASC_TWIN_DT_I32),
    ASC_TWIN_FACT(ASC_TWIN_DT_I16),
    ASC_TWIN_FACT(ASC_TWIN_DT_I8),
    ASC_TWIN_FACT(ASC_TWIN_DT_OTHER_INT),
    ASC_TWIN_FACT(ASC_TWIN_ATOMIC_NONE),
    ASC_TWIN_FACT(ASC_TWIN_ATOMIC_ADD),
    ASC_TWIN_FACT(ASC_TWIN_ATOMIC_MAX),
    ASC_TWIN_FACT(ASC_TWIN_ATOMIC_MIN),
    ASC_TWIN_FACT(ASC_TWIN_SET_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_WAIT_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_PIPE_BARRIER),
    ASC_TWIN_FACT(ASC_TWIN_QUEUE_SET_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_QUEUE_WAIT_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_ALLOC_EVENT),
    ASC_TWIN_FACT(ASC_TWIN_RELEASE_EVENT),
    ASC_TWIN_FACT(ASC_TWIN_FETCH_EVENT),
    ASC_TWIN_FACT(ASC_TWIN_QUEUE_ALLOC_EVENT),
    ASC_TWIN_FACT(ASC_TWIN_QUEUE_RELEASE_EVENT),
    ASC_TWIN_FACT(ASC_TWIN_LOAD),
    ASC_TWIN_FACT(ASC_TWIN_STORE),
    ASC_TWIN_FACT(ASC_TWIN_UB_SCALAR_READ),
    ASC_TWIN_FACT(ASC_TWIN_UB_SCALAR_WRITE),
    ASC_TWIN_FACT(ASC_TWIN_UB_VECTOR_WRITE),
    ASC_TWIN_FACT(ASC_TWIN_UB_VECTOR_READ),
    ASC_TWIN_FACT(ASC_TWIN_CROSS_SET_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_CROSS_WAIT_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_CROSS_SYNC_ALL),
    ASC_TWIN_FACT(ASC_TWIN_SYNC_ALL_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_TPIPE_GET),
    ASC_TWIN_FACT(ASC_TWIN_TPIPE_SET),
    ASC_TWIN_FACT(ASC_TWIN_TPIPE_CLEAR),
    ASC_TWIN_FACT(ASC_TWIN_OP_INIT_BUFFER),
    ASC_TWIN_FACT(ASC_TWIN_OP_LOCAL_INDEX),
    ASC_TWIN_FACT(ASC_TWIN_OP_GLOBAL_INDEX),
    ASC_TWIN_FACT(ASC_TWIN_OP_QUEUE),
    ASC_TWIN_FACT(ASC_TWIN_OP_DUPLICATE),
    ASC_TWIN_FACT(ASC_TWIN_OP_FLAG),
    ASC_TWIN_FACT(ASC_TWIN_OP_SYNC_ALL),
    ASC_TWIN_FACT(ASC_TWIN_OP_ALLOCATOR),
    ASC_TWIN_FACT(ASC_TWIN_OP_BUF_POOL),
    ASC_TWIN_FACT(ASC_TWIN_OP_CROSS_CORE),
    ASC_TWIN_FACT(ASC_TWIN_OP_DEBUG),
    ASC_TWIN_FACT(ASC_TWIN_OP_VECTOR),
    ASC_TWIN_FACT(ASC_TWIN_OP_DATA_COPY_PAD),
    ASC_TWIN_SIZE(AscTwinCopy),
    ASC_TWIN_OFFSET(AscTwinCopy, api),
    ASC_TWIN_OFFSET(AscTwinCopy, dir),
    ASC_TWIN_OFFSET(AscTwinCopy, ub),
    ASC_TWIN_OFFSET(AscTwinCopy, ub_cap),
    ASC_TWIN_OFFSET(AscTwinCopy, gm),
    ASC_TWIN_OFFSET(AscTwinCopy, elem_size),
    ASC_TWIN_OFFSET(AscTwinCopy, block_count),
    ASC_TWIN_OFFSET(AscTwinCopy, block_len),
    ASC_TWIN_OFFSET(AscTwinCopy, src_stride),
    ASC_TWIN_OFFSET(AscTwinCopy, dst_stride),
    ASC_TWIN_OFFSET(AscTwinCopy, is_pad),
    ASC_TWIN_OFFSET(AscTwinCopy, left_pad),
    ASC_TWIN_OFFSET(AscTwinCopy, right_pad),
    ASC_TWIN_OFFSET(AscTwinCopy, pad_value),
    ASC_TWIN_SIZE(AscTwinUbRange),
    ASC_TWIN_OFFSET(AscTwinUbRange, kind),
    ASC_TWIN_OFFSET(AscTwinUbRange, reserved),
    ASC_TWIN_OFFSET(AscTwinUbRange, ub),
    ASC_TWIN_OFFSET(AscTwinUbRange, bytes),
    ASC_TWIN_SIZE(AscTwinVecRegs),
    ASC_TWIN_OFFSET(AscTwinVecRegs, mask),
    ASC_TWIN_OFFSET(AscTwinVecRegs, counter),
    ASC_TWIN_OFFSET(AscTwinVecRegs, mask_undefined),
    ASC_TWIN_OFFSET(AscTwinVecRegs, cmp),
    ASC_TWIN_OFFSET(AscTwinVecRegs, deq),
    ASC_TWIN_OFFSET(AscTwinVecRegs, deq_set),
    ASC_TWIN_OFFSET(AscTwinVecRegs, acc),
    ASC_TWIN_OFFSET(AscTwinVecRegs, pad_value),
    ASC_TWIN_OFFSET(AscTwinVecRegs, pad_size),
    ASC_TWIN_OFFSET(AscTwinVecRegs, pad_reserved),
    ASC_TWIN_SIZE(asc_twin::ParamInfo),
    ASC_TWIN_OFFSET(asc_twin::ParamInfo, size),
    ASC_TWIN_OFFSET(asc_twin::ParamInfo, align),
    ASC_TWIN_FACT(PIPE_ALL),
    ASC_TWIN_FACT(AscendC::QUE_MAX_EVENT),
    ASC_TWIN_EVENT(MTE2_MTE1),
    ASC_TWIN_EVENT(MTE1_MTE2),
    ASC_TWIN_EVENT(MTE1_M),
    ASC_TWIN_EVENT(M_MTE1),
    ASC_TWIN_EVENT(MTE2_V),
    ASC_TWIN_EVENT(V_MTE2),
    ASC_TWIN_EVENT(MTE3_V),
    ASC_TWIN_EVENT(V_MTE3),
    ASC_TWIN_EVENT(M_V),
    ASC_TWIN_EVENT(V_M),
    ASC_TWIN_EVENT(V_V),
    ASC_TWIN_EVENT(MTE3_MTE1),
    ASC_TWIN_EVENT(MTE1_MTE3),
    ASC_TWIN_EVENT(MTE1_V),
    ASC_TWIN_EVENT(MTE2_M),
    ASC_TWIN_EVENT(M_MTE2),
    ASC_TWIN_EVENT(V_MTE1),
    ASC_TWIN_EVENT(M_FIX),
    ASC_TWIN_EVENT(FIX_M),
    ASC_TWIN_EVENT(MTE3_MTE2),
    ASC_TWIN_EVENT(MTE2_MTE3),
    ASC_TWIN_EVENT(S_V),
    ASC_TWIN_EVENT(V_S),
    ASC_TWIN_EVENT(S_MTE2),
    ASC_TWIN_EVENT(MTE2_S),
    ASC_TWIN_EVENT(S_MTE3),
    ASC_TWIN_EVENT(MTE3_S),
    ASC_TWIN_EVENT(MTE2_FIX),
    ASC_TWIN_EVENT(FIX_MTE2),
    ASC_TWIN_EVENT(FIX_S),
    ASC_TWIN_EVENT(M_S),
    ASC_TWIN_EVENT(FIX_MTE3),
    ASC_TWIN_EVENT(MTE1_FIX),
    ASC_TWIN_EVENT(FIX_MTE1),
    ASC_TWIN_EVENT(FIX_FIX),
    ASC_TWIN_EVENT(MAX),
};

extern "C" const uint64_t asc_twin_abi_fact_count = sizeof(asc_twin_abi_facts) / sizeof(asc_twin_abi_facts[0]);

/* A kernel block that reports a misuse the way the twin's headers do: asc_twin_fail with a
 * fault-op code, then asc_twin_check, which throws when the runtime recorded the fault. */
extern "C" void asc_twin_probe_fail(uint8_t *)
{
    asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DATA_COPY_PAD, "probe: a misuse reported by the C++ side", 7, 3));
}

/* A kernel block that throws something other than AscTwinAbort. */
extern "C" void asc_twin_probe_throw(uint8_t *) { throw 42; }
