/* rb_blas.h — internal to kernels/: the OpenBLAS tile kernel's prototype and
 * contract. Portable C + CBLAS: the fast path on machines without AVX-512. */
#ifndef RB_BLAS_H
#define RB_BLAS_H

#include "rb_kernels.h"

#include <stdint.h>
#include <string.h>

/* rb_attn_tile_blas: the tile contract of rb_attn_tile_fn (rb_kernels.h). For each
 * block of query rows and block of keys: S = Q K^T by cblas_sgemm (fp32), a scalar
 * fp32 online softmax with the entropy accumulator over S (masked entries by
 * position), then O += P V by cblas_sgemm; fully masked blocks are skipped. Query
 * blocks are split over OpenMP threads by equal visible work, each calling a
 * single-threaded OpenBLAS. The fp32 row states are merged into double every 4096 keys
 * and at the end. Error vs rb_attn_tile_ref: outputs <= 1e-5 relative, lse/entropy
 * <= 1e-5; on rows of a million keys lse <= 1e-7 and entropy <= 5e-7 absolute. */
int rb_attn_tile_blas(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                      const float *v, const int64_t *k_pos, int64_t nk, int d,
                      double scale, double *state);

/* rb_blas_exp_neg: e^x in fp32 for x <= 0 (scores minus their running max), written so
 * that compilers vectorize it without ISA flags: Cody–Waite reduction x = n ln2 + r,
 * Cephes' degree-7 polynomial, 2^n built in the exponent bits. x < -87 (and -inf, the
 * mask) gives exactly 0; error <= 2 ulp above that (tests/test_exp_neg.c). The range test is done on the bits
 * (for x <= 0, a larger magnitude is a larger unsigned pattern): a float comparison
 * could trap, and gcc does not if-convert trapping selects, so the loop would stay
 * scalar. */
static inline float rb_blas_exp_neg(float x)
{
    uint32_t xb;
    memcpy(&xb, &x, sizeof xb);
    const uint32_t under = xb > 0xC2AE0000u ? 0xFFFFFFFFu : 0u; /* x < -87 */
    const uint32_t xcb = (xb & ~under) | (0xC2AE0000u & under);
    float xc;
    memcpy(&xc, &xcb, sizeof xc);
    /* round to nearest by the 1.5 * 2^23 trick: vectorizes without SSE4.1 */
    const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + (r + 1.0f);
    const int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float sc;
    memcpy(&sc, &bits, sizeof sc);
    const float e = p * sc;
    uint32_t eb;
    memcpy(&eb, &e, sizeof eb);
    eb &= ~under;
    float out;
    memcpy(&out, &eb, sizeof out);
    return out;
}

#endif
