/*
 * GroupBarrier: a group of AIV blocks (the Arrive group) tells another (the Wait group) that it
 * is done, through counters in a GM workspace. Atlas A2 supports it on AIV cores (docs,
 * "Cube分组管理" / GroupBarrier), with PipeMode::MTE3_MODE only.
 *
 * The docs give the interface, the 512-byte alignment of the workspace, its zeroing by the user,
 * GetWorkspaceLen() = max(arriveSize, waitSize) * 512 and the last 1600 bytes of UB being taken.
 * What they leave out follows A2's AscendC, so that a workspace means the same on the twin: one
 * 512-byte stride per index; at offset 0 of stride k the Arrive counter that Wait(k) reads, at
 * offset 64 the Wait counter that Arrive(k) reads (uint32 each). Arrive adds 1 to every Arrive
 * counter and Wait to every Wait counter (max(arriveSize, waitSize) of them), by an atomic-add
 * DataCopy (MTE3) from 32-byte blocks in that last 1600 bytes of UB, and leaves the atomic mode
 * off (SetAtomicNone). In round r (each block counts its own calls), Wait(k) waits until its
 * Arrive counter is at least r * arriveSize, and Arrive(k), from round 2 on, until its Wait
 * counter is (r - 1) * waitSize: an arriver does not run a round ahead of the waiters.
 * (AscendC fills only each block's first word with 1 and adds the rest of the block as UB holds
 * it, words nobody reads; the twin writes them 0, so that no read of unwritten UB is reported.)
 *
 * The counters are flag memory for the GM race checker (an Arrive releases, the Wait that sees
 * it acquires), and a block waiting in Arrive or Wait is named in the watchdog's report.
 */
#ifndef ASC_TWIN_GROUP_BARRIER_H
#define ASC_TWIN_GROUP_BARRIER_H

#include "atomic.h"
#include "block_sync.h"
#include "cache.h"
#include "data_copy.h"

namespace AscendC {

/* The unit GroupBarrier sends its messages with (A2 supports MTE3_MODE only). */
enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };

template <PipeMode pipeMode> class GroupBarrier {
    static_assert(pipeMode == PipeMode::MTE3_MODE, "GroupBarrier: Atlas A2 supports PipeMode::MTE3_MODE only");

public:
    __aicore__ inline GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn)
        : ws_(groupWorkspace), arriveSize_(arriveSizeIn), waitSize_(waitSizeIn)
    {
        const uint64_t blocks = static_cast<uint64_t>(GetBlockNum());
        if (arriveSizeIn == 0 || waitSizeIn == 0 || arriveSizeIn > blocks || waitSizeIn > blocks) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_GROUP_BARRIER,
                                         "GroupBarrier: arriveSizeIn and waitSizeIn must be in [1, GetBlockNum()]",
                                         arriveSizeIn > waitSizeIn ? arriveSizeIn : waitSizeIn, blocks));
        }
        if (reinterpret_cast<uintptr_t>(groupWorkspace) % kStride != 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_GROUP_BARRIER,
                                         "GroupBarrier: groupWorkspace must be 512-byte aligned",
                                         reinterpret_cast<uintptr_t>(groupWorkspace), kStride));
        }
        uint8_t *base = nullptr;
        uint64_t cap = 0;
        asc_twin_check(asc_twin_ub_arena(&base, &cap));
        if (cap < kUbEnd) {
            asc_twin_check(
                asc_twin_fail(ASC_TWIN_OP_GROUP_BARRIER, "GroupBarrier: UB is smaller than 192 KB", cap, kUbEnd));
        }
        const LocalTensor<int32_t> ones = Ones();
        for (uint32_t i = 0; i < kMaxAiv * 8; i++) {
            ones.SetValue(i, i % 8 == 0 ? 1 : 0);
        }
    }

    /* This block (index arriveIndex of the Arrive group) has done its part of the round. */
    __aicore__ inline void Arrive(uint32_t arriveIndex)
    {
        CheckIndex(arriveIndex, arriveSize_, "GroupBarrier::Arrive: arriveIndex must be in [0, arriveSize - 1]");
        asc_twin_check(asc_twin_sync_flags(ASC_TWIN_SYNC_GROUP_ARRIVE, ws_, GetWorkspaceLen()));
        if (round_ > 1) {
            const uint32_t expected = (round_ - 1) * waitSize_;
            WaitFor(ASC_TWIN_SYNC_GROUP_ARRIVE, Counter(arriveIndex, kWaitOffset), arriveIndex, expected, true);
        }
        Add(kArriveOffset);
        round_ += 1;
        arrived_ = true;
    }

    /* Waits until the whole Arrive group has arrived in this block's round (waitIndex: this
     * block's index in the Wait group). */
    __aicore__ inline void Wait(uint32_t waitIndex)
    {
        CheckIndex(waitIndex, waitSize_, "GroupBarrier::Wait: waitIndex must be in [0, waitSize - 1]");
        asc_twin_check(asc_twin_sync_flags(ASC_TWIN_SYNC_GROUP_WAIT, ws_, GetWorkspaceLen()));
        const uint32_t round = arrived_ ? round_ - 1 : round_;
        WaitFor(ASC_TWIN_SYNC_GROUP_WAIT, Counter(waitIndex, kArriveOffset), waitIndex, round * arriveSize_, false);
        Add(kWaitOffset);
        if (!arrived_) {
            round_ += 1;
        }
        arrived_ = false;
    }

    /* Bytes of GM the barrier's messages take. */
    __aicore__ inline uint64_t GetWorkspaceLen() { return static_cast<uint64_t>(Groups()) * kStride; }

