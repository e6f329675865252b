/*
 * The C ABI the Rust host calls: every kernel of aiv-comm, with its argument struct.
 * host/bindings.rs is generated from this file (cargo build --features regen-bindings).
 * Device sources include aiv_args.h, never this file (the prototypes here are the host's view:
 * on the twin a kernel is a plain C function taking the GM address of its arguments).
 */
#ifndef AIV_LAUNCH_H
#define AIV_LAUNCH_H

#include "aiv_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Self-test kernel pinning the twin's device rules (tests/twin_rules.rs). */
void aiv_twin_selftest(uint8_t *args);
/* CpGM2GM over every block of the launch (AivCopyArgs). */
void aiv_copy(uint8_t *args);
/* AllGather of one chunk (AivCollArgs). */
void aiv_all_gather(uint8_t *args);
/* AllReduce of one chunk, one-shot or two-shot (AivCollArgs). */
void aiv_all_reduce(uint8_t *args);
/* One chunk of a send or recv (AivP2PArgs). */
void aiv_p2p(uint8_t *args);
/* A link signal with a peer (AivSignalArgs). */
void aiv_link_signal(uint8_t *args);
/* A call handshake with a partner rank (AivHandshakeArgs). */
void aiv_handshake(uint8_t *args);
/* Soft-sync self-tests (AivSyncTestArgs). */
void aiv_sync_selftest(uint8_t *args);

#ifdef __cplusplus
}
#endif

#endif /* AIV_LAUNCH_H */
