/*
 * Data-layout vector instructions: Transpose (a 16 x 16 matrix of 16-bit elements, and the
 * enhanced form with TransposeParamsExt: [N,C,H,W] <-> [N,H,W,C]) and TransDataTo5HD (16
 * 32-byte blocks transposed per repeat, NCHW -> NC1HWC0), with their parameter structs.
 *
 * Model (AscendC docs, Atlas A2):
 *  - Transpose(dst, src): dst[i][j] = src[j][i] for a row-major 16 x 16 matrix of int16_t,
 *    uint16_t or half (512 bytes each side); dst may be src (docs).
 *  - Transpose(dst, src, sharedTmpBuffer, params): TRANSPOSE_ND2ND_B16 is the 16 x 16 form
 *    (uint16_t only on A2); TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW permute n x c x h x w
 *    elements (cSize <= 4095, hSize * wSize <= 4095, hSize * wSize * sizeof(T) a multiple of 32;
 *    a zero size is a no-op); dst must not share bytes with src (docs). sharedTmpBuffer must hold
 *    at least (cSize + 2) (NCHW2NHWC) or (2 * cSize + 1) (NHWC2NCHW) x h0 x w0 x sizeof(T) bytes
 *    (h0 = 32 for 8-bit types, else 16; w0 = 32 / sizeof(T)): the NPU uses it as scratch, so the
 *    twin reports those bytes written and overwrites them. TRANSPOSE_TYPE_NONE does nothing; the
 *    other types are "not supported" on A2 and are an error.
 *  - TransDataTo5HD: repeat r reads 16 source blocks srcList[i] + s(r) and writes 16 destination
 *    blocks dstList[k] + d(r), where s(r) = r * srcRepStride * 32 bytes, d(r) likewise, except
 *    that with repeatTimes = 1 the docs give s = srcRepStride * 32 and d = dstRepStride * 32.
 *      16-bit: dst block k element i = src block i element k (a 16 x 16 transpose);
 *      32-bit: dst block k element m = src block (k % 2) * 8 + m element k / 2 (each source
 *              column of 16 becomes two destination blocks, the docs' "2 new blocks");
 *      8-bit:  dst block k, half dstHighHalf, byte i = src block i byte k of half srcHighHalf
 *              (16 bytes of each block are read and 16 written; the other halves are kept).
 *    The address-list forms take UB byte addresses (GetPhyAddr); the LocalTensor<uint64_t> form
 *    loads the 16 + 16 addresses from UB with vector loads (reported as V reads of 128 bytes).
 *    Assumed (docs silent): the 32-bit layout above (it reproduces the docs' int32 example), and
 *    the general overlap rule: a repeat reads before it writes, so it may write the blocks it
 *    reads only when dstList is srcList (same addresses, same strides); a repeat must not read
 *    what an earlier repeat wrote.
 * Alignment (docs): every operand and every list address 32-byte aligned.
 */
#ifndef ASC_TWIN_VEC_TRANSPOSE_H
#define ASC_TWIN_VEC_TRANSPOSE_H

#include <unordered_map>
#include <vector>

#include "vec_gather.h"

namespace AscendC {

/* Length of TransDataTo5HD's address lists. */
constexpr uint32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

/* TransDataTo5HD's parameters (strides in 32-byte blocks). */
struct TransDataTo5HDParams {
    __aicore__ TransDataTo5HDParams() {}
    __aicore__ TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                                    const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn)
    {
    }
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

/* The layouts of the enhanced Transpose (only the last three are supported on A2 besides NONE). */
enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW
};

/* The enhanced Transpose's shape and layout. */
struct TransposeParamsExt {
    __aicore__ TransposeParamsExt() {}
    __aicore__ TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn,
                                  const uint16_t wSizeIn, const TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn)
    {
    }
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

} // namespace AscendC

