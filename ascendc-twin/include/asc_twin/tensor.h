/*
 * LocalTensor (a view of the core's Unified Buffer) and GlobalTensor (a view of GM).
 */
#ifndef ASC_TWIN_TENSOR_H
#define ASC_TWIN_TENSOR_H

#include "enums.h"

namespace AscendC {
template <typename T> class LocalTensor;
}

namespace asc_twin {
namespace vec {
/* The `dst = a op b` operators of LocalTensor: the expression, evaluated by the assignment
 * (vec_elementwise.h, vec_cmpsel.h). */
enum class ExprOp { ADD, SUB, MUL, DIV, AND, OR };
template <typename T> struct Expr {
    ExprOp op;
    const AscendC::LocalTensor<T> *a;
    const AscendC::LocalTensor<T> *b;
};
template <typename T> struct CmpExpr {
    AscendC::CMPMODE mode;
    const AscendC::LocalTensor<T> *a;
    const AscendC::LocalTensor<T> *b;
};
template <typename T> void EvalExpr(const AscendC::LocalTensor<T> &dst, const Expr<T> &e);
template <typename D, typename T> void EvalCmp(const AscendC::LocalTensor<D> &dst, const CmpExpr<T> &e);
} // namespace vec

/* The twin's own access to tensors (not an AscendC API). */
struct Access {
    template <typename T> static T *Ptr(const AscendC::LocalTensor<T> &t) { return t.addr_; }
    template <typename T>
    static AscendC::LocalTensor<T> Make(T *addr, uint32_t size, AscendC::TPosition pos, int32_t *tag)
    {
        return AscendC::LocalTensor<T>(RawTag{}, addr, size, pos, tag);
    }
};

/* Bits of one element of T in a tensor (int4b_t: 4, two to a byte). */
template <typename T> constexpr uint64_t ElemBits() { return std::is_same<T, AscendC::int4b_t>::value ? 4 : 8 * sizeof(T); }
/* Bytes that `n` elements of T occupy (rounded up). */
template <typename T> constexpr uint64_t ElemBytes(uint64_t n) { return (n * ElemBits<T>() + 7) / 8; }

inline uint8_t *UbBase()
{
    uint8_t *base = nullptr;
    uint64_t cap = 0;
    asc_twin_check(asc_twin_ub_arena(&base, &cap));
    return base;
}
} // namespace asc_twin

namespace AscendC {

template <typename T> class LocalTensor {
public:
    using PrimType = T;
    __aicore__ inline LocalTensor() : addr_(nullptr), size_(0), pos_(TPosition::VECCALC), tag_(nullptr) {}
    /* A tensor at UB byte address `addr` of `tileSize` elements (the NPU form: UB addresses
     * start at 0). */
    __aicore__ inline LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize)
        : addr_(reinterpret_cast<T *>(asc_twin::UbBase() + addr)), size_(tileSize), pos_(pos), tag_(nullptr)
    {
    }
    __aicore__ inline explicit LocalTensor(uint32_t addr)
        : addr_(reinterpret_cast<T *>(asc_twin::UbBase() + addr)), size_(0), pos_(TPosition::VECCALC), tag_(nullptr)
    {
    }

