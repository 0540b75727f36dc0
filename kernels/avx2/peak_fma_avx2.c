/* peak_fma_avx2.c — the FMA peak loop and the probe-overlap block for CPUs with AVX2 and FMA but no usable AVX-512: 12 independent fp32 ymm chains, as the AVX-512 loops run them on zmm. */
#include "avx512/rb_peak.h"

#include <immintrin.h>

/* One step x = a*x + b of each of the twelve chains x0..x11, kept as written (no
 * shortcut across steps) and in registers by the empty asm statements. */
#define AVX2_ROUND()                                                                      \
    do {                                                                                  \
        x0 = _mm256_fmadd_ps(x0, a, b), x1 = _mm256_fmadd_ps(x1, a, b);                   \
        x2 = _mm256_fmadd_ps(x2, a, b), x3 = _mm256_fmadd_ps(x3, a, b);                   \
        x4 = _mm256_fmadd_ps(x4, a, b), x5 = _mm256_fmadd_ps(x5, a, b);                   \
        x6 = _mm256_fmadd_ps(x6, a, b), x7 = _mm256_fmadd_ps(x7, a, b);                   \
        x8 = _mm256_fmadd_ps(x8, a, b), x9 = _mm256_fmadd_ps(x9, a, b);                   \
        x10 = _mm256_fmadd_ps(x10, a, b), x11 = _mm256_fmadd_ps(x11, a, b);               \
        __asm__("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5));         \
        __asm__("" : "+x"(x6), "+x"(x7), "+x"(x8), "+x"(x9), "+x"(x10), "+x"(x11));       \
    } while (0)

double rb_peak_fma_avx2(int64_t iters, float seed)
{
    /* a*x + b with a slightly below 1 and b small: the values stay finite forever */
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(seed * 1e-7f);
    /* twelve independent chains in named registers (an array would go through memory),
     * kept as written (no shortcut across steps) by the empty asm statements */
    __m256 x0 = _mm256_set1_ps(seed), x1 = _mm256_set1_ps(seed + 1),
           x2 = _mm256_set1_ps(seed + 2), x3 = _mm256_set1_ps(seed + 3),
           x4 = _mm256_set1_ps(seed + 4), x5 = _mm256_set1_ps(seed + 5),
           x6 = _mm256_set1_ps(seed + 6), x7 = _mm256_set1_ps(seed + 7),
           x8 = _mm256_set1_ps(seed + 8), x9 = _mm256_set1_ps(seed + 9),
           x10 = _mm256_set1_ps(seed + 10), x11 = _mm256_set1_ps(seed + 11);
    for (int64_t it = 0; it < iters; it++) {
        AVX2_ROUND();
    }
    const __m256 s = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                      _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7))),
        _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float l[8];
    _mm256_storeu_ps(l, s);
    double r = 0;
    for (int i = 0; i < 8; i++)
        r += l[i];
    return r;
}

double rb_overlap_block_avx2(int64_t units, const char *pk, const char *pv, int64_t lines,
                             const float *k, const float *v, int64_t n)
{
    /* the FMA peak loop's twelve chains (a*x + b stays finite), kept across the units as
     * the AVX-512 block keeps its own: 8 rounds of 12 FMAs per unit */
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    __m256 x0 = _mm256_set1_ps(1), x1 = _mm256_set1_ps(2), x2 = _mm256_set1_ps(3),
           x3 = _mm256_set1_ps(4), x4 = _mm256_set1_ps(5), x5 = _mm256_set1_ps(6),
           x6 = _mm256_set1_ps(7), x7 = _mm256_set1_ps(8), x8 = _mm256_set1_ps(9),
           x9 = _mm256_set1_ps(10), x10 = _mm256_set1_ps(11), x11 = _mm256_set1_ps(12);
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    const int64_t chunks = n / 16;
    int64_t l = 0, c = 0;
    for (int64_t u = 0; u <= units; u++) { /* u == units: what is left (all, for 0 units) */
        for (int r = 0; u < units && r < 8; r++) {
            AVX2_ROUND();
        }
        const int64_t lend = u < units ? (u + 1) * lines / units : lines;
        const int64_t cend = u < units ? (u + 1) * chunks / units : chunks;
        for (; pk && l < lend; l++) {
            _mm_prefetch(pk + 64 * l, _MM_HINT_T1);
            _mm_prefetch(pv + 64 * l, _MM_HINT_T1);
        }
        for (; c < cend; c++) {
            s0 = _mm256_add_ps(s0, _mm256_add_ps(_mm256_loadu_ps(k + 16 * c),
                                                 _mm256_loadu_ps(v + 16 * c)));
            s1 = _mm256_add_ps(s1, _mm256_add_ps(_mm256_loadu_ps(k + 16 * c + 8),
                                                 _mm256_loadu_ps(v + 16 * c + 8)));
        }
    }
    const __m256 xs = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                      _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7))),
        _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float lx[8], l0[8], l1[8];
    _mm256_storeu_ps(lx, xs);
    _mm256_storeu_ps(l0, s0);
    _mm256_storeu_ps(l1, s1);
    double r = 0;
    for (int j = 0; j < 8; j++)
        r += (double)lx[j] + (double)l0[j] + (double)l1[j];
    return r;
}
