// kernels: aiv_vec_selftest
// auto_sync: off
/*
 * aiv_vec_selftest: one AscendC vector instruction, chosen by AivVecTestArgs (op, form, types,
 * mask, repeat and strides), on five 32 KiB UB regions loaded from GM (sources 0..2, the
 * destination with its initial bytes, a work buffer) and stored back. tests/twin/vector.rs computes
 * the same instruction on the host, independently, and compares the bytes. Written against the
 * public AscendC API only.
 */
#include "kernel_operator.h"
#include "selftest_args.h"

using namespace AscendC;

namespace {

constexpr uint32_t R = AIV_VEC_REGION_BYTES;
using Args = __gm__ const AivVecTestArgs;

template <typename T, typename... U> constexpr bool OneOf() { return (std::is_same<T, U>::value || ...); }
template <typename T> constexpr bool Arith() { return OneOf<T, int16_t, half, int32_t, float>(); }
template <typename T> constexpr bool Flt() { return OneOf<T, half, float>(); }
template <typename T> constexpr bool Logic() { return OneOf<T, int16_t, uint16_t>(); }

/* Region i of the UB, as T elements. */
template <typename T> __aicore__ inline LocalTensor<T> Region(const LocalTensor<uint8_t> &ub, uint32_t i)
{
    LocalTensor<T> t = ub[i * R].ReinterpretCast<T>();
    t.SetSize(R / sizeof(T));
    return t;
}

template <typename T> __aicore__ inline T Scalar(Args *a)
{
    T v;
    const uint64_t bits = a->scalar;
    static_assert(sizeof(T) <= sizeof(bits), "scalar");
    __builtin_memcpy(&v, &bits, sizeof(T));
    return v;
}

__aicore__ inline BinaryRepeatParams Bp(Args *a)
{
    return BinaryRepeatParams(static_cast<uint8_t>(a->blk[0]), static_cast<uint8_t>(a->blk[1]),
                              static_cast<uint8_t>(a->blk[2]), static_cast<uint8_t>(a->rep[0]),
                              static_cast<uint8_t>(a->rep[1]), static_cast<uint8_t>(a->rep[2]));
}
__aicore__ inline UnaryRepeatParams Up(Args *a)
{
    return UnaryRepeatParams(static_cast<uint16_t>(a->blk[0]), static_cast<uint16_t>(a->blk[1]),
                             static_cast<uint8_t>(a->rep[0]), static_cast<uint8_t>(a->rep[1]));
}

/* The five ways of issuing a level-2 / level-0 instruction; the variadic arguments are the
 * leading operands. */
#define AIV_FORMS(FN, T, PARAMS, ...)                                                                                 \
    do {                                                                                                              \
        uint64_t m_[2] = {a->mask[0], a->mask[1]};                                                                    \
        const uint64_t m0_ = a->mask[0];                                                                              \
        const int32_t cnt_ = a->count;                                                                                \
        const uint8_t rep_ = static_cast<uint8_t>(a->repeat);                                                         \
        switch (a->form) {                                                                                            \
        case AIV_VEC_LEVEL2:                                                                                          \
            FN(__VA_ARGS__, cnt_);                                                                                    \
            break;                                                                                                    \
        case AIV_VEC_BITS:                                                                                            \
            FN(__VA_ARGS__, m_, rep_, PARAMS);                                                                        \
            break;                                                                                                    \
        case AIV_VEC_CONT:                                                                                            \
            FN(__VA_ARGS__, m0_, rep_, PARAMS);                                                                       \
            break;                                                                                                    \
        case AIV_VEC_COUNTER:                                                                                         \
            SetMaskCount();                                                                                           \
            SetVectorMask<T, MaskMode::COUNTER>(cnt_);                                                                \
            FN<T, false>(__VA_ARGS__, MASK_PLACEHOLDER, 1, PARAMS);                                                   \
            SetMaskNorm();                                                                                            \
            ResetMask();                                                                                              \
            break;                                                                                                    \
        case AIV_VEC_NORM_REG:                                                                                        \
            SetVectorMask<T>(m_[1], m_[0]);                                                                           \
            FN<T, false>(__VA_ARGS__, MASK_PLACEHOLDER, rep_, PARAMS);                                                \
            ResetMask();                                                                                              \
            break;                                                                                                    \
        case AIV_VEC_COUNTER_BITS:                                                                                    \
            SetMaskCount();                                                                                           \
            FN(__VA_ARGS__, m_, 1, PARAMS);                                                                           \
            SetMaskNorm();                                                                                            \
            ResetMask();                                                                                              \
            break;                                                                                                    \
        case AIV_VEC_COUNTER_CONT:                                                                                    \
            SetMaskCount();                                                                                           \
            FN(__VA_ARGS__, m0_, 1, PARAMS);                                                                          \
            SetMaskNorm();                                                                                            \
            ResetMask();                                                                                              \
            break;                                                                                                    \
        default:                                                                                                      \
            break;                                                                                                    \
        }                                                                                                             \
    } while (0)

template <typename T> __aicore__ inline void Elementwise(Args *a, const LocalTensor<uint8_t> &ub)
{
    LocalTensor<T> d = Region<T>(ub, 3);
    LocalTensor<T> s0 = Region<T>(ub, 0);
    LocalTensor<T> s1 = Region<T>(ub, 1);
    const BinaryRepeatParams bp = Bp(a);
    const UnaryRepeatParams up = Up(a);
    const T s = Scalar<T>(a);
    if (a->form == AIV_VEC_OPERATOR) {
        d.SetSize(static_cast<uint32_t>(a->count));
    }
    switch (a->op) {
    case AIV_VEC_ADD:
        if constexpr (Arith<T>()) {
            if (a->form == AIV_VEC_OPERATOR) {
                d = s0 + s1;
            } else {
                AIV_FORMS(Add, T, bp, d, s0, s1);
            }
        }
        break;
    case AIV_VEC_SUB:
        if constexpr (Arith<T>()) {
            if (a->form == AIV_VEC_OPERATOR) {
                d = s0 - s1;
            } else {
                AIV_FORMS(Sub, T, bp, d, s0, s1);
            }
        }
        break;
    case AIV_VEC_MUL:
        if constexpr (Arith<T>()) {
            if (a->form == AIV_VEC_OPERATOR) {
                d = s0 * s1;
            } else {
                AIV_FORMS(Mul, T, bp, d, s0, s1);
            }
        }
        break;
    case AIV_VEC_DIV:
        if constexpr (Flt<T>()) {
            if (a->form == AIV_VEC_OPERATOR) {
                d = s0 / s1;
            } else {
                AIV_FORMS(Div, T, bp, d, s0, s1);
            }
        }
        break;
    case AIV_VEC_MAX:
        if constexpr (Arith<T>()) {
            AIV_FORMS(Max, T, bp, d, s0, s1);
        }
        break;
    case AIV_VEC_MIN:
        if constexpr (Arith<T>()) {
            AIV_FORMS(Min, T, bp, d, s0, s1);
        }
        break;
    case AIV_VEC_AND:
        if constexpr (Logic<T>()) {
            if (a->form == AIV_VEC_OPERATOR) {
                d = s0 & s1;
            } else {
                AIV_FORMS(And, T, bp, d, s0, s1);
            }
        }
        break;
    case AIV_VEC_OR:
        if constexpr (Logic<T>()) {
            if (a->form == AIV_VEC_OPERATOR) {
                d = s0 | s1;
            } else {
                AIV_FORMS(Or, T, bp, d, s0, s1);
            }
        }
        break;
    case AIV_VEC_ADD_RELU:
        if constexpr (OneOf<T, int16_t, half, float>()) {
            AIV_FORMS(AddRelu, T, bp, d, s0, s1);
        }
        break;
    case AIV_VEC_SUB_RELU:
        if constexpr (OneOf<T, int16_t, half, float>()) {
            AIV_FORMS(SubRelu, T, bp, d, s0, s1);
        }
        break;
    case AIV_VEC_SHIFT_LEFT:
        if constexpr (OneOf<T, int16_t, uint16_t, int32_t, uint32_t>()) {
            AIV_FORMS(ShiftLeft, T, up, d, s0, s);
        }
        break;
    case AIV_VEC_SHIFT_RIGHT:
        if constexpr (OneOf<T, int16_t, uint16_t, int32_t, uint32_t>()) {
            if (a->mode == 1 && a->form == AIV_VEC_BITS) {
                uint64_t m[2] = {a->mask[0], a->mask[1]};
                ShiftRight(d, s0, s, m, static_cast<uint8_t>(a->repeat), up, true);
            } else {
                AIV_FORMS(ShiftRight, T, up, d, s0, s);
            }
        }
        break;
    case AIV_VEC_ADDS:
        if constexpr (Arith<T>()) {
            AIV_FORMS(Adds, T, up, d, s0, s);
        }
        break;
    case AIV_VEC_MULS:
        if constexpr (Arith<T>()) {
            AIV_FORMS(Muls, T, up, d, s0, s);
        }
        break;
    case AIV_VEC_MAXS:
        if constexpr (Arith<T>()) {
            AIV_FORMS(Maxs, T, up, d, s0, s);
        }
        break;
    case AIV_VEC_MINS:
        if constexpr (Arith<T>()) {
            AIV_FORMS(Mins, T, up, d, s0, s);
        }
        break;
    case AIV_VEC_LEAKY_RELU:
        if constexpr (Flt<T>()) {
            AIV_FORMS(LeakyRelu, T, up, d, s0, s);
        }
        break;
    case AIV_VEC_ABS:
        if constexpr (Flt<T>()) {
            AIV_FORMS(Abs, T, up, d, s0);
        }
        break;
    case AIV_VEC_EXP:
        if constexpr (Flt<T>()) {
            AIV_FORMS(Exp, T, up, d, s0);
        }
        break;
    case AIV_VEC_LN:
        if constexpr (Flt<T>()) {
            AIV_FORMS(Ln, T, up, d, s0);
        }
        break;
    case AIV_VEC_SQRT:
        if constexpr (Flt<T>()) {
            AIV_FORMS(Sqrt, T, up, d, s0);
        }
        break;
    case AIV_VEC_RSQRT:
        if constexpr (Flt<T>()) {
            AIV_FORMS(Rsqrt, T, up, d, s0);
        }
        break;
    case AIV_VEC_RECIPROCAL:
        if constexpr (Flt<T>()) {
            AIV_FORMS(Reciprocal, T, up, d, s0);
        }
        break;
    case AIV_VEC_RELU:
        if constexpr (OneOf<T, half, int32_t, float>()) {
            AIV_FORMS(Relu, T, up, d, s0);
        }
        break;
    case AIV_VEC_NOT:
        if constexpr (Logic<T>()) {
            AIV_FORMS(Not, T, up, d, s0);
        }
        break;
    case AIV_VEC_DUPLICATE:
        if constexpr (OneOf<T, half, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t, float>()) {
            uint64_t m[2] = {a->mask[0], a->mask[1]};
            if (a->form == AIV_VEC_LEVEL2) {
                Duplicate(d, s, static_cast<int32_t>(a->count));
            } else if (a->form == AIV_VEC_BITS) {
                Duplicate(d, s, m, static_cast<uint8_t>(a->repeat), static_cast<uint16_t>(a->blk[0]),
                          static_cast<uint8_t>(a->rep[0]));
            } else {
                Duplicate(d, s, a->mask[0], static_cast<uint8_t>(a->repeat), static_cast<uint16_t>(a->blk[0]),
                          static_cast<uint8_t>(a->rep[0]));
            }
        }
        break;
    case AIV_VEC_COPY:
        if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
            const CopyRepeatParams cp(static_cast<uint16_t>(a->blk[0]), static_cast<uint16_t>(a->blk[1]),
                                      static_cast<uint16_t>(a->rep[0]), static_cast<uint16_t>(a->rep[1]));
            uint64_t m[2] = {a->mask[0], a->mask[1]};
            if (a->form == AIV_VEC_BITS) {
                Copy(d, s0, m, static_cast<uint8_t>(a->repeat), cp);
            } else {
                Copy(d, s0, a->mask[0], static_cast<uint8_t>(a->repeat), cp);
            }
        }
        break;
    default:
        break;
    }
}

