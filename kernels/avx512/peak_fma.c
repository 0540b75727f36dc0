/* peak_fma.c — the AVX-512 throughput loops of the peak probes: 12 independent fp32 zmm accumulators (enough to cover latency x throughput on current cores), updated by FMAs or by VDPBF16PS, and the same FMA chains interleaved with a memory stream (rb_overlap_probe). */
#include "rb_peak.h"

#include <immintrin.h>

/* The 12 accumulators x0..x11 of a peak loop, started at seed + i (PEAK_CHAINS); one
 * step x = STEP(x) of each (PEAK_ROUND: six at a time, PEAK_STEP6, the asm statements
 * keeping each chain as written, with no algebraic shortcut across steps); their sum as
 * one vector (PEAK_SUM). PEAK_LOOP: the body of a loop of `iters` rounds, returning a
 * value that depends on every chain. */
#define PEAK_STEP6(S, a, b, c, d, e, f)                                                   \
    (a = S(a), b = S(b), c = S(c), d = S(d), e = S(e), f = S(f))
#define PEAK_CHAINS(seed)                                                                 \
    __m512 x0 = _mm512_set1_ps(seed), x1 = _mm512_set1_ps((seed) + 1),                    \
           x2 = _mm512_set1_ps((seed) + 2), x3 = _mm512_set1_ps((seed) + 3),              \
           x4 = _mm512_set1_ps((seed) + 4), x5 = _mm512_set1_ps((seed) + 5),              \
           x6 = _mm512_set1_ps((seed) + 6), x7 = _mm512_set1_ps((seed) + 7),              \
           x8 = _mm512_set1_ps((seed) + 8), x9 = _mm512_set1_ps((seed) + 9),              \
           x10 = _mm512_set1_ps((seed) + 10), x11 = _mm512_set1_ps((seed) + 11)
#define PEAK_ROUND(STEP)                                                                  \
    do {                                                                                  \
        PEAK_STEP6(STEP, x0, x1, x2, x3, x4, x5);                                         \
        PEAK_STEP6(STEP, x6, x7, x8, x9, x10, x11);                                       \
        __asm__("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5));         \
        __asm__("" : "+v"(x6), "+v"(x7), "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11));       \
    } while (0)
#define PEAK_SUM()                                                                        \
    _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)), \
                                _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7))), \
                  _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)))
#define PEAK_LOOP(STEP)                                                                   \
    PEAK_CHAINS(seed);                                                                    \
    for (int64_t it = 0; it < iters; it++)                                                \
        PEAK_ROUND(STEP);                                                                 \
    return (double)_mm512_reduce_add_ps(PEAK_SUM())

double rb_peak_fma_avx512(int64_t iters, float seed)
{
    /* a*x + b with a slightly below 1 and b small: the values stay finite forever */
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(seed * 1e-7f);
#define FMA_STEP(v) _mm512_fmadd_ps(v, a, b)
    PEAK_LOOP(FMA_STEP);
#undef FMA_STEP
}

double rb_peak_dpbf16_avx512(int64_t iters, float seed)
{
    /* x += 1 * 2^-20 twice per lane (0x3F80 is bf16 1.0, 0x3580 bf16 2^-20): the sums
     * stay finite for far more iterations than any call runs */
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80);
    const __m512bh b = (__m512bh)_mm512_set1_epi32(0x35803580);
#define DP_STEP(v) _mm512_dpbf16_ps(v, a, b)
    PEAK_LOOP(DP_STEP);
#undef DP_STEP
}

double rb_overlap_block_avx512(int64_t units, const char *pk, const char *pv, int64_t lines,
                               const float *k, const float *v, int64_t n)
{
    /* the FMA probe's chains (a*x + b stays finite), 4 rounds of 12 per unit */
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    PEAK_CHAINS(1.0f);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const int64_t chunks = n / 32;
    int64_t l = 0, c = 0;
#define OV_STEP(x) _mm512_fmadd_ps(x, a, b)
#define OV_SUM_TO(end)                                                                    \
    for (; c < (end); c++) {                                                              \
        s0 = _mm512_add_ps(s0, _mm512_load_ps(k + 32 * c));                               \
        s1 = _mm512_add_ps(s1, _mm512_load_ps(k + 32 * c + 16));                          \
        s2 = _mm512_add_ps(s2, _mm512_load_ps(v + 32 * c));                               \
        s3 = _mm512_add_ps(s3, _mm512_load_ps(v + 32 * c + 16));                          \
    }
#define OV_PF_TO(end)                                                                     \
    for (; pk && l < (end); l++) {                                                        \
        _mm_prefetch(pk + 64 * l, _MM_HINT_T1);                                           \
        _mm_prefetch(pv + 64 * l, _MM_HINT_T1);                                           \
    }
    for (int64_t u = 0; u < units; u++) {
        for (int r = 0; r < 4; r++)
            PEAK_ROUND(OV_STEP);
        OV_PF_TO((u + 1) * lines / units);
        OV_SUM_TO((u + 1) * chunks / units);
    }
    OV_PF_TO(lines); /* units 0: all at once */
    OV_SUM_TO(chunks);
#undef OV_PF_TO
#undef OV_SUM_TO
#undef OV_STEP
    return (double)_mm512_reduce_add_ps(
        _mm512_add_ps(PEAK_SUM(), _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3))));
}
