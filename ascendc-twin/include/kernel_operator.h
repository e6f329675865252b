/*
 * kernel_operator.h for the aiv-comm CPU twin.
 *
 * The AscendC API for a host C++ compiler, with AscendC's names, namespaces and signatures, one
 * header per area (the asc_twin directory) as the real headers are organised. Each call forwards to the
 * twin's Rust runtime (ascendc-twin) through the C ABI in asc_twin_abi.h; the runtime applies the
 * documented hardware rules and turns misuse into an error naming kernel, rank, block and
 * operation. On misuse the headers throw AscTwinAbort, which ends the block.
 *
 * Rules of these files:
 *  - Anything a kernel can write here must also compile against the real AscendC headers
 *    (../shared/tools/ascendc-check proves it for our sources). Where the two differ, the real
 *    one wins and these files are fixed.
 *  - Names of the twin's own (asc_twin::, asc_twin_*) are not AscendC APIs; kernels never use them.
 */
#ifndef ASC_TWIN_KERNEL_OPERATOR_H
#define ASC_TWIN_KERNEL_OPERATOR_H

#include "asc_twin/base.h"
#include "asc_twin/types.h"
#include "asc_twin/enums.h"
#include "asc_twin/tensor.h"
#include "asc_twin/atomic.h"
#include "asc_twin/sys_var.h"
#include "asc_twin/flags.h"
#include "asc_twin/tpipe.h"
#include "asc_twin/data_copy.h"
#include "asc_twin/vector.h"
#include "asc_twin/vec_elementwise.h"
#include "asc_twin/vec_cast.h"
#include "asc_twin/vec_cmpsel.h"
#include "asc_twin/vec_reduce.h"
#include "asc_twin/vec_gather.h"
#include "asc_twin/vec_transpose.h"
#include "asc_twin/vec_sort.h"
#include "asc_twin/cache.h"
#include "asc_twin/sync_all.h"
#include "asc_twin/block_sync.h"
#include "asc_twin/group_barrier.h"
#include "asc_twin/init_output.h"
#include "asc_twin/debug.h"
#include "asc_twin/unsupported.h"

#endif /* ASC_TWIN_KERNEL_OPERATOR_H */