/* Cast<D, S> with the round mode in a->mode, when Atlas A2 has the pair. */
template <typename D, typename S> __aicore__ inline void CastTo(Args *a, const LocalTensor<uint8_t> &ub)
{
    LocalTensor<D> d = Region<D>(ub, 3);
    LocalTensor<S> s = Region<S>(ub, 0);
    const RoundMode rm = static_cast<RoundMode>(a->mode);
    const UnaryRepeatParams up = Up(a);
    uint64_t m[2] = {a->mask[0], a->mask[1]};
    if (std::is_same<D, half>::value && std::is_same<S, int32_t>::value) {
        half scale;
        const uint16_t bits = static_cast<uint16_t>(a->deq);
        __builtin_memcpy(&scale, &bits, 2);
        SetDeqScale(scale);
    }
    if (a->form == AIV_VEC_LEVEL2) {
        Cast(d, s, rm, static_cast<uint32_t>(a->count));
    } else if (a->form == AIV_VEC_BITS) {
        Cast(d, s, rm, m, static_cast<uint8_t>(a->repeat), up);
    } else {
        Cast(d, s, rm, a->mask[0], static_cast<uint8_t>(a->repeat), up);
    }
}

template <typename S> __aicore__ inline void CastFrom(Args *a, const LocalTensor<uint8_t> &ub)
{
    const uint32_t t = a->dtype2;
    if constexpr (std::is_same<S, float>::value) {
        if (t == AIV_VEC_F16) CastTo<half, float>(a, ub);
        if (t == AIV_VEC_BF16) CastTo<bfloat16_t, float>(a, ub);
        if (t == AIV_VEC_I16) CastTo<int16_t, float>(a, ub);
        if (t == AIV_VEC_I32) CastTo<int32_t, float>(a, ub);
        if (t == AIV_VEC_F32) CastTo<float, float>(a, ub);
        if (t == AIV_VEC_I64) CastTo<int64_t, float>(a, ub);
    } else if constexpr (std::is_same<S, half>::value) {
        if (t == AIV_VEC_F32) CastTo<float, half>(a, ub);
        if (t == AIV_VEC_I8) CastTo<int8_t, half>(a, ub);
        if (t == AIV_VEC_U8) CastTo<uint8_t, half>(a, ub);
        if (t == AIV_VEC_I16) CastTo<int16_t, half>(a, ub);
        if (t == AIV_VEC_I32) CastTo<int32_t, half>(a, ub);
    } else if constexpr (std::is_same<S, bfloat16_t>::value) {
        if (t == AIV_VEC_F32) CastTo<float, bfloat16_t>(a, ub);
        if (t == AIV_VEC_I32) CastTo<int32_t, bfloat16_t>(a, ub);
    } else if constexpr (std::is_same<S, int32_t>::value) {
        if (t == AIV_VEC_F32) CastTo<float, int32_t>(a, ub);
        if (t == AIV_VEC_I16) CastTo<int16_t, int32_t>(a, ub);
        if (t == AIV_VEC_F16) CastTo<half, int32_t>(a, ub);
        if (t == AIV_VEC_I64) CastTo<int64_t, int32_t>(a, ub);
    } else if constexpr (std::is_same<S, int16_t>::value) {
        if (t == AIV_VEC_F16) CastTo<half, int16_t>(a, ub);
        if (t == AIV_VEC_F32) CastTo<float, int16_t>(a, ub);
    } else if constexpr (std::is_same<S, int8_t>::value || std::is_same<S, uint8_t>::value) {
        if (t == AIV_VEC_F16) CastTo<half, S>(a, ub);
    } else if constexpr (std::is_same<S, int64_t>::value) {
        if (t == AIV_VEC_I32) CastTo<int32_t, int64_t>(a, ub);
        if (t == AIV_VEC_F32) CastTo<float, int64_t>(a, ub);
    }
}

