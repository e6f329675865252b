/*
 * AscendC's public enums and constants that kernels name or switch on.
 */
#ifndef ASC_TWIN_ENUMS_H
#define ASC_TWIN_ENUMS_H

#include "types.h"

namespace AscendC {

constexpr uint32_t ONE_BLK_SIZE = 32;
/* Total Unified Buffer of one AIV core on Atlas A2 (192 KB). */
constexpr uint32_t TOTAL_UB_SIZE = 192 * 1024;
/* Event ids per HardEvent on Atlas A2. */
constexpr int32_t QUE_MAX_EVENT = 8;

enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};
/* SetFlag/WaitFlag pass a HardEvent to the runtime (asc_twin_pipe, asc_twin_event), which names
 * and checks it by value (EVENT_NAMES, HARD_EVENTS, EVENT_IDS in src/pipes.rs). */
static_assert(static_cast<int>(HardEvent::MAX) == 35, "HardEvent::MAX is pinned: change HARD_EVENTS in src/pipes.rs too");
static_assert(QUE_MAX_EVENT == 8, "QUE_MAX_EVENT is pinned: change EVENT_IDS in src/pipes.rs too");

using TEventID = int8_t;
constexpr TEventID INVALID_TEVENTID = -1;

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum class CacheMode { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
enum class CacheRwMode { READ = 1, WRITE = 2, RW = 3 };
enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

/* Vector compare modes (Compare, Compares). */
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
/* Select modes. */
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
/* Result layout of WholeReduceMax/Min (ReduceRepeat). */
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
/* Reduction kinds of ReduceRepeat / ReduceDataBlock. */
enum class ReduceType { NONE = -1, SUM = 0, MAX, MIN };
/* Cast rounding modes as on Atlas A2 (__NPU_ARCH__ 2201 has no HYBRID/EVEN/ZERO). */
enum class RoundMode : uint8_t {
    CAST_NONE = 0,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD,
    UNKNOWN = 0xFF,
};

/* Reduce ops and data types of the HCCL kernel API (AscendC's adv_api/hccl). */
enum HcclReduceOp {
    HCCL_REDUCE_SUM = 0,
    HCCL_REDUCE_PROD = 1,
    HCCL_REDUCE_MAX = 2,
    HCCL_REDUCE_MIN = 3,
    HCCL_REDUCE_RESERVED
};
enum HcclDataType {
    HCCL_DATA_TYPE_INT8 = 0,
    HCCL_DATA_TYPE_INT16 = 1,
    HCCL_DATA_TYPE_INT32 = 2,
    HCCL_DATA_TYPE_FP16 = 3,
    HCCL_DATA_TYPE_FP32 = 4,
    HCCL_DATA_TYPE_INT64 = 5,
    HCCL_DATA_TYPE_UINT64 = 6,
    HCCL_DATA_TYPE_UINT8 = 7,
    HCCL_DATA_TYPE_UINT16 = 8,
    HCCL_DATA_TYPE_UINT32 = 9,
    HCCL_DATA_TYPE_FP64 = 10,
    HCCL_DATA_TYPE_BFP16 = 11,
    HCCL_DATA_TYPE_INT128 = 12,
    HCCL_DATA_TYPE_HIF8 = 14,
    HCCL_DATA_TYPE_FP8E4M3 = 15,
    HCCL_DATA_TYPE_FP8E5M2 = 16,
    HCCL_DATA_TYPE_FP8E8M0 = 17,
    HCCL_DATA_TYPE_MXFP8 = 18,
    HCCL_DATA_TYPE_RESERVED = 255
};

/* ---- element type -> atomic dtype code of the twin's runtime ---- */
template <typename T> struct AscTwinDtypeOf {
    static constexpr uint32_t value = std::is_integral<T>::value ? ASC_TWIN_DT_OTHER_INT : ASC_TWIN_DT_UNSUPPORTED;
};
template <> struct AscTwinDtypeOf<float> { static constexpr uint32_t value = ASC_TWIN_DT_F32; };
template <> struct AscTwinDtypeOf<half> { static constexpr uint32_t value = ASC_TWIN_DT_F16; };
template <> struct AscTwinDtypeOf<bfloat16_t> { static constexpr uint32_t value = ASC_TWIN_DT_BF16; };
template <> struct AscTwinDtypeOf<int32_t> { static constexpr uint32_t value = ASC_TWIN_DT_I32; };
template <> struct AscTwinDtypeOf<int16_t> { static constexpr uint32_t value = ASC_TWIN_DT_I16; };
template <> struct AscTwinDtypeOf<int8_t> { static constexpr uint32_t value = ASC_TWIN_DT_I8; };

} // namespace AscendC

#endif
