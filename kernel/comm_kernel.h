/*
 * CommKernel: the Unified Buffer layout every communication kernel of aiv-comm starts with — a
 * CpGM2GM stage (STAGE_BYTES, two ping-pong halves) and the SoftSync scratch cells — and the
 * SoftSync bound to the launch's communicator arguments. Declare one at the top of a kernel.
 */
#ifndef AIV_COMM_KERNEL_H
#define AIV_COMM_KERNEL_H

#include "kernel_operator.h"
#include "aiv_comm_args.h"
#include "aiv_sync.h"
#include "cp_gm2gm.h"

namespace aiv {

static_assert(STAGE_BYTES + SYNC_SCRATCH_BYTES <= KERNEL_UB_BYTES,
              "a communication kernel leaves AscendC's reserved UB alone");

class CommKernel {
public:
    /* withStage: also reserve the CpGM2GM stage (kernels that only signal do not need it). */
    __aicore__ inline CommKernel(__gm__ const AivCommArgs *comm, bool withStage = true)
    {
        if (withStage) {
            pipe_.InitBuffer(stage_, STAGE_BYTES);
            ub.Init(stage_.Get<uint8_t>());
        }
        pipe_.InitBuffer(scratch_, SYNC_SCRATCH_BYTES);
        sync.Init(comm, scratch_.Get<uint8_t>());
    }

private:
    AscendC::TPipe pipe_; /* first: the members below take event ids from it */

public:
    SoftSync sync;
    CopyStage ub; /* the CpGM2GM stage, with its event ids reserved for the kernel */

private:
    AscendC::TBuf<AscendC::TPosition::VECCALC> stage_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> scratch_;
};

/* Which peer a block of a collective works with, and which part of that peer's transfer: a
 * launch has `parts` blocks per peer (block_dim = rank_size * parts, parts >= 1), block
 * `peer + rank_size * part`. Block (rank, part) does the local part. A block whose part is out
 * of range (block_dim not a multiple of rank_size) has nothing to do. */
struct PeerPart {
    int32_t peer;
    int32_t part;
    int32_t parts;

    __aicore__ inline bool Idle() const { return part >= parts; }
    /* The block index of (p, my part): the block of the same part working with peer p. */
    __aicore__ inline int32_t Block(int32_t p, int32_t rankSize) const { return p + rankSize * part; }
};

__aicore__ inline PeerPart BlockPeer(int32_t rankSize)
{
    const int32_t b = static_cast<int32_t>(AscendC::GetBlockIdx());
    const int32_t dim = static_cast<int32_t>(AscendC::GetBlockNum());
    PeerPart pp;
    pp.peer = b % rankSize;
    pp.part = b / rankSize;
    pp.parts = dim / rankSize > 0 ? dim / rankSize : 1;
    return pp;
}

/* Byte range [off, off + len) of piece s of `bytes` cut into n pieces of whole 32-byte blocks
 * (all but the last; trailing pieces may be empty). */
__aicore__ inline void Split(uint64_t bytes, int32_t n, int32_t s, uint64_t &off, uint64_t &len)
{
    const uint64_t per = ((bytes + static_cast<uint64_t>(n) - 1) / static_cast<uint64_t>(n) + 31) / 32 * 32;
    off = per * static_cast<uint64_t>(s);
    if (off > bytes) {
        off = bytes;
    }
    len = (bytes - off) < per ? (bytes - off) : per;
}

/* In a launch whose blocks are parts of the chunk (block_dim = parts): this block's part of
 * `bytes` (Split by GetBlockNum()), and its index. */
__aicore__ inline int32_t BlockPart(uint64_t bytes, uint64_t &off, uint64_t &len)
{
    const int32_t part = static_cast<int32_t>(AscendC::GetBlockIdx());
    Split(bytes, static_cast<int32_t>(AscendC::GetBlockNum()), part, off, len);
    return part;
}

/* The post-sync of a block that has read part `slot` of every peer's HCCL buffer: Record(q, tag,
 * slot) to every peer q ("done reading yours"; Record joins all pipes first, so the reads are
 * done), then Wait(q, tag, slot) from every peer, so that no rank restages its buffer while a
 * peer still reads it. Peers in turn from rank + 1 on. False if a wait failed. */
__aicore__ inline bool DoneWithEveryPeer(SoftSync &sync, int32_t rank, int32_t n, int64_t tag, int32_t slot)
{
    for (int32_t i = 1; i < n; i++) {
        if (!sync.Record((rank + i) % n, tag, slot)) {
            return false;
        }
    }
    for (int32_t i = 1; i < n; i++) {
        if (!sync.Wait((rank + i) % n, tag, slot)) {
            return false;
        }
    }
    return true;
}

} // namespace aiv

#endif /* AIV_COMM_KERNEL_H */
