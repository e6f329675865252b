/*
 * aiv_all_gather: one chunk of AllGather, `parts` blocks per rank (block_dim = rank_size * parts,
 * comm_kernel.h's PeerPart: block peer + rank_size * part), following the AIV orchestration of
 * HCCL (seed 000); each block moves part `part` of its peer's chunk (aiv::Split), with cells of
 * its part (slot = part):
 *   peer == rank: copy my part of the input into my HCCL buffer and into my slot of the output
 *                  (one load, two stores), then Record1vN(tag, part, fp) "my part is ready"
 *                  (fp: this call);
 *   peer != rank: WaitNv1Matching(peer, tag, part, fp) (rank peer runs this same call), copy
 *                  that part of peer's HCCL buffer into output slot peer, then post-sync
 *                  Record(peer, tag, part) / Wait(peer, tag, part): neither of us reuses its HCCL
 *                  buffer (next chunk) while the other may still read it.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_all_gather(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
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
    aiv::Split(a->bytes, pp.parts, part, off, len);
    const uint64_t mine = a->comm.hccl[rank];
    if (peer == rank) {
        // One load, two stores: my input into my HCCL buffer and into my output slot.
        aiv::CpGM2GMDual(mine + off, a->output + static_cast<uint64_t>(rank) * a->out_stride + off, a->input + off,
                         len, ub);
        // Record1vN joins all pipes first: the staged data is in GM before the flag.
        sync.Record1vN(tag, part, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, part, a->fp)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + static_cast<uint64_t>(peer) * a->out_stride + off, a->comm.hccl[peer] + off, len,
                      ub, 0, AIV_OP_NONE);
    // Post-sync: I have finished reading peer's buffer; wait until peer finished reading mine.
    if (sync.Record(peer, tag, part)) {
        sync.Wait(peer, tag, part);
    }
}
