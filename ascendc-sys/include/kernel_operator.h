/*
 * kernel_operator.h for the aiv-comm CPU twin.
 *
 * The subset of the AscendC API that aiv-comm's device code uses, with AscendC's names, namespaces
 * and signatures, for a host C++ compiler. Each call forwards to the twin's Rust runtime
 * (ascendc-sys) through the C ABI in asc_twin_abi.h; the runtime applies the documented hardware
 * rules (alignment, lengths, bounds, atomic types) and turns misuse into an error naming kernel,
 * rank, block and operation. On misuse this header throws AscTwinAbort, which ends the block.
 *
 * Rules of this file:
 *  - Anything a kernel can write here must also compile against the real AscendC headers
 *    (../shared/tools/ascendc-check proves it for our sources). Where the two differ, the real one
 *    wins and this file is fixed.
 *  - The twin runs the pipes of a core in program order on one host thread. SetFlag/WaitFlag and
 *    PipeBarrier are still reported to the runtime, which checks they pair up (a WaitFlag with no
 *    SetFlag before it would hang the NPU).
 */
#ifndef ASC_TWIN_KERNEL_OPERATOR_H
#define ASC_TWIN_KERNEL_OPERATOR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "asc_twin_abi.h"

#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t *
#endif

/* Thrown by the twin when the runtime has recorded an error for this block; caught by the twin's
 * launch trampoline. Kernel code never sees it. */
struct AscTwinAbort {};

inline void asc_twin_check(int32_t rc)
{
    if (rc != 0) {
        throw AscTwinAbort{};
    }
}

/* ---- 16-bit float storage types (data movement and atomics only; no arithmetic needed) ---- */

inline uint16_t asc_twin_f32_to_f16_bits(float value)
{
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu) {
        return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    }
    const int32_t e = static_cast<int32_t>(exp) - 127 + 15;
    if (e >= 31) {
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (e <= 0) {
        if (e < -10) {
            return static_cast<uint16_t>(sign);
        }
        mant |= 0x800000u;
        const uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t half_mant = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) {
            half_mant++;
        }
        return static_cast<uint16_t>(sign | half_mant);
    }
    uint32_t out = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (out & 1u))) {
        out++;
    }
    return static_cast<uint16_t>(out);
}

inline float asc_twin_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                exp--;
            }
            x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/* IEEE binary16, as AscendC's `half`. */
struct half {
    uint16_t bits;
    half() = default;
    half(float v) : bits(asc_twin_f32_to_f16_bits(v)) {}
    half(double v) : bits(asc_twin_f32_to_f16_bits(static_cast<float>(v))) {}
    half(int v) : bits(asc_twin_f32_to_f16_bits(static_cast<float>(v))) {}
    operator float() const { return asc_twin_f16_bits_to_f32(bits); }
};

/* bfloat16, as AscendC's `bfloat16_t`. */
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    bfloat16_t(float v)
    {
        uint32_t x;
        std::memcpy(&x, &v, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) {
            bits = static_cast<uint16_t>((x >> 16) | 0x40u);
        } else {
            x += 0x7fffu + ((x >> 16) & 1u);
            bits = static_cast<uint16_t>(x >> 16);
        }
    }
    bfloat16_t(double v) : bfloat16_t(static_cast<float>(v)) {}
    bfloat16_t(int v) : bfloat16_t(static_cast<float>(v)) {}
    operator float() const
    {
        const uint32_t x = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
};

