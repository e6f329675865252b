// kernels: aiv_sync_selftest
// auto_sync: off
/*
 * aiv_sync_selftest: exercises the soft-sync primitives across ranks and blocks and checks that
 * data written before a flag is visible after it (tests/twin/soft_sync.rs). Each rank's HCCL buffer serves
 * as the data area; each block reports the mismatches it saw in its result cell.
 */
#include "kernel_operator.h"
#include "selftest_args.h"
#include "aiv_sync.h"

using namespace AscendC;

namespace {

/* A 32-byte data word in GM, moved by DMA like a flag (so it is not cached by the scalar unit). */
class Words {
public:
    __aicore__ inline void Init(const LocalTensor<uint8_t> &ub) { cell_ = ub.ReinterpretCast<int32_t>(); }
    __aicore__ inline void Put(uint64_t addr, int32_t value)
    {
        cell_.SetValue(0, value);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID2); // MTE3 reads the scalar store
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID2);
        DataCopy(Gm(addr), cell_, 8);
        SetFlag<HardEvent::MTE3_S>(EVENT_ID2); // the scalar unit reuses the cell afterwards
        WaitFlag<HardEvent::MTE3_S>(EVENT_ID2);
    }
    __aicore__ inline int32_t Get(uint64_t addr)
    {
        DataCopy(cell_, Gm(addr), 8);
        SetFlag<HardEvent::MTE2_S>(EVENT_ID2); // the scalar read waits for the load
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID2);
        return cell_.GetValue(0);
    }

private:
    __aicore__ inline GlobalTensor<int32_t> Gm(uint64_t addr)
    {
        GlobalTensor<int32_t> t;
        t.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(addr), 8);
        return t;
    }
    LocalTensor<int32_t> cell_;
};

} // namespace

