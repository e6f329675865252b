/*
 * ReduceInOrder: out = src[0] op src[1] op ... op src[n-1], applied in exactly this order, over
 * `bytes` of GM, through a CpGM2GM stage. A kernel that gives every rank the same sources in
 * the same order gets the same bits on every rank (floating adds depend on their order).
 *
 * A sum of f32, f16, i32 or i16 adds in UB with the vector unit (Add, SumsInUb): every source
 * is loaded once and the result stored once, n reads and one write of GM per byte. Other types
 * and max / min use the store-side atomics (ReduceWithAtomics): a plain store of src[0], then
 * one atomic store of every other source into `out` (n reads, n writes), the same order. `out`
 * may be one of the sources on the UB path (every source's piece is loaded before the piece is
 * stored), never on the atomic path (it overwrites `out` with src[0] first). Nothing else may
 * write the sources meanwhile.
 */
#ifndef AIV_REDUCE_IN_ORDER_H
#define AIV_REDUCE_IN_ORDER_H

#include "kernel_operator.h"
#include "aiv_args.h"
#include "cp_gm2gm.h"

namespace aiv {

/* One pipe -> pipe dependency: the later pipe waits until the earlier one is done. */
template <AscendC::HardEvent e> __aicore__ inline void Order()
{
    const AscendC::TEventID id = GetTPipePtr()->FetchEventID(e);
    AscendC::SetFlag<e>(id);
    AscendC::WaitFlag<e>(id);
}

/* The UB path of ReduceInOrder for element type T: the stage's halves hold the accumulator and
 * the next source. */
template <typename T>
__aicore__ inline void ReduceAddInUb(uint64_t out, const uint64_t *src, int32_t n, uint64_t bytes,
                                     const CopyStage &stage)
{
    AscendC::LocalTensor<T> acc = stage.ub.ReinterpretCast<T>();
    AscendC::LocalTensor<T> tmp = stage.ub[PIECE_BYTES].ReinterpretCast<T>();
    for (uint64_t off = 0; off < bytes; off += PIECE_BYTES) {
        const uint32_t len = static_cast<uint32_t>((bytes - off) < PIECE_BYTES ? (bytes - off) : PIECE_BYTES);
        const int32_t count = static_cast<int32_t>(len / sizeof(T));
        LoadPiece(acc, reinterpret_cast<__gm__ T *>(src[0] + off), len);
        for (int32_t k = 1; k < n; k++) {
            LoadPiece(tmp, reinterpret_cast<__gm__ T *>(src[k] + off), len);
            Order<AscendC::HardEvent::MTE2_V>(); // Add reads what both loads wrote
            AscendC::Add(acc, acc, tmp, count);
            Order<AscendC::HardEvent::V_MTE2>(); // the next load into tmp waits until Add has read it
        }
        if (n == 1) {
            Order<AscendC::HardEvent::MTE2_MTE3>(); // no Add ran: the store reads what MTE2 loaded
        } else {
            Order<AscendC::HardEvent::V_MTE3>(); // the store reads what Add wrote
        }
        StorePiece(reinterpret_cast<__gm__ T *>(out + off), acc, len);
        Order<AscendC::HardEvent::MTE3_MTE2>(); // the next piece's load into acc waits for the store
    }
}

/* Whether ReduceInOrder sums in UB with vector Add (the cases of its switch). */
__aicore__ inline bool SumsInUb(uint32_t dtype, uint32_t op)
{
    return op == AIV_OP_SUM &&
           (dtype == AIV_DT_F32 || dtype == AIV_DT_F16 || dtype == AIV_DT_I32 || dtype == AIV_DT_I16);
}

/* out = out op src[0] op ... op src[n-1], in order, with one atomic store per source (any
 * AivDtype and op). Each copy is double-buffered (CpGM2GM), so its loads and stores overlap,
 * where the UB path waits for each Add. Each CpGM2GM returns only after its stores have
 * completed (it waits for their MTE3_MTE2 flags), so the stores of one source reach `out` after
 * those of the one before it. */
__aicore__ inline void AccumulateWithAtomics(uint64_t out, const uint64_t *src, int32_t n, uint64_t bytes,
                                             uint32_t dtype, uint32_t op, const CopyStage &stage)
{
    for (int32_t k = 0; k < n; k++) {
        CpGM2GMTyped(out, src[k], bytes, stage, dtype, op);
    }
}

/* The atomic path of ReduceInOrder: a plain copy of src[0] into `out`, then
 * AccumulateWithAtomics of the others. */
__aicore__ inline void ReduceWithAtomics(uint64_t out, const uint64_t *src, int32_t n, uint64_t bytes, uint32_t dtype,
                                         uint32_t op, const CopyStage &stage)
{
    CpGM2GMTyped(out, src[0], bytes, stage, dtype, AIV_OP_NONE);
    AccumulateWithAtomics(out, src + 1, n - 1, bytes, dtype, op, stage);
}

/* out = src[0] op ... op src[n-1] over `bytes` (a multiple of the element size), see above. */
__aicore__ inline void ReduceInOrder(uint64_t out, const uint64_t *src, int32_t n, uint64_t bytes, uint32_t dtype,
                                     uint32_t op, const CopyStage &stage)
{
    if (bytes == 0) {
        return;
    }
    if (SumsInUb(dtype, op)) {
        switch (dtype) {
        case AIV_DT_F32:
            ReduceAddInUb<float>(out, src, n, bytes, stage);
            return;
        case AIV_DT_F16:
            ReduceAddInUb<half>(out, src, n, bytes, stage);
            return;
        case AIV_DT_I32:
            ReduceAddInUb<int32_t>(out, src, n, bytes, stage);
            return;
        case AIV_DT_I16:
            ReduceAddInUb<int16_t>(out, src, n, bytes, stage);
            return;
        default:
            break;
        }
    }
    ReduceWithAtomics(out, src, n, bytes, dtype, op, stage);
}

} // namespace aiv

#endif
