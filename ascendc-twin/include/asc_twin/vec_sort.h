/*
 * Sorting on the vector unit (Atlas A2): Sort32, MrgSort with MrgSortSrcList / MrgSort4Info,
 * GetMrgSortResult, the high-level API's MrgSort overload (sortedNum) with GetSortOffset /
 * GetSortLen; and the pairwise reduction ReducePairElem (with its older name
 * PairReduceSum), which shares nothing with the sort but arrived with it.
 *
 * Element layout (docs, Sort32): a sorted element is an 8-byte (score, index) structure: the
 * score of type T in its first sizeof(T) bytes, the uint32_t index in bytes 4..7; for half,
 * bytes 2..3 are reserved. MrgSort's lists are runs of such structures, their lengths counted in
 * structures (8 bytes each).
 * Ordering (docs): descending by score; of two equal scores, the one that came first (the lower
 * index in Sort32's repeat; in MrgSort, the earlier list, then the earlier position in a list)
 * is placed first. Each Sort32 repeat and each MrgSort repeat is sorted on its own.
 * Errors (docs): repeatTime / repeatTimes outside [0, 255] (0 is a no-op on A2); MrgSort's
 * elementLengths outside [0, 4095], validBit not 3, 7 or 15, repeatTimes > 1 without four
 * contiguous lists of one length, validBit 15 and ifExhaustedSuspension false; a destination or
 * source not aligned (Sort32: each operand 32 bytes; MrgSort: dst 32 bytes, its lists 8); a
 * source that overlaps the destination; GetMrgSortResult after a MrgSort that did not run in
 * exhausted-suspension mode (the docs require that mode). MrgSort4, RpSort16, ProposalConcat and
 * ProposalExtract do not exist on Atlas A2 (docs): using them is a compile error.
 * Assumed (docs silent):
 *  - NaN scores sort above +inf (as a NaN wins Max/Min in vec_math.h), NaNs tie with each other;
 *    -0 and +0 are equal scores (IEEE) and keep their order;
 *  - Sort32 writes zeros to the 2 reserved bytes of a half structure; MrgSort copies whole
 *    8-byte structures;
 *  - exhausted suspension: MrgSort stops as soon as one valid list has no element left (a valid
 *    list of length 0 stops it before any output), having written the structures it took;
 *    VMS4_SR counts, per list, the structures taken (0 for a list validBit leaves out);
 *  - the footprint a MrgSort reports reads the whole of every valid list (the hardware may read
 *    ahead of the merge) and writes the structures it outputs.
 */
#ifndef ASC_TWIN_VEC_SORT_H
#define ASC_TWIN_VEC_SORT_H

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "vec_base.h"
#include "vec_math.h"

namespace AscendC {

/* The number of lists MrgSort merges at most. */
const uint8_t MRG_SORT_ELEMENT_LEN = 4;

/* MrgSort's parameters (docs). */
struct MrgSort4Info {
    __aicore__ MrgSort4Info() {}
    __aicore__ MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], const bool ifExhaustedSuspensionIn,
                            const uint16_t validBitIn, const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn),
          repeatTimes(static_cast<uint8_t>(repeatTimesIn))
    {
        for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) {
            elementLengths[i] = elementLengthsIn[i];
        }
    }
    uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0}; /* structures (8 bytes) per list */
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0; /* 3, 7 or 15: the first 2, 3 or 4 lists take part */
    uint8_t repeatTimes = 1;
};

/* The (up to) four sorted lists MrgSort merges. */
template <typename T> struct MrgSortSrcList {
    __aicore__ MrgSortSrcList() {}
    __aicore__ MrgSortSrcList(const LocalTensor<T> &src1In, const LocalTensor<T> &src2In,
                              const LocalTensor<T> &src3In, const LocalTensor<T> &src4In)
    {
        src1 = src1In[0];
        src2 = src2In[0];
        src3 = src3In[0];
        src4 = src4In[0];
    }
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

} // namespace AscendC

