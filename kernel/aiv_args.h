/*
 * Argument structs of aiv-comm's kernels: plain C, shared by device code (read from GM by the
 * kernel) and the Rust host (bindings generated from kernel/launch.h, sizes pinned on both sides).
 * Every kernel takes one GM pointer to its struct: extern "C" __global__ __aicore__ void k(GM_ADDR args).
 * Fields are fixed-width and naturally aligned so the layout is the same for every compiler.
 */
#ifndef AIV_ARGS_H
#define AIV_ARGS_H

#include <stdint.h>

/* ---- twin self-test kernel (kernel/twin_selftest.cpp) ---- */

/* What aiv_twin_selftest does; each mode pins one rule of the twin. */
enum AivTwinTestMode {
    AIV_TT_COPY = 0,          /* DataCopy GM->UB(+ub_off)->GM, len bytes */
    AIV_TT_PAD_IN = 1,        /* DataCopyPad GM->UB with the params, then dump dump_len bytes of UB */
    AIV_TT_PAD_OUT = 2,       /* load dump_len bytes into UB, DataCopyPad UB->GM with the params */
    AIV_TT_STRIDED_IN = 3,    /* DataCopy(DataCopyParams) GM->UB, then dump dump_len bytes of UB */
    AIV_TT_STRIDED_OUT = 4,   /* load dump_len bytes into UB, DataCopy(DataCopyParams) UB->GM */
    AIV_TT_ATOMIC = 5,        /* every block: load len bytes, atomic op/dtype store into dst */
    AIV_TT_UB_OVERFLOW = 6,   /* InitBuffer of ub_bytes */
    AIV_TT_LOCAL_INDEX = 7,   /* LocalTensor::GetValue(len) on a 32-element buffer */
    AIV_TT_LONE_WAIT = 8,     /* WaitFlag with no SetFlag */
    AIV_TT_POLL = 9,          /* poll lane 0 of src by DataCopy until >= expected; write it to dst[block] */
    AIV_TT_POLL_SCALAR = 10,  /* poll src with GetValue, no cache invalidation, deadline_cycles */
    AIV_TT_POLL_DCCI = 11,    /* poll src with DataCacheCleanAndInvalid + GetValue, deadline_cycles */
    AIV_TT_BAD_ATOMIC = 12    /* SetAtomicAdd<uint32_t> */
};

/* Element types for AIV_TT_ATOMIC and the reduce paths (same codes as the host's DataType). */
enum AivDtype {
    AIV_DT_F32 = 0,
    AIV_DT_F16 = 1,
    AIV_DT_BF16 = 2,
    AIV_DT_I32 = 3,
    AIV_DT_I16 = 4,
    AIV_DT_I8 = 5
};

/* Reduce ops (store-side atomics). */
enum AivReduceOp {
    AIV_OP_NONE = 0,
    AIV_OP_SUM = 1,
    AIV_OP_MAX = 2,
    AIV_OP_MIN = 3
};

struct AivTwinTestArgs {
    uint64_t src;            /* GM address */
    uint64_t dst;            /* GM address */
    uint64_t deadline_cycles;
    uint32_t mode;           /* AivTwinTestMode */
    uint32_t dtype;          /* AivDtype */
    uint32_t op;             /* AivReduceOp */
    uint32_t len;            /* bytes */
    uint32_t ub_off;         /* bytes into the UB buffer */
    uint32_t dump_len;       /* bytes */
    uint32_t block_count;
    uint32_t block_len;
    uint32_t src_stride;
    uint32_t dst_stride;
    uint32_t is_pad;
    uint32_t left_pad;
    uint32_t right_pad;
    uint32_t pad_value;
    uint32_t expected;
    uint32_t ub_bytes;
};

#endif /* AIV_ARGS_H */
