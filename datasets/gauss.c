/* gauss.c — gaussian dataset rows (Philox4x32-10 + Box-Muller) written lane-wise so that the loops vectorize, with log and sin/cos of 2 pi u by own polynomials instead of libm: the same rows from every build and machine. */
#include "rb_gauss.h"

#include <math.h>
#include <string.h>

#ifdef RB_GAUSS_AVX512
#define GAUSS_ROW rb_gauss_row_avx512
#else
#include "rb_kernels.h"
#define GAUSS_ROW rb_gauss_row_portable
#endif

/* Philox blocks per pass: 64 blocks = 256 dims; wider rows take several passes. */
#define GB 64

/* ln 2 in two parts (the high part has 11 trailing zero bits, so e * LN2_HI is exact for
 * the exponents met here, |e| <= 33) */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define TWO_PI 6.283185307179586476925286766559
#define SQRT2 1.4142135623730951
/* adding and subtracting 1.5 * 2^52 rounds a double of magnitude < 2^51 to the nearest
 * integer (ties to even) in the default rounding mode */
#define ROUND_MAGIC 6755399441055744.0

/* c[0] x^(n-1) + ... + c[n-1] by Horner's rule, highest coefficient first (unrolled, so
 * that the callers' loops still vectorize). */
static inline double horner(double x, const double *c, int n)
{
    double p = c[0];
#pragma GCC unroll 16
    for (int i = 1; i < n; i++)
        p = p * x + c[i];
    return p;
}

/* 1/21, 1/19, ..., 1/3: the series of atanh(s)/s - 1 in z = s^2, divided by z */
static const double LOG_C[] = {1.0 / 21.0, 1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0, 1.0 / 13.0,
                               1.0 / 11.0, 1.0 / 9.0,  1.0 / 7.0,  1.0 / 5.0,  1.0 / 3.0};
/* sin t = t + t^3 (-1/3! + t^2/5! - ... + t^14/17!) */
static const double SIN_C[] = {1.0 / 355687428096000.0, -1.0 / 1307674368000.0,
                               1.0 / 6227020800.0,      -1.0 / 39916800.0,
                               1.0 / 362880.0,          -1.0 / 5040.0,
                               1.0 / 120.0,             -1.0 / 6.0};
/* cos t = 1 + t^2 (-1/2! + t^2/4! - ... + t^14/16!) */
static const double COS_C[] = {1.0 / 20922789888000.0, -1.0 / 87178291200.0,
                               1.0 / 479001600.0,      -1.0 / 3628800.0,
                               1.0 / 40320.0,          -1.0 / 720.0,
                               1.0 / 24.0,             -0.5};

/* log(u) for u in [2^-32, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), log m =
 * 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.1716, by its series to s^21 (truncation
 * < 1e-18 relative), plus e ln 2 in two parts. */
