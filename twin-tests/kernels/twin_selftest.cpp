// kernels: aiv_twin_selftest
// auto_sync: off
/*
 * aiv_twin_selftest: one small kernel per device rule the twin must enforce or reproduce
 * (tests/twin/twin_rules.rs drives it). It is ordinary AscendC device code: it compiles against the
 * real AscendC headers too (ascendc-check), so what it exercises on the twin is what the NPU sees.
 */
#include "kernel_operator.h"
#include "selftest_args.h"

using namespace AscendC;

namespace {

constexpr uint32_t UB_STAGE = 96 * 1024;

__aicore__ inline GlobalTensor<uint8_t> Gm(uint64_t addr, uint64_t len)
{
    GlobalTensor<uint8_t> t;
    t.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(addr), len);
    return t;
}

/* DataCopy of `len` bytes GM -> UB (+ub_off) -> GM as elements of T: the GM addresses must be
 * aligned to sizeof(T). */
template <typename T> __aicore__ inline void CopyAs(__gm__ const AivTwinTestArgs *a, const LocalTensor<uint8_t> &ub)
{
    const uint32_t count = a->len / static_cast<uint32_t>(sizeof(T));
    LocalTensor<T> stage = ub[a->ub_off].ReinterpretCast<T>();
    GlobalTensor<T> src;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a->src), count);
    GlobalTensor<T> dst;
    dst.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a->dst), count);
    DataCopy(stage, src, count);
    // MTE3 must not read UB before MTE2 has filled it.
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(dst, stage, count);
}

/* Writes `len` bytes (a multiple of 32) of UB back to GM, after MTE2 has finished filling it. */
__aicore__ inline void Dump(const GlobalTensor<uint8_t> &dst, const LocalTensor<uint8_t> &ub, uint32_t len)
{
    // MTE3 reads what MTE2 (or the scalar unit) wrote: order the pipes first.
    PipeBarrier<PIPE_ALL>();
    DataCopy(dst, ub, len);
}

template <typename T> __aicore__ inline void PadIn(__gm__ const AivTwinTestArgs *a, const LocalTensor<uint8_t> &ub)
{
    GlobalTensor<T> src;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a->src));
    DataCopyExtParams p(static_cast<uint16_t>(a->block_count), a->block_len, a->src_stride, a->dst_stride, 0);
    T padValue;
    static_assert(sizeof(T) <= sizeof(uint32_t), "pad value carried in 32 bits");
    uint32_t raw = a->pad_value;
    padValue = *reinterpret_cast<T *>(&raw);
    DataCopyPadExtParams<T> pad(a->is_pad != 0, static_cast<uint8_t>(a->left_pad),
                                static_cast<uint8_t>(a->right_pad), padValue);
    DataCopyPad(ub.ReinterpretCast<T>(), src, p, pad);
    Dump(Gm(a->dst, a->dump_len), ub, a->dump_len);
}

/* AIV_TT_PAD_IN with the older parameter structs: DataCopyParams (blockLen in bytes) and
 * DataCopyPadParams (the pad value as raw bits in 64 bits). */
template <typename T>
__aicore__ inline void PadInParams(__gm__ const AivTwinTestArgs *a, const LocalTensor<uint8_t> &ub)
{
    GlobalTensor<T> src;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a->src));
    DataCopyParams p(static_cast<uint16_t>(a->block_count), static_cast<uint16_t>(a->block_len),
                     static_cast<uint16_t>(a->src_stride), static_cast<uint16_t>(a->dst_stride));
    DataCopyPadParams pad(a->is_pad != 0, static_cast<uint8_t>(a->left_pad), static_cast<uint8_t>(a->right_pad),
                          a->pad_value);
    DataCopyPad(ub.ReinterpretCast<T>(), src, p, pad);
    Dump(Gm(a->dst, a->dump_len), ub, a->dump_len);
}

/* SetPadValue, then AIV_TT_PAD_IN: op 0 sets the value as T, op 1 as a type of another size. */
template <typename T> __aicore__ inline void PadInSet(__gm__ const AivTwinTestArgs *a, const LocalTensor<uint8_t> &ub)
{
    uint32_t raw = a->pad_value;
    if (a->op == 0) {
        T v;
        __builtin_memcpy(&v, &raw, sizeof(T));
        SetPadValue(v);
    } else if (sizeof(T) == 2) {
        SetPadValue<uint32_t>(raw);
    } else {
        SetPadValue<uint16_t>(static_cast<uint16_t>(raw));
    }
    PadIn<T>(a, ub);
}

