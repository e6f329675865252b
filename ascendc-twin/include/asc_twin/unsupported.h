/*
 * AscendC APIs of the cube unit (AIC: matrix multiply, L0/L1 loads, Fixpipe) that an AIV-only
 * twin does not model. Each is declared so that using it is a compile error naming it and
 * saying why, instead of an obscure "not declared". (SIMT and register-based vector APIs do not
 * exist on Atlas A2 at all: the NPU compiler rejects them too.)
 */
#ifndef ASC_TWIN_UNSUPPORTED_H
#define ASC_TWIN_UNSUPPORTED_H

#include "base.h"

#define ASC_TWIN_CUBE_ONLY(name)                                                                                      \
    template <typename... T, typename... A> inline void name(A &&...)                                                 \
    {                                                                                                                 \
        static_assert(asc_twin::always_false<T..., A...>,                                                             \
                      #name " is a cube-unit (AIC) API: the aiv-comm twin models AIV vector cores only");             \
    }

namespace AscendC {
ASC_TWIN_CUBE_ONLY(Mmad)
ASC_TWIN_CUBE_ONLY(MmadWithSparse)
ASC_TWIN_CUBE_ONLY(MmadBitMode)
ASC_TWIN_CUBE_ONLY(LoadData)
ASC_TWIN_CUBE_ONLY(LoadDataWithTranspose)
ASC_TWIN_CUBE_ONLY(LoadDataWithSparse)
ASC_TWIN_CUBE_ONLY(LoadImageToLocal)
ASC_TWIN_CUBE_ONLY(LoadUnzipIndex)
ASC_TWIN_CUBE_ONLY(SetFmatrix)
ASC_TWIN_CUBE_ONLY(SetLoadDataBoundary)
ASC_TWIN_CUBE_ONLY(SetLoadDataPaddingValue)
ASC_TWIN_CUBE_ONLY(SetLoadDataRepeat)
ASC_TWIN_CUBE_ONLY(SetHF32Mode)
ASC_TWIN_CUBE_ONLY(SetHF32TransMode)
ASC_TWIN_CUBE_ONLY(SetMMLayoutTransform)
ASC_TWIN_CUBE_ONLY(Fixpipe)
ASC_TWIN_CUBE_ONLY(SetFixPipeConfig)
ASC_TWIN_CUBE_ONLY(SetFixpipeNz2ndFlag)
ASC_TWIN_CUBE_ONLY(SetFixpipePreQuantFlag)
ASC_TWIN_CUBE_ONLY(BroadCastVecToMM)
ASC_TWIN_CUBE_ONLY(InitConstValue)
ASC_TWIN_CUBE_ONLY(Gemm)
ASC_TWIN_CUBE_ONLY(Conv2D)
ASC_TWIN_CUBE_ONLY(GetGemmTiling)

template <typename... T> class Matmul {
    static_assert(asc_twin::always_false<T...>,
                  "Matmul is a cube-unit (AIC) high-level API: the aiv-comm twin models AIV vector cores only");
};
} // namespace AscendC

#define REGIST_MATMUL_OBJ(...)                                                                                        \
    static_assert(asc_twin::always_false<>, "REGIST_MATMUL_OBJ: Matmul is a cube-unit (AIC) API: the aiv-comm twin "  \
                                            "models AIV vector cores only")

#undef ASC_TWIN_CUBE_ONLY

#endif
