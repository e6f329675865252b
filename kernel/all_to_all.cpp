/*
 * aiv_all_to_all: one chunk of AlltoAll / AlltoAllV, one block per rank (block_dim = rank_size).
 * My piece for rank q is input + send_off[q], send_len[q] bytes; rank q's piece for me lands at
 * output + recv_off[q] (recv_len[q] bytes). Each pair of ranks works through its own blocks:
 *   block q != rank: stage my piece for q at slot_off[q] of my HCCL buffer (slot_off is the same
 *                  on every rank); Record(q, tag) ("staged"); WaitNv1Matching(q, tag, fp);
 *                  Wait(q, tag); q's staged piece for me -> my output; post-sync Record(q, tag, 1)
 *                  / Wait(q, tag, 1): neither restages while the other may still read.
 *   block rank:    my piece for myself, input -> output directly; Record1vN(tag, fp).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_all_to_all(GM_ADDR argsAddr)
{
    __gm__ const AivCollVArgs *a = reinterpret_cast<__gm__ const AivCollVArgs *>(argsAddr);
    const int32_t peer = static_cast<int32_t>(GetBlockIdx());
    if (peer >= a->comm.rank_size) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int64_t tag = a->comm.tag;
    if (peer == rank) {
        aiv::CpGM2GMTyped(a->output + a->recv_off[rank], a->input + a->send_off[rank], a->send_len[rank], ub, 0,
                          AIV_OP_NONE);
        sync.Record1vN(tag, 0, a->fp);
        return;
    }
    aiv::CpGM2GMTyped(a->comm.hccl[rank] + a->slot_off[peer], a->input + a->send_off[peer], a->send_len[peer], ub, 0,
                      AIV_OP_NONE);
    // Store joins all pipes first: the staged piece is in GM before "staged".
    if (!sync.Record(peer, tag) || !sync.WaitNv1Matching(peer, tag, 0, a->fp) || !sync.Wait(peer, tag)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + a->recv_off[peer], a->comm.hccl[peer] + a->slot_off[rank], a->recv_len[peer], ub,
                      0, AIV_OP_NONE);
    if (sync.Record(peer, tag, 1)) {
        sync.Wait(peer, tag, 1);
    }
}
