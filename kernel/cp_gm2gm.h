/*
 * CpGM2GM: copy any number of bytes from one GM address to another (local memory or a peer's
 * buffer) through the core's Unified Buffer, optionally reducing into the destination with the
 * store-side atomics (sum / max / min).
 *
 * The stage (STAGE_BYTES of UB) is split into two ping-pong halves of PIECE_BYTES (2 x 90 KB: the
 * 184 KB Atlas A2 leaves to kernels by default, minus the 2 KB SoftSync scratch of comm_kernel.h,
 * minus 2 KB headroom; HCCL stages 2 x 95 KB in kernels built without AscendC's reserved UB).
 * Piece i is loaded (MTE2) into half i % 2 and stored (MTE3) from it; the MTE2 -> MTE3 flag makes the store wait for its load, and the MTE3 -> MTE2 flag makes the load of
 * piece i + 2 wait until the store of piece i has read the half, so the load of the next piece
 * overlaps the store of the previous one. The 32-byte-aligned body of a piece moves with
 * DataCopy, a ragged tail (< 32 bytes) with DataCopyPad. The kernel must have a TPipe: the copy
 * takes its event ids from it, so it cannot collide with the kernel's own queues.
 */
#ifndef AIV_CP_GM2GM_H
#define AIV_CP_GM2GM_H

#include "kernel_operator.h"
#include "aiv_args.h"

namespace aiv {

constexpr uint32_t STAGE_BYTES = 180 * 1024;
/* UB below AscendC's own temporaries on Atlas A2 (TOTAL_VEC_LOCAL_SIZE: the top 8 KB of the 192 KB
 * belong to Select, AddDeqRelu and some advanced APIs unless --cce-disable-asc-reserved-ubuf): our
 * kernels stay below it, so that a fused kernel may call those APIs beside them. */
constexpr uint32_t KERNEL_UB_BYTES = 184 * 1024;
constexpr uint32_t PIECE_BYTES = STAGE_BYTES / 2;
static_assert(PIECE_BYTES % 32 == 0, "ping-pong halves are whole DMA blocks");

/* Sets the store-side atomic mode for T (AIV_OP_NONE: plain stores). */
template <typename T> __aicore__ inline void SetStoreOp(uint32_t op)
{
    if (op == AIV_OP_SUM) {
        AscendC::SetAtomicAdd<T>();
    } else if (op == AIV_OP_MAX) {
        AscendC::SetAtomicMax<T>();
    } else if (op == AIV_OP_MIN) {
        AscendC::SetAtomicMin<T>();
    }
}

template <typename T>
__aicore__ inline void LoadPiece(const AscendC::LocalTensor<T> &ub, __gm__ T *src, uint32_t len)
{
    const uint32_t body = len / 32 * 32;
    const uint32_t tail = len - body;
    AscendC::GlobalTensor<T> s;
    s.SetGlobalBuffer(src, len / sizeof(T));
    if (body > 0) {
        AscendC::DataCopy(ub, s, body / static_cast<uint32_t>(sizeof(T)));
    }
    if (tail > 0) {
        AscendC::DataCopyExtParams p(1, tail, 0, 0, 0);
        AscendC::DataCopyPadExtParams<T> pad(false, 0, 0, 0);
        AscendC::DataCopyPad(ub[body / sizeof(T)], s[body / sizeof(T)], p, pad);
    }
}

template <typename T>
__aicore__ inline void StorePiece(__gm__ T *dst, const AscendC::LocalTensor<T> &ub, uint32_t len)
{
    const uint32_t body = len / 32 * 32;
    const uint32_t tail = len - body;
    AscendC::GlobalTensor<T> d;
    d.SetGlobalBuffer(dst, len / sizeof(T));
    if (body > 0) {
        AscendC::DataCopy(d, ub, body / static_cast<uint32_t>(sizeof(T)));
    }
    if (tail > 0) {
        AscendC::DataCopyExtParams p(1, tail, 0, 0, 0);
        AscendC::DataCopyPad(d[body / sizeof(T)], ub[body / sizeof(T)], p);
    }
}

/*
 * A CpGM2GM stage: STAGE_BYTES of UB (32-byte aligned) and the event ids its copies use, two
 * each of MTE2_MTE3 and MTE3_MTE2, reserved from the block's TPipe (AllocEventID). A kernel that
 * makes many copies reserves them once (Init) and passes the stage to every copy; a copy given a
 * bare LocalTensor reserves its own ids and gives them back.
 */
struct CopyStage {
    AscendC::LocalTensor<uint8_t> ub;
    AscendC::TEventID loaded[2] = {AscendC::INVALID_TEVENTID, AscendC::INVALID_TEVENTID};
    AscendC::TEventID stored[2] = {AscendC::INVALID_TEVENTID, AscendC::INVALID_TEVENTID};