template <typename T> __aicore__ inline void CmpSel(Args *a, const LocalTensor<uint8_t> &ub)
{
    LocalTensor<T> s0 = Region<T>(ub, 0);
    LocalTensor<T> s1 = Region<T>(ub, 1);
    LocalTensor<uint8_t> bits = Region<uint8_t>(ub, 2);
    const BinaryRepeatParams bp = Bp(a);
    uint64_t m[2] = {a->mask[0], a->mask[1]};
    if constexpr (OneOf<T, half, float, int32_t>()) {
        LocalTensor<uint8_t> d = Region<uint8_t>(ub, 3);
        const CMPMODE cm = static_cast<CMPMODE>(a->mode);
        if (a->op == AIV_VEC_COMPARE) {
            if (a->form == AIV_VEC_OPERATOR) {
                if constexpr (Flt<T>()) {
                    s0.SetSize(static_cast<uint32_t>(a->count));
                    if (cm == CMPMODE::LT) d = s0 < s1;
                    if (cm == CMPMODE::GT) d = s0 > s1;
                    if (cm == CMPMODE::EQ) d = s0 == s1;
                    if (cm == CMPMODE::LE) d = s0 <= s1;
                    if (cm == CMPMODE::GE) d = s0 >= s1;
                    if (cm == CMPMODE::NE) d = s0 != s1;
                }
            } else if (a->form == AIV_VEC_LEVEL2) {
                Compare(d, s0, s1, cm, static_cast<uint32_t>(a->count));
            } else {
                Compare(d, s0, s1, cm, m, static_cast<uint8_t>(a->repeat), bp);
            }
        }
        if (a->op == AIV_VEC_COMPARES) {
            if (a->form == AIV_VEC_LEVEL2) {
                Compares(d, s0, Scalar<T>(a), cm, static_cast<uint32_t>(a->count));
            } else {
                Compares(d, s0, Scalar<T>(a), cm, m, static_cast<uint8_t>(a->repeat), Up(a));
            }
        }
    }
    if constexpr (Flt<T>()) {
        LocalTensor<T> d = Region<T>(ub, 3);
        const SELMODE sm = static_cast<SELMODE>(a->mode);
        if (a->op == AIV_VEC_SELECT) {
            if (a->form == AIV_VEC_LEVEL2) {
                Select(d, bits, s0, s1, sm, static_cast<uint32_t>(a->count));
            } else if (a->form == AIV_VEC_BITS) {
                Select(d, bits, s0, s1, sm, m, static_cast<uint8_t>(a->repeat), bp);
            } else {
                Select(d, bits, s0, s1, sm, a->mask[0], static_cast<uint8_t>(a->repeat), bp);
            }
        }
        if (a->op == AIV_VEC_SELECT_SCALAR) {
            if (a->form == AIV_VEC_LEVEL2) {
                Select(d, bits, s0, Scalar<T>(a), sm, static_cast<uint32_t>(a->count));
            } else {
                Select(d, bits, s0, Scalar<T>(a), sm, m, static_cast<uint8_t>(a->repeat), bp);
            }
        }
        if (a->op == AIV_VEC_SELECT || a->op == AIV_VEC_SELECT_SCALAR) {
            /* What Select left in CMPMASK, to the work region. */
            GetCmpMask(Region<uint8_t>(ub, 4));
        }
        if (a->op == AIV_VEC_COMPARE_REG) {
            /* Compare into CMPMASK, GetCmpMask to the work region, Select in register mode. */
            Compare(s0, s1, static_cast<CMPMODE>(a->mode), m, bp);
            GetCmpMask(Region<uint8_t>(ub, 4));
            SetVectorMask<T>(a->mask[1], a->mask[0]);
            Select<T, SELMODE::VSEL_CMPMASK_SPR>(d, s0, s1, static_cast<uint8_t>(a->repeat), bp);
            ResetMask();
        }
    }
}

