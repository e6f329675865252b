/*
 * Unified Buffer management: TPipe, TBuf, TQueBind / TQue, TBufPool, custom TBufPools
 * (EXTERN_IMPL_BUFPOOL), LocalMemAllocator, GetTPipePtr.
 *
 * Queues synchronise as AscendC's do, by queue position (not a full barrier):
 *   TQue<VECIN>  (GM -> VECIN):       EnQue/DeQue  SetFlag/WaitFlag<MTE2_V>,
 *                                     FreeTensor / next AllocTensor of the buffer  <V_MTE2>
 *   TQue<VECOUT> (VECOUT -> GM):      EnQue/DeQue <V_MTE3>,     FreeTensor/AllocTensor <MTE3_V>
 *   TQueBind<VECIN, VECOUT>:          EnQue/DeQue <MTE2_MTE3>,  FreeTensor/AllocTensor <MTE3_MTE2>
 *   TBuf:                             nothing.
 * The event ids come from the block's TPipe allocator (the same one AllocEventID draws from),
 * taken at EnQue / FreeTensor and given back at DeQue / the next AllocTensor of the buffer; the
 * runtime reports a kernel's own flag on an id a queue holds. A free event still pending when
 * the TPipe is reset or destroyed (or a TBufPool reset) is waited for then, as AscendC's does.
 */
#ifndef ASC_TWIN_TPIPE_H
#define ASC_TWIN_TPIPE_H

#include <exception>

#include "atomic.h"
#include "flags.h"
#include "tensor.h"

namespace AscendC {
class TPipe;
/* A block of a TQue / TBuf as a custom TBufPool hands it out (GetBufHandle). */
using TBufHandle = uint8_t *;
} // namespace AscendC

/* The block's current TPipe: the one constructed last (nullptr before). */
__aicore__ inline AscendC::TPipe *GetTPipePtr()
{
    return static_cast<AscendC::TPipe *>(asc_twin_tpipe(ASC_TWIN_TPIPE_GET, nullptr));
}

namespace asc_twin {

struct FreeTable;

/* A bump allocator over part of UB (a TPipe's whole UB, or a TBufPool's region). */
struct Region {
    uint8_t *base = nullptr;
    uint64_t cap = 0;
    uint64_t used = 0;
    AscendC::TPipe *pipe = nullptr;
    /* The pipe's pending free events (queues of this region register theirs there). */
    FreeTable *frees = nullptr;

    uint8_t *Take(uint32_t len, uint32_t op, const char *what)
    {
        const uint64_t rounded = (static_cast<uint64_t>(len) + AscendC::ONE_BLK_SIZE - 1) / AscendC::ONE_BLK_SIZE *
                                 AscendC::ONE_BLK_SIZE;
        if (used + rounded > cap) {
            /* value: the bytes the region's buffers would take with this one; limit: its bytes. */
            asc_twin_check(asc_twin_fail(op, what, used + rounded, cap));
        }
        uint8_t *p = base + used;
        used += rounded;
        return p;
    }
};

inline int32_t QueueAlloc(AscendC::HardEvent e)
{
    const int32_t id = asc_twin_event(ASC_TWIN_QUEUE_ALLOC_EVENT, static_cast<uint32_t>(e), 0);
    asc_twin_check(id < 0 ? ASC_TWIN_FAULT : ASC_TWIN_OK);
    return id;
}
inline void QueueRelease(AscendC::HardEvent e, int32_t id)
{
    asc_twin_check(asc_twin_event(ASC_TWIN_QUEUE_RELEASE_EVENT, static_cast<uint32_t>(e), id) < 0 ? ASC_TWIN_FAULT : ASC_TWIN_OK);
}
inline void QueueSet(AscendC::HardEvent e, int32_t id)
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_QUEUE_SET_FLAG, static_cast<uint32_t>(e), id));
}
inline void QueueWait(AscendC::HardEvent e, int32_t id)
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_QUEUE_WAIT_FLAG, static_cast<uint32_t>(e), id));
}

/* Free events of queue buffers not yet waited for (FreeTensor without the next AllocTensor),
 * kept by the TPipe so that Reset / Destroy wait for them even after the queue object is gone.
 * AscendC allows 64 buffers per kernel, so 64 entries suffice. */
struct FreeTable {
    static constexpr int32_t MAX = 64;
    struct Entry {
        AscendC::HardEvent event;
        int8_t id;
        bool live;
        const void *owner;
        uint32_t gen;
    };
    Entry e[MAX] = {};
    uint32_t gen = 1;