namespace asc_twin {
namespace vec {

template <typename T> constexpr bool SortType() { return AscendC::Std::is_one_of_v<T, half, float>; }

/* Bytes of one (score, index) structure. */
constexpr uint32_t kSortStruct = 8;

/* Whether score `a` sorts strictly before score `b` (descending; NaN above everything). */
template <typename T> inline bool SortsBefore(T a, T b)
{
    const float x = static_cast<float>(Num<T>::In(a));
    const float y = static_cast<float>(Num<T>::In(b));
    if (std::isnan(x)) {
        return !std::isnan(y);
    }
    if (std::isnan(y)) {
        return false;
    }
    return x > y;
}

template <typename T> inline T ScoreAt(const uint8_t *structure)
{
    T s;
    std::memcpy(&s, structure, sizeof(T));
    return s;
}

/* One UB byte range an instruction touches. */
struct SortSpan {
    const uint8_t *p;
    uint64_t n;
};

inline bool SortSpansMeet(const SortSpan &a, const SortSpan &b)
{
    return a.n > 0 && b.n > 0 && a.p < b.p + b.n && b.p < a.p + a.n;
}

inline void CheckRepeatTime(const char *api, int32_t repeatTime)
{
    if (repeatTime < 0 || repeatTime > static_cast<int32_t>(AscendC::MAX_REPEAT_TIMES)) {
        Fail(api, "repeatTime out of range [0, 255]", static_cast<uint64_t>(static_cast<int64_t>(repeatTime)),
             AscendC::MAX_REPEAT_TIMES);
    }
}

inline void CheckAligned(const char *api, const char *what, const void *p, uint32_t align)
{
    const uintptr_t off = reinterpret_cast<uintptr_t>(p) % align;
    if (off != 0) {
        char msg[128];
        std::snprintf(msg, sizeof msg, "%s is not %u-byte aligned", what, align);
        Fail(api, msg, off, align);
    }
}

/* Checks `span` lies inside the `cap` bytes of its tensor from `base`. */
inline void CheckInside(const char *api, const char *what, const SortSpan &span, const uint8_t *base, uint64_t cap)
{
    const uint64_t end = static_cast<uint64_t>(span.p - base) + span.n;
    if (end > cap) {
        char msg[128];
        std::snprintf(msg, sizeof msg, "%s runs past the end of its LocalTensor", what);
        Fail(api, msg, end, cap);
    }
}

/* Refuses any byte shared by a source and the destination (the sort instructions support no
 * overlap: their sources and destination never have the same shape). */
inline void CheckNoOverlap(const char *api, const std::vector<SortSpan> &reads, const std::vector<SortSpan> &writes)
{
    for (const SortSpan &r : reads) {
        for (const SortSpan &w : writes) {
            if (SortSpansMeet(r, w)) {
                Fail(api, "a source overlaps the destination (not supported)",
                     static_cast<uint64_t>(r.p > w.p ? r.p - w.p : w.p - r.p), 0);
            }
        }
    }
}

/* Reports the footprint: the reads, then the writes. */
inline void ReportSpans(const char *api, const std::vector<SortSpan> &reads, const std::vector<SortSpan> &writes)
{
    Footprint fp(api);
    for (const SortSpan &r : reads) {
        fp.Add(ASC_TWIN_UB_VECTOR_READ, r.p, r.n);
    }
    for (const SortSpan &w : writes) {
        fp.Add(ASC_TWIN_UB_VECTOR_WRITE, w.p, w.n);
    }
    fp.Flush();
}

template <typename T>
inline void Sort32Run(const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src0,
                      const AscendC::LocalTensor<uint32_t> &src1, int32_t repeatTime)
{
    const char *api = "Sort32";
    CheckRepeatTime(api, repeatTime);
    if (repeatTime == 0) {
        return; /* a no-op on A2 (docs) */
    }
    uint8_t *d = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    const uint8_t *s0 = reinterpret_cast<const uint8_t *>(Access::Ptr(src0));
    const uint8_t *s1 = reinterpret_cast<const uint8_t *>(Access::Ptr(src1));
    CheckAligned(api, "dst", d, 32);
    CheckAligned(api, "src0", s0, 32);
    CheckAligned(api, "src1", s1, 32);
    const uint64_t reps = static_cast<uint64_t>(repeatTime);
    /* Each repeat: 32 scores and 32 indexes in, 32 structures (256 bytes) out. */
    const std::vector<SortSpan> reads = {{s0, reps * 32 * sizeof(T)}, {s1, reps * 32 * sizeof(uint32_t)}};
    const std::vector<SortSpan> writes = {{d, reps * 32 * kSortStruct}};
    CheckInside(api, "src0", reads[0], s0, static_cast<uint64_t>(src0.GetSize()) * sizeof(T));
    CheckInside(api, "src1", reads[1], s1, static_cast<uint64_t>(src1.GetSize()) * sizeof(uint32_t));
    CheckInside(api, "dst", writes[0], d, static_cast<uint64_t>(dst.GetSize()) * sizeof(T));
    CheckNoOverlap(api, reads, writes);
    ReportSpans(api, reads, writes);
    for (uint64_t r = 0; r < reps; r++) {
        T score[32];
        uint32_t index[32];
        uint32_t order[32];
        std::memcpy(score, s0 + r * 32 * sizeof(T), sizeof score);
        std::memcpy(index, s1 + r * 32 * sizeof(uint32_t), sizeof index);
        for (uint32_t i = 0; i < 32; i++) {
            order[i] = i;
        }
        /* Stable: equal scores keep their input order (docs: the lower index first). */
        std::stable_sort(order, order + 32,
                         [&](uint32_t a, uint32_t b) { return SortsBefore<T>(score[a], score[b]); });
        uint8_t out[32 * kSortStruct];
        std::memset(out, 0, sizeof out);
        for (uint32_t i = 0; i < 32; i++) {
            std::memcpy(out + i * kSortStruct, &score[order[i]], sizeof(T));
            std::memcpy(out + i * kSortStruct + 4, &index[order[i]], 4);
        }
        std::memcpy(d + r * sizeof out, out, sizeof out);
    }
}

template <typename T>
inline void MrgSortRun(const AscendC::LocalTensor<T> &dst, const AscendC::MrgSortSrcList<T> &src,
                       const AscendC::MrgSort4Info &params)
{
    const char *api = "MrgSort";
    for (uint32_t i = 0; i < AscendC::MRG_SORT_ELEMENT_LEN; i++) {
        if (params.elementLengths[i] > 4095) {
            Fail(api, "an elementLengths entry is out of range [0, 4095]", params.elementLengths[i], 4095);
        }
    }
    uint32_t lists = 0;
    switch (params.validBit) {
    case 3:
        lists = 2;
        break;
    case 7:
        lists = 3;
        break;
    case 15:
        lists = 4;
        break;
    default:
        Fail(api, "validBit must be 3, 7 or 15", params.validBit, 15);
    }
    const uint32_t reps = params.repeatTimes;
    if (reps == 0) {
        return; /* a no-op on A2 (docs) */
    }
    const AscendC::LocalTensor<T> *t[4] = {&src.src1, &src.src2, &src.src3, &src.src4};
    const uint8_t *base[4] = {nullptr, nullptr, nullptr, nullptr};
    uint64_t len[4] = {0, 0, 0, 0};
    uint64_t total = 0;
    for (uint32_t i = 0; i < lists; i++) {
        base[i] = reinterpret_cast<const uint8_t *>(Access::Ptr(*t[i]));
        len[i] = params.elementLengths[i];
        total += len[i];
        static const char *names[4] = {"src.src1", "src.src2", "src.src3", "src.src4"};
        CheckAligned(api, names[i], base[i], 8);
    }
    uint8_t *d = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    CheckAligned(api, "dst", d, 32);
    if (reps > 1) {
        /* Docs: repeatTimes takes effect only for four contiguous lists of one length, without
         * suspension. */
        if (lists != 4 || params.ifExhaustedSuspension) {
            Fail(api, "repeatTimes > 1 needs validBit = 15 and ifExhaustedSuspension = false", reps, 1);
        }
        for (uint32_t i = 1; i < 4; i++) {
            if (len[i] != len[0]) {
                Fail(api, "repeatTimes > 1 needs four lists of the same length", len[i], len[0]);
            }
            if (base[i] != base[i - 1] + len[i - 1] * kSortStruct) {
                Fail(api, "repeatTimes > 1 needs the four lists stored one after another",
                     static_cast<uint64_t>(base[i] - base[0]), i * len[0] * kSortStruct);
            }
        }
    }
    /* Repeat r merges the lists at base[i] + r * (all lists' bytes) into dst + the same. */
    const uint64_t step = total * kSortStruct;
    std::vector<SortSpan> reads;
    static const char *listNames[4] = {"list 1 (src.src1)", "list 2 (src.src2)", "list 3 (src.src3)",
                                       "list 4 (src.src4)"};
    for (uint32_t r = 0; r < reps; r++) {
        for (uint32_t i = 0; i < lists; i++) {
            reads.push_back(SortSpan{base[i] + r * step, len[i] * kSortStruct});
            CheckInside(api, listNames[i], reads.back(), base[i], static_cast<uint64_t>(t[i]->GetSize()) * sizeof(T));
        }
    }
    /* The destination's extent is what the parameters claim; the bytes written may be fewer
     * (suspension). Bounds and overlap are checked on the claimed extent. */
    const SortSpan claimed{d, step * reps};
    CheckInside(api, "dst", claimed, d, static_cast<uint64_t>(dst.GetSize()) * sizeof(T));
    CheckNoOverlap(api, reads, {claimed});
    std::vector<uint8_t> out(static_cast<size_t>(step * reps));
    uint64_t taken[4] = {0, 0, 0, 0};
    uint64_t written = 0;
    for (uint32_t r = 0; r < reps; r++) {
        uint64_t pos[4] = {0, 0, 0, 0};
        for (;;) {
            bool stop = false;
            int32_t best = -1;
            T bestScore{};
            for (uint32_t i = 0; i < lists; i++) {
                if (pos[i] == len[i]) {
                    stop = stop || params.ifExhaustedSuspension;
                    continue;
                }
                const T sc = ScoreAt<T>(base[i] + r * step + pos[i] * kSortStruct);
                /* Strictly before: of equal scores the earlier list wins. */
                if (best < 0 || SortsBefore<T>(sc, bestScore)) {
                    best = static_cast<int32_t>(i);
                    bestScore = sc;
                }
            }
            if (stop || best < 0) {
                break;
            }
            std::memcpy(out.data() + written, base[best] + r * step + pos[best] * kSortStruct, kSortStruct);
            written += kSortStruct;
            pos[best]++;
        }
        for (uint32_t i = 0; i < lists; i++) {
            taken[i] = pos[i];
        }
    }
    ReportSpans(api, reads, {SortSpan{d, written}});
    std::memcpy(d, out.data(), static_cast<size_t>(written));
    AscTwinVecRegs &reg = Regs();
    reg.vms4_sr = 0;
    for (uint32_t i = 0; i < lists; i++) {
        reg.vms4_sr |= (taken[i] & 0xffffu) << (16 * i);
    }
    reg.vms4_set = params.ifExhaustedSuspension ? 1u : 0u;
}

/* ReducePairElem / PairReduceSum: dst[p] of repeat r = src lane 2p + lane 2p + 1 (a disabled
 * lane counts as +0; a pair with both lanes disabled leaves dst[p] as it was, docs). One
 * repeat's results take 128 bytes; dstRepStride counts in those. */
template <typename T>
inline void PairSum(const char *api, const AscendC::LocalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                    const Lanes &lanes, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride)
{
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0 || dstRepStride > 65535 || srcBlkStride > 65535 ||
        srcRepStride > 65535) {
        Fail(api, "strides must be in [0, 65535]", 0, 65535);
    }
    const Opnd s = Op(src, static_cast<uint32_t>(srcBlkStride), static_cast<uint32_t>(srcRepStride), false);
    uint8_t *base = reinterpret_cast<uint8_t *>(Access::Ptr(dst));
    CheckAligned(api, "dst", base, 32);
    const uint64_t cap = static_cast<uint64_t>(dst.GetSize()) * sizeof(T);
    const uint32_t pairs = lanes.perRep / 2;
    auto out = [&](uint32_t r, uint32_t p) {
        return base + static_cast<uint64_t>(r) * static_cast<uint32_t>(dstRepStride) * 128 + p * sizeof(T);
    };
    auto pairActive = [&](uint32_t r, uint32_t p) { return lanes.Active(r, 2 * p) || lanes.Active(r, 2 * p + 1); };
    Footprint fp(api);
    fp.Operand(s, lanes); /* checks alignment and bounds of the source */
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        for (uint32_t p = 0; p < pairs; p++) {
            if (pairActive(r, p)) {
                const uint64_t end = static_cast<uint64_t>(out(r, p) - base) + sizeof(T);
                if (end > cap) {
                    Fail(api, "writes past the end of its destination LocalTensor", end, cap);
                }
                fp.Add(ASC_TWIN_UB_VECTOR_WRITE, out(r, p), sizeof(T));
            }
        }
    }
    /* Docs (general overlap rule): a repeat's destination may not partly overlap its sources,
     * nor any later repeat's (a pair's result is half the bytes of its sources, so no overlap
     * can be complete). Checked byte by byte: interleaved operands that share none are fine. */
    {
        const uint8_t *lo = nullptr;
        const uint8_t *hi = nullptr;
        for (uint32_t r = 0; r < lanes.repeats; r++) {
            for (uint32_t p = 0; p < pairs; p++) {
                if (pairActive(r, p)) {
                    lo = lo == nullptr || out(r, p) < lo ? out(r, p) : lo;
                    hi = hi == nullptr || out(r, p) + sizeof(T) > hi ? out(r, p) + sizeof(T) : hi;
                }
            }
        }
        if (lo != nullptr) {
            std::vector<uint16_t> firstWrite(static_cast<size_t>(hi - lo), 0xffff);
            for (uint32_t r = 0; r < lanes.repeats; r++) {
                for (uint32_t p = 0; p < pairs; p++) {
                    if (pairActive(r, p)) {
                        for (uint32_t b = 0; b < sizeof(T); b++) {
                            uint16_t &w = firstWrite[static_cast<size_t>(out(r, p) - lo) + b];
                            w = std::min<uint16_t>(w, static_cast<uint16_t>(r));
                        }
                    }
                }
            }
            for (uint32_t r = 0; r < lanes.repeats; r++) {
                for (uint32_t l = 0; l < lanes.perRep; l++) {
                    if (!lanes.Active(r, l)) {
                        continue;
                    }
                    const uint8_t *a = s.At(r, l);
                    for (uint32_t b = 0; b < sizeof(T); b++) {
                        if (a + b >= lo && a + b < hi && firstWrite[static_cast<size_t>(a + b - lo)] <= r) {
                            Fail(api,
                                 "the destination overlaps a source of the same or a later repeat (not supported)",
                                 static_cast<uint64_t>(a + b - lo), 0);
                        }
                    }
                }
            }
        }
    }
    fp.Flush();
    for (uint32_t r = 0; r < lanes.repeats; r++) {
        T res[64];
        for (uint32_t p = 0; p < pairs; p++) {
            T v[2];
            for (uint32_t k = 0; k < 2; k++) {
                if (lanes.Active(r, 2 * p + k)) {
                    std::memcpy(&v[k], s.At(r, 2 * p + k), sizeof(T));
                } else {
                    v[k] = Num<T>::Out(0.0f);
                }
            }
            res[p] = OpAdd(v[0], v[1]);
        }
        for (uint32_t p = 0; p < pairs; p++) {
            if (pairActive(r, p)) {
                std::memcpy(out(r, p), &res[p], sizeof(T));
            }
        }
    }
}

