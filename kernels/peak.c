/* peak.c — the machine peaks every benchmark figure is measured against: an FMA
 * throughput probe (AVX-512 when usable, plain C otherwise) and a STREAM triad. */
#include "rb_kernels.h"
#include "avx512/rb_peak.h"

#include <stdlib.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int resolve_threads(int threads)
{
#ifdef _OPENMP
    return threads >= 1 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

/* Portable FMA loop: 8 independent chains of 16 floats (a*x + b: 2 FLOP each),
 * 256 FLOP per iteration; the compiler vectorizes it as far as its flags allow. */
static double peak_loop_c(int64_t iters, float seed)
{
    float acc[8][16];
    const float a = 0.999999f, b = seed * 1e-7f;
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < 16; l++)
            acc[i][l] = seed + (float)(i + l);
    for (int64_t it = 0; it < iters; it++) {
        __asm__ volatile("" : : "r"(acc) : "memory");
        for (int i = 0; i < 8; i++)
            for (int l = 0; l < 16; l++)
                acc[i][l] = acc[i][l] * a + b;
    }
    double s = 0;
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < 16; l++)
            s += acc[i][l];
    return s;
}

static volatile double peak_sink;

/* timed windows per rb_peak_fma_gflops call (each at least one chunk long) */
#define PEAK_WINDOWS 8

/* best_rate: the calling thread's rate in GFLOP/s of fn (`flop` FLOP per iteration,
 * called `chunk` iterations at a time; seconds <= 0: 0.2): a warm-up of 0.1*seconds
 * (clock and power-license ramp), a barrier (orphaned: every thread of an enclosing
 * team calls this), then PEAK_WINDOWS windows of seconds/PEAK_WINDOWS, each at least
 * one chunk long; the best window's rate (a capability, as STREAM reports its best
 * time: a time slice lost to another process or to the hypervisor only lowers the
 * windows it falls in). */
static double best_rate(double (*fn)(int64_t, float), int64_t chunk, double flop,
                        double seconds)
{
    if (!(seconds > 0))
        seconds = 0.2;
    double sink = 0, best = 0.0;
    const double w0 = now_s();
    while (now_s() - w0 < 0.1 * seconds)
        sink += fn(chunk, 1.0f);
#pragma omp barrier
    const double t0 = now_s();
    for (int w = 0; w < PEAK_WINDOWS; w++) {
        int64_t iters = 0;
        const double ws = now_s();
        double t1 = ws;
        do {
            sink += fn(chunk, 1.0f);
            iters += chunk;
            t1 = now_s();
        } while (t1 - ws < seconds / PEAK_WINDOWS);
        const double rate = flop * (double)iters / (t1 - ws) * 1e-9;
        best = rate > best ? rate : best;
        if (t1 - t0 >= seconds)
            break;
    }
    peak_sink = sink;
    return best;
}

/* The team's rate: every window starts for all threads at one instant (after a
 * barrier) and ends when the last thread has finished its last chunk (the next
 * barrier), and counts the FLOP of all threads over that wall time. Summing each
 * thread's own best window instead, as best_rate would, overstates a team that has
 * more threads than cores: every thread then finds some window in which it ran alone
 * (64 threads on 2 cores read 800 GFLOP/s against ~220 for one). */
double rb_peak_fma_gflops(int threads, double seconds)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    const int zmm = ci.avx512f && ci.os_zmm;
    const int nt = resolve_threads(threads);
    double (*fn)(int64_t, float) = zmm ? rb_peak_fma_avx512 : peak_loop_c;
    const int64_t chunk = zmm ? 200000 : 100000;
    const double flop = zmm ? 384.0 : 256.0;
    if (!(seconds > 0))
        seconds = 0.2;
    double best = 0.0, team_flop = 0.0, ws = 0.0, t0 = 0.0;
    int stop = 0;
#pragma omp parallel num_threads(nt)
    {
        double sink = 0;
        const double w0 = now_s();
        while (now_s() - w0 < 0.1 * seconds)
            sink += fn(chunk, 1.0f);
        for (int w = 0; w < PEAK_WINDOWS; w++) {
#pragma omp barrier
#pragma omp single
            {
                team_flop = 0.0;
                ws = now_s();
                if (w == 0)
                    t0 = ws;
            } /* implied barrier: every thread starts after ws is set */
            int64_t iters = 0;
            do {
                sink += fn(chunk, 1.0f);
                iters += chunk;
            } while (now_s() - ws < seconds / PEAK_WINDOWS);
#pragma omp atomic
            team_flop += flop * (double)iters;
#pragma omp barrier
#pragma omp single
            {
                const double t1 = now_s(), rate = team_flop / (t1 - ws) * 1e-9;
                best = rate > best ? rate : best;
                stop = t1 - t0 >= seconds;
            } /* implied barrier: every thread sees stop */
            if (stop)
                break;
        }
        peak_sink = sink;
    }
    return best;
}

double rb_tile_ceiling_gflops(double seconds)
{
#ifdef RB_HAVE_AVX512_FP32
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    if (!(ci.avx512f && ci.os_zmm))
        return -1.0;
    return best_rate(rb_attn_avx512_tiles, 2000, 393216.0, seconds);
#else
    (void)seconds;
    return -1.0;
#endif
}

double rb_peak_dpbf16_gflops(double seconds)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    if (!(ci.avx512f && ci.avx512_bf16 && ci.os_zmm))
        return -1.0;
    return best_rate(rb_peak_dpbf16_avx512, 200000, 768.0, seconds);
}

double rb_triad_gbps(int threads, size_t bytes_per_array)
{
    const size_t n = bytes_per_array / sizeof(double);
    double *a = NULL, *b = NULL, *c = NULL, best = -1.0, result = -1.0;
    if (n < 1024)
        goto cleanup;
    /* the kernels' allocator: the same alignment and huge pages as their arrays */
    const size_t bytes = n * sizeof(double);
    a = rb_kernels_alloc(bytes);
    b = rb_kernels_alloc(bytes);
    c = rb_kernels_alloc(bytes);
    if (!a || !b || !c)
        goto cleanup;
    const int nt = resolve_threads(threads);
    const long long nn = (long long)n;
    /* first touch by the thread that will use each page */
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long long i = 0; i < nn; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    const double s = 3.0;
    for (int rep = 0; rep < 6; rep++) {
        const double t0 = now_s();
#pragma omp parallel for num_threads(nt) schedule(static)
        for (long long i = 0; i < nn; i++)
            a[i] = b[i] + s * c[i];
        const double t = now_s() - t0;
        if (rep > 0 && (best < 0 || t < best)) /* rep 0 is a warm-up */
            best = t;
    }
    peak_sink = a[n / 2];
    result = 3.0 * sizeof(double) * (double)n / best * 1e-9;
cleanup:
    free(a);
    free(b);
    free(c);
    return result;
}
