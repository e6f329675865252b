/*
 * DMA between GM and UB: DataCopy (contiguous and strided) and DataCopyPad (with
 * DataCopyExtParams / DataCopyPadExtParams<T>, and the older DataCopyParams / DataCopyPadParams
 * forms), with the field names and types of AscendC's parameter structs on Atlas A2, and
 * SetPadValue. The runtime applies each call's rules (alignment, lengths, bounds) and moves the
 * bytes; the pad-value register is kept here, with the core's other registers.
 */
#ifndef ASC_TWIN_DATA_COPY_H
#define ASC_TWIN_DATA_COPY_H

#include "tensor.h"

#include <cstdio>
#include <vector>

namespace AscendC {

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

/* The padding of the older DataCopyPad form (with DataCopyParams): the value is the raw bits of
 * one element, in a 64-bit field whatever the element type. */
struct DataCopyPadParams {
    __aicore__ DataCopyPadParams() {}
    __aicore__ DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                                 const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue)
    {
    }
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

/* ---- DMA ---- */

namespace asc_twin_dma {
template <typename T> inline AscTwinCopy Req(uint32_t api, uint32_t dir, const LocalTensor<T> &ub, const T *gm)
{
    AscTwinCopy r{};
    r.api = api;
    r.dir = dir;
    r.ub = reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(ub));
    r.ub_cap = static_cast<uint64_t>(ub.GetSize()) * sizeof(T);
    r.gm = reinterpret_cast<uint8_t *>(const_cast<T *>(gm));
    r.elem_size = sizeof(T);
    r.block_count = 1;
    return r;
}
/* Raises a DataCopyPad / SetPadValue misuse. */
[[noreturn]] inline void PadFail(const char *what, uint64_t value, uint64_t limit)
{
    asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DATA_COPY_PAD, what, value, limit));
    throw AscTwinAbort{};
}

/* The running core's registers (the pad-value register lives with the vector ones). */
inline AscTwinVecRegs &PadRegs()
{
    AscTwinVecRegs *r = asc_twin_vec_regs();
    if (r == nullptr) {
        asc_twin_check(ASC_TWIN_NO_BLOCK);
    }
    return *r;
}

/*
 * DataCopyPad GM -> UB, both forms. What fills the padding (docs, DataCopyPad GM->UB and
 * SetPadValue, Atlas A2):
 *  - isPad: paddingValue. A2 does this by writing the value to the core's pad-value register
 *    before the move (the public dav-c220 implementation), so the register keeps it afterwards,
 *    as it keeps a SetPadValue: both are the same register here;
 *  - no isPad, with left/right padding: the register's value when SetPadValue (or an isPad
 *    DataCopyPad) has set it in this kernel; before that the padding is unspecified ("random":
 *    the runtime poisons it). The docs require SetPadValue's T to be the type DataCopyPad moves:
 *    a register set for another element size is refused rather than guessed at;
 *  - no isPad and no padding: the documented dummy rule (the first element repeated) applies
 *    whatever the register holds (assumption: the docs give that rule without exception).
 * 64-bit elements: the docs allow only 0 as padding value (A2 moves them as 32-bit pairs), so a
 * non-zero one is refused, from either source.
 */
template <typename T>
inline void PadLoad(const LocalTensor<T> &dst, const T *gm, uint32_t blockCount, uint32_t blockLen,
                    uint64_t srcStride, uint64_t dstStride, bool isPad, uint8_t leftPad, uint8_t rightPad,
                    uint64_t padBits)
{
    AscTwinCopy r = Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB, dst, gm);
    r.block_count = blockCount;
    r.block_len = blockLen;
    r.src_stride = srcStride;
    r.dst_stride = dstStride;
    r.left_pad = leftPad;
    r.right_pad = rightPad;
    AscTwinVecRegs &reg = PadRegs();
    uint64_t value = 0;
    bool filled = false;
    if (isPad) {
        value = padBits;
        filled = true;
        reg.pad_value = padBits;
        reg.pad_size = sizeof(T);
    } else if ((leftPad != 0 || rightPad != 0) && reg.pad_size != 0) {
        if (reg.pad_size != sizeof(T)) {
            PadFail("no isPad, so the padding comes from SetPadValue, whose T must be the element type DataCopyPad "
                    "moves (docs): the pad register holds a value of another size (value: its bytes, limit: "
                    "sizeof(T))",
                    reg.pad_size, sizeof(T));
        }
        value = reg.pad_value;
        filled = true;
    }
    if (filled && sizeof(T) == 8 && value != 0) {
        PadFail("the padding value of a 64-bit element type must be 0 (docs)", value, 0);
    }
    r.is_pad = filled ? 1u : 0u;
    r.pad_value = value;
    asc_twin_check(asc_twin_copy(&r));
}
} // namespace asc_twin_dma

