/*
 * The physical reference of the comparison: memcpy bandwidth of 2 threads, each copying its own
 * SIZE-byte buffer repeatedly (warm, first-touched). Prints "<size> <GB/s>" with GB/s = bytes
 * copied by both threads per second (each byte copied is one read and one write).
 * Buffers are page-aligned, as the twin's GM allocations are. With plain malloc, two 64 KiB
 * buffers come from the heap 16 bytes off each other modulo 32, and glibc 2.36's memcpy on this
 * AMD machine moves such a pair at 1.6-4.5 GB/s instead of ~40-78 (measured: every other
 * src/dst distance modulo 4096 that is a multiple of 32 runs at full speed); sizes from 256 KiB
 * up were mmap'd, so page-aligned already.
 * usage: memcpy_bw SIZE...
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job { size_t size; int reps; char *src, *dst; };

static void *run(void *p)
{
    struct job *j = p;
    for (int i = 0; i < j->reps; i++) {
        memcpy(j->dst, j->src, j->size);
        __asm__ volatile("" ::: "memory");
    }
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        size_t size = strtoull(argv[a], NULL, 10);
        int reps = (int)((1ull << 31) / size);
        if (reps < 4) reps = 4;
        struct job jobs[2];
        for (int t = 0; t < 2; t++) {
            jobs[t].size = size;
            jobs[t].reps = reps;
            size_t alloc = (size + 4095) / 4096 * 4096; /* aligned_alloc wants a multiple */
            jobs[t].src = aligned_alloc(4096, alloc);
            jobs[t].dst = aligned_alloc(4096, alloc);
            memset(jobs[t].src, 1, size);
            memset(jobs[t].dst, 2, size);
        }
        pthread_t th[2];
        double best = 0;
        for (int trial = 0; trial < 3; trial++) {
            double t0 = now();
            for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, run, &jobs[t]);
            for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
            double gbps = 2.0 * size * reps / (now() - t0) / 1e9;
            if (gbps > best) best = gbps;
        }
        printf("%zu %.3f\n", size, best);
        fflush(stdout);
        for (int t = 0; t < 2; t++) {
            free(jobs[t].src);
            free(jobs[t].dst);
        }
    }
    return 0;
}
