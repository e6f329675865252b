// kernels: aiv_api_selftest
// auto_sync: off
/*
 * aiv_api_selftest: one mode per AscendC API behaviour the twin must reproduce (AivApiTestMode);
 * tests/twin/api.rs pins the results. Written against the public AscendC API only.
 */
#include "kernel_operator.h"
#include "selftest_args.h"
#include "cp_gm2gm.h"

using namespace AscendC;

static_assert(HCCL_REDUCE_SUM == 0 && HCCL_REDUCE_PROD == 1 && HCCL_REDUCE_MAX == 2 && HCCL_REDUCE_MIN == 3,
              "HcclReduceOp values");

namespace {

constexpr uint32_t PIECE = AIV_API_PIECE;
constexpr uint32_t PIECE_BYTES = PIECE * sizeof(int32_t);

/* A SetFlag / WaitFlag pair on a fetched id. */
template <HardEvent e> __aicore__ inline void Pair()
{
    const TEventID id = GetTPipePtr()->FetchEventID(e);
    SetFlag<e>(id);
    WaitFlag<e>(id);
}

__aicore__ inline GlobalTensor<int32_t> Gm32(uint64_t addr)
{
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(addr));
    return g;
}

/* Block `b`'s int64 result slots. */
__aicore__ inline GlobalTensor<int64_t> Slots(__gm__ const AivApiTestArgs *a)
{
    GlobalTensor<int64_t> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t *>(a->out + GetBlockIdx() * AIV_API_BLOCK_BYTES));
    return g;
}

/* A UB byte address from GetPhyAddr (an integer on the NPU, a pointer in AscendC's CPU mode). */
template <typename A> __aicore__ inline int64_t Addr(A phy) { return (int64_t)(phy); }

__aicore__ inline uint64_t Piece(__gm__ const AivApiTestArgs *a, uint32_t round)
{
    return (static_cast<uint64_t>(GetBlockIdx()) * a->rounds + round) * PIECE;
}

__aicore__ inline void QueueVecOut(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, static_cast<uint8_t>(a->bufs), PIECE_BYTES);
    GlobalTensor<int32_t> out = Gm32(a->out);
    for (uint32_t r = 0; r < a->rounds; r++) {
        LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
        Duplicate(t, static_cast<int32_t>(r + 1), PIECE);
        q.EnQue(t);
        t = q.DeQue<int32_t>();
        DataCopy(out[Piece(a, r)], t, PIECE);
        q.FreeTensor(t);
    }
}

/* The same pipeline on a TBuf; `withFlags`: a V -> MTE3 flag, but nothing MTE3 -> V. */
__aicore__ inline void TBufPipeline(__gm__ const AivApiTestArgs *a, bool withFlags)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, PIECE_BYTES);
    GlobalTensor<int32_t> out = Gm32(a->out);
    for (uint32_t r = 0; r < a->rounds; r++) {
        LocalTensor<int32_t> t = b.Get<int32_t>();
        Duplicate(t, static_cast<int32_t>(r + 1), PIECE);
        if (withFlags) {
            Pair<HardEvent::V_MTE3>();
        }
        DataCopy(out[Piece(a, r)], t, PIECE);
    }
    Pair<HardEvent::MTE3_V>();
}

__aicore__ inline void VecInToMte3(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, PIECE_BYTES);
    LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
    DataCopy(t, Gm32(a->in), PIECE);
    q.EnQue(t);
    t = q.DeQue<int32_t>();
    DataCopy(Gm32(a->out), t, PIECE); // MTE3 reads what MTE2 wrote: the queue ordered only V
    q.FreeTensor(t);
}

__aicore__ inline void BindCopy(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, static_cast<uint8_t>(a->bufs), PIECE_BYTES);
    GlobalTensor<int32_t> in = Gm32(a->in);
    GlobalTensor<int32_t> out = Gm32(a->out);
    for (uint32_t r = 0; r < a->rounds; r++) {
        LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
        DataCopy(t, in[Piece(a, r)], PIECE);
        q.EnQue(t);
        t = q.DeQue<int32_t>();
        DataCopy(out[Piece(a, r)], t, PIECE);
        q.FreeTensor(t);
    }
}

