/*
 * aiv_all_reduce: one chunk of AllReduce by atomic reduce on the store. Block `rank` does the
 * local part, block i != rank works with peer i: one block per rank for one-shot (block_dim =
 * rank_size), `parts` per rank for two-shot (block_dim = rank_size * parts, comm_kernel.h's
 * PeerPart: block (i, part) does what is described below for part `part` (aiv::Split) of every
 * slice, with broadcast cells 2 part and 2 part + 1, counting cell `part` and pair cell `part`).
 * Every rank computes the same bits: floating sums depend on the order of the adds, so every
 * rank applies them in one fixed order, or takes the result from one place.
 *
 * One-shot (small chunks): every rank sums the ranks' chunks itself, in the order
 *   x_a + x_b, then + x_2, + x_3, ... + x_{n-1}   with {a, b} = {0, 1}
 * (a + b == b + a exactly, so ranks 0 and 1 may start from their own input). The adds form a
 * chain over the blocks: block p adds x_p into my output after the block before it in the
 * order has finished its add (SoftSync::AfterBlock / Done). The chain is the small-message
 * path: one add of the whole chunk per block, no extra copies (measured against cutting the
 * chunk into slices that each block sums in rank order from every peer: that ran 2-2.5x slower
 * at 16-64 KiB on the twin, with n times the copy calls and two barriers per launch).
 *   block rank: input -> my HCCL buffer (A); for rank 0 or 1 also -> output (one load, two
 *               stores: the chain's start); Record1vN(tag, fp) ("A is staged"); for rank >= 2,
 *               later in the chain, add A_rank into the output.
 *   block 0 (on rank >= 2): WaitNv1Matching(0), WaitNv1(rank) (my A is staged, so my input may
 *               be overwritten in place); A_0 -> output (the chain's start).
 *   other block p: WaitNv1Matching(p); after the previous block of the chain, reduce peer p's
 *               A into my output (atomic store); post-sync Record(p) / Wait(p).
 *
 * Two-shot (large chunks): the chunk is cut into rank_size slices (32-byte multiples), slice s
 * owned by rank s, accumulated in B, the part of the owner's HCCL buffer after A. Every rank
 * copies every slice from its owner's B, so all ranks get the same bits.
 *   block rank: input -> A, my slice also -> B (one load, two stores); Record1vN(tag, 0, fp);
 *               Wait1vN(rank_size - 1) (every peer reduced into my B); B -> my output slice;
 *               Record1vN(tag, 1, fp) ("B is final");
 *   block i:    WaitNv1Matching(i, tag, 0), WaitNv1(rank, tag, 0); reduce peer i's A slice
 *               `rank` into my B; RecordNv1(rank) (count one contribution); WaitNv1(i, tag, 1); peer
 *               i's B -> my output slice i; post-sync Record(i) / Wait(i): both of us are done
 *               with the other's A and B before either reuses its HCCL buffer.
 *
 * With AIV_COLL_DETERMINISTIC (HCCL_DETERMINISTIC) the adds into B follow one fixed order, my
 * own slice first and then the peers' in rank order (Done / AfterBlock between my blocks), so
 * that the bits do not depend on arrival order from run to run; one-shot's chain is fixed always.
 *
 * In place (input == output) works for both: the input is read only by block rank, and the
 * output is written only after block rank has staged the input.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

namespace {

/* The one-shot chain of `rank`: the block whose add comes before block p's (p is not the
 * chain's start). The order is a, b, 2, 3, ..., n-1 with a = rank for ranks 0 and 1 (else 0). */
__aicore__ inline int32_t ChainPrev(int32_t rank, int32_t p)
{
    const int32_t a = rank <= 1 ? rank : 0;
    if (p == 1 - a) {
        return a;
    }
    return p == 2 ? 1 - a : p - 1;
}

/* The deterministic two-shot order of the adds into my B: my own slice (block rank) first,
 * then the peers' in rank order. The block whose add comes before block p's. */
__aicore__ inline int32_t TwoShotPrev(int32_t rank, int32_t p)
{
    const int32_t first = rank == 0 ? 1 : 0;
    if (p == first) {
        return rank;
    }
    return p - 1 == rank ? p - 2 : p - 1;
}

