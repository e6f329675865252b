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
 * With AIV_COLL_BLOCK_PER_PART the same protocol, cells and copies run on `parts` blocks
 * (block_dim = parts): block `part` does what every block (q, part) above does for its part,
 * the local copy first, then each peer's in turn from rank + 1 on (so that the ranks do not all
 * read rank 0 first), then the post-sync with every peer. A rank running either layout works
 * with a peer running the other. Fewer blocks: on the twin each costs a coroutine and its
 * set-up; on the NPU a launch takes fewer cores, and a core's copies run one after another.
 * With AIV_COLL_IN_WINDOW (my input is window memory every peer has mapped) nothing is staged:
 * Record1vNAt announces my input at once (it is ready when the launch starts), my part then
 * goes to my slot while peers copy from my input
 * (WaitNv1Source: a peer's announced input, or its HCCL buffer when it staged), as HCCL's
 * graph-mode AIV AllGather reads peers' user inputs. The post-sync is the same: it also keeps
 * my input untouched until every peer has read it, since my launch ends only after it.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

namespace {

/* My part [off, off + len) of the chunk: into my output slot and, unless my input is in a
 * window (AIV_COLL_IN_WINDOW), staged in my HCCL buffer (one load, two stores); and
 * Record1vN(tag, part) saying it is ready, announcing my input when peers read it in place. */
__aicore__ inline bool StageOrAnnounce(__gm__ const AivCollArgs *a, aiv::SoftSync &sync, const aiv::CopyStage &ub,
                                       int32_t part, uint64_t off, uint64_t len)
{
    const int32_t rank = a->comm.rank;
    const uint64_t slot = a->output + static_cast<uint64_t>(rank) * a->out_stride + off;
    if ((a->flags & AIV_COLL_IN_WINDOW) != 0u) {
        // My input is ready when the launch starts (earlier work wrote it; nobody writes it
        // during the launch): announce it first, so peers pull it while I fill my own slot.
        if (!sync.Record1vNAt(a->comm.tag, part, a->fp, a->input)) {
            return false;
        }
        if (slot != a->input + off) { // in place, my input already is my slot
            aiv::CpGM2GMTyped(slot, a->input + off, len, ub, 0, AIV_OP_NONE);
        }
        return true;
    }
    aiv::CpGM2GMDual(a->comm.hccl[rank] + off, slot, a->input + off, len, ub);
    // Record1vN joins all pipes first: the staged data is in GM before the flag.
    return sync.Record1vN(a->comm.tag, part, a->fp);
}

/* Block `part` of the AIV_COLL_BLOCK_PER_PART layout (see above). */
__aicore__ inline void PerPart(__gm__ const AivCollArgs *a, aiv::SoftSync &sync, const aiv::CopyStage &ub)
{
    const int32_t rank = a->comm.rank;
    const int32_t n = a->comm.rank_size;
    const int64_t tag = a->comm.tag;
    uint64_t off = 0;
    uint64_t len = 0;
    const int32_t part = aiv::BlockPart(a->bytes, off, len);
    if (!StageOrAnnounce(a, sync, ub, part, off, len)) {
        return;
    }
    for (int32_t i = 1; i < n; i++) {
        const int32_t q = (rank + i) % n;
        const uint64_t src = sync.WaitNv1Source(q, tag, part, a->fp, a->comm.hccl[q]);
        if (src == 0) {
            return;
        }
        aiv::CpGM2GMTyped(a->output + static_cast<uint64_t>(q) * a->out_stride + off, src + off, len, ub, 0,
                          AIV_OP_NONE);
    }
    aiv::DoneWithEveryPeer(sync, rank, n, tag, part);
}

} // namespace

extern "C" __global__ __aicore__ void aiv_all_gather(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    if ((a->flags & AIV_COLL_BLOCK_PER_PART) != 0u) {
        aiv::CommKernel k(&a->comm);
        PerPart(a, k.sync, k.ub);
        return;
    }
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
    if (peer == rank) {
        StageOrAnnounce(a, sync, ub, part, off, len);
        return;
    }
    const uint64_t src = sync.WaitNv1Source(peer, tag, part, a->fp, a->comm.hccl[peer]);
    if (src == 0) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + static_cast<uint64_t>(peer) * a->out_stride + off, src + off, len, ub, 0,
                      AIV_OP_NONE);
    // Post-sync: I have finished reading peer's buffer; wait until peer finished reading mine.
    if (sync.Record(peer, tag, part)) {
        sync.Wait(peer, tag, part);
    }
}
