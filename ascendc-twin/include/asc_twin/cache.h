/*
 * The scalar data cache (64-byte lines) and GM access around it: DataCacheCleanAndInvalid,
 * ReadGmByPassDCache / WriteGmByPassDCache, DataSyncBarrier.
 */
#ifndef ASC_TWIN_CACHE_H
#define ASC_TWIN_CACHE_H

#include "tensor.h"

namespace AscendC {

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

template <typename T, CacheLine entireType, DcciDst dcciDst>
__aicore__ inline void DataCacheCleanAndInvalid(const LocalTensor<T> &dst)
{
    // UB is not cached by the scalar data cache model: nothing to write back.
    (void)dst;
}

/* A scalar GM read / write that skips the data cache (integers of 8 to 64 bits). A line this
 * core has cached is neither used nor updated. */
template <typename T> __aicore__ inline T ReadGmByPassDCache(__gm__ T *addr)
{
    static_assert(std::is_integral<T>::value && sizeof(T) <= 8, "ReadGmByPassDCache takes 8- to 64-bit integers");
    T value;
    asc_twin_check(asc_twin_gm_bypass(ASC_TWIN_LOAD, reinterpret_cast<uint8_t *>(addr), &value, sizeof(T)));
    return value;
}
template <typename T> __aicore__ inline void WriteGmByPassDCache(__gm__ T *addr, T value)
{
    static_assert(std::is_integral<T>::value && sizeof(T) <= 8, "WriteGmByPassDCache takes 8- to 64-bit integers");
    asc_twin_check(asc_twin_gm_bypass(ASC_TWIN_STORE, reinterpret_cast<uint8_t *>(addr), &value, sizeof(T)));
}

/* Waits until the core's outstanding memory accesses of the given kind complete. The twin
 * completes every access when it is issued, so there is nothing to wait for. */
template <MemDsbT arg0> __aicore__ inline void DataSyncBarrier() {}

} // namespace AscendC

#endif
