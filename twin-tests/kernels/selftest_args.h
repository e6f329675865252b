/*
 * Argument structs of the self-test kernels (the kernels/ sources named *_selftest.cpp, and args_probe.cpp):
 * plain C, shared by the kernels and the tests (the Rust mirrors are in src/args.rs). Nothing
 * here is aiv-comm's ABI: these structs exist for the tests only. Fields are fixed-width and
 * naturally aligned, so the layout is the same for every compiler. The numbers the tests rely on
 * are pinned at the end of this file (SELFTEST_PIN_*) and in src/args.rs, and the unit tests of
 * src/args.rs hold the two lists equal and every constant of this file equal to its mirror.
 */
#ifndef AIV_SELFTEST_ARGS_H
#define AIV_SELFTEST_ARGS_H

#include <stdint.h>
/* aiv-comm's argument structs and enums (AivCommArgs, AivDtype, AivReduceOp), and AIV_STATIC_ASSERT. */
#include "aiv_args.h"

/* ---- twin self-test kernel (twin_selftest.cpp) ---- */

/* What aiv_twin_selftest does; each mode pins one rule of the twin. */
enum AivTwinTestMode {
    AIV_TT_COPY = 0,          /* DataCopy GM->UB(+ub_off)->GM, len bytes, as uint8_t / uint16_t /
                                 uint32_t elements for dtype 0 / 1 / 2 */
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
    AIV_TT_BAD_ATOMIC = 12,   /* SetAtomicAdd<uint32_t> */
    /* Pipe hazards (wrong on the NPU, right on a sequential simulator): */
    AIV_TT_HAZ_RAW_DMA = 13,     /* DataCopy GM->UB then UB->GM with no MTE2_MTE3 flag */
    AIV_TT_HAZ_RAW_SCALAR = 14,  /* DataCopy GM->UB then GetValue with no MTE2_S flag */
    AIV_TT_HAZ_SCALAR_DMA = 15,  /* SetValue then DataCopy UB->GM with no S_MTE3 flag */
    AIV_TT_HAZ_WAR = 16,         /* UB->GM then GM->UB into the same UB with no MTE3_MTE2 flag */
    AIV_TT_RELAY = 17,           /* block 0 waits for src >= expected, then sets the flag at dst + 4096;
                                    the other blocks wait for that flag and report what they saw */
    AIV_TT_STALE_READ = 18,      /* DataCopy UB->GM of UB this kernel never wrote */
    /* DMA snapshots: what a DataCopy GM->UB read stays in UB whatever happens to GM later. */
    AIV_TT_SNAP_PEER = 19,       /* 2 blocks: block 0 loads src[0, len), lets block 1 overwrite it
                                    with src[len, 2 len) (flags at dst + len), then stores its UB to
                                    dst[0, len) */
    AIV_TT_SNAP_SELF = 20,       /* loads src[0, len) to UB a, src[len, 2 len) to UB b, stores b over
                                    src[0, len), then a to dst[0, len) */
    AIV_TT_SNAP_EDIT = 21,       /* loads src[0, len) to UB, edits it (SetValue at both ends,
                                    Duplicate of 32 bytes at len / 2), stores it to dst[0, len);
                                    loads src[len, 2 len) and stores UB[len / 4] to dst[len] */
    AIV_TT_STACK_OVERFLOW = 22,  /* recurses with 4 KB frames `len` levels deep; block b writes a
                                    byte of the result to dst[64 b] */
    /* Event-flag rules (the NPU hangs or misbehaves): */
    AIV_TT_DOUBLE_SET = 23,      /* SetFlag<MTE2_MTE3>(1) twice, then one WaitFlag */
    AIV_TT_SET_NO_WAIT = 24,     /* SetFlag<MTE3_MTE2>(2) never waited for */
    AIV_TT_EVENT_ID_8 = 25,      /* SetFlag/WaitFlag with event id 8 (A2 has EVENT_ID0..7) */
    AIV_TT_POLL_PAIR = 26,       /* poll lane 0 of the cells src and src + 32 in turn, by DataCopy,
                                    until both reach `expected` or the deadline; write what each
                                    showed to dst[block] lanes 0 and 1 */
    AIV_TT_SPIN = 27,            /* read GetSystemCycle until deadline_cycles have passed (a block
                                    that runs without polling GM), then write 1 to dst[block] */
    AIV_TT_PAD_EXACT = 28,       /* a TBuf of exactly len bytes (InitBuffer rounds it up to 32):
                                    DataCopyPad len bytes (block_len if not 0) of float
                                    GM src -> UB -> GM dst */
    AIV_TT_PAD_IN_PARAMS = 29,   /* AIV_TT_PAD_IN with DataCopyParams and DataCopyPadParams */
    AIV_TT_PAD_OUT_PARAMS = 30,  /* AIV_TT_PAD_OUT with DataCopyParams */
    AIV_TT_PAD_IN_SET = 31       /* SetPadValue(pad_value), as T (op 0) or as a type of another
                                    size (op 1), then AIV_TT_PAD_IN */
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

/* ---- aiv_sync_selftest (sync_selftest.cpp) ---- */

enum AivSyncTestMode {
    AIV_ST_PINGPONG = 0, /* ranks 0 and 1, every block its own channel, `rounds` round trips */
    AIV_ST_ONE2N = 1,    /* rank 0 block 0 broadcasts `rounds` times; every block of the others checks */
    AIV_ST_COUNT = 2,    /* every block of ranks 1.. writes into rank 0, RecordNv1; rank 0 Wait1vN */
    AIV_ST_TIMEOUT = 3,  /* rank 0 waits for rank 1; rank 1 records nothing, or tag - 1 if wrong_tag */
    AIV_ST_BARRIER = 4,  /* every block: BarrierAll `rounds` times, checking the others arrived */
    AIV_ST_PUBLISH = 5,  /* rank 1 Records "running"; rank 0 waits for it, writes `bytes` into its
                            HCCL buffer and Record1vN; rank 1 reads it after WaitNv1, or without
                            waiting if wrong_tag != 0 (a GM race) */
    AIV_ST_ONE_WAITS = 6 /* block `wrong_tag` of rank 0 waits for a Record from rank 1 that never
                            comes; every other block returns at once */
};

struct AivSyncTestArgs {
    struct AivCommArgs comm;
    uint64_t result;   /* GM: one 32-byte cell per block; lane 0 = mismatches seen */
    int64_t tag_base;  /* added to comm.tag: tests run tags across the signed 64-bit boundary */
    uint32_t mode;     /* AivSyncTestMode */
    uint32_t rounds;   /* tags tag_base + comm.tag .. + rounds - 1 are this launch's */
    uint32_t wrong_tag;
    uint32_t bytes;    /* AIV_ST_PUBLISH: bytes published (a multiple of 32, at most 4096) */
};

/* ---- aiv_args_probe (args_probe.cpp): a kernel with an ordinary signature ---- */

/* 64-bit words of AivProbeTiling: the struct is passed by value and is larger than 8 KB. */
#define AIV_PROBE_WORDS 1100
/* int64 slots each block writes (128 bytes, two data-cache lines of its own). */
#define AIV_PROBE_SLOTS 16

struct AivProbeTiling {
    uint64_t words[AIV_PROBE_WORDS];
    uint32_t rows;
    uint32_t cols;
};

/* ---- aiv_api_selftest (api_selftest.cpp): the AscendC API surface of the twin ---- */

/* What aiv_api_selftest does; each mode pins documented semantics of some AscendC API. Blocks
 * write results at out + block * AIV_API_BLOCK_BYTES (int64 slots) unless the mode says. */
enum AivApiTestMode {
    AIV_API_QUEUE_VECOUT = 0,     /* TQue<VECOUT>, `bufs` buffers, `rounds` x: AllocTensor, Duplicate(round + 1),
                                     EnQue, DeQue, DataCopy to out piece (block * rounds + round), FreeTensor */
    AIV_API_TBUF_NO_SYNC = 1,     /* the same on a TBuf, no flags: V writes, MTE3 reads, unordered */
    AIV_API_NO_FREE_SYNC = 2,     /* TBuf with V_MTE3 flags but nothing before the next Duplicate (WAR) */
    AIV_API_VECIN_TO_MTE3 = 3,    /* TQue<VECIN>: DataCopy in, EnQue, DeQue, DataCopy out (MTE3 reads) */
    AIV_API_BIND_COPY = 4,        /* TQueBind<VECIN, VECOUT>, `bufs` buffers: in piece -> out piece, `rounds` x */
    AIV_API_EVENT_IDS = 5,        /* AllocEventID x3, Release the 2nd, Fetch, Alloc: ids to slots 0..4 */
    AIV_API_EVENT_COLLISION = 6,  /* a VECIN queue holds an MTE2_V id; the kernel SetFlag<MTE2_V>(param) */
    AIV_API_EVENT_EXHAUST = 7,    /* 9 x AllocEventID<MTE2_V> */
    AIV_API_TENSOR_HELPERS = 8,   /* TBuf::GetWithOffset, LocalTensor helpers, user tags, GetTPipePtr,
                                     LocalMemAllocator, TBufPool: values to slots 0..11 */
    AIV_API_SYS_VARS = 9,         /* block_idx, block_num, GetSubBlockIdx, GetSubBlockNum, GetTaskRation */
    AIV_API_SYNC_ALL_GM = 10,     /* `rounds` x: write (round+1)*(block+1) to in[block], SyncAll(work, ub),
                                     sum every block's value, SyncAll (skipped if param != 0); sum to slot 0 */
    AIV_API_SYNC_ALL_HW = 11,     /* the same with the hardware SyncAll() */
    AIV_API_SYNC_ALL_SKIP = 12,   /* block `param` returns at once; the others call SyncAll() */
    AIV_API_CROSS_CORE = 13,      /* AIV_API_SYNC_ALL_HW with CrossCoreSetFlag<0, PIPE_MTE3>(3) / WaitFlag(3) */
    AIV_API_CROSS_MODE1 = 14,     /* CrossCoreSetFlag<1, PIPE_MTE3>(0) */
    AIV_API_BYPASS = 15,          /* GetValue(in[0]) (cached), WriteGmByPassDCache(in[0], 9),
                                     ReadGmByPassDCache, GetValue again: slots 0..2 */
    AIV_API_PRINTF = 16,          /* printf of every conversion, DumpTensor of 4 int32 */
    AIV_API_PRINTF_BAD = 17,      /* printf with a %c conversion */
    AIV_API_ASSERT = 18,          /* assert(param == 0, "param=%d", param) */
    AIV_API_TRAP = 19,            /* trap() */
    AIV_API_BUILTIN_FLAGS = 20,   /* in -> UB -> out with set_flag/wait_flag(MTE2, MTE3); param != 0: no set_flag */
    AIV_API_BUFPOOL_OVERFLOW = 21,/* TBufPool<VECCALC, 2> given three buffers */
    AIV_API_ENQUE_FULL = 22,      /* TQue<VECOUT, 1> with 2 buffers: EnQue twice */
    AIV_API_DEQUE_NEVER = 23,     /* EnQue, never DeQue */
    AIV_API_FUSED_COPY = 24,      /* a fused kernel: a TQueBind<VECIN, VECOUT> holds an MTE2_MTE3 id while
                                     CpGM2GM copies `param` bytes in + 256 -> out + 256; then the queue's
                                     piece in -> out */
    AIV_API_RESTORE = 26,         /* SetValue(5), store it, and (no flag between) SetValue(param ? 6 : 5) into
                                     the same UB bytes; store again (HCCL's back-to-back flag stores) */
    AIV_API_RELOAD_TWICE = 27,    /* AIV_API_RELOAD with piece 0 (identical), then piece 1 (different), both
                                     unordered with the store */
    AIV_API_LAZY_FILL = 28,       /* Duplicate(0) over 32 KiB, V_MTE2, DataCopy 32 KiB of in (a deferred
                                     load), Duplicate(0) again with no MTE2_V flag */
    AIV_API_EVENT_FETCH = 29,     /* a VECIN queue holds an MTE2_V id: FetchEventID<MTE2_V> to slot 0; then
                                     param 1: ReleaseEventID of the queue's id, 2: WaitFlag on it */
    AIV_API_CROSS_WAIT_MODE1 = 30,/* CrossCoreWaitFlag<1>(0) */
    AIV_API_SET_TAIL = 31,        /* GlobalTensor<int32_t>(in).SetValue(24, param): the last 4 bytes of a
                                     100-byte input, whose cache line runs past its end; then
                                     GetValue(16), the line's first int32, to slot 0; rounds != 0:
                                     DataCacheCleanAndInvalid of that line, else the kernel's end */
    AIV_API_RELOAD = 25           /* load in piece 0 into a TBuf, store it to out piece 0, and (no flag
                                     between) load in piece `param` into the same bytes; store to piece 1 */
};

/* Bytes of each block's result slots. */
#define AIV_API_BLOCK_BYTES 256
/* int32 elements of one pipeline piece (256 bytes). */
#define AIV_API_PIECE 64

struct AivApiTestArgs {
    uint64_t out;   /* GM */
    uint64_t in;    /* GM */
    uint64_t work;  /* GM workspace (SyncAll), zeroed */
    uint32_t mode;  /* AivApiTestMode */
    uint32_t rounds;
    uint32_t bufs;
    int32_t param;
};

/* ---- aiv_vec_selftest (vec_selftest.cpp): one vector instruction, pinned by
 * tests/twin/vector.rs against a host reference ---- */

/* UB regions of the self-test: inputs 0, 1, 2, the destination, the work buffer. */
#define AIV_VEC_REGION_BYTES 32768u

enum AivVecOp {
    AIV_VEC_ADD = 0, AIV_VEC_SUB, AIV_VEC_MUL, AIV_VEC_DIV, AIV_VEC_MAX, AIV_VEC_MIN, AIV_VEC_AND, AIV_VEC_OR,
    AIV_VEC_ADD_RELU, AIV_VEC_SUB_RELU,
    AIV_VEC_ADDS = 16, AIV_VEC_MULS, AIV_VEC_MAXS, AIV_VEC_MINS, AIV_VEC_LEAKY_RELU,
    AIV_VEC_SHIFT_LEFT, AIV_VEC_SHIFT_RIGHT, /* ShiftRight: mode 1 sets roundEn (level-0 forms) */
    AIV_VEC_AXPY, /* dst (dtype2) += scalar * src0 (dtype); mode 1: src0 is the destination region
                     itself (an overlap) */
    AIV_VEC_ABS = 32, AIV_VEC_EXP, AIV_VEC_LN, AIV_VEC_SQRT, AIV_VEC_RSQRT, AIV_VEC_RECIPROCAL, AIV_VEC_RELU,
    AIV_VEC_NOT,
    AIV_VEC_DUPLICATE = 48, AIV_VEC_COPY,
    AIV_VEC_BRCB,              /* dst <- Brcb(src0), repeat, BrcbRepeatParams(blk[0], rep[0]); count > 0:
                                  src0 has only `count` elements */
    AIV_VEC_CREATE_VEC_INDEX,  /* dst <- CreateVecIndex(scalar, ...); mode 1: dst starts one element in */
    AIV_VEC_CAST = 64,
    AIV_VEC_COMPARE = 80, AIV_VEC_COMPARES, AIV_VEC_SELECT, AIV_VEC_SELECT_SCALAR, AIV_VEC_COMPARE_REG,
    AIV_VEC_REDUCE_SUM = 96, /* mode 1 (count form): also GetReduceRepeatSumSpr into dst[1] */
    AIV_VEC_REDUCE_MAX, AIV_VEC_REDUCE_MIN,
    AIV_VEC_WHOLE_SUM, AIV_VEC_WHOLE_MAX, AIV_VEC_WHOLE_MIN,
    AIV_VEC_BLOCK_SUM, AIV_VEC_BLOCK_MAX, AIV_VEC_BLOCK_MIN,
    /* A pipeline GM -> UB -> Adds -> GM; `sync` bit 0: omit SetFlag/WaitFlag<MTE2_V>, bit 1: omit
     * <V_MTE3>; bit 3: the scalar unit reads dst[0] back (GetValue) after V_S and stores 10x it in
     * dst[1]; bit 2: the same without the V_S flag. */
    AIV_VEC_PIPELINE = 128,
    /* A fixed sequence on float regions, chosen by `mode` (tests/twin/vector.rs, scenarios):
     * 0 SetVectorMask(0, 0xF); Compare (count 64); Adds<false> (the mask survives Compare);
     * 1 ReduceMax (count 64); Adds<false> (the mask is undefined: an error);
     * 2 ReduceSum (count 100); GetValue(0) with no V_S flag (the implementation syncs); dst[1] = it;
     * 3 Adds on region 4 with its size set past the Unified Buffer (an error);
     * 4 Adds with dst 8 floats into its source (partial overlap: an error);
     * 5 SetMaskCount; SetVectorMask<float>(130) (a lane pattern, not a count: an error);
     * 6 SetVectorMask<float>(200) (one full repeat); Adds<false>;
     * 7 SetMaskCount; Copy with mask {144, 0}, 2 repeats, {1, 2, 18, 40} (144 elements per repeat);
     * 8 Add(x, x, x[64]) over 4 rows of 128 floats (interleaved, not overlapping), x to dst;
     * 9 Adds(x, x[8]) with block stride 2 (even blocks from odd ones), x to dst;
     * 10 level-0 Select in mode 2 under counter mode (an error) */
    AIV_VEC_SCENARIO = 129
};

/* How the instruction is issued. */
enum AivVecForm {
    AIV_VEC_LEVEL2 = 0,      /* count form */
    AIV_VEC_BITS = 1,        /* level 0, uint64_t mask[2] */
    AIV_VEC_CONT = 2,        /* level 0, continuous mask */
    AIV_VEC_OPERATOR = 3,    /* dst = a op b (count: dst's size, set to `count` elements) */
    AIV_VEC_COUNTER = 4,     /* SetMaskCount + SetVectorMask<T, COUNTER>(count) + level 0 with isSetMask = false */
    AIV_VEC_NORM_REG = 5,    /* SetVectorMask(mask[1], mask[0]) + level 0 with isSetMask = false */
    AIV_VEC_COUNTER_BITS = 6, /* SetMaskCount + level 0 with mask[2] = {count, 0} (the docs' in-call form) */
    AIV_VEC_COUNTER_CONT = 7  /* SetMaskCount + level 0 with a continuous mask: a misuse the twin names */
};

/* Element types (src: dtype, dst: dtype2 for Cast / Compare). */
enum AivVecType {
    AIV_VEC_F32 = 0, AIV_VEC_F16, AIV_VEC_I16, AIV_VEC_I32, AIV_VEC_U16, AIV_VEC_BF16, AIV_VEC_U8, AIV_VEC_I8,
    AIV_VEC_I64, AIV_VEC_U32
};

struct AivVecTestArgs {
    uint64_t in0;      /* GM: input bytes for UB region 0, 1, 2 (AIV_VEC_REGION_BYTES each) */
    uint64_t in1;
    uint64_t in2;
    uint64_t out;      /* GM: initial destination bytes in, result bytes out (region 3) */
    uint64_t work;     /* GM: initial work-region bytes in, out (region 4) */
    uint64_t mask[2];  /* mask[0] lanes 0..63, mask[1] lanes 64..127; continuous: mask[0] */
    uint64_t scalar;   /* raw bits of the scalar (T-sized) */
    uint32_t op;       /* AivVecOp */
    uint32_t form;     /* AivVecForm */
    uint32_t dtype;    /* AivVecType of the sources */
    uint32_t dtype2;   /* AivVecType of the destination (Cast, Compare) */
    int32_t count;     /* level-2 count / counter-mode count */
    uint32_t repeat;
    uint32_t blk[3];   /* dst, src0, src1 block strides */
    uint32_t rep[3];   /* dst, src0, src1 repeat strides */
    uint32_t mode;     /* RoundMode, CMPMODE, SELMODE, ReduceOrder, or calIndex */
    uint32_t sync;     /* AIV_VEC_PIPELINE only */
    uint32_t deq;      /* raw bits of the half DEQSCALE (Cast int32 -> half) */
    uint32_t reserved;
};

/* ---- ABI pins: the same numbers as src/args.rs (`pin_size!`, `pin_offset!`, `pin_value!`) ---- */

#define SELFTEST_PIN_SIZE(type, bytes)                                                                               \
    AIV_STATIC_ASSERT(sizeof(type) == (bytes), "sizeof(" #type ") is pinned: change it in src/args.rs too")
#define SELFTEST_PIN_OFFSET(type, field, bytes)                                                                      \
    AIV_STATIC_ASSERT(offsetof(type, field) == (bytes),                                                            \
                      "offsetof(" #type ", " #field ") is pinned: change it in src/args.rs too")
#define SELFTEST_PIN_VALUE(name, value)                                                                              \
    AIV_STATIC_ASSERT((name) == (value), #name " is pinned: change it in src/args.rs too")

SELFTEST_PIN_VALUE(AIV_PROBE_WORDS, 1100);
SELFTEST_PIN_VALUE(AIV_PROBE_SLOTS, 16);
SELFTEST_PIN_VALUE(AIV_API_BLOCK_BYTES, 256);
SELFTEST_PIN_VALUE(AIV_API_PIECE, 64);
SELFTEST_PIN_VALUE(AIV_VEC_REGION_BYTES, 32768);
SELFTEST_PIN_SIZE(struct AivTwinTestArgs, 88);
SELFTEST_PIN_OFFSET(struct AivTwinTestArgs, deadline_cycles, 16);
SELFTEST_PIN_OFFSET(struct AivTwinTestArgs, mode, 24);
SELFTEST_PIN_OFFSET(struct AivTwinTestArgs, ub_bytes, 84);
SELFTEST_PIN_SIZE(struct AivSyncTestArgs, 584);
SELFTEST_PIN_OFFSET(struct AivSyncTestArgs, result, 552);
SELFTEST_PIN_OFFSET(struct AivSyncTestArgs, bytes, 580);
SELFTEST_PIN_SIZE(struct AivProbeTiling, 8808);
SELFTEST_PIN_OFFSET(struct AivProbeTiling, cols, 8804);
SELFTEST_PIN_SIZE(struct AivApiTestArgs, 40);
SELFTEST_PIN_OFFSET(struct AivApiTestArgs, param, 36);
SELFTEST_PIN_SIZE(struct AivVecTestArgs, 128);
SELFTEST_PIN_OFFSET(struct AivVecTestArgs, op, 64);
SELFTEST_PIN_OFFSET(struct AivVecTestArgs, deq, 120);

#endif /* AIV_SELFTEST_ARGS_H */