namespace asc_twin {
namespace vec {

/* The 16 x 16 transpose of 2-byte elements. */
inline void Transpose16(const char *api, uint8_t *dst, uint64_t dcap, const uint8_t *src, uint64_t scap)
{
    CheckAligned(api, "dst", dst);
    CheckAligned(api, "src", src);
    if (scap < 512) {
        Fail(api, "reads past the end of the src LocalTensor (a 16 x 16 matrix is 512 bytes)", 512, scap);
    }
    if (dcap < 512) {
        Fail(api, "writes past the end of its destination LocalTensor (a 16 x 16 matrix is 512 bytes)", 512, dcap);
    }
    if (dst != src && dst < src + 512 && src < dst + 512) {
        Fail(api, "dst partially overlaps src (only the same tensor, or disjoint ones, are supported)",
             static_cast<uint64_t>(dst > src ? dst - src : src - dst), 0);
    }
    Footprint fp(api);
    fp.Add(ASC_TWIN_UB_VECTOR_READ, src, 512);
    fp.Add(ASC_TWIN_UB_VECTOR_WRITE, dst, 512);
    fp.Flush();
    uint16_t m[256];
    std::memcpy(m, src, 512);
    uint16_t t[256];
    for (uint32_t i = 0; i < 16; i++) {
        for (uint32_t j = 0; j < 16; j++) {
            t[i * 16 + j] = m[j * 16 + i];
        }
    }
    std::memcpy(dst, t, 512);
}

template <typename T> constexpr bool FiveHdType()
{
    return AscendC::Std::is_one_of_v<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>;
}

/* TransDataTo5HD over resolved block addresses; `dcap[k]` / `scap[i]`: bytes available from
 * each address (its LocalTensor, or the rest of the UB). */
template <typename T>
inline void FiveHdRun(uint8_t *const dst[16], const uint64_t dcap[16], const uint8_t *const src[16],
                      const uint64_t scap[16], const AscendC::TransDataTo5HDParams &p)
{
    const char *api = "TransDataTo5HD";
    for (uint32_t i = 0; i < 16; i++) {
        CheckAligned(api, "a dstList", dst[i]);
        CheckAligned(api, "a srcList", src[i]);
    }
    const uint32_t reps = p.repeatTimes;
    if (reps == 0) {
        return;
    }
    const bool b8 = sizeof(T) == 1;
    const uint64_t rd = b8 && p.srcHighHalf ? 16 : 0; /* offset of the bytes read in a block */
    const uint64_t wr = b8 && p.dstHighHalf ? 16 : 0;
    const uint64_t len = b8 ? 16 : 32;
    auto soff = [&](uint32_t r) { return (reps == 1 ? 1u : r) * static_cast<uint64_t>(p.srcRepStride) * 32; };
    auto doff = [&](uint32_t r) { return (reps == 1 ? 1u : r) * static_cast<uint64_t>(p.dstRepStride) * 32; };
    bool sameLists = p.srcRepStride == p.dstRepStride && p.srcHighHalf == p.dstHighHalf;
    for (uint32_t i = 0; i < 16; i++) {
        sameLists = sameLists && dst[i] == src[i];
    }
    /* Bounds, footprint, and the overlap rule on 16-byte granules: the repeat that first writes
     * each one. */
    Footprint fp(api);
    std::unordered_map<uintptr_t, uint32_t> firstWrite;
    for (uint32_t r = 0; r < reps; r++) {
        for (uint32_t i = 0; i < 16; i++) {
            const uint64_t e = soff(r) + rd + len;
            if (e > scap[i]) {
                Fail(api, "reads past the end of a source (its LocalTensor, or the UB)", e, scap[i]);
            }
            fp.Add(ASC_TWIN_UB_VECTOR_READ, src[i] + soff(r) + rd, len);
        }
        for (uint32_t k = 0; k < 16; k++) {
            const uint64_t e = doff(r) + wr + len;
            if (e > dcap[k]) {
                Fail(api, "writes past the end of a destination (its LocalTensor, or the UB)", e, dcap[k]);
            }
            fp.Add(ASC_TWIN_UB_VECTOR_WRITE, dst[k] + doff(r) + wr, len);
            for (uint64_t g = 0; g < len; g += 16) {
                firstWrite.emplace(reinterpret_cast<uintptr_t>(dst[k] + doff(r) + wr + g), r);
            }
        }
    }
    for (uint32_t r = 0; r < reps; r++) {
        for (uint32_t i = 0; i < 16; i++) {
            for (uint64_t g = 0; g < len; g += 16) {
                const auto it = firstWrite.find(reinterpret_cast<uintptr_t>(src[i] + soff(r) + rd + g));
                if (it == firstWrite.end()) {
                    continue;
                }
                if (it->second < r) {
                    Fail(api, "a repeat reads a block an earlier repeat wrote (the docs do not support it)", r,
                         it->second);
                }
                if (it->second == r && !sameLists) {
                    Fail(api,
                         "a repeat writes blocks it reads with dstList different from srcList (only complete "
                         "overlap is supported)",
                         r, 0);
                }
            }
        }
    }
    fp.Flush();
    for (uint32_t r = 0; r < reps; r++) {
        uint8_t in[16][32];
        for (uint32_t i = 0; i < 16; i++) {
            std::memcpy(in[i] + rd, src[i] + soff(r) + rd, len);
        }
        for (uint32_t k = 0; k < 16; k++) {
            uint8_t out[32];
            if (b8) {
                for (uint32_t i = 0; i < 16; i++) {
                    out[i] = in[i][rd + k];
                }
            } else if (sizeof(T) == 2) {
                for (uint32_t i = 0; i < 16; i++) {
                    std::memcpy(out + 2 * i, in[i] + 2 * k, 2);
                }
            } else {
                for (uint32_t m = 0; m < 8; m++) {
                    std::memcpy(out + 4 * m, in[(k % 2) * 8 + m] + 4 * (k / 2), 4);
                }
            }
            std::memcpy(dst[k] + doff(r) + wr, out, len);
        }
    }
}

/* A UB byte address (GetPhyAddr) as a pointer, with the bytes from it to the end of the UB. */
inline uint8_t *UbAt(const char *api, uint64_t addr, uint64_t &cap)
{
    uint8_t *base = nullptr;
    uint64_t size = 0;
    asc_twin_check(asc_twin_ub_arena(&base, &size));
    if (addr >= size) {
        Fail(api, "an address in the list is outside the Unified Buffer", addr, size);
    }
    cap = size - addr;
    return base + addr;
}

/* The enhanced transpose's [N,C,H,W] <-> [N,H,W,C] permutation. */
template <typename T>
inline void TransposeNchw(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                          const AscendC::LocalTensor<uint8_t> &tmp, const AscendC::TransposeParamsExt &p)
{
    const char *api = "Transpose";
    const bool toNhwc = p.transposeType == AscendC::TransposeType::TRANSPOSE_NCHW2NHWC;
    const uint64_t n = p.nSize, c = p.cSize, hw = static_cast<uint64_t>(p.hSize) * p.wSize;
    if (c > 4095) {
        Fail(api, "cSize out of range [0, 4095]", c, 4095);
    }
    if (hw > 4095) {
        Fail(api, "hSize * wSize out of range [0, 4095]", hw, 4095);
    }
    if (hw * sizeof(T) % 32 != 0) {
        Fail(api, "hSize * wSize * sizeof(T) must be a multiple of 32 bytes", hw * sizeof(T), 32);
    }
    uint8_t *d = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    const uint8_t *s = reinterpret_cast<const uint8_t *>(Access::Ptr(src));
    uint8_t *t = Access::Ptr(tmp);
    CheckAligned(api, "dst", d);
    CheckAligned(api, "src", s);
    CheckAligned(api, "sharedTmpBuffer", t);
    if (n == 0 || c == 0 || hw == 0) {
        return;
    }
    const uint64_t h0 = sizeof(T) == 1 ? 32 : 16, w0 = 32 / sizeof(T);
    const uint64_t need = (toNhwc ? c + 2 : 2 * c + 1) * h0 * w0 * sizeof(T);
    if (static_cast<uint64_t>(tmp.GetSize()) < need) {
        Fail(api, "sharedTmpBuffer is smaller than the docs require ((cSize + 2) or (2 * cSize + 1) x h0 x w0 x "
                  "sizeof(T) bytes)",
             tmp.GetSize(), need);
    }
    const uint64_t bytes = n * c * hw * sizeof(T);
    if (bytes > static_cast<uint64_t>(src.GetSize()) * sizeof(T)) {
        Fail(api, "reads past the end of the src LocalTensor", bytes, static_cast<uint64_t>(src.GetSize()) * sizeof(T));
    }
    if (bytes > static_cast<uint64_t>(dst.GetSize()) * sizeof(T)) {
        Fail(api, "writes past the end of its destination LocalTensor", bytes,
             static_cast<uint64_t>(dst.GetSize()) * sizeof(T));
    }
    auto meet = [](const uint8_t *a, uint64_t na, const uint8_t *b, uint64_t nb) { return a < b + nb && b < a + na; };
    if (meet(d, bytes, s, bytes)) {
        Fail(api, "dst shares bytes with src (not supported for NCHW2NHWC / NHWC2NCHW)", 0, 0);
    }
    if (meet(t, need, s, bytes) || meet(t, need, d, bytes)) {
        Fail(api, "sharedTmpBuffer shares bytes with src or dst", 0, 0);
    }
    Footprint fp(api);
    fp.Add(ASC_TWIN_UB_VECTOR_READ, s, bytes);
    fp.Add(ASC_TWIN_UB_VECTOR_WRITE, t, need);
    fp.Add(ASC_TWIN_UB_VECTOR_WRITE, d, bytes);
    fp.Flush();
    for (uint64_t a = 0; a < n; a++) {
        for (uint64_t ci = 0; ci < c; ci++) {
            for (uint64_t x = 0; x < hw; x++) {
                const uint64_t nchw = (a * c + ci) * hw + x;
                const uint64_t nhwc = (a * hw + x) * c + ci;
                const uint64_t from = toNhwc ? nchw : nhwc, to = toNhwc ? nhwc : nchw;
                std::memcpy(d + to * sizeof(T), s + from * sizeof(T), sizeof(T));
            }
        }
    }
    /* The scratch bytes hold intermediate blocks on the NPU: not the caller's data any more. */
    std::memset(t, 0x5a, need);
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

/* Transpose of a 16 x 16 matrix of 16-bit elements. */
template <typename T> __aicore__ inline void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src)
{
    static_assert(Std::is_one_of_v<T, int16_t, uint16_t, half>, "Transpose on Atlas A2: T is int16_t, uint16_t or half");
    asc_twin::vec::Transpose16("Transpose", reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(dst)),
                               static_cast<uint64_t>(dst.GetSize()) * sizeof(T),
                               reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src)),
                               static_cast<uint64_t>(src.GetSize()) * sizeof(T));
}

