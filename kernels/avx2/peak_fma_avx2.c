/* peak_fma_avx2.c — the FMA peak loop for CPUs with AVX2 and FMA but no usable AVX-512: 12 independent fp32 ymm chains, as the AVX-512 loop runs them on zmm. */
#include "avx512/rb_peak.h"

#include <immintrin.h>

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
        x0 = _mm256_fmadd_ps(x0, a, b), x1 = _mm256_fmadd_ps(x1, a, b);
        x2 = _mm256_fmadd_ps(x2, a, b), x3 = _mm256_fmadd_ps(x3, a, b);
        x4 = _mm256_fmadd_ps(x4, a, b), x5 = _mm256_fmadd_ps(x5, a, b);
        x6 = _mm256_fmadd_ps(x6, a, b), x7 = _mm256_fmadd_ps(x7, a, b);
        x8 = _mm256_fmadd_ps(x8, a, b), x9 = _mm256_fmadd_ps(x9, a, b);
        x10 = _mm256_fmadd_ps(x10, a, b), x11 = _mm256_fmadd_ps(x11, a, b);
        __asm__("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5));
        __asm__("" : "+x"(x6), "+x"(x7), "+x"(x8), "+x"(x9), "+x"(x10), "+x"(x11));
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
