/*
 * aiv_all_gather_v: one chunk of AllGatherV, one block per rank (block_dim = rank_size): rank q
 * contributes recv_len[q] bytes (AivCollVArgs), which land at output + recv_off[q] on every rank.
 * As aiv_all_gather (seed 000's orchestration), with a length and a place per rank:
 *   block == rank: my piece into my HCCL buffer and into my place of the output (one load, two
 *                  stores), then Record1vN(tag, fp);
 *   block q != rank: WaitNv1Matching(q, tag, fp); rank q's HCCL buffer -> output + recv_off[q];
 *                  post-sync Record(q, tag) / Wait(q, tag).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_all_gather_v(GM_ADDR argsAddr)
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
        aiv::CpGM2GMDual(a->comm.hccl[rank], a->output + a->recv_off[rank], a->input, a->recv_len[rank], ub);
        // Record1vN joins all pipes first: the staged piece is in GM before the flag.
        sync.Record1vN(tag, 0, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, 0, a->fp)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + a->recv_off[peer], a->comm.hccl[peer], a->recv_len[peer], ub, 0, AIV_OP_NONE);
    if (sync.Record(peer, tag)) {
        sync.Wait(peer, tag);
    }
}
