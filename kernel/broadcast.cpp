/*
 * aiv_broadcast: one chunk of Broadcast from `root` (AivCollArgs), one block per rank
 * (block_dim = rank_size). Every rank checks every other rank's fingerprint, so a rank running
 * another call (another root, count or dtype) fails every rank, not only the root.
 *   block rank: on the root, the input into my HCCL buffer and into my output (one load, two
 *               stores; in place the output store rewrites each piece with itself); then, on
 *               every rank, Record1vN(tag, fp).
 *   block q != rank: WaitNv1Matching(q, tag, fp); then
 *               on the root: Wait(q, tag): rank q has read my HCCL buffer (before I restage it);
 *               on a non-root, for q == root: root's HCCL buffer -> my output; Record(root, tag).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_broadcast(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    const int32_t peer = static_cast<int32_t>(GetBlockIdx());
    if (peer >= a->comm.rank_size) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int32_t root = a->root;
    const int64_t tag = a->comm.tag;
    if (peer == rank) {
        if (rank == root) {
            aiv::CpGM2GMDual(a->comm.hccl[rank], a->output, a->input, a->bytes, ub);
        }
        // Record1vN joins all pipes first: on the root, the staged data is in GM before the flag.
        sync.Record1vN(tag, 0, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, 0, a->fp)) {
        return;
    }
    if (rank == root) {
        sync.Wait(peer, tag);
    } else if (peer == root) {
        aiv::CpGM2GMTyped(a->output, a->comm.hccl[root], a->bytes, ub, 0, AIV_OP_NONE);
        sync.Record(root, tag);
    }
}
