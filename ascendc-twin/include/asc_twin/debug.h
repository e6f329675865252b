/*
 * Debugging: AscendC::printf / PRINTF, DumpTensor, assert / ascendc_assert.
 *
 * Output goes to the twin's console: each line prefixed `[rank r] [AIV Block b/n] ` (the NPU
 * prefixes `[AIV Block b/n] `; the twin adds the rank), printed when the call runs (the NPU
 * prints after the kernel). A failed assert prints `[ASSERT] file:line: function: Assertion
 * `expr' failed.` (and the message, if any) and ends the block with a named fault, as the NPU
 * traps. `ASCENDC_DUMP=0` or `NDEBUG` compile printf, DumpTensor and assert out, as AscendC's.
 * As with AscendC's own headers, a later #include <cassert> brings the C library's assert back.
 */
#ifndef ASC_TWIN_DEBUG_H
#define ASC_TWIN_DEBUG_H

#include <cassert>
#include <cstdio>
#include <string>

#include "sys_var.h"
#include "tensor.h"

namespace asc_twin {

/* One printf argument as the NPU records it: an 8-byte slot (signed integers as int64,
 * unsigned integers, bool, enums and pointers as uint64, half / bfloat16_t / float as float). */
struct PrintfArg {
    enum Kind { INT, UINT, FLOAT, PTR } kind;
    long long i;
    unsigned long long u;
    double f;
    const void *p;
};

/* Whether the NPU's printf takes an argument of type T (what ToPrintfArg accepts). */
template <typename T> constexpr bool PrintfTakes()
{
    using U = std::decay_t<T>;
    if constexpr (std::is_same<U, double>::value || std::is_same<U, long double>::value) {
        return false;
    } else {
        return std::is_same<U, half>::value || std::is_same<U, bfloat16_t>::value || std::is_same<U, float>::value ||
               std::is_same<U, BlockIdxVar>::value || std::is_same<U, BlockNumVar>::value ||
               std::is_pointer<U>::value || std::is_array<std::remove_reference_t<T>>::value ||
               std::is_enum<U>::value || std::is_integral<U>::value;
    }
}

template <typename T> inline PrintfArg ToPrintfArg(const T &v)
{
    using U = std::decay_t<T>;
    static_assert(!std::is_same<U, double>::value && !std::is_same<U, long double>::value,
                  "AscendC::printf does not take double on the NPU (use float; note that 3.14 is a double literal, "
                  "3.14f a float)");
    PrintfArg a{PrintfArg::INT, 0, 0, 0.0, nullptr};
    if constexpr (std::is_same<U, half>::value || std::is_same<U, bfloat16_t>::value ||
                  std::is_same<U, float>::value) {
        a.kind = PrintfArg::FLOAT;
        a.f = static_cast<double>(static_cast<float>(v));
    } else if constexpr (std::is_same<U, BlockIdxVar>::value || std::is_same<U, BlockNumVar>::value) {
        a.i = static_cast<int64_t>(v);
    } else if constexpr (std::is_pointer<U>::value || std::is_array<std::remove_reference_t<T>>::value) {
        a.kind = PrintfArg::PTR;
        a.p = static_cast<const void *>(v);
        a.u = reinterpret_cast<uintptr_t>(a.p);
    } else if constexpr (std::is_same<U, bool>::value || std::is_enum<U>::value || std::is_unsigned<U>::value) {
        a.kind = PrintfArg::UINT;
        a.u = static_cast<unsigned long long>(v);
    } else {
        static_assert(std::is_integral<U>::value, "AscendC::printf takes integers, floats, half, bfloat16_t and "
                                                  "pointers");
        a.i = static_cast<long long>(v);
    }
    return a;
}

/* Formats as the NPU's printf: the conversions %d %i %u %x %X %f %F %s %p (length modifiers
 * accepted and ignored: every integer is 64-bit, so %x of -1 prints 16 digits as on the NPU)
 * and %%; anything else is refused by name. */
inline std::string FormatPrintf(const char *fmt, const PrintfArg *args, size_t n);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
/* snprintf into a string (the twin's own messages). */
template <typename... A> inline std::string Format(const char *fmt, const A &...args)
{
    const int n = std::snprintf(nullptr, 0, fmt, args...);
    if (n <= 0) {
        return std::string();
    }
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(&out[0], out.size(), fmt, args...);
    out.resize(static_cast<size_t>(n));
    return out;
}
#pragma GCC diagnostic pop

inline void Print(const std::string &text)
{
    asc_twin_check(asc_twin_print(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

[[noreturn]] inline void Fail(const std::string &message)
{
    asc_twin_assert_fail(message.c_str());
    throw AscTwinAbort{};
}
inline void AssertFail(const char *expr, const char *file, int line, const char *func)
{
    Fail(Format("%s:%d: %s: Assertion `%s' failed.", file, line, func, expr));
}
template <typename... A>
inline void AssertFailMsg(const char *expr, const char *file, int line, const char *func, const char *fmt,
                          const A &...args)
{
    const PrintfArg a[sizeof...(A) + 1] = {ToPrintfArg(args)..., PrintfArg{PrintfArg::INT, 0, 0, 0.0, nullptr}};
    Fail(Format("%s:%d: %s: Assertion `%s' failed. ", file, line, func, expr) + FormatPrintf(fmt, a, sizeof...(A)));
}

template <typename T> constexpr const char *DumpTypeName()
{
    if constexpr (std::is_same<T, half>::value) return "float16";
    else if constexpr (std::is_same<T, bfloat16_t>::value) return "bfloat16";
    else if constexpr (std::is_same<T, float>::value) return "float32";
    else if constexpr (std::is_same<T, int8_t>::value) return "int8";
    else if constexpr (std::is_same<T, uint8_t>::value) return "uint8";
    else if constexpr (std::is_same<T, int16_t>::value) return "int16";
    else if constexpr (std::is_same<T, uint16_t>::value) return "uint16";
    else if constexpr (std::is_same<T, int32_t>::value) return "int32";
    else if constexpr (std::is_same<T, uint32_t>::value) return "uint32";
    else if constexpr (std::is_same<T, int64_t>::value) return "int64";
    else if constexpr (std::is_same<T, uint64_t>::value) return "uint64";
    else return "unknown";
}

inline std::string FormatPrintf(const char *fmt, const PrintfArg *args, size_t n)
{
    std::string out;
    size_t next = 0;
    for (const char *c = fmt; *c != '\0'; c++) {
        if (*c != '%') {
            out += *c;
            continue;
        }
        if (c[1] == '%') {
            out += '%';
            c++;
            continue;
        }
        std::string spec = "%";
        const char *q = c + 1;
        while (*q != '\0' && std::strchr("-+ #0123456789.", *q) != nullptr) {
            spec += *q++;
        }
        while (*q != '\0' && std::strchr("hlLqjzt", *q) != nullptr) {
            q++;
        }
        const char conv = *q;
        if (conv == '\0' || std::strchr("diuxXfFsp", conv) == nullptr) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DEBUG,
                                         "printf: a conversion the NPU's printf does not support (it has %d %i %u %x "
                                         "%f %F %s %p and %%)",
                                         static_cast<uint64_t>(static_cast<unsigned char>(conv)), 0));
        }
        if (next >= n) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DEBUG, "printf: more conversions than arguments", next, n));
        }
        const PrintfArg &a = args[next++];
        const bool isInt = a.kind == PrintfArg::INT || a.kind == PrintfArg::UINT;
        const bool ok = (std::strchr("diuxX", conv) != nullptr && isInt) ||
                        ((conv == 'f' || conv == 'F') && a.kind == PrintfArg::FLOAT) ||
                        ((conv == 's' || conv == 'p') && a.kind == PrintfArg::PTR) || (conv == 'p' && isInt);
        if (!ok) {
            asc_twin_check(asc_twin_fail(ASC_TWIN_OP_DEBUG,
                                         "printf: argument does not match its conversion (%d/%i/%u/%x take integers, "
                                         "%f floats, %s a string)",
                                         next - 1, static_cast<uint64_t>(static_cast<unsigned char>(conv))));
        }
        if (conv == 's') {
            out += Format((spec + "s").c_str(), static_cast<const char *>(a.p));
        } else if (conv == 'p') {
            out += Format((spec + "p").c_str(), reinterpret_cast<const void *>(static_cast<uintptr_t>(a.u)));
        } else if (conv == 'f' || conv == 'F') {
            out += Format((spec + conv).c_str(), a.f);
        } else if (conv == 'd' || conv == 'i') {
            out += Format((spec + "ll" + conv).c_str(), a.kind == PrintfArg::INT ? a.i : static_cast<long long>(a.u));
        } else {
            out += Format((spec + "ll" + conv).c_str(),
                          a.kind == PrintfArg::UINT ? a.u : static_cast<unsigned long long>(a.i));
        }
        c = q;
    }
    return out;
}

