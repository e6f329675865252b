/*
 * kernel_operator_list_tensor_intf.h for the aiv-comm CPU twin: ListTensorDesc and TensorDesc,
 * which read a list of tensors (data pointers and shapes) that the host laid out in GM.
 *
 * The layout, in 64-bit words from `data` (the docs' figure of it is not in the docs snapshot;
 * these are the facts of the public sample list_tensor_desc_input and AscendC's behaviour):
 *   word 0                     ptrOffset: bytes from `data` to the data pointers
 *   then one descriptor per tensor, all of the same dim:
 *     header                   dim (low 32 bits) | index of the tensor (high 32 bits)
 *     dim words                the shape
 *   (a list without shapes: one descriptor of 2 words, header dim 0 and 0xffffffff, ptrOffset 24)
 *   at ptrOffset               one data pointer per tensor
 * The tensor count is the high 32 bits of the first header if not 0 (the first index is 0
 * otherwise), else the last descriptor's index + 1, and must match ptrOffset. Every word is
 * read with the twin's checked scalar GM load, so a list outside GM is reported as such.
 */
#ifndef ASC_TWIN_KERNEL_OPERATOR_LIST_TENSOR_INTF_H
#define ASC_TWIN_KERNEL_OPERATOR_LIST_TENSOR_INTF_H

#include "kernel_operator.h"

namespace asc_twin {
inline uint64_t ListWord(const __gm__ uint64_t *p)
{
    uint64_t v = 0;
    asc_twin_check(asc_twin_gm_scalar(ASC_TWIN_LOAD, reinterpret_cast<uint8_t *>(const_cast<uint64_t *>(p)), &v,
                                      sizeof(v)));
    return v;
}
inline void ListFail(const char *what, uint64_t value, uint64_t limit)
{
    asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LIST_TENSOR, what, value, limit));
}
} // namespace asc_twin