template <typename T> __aicore__ inline void Reduce(Args *a, const LocalTensor<uint8_t> &ub)
{
    if constexpr (Flt<T>()) {
        LocalTensor<T> d = Region<T>(ub, 3);
        LocalTensor<T> s = Region<T>(ub, 0);
        LocalTensor<T> w = Region<T>(ub, 4);
        uint64_t m[2] = {a->mask[0], a->mask[1]};
        const int32_t cm = static_cast<int32_t>(a->mask[0]);
        const int32_t rep = static_cast<int32_t>(a->repeat);
        const bool idx = a->mode != 0;
        const bool bitsForm = a->form == AIV_VEC_BITS;
        const int32_t dr = static_cast<int32_t>(a->rep[0]), sb = static_cast<int32_t>(a->blk[1]),
                      sr = static_cast<int32_t>(a->rep[1]);
        const ReduceOrder order = static_cast<ReduceOrder>(a->mode);
        switch (a->op) {
        case AIV_VEC_REDUCE_SUM:
            if (a->form == AIV_VEC_LEVEL2) {
                ReduceSum(d, s, w, static_cast<int32_t>(a->count));
                if (idx) {
                    /* The sum is also in the accumulator register: read it after V is done. */
                    const TEventID vs = GetTPipePtr()->FetchEventID(HardEvent::V_S);
                    SetFlag<HardEvent::V_S>(vs);
                    WaitFlag<HardEvent::V_S>(vs);
                    d.SetValue(1, GetReduceRepeatSumSpr<T>());
                    const TEventID sm = GetTPipePtr()->FetchEventID(HardEvent::S_MTE3);
                    SetFlag<HardEvent::S_MTE3>(sm);
                    WaitFlag<HardEvent::S_MTE3>(sm);
                }
            } else if (bitsForm) {
                ReduceSum(d, s, w, m, rep, sr);
            } else {
                ReduceSum(d, s, w, cm, rep, sr);
            }
            break;
        case AIV_VEC_REDUCE_MAX:
            if (a->form == AIV_VEC_LEVEL2) {
                ReduceMax(d, s, w, static_cast<int32_t>(a->count), idx);
            } else if (bitsForm) {
                ReduceMax(d, s, w, m, rep, sr, idx);
            } else {
                ReduceMax(d, s, w, cm, rep, sr, idx);
            }
            break;
        case AIV_VEC_REDUCE_MIN:
            if (a->form == AIV_VEC_LEVEL2) {
                ReduceMin(d, s, w, static_cast<int32_t>(a->count), idx);
            } else if (bitsForm) {
                ReduceMin(d, s, w, m, rep, sr, idx);
            } else {
                ReduceMin(d, s, w, cm, rep, sr, idx);
            }
            break;
        case AIV_VEC_WHOLE_SUM:
            if (bitsForm) {
                WholeReduceSum(d, s, m, rep, dr, sb, sr);
            } else {
                WholeReduceSum(d, s, cm, rep, dr, sb, sr);
            }
            break;
        case AIV_VEC_WHOLE_MAX:
            if (bitsForm) {
                WholeReduceMax(d, s, m, rep, dr, sb, sr, order);
            } else {
                WholeReduceMax(d, s, cm, rep, dr, sb, sr, order);
            }
            break;
        case AIV_VEC_WHOLE_MIN:
            if (bitsForm) {
                WholeReduceMin(d, s, m, rep, dr, sb, sr, order);
            } else {
                WholeReduceMin(d, s, cm, rep, dr, sb, sr, order);
            }
            break;
        case AIV_VEC_BLOCK_SUM:
            if (bitsForm) {
                BlockReduceSum(d, s, rep, m, dr, sb, sr);
            } else {
                BlockReduceSum(d, s, rep, cm, dr, sb, sr);
            }
            break;
        case AIV_VEC_BLOCK_MAX:
            if (bitsForm) {
                BlockReduceMax(d, s, rep, m, dr, sb, sr);
            } else {
                BlockReduceMax(d, s, rep, cm, dr, sb, sr);
            }
            break;
        case AIV_VEC_BLOCK_MIN:
            if (bitsForm) {
                BlockReduceMin(d, s, rep, m, dr, sb, sr);
            } else {
                BlockReduceMin(d, s, rep, cm, dr, sb, sr);
            }
            break;
        default:
            break;
        }
    }
}

