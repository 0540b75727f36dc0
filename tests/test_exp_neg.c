/* test_exp_neg.c — the OpenBLAS kernel's portable fp32 exp (rb_blas_exp_neg) against double exp: ulp error over [-87, 0] and its cut to exactly 0 below. */
#include "rb_blas.h"

#include "rb_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* one assertion on f(x) = got, through rb_test.h's check */
static void check_x(int ok, const char *what, float x, float got)
{
    check(ok, "%s: f(%.9g) = %.9g", what, (double)x, (double)got);
}

int main(void)
{
    /* every 29th float of [-87, 0] by bit pattern (negative floats: larger pattern, larger
     * magnitude), against the contract's 2 ulp */
    const float lo = -87.0f;
    uint32_t stop;
    memcpy(&stop, &lo, 4);
    double worst = 0;
    float worst_x = 0;
    long n = 0;
    for (uint64_t b = 0x80000000u; b <= stop; b += 29) {
        const uint32_t bb = (uint32_t)b;
        float x;
        memcpy(&x, &bb, 4);
        const double e = rb_test_ulp_f32(rb_blas_exp_neg(x), exp((double)x));
        if (!(e <= worst) && !isnan(worst)) { /* a NaN error (result) is kept */
            worst = e;
            worst_x = x;
        }
        n++;
    }
    printf("rb_blas_exp_neg: %ld inputs in [-87, 0], max error %.3f ulp at x = %.9g\n", n,
           worst, (double)worst_x);
    check_x(worst <= 2.0, "max ulp error over [-87, 0] must be <= 2", worst_x, 0.0f);
    check_x(rb_blas_exp_neg(-INFINITY) == 0.0f, "-inf (a masked key) gives exactly 0",
          -INFINITY, rb_blas_exp_neg(-INFINITY));
    const float below[] = {-87.0001f, -88.0f, -100.0f, -1e30f};
    for (int i = 0; i < 4; i++)
        check_x(rb_blas_exp_neg(below[i]) == 0.0f, "x < -87 gives exactly 0", below[i],
              rb_blas_exp_neg(below[i]));
    check_x(rb_blas_exp_neg(0.0f) == 1.0f && rb_blas_exp_neg(-0.0f) == 1.0f, "exp(+-0) = 1",
          0.0f, rb_blas_exp_neg(0.0f));
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
