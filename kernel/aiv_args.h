/*
 * Argument structs of aiv-comm's kernels: plain C, shared by device code (read from GM by the
 * kernel) and the Rust host (bindings generated from kernel/launch.h; sizes, offsets and values
 * pinned on both sides: AIV_PIN_* at the end of this file, and host/ffi.rs).
 * Every kernel takes one GM pointer to its struct: extern "C" __global__ __aicore__ void k(GM_ADDR args).
 * (The self-test kernels and their structs are the test crate's: twin-tests/kernels/.)
 * Fields are fixed-width and naturally aligned so the layout is the same for every compiler.
 */
#ifndef AIV_ARGS_H
#define AIV_ARGS_H

#include <stdint.h>
#include "aiv_comm_args.h"


/* Element types for AIV_TT_ATOMIC and the reduce paths (same codes as the host's DataType). */
enum AivDtype {
    AIV_DT_F32 = 0,
    AIV_DT_F16 = 1,
    AIV_DT_BF16 = 2,
    AIV_DT_I32 = 3,
    AIV_DT_I16 = 4,
    AIV_DT_I8 = 5
};

/* Reduce ops (store-side atomics). */
enum AivReduceOp {
    AIV_OP_NONE = 0,
    AIV_OP_SUM = 1,
    AIV_OP_MAX = 2,
    AIV_OP_MIN = 3
};


/* ---- aiv_copy (kernel/copy.cpp): CpGM2GM over GetBlockNum() blocks ---- */

struct AivCopyArgs {
    uint64_t dst;   /* GM address */
    uint64_t src;   /* GM address */
    uint64_t bytes; /* multiple of the element size when op != AIV_OP_NONE */
    uint32_t dtype; /* AivDtype: element type of the reduce (ignored for AIV_OP_NONE) */
    uint32_t op;    /* AivReduceOp */
};

/* ---- collectives (kernel/all_gather.cpp, all_reduce.cpp, broadcast.cpp, barrier.cpp,
 *      all_gather_v.cpp, reduce_scatter.cpp, all_to_all.cpp) ---- */

/* AllReduce algorithms. */
enum AivAllReduceAlgo {
    AIV_AR_ONE_SHOT = 0, /* every rank reduces every rank's staged chunk, in rank order */
    AIV_AR_TWO_SHOT = 1  /* reduce-scatter into slice owners' HCCL buffers, then all-gather */
};

/* One launch = one chunk of a collective. Block i works with peer i (block `rank`: the local part). */
struct AivCollArgs {
    struct AivCommArgs comm;
    uint64_t input;      /* GM: this chunk of my input */
    uint64_t output;     /* GM: this chunk of my output (AllGather: of slot 0) */
    uint64_t bytes;      /* chunk bytes per rank */
    uint64_t out_stride; /* AllGather: bytes between output slots (count * element size) */
    uint32_t dtype;      /* AivDtype (AllReduce) */
    uint32_t op;         /* AivReduceOp (AllReduce) */
    uint32_t algo;       /* AivAllReduceAlgo (AllReduce) */
    uint32_t elem_size;  /* bytes per element */
    /* The call's fingerprint (operation, count, dtype, op, algorithm, chunk; host/fingerprint.rs),
     * stored next to the tag of every broadcast cell: a peer whose cell holds another fingerprint
     * is running another call, and both sides fail instead of mixing data. */
    int32_t fp[AIV_PAYLOAD_LANES];
    int32_t root;        /* Broadcast: the root rank */
    uint32_t flags;      /* AIV_COLL_* */
};

/* AivCollArgs::flags / AivCollVArgs::flags. */
#define AIV_COLL_DETERMINISTIC 1u /* reductions add in a fixed order (HCCL_DETERMINISTIC) */
/* AllGather: block_dim = parts, block `part` pulls part `part` from every peer (all_gather.cpp),
 * instead of one block per peer and part. */
#define AIV_COLL_BLOCK_PER_PART 2u
/* AllGather, AllReduce: my input lies in window memory every peer has mapped (the host's
 * Communicator::register): peers read it in place, where Record1vNAt announces it, instead of a
 * copy staged in my HCCL buffer. Not for a one-shot AllReduce in place (I overwrite my input
 * while peers read it). Ranks with and without it work together. */
#define AIV_COLL_IN_WINDOW 4u

/* ---- push-mode one-shot collectives (kernel/push.cpp: aiv_all_gather_push,
 *      aiv_all_reduce_push) ---- */

/* Pairwise cells of the push protocol (SoftSync PAIR slots no other kernel of aiv-comm uses):
 *   PAIR[s][AIV_PUSH_READY_SLOT + part] in r's area: "s pushed part `part` of this launch into
 *                                         r's push region" (payload: s's call fingerprint);
 *   PAIR[r][AIV_PUSH_ACK_SLOT] in s's area: "r has read everything s pushed into r's push
 *                                         region in the launch with this tag". */
