/*
 * InitOutput: fills `size` elements of GM with one value, through UB. AscendC marks it deprecated
 * (its successor is Fill) and has no docs page for it; public samples still call it. What the twin
 * models is read from asc-devkit's sources for Atlas A2 (impl/basic_api/
 * kernel_operator_common_intf_impl.h, impl/basic_api/kernel_pop_stack_buffer.h, the dav_c220
 * Duplicate and KfcMsg); the code here is the twin's own:
 *  - the signature: InitOutput<T>(GlobalTensor<T> (by value), uint32_t size, T value = 0), T one
 *    of Duplicate's types, declared as entered on PIPE_V and left on PIPE_MTE3;
 *  - UB scratch: from the current TPipe's queue end (the end of the buffers it has handed out,
 *    32-byte aligned) to 128 bytes before the end of A2's 192 KB UB (those hold the cube-message
 *    area, a KfcMsg); whatever else a kernel keeps there is overwritten. One chunk is
 *    min(scratch bytes, 255 blocks of 32 bytes) / sizeof(T) elements;
 *  - the vector unit fills one chunk with `value` (Duplicate, count form: the mask registers are
 *    left as after any level-2 call) whatever `size` is, then SetFlag/WaitFlag<V_MTE3> on an id
 *    the TPipe's FetchEventID gives; then MTE3 copies out, DataCopyPad UB -> GM with one block of
 *    chunk * sizeof(T) bytes for each whole chunk of `size`, and one of the rest, if any. So size
 *    0 copies nothing, and no GM alignment is asked for (DataCopyPad takes any GM address);
 *  - the atomic store mode is neither set nor cleared: under SetAtomicAdd the copies add;
 *  - nothing orders the copies after the call: a reader of the GM on this core (MTE2, scalar), a
 *    later write of the scratch (the next InitOutput's fill: MTE3 -> V), or another core (e.g.
 *    SyncAll) must be ordered by the caller, as for any copy-out; the twin's checkers see the
 *    fill and the copies as the V and MTE3 accesses they are, and report a missing order.
 * Where the sources give no rule (release builds do not check), the twin stops with a Misuse
 * (assumed: the NPU would fault or write garbage, never fill correctly): without a TPipe
 * (AscendC reads the TPipe's allocation through a null pointer), and when no UB is left past the
 * TPipe's buffers (a chunk of 0 elements: AscendC divides by it). A UB smaller than 192 KB is
 * refused, as GroupBarrier refuses it: the scratch's end is A2's. InitOutput does nothing on a
 * cube core; the twin has none.
 */
#ifndef ASC_TWIN_INIT_OUTPUT_H
#define ASC_TWIN_INIT_OUTPUT_H

#include "data_copy.h"
#include "sync_all.h"
#include "tpipe.h"
#include "vector.h"

namespace AscendC {

template <typename T>
__aicore__ inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0)
{
    static_assert(asc_twin::vec::DupType<T>(),
                  "InitOutput supports Duplicate's types: half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t "
                  "and float");
    constexpr uint64_t kUbBytes = 192 * 1024;
    constexpr uint64_t kMsgBytes = 128;
    constexpr uint64_t kEnd = kUbBytes - kMsgBytes;
    constexpr uint64_t kMaxChunkBytes = 255 * ONE_BLK_SIZE;
    TPipe *pipe = GetTPipePtr();
    if (pipe == nullptr) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_OUTPUT,
                                     "InitOutput needs a TPipe: its UB scratch starts past the TPipe's buffers", 0,
                                     0));
    }
    uint8_t *ub = nullptr;
    uint64_t cap = 0;
    asc_twin_check(asc_twin_ub_arena(&ub, &cap));
    if (cap < kUbBytes) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_OUTPUT, "InitOutput: UB is smaller than 192 KB", cap, kUbBytes));
    }
    const uint64_t start = pipe->TwinQueueEnd();
    const uint64_t avail = start < kEnd ? (kEnd - start) / sizeof(T) : 0;
    if (avail == 0) {
        /* value: where the TPipe's buffers end; limit: where the scratch ends (UB addresses). */
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_OUTPUT,
                                     "InitOutput: no UB is left past the TPipe's buffers for its scratch (it ends 128 "
                                     "bytes before the end of UB)",
                                     start, kEnd));
    }
    constexpr uint64_t kMaxChunk = kMaxChunkBytes / sizeof(T);
    const uint32_t chunk = static_cast<uint32_t>(avail < kMaxChunk ? avail : kMaxChunk);
    const LocalTensor<T> scratch =
        asc_twin::Access::Make<T>(reinterpret_cast<T *>(ub + start), chunk, TPosition::LCM, nullptr);
    Duplicate(scratch, value, static_cast<int32_t>(chunk));
    asc_twin::Pair<HardEvent::V_MTE3>(pipe);
    const uint32_t whole = size / chunk;
    const uint32_t rest = size % chunk;
    DataCopyExtParams p{1, static_cast<uint32_t>(chunk * sizeof(T)), 0, 0, 0};
    for (uint32_t k = 0; k < whole; k++) {
        DataCopyPad(gmWorkspaceAddr[static_cast<uint64_t>(k) * chunk], scratch, p);
    }
    if (rest != 0) {
        p.blockLen = static_cast<uint32_t>(rest * sizeof(T));
        DataCopyPad(gmWorkspaceAddr[static_cast<uint64_t>(whole) * chunk], scratch, p);
    }
}

} // namespace AscendC

#endif
