/*
 * The C ABI between the twin's AscendC headers (kernel_operator.h) and the Rust runtime of the CPU
 * twin (ascendc-twin/src/abi.rs). Plain C so both sides read one definition. Every function that can
 * detect misuse returns ASC_TWIN_OK (0) on success and non-zero (AscTwinRc) when the runtime has
 * recorded an error for the running block; the C++ side then throws AscTwinAbort, which ends the
 * block (the launch reports the recorded error).
 *
 * abi.rs mirrors every struct, code and constant here with the same name and value. Both sides pin
 * the structs' layouts to the same numbers (static_asserts at the end of this file, const asserts
 * in abi.rs), and abi.rs's test `the_c_side_agrees_with_the_rust_mirror` compares every code and
 * layout number as the C++ compiler sees it (src/abi_probe.cpp) with the Rust side's.
 *
 * Only the twin uses this header; kernel sources never include it directly.
 */
#ifndef ASC_TWIN_ABI_H
#define ASC_TWIN_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the runtime's functions return (asc_twin_event: the event id, or ASC_TWIN_EVENT_FAILED). */
enum AscTwinRc {
    ASC_TWIN_OK = 0,       /* success */
    ASC_TWIN_FAULT = 1,    /* the runtime recorded a fault for the block (or its launch was aborted) */
    ASC_TWIN_NO_BLOCK = 3  /* called outside a kernel block: nothing was done */
};
/* asc_twin_event after recording a fault (never a valid event id). */
#define ASC_TWIN_EVENT_FAILED (-1)

/* What asc_twin_invoke returns: how one block's run of a kernel ended. */
enum AscTwinBlockRc {
    ASC_TWIN_BLOCK_OK = 0,                /* the kernel returned */
    ASC_TWIN_BLOCK_ABORTED = 1,           /* it threw AscTwinAbort: the runtime has recorded the fault */
    ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION = 2, /* it threw anything else */
    /* Not from asc_twin_invoke: the twin's stack guard (src/guard.rs) makes the block's coroutine
     * return this after a stack overflow; listed so no other code takes its value. */
    ASC_TWIN_BLOCK_STACK_OVERFLOW = 4
};

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
    uint64_t vms4_sr;   /* VMS4_SR: per-list counts the last MrgSort consumed, 16 bits each */
    uint32_t vms4_set;  /* 1: the last MrgSort ran with ifExhaustedSuspension (VMS4_SR defined) */
    uint32_t vms4_reserved;
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

/* Direction of a scalar GM access (asc_twin_gm_scalar, asc_twin_gm_bypass: `is_store`). */
enum AscTwinScalarDir {
    ASC_TWIN_LOAD = 0,
    ASC_TWIN_STORE = 1
};

/* Kinds of UB access (asc_twin_ub_access, AscTwinUbRange::kind). */
enum AscTwinUbKind {
    ASC_TWIN_UB_SCALAR_READ = 0,  /* LocalTensor::GetValue */
    ASC_TWIN_UB_SCALAR_WRITE = 1, /* LocalTensor::SetValue */
    ASC_TWIN_UB_VECTOR_WRITE = 2, /* a vector instruction's destination */
    ASC_TWIN_UB_VECTOR_READ = 3   /* a vector instruction's source */
};

/* Cross-core synchronisation (asc_twin_cross_core). */
enum AscTwinCrossCoreOp {
    ASC_TWIN_CROSS_SET_FLAG = 0,  /* CrossCoreSetFlag<mode>(flag) */
    ASC_TWIN_CROSS_WAIT_FLAG = 1, /* CrossCoreWaitFlag(flag) */
    ASC_TWIN_CROSS_SYNC_ALL = 2   /* hardware SyncAll(): a barrier on ASC_TWIN_SYNC_ALL_FLAG */
};
/* The cross-core flag the hardware SyncAll() uses. */
#define ASC_TWIN_SYNC_ALL_FLAG 14

/* Synchronisation APIs the headers build from DataCopy polls of flag words in a GM workspace
 * (asc_twin_sync_flags: their flags are synchronisation for the race checker; asc_twin_sync_wait:
 * what a block waits in, for the watchdog's report). */
enum AscTwinSyncApi {
    ASC_TWIN_SYNC_NONE = 0,              /* asc_twin_sync_wait: the block no longer waits */
    ASC_TWIN_SYNC_ALL_GM = 1,            /* SyncAll(gmWorkspace, ubWorkspace, usedCores) */
    ASC_TWIN_SYNC_IB_SET = 2,            /* IBSet */
    ASC_TWIN_SYNC_IB_WAIT = 3,           /* IBWait */
    ASC_TWIN_SYNC_DETERMINE_INIT = 4,    /* InitDetermineComputeWorkspace */
    ASC_TWIN_SYNC_WAIT_PRE_BLOCK = 5,    /* WaitPreBlock */
    ASC_TWIN_SYNC_NOTIFY_NEXT_BLOCK = 6, /* NotifyNextBlock */
    ASC_TWIN_SYNC_GROUP_ARRIVE = 7,      /* GroupBarrier::Arrive */
    ASC_TWIN_SYNC_GROUP_WAIT = 8         /* GroupBarrier::Wait */
};