/* GM -> UB, `count` elements; count * sizeof(T) must be a multiple of 32 bytes. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const uint32_t count)
{
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY, ASC_TWIN_GM_TO_UB, dst, src.GetPhyAddr());
    r.block_len = count * static_cast<uint32_t>(sizeof(T));
    asc_twin_check(asc_twin_copy(&r));
}

/* UB -> GM, `count` elements; count * sizeof(T) must be a multiple of 32 bytes. */
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t count)
{
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_len = count * static_cast<uint32_t>(sizeof(T));
    asc_twin_check(asc_twin_copy(&r));
}

/* GM -> UB, strided: blockCount blocks of blockLen x 32 B, gaps in 32 B blocks. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                const DataCopyParams &repeatParams)
{
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY_STRIDED, ASC_TWIN_GM_TO_UB, dst, src.GetPhyAddr());
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
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY_STRIDED, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
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
    uint64_t bits = 0;
    std::memcpy(&bits, &padParams.paddingValue, sizeof(T) < 8 ? sizeof(T) : 8);
    asc_twin_dma::PadLoad(dst, src.GetPhyAddr(), dataCopyParams.blockCount, dataCopyParams.blockLen,
                          dataCopyParams.srcStride, dataCopyParams.dstStride, padParams.isPad, padParams.leftPadding,
                          padParams.rightPadding, bits);
}

/* UB -> GM, any byte length; the UB side of each block starts 32-byte aligned. */
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                   const DataCopyExtParams &dataCopyParams)
{
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_count = dataCopyParams.blockCount;
    r.block_len = dataCopyParams.blockLen;
    r.src_stride = dataCopyParams.srcStride;
    r.dst_stride = dataCopyParams.dstStride;
    asc_twin_check(asc_twin_copy(&r));
}

/* GM -> UB, the older form: DataCopyParams with blockLen in bytes (uint16_t), srcStride in bytes
 * on GM, dstStride in 32-byte blocks on UB (the units of DataCopyExtParams), and
 * DataCopyPadParams, whose paddingValue holds the raw bits of one T. Bits above sizeof(T) bytes
 * are refused: the docs require the padding value to lie in the element's range. */
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                   const DataCopyParams &dataCopyParams, const DataCopyPadParams &padParams)
{
    // The register takes the 64-bit field as given (the dav-c220 implementation passes it on
    // whole); the twin pads with its low sizeof(T) bytes. Assumption: the docs say the field
    // holds one element and nothing of higher bits, so (uint64_t)(int8_t)-1 pads 0xFF, as
    // sign-extended values would on the NPU if it uses the element's bytes.
    const uint64_t bits = sizeof(T) < 8 ? padParams.paddingValue & ((1ULL << (8 * sizeof(T))) - 1)
                                        : padParams.paddingValue;
    asc_twin_dma::PadLoad(dst, src.GetPhyAddr(), dataCopyParams.blockCount, dataCopyParams.blockLen,
                          dataCopyParams.srcStride, dataCopyParams.dstStride, padParams.isPad, padParams.leftPadding,
                          padParams.rightPadding, bits);
}

/* UB -> GM, the older form: DataCopyParams with blockLen in bytes, srcStride in 32-byte blocks on
 * UB, dstStride in bytes on GM. */
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                   const DataCopyParams &dataCopyParams)
{
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_count = dataCopyParams.blockCount;
    r.block_len = dataCopyParams.blockLen;
    r.src_stride = dataCopyParams.srcStride;
    r.dst_stride = dataCopyParams.dstStride;
    asc_twin_check(asc_twin_copy(&r));
}