#define AIV_PUSH_ACK_SLOT 39
#define AIV_PUSH_READY_SLOT 40
#define AIV_PUSH_MAX_PARTS 8

/* One chunk of a push-mode AllGather or AllReduce. Every rank's HCCL buffer allocation holds,
 * after its comm.hccl_bytes bytes (which the other kernels use), a push region that only these
 * kernels touch: writer s's slot in rank r's region is comm.hccl[r] + region_off + s * slot_bytes. */
struct AivPushArgs {
    struct AivCommArgs comm;
    uint64_t input;      /* GM: this chunk of my input */
    uint64_t output;     /* GM: this chunk of my output (AllGather: of slot 0) */
    uint64_t bytes;      /* chunk bytes per rank, at most slot_bytes */
    uint64_t out_stride; /* AllGather: bytes between output slots */
    uint64_t region_off; /* byte offset of the push region in every rank's HCCL buffer */
    uint64_t slot_bytes; /* bytes of one writer's slot in a push region (a multiple of 32) */
    int64_t prev_tag;    /* comm.tag of this communicator's previous push launch; 0: none */
    uint32_t dtype;      /* AivDtype (AllReduce) */
    uint32_t op;         /* AivReduceOp (AllReduce) */
    int32_t fp[AIV_PAYLOAD_LANES]; /* the call's fingerprint, as AivCollArgs::fp */
};

/* One chunk of a collective whose per-rank parts are described per rank q (arrays indexed by
 * rank; byte offsets and lengths of this chunk's pieces):
 *   aiv_all_gather_v:   rank q's piece is recv_len[q] bytes; mine is at `input`, staged at the
 *                       start of my HCCL buffer; every rank's lands at output + recv_off[q].
 *   aiv_reduce_scatter: the piece of my input for rank q is input + send_off[q], send_len[q]
 *                       bytes, staged at slot_off[q] of my HCCL buffer (the same on every rank);
 *                       my result (send_len[rank] bytes, the same on every rank) goes to `output`.
 *   aiv_all_to_all:     the piece of my input for rank q is input + send_off[q], send_len[q]
 *                       bytes, staged at slot_off[q] of my HCCL buffer (the same on every rank);
 *                       rank q's piece for me (recv_len[q] bytes) lands at output + recv_off[q]. */
struct AivCollVArgs {
    struct AivCommArgs comm;
    uint64_t input;
    uint64_t output;
    uint64_t send_off[AIV_MAX_RANKS];
    uint64_t send_len[AIV_MAX_RANKS];
    uint64_t recv_off[AIV_MAX_RANKS];
    uint64_t recv_len[AIV_MAX_RANKS];
    uint64_t slot_off[AIV_MAX_RANKS];
    uint32_t dtype;     /* AivDtype (aiv_reduce_scatter) */
    uint32_t op;        /* AivReduceOp (aiv_reduce_scatter) */
    uint32_t flags;     /* AIV_COLL_* */
    uint32_t reserved;
    int32_t fp[AIV_PAYLOAD_LANES]; /* the call's fingerprint, as AivCollArgs::fp */
};

/* ---- point-to-point and stream tasks (kernel/link.cpp) ---- */

/* One chunk of a send or a recv. The sender stages into its HCCL buffer at peer * slot_bytes. */
struct AivP2PArgs {
    struct AivCommArgs comm;
    uint64_t buf;        /* GM: this chunk of the user buffer */
    uint64_t bytes;      /* bytes of this chunk */
    uint64_t total;      /* bytes of the whole message (checked against the peer's) */
    uint64_t slot_bytes; /* staging slot per destination in every HCCL buffer */
    int64_t seq;         /* sequence number of this chunk on the (me, peer) link */
    int32_t peer;
    int32_t is_send;
};

/* A link signal: tx_ack / rx_ack / tx_data_signal / rx_data_signal with a peer. */
struct AivSignalArgs {
    struct AivCommArgs comm;
    int64_t seq;     /* sequence number on the (me, peer, kind) link */
    int32_t peer;
    int32_t kind;    /* AivLinkKind: AIV_LINK_ACK or AIV_LINK_DATA */
    int32_t is_wait; /* 0: record (tx), 1: wait (rx) */
    int32_t reserved;
};

/* A call handshake (kernel/link.cpp): record my fingerprint in my broadcast cell with the
 * launch's tag, then wait for `partner`'s and check it matches (orchestrated algorithms such
 * as halving-doubling AllReduce, which otherwise exchange only link signals). */
struct AivHandshakeArgs {
    struct AivCommArgs comm;
    int32_t fp[AIV_PAYLOAD_LANES];
    int32_t partner;
    int32_t reserved;
};


/* ---- ABI pins: the same numbers as host/ffi.rs (see AIV_PIN_* in sync/aiv_sync_layout.h) ---- */

