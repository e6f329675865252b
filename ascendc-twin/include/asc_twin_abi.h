/*
 * The C ABI between the twin's AscendC headers (kernel_operator.h) and the Rust runtime of the CPU
 * twin (ascendc-twin/src/abi.rs). Plain C so both sides read one definition. Every function that can
 * detect misuse returns 0 on success and non-zero when the runtime has recorded an error for the
 * running block; the C++ side then throws AscTwinAbort, which ends the block (the launch reports the
 * recorded error).
 *
 * Only the twin uses this header; kernel sources never include it directly.
 */
#ifndef ASC_TWIN_ABI_H
#define ASC_TWIN_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which AscendC call a copy descriptor comes from: the runtime applies that call's rules. */
enum AscTwinCopyApi {
    ASC_TWIN_DATA_COPY = 0,         /* DataCopy(dst, src, count): contiguous, bytes % 32 == 0 */
    ASC_TWIN_DATA_COPY_STRIDED = 1, /* DataCopy(dst, src, DataCopyParams): lengths/gaps in 32 B blocks */
    ASC_TWIN_DATA_COPY_PAD = 2      /* DataCopyPad(..., DataCopyExtParams[, DataCopyPadExtParams]) */
};

/* Direction of a copy. */
enum AscTwinDir {
    ASC_TWIN_GM_TO_UB = 0,
    ASC_TWIN_UB_TO_GM = 1
};

/* One DMA request, as the AscendC call received it (units are the call's own units). */
struct AscTwinCopy {
    uint32_t api;         /* AscTwinCopyApi */
    uint32_t dir;         /* AscTwinDir */
    uint8_t *ub;          /* UB side: first byte the LocalTensor points at */
    uint64_t ub_cap;      /* bytes of the LocalTensor from ub on: GetSize(), not its 32-byte buffer */
    uint8_t *gm;          /* GM side */
    uint32_t elem_size;   /* sizeof(T) */
    uint32_t block_count; /* DATA_COPY: 1 */
    uint32_t block_len;   /* DATA_COPY: bytes; STRIDED: 32 B blocks; PAD: bytes */
    uint64_t src_stride;  /* STRIDED: 32 B blocks; PAD: bytes on GM, 32 B blocks on UB */
    uint64_t dst_stride;  /* likewise for the destination side */
    uint32_t is_pad;      /* PAD GM->UB: use pad_value */
    uint32_t left_pad;    /* PAD GM->UB: elements */
    uint32_t right_pad;   /* PAD GM->UB: elements */
    uint64_t pad_value;   /* PAD GM->UB: raw bits of the T value (low elem_size bytes) */
};

/* One UB byte range a vector instruction reads (kind 3) or writes (kind 2). */
struct AscTwinUbRange {
    uint32_t kind;
    uint32_t reserved;
    const uint8_t *ub;
    uint64_t bytes;
};

/* The vector unit's registers of the running core. */
struct AscTwinVecRegs {
    uint64_t mask[2];  /* [low, high]; counter mode: the element count in mask[0] */
    uint32_t counter;  /* 1: counter mode (SetMaskCount); 0: normal mode */
    uint32_t mask_undefined; /* 1: an API left the mask register in an undocumented state */
    uint64_t cmp[2];   /* the compare-mask register */
    float deq;         /* DEQSCALE (SetDeqScale(half)), as a float */
    uint32_t deq_set;  /* 1 once SetDeqScale has been called */
    uint64_t acc;      /* raw bits of the last count-form ReduceSum's result (GetAccVal) */
    uint64_t pad_value; /* the DataCopyPad pad-value register (SetPadValue): raw bits */
    uint32_t pad_size;  /* sizeof(T) of the value it was set with; 0: not set in this kernel */
    uint32_t pad_reserved;
};

/* Element types the atomic store units know. */
enum AscTwinDtype {
    ASC_TWIN_DT_UNSUPPORTED = 0,
    ASC_TWIN_DT_F32 = 1,
    ASC_TWIN_DT_F16 = 2,
    ASC_TWIN_DT_BF16 = 3,
    ASC_TWIN_DT_I32 = 4,
    ASC_TWIN_DT_I16 = 5,
    ASC_TWIN_DT_I8 = 6,
    ASC_TWIN_DT_OTHER_INT = 7 /* other integer types: valid data, but no atomic support */
};

