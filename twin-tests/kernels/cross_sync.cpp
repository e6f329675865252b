/*
 * Cross-core synchronisation through GM workspaces: IBSet/IBWait, InitDetermineComputeWorkspace/
 * WaitPreBlock/NotifyNextBlock, the GM-workspace SyncAll.
 *
 * The chains hand 8 int32 of `data` from block to block, each block applying an order-sensitive
 * step (v = v * 3 + block + 1, wrapping) with a plain read-modify-write through UB: the result
 * says in which order the blocks ran, and the GM race checker sees whether each read was ordered
 * after the previous block's write.
 */
// kernels: ib_chain ib_relay seq_chain sync_all_gm_skip
#include "kernel_operator.h"

using namespace AscendC;

namespace {

/* data[0..8) = data * 3 + add, through `buf` (8 int32 of UB). */
__aicore__ inline void Step(GlobalTensor<int32_t> &data, const LocalTensor<int32_t> &buf, uint32_t add)
{
    DataCopy(buf, data, 8);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    for (uint32_t i = 0; i < 8; i++) {
        const uint32_t v = static_cast<uint32_t>(buf.GetValue(i));
        buf.SetValue(i, static_cast<int32_t>(v * 3u + add));
    }
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    DataCopy(data, buf, 8);
    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
}

} // namespace

/* `rounds` rounds of the chain block 0 -> 1 -> ... -> n-1 (-> 0 for the next round), handed on
 * with IBSet(me, eventID 0) / IBWait(previous block, eventID 0): every slot is set and taken
 * once a round, so the handshake's reset is exercised.
 *   mode 0: as above;
 *   mode 1: block 1 skips its IBWait (reads `data` unordered: a race);
 *   mode 2: block 0 never calls IBSet (the others wait forever);
 *   mode 3: block 0 calls IBSet twice on its slot before anyone takes it (it waits forever);
 *   mode 4: block 0 calls IBSet with blockIdx GetBlockNum() (out of the documented range);
 *   mode 5: every block uses eventID 1, whose flags lie past a workspace of GetBlockNum() * 32 B. */
extern "C" __global__ __aicore__ void ib_chain(GM_ADDR data, GM_ADDR sync, uint32_t mode, uint32_t rounds)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, 16 * sizeof(int32_t));
    LocalTensor<int32_t> buf = tb.Get<int32_t>();
    LocalTensor<int32_t> ub = buf[8];
    GlobalTensor<int32_t> dataGm;
    GlobalTensor<int32_t> syncGm;
    dataGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(data), 8);
    syncGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(sync));
    const int32_t me = static_cast<int32_t>(GetBlockIdx());
    const int32_t n = static_cast<int32_t>(GetBlockNum());
    const int32_t prev = me == 0 ? n - 1 : me - 1;
    const int32_t ev = mode == 5 ? 1 : 0;
    for (uint32_t r = 0; r < rounds; r++) {
        const bool first = r == 0 && me == 0;
        if (!first && !(mode == 1 && me == 1)) {
            IBWait(syncGm, ub, prev, ev);
        }
        Step(dataGm, buf, static_cast<uint32_t>(me) + 1);
        if (!(mode == 2 && me == 0)) {
            IBSet(syncGm, ub, mode == 4 && me == 0 ? n : me, ev);
        }
        if (mode == 3 && me == 0) {
            IBSet(syncGm, ub, me, 0);
        }
    }
}

/* Two blocks: block 0 waits in IBWait(blockIdx 1, eventID 1), a slot only the host sets, then
 * IBSet(0, 0); block 1 waits in IBWait(0, 0). Both park until the host writes the slot. */
extern "C" __global__ __aicore__ void ib_relay(GM_ADDR sync)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, 8 * sizeof(int32_t));
    LocalTensor<int32_t> ub = tb.Get<int32_t>();
    GlobalTensor<int32_t> syncGm;
    syncGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(sync));
    if (GetBlockIdx() == 0) {
        IBWait(syncGm, ub, 1, 1);
        IBSet(syncGm, ub, 0, 0);
    } else {
        IBWait(syncGm, ub, 0, 0);
    }
}

/* `rounds` rounds of the chain in block order with InitDetermineComputeWorkspace, WaitPreBlock and
 * NotifyNextBlock (`work`: GetBlockNum() * 32 bytes, any content).
 *   mode 0: as above;
 *   mode 1: the last block runs its steps with neither WaitPreBlock nor NotifyNextBlock (reads
 *           `data` unordered: a race);
 *   mode 2: block 1 never calls NotifyNextBlock (the blocks after it wait forever). */
extern "C" __global__ __aicore__ void seq_chain(GM_ADDR data, GM_ADDR work, uint32_t mode, uint32_t rounds)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    TBuf<TPosition::VECCALC> wb;
    const uint32_t n = static_cast<uint32_t>(GetBlockNum());
    pipe.InitBuffer(tb, 8 * sizeof(int32_t));
    pipe.InitBuffer(wb, (n * 8 + 8) * sizeof(int32_t));
    LocalTensor<int32_t> buf = tb.Get<int32_t>();
    LocalTensor<int32_t> ubWork = wb.Get<int32_t>();
    GlobalTensor<int32_t> dataGm;
    GlobalTensor<int32_t> workGm;
    dataGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(data), 8);
    workGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(work), n * 8);
    const uint32_t me = static_cast<uint32_t>(GetBlockIdx());
    InitDetermineComputeWorkspace(workGm, ubWork);
    const bool unsynced = mode == 1 && me + 1 == n;
    for (uint32_t r = 0; r < rounds; r++) {
        if (!unsynced) {
            WaitPreBlock(workGm, ubWork);
        }
        Step(dataGm, buf, me + 1);
        if (!unsynced && !(mode == 2 && me == 1)) {
            NotifyNextBlock(workGm, ubWork);
        }
    }
}

/* Block `skip` returns at once; the others meet in SyncAll(gmWorkspace, ubWorkspace) (`work`:
 * GetBlockNum() * 32 bytes, zeroed). */
extern "C" __global__ __aicore__ void sync_all_gm_skip(GM_ADDR work, uint32_t skip)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, GetBlockNum() * 32);
    LocalTensor<int32_t> ub = tb.Get<int32_t>();
    GlobalTensor<int32_t> workGm;
    workGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(work));
    if (GetBlockIdx() == skip) {
        return;
    }
    SyncAll(workGm, ub);
}