template <typename T> inline std::string DumpValue(const T &v)
{
    if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value ||
                  std::is_same<T, float>::value) {
        return Format("%f", static_cast<double>(static_cast<float>(v)));
    } else if constexpr (std::is_signed<T>::value) {
        return Format("%lld", static_cast<long long>(v));
    } else {
        return Format("%llu", static_cast<unsigned long long>(v));
    }
}

} // namespace asc_twin

namespace AscendC {

#if !(defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0) && !defined(NDEBUG)
template <class... Args> __aicore__ inline void printf(__gm__ const char *fmt, Args &&...args)
{
    const asc_twin::PrintfArg a[sizeof...(Args) + 1] = {asc_twin::ToPrintfArg(args)...,
                                                         asc_twin::PrintfArg{asc_twin::PrintfArg::INT, 0, 0, 0.0, nullptr}};
    asc_twin::Print(asc_twin::FormatPrintf(fmt, a, sizeof...(Args)));
}
template <class... Args> __aicore__ inline void PRINTF(__gm__ const char *fmt, Args &&...args)
{
    printf(fmt, static_cast<Args &&>(args)...);
}

/* Prints `dumpSize` elements of a UB tensor. */
template <typename T> __aicore__ inline void DumpTensor(const LocalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize)
{
    const uint32_t n = dumpSize < tensor.GetSize() ? dumpSize : tensor.GetSize();
    std::string s = asc_twin::Format("DumpTensor: desc=%u, addr=%llu, data_type=%s, position=UB, dump_size=%u\n[",
                                     desc, static_cast<unsigned long long>(tensor.GetPhyAddr()),
                                     asc_twin::DumpTypeName<T>(), dumpSize);
    for (uint32_t i = 0; i < n; i++) {
        s += (i ? ", " : "") + asc_twin::DumpValue(tensor.GetValue(i));
    }
    asc_twin::Print(s + "]");
}
/* Prints `dumpSize` elements of a GM tensor (read through the scalar data cache). */
template <typename T> __aicore__ inline void DumpTensor(const GlobalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize)
{
    std::string s = asc_twin::Format("DumpTensor: desc=%u, addr=%p, data_type=%s, position=GM, dump_size=%u\n[",
                                     desc, static_cast<const void *>(tensor.GetPhyAddr()),
                                     asc_twin::DumpTypeName<T>(), dumpSize);
    for (uint32_t i = 0; i < dumpSize; i++) {
        s += (i ? ", " : "") + asc_twin::DumpValue(tensor.GetValue(i));
    }
    asc_twin::Print(s + "]");
}
#else
template <class... Args> __aicore__ inline void printf(__gm__ const char *, Args &&...) {}
template <class... Args> __aicore__ inline void PRINTF(__gm__ const char *, Args &&...) {}
template <typename T> __aicore__ inline void DumpTensor(const LocalTensor<T> &, uint32_t, uint32_t) {}
template <typename T> __aicore__ inline void DumpTensor(const GlobalTensor<T> &, uint32_t, uint32_t) {}
#endif

} // namespace AscendC