__aicore__ inline void OneShot(__gm__ const AivCollArgs *a, aiv::SoftSync &sync, const aiv::CopyStage &ub)
{
    const int32_t rank = a->comm.rank;
    const int32_t peer = static_cast<int32_t>(GetBlockIdx());
    const int64_t tag = a->comm.tag;
    const uint64_t bytes = a->bytes;
    const uint64_t mineA = a->comm.hccl[rank];
    const int32_t start = rank <= 1 ? rank : 0; // the block that starts the chain
    if (peer == rank) {
        if (rank == start) {
            // One load, two stores (A and the output). In place (input == output) the store to
            // the output rewrites each piece with itself after it was loaded.
            aiv::CpGM2GMDual(mineA, a->output, a->input, bytes, ub);
            if (!sync.Record1vN(tag, 0, a->fp)) {
                return;
            }
            sync.Done(tag);
            return;
        }
        aiv::CpGM2GMTyped(mineA, a->input, bytes, ub, a->dtype, AIV_OP_NONE);
        // Record1vN joins all pipes first: A is staged before the flag says so.
        if (!sync.Record1vN(tag, 0, a->fp) || !sync.AfterBlock(ChainPrev(rank, rank), tag)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output, mineA, bytes, ub, a->dtype, a->op);
        sync.Done(tag); // Store joins all pipes first: my add has landed
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, 0, a->fp)) {
        return;
    }
    const uint64_t theirs = a->comm.hccl[peer];
    if (peer == start) {
        // My own input is staged before the output (maybe the input itself) is overwritten.
        if (!sync.WaitNv1(rank, tag)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output, theirs, bytes, ub, a->dtype, AIV_OP_NONE);
    } else {
        if (!sync.AfterBlock(ChainPrev(rank, peer), tag)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output, theirs, bytes, ub, a->dtype, a->op);
    }
    if (!sync.Done(tag)) {
        return;
    }
    if (sync.Record(peer, tag)) {
        sync.Wait(peer, tag);
    }
}

__aicore__ inline void TwoShot(__gm__ const AivCollArgs *a, aiv::SoftSync &sync, const aiv::CopyStage &ub,
                              const aiv::PeerPart &pp)
{
    const int32_t rank = a->comm.rank;
    const int32_t n = a->comm.rank_size;
    const int32_t peer = pp.peer;
    const int32_t part = pp.part;
    const int64_t tag = a->comm.tag;
    const uint64_t bytes = a->bytes;
    const uint32_t dtype = a->dtype;
    const uint32_t op = a->op;
    const bool ordered = (a->flags & AIV_COLL_DETERMINISTIC) != 0u;
    const uint64_t mineA = a->comm.hccl[rank];
    const uint64_t bOffset = (bytes + 31) / 32 * 32; // B follows A, 32-byte aligned
    const uint64_t mineB = mineA + bOffset;
    // Slice s of the chunk belongs to rank s; this block handles part `part` of every slice.
    uint64_t myOff = 0;
    uint64_t myLen = 0;
    aiv::Split(bytes, n, rank, myOff, myLen);
    uint64_t mo = 0;
    uint64_t ml = 0;
    aiv::Split(myLen, pp.parts, part, mo, ml);
    const int32_t staged = 2 * part; // broadcast cells: "A staged", then "B final"
    if (peer == rank) {
        // Stage my part of every slice in A; my own slice's part goes to B too, with one load.
        for (int32_t s = 0; s < n; s++) {
            uint64_t so = 0;
            uint64_t sl = 0;
            aiv::Split(bytes, n, s, so, sl);
            uint64_t po = 0;
            uint64_t pl = 0;
            aiv::Split(sl, pp.parts, part, po, pl);
            if (s == rank) {
                aiv::CpGM2GMDual(mineA + so + po, mineB + po, a->input + so + po, pl, ub);
            } else {
                aiv::CpGM2GMTyped(mineA + so + po, a->input + so + po, pl, ub, dtype, AIV_OP_NONE);
            }
        }
        if (!sync.Record1vN(tag, staged, a->fp) || (ordered && !sync.Done(tag)) || !sync.Wait1vN(n - 1, part)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output + myOff + mo, mineB + mo, ml, ub, dtype, AIV_OP_NONE);
        sync.Record1vN(tag, staged + 1, a->fp);
        return;
    }
    if (!sync.WaitNv1Matching(peer, tag, staged, a->fp) || !sync.WaitNv1(rank, tag, staged)) {
        return;
    }
    if (ordered && !sync.AfterBlock(pp.Block(TwoShotPrev(rank, peer), n), tag)) {
        return;
    }
    aiv::CpGM2GMTyped(mineB + mo, a->comm.hccl[peer] + myOff + mo, ml, ub, dtype, op);
    // Store joins all pipes first: my add into B has landed before the next block's starts.
    if ((ordered && !sync.Done(tag)) || !sync.RecordNv1(rank, part) || !sync.WaitNv1(peer, tag, staged + 1)) {
        return;
    }
    uint64_t pOff = 0;
    uint64_t pLen = 0;
    aiv::Split(bytes, n, peer, pOff, pLen);
    uint64_t qo = 0;
    uint64_t ql = 0;
    aiv::Split(pLen, pp.parts, part, qo, ql);
    aiv::CpGM2GMTyped(a->output + pOff + qo, a->comm.hccl[peer] + bOffset + qo, ql, ub, dtype, AIV_OP_NONE);
    if (sync.Record(peer, tag, part)) {
        sync.Wait(peer, tag, part);
    }
}

} // namespace

extern "C" __global__ __aicore__ void aiv_all_reduce(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    const aiv::PeerPart pp = aiv::BlockPeer(a->comm.rank_size);
    // One-shot runs one block per rank (its chain orders whole chunks).
    if (pp.Idle() || (a->algo == AIV_AR_ONE_SHOT && pp.part > 0)) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    if (a->algo == AIV_AR_ONE_SHOT) {
        OneShot(a, k.sync, k.ub);
    } else {
        TwoShot(a, k.sync, k.ub, pp);
    }
}
