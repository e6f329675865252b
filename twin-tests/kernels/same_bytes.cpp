/*
 * Kernel for the GM race checker's rule on unordered stores of identical bytes: every block
 * stores a 256-byte tile to the start of `dst`, with no flag ordering the blocks.
 *
 * mode 0: every block stores the same tile (`src`'s first 64 floats) with DataCopy;
 * mode 1: block i stores `src`'s tile i (other bytes for every block);
 * mode 2: block 0 stores `src`'s first tile (which `dst` already holds), the others read `dst`;
 * mode 3: as mode 0 with a DataCopyPad of 13 floats (52 bytes).
 * Then every block waits in SyncAll, which orders nothing before it.
 */
// kernels: same_bytes
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void same_bytes(GM_ADDR src, GM_ADDR dst, uint32_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    constexpr uint32_t kTile = 64;
    const uint32_t id = static_cast<uint32_t>(GetBlockIdx());
    GlobalTensor<float> srcGm, dstGm;
    srcGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(src));
    dstGm.SetGlobalBuffer(reinterpret_cast<__gm__ float *>(dst));
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, kTile * sizeof(float));
    LocalTensor<float> tile = buf.Get<float>();
    if (mode == 2 && id != 0) {
        DataCopy(tile, dstGm, kTile);
    } else {
        DataCopy(tile, srcGm[mode == 1 ? id * kTile : 0], kTile);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        if (mode == 3) {
            DataCopyPad(dstGm, tile, DataCopyExtParams(1, 13 * sizeof(float), 0, 0, 0));
        } else {
            DataCopy(dstGm, tile, kTile);
        }
    }
    /* No block ends before every block has made its access: all of them run at once, so none
     * is ordered after another by having started after it ended. */
    SyncAll();
}