    /* Records a free event; returns its slot. */
    int32_t Add(AscendC::HardEvent event, int32_t id, const void *owner)
    {
        for (int32_t i = 0; i < MAX; i++) {
            if (!e[i].live) {
                e[i] = Entry{event, static_cast<int8_t>(id), true, owner, gen++};
                return i;
            }
        }
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "more than 64 freed queue buffers pending on one TPipe", MAX,
                                     MAX));
        return 0;
    }
    /* Waits for and gives back the event of `slot` if it is still the one recorded then. */
    void Take(int32_t slot, uint32_t g)
    {
        if (slot < 0 || slot >= MAX || !e[slot].live || e[slot].gen != g) {
            return;
        }
        e[slot].live = false;
        QueueWait(e[slot].event, e[slot].id);
        QueueRelease(e[slot].event, e[slot].id);
    }
    /* Waits for every pending free event of `owner` (nullptr: all). */
    void Drain(const void *owner)
    {
        for (int32_t i = 0; i < MAX; i++) {
            if (e[i].live && (owner == nullptr || e[i].owner == owner)) {
                e[i].live = false;
                QueueWait(e[i].event, e[i].id);
                QueueRelease(e[i].event, e[i].id);
            }
        }
    }
};

/* The events a queue between two positions sets (AscendC's mapping). */
template <AscendC::TPosition src, AscendC::TPosition dst> struct QueEvents {
    using P = AscendC::TPosition;
    using H = AscendC::HardEvent;
    static constexpr bool gmIn = src == P::GM && dst == P::VECIN;
    static constexpr bool vecOut = src == P::VECOUT && dst == P::GM;
    static constexpr bool bind = src == P::VECIN && dst == P::VECOUT;
    static constexpr bool known = gmIn || vecOut || bind;
    static constexpr H enque = gmIn ? H::MTE2_V : vecOut ? H::V_MTE3 : H::MTE2_MTE3;
    static constexpr H free = gmIn ? H::V_MTE2 : vecOut ? H::MTE3_V : H::MTE3_MTE2;
    /* Position of the tensors the queue hands out. */
    static constexpr P tensorPos = src == P::GM ? dst : src;
};

constexpr bool IsCubePosition(AscendC::TPosition p)
{
    using P = AscendC::TPosition;
    return p == P::A1 || p == P::A2 || p == P::B1 || p == P::B2 || p == P::C1 || p == P::C2 || p == P::CO1 ||
           p == P::CO2 || p == P::TSCM || p == P::C2PIPE2GM || p == P::C2PIPE2LOCAL;
}

/* The logical (src, dst) of TQue<pos>, as AscendC maps it. */
constexpr AscendC::TPosition QueSrc(AscendC::TPosition pos)
{
    return pos == AscendC::TPosition::VECIN ? AscendC::TPosition::GM : pos;
}
constexpr AscendC::TPosition QueDst(AscendC::TPosition pos)
{
    return pos == AscendC::TPosition::VECOUT ? AscendC::TPosition::GM : pos;
}

/* The state EXTERN_IMPL_BUFPOOL gives a user's pool class. The user code places each block
 * itself (InitStartBufHandle / InitBufHandle); the twin checks that a block lies inside the
 * pool's memory, is 32-byte aligned and names one of the pool's handles. Blocks may overlap:
 * the docs allow blocks shared between queues. */
