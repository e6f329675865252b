/*
 * The vector unit. (The vector compute API is issue 12's; Duplicate is what the copy engine
 * needs.)
 */
#ifndef ASC_TWIN_VECTOR_H
#define ASC_TWIN_VECTOR_H

#include "tensor.h"

namespace AscendC {

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
    T *p = asc_twin::Access::Ptr(dst);
    asc_twin_check(asc_twin_ub_fill(reinterpret_cast<const uint8_t *>(p), &scalarValue, sizeof(T),
                                    static_cast<uint64_t>(count)));
    for (int32_t i = 0; i < count; i++) {
        p[i] = scalarValue;
    }
}

} // namespace AscendC

#endif
