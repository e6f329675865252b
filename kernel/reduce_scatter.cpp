/*
 * aiv_reduce_scatter: one chunk of ReduceScatter / ReduceScatterV, `parts` blocks per rank
 * (block_dim = rank_size * parts, comm_kernel.h's PeerPart). Rank r's result is the reduction,
 * over every rank q, of q's piece for r (AivCollVArgs: send_off / send_len per destination,
 * staged at slot_off). Block (p, part) of rank r works with peer p on part `part` (aiv::Split)
 * of the pieces, with pair cells 2 part and 2 part + 1 and broadcast cell `part`; the blocks of
 * one part form the order below among themselves. Block p of rank r (for each part):
 *   block p != r: stage my piece for p at slot_off[p] of my HCCL buffer; Record(p, tag) ("your
 *     piece is staged"; Store joins all pipes first); WaitNv1Matching(p) (p runs this call);
 *     Wait(p, tag) (p staged my piece); reduce it into my output, in the order below; post-sync
 *     Record(p, tag, 1) / Wait(p, tag, 1): neither of us restages (next chunk) while the other
 *     may still read.
 *   block r: my own piece, then Record1vN(tag, fp) (my fingerprint, for the peers' checks).
 * The order of the reduction into my output (Done / AfterBlock between my blocks):
 *   default: block r copies my own piece into the output first (Done(tag + 1)); the other
 *     blocks then reduce by atomic store, in the order they arrive (as HCCL's AIV kernels do).
 *   AIV_COLL_DETERMINISTIC: the pieces are added in rank order 0, 1, ..., n-1 whatever the
 *     arrival order: block 0 copies, block p adds after block p - 1 is done (Done(tag + 1)).
 *     On rank r >= 1, block r first stages my own piece at slot_off[r] of my HCCL buffer
 *     (Done(tag)), so that block 0's copy may overwrite the input when it runs in place.
 * In place: the output may be exactly my own piece of the input (input + send_off[r]); the other
 * pieces of the input are only read, and mine is read before anything writes the output.
 * Two tags per launch: tag and tag + 1.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_reduce_scatter(GM_ADDR argsAddr)
{
    __gm__ const AivCollVArgs *a = reinterpret_cast<__gm__ const AivCollVArgs *>(argsAddr);
    const int32_t n = a->comm.rank_size;
    const aiv::PeerPart pp = aiv::BlockPeer(n);
    if (pp.Idle()) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const aiv::CopyStage &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int64_t tag = a->comm.tag;
    const bool ordered = (a->flags & AIV_COLL_DETERMINISTIC) != 0u;
    const uint32_t dtype = a->dtype;
    const uint32_t op = a->op;
    const int32_t peer = pp.peer;
    const int32_t part = pp.part;
    const uint64_t mine = a->comm.hccl[rank];
    // My part of my result: every rank's piece for me is send_len[rank] long.
    uint64_t off = 0;
    uint64_t len = 0;
    aiv::Split(a->send_len[rank], pp.parts, part, off, len);
    const uint64_t out = a->output + off;
    if (peer == rank) {
        const uint64_t in = a->input + a->send_off[rank] + off;
        if (!ordered || rank == 0) {
            aiv::CpGM2GMTyped(out, in, len, ub, dtype, AIV_OP_NONE);
            if (sync.Record1vN(tag, part, a->fp)) {
                sync.Done(tag + 1);
            }
            return;
        }
        const uint64_t staged = mine + a->slot_off[rank] + off;
        aiv::CpGM2GMTyped(staged, in, len, ub, dtype, AIV_OP_NONE);
        if (!sync.Record1vN(tag, part, a->fp) || !sync.Done(tag) ||
            !sync.AfterBlock(pp.Block(rank - 1, n), tag + 1)) {
            return;
        }
        aiv::CpGM2GMTyped(out, staged, len, ub, dtype, op);
        sync.Done(tag + 1);
        return;
    }
    uint64_t sOff = 0;
    uint64_t sLen = 0;
    aiv::Split(a->send_len[peer], pp.parts, part, sOff, sLen);
    aiv::CpGM2GMTyped(mine + a->slot_off[peer] + sOff, a->input + a->send_off[peer] + sOff, sLen, ub, dtype,
                      AIV_OP_NONE);
    const int32_t staged = 2 * part;
    if (!sync.Record(peer, tag, staged) || !sync.WaitNv1Matching(peer, tag, part, a->fp) ||
        !sync.Wait(peer, tag, staged)) {
        return;
    }
    const uint64_t theirs = a->comm.hccl[peer] + a->slot_off[rank] + off;
    if (ordered && peer == 0) {
        // My own part is staged before the output (maybe the input itself) is overwritten.
        if (!sync.AfterBlock(pp.Block(rank, n), tag)) {
            return;
        }
        aiv::CpGM2GMTyped(out, theirs, len, ub, dtype, AIV_OP_NONE);
    } else {
        if (!sync.AfterBlock(pp.Block(ordered ? peer - 1 : rank, n), tag + 1)) {
            return;
        }
        aiv::CpGM2GMTyped(out, theirs, len, ub, dtype, op);
    }
    // Store joins all pipes first: my add has landed before the next block's starts.
    if (ordered && !sync.Done(tag + 1)) {
        return;
    }
    if (sync.Record(peer, tag, staged + 1)) {
        sync.Wait(peer, tag, staged + 1);
    }
}
