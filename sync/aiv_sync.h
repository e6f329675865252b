/*
 * Soft-sync primitives for AIV kernels: flags in GM that order work across cores and ranks.
 *
 * Meaning (as in HCCL's AIV kernels):
 *   Record(peer, tag)      write tag into *peer's* cell reserved for (me -> peer)       [pairwise, push]
 *   Wait(peer, tag)        poll *my* cell reserved for (peer -> me) until it reaches tag
 *   Record1vN(tag)         set *my own* broadcast cell ("my data is ready")
 *   WaitNv1(peer, tag)     poll *peer's* broadcast cell remotely until it reaches tag
 *   Record1vNAt(tag, addr) Record1vN that also announces where my data is (a window peers read in
 *                          place); WaitNv1Source(peer, tag, staged) waits for it and returns
 *                          that address, or `staged` after a plain Record1vN
 *   RecordNv1(peer)        atomically add 1 to peer's counting cell
 *   Wait1vN(n)             wait until my counting cell holds >= n, then take n from it
 *   BarrierAll(tag)        every block of this launch on this rank arrives before any leaves
 *
 * Tags are 64-bit, issued by the host per launch and only growing, so flags are never cleared;
 * waits compare wrap-safely ("reached": the signed 64-bit difference observed - expected is
 * >= 0), so a waiter that sees a later tag does not hang.
 *
 * Fingerprints: a collective stores its call's fingerprint (AivCollArgs.fp) in the payload lanes
 * of its broadcast cells, next to the tag; WaitNv1Matching checks that a peer's cell holds the
 * same call at the same tag (WaitMatching does the same for a pairwise cell, which Record fills
 * with a fingerprint when given one). A peer running another call (another collective, count, dtype, op,
 * algorithm or chunk) fails the wait on both sides with AIV_DIAG_MISMATCH instead of letting the
 * kernels mix data.
 *
 * Ordering: every Record* first joins all pipes (PipeBarrier<PIPE_ALL>), so the block's earlier
 * GM writes are complete before the flag store; every wait polls the cell by DMA (GM -> UB) and
 * syncs MTE2 -> S before the scalar compare, then joins all pipes again, so no later data read
 * can start before the flag was seen. Polling by DMA rather than GlobalTensor::GetValue matters:
 * the scalar unit reads GM through a data cache that other cores' writes do not invalidate.
 *
 * Every wait has a deadline (timeout_cycles of AivCommArgs, GetSystemCycle units: 50 MHz on A2).
 * On expiry (or a mismatch) the block writes an AivDiag record (AivCommArgs.diag + block) and
 * calls AscendC::Trap(): the core stops, the launch fails, and the host reads the record to name
 * the cause. Without Trap the launch's other blocks would go on waiting for the failed block,
 * each until its own deadline. (Primitives still return false after a failure, for builds that
 * compile Trap to nothing.)
 */
#ifndef AIV_SYNC_H
#define AIV_SYNC_H

#include "kernel_operator.h"
#include "aiv_sync_layout.h"
#include "aiv_comm_args.h"