/* Hardware pipes and event ids, global as in the CCE toolchain. */
enum pipe_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX };
enum event_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace AscendC {

constexpr uint32_t ONE_BLK_SIZE = 32;
/* Total Unified Buffer of one AIV core on Atlas A2 (192 KB). */
constexpr uint32_t TOTAL_UB_SIZE = 192 * 1024;

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

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

/* ---- element type -> atomic dtype code ---- */
template <typename T> struct AscTwinDtypeOf {
    static constexpr uint32_t value = std::is_integral<T>::value ? ASC_TWIN_DT_OTHER_INT : ASC_TWIN_DT_UNSUPPORTED;
};
template <> struct AscTwinDtypeOf<float> { static constexpr uint32_t value = ASC_TWIN_DT_F32; };
template <> struct AscTwinDtypeOf<half> { static constexpr uint32_t value = ASC_TWIN_DT_F16; };
template <> struct AscTwinDtypeOf<bfloat16_t> { static constexpr uint32_t value = ASC_TWIN_DT_BF16; };
template <> struct AscTwinDtypeOf<int32_t> { static constexpr uint32_t value = ASC_TWIN_DT_I32; };
template <> struct AscTwinDtypeOf<int16_t> { static constexpr uint32_t value = ASC_TWIN_DT_I16; };
template <> struct AscTwinDtypeOf<int8_t> { static constexpr uint32_t value = ASC_TWIN_DT_I8; };

/* ---- tensors ---- */

template <typename T> class LocalTensor {
public:
    using PrimType = T;
    __aicore__ inline LocalTensor() : addr_(nullptr), size_(0) {}
    __aicore__ inline LocalTensor(T *addr, uint32_t size) : addr_(addr), size_(size) {}

    __aicore__ inline PrimType GetValue(const uint32_t index) const
    {
        CheckIndex(index);
        asc_twin_check(asc_twin_ub_access(0, reinterpret_cast<const uint8_t *>(addr_ + index), sizeof(T)));
        return addr_[index];
    }
    template <typename S> __aicore__ inline void SetValue(const uint32_t index, const S value) const
    {
        CheckIndex(index);
        asc_twin_check(asc_twin_ub_access(1, reinterpret_cast<const uint8_t *>(addr_ + index), sizeof(T)));
        addr_[index] = static_cast<T>(value);
    }
    __aicore__ inline LocalTensor operator[](const uint32_t offset) const
    {
        if (offset > size_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "LocalTensor offset past the end of its buffer",
                                         offset, size_));
        }
        return LocalTensor(addr_ + offset, size_ - offset);
    }
    template <typename U> __aicore__ inline LocalTensor<U> ReinterpretCast() const
    {
        return LocalTensor<U>(reinterpret_cast<U *>(addr_),
                              static_cast<uint32_t>((static_cast<uint64_t>(size_) * sizeof(T)) / sizeof(U)));
    }
    /* UB byte address (offset from the start of the core's Unified Buffer). */
    __aicore__ inline uint64_t GetPhyAddr() const
    {
        uint8_t *base = nullptr;
        uint64_t cap = 0;
        asc_twin_check(asc_twin_ub_arena(&base, &cap));
        return static_cast<uint64_t>(reinterpret_cast<uint8_t *>(addr_) - base);
    }
    __aicore__ inline uint32_t GetSize() const { return size_; }

    /* Twin only: host pointer of the first element (used by this header's DMA wrappers). */
    T *TwinPtr() const { return addr_; }

private:
    void CheckIndex(uint32_t index) const
    {
        if (index >= size_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "LocalTensor element index out of its buffer",
                                         index, size_));
        }
    }
    T *addr_;
    uint32_t size_;
};

template <typename T> class GlobalTensor {
public:
    using PrimType = T;
    __aicore__ inline GlobalTensor() : addr_(nullptr), size_(0) {}
    __aicore__ inline void SetGlobalBuffer(__gm__ PrimType *buffer, uint64_t bufferSize)
    {
        addr_ = buffer;
        size_ = bufferSize;
    }
    __aicore__ inline void SetGlobalBuffer(__gm__ PrimType *buffer)
    {
        addr_ = buffer;
        size_ = 0;
    }
    __aicore__ inline const __gm__ PrimType *GetPhyAddr() const { return addr_; }
    __aicore__ inline __gm__ PrimType *GetPhyAddr(const uint64_t offset) const { return addr_ + offset; }
    __aicore__ inline PrimType GetValue(const uint64_t offset) const
    {
        T value;
        asc_twin_check(asc_twin_gm_scalar(0, reinterpret_cast<uint8_t *>(addr_ + offset), &value, sizeof(T)));
        return value;
    }
    __aicore__ inline void SetValue(const uint64_t offset, PrimType value)
    {
        asc_twin_check(asc_twin_gm_scalar(1, reinterpret_cast<uint8_t *>(addr_ + offset), &value, sizeof(T)));
    }
    __aicore__ inline GlobalTensor operator[](const uint64_t offset) const
    {
        GlobalTensor t;
        t.addr_ = addr_ + offset;
        t.size_ = size_ > offset ? size_ - offset : 0;
        return t;
    }
    __aicore__ inline uint64_t GetSize() const { return size_; }

private:
    T *addr_;
    uint64_t size_;
};

/* ---- Unified Buffer management: TPipe, TBuf, TQue ---- */

class TPipe;