/* Atomic store modes. */
enum AscTwinAtomicOp {
    ASC_TWIN_ATOMIC_NONE = 0,
    ASC_TWIN_ATOMIC_ADD = 1,
    ASC_TWIN_ATOMIC_MAX = 2,
    ASC_TWIN_ATOMIC_MIN = 3
};

/* Intra-core pipe synchronisation events (SetFlag/WaitFlag/PipeBarrier of the kernel; SetFlag/
 * WaitFlag of a TQue / TQueBind's own synchronisation). */
enum AscTwinPipeOp {
    ASC_TWIN_SET_FLAG = 0,
    ASC_TWIN_WAIT_FLAG = 1,
    ASC_TWIN_PIPE_BARRIER = 2,
    ASC_TWIN_QUEUE_SET_FLAG = 3,
    ASC_TWIN_QUEUE_WAIT_FLAG = 4
};

/* The TPipe event-id allocator (asc_twin_event). */
enum AscTwinEventOp {
    ASC_TWIN_ALLOC_EVENT = 0,
    ASC_TWIN_RELEASE_EVENT = 1,
    ASC_TWIN_FETCH_EVENT = 2,
    ASC_TWIN_QUEUE_ALLOC_EVENT = 3,
    ASC_TWIN_QUEUE_RELEASE_EVENT = 4
};

/* Ops named in errors raised by the C++ side through asc_twin_fail. */
enum AscTwinOp {
    ASC_TWIN_OP_INIT_BUFFER = 0,
    ASC_TWIN_OP_LOCAL_INDEX = 1,
    ASC_TWIN_OP_GLOBAL_INDEX = 2,
    ASC_TWIN_OP_QUEUE = 3,
    ASC_TWIN_OP_DUPLICATE = 4,
    ASC_TWIN_OP_FLAG = 5,
    ASC_TWIN_OP_SYNC_ALL = 6,
    ASC_TWIN_OP_ALLOCATOR = 7,
    ASC_TWIN_OP_BUF_POOL = 8,
    ASC_TWIN_OP_CROSS_CORE = 9,
    ASC_TWIN_OP_DEBUG = 10,
    ASC_TWIN_OP_VECTOR = 11,
    ASC_TWIN_OP_DATA_COPY_PAD = 12
};

int32_t asc_twin_copy(const struct AscTwinCopy *req);
int32_t asc_twin_gm_scalar(uint32_t is_store, uint8_t *gm, void *value, uint32_t size);
int32_t asc_twin_set_atomic(uint32_t op, uint32_t dtype);
int32_t asc_twin_pipe(uint32_t op, uint32_t event, int32_t id);
int32_t asc_twin_ub_arena(uint8_t **base, uint64_t *size);
int32_t asc_twin_fail(uint32_t op, const char *message, uint64_t addr, uint64_t len);
int32_t asc_twin_dcci(uint8_t *gm);
int32_t asc_twin_ub_access(uint32_t kind, const uint8_t *ub, uint64_t bytes);
int32_t asc_twin_ub_store(const uint8_t *ub, const void *value, uint64_t bytes);
int32_t asc_twin_ub_fill(const uint8_t *ub, const void *value, uint32_t elem, uint64_t count);
int32_t asc_twin_ub_accesses(const struct AscTwinUbRange *list, uint64_t n);
struct AscTwinVecRegs *asc_twin_vec_regs(void);
int32_t asc_twin_event(uint32_t op, uint32_t event, int32_t id);
void *asc_twin_tpipe(uint32_t set, void *pipe);
int32_t asc_twin_print(const uint8_t *text, uint64_t len);
int32_t asc_twin_assert_fail(const char *message);
int32_t asc_twin_gm_bypass(uint32_t is_store, uint8_t *gm, void *value, uint32_t size);
int32_t asc_twin_cross_core(uint32_t op, uint32_t mode, uint32_t flag);
int32_t asc_twin_mark_sync(uint8_t *gm, uint64_t len);
int64_t asc_twin_block_idx(void);
int64_t asc_twin_block_num(void);
int64_t asc_twin_system_cycle(void);
int32_t asc_twin_trap(void);

#ifdef __cplusplus
}
#endif

#endif /* ASC_TWIN_ABI_H */
