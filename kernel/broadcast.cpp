/*
 * aiv_broadcast: one chunk of Broadcast from `root` (AivCollArgs). The chunk is cut into one
 * piece per block (block_dim = rank_size * parts, parts >= 1; aiv::Split), so every core of
 * every rank moves a share: block b of the root stages piece b, block b of every other rank
 * copies piece b. Every rank checks every other rank's fingerprint (block q < rank_size checks
 * rank q's), and a pair of ranks leaves only when both have checked (Record / Wait), so that no
 * rank overwrites its cell with a later call's while a peer has yet to look: a rank running
 * another call (another root, count or dtype) fails every rank.
 *   root, block b:     piece b of the input into my HCCL buffer and into my output (one load,
 *                      two stores; in place the output store rewrites each piece with itself);
 *                      Record1vN(tag, b, fp) ("piece b is staged"); block 0 then waits for
 *                      Wait1vN((rank_size - 1) * block_dim): every rank has read every piece,
 *                      before the next chunk restages them.
 *   non-root, block b: block 0 first Record1vN(tag, 0, fp) (my fingerprint, for the checks);
 *                      WaitNv1Matching(root, tag, b, fp); root's piece b -> my output;
 *                      RecordNv1(root) (count one piece read).
 *   any rank, block q < rank_size, q != me: WaitNv1Matching(q, tag, 0, fp), then
 *                      Record(q, tag, 1) / Wait(q, tag, 1).
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_broadcast(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    const int32_t n = a->comm.rank_size;
    const int32_t b = static_cast<int32_t>(GetBlockIdx());
    const int32_t pieces = static_cast<int32_t>(GetBlockNum());
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int32_t root = a->root;
    const int64_t tag = a->comm.tag;
    uint64_t off = 0;
    uint64_t len = 0;
    aiv::Split(a->bytes, pieces, b, off, len);
    if (rank == root) {
        aiv::CpGM2GMDual(a->comm.hccl[rank] + off, a->output + off, a->input + off, len, ub);
        // Record1vN joins all pipes first: the staged piece is in GM before the flag.
        if (!sync.Record1vN(tag, b, a->fp)) {
            return;
        }
    } else if (b == 0 && !sync.Record1vN(tag, 0, a->fp)) {
        return;
    }
    if (b < n && b != rank) {
        if (!sync.WaitNv1Matching(b, tag, 0, a->fp) || !sync.Record(b, tag, 1) || !sync.Wait(b, tag, 1)) {
            return;
        }
    }
    if (rank == root) {
        if (b == 0) {
            sync.Wait1vN((n - 1) * pieces);
        }
        return;
    }
    if (!sync.WaitNv1Matching(root, tag, b, a->fp)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + off, a->comm.hccl[root] + off, len, ub, 0, AIV_OP_NONE);
    // RecordNv1 joins all pipes first: my read of the root's piece is done before the count.
    sync.RecordNv1(root);
}
