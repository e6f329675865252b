/*
 * The argument structs the Rust host shares with aiv-comm's kernels (every kernel takes the GM
 * address of one of them; build.rs lists the kernels, and ascendc-build generates their launch
 * trampolines). host/bindings.rs is generated from this file (cargo build --features
 * regen-bindings). Device sources include aiv_args.h, never this file.
 */
#ifndef AIV_LAUNCH_H
#define AIV_LAUNCH_H

#include "aiv_args.h"

#endif /* AIV_LAUNCH_H */
