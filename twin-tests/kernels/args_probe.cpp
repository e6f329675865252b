// kernels: aiv_args_probe
// auto_sync: off
/*
 * aiv_args_probe: a kernel with an ordinary AscendC signature (GM pointers, bool, 16/32/64-bit
 * integers, float, a struct of more than 8 KB by value, a trailing byte and pointer), as real
 * kernels have. Each block writes what it received into its AIV_PROBE_SLOTS int64 slots of
 * `out`, so the host can check that every parameter arrived intact at its place:
 *   0 flag, 1 half, 2 n, 3 big, 4 scale * 1000, 5 sum of tiling.words, 6 words[0],
 *   7 words[last], 8 rows, 9 cols, 10 last, 11 the address `other`, 12 GetBlockNum().
 */
#include "kernel_operator.h"
#include "selftest_args.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void aiv_args_probe(GM_ADDR out, bool flag, uint16_t half, uint32_t n,
                                                     int64_t big, float scale, AivProbeTiling tiling,
                                                     uint8_t last, GM_ADDR other)
{
    GlobalTensor<int64_t> o;
    o.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t *>(out) + GetBlockIdx() * AIV_PROBE_SLOTS,
                      AIV_PROBE_SLOTS);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < AIV_PROBE_WORDS; i++) {
        sum += tiling.words[i];
    }
    o.SetValue(0, flag ? 1 : 0);
    o.SetValue(1, static_cast<int64_t>(half));
    o.SetValue(2, static_cast<int64_t>(n));
    o.SetValue(3, big);
    o.SetValue(4, static_cast<int64_t>(scale * 1000.0f));
    o.SetValue(5, static_cast<int64_t>(sum));
    o.SetValue(6, static_cast<int64_t>(tiling.words[0]));
    o.SetValue(7, static_cast<int64_t>(tiling.words[AIV_PROBE_WORDS - 1]));
    o.SetValue(8, static_cast<int64_t>(tiling.rows));
    o.SetValue(9, static_cast<int64_t>(tiling.cols));
    o.SetValue(10, static_cast<int64_t>(last));
    o.SetValue(11, static_cast<int64_t>(reinterpret_cast<uint64_t>(other)));
    o.SetValue(12, GetBlockNum());
    DataCacheCleanAndInvalid<int64_t, CacheLine::ENTIRE_DATA_CACHE>(o);
}
