/*
 * Synchronisation between the blocks of a launch through flag words in a GM workspace:
 * IBSet / IBWait, InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock, and the task
 * synchronisation SetNextTaskStart / WaitPreTaskEnd (GroupBarrier: group_barrier.h).
 *
 * The AscendC docs define the first five as ordinary GM flag words that one core writes and
 * another keeps reading through UB (DataCopy), and so does the twin: each is a DataCopy poll, so
 * a waiting block parks until its flag is written (poll.rs) like any polling kernel. What the
 * twin adds: the workspace's words are flag memory for the GM race checker (their stores
 * release, their loads acquire: what a block wrote before IBSet / NotifyNextBlock is ordered
 * before what the block that waited reads after IBWait / WaitPreBlock, and data read without the
 * wait is a race), and a block waiting in one is named with the API and its arguments in the
 * watchdog's deadlock report.
 *
 * Facts the docs leave out (the workspace layout and the flag values) follow AscendC's Atlas A2
 * behaviour, so that a workspace a kernel reads or prepares means the same on the twin.
 */
#ifndef ASC_TWIN_BLOCK_SYNC_H
#define ASC_TWIN_BLOCK_SYNC_H

#include "data_copy.h"
#include "flags.h"
#include "sync_all.h"
#include "sys_var.h"
#include "tpipe.h"
#include "vector.h"

namespace asc_twin {

inline AscendC::TPipe *SyncPipe(uint32_t op, const char *message)
{
    AscendC::TPipe *pipe = GetTPipePtr();
    if (pipe == nullptr) {
        asc_twin_check(asc_twin_fail(op, message, 0, 0));
    }
    return pipe;
}

inline uint8_t *GmBytes(const AscendC::GlobalTensor<int32_t> &t)
{
    return reinterpret_cast<uint8_t *>(const_cast<int32_t *>(t.GetPhyAddr()));
}

/* The IBSet / IBWait flag of (blockIdx, eventID): 32 bytes at int32 index (eventID * cores +
 * blockIdx) * 8 of gmWorkspace, cores being GetBlockNum() (AIV-only) or twice that (mix mode),
 * which is the size the docs require (cores * 32 B * eventID_max + blockIdx_max * 32 B + 32 B).
 * Checks the documented limits first. */
template <bool isAIVOnly>
inline AscendC::GlobalTensor<int32_t> IbFlag(uint32_t api, const AscendC::GlobalTensor<int32_t> &gm,
                                             const AscendC::LocalTensor<int32_t> &ub, int32_t blockIdx, int32_t eventID)
{
    const int64_t cores = AscendC::GetBlockNum() * (isAIVOnly ? 1 : 2);
    if (blockIdx < 0 || blockIdx >= cores) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_IB_SYNC,
                                     isAIVOnly ? "IBSet/IBWait: blockIdx must be in [0, GetBlockNum() - 1]"
                                               : "IBSet/IBWait: blockIdx must be in [0, 2 * GetBlockNum() - 1] (mix mode)",
                                     static_cast<uint64_t>(blockIdx), static_cast<uint64_t>(cores)));
    }
    /* The docs give eventID no range; a negative one would name a flag before the workspace. */
    if (eventID < 0) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_IB_SYNC, "IBSet/IBWait: eventID must not be negative",
                                     static_cast<uint64_t>(eventID), 0));
    }
    if (ub.GetSize() < 8) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_IB_SYNC, "IBSet/IBWait: ubWorkspace is smaller than 32 bytes",
                                     static_cast<uint64_t>(ub.GetSize()) * 4, 32));
    }
    const uint64_t at = (static_cast<uint64_t>(eventID) * static_cast<uint64_t>(cores) + static_cast<uint64_t>(blockIdx)) * 8;
    if (gm.GetSize() != 0 && at + 8 > gm.GetSize()) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_IB_SYNC,
                                     "IBSet/IBWait: gmWorkspace is smaller than cores * 32 B * eventID + blockIdx * 32 B "
                                     "+ 32 B (its GlobalTensor size, in bytes)",
                                     gm.GetSize() * 4, (at + 8) * 4));
    }
    AscendC::GlobalTensor<int32_t> flag = gm[at];
    asc_twin_check(asc_twin_sync_flags(api, GmBytes(flag), 32));
    return flag;
}

/* Reads the flag (its 32 bytes, through ub) until its first word is `from`, then stores `to`
 * there with the rest of the 32 bytes as read. */