template <AscendC::TPosition pos, uint32_t N> struct CustomPool {
    static_assert(!IsCubePosition(pos),
                  "a custom TBufPool at a cube-unit (AIC) position: the aiv-comm twin models AIV vector cores only");
    static_assert(pos == AscendC::TPosition::VECIN || pos == AscendC::TPosition::VECOUT ||
                      pos == AscendC::TPosition::VECCALC,
                  "a TBufPool's position must be VECIN, VECOUT or VECCALC on an AIV core (or A1/B1/C1 on a cube core)");
    static_assert(N >= 1 && N <= 64, "EXTERN_IMPL_BUFPOOL: BUFID_SIZE must be 1..64 (the docs advise at most 16)");
    /* base and cap: the pool's memory (TPipe::InitBufPool); `used` is not used. */
    Region region;
    /* GetCurAddr / GetCurBufSize: what the user's code last set. */
    uint32_t cur = 0;
    uint8_t curBufs = 0;
    /* The handles GetBufHandle gives: only their addresses matter. */
    uint8_t handles[N] = {};

    void Bind(uint8_t *base, uint32_t len, AscendC::TPipe *pipe, FreeTable *frees)
    {
        region = Region{base, len, 0, pipe, frees};
        cur = static_cast<uint32_t>(base - UbBase());
        curBufs = 0;
    }
    /* Init: no memory until TPipe::InitBufPool (start, current address and length 0). */
    void Init()
    {
        region.base = nullptr;
        region.cap = 0;
        cur = 0;
        curBufs = 0;
    }
    /* Reset: waits for the pending free events of the pool's queue buffers; the pool then has
     * no memory (its buffers may not be used any more). */
    void Reset()
    {
        if (region.frees != nullptr) {
            region.frees->Drain(&region);
        }
        Init();
    }
    /* The destructor's Reset, while the TPipe whose events the pool's queues hold is still the
     * block's current one (a pipe destroyed first has waited for them already). */
    void Finish() noexcept
    {
        if (region.frees == nullptr || std::uncaught_exceptions() != 0 ||
            asc_twin_tpipe(ASC_TWIN_TPIPE_GET, nullptr) != region.pipe) {
            return;
        }
        try {
            Reset();
        } catch (const AscTwinAbort &) {
        }
    }
    uint8_t *Handle(uint8_t offset)
    {
        if (offset >= N) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL,
                                         "GetBufHandle: offset past the pool's BUFID_SIZE (EXTERN_IMPL_BUFPOOL)", offset,
                                         N));
            return handles;
        }
        return handles + offset;
    }
    /* The UB memory of a block at UB address `addr` of `len` bytes, checked. */
    uint8_t *Block(const uint8_t *handle, uint32_t addr, uint32_t len)
    {
        if (handle < handles || handle >= handles + N) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL,
                                         "InitBufHandle: the handle is not one of this pool's (GetBufHandle)", 0, N));
        }
        if (region.base == nullptr || region.frees == nullptr) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL,
                                         "InitBufHandle: the custom TBufPool has no memory (TPipe::InitBufPool first; "
                                         "Init and Reset take it away)",
                                         addr, 0));
        }
        const uint64_t start = static_cast<uint64_t>(region.base - UbBase());
        if (addr < start || static_cast<uint64_t>(addr) + len > start + region.cap) {
            /* value: the block's end; limit: the pool's end (UB addresses). */
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL,
                                         "InitBufHandle: the block lies outside the pool's memory",
                                         static_cast<uint64_t>(addr) + len, start + region.cap));
        }
        if (addr % AscendC::ONE_BLK_SIZE != 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL,
                                         "InitBufHandle: the block's UB address is not 32-byte aligned", addr,
                                         AscendC::ONE_BLK_SIZE));
        }
        return UbBase() + addr;
    }
};

} // namespace asc_twin

/* Makes the class it is written in a custom TBufPool (the user's class places the blocks of
 * its TQue / TBuf objects itself; TPipe::InitBufPool gives it its memory). Ends in `private:`. */
#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                                     \
public:                                                                                                            \
    static constexpr AscendC::TPosition poolPos = POSITION;                                                        \
    static constexpr int bufIDSize = BUFID_SIZE;                                                                   \
    static constexpr bool isTbufPool = true;                                                                       \
    __aicore__ inline ~EXT_BUFPOOL() { asc_twin_pool_.Finish(); }                                                  \
    __aicore__ inline void Reset() { asc_twin_pool_.Reset(); }                                                     \
    __aicore__ inline void Init() { asc_twin_pool_.Init(); }                                                       \
    __aicore__ inline AscendC::TBufHandle GetBufHandle(uint8_t offset) { return asc_twin_pool_.Handle(offset); }  \
    __aicore__ inline void SetCurAddr(uint32_t curAddr) { asc_twin_pool_.cur = curAddr; }                          \
    __aicore__ inline uint32_t GetCurAddr() { return asc_twin_pool_.cur; }                                         \
    __aicore__ inline void SetCurBufSize(uint8_t curBufSize) { asc_twin_pool_.curBufs = curBufSize; }              \
    __aicore__ inline uint8_t GetCurBufSize() { return asc_twin_pool_.curBufs; }                                   \
    /* Twin: TPipe / TBufPool::InitBufPool give the pool its memory. */                                           \
    void TwinInit(uint8_t *base, uint32_t len, AscendC::TPipe *pipe, asc_twin::FreeTable *frees)                   \
    {                                                                                                              \
        asc_twin_pool_.Bind(base, len, pipe, frees);                                                               \
    }                                                                                                              \
    asc_twin::Region &TwinRegion() { return asc_twin_pool_.region; }                                               \
    asc_twin::CustomPool<POSITION, BUFID_SIZE> asc_twin_pool_;                                                     \
                                                                                                                   \
