/*
 * relu_scale_all_reduce: a fused compute + communication kernel, the template for your own.
 *
 *     y = sum over ranks r of Relu(x_r * scale + bias)        (one chunk of the vectors per launch)
 *
 * in one launch per chunk, on any number of ranks, with every rank getting the same bits (the
 * sum runs in rank order 0, 1, ..., n-1 on every rank). The chunk is split into `block_dim`
 * slices; block b of every rank owns slice b:
 *   1. compute: x slice -> UB (DataCopyPad, any length), Muls, Adds, Relu on the vector unit,
 *      UB -> my HCCL buffer; then Record1vN(tag, b): "slice b of my contribution is staged";
 *   2. reduce: WaitNv1(p, tag, b) for every rank p, then y slice = sum of every rank's staged
 *      slice b, loaded from their HCCL buffers and added in UB (Add);
 *   3. release: Record(p, tag, b) / Wait(p, tag, b) with every peer, so no rank overwrites its
 *      HCCL buffer (the next chunk's launch) while a peer may still read it.
 * Written against the public AscendC API and aiv-comm's device headers (aiv_sync.h for the
 * soft sync); every pipe dependency is ordered explicitly (SetFlag/WaitFlag between pipes,
 * PipeBarrier<PIPE_V> between dependent vector instructions), so it is also correct built with
 * --cce-auto-sync=off.
 */
#include "kernel_operator.h"
#include "comm_kernel.h"

using namespace AscendC;

/* The launch's arguments: the communicator part first (filled in by launch_with_tags). */
struct ReluScaleAllReduceArgs {
    AivCommArgs comm;
    uint64_t x;     /* GM: this rank's chunk of x (count floats) */
    uint64_t y;     /* GM: this rank's chunk of y (count floats) */
    uint64_t count; /* floats in this chunk; count * 4 <= comm.hccl_bytes */
    float scale;
    float bias;
};

namespace {

constexpr uint32_t TILE = 8192; /* floats per UB tile (32 KiB) */

/* One pipe -> pipe dependency: the later pipe waits until the earlier one is done. */
template <HardEvent e> __aicore__ inline void Order()
{
    const TEventID id = GetTPipePtr()->FetchEventID(e);
    SetFlag<e>(id);
    WaitFlag<e>(id);
}

__aicore__ inline GlobalTensor<float> Gm(uint64_t addr)
{
    GlobalTensor<float> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(addr));
    return g;
}

/* `n` floats GM -> UB and UB -> GM, any n (DataCopyPad handles the ragged end). */
__aicore__ inline void Load(const LocalTensor<float> &ub, uint64_t gm, uint32_t n)
{
    DataCopyExtParams p(1, n * sizeof(float), 0, 0, 0);
    DataCopyPadExtParams<float> pad(false, 0, 0, 0.0f);
    DataCopyPad(ub, Gm(gm), p, pad);
}
__aicore__ inline void Store(uint64_t gm, const LocalTensor<float> &ub, uint32_t n)
{
    DataCopyExtParams p(1, n * sizeof(float), 0, 0, 0);
    DataCopyPad(Gm(gm), ub, p);
}

} // namespace

extern "C" __global__ __aicore__ void relu_scale_all_reduce(GM_ADDR argsAddr)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    __gm__ const ReluScaleAllReduceArgs *a = reinterpret_cast<__gm__ const ReluScaleAllReduceArgs *>(argsAddr);
    aiv::CommKernel k(&a->comm, false); /* SoftSync only: the rest of UB is ours */
    aiv::SoftSync &sync = k.sync;
    TBuf<TPosition::VECCALC> accBuf;
    TBuf<TPosition::VECCALC> tmpBuf;
    GetTPipePtr()->InitBuffer(accBuf, TILE * sizeof(float));
    GetTPipePtr()->InitBuffer(tmpBuf, TILE * sizeof(float));
    LocalTensor<float> acc = accBuf.Get<float>();
    LocalTensor<float> tmp = tmpBuf.Get<float>();

    const int32_t rank = a->comm.rank;
    const int32_t ranks = a->comm.rank_size;
    const int64_t tag = a->comm.tag;
    const int32_t b = static_cast<int32_t>(GetBlockIdx());
    const uint64_t count = a->count;
    const float scale = a->scale;
    const float bias = a->bias;
    /* Slice b: `per` floats (a multiple of 8, so every slice starts 32-byte aligned). */
    const uint64_t per = (count + GetBlockNum() * 8 - 1) / (GetBlockNum() * 8) * 8;
    const uint64_t start = per * static_cast<uint64_t>(b) < count ? per * static_cast<uint64_t>(b) : count;
    const uint64_t end = start + per < count ? start + per : count;
    const uint64_t mine = a->comm.hccl[rank];

    /* 1. compute my contribution to slice b into my HCCL buffer. */
    for (uint64_t off = start; off < end; off += TILE) {
        const uint32_t n = static_cast<uint32_t>(end - off < TILE ? end - off : TILE);
        Load(acc, a->x + off * sizeof(float), n);
        Order<HardEvent::MTE2_V>();
        Muls(acc, acc, scale, static_cast<int32_t>(n));
        PipeBarrier<PIPE_V>();
        Adds(acc, acc, bias, static_cast<int32_t>(n));
        PipeBarrier<PIPE_V>();
        Relu(acc, acc, static_cast<int32_t>(n));
        Order<HardEvent::V_MTE3>();
        Store(mine + off * sizeof(float), acc, n);
        Order<HardEvent::MTE3_MTE2>(); /* the next tile's load reuses acc */
    }
    /* Record1vN joins every pipe first: the staged slice is in GM before the flag. */
    if (!sync.Record1vN(tag, b)) {
        return;
    }

    /* 2. y slice b = sum over ranks, in rank order. */
    for (int32_t p = 0; p < ranks; p++) {
        if (!sync.WaitNv1(p, tag, b)) {
            return;
        }
    }
    for (uint64_t off = start; off < end; off += TILE) {
        const uint32_t n = static_cast<uint32_t>(end - off < TILE ? end - off : TILE);
        Load(acc, a->comm.hccl[0] + off * sizeof(float), n);
        for (int32_t p = 1; p < ranks; p++) {
            Load(tmp, a->comm.hccl[p] + off * sizeof(float), n);
            Order<HardEvent::MTE2_V>();
            Add(acc, acc, tmp, static_cast<int32_t>(n));
            Order<HardEvent::V_MTE2>(); /* the next load reuses tmp */
        }
        if (ranks == 1) {
            Order<HardEvent::MTE2_V>(); /* no Add ran: acc is still MTE2's */
        }
        Order<HardEvent::V_MTE3>();
        Store(a->y + off * sizeof(float), acc, n);
        Order<HardEvent::MTE3_MTE2>();
    }

    /* 3. release: I have read every peer's slice b; wait until every peer has read mine. */
    for (int32_t p = 0; p < ranks; p++) {
        if (p != rank && !sync.Record(p, tag, b)) {
            return;
        }
    }
    for (int32_t p = 0; p < ranks; p++) {
        if (p != rank && !sync.Wait(p, tag, b)) {
            return;
        }
    }
}