namespace aiv {

/* UB bytes a SoftSync needs for its scratch cells (poll cell, diag record, barrier row, store
 * cell, count cell, zero store cell). */
constexpr uint32_t SYNC_SCRATCH_BYTES = 2048;
static_assert(4 * AIV_FLAG_BYTES + AIV_DIAG_BYTES + AIV_MAX_BLOCKS * AIV_FLAG_BYTES <= SYNC_SCRATCH_BYTES,
              "SoftSync scratch cells fit");
/* A SetFlag / WaitFlag pair of `e` on `id`. */
template <AscendC::HardEvent e> __aicore__ inline void SyncPipes(AscendC::TEventID id)
{
    AscendC::SetFlag<e>(id);
    AscendC::WaitFlag<e>(id);
}

/* Wrap-safe "observed has reached expected". */
__aicore__ inline bool Reached(int64_t observed, int64_t expected)
{
    return static_cast<int64_t>(static_cast<uint64_t>(observed) - static_cast<uint64_t>(expected)) >= 0;
}

class SoftSync {
public:
    /* scratch: SYNC_SCRATCH_BYTES of UB, 32-byte aligned, owned by this SoftSync. The kernel must
     * have a TPipe: the primitives reserve their event ids from it here (one each of MTE2_S,
     * S_MTE3 and MTE3_S, held for the kernel's life), so a queue or a fused kernel holding ids
     * cannot collide with them. */
    __aicore__ inline void Init(__gm__ const AivCommArgs *comm, const AscendC::LocalTensor<uint8_t> &scratch)
    {
        AscendC::TPipe *pipe = GetTPipePtr();
        ascendc_assert(pipe != nullptr, "SoftSync needs the kernel's TPipe: it takes its event ids from it");
        mte2S_ = pipe->AllocEventID<AscendC::HardEvent::MTE2_S>();
        sMte3_ = pipe->AllocEventID<AscendC::HardEvent::S_MTE3>();
        mte3S_ = pipe->AllocEventID<AscendC::HardEvent::MTE3_S>();
        rank_ = comm->rank;
        rankSize_ = comm->rank_size;
        timeout_ = comm->timeout_cycles;
        diag_addr_ = comm->diag;
        for (int32_t r = 0; r < rankSize_ && r < AIV_MAX_RANKS; r++) {
            areas_[r] = comm->sync[r];
        }
        cell_ = scratch.ReinterpretCast<int32_t>();
        diag_ = scratch[AIV_FLAG_BYTES].ReinterpretCast<int32_t>();
        wide_ = scratch[AIV_FLAG_BYTES + AIV_DIAG_BYTES].ReinterpretCast<int32_t>();
        out_ = scratch[AIV_FLAG_BYTES + AIV_DIAG_BYTES + AIV_MAX_BLOCKS * AIV_FLAG_BYTES].ReinterpretCast<int32_t>();
        count_ = scratch[2 * AIV_FLAG_BYTES + AIV_DIAG_BYTES + AIV_MAX_BLOCKS * AIV_FLAG_BYTES]
                     .ReinterpretCast<int32_t>();
        zero_ = scratch[3 * AIV_FLAG_BYTES + AIV_DIAG_BYTES + AIV_MAX_BLOCKS * AIV_FLAG_BYTES]
                    .ReinterpretCast<int32_t>();
        // The store cells start zero: a store rewrites only the lanes it changes, a store
        // without payload only zero_'s tag, and a count increment adds its whole cell. Polls
        // fill cell_ by DMA before anything reads it. One vector fill for the three adjacent
        // cells rather than a scalar store per lane (the twin's checkers see every one of
        // those, in every block of every launch).
        AscendC::Duplicate(out_, static_cast<int32_t>(0), 3 * AIV_FLAG_LANES);
        for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
            outPayload_[i] = 0;
        }
        // The fills land before the scalar unit or MTE3 touches these cells.
        AscendC::PipeBarrier<PIPE_ALL>();
        failed_ = false;
    }

    __aicore__ inline bool Failed() const { return failed_; }
    __aicore__ inline int32_t Rank() const { return rank_; }
    __aicore__ inline int32_t RankSize() const { return rankSize_; }