private:                                                                                                           \
    friend class AscendC::TPipe

namespace AscendC {

template <TPosition pos = TPosition::VECCALC> class TBuf {
public:
    static_assert(!asc_twin::IsCubePosition(pos),
                  "TBuf at a cube-unit (AIC) position: the aiv-comm twin models AIV vector cores only");
    __aicore__ inline TBuf() : addr_(nullptr), len_(0) {}
    template <typename T> __aicore__ inline LocalTensor<T> Get() const
    {
        return asc_twin::Access::Make<T>(reinterpret_cast<T *>(addr_), len_ / static_cast<uint32_t>(sizeof(T)), pos,
                                         nullptr);
    }
    /* The first `len` elements. */
    template <typename T> __aicore__ inline LocalTensor<T> Get(uint32_t len) const
    {
        if (static_cast<uint64_t>(len) * sizeof(T) > len_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "TBuf::Get longer than the buffer", len, len_));
        }
        return asc_twin::Access::Make<T>(reinterpret_cast<T *>(addr_), len, pos, nullptr);
    }
    /* `size` elements from byte `bufOffset` (32-byte aligned) of the buffer. */
    template <typename T> __aicore__ inline LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) const
    {
        if (bufOffset % ONE_BLK_SIZE != 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX,
                                         "TBuf::GetWithOffset: the byte offset must be 32-byte aligned", bufOffset,
                                         ONE_BLK_SIZE));
        }
        if (static_cast<uint64_t>(bufOffset) + static_cast<uint64_t>(size) * sizeof(T) > len_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "TBuf::GetWithOffset past the end of the buffer",
                                         static_cast<uint64_t>(bufOffset) + static_cast<uint64_t>(size) * sizeof(T),
                                         len_));
        }
        return asc_twin::Access::Make<T>(reinterpret_cast<T *>(addr_ + bufOffset), size, pos, nullptr);
    }
    /* A TBuf is a depth-0 queue: these do no synchronisation. */
    template <typename T> __aicore__ inline LocalTensor<T> AllocTensor() const { return Get<T>(); }
    template <typename T> __aicore__ inline LocalTensor<T> DeQue() const { return Get<T>(); }
    template <typename T> __aicore__ inline void EnQue(const LocalTensor<T> &) const {}
    template <typename T> __aicore__ inline void FreeTensor(LocalTensor<T> &) const {}

    /* Custom TBufPool: a TBuf is one block of `len` bytes (num must be 1); its memory comes with
     * InitBufHandle. */
    __aicore__ inline void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len)
    {
        (void)startBufhandle;
        if (num != 1) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL, "InitStartBufHandle of a TBuf: num must be 1", num, 1));
        }
        addr_ = nullptr;
        len_ = len;
    }
    /* Custom TBufPool: the TBuf's block is `len` bytes at UB address `curPoolAddr` of `bufPool`. */
    template <class P>
    __aicore__ inline void InitBufHandle(P *bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr,
                                         uint32_t len)
    {
        if (index != 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL, "InitBufHandle of a TBuf: index must be 0", index, 0));
        }
        addr_ = bufPool->asc_twin_pool_.Block(bufhandle, curPoolAddr, len);
    }

