/*
 * Layout of a rank's sync area: the GM region holding the soft-sync flags of one rank, and of
 * the diagnostic records a launch leaves behind.
 * Plain C: included by device code (sync/aiv_sync.h) and, through bindgen (host/bindings.rs), by
 * the Rust host. Offsets are in bytes from the start of the area. Sizes, offsets and values the
 * host relies on are pinned at the end of this file and of aiv_comm_args.h and aiv_args.h
 * (AIV_PIN_*, below), and to the same numbers in host/ffi.rs.
 *
 * A flag is one 32-byte cell: lanes 0-1 hold a 64-bit tag (lane 0 the low half), lanes 2-7 a
 * payload (a call's fingerprint, a message size), so that a single 32-byte DataCopy moves tag
 * and payload together and no two flags share a DMA block. Tags are 64-bit and only grow: a
 * flag is never cleared (2^63 launches would take longer than any program runs).
 *
 * Regions (every cell 32 bytes):
 *   PAIR   [AIV_MAX_RANKS][AIV_PAIR_SLOTS]   Record(peer, tag) by rank s writes peer's PAIR[s][slot];
 *                                           Wait(peer, tag) polls my PAIR[peer][slot]. The cells
 *                                           PAIR[me][*] (from me to me) chain a rank's own blocks.
 *   ONE2N  [AIV_ONE2N_SLOTS]                 Record1vN(tag) sets my ONE2N[slot];
 *                                           WaitNv1(peer, tag) polls peer's ONE2N[slot].
 *   COUNT  [AIV_COUNT_SLOTS]                 RecordNv1(peer) atomically adds 1 to peer's COUNT[slot];
 *                                           Wait1vN(n) waits for >= n, then subtracts n.
 *                                           One counter per cell, so two counters never share a
 *                                           DMA block on which concurrent atomic adds land.
 *   BARRIER[AIV_MAX_BLOCKS]                  intra-rank all-blocks barrier: block b writes BARRIER[b].
 *   LINK   [AIV_MAX_RANKS][AIV_LINK_KINDS]   point-to-point and stream-task signals from rank s: sequence
 *                                           numbers per (peer, kind), growing; lanes 2..7 carry a
 *                                           payload.
 *   SRC    [AIV_SRC_SLOTS]                  Record1vNAt(tag, slot, fp, addr) stores the GM address
 *                                           of my data for broadcast slot `slot` here (lanes 2-3)
 *                                           before it sets ONE2N[slot] with AIV_FP_ANNOUNCED in
 *                                           the first payload lane; readers find it there
 *                                           (SoftSync::WaitNv1Source).
 *   ABORT  [1]                              zero until the host stops the world (a rank failed,
 *                                           a World dropped with work queued): then non-zero in
 *                                           every rank's area. A wait that has waited
 *                                           AIV_ABORT_CHECK_CYCLES checks its own rank's cell,
 *                                           and again every AIV_ABORT_CHECK_CYCLES, and fails
 *                                           with AIV_DIAG_ABORTED once it is set: so a device
 *                                           runtime that cannot kill a running kernel (ACL)
 *                                           still stops the peers of a failed rank promptly.
 *
 * Diagnostics live outside the sync area, in memory of the launching stream (AivCommArgs.diag):
 * block b of a launch writes its AivDiag record at diag + b * AIV_DIAG_BYTES.
 */
#ifndef AIV_SYNC_LAYOUT_H
#define AIV_SYNC_LAYOUT_H

#include <stdint.h>

#define AIV_FLAG_BYTES 32
#define AIV_FLAG_LANES 8 /* int32 lanes per cell */
#define AIV_FLAG_PAYLOAD 2 /* first payload lane (lanes 0-1: the 64-bit tag) */
#define AIV_PAYLOAD_LANES 6 /* payload lanes per cell */
#define AIV_MAX_RANKS 32
#define AIV_MAX_BLOCKS 48
#define AIV_PAIR_SLOTS AIV_MAX_BLOCKS
#define AIV_ONE2N_SLOTS AIV_MAX_BLOCKS
#define AIV_COUNT_SLOTS 8

