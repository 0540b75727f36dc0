/* rb_peak.h — internal to kernels/: the AVX-512 throughput loops behind
 * rb_peak_fma_gflops and rb_peak_dpbf16_gflops (kernels/peak.c), the tile loop behind
 * rb_tile_ceiling_gflops and the block loop of rb_overlap_probe; and the AVX2 FMA loop
 * and overlap block (kernels/avx2/) for CPUs without usable AVX-512. */
#ifndef RB_PEAK_H
#define RB_PEAK_H

#include <stdint.h>

/* rb_peak_fma_avx512: run `iters` iterations of 12 independent fp32 zmm FMA chains
 * (12 FMAs = 384 FLOP per iteration) on the calling thread, and return a value that
 * depends on every result (so the loop cannot be optimised away). Needs AVX-512F
 * and OS ZMM state. */
double rb_peak_fma_avx512(int64_t iters, float seed);

/* rb_peak_fma_avx2: as rb_peak_fma_avx512 on 12 ymm chains (12 FMAs = 192 FLOP per
 * iteration). Needs AVX2, FMA and OS YMM state (rb_cpu_info's avx2 and fma). */
double rb_peak_fma_avx2(int64_t iters, float seed);

/* rb_overlap_block_avx2: rb_overlap_block_c's reads and prefetches (kernels/rb_kernels.h)
 * on a CPU with AVX2 and FMA, with rb_peak_fma_avx2's chains as the arithmetic, kept
 * across units as rb_overlap_block_avx512 keeps its own: 12 chains of 8 floats from
 * x = 1 + chain, each unit 8 steps x = fma(x, 0.999999, 1e-7) of every chain (1,536
 * FLOP); k and v are read in chunks of 16 floats (two ymm) and summed per lane.
 * Returns the sum of the 96 final chain values and of every float of k and v. Needs
 * AVX2, FMA and OS YMM state. */
double rb_overlap_block_avx2(int64_t units, const char *pk, const char *pv, int64_t lines,
                             const float *k, const float *v, int64_t n);

/* rb_peak_dpbf16_avx512: run `iters` iterations of 12 independent VDPBF16PS chains
 * (each instruction 16 lanes x 2 bf16 products added to fp32: 64 FLOP, 768 per
 * iteration) on the calling thread; returns a value that depends on every result.
 * Needs AVX512_BF16 and OS ZMM state. */
double rb_peak_dpbf16_avx512(int64_t iters, float seed);

/* rb_attn_avx512_tiles: run `iters` iterations of the fp32 avx512 kernel's register
 * tiles alone (kernels/avx512/attn_fp32.c) on the calling thread: the scores of 12
 * query rows against one packed 64-key block and the PV update of those 12 rows over
 * the block, head_dim 128, no softmax, 79 KiB of operands (L1 and L2): 2 * 2 * 12 * 64 * 128 =
 * 393,216 FLOP per iteration. Returns a value that depends on the results. Needs
 * AVX-512F and OS ZMM state. */
double rb_attn_avx512_tiles(int64_t iters, float seed);

/* rb_overlap_block_avx512: one block of rb_overlap_probe (kernels/peak.c) on the calling
 * thread: `units` units of the FMA probe's 12 chains (48 zmm FMAs, 1,536 FLOP each);
 * after unit u, the prefetches (PREFETCHT1) of lines up to (u + 1) * lines / units of
 * pk and of pv (NULL: none) and the sums of the 32-float chunks of k and of v up to
 * (u + 1) * (n / 32) / units, so that both are spread evenly over the arithmetic (all
 * at once when units is 0). k and v 64-byte aligned, n a multiple of 32. Returns a
 * value that depends on every FMA and every float read. Needs AVX-512F and OS ZMM
 * state. */
double rb_overlap_block_avx512(int64_t units, const char *pk, const char *pv, int64_t lines,
                               const float *k, const float *v, int64_t n);

#endif