template <TPosition pos = TPosition::VECCALC> class TBuf {
public:
    __aicore__ inline TBuf() : addr_(nullptr), len_(0) {}
    template <typename T> __aicore__ inline LocalTensor<T> Get() const
    {
        return LocalTensor<T>(reinterpret_cast<T *>(addr_), len_ / static_cast<uint32_t>(sizeof(T)));
    }
    template <typename T> __aicore__ inline LocalTensor<T> Get(uint32_t len) const
    {
        if (static_cast<uint64_t>(len) * sizeof(T) > len_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "TBuf::Get longer than the buffer", len, len_));
        }
        return LocalTensor<T>(reinterpret_cast<T *>(addr_), len);
    }

private:
    friend class TPipe;
    uint8_t *addr_;
    uint32_t len_;
};

template <TPosition pos, int32_t depth, auto mask = 0> class TQue {
public:
    static constexpr int32_t MAX_BUFS = 8;
    __aicore__ inline TQue() : num_(0), len_(0), next_(0), queued_(0), head_(0) {}
    template <typename T> __aicore__ inline LocalTensor<T> AllocTensor()
    {
        if (num_ == 0) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "AllocTensor on a TQue without InitBuffer", 0, 0));
        }
        for (int32_t i = 0; i < num_; i++) {
            const int32_t k = (next_ + i) % num_;
            if (!inUse_[k]) {
                inUse_[k] = true;
                next_ = (k + 1) % num_;
                return LocalTensor<T>(reinterpret_cast<T *>(bufs_[k]), len_ / static_cast<uint32_t>(sizeof(T)));
            }
        }
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE,
                                     "AllocTensor with every buffer of the TQue in use (would hang the NPU)", 0,
                                     static_cast<uint64_t>(num_)));
        return LocalTensor<T>();
    }
    template <typename T> __aicore__ inline bool EnQue(const LocalTensor<T> &tensor)
    {
        if (queued_ >= depth || queued_ >= num_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "EnQue on a full TQue", 0, static_cast<uint64_t>(depth)));
        }
        // The real TQue inserts the pipe syncs its positions imply; the twin joins every pipe.
        asc_twin_check(asc_twin_pipe(ASC_TWIN_PIPE_BARRIER, PIPE_ALL, 0));
        fifo_[(head_ + queued_) % MAX_BUFS] = reinterpret_cast<uint8_t *>(tensor.TwinPtr());
        queued_++;
        return true;
    }
    template <typename T> __aicore__ inline LocalTensor<T> DeQue()
    {
        if (queued_ == 0) {
            asc_twin_check(
                asc_twin_fail(ASC_TWIN_OP_QUEUE, "DeQue on an empty TQue (would hang the NPU)", 0, 0));
        }
        asc_twin_check(asc_twin_pipe(ASC_TWIN_PIPE_BARRIER, PIPE_ALL, 0));
        uint8_t *p = fifo_[head_];
        head_ = (head_ + 1) % MAX_BUFS;
        queued_--;
        return LocalTensor<T>(reinterpret_cast<T *>(p), len_ / static_cast<uint32_t>(sizeof(T)));
    }
    template <typename T> __aicore__ inline void FreeTensor(LocalTensor<T> &tensor)
    {
        for (int32_t i = 0; i < num_; i++) {
            if (bufs_[i] == reinterpret_cast<uint8_t *>(tensor.TwinPtr())) {
                inUse_[i] = false;
                return;
            }
        }
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_QUEUE, "FreeTensor of a tensor this TQue did not allocate", 0, 0));
    }

private:
    friend class TPipe;
    uint8_t *bufs_[MAX_BUFS] = {};
    bool inUse_[MAX_BUFS] = {};
    uint8_t *fifo_[MAX_BUFS] = {};
    int32_t num_;
    uint32_t len_;
    int32_t next_;
    int32_t queued_;
    int32_t head_;
};

/* Allocates the core's Unified Buffer to TBuf/TQue objects, 32-byte aligned, as AscendC's TPipe. */
class TPipe {
public:
    __aicore__ inline TPipe() : base_(nullptr), cap_(0), used_(0)
    {
        asc_twin_check(asc_twin_ub_arena(&base_, &cap_));
    }
    template <TPosition bufPos> __aicore__ inline bool InitBuffer(TBuf<bufPos> &buf, uint32_t len)
    {
        buf.addr_ = Take(len);
        buf.len_ = len;
        return true;
    }
    template <class T> __aicore__ inline bool InitBuffer(T &que, uint8_t num, uint32_t len)
    {
        if (num == 0 || num > T::MAX_BUFS) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_BUFFER, "TQue buffer count out of range", num, 0));
        }
        que.num_ = num;
        que.len_ = len;
        for (uint8_t i = 0; i < num; i++) {
            que.bufs_[i] = Take(len);
        }
        return true;
    }
    __aicore__ inline void Reset() { used_ = 0; }
    __aicore__ inline void Destroy() { used_ = 0; }