#define AIV_PAIR_OFFSET 0
#define AIV_ONE2N_OFFSET (AIV_PAIR_OFFSET + AIV_MAX_RANKS * AIV_PAIR_SLOTS * AIV_FLAG_BYTES)
#define AIV_COUNT_OFFSET (AIV_ONE2N_OFFSET + AIV_ONE2N_SLOTS * AIV_FLAG_BYTES)
#define AIV_BARRIER_OFFSET (AIV_COUNT_OFFSET + AIV_COUNT_SLOTS * AIV_FLAG_BYTES)
#define AIV_LINK_KINDS 4
#define AIV_LINK_OFFSET (AIV_BARRIER_OFFSET + AIV_MAX_BLOCKS * AIV_FLAG_BYTES)
#define AIV_SRC_SLOTS AIV_ONE2N_SLOTS
#define AIV_SRC_OFFSET (AIV_LINK_OFFSET + AIV_MAX_RANKS * AIV_LINK_KINDS * AIV_FLAG_BYTES)
#define AIV_ABORT_OFFSET (AIV_SRC_OFFSET + AIV_SRC_SLOTS * AIV_FLAG_BYTES)
#define AIV_SYNC_AREA_BYTES (AIV_ABORT_OFFSET + AIV_FLAG_BYTES)
/* How long a wait goes before it checks its rank's ABORT cell, and between checks (GetSystemCycle
 * units: 100 us at 50 MHz). Waits that end sooner never read it. */
#define AIV_ABORT_CHECK_CYCLES 5000

/* Set in the first payload lane of a broadcast cell (a call's fingerprint otherwise): the writer
 * announced where its data is, in its SRC cell of the same slot (the data of a registered window
 * that peers read in place, rather than the staged copy in the writer's HCCL buffer). Fingerprint
 * comparisons ignore the bit (a fingerprint's first lane holds the operation in bits 24-27). */
#define AIV_FP_ANNOUNCED 0x40000000

#define AIV_DIAG_BYTES 96
/* Bytes of a launch's diagnostic records (one per block). */
#define AIV_DIAG_AREA_BYTES (AIV_MAX_BLOCKS * AIV_DIAG_BYTES)

/* Value of AivDiag.magic when the record holds a failure. */
#define AIV_DIAG_MAGIC 0x44494147 /* "DIAG" */

/* What a failed block was waiting for. */
enum AivDiagKind {
    AIV_DIAG_WAIT = 1,       /* Wait(peer, tag): pairwise */
    AIV_DIAG_WAIT_NV1 = 2,   /* WaitNv1(peer, tag): peer's broadcast cell */
    AIV_DIAG_WAIT_1VN = 3,   /* Wait1vN(count): counting cell */
    AIV_DIAG_BARRIER = 4,    /* BarrierAll(tag): intra-rank barrier */
    AIV_DIAG_CHAIN = 5,      /* a rank's own earlier block (ordered reduction) */
    AIV_DIAG_LINK = 6,       /* a LINK signal (send/recv, stream-task ack or data signal) */
    AIV_DIAG_SIZE = 7,       /* send/recv size mismatch: expected = my bytes, observed = peer's */
    AIV_DIAG_MISMATCH = 8,   /* a peer's broadcast cell holds another call: expected = my tag,
                                observed = the peer's tag, seen = the peer's fingerprint */
    AIV_DIAG_SOURCE = 9,     /* a peer's broadcast cell announced an address (AIV_FP_ANNOUNCED)
                                that its SRC cell does not hold: cell = that SRC cell,
                                expected = my tag, observed = the SRC cell's tag */
    AIV_DIAG_ABORTED = 10    /* the host stopped the world while this block waited: cell, peer and
                                expected are the wait's, observed = the ABORT cell's value */
};