/* AIV_TT_PAD_OUT with DataCopyParams. */
template <typename T>
__aicore__ inline void PadOutParams(__gm__ const AivTwinTestArgs *a, const LocalTensor<uint8_t> &ub)
{
    DataCopy(ub, Gm(a->src, a->dump_len), a->dump_len);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    GlobalTensor<T> dst;
    dst.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a->dst));
    DataCopyParams p(static_cast<uint16_t>(a->block_count), static_cast<uint16_t>(a->block_len),
                     static_cast<uint16_t>(a->src_stride), static_cast<uint16_t>(a->dst_stride));
    DataCopyPad(dst, ub.ReinterpretCast<T>(), p);
}

template <typename T> __aicore__ inline void PadOut(__gm__ const AivTwinTestArgs *a, const LocalTensor<uint8_t> &ub)
{
    DataCopy(ub, Gm(a->src, a->dump_len), a->dump_len);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    GlobalTensor<T> dst;
    dst.SetGlobalBuffer(reinterpret_cast<__gm__ T *>(a->dst));
    DataCopyExtParams p(static_cast<uint16_t>(a->block_count), a->block_len, a->src_stride, a->dst_stride, 0);
    DataCopyPad(dst, ub.ReinterpretCast<T>(), p);
}

template <typename T> __aicore__ inline void SetAtomic(uint32_t op)
{
    if (op == AIV_OP_SUM) {
        SetAtomicAdd<T>();
    } else if (op == AIV_OP_MAX) {
        SetAtomicMax<T>();
    } else if (op == AIV_OP_MIN) {
        SetAtomicMin<T>();
    }
}

__aicore__ inline void SetAtomicFor(uint32_t dtype, uint32_t op)
{
    switch (dtype) {
    case AIV_DT_F32: SetAtomic<float>(op); break;
    case AIV_DT_F16: SetAtomic<half>(op); break;
    case AIV_DT_BF16: SetAtomic<bfloat16_t>(op); break;
    case AIV_DT_I32: SetAtomic<int32_t>(op); break;
    case AIV_DT_I16: SetAtomic<int16_t>(op); break;
    default: SetAtomic<int8_t>(op); break;
    }
}

__aicore__ inline bool Expired(int64_t start, uint64_t deadline)
{
    return static_cast<uint64_t>(GetSystemCycle() - start) > deadline;
}

/* Polls lane 0 of the flag cell at `addr` by DMA until it reaches `expected` or the deadline. */
__aicore__ inline int32_t PollCell(uint64_t addr, int32_t expected, uint64_t deadline, const LocalTensor<int32_t> &cell)
{
    GlobalTensor<int32_t> flag;
    flag.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(addr), 8);
    const int64_t start = GetSystemCycle();
    int32_t seen = 0;
    while (true) {
        DataCopy(cell, flag, 8);
        // The scalar read of UB must wait for the MTE2 load.
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
        seen = cell.GetValue(0);
        if (seen >= expected || Expired(start, deadline)) {
            return seen;
        }
    }
}

/* Stores `value` into lane 0 of the 32-byte cell at `addr` through UB. */
__aicore__ inline void PutCell(uint64_t addr, int32_t value, const LocalTensor<int32_t> &cell)
{
    GlobalTensor<int32_t> out;
    out.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(addr), 8);
    cell.SetValue(0, value);
    // MTE3 reads the scalar store to UB.
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    DataCopy(out, cell, 8);
}

/* Recurses `levels` deep with a 4 KB frame each (not a tail call: the frame is read afterwards);
 * returns 0 + 1 + ... + levels. */
__aicore__ inline uint32_t Recurse(uint32_t depth, uint32_t levels)
{
    volatile uint32_t frame[1024];
    frame[0] = depth;
    frame[1023] = depth;
    if (depth >= levels) {
        return frame[0];
    }
    return Recurse(depth + 1, levels) + frame[1023];
}

} // namespace

