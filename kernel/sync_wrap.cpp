/*
 * aiv_sync_wrap: the tag-wrap protocol (host/tags.rs). Run by every rank of a communicator at the
 * same point of its launch sequence, on one block:
 *   1. cross-rank barrier on the WRAP cells with value 2*epoch + 1: every rank has finished every
 *      launch of the old tag range, so nobody will touch flags of the old range again;
 *   2. clear my own flag cells (everything but the WRAP cells, which are never cleared);
 *   3. cross-rank barrier with value 2*epoch + 2: nobody writes into my area before I cleared it.
 * The WRAP cells carry a monotonic epoch count, so they need no clearing themselves.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "aiv_sync.h"

using namespace AscendC;

namespace {

constexpr uint32_t ZERO_BYTES = 16 * 1024;

__aicore__ inline bool CrossBarrier(aiv::SoftSync &sync, int32_t value)
{
    const int32_t me = sync.Rank();
    for (int32_t p = 0; p < sync.RankSize(); p++) {
        if (p != me && !sync.Store(p, AIV_WRAP_OFFSET + static_cast<uint32_t>(me) * AIV_FLAG_BYTES, value)) {
            return false;
        }
    }
    for (int32_t p = 0; p < sync.RankSize(); p++) {
        if (p != me &&
            !sync.Poll(me, AIV_WRAP_OFFSET + static_cast<uint32_t>(p) * AIV_FLAG_BYTES, value, AIV_DIAG_WRAP, p)) {
            return false;
        }
    }
    return true;
}

__aicore__ inline void Clear(uint64_t area, uint32_t from, uint32_t to, const LocalTensor<int32_t> &zeros)
{
    for (uint32_t off = from; off < to; off += ZERO_BYTES) {
        const uint32_t len = (to - off) < ZERO_BYTES ? (to - off) : ZERO_BYTES;
        GlobalTensor<int32_t> dst;
        dst.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(area + off), len / 4);
        DataCopy(dst, zeros, len / 4);
    }
}

} // namespace

extern "C" __global__ __aicore__ void aiv_sync_wrap(GM_ADDR argsAddr)
{
    __gm__ const AivWrapArgs *a = reinterpret_cast<__gm__ const AivWrapArgs *>(argsAddr);
    if (GetBlockIdx() != 0) {
        return;
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> scratch;
    TBuf<TPosition::VECCALC> zeroBuf;
    pipe.InitBuffer(scratch, aiv::SYNC_SCRATCH_BYTES);
    pipe.InitBuffer(zeroBuf, ZERO_BYTES);
    aiv::SoftSync sync;
    sync.Init(&a->comm, scratch.Get<uint8_t>());
    const int32_t epoch = a->epoch;
    if (!CrossBarrier(sync, 2 * epoch + 1)) {
        return;
    }
    LocalTensor<int32_t> zeros = zeroBuf.Get<int32_t>();
    Duplicate(zeros, 0, static_cast<int32_t>(ZERO_BYTES / 4));
    // MTE3 stores what the vector unit filled.
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    const uint64_t mine = a->comm.sync[a->comm.rank];
    Clear(mine, 0, AIV_WRAP_OFFSET, zeros);
    Clear(mine, AIV_DIAG_OFFSET, AIV_SYNC_AREA_BYTES, zeros);
    CrossBarrier(sync, 2 * epoch + 2); // Store() joins all pipes first: the clear lands before it
}
