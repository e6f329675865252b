/*
 * aiv_all_gather: one chunk of AllGather, one block per rank (block_dim = rank_size), following
 * the AIV orchestration of HCCL (seed 000):
 *   block == rank: copy my input into my HCCL buffer and into my slot of the output (one load,
 *                  two stores), then Record1vN(tag, fp) "my data is ready" (fp: this call);
 *   block i != rank: WaitNv1Matching(i, tag, fp) (rank i runs this same call), copy rank i's HCCL
 *                  buffer into output slot i, then post-sync Record(i, tag) / Wait(i, tag):
 *                  neither of us reuses its HCCL buffer (next chunk) while the other may still
 *                  read it.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_all_gather(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int32_t peer = static_cast<int32_t>(GetBlockIdx());
    const int64_t tag = a->comm.tag;
    const uint64_t bytes = a->bytes;
    const uint64_t mine = a->comm.hccl[rank];
    if (peer >= a->comm.rank_size) {
        return;
    }
    if (peer == rank) {
        // One load, two stores: my input into my HCCL buffer and into my output slot.
        aiv::CpGM2GMDual(mine, a->output + static_cast<uint64_t>(rank) * a->out_stride, a->input, bytes, ub);
        // Record1vN joins all pipes first: the staged data is in GM before the flag.
        sync.Record1vN(tag, 0, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, 0, a->fp)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + static_cast<uint64_t>(peer) * a->out_stride, a->comm.hccl[peer], bytes, ub, 0,
                      AIV_OP_NONE);
    // Post-sync: I have finished reading peer's buffer; wait until peer finished reading mine.
    if (sync.Record(peer, tag)) {
        sync.Wait(peer, tag);
    }
}
