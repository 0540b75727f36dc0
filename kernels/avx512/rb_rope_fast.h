/* rb_rope_fast.h — internal to kernels/ and its tests: the phase generator behind
 * rb_rope_apply_avx512, exposed so that tests can measure its angle error. */
#ifndef RB_ROPE_FAST_H
#define RB_ROPE_FAST_H

#include <stdint.h>

/* rb_rope_phases_avx512: the (cos, sin) that rb_rope_apply_avx512 uses for each row
 * and pair, by the very same code path (run detection, angle-addition recurrence,
 * re-anchoring at every RB_ROPE_ANCHOR-th row counted from row 0), written to
 * cos_out[r*half + j], sin_out[r*half + j] for r < n_rows, j < half. Serial, no
 * attention factor. Returns 0, RB_EINVAL (NULL pointer, n_rows < 0, half <= 0) or
 * RB_ENOMEM. Needs AVX-512F + OS ZMM state. */
int rb_rope_phases_avx512(const int64_t *pos, int64_t n_rows, const double *inv_freq,
                          int half, double *cos_out, double *sin_out);

#endif