/* Axpy<D, S>: dst (region 3, D) += scalar * src0 (region 0, S; mode 1: region 3 itself). */
template <typename D, typename S> __aicore__ inline void AxpyAs(Args *a, const LocalTensor<uint8_t> &ub)
{
    LocalTensor<D> d = Region<D>(ub, 3);
    LocalTensor<S> s = a->mode == 1 ? Region<S>(ub, 3) : Region<S>(ub, 0);
    const S k = Scalar<S>(a);
    const UnaryRepeatParams up = Up(a);
    uint64_t m[2] = {a->mask[0], a->mask[1]};
    const uint8_t rep = static_cast<uint8_t>(a->repeat);
    switch (a->form) {
    case AIV_VEC_LEVEL2:
        Axpy(d, s, k, a->count);
        break;
    case AIV_VEC_BITS:
        Axpy(d, s, k, m, rep, up);
        break;
    case AIV_VEC_CONT:
        Axpy(d, s, k, a->mask[0], rep, up);
        break;
    case AIV_VEC_COUNTER:
        SetMaskCount();
        SetVectorMask<D, MaskMode::COUNTER>(a->count);
        Axpy<D, S, false>(d, s, k, MASK_PLACEHOLDER, 1, up);
        SetMaskNorm();
        ResetMask();
        break;
    case AIV_VEC_NORM_REG:
        SetVectorMask<D>(m[1], m[0]);
        Axpy<D, S, false>(d, s, k, MASK_PLACEHOLDER, rep, up);
        ResetMask();
        break;
    default:
        break;
    }
}

