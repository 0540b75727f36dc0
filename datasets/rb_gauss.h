/* rb_gauss.h — internal to datasets/: the gaussian row generator (Philox4x32-10 + Box-Muller) and its portable and AVX-512 builds. */
#ifndef RB_GAUSS_H
#define RB_GAUSS_H

#include <stdint.h>

/* A gaussian row generator: row[0..head_dim) for (seed, tensor, head, pos), laid out
 * as rb_dataset_fill documents (rb_datasets.h): dims 4j..4j+3 from the Philox4x32-10
 * block with key (seed lo, seed hi) and counter (pos lo, pos hi, tensor << 16 | head,
 * j); (x0, x1) give dims 4j, 4j+1 and (x2, x3) dims 4j+2, 4j+3 by Box-Muller: radius
 * sqrt(-2 log u(x_even)), angle 2 pi u(x_odd), u(x) = (x + 1) / 2^32 in (0, 1], the
 * even dim the cosine, the odd dim the sine, rounded to float once. head_dim is even
 * and positive. log and cos/sin(2 pi u) are this file's own polynomials in plain
 * double multiplies, adds and one division (within ~2 ulp of double; each float
 * within one float ulp of libm's log/cos/sin of the same formula, or within 4e-15
 * absolute where libm's 2 pi u rounding shows), so the rows do not depend on libm. */
typedef void (*rb_gauss_row_fn)(uint64_t seed, int tensor, int head, int64_t pos,
                                int head_dim, float *row);

/* The two builds of one source (datasets/gauss.c): lane-wise loops, no FMA contraction
 * (C17 mode), so both give bit-identical rows. */
void rb_gauss_row_portable(uint64_t seed, int tensor, int head, int64_t pos, int head_dim,
                           float *row);
void rb_gauss_row_avx512(uint64_t seed, int tensor, int head, int64_t pos, int head_dim,
                         float *row);

/* rb_gauss_row_select: the AVX-512 build where rb_kernels_helpers_avx512() says so
 * (CPU and OS allow it, ROPEBENCH_ISA is not "ref"), else the portable one. Call once
 * per batch of rows, not per row (it reads the environment). */
rb_gauss_row_fn rb_gauss_row_select(void);

#endif
