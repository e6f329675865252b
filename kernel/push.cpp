/*
 * Push-mode one-shot AllGather (aiv_all_gather_push) and AllReduce (aiv_all_reduce_push): one
 * chunk per launch, `parts` blocks per rank (block_dim = rank_size * parts, comm_kernel.h's
 * PeerPart: block peer + rank_size * part). Instead of staging its input in its own HCCL buffer
 * for the peers to pull (all_gather.cpp, all_reduce.cpp), each rank writes its input straight
 * into a slot of every peer's push region and flags that peer; the peer reads the slot locally.
 * One flag round is on the critical path (pull has two: "staged", then the post-sync that keeps
 * a buffer from being reused while a peer reads it).
 *
 * The push region: every rank's HCCL buffer allocation holds, after the comm.hccl_bytes bytes
 * the other kernels use, a region only these two kernels touch (region_off = hccl_bytes), cut
 * into one slot of slot_bytes per writer: writer s's slot in rank r's region is
 * hccl[r] + region_off + s * slot_bytes. Only s writes it, only r reads it.
 *
 * Cells (aiv_args.h): READY(part) = PAIR[s][AIV_PUSH_READY_SLOT + part] in r's area, written by
 * s with this launch's tag and s's call fingerprint; ACK = PAIR[r][AIV_PUSH_ACK_SLOT] in s's
 * area, written by r with the tag of the launch whose pushes r has finished reading.
 *
 * Reuse (why a writer never overwrites a slot its reader may still read): the host passes the
 * tag of this communicator's previous push launch (prev_tag; every rank makes the same calls, so
 * it is the same on every rank, and the fingerprints catch a rank that does not). Before writing
 * its slot in r's region, s waits until ACK from r has reached prev_tag: r has finished reading
 * every slot of the previous push launch (ACK is written after all of r's blocks are past their
 * reads, see below; a later push launch's ACK also implies it, as r's launches run in order).
 * The ACK normally arrived long ago (r wrote it at the end of the previous launch), so the wait
 * costs one poll and no round. The first push launch of a communicator has prev_tag 0: the
 * region has never been written. No other kernel touches the region, so a peer's push can never
 * meet a pull kernel's staging. READY(part) cells are written only by push launches, and s's
 * next push launch writes them only after r's ACK of this one (which r writes after reading
 * READY): r always sees exactly this launch's tag there, never a later one.
 *
 * Fingerprints: the receiver checks that READY holds exactly this tag and this call's
 * fingerprint (SoftSync::WaitMatching: else it records AIV_DIAG_MISMATCH and traps). Block
 * (rank, part) also stores the fingerprint in my broadcast cell `part` (Record1vN) first thing,
 * so that a peer running a pull kernel at this point (which polls that cell with
 * WaitNv1Matching) reports the mismatch instead of waiting for a cell push never writes.
 *
 * AllGather, block (peer, part), over part `part` of the chunk (aiv::Split):
 *   peer == rank: Record1vN(tag, part, fp); input -> output slot rank (skipped in place: the
 *                 input is that slot); BarrierAll if parts > 1.
 *   peer != rank: Wait(peer, prev_tag, ACK); input -> my slot in peer's region; READY(part) to
 *                 peer; wait for peer's READY(part) (tag and fingerprint); my region's slot peer
 *                 -> output slot peer; BarrierAll(tag) if parts > 1 (every block of mine is past
 *                 its reads: ACK then covers every part of the slot); part 0: ACK to peer.
 *
 * AllReduce, block (peer, part): part `part` of the chunk, cut again into rank_size sub-slices;
 * block (q, part) pushes part `part` to q (q != rank) and reduces sub-slice q of it:
 *   push as above (peer == rank: Record1vN only); in place (input == output) BarrierAll(tag):
 *   every push of mine has read my input before any block overwrites it;
 *   wait for READY(part) from every peer; reduce sub-slice `peer` of every rank's part, in rank
 *   order 0, 1, ..., n-1 on every rank (rank r's from my input, the others' from their slots of
 *   my region), into the output: every rank computes the same bits;
 *   BarrierAll(tag + 1): every block of mine is past its reads of every slot; part 0 of each
 *   peer's blocks: ACK to that peer.
 * The reduce is aiv::ReduceInOrder (reduce_in_order.h): in UB with vector Add for a sum of f32,
 * f16, i32 or i16 (n reads + 1 write of the sub-slice), else with the store-side atomics (n
 * reads + n writes), a fixed order either way. In place, the atomic path first copies my own
 * sub-slice into my region's slot rank (never written by a peer), since the output store of
 * rank 0's piece overwrites the input.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"
#include "reduce_in_order.h"

using namespace AscendC;

namespace {

static_assert(AIV_PUSH_READY_SLOT + AIV_PUSH_MAX_PARTS <= AIV_PAIR_SLOTS, "push cells fit");
static_assert(AIV_PUSH_ACK_SLOT < AIV_PUSH_READY_SLOT, "the ACK cell is not a READY cell");

struct Push {
    __gm__ const AivPushArgs *a;
    aiv::SoftSync *sync;
    const aiv::CopyStage *ub;
    int32_t rank;
    int32_t n;
    int64_t tag;

    /* Writer `writer`'s slot in `owner`'s push region. */
    __aicore__ inline uint64_t Slot(int32_t owner, int32_t writer) const
    {
        return a->comm.hccl[owner] + a->region_off + static_cast<uint64_t>(writer) * a->slot_bytes;
    }

    /* Waits until `from` has pushed part `part` of this launch to me, and checks it runs this
     * same call (tag and fingerprint). */
    __aicore__ inline bool WaitReady(int32_t from, int32_t part) const
    {
        return sync->WaitMatching(from, tag, AIV_PUSH_READY_SLOT + part, a->fp);
    }

    /* Pushes [off, off + len) of my input into my slot of `peer`'s region, after peer's ACK of
     * the previous push launch, then flags READY(part) with my fingerprint. */
    __aicore__ inline bool PushTo(int32_t peer, int32_t part, uint64_t off, uint64_t len) const
    {
        // Peer has finished reading what my previous push launch wrote into its region.
        if (a->prev_tag != 0 && !sync->Wait(peer, a->prev_tag, AIV_PUSH_ACK_SLOT)) {
            return false;
        }
        aiv::CpGM2GMTyped(Slot(peer, rank) + off, a->input + off, len, *ub, 0, AIV_OP_NONE);
        // Record joins all pipes first: the pushed bytes are in peer's GM before READY.
        return sync->Record(peer, tag, AIV_PUSH_READY_SLOT + part, a->fp);
    }
};

} // namespace