extern "C" __global__ __aicore__ void aiv_twin_selftest(GM_ADDR argsAddr)
{
    __gm__ const AivTwinTestArgs *a = reinterpret_cast<__gm__ const AivTwinTestArgs *>(argsAddr);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    const uint32_t mode = a->mode;
    if (mode == AIV_TT_UB_OVERFLOW) {
        pipe.InitBuffer(buf, a->ub_bytes);
        return;
    }
    if (mode == AIV_TT_PAD_EXACT) {
        // A tensor whose bytes are not a multiple of 32 (a 13-float output, say): DataCopyPad
        // fills its buffer up to the 32-byte boundary InitBuffer rounded it to, and stores only
        // len bytes from it (block_len bytes both ways if set).
        pipe.InitBuffer(buf, a->len);
        LocalTensor<float> t = buf.Get<float>();
        GlobalTensor<float> src;
        src.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(a->src), a->len / sizeof(float));
        GlobalTensor<float> dst;
        dst.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(a->dst), a->len / sizeof(float));
        const uint32_t bytes = a->block_len != 0 ? a->block_len : a->len;
        DataCopyExtParams p(1, bytes, 0, 0, 0);
        DataCopyPadExtParams<float> pad(false, 0, 0, 0.0f);
        DataCopyPad(t, src, p, pad);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopyPad(dst, t, p);
        return;
    }
    pipe.InitBuffer(buf, UB_STAGE);
    LocalTensor<uint8_t> ub = buf.Get<uint8_t>();

    switch (mode) {
    case AIV_TT_COPY:
        if (a->dtype == 2) {
            CopyAs<uint32_t>(a, ub);
        } else if (a->dtype == 1) {
            CopyAs<uint16_t>(a, ub);
        } else {
            CopyAs<uint8_t>(a, ub);
        }
        break;
    case AIV_TT_DOUBLE_SET:
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
        break;
    case AIV_TT_SET_NO_WAIT:
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID2);
        break;
    case AIV_TT_EVENT_ID_8:
        SetFlag<HardEvent::MTE2_MTE3>(8);
        WaitFlag<HardEvent::MTE2_MTE3>(8);
        break;
    case AIV_TT_PAD_IN:
        if (a->dtype == 1) {
            PadIn<uint16_t>(a, ub);
        } else if (a->dtype == 2) {
            PadIn<uint32_t>(a, ub);
        } else {
            PadIn<uint8_t>(a, ub);
        }
        break;
    case AIV_TT_PAD_OUT:
        if (a->dtype == 1) {
            PadOut<uint16_t>(a, ub);
        } else if (a->dtype == 2) {
            PadOut<uint32_t>(a, ub);
        } else {
            PadOut<uint8_t>(a, ub);
        }
        break;
    case AIV_TT_PAD_IN_PARAMS:
        if (a->dtype == 1) {
            PadInParams<uint16_t>(a, ub);
        } else if (a->dtype == 2) {
            PadInParams<uint32_t>(a, ub);
        } else {
            PadInParams<uint8_t>(a, ub);
        }
        break;
    case AIV_TT_PAD_OUT_PARAMS:
        if (a->dtype == 1) {
            PadOutParams<uint16_t>(a, ub);
        } else if (a->dtype == 2) {
            PadOutParams<uint32_t>(a, ub);
        } else {
            PadOutParams<uint8_t>(a, ub);
        }
        break;
    case AIV_TT_PAD_IN_SET:
        if (a->dtype == 1) {
            PadInSet<uint16_t>(a, ub);
        } else if (a->dtype == 2) {
            PadInSet<uint32_t>(a, ub);
        } else {
            PadInSet<uint8_t>(a, ub);
        }
        break;
    case AIV_TT_STRIDED_IN: {
        DataCopyParams p(static_cast<uint16_t>(a->block_count), static_cast<uint16_t>(a->block_len),
                         static_cast<uint16_t>(a->src_stride), static_cast<uint16_t>(a->dst_stride));
        DataCopy(ub, Gm(a->src, 0), p);
        Dump(Gm(a->dst, a->dump_len), ub, a->dump_len);
        break;
    }
    case AIV_TT_STRIDED_OUT: {
        DataCopy(ub, Gm(a->src, a->dump_len), a->dump_len);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopyParams p(static_cast<uint16_t>(a->block_count), static_cast<uint16_t>(a->block_len),
                         static_cast<uint16_t>(a->src_stride), static_cast<uint16_t>(a->dst_stride));
        DataCopy(Gm(a->dst, 0), ub, p);
        break;
    }
    case AIV_TT_ATOMIC: {
        DataCopyExtParams p(1, a->len, 0, 0, 0);
        DataCopyPadExtParams<uint8_t> pad(false, 0, 0, 0);
        DataCopyPad(ub, Gm(a->src + static_cast<uint64_t>(GetBlockIdx()) * a->len, a->len), p, pad);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        SetAtomicFor(a->dtype, a->op);
        DataCopyPad(Gm(a->dst, a->len), ub, p);
        SetAtomicNone();
        break;
    }
    case AIV_TT_LOCAL_INDEX: {
        LocalTensor<uint8_t> small = buf.Get<uint8_t>(32);
        GlobalTensor<uint8_t> out = Gm(a->dst, 32);
        out.SetValue(0, small.GetValue(a->len));
        break;
    }
    case AIV_TT_LONE_WAIT:
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
        break;
    case AIV_TT_POLL: {
        LocalTensor<int32_t> cell = ub.ReinterpretCast<int32_t>();
        const int32_t seen = PollCell(a->src, static_cast<int32_t>(a->expected), a->deadline_cycles, cell);
        PutCell(a->dst + static_cast<uint64_t>(GetBlockIdx()) * 32, seen, cell);
        break;
    }
    case AIV_TT_POLL_PAIR: {
        // Two flags in turn: a block that re-reads one address is easy to spot and park; this
        // one spins over two, which the twin must still schedule fairly and watch.
        LocalTensor<int32_t> cell = ub.ReinterpretCast<int32_t>();
        LocalTensor<int32_t> other = ub[64].ReinterpretCast<int32_t>();
        GlobalTensor<int32_t> first;
        first.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(a->src), 8);
        GlobalTensor<int32_t> second;
        second.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(a->src + 32), 8);
        const int32_t want = static_cast<int32_t>(a->expected);
        const int64_t start = GetSystemCycle();
        int32_t x = 0;
        int32_t y = 0;
        while (!(x >= want && y >= want) && !Expired(start, a->deadline_cycles)) {
            DataCopy(cell, first, 8);
            SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
            x = cell.GetValue(0);
            DataCopy(other, second, 8);
            SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
            y = other.GetValue(0);
        }
        cell.SetValue(1, y);
        PutCell(a->dst + static_cast<uint64_t>(GetBlockIdx()) * 32, x, cell);
        break;
    }
    case AIV_TT_RELAY: {
        LocalTensor<int32_t> cell = ub.ReinterpretCast<int32_t>();
        const int32_t want = static_cast<int32_t>(a->expected);
        if (GetBlockIdx() == 0) {
            const int32_t seen = PollCell(a->src, want, a->deadline_cycles, cell);
            PutCell(a->dst + 4096, seen, cell);
            break;
        }
        const int32_t seen = PollCell(a->dst + 4096, want, a->deadline_cycles, cell);
        PutCell(a->dst + static_cast<uint64_t>(GetBlockIdx()) * 32, seen, cell);
        break;
    }
    case AIV_TT_POLL_SCALAR:
    case AIV_TT_POLL_DCCI: {
        GlobalTensor<int32_t> flag;
        flag.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(a->src), 8);
        const int64_t start = GetSystemCycle();
        int32_t seen = 0;
        while (true) {
            if (mode == AIV_TT_POLL_DCCI) {
                DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(flag);
            }
            seen = flag.GetValue(0);
            if (seen >= static_cast<int32_t>(a->expected) || Expired(start, a->deadline_cycles)) {
                break;
            }
        }
        LocalTensor<int32_t> cell = ub.ReinterpretCast<int32_t>();
        cell.SetValue(0, seen);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
        GlobalTensor<int32_t> out;
        out.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(a->dst), 8);
        DataCopy(out, cell, 8);
        break;
    }
    case AIV_TT_SPIN: {
        const int64_t start = GetSystemCycle();
        while (!Expired(start, a->deadline_cycles)) {
        }
        LocalTensor<int32_t> cell = ub.ReinterpretCast<int32_t>();
        PutCell(a->dst + static_cast<uint64_t>(GetBlockIdx()) * 32, 1, cell);
        break;
    }
    case AIV_TT_HAZ_RAW_DMA:
        DataCopy(ub, Gm(a->src, 64), 64);
        DataCopy(Gm(a->dst, 64), ub, 64); // missing SetFlag/WaitFlag<MTE2_MTE3>
        break;
    case AIV_TT_HAZ_RAW_SCALAR: {
        DataCopy(ub, Gm(a->src, 64), 64);
        GlobalTensor<uint8_t> out = Gm(a->dst, 64);
        out.SetValue(0, ub.GetValue(0)); // missing SetFlag/WaitFlag<MTE2_S>
        break;
    }
    case AIV_TT_HAZ_SCALAR_DMA:
        ub.SetValue(0, static_cast<uint8_t>(1));
        DataCopy(Gm(a->dst, 64), ub, 64); // missing SetFlag/WaitFlag<S_MTE3>
        break;
    case AIV_TT_HAZ_WAR:
        DataCopy(ub, Gm(a->src, 64), 64);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(Gm(a->dst, 64), ub, 64);
        DataCopy(ub, Gm(a->src + 64, 64), 64); // missing SetFlag/WaitFlag<MTE3_MTE2>
        break;
    case AIV_TT_STALE_READ:
        DataCopy(Gm(a->dst, 64), ub, 64); // UB holds whatever an earlier kernel left there
        break;
    case AIV_TT_STACK_OVERFLOW: {
        // One 64-byte cache line per block: the scalar write-backs do not share a line.
        GlobalTensor<uint8_t> out = Gm(a->dst + static_cast<uint64_t>(GetBlockIdx()) * 64, 32);
        out.SetValue(0, static_cast<uint8_t>(Recurse(0, a->len)));
        break;
    }
    case AIV_TT_BAD_ATOMIC:
        SetAtomicAdd<uint32_t>();
        SetAtomicNone();
        break;
    case AIV_TT_SNAP_PEER: {
        // UB: the data at 0 (len bytes), a flag cell after it.
        LocalTensor<int32_t> cell = ub[a->len].ReinterpretCast<int32_t>();
        const uint64_t loaded = a->dst + a->len;
        const uint64_t overwritten = a->dst + a->len + 32;
        if (GetBlockIdx() == 0) {
            DataCopy(ub, Gm(a->src, a->len), a->len);
            PipeBarrier<PIPE_ALL>(); // the load is complete before the flag says so
            PutCell(loaded, 1, cell);
            PipeBarrier<PIPE_ALL>(); // the cell's store has left UB before the poll reloads it
            PollCell(overwritten, 1, a->deadline_cycles, cell);
            PipeBarrier<PIPE_ALL>();
            DataCopy(Gm(a->dst, a->len), ub, a->len);
        } else {
            PollCell(loaded, 1, a->deadline_cycles, cell);
            PipeBarrier<PIPE_ALL>();
            DataCopy(ub, Gm(a->src + a->len, a->len), a->len);
            PipeBarrier<PIPE_ALL>();
            DataCopy(Gm(a->src, a->len), ub, a->len);
            PipeBarrier<PIPE_ALL>(); // the overwrite has landed before the flag says so
            PutCell(overwritten, 1, cell);
        }
        break;
    }
    case AIV_TT_SNAP_SELF: {
        LocalTensor<uint8_t> second = ub[a->len];
        DataCopy(ub, Gm(a->src, a->len), a->len);
        DataCopy(second, Gm(a->src + a->len, a->len), a->len);
        PipeBarrier<PIPE_ALL>();
        DataCopy(Gm(a->src, a->len), second, a->len);
        PipeBarrier<PIPE_ALL>();
        DataCopy(Gm(a->dst, a->len), ub, a->len);
        break;
    }
    case AIV_TT_SNAP_EDIT: {
        DataCopy(ub, Gm(a->src, a->len), a->len);
        PipeBarrier<PIPE_ALL>();
        ub.SetValue(a->len - 1, static_cast<uint8_t>(0xA1));
        ub.SetValue(0, static_cast<uint8_t>(0xA0));
        Duplicate(ub[a->len / 2].ReinterpretCast<uint16_t>(), static_cast<uint16_t>(0xA2A2), 16);
        PipeBarrier<PIPE_ALL>();
        DataCopy(Gm(a->dst, a->len), ub, a->len);
        PipeBarrier<PIPE_ALL>();
        DataCopy(ub, Gm(a->src + a->len, a->len), a->len);
        PipeBarrier<PIPE_ALL>();
        const uint8_t quarter = ub.GetValue(a->len / 4);
        LocalTensor<uint8_t> out = ub[a->len];
        Duplicate(out.ReinterpretCast<uint16_t>(), static_cast<uint16_t>(0), 16);
        PipeBarrier<PIPE_ALL>();
        out.SetValue(0, quarter);
        PipeBarrier<PIPE_ALL>();
        DataCopy(Gm(a->dst + a->len, 32), out, 32);
        break;
    }
    default:
        break;
    }
}
