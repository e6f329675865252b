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

} // namespace aiv

#endif /* AIV_COMM_KERNEL_H */
