/*
 * AivCommArgs: the communicator part of every collective kernel's arguments (plain C, shared with
 * the Rust host; its layout is pinned at the end of this file). The host fills it per launch;
 * device code reads it from GM.
 */
#ifndef AIV_COMM_ARGS_H
#define AIV_COMM_ARGS_H

#include <stdint.h>
#include "aiv_sync_layout.h"

struct AivCommArgs {
    uint64_t sync[AIV_MAX_RANKS]; /* GM address of each rank's sync area (AIV_SYNC_AREA_BYTES) */
    uint64_t hccl[AIV_MAX_RANKS]; /* GM address of each rank's HCCL buffer */
    uint64_t hccl_bytes;          /* size of every rank's HCCL buffer */
    int64_t timeout_cycles;       /* deadline of every wait, GetSystemCycle units (50 MHz on A2) */
    uint64_t diag;                /* GM: this launch's AivDiag records, one per block */
    int64_t tag;                  /* this launch's first tag (> 0, see host/tags.rs) */
    int32_t rank;                 /* this rank */
    int32_t rank_size;            /* ranks in the communicator, 1..=AIV_MAX_RANKS */
};

/* Pinned here and in host/ffi.rs (see AIV_PIN_* in aiv_sync_layout.h). */
AIV_PIN_SIZE(struct AivCommArgs, 552);
AIV_PIN_OFFSET(struct AivCommArgs, sync, 0);
AIV_PIN_OFFSET(struct AivCommArgs, hccl, 256);
AIV_PIN_OFFSET(struct AivCommArgs, hccl_bytes, 512);
AIV_PIN_OFFSET(struct AivCommArgs, timeout_cycles, 520);
AIV_PIN_OFFSET(struct AivCommArgs, diag, 528);
AIV_PIN_OFFSET(struct AivCommArgs, tag, 536);
AIV_PIN_OFFSET(struct AivCommArgs, rank, 544);
AIV_PIN_OFFSET(struct AivCommArgs, rank_size, 548);

#endif /* AIV_COMM_ARGS_H */