private:
    static constexpr uint64_t kStride = 512;
    static constexpr uint64_t kArriveOffset = 0;
    static constexpr uint64_t kWaitOffset = 64;
    static constexpr uint32_t kMaxAiv = 50;
    static constexpr uint64_t kUbEnd = 192 * 1024;

    __aicore__ inline uint32_t Groups() const { return arriveSize_ > waitSize_ ? arriveSize_ : waitSize_; }
    __aicore__ inline LocalTensor<int32_t> Ones() const
    {
        return LocalTensor<int32_t>(TPosition::VECIN, static_cast<uint32_t>(kUbEnd - kMaxAiv * 32), kMaxAiv * 8);
    }
    __aicore__ inline __gm__ uint32_t *Counter(uint32_t index, uint64_t offset) const
    {
        return reinterpret_cast<__gm__ uint32_t *>(ws_ + index * kStride + offset);
    }
    __aicore__ inline void CheckIndex(uint32_t index, uint32_t size, const char *message) const
    {
        if (index >= size) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_GROUP_BARRIER, message, index, size));
        }
    }
    /* Polls the counter until it is `target` (exact) or at least `target`. */
    __aicore__ inline void WaitFor(uint32_t api, __gm__ uint32_t *counter, uint32_t index, uint32_t target,
                                   bool exact) const
    {
        asc_twin_check(asc_twin_sync_wait(api, reinterpret_cast<uint8_t *>(counter), 4, index, target));
        for (;;) {
            const uint32_t seen = ReadGmByPassDCache(counter);
            if (exact ? seen == target : seen >= target) {
                break;
            }
        }
        asc_twin_check(asc_twin_sync_wait(ASC_TWIN_SYNC_NONE, nullptr, 0, 0, 0));
    }
    /* Adds 1 to the first word of the counters at `offset` of every stride. */
    __aicore__ inline void Add(uint64_t offset) const
    {
        TPipe *pipe = asc_twin::SyncPipe(ASC_TWIN_OP_GROUP_BARRIER, "GroupBarrier needs a TPipe: it takes its event ids from it");
        asc_twin::Pair<HardEvent::S_MTE3>(pipe);
        GlobalTensor<int32_t> dst;
        dst.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(ws_ + offset));
        DataCopyParams p;
        p.blockCount = static_cast<uint16_t>(Groups());
        p.blockLen = 1;
        p.srcStride = 0;
        p.dstStride = static_cast<uint16_t>(kStride / 32 - 1);
        SetAtomicAdd<int32_t>();
        DataCopy(dst, Ones(), p);
        SetAtomicNone();
    }

    GM_ADDR ws_;
    uint32_t arriveSize_;
    uint32_t waitSize_;
    uint32_t round_ = 1;
    bool arrived_ = false;
};

} // namespace AscendC

#endif