__aicore__ inline void EventIds(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    GlobalTensor<int64_t> s = Slots(a);
    const TEventID x = pipe.AllocEventID<HardEvent::MTE2_S>();
    const TEventID y = pipe.AllocEventID<HardEvent::MTE2_S>();
    const TEventID z = pipe.AllocEventID<HardEvent::MTE2_S>();
    pipe.ReleaseEventID<HardEvent::MTE2_S>(y);
    const TEventID f = pipe.FetchEventID<HardEvent::MTE2_S>();
    const TEventID w = pipe.AllocEventID<HardEvent::MTE2_S>();
    s.SetValue(0, x);
    s.SetValue(1, y);
    s.SetValue(2, z);
    s.SetValue(3, f);
    s.SetValue(4, w);
    s.SetValue(5, GetTPipePtr() == &pipe ? 1 : 0);
}

__aicore__ inline void EventCollision(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, PIECE_BYTES);
    LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
    DataCopy(t, Gm32(a->in), PIECE);
    q.EnQue(t); // the queue's SetFlag<MTE2_V> holds an id until DeQue
    SetFlag<HardEvent::MTE2_V>(a->param);
    WaitFlag<HardEvent::MTE2_V>(a->param);
    t = q.DeQue<int32_t>();
    q.FreeTensor(t);
}

__aicore__ inline void EventExhaust()
{
    TPipe pipe;
    for (int32_t i = 0; i < 9; i++) {
        (void)pipe.AllocEventID<HardEvent::MTE2_V>();
    }
}

__aicore__ inline void TensorHelpers(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    GlobalTensor<int64_t> s = Slots(a);
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<int32_t> t = b.GetWithOffset<int32_t>(16, 64);
    s.SetValue(0, Addr(t.GetPhyAddr()) - Addr(b.Get<int32_t>().GetPhyAddr()));
    s.SetValue(1, t.GetSize());
    t.SetSize(8);
    s.SetValue(2, t.GetSize());
    s.SetValue(3, t.GetLength());
    s.SetValue(4, Addr(t.GetPhyAddr(3)) - Addr(t.GetPhyAddr()));
    s.SetValue(5, t.ReinterpretCast<int16_t>().GetSize());

    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<int32_t> x = q.AllocTensor<int32_t>();
    x.SetUserTag(77);
    q.EnQue(x);
    LocalTensor<int32_t> y = q.DeQue<int32_t>();
    s.SetValue(6, y.GetUserTag());
    q.FreeTensor(y);
    s.SetValue(7, GetTPipePtr() == &pipe ? 1 : 0);

    LocalMemAllocator<Hardware::UB> al;
    (void)al.Alloc<TPosition::VECCALC, int32_t, 10>();
    s.SetValue(8, al.GetCurAddr());
    LocalTensor<float> f = al.Alloc<float>(8);
    s.SetValue(9, Addr(f.GetPhyAddr()));

    TBufPool<TPosition::VECCALC, 2> pool;
    pipe.InitBufPool(pool, 2048);
    TBuf<TPosition::VECCALC> p1;
    TBuf<TPosition::VECCALC> p2;
    pool.InitBuffer(p1, 100);
    pool.InitBuffer(p2, 64);
    s.SetValue(10, Addr(p2.Get<uint8_t>().GetPhyAddr()) - Addr(p1.Get<uint8_t>().GetPhyAddr()));
    s.SetValue(11, Addr(p1.Get<uint8_t>().GetPhyAddr()));

    // A pipe of an inner scope is current while it lives; after it, the outer one is again.
    {
        TPipe inner;
        s.SetValue(12, GetTPipePtr() == &inner ? 1 : 0);
    }
    s.SetValue(13, GetTPipePtr() == &pipe ? 1 : 0);
}

__aicore__ inline void SysVars(__gm__ const AivApiTestArgs *a)
{
    GlobalTensor<int64_t> s = Slots(a);
    s.SetValue(0, block_idx);
    s.SetValue(1, block_num);
    s.SetValue(2, GetSubBlockIdx());
    s.SetValue(3, GetSubBlockNum());
    s.SetValue(4, GetTaskRation());
    s.SetValue(5, GetBlockIdx());
}

enum class Barrier { GM, HW, CROSS };