private:
    friend class TPipe;
    template <TPosition, uint32_t> friend class TBufPool;
    uint8_t *addr_;
    uint32_t len_;
};

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0> class TQueBind {
    using Ev = asc_twin::QueEvents<src, dst>;
    static_assert(!asc_twin::IsCubePosition(src) && !asc_twin::IsCubePosition(dst),
                  "a queue at a cube-unit (AIC) position: the aiv-comm twin models AIV vector cores only");
    static_assert(Ev::known || src == TPosition::VECCALC || dst == TPosition::VECCALC,
                  "a queue between these positions is not modeled by the twin (VECIN, VECOUT and "
                  "TQueBind<VECIN, VECOUT> are)");
    static_assert(src != TPosition::VECCALC && dst != TPosition::VECCALC,
                  "TQue<VECCALC> is rejected by AscendC: use TBuf<TPosition::VECCALC>");
    static_assert(depth >= 1, "queue depth 0 (the in-place AllocTensor form) is not modeled by the twin");
    static_assert(depth <= 64, "a queue holds at most 64 buffers (AscendC's QBUF_MAX_LEN)");

public:
    /* Buffers per queue (AscendC's QBUF_MAX_LEN). */
    static constexpr int32_t MAX_BUFS = 64;
    __aicore__ inline TQueBind() = default;

    template <typename T> __aicore__ inline LocalTensor<T> AllocTensor()
    {
        if (num_ == 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "AllocTensor on a queue without InitBuffer", 0, 0));
        }
        for (int32_t i = 0; i < num_; i++) {
            const int32_t k = (next_ + i) % num_;
            Buf &b = bufs_[k];
            if (!b.inUse) {
                if (b.addr == nullptr) {
                    asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE,
                                                 "AllocTensor of a queue block InitBufHandle has not given memory "
                                                 "(custom TBufPool)",
                                                 static_cast<uint64_t>(k), static_cast<uint64_t>(num_)));
                }
                if (b.freeSlot >= 0) {
                    // Wait until the pipe that read the buffer before FreeTensor is done.
                    frees_->Take(b.freeSlot, b.freeGen);
                    b.freeSlot = -1;
                }
                b.inUse = true;
                next_ = (k + 1) % num_;
                return Tensor<T>(k);
            }
        }
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE,
                                     "AllocTensor with every buffer of the queue in use (would hang the NPU)", 0,
                                     static_cast<uint64_t>(num_)));
        return LocalTensor<T>();
    }

    template <typename T> __aicore__ inline bool EnQue(const LocalTensor<T> &tensor)
    {
        const int32_t k = Find(tensor, "EnQue of a tensor this queue did not allocate");
        if (!bufs_[k].inUse) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "EnQue of a tensor already freed", 0, 0));
        }
        if (bufs_[k].queued) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "EnQue of a tensor already in the queue", 0, 0));
        }
        bufs_[k].queued = true;
        if (count_ >= depth) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE,
                                         "EnQue on a full queue (more tensors queued than its depth: AscendC's "
                                         "queue has no room for them)",
                                         static_cast<uint64_t>(count_), static_cast<uint64_t>(depth)));
        }
        const int32_t id = asc_twin::QueueAlloc(Ev::enque);
        asc_twin::QueueSet(Ev::enque, id);
        fifo_[(head_ + count_) % MAX_BUFS] = Entry{static_cast<int16_t>(k), static_cast<int8_t>(id)};
        count_++;
        return true;
    }

    template <typename T> __aicore__ inline LocalTensor<T> DeQue()
    {
        if (count_ == 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "DeQue on an empty queue (would hang the NPU)", 0, 0));
        }
        const Entry e = fifo_[head_];
        head_ = (head_ + 1) % MAX_BUFS;
        count_--;
        asc_twin::QueueWait(Ev::enque, e.id);
        asc_twin::QueueRelease(Ev::enque, e.id);
        bufs_[e.buf].queued = false;
        return Tensor<T>(e.buf);
    }
    template <typename T> __aicore__ inline void DeQue(LocalTensor<T> &tensor) { tensor = DeQue<T>(); }

    template <typename T> __aicore__ inline void FreeTensor(LocalTensor<T> &tensor)
    {
        const int32_t k = Find(tensor, "FreeTensor of a tensor this queue did not allocate");
        Buf &b = bufs_[k];
        if (!b.inUse) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "FreeTensor of a tensor already freed", 0, 0));
        }
        if (b.queued) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "FreeTensor of a tensor still in the queue (DeQue it first)",
                                         0, 0));
        }
        b.inUse = false;
        // The next AllocTensor of this buffer waits for the pipe that read it.
        const int32_t id = asc_twin::QueueAlloc(Ev::free);
        asc_twin::QueueSet(Ev::free, id);
        b.freeSlot = static_cast<int16_t>(frees_->Add(Ev::free, id, owner_));
        b.freeGen = frees_->e[b.freeSlot].gen;
    }

    __aicore__ inline bool VacantInQue() const { return count_ < depth; }
    __aicore__ inline bool HasTensorInQue() const { return count_ > 0; }
    __aicore__ inline int32_t GetTensorCountInQue() const { return count_; }
    __aicore__ inline bool HasIdleBuffer() const
    {
        for (int32_t i = 0; i < num_; i++) {
            if (!bufs_[i].inUse) {
                return true;
            }
        }
        return false;
    }
    /* Waits for and gives back the events of freed buffers (AscendC: releases the queue's
     * event ids). */
    __aicore__ inline void FreeAllEvent()
    {
        for (int32_t i = 0; i < num_; i++) {
            if (bufs_[i].freeSlot >= 0) {
                frees_->Take(bufs_[i].freeSlot, bufs_[i].freeGen);
                bufs_[i].freeSlot = -1;
            }
        }
    }

    /* Custom TBufPool: the queue has `num` blocks of `len` bytes; their memory comes with
     * InitBufHandle. */
    __aicore__ inline void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len)
    {
        (void)startBufhandle;
        if (num == 0 || num > MAX_BUFS) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL, "InitStartBufHandle: queue buffer count must be 1..64",
                                         num, MAX_BUFS));
        }
        num_ = num;
        len_ = len;
        next_ = head_ = count_ = 0;
        for (uint8_t i = 0; i < num; i++) {
            bufs_[i] = Buf{nullptr, false, false, -1, 0, 0, len};
        }
    }
    /* Custom TBufPool: block `index` of the queue is `len` bytes at UB address `curPoolAddr` of
     * `bufPool` (whose Reset waits for the block's free event). */
    template <class P>
    __aicore__ inline void InitBufHandle(P *bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr,
                                         uint32_t len)
    {
        if (index >= static_cast<uint32_t>(num_)) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL,
                                         "InitBufHandle: index past the block count InitStartBufHandle gave", index,
                                         static_cast<uint64_t>(num_)));
        }
        uint8_t *p = bufPool->asc_twin_pool_.Block(bufhandle, curPoolAddr, len);
        frees_ = bufPool->asc_twin_pool_.region.frees;
        owner_ = &bufPool->asc_twin_pool_.region;
        bufs_[index] = Buf{p, false, false, -1, 0, 0, len};
    }

    /* Twin: InitBuffer of `num` buffers of `len` bytes from `region`. */
    void TwinInit(asc_twin::Region &region, uint8_t num, uint32_t len, uint32_t op, const char *what)
    {
        if (num == 0 || num > MAX_BUFS) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_BUFFER, "queue buffer count must be 1..64", num, MAX_BUFS));
        }
        if (region.frees == nullptr) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_BUFFER, "InitBuffer from a TBufPool not initialised by a TPipe",
                                         0, 0));
        }
        frees_ = region.frees;
        owner_ = &region;
        num_ = num;
        len_ = len;
        for (uint8_t i = 0; i < num; i++) {
            bufs_[i] = Buf{region.Take(len, op, what), false, false, -1, 0, 0, len};
        }
    }