/* The enhanced Transpose: 16 x 16 (TRANSPOSE_ND2ND_B16, uint16_t) or [N,C,H,W] <-> [N,H,W,C]. */
template <typename T>
__aicore__ inline void Transpose(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                 const LocalTensor<uint8_t> &sharedTmpBuffer, const TransposeParamsExt &transposeParams)
{
    static_assert(asc_twin::vec::FiveHdType<T>(),
                  "Transpose on Atlas A2: T is int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t or float "
                  "(TRANSPOSE_ND2ND_B16: uint16_t)");
    using namespace asc_twin::vec;
    switch (transposeParams.transposeType) {
    case TransposeType::TRANSPOSE_TYPE_NONE:
        return;
    case TransposeType::TRANSPOSE_ND2ND_B16:
        if (!std::is_same<T, uint16_t>::value) {
            Fail("Transpose", "TRANSPOSE_ND2ND_B16 supports uint16_t only on Atlas A2", sizeof(T), 2);
        }
        Transpose16("Transpose", reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(dst)),
                    static_cast<uint64_t>(dst.GetSize()) * sizeof(T),
                    reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(src)),
                    static_cast<uint64_t>(src.GetSize()) * sizeof(T));
        return;
    case TransposeType::TRANSPOSE_NCHW2NHWC:
    case TransposeType::TRANSPOSE_NHWC2NCHW:
        TransposeNchw(dst, src, sharedTmpBuffer, transposeParams);
        return;
    default:
        Fail("Transpose", "this TransposeType is not supported (A2: ND2ND_B16, NCHW2NHWC, NHWC2NCHW)",
             static_cast<uint64_t>(transposeParams.transposeType), 0);
    }
}