/* ---- DataCopy with SliceInfo (GM <-> UB slices of an up-to-8-dimensional tensor) ----
 *
 * Model (docs: DataCopy (GM and UB slice data movement), Atlas A2). The docs call it a software
 * interface: it is issued as ordinary DataCopy bursts (MTE2 in, MTE3 out), so every burst obeys
 * DataCopy's rules (UB addresses 32-byte aligned, whole 32-byte blocks), checked by the twin's
 * DMA engine as for any DataCopy.
 *  - dimension 0 (the innermost; shapeValue elements a row): from startIndex, N bursts of
 *    burstLen x 32 bytes, `stride` elements between one burst's end and the next's start, the
 *    last ending at endIndex: endIndex - startIndex + 1 = (N - 1) * stride + N * burstLen * 32 /
 *    sizeof(T);
 *  - dimension i > 0: burstLen must be 1; from startIndex, every (stride + 1)-th index up to
 *    endIndex (the docs' example: {0, 2, 1, 1, 3} takes rows 0 and 2), each a slice of the
 *    dimensions below. Assumed (the docs' formula, read with one index a slice, is the only one
 *    their example satisfies): endIndex - startIndex + 1 = (N - 1) * stride + N;
 *  - startIndex < endIndex <= shapeValue in every dimension; dimValue in [1, 8] (K_MAX_DIM);
 *    src and dst have equal burstLen in every dimension;
 *  - the slices of src and dst are paired in order (outer indices, then bursts): assumed that
 *    both must then have the same N in every dimension, which the twin checks (a pairing with
 *    slices left over has no documented meaning).
 * shapeValue 0 (take the shape from the tensor's ShapeInfo) is refused: the twin does not model
 * ShapeInfo.
 */
constexpr int32_t K_MAX_DIM = 8;

struct SliceInfo {
    __aicore__ SliceInfo() {}
    __aicore__ SliceInfo(const uint32_t startIndexIn, const uint32_t endIndexIn, const uint32_t strideIn,
                         const uint32_t burstLenIn, const uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn),
          shapeValue(shapeValueIn)
    {
    }
    uint32_t startIndex = 0;
    uint32_t endIndex = 31;
    uint32_t stride = 0;
    uint32_t burstLen = 32;
    uint32_t shapeValue = 0;
};

namespace asc_twin_dma {
[[noreturn]] inline void SliceFail(const char *what, uint64_t value, uint64_t limit)
{
    char msg[256];
    std::snprintf(msg, sizeof msg, "DataCopy with SliceInfo: %s", what);
    asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DATA_COPY, msg, value, limit));
    throw AscTwinAbort{};
}

/* Element offsets (from the tensor's start) of every burst of a slice, in order, and the
 * burst length in elements. */
template <typename T>
inline std::vector<uint64_t> SliceBursts(const SliceInfo info[], uint32_t dimValue, uint32_t &burstElems)
{
    const uint64_t c0 = 32 / sizeof(T);
    std::vector<uint64_t> offs{0};
    uint64_t size = 1; /* elements of one index of dimension i */
    for (uint32_t i = 0; i < dimValue; i++) {
        const SliceInfo &s = info[i];
        if (s.shapeValue == 0) {
            SliceFail("shapeValue 0 (the shape from the tensor's ShapeInfo) is not modelled by the twin: give "
                      "shapeValue",
                      i, 0);
        }
        if (!(s.startIndex < s.endIndex && s.endIndex <= s.shapeValue)) {
            SliceFail("needs startIndex < endIndex <= shapeValue (docs) (value: endIndex, limit: shapeValue)",
                      s.endIndex, s.shapeValue);
        }
        if (i > 0 && s.burstLen != 1) {
            SliceFail("burstLen must be 1 in every dimension above the first (docs)", s.burstLen, 1);
        }
        const uint64_t seg = i == 0 ? static_cast<uint64_t>(s.burstLen) * c0 : 1;
        const uint64_t span = static_cast<uint64_t>(s.endIndex) - s.startIndex + 1;
        if (seg == 0 || (span + s.stride) % (seg + s.stride) != 0) {
            SliceFail("endIndex - startIndex + 1 must be (N - 1) * stride + N * (burstLen * 32 / sizeof(T) in the "
                      "first dimension, 1 above it) for a whole N (docs)",
                      span, seg + s.stride);
        }
        const uint64_t n = (span + s.stride) / (seg + s.stride);
        std::vector<uint64_t> next;
        for (uint64_t k = 0; k < n; k++) {
            const uint64_t at = (s.startIndex + k * (seg + s.stride)) * size;
            for (uint64_t o : offs) {
                next.push_back(i == 0 ? at : o + at);
            }
        }
        offs.swap(next);
        if (i == 0) {
            burstElems = static_cast<uint32_t>(seg);
        }
        size *= s.shapeValue;
    }
    return offs;
}