private:
    struct Buf {
        uint8_t *addr;
        bool inUse;
        bool queued;
        int16_t freeSlot;
        uint32_t freeGen;
        int32_t tag;
        uint32_t len;
    };
    struct Entry {
        int16_t buf;
        int8_t id;
    };
    template <typename T> LocalTensor<T> Tensor(int32_t k)
    {
        return asc_twin::Access::Make<T>(reinterpret_cast<T *>(bufs_[k].addr),
                                         bufs_[k].len / static_cast<uint32_t>(sizeof(T)),
                                         Ev::tensorPos, &bufs_[k].tag);
    }
    template <typename T> int32_t Find(const LocalTensor<T> &tensor, const char *what) const
    {
        const uint8_t *p = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(tensor));
        for (int32_t i = 0; i < num_; i++) {
            if (bufs_[i].addr == p) {
                return i;
            }
        }
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, what, 0, 0));
        return 0;
    }
    Buf bufs_[MAX_BUFS] = {};
    Entry fifo_[MAX_BUFS] = {};
    asc_twin::FreeTable *frees_ = nullptr;
    const void *owner_ = nullptr;
    int32_t num_ = 0;
    uint32_t len_ = 0;
    int32_t next_ = 0;
    int32_t head_ = 0;
    int32_t count_ = 0;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<asc_twin::QueSrc(pos), asc_twin::QueDst(pos), depth, mask> {
public:
    __aicore__ inline TQue() = default;
};