/* Kinds of LINK cells: which signal a cell carries. */
enum AivLinkKind {
    AIV_LINK_P2P_DATA = 0, /* send -> recv: "chunk staged"; payload: total bytes (lanes 2-3), chunk bytes (lane 4) */
    AIV_LINK_P2P_DONE = 1, /* recv -> send: "chunk read"; payload: receiver's total bytes (lanes 2-3) */
    AIV_LINK_ACK = 2,      /* tx_ack / rx_ack */
    AIV_LINK_DATA = 3      /* tx_data_signal / rx_data_signal */
};

/* Diagnostic record of a failed wait (96 bytes: three DMA blocks). */
struct AivDiag {
    int32_t magic;     /* AIV_DIAG_MAGIC when valid */
    int32_t kind;      /* AivDiagKind */
    int32_t rank;      /* the waiting rank */
    int32_t block;     /* the waiting block */
    int32_t peer;      /* rank whose cell was polled (own rank for counting/barrier/chain cells) */
    int32_t reserved;
    uint64_t cell;     /* byte offset of the polled cell in the polled rank's sync area */
    int64_t expected;  /* tag, count or size waited for */
    int64_t observed;  /* last value seen */
    uint64_t waited_cycles;
    int32_t seen[AIV_PAYLOAD_LANES]; /* payload lanes of the cell last seen */
    int32_t pad[4];
};

/*
 * ABI pins. Each AIV_PIN_* states one number of the ABI these headers share with the Rust host:
 * the size of a struct, the offset of a field, the value of a constant. Every compilation of
 * these headers checks it against the C definition (the twin build of the kernels, the
 * ascendc-check syntax check, bisheng in the `npu` build, clang when bindgen regenerates
 * host/bindings.rs: C++ static_assert, or C11 _Static_assert). host/ffi.rs pins the generated
 * bindings to the same numbers with pin_size! / pin_offset! / pin_value!, and its unit test
 * `pins_match_the_headers` checks that the two lists are the same. So a layout change fails the
 * kernels' build until its pin here is updated, then that test until the Rust pin is, and then
 * the Rust build until host/bindings.rs is regenerated.
 */
#include <stddef.h>
#if defined(__cplusplus)
#define AIV_STATIC_ASSERT(cond, what) static_assert(cond, what)
#else
#define AIV_STATIC_ASSERT(cond, what) _Static_assert(cond, what)
#endif
#define AIV_PIN_SIZE(type, bytes)                                                                                    \
    AIV_STATIC_ASSERT(sizeof(type) == (bytes), "sizeof(" #type ") is pinned: change it in host/ffi.rs too and "    \
                                               "regenerate host/bindings.rs")
#define AIV_PIN_OFFSET(type, field, bytes)                                                                           \
    AIV_STATIC_ASSERT(offsetof(type, field) == (bytes), "offsetof(" #type ", " #field ") is pinned: change it in "  \
                                                        "host/ffi.rs too and regenerate host/bindings.rs")
#define AIV_PIN_VALUE(name, value)                                                                                   \
    AIV_STATIC_ASSERT((name) == (value), #name " is pinned: change it in host/ffi.rs too and regenerate "          \
                                         "host/bindings.rs")