private:
    uint8_t *Take(uint32_t len)
    {
        const uint64_t rounded = (static_cast<uint64_t>(len) + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        if (used_ + rounded > cap_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_INIT_BUFFER,
                                         "InitBuffer exceeds the Unified Buffer of the core", used_, rounded));
        }
        uint8_t *p = base_ + used_;
        used_ += rounded;
        return p;
    }
    uint8_t *base_;
    uint64_t cap_;
    uint64_t used_;
};

/* ---- DataCopy parameter structs (field names and types as AscendC, Atlas A2) ---- */

struct DataCopyParams {
    __aicore__ DataCopyParams() {}
    __aicore__ DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn,
                              const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn)
    {
    }
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    union {
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
};

struct DataCopyExtParams {
    __aicore__ DataCopyExtParams() {}
    __aicore__ DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn,
                                 const uint32_t dstStrideIn, const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn)
    {
    }
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <typename T> struct DataCopyPadExtParams {
    __aicore__ DataCopyPadExtParams() {}
    __aicore__ DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                                    T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue)
    {
    }
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};

/* ---- DMA ---- */

namespace twin {
template <typename T> inline AscTwinCopy Req(uint32_t api, uint32_t dir, const LocalTensor<T> &ub, const T *gm)
{
    AscTwinCopy r{};
    r.api = api;
    r.dir = dir;
    r.ub = reinterpret_cast<uint8_t *>(ub.TwinPtr());
    r.ub_cap = static_cast<uint64_t>(ub.GetSize()) * sizeof(T);
    r.gm = reinterpret_cast<uint8_t *>(const_cast<T *>(gm));
    r.elem_size = sizeof(T);
    r.block_count = 1;
    return r;
}
} // namespace twin

/* GM -> UB, `count` elements; count * sizeof(T) must be a multiple of 32 bytes. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const uint32_t count)
{
    AscTwinCopy r = twin::Req(ASC_TWIN_DATA_COPY, ASC_TWIN_GM_TO_UB, dst, src.GetPhyAddr());
    r.block_len = count * static_cast<uint32_t>(sizeof(T));
    asc_twin_check(asc_twin_copy(&r));
}

/* UB -> GM, `count` elements; count * sizeof(T) must be a multiple of 32 bytes. */
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count)
{
    AscTwinCopy r = twin::Req(ASC_TWIN_DATA_COPY, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_len = count * static_cast<uint32_t>(sizeof(T));
    asc_twin_check(asc_twin_copy(&r));
}

/* GM -> UB, strided: blockCount blocks of blockLen x 32 B, gaps in 32 B blocks. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                const DataCopyParams &repeatParams)
{
    AscTwinCopy r = twin::Req(ASC_TWIN_DATA_COPY_STRIDED, ASC_TWIN_GM_TO_UB, dst, src.GetPhyAddr());
    r.block_count = repeatParams.blockCount;
    r.block_len = repeatParams.blockLen;
    r.src_stride = repeatParams.srcStride;
    r.dst_stride = repeatParams.dstStride;
    asc_twin_check(asc_twin_copy(&r));
}

/* UB -> GM, strided: blockCount blocks of blockLen x 32 B, gaps in 32 B blocks. */
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                const DataCopyParams &repeatParams)
{
    AscTwinCopy r = twin::Req(ASC_TWIN_DATA_COPY_STRIDED, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_count = repeatParams.blockCount;
    r.block_len = repeatParams.blockLen;
    r.src_stride = repeatParams.srcStride;
    r.dst_stride = repeatParams.dstStride;
    asc_twin_check(asc_twin_copy(&r));
}

/* GM -> UB, any byte length; each block lands 32-byte aligned in UB, padded as padParams says. */
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                   const DataCopyExtParams &dataCopyParams, const DataCopyPadExtParams<T> &padParams)
{
    AscTwinCopy r = twin::Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB, dst, src.GetPhyAddr());
    r.block_count = dataCopyParams.blockCount;
    r.block_len = dataCopyParams.blockLen;
    r.src_stride = dataCopyParams.srcStride;
    r.dst_stride = dataCopyParams.dstStride;
    r.is_pad = padParams.isPad ? 1u : 0u;
    r.left_pad = padParams.leftPadding;
    r.right_pad = padParams.rightPadding;
    std::memcpy(&r.pad_value, &padParams.paddingValue, sizeof(T) < 8 ? sizeof(T) : 8);
    asc_twin_check(asc_twin_copy(&r));
}