namespace AscendC {

class ListTensorDesc;

/* One tensor of a ListTensorDesc (GetDesc fills it); its shape goes where SetShapeAddr says. */
template <class T> class TensorDesc {
public:
    __aicore__ inline TensorDesc() {}
    __aicore__ inline ~TensorDesc() {}
    __aicore__ inline void SetShapeAddr(uint64_t *shapePtr)
    {
        if (shapePtr == nullptr) {
            asc_twin::ListFail("TensorDesc::SetShapeAddr with a null address", 0, 0);
        }
        shape_ = shapePtr;
    }
    __aicore__ inline uint64_t GetDim() { return dim_; }
    __aicore__ inline uint64_t GetIndex() { return index_; }
    __aicore__ inline uint64_t GetShape(uint32_t offset)
    {
        if (offset >= dim_ || shape_ == nullptr) {
            asc_twin::ListFail("TensorDesc::GetShape: offset not below the tensor's dim", offset, dim_);
        }
        return shape_[offset];
    }
    __aicore__ inline __gm__ T *GetDataPtr() { return ptr_; }
    /* A GlobalTensor over the data. Its buffer size is AscendC's: sizeof(T) times the shape's
     * product (bytes, where SetGlobalBuffer takes elements; the docs do not say). */
    __aicore__ inline GlobalTensor<T> GetDataObj()
    {
        uint64_t size = sizeof(T);
        for (uint32_t i = 0; i < dim_; i++) {
            size *= shape_[i];
        }
        GlobalTensor<T> obj;
        obj.SetGlobalBuffer(ptr_, size);
        return obj;
    }

private:
    friend class ListTensorDesc;
    uint32_t dim_ = 0;
    uint32_t index_ = 0;
    uint64_t *shape_ = nullptr;
    __gm__ T *ptr_ = nullptr;
};

/* Reads the layout above from `data` (length, in bytes, and shapeSize, the tensor count, are
 * checked when both are given). */
class ListTensorDesc {
public:
    __aicore__ inline ListTensorDesc() {}
    __aicore__ inline ~ListTensorDesc() {}
    __aicore__ inline ListTensorDesc(__gm__ void *data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff)
    {
        Init(data, length, shapeSize);
    }
    __aicore__ inline void Init(__gm__ void *data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff)
    {
        if (data == nullptr) {
            asc_twin::ListFail("ListTensorDesc of a null address", 0, 0);
        }
        base_ = reinterpret_cast<__gm__ uint64_t *>(data);
        const uint64_t ptrOffset = asc_twin::ListWord(base_);
        if (ptrOffset % sizeof(uint64_t) != 0 || ptrOffset < 3 * sizeof(uint64_t)) {
            asc_twin::ListFail("ListTensorDesc: the data pointers' offset (word 0) is not a multiple of 8 of at least 24",
                               ptrOffset, 3 * sizeof(uint64_t));
        }
        ptrs_ = base_ + ptrOffset / sizeof(uint64_t);
        const uint64_t head = asc_twin::ListWord(base_ + 1);
        dim_ = static_cast<uint32_t>(head & 0xffffffffu);
        descWords_ = dim_ == 0 ? 2 : 1 + dim_;
        const uint32_t first = static_cast<uint32_t>(head >> 32);
        count_ = first != 0 ? first : static_cast<uint32_t>(asc_twin::ListWord(ptrs_ - descWords_) >> 32) + 1;
        const uint64_t descBytes = ptrOffset - sizeof(uint64_t);
        if (dim_ != 0) {
            if (descBytes % (descWords_ * sizeof(uint64_t)) != 0 ||
                count_ != descBytes / (descWords_ * sizeof(uint64_t))) {
                asc_twin::ListFail("ListTensorDesc: the tensor count does not match the descriptors before the data "
                                   "pointers",
                                   count_, descBytes / (descWords_ * sizeof(uint64_t)));
            }
        } else if (asc_twin::ListWord(base_ + 2) != 0xffffffffu || ptrOffset != 3 * sizeof(uint64_t)) {
            asc_twin::ListFail("ListTensorDesc: a list without shapes has one descriptor (dim 0, 0xffffffff) and "
                               "its data pointers at byte 24",
                               ptrOffset, 3 * sizeof(uint64_t));
        }
        if (length != 0xffffffffu && shapeSize != 0xffffffffu) {
            if (count_ != shapeSize) {
                asc_twin::ListFail("ListTensorDesc: the tensor count is not shapeSize", count_, shapeSize);
            }
            if (length != ptrOffset + static_cast<uint64_t>(count_) * sizeof(uint64_t)) {
                asc_twin::ListFail("ListTensorDesc: length is not the layout's bytes",
                                   length, ptrOffset + static_cast<uint64_t>(count_) * sizeof(uint64_t));
            }
        }
    }
    /* The tensor at `index`: dim, index, data pointer, and its shape written to desc's shape
     * address (SetShapeAddr first). */
    template <class T> __aicore__ inline void GetDesc(TensorDesc<T> &desc, uint32_t index)
    {
        Check(index);
        if (dim_ == 0) {
            asc_twin::ListFail("ListTensorDesc::GetDesc on a list without shapes (dim 0)", index, 0);
        }
        if (desc.shape_ == nullptr) {
            asc_twin::ListFail("ListTensorDesc::GetDesc before TensorDesc::SetShapeAddr", index, 0);
        }
        desc.dim_ = dim_;
        desc.index_ = index;
        desc.ptr_ = GetDataPtr<T>(index);
        const __gm__ uint64_t *shape = base_ + 1 + static_cast<uint64_t>(index) * descWords_ + 1;
        for (uint32_t i = 0; i < dim_; i++) {
            desc.shape_[i] = asc_twin::ListWord(shape + i);
        }
    }
    template <class T> __aicore__ inline __gm__ T *GetDataPtr(uint32_t index)
    {
        Check(index);
        return reinterpret_cast<__gm__ T *>(static_cast<uintptr_t>(asc_twin::ListWord(ptrs_ + index)));
    }
    __aicore__ inline uint32_t GetSize() { return count_; }

private:
    void Check(uint32_t index) const
    {
        if (base_ == nullptr) {
            asc_twin::ListFail("ListTensorDesc used before Init", index, 0);
        }
        if (index >= count_) {
            asc_twin::ListFail("ListTensorDesc: index not below the tensor count", index, count_);
        }
    }
    __gm__ uint64_t *base_ = nullptr;
    __gm__ uint64_t *ptrs_ = nullptr;
    uint32_t dim_ = 0;
    uint32_t descWords_ = 0;
    uint32_t count_ = 0;
};

} // namespace AscendC

#endif
