/*
 * aiv_all_reduce: one chunk of AllReduce by atomic reduce on the store, one block per rank
 * (block_dim = rank_size). Block `rank` does the local part, block i != rank works with peer i.
 *
 * One-shot (small chunks):
 *   block rank: input -> my HCCL buffer (A) and -> output (one load, two stores); Record1vN(tag, 0)
 *               ("A is staged and my output holds my contribution");
 *   block i:    WaitNv1(i, tag, 0) (peer's A staged), WaitNv1(rank, tag, 0) (my output initialised),
 *               reduce peer i's A into my output (atomic store); post-sync Record(i) / Wait(i).
 *
 * Two-shot (large chunks): the chunk is cut into rank_size slices (32-byte multiples), slice s
 * owned by rank s, accumulated in B, the part of the owner's HCCL buffer after A.
 *   block rank: input -> A, my slice also -> B (one load, two stores); Record1vN(tag, 0);
 *               Wait1vN(rank_size - 1) (every peer reduced into my B); B -> my output slice;
 *               Record1vN(tag, 1) ("B is final");
 *   block i:    WaitNv1(i, tag, 0), WaitNv1(rank, tag, 0); reduce peer i's A slice `rank` into my B;
 *               RecordNv1(rank) (count one contribution); WaitNv1(i, tag, 1); peer i's B -> my
 *               output slice i; post-sync Record(i) / Wait(i): both of us are done with the
 *               other's A and B before either reuses its HCCL buffer.
 *
 * In place (input == output) works for both: the input is read only by block rank, and the
 * output is written only after block rank has staged the input.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

namespace {

/* Byte range of slice s of a chunk of `bytes` cut into n slices of whole 32-byte blocks. */
__aicore__ inline void Slice(uint64_t bytes, int32_t n, int32_t s, uint64_t &off, uint64_t &len)
{
    const uint64_t per = ((bytes + static_cast<uint64_t>(n) - 1) / static_cast<uint64_t>(n) + 31) / 32 * 32;
    off = per * static_cast<uint64_t>(s);
    if (off > bytes) {
        off = bytes;
    }
    len = (bytes - off) < per ? (bytes - off) : per;
}

} // namespace

extern "C" __global__ __aicore__ void aiv_all_reduce(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    aiv::CommKernel k(&a->comm);
    aiv::SoftSync &sync = k.sync;
    const LocalTensor<uint8_t> &ub = k.ub;

    const int32_t rank = a->comm.rank;
    const int32_t n = a->comm.rank_size;
    const int32_t peer = static_cast<int32_t>(GetBlockIdx());
    const int32_t tag = a->comm.tag;
    const uint64_t bytes = a->bytes;
    const uint32_t dtype = a->dtype;
    const uint32_t op = a->op;
    const uint64_t mineA = a->comm.hccl[rank];
    if (peer >= n) {
        return;
    }

    if (a->algo == AIV_AR_ONE_SHOT) {
        if (peer == rank) {
            // One load, two stores (A and the output). In place (input == output) the store to
            // the output rewrites each piece with itself after it was loaded.
            aiv::CpGM2GMDual(mineA, a->output, a->input, bytes, ub);
            sync.Record1vN(tag);
            return;
        }
        if (!sync.WaitNv1(peer, tag) || !sync.WaitNv1(rank, tag)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output, a->comm.hccl[peer], bytes, ub, dtype, op);
        if (sync.Record(peer, tag)) {
            sync.Wait(peer, tag);
        }
        return;
    }

    // Two-shot.
    uint64_t myOff = 0;
    uint64_t myLen = 0;
    Slice(bytes, n, rank, myOff, myLen);
    const uint64_t bOffset = (bytes + 31) / 32 * 32; // B follows A, 32-byte aligned
    const uint64_t mineB = mineA + bOffset;
    if (peer == rank) {
        // Stage the input in A; my slice goes to A and to my accumulator B with one load.
        aiv::CpGM2GMTyped(mineA, a->input, myOff, ub, dtype, AIV_OP_NONE);
        aiv::CpGM2GMDual(mineA + myOff, mineB, a->input + myOff, myLen, ub);
        aiv::CpGM2GMTyped(mineA + myOff + myLen, a->input + myOff + myLen, bytes - myOff - myLen, ub, dtype,
                          AIV_OP_NONE);
        if (!sync.Record1vN(tag) || !sync.Wait1vN(n - 1)) {
            return;
        }
        aiv::CpGM2GMTyped(a->output + myOff, mineB, myLen, ub, dtype, AIV_OP_NONE);
        sync.Record1vN(tag, 1);
        return;
    }
    if (!sync.WaitNv1(peer, tag) || !sync.WaitNv1(rank, tag)) {
        return;
    }
    aiv::CpGM2GMTyped(mineB, a->comm.hccl[peer] + myOff, myLen, ub, dtype, op);
    if (!sync.RecordNv1(rank) || !sync.WaitNv1(peer, tag, 1)) {
        return;
    }
    uint64_t pOff = 0;
    uint64_t pLen = 0;
    Slice(bytes, n, peer, pOff, pLen);
    aiv::CpGM2GMTyped(a->output + pOff, a->comm.hccl[peer] + bOffset, pLen, ub, dtype, AIV_OP_NONE);
    if (sync.Record(peer, tag)) {
        sync.Wait(peer, tag);
    }
}
