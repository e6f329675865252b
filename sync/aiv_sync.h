/*
 * Soft-sync primitives for AIV kernels: flags in GM that order work across cores and ranks.
 *
 * Meaning (as in HCCL's AIV kernels):
 *   Record(peer, tag)      write tag into *peer's* cell reserved for (me -> peer)       [pairwise, push]
 *   Wait(peer, tag)        poll *my* cell reserved for (peer -> me) until it reaches tag
 *   Record1vN(tag)         set *my own* broadcast cell ("my data is ready")
 *   WaitNv1(peer, tag)     poll *peer's* broadcast cell remotely until it reaches tag
 *   RecordNv1(peer)        atomically add 1 to peer's counting cell
 *   Wait1vN(n)             wait until my counting cell holds >= n, then take n from it
 *   BarrierAll(tag)        every block of this launch on this rank arrives before any leaves
 *
 * Tags are issued by the host per launch, monotonic, and compared wrap-safely ("reached": the
 * signed 32-bit difference observed - expected is >= 0), so flags are never cleared between
 * launches and a waiter that sees a later tag does not hang. host/tags.rs documents the wrap.
 *
 * Ordering: every Record* first joins all pipes (PipeBarrier<PIPE_ALL>), so the block's earlier
 * GM writes are complete before the flag store; every wait polls the cell by DMA (GM -> UB) and
 * syncs MTE2 -> S before the scalar compare, then joins all pipes again, so no later data read
 * can start before the flag was seen. Polling by DMA rather than GlobalTensor::GetValue matters:
 * the scalar unit reads GM through a data cache that other cores' writes do not invalidate.
 *
 * Every wait has a deadline (timeout_cycles of AivCommArgs, GetSystemCycle units: 50 MHz on A2).
 * On expiry the block writes an AivDiag record into its own sync area, the wait returns false,
 * and every later primitive of this SoftSync returns false at once: the kernel should return.
 */
#ifndef AIV_SYNC_H
#define AIV_SYNC_H

#include "kernel_operator.h"
#include "aiv_sync_layout.h"
#include "aiv_comm_args.h"

namespace aiv {

/* UB bytes a SoftSync needs for its scratch cells (flag cell, diag record, barrier row). */
constexpr uint32_t SYNC_SCRATCH_BYTES = 2048;
/* Event id the primitives use for their scalar <-> DMA syncs (data movers use 0..3). */
constexpr int32_t SYNC_EVENT = 7;

/* Wrap-safe "observed has reached expected". */
__aicore__ inline bool Reached(int32_t observed, int32_t expected)
{
    return static_cast<int32_t>(static_cast<uint32_t>(observed) - static_cast<uint32_t>(expected)) >= 0;
}

class SoftSync {
public:
    /* scratch: SYNC_SCRATCH_BYTES of UB, 32-byte aligned, owned by this SoftSync. */
    __aicore__ inline void Init(__gm__ const AivCommArgs *comm, const AscendC::LocalTensor<uint8_t> &scratch)
    {
        rank_ = comm->rank;
        rankSize_ = comm->rank_size;
        timeout_ = comm->timeout_cycles;
        diagBase_ = comm->diag_base;
        for (int32_t r = 0; r < rankSize_ && r < AIV_MAX_RANKS; r++) {
            areas_[r] = comm->sync[r];
        }
        cell_ = scratch.ReinterpretCast<int32_t>();
        diag_ = scratch[AIV_FLAG_BYTES].ReinterpretCast<int32_t>();
        wide_ = scratch[AIV_FLAG_BYTES + AIV_DIAG_BYTES].ReinterpretCast<int32_t>();
        for (int32_t i = 0; i < AIV_FLAG_LANES; i++) {
            cell_.SetValue(i, 0);
        }
        // The scalar stores above must land before the first poll's DMA writes the same cell.
        AscendC::PipeBarrier<PIPE_ALL>();
        failed_ = false;
    }

    __aicore__ inline bool Failed() const { return failed_; }
    __aicore__ inline int32_t Rank() const { return rank_; }
    __aicore__ inline int32_t RankSize() const { return rankSize_; }

    __aicore__ inline bool Record(int32_t peer, int32_t tag, int32_t slot = 0)
    {
        return Store(peer, PairCell(rank_, slot), tag);
    }
    __aicore__ inline bool Wait(int32_t peer, int32_t tag, int32_t slot = 0)
    {
        return Poll(rank_, PairCell(peer, slot), tag, AIV_DIAG_WAIT, peer);
    }
    __aicore__ inline bool Record1vN(int32_t tag, int32_t slot = 0)
    {
        return Store(rank_, AIV_ONE2N_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES, tag);
    }
    __aicore__ inline bool WaitNv1(int32_t peer, int32_t tag, int32_t slot = 0)
    {
        return Poll(peer, AIV_ONE2N_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES, tag, AIV_DIAG_WAIT_NV1,
                    peer);
    }

