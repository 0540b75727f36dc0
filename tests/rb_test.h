/* rb_test.h — what the C tests share: check(), which counts and prints the first failures with their parameters, and reproducible splitmix64 randomness. */
#ifndef RB_TEST_H
#define RB_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rb_kernels.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* rb_test_ulp_f32: the error of float y against the exact value e (a double), in units
 * of the float ulp at e (the denormal ulp 2^-149 below the normal range). */
static inline double rb_test_ulp_f32(float y, double e)
{
    int ex;
    frexp(e, &ex); /* e = f * 2^ex, f in [0.5, 1) */
    const double ulp = ldexp(1.0, ex - 24 < -149 ? -149 : ex - 24);
    return fabs((double)y - e) / ulp;
}

/* Counters of the including test; its main prints them and fails if n_fail > 0. */
static int n_pass, n_fail, n_printed;

/* check: count one assertion; when it fails, print "FAIL: " and the formatted case (its
 * parameters and the values compared), for the first 60 failures only. */
/* rb_test_max: the larger of a running worst error and a new one, NaN when either is
 * NaN (fmax drops a NaN, which would let a NaN result pass a `worst <= tol` check). */
static inline double rb_test_max(double worst, double e)
{
    return isnan(worst) || isnan(e) ? NAN : fmax(worst, e);
}

static inline void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void check(int ok, const char *fmt, ...)
{
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    if (n_printed++ >= 60)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
}

/* splitmix64; a test may set rng_state to start a reproducible stream */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t rng_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* uniform in [0, 1) with 53 random bits */
static inline double rng_unit(void) { return (double)(rng_u64() >> 11) * 0x1p-53; }
/* uniform integer in [lo, hi] (hi >= lo) */
static inline int64_t rng_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_u64() % (uint64_t)(hi - lo + 1));
}
/* standard normal (Box-Muller, cosine branch) */
static inline double rng_normal(void)
{
    double u1 = rng_unit(), u2 = rng_unit();
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* rb_test_overlap_free: frees what rb_test_overlap_block allocated. */
static inline void rb_test_overlap_free(float *k, float *v, float *pk, float *pv)
{
    free(k), free(v), free(pk), free(pv);
}

/* rb_test_overlap_block: the probe-overlap tests' block of n floats each (64-byte
 * aligned, rb_kernels_alloc; the caller frees them): k and v small integers (1..7 and
 * 1..5, whose float sums are exact, so that a chunk left out or read twice shows), pk
 * and pv zero (the prefetch targets); *kv (kv may be NULL) = the sum of every float of k
 * and v. 0, or -1 with nothing allocated. */
static inline int rb_test_overlap_block(int64_t n, float **k, float **v, float **pk,
                                        float **pv, double *kv)
{
    const size_t bytes = (size_t)n * sizeof(float);
    *k = rb_kernels_alloc(bytes), *v = rb_kernels_alloc(bytes);
    *pk = rb_kernels_alloc(bytes), *pv = rb_kernels_alloc(bytes);
    if (!*k || !*v || !*pk || !*pv) {
        rb_test_overlap_free(*k, *v, *pk, *pv);
        return -1;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        (*k)[i] = 1.0f + (float)(rng_u64() % 7);
        (*v)[i] = 1.0f + (float)(rng_u64() % 5);
        (*pk)[i] = (*pv)[i] = 0.0f;
        sum += (double)(*k)[i] + (double)(*v)[i];
    }
    if (kv)
        *kv = sum;
    return 0;
}


#endif