extern "C" __global__ __aicore__ void aiv_all_gather_push(GM_ADDR argsAddr)
{
    __gm__ const AivPushArgs *a = reinterpret_cast<__gm__ const AivPushArgs *>(argsAddr);
    const aiv::PeerPart pp = aiv::BlockPeer(a->comm.rank_size);
    if (pp.Idle()) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    const Push p{a, &k.sync, &k.ub, a->comm.rank, a->comm.rank_size, a->comm.tag};
    const int32_t peer = pp.peer;
    const int32_t part = pp.part;
    uint64_t off = 0;
    uint64_t len = 0;
    aiv::Split(a->bytes, pp.parts, part, off, len);
    if (peer == p.rank) {
        if (!k.sync.Record1vN(p.tag, part, a->fp)) {
            return;
        }
        const uint64_t out = a->output + static_cast<uint64_t>(p.rank) * a->out_stride;
        if (out != a->input) {
            // In place the input is this slot: my pushes read it, nothing writes it.
            aiv::CpGM2GMTyped(out + off, a->input + off, len, k.ub, 0, AIV_OP_NONE);
        }
        if (pp.parts > 1) {
            k.sync.BarrierAll(p.tag);
        }
        return;
    }
    if (!p.PushTo(peer, part, off, len) || !p.WaitReady(peer, part)) {
        return;
    }
    aiv::CpGM2GMTyped(a->output + static_cast<uint64_t>(peer) * a->out_stride + off, p.Slot(p.rank, peer) + off, len,
                      k.ub, 0, AIV_OP_NONE);
    // With several parts, ACK (sent by part 0) must cover every part's reads of peer's slot.
    if (pp.parts > 1 && !k.sync.BarrierAll(p.tag)) {
        return;
    }
    if (part == 0) {
        // Record joins all pipes first: my reads of peer's slot are done before the ACK.
        k.sync.Record(peer, p.tag, AIV_PUSH_ACK_SLOT);
    }
}

extern "C" __global__ __aicore__ void aiv_all_reduce_push(GM_ADDR argsAddr)
{
    __gm__ const AivPushArgs *a = reinterpret_cast<__gm__ const AivPushArgs *>(argsAddr);
    const aiv::PeerPart pp = aiv::BlockPeer(a->comm.rank_size);
    if (pp.Idle()) {
        return;
    }
    aiv::CommKernel k(&a->comm);
    const Push p{a, &k.sync, &k.ub, a->comm.rank, a->comm.rank_size, a->comm.tag};
    const int32_t n = p.n;
    const int32_t peer = pp.peer;
    const int32_t part = pp.part;
    uint64_t off = 0;
    uint64_t len = 0;
    aiv::Split(a->bytes, pp.parts, part, off, len);
    uint64_t so = 0;
    uint64_t sl = 0;
    aiv::Split(len, n, peer, so, sl); // my sub-slice of the part
    const bool inPlace = a->input == a->output;
    if (peer == p.rank) {
        if (!k.sync.Record1vN(p.tag, part, a->fp)) {
            return;
        }
    } else if (!p.PushTo(peer, part, off, len)) {
        return;
    }
    if (inPlace && !k.sync.BarrierAll(p.tag)) {
        return;
    }
    for (int32_t s = 0; s < n; s++) {
        if (s != p.rank && !p.WaitReady(s, part)) {
            return;
        }
    }
    const uint64_t at = off + so;
    uint64_t src[AIV_MAX_RANKS];
    for (int32_t s = 0; s < n; s++) {
        src[s] = p.Slot(p.rank, s) + at;
    }
    if (inPlace && !aiv::SumsInUb(a->dtype, a->op) && p.rank != 0) {
        // The store of rank 0's piece overwrites my input: keep my piece in my own slot first.
        aiv::CpGM2GMTyped(src[p.rank], a->input + at, sl, k.ub, 0, AIV_OP_NONE);
    } else {
        src[p.rank] = a->input + at;
    }
    aiv::ReduceInOrder(a->output + at, src, n, sl, a->dtype, a->op, k.ub);
    if (!k.sync.BarrierAll(p.tag + 1)) {
        return;
    }
    if (peer != p.rank && part == 0) {
        // Every block of mine is past its reads of peer's slot (BarrierAll): ACK the launch.
        k.sync.Record(peer, p.tag, AIV_PUSH_ACK_SLOT);
    }
}