extern "C" __global__ __aicore__ void aiv_sync_selftest(GM_ADDR argsAddr)
{
    __gm__ const AivSyncTestArgs *a = reinterpret_cast<__gm__ const AivSyncTestArgs *>(argsAddr);
    TPipe pipe;
    TBuf<TPosition::VECCALC> scratch;
    TBuf<TPosition::VECCALC> words;
    pipe.InitBuffer(scratch, aiv::SYNC_SCRATCH_BYTES);
    pipe.InitBuffer(words, 64);
    aiv::SoftSync sync;
    sync.Init(&a->comm, scratch.Get<uint8_t>());
    Words w;
    w.Init(words.Get<uint8_t>());

    const int32_t rank = a->comm.rank;
    const int32_t size = a->comm.rank_size;
    const int32_t blocks = static_cast<int32_t>(GetBlockNum());
    const int32_t b = static_cast<int32_t>(GetBlockIdx());
    const int64_t tag0 = a->tag_base + a->comm.tag;
    const int32_t rounds = static_cast<int32_t>(a->rounds);
    int32_t bad = 0;

    switch (a->mode) {
    case AIV_ST_PINGPONG: {
        const int32_t peer = 1 - rank;
        const uint64_t mine = a->comm.hccl[rank] + static_cast<uint64_t>(b) * 32;
        const uint64_t theirs = a->comm.hccl[peer] + static_cast<uint64_t>(b) * 32;
        for (int32_t k = 0; k < rounds; k++) {
            const int64_t tag = tag0 + k;
            // Data words carry the tag's low half (a 32-byte DMA word of int32 lanes).
            const int32_t word = static_cast<int32_t>(static_cast<uint64_t>(tag) & 0xffffffffu);
            if (rank == 0) {
                w.Put(theirs, word);
                if (!sync.Record(peer, tag, b) || !sync.Wait(peer, tag, b)) {
                    break;
                }
                bad += w.Get(mine) != word ? 1 : 0;
            } else {
                if (!sync.Wait(peer, tag, b)) {
                    break;
                }
                const int32_t got = w.Get(mine);
                bad += got != word ? 1 : 0;
                w.Put(theirs, got);
                if (!sync.Record(peer, tag, b)) {
                    break;
                }
            }
        }
        break;
    }
    case AIV_ST_ONE2N: {
        const uint64_t data = a->comm.hccl[0];
        for (int32_t k = 0; k < rounds; k++) {
            const int64_t tag = tag0 + k;
            const int32_t word = static_cast<int32_t>(static_cast<uint64_t>(tag) & 0xffffffffu);
            if (rank == 0) {
                if (b == 0) {
                    w.Put(data, word);
                    sync.Record1vN(tag);
                    // Back-pressure: wait until every reader has seen this round.
                    for (int32_t p = 1; p < size; p++) {
                        if (!sync.Wait1vN(blocks, 1)) {
                            break;
                        }
                    }
                }
            } else {
                if (!sync.WaitNv1(0, tag)) {
                    break;
                }
                const int32_t got = w.Get(data);
                bad += got == word ? 0 : 1;
                sync.RecordNv1(0, 1);
            }
        }
        break;
    }
    case AIV_ST_COUNT: {
        const int32_t writers = (size - 1) * blocks;
        for (int32_t k = 0; k < rounds; k++) {
            const int64_t tag = tag0 + k;
            const int32_t word = static_cast<int32_t>(static_cast<uint64_t>(tag) & 0xffffffu);
            if (rank == 0) {
                if (b == 0) {
                    if (!sync.Wait1vN(writers)) {
                        break;
                    }
                    for (int32_t r = 1; r < size; r++) {
                        for (int32_t j = 0; j < blocks; j++) {
                            const uint64_t cell = a->comm.hccl[0] + static_cast<uint64_t>(r * blocks + j) * 32;
                            bad += w.Get(cell) != word * 64 + r + j ? 1 : 0;
                        }
                    }
                    sync.Record1vN(tag, 1); // writers may start the next round
                }
            } else {
                w.Put(a->comm.hccl[0] + static_cast<uint64_t>(rank * blocks + b) * 32, word * 64 + rank + b);
                if (!sync.RecordNv1(0) || !sync.WaitNv1(0, tag, 1)) {
                    break;
                }
            }
        }
        break;
    }
    case AIV_ST_ONE_WAITS:
        if (rank == 0 && static_cast<uint32_t>(b) == a->wrong_tag) {
            sync.Wait(1, tag0, b);
        }
        break;
    case AIV_ST_TIMEOUT:
        if (rank == 0) {
            sync.Wait(1, tag0, b);
        } else if (a->wrong_tag != 0) {
            sync.Record(0, tag0 - 1, b);
        }
        break;
    case AIV_ST_BARRIER: {
        // Round k uses word slot k % 2: a block rewrites a slot two rounds later, after the
        // barrier of the round between, which every reader of the slot passed only after its
        // reads (one slot would let a fast block overwrite its word while others still read it).
        const uint64_t base = a->comm.hccl[rank];
        for (int32_t k = 0; k < rounds; k++) {
            const int64_t tag = tag0 + k;
            const int32_t word = static_cast<int32_t>(static_cast<uint64_t>(tag) & 0xffffffffu);
            const uint64_t slots = base + static_cast<uint64_t>(k % 2) * static_cast<uint64_t>(blocks) * 32;
            w.Put(slots + static_cast<uint64_t>(b) * 32, word);
            if (!sync.BarrierAll(tag)) {
                break;
            }
            for (int32_t j = 0; j < blocks; j++) {
                bad += w.Get(slots + static_cast<uint64_t>(j) * 32) == word ? 0 : 1;
            }
        }
        break;
    }
    case AIV_ST_PUBLISH: {
        if (b != 0) {
            break;
        }
        constexpr uint32_t MAX_BYTES = 4096;
        const uint32_t bytes = a->bytes < 32 ? 32 : (a->bytes > MAX_BYTES ? MAX_BYTES : a->bytes / 32 * 32);
        const int32_t word = static_cast<int32_t>(static_cast<uint64_t>(tag0) & 0xffffffffu);
        TBuf<TPosition::VECCALC> dataBuf;
        pipe.InitBuffer(dataBuf, MAX_BYTES);
        LocalTensor<int32_t> data = dataBuf.Get<int32_t>();
        GlobalTensor<int32_t> shared;
        shared.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(a->comm.hccl[0]), bytes / 4);
        // Rank 1 announces it is running, so that the two launches overlap in time.
        if (rank == 0) {
            if (!sync.Wait(1, tag0)) {
                break;
            }
            Duplicate(data, word, static_cast<int32_t>(bytes / 4));
            SetFlag<HardEvent::V_MTE3>(EVENT_ID3); // MTE3 stores what the vector unit filled
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID3);
            DataCopy(shared, data, bytes / 4);
            sync.Record1vN(tag0); // joins all pipes first: the data is in GM before the flag
        } else if (rank == 1) {
            const bool early = a->wrong_tag != 0; // read before waiting for the flag: a race
            if (!sync.Record(0, tag0) || (!early && !sync.WaitNv1(0, tag0))) {
                break;
            }
            DataCopy(data, shared, bytes / 4);
            SetFlag<HardEvent::MTE2_S>(EVENT_ID3);
            WaitFlag<HardEvent::MTE2_S>(EVENT_ID3);
            bad += data.GetValue(0) != word ? 1 : 0;
            if (early) {
                sync.WaitNv1(0, tag0); // keeps the launches overlapping, orders nothing read before
            }
        }
        break;
    }
    default:
        break;
    }
    w.Put(a->result + static_cast<uint64_t>(b) * 32, bad + (sync.Failed() ? 1000000 : 0));
}
