/* test_overlap_c.c — the probe overlap's plain-C block (rb_overlap_block_c, what CPUs without AVX-512 or AVX2 run in `ropebench bench`) and its AVX2 block (rb_overlap_block_avx2, where the CPU has AVX2 and FMA) against a scalar computation of what they must return. */
#include "rb_test.h"
#include "avx512/rb_peak.h"

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

/* the AVX2 block's chains after `units` units, computed here: 12 chains (8 lanes
 * alike) from 1 + chain, 8 steps x = fmaf(x, a, b) a unit, their 96 values summed */
static double chains_avx2(int64_t units)
{
    const float a = 0.999999f, b = 1e-7f;
    double s = 0;
    for (int i = 0; i < 12; i++) {
        float x = 1.0f + (float)i;
        for (int64_t it = 0; it < 8 * units; it++)
            x = fmaf(x, a, b);
        s += 8.0 * (double)x;
    }
    return s;
}

typedef double (*block_fn)(int64_t, const char *, const char *, int64_t, const float *,
                           const float *, int64_t);

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
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    const struct {
        const char *name;
        block_fn fn;
        int chains_kept; /* 1: the arithmetic's value is chains_avx2(units), else
                          * units x unit_value() (each unit restarts its chains) */
        int runs;
    } var[2] = {{"rb_overlap_block_c", rb_overlap_block_c, 0, 1},
                {"rb_overlap_block_avx2", rb_overlap_block_avx2, 1, ci.avx2 && ci.fma}};
    const double u1c = unit_value();
    if (!var[1].runs)
        printf("note: no AVX2 + FMA here: rb_overlap_block_avx2 not run\n");
    for (int vi = 0; vi < 2; vi++) {
        if (!var[vi].runs)
            continue;
        const block_fn block = var[vi].fn;
#define ARITH(units) (var[vi].chains_kept ? chains_avx2(units) : (double)(units) * u1c)
        const char *nm = var[vi].name;
        /* unit counts that divide the 512 chunks and 512 lines, that do not, more units
         * than chunks, none; with and without prefetches; at 100,000 units one unit is
         * 1e-5 of the result */
        const int64_t units[] = {0, 1, 7, 206, 511, 512, 513, 1000, 100000};
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
            for (int with_pf = 0; with_pf < 2; with_pf++) {
                const double got = block(units[u], with_pf ? (const char *)pk : NULL,
                                         with_pf ? (const char *)pv : NULL, lines, k, v, n);
                const double want = ARITH(units[u]) + kv;
                check(fabs(got - want) <= 1e-6 * fabs(want),
                      "%s(units %lld, prefetch %d, n %lld) = %.9g, expected %.9g "
                      "(relative error %.2e, bound 1e-6)",
                      nm, (long long)units[u], with_pf, (long long)n, got, want,
                      fabs(got - want) / fabs(want));
            }
        /* the chains alone (n = 0): a unit left out at 100,000 units is 1e-5 of the result */
        const double got = block(100000, NULL, NULL, 0, k, v, 0), want = ARITH(100000);
        check(fabs(got - want) <= 1e-6 * want, "%s(100000 units, n 0) = %.9g, expected %.9g",
              nm, got, want);
        const double one = fabs(ARITH(100000) - ARITH(99999));
        check(one > 2e-6 * want,
              "%s: one unit changes the result by %.3g of %.9g: the test could not see a "
              "unit left out at 100,000 units", nm, one, want);
#undef ARITH
    }
    rb_test_overlap_free(k, v, pk, pv);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