/* UB -> GM, any byte length; the UB side of each block starts 32-byte aligned. */
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                   const DataCopyExtParams &dataCopyParams)
{
    AscTwinCopy r = twin::Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_count = dataCopyParams.blockCount;
    r.block_len = dataCopyParams.blockLen;
    r.src_stride = dataCopyParams.srcStride;
    r.dst_stride = dataCopyParams.dstStride;
    asc_twin_check(asc_twin_copy(&r));
}

/* ---- vector fill ---- */

template <typename T> __aicore__ inline void Duplicate(const LocalTensor<T> &dst, const T &scalarValue, const int32_t &count)
{
    // The A2 vector unit duplicates 16- and 32-bit elements only; AscendC rejects the rest at
    // compile time, and so does the twin.
    static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value ||
                      std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value ||
                      std::is_same<T, int32_t>::value || std::is_same<T, uint32_t>::value ||
                      std::is_same<T, float>::value,
                  "Duplicate supports half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t and float");
    if (count < 0 || static_cast<uint32_t>(count) > dst.GetSize()) {
        asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DUPLICATE, "Duplicate count exceeds the LocalTensor",
                                     static_cast<uint64_t>(count), dst.GetSize()));
    }
    T *p = dst.TwinPtr();
    asc_twin_check(asc_twin_ub_access(2, reinterpret_cast<const uint8_t *>(p), static_cast<uint64_t>(count) * sizeof(T)));
    for (int32_t i = 0; i < count; i++) {
        p[i] = scalarValue;
    }
}

/* ---- atomics on the UB -> GM store path ---- */

template <typename T> __aicore__ inline void SetAtomicAdd() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_ADD, AscTwinDtypeOf<T>::value)); }
template <typename T> __aicore__ inline void SetAtomicMax() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_MAX, AscTwinDtypeOf<T>::value)); }
template <typename T> __aicore__ inline void SetAtomicMin() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_MIN, AscTwinDtypeOf<T>::value)); }
__aicore__ inline void SetAtomicNone() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_NONE, 0)); }
__aicore__ inline void DisableDmaAtomic() { SetAtomicNone(); }

/* ---- intra-core pipe synchronisation ---- */

template <HardEvent event> __aicore__ inline void SetFlag(int32_t eventID)
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_SET_FLAG, static_cast<uint32_t>(event), eventID));
}
template <HardEvent event> __aicore__ inline void WaitFlag(int32_t eventID)
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_WAIT_FLAG, static_cast<uint32_t>(event), eventID));
}
template <pipe_t pipe> __aicore__ inline void PipeBarrier()
{
    asc_twin_check(asc_twin_pipe(ASC_TWIN_PIPE_BARRIER, static_cast<uint32_t>(pipe), 0));
}

/* ---- caches ---- */

template <typename T, CacheLine entireType, DcciDst dcciDst>
__aicore__ inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst)
{
    asc_twin_check(asc_twin_dcci(reinterpret_cast<uint8_t *>(const_cast<T *>(dst.GetPhyAddr()))));
}
template <typename T, CacheLine entireType>
__aicore__ inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst)
{
    asc_twin_check(asc_twin_dcci(reinterpret_cast<uint8_t *>(const_cast<T *>(dst.GetPhyAddr()))));
}

/* ---- system variables ---- */

__aicore__ inline int64_t GetBlockIdx() { return asc_twin_block_idx(); }
__aicore__ inline int64_t GetBlockNum() { return asc_twin_block_num(); }
/* A2 system counter: 50 MHz (cycles / 50 = microseconds), as the AscendC docs state. */
__aicore__ inline int64_t GetSystemCycle() { return asc_twin_system_cycle(); }

/* Stops the AI core (NPU) / fails the block with a named fault (twin). */
__aicore__ inline void Trap() { asc_twin_check(asc_twin_trap()); }

} // namespace AscendC

#endif /* ASC_TWIN_KERNEL_OPERATOR_H */
