/*
 * aiv_all_reduce: one chunk of AllReduce, one-shot (AIV_AR_ONE_SHOT) or two-shot
 * (AIV_AR_TWO_SHOT). Every rank computes the same bits: floating sums depend on the order of
 * the adds, so every rank applies them in one fixed order, or takes the result from one place.
 *
 * One-shot (small chunks): every rank reduces every rank's whole chunk itself, in rank order
 *   x_0 + x_1 + ... + x_{n-1}
 * on every rank, so all ranks get the same bits. block_dim = parts (1 for small chunks, more by
 * size, the host's plan::blocks_per_peer); block `part` does part `part` of the chunk
 * (aiv::Split) from start to end, so the parts run side by side on the cores:
 *   input part -> my HCCL buffer (A); Record1vN(tag, part, fp) ("my part is staged");
 *   WaitNv1Matching(q, tag, part, fp) for every peer q; reduce part `part` of A_0 .. A_{n-1}
 *   (every rank's staged copy, my own too) into my output with the store-side atomics (a copy
 *   of A_0, then an atomic store of each other A_q; aiv::ReduceWithAtomics); then the
 *   post-sync: Record(q, tag, part) to every peer ("I have read your part"), Wait(q, tag, part)
 *   from every peer, so no rank reuses its HCCL buffer while a peer still reads it.
 *   Ranks 0 and 1 start from their own input instead (x_0 + x_1 == x_1 + x_0 exactly): one load
 *   of it stores both A and the output, and only the other ranks' A are added.
 *   With AIV_COLL_IN_WINDOW (out of place, my input window memory every peer has mapped) my
 *   input is not staged: Record1vNAt announces it at once, and every rank reduces it from
 *   where it is (WaitNv1Source): the same order and bits without the staging copy.
 * Per rank and byte of the chunk: n + 1 GM reads and n + 1 writes (ranks 0 and 1: n reads),
 * n - 1 of the writes atomic stores (which also read their destination); two flag rounds,
 * 3n - 2 flag operations per block (one Record1vN, n - 1 Records, 2 (n - 1) waits).
 * The store-side atomics rather than vector Add in UB (reduce_in_order.h's UB path, n + 1
 * reads and 2 writes): each CpGM2GM is double-buffered, so its loads overlap its stores, where
 * the UB path waits for every load before its Add (and HCCL's small-data AIV AllReduce reduces
 * with the store-side atomics too). On the twin the UB path was also slower: 64 KiB on 2 ranks,
 * 661 K instructions per op against 438 K for this kernel with atomics before ranks 0 and 1
 * started from their own input (its loads must land in UB, the atomics read GM).
 * This replaced a chain of one block per peer, each adding one peer's chunk into the output
 * after the previous block's add: the same order, bits and bytes, but n blocks per rank and,
 * from 3 ranks on, n + 1 rounds (each add waited for the one before it through a flag).
 *
 * Two-shot (large chunks): `parts` blocks per rank (block_dim = rank_size * parts, comm_kernel.h's
 * PeerPart: block (i, part) does what is described below for part `part` (aiv::Split) of every
 * slice, with broadcast cells 2 part and 2 part + 1, counting cell `part` and pair cell `part`).
 * The chunk is cut into rank_size slices (32-byte multiples), slice s owned by rank s,
 * accumulated in B, the part of the owner's HCCL buffer after A. Every rank copies every slice
 * from its owner's B, so all ranks get the same bits.
 *   block rank: input -> A, my slice also -> B (one load, two stores); Record1vN(tag, 0, fp);
 *               Wait1vN(rank_size - 1) (every peer reduced into my B); B -> my output slice;
 *               Record1vN(tag, 1, fp) ("B is final");
 *   block i:    WaitNv1Matching(i, tag, 0), WaitNv1(rank, tag, 0); reduce peer i's A slice
 *               `rank` into my B; RecordNv1(rank) (count one contribution); WaitNv1(i, tag, 1); peer
 *               i's B -> my output slice i; post-sync Record(i) / Wait(i): both of us are done
 *               with the other's A and B before either reuses its HCCL buffer.
 *
 * With AIV_COLL_DETERMINISTIC (HCCL_DETERMINISTIC) the adds into B follow rank order,
 * x_0 + x_1 + ... + x_{n-1} (Done / AfterBlock between my blocks), the order one-shot, push and
 * ReduceScatter use: so the bits depend neither on arrival order nor on how the call was cut
 * into chunks and slices (which decides who owns an element), nor on the algorithm. On ranks 0
 * and 1 B starts from my own slice (x_1 + x_0 == x_0 + x_1 exactly) and the peers add in rank
 * order; from rank 2 on, block 0 starts B with a plain copy of rank 0's slice, and my own block
 * adds my slice in its place, after block rank - 1 (TwoShotPrev).
 *
 * In place (input == output) works for both: one-shot reads only staged copies after staging;
 * in two-shot the input is read only by block rank, and the output is written only after block
 * rank has staged the input.
 *
 * Two-shot with AIV_COLL_IN_WINDOW (my input is window memory every peer has mapped): my input
 * is my A, announced by Record1vNAt, and block rank only copies my slice's part into B. Peer p
 * reads my input's slice p; I write my output slice p (in place: that same input slice) only
 * after p's "B final", which p stores after every contribution to its B, its read of my slice
 * among them, so in place works here too. The post-sync keeps my input until every peer is
 * done with it, as it keeps A.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"
#include "reduce_in_order.h"

using namespace AscendC;

namespace {

/* Whether my own slice starts B in the deterministic order (ranks 0 and 1), or is added in its
 * place in rank order (the others; block 0 then starts B with a plain copy). */