/* Brcb and CreateVecIndex into region 3. */
template <typename T> __aicore__ inline void FillOps(Args *a, const LocalTensor<uint8_t> &ub)
{
    LocalTensor<T> d = Region<T>(ub, 3);
    LocalTensor<T> s = Region<T>(ub, 0);
    uint64_t m[2] = {a->mask[0], a->mask[1]};
    const uint8_t rep = static_cast<uint8_t>(a->repeat);
    if (a->op == AIV_VEC_BRCB) {
        if constexpr (OneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>()) {
            if (a->count > 0) {
                s.SetSize(static_cast<uint32_t>(a->count));
            }
            Brcb(d, s, rep, BrcbRepeatParams(static_cast<uint16_t>(a->blk[0]), static_cast<uint16_t>(a->rep[0])));
        }
        return;
    }
    if constexpr (OneOf<T, int16_t, half, int32_t, float>()) {
        LocalTensor<T> dd = a->mode == 1 ? d[1] : d;
        const T first = Scalar<T>(a);
        switch (a->form) {
        case AIV_VEC_LEVEL2:
            CreateVecIndex(dd, first, static_cast<uint32_t>(a->count));
            break;
        case AIV_VEC_BITS:
            CreateVecIndex(dd, first, m, rep, static_cast<uint16_t>(a->blk[0]), static_cast<uint8_t>(a->rep[0]));
            break;
        case AIV_VEC_CONT:
            CreateVecIndex(dd, first, a->mask[0], rep, static_cast<uint16_t>(a->blk[0]),
                           static_cast<uint8_t>(a->rep[0]));
            break;
        case AIV_VEC_COUNTER:
            SetMaskCount();
            CreateVecIndex(dd, first, static_cast<uint32_t>(a->count));
            SetMaskNorm();
            break;
        default:
            break;
        }
    }
}

