/*
 * aiv_broadcast: one chunk of Broadcast from `root` (AivCollArgs), `parts` blocks per rank
 * (block_dim = rank_size * parts, comm_kernel.h's PeerPart); block (q, part) moves part `part`
 * of the chunk, with cells of its part (slot = part). Every rank checks every other rank's
 * fingerprint, so a rank running another call (another root, count or dtype) fails every rank,
 * not only the root.
 *   q == rank: on the root, my part of the input into my HCCL buffer and into my output (one
 *              load, two stores; in place the output store rewrites each piece with itself);
 *              then, on every rank, Record1vN(tag, part, fp).
 *   q != rank: WaitNv1Matching(q, tag, part, fp); then
 *              on the root: Wait(q, tag, part): rank q has read my part (before I restage it);
 *              on a non-root, for q == root: that part of root's HCCL buffer -> my output;
 *              Record(root, tag, part).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_broadcast(GM_ADDR argsAddr)
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
    const int32_t root = a->root;
    const int32_t peer = pp.peer;
    const int32_t part = pp.part;
    const int64_t tag = a->comm.tag;
    uint64_t off = 0;
    uint64_t len = 0;
    aiv::Split(a->bytes, pp.parts, part, off, len);
    if (peer == rank) {
        if (rank == root) {
            aiv::CpGM2GMDual(a->comm.hccl[rank] + off, a->output + off, a->input + off, len, ub);
        }
        // Record1vN joins all pipes first: on the root, the staged part is in GM before the flag.
        sync.Record1vN(tag, part, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, part, a->fp)) {
        return;
    }
    if (rank == root) {
        sync.Wait(peer, tag, part);
    } else if (peer == root) {
        aiv::CpGM2GMTyped(a->output + off, a->comm.hccl[root] + off, len, ub, 0, AIV_OP_NONE);
        sync.Record(root, tag, part);
    }
}