AIV_PIN_VALUE(AIV_FLAG_BYTES, 32);
AIV_PIN_VALUE(AIV_FLAG_LANES, 8);
AIV_PIN_VALUE(AIV_FLAG_PAYLOAD, 2);
AIV_PIN_VALUE(AIV_PAYLOAD_LANES, 6);
AIV_PIN_VALUE(AIV_MAX_RANKS, 32);
AIV_PIN_VALUE(AIV_MAX_BLOCKS, 48);
AIV_PIN_VALUE(AIV_PAIR_SLOTS, 48);
AIV_PIN_VALUE(AIV_ONE2N_SLOTS, 48);
AIV_PIN_VALUE(AIV_COUNT_SLOTS, 8);
AIV_PIN_VALUE(AIV_LINK_KINDS, 4);
AIV_PIN_VALUE(AIV_SRC_SLOTS, 48);
AIV_PIN_VALUE(AIV_PAIR_OFFSET, 0);
AIV_PIN_VALUE(AIV_ONE2N_OFFSET, 49152);    /* PAIR: 32 ranks x 48 slots x 32 bytes */
AIV_PIN_VALUE(AIV_COUNT_OFFSET, 50688);    /* + ONE2N: 48 cells */
AIV_PIN_VALUE(AIV_BARRIER_OFFSET, 50944);  /* + COUNT: 8 cells */
AIV_PIN_VALUE(AIV_LINK_OFFSET, 52480);     /* + BARRIER: 48 cells */
AIV_PIN_VALUE(AIV_SRC_OFFSET, 56576);      /* + LINK: 32 ranks x 4 kinds */
AIV_PIN_VALUE(AIV_ABORT_OFFSET, 58112);    /* + SRC: 48 cells */
AIV_PIN_VALUE(AIV_SYNC_AREA_BYTES, 58144); /* + ABORT: 1 cell */
AIV_PIN_VALUE(AIV_ABORT_CHECK_CYCLES, 5000);
AIV_PIN_VALUE(AIV_FP_ANNOUNCED, 1073741824); /* 1 << 30 */
AIV_PIN_VALUE(AIV_DIAG_BYTES, 96);
AIV_PIN_VALUE(AIV_DIAG_AREA_BYTES, 4608); /* 48 blocks x 96 bytes */
AIV_PIN_VALUE(AIV_DIAG_MAGIC, 1145651527);
AIV_PIN_VALUE(AIV_DIAG_WAIT, 1);
AIV_PIN_VALUE(AIV_DIAG_WAIT_NV1, 2);
AIV_PIN_VALUE(AIV_DIAG_WAIT_1VN, 3);
AIV_PIN_VALUE(AIV_DIAG_BARRIER, 4);
AIV_PIN_VALUE(AIV_DIAG_CHAIN, 5);
AIV_PIN_VALUE(AIV_DIAG_LINK, 6);
AIV_PIN_VALUE(AIV_DIAG_SIZE, 7);
AIV_PIN_VALUE(AIV_DIAG_MISMATCH, 8);
AIV_PIN_VALUE(AIV_DIAG_SOURCE, 9);
AIV_PIN_VALUE(AIV_DIAG_ABORTED, 10);
AIV_PIN_VALUE(AIV_LINK_P2P_DATA, 0);
AIV_PIN_VALUE(AIV_LINK_P2P_DONE, 1);
AIV_PIN_VALUE(AIV_LINK_ACK, 2);
AIV_PIN_VALUE(AIV_LINK_DATA, 3);
AIV_PIN_SIZE(struct AivDiag, 96);
AIV_PIN_OFFSET(struct AivDiag, magic, 0);
AIV_PIN_OFFSET(struct AivDiag, kind, 4);
AIV_PIN_OFFSET(struct AivDiag, rank, 8);
AIV_PIN_OFFSET(struct AivDiag, block, 12);
AIV_PIN_OFFSET(struct AivDiag, peer, 16);
AIV_PIN_OFFSET(struct AivDiag, cell, 24);
AIV_PIN_OFFSET(struct AivDiag, expected, 32);
AIV_PIN_OFFSET(struct AivDiag, observed, 40);
AIV_PIN_OFFSET(struct AivDiag, waited_cycles, 48);
AIV_PIN_OFFSET(struct AivDiag, seen, 56);
AIV_PIN_OFFSET(struct AivDiag, pad, 80);

/* Invariants of the layout itself (also asserted in host/ffi.rs). */
AIV_STATIC_ASSERT(sizeof(struct AivDiag) == AIV_DIAG_BYTES, "AivDiag is one 96-byte record");
AIV_STATIC_ASSERT(AIV_SYNC_AREA_BYTES % 32 == 0, "sync area is whole DMA blocks");

#endif /* AIV_SYNC_LAYOUT_H */