    __aicore__ inline void Init(const AscendC::LocalTensor<uint8_t> &stage)
    {
        ub = stage;
        AscendC::TPipe *pipe = GetTPipePtr();
        ascendc_assert(pipe != nullptr, "CpGM2GM needs the kernel's TPipe: it takes its event ids from it");
        for (int32_t b = 0; b < 2; b++) {
            loaded[b] = pipe->AllocEventID<AscendC::HardEvent::MTE2_MTE3>();
            stored[b] = pipe->AllocEventID<AscendC::HardEvent::MTE3_MTE2>();
        }
    }
    __aicore__ inline void Release() const
    {
        AscendC::TPipe *pipe = GetTPipePtr();
        for (int32_t b = 0; b < 2; b++) {
            pipe->ReleaseEventID<AscendC::HardEvent::MTE2_MTE3>(loaded[b]);
            pipe->ReleaseEventID<AscendC::HardEvent::MTE3_MTE2>(stored[b]);
        }
    }
};

/*
 * Copies `bytes` (a multiple of sizeof(T)) from src to dst0 and, if dst1 is not null, also to
 * dst1 (two MTE3 stores from the same UB half, one load), through the stage. With op !=
 * AIV_OP_NONE the stores reduce into the destinations as T (T must then be one of the A2 atomic
 * types). Leaves no flag pending.
 */
template <typename T>
__aicore__ inline void CpGM2GMTo(__gm__ T *dst0, __gm__ T *dst1, __gm__ T *src, uint64_t bytes,
                                 const CopyStage &stage, uint32_t op)
{
    if (bytes == 0) {
        return;
    }
    AscendC::LocalTensor<T> halves[2] = {stage.ub.ReinterpretCast<T>(), stage.ub[PIECE_BYTES].ReinterpretCast<T>()};
    bool pending[2] = {false, false};
    if (op != AIV_OP_NONE) {
        SetStoreOp<T>(op);
    }
    uint64_t off = 0;
    uint32_t i = 0;
    while (off < bytes) {
        const uint32_t len = static_cast<uint32_t>((bytes - off) < PIECE_BYTES ? (bytes - off) : PIECE_BYTES);
        const int32_t b = static_cast<int32_t>(i & 1u);
        if (pending[b]) {
            // The stores of the piece that used this half two steps ago must have read it.
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(stage.stored[b]);
        }
        LoadPiece(halves[b], src + off / sizeof(T), len);
        // The stores read what this load wrote.
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE3>(stage.loaded[b]);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE3>(stage.loaded[b]);
        StorePiece(dst0 + off / sizeof(T), halves[b], len);
        if (dst1 != nullptr) {
            StorePiece(dst1 + off / sizeof(T), halves[b], len);
        }
        AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(stage.stored[b]);
        pending[b] = true;
        off += len;
        i++;
    }
    for (int32_t b = 0; b < 2; b++) {
        if (pending[b]) {
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(stage.stored[b]);
        }
    }
    if (op != AIV_OP_NONE) {
        AscendC::SetAtomicNone();
    }
}

/* Copies `bytes` from src to dst through `stage`, optionally reducing with `op` (see CpGM2GMTo). */
template <typename T>
__aicore__ inline void CpGM2GM(__gm__ T *dst, __gm__ T *src, uint64_t bytes, const CopyStage &stage,
                               uint32_t op = AIV_OP_NONE)
{
    CpGM2GMTo<T>(dst, nullptr, src, bytes, stage, op);
}

/* The same through a bare stage (STAGE_BYTES of UB): reserves the copy's event ids for it. */
template <typename T>
__aicore__ inline void CpGM2GM(__gm__ T *dst, __gm__ T *src, uint64_t bytes, const AscendC::LocalTensor<uint8_t> &stage,
                               uint32_t op = AIV_OP_NONE)
{
    CopyStage s;
    s.Init(stage);
    CpGM2GMTo<T>(dst, nullptr, src, bytes, s, op);
    s.Release();
}

/* Copies `bytes` from src to both dst0 and dst1 with one load per piece (plain stores). */
__aicore__ inline void CpGM2GMDual(uint64_t dst0, uint64_t dst1, uint64_t src, uint64_t bytes, const CopyStage &stage)
{
    CpGM2GMTo<uint8_t>(reinterpret_cast<__gm__ uint8_t *>(dst0), reinterpret_cast<__gm__ uint8_t *>(dst1),
                       reinterpret_cast<__gm__ uint8_t *>(src), bytes, stage, AIV_OP_NONE);
}

/* CpGM2GM on raw GM byte addresses, with the element type chosen at run time (AivDtype);
 * `Stage` is a CopyStage or a bare LocalTensor<uint8_t> stage. */
template <class Stage>
__aicore__ inline void CpGM2GMTyped(uint64_t dst, uint64_t src, uint64_t bytes, const Stage &stage, uint32_t dtype,
                                    uint32_t op)
{
    if (op == AIV_OP_NONE) {
        CpGM2GM(reinterpret_cast<__gm__ uint8_t *>(dst), reinterpret_cast<__gm__ uint8_t *>(src), bytes, stage);
        return;
    }
    switch (dtype) {
    case AIV_DT_F32:
        CpGM2GM(reinterpret_cast<__gm__ float *>(dst), reinterpret_cast<__gm__ float *>(src), bytes, stage, op);
        break;
    case AIV_DT_F16:
        CpGM2GM(reinterpret_cast<__gm__ half *>(dst), reinterpret_cast<__gm__ half *>(src), bytes, stage, op);
        break;
    case AIV_DT_BF16:
        CpGM2GM(reinterpret_cast<__gm__ bfloat16_t *>(dst), reinterpret_cast<__gm__ bfloat16_t *>(src), bytes, stage,
                op);
        break;
    case AIV_DT_I32:
        CpGM2GM(reinterpret_cast<__gm__ int32_t *>(dst), reinterpret_cast<__gm__ int32_t *>(src), bytes, stage, op);
        break;
    case AIV_DT_I16:
        CpGM2GM(reinterpret_cast<__gm__ int16_t *>(dst), reinterpret_cast<__gm__ int16_t *>(src), bytes, stage, op);
        break;
    default:
        CpGM2GM(reinterpret_cast<__gm__ int8_t *>(dst), reinterpret_cast<__gm__ int8_t *>(src), bytes, stage, op);
        break;
    }
}

} // namespace aiv

#endif /* AIV_CP_GM2GM_H */