template <typename T> __aicore__ inline void Typed(Args *a, const LocalTensor<uint8_t> &ub)
{
    const uint32_t op = a->op;
    if (op == AIV_VEC_AXPY) {
        if constexpr (std::is_same<T, half>::value) {
            if (a->dtype2 == AIV_VEC_F32) {
                AxpyAs<float, half>(a, ub);
            } else {
                AxpyAs<half, half>(a, ub);
            }
        } else if constexpr (std::is_same<T, float>::value) {
            AxpyAs<float, float>(a, ub);
        }
    } else if (op == AIV_VEC_BRCB || op == AIV_VEC_CREATE_VEC_INDEX) {
        FillOps<T>(a, ub);
    } else if (op < AIV_VEC_CAST) {
        Elementwise<T>(a, ub);
    } else if (op == AIV_VEC_CAST) {
        CastFrom<T>(a, ub);
    } else if (op < AIV_VEC_REDUCE_SUM) {
        CmpSel<T>(a, ub);
    } else {
        Reduce<T>(a, ub);
    }
}

__aicore__ inline void Dispatch(Args *a, const LocalTensor<uint8_t> &ub)
{
    switch (a->dtype) {
    case AIV_VEC_F32:
        Typed<float>(a, ub);
        break;
    case AIV_VEC_F16:
        Typed<half>(a, ub);
        break;
    case AIV_VEC_I16:
        Typed<int16_t>(a, ub);
        break;
    case AIV_VEC_I32:
        Typed<int32_t>(a, ub);
        break;
    case AIV_VEC_U16:
        Typed<uint16_t>(a, ub);
        break;
    case AIV_VEC_BF16:
        Typed<bfloat16_t>(a, ub);
        break;
    case AIV_VEC_U8:
        Typed<uint8_t>(a, ub);
        break;
    case AIV_VEC_I8:
        Typed<int8_t>(a, ub);
        break;
    case AIV_VEC_I64:
        Typed<int64_t>(a, ub);
        break;
    case AIV_VEC_U32:
        Typed<uint32_t>(a, ub);
        break;
    default:
        break;
    }
}

/* GM -> UB -> Adds -> GM on region 0 -> 3, `count` floats; a->sync drops flags on purpose. */
__aicore__ inline void Pipeline(Args *a, const LocalTensor<uint8_t> &ub)
{
    GlobalTensor<float> in, out;
    in.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(a->in0));
    out.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(a->out));
    LocalTensor<float> s = Region<float>(ub, 0);
    LocalTensor<float> d = Region<float>(ub, 3);
    DataCopy(s, in, static_cast<uint32_t>(a->count));
    if ((a->sync & 1u) == 0) {
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    }
    Adds(d, s, Scalar<float>(a), static_cast<int32_t>(a->count));
    if ((a->sync & 12u) != 0) {
        /* The scalar unit reads a vector result: it must wait for V (bit 2 drops the flag). */
        if ((a->sync & 4u) == 0) {
            SetFlag<HardEvent::V_S>(EVENT_ID0);
            WaitFlag<HardEvent::V_S>(EVENT_ID0);
        }
        const float v = d.GetValue(0);
        d.SetValue(1, v * 10.0f);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    }
    if ((a->sync & 2u) == 0) {
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    }
    DataCopy(out, d, static_cast<uint32_t>(a->count));
}