template <typename T>
inline void SliceCopy(uint32_t dir, const LocalTensor<T> &ub, T *gm, const SliceInfo ubInfo[], const SliceInfo gmInfo[],
                      uint32_t dimValue)
{
    static_assert(Std::is_one_of_v<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>,
                  "DataCopy with SliceInfo on Atlas A2 supports int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, "
                  "int32_t, uint32_t and float");
    if (dimValue < 1 || dimValue > static_cast<uint32_t>(K_MAX_DIM)) {
        SliceFail("dimValue out of range [1, 8]", dimValue, K_MAX_DIM);
    }
    for (uint32_t i = 0; i < dimValue; i++) {
        if (ubInfo[i].burstLen != gmInfo[i].burstLen) {
            SliceFail("src and dst burstLen differ (docs: they must be equal)", gmInfo[i].burstLen, ubInfo[i].burstLen);
        }
    }
    uint32_t ubBurst = 0, gmBurst = 0;
    const std::vector<uint64_t> u = SliceBursts<T>(ubInfo, dimValue, ubBurst);
    const std::vector<uint64_t> g = SliceBursts<T>(gmInfo, dimValue, gmBurst);
    if (u.size() != g.size()) {
        SliceFail("src and dst select a different number of bursts (value: GM's, limit: UB's)", g.size(), u.size());
    }
    for (size_t k = 0; k < u.size(); k++) {
        if (u[k] > ub.GetSize()) {
            SliceFail("a burst starts past the end of the LocalTensor", u[k], ub.GetSize());
        }
        AscTwinCopy r = Req(ASC_TWIN_DATA_COPY, dir, ub[static_cast<uint32_t>(u[k])], gm + g[k]);
        r.block_len = ubBurst * static_cast<uint32_t>(sizeof(T));
        asc_twin_check(asc_twin_copy(&r));
    }
}
} // namespace asc_twin_dma

/* GM -> UB: the slice srcSliceInfo of src to the slice dstSliceInfo of dst (MTE2). */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const SliceInfo dstSliceInfo[],
                                const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1)
{
    asc_twin_dma::SliceCopy(ASC_TWIN_GM_TO_UB, dst, const_cast<T *>(src.GetPhyAddr()), dstSliceInfo, srcSliceInfo,
                            dimValue);
}

/* UB -> GM: the slice srcSliceInfo of src to the slice dstSliceInfo of dst (MTE3). */
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const SliceInfo dstSliceInfo[],
                                const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1)
{
    asc_twin_dma::SliceCopy(ASC_TWIN_UB_TO_GM, src, const_cast<T *>(dst.GetPhyAddr()), srcSliceInfo, dstSliceInfo,
                            dimValue);
}

namespace asc_twin_dma {
template <typename T> constexpr bool PadValueType()
{
    return Std::is_one_of_v<T, int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float,
                            int64_t, uint64_t, double>;
}
} // namespace asc_twin_dma

/* Sets the pad-value register DataCopyPad GM -> UB fills its padding from when isPad is false.
 * `pos`: the destination the value is for; on A2, VECIN / VECOUT (MAX means either). */
template <typename T, TPosition pos = TPosition::MAX> __aicore__ inline void SetPadValue(T paddingValue)
{
    static_assert(asc_twin_dma::PadValueType<T>(),
                  "SetPadValue on Atlas A2 supports int8_t, uint8_t, int16_t, uint16_t, half, bfloat16_t, int32_t, "
                  "uint32_t, float, int64_t, uint64_t and double");
    static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::MAX,
                  "SetPadValue: pos must be TPosition::VECIN, VECOUT or MAX");
    AscTwinVecRegs &reg = asc_twin_dma::PadRegs();
    uint64_t bits = 0;
    std::memcpy(&bits, &paddingValue, sizeof(T));
    reg.pad_value = bits;
    reg.pad_size = sizeof(T);
}

} // namespace AscendC

#endif
