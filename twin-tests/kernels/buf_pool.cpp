/*
 * Kernel for the custom TBufPool (EXTERN_IMPL_BUFPOOL, InitStartBufHandle, InitBufHandle):
 * `custom_pool` carves a 1024-byte TBuf out of the TPipe first (so the pool does not start at
 * UB address 0), gives a custom pool `poolLen` bytes with TPipe::InitBufPool, and places two
 * queue buffers and a TBuf in it where the args say, then adds `n` floats: out = x + y.
 * `info` gets what the pool and the tensors report (see CustomPoolInfo).
 */
// kernels: custom_pool
#include "kernel_operator.h"

using namespace AscendC;

/* What `custom_pool` does wrong, if anything (CustomPoolArgs::misuse). */
enum PoolMisuse : uint32_t {
    NONE = 0,
    HANDLE_PAST_BUFID_SIZE = 1, /* GetBufHandle(BUFID_SIZE) */
    BLOCK_OUTSIDE_POOL = 2,     /* a block at the pool's end (addr = start + poolLen) */
    TBUF_TWO_BLOCKS = 3,        /* InitStartBufHandle of the TBuf with num 2 */
    BLOCK_NOT_SET = 4,          /* the input queue gets 2 blocks, only block 0 is given memory */
    FOREIGN_HANDLE = 5,         /* InitBufHandle with a handle of another pool */
    BLOCK_UNALIGNED = 6,        /* a block 16 bytes into the pool */
    NOT_INITIALISED = 7,        /* no TPipe::InitBufPool before the pool hands out blocks */
};

struct CustomPoolArgs {
    uint32_t n;       /* floats */
    uint32_t poolLen; /* bytes */
    uint32_t xOff;    /* byte offsets in the pool of the blocks: input queue, TBuf, output queue */
    uint32_t yOff;
    uint32_t zOff;
    uint32_t misuse;
};

/* Written to `info` (uint32 each). */
struct CustomPoolInfo {
    uint32_t startAddr;   /* GetCurAddr right after InitBufPool */
    uint32_t curAddr;     /* GetCurAddr after the three blocks */
    uint32_t curBufSize;  /* GetCurBufSize after the three blocks */
    uint32_t xAddr;       /* GetPhyAddr of the tensors */
    uint32_t yAddr;
    uint32_t zAddr;
    uint32_t afterReset;  /* GetCurAddr after Reset */
    uint32_t sizeAfterReset;
};

namespace {

/* A UB byte address from GetPhyAddr (an integer on the NPU, a pointer in AscendC's CPU mode). */
template <typename A> __aicore__ inline uint32_t UbAddr(A phy) { return (uint32_t)(uint64_t)(phy); }

/* A pool that puts each block where the caller says (non-contiguous, in any order). */
class PlacedPool {
public:
    __aicore__ inline PlacedPool() { Init(); }

    template <class Q> __aicore__ inline void Place(Q &que, uint8_t num, uint8_t set, uint32_t off, uint32_t len)
    {
        const uint8_t first = GetCurBufSize();
        TBufHandle h = GetBufHandle(first);
        que.InitStartBufHandle(h, num, len);
        for (uint8_t i = 0; i < set; i++) {
            que.InitBufHandle(this, i, GetBufHandle(first + i), start_ + off + i * len, len);
        }
        SetCurBufSize(first + num);
        if (start_ + off + num * len > GetCurAddr()) {
            SetCurAddr(start_ + off + num * len);
        }
    }
    template <TPosition p> __aicore__ inline void PlaceBuf(TBuf<p> &buf, uint8_t num, uint32_t off, uint32_t len)
    {
        TBufHandle h = GetBufHandle(GetCurBufSize());
        buf.InitStartBufHandle(h, num, len);
        buf.InitBufHandle(this, 0, h, start_ + off, len);
        SetCurBufSize(GetCurBufSize() + 1);
    }
    __aicore__ inline void Start() { start_ = GetCurAddr(); }
    uint32_t start_ = 0;

    EXTERN_IMPL_BUFPOOL(PlacedPool, TPosition::VECCALC, 4);
};

} // namespace

extern "C" __global__ __aicore__ void custom_pool(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR info, CustomPoolArgs a)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<float> xGm, yGm, zGm;
    GlobalTensor<uint32_t> infoGm;
    xGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(x));
    yGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(y));
    zGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(z));
    infoGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(info));
    TPipe pipe;
    TBuf<TPosition::VECCALC> before;
    pipe.InitBuffer(before, 1024);
    PlacedPool pool;
    TQue<TPosition::VECIN, 2> inQ;
    TBuf<TPosition::VECCALC> yBuf;
    TQue<TPosition::VECOUT, 1> outQ;
    const uint32_t bytes = a.n * sizeof(float);
    CustomPoolInfo r = {};

    if (a.misuse != NOT_INITIALISED) {
        pipe.InitBufPool(pool, a.poolLen);
    }
    pool.Start();
    r.startAddr = pool.GetCurAddr();
    if (a.misuse == HANDLE_PAST_BUFID_SIZE) {
        (void)pool.GetBufHandle(4);
    }
    if (a.misuse == FOREIGN_HANDLE) {
        PlacedPool other;
        inQ.InitStartBufHandle(other.GetBufHandle(0), 1, bytes);
        inQ.InitBufHandle(&pool, 0, other.GetBufHandle(0), r.startAddr, bytes);
    }
    const uint32_t xOff = a.misuse == BLOCK_OUTSIDE_POOL ? a.poolLen : a.misuse == BLOCK_UNALIGNED ? 16 : a.xOff;
    pool.Place(inQ, a.misuse == BLOCK_NOT_SET ? 2 : 1, 1, xOff, bytes);
    pool.PlaceBuf(yBuf, a.misuse == TBUF_TWO_BLOCKS ? 2 : 1, a.yOff, bytes);
    pool.Place(outQ, 1, 1, a.zOff, bytes);
    r.curAddr = pool.GetCurAddr();
    r.curBufSize = pool.GetCurBufSize();

    LocalTensor<float> xl = inQ.AllocTensor<float>();
    if (a.misuse == BLOCK_NOT_SET) {
        LocalTensor<float> second = inQ.AllocTensor<float>();
        (void)second;
    }
    LocalTensor<float> yl = yBuf.Get<float>();
    DataCopy(xl, xGm, a.n);
    DataCopy(yl, yGm, a.n);
    inQ.EnQue(xl);
    xl = inQ.DeQue<float>();
    LocalTensor<float> zl = outQ.AllocTensor<float>();
    r.xAddr = UbAddr(xl.GetPhyAddr());
    r.yAddr = UbAddr(yl.GetPhyAddr());
    r.zAddr = UbAddr(zl.GetPhyAddr());
    Add(zl, xl, yl, a.n);
    outQ.EnQue(zl);
    inQ.FreeTensor(xl);
    zl = outQ.DeQue<float>();
    DataCopy(zGm, zl, a.n);
    outQ.FreeTensor(zl);
    pool.Reset();
    r.afterReset = pool.GetCurAddr();
    r.sizeAfterReset = pool.GetCurBufSize();

    LocalTensor<uint32_t> infoL = before.Get<uint32_t>(8);
    const uint32_t *words = reinterpret_cast<const uint32_t *>(&r);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < 8; i++) {
        infoL.SetValue(i, words[i]);
    }
    PipeBarrier<PIPE_ALL>();
    DataCopy(infoGm, infoL, 8);
}