AIV_PIN_VALUE(AIV_DT_F32, 0);
AIV_PIN_VALUE(AIV_DT_F16, 1);
AIV_PIN_VALUE(AIV_DT_BF16, 2);
AIV_PIN_VALUE(AIV_DT_I32, 3);
AIV_PIN_VALUE(AIV_DT_I16, 4);
AIV_PIN_VALUE(AIV_DT_I8, 5);
AIV_PIN_VALUE(AIV_OP_NONE, 0);
AIV_PIN_VALUE(AIV_OP_SUM, 1);
AIV_PIN_VALUE(AIV_OP_MAX, 2);
AIV_PIN_VALUE(AIV_OP_MIN, 3);
AIV_PIN_VALUE(AIV_AR_ONE_SHOT, 0);
AIV_PIN_VALUE(AIV_AR_TWO_SHOT, 1);
AIV_PIN_VALUE(AIV_COLL_DETERMINISTIC, 1);
AIV_PIN_VALUE(AIV_COLL_BLOCK_PER_PART, 2);
AIV_PIN_VALUE(AIV_COLL_IN_WINDOW, 4);
AIV_PIN_VALUE(AIV_PUSH_ACK_SLOT, 39);
AIV_PIN_VALUE(AIV_PUSH_READY_SLOT, 40);
AIV_PIN_VALUE(AIV_PUSH_MAX_PARTS, 8);

AIV_PIN_SIZE(struct AivCopyArgs, 32);
AIV_PIN_OFFSET(struct AivCopyArgs, bytes, 16);
AIV_PIN_OFFSET(struct AivCopyArgs, op, 28);
AIV_PIN_SIZE(struct AivCollArgs, 632);
AIV_PIN_OFFSET(struct AivCollArgs, comm, 0);
AIV_PIN_OFFSET(struct AivCollArgs, input, 552);
AIV_PIN_OFFSET(struct AivCollArgs, dtype, 584);
AIV_PIN_OFFSET(struct AivCollArgs, elem_size, 596);
AIV_PIN_OFFSET(struct AivCollArgs, fp, 600);
AIV_PIN_OFFSET(struct AivCollArgs, root, 624);
AIV_PIN_OFFSET(struct AivCollArgs, flags, 628);
AIV_PIN_SIZE(struct AivPushArgs, 640);
AIV_PIN_OFFSET(struct AivPushArgs, comm, 0);
AIV_PIN_OFFSET(struct AivPushArgs, input, 552);
AIV_PIN_OFFSET(struct AivPushArgs, region_off, 584);
AIV_PIN_OFFSET(struct AivPushArgs, prev_tag, 600);
AIV_PIN_OFFSET(struct AivPushArgs, fp, 616);
AIV_PIN_SIZE(struct AivCollVArgs, 1888);
AIV_PIN_OFFSET(struct AivCollVArgs, comm, 0);
AIV_PIN_OFFSET(struct AivCollVArgs, send_off, 568);
AIV_PIN_OFFSET(struct AivCollVArgs, recv_len, 1336);
AIV_PIN_OFFSET(struct AivCollVArgs, slot_off, 1592);
AIV_PIN_OFFSET(struct AivCollVArgs, dtype, 1848);
AIV_PIN_OFFSET(struct AivCollVArgs, flags, 1856);
AIV_PIN_OFFSET(struct AivCollVArgs, fp, 1864);
AIV_PIN_SIZE(struct AivP2PArgs, 600);
AIV_PIN_OFFSET(struct AivP2PArgs, comm, 0);
AIV_PIN_OFFSET(struct AivP2PArgs, buf, 552);
AIV_PIN_OFFSET(struct AivP2PArgs, seq, 584);
AIV_PIN_OFFSET(struct AivP2PArgs, is_send, 596);
AIV_PIN_SIZE(struct AivSignalArgs, 576);
AIV_PIN_OFFSET(struct AivSignalArgs, comm, 0);
AIV_PIN_OFFSET(struct AivSignalArgs, seq, 552);
AIV_PIN_OFFSET(struct AivSignalArgs, kind, 564);
AIV_PIN_OFFSET(struct AivSignalArgs, is_wait, 568);
AIV_PIN_SIZE(struct AivHandshakeArgs, 584);
AIV_PIN_OFFSET(struct AivHandshakeArgs, comm, 0);
AIV_PIN_OFFSET(struct AivHandshakeArgs, fp, 552);
AIV_PIN_OFFSET(struct AivHandshakeArgs, partner, 576);

/* Invariants of the layout itself (also asserted in host/ffi.rs). */
AIV_STATIC_ASSERT(AIV_PUSH_READY_SLOT + AIV_PUSH_MAX_PARTS == AIV_PAIR_SLOTS, "push cells end the PAIR slots");

#endif /* AIV_ARGS_H */