/* A region of UB carved out of a TPipe, with its own buffers (at most bufIDSize of them). */
template <TPosition pos, uint32_t bufIDSize = 4> class TBufPool {
    static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize must be 1..16");

public:
    __aicore__ inline TBufPool() = default;
    template <class T> __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len)
    {
        Count(num);
        que.TwinInit(region_, num, len, ASC_TWIN_OP_BUF_POOL, "TBufPool::InitBuffer exceeds the pool");
        return true;
    }
    template <TPosition bufPos> __aicore__ inline bool InitBuffer(TBuf<bufPos> &buf, uint32_t len)
    {
        Count(1);
        buf.addr_ = region_.Take(len, ASC_TWIN_OP_BUF_POOL, "TBufPool::InitBuffer exceeds the pool");
        buf.len_ = len;
        return true;
    }
    template <class T> __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len)
    {
        bufPool.TwinInit(region_.Take(len, ASC_TWIN_OP_BUF_POOL, "TBufPool::InitBufPool exceeds the pool"), len,
                         region_.pipe, region_.frees);
        return true;
    }
    /* A pool sharing `shareBuf`'s start and length. */
    template <class T, class U> __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len, U &shareBuf)
    {
        (void)len;
        bufPool.TwinInit(shareBuf.TwinRegion().base, static_cast<uint32_t>(shareBuf.TwinRegion().cap), region_.pipe,
                         region_.frees);
        return true;
    }
    /* Waits for the pool's pending free events and makes its whole region available again. */
    __aicore__ inline void Reset()
    {
        if (region_.frees != nullptr) {
            region_.frees->Drain(&region_);
        }
        region_.used = 0;
        bufs_ = 0;
    }

    /* Twin: the pool's memory (for a pool sharing it). */
    asc_twin::Region &TwinRegion() { return region_; }
    void TwinInit(uint8_t *base, uint32_t len, TPipe *pipe, asc_twin::FreeTable *frees)
    {
        region_.base = base;
        region_.cap = len;
        region_.used = 0;
        region_.pipe = pipe;
        region_.frees = frees;
    }

private:
    template <TPosition, uint32_t> friend class TBufPool;
    friend class TPipe;
    void Count(uint32_t n)
    {
        if (bufs_ + n > bufIDSize) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_BUF_POOL, "TBufPool holds more buffers than its bufIDSize",
                                         bufs_ + n, bufIDSize));
        }
        bufs_ += n;
    }
    asc_twin::Region region_;
    uint32_t bufs_ = 0;
};

/* Allocates the core's Unified Buffer to TBuf / TQue / TBufPool objects, 32-byte aligned, and
 * the block's event ids. */
class TPipe {
public:
    __aicore__ inline TPipe()
    {
        InitSocState();
        asc_twin_check(asc_twin_ub_arena(&region_.base, &region_.cap));
        region_.pipe = this;
        region_.frees = &frees_;
        // The pipe current before this one (SET returns the current pipe after the set).
        prev_ = asc_twin_tpipe(ASC_TWIN_TPIPE_GET, nullptr);
        asc_twin_tpipe(ASC_TWIN_TPIPE_SET, this);
    }
    __aicore__ inline ~TPipe()
    {
        // A destructor must not throw: while the block unwinds from a fault there is nothing to
        // drain, and a fault found while draining is recorded by the runtime anyway.
        if (!destroyed_ && std::uncaught_exceptions() == 0) {
            try {
                Destroy();
            } catch (const AscTwinAbort &) {
            }
        }
        // The pipe that was current before this one is current again (a pipe in an inner
        // scope does not leave GetTPipePtr() null for the outer one).
        if (asc_twin_tpipe(ASC_TWIN_TPIPE_GET, nullptr) == this) {
            asc_twin_tpipe(ASC_TWIN_TPIPE_SET, prev_);
        }
    }
    TPipe(const TPipe &) = delete;
    TPipe &operator=(const TPipe &) = delete;