/* TransDataTo5HD with UB byte addresses (GetPhyAddr). */
template <typename T>
__aicore__ inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                                      const TransDataTo5HDParams &nchwconvParams)
{
    static_assert(asc_twin::vec::FiveHdType<T>(),
                  "TransDataTo5HD on Atlas A2: T is int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t or float");
    uint8_t *d[16];
    const uint8_t *s[16];
    uint64_t dc[16], sc[16];
    for (uint32_t i = 0; i < 16; i++) {
        d[i] = asc_twin::vec::UbAt("TransDataTo5HD", dstList[i], dc[i]);
        s[i] = asc_twin::vec::UbAt("TransDataTo5HD", srcList[i], sc[i]);
    }
    asc_twin::vec::FiveHdRun<T>(d, dc, s, sc, nchwconvParams);
}

/* TransDataTo5HD with the 16 + 16 addresses stored in UB tensors. */
template <typename T>
__aicore__ inline void TransDataTo5HD(const LocalTensor<uint64_t> &dst, const LocalTensor<uint64_t> &src,
                                      const TransDataTo5HDParams &nchwconvParams)
{
    static_assert(asc_twin::vec::FiveHdType<T>(),
                  "TransDataTo5HD on Atlas A2: T is int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t or float");
    using namespace asc_twin::vec;
    const uint64_t *da = asc_twin::Access::Ptr(dst);
    const uint64_t *sa = asc_twin::Access::Ptr(src);
    CheckAligned("TransDataTo5HD", "dst (address list)", da);
    CheckAligned("TransDataTo5HD", "src (address list)", sa);
    if (dst.GetSize() < 16 || src.GetSize() < 16) {
        Fail("TransDataTo5HD", "an address LocalTensor holds fewer than 16 addresses",
             dst.GetSize() < src.GetSize() ? dst.GetSize() : src.GetSize(), 16);
    }
    Footprint fp("TransDataTo5HD");
    fp.Add(ASC_TWIN_UB_VECTOR_READ, reinterpret_cast<const uint8_t *>(da), 128);
    fp.Add(ASC_TWIN_UB_VECTOR_READ, reinterpret_cast<const uint8_t *>(sa), 128);
    fp.Flush();
    uint64_t dl[16], sl[16];
    std::memcpy(dl, da, sizeof dl);
    std::memcpy(sl, sa, sizeof sl);
    TransDataTo5HD<T>(dl, sl, nchwconvParams);
}

/* TransDataTo5HD with LocalTensor lists. */
template <typename T>
__aicore__ inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                                      const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE],
                                      const TransDataTo5HDParams &nchwconvParams)
{
    static_assert(asc_twin::vec::FiveHdType<T>(),
                  "TransDataTo5HD on Atlas A2: T is int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t or float");
    uint8_t *d[16];
    const uint8_t *s[16];
    uint64_t dc[16], sc[16];
    for (uint32_t i = 0; i < 16; i++) {
        d[i] = reinterpret_cast<uint8_t *>(asc_twin::Access::Ptr(dstList[i]));
        s[i] = reinterpret_cast<const uint8_t *>(asc_twin::Access::Ptr(srcList[i]));
        dc[i] = static_cast<uint64_t>(dstList[i].GetSize()) * sizeof(T);
        sc[i] = static_cast<uint64_t>(srcList[i].GetSize()) * sizeof(T);
    }
    asc_twin::vec::FiveHdRun<T>(d, dc, s, sc, nchwconvParams);
}

} // namespace AscendC

#endif