inline void IbHandshake(uint32_t api, AscendC::TPipe *pipe, const AscendC::GlobalTensor<int32_t> &flag,
                        const AscendC::LocalTensor<int32_t> &ub, int32_t from, int32_t to, int32_t blockIdx,
                        int32_t eventID)
{
    AscendC::PipeBarrier<PIPE_ALL>();
    asc_twin_check(asc_twin_sync_wait(api, GmBytes(flag), 32, blockIdx, eventID));
    for (;;) {
        AscendC::DataCopy(ub, flag, 8);
        Pair<AscendC::HardEvent::MTE2_S>(pipe);
        if (ub.GetValue(0) == from) {
            break;
        }
        Pair<AscendC::HardEvent::S_MTE2>(pipe);
    }
    asc_twin_check(asc_twin_sync_wait(ASC_TWIN_SYNC_NONE, nullptr, 0, 0, 0));
    ub.SetValue(0, to);
    Pair<AscendC::HardEvent::S_MTE3>(pipe);
    AscendC::DataCopy(flag, ub, 8);
    AscendC::PipeBarrier<PIPE_ALL>();
}

/* InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock keep one 32-byte slot per block
 * in gmWorkspace (its first word the round the block last finished, 0 for none) and the block's
 * own round counter in ubWorkspace[GetBlockNum() * 8], after the copy of the slots: that is why
 * the docs ask for GetBlockNum() * 32 + 32 bytes of UB. */
inline uint32_t DetermineCheck(AscendC::GlobalTensor<int32_t> &gm, AscendC::LocalTensor<int32_t> &ub)
{
    const uint32_t n = static_cast<uint32_t>(AscendC::GetBlockNum());
    if (ub.GetSize() < n * 8 + 8) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DETERMINE,
                                     "InitDetermineComputeWorkspace/WaitPreBlock/NotifyNextBlock: ubWorkspace is "
                                     "smaller than GetBlockNum() * 32 + 32 bytes",
                                     static_cast<uint64_t>(ub.GetSize()) * 4, static_cast<uint64_t>(n) * 32 + 32));
    }
    if (gm.GetSize() != 0 && gm.GetSize() < static_cast<uint64_t>(n) * 8) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DETERMINE,
                                     "InitDetermineComputeWorkspace/WaitPreBlock/NotifyNextBlock: gmWorkspace is "
                                     "smaller than GetBlockNum() * 32 bytes (its GlobalTensor size, in bytes)",
                                     gm.GetSize() * 4, static_cast<uint64_t>(n) * 32));
    }
    return n;
}

} // namespace asc_twin

namespace AscendC {

/* ---- IBSet / IBWait ---- */

/* Tells the core waiting in IBWait(gmWorkspace, _, blockIdx, eventID) that this core is done:
 * stores 1 into the flag of (blockIdx, eventID), once all earlier work of this core is complete.
 * gmWorkspace is zeroed before first use (docs). The flag is a handshake: IBWait takes it back
 * to 0, and an IBSet of a flag still 1 (its previous IBSet not yet taken) waits until it is 0
 * (the docs say only that IBSet writes 1 and IBWait waits for 1; A2's AscendC waits so).
 * Needs a TPipe (it takes event ids from it). */
template <bool isAIVOnly = true>
__aicore__ inline void IBSet(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                             int32_t blockIdx, int32_t eventID)
{
    TPipe *pipe = asc_twin::SyncPipe(ASC_TWIN_OP_IB_SYNC, "IBSet needs a TPipe: it takes its event ids from it");
    const GlobalTensor<int32_t> flag =
        asc_twin::IbFlag<isAIVOnly>(ASC_TWIN_SYNC_IB_SET, gmWorkspace, ubWorkspace, blockIdx, eventID);
    asc_twin::IbHandshake(ASC_TWIN_SYNC_IB_SET, pipe, flag, ubWorkspace, 0, 1, blockIdx, eventID);
}

/* Waits until the flag of (blockIdx, eventID) is 1 (an IBSet with the same arguments; blockIdx
 * names the core waited for), then takes it back to 0. Needs a TPipe. */
template <bool isAIVOnly = true>
__aicore__ inline void IBWait(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                              int32_t blockIdx, int32_t eventID)
{
    TPipe *pipe = asc_twin::SyncPipe(ASC_TWIN_OP_IB_SYNC, "IBWait needs a TPipe: it takes its event ids from it");
    const GlobalTensor<int32_t> flag =
        asc_twin::IbFlag<isAIVOnly>(ASC_TWIN_SYNC_IB_WAIT, gmWorkspace, ubWorkspace, blockIdx, eventID);
    asc_twin::IbHandshake(ASC_TWIN_SYNC_IB_WAIT, pipe, flag, ubWorkspace, 1, 0, blockIdx, eventID);
}

/* ---- blocks in blockIdx order: InitDetermineComputeWorkspace, WaitPreBlock, NotifyNextBlock ---- */

/* Call first, in every block: block 0 clears the GetBlockNum() slots of gmWorkspace (which
 * therefore needs no zeroing) and every block starts its round counter at 1. */
__aicore__ inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t> &gmWorkspace,
                                                     LocalTensor<int32_t> &ubWorkspace)
{
    TPipe *pipe = asc_twin::SyncPipe(ASC_TWIN_OP_DETERMINE,
                                      "InitDetermineComputeWorkspace needs a TPipe: it takes its event ids from it");
    const uint32_t n = asc_twin::DetermineCheck(gmWorkspace, ubWorkspace);
    asc_twin_check(asc_twin_sync_flags(ASC_TWIN_SYNC_DETERMINE_INIT, asc_twin::GmBytes(gmWorkspace),
                                       static_cast<uint64_t>(n) * 32));
    PipeBarrier<PIPE_ALL>();
    if (GetBlockIdx() == 0) {
        Duplicate(ubWorkspace, static_cast<int32_t>(0), static_cast<int32_t>(n * 8));
        asc_twin::Pair<HardEvent::V_MTE3>(pipe);
        DataCopy(gmWorkspace, ubWorkspace, n * 8);
    }
    ubWorkspace.SetValue(n * 8, 1);
    PipeBarrier<PIPE_ALL>();
}