__aicore__ inline void Sync(Barrier how, const GlobalTensor<int32_t> &work, const LocalTensor<int32_t> &ubWork)
{
    switch (how) {
    case Barrier::GM:
        SyncAll(work, ubWork);
        break;
    case Barrier::HW:
        SyncAll();
        break;
    case Barrier::CROSS:
        CrossCoreSetFlag<0, PIPE_MTE3>(3);
        CrossCoreWaitFlag(3);
        break;
    }
}

/* Every block publishes a value in plain (data) GM, all synchronise, every block sums them all;
 * a second barrier keeps the next round's write after every read of this one. */
__aicore__ inline void Exchange(__gm__ const AivApiTestArgs *a, Barrier how)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> mine;
    TBuf<TPosition::VECCALC> all;
    TBuf<TPosition::VECCALC> ubWork;
    const uint32_t n = static_cast<uint32_t>(GetBlockNum());
    pipe.InitBuffer(mine, 32);
    pipe.InitBuffer(all, n * 32);
    pipe.InitBuffer(ubWork, n * 32);
    LocalTensor<int32_t> m = mine.Get<int32_t>();
    LocalTensor<int32_t> v = all.Get<int32_t>();
    GlobalTensor<int32_t> in = Gm32(a->in);
    GlobalTensor<int32_t> work = Gm32(a->work);
    const int64_t me = GetBlockIdx();
    int64_t sum = 0;
    for (uint32_t r = 0; r < a->rounds; r++) {
        m.SetValue(0, static_cast<int32_t>((r + 1) * (me + 1)));
        Pair<HardEvent::S_MTE3>();
        DataCopy(in[me * 8], m, 8);
        Sync(how, work, ubWork.Get<int32_t>());
        DataCopy(v, in, n * 8);
        Pair<HardEvent::MTE2_S>();
        for (uint32_t k = 0; k < n; k++) {
            sum += v.GetValue(k * 8);
        }
        Pair<HardEvent::MTE3_S>(); // the next round's SetValue overwrites what MTE3 stored from
        if (a->param == 0) {
            Sync(how, work, ubWork.Get<int32_t>());
        }
    }
    Slots(a).SetValue(0, sum);
}

__aicore__ inline void Bypass(__gm__ const AivApiTestArgs *a)
{
    GlobalTensor<int32_t> in = Gm32(a->in);
    GlobalTensor<int64_t> s = Slots(a);
    __gm__ int32_t *p = reinterpret_cast<__gm__ int32_t *>(a->in);
    s.SetValue(0, in.GetValue(0)); // fills the cache line
    WriteGmByPassDCache(p, static_cast<int32_t>(9));
    s.SetValue(1, ReadGmByPassDCache(p));
    s.SetValue(2, in.GetValue(0)); // the cached line is not updated by the bypass write
}

/* SetValue of the last int32 of a 100-byte buffer: its 64-byte cache line runs 28 bytes past
 * the buffer's end. Then GetValue of the line's first int32 (from the cached line) into slot 0.
 * Written back by DataCacheCleanAndInvalid (rounds != 0) or the kernel's end. */
__aicore__ inline void SetTail(__gm__ const AivApiTestArgs *a)
{
    GlobalTensor<int32_t> in = Gm32(a->in);
    in.SetValue(24, a->param);
    Slots(a).SetValue(0, in.GetValue(16));
    if (a->rounds != 0) {
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(in[24]);
    }
}

__aicore__ inline void Printf()
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 32);
    LocalTensor<int32_t> t = b.Get<int32_t>();
    for (int32_t i = 0; i < 4; i++) {
        t.SetValue(i, i * 10);
    }
    printf("d=%d i=%i u=%u x=%x f=%.2f s=%s\n", -3, static_cast<int64_t>(block_idx), 7u, -1, 1.5f, "ok");
    PRINTF("two\nlines %d%%\n", 100);
    DumpTensor(t, 5, 4);
}

__aicore__ inline void BuiltinFlags(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, PIECE_BYTES);
    LocalTensor<int32_t> t = b.Get<int32_t>();
    DataCopy(t, Gm32(a->in), PIECE);
    if (a->param == 0) {
        set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0);
    }
    wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0);
    DataCopy(Gm32(a->out), t, PIECE);
    pipe_barrier(PIPE_ALL);
}

