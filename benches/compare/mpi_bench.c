/*
 * MPI side of the side-by-side comparison (benches/compare/run.sh): times MPI_Allgather and
 * MPI_Allreduce(MPI_FLOAT, MPI_SUM) the way aiv-perf does (warm-up, then ITERS back-to-back calls
 * between barriers; time = slowest rank / ITERS) and prints one line per size:
 *     <coll> <ranks> <size_bytes> <time_us> <algbw_GBps> <busbw_GBps> <wrong>
 * Sizes follow nccl-tests: all_gather = whole gathered output, all_reduce = the buffer.
 * usage: mpi_bench <all_gather|all_reduce> SIZE_PER_RANK...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(size_t bytes)
{
    if (bytes <= (64u << 10)) return 1000;
    if (bytes <= (1u << 20)) return 100;
    if (bytes <= (16u << 20)) return 10;
    return 3;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: mpi_bench <all_gather|all_reduce> SIZE_PER_RANK...\n");
        MPI_Finalize();
        return 2;
    }
    int gather = strcmp(argv[1], "all_gather") == 0;
    for (int a = 2; a < argc; a++) {
        size_t per = strtoull(argv[a], NULL, 10);
        size_t count = per / sizeof(float);
        float *send = malloc(count * sizeof(float) + 64);
        float *recv = malloc(count * sizeof(float) * (gather ? n : 1) + 64);
        for (size_t i = 0; i < count; i++) send[i] = (float)((rank * 3 + i * 7) % 8);
        int iters = iters_for(per);
        for (int w = 0; w < 5; w++) {
            if (gather) MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
            else MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (gather) MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
            else MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        double dt = MPI_Wtime() - t0, slowest;
        MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        long wrong = 0, total_wrong = 0;
        if (gather) {
            for (int r = 0; r < n; r++)
                for (size_t i = 0; i < count; i++)
                    wrong += recv[r * count + i] != (float)((r * 3 + i * 7) % 8);
        } else {
            for (size_t i = 0; i < count; i++) {
                float want = 0;
                for (int r = 0; r < n; r++) want += (float)((r * 3 + i * 7) % 8);
                wrong += recv[i] != want;
            }
        }
        MPI_Reduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            size_t size = gather ? per * n : per;
            double us = slowest * 1e6 / iters;
            double algbw = size / us / 1e3;
            double factor = gather ? (n - 1.0) / n : 2.0 * (n - 1.0) / n;
            printf("%s %d %zu %.2f %.4f %.4f %ld\n", argv[1], n, size, us, algbw, algbw * factor, total_wrong);
            fflush(stdout);
        }
        free(send);
        free(recv);
    }
    MPI_Finalize();
    return 0;
}
