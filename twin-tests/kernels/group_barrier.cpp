/*
 * GroupBarrier on AIV blocks: blocks [0, arrive) are the Arrive group, the next `wait` blocks the
 * Wait group. In round r every arriver k writes 8 int32 ((r + 1) * 100 + k) to its slot of `data`
 * and arrives; every waiter j waits, then sums the arrivers' first words into out[(r * wait + j) * 8].
 *   mode 0: as above (a slot per arriver and round);
 *   mode 1: waiter 0 skips its Wait (reads `data` unordered: a race);
 *   mode 2: the arrivers reuse one slot each for every round: a GroupBarrier orders an arriver's
 *           next round after the waiters' Wait of the last one, not after their reads (a race);
 *   mode 3: arriver 0 never arrives (the waiters wait forever).
 * `bar`: max(arrive, wait) * 512 bytes, zeroed, 512-byte aligned.
 */
// kernels: group_chain
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void group_chain(GM_ADDR data, GM_ADDR bar, GM_ADDR out, uint32_t arrive,
                                                  uint32_t wait, uint32_t mode, uint32_t rounds)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tb;
    pipe.InitBuffer(tb, 16 * sizeof(int32_t));
    LocalTensor<int32_t> buf = tb.Get<int32_t>();
    LocalTensor<int32_t> sum = buf[8];
    GlobalTensor<int32_t> dataGm;
    GlobalTensor<int32_t> outGm;
    dataGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(data));
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(out));
    GroupBarrier<PipeMode::MTE3_MODE> barrier(bar, arrive, wait);
    const uint32_t me = static_cast<uint32_t>(GetBlockIdx());
    for (uint32_t r = 0; r < rounds; r++) {
        const uint32_t slotRound = mode == 2 ? 0 : r;
        if (me < arrive) {
            Duplicate(buf, static_cast<int32_t>((r + 1) * 100 + me), 8);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopy(dataGm[(slotRound * arrive + me) * 8], buf, 8);
            SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
            if (!(mode == 3 && me == 0)) {
                barrier.Arrive(me);
            }
        } else if (me < arrive + wait) {
            const uint32_t j = me - arrive;
            if (!(mode == 1 && j == 0)) {
                barrier.Wait(j);
            }
            int32_t total = 0;
            for (uint32_t k = 0; k < arrive; k++) {
                DataCopy(buf, dataGm[(slotRound * arrive + k) * 8], 8);
                SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
                total += buf.GetValue(0);
                SetFlag<HardEvent::S_MTE2>(EVENT_ID0);
                WaitFlag<HardEvent::S_MTE2>(EVENT_ID0);
            }
            sum.SetValue(0, total);
            SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
            DataCopyExtParams p{1, 4, 0, 0, 0};
            DataCopyPad(outGm[(r * wait + j) * 8], sum, p);
            SetFlag<HardEvent::MTE3_S>(EVENT_ID0);
            WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);
        }
    }
}