__aicore__ inline void BufPoolOverflow()
{
    TPipe pipe;
    TBufPool<TPosition::VECCALC, 2> pool;
    pipe.InitBufPool(pool, 1024);
    TBuf<TPosition::VECCALC> b[3];
    for (int32_t i = 0; i < 3; i++) {
        pool.InitBuffer(b[i], 64);
    }
}

__aicore__ inline void EnQueFull()
{
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, PIECE_BYTES);
    LocalTensor<int32_t> x = q.AllocTensor<int32_t>();
    LocalTensor<int32_t> y = q.AllocTensor<int32_t>();
    q.EnQue(x);
    q.EnQue(y);
}

__aicore__ inline void DeQueNever()
{
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, PIECE_BYTES);
    LocalTensor<int32_t> x = q.AllocTensor<int32_t>();
    Duplicate(x, 1, PIECE);
    q.EnQue(x);
}

/* A fused kernel: its own queue holds an MTE2_MTE3 id while the library's copy engine runs. */
__aicore__ inline void FusedCopy(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    TBuf<TPosition::VECCALC> stage;
    pipe.InitBuffer(q, 1, PIECE_BYTES);
    pipe.InitBuffer(stage, aiv::STAGE_BYTES);
    GlobalTensor<int32_t> in = Gm32(a->in);
    GlobalTensor<int32_t> out = Gm32(a->out);
    LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
    DataCopy(t, in, PIECE);
    q.EnQue(t);
    aiv::CpGM2GM(reinterpret_cast<__gm__ uint8_t *>(a->out) + PIECE_BYTES,
                 reinterpret_cast<__gm__ uint8_t *>(a->in) + PIECE_BYTES, static_cast<uint64_t>(a->param),
                 stage.Get<uint8_t>());
    t = q.DeQue<int32_t>();
    DataCopy(out, t, PIECE);
    q.FreeTensor(t);
}

/* Reloads UB bytes MTE3 may still be storing from, without a flag between. */
__aicore__ inline void Reload(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, PIECE_BYTES);
    LocalTensor<int32_t> t = b.Get<int32_t>();
    GlobalTensor<int32_t> in = Gm32(a->in);
    GlobalTensor<int32_t> out = Gm32(a->out);
    DataCopy(t, in, PIECE);
    Pair<HardEvent::MTE2_MTE3>();
    DataCopy(out, t, PIECE);
    DataCopy(t, in[static_cast<uint64_t>(a->param) * PIECE], PIECE); // unordered with the store above
    Pair<HardEvent::MTE2_MTE3>();
    DataCopy(out[PIECE], t, PIECE);
}

/* Reloads identical, then different bytes under a pending store. */
__aicore__ inline void ReloadTwice(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, PIECE_BYTES);
    LocalTensor<int32_t> t = b.Get<int32_t>();
    GlobalTensor<int32_t> in = Gm32(a->in);
    DataCopy(t, in, PIECE);
    Pair<HardEvent::MTE2_MTE3>();
    DataCopy(Gm32(a->out), t, PIECE);
    DataCopy(t, in, PIECE);        // identical: harmless
    DataCopy(t, in[PIECE], PIECE); // different: MTE3 may still be reading
    Pair<HardEvent::MTE2_MTE3>();
}

/* A vector fill over bytes a deferred (large) load is still writing. */
__aicore__ inline void LazyFill(__gm__ const AivApiTestArgs *a)
{
    constexpr uint32_t N = 8192; // 32 KiB of int32: deferred by the twin
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, N * 4);
    LocalTensor<int32_t> t = b.Get<int32_t>();
    Duplicate(t, 0, N);
    Pair<HardEvent::V_MTE2>();
    DataCopy(t, Gm32(a->in), N);
    Duplicate(t, 0, N); // no MTE2_V flag: the load may land after the fill
    Pair<HardEvent::V_MTE3>();
    DataCopy(Gm32(a->out), t, N);
}

