/*
 * How far apart the machine's two CPUs are right now: two threads hand one cache line back and
 * forth and the program prints "<ns>", the median round trip of 9 batches of 20,000.
 * On this 2-vCPU VM the figure moves between ~80 ns and ~500 ns from one second to the next
 * (the host places the two vCPUs on near or far cores), and the twin, whose workers share
 * queues, flags and the checkers' shadow state, runs up to twice as slow while it is high:
 * run.sh measures it next to every twin run so that the report can say which runs met it.
 * usage: corelat
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIPS 20000
#define BATCHES 9

static _Alignas(64) atomic_long ball;

static void *partner(void *arg)
{
    (void)arg;
    for (long i = 1; i <= (long)TRIPS * BATCHES; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i - 1)
            ;
        atomic_store_explicit(&ball, 2 * i, memory_order_release);
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    pthread_t t;
    double ns[BATCHES];
    if (pthread_create(&t, NULL, partner, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    long i = 1;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int k = 0; k < TRIPS; k++, i++) {
            atomic_store_explicit(&ball, 2 * i - 1, memory_order_release);
            while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i)
                ;
        }
        ns[b] = (now_ns() - t0) / TRIPS;
    }
    pthread_join(t, NULL);
    qsort(ns, BATCHES, sizeof ns[0], cmp);
    printf("%.0f\n", ns[BATCHES / 2]);
    return 0;
}
