/* test_overlap_c.c — the probe overlap's plain-C block (rb_overlap_block_c, what CPUs without usable AVX-512 run in `ropebench bench`) against a scalar computation of what it must return; runs on every CPU. */
#include "rb_test.h"

#include <math.h>
#include <stdlib.h>

/* one unit's value, computed here: 8 chains x 16 lanes, x = x * a + b six times from
 * 1 + chain + lane, summed in double (the block may contract a * x + b into an FMA:
 * one rounding apart, ~1e-7 of a unit) */
static double unit_value(void)
{
    const float a = 0.999999f, b = 1e-7f;
    double s = 0;
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < 16; l++) {
            float x = 1.0f + (float)(i + l);
            for (int it = 0; it < 6; it++)
                x = x * a + b;
            s += (double)x;
        }
    return s;
}

int main(void)
{
    const int64_t n = 64 * 128, lines = n * 4 / 64;
    /* small integers: their float sums are exact, so a 16-float chunk left out or read
     * twice (>= 32) shows against a whole of ~5.7e4 */
    float *k, *v, *pk, *pv;
    double kv;
    if (rb_test_overlap_block(n, &k, &v, &pk, &pv, &kv)) {
        printf("FAIL: out of memory\n");
        return 1;
    }
    const double u1 = unit_value();
    /* unit counts that divide the 512 chunks and 512 lines, that do not, more units than
     * chunks, none; with and without prefetches; at 100,000 units one unit is 1e-5 of
     * the result */
    const int64_t units[] = {0, 1, 7, 206, 511, 512, 513, 1000, 100000};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        for (int with_pf = 0; with_pf < 2; with_pf++) {
            const double got = rb_overlap_block_c(units[u], with_pf ? (const char *)pk : NULL,
                                                  with_pf ? (const char *)pv : NULL, lines, k,
                                                  v, n);
            const double want = (double)units[u] * u1 + kv;
            check(fabs(got - want) <= 1e-6 * fabs(want),
                  "rb_overlap_block_c(units %lld, prefetch %d, n %lld) = %.9g, expected %.9g "
                  "(relative error %.2e, bound 1e-6)",
                  (long long)units[u], with_pf, (long long)n, got, want,
                  fabs(got - want) / fabs(want));
        }
    /* the chains alone (n = 0): a unit left out at 100,000 units is 1e-5 of the result */
    const double got = rb_overlap_block_c(100000, NULL, NULL, 0, k, v, 0);
    check(fabs(got - 100000 * u1) <= 1e-6 * 100000 * u1,
          "rb_overlap_block_c(100000 units, n 0) = %.9g, expected %.9g", got, 100000 * u1);
    check(u1 > 1000, "a unit's value %.9g: the test could not see a unit left out", u1);
    rb_test_overlap_free(k, v, pk, pv);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