__aicore__ inline void EventFetch(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, PIECE_BYTES);
    LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
    DataCopy(t, Gm32(a->in), PIECE);
    q.EnQue(t); // holds id 0 of MTE2_V
    Slots(a).SetValue(0, pipe.FetchEventID<HardEvent::MTE2_V>());
    if (a->param == 1) {
        pipe.ReleaseEventID<HardEvent::MTE2_V>(0);
    } else if (a->param == 2) {
        WaitFlag<HardEvent::MTE2_V>(0);
    }
    t = q.DeQue<int32_t>();
    q.FreeTensor(t);
}

/* Rewrites a UB scalar MTE3 may still be storing from, without a flag between. */
__aicore__ inline void Restore(__gm__ const AivApiTestArgs *a)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 32);
    LocalTensor<int32_t> t = b.Get<int32_t>();
    GlobalTensor<int32_t> out = Gm32(a->out);
    for (int32_t i = 0; i < 8; i++) {
        t.SetValue(i, 5);
    }
    Pair<HardEvent::S_MTE3>();
    DataCopy(out, t, 8);
    t.SetValue(0, a->param != 0 ? 6 : 5); // unordered with the store above
    Pair<HardEvent::S_MTE3>();
    DataCopy(out[8], t, 8);
}

} // namespace

extern "C" __global__ __aicore__ void aiv_api_selftest(GM_ADDR argsAddr)
{
    __gm__ const AivApiTestArgs *a = reinterpret_cast<__gm__ const AivApiTestArgs *>(argsAddr);
    switch (a->mode) {
    case AIV_API_QUEUE_VECOUT:
        QueueVecOut(a);
        break;
    case AIV_API_TBUF_NO_SYNC:
        TBufPipeline(a, false);
        break;
    case AIV_API_NO_FREE_SYNC:
        TBufPipeline(a, true);
        break;
    case AIV_API_VECIN_TO_MTE3:
        VecInToMte3(a);
        break;
    case AIV_API_BIND_COPY:
        BindCopy(a);
        break;
    case AIV_API_EVENT_IDS:
        EventIds(a);
        break;
    case AIV_API_EVENT_COLLISION:
        EventCollision(a);
        break;
    case AIV_API_EVENT_EXHAUST:
        EventExhaust();
        break;
    case AIV_API_TENSOR_HELPERS:
        TensorHelpers(a);
        break;
    case AIV_API_SYS_VARS:
        SysVars(a);
        break;
    case AIV_API_SYNC_ALL_GM:
        Exchange(a, Barrier::GM);
        break;
    case AIV_API_SYNC_ALL_HW:
        Exchange(a, Barrier::HW);
        break;
    case AIV_API_SYNC_ALL_SKIP:
        if (GetBlockIdx() != a->param) {
            SyncAll();
        }
        break;
    case AIV_API_CROSS_CORE:
        Exchange(a, Barrier::CROSS);
        break;
    case AIV_API_CROSS_MODE1:
        CrossCoreSetFlag<1, PIPE_MTE3>(0);
        break;
    case AIV_API_BYPASS:
        Bypass(a);
        break;
    case AIV_API_PRINTF:
        Printf();
        break;
    case AIV_API_SET_TAIL:
        SetTail(a);
        break;
    case AIV_API_PRINTF_BAD:
        printf("%c\n", 65);
        break;
    case AIV_API_ASSERT:
        assert(a->param == 0, "param=%d", a->param);
        break;
    case AIV_API_TRAP:
        trap();
        break;
    case AIV_API_BUILTIN_FLAGS:
        BuiltinFlags(a);
        break;
    case AIV_API_BUFPOOL_OVERFLOW:
        BufPoolOverflow();
        break;
    case AIV_API_ENQUE_FULL:
        EnQueFull();
        break;
    case AIV_API_DEQUE_NEVER:
        DeQueNever();
        break;
    case AIV_API_FUSED_COPY:
        FusedCopy(a);
        break;
    case AIV_API_RELOAD:
        Reload(a);
        break;
    case AIV_API_RESTORE:
        Restore(a);
        break;
    case AIV_API_RELOAD_TWICE:
        ReloadTwice(a);
        break;
    case AIV_API_LAZY_FILL:
        LazyFill(a);
        break;
    case AIV_API_EVENT_FETCH:
        EventFetch(a);
        break;
    case AIV_API_CROSS_WAIT_MODE1:
        CrossCoreWaitFlag<1>(0);
        break;
    default:
        break;
    }
}
