/*
 * Point-to-point transfers and stream-task signals, on LINK cells (sync/aiv_sync_layout.h):
 * sequence numbers per (peer, kind) that only grow, so these cells are never cleared.
 *
 * aiv_p2p, one chunk (seed 002's protocol, on the AIV):
 *   send: stage the chunk into my HCCL buffer (slot of the receiver); Record "data ready" with
 *         the message's total bytes and the chunk's bytes next to the flag; Wait "read done",
 *         whose payload is the receiver's total: a different total is a size mismatch.
 *   recv: Wait "data ready"; if the sender's sizes differ from mine, report the mismatch, still
 *         answer "read done" (with my total, so the sender reports it too) and copy nothing;
 *         otherwise pull the chunk from the sender's HCCL buffer (one-sided read) into my buffer
 *         and Record "read done" so the sender may reuse its buffer.
 *
 * aiv_link_signal: one tx_ack / rx_ack / tx_data_signal / rx_data_signal (seed 004's link
 * handshakes) as a Record or Wait on the peer's / my LINK cell.
 *
 * aiv_handshake: a call check for orchestrated algorithms (halving-doubling AllReduce): record
 * my fingerprint in my broadcast cell with the launch's tag, wait for the partner's and check
 * it is the same call.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

namespace {

/* The total message bytes a LINK cell's payload carries (lanes 2-3). */
__aicore__ inline uint64_t Total(const aiv::SoftSync &sync)
{
    return static_cast<uint64_t>(static_cast<uint32_t>(sync.Seen(AIV_FLAG_PAYLOAD))) |
           (static_cast<uint64_t>(static_cast<uint32_t>(sync.Seen(AIV_FLAG_PAYLOAD + 1))) << 32);
}

__aicore__ inline int32_t Lo(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v & 0xffffffffu)); }
__aicore__ inline int32_t Hi(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v >> 32)); }

/* Stores `seq` with a payload of the total bytes and `chunk` (lanes 2-4) into `to`'s cell. */
__aicore__ inline bool StoreSizes(aiv::SoftSync &sync, int32_t to, uint32_t cell, int64_t seq, uint64_t total,
                                  int32_t chunk)
{
    const int32_t lanes[AIV_PAYLOAD_LANES] = {Lo(total), Hi(total), chunk, 0, 0, 0};
    return sync.StoreLanes(to, cell, seq, lanes);
}

} // namespace

extern "C" __global__ __aicore__ void aiv_p2p(GM_ADDR argsAddr)
{
    __gm__ const AivP2PArgs *a = reinterpret_cast<__gm__ const AivP2PArgs *>(argsAddr);
    if (GetBlockIdx() != 0) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t me = a->comm.rank;
    const int32_t peer = a->peer;
    const int64_t seq = a->seq;
    const uint64_t bytes = a->bytes;
    const uint64_t total = a->total;
    if (a->is_send != 0) {
        const uint64_t slot = a->comm.hccl[me] + static_cast<uint64_t>(peer) * a->slot_bytes;
        aiv::CpGM2GMTyped(slot, a->buf, bytes, ub, 0, AIV_OP_NONE);
        // Store joins all pipes first: the staged chunk is in GM before "data ready".
        if (!StoreSizes(sync, peer, aiv::SoftSync::LinkCell(me, AIV_LINK_P2P_DATA), seq, total,
                        static_cast<int32_t>(bytes)) ||
            !sync.Poll(me, aiv::SoftSync::LinkCell(peer, AIV_LINK_P2P_DONE), seq, AIV_DIAG_LINK, peer)) {
            return;
        }
        const uint64_t theirs = Total(sync);
        if (theirs != total) {
            sync.SizeMismatch(peer, total, theirs);
        }
        return;
    }
    if (!sync.Poll(me, aiv::SoftSync::LinkCell(peer, AIV_LINK_P2P_DATA), seq, AIV_DIAG_LINK, peer)) {
        return;
    }
    const uint64_t theirs = Total(sync);
    const uint64_t theirChunk = static_cast<uint64_t>(static_cast<uint32_t>(sync.Seen(AIV_FLAG_PAYLOAD + 2)));
    if (theirs != total || theirChunk != bytes) {
        StoreSizes(sync, peer, aiv::SoftSync::LinkCell(me, AIV_LINK_P2P_DONE), seq, total, 0);
        sync.SizeMismatch(peer, total, theirs);
        return;
    }
    const uint64_t slot = a->comm.hccl[peer] + static_cast<uint64_t>(me) * a->slot_bytes;
    aiv::CpGM2GMTyped(a->buf, slot, bytes, ub, 0, AIV_OP_NONE);
    // "Read done" after the pull has landed: the sender may overwrite its slot afterwards.
    StoreSizes(sync, peer, aiv::SoftSync::LinkCell(me, AIV_LINK_P2P_DONE), seq, total, 0);
}

extern "C" __global__ __aicore__ void aiv_link_signal(GM_ADDR argsAddr)
{
    __gm__ const AivSignalArgs *a = reinterpret_cast<__gm__ const AivSignalArgs *>(argsAddr);
    if (GetBlockIdx() != 0) {
        return;
    }
    aiv::CommKernel k(&a->comm, false);
    aiv::SoftSync &sync = k.sync;
    const int32_t me = a->comm.rank;
    if (a->is_wait != 0) {
        sync.Poll(me, aiv::SoftSync::LinkCell(a->peer, a->kind), a->seq, AIV_DIAG_LINK, a->peer);
    } else {
        // Store joins all pipes first: every earlier GM write of this stream's tasks on this core
        // is complete; earlier tasks (other launches) are complete because the stream is in order.
        sync.Store(a->peer, aiv::SoftSync::LinkCell(me, a->kind), a->seq);
    }
}

extern "C" __global__ __aicore__ void aiv_handshake(GM_ADDR argsAddr)
{
    __gm__ const AivHandshakeArgs *a = reinterpret_cast<__gm__ const AivHandshakeArgs *>(argsAddr);
    if (GetBlockIdx() != 0) {
        return;
    }
    aiv::CommKernel k(&a->comm, false);
    aiv::SoftSync &sync = k.sync;
    const int64_t tag = a->comm.tag;
    if (sync.Record1vN(tag, 0, a->fp)) {
        sync.WaitNv1Matching(a->partner, tag, 0, a->fp);
    }
}
