/*
 * aiv_all_to_all: one chunk of AlltoAll / AlltoAllV, `parts` blocks per rank (block_dim =
 * rank_size * parts, comm_kernel.h's PeerPart). My piece for rank q is input + send_off[q],
 * send_len[q] bytes; rank q's piece for me lands at output + recv_off[q] (recv_len[q] bytes).
 * Block (q, part) moves part `part` (aiv::Split) of both pieces of the pair (me, q), with pair
 * cells 2 * part ("staged") and 2 * part + 1 ("read") and broadcast cell `part`:
 *   q != rank: stage my part for q at slot_off[q] of my HCCL buffer (slot_off is the same on
 *              every rank); Record(q, tag, 2 part); WaitNv1Matching(q, tag, part, fp);
 *              Wait(q, tag, 2 part); that part of q's staged piece for me -> my output;
 *              post-sync Record(q, tag, 2 part + 1) / Wait(q, tag, 2 part + 1): neither
 *              restages while the other may still read.
 *   q == rank: my part for myself, input -> output directly; Record1vN(tag, part, fp).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_all_to_all(GM_ADDR argsAddr)
{
    __gm__ const AivCollVArgs *a = reinterpret_cast<__gm__ const AivCollVArgs *>(argsAddr);
    const aiv::PeerPart pp = aiv::BlockPeer(a->comm.rank_size);
    if (pp.Idle()) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int32_t peer = pp.peer;
    const int32_t part = pp.part;
    const int64_t tag = a->comm.tag;
    uint64_t sOff = 0;
    uint64_t sLen = 0;
    aiv::Split(a->send_len[peer], pp.parts, part, sOff, sLen);
    if (peer == rank) {
        aiv::CpGM2GMTyped(a->output + a->recv_off[rank] + sOff, a->input + a->send_off[rank] + sOff, sLen, ub, 0,
                          AIV_OP_NONE);
        sync.Record1vN(tag, part, a->fp);
        return;
    }
    aiv::CpGM2GMTyped(a->comm.hccl[rank] + a->slot_off[peer] + sOff, a->input + a->send_off[peer] + sOff, sLen, ub,
                      0, AIV_OP_NONE);
    const int32_t staged = 2 * part;
    // Store joins all pipes first: the staged part is in GM before "staged".
    if (!sync.Record(peer, tag, staged) || !sync.WaitNv1Matching(peer, tag, part, a->fp) ||
        !sync.Wait(peer, tag, staged)) {
        return;
    }
    uint64_t rOff = 0;
    uint64_t rLen = 0;
    aiv::Split(a->recv_len[peer], pp.parts, part, rOff, rLen);
    aiv::CpGM2GMTyped(a->output + a->recv_off[peer] + rOff, a->comm.hccl[peer] + a->slot_off[rank] + rOff, rLen, ub,
                      0, AIV_OP_NONE);
    if (sync.Record(peer, tag, staged + 1)) {
        sync.Wait(peer, tag, staged + 1);
    }
}