    __aicore__ inline PrimType GetValue(const uint32_t index) const
    {
        CheckIndex(index);
        if constexpr (std::is_same<T, int4b_t>::value) {
            const uint8_t *b = reinterpret_cast<const uint8_t *>(addr_) + index / 2;
            asc_twin_check(asc_twin_ub_access(ASC_TWIN_UB_SCALAR_READ, b, 1));
            return int4b_t((index % 2) ? (*b >> 4) : (*b & 0xf));
        }
        asc_twin_check(asc_twin_ub_access(ASC_TWIN_UB_SCALAR_READ, reinterpret_cast<const uint8_t *>(addr_ + index), sizeof(T)));
        return addr_[index];
    }
    template <typename S> __aicore__ inline void SetValue(const uint32_t index, const S value) const
    {
        CheckIndex(index);
        const T v = static_cast<T>(value);
        if constexpr (std::is_same<T, int4b_t>::value) {
            /* One nibble: the store writes its byte with the other nibble kept. */
            uint8_t *b = reinterpret_cast<uint8_t *>(addr_) + index / 2;
            /* (A read of the byte first: the store keeps the other nibble.) */
            asc_twin_check(asc_twin_ub_access(ASC_TWIN_UB_SCALAR_READ, b, 1));
            const uint8_t n = static_cast<uint8_t>(v.v) & 0xf;
            const uint8_t nb = (index % 2) ? static_cast<uint8_t>((*b & 0x0f) | (n << 4))
                                           : static_cast<uint8_t>((*b & 0xf0) | n);
            asc_twin_check(asc_twin_ub_store(b, &nb, 1));
            *b = nb;
            return;
        }
        asc_twin_check(asc_twin_ub_store(reinterpret_cast<const uint8_t *>(addr_ + index), &v, sizeof(T)));
        addr_[index] = v;
    }
    __aicore__ inline LocalTensor operator[](const uint32_t offset) const
    {
        if (offset > size_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "LocalTensor offset past the end of its buffer",
                                         offset, size_));
        }
        if constexpr (std::is_same<T, int4b_t>::value) {
            if (offset % 2 != 0) {
                asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX,
                                             "LocalTensor<int4b_t> offset is odd: a tensor must start at a byte",
                                             offset, 0));
            }
            return LocalTensor(asc_twin::RawTag{}, reinterpret_cast<T *>(reinterpret_cast<uint8_t *>(addr_) + offset / 2),
                               size_ - offset, pos_, tag_);
        }
        return LocalTensor(asc_twin::RawTag{}, addr_ + offset, size_ - offset, pos_, tag_);
    }
    template <typename U> __aicore__ inline LocalTensor<U> ReinterpretCast() const
    {
        return asc_twin::Access::Make<U>(reinterpret_cast<U *>(addr_),
                                         static_cast<uint32_t>((static_cast<uint64_t>(size_) * asc_twin::ElemBits<T>()) /
                                                               asc_twin::ElemBits<U>()),
                                         pos_, tag_);
    }
    /* UB byte address (offset from the start of the core's Unified Buffer), as on the NPU. */
    __aicore__ inline uint64_t GetPhyAddr() const
    {
        return static_cast<uint64_t>(reinterpret_cast<uint8_t *>(addr_) - asc_twin::UbBase());
    }
    __aicore__ inline uint64_t GetPhyAddr(const uint32_t offset) const
    {
        return GetPhyAddr() + static_cast<uint64_t>(offset) * asc_twin::ElemBits<T>() / 8;
    }
    /* Elements. */
    __aicore__ inline uint32_t GetSize() const { return size_; }
    __aicore__ inline void SetSize(const uint32_t size) { size_ = size; }
    /* Bytes (deprecated in AscendC, still used). */
    __aicore__ inline uint32_t GetLength() const { return static_cast<uint32_t>(asc_twin::ElemBytes<T>(size_)); }
    __aicore__ inline void SetBufferLen(uint32_t dataLen)
    {
        size_ = static_cast<uint32_t>(static_cast<uint64_t>(dataLen) * 8 / asc_twin::ElemBits<T>());
    }
    __aicore__ inline int32_t GetPosition() const { return static_cast<int32_t>(pos_); }
    /* The user tag of the tensor's queue buffer (shared by every tensor of that buffer). */
    __aicore__ inline void SetUserTag(const int32_t tag)
    {
        if (tag_ == nullptr) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX,
                                         "SetUserTag on a LocalTensor without a queue buffer (AscendC needs its "
                                         "buffer handle)",
                                         0, 0));
        }
        *tag_ = tag;
    }
    __aicore__ inline int32_t GetUserTag() const
    {
        if (tag_ == nullptr) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX,
                                         "GetUserTag on a LocalTensor without a queue buffer (AscendC needs its "
                                         "buffer handle)",
                                         0, 0));
        }
        return *tag_;
    }

    /* `dst = a + b` and the other operators: element-wise over dst.GetSize() elements
     * (comparisons: over a.GetSize()), as AscendC's. Use them as one full expression. */
    __aicore__ inline asc_twin::vec::Expr<T> operator+(const LocalTensor &b) const
    {
        static_assert(Std::is_one_of_v<T, int16_t, half, int32_t, float>,
                      "LocalTensor operator+ on Atlas A2 supports int16_t, half, int32_t and float");
        return Mk(asc_twin::vec::ExprOp::ADD, b);
    }
    __aicore__ inline asc_twin::vec::Expr<T> operator-(const LocalTensor &b) const
    {
        static_assert(Std::is_one_of_v<T, int16_t, half, int32_t, float>,
                      "LocalTensor operator- on Atlas A2 supports int16_t, half, int32_t and float");
        return Mk(asc_twin::vec::ExprOp::SUB, b);
    }
    __aicore__ inline asc_twin::vec::Expr<T> operator*(const LocalTensor &b) const
    {
        static_assert(Std::is_one_of_v<T, int16_t, half, int32_t, float>,
                      "LocalTensor operator* on Atlas A2 supports int16_t, half, int32_t and float");
        return Mk(asc_twin::vec::ExprOp::MUL, b);
    }
    __aicore__ inline asc_twin::vec::Expr<T> operator/(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor operator/ (Div) on Atlas A2 supports half and float");
        return Mk(asc_twin::vec::ExprOp::DIV, b);
    }
    __aicore__ inline asc_twin::vec::Expr<T> operator&(const LocalTensor &b) const
    {
        static_assert(Std::is_one_of_v<T, int16_t, uint16_t, int32_t, uint32_t>,
                      "LocalTensor operator& (And) on Atlas A2 supports 16- and 32-bit integers");
        return Mk(asc_twin::vec::ExprOp::AND, b);
    }
    __aicore__ inline asc_twin::vec::Expr<T> operator|(const LocalTensor &b) const
    {
        static_assert(Std::is_one_of_v<T, int16_t, uint16_t, int32_t, uint32_t>,
                      "LocalTensor operator| (Or) on Atlas A2 supports 16- and 32-bit integers");
        return Mk(asc_twin::vec::ExprOp::OR, b);
    }
    __aicore__ inline asc_twin::vec::CmpExpr<T> operator<(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor comparison operators on Atlas A2 support half and float");
        return Cm(CMPMODE::LT, b);
    }
    __aicore__ inline asc_twin::vec::CmpExpr<T> operator>(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor comparison operators on Atlas A2 support half and float");
        return Cm(CMPMODE::GT, b);
    }
    __aicore__ inline asc_twin::vec::CmpExpr<T> operator==(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor comparison operators on Atlas A2 support half and float");
        return Cm(CMPMODE::EQ, b);
    }
    __aicore__ inline asc_twin::vec::CmpExpr<T> operator<=(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor comparison operators on Atlas A2 support half and float");
        return Cm(CMPMODE::LE, b);
    }
    __aicore__ inline asc_twin::vec::CmpExpr<T> operator>=(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor comparison operators on Atlas A2 support half and float");
        return Cm(CMPMODE::GE, b);
    }
    __aicore__ inline asc_twin::vec::CmpExpr<T> operator!=(const LocalTensor &b) const
    {
        static_assert(std::is_same<T, half>::value || std::is_same<T, float>::value,
                      "LocalTensor comparison operators on Atlas A2 support half and float");
        return Cm(CMPMODE::NE, b);
    }
    __aicore__ inline void operator=(const asc_twin::vec::Expr<T> &e) const { asc_twin::vec::EvalExpr(*this, e); }
    template <typename S> __aicore__ inline void operator=(const asc_twin::vec::CmpExpr<S> &e) const
    {
        asc_twin::vec::EvalCmp(*this, e);
    }
    LocalTensor(const LocalTensor &) = default;
    LocalTensor &operator=(const LocalTensor &) = default;