inline void PairRepeat(const char *api, int32_t repeatTime)
{
    if (repeatTime < 0) {
        Fail(api, "repeatTime is negative", static_cast<uint64_t>(static_cast<int64_t>(repeatTime)), 0);
    }
}

} // namespace vec
} // namespace asc_twin

namespace AscendC {

/* Sorts each group of 32 scores of src0 (with their uint32_t indexes from src1) in descending
 * order into 32 (score, index) structures of dst: repeatTime groups, 256 bytes of dst each. */
template <typename T>
__aicore__ inline void Sort32(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<uint32_t> &src1,
                              const int32_t repeatTime)
{
    static_assert(asc_twin::vec::SortType<T>(), "Sort32 on Atlas A2 supports half and float");
    asc_twin::vec::Sort32Run(dst, src0, src1, repeatTime);
}

/* Merges up to four sorted lists of (score, index) structures into one, descending. */
template <typename T>
__aicore__ inline void MrgSort(const LocalTensor<T> &dst, const MrgSortSrcList<T> &src, const MrgSort4Info &params)
{
    static_assert(asc_twin::vec::SortType<T>(), "MrgSort on Atlas A2 supports half and float");
    asc_twin::vec::MrgSortRun(dst, src, params);
}

/* How many structures of each list the last MrgSort (in exhausted-suspension mode) took. */
__aicore__ inline void GetMrgSortResult(uint16_t &mrgSortList1, uint16_t &mrgSortList2, uint16_t &mrgSortList3,
                                        uint16_t &mrgSortList4)
{
    const AscTwinVecRegs &reg = asc_twin::vec::Regs();
    if (reg.vms4_set == 0) {
        asc_twin::vec::Fail("GetMrgSortResult",
                            "no MrgSort with ifExhaustedSuspension = true ran before it (the docs define the result "
                            "only after one)",
                            0, 0);
    }
    mrgSortList1 = static_cast<uint16_t>(reg.vms4_sr & 0xffff);
    mrgSortList2 = static_cast<uint16_t>((reg.vms4_sr >> 16) & 0xffff);
    mrgSortList3 = static_cast<uint16_t>((reg.vms4_sr >> 32) & 0xffff);
    mrgSortList4 = static_cast<uint16_t>((reg.vms4_sr >> 48) & 0xffff);
}

/* The high-level API's MrgSort (docs: 高阶API, MrgSort): the same merge, its suspension mode a
 * template parameter, repeatTime in [1, 255], and in suspension mode the per-list counts written
 * to sortedNum (left alone otherwise). */
template <typename T, bool isExhaustedSuspension = false>
__aicore__ inline void MrgSort(const LocalTensor<T> &dst, const MrgSortSrcList<T> &sortList,
                               const uint16_t elementCountList[4], uint32_t sortedNum[4], uint16_t validBit,
                               const int32_t repeatTime)
{
    static_assert(asc_twin::vec::SortType<T>(), "MrgSort on Atlas A2 supports half and float");
    if (repeatTime < 1 || repeatTime > 255) {
        asc_twin::vec::Fail("MrgSort", "repeatTime out of range [1, 255]",
                            static_cast<uint64_t>(static_cast<int64_t>(repeatTime)), 255);
    }
    const MrgSort4Info info(elementCountList, isExhaustedSuspension, validBit, static_cast<uint16_t>(repeatTime));
    asc_twin::vec::MrgSortRun(dst, sortList, info);
    if (isExhaustedSuspension) {
        uint16_t c[4];
        GetMrgSortResult(c[0], c[1], c[2], c[3]);
        for (int32_t i = 0; i < 4; i++) {
            sortedNum[i] = c[i];
        }
    }
}

/* Where structure `elemOffset` of sorted data starts, and how long `elemCount` structures are,
 * counted in elements of T (8 / sizeof(T) per structure). The docs say bytes, but their own
 * example indexes a LocalTensor<T> with it, and the A2 implementation returns elements. */
template <typename T> __aicore__ inline uint32_t GetSortOffset(const uint32_t elemOffset)
{
    static_assert(asc_twin::vec::SortType<T>(), "GetSortOffset supports half and float");
    return elemOffset * (asc_twin::vec::kSortStruct / static_cast<uint32_t>(sizeof(T)));
}
template <typename T> __aicore__ inline uint32_t GetSortLen(const uint32_t elemCount)
{
    static_assert(asc_twin::vec::SortType<T>(), "GetSortLen supports half and float");
    return elemCount * (asc_twin::vec::kSortStruct / static_cast<uint32_t>(sizeof(T)));
}

/* The region-proposal APIs of older NPUs: not on Atlas A2 (docs). */
#define ASC_TWIN_NOT_ON_A2(name, use)                                                                                 \
    template <typename... T, typename... A> inline void name(A &&...)                                                 \
    {                                                                                                                 \
        static_assert(asc_twin::always_false<T..., A...>,                                                             \
                      #name " does not exist on Atlas A2 (the AscendC docs list it as unsupported there): " use);     \
    }
ASC_TWIN_NOT_ON_A2(MrgSort4, "use MrgSort")
ASC_TWIN_NOT_ON_A2(RpSort16, "use Sort32")
ASC_TWIN_NOT_ON_A2(ProposalConcat, "Sort32 takes scores and indexes as two tensors")
ASC_TWIN_NOT_ON_A2(ProposalExtract, "read the scores of the (score, index) structures, e.g. with GatherMask")
#undef ASC_TWIN_NOT_ON_A2

/* ---- ReducePairElem (PairReduceSum): the sum of each pair of adjacent elements ---- */

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
__aicore__ inline void ReducePairElem(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[],
                                      const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride)
{
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    static_assert(std::is_same<T, U>::value, "ReducePairElem on Atlas A2: the destination type is the source type");
    static_assert(asc_twin::vec::SortType<T>(), "ReducePairElem on Atlas A2 supports half and float");
    using namespace asc_twin::vec;
    PairRepeat("ReducePairElem", repeatTime);
    const Lanes lanes =
        BitLanes<isSetMask>("ReducePairElem", mask, static_cast<uint32_t>(repeatTime), LanesPerRepeat(sizeof(T)));
    PairSum("ReducePairElem", dst, src, lanes, dstRepStride, srcBlkStride, srcRepStride);
}

template <ReduceType reduceType, typename T, typename U, bool isSetMask = true>
__aicore__ inline void ReducePairElem(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask,
                                      const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride)
{
    static_assert(reduceType == ReduceType::SUM, "ReducePairElem supports ReduceType::SUM only");
    static_assert(std::is_same<T, U>::value, "ReducePairElem on Atlas A2: the destination type is the source type");
    static_assert(asc_twin::vec::SortType<T>(), "ReducePairElem on Atlas A2 supports half and float");
    using namespace asc_twin::vec;
    PairRepeat("ReducePairElem", repeatTime);
    const Lanes lanes = ContLanes<isSetMask>("ReducePairElem", mask < 0 ? 0 : static_cast<uint64_t>(mask),
                                             static_cast<uint32_t>(repeatTime), LanesPerRepeat(sizeof(T)));
    PairSum("ReducePairElem", dst, src, lanes, dstRepStride, srcBlkStride, srcRepStride);
}

/* The 9.0 name of ReducePairElem<ReduceType::SUM> (note repeatTime before mask). */
template <typename T, bool isSetMask = true>
__aicore__ inline void PairReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,
                                     const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,
                                     const int32_t srcRepStride)
{
    ReducePairElem<ReduceType::SUM, T, T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                                                     srcRepStride);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void PairReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,
                                     const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                                     const int32_t srcRepStride)
{
    ReducePairElem<ReduceType::SUM, T, T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                                                     srcRepStride);
}

} // namespace AscendC

#endif
