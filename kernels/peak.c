/* peak.c — the machine peaks every benchmark figure is measured against: an FMA
 * throughput probe (AVX-512 when usable, else AVX2 + FMA, else plain C), a STREAM triad, and how
 * much of a stream the machine hides under FMA work (the probe rows' ideal). */
#include "rb_kernels.h"
#include "avx512/rb_peak.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rb_omp.h"

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

/* rb_peak_fma_isa: see rb_kernels.h. */
const char *rb_peak_fma_isa(void)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    return rb_cpu_avx512_usable(&ci) ? "avx512" : ci.avx2 && ci.fma ? "avx2+fma" : "c";
}

double rb_peak_fma_gflops(int threads, double seconds)
{
    const char *isa = rb_peak_fma_isa();
    const int nt = resolve_threads(threads);
    if (!strcmp(isa, "avx512"))
        return team_rate(rb_peak_fma_avx512, 200000, 384.0, seconds, nt);
    if (!strcmp(isa, "avx2+fma")) /* (the C loop's SSE2 reached ~1/9 of this) */
        return team_rate(rb_peak_fma_avx2, 400000, 192.0, seconds, nt);
    return team_rate(peak_loop_c, 100000, 256.0, seconds, nt);
}

double rb_tile_ceiling_gflops(double seconds)
{
#ifdef RB_HAVE_AVX512_FP32
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    if (!rb_cpu_avx512_usable(&ci))
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
    if (!(rb_cpu_avx512_usable(&ci) && ci.avx512_bf16))
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

/* rb_overlap_probe's blocks: 64 rows of 128 floats (32 KiB) of K and of V, the probe
 * rows' key blocks at d = 128; a unit of work is 1,536 FLOP (48 zmm FMAs, 96 ymm FMAs on
 * AVX2, or the C loop's 6 iterations); the block
 * OV_AHEAD after the current one is prefetched, and the current one read, over the
 * current one's units */
#define OV_BLOCK_FLOATS (64 * 128)
#define OV_UNIT_FLOP 1536.0
#define OV_AHEAD 2

/* rb_overlap_block_c: see rb_kernels.h. */
double rb_overlap_block_c(int64_t units, const char *pk, const char *pv, int64_t lines,
                          const float *k, const float *v, int64_t n)
{
    float sum[16] = {0};
    double r = 0;
    const int64_t chunks = n / 16;
    int64_t l = 0, c = 0;
    for (int64_t u = 0; u <= units; u++) { /* u == units: what is left (all, for 0 units) */
        if (u < units)
            r += peak_loop_c(6, 1.0f);
        const int64_t lend = u < units ? (u + 1) * lines / units : lines;
        const int64_t cend = u < units ? (u + 1) * chunks / units : chunks;
        for (; pk && l < lend; l++) {
            __builtin_prefetch(pk + 64 * l, 0, 2);
            __builtin_prefetch(pv + 64 * l, 0, 2);
        }
        for (; c < cend; c++)
            for (int j = 0; j < 16; j++)
                sum[j] += k[16 * c + j] + v[16 * c + j];
    }
    for (int j = 0; j < 16; j++)
        r += sum[j];
    return r;
}

int rb_overlap_probe(int threads, size_t bytes_per_array, double flop, double out[3])
{
    const int64_t nb = (int64_t)(bytes_per_array / (OV_BLOCK_FLOATS * sizeof(float)));
    const size_t bytes = (size_t)nb * OV_BLOCK_FLOATS * sizeof(float);
    float *k = NULL, *v = NULL;
    int rc = -1;
    if (nb < 1 || !(flop >= 0) || !(flop <= 1e18))
        goto cleanup;
    k = rb_kernels_alloc(bytes);
    v = rb_kernels_alloc(bytes);
    if (!k || !v)
        goto cleanup;
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    double (*block)(int64_t, const char *, const char *, int64_t, const float *, const float *,
                    int64_t) =
        rb_cpu_avx512_usable(&ci)  ? rb_overlap_block_avx512
        : ci.avx2 && ci.fma         ? rb_overlap_block_avx2 /* the FMA peak's own loop */
                                    : rb_overlap_block_c;
    const int nt = resolve_threads(threads);
    const int64_t units = llround(flop / (double)nb / OV_UNIT_FLOP);
    const int64_t lines = OV_BLOCK_FLOATS * (int64_t)sizeof(float) / 64;
    /* first touch by the thread that reads each block (the same static split below);
     * values that are neither zero nor one repeated page */
#pragma omp parallel num_threads(nt)
    {
        const int tid = rb_omp_tid(), team = rb_omp_team();
        for (int64_t b = nb * tid / team; b < nb * (tid + 1) / team; b++)
            for (int64_t i = 0; i < OV_BLOCK_FLOATS; i++) {
                k[b * OV_BLOCK_FLOATS + i] = 1e-9f * (float)(i + 1);
                v[b * OV_BLOCK_FLOATS + i] = 2e-9f * (float)((i ^ b) & 4095);
            }
    }
    /* pass 0: the arithmetic alone (each block's reads go to the thread's first block,
     * in cache); 1: the stream alone; 2: both, the block OV_AHEAD ahead prefetched */
    for (int pass = 0; pass < 3; pass++) {
        double best = INFINITY, sink = 0;
        for (int rep = 0; rep < 5; rep++) { /* rep 0 is a warm-up */
            const double t0 = now_s();
#pragma omp parallel num_threads(nt) reduction(+ : sink)
            {
                const int tid = rb_omp_tid(), team = rb_omp_team();
                const int64_t b0 = nb * tid / team, b1 = nb * (tid + 1) / team;
                for (int64_t b = b0; b < b1; b++) {
                    const int64_t rd = pass == 0 ? b0 : b;
                    const int ahead = pass == 2 && b + OV_AHEAD < b1;
                    const char *pk = ahead ? (const char *)(k + (b + OV_AHEAD) * OV_BLOCK_FLOATS)
                                           : NULL;
                    const char *pv = ahead ? (const char *)(v + (b + OV_AHEAD) * OV_BLOCK_FLOATS)
                                           : NULL;
                    sink += block(pass == 1 ? 0 : units, pk, pv, lines,
                                  k + rd * OV_BLOCK_FLOATS, v + rd * OV_BLOCK_FLOATS,
                                  OV_BLOCK_FLOATS);
                }
            }
            const double t = now_s() - t0;
            if (rep > 0 && t < best)
                best = t;
        }
        peak_sink = sink;
        out[pass] = best;
    }
    rc = 0;
cleanup:
    free(k);
    free(v);
    return rc;
}
