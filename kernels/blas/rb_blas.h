/* rb_blas.h — internal to kernels/: the OpenBLAS tile kernel's prototype and
 * contract. Portable C + CBLAS: the fast path on machines without AVX-512. */
#ifndef RB_BLAS_H
#define RB_BLAS_H

#include "rb_kernels.h"

/* rb_attn_tile_blas: the tile contract of rb_attn_tile_fn (rb_kernels.h). For each
 * block of query rows and block of keys: S = Q K^T by cblas_sgemm (fp32), a scalar
 * fp32 online softmax with the entropy accumulator over S (masked entries by
 * position), then O += P V by cblas_sgemm; fully masked blocks are skipped. Query
 * blocks are split over OpenMP threads by equal visible work, each calling a
 * single-threaded OpenBLAS. The fp32 row states are merged into `state` at the end.
 * Error vs rb_attn_tile_ref: outputs <= 1e-5 relative, lse/entropy <= 1e-5. */
int rb_attn_tile_blas(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                      const float *v, const int64_t *k_pos, int64_t nk, int d,
                      double scale, double *state);

#endif
