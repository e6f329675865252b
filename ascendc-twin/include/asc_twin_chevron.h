/*
 * Kernel launches written `kernel<<<numBlocks, dynUBufSize, stream>>>(args...)` in an AscendC
 * program, for the twin.
 *
 * The AscendC compiler accepts a launch statement in that form in the host half of a program
 * (`.asc` sources). A host C++ compiler does not; ascendc-build's `asc-twin-cc` rewrites each
 * such statement, before compiling, to
 *
 *   ::asc_twin::Chevron<&kernel>("kernel", numBlocks, dynUBufSize, stream)(args...);
 *
 * which packs the arguments by the kernel's own parameter types (each converted as in a call)
 * and launches it on `stream` through acl-twin's ACL runtime (`aclTwinLaunchChevron`), so the
 * program's ACL calls (aclrtMalloc, aclrtMemcpy, aclrtSynchronizeStream, ...) and its kernels
 * meet on one twin. `dynUBufSize` (the size of the UB's dynamic allocation, 0 by default in the
 * docs and in every public sample) must be 0: the twin does not model dynamic UB allocation, and
 * says so on stderr instead of launching. A launch that fails, or a kernel that faults, is printed
 * on stderr by acl-twin, naming the kernel.
 */
#ifndef ASC_TWIN_CHEVRON_H
#define ASC_TWIN_CHEVRON_H

#include <cstddef>
#include <cstdio>
#include <type_traits>
#include <cstdint>
#include <vector>

#include "asc_twin_launch.h"

extern "C" int aclTwinLaunchChevron(const char *name, void (*entry)(uint8_t *),
                                    uint32_t (*signature)(const asc_twin::ParamInfo **), uint32_t numBlocks,
                                    void *stream, const uint8_t *args, size_t argsSize);

namespace asc_twin {

/* The launch trampoline of kernel K (what ASC_TWIN_KERNEL generates for a named kernel). */
template <auto K> void ChevronEntry(uint8_t *block)
{
    asc_twin_auto_sync(ASC_TWIN_AUTO_SYNC);
    Invoke(K, block);
}
template <auto K> uint32_t ChevronSignature(const ParamInfo **params) { return Signature(K, params); }

/* Copy-initialisation, as a call converts an argument to its parameter's type. */
template <typename A, typename X> inline A ChevronArg(X &&x) { return std::forward<X>(x); }

template <typename... A, typename... X, size_t... I>
inline std::vector<uint8_t> ChevronPack(void (*)(A...), std::index_sequence<I...>, X &&...xs)
{
    std::vector<uint8_t> block(Params<A...>::offsets.at[sizeof...(A)]);
    /* Each argument becomes its parameter's type as a call would convert it. */
    auto put = [&block](size_t at, auto v) { std::memcpy(block.data() + at, &v, sizeof(v)); };
    (put(Params<A...>::offsets.at[I], ChevronArg<A>(std::forward<X>(xs))), ...);
    return block;
}

template <typename... A> constexpr size_t ArityOf(void (*)(A...)) { return sizeof...(A); }

/* The dynUBufSize of a launch configuration (a null pointer, which some programs pass there,
 * reads as 0). */
template <typename D> inline uint64_t ChevronDynUb(const D &d)
{
    if constexpr (std::is_integral<D>::value) {
        return static_cast<uint64_t>(d);
    } else {
        return d == nullptr ? 0 : 1;
    }
}

template <auto K> struct Chevron {
    const char *name;
    uint32_t blocks;
    uint64_t dynUb;
    void *stream;

    template <typename D>
    Chevron(const char *n, uint32_t numBlocks, const D &dynUBufSize, void *s)
        : name(n), blocks(numBlocks), dynUb(ChevronDynUb(dynUBufSize)), stream(s)
    {
    }
    /* <<<numBlocks, dynUBufSize>>>: the stream defaults to nullptr, the default stream (the docs'
     * kernel-launch configuration). */
    template <typename D>
    Chevron(const char *n, uint32_t numBlocks, const D &dynUBufSize)
        : name(n), blocks(numBlocks), dynUb(ChevronDynUb(dynUBufSize)), stream(nullptr)
    {
    }

    template <typename... X> void operator()(X &&...xs) const
    {
        static_assert(sizeof...(X) == ArityOf(K), "a <<<>>> launch must pass one argument per kernel parameter");
        if (dynUb != 0) {
            std::fprintf(stderr,
                         "[acl-twin] kernel %s<<<%u, %llu, ...>>> was not launched: a dynUBufSize other than 0 "
                         "(dynamic UB allocation) is not modelled by the twin\n",
                         name, blocks, static_cast<unsigned long long>(dynUb));
            return;
        }
        std::vector<uint8_t> block =
            ChevronPack(K, std::make_index_sequence<sizeof...(X)>{}, std::forward<X>(xs)...);
        aclTwinLaunchChevron(name, &ChevronEntry<K>, &ChevronSignature<K>, blocks, stream, block.data(), block.size());
    }
};

} // namespace asc_twin

#endif /* ASC_TWIN_CHEVRON_H */
