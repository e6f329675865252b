/*
 * DMA between GM and UB: DataCopy (contiguous and strided) and DataCopyPad, with the field names
 * and types of AscendC's parameter structs on Atlas A2. The runtime applies each call's rules
 * (alignment, lengths, bounds) and moves the bytes.
 */
#ifndef ASC_TWIN_DATA_COPY_H
#define ASC_TWIN_DATA_COPY_H

#include "tensor.h"

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
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_GM_TO_UB, dst, src.GetPhyAddr());
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
    AscTwinCopy r = asc_twin_dma::Req(ASC_TWIN_DATA_COPY_PAD, ASC_TWIN_UB_TO_GM, src, dst.GetPhyAddr());
    r.block_count = dataCopyParams.blockCount;
    r.block_len = dataCopyParams.blockLen;
    r.src_stride = dataCopyParams.srcStride;
    r.dst_stride = dataCopyParams.dstStride;
    asc_twin_check(asc_twin_copy(&r));
}

} // namespace AscendC

#endif