    template <TPosition bufPos> __aicore__ inline bool InitBuffer(TBuf<bufPos> &buf, uint32_t len)
    {
        buf.addr_ = region_.Take(len, ASC_TWIN_OP_INIT_BUFFER, "InitBuffer exceeds the Unified Buffer of the core");
        buf.len_ = len;
        return true;
    }
    template <class T> __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len)
    {
        que.TwinInit(region_, num, len, ASC_TWIN_OP_INIT_BUFFER, "InitBuffer exceeds the Unified Buffer of the core");
        return true;
    }
    template <class T> __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len)
    {
        bufPool.TwinInit(region_.Take(len, ASC_TWIN_OP_INIT_BUFFER,
                                      "InitBufPool exceeds the Unified Buffer of the core"),
                         len, this, &frees_);
        return true;
    }
    template <class T, class U> __aicore__ inline bool InitBufPool(T &bufPool, uint32_t len, U &shareBuf)
    {
        (void)len;
        bufPool.TwinInit(shareBuf.TwinRegion().base, static_cast<uint32_t>(shareBuf.TwinRegion().cap), this, &frees_);
        return true;
    }

    /* Reserves an event id of `evt` (release it with ReleaseEventID). */
    template <HardEvent evt> __aicore__ inline TEventID AllocEventID()
    {
        const int32_t id = asc_twin_event(ASC_TWIN_ALLOC_EVENT, static_cast<uint32_t>(evt), 0);
        asc_twin_check(id < 0 ? ASC_TWIN_FAULT : ASC_TWIN_OK);
        return static_cast<TEventID>(id);
    }
    template <HardEvent evt> __aicore__ inline void ReleaseEventID(TEventID id)
    {
        asc_twin_check(asc_twin_event(ASC_TWIN_RELEASE_EVENT, static_cast<uint32_t>(evt), id) < 0 ? ASC_TWIN_FAULT : ASC_TWIN_OK);
    }
    /* The lowest id of `evt` nobody has reserved, without reserving it. */
    template <HardEvent evt> __aicore__ inline TEventID FetchEventID() { return FetchEventID(evt); }
    __aicore__ inline TEventID FetchEventID(HardEvent evt)
    {
        const int32_t id = asc_twin_event(ASC_TWIN_FETCH_EVENT, static_cast<uint32_t>(evt), 0);
        asc_twin_check(id < 0 ? ASC_TWIN_FAULT : ASC_TWIN_OK);
        return static_cast<TEventID>(id);
    }

    /* Waits for pending free events, resets the core state, and gives the whole UB back. */
    __aicore__ inline void Reset()
    {
        frees_.Drain(nullptr);
        InitSocState();
        region_.used = 0;
    }
    __aicore__ inline void DestroyWithoutPipeAll()
    {
        frees_.Drain(nullptr);
        destroyed_ = true;
    }
    __aicore__ inline void Destroy()
    {
        DestroyWithoutPipeAll();
        pipe_barrier(PIPE_ALL);
    }
    __aicore__ inline void Init() {}

    /* Twin: the UB byte address where the buffers this pipe has handed out end (AscendC's queue
     * end address, past which its APIs take UB scratch, e.g. InitOutput). */
    uint64_t TwinQueueEnd() const { return region_.used; }

private:
    template <TPosition, uint32_t> friend class TBufPool;
    asc_twin::Region region_;
    asc_twin::FreeTable frees_;
    bool destroyed_ = false;
    void *prev_ = nullptr;
};

/* A bump allocator over the core's UB from address 0, without rounding (AscendC's
 * LocalMemAllocator<Hardware::UB>). */
template <Hardware hard = Hardware::UB> class LocalMemAllocator {
    static_assert(hard == Hardware::UB,
                  "LocalMemAllocator: only Hardware::UB exists on an AIV core (L1/L0/BIAS/FIXBUF belong to the cube "
                  "unit, which the aiv-comm twin does not model)");

public:
    __aicore__ inline LocalMemAllocator()
    {
        uint8_t *base = nullptr;
        asc_twin_check(asc_twin_ub_arena(&base, &cap_));
    }
    template <TPosition pos, class DataType, uint32_t tileSize> __aicore__ inline LocalTensor<DataType> Alloc()
    {
        return Take<DataType>(pos, tileSize);
    }
    template <TPosition pos, class DataType> __aicore__ inline LocalTensor<DataType> Alloc(uint32_t tileSize)
    {
        return Take<DataType>(pos, tileSize);
    }
    template <class DataType, uint32_t tileSize> __aicore__ inline LocalTensor<DataType> Alloc()
    {
        return Take<DataType>(TPosition::VECCALC, tileSize);
    }
    template <class DataType> __aicore__ inline LocalTensor<DataType> Alloc(uint32_t tileSize)
    {
        return Take<DataType>(TPosition::VECCALC, tileSize);
    }
    /* UB byte address of the next allocation. */
    __aicore__ inline uint32_t GetCurAddr() const { return head_; }

private:
    template <class DataType> LocalTensor<DataType> Take(TPosition pos, uint32_t tileSize)
    {
        const uint64_t bytes = static_cast<uint64_t>(tileSize) * sizeof(DataType);
        if (head_ + bytes > cap_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_ALLOCATOR, "LocalMemAllocator::Alloc exceeds the Unified Buffer",
                                         head_ + bytes, cap_));
        }
        LocalTensor<DataType> t = asc_twin::Access::Make<DataType>(
            reinterpret_cast<DataType *>(asc_twin::UbBase() + head_), tileSize, pos, nullptr);
        head_ += static_cast<uint32_t>(bytes);
        return t;
    }
    uint32_t head_ = 0;
    uint64_t cap_ = 0;
};

} // namespace AscendC

#endif
