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

/* team_rate: the rate in GFLOP/s of fn (`flop` FLOP per iteration, called `chunk`
 * iterations at a time; seconds <= 0: 0.2) on a team of nt threads: each thread warms
 * up for 0.1*seconds (clock and power-license ramp), then PEAK_WINDOWS windows of
 * seconds/PEAK_WINDOWS, each at least one chunk long, start for all threads at one
 * instant (a barrier) and end when the last thread has finished its last chunk (the
 * next barrier); a window's rate is all threads' FLOP over its wall time, and the
 * result the best window's (a capability, as STREAM reports its best time: a time
 * slice lost to another process or to the hypervisor only lowers the windows it falls
 * in). Summing each thread's own best window instead, as this did until 2026-12-02,
 * overstates a team with more threads than cores: every thread then finds some window
 * in which it ran alone (64 threads on 2 cores read 800 GFLOP/s against ~220 for one). */
static double team_rate(double (*fn)(int64_t, float), int64_t chunk, double flop,
                        double seconds, int nt)
{
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

double rb_peak_fma_gflops(int threads, double seconds)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    const int zmm = ci.avx512f && ci.os_zmm;
    return zmm ? team_rate(rb_peak_fma_avx512, 200000, 384.0, seconds, resolve_threads(threads))
               : team_rate(peak_loop_c, 100000, 256.0, seconds, resolve_threads(threads));
}

double rb_tile_ceiling_gflops(double seconds)
{
#ifdef RB_HAVE_AVX512_FP32
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    if (!(ci.avx512f && ci.os_zmm))
        return -1.0;
    return team_rate(rb_attn_avx512_tiles, 2000, 393216.0, seconds, 1);
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
    return team_rate(rb_peak_dpbf16_avx512, 200000, 768.0, seconds, 1);
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
