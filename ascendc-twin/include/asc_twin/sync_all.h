/*
 * Synchronisation across the cores of a launch: SyncAll (software form over a GM workspace, and
 * the hardware form), CrossCoreSetFlag / CrossCoreWaitFlag.
 *
 * Modelled for AIV-only launches: cross-core mode 0 (every AIV core of the launch) and the
 * hardware SyncAll built on it. Modes 1 and 2 pair cores inside one AI Core (its two AIVs, or
 * its AIC and AIVs) and need a mix kernel the twin does not model; the runtime refuses them by
 * name. (The AscendC docs ask for a __mix__(0, 1) kernel type for the hardware forms; CANN's
 * build tools switch an AIV-only kernel that uses them to that type, and so does nothing here.)
 */
#ifndef ASC_TWIN_SYNC_ALL_H
#define ASC_TWIN_SYNC_ALL_H

#include "data_copy.h"
#include "sys_var.h"
#include "tpipe.h"

namespace asc_twin {
template <AscendC::HardEvent e> inline void Pair(AscendC::TPipe *pipe)
{
    const AscendC::TEventID id = pipe->FetchEventID(e);
    AscendC::SetFlag<e>(id);
    AscendC::WaitFlag<e>(id);
}
} // namespace asc_twin

namespace AscendC {

/* Software barrier of `usedCores` cores (0: all) over a GM workspace of 32 bytes per core,
 * zeroed before the first call; ubWorkspace holds as much. Needs a TPipe (it takes event ids
 * from it). Each core bumps its own slot, then polls until every slot has reached its value. */
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                               const int32_t usedCores = 0)
{
    static_assert(isAIVOnly, "SyncAll<false> synchronises with cube cores: the aiv-comm twin models AIV cores only");
    const int64_t blocks = GetBlockNum();
    const int64_t n = usedCores == 0 ? blocks : usedCores;
    const int64_t me = GetBlockIdx();
    if (usedCores < 0 || n > blocks) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_SYNC_ALL, "SyncAll: usedCores must be 0 or 1..GetBlockNum()",
                                     static_cast<uint64_t>(usedCores), static_cast<uint64_t>(blocks)));
    }
    if (me >= n) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_SYNC_ALL,
                                     "SyncAll called by a block outside its usedCores (it would never be released)",
                                     static_cast<uint64_t>(me), static_cast<uint64_t>(n)));
    }
    if (ubWorkspace.GetSize() < static_cast<uint64_t>(n) * 8) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_SYNC_ALL, "SyncAll: ubWorkspace is smaller than 32 bytes per core",
                                     ubWorkspace.GetSize() * 4, static_cast<uint64_t>(n) * 32));
    }
    TPipe *pipe = GetTPipePtr();
    if (pipe == nullptr) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_SYNC_ALL,
                                     "SyncAll (GM workspace form) needs a TPipe: it takes its event ids from it", 0,
                                     0));
    }
    // The cores poll each other's slots: flag memory for the race checker.
    uint8_t *const flags = reinterpret_cast<uint8_t *>(const_cast<int32_t *>(gmWorkspace.GetPhyAddr()));
    asc_twin_check(asc_twin_sync_flags(ASC_TWIN_SYNC_ALL_GM, flags, static_cast<uint64_t>(n) * 32));
    DataCopy(ubWorkspace, gmWorkspace[me * 8], 8);
    asc_twin::Pair<HardEvent::MTE2_S>(pipe);
    const int32_t target = ubWorkspace.GetValue(0) + 1;
    ubWorkspace.SetValue(0, target);
    asc_twin::Pair<HardEvent::S_MTE3>(pipe);
    DataCopy(gmWorkspace[me * 8], ubWorkspace, 8);
    asc_twin::Pair<HardEvent::MTE3_MTE2>(pipe);
    // A block that waits here is named in the watchdog's report.
    asc_twin_check(asc_twin_sync_wait(ASC_TWIN_SYNC_ALL_GM, flags, static_cast<uint64_t>(n) * 32, n, target));
    for (;;) {
        DataCopy(ubWorkspace, gmWorkspace, static_cast<uint32_t>(n * 8));
        asc_twin::Pair<HardEvent::MTE2_S>(pipe);
        bool all = true;
        for (int64_t k = 0; k < n && all; k++) {
            all = ubWorkspace.GetValue(static_cast<uint32_t>(k * 8)) >= target;
        }
        if (all) {
            break;
        }
    }
    asc_twin_check(asc_twin_sync_wait(ASC_TWIN_SYNC_NONE, nullptr, 0, 0, 0));
}

/* Hardware barrier of every AIV core of the launch (cross-core flag ASC_TWIN_SYNC_ALL_FLAG, 14). */
template <bool isAIVOnly = true> __aicore__ inline void SyncAll()
{
    static_assert(isAIVOnly, "SyncAll<false> synchronises with cube cores: the aiv-comm twin models AIV cores only");
    asc_twin_check(asc_twin_cross_core(ASC_TWIN_CROSS_SYNC_ALL, 0, ASC_TWIN_SYNC_ALL_FLAG));
}

/* Sets cross-core flag `flagId` (0..15) once `pipe`'s earlier work is done. */
template <uint8_t modeId, pipe_t pipe> __aicore__ inline void CrossCoreSetFlag(uint16_t flagId)
{
    static_assert(pipe != PIPE_S && pipe != PIPE_ALL, "CrossCoreSetFlag: on Atlas A2 the pipe cannot be PIPE_S or PIPE_ALL");
    asc_twin_check(asc_twin_cross_core(ASC_TWIN_CROSS_SET_FLAG, modeId, flagId));
}
/* Waits until this core's counter of cross-core flag `flagId` is positive, and takes one. */
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S> __aicore__ inline void CrossCoreWaitFlag(uint16_t flagId)
{
    asc_twin_check(asc_twin_cross_core(ASC_TWIN_CROSS_WAIT_FLAG, modeId, flagId));
}

} // namespace AscendC

#endif
