/*
 * CCE vector intrinsics the A2 implementation of AscendC's vector API calls and that the shared
 * ascendc-check stubs (../shared/tools/ascendc-check/stubs) do not declare: `vaxpy` (behind
 * Axpy), `vbitsort` (Sort32), `vmrgsort4` (MrgSort), `vcpadd` (ReducePairElem) and `vgatherb`
 * (Gatherb). Catch-alls like the stubs' own, so that twin-tests/kernels/*.cpp can be
 * syntax-checked against the real headers:
 *
 *     EXTRA_INC="-Ikernel -Isync -Itwin-tests/kernels -include tools/ascendc_check_extra.h" \
 *         bash ../shared/tools/ascendc-check/check.sh ASC_DEVKIT_GIT_DIR twin-tests/kernels/*.cpp
 *
 * The names exist in the CANN toolkit; declaring them checks nothing about their arguments. The
 * others this file used to declare are in the shared stubs now (declaring them twice is an
 * error there).
 */
#ifndef AIV_ASCENDC_CHECK_EXTRA_H
#define AIV_ASCENDC_CHECK_EXTRA_H
template <typename... A> inline long vaxpy(A...) { return 0; }
template <typename... A> inline long vbitsort(A...) { return 0; }
template <typename... A> inline long vmrgsort4(A...) { return 0; }
template <typename... A> inline long vcpadd(A...) { return 0; }
template <typename... A> inline long vgatherb(A...) { return 0; }
#endif
