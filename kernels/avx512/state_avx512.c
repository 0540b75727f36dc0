/* state_avx512.c — the fast kernels' fp32 row states merged into the double state with AVX-512 (rb_state_merge_f32_avx512). */
#include "rb_avx512.h"

#include <math.h>

/* rb_state_merge_f32_avx512: see rb_avx512.h. One row at a time: the scalar m, l, u
 * part as merge_row in kernels/ref/attn_ref.c, the d accumulators 8 doubles per step
 * (masked tail), with the first lines of the next row's destination prefetched so that
 * their read-for-ownership overlaps this row's work. */
void rb_state_merge_f32_avx512(double *state, const int64_t *idx, size_t idx_stride,
                               int64_t row0, int64_t nrows, int d, const float *m,
                               const float *l, const float *u, const float *acc,
                               size_t acc_stride, double mu_scale)
{
    const size_t stride = RB_STATE_STRIDE(d);
    const int tail = d % 8;
    const __mmask8 mt = (__mmask8)((1u << tail) - 1u);
    for (int64_t i = 0; i < nrows; i++) {
        if (i + 1 < nrows) {
            const int64_t nx = idx ? idx[(size_t)(i + 1) * idx_stride] : row0 + i + 1;
            const char *p = (const char *)(state + (size_t)nx * stride);
            for (size_t off = 0; off < stride * sizeof(double); off += 64)
                _mm_prefetch(p + off, _MM_HINT_T0);
        }
        if (m[i] == -INFINITY)
            continue;
        const int64_t r = idx ? idx[(size_t)i * idx_stride] : row0 + i;
        double *a = state + (size_t)r * stride;
        const float *b = acc + (size_t)i * acc_stride;
        const double mb = (double)m[i] * mu_scale, lb = l[i], ub = (double)u[i] * mu_scale;
        const double ma = a[0];
        int j = 0;
        if (ma == -INFINITY) {
            a[0] = mb;
            a[1] = lb;
            a[2] = ub;
            for (; j + 8 <= d; j += 8)
                _mm512_storeu_pd(a + 3 + j, _mm512_cvtps_pd(_mm256_loadu_ps(b + j)));
            if (tail)
                _mm512_mask_storeu_pd(a + 3 + j, mt,
                                      _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mt, b + j)));
            continue;
        }
        const double M = ma > mb ? ma : mb;
        const double da = ma - M, db = mb - M;
        const double alpha = exp(da), beta = exp(db);
        const double la = a[1];
        a[0] = M;
        a[1] = alpha * la + beta * lb;
        /* (a side whose weight underflowed to 0 adds 0, not 0 * -inf: rb_state_merge) */
        a[2] = (alpha > 0.0 ? alpha * (a[2] + la * da) : 0.0) +
               (beta > 0.0 ? beta * (ub + lb * db) : 0.0);
        const __m512d va = _mm512_set1_pd(alpha), vb = _mm512_set1_pd(beta);
        for (; j + 8 <= d; j += 8) {
            const __m512d x = _mm512_loadu_pd(a + 3 + j);
            const __m512d y = _mm512_cvtps_pd(_mm256_loadu_ps(b + j));
            _mm512_storeu_pd(a + 3 + j, _mm512_add_pd(_mm512_mul_pd(va, x), _mm512_mul_pd(vb, y)));
        }
        if (tail) {
            const __m512d x = _mm512_maskz_loadu_pd(mt, a + 3 + j);
            const __m512d y = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mt, b + j));
            _mm512_mask_storeu_pd(a + 3 + j, mt,
                                  _mm512_add_pd(_mm512_mul_pd(va, x), _mm512_mul_pd(vb, y)));
        }
    }
}