__aicore__ inline bool OwnSliceFirst(int32_t rank)
{
    return rank <= 1;
}

/* The deterministic two-shot order of the adds into my B, rank order (see the top): the block
 * (the peer it works with; `rank` for my own block) whose add comes before block p's, -1 for
 * the block that starts B. */
__aicore__ inline int32_t TwoShotPrev(int32_t rank, int32_t p)
{
    if (OwnSliceFirst(rank)) {
        // My slice, then the others in rank order: 0 (or 1) right after mine.
        if (p == rank) {
            return -1;
        }
        const int32_t first = rank == 0 ? 1 : 0;
        if (p == first) {
            return rank;
        }
        return p - 1 == rank ? p - 2 : p - 1;
    }
    return p - 1; // 0, 1, ..., n - 1, my own block at `rank`
}

__aicore__ inline void OneShot(__gm__ const AivCollArgs *a, aiv::SoftSync &sync, const aiv::CopyStage &ub)
{
    const int32_t rank = a->comm.rank;
    const int32_t n = a->comm.rank_size;
    const int64_t tag = a->comm.tag;
    uint64_t off = 0;
    uint64_t len = 0;
    const int32_t part = aiv::BlockPart(a->bytes, off, len);
    const uint64_t out = a->output + off;
    // x_0 + x_1 == x_1 + x_0 exactly: ranks 0 and 1 start the sum from their own input, staged and
    // copied to the output with one load (in place the store rewrites each piece with itself).
    const bool starts = rank <= 1;
    // My input in a window (never in place, the host sees to that): peers read it where it is.
    const bool window = (a->flags & AIV_COLL_IN_WINDOW) != 0u;
    const uint64_t mine = window ? a->input : a->comm.hccl[rank];
    if (window) {
        // My input is ready when the launch starts: announce it first, so peers read it while
        // I start my output (peers never read my output).
        if (!sync.Record1vNAt(tag, part, a->fp, a->input)) {
            return;
        }
        if (starts) {
            aiv::CpGM2GMTyped(out, a->input + off, len, ub, a->dtype, AIV_OP_NONE);
        }
    } else {
        if (starts) {
            aiv::CpGM2GMDual(mine + off, out, a->input + off, len, ub);
        } else {
            aiv::CpGM2GMTyped(mine + off, a->input + off, len, ub, a->dtype, AIV_OP_NONE);
        }
        // Record1vN joins all pipes first: my part of A is staged before the flag says so.
        if (!sync.Record1vN(tag, part, a->fp)) {
            return;
        }
    }
    uint64_t src[AIV_MAX_RANKS];
    int32_t count = 0;
    for (int32_t q = 0; q < n; q++) {
        uint64_t from = mine;
        if (q != rank) {
            from = sync.WaitNv1Source(q, tag, part, a->fp, a->comm.hccl[q]);
            if (from == 0) {
                return;
            }
        }
        if (!starts || q != rank) {
            src[count++] = from + off;
        }
    }
    // The sources are staged copies or inputs in windows, never an output: in place works (my
    // input is staged by now, and never announced), and no one writes them until the post-sync
    // below has passed on every rank.
    if (starts) {
        aiv::AccumulateWithAtomics(out, src, count, len, a->dtype, a->op, ub);
    } else {
        aiv::ReduceWithAtomics(out, src, count, len, a->dtype, a->op, ub);
    }
    aiv::DoneWithEveryPeer(sync, rank, n, tag, part);
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
    // My input in a window: it is my A, which peers read where it is (Record1vNAt announces it).
    const bool window = (a->flags & AIV_COLL_IN_WINDOW) != 0u;
    // My slice starts B (else, deterministic from rank 2 on, it is added in rank order).
    const bool ownFirst = !ordered || OwnSliceFirst(rank);
    if (peer == rank) {
        if (window) {
            // Only my own slice's part goes anywhere: into B.
            if (ownFirst) {
                aiv::CpGM2GMTyped(mineB + mo, a->input + myOff + mo, ml, ub, dtype, AIV_OP_NONE);
            }
            if (!sync.Record1vNAt(tag, staged, a->fp, a->input)) {
                return;
            }
        } else {
            // Stage my part of every slice in A; my own slice's part goes to B too when it
            // starts B, with one load.
            for (int32_t s = 0; s < n; s++) {
                uint64_t so = 0;
                uint64_t sl = 0;
                aiv::Split(bytes, n, s, so, sl);
                uint64_t po = 0;
                uint64_t pl = 0;
                aiv::Split(sl, pp.parts, part, po, pl);
                if (s == rank && ownFirst) {
                    aiv::CpGM2GMDual(mineA + so + po, mineB + po, a->input + so + po, pl, ub);
                } else {
                    aiv::CpGM2GMTyped(mineA + so + po, a->input + so + po, pl, ub, dtype, AIV_OP_NONE);
                }
            }
            if (!sync.Record1vN(tag, staged, a->fp)) {
                return;
            }
        }
        if (!ownFirst) {
            // My slice's add, in its place in rank order (from my input: in place, nothing
            // writes my output before the B-final flag below).
            if (!sync.AfterBlock(pp.Block(TwoShotPrev(rank, rank), n), tag)) {
                return;
            }
            aiv::CpGM2GMTyped(mineB + mo, a->input + myOff + mo, ml, ub, dtype, op);
        }
        // Done joins all pipes first: my slice is in B before the next block in order adds.
        if ((ordered && !sync.Done(tag)) || !sync.Wait1vN(n - 1, part)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output + myOff + mo, mineB + mo, ml, ub, dtype, AIV_OP_NONE);
        sync.Record1vN(tag, staged + 1, a->fp);
        return;
    }
    // Peer's A: its staged copy, or its input where it announced it.
    const uint64_t peerA = sync.WaitNv1Source(peer, tag, staged, a->fp, a->comm.hccl[peer]);
    if (peerA == 0 || !sync.WaitNv1(rank, tag, staged)) {
        return;
    }
    const int32_t prev = ordered ? TwoShotPrev(rank, peer) : -1;
    if (prev >= 0 && !sync.AfterBlock(pp.Block(prev, n), tag)) {
        return;
    }
    // The block that starts B (rank 0's slice, deterministic from rank 2 on) copies; the others
    // add with the store-side atomics.
    const uint32_t how = (ordered && prev < 0) ? static_cast<uint32_t>(AIV_OP_NONE) : op;
    aiv::CpGM2GMTyped(mineB + mo, peerA + myOff + mo, ml, ub, dtype, how);
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
    if (a->algo == AIV_AR_ONE_SHOT) {
        aiv::CommKernel k(&a->comm);
        OneShot(a, k.sync, k.ub);
        return;
    }
    const aiv::PeerPart pp = aiv::BlockPeer(a->comm.rank_size);
    if (pp.Idle()) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    TwoShot(a, k.sync, k.ub, pp);
}
