/* rb_peak.h — internal to kernels/: the AVX-512 FMA throughput loop behind
 * rb_peak_fma_gflops (kernels/peak.c chooses it when the CPU has usable AVX-512). */
#ifndef RB_PEAK_H
#define RB_PEAK_H

#include <stdint.h>

/* rb_peak_fma_avx512: run `iters` iterations of 12 independent fp32 zmm FMA chains
 * (12 FMAs = 384 FLOP per iteration) on the calling thread, and return a value that
 * depends on every result (so the loop cannot be optimised away). Needs AVX-512F
 * and OS ZMM state. */
double rb_peak_fma_avx512(int64_t iters, float seed);

#endif
