/*
 * aiv_barrier: a Barrier across the ranks (AivCollArgs; only comm and fp are read), one block per
 * rank (block_dim = rank_size). Block rank records my arrival with the call's fingerprint;
 * block q != rank waits for rank q's and checks it is the same call, then Record(q) / Wait(q):
 * rank q has checked mine too. The launch ends on a rank only when every rank has arrived.
 */
#include "kernel_operator.h"
#include "aiv_args.h"
#include "comm_kernel.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_barrier(GM_ADDR argsAddr)
{
    __gm__ const AivCollArgs *a = reinterpret_cast<__gm__ const AivCollArgs *>(argsAddr);
    const int32_t peer = static_cast<int32_t>(GetBlockIdx());
    if (peer >= a->comm.rank_size) {
        return;
    }
    aiv::CommKernel k(&a->comm, false);
    if (peer == a->comm.rank) {
        k.sync.Record1vN(a->comm.tag, 0, a->fp);
        return;
    }
    // Post-sync: neither of us leaves (and overwrites its cell with a later call's) before the
    // other has checked it.
    if (k.sync.WaitNv1Matching(peer, a->comm.tag, 0, a->fp) && k.sync.Record(peer, a->comm.tag)) {
        k.sync.Wait(peer, a->comm.tag);
    }
}