private:
    asc_twin::vec::Expr<T> Mk(asc_twin::vec::ExprOp op, const LocalTensor &b) const { return {op, this, &b}; }
    asc_twin::vec::CmpExpr<T> Cm(CMPMODE mode, const LocalTensor &b) const { return {mode, this, &b}; }
    friend struct asc_twin::Access;
    template <typename U> friend class LocalTensor;
    LocalTensor(asc_twin::RawTag, T *addr, uint32_t size, TPosition pos, int32_t *tag)
        : addr_(addr), size_(size), pos_(pos), tag_(tag)
    {
    }
    void CheckIndex(uint32_t index) const
    {
        if (index >= size_) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_LOCAL_INDEX, "LocalTensor element index out of its buffer",
                                         index, size_));
        }
    }
    T *addr_;
    uint32_t size_;
    TPosition pos_;
    int32_t *tag_;
};

template <typename T> class GlobalTensor {
public:
    using PrimType = T;
    __aicore__ inline GlobalTensor() : addr_(nullptr), size_(0) {}
    __aicore__ inline void SetGlobalBuffer(__gm__ PrimType *buffer, uint64_t bufferSize)
    {
        addr_ = buffer;
        size_ = bufferSize;
    }
    __aicore__ inline void SetGlobalBuffer(__gm__ PrimType *buffer)
    {
        addr_ = buffer;
        size_ = 0;
    }
    __aicore__ inline const __gm__ PrimType *GetPhyAddr() const { return addr_; }
    __aicore__ inline __gm__ PrimType *GetPhyAddr(const uint64_t offset) const { return addr_ + offset; }
    __aicore__ inline PrimType GetValue(const uint64_t offset) const
    {
        T value;
        asc_twin_check(asc_twin_gm_scalar(ASC_TWIN_LOAD, reinterpret_cast<uint8_t *>(addr_ + offset), &value, sizeof(T)));
        return value;
    }
    __aicore__ inline void SetValue(const uint64_t offset, PrimType value)
    {
        asc_twin_check(asc_twin_gm_scalar(ASC_TWIN_STORE, reinterpret_cast<uint8_t *>(addr_ + offset), &value, sizeof(T)));
    }
    __aicore__ inline GlobalTensor operator[](const uint64_t offset) const
    {
        GlobalTensor t;
        t.addr_ = addr_ + offset;
        t.size_ = size_;
        return t;
    }
    __aicore__ inline uint64_t GetSize() const { return size_; }
    /* An L2 cache hint for the DMA of this tensor: performance only, no effect on data (the
     * twin has no L2). */
    template <CacheRwMode rwMode = CacheRwMode::RW> __aicore__ inline void SetL2CacheHint(CacheMode mode)
    {
        (void)mode;
    }

private:
    T *addr_;
    uint64_t size_;
};

} // namespace AscendC

#endif