    /* Atomically adds 1 to peer's counting cell `slot`. */
    __aicore__ inline bool RecordNv1(int32_t peer, int32_t slot = 0)
    {
        if (failed_) {
            return false;
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // earlier GM writes of this block land before the count
        cell_.SetValue(0, 1);
        AscendC::SetFlag<AscendC::HardEvent::S_MTE3>(SYNC_EVENT); // MTE3 reads the scalar store
        AscendC::WaitFlag<AscendC::HardEvent::S_MTE3>(SYNC_EVENT);
        AscendC::SetAtomicAdd<int32_t>();
        AscendC::DataCopy(Gm(peer, AIV_COUNT_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES), cell_,
                          AIV_FLAG_LANES);
        AscendC::SetAtomicNone();
        AscendC::SetFlag<AscendC::HardEvent::MTE3_S>(SYNC_EVENT); // cell_ is reused by the scalar unit
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(SYNC_EVENT);
        return true;
    }

    /* Waits until my counting cell `slot` holds at least n, then subtracts n from it. */
    __aicore__ inline bool Wait1vN(int32_t n, int32_t slot = 0)
    {
        const uint32_t off = AIV_COUNT_OFFSET + static_cast<uint32_t>(slot) * AIV_FLAG_BYTES;
        if (!PollCount(off, n)) {
            return false;
        }
        cell_.SetValue(0, -n);
        AscendC::SetFlag<AscendC::HardEvent::S_MTE3>(SYNC_EVENT);
        AscendC::WaitFlag<AscendC::HardEvent::S_MTE3>(SYNC_EVENT);
        AscendC::SetAtomicAdd<int32_t>();
        AscendC::DataCopy(Gm(rank_, off), cell_, AIV_FLAG_LANES);
        AscendC::SetAtomicNone();
        AscendC::SetFlag<AscendC::HardEvent::MTE3_S>(SYNC_EVENT);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(SYNC_EVENT);
        return true;
    }

    /* All blocks of this launch on this rank reach the barrier before any passes it. */
    __aicore__ inline bool BarrierAll(int32_t tag)
    {
        const int32_t blocks = static_cast<int32_t>(AscendC::GetBlockNum());
        const int32_t me = static_cast<int32_t>(AscendC::GetBlockIdx());
        if (!Store(rank_, AIV_BARRIER_OFFSET + static_cast<uint32_t>(me) * AIV_FLAG_BYTES, tag)) {
            return false;
        }
        const int64_t start = AscendC::GetSystemCycle();
        while (true) {
            AscendC::DataCopy(wide_, Gm(rank_, AIV_BARRIER_OFFSET), static_cast<uint32_t>(blocks) * AIV_FLAG_LANES);
            AscendC::SetFlag<AscendC::HardEvent::MTE2_S>(SYNC_EVENT); // scalar reads what MTE2 loaded
            AscendC::WaitFlag<AscendC::HardEvent::MTE2_S>(SYNC_EVENT);
            int32_t laggard = -1;
            int32_t seen = 0;
            for (int32_t b = 0; b < blocks; b++) {
                seen = wide_.GetValue(static_cast<uint32_t>(b * AIV_FLAG_LANES));
                if (!Reached(seen, tag)) {
                    laggard = b;
                    break;
                }
            }
            if (laggard < 0) {
                break;
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

    /* Lane `i` of the cell the last successful Poll saw (its payload). */
    __aicore__ inline int32_t Seen(uint32_t i) const { return cell_.GetValue(i); }

    /* LINK cell of kind `kind` written by `from`, in the receiver's area. */
    __aicore__ static inline uint32_t LinkCell(int32_t from, int32_t kind)
    {
        return AIV_LINK_OFFSET +
               (static_cast<uint32_t>(from) * AIV_LINK_KINDS + static_cast<uint32_t>(kind)) * AIV_FLAG_BYTES;
    }

    /* Records a size mismatch of a send/recv pair with `peer` (see AIV_DIAG_SIZE). */
    __aicore__ inline void SizeMismatch(int32_t peer, uint64_t mine, uint64_t theirs)
    {
        WriteDiag(AIV_DIAG_SIZE, peer, theirs, static_cast<int32_t>(mine & 0x7fffffffu),
                  static_cast<int32_t>(theirs & 0x7fffffffu), static_cast<int64_t>(mine));
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

    /* Stores `value` (lane 0) and a payload (lanes 1..3) into the flag at `offset` of `rank`'s
     * area, after all earlier writes. One 32-byte DMA moves flag and payload together. */
    __aicore__ inline bool Store(int32_t rank, uint32_t offset, int32_t value, int32_t p1 = 0, int32_t p2 = 0,
                                 int32_t p3 = 0)
    {
        if (failed_) {
            return false;
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // data before flag: earlier GM writes are complete
        cell_.SetValue(0, value);
        cell_.SetValue(1, p1);
        cell_.SetValue(2, p2);
        cell_.SetValue(3, p3);
        AscendC::SetFlag<AscendC::HardEvent::S_MTE3>(SYNC_EVENT); // MTE3 reads the scalar store
        AscendC::WaitFlag<AscendC::HardEvent::S_MTE3>(SYNC_EVENT);
        AscendC::DataCopy(Gm(rank, offset), cell_, AIV_FLAG_LANES);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_S>(SYNC_EVENT); // cell_ is reused by the scalar unit
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_S>(SYNC_EVENT);
        return true;
    }

    /* Polls the flag at `offset` of `rank`'s area until it reaches `expected` (wrap-safe). */
    __aicore__ inline bool Poll(int32_t rank, uint32_t offset, int32_t expected, int32_t kind, int32_t peer)
    {
        if (failed_) {
            return false;
        }
        const int64_t start = AscendC::GetSystemCycle();
        int32_t seen = 0;
        while (true) {
            seen = Load(rank, offset);
            if (Reached(seen, expected)) {
                break;
            }
            const int64_t waited = AscendC::GetSystemCycle() - start;
            if (waited > timeout_) {
                WriteDiag(kind, peer, offset, expected, seen, waited);
                return false;
            }
        }
        AscendC::PipeBarrier<PIPE_ALL>(); // data reads after the wait start only now
        return true;
    }

private:
    __aicore__ inline AscendC::GlobalTensor<int32_t> Gm(int32_t rank, uint32_t offset) const
    {
        AscendC::GlobalTensor<int32_t> t;
        t.SetGlobalBuffer(CellAddr(rank, offset), AIV_FLAG_LANES);
        return t;
    }

    __aicore__ inline int32_t Load(int32_t rank, uint32_t offset)
    {
        AscendC::DataCopy(cell_, Gm(rank, offset), AIV_FLAG_LANES);
        AscendC::SetFlag<AscendC::HardEvent::MTE2_S>(SYNC_EVENT); // scalar reads what MTE2 loaded
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_S>(SYNC_EVENT);
        return cell_.GetValue(0);
    }

    __aicore__ inline bool PollCount(uint32_t offset, int32_t n)
    {
        if (failed_) {
            return false;
        }
        const int64_t start = AscendC::GetSystemCycle();
        while (true) {
            const int32_t seen = Load(rank_, offset);
            if (seen >= n) {
                break;
            }
            const int64_t waited = AscendC::GetSystemCycle() - start;
            if (waited > timeout_) {
                WriteDiag(AIV_DIAG_WAIT_1VN, rank_, offset, n, seen, waited);
                return false;
            }
        }
        AscendC::PipeBarrier<PIPE_ALL>();
        return true;
    }

    __aicore__ inline void WriteDiag(int32_t kind, int32_t peer, uint64_t cell, int32_t expected, int32_t observed,
                                     int64_t waited)
    {
        failed_ = true;
        const int32_t block = static_cast<int32_t>(AscendC::GetBlockIdx());
        diag_.SetValue(0, AIV_DIAG_MAGIC);
        diag_.SetValue(1, kind);
        diag_.SetValue(2, rank_);
        diag_.SetValue(3, block);
        diag_.SetValue(4, peer);
        diag_.SetValue(5, expected);
        diag_.SetValue(6, observed);
        diag_.SetValue(7, 0);
        diag_.SetValue(8, static_cast<int32_t>(cell & 0xffffffffu));
        diag_.SetValue(9, static_cast<int32_t>(cell >> 32));
        diag_.SetValue(10, static_cast<int32_t>(static_cast<uint64_t>(waited) & 0xffffffffu));
        diag_.SetValue(11, static_cast<int32_t>(static_cast<uint64_t>(waited) >> 32));
        for (int32_t i = 12; i < 16; i++) {
            diag_.SetValue(i, 0);
        }
        AscendC::PipeBarrier<PIPE_ALL>();
        AscendC::GlobalTensor<int32_t> out;
        const uint32_t record = static_cast<uint32_t>(diagBase_ + block) % AIV_MAX_BLOCKS;
        out.SetGlobalBuffer(CellAddr(rank_, AIV_DIAG_OFFSET + record * AIV_DIAG_BYTES),
                            AIV_DIAG_BYTES / 4);
        AscendC::DataCopy(out, diag_, AIV_DIAG_BYTES / 4);
        AscendC::PipeBarrier<PIPE_ALL>();
    }

    uint64_t areas_[AIV_MAX_RANKS] = {};
    int32_t rank_ = 0;
    int32_t rankSize_ = 0;
    int64_t timeout_ = 0;
    int32_t diagBase_ = 0;
    bool failed_ = false;
    AscendC::LocalTensor<int32_t> cell_;
    AscendC::LocalTensor<int32_t> diag_;
    AscendC::LocalTensor<int32_t> wide_;
};

} // namespace aiv

#endif /* AIV_SYNC_H */
