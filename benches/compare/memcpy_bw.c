/*
 * The physical reference of the comparison: memcpy bandwidth of 2 threads, each copying its own
 * SIZE-byte buffer repeatedly (warm, first-touched). Prints "<size> <GB/s>" with GB/s = bytes
 * copied by both threads per second (each byte copied is one read and one write).
 * With SIZE:WORKSET, each thread instead has a source and a destination of WORKSET / 4 bytes
 * each (at least SIZE) and copies SIZE bytes at a time from one offset to the same offset of
 * the other, the offset moving on by SIZE and wrapping at the end (a shorter piece there), so
 * the copies touch as much memory as a collective over buffers of WORKSET bytes in all: the
 * reference for a collective whose buffers outgrow a cache that one pair of SIZE-byte buffers
 * fits in. Prints "<size> <GB/s>" as well, GB/s counting the bytes actually copied.
 * Buffers are page-aligned, as the twin's GM allocations are. With plain malloc, two 64 KiB
 * buffers come from the heap 16 bytes off each other modulo 32, and glibc 2.36's memcpy on this
 * AMD machine moves such a pair at 1.6-4.5 GB/s instead of ~40-78 (measured: every other
 * src/dst distance modulo 4096 that is a multiple of 32 runs at full speed); sizes from 256 KiB
 * up were mmap'd, so page-aligned already.
 * usage: memcpy_bw SIZE[:WORKSET]...
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One thread's copies: reps copies of up to size bytes from src + off to dst + off, off moving
 * on by size through len bytes and wrapping (len == size: the same buffers every time). */
struct job { size_t size, len; int reps; char *src, *dst; double copied; };

static void *run(void *p)
{
    struct job *j = p;
    size_t off = 0;
    double copied = 0;
    for (int i = 0; i < j->reps; i++) {
        size_t n = j->len - off < j->size ? j->len - off : j->size;
        memcpy(j->dst + off, j->src + off, n);
        __asm__ volatile("" ::: "memory");
        copied += (double)n;
        off += n;
        if (off == j->len) off = 0;
    }
    j->copied = copied;
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
        char *end;
        size_t size = strtoull(argv[a], &end, 10);
        size_t workset = *end == ':' ? strtoull(end + 1, NULL, 10) : 0;
        if (size == 0) {
            fprintf(stderr, "memcpy_bw: bad size `%s`\n", argv[a]);
            return 2;
        }
        size_t len = workset / 4 > size ? workset / 4 : size;
        int reps = (int)((1ull << 31) / size);
        if (reps < 4) reps = 4;
        /* The whole share copied at least twice per trial, so the copies cover all of it. */
        size_t pass = (len + size - 1) / size;
        if ((size_t)reps < 2 * pass) reps = (int)(2 * pass);
        struct job jobs[2];
        for (int t = 0; t < 2; t++) {
            jobs[t].size = size;
            jobs[t].len = len;
            jobs[t].reps = reps;
            size_t alloc = (len + 4095) / 4096 * 4096; /* aligned_alloc wants a multiple */
            jobs[t].src = aligned_alloc(4096, alloc);
            jobs[t].dst = aligned_alloc(4096, alloc);
            if (!jobs[t].src || !jobs[t].dst) {
                fprintf(stderr, "memcpy_bw: out of memory at %s\n", argv[a]);
                return 1;
            }
            memset(jobs[t].src, 1, len);
            memset(jobs[t].dst, 2, len);
        }
        pthread_t th[2];
        double best = 0;
        for (int trial = 0; trial < 3; trial++) {
            double t0 = now();
            for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, run, &jobs[t]);
            for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
            double gbps = (jobs[0].copied + jobs[1].copied) / (now() - t0) / 1e9;
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
