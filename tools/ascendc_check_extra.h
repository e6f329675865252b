/*
 * CCE vector intrinsics the A2 implementation of AscendC's vector API calls and that the shared
 * ascendc-check stubs (../shared/tools/ascendc-check/stubs) do not declare yet. Each is a
 * catch-all like the stubs' own, so a kernel using Relu, Rsqrt, LeakyRelu, AddRelu, SubRelu,
 * ShiftLeft, Compare (to the register), the reductions or GetCmpMask can be syntax-checked
 * against the real headers:
 *
 *     EXTRA_INC="-Ikernel -Isync -include tools/ascendc_check_extra.h" \
 *         bash ../shared/tools/ascendc-check/check.sh ASC_DEVKIT_GIT_DIR kernel/*.cpp
 *
 * These names exist in the CANN toolkit; declaring them checks nothing about their arguments.
 */
#ifndef AIV_ASCENDC_CHECK_EXTRA_H
#define AIV_ASCENDC_CHECK_EXTRA_H
template <typename... A> inline long get_cmpmask(A...) { return 0; }
template <typename... A> inline long vcgmin(A...) { return 0; }
template <typename... A> inline long vcmin(A...) { return 0; }
template <typename... A> inline long vcmp_eq(A...) { return 0; }
template <typename... A> inline long vcmp_ge(A...) { return 0; }
template <typename... A> inline long vcmp_gt(A...) { return 0; }
template <typename... A> inline long vcmp_le(A...) { return 0; }
template <typename... A> inline long vcmp_lt(A...) { return 0; }
template <typename... A> inline long vcmp_ne(A...) { return 0; }
template <typename... A> inline long vlrelu(A...) { return 0; }
template <typename... A> inline long vrelu(A...) { return 0; }
template <typename... A> inline long vrsqrt(A...) { return 0; }
template <typename... A> inline long vaddrelu(A...) { return 0; }
template <typename... A> inline long vsubrelu(A...) { return 0; }
template <typename... A> inline long vshl(A...) { return 0; }
#endif
