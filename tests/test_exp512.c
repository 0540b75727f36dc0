/* test_exp512.c — the AVX-512 kernels' exponentials against double exp/exp2: rb_exp512_ps (bf16 kernel) over [-87.3, 88.7], rb_exp2_512_ps (fp32 kernel's base-2 softmax) over [-126, 0], ulp error and special values. */
#include "rb_avx512.h"
#include "rb_test_avx512.h"

#include "rb_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* exp of 16 floats through rb_exp512_ps */
static void exp16(const float *x, float *y)
{
    _mm512_storeu_ps(y, rb_exp512_ps(_mm512_loadu_ps(x)));
}

/* one assertion on f(x) = got, through rb_test.h's check */
static void check_x(int ok, const char *what, float x, float got)
{
    check(ok, "%s: f(%.9g) = %.9g", what, (double)x, (double)got);
}

/* 2^t of 16 floats through rb_exp2_512_ps */
static void exp2_16(const float *t, float *y)
{
    _mm512_storeu_ps(y, rb_exp2_512_ps(_mm512_loadu_ps(t)));
}

/* Worst ulp error of rb_exp2_512_ps over the bit patterns [from, to] of non-positive
 * floats taken every `stride`-th, against exp2 in double; *at gets the argument. */
static double exp2_sweep(uint32_t from, uint32_t to, uint32_t stride, float *at, long *n)
{
    double worst = 0;
    float t[16], y[16];
    int fill = 0;
    for (uint64_t b = from; b <= to; b += stride) {
        const uint32_t bb = (uint32_t)b;
        memcpy(&t[fill], &bb, 4);
        if (++fill < 16 && b + stride <= to)
            continue;
        exp2_16(t, y);
        for (int i = 0; i < fill; i++) {
            const double e = rb_test_ulp_f32(y[i], exp2((double)t[i]));
            if (!(e <= worst) && !isnan(worst)) { /* (a NaN result stays the worst) */
                worst = e;
                *at = t[i];
            }
        }
        *n += fill;
        fill = 0;
    }
    return worst;
}

/* rb_exp2_512_ps: <= 1 ulp (its contract in rb_avx512.h; the kernels' exp contract is
 * 3) on [-1, 0] (every 31st float)
 * and [-126, -1] (every 61st), normal results; special values. */
static void check_exp2(void)
{
    float m1 = -1.0f, m126 = -126.0f, at1 = 0, at2 = 0;
    uint32_t b1, b126;
    memcpy(&b1, &m1, 4);
    memcpy(&b126, &m126, 4);
    long n = 0;
    const double w1 = exp2_sweep(0x80000000u, b1, 31, &at1, &n);
    const double w2 = exp2_sweep(b1, b126, 61, &at2, &n);
    printf("rb_exp2_512_ps: %ld inputs in [-126, 0], max error %.3f ulp on [-1, 0] (at %.9g), "
           "%.3f ulp on [-126, -1] (at %.9g)\n", n, w1, (double)at1, w2, (double)at2);
    check_x(w1 <= 1.0, "exp2: max ulp error over [-1, 0] must be <= 1", at1, 0.0f);
    check_x(w2 <= 1.0, "exp2: max ulp error over [-126, -1] must be <= 1", at2, 0.0f);
    const float sp[16] = {-INFINITY, -152.0f, -1000.0f, NAN, 0.0f, -0.0f, -1.0f, -0.5f,
                          -126.0f, -150.0f, -10.0f, -0.25f, -64.0f, -3.0f, -100.5f, -2.0f};
    float r[16];
    exp2_16(sp, r);
    check_x(r[0] == 0.0f, "exp2(-inf) = 0", sp[0], r[0]);
    check_x(r[1] == 0.0f && r[2] == 0.0f, "exp2 below -151 gives 0", sp[1], r[1]);
    check_x(isnan(r[3]), "exp2(NaN) = NaN", sp[3], r[3]);
    check_x(r[4] == 1.0f && r[5] == 1.0f, "exp2(+-0) = 1", sp[4], r[4]);
    check_x(r[6] == 0.5f && r[15] == 0.25f && r[13] == 0.125f && r[10] == 0x1p-10f &&
              r[12] == 0x1p-64f && r[8] == 0x1p-126f,
          "exp2 of negative integers is exact", sp[6], r[6]);
    check_x(rb_test_ulp_f32(r[7], exp2(-0.5)) <= 3 && rb_test_ulp_f32(r[11], exp2(-0.25)) <= 3 &&
              rb_test_ulp_f32(r[14], exp2(-100.5)) <= 3,
          "exp2(-0.5), exp2(-0.25), exp2(-100.5)", sp[7], r[7]);
    check_x(r[9] >= 0.0f && r[9] < 1e-44f, "exp2(-150) denormal or 0", sp[9], r[9]);
}

