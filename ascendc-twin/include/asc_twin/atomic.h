/*
 * Atomic store modes of the UB -> GM path.
 *
 * The mode is read by each DataCopy to GM when it is issued. The AscendC docs (in-core sync,
 * "synchronisation guaranteed by hardware") say SetAtomic* run on PIPE_S and that on Atlas
 * A2/A3 the hardware orders them against the other pipes, so switching without draining MTE3 is
 * not a hazard; the twin does not report it.
 */
#ifndef ASC_TWIN_ATOMIC_H
#define ASC_TWIN_ATOMIC_H

#include "enums.h"

namespace AscendC {

template <typename T> __aicore__ inline void SetAtomicAdd() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_ADD, AscTwinDtypeOf<T>::value)); }
template <typename T> __aicore__ inline void SetAtomicMax() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_MAX, AscTwinDtypeOf<T>::value)); }
template <typename T> __aicore__ inline void SetAtomicMin() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_MIN, AscTwinDtypeOf<T>::value)); }
__aicore__ inline void SetAtomicNone() { asc_twin_check(asc_twin_set_atomic(ASC_TWIN_ATOMIC_NONE, 0)); }
__aicore__ inline void DisableDmaAtomic() { SetAtomicNone(); }

/* Puts the core in its initial state: no atomic store mode (the vector mask, which the twin's
 * vector API keeps per call, needs no reset). TPipe's constructor calls it. */
__aicore__ inline void InitSocState() { SetAtomicNone(); }

} // namespace AscendC

#endif
