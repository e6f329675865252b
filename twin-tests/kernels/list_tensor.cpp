/*
 * Kernel for ListTensorDesc / TensorDesc: `list_tensor` reads the list at `list` (length and
 * shapeSize from the args, 0xffffffff: not given) and writes to `out` (uint64 words): the
 * tensor count, then per tensor its index, dim, the first element of its data (a float, read
 * through GetDataObj) and its shape (`maxDim` words, 0 past dim). With `misuse` set it makes one
 * wrong call instead (see ListMisuse).
 */
// kernels: list_tensor
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"

using namespace AscendC;

enum ListMisuse : uint32_t {
    NONE = 0,
    INDEX_PAST_COUNT = 1,  /* GetDataPtr(GetSize()) */
    NO_SHAPE_ADDR = 2,     /* GetDesc without SetShapeAddr */
    SHAPE_PAST_DIM = 3,    /* GetShape(dim) */
};

struct ListArgs {
    uint32_t length;
    uint32_t shapeSize;
    uint32_t maxDim; /* at most 8 */
    uint32_t misuse;
    uint32_t withShapes; /* 0: GetDataPtr only (a list without shapes) */
};

extern "C" __global__ __aicore__ void list_tensor(GM_ADDR list, GM_ADDR out, ListArgs a)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<uint64_t> outGm;
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t *>(out));
    ListTensorDesc l;
    l.Init(reinterpret_cast<__gm__ void *>(list), a.length, a.shapeSize);
    const uint32_t n = l.GetSize();
    outGm.SetValue(0, n);
    if (a.misuse == INDEX_PAST_COUNT) {
        (void)l.GetDataPtr<float>(n);
    }
    uint64_t shape[8] = {};
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t at = 1 + static_cast<uint64_t>(i) * (3 + a.maxDim);
        TensorDesc<float> d;
        if (a.withShapes == 0) {
            GlobalTensor<float> g;
            g.SetGlobalBuffer(l.GetDataPtr<float>(i));
            outGm.SetValue(at, i);
            outGm.SetValue(at + 1, 0);
            outGm.SetValue(at + 2, static_cast<uint64_t>(g.GetValue(0)));
            continue;
        }
        if (a.misuse != NO_SHAPE_ADDR) {
            d.SetShapeAddr(shape);
        }
        l.GetDesc(d, i);
        if (d.GetDataPtr() != l.GetDataPtr<float>(i)) {
            outGm.SetValue(at, 0xdead);
            continue;
        }
        outGm.SetValue(at, d.GetIndex());
        outGm.SetValue(at + 1, d.GetDim());
        outGm.SetValue(at + 2, static_cast<uint64_t>(d.GetDataObj().GetValue(0)));
        for (uint32_t k = 0; k < a.maxDim; k++) {
            outGm.SetValue(at + 3 + k, k < d.GetDim() ? d.GetShape(k) : 0);
        }
        if (a.misuse == SHAPE_PAST_DIM) {
            (void)d.GetShape(static_cast<uint32_t>(d.GetDim()));
        }
    }
}
