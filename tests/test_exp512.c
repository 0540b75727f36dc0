/* test_exp512.c — rb_exp512_ps (the exp shared by the AVX-512 kernels) against double exp: ulp error over [-87.3, 88.7], and its special values. */
#include "rb_avx512.h"
#include "rb_test_avx512.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int n_pass, n_fail;

/* Error of float y against the exact value e (double), in units of the float ulp at e. */
static double ulp_err(float y, double e)
{
    int ex;
    frexp(e, &ex); /* e = f * 2^ex, f in [0.5, 1) */
    const double ulp = ldexp(1.0, ex - 24 < -149 ? -149 : ex - 24);
    return fabs((double)y - e) / ulp;
}

/* exp of 16 floats through rb_exp512_ps */
static void exp16(const float *x, float *y)
{
    _mm512_storeu_ps(y, rb_exp512_ps(_mm512_loadu_ps(x)));
}

static void check(int ok, const char *what, float x, float got)
{
    if (ok) {
        n_pass++;
    } else {
        n_fail++;
        printf("FAIL: %s: exp(%.9g) = %.9g\n", what, x, got);
    }
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
                    const double e = ulp_err(y[i], exp((double)x[i]));
                    if (e > worst) {
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
            const double e = ulp_err(y[i], exp((double)x[i]));
            if (e > worst) {
                worst = e;
                worst_x = x[i];
            }
        }
        n += 16;
    }
    printf("rb_exp512_ps: %ld inputs in [%.1f, %.1f], max error %.3f ulp at x = %.9g\n", n,
           (double)lo, (double)hi, worst, (double)worst_x);
    check(worst <= 3.0, "max ulp error over [-87.3, 88.7] must be <= 3", worst_x, 0.0f);

    const float sp[16] = {-INFINITY, -200.0f, -104.0f, INFINITY, 89.0f, 1000.0f, NAN, 0.0f,
                          -0.0f, 1.0f, -1.0f, 88.7f, -87.3f, -103.0f, 50.0f, -50.0f};
    float r[16];
    exp16(sp, r);
    check(r[0] == 0.0f, "-inf gives 0", sp[0], r[0]);
    check(r[1] == 0.0f, "-200 gives 0", sp[1], r[1]);
    check(r[2] >= 0.0f && r[2] < 1e-44f, "-104 gives 0 (or a denormal)", sp[2], r[2]);
    check(isinf(r[3]) && r[3] > 0, "+inf gives +inf", sp[3], r[3]);
    check(isinf(r[4]) && r[4] > 0, "89 gives +inf", sp[4], r[4]);
    check(isinf(r[5]) && r[5] > 0, "1000 gives +inf", sp[5], r[5]);
    check(isnan(r[6]), "NaN gives NaN", sp[6], r[6]);
    check(r[7] == 1.0f && r[8] == 1.0f, "exp(+-0) = 1", sp[7], r[7]);
    check(ulp_err(r[9], exp(1.0)) <= 3 && ulp_err(r[10], exp(-1.0)) <= 3, "exp(+-1)", sp[9],
          r[9]);
    check(isfinite(r[11]) && ulp_err(r[11], exp((double)sp[11])) <= 3, "exp(88.7) finite",
          sp[11], r[11]);
    check(r[12] > 0 && ulp_err(r[12], exp((double)sp[12])) <= 3, "exp(-87.3) normal",
          sp[12], r[12]);
    check(r[13] >= 0 && r[13] < 1e-44f, "exp(-103) denormal or 0", sp[13], r[13]);
    check(r[14] > 5.18e21f && r[14] < 5.19e21f && r[15] > 1.92e-22f && r[15] < 1.93e-22f,
          "exp(+-50)", sp[14], r[14]);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