/* assert(expr) / assert(expr, fmt, args...), and ascendc_assert likewise. */
#define ASC_TWIN_ASSERT_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, ...) N
#define ASC_TWIN_ASSERT_NARGS(...) ASC_TWIN_ASSERT_NARGS_(__VA_ARGS__, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1)
#define ASC_TWIN_ASSERT_PICK(N, ...) ASC_TWIN_ASSERT_PICK_(N, __VA_ARGS__)
#define ASC_TWIN_ASSERT_PICK_(N, ...) ASC_TWIN_ASSERT_##N(__VA_ARGS__)
#define ASC_TWIN_ASSERT_1(expr)                                                                                      \
    (static_cast<bool>(expr) ? void(0) : asc_twin::AssertFail(#expr, __FILE__, __LINE__, __PRETTY_FUNCTION__))
#define ASC_TWIN_ASSERT_2(expr, ...)                                                                                 \
    (static_cast<bool>(expr) ? void(0)                                                                               \
                             : asc_twin::AssertFailMsg(#expr, __FILE__, __LINE__, __PRETTY_FUNCTION__, __VA_ARGS__))
#undef assert
#undef ascendc_assert
#if !(defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0) && !defined(NDEBUG)
#define assert(...) ASC_TWIN_ASSERT_PICK(ASC_TWIN_ASSERT_NARGS(__VA_ARGS__), __VA_ARGS__)
#define ascendc_assert(...) ASC_TWIN_ASSERT_PICK(ASC_TWIN_ASSERT_NARGS(__VA_ARGS__), __VA_ARGS__)
#else
#define assert(...) ((void)0)
#define ascendc_assert(...) ((void)0)
#endif

#endif