int main(void)
{
    rb_test_require_avx512();
    const float lo = -87.3f, hi = 88.7f;
    double worst = 0;
    float worst_x = 0;
    long n = 0;
    float x[16], y[16];
    /* dense sweep: every 61st float of [lo, hi] by bit pattern (all of them would be
     * about 2.2e9 floats; the stride keeps the test short), plus 1e6 random inputs */
    int fill = 0;
    /* positive half: bit patterns 0 .. bits(hi); negative half: bits(-0) .. bits(lo) */
    for (int half = 0; half < 2; half++) {
        float end = half ? lo : hi;
        uint32_t start = half ? 0x80000000u : 0u, stop;
        memcpy(&stop, &end, 4);
        for (uint64_t b = start; b <= stop; b += 61) {
            uint32_t bb = (uint32_t)b;
            memcpy(&x[fill], &bb, 4);
            if (++fill == 16) {
                exp16(x, y);
                for (int i = 0; i < 16; i++) {
                    const double e = rb_test_ulp_f32(y[i], exp((double)x[i]));
                    if (!(e <= worst) && !isnan(worst)) { /* (a NaN result stays the worst) */
                        worst = e;
                        worst_x = x[i];
                    }
                }
                n += 16;
                fill = 0;
            }
        }
    }
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int it = 0; it < 1000000 / 16; it++) {
        for (int i = 0; i < 16; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = lo + (hi - lo) * (float)((double)(s >> 11) * 0x1.0p-53);
        }
        exp16(x, y);
        for (int i = 0; i < 16; i++) {
            const double e = rb_test_ulp_f32(y[i], exp((double)x[i]));
            if (!(e <= worst) && !isnan(worst)) { /* (a NaN result stays the worst) */
                worst = e;
                worst_x = x[i];
            }
        }
        n += 16;
    }
    printf("rb_exp512_ps: %ld inputs in [%.1f, %.1f], max error %.3f ulp at x = %.9g\n", n,
           (double)lo, (double)hi, worst, (double)worst_x);
    /* (its contract in rb_avx512.h: <= 2 ulp; the kernels' exp contract is 3) */
    check_x(worst <= 2.0, "max ulp error over [-87.3, 88.7] must be <= 2", worst_x, 0.0f);

    const float sp[16] = {-INFINITY, -200.0f, -104.0f, INFINITY, 89.0f, 1000.0f, NAN, 0.0f,
                          -0.0f, 1.0f, -1.0f, 88.7f, -87.3f, -103.0f, 50.0f, -50.0f};
    float r[16];
    exp16(sp, r);
    check_x(r[0] == 0.0f, "-inf gives 0", sp[0], r[0]);
    check_x(r[1] == 0.0f, "-200 gives 0", sp[1], r[1]);
    check_x(r[2] >= 0.0f && r[2] < 1e-44f, "-104 gives 0 (or a denormal)", sp[2], r[2]);
    check_x(isinf(r[3]) && r[3] > 0, "+inf gives +inf", sp[3], r[3]);
    check_x(isinf(r[4]) && r[4] > 0, "89 gives +inf", sp[4], r[4]);
    check_x(isinf(r[5]) && r[5] > 0, "1000 gives +inf", sp[5], r[5]);
    check_x(isnan(r[6]), "NaN gives NaN", sp[6], r[6]);
    check_x(r[7] == 1.0f && r[8] == 1.0f, "exp(+-0) = 1", sp[7], r[7]);
    check_x(rb_test_ulp_f32(r[9], exp(1.0)) <= 3 && rb_test_ulp_f32(r[10], exp(-1.0)) <= 3, "exp(+-1)", sp[9],
          r[9]);
    check_x(isfinite(r[11]) && rb_test_ulp_f32(r[11], exp((double)sp[11])) <= 3, "exp(88.7) finite",
          sp[11], r[11]);
    check_x(r[12] > 0 && rb_test_ulp_f32(r[12], exp((double)sp[12])) <= 3, "exp(-87.3) normal",
          sp[12], r[12]);
    check_x(r[13] >= 0 && r[13] < 1e-44f, "exp(-103) denormal or 0", sp[13], r[13]);
    check_x(r[14] > 5.18e21f && r[14] < 5.19e21f && r[15] > 1.92e-22f && r[15] < 1.93e-22f,
          "exp(+-50)", sp[14], r[14]);
    check_exp2();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
