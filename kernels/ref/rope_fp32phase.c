/* rope_fp32phase.c — RoPE with phases formed in float32, as widely used fp32 code does (for the phase-precision metric). */
#include "rb_kernels.h"
#include "../avx512/rb_avx512.h"

#include <math.h>
#include <string.h>

/* Each pair is rotated by angle a = (float)pos * (float)inv_freq[i] (a float product,
 * so both operands are rounded to float first, as in HF's float32 inv_freq times a
 * float32 position); c = cosf(a) * af, s = sinf(a) * af with af = (float)attention
 * factor (as HF scales its float cos/sin cache); x' = x1 c - x2 s, y' = x2 c + x1 s in
 * float. Layout, partial rotary and pass-through dims as rb_rope_apply. */
void rb_rope_apply_fp32phase_ref(float *x, const float *src, int64_t n_rows, size_t row_stride,
                                 const int64_t *pos, const double *inv_freq, int head_dim,
                                 int rotary_dim, rb_rope_layout layout,
                                 double attention_factor)
{
    if (!x || !pos || !inv_freq || n_rows <= 0 || rotary_dim <= 0 ||
        rotary_dim > head_dim)
        return;
    const int half = rotary_dim / 2;
    const float af = (float)attention_factor;
    for (int64_t r = 0; r < n_rows; r++) {
        float *row = x + (size_t)r * row_stride;
        if (src && src != x)
            memcpy(row, src + (size_t)r * row_stride, (size_t)head_dim * sizeof *row);
        const float fpos = (float)pos[r];
        for (int i = 0; i < half; i++) {
            const float a = fpos * (float)inv_freq[i];
            const float c = cosf(a) * af;
            const float s = sinf(a) * af;
            const int ia = layout == RB_LAYOUT_GPTJ ? 2 * i : i;
            const int ib = layout == RB_LAYOUT_GPTJ ? 2 * i + 1 : i + half;
            const float x1 = row[ia], x2 = row[ib];
            row[ia] = x1 * c - x2 * s;
            row[ib] = x2 * c + x1 * s;
        }
    }
}

void rb_rope_apply_fp32phase(float *x, const float *src, int64_t n_rows, size_t row_stride,
                             const int64_t *pos, const double *inv_freq, int head_dim,
                             int rotary_dim, rb_rope_layout layout,
                             double attention_factor)
{
    if (rb_kernels_helpers_avx512())
        rb_rope_apply_fp32phase_avx512(x, src, n_rows, row_stride, pos, inv_freq, head_dim,
                                       rotary_dim, layout, attention_factor);
    else
        rb_rope_apply_fp32phase_ref(x, src, n_rows, row_stride, pos, inv_freq, head_dim,
                                    rotary_dim, layout, attention_factor);
}
