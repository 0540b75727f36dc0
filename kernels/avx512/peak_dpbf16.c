/* peak_dpbf16.c — the VDPBF16PS throughput loop of the bf16 peak probe: 12 independent fp32 zmm accumulators fed by bf16 pair products, as the bf16 kernels' dot products are. */
#include "rb_peak.h"

#include <immintrin.h>

double rb_peak_dpbf16_avx512(int64_t iters, float seed)
{
    /* acc += 1 * (tiny, tiny): 0x3F80 is bf16 1.0, b's pairs are bf16 of 2^-20, so the
     * sums stay finite and exact for far more iterations than any call runs */
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80);
    const __m512bh b = (__m512bh)_mm512_set1_epi32(0x35803580);
    __m512 x0 = _mm512_set1_ps(seed), x1 = _mm512_set1_ps(seed + 1), x2 = _mm512_set1_ps(seed + 2),
           x3 = _mm512_set1_ps(seed + 3), x4 = _mm512_set1_ps(seed + 4),
           x5 = _mm512_set1_ps(seed + 5), x6 = _mm512_set1_ps(seed + 6),
           x7 = _mm512_set1_ps(seed + 7), x8 = _mm512_set1_ps(seed + 8),
           x9 = _mm512_set1_ps(seed + 9), x10 = _mm512_set1_ps(seed + 10),
           x11 = _mm512_set1_ps(seed + 11);
    for (int64_t it = 0; it < iters; it++) {
        x0 = _mm512_dpbf16_ps(x0, a, b);
        x1 = _mm512_dpbf16_ps(x1, a, b);
        x2 = _mm512_dpbf16_ps(x2, a, b);
        x3 = _mm512_dpbf16_ps(x3, a, b);
        x4 = _mm512_dpbf16_ps(x4, a, b);
        x5 = _mm512_dpbf16_ps(x5, a, b);
        x6 = _mm512_dpbf16_ps(x6, a, b);
        x7 = _mm512_dpbf16_ps(x7, a, b);
        x8 = _mm512_dpbf16_ps(x8, a, b);
        x9 = _mm512_dpbf16_ps(x9, a, b);
        x10 = _mm512_dpbf16_ps(x10, a, b);
        x11 = _mm512_dpbf16_ps(x11, a, b);
        __asm__("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5));
        __asm__("" : "+v"(x6), "+v"(x7), "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11));
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                             _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)));
    return (double)_mm512_reduce_add_ps(s);
}