    /* Sets my cell `slot` in peer's area to `tag`, with `fp` (AIV_PAYLOAD_LANES lanes, or none). */
    __aicore__ inline bool Record(int32_t peer, int64_t tag, int32_t slot = 0, __gm__ const int32_t *fp = nullptr)
    {
        return Store(peer, PairCell(rank_, slot), tag, fp);
    }
    __aicore__ inline bool Wait(int32_t peer, int64_t tag, int32_t slot = 0)
    {
        return Poll(rank_, PairCell(peer, slot), tag, AIV_DIAG_WAIT, peer);
    }
    /* Sets my broadcast cell `slot` to `tag`, with `fp` (AIV_PAYLOAD_LANES lanes, or none). */
    __aicore__ inline bool Record1vN(int64_t tag, int32_t slot = 0, __gm__ const int32_t *fp = nullptr)
    {
        return Store(rank_, One2NCell(slot), tag, fp);
    }
    __aicore__ inline bool WaitNv1(int32_t peer, int64_t tag, int32_t slot = 0)
    {
        return Poll(peer, One2NCell(slot), tag, AIV_DIAG_WAIT_NV1, peer);
    }
    /* WaitNv1, then checks that peer's cell holds exactly this tag and fingerprint `fp`: the
     * same call. A mismatch records AIV_DIAG_MISMATCH and fails. */
    __aicore__ inline bool WaitNv1Matching(int32_t peer, int64_t tag, int32_t slot, __gm__ const int32_t *fp)
    {
        return WaitNv1(peer, tag, slot) && SeenMatches(peer, One2NCell(slot), tag, fp);
    }
    /* Record1vN(tag, slot, fp) that also announces that my data for this slot is at GM `addr`:
     * the address goes to my SRC cell `slot` first, then the broadcast cell, with
     * AIV_FP_ANNOUNCED in its first payload lane (each store joins all pipes first, so a peer that
     * sees the broadcast cell finds the SRC cell written). For data peers read in place. */
    __aicore__ inline bool Record1vNAt(int64_t tag, int32_t slot, __gm__ const int32_t *fp, uint64_t addr)
    {
        int32_t lanes[AIV_PAYLOAD_LANES] = {};
        lanes[0] = static_cast<int32_t>(static_cast<uint32_t>(addr & 0xffffffffu));
        lanes[1] = static_cast<int32_t>(static_cast<uint32_t>(addr >> 32));
        if (!StoreLanes(rank_, SrcCell(slot), tag, lanes)) {
            return false;
        }
        for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
            lanes[i] = fp[i];
        }
        lanes[0] |= AIV_FP_ANNOUNCED;
        return StoreLanes(rank_, One2NCell(slot), tag, lanes);
    }
    /* WaitNv1Matching(peer, tag, slot, fp), then where peer's data for this slot is: the address
     * its Record1vNAt announced, or `staged` after a plain Record1vN. 0 if the wait failed (or the
     * SRC cell does not hold this tag: AIV_DIAG_SOURCE). */
    __aicore__ inline uint64_t WaitNv1Source(int32_t peer, int64_t tag, int32_t slot, __gm__ const int32_t *fp,
                                             uint64_t staged)
    {
        if (!WaitNv1Matching(peer, tag, slot, fp)) {
            return 0;
        }
        if ((Seen(AIV_FLAG_PAYLOAD) & AIV_FP_ANNOUNCED) == 0) {
            return staged;
        }
        const int64_t seen = Load(peer, SrcCell(slot));
        if (seen != tag) {
            WriteDiag(AIV_DIAG_SOURCE, peer, SrcCell(slot), tag, seen, 0);
            return 0;
        }
        return static_cast<uint64_t>(static_cast<uint32_t>(Seen(AIV_FLAG_PAYLOAD))) |
               (static_cast<uint64_t>(static_cast<uint32_t>(Seen(AIV_FLAG_PAYLOAD + 1))) << 32);
    }
    /* Wait, then checks that my cell from peer holds exactly this tag and fingerprint `fp` (a
     * Record with that fingerprint): the same call. A mismatch records AIV_DIAG_MISMATCH and
     * fails. */
    __aicore__ inline bool WaitMatching(int32_t peer, int64_t tag, int32_t slot, __gm__ const int32_t *fp)
    {
        return Wait(peer, tag, slot) && SeenMatches(peer, PairCell(peer, slot), tag, fp);
    }

    /* Chains a rank's own blocks: Done(tag) says "block me finished its step of this launch";
     * AfterBlock(b, tag) waits for block b's Done. Uses my PAIR cells from me to me. */
    __aicore__ inline bool Done(int64_t tag)
    {
        return Store(rank_, PairCell(rank_, static_cast<int32_t>(AscendC::GetBlockIdx())), tag);
    }
    __aicore__ inline bool AfterBlock(int32_t block, int64_t tag)
    {
        return Poll(rank_, PairCell(rank_, block), tag, AIV_DIAG_CHAIN, rank_);
    }

    /* Atomically adds 1 to peer's counting cell `slot`. */
    __aicore__ inline bool RecordNv1(int32_t peer, int32_t slot = 0)
    {
        if (failed_) {
            return false;
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // earlier GM writes of this block land before the count
        return AddToCount(peer, CountCell(slot), 1);
    }

    /* Waits until my counting cell `slot` holds at least n, then subtracts n from it. */
    __aicore__ inline bool Wait1vN(int32_t n, int32_t slot = 0)
    {
        const uint32_t off = CountCell(slot);
        if (!PollCount(off, n)) {
            return false;
        }
        return AddToCount(rank_, off, -n);
    }

    /* All blocks of this launch on this rank reach the barrier before any passes it. */
    __aicore__ inline bool BarrierAll(int64_t tag)
    {
        const int32_t blocks = static_cast<int32_t>(AscendC::GetBlockNum());
        const int32_t me = static_cast<int32_t>(AscendC::GetBlockIdx());
        if (!Store(rank_, AIV_BARRIER_OFFSET + static_cast<uint32_t>(me) * AIV_FLAG_BYTES, tag)) {
            return false;
        }
        const int64_t start = AscendC::GetSystemCycle();
        int64_t abortCheck = AIV_ABORT_CHECK_CYCLES;
        while (true) {
            AscendC::DataCopy(wide_, Gm(rank_, AIV_BARRIER_OFFSET), static_cast<uint32_t>(blocks) * AIV_FLAG_LANES);
            SyncPipes<AscendC::HardEvent::MTE2_S>(mte2S_); // scalar reads what MTE2 loaded
            int32_t laggard = -1;
            int64_t seen = 0;
            for (int32_t b = 0; b < blocks; b++) {
                seen = Tag(wide_, static_cast<uint32_t>(b * AIV_FLAG_LANES));
                if (!Reached(seen, tag)) {
                    laggard = b;
                    break;
                }
            }
            if (laggard < 0) {
                break;
            }
            if (Aborted(AscendC::GetSystemCycle() - start, abortCheck, rank_,
                        AIV_BARRIER_OFFSET + static_cast<uint64_t>(laggard) * AIV_FLAG_BYTES, tag)) {
                return false;
            }
            if (AscendC::GetSystemCycle() - start > timeout_) {
                WriteDiag(AIV_DIAG_BARRIER, rank_,
                          AIV_BARRIER_OFFSET + static_cast<uint64_t>(laggard) * AIV_FLAG_BYTES, tag, seen,
                          AscendC::GetSystemCycle() - start);
                return false;
            }
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // nothing after the barrier starts before it was passed
        return true;
    }

    /* Lane `i` of the cell the last successful Poll saw (payload lanes start at AIV_FLAG_PAYLOAD). */
    __aicore__ inline int32_t Seen(uint32_t i) const { return cell_.GetValue(i); }
    /* The tag of the cell the last successful Poll saw. */
    __aicore__ inline int64_t SeenTag() const { return Tag(cell_, 0); }

    /* LINK cell of kind `kind` written by `from`, in the receiver's area. */
    __aicore__ static inline uint32_t LinkCell(int32_t from, int32_t kind)
    {
        return AIV_LINK_OFFSET +
               (static_cast<uint32_t>(from) * AIV_LINK_KINDS + static_cast<uint32_t>(kind)) * AIV_FLAG_BYTES;
    }

    /* Records a size mismatch of a send/recv pair with `peer` (see AIV_DIAG_SIZE). */
    __aicore__ inline void SizeMismatch(int32_t peer, uint64_t mine, uint64_t theirs)
    {
        WriteDiag(AIV_DIAG_SIZE, peer, 0, static_cast<int64_t>(mine), static_cast<int64_t>(theirs), 0);
    }

    /* GM address of byte `offset` of `rank`'s sync area. */
    __aicore__ inline __gm__ int32_t *CellAddr(int32_t rank, uint32_t offset) const
    {
        return reinterpret_cast<__gm__ int32_t *>(areas_[rank] + offset);
    }

    /* Pairwise cell that `from` writes in the receiver's area. */
    __aicore__ static inline uint32_t PairCell(int32_t from, int32_t slot)
    {
        return AIV_PAIR_OFFSET +
               (static_cast<uint32_t>(from) * AIV_PAIR_SLOTS + static_cast<uint32_t>(slot)) * AIV_FLAG_BYTES;
    }
    __aicore__ static inline uint32_t One2NCell(int32_t slot)
    {
        return AIV_ONE2N_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES;
    }
    __aicore__ static inline uint32_t CountCell(int32_t slot)
    {
        return AIV_COUNT_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES;
    }
    __aicore__ static inline uint32_t SrcCell(int32_t slot)
    {
        return AIV_SRC_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES;
    }

    /* Stores `value` (lanes 0-1) and a payload (lanes 2-7, zero when `payload` is null) into the
     * flag at `offset` of `rank`'s area, after all earlier writes. One 32-byte DMA moves flag and
     * payload together. */
    __aicore__ inline bool Store(int32_t rank, uint32_t offset, int64_t value, __gm__ const int32_t *payload = nullptr)
    {
        int32_t lanes[AIV_PAYLOAD_LANES] = {};
        if (payload != nullptr) {
            for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
                lanes[i] = payload[i];
            }
        }
        return StoreLanes(rank, offset, value, lanes);
    }

    /* Store with the payload lanes given by value. */
    __aicore__ inline bool StoreLanes(int32_t rank, uint32_t offset, int64_t value, const int32_t *lanes)
    {
        if (failed_) {
            return false;
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // data before flag: earlier GM writes are complete
        // A store without payload leaves from zero_, whose payload lanes stay zero. The other
        // store cell keeps its payload between stores (a launch stores the same fingerprint
        // again and again): only changed lanes are rewritten. So a plain Record after a
        // Record1vN with a fingerprint rewrites no lane (six scalar stores fewer).
        bool bare = true;
        for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
            bare = bare && lanes[i] == 0;
        }
        const AscendC::LocalTensor<int32_t> &src = bare ? zero_ : out_;
        if (!bare) {
            for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
                if (outPayload_[i] != lanes[i]) {
                    outPayload_[i] = lanes[i];
                    out_.SetValue(AIV_FLAG_PAYLOAD + i, lanes[i]);
                }
            }
        }
        src.ReinterpretCast<int64_t>().SetValue(0, value);
        SyncPipes<AscendC::HardEvent::S_MTE3>(sMte3_); // MTE3 reads the scalar stores
        AscendC::DataCopy(Gm(rank, offset), src, AIV_FLAG_LANES);
        SyncPipes<AscendC::HardEvent::MTE3_S>(mte3S_); // the cell is reused by the scalar unit
        return true;
    }

    /* Polls the flag at `offset` of `rank`'s area until it reaches `expected` (wrap-safe). */
    __aicore__ inline bool Poll(int32_t rank, uint32_t offset, int64_t expected, int32_t kind, int32_t peer)
    {
        if (failed_) {
            return false;
        }
        const int64_t start = AscendC::GetSystemCycle();
        int64_t abortCheck = AIV_ABORT_CHECK_CYCLES;
        int64_t seen = 0;
        while (true) {
            seen = Load(rank, offset);
            if (Reached(seen, expected)) {
                break;
            }
            const int64_t waited = AscendC::GetSystemCycle() - start;
            if (Aborted(waited, abortCheck, peer, offset, expected)) {
                return false;
            }
            if (waited > timeout_) {
                WriteDiag(kind, peer, offset, expected, seen, waited);
                return false;
            }
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // data reads after the wait start only now
        return true;
    }

private:
    /* Whether the cell just polled (`cell`, written by `peer`) holds exactly `tag` and `fp`; if
     * not, records AIV_DIAG_MISMATCH. */
    __aicore__ inline bool SeenMatches(int32_t peer, uint32_t cell, int64_t tag, __gm__ const int32_t *fp)
    {
        bool same = SeenTag() == tag;
        for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
            // An announcing writer (Record1vNAt) marks the first lane: still the same call.
            const int32_t mask = i == 0 ? ~static_cast<int32_t>(AIV_FP_ANNOUNCED) : ~0;
            same = same && (Seen(AIV_FLAG_PAYLOAD + i) & mask) == fp[i];
        }
        if (!same) {
            WriteDiag(AIV_DIAG_MISMATCH, peer, cell, tag, SeenTag(), 0);
        }
        return same;
    }

    /* Atomically adds `n` to lane 0 of the counting cell at `offset` of `rank`'s area (the other
     * lanes of the count cell are zero: they add nothing). */
    __aicore__ inline bool AddToCount(int32_t rank, uint32_t offset, int32_t n)
    {
        count_.SetValue(0, n);
        SyncPipes<AscendC::HardEvent::S_MTE3>(sMte3_); // MTE3 reads the scalar store
        AscendC::SetAtomicAdd<int32_t>();
        AscendC::DataCopy(Gm(rank, offset), count_, AIV_FLAG_LANES);
        AscendC::SetAtomicNone();
        SyncPipes<AscendC::HardEvent::MTE3_S>(mte3S_); // count_ is reused by the scalar unit
        return true;
    }

    /* The 64-bit tag at int32 lane `lane` (even) of `t`. */
    __aicore__ static inline int64_t Tag(const AscendC::LocalTensor<int32_t> &t, uint32_t lane)
    {
        return t.ReinterpretCast<int64_t>().GetValue(lane / 2);
    }

    __aicore__ inline AscendC::GlobalTensor<int32_t> Gm(int32_t rank, uint32_t offset) const
    {
        AscendC::GlobalTensor<int32_t> t;
        t.SetGlobalBuffer(CellAddr(rank, offset), AIV_FLAG_LANES);
        return t;
    }

    __aicore__ inline int64_t Load(int32_t rank, uint32_t offset)
    {
        AscendC::DataCopy(cell_, Gm(rank, offset), AIV_FLAG_LANES);
        SyncPipes<AscendC::HardEvent::MTE2_S>(mte2S_); // scalar reads what MTE2 loaded
        return Tag(cell_, 0);
    }

    __aicore__ inline bool PollCount(uint32_t offset, int32_t n)
    {
        if (failed_) {
            return false;
        }
        const int64_t start = AscendC::GetSystemCycle();
        int64_t abortCheck = AIV_ABORT_CHECK_CYCLES;
        while (true) {
            Load(rank_, offset);
            const int32_t seen = cell_.GetValue(0);
            if (seen >= n) {
                break;
            }
            const int64_t waited = AscendC::GetSystemCycle() - start;
            if (Aborted(waited, abortCheck, rank_, offset, n)) {
                return false;
            }
            if (waited > timeout_) {
                WriteDiag(AIV_DIAG_WAIT_1VN, rank_, offset, n, seen, waited);
                return false;
            }
        }
        AscendC::PipeBarrier<PIPE_ALL>();
        return true;
    }

    /* Once a wait has waited `check` cycles: reads this rank's ABORT cell (then checks again
     * AIV_ABORT_CHECK_CYCLES later); if the host set it, records AIV_DIAG_ABORTED for the wait on
     * `peer`'s `cell` for `expected` and returns true. */
    __aicore__ inline bool Aborted(int64_t waited, int64_t &check, int32_t peer, uint64_t cell, int64_t expected)
    {
        if (waited < check) {
            return false;
        }
        check = waited + AIV_ABORT_CHECK_CYCLES;
        const int64_t flag = Load(rank_, AIV_ABORT_OFFSET);
        if (flag == 0) {
            return false;
        }
        WriteDiag(AIV_DIAG_ABORTED, peer, cell, expected, flag, waited);
        return true;
    }

    __aicore__ inline void SetWide(uint32_t lane, uint64_t v)
    {
        diag_.SetValue(lane, static_cast<int32_t>(v & 0xffffffffu));
        diag_.SetValue(lane + 1, static_cast<int32_t>(v >> 32));
    }

    /* Writes this block's AivDiag record (see aiv_sync_layout.h); the lanes of the cell last
     * polled go into `seen`. */
    __aicore__ inline void WriteDiag(int32_t kind, int32_t peer, uint64_t cell, int64_t expected, int64_t observed,
                                     int64_t waited)
    {
        failed_ = true;
        const int32_t block = static_cast<int32_t>(AscendC::GetBlockIdx());
        diag_.SetValue(0, AIV_DIAG_MAGIC);
        diag_.SetValue(1, kind);
        diag_.SetValue(2, rank_);
        diag_.SetValue(3, block);
        diag_.SetValue(4, peer);
        diag_.SetValue(5, 0);
        SetWide(6, cell);
        SetWide(8, static_cast<uint64_t>(expected));
        SetWide(10, static_cast<uint64_t>(observed));
        SetWide(12, static_cast<uint64_t>(waited));
        for (int32_t i = 0; i < AIV_PAYLOAD_LANES; i++) {
            diag_.SetValue(14 + i, cell_.GetValue(AIV_FLAG_PAYLOAD + i));
        }
        for (int32_t i = 14 + AIV_PAYLOAD_LANES; i < AIV_DIAG_BYTES / 4; i++) {
            diag_.SetValue(i, 0);
        }
        AscendC::PipeBarrier<PIPE_ALL>();
        AscendC::GlobalTensor<int32_t> out;
        out.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(diag_addr_ + static_cast<uint64_t>(block) * AIV_DIAG_BYTES),
                            AIV_DIAG_BYTES / 4);
        AscendC::DataCopy(out, diag_, AIV_DIAG_BYTES / 4);
        AscendC::PipeBarrier<PIPE_ALL>(); // the record is in GM before the core stops
        AscendC::Trap();
    }

    uint64_t areas_[AIV_MAX_RANKS] = {};
    int32_t rank_ = 0;
    int32_t rankSize_ = 0;
    int64_t timeout_ = 0;
    uint64_t diag_addr_ = 0;
    bool failed_ = false;
    AscendC::TEventID mte2S_ = 0; /* reserved in Init */
    AscendC::TEventID sMte3_ = 0;
    AscendC::TEventID mte3S_ = 0;
    int32_t outPayload_[AIV_PAYLOAD_LANES] = {};
    AscendC::LocalTensor<int32_t> cell_; /* polls land here */
    AscendC::LocalTensor<int32_t> diag_;
    AscendC::LocalTensor<int32_t> wide_; /* BarrierAll's row of cells */
    AscendC::LocalTensor<int32_t> out_;  /* stores leave from here */
    AscendC::LocalTensor<int32_t> count_; /* atomic count increments leave from here */
    AscendC::LocalTensor<int32_t> zero_;  /* stores without payload leave from here */
};

} // namespace aiv

#endif /* AIV_SYNC_H */
