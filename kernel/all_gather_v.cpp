/*
 * aiv_all_gather_v: one chunk of AllGatherV, `parts` blocks per rank (block_dim = rank_size *
 * parts, comm_kernel.h's PeerPart): rank q contributes recv_len[q] bytes (AivCollVArgs), which
 * land at output + recv_off[q] on every rank. As aiv_all_gather (seed 000's orchestration),
 * with a length and a place per rank; block (q, part) moves part `part` of q's piece:
 *   q == rank: my part into my HCCL buffer and into my place of the output (one load, two
 *              stores), then Record1vN(tag, part, fp);
 *   q != rank: WaitNv1Matching(q, tag, part, fp); that part of q's HCCL buffer -> output +
 *              recv_off[q]; post-sync Record(q, tag, part) / Wait(q, tag, part).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_all_gather_v(GM_ADDR argsAddr)
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
    uint64_t off = 0;
    uint64_t len = 0;
    aiv::Split(a->recv_len[peer], pp.parts, part, off, len);
    if (peer == rank) {
        aiv::CpGM2GMDual(a->comm.hccl[rank] + off, a->output + a->recv_off[rank] + off, a->input + off, len, ub);
        // Record1vN joins all pipes first: the staged piece is in GM before the flag.
        sync.Record1vN(tag, part, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, part, a->fp)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + a->recv_off[peer] + off, a->comm.hccl[peer] + off, len, ub, 0, AIV_OP_NONE);
    if (sync.Record(peer, tag, part)) {
        sync.Wait(peer, tag, part);
    }
}