/* Waits until every block before this one has called NotifyNextBlock in this round and none
 * after it has (block 0: until the last block has finished the previous round). */
__aicore__ inline void WaitPreBlock(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace)
{
    TPipe *pipe = asc_twin::SyncPipe(ASC_TWIN_OP_DETERMINE, "WaitPreBlock needs a TPipe: it takes its event ids from it");
    const uint32_t n = asc_twin::DetermineCheck(gmWorkspace, ubWorkspace);
    const uint32_t me = static_cast<uint32_t>(GetBlockIdx());
    asc_twin_check(asc_twin_sync_flags(ASC_TWIN_SYNC_WAIT_PRE_BLOCK, asc_twin::GmBytes(gmWorkspace),
                                       static_cast<uint64_t>(n) * 32));
    PipeBarrier<PIPE_ALL>();
    const int32_t round = ubWorkspace.GetValue(n * 8);
    asc_twin_check(asc_twin_sync_wait(ASC_TWIN_SYNC_WAIT_PRE_BLOCK, asc_twin::GmBytes(gmWorkspace),
                                      static_cast<uint64_t>(n) * 32, round, 0));
    for (;;) {
        DataCopy(ubWorkspace, gmWorkspace, n * 8);
        asc_twin::Pair<HardEvent::MTE2_S>(pipe);
        bool ready = true;
        for (uint32_t b = 0; b < n && ready; b++) {
            ready = ubWorkspace.GetValue(b * 8) == (b < me ? round : 0);
        }
        asc_twin::Pair<HardEvent::S_MTE2>(pipe);
        if (ready) {
            break;
        }
    }
    asc_twin_check(asc_twin_sync_wait(ASC_TWIN_SYNC_NONE, nullptr, 0, 0, 0));
    PipeBarrier<PIPE_ALL>();
}

/* Tells the next block this one has finished the round: writes the round into this block's slot
 * (the last block clears every slot instead, which starts the next round), once all earlier work
 * of this block is complete; then counts the round. */
__aicore__ inline void NotifyNextBlock(GlobalTensor<int32_t> &gmWorkspace, LocalTensor<int32_t> &ubWorkspace)
{
    TPipe *pipe =
        asc_twin::SyncPipe(ASC_TWIN_OP_DETERMINE, "NotifyNextBlock needs a TPipe: it takes its event ids from it");
    const uint32_t n = asc_twin::DetermineCheck(gmWorkspace, ubWorkspace);
    const uint32_t me = static_cast<uint32_t>(GetBlockIdx());
    asc_twin_check(asc_twin_sync_flags(ASC_TWIN_SYNC_NOTIFY_NEXT_BLOCK, asc_twin::GmBytes(gmWorkspace),
                                       static_cast<uint64_t>(n) * 32));
    PipeBarrier<PIPE_ALL>();
    const int32_t round = ubWorkspace.GetValue(n * 8);
    if (me + 1 == n) {
        Duplicate(ubWorkspace, static_cast<int32_t>(0), static_cast<int32_t>(n * 8));
        asc_twin::Pair<HardEvent::V_MTE3>(pipe);
        DataCopy(gmWorkspace, ubWorkspace, n * 8);
    } else {
        asc_twin::Pair<HardEvent::S_V>(pipe);
        Duplicate(ubWorkspace[me * 8], round, 8);
        asc_twin::Pair<HardEvent::V_MTE3>(pipe);
        DataCopy(gmWorkspace[me * 8], ubWorkspace[me * 8], 8);
    }
    ubWorkspace.SetValue(n * 8, round + 1);
    PipeBarrier<PIPE_ALL>();
}

/* ---- task synchronisation (SuperKernel Early-Start) ---- */

/* On Atlas A2 these compile and have no effect (docs: "仅保证编译兼容，实际功能不生效"): a kernel
 * launch on the twin starts after the previous one on its stream has ended, whatever they say. */
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
__aicore__ inline void SetNextTaskStart()
{
}
template <bool FORCE = false> __aicore__ inline void WaitPreTaskEnd() {}

} // namespace AscendC

#endif