/* The block's current TPipe (asc_twin_tpipe: `set`). Every op returns the current pipe after it. */
enum AscTwinTPipeOp {
    ASC_TWIN_TPIPE_GET = 0,  /* change nothing */
    ASC_TWIN_TPIPE_SET = 1,  /* make `pipe` current */
    ASC_TWIN_TPIPE_CLEAR = 2 /* clear it if `pipe` is current */
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
    ASC_TWIN_OP_DATA_COPY_PAD = 12,
    ASC_TWIN_OP_IB_SYNC = 13,      /* IBSet / IBWait */
    ASC_TWIN_OP_DETERMINE = 14,    /* InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock */
    ASC_TWIN_OP_GROUP_BARRIER = 15, /* GroupBarrier */
    ASC_TWIN_OP_DATA_COPY = 16,     /* a DataCopy form the headers check (SliceInfo) */
    ASC_TWIN_OP_LIST_TENSOR = 17,   /* ListTensorDesc / TensorDesc */
    ASC_TWIN_OP_INIT_OUTPUT = 18    /* InitOutput */
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
int32_t asc_twin_sync_flags(uint32_t api, uint8_t *gm, uint64_t len);
int32_t asc_twin_sync_wait(uint32_t api, uint8_t *gm, uint64_t len, int64_t arg0, int64_t arg1);
int64_t asc_twin_block_idx(void);
int64_t asc_twin_block_num(void);
int64_t asc_twin_system_cycle(void);
int32_t asc_twin_trap(void);

/* Defined in src/twin_entry.cpp, called by the runtime: runs one block of `kernel` inside a C++
 * try/catch; returns an AscTwinBlockRc. */
int32_t asc_twin_invoke(void (*kernel)(uint8_t *), uint8_t *args);
/* Whether the running kernel was built with the compiler's automatic synchronisation (1) or not
 * (0): the launch trampoline says so as each block starts. */
void asc_twin_auto_sync(uint32_t on);

#ifdef __cplusplus
}
#endif

/* Layout pins: the same numbers as the const asserts after each mirror in abi.rs (64-bit hosts,
 * the only ones the twin runs on). */
#ifdef __cplusplus
#include <cstddef>
#define ASC_TWIN_PIN_SIZE(type, bytes) \
    static_assert(sizeof(type) == (bytes), "sizeof(" #type ") is pinned: change its mirror in src/abi.rs too")
#define ASC_TWIN_PIN_OFFSET(type, field, bytes)                  \
    static_assert(offsetof(type, field) == (bytes), "offsetof(" #type ", " #field \
                                                    ") is pinned: change its mirror in src/abi.rs too")
ASC_TWIN_PIN_SIZE(AscTwinCopy, 88);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, api, 0);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, dir, 4);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, ub, 8);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, ub_cap, 16);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, gm, 24);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, elem_size, 32);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, block_count, 36);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, block_len, 40);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, src_stride, 48);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, dst_stride, 56);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, is_pad, 64);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, left_pad, 68);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, right_pad, 72);
ASC_TWIN_PIN_OFFSET(AscTwinCopy, pad_value, 80);
ASC_TWIN_PIN_SIZE(AscTwinUbRange, 24);
ASC_TWIN_PIN_OFFSET(AscTwinUbRange, kind, 0);
ASC_TWIN_PIN_OFFSET(AscTwinUbRange, reserved, 4);
ASC_TWIN_PIN_OFFSET(AscTwinUbRange, ub, 8);
ASC_TWIN_PIN_OFFSET(AscTwinUbRange, bytes, 16);
ASC_TWIN_PIN_SIZE(AscTwinVecRegs, 88);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, mask, 0);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, counter, 16);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, mask_undefined, 20);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, cmp, 24);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, deq, 40);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, deq_set, 44);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, acc, 48);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, pad_value, 56);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, pad_size, 64);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, pad_reserved, 68);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, vms4_sr, 72);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, vms4_set, 80);
ASC_TWIN_PIN_OFFSET(AscTwinVecRegs, vms4_reserved, 84);
#undef ASC_TWIN_PIN_SIZE
#undef ASC_TWIN_PIN_OFFSET
#endif

#endif /* ASC_TWIN_ABI_H */