static inline double log_u(double u)
{
    uint64_t b;
    memcpy(&b, &u, sizeof b);
    int32_t e = (int32_t)(b >> 52) - 1023;
    const uint64_t mb = (b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    double m;
    memcpy(&m, &mb, sizeof m);
    const int big = m > SQRT2;
    m = big ? m * 0.5 : m;
    e += big;
    const double ed = (double)e;
    const double s = (m - 1.0) / (m + 1.0), z = s * s;
    const double p = horner(z, LOG_C, sizeof LOG_C / sizeof LOG_C[0]);
    const double lm = 2.0 * s + 2.0 * s * (z * p);
    return ed * LN2_HI + (ed * LN2_LO + lm);
}

/* Box-Muller radius sqrt(-2 log u) from log u <= 0 (sqrt of -0.0 is -0.0, as libm's;
 * the file is built with -fno-math-errno, so sqrt is one instruction and vectorizes). */
static inline double sqrt_rad(double lg)
{
    return sqrt(-2.0 * lg);
}

/* cos and sin of 2 pi u for u in (0, 1]: u = n/4 + r with n = round(4u) and |r| <= 1/8
 * (exact: u is a multiple of 2^-32), t = 2 pi r in [-pi/4, pi/4], Taylor series of
 * sin t to t^17 and of cos t to t^16 (truncation < 1e-19), then the quadrant n mod 4. */
static inline void sincos_2pi_u(double u, double *c, double *s)
{
    const double n = (4.0 * u + ROUND_MAGIC) - ROUND_MAGIC;
    const double r = u - 0.25 * n;
    const double t = r * TWO_PI, t2 = t * t;
    const double sn = t + t * (t2 * horner(t2, SIN_C, sizeof SIN_C / sizeof SIN_C[0]));
    const double pc = horner(t2, COS_C, sizeof COS_C / sizeof COS_C[0]);
    const double cs = 1.0 + t2 * pc;
    const int q = (int)n & 3;
    const double cq = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
    const double sq = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
    *c = cq;
    *s = sq;
}

/* Contract in rb_gauss.h. Per pass of up to GB blocks: the ten Philox rounds on four
 * arrays of 32-bit lanes, then Box-Muller on both pairs of every block into four
 * arrays (one per dim of the block), then the interleaved stores. */
void GAUSS_ROW(uint64_t seed, int tensor, int head, int64_t pos, int head_dim, float *row)
{
    const uint32_t c0 = (uint32_t)(uint64_t)pos, c1 = (uint32_t)((uint64_t)pos >> 32);
    const uint32_t c2 = ((uint32_t)tensor << 16) | (uint32_t)head;
    const int nblk = (head_dim + 3) / 4;
    for (int j0 = 0; j0 < nblk; j0 += GB) {
        const int nb = nblk - j0 < GB ? nblk - j0 : GB;
        uint32_t x0[GB], x1[GB], x2[GB], x3[GB];
        for (int j = 0; j < nb; j++) {
            x0[j] = c0;
            x1[j] = c1;
            x2[j] = c2;
            x3[j] = (uint32_t)(j0 + j);
        }
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int round = 0; round < 10; round++) {
#pragma omp simd
            for (int j = 0; j < nb; j++) {
                const uint64_t p0 = (uint64_t)0xD2511F53u * x0[j];
                const uint64_t p1 = (uint64_t)0xCD9E8D57u * x2[j];
                const uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1[j] ^ k0;
                const uint32_t y2 = (uint32_t)(p0 >> 32) ^ x3[j] ^ k1;
                x1[j] = (uint32_t)p1;
                x3[j] = (uint32_t)p0;
                x0[j] = y0;
                x2[j] = y2;
            }
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        double v[4][GB];
#pragma omp simd
        for (int j = 0; j < nb; j++) {
            const double inv = 1.0 / 4294967296.0;
            const double ra = sqrt_rad(log_u(((double)x0[j] + 1.0) * inv));
            const double rb = sqrt_rad(log_u(((double)x2[j] + 1.0) * inv));
            double ca, sa, cb, sb;
            sincos_2pi_u(((double)x1[j] + 1.0) * inv, &ca, &sa);
            sincos_2pi_u(((double)x3[j] + 1.0) * inv, &cb, &sb);
            v[0][j] = ra * ca;
            v[1][j] = ra * sa;
            v[2][j] = rb * cb;
            v[3][j] = rb * sb;
        }
        float *out = row + (size_t)4 * (size_t)j0;
        const int nd = head_dim - 4 * j0 < 4 * GB ? head_dim - 4 * j0 : 4 * GB;
        for (int i = 0; i < nd; i++)
            out[i] = (float)v[i % 4][i / 4];
    }
}

#ifndef RB_GAUSS_AVX512
rb_gauss_row_fn rb_gauss_row_select(void)
{
    return rb_kernels_helpers_avx512() ? rb_gauss_row_avx512 : rb_gauss_row_portable;
}
#endif