/* Region 0 -> region 3 with the vector unit (Copy), so the scenario's result is in dst. */
__aicore__ inline void CopyToDst(const LocalTensor<float> &d, const LocalTensor<float> &s)
{
    PipeBarrier<PIPE_V>();
    Copy(d, s, 64, 16, CopyRepeatParams(1, 1, 8, 8));
}

/* AIV_VEC_SCENARIO: sequences of calls whose effect on the vector unit's state is pinned. */
__aicore__ inline void Scenario(Args *a, const LocalTensor<uint8_t> &ub)
{
    LocalTensor<float> s0 = Region<float>(ub, 0);
    LocalTensor<float> s1 = Region<float>(ub, 1);
    LocalTensor<float> d = Region<float>(ub, 3);
    LocalTensor<float> w = Region<float>(ub, 4);
    LocalTensor<uint8_t> bits = Region<uint8_t>(ub, 2);
    const UnaryRepeatParams up;
    switch (a->mode) {
    case 0:
        SetVectorMask<float>(0, 0xF);
        Compare(bits, s0, s1, CMPMODE::LT, 64);
        Adds<float, false>(d, s0, 1.0f, MASK_PLACEHOLDER, 1, up);
        ResetMask();
        break;
    case 1:
        ReduceMax(w, s0, d, 64);
        Adds<float, false>(d, s0, 1.0f, MASK_PLACEHOLDER, 1, up);
        break;
    case 2: {
        ReduceSum(d, s0, w, 100);
        const float v = d.GetValue(0);
        d.SetValue(1, v);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID1);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID1);
        break;
    }
    case 3:
        w.SetSize(R / 4 + 16384);
        Adds(w, w, 1.0f, static_cast<int32_t>(R / 4 + 16384));
        break;
    case 4:
        Adds(s0[8], s0, 1.0f, 64);
        break;
    case 5:
        SetMaskCount();
        SetVectorMask<float>(130);
        break;
    case 6:
        SetVectorMask<float>(200);
        Adds<float, false>(d, s0, 1.0f, MASK_PLACEHOLDER, 1, up);
        ResetMask();
        break;
    case 7: {
        uint64_t m[2] = {144, 0};
        SetMaskCount();
        Copy(d, s0, m, 2, CopyRepeatParams(1, 2, 18, 40));
        SetMaskNorm();
        ResetMask();
        break;
    }
    case 8:
        /* In place, rows interleaved with src1's: no byte is shared, so this is valid. */
        Add(s0, s0, s0[64], 64, 4, BinaryRepeatParams(1, 1, 1, 16, 16, 16));
        CopyToDst(d, s0);
        break;
    case 9:
        /* Even blocks from the odd ones: valid. */
        Adds(s0, s0[8], 1.0f, 64, 1, UnaryRepeatParams(2, 2, 16, 16));
        CopyToDst(d, s0);
        break;
    case 10: {
        /* Level-0 Select in mode 2 under counter mode: refused. */
        uint64_t m[2] = {64, 0};
        SetMaskCount();
        Select(d, bits, s0, s1, SELMODE::VSEL_TENSOR_TENSOR_MODE, m, 1, BinaryRepeatParams());
        SetMaskNorm();
        ResetMask();
        break;
    }
    default:
        break;
    }
}

} // namespace

extern "C" __global__ __aicore__ void aiv_vec_selftest(GM_ADDR args)
{
    Args *a = reinterpret_cast<Args *>(args);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 5 * R);
    LocalTensor<uint8_t> ub = buf.Get<uint8_t>();
    if (a->op == AIV_VEC_PIPELINE) {
        Pipeline(a, ub);
        return;
    }
    const uint64_t src[5] = {a->in0, a->in1, a->in2, a->out, a->work};
    for (uint32_t i = 0; i < 5; i++) {
        GlobalTensor<uint8_t> g;
        g.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(src[i]));
        DataCopy(ub[i * R], g, R);
    }
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    if (a->op == AIV_VEC_SCENARIO) {
        Scenario(a, ub);
    } else {
        Dispatch(a, ub);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    for (uint32_t i = 3; i < 5; i++) {
        GlobalTensor<uint8_t> g;
        g.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(src[i]));
        DataCopy(g, ub[i * R], R);
    }
}
