/* test_overlap.c — the probe-overlap block loop (rb_overlap_block_avx512) against a scalar computation of what it must return, and rb_overlap_probe's argument checks. */
#include "rb_peak.h"
#include "rb_test_avx512.h"
#include "rb_test.h"

#include <math.h>
#include <stdlib.h>

/* what rb_overlap_block_avx512 returns, computed here: 12 chains x = fma(x, a, b) per
 * lane, 4 steps a unit, started at 1..12 (each lane of a chain alike: 16 copies), plus
 * every float of k and v; summed in double (the loop sums in float, in another order) */
static double expect(int64_t units, const float *k, const float *v, int64_t n)
{
    double s = 0;
    for (int i = 0; i < 12; i++) {
        float x = (float)(i + 1);
        for (int64_t st = 0; st < 4 * units; st++)
            x = fmaf(x, 0.999999f, 1e-7f);
        s += 16.0 * (double)x;
    }
    for (int64_t i = 0; i < n; i++)
        s += (double)k[i] + (double)v[i];
    return s;
}

int main(void)
{
    rb_test_require_avx512();
    const int64_t n = 64 * 128, lines = n * 4 / 64;
    /* values whose sum shows any 32-float chunk left out or read twice (a chunk sums to
     * >= 32, the whole to ~1e5: 3e-4 of it, against float rounding of ~1e-6) */
    float *k, *v, *pk, *pv;
    if (rb_test_overlap_block(n, &k, &v, &pk, &pv, NULL)) {
        printf("FAIL: out of memory\n");
        return 1;
    }
    /* unit counts that divide the 256 chunks and 512 lines, that do not, more units than
     * chunks, none; with and without the prefetch stream; 100,000 units move the chains
     * far from their start (a unit or a round left out changes the result) */
    const int64_t units[] = {0, 1, 7, 206, 255, 256, 513, 1000, 100000};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        for (int with_pf = 0; with_pf < 2; with_pf++) {
            const double got = rb_overlap_block_avx512(units[u], with_pf ? (const char *)pk : NULL,
                                                       with_pf ? (const char *)pv : NULL,
                                                       lines, k, v, n);
            const double want = expect(units[u], k, v, n);
            check(fabs(got - want) <= 2e-6 * fabs(want),
                  "rb_overlap_block_avx512(units %lld, prefetch %d, n %lld) = %.9g, expected "
                  "%.9g (relative error %.2e, bound 2e-6)",
                  (long long)units[u], with_pf, (long long)n, got, want,
                  fabs(got - want) / fabs(want));
        }
    /* the FMA chains alone (n = 0), where a unit left out shows: at 100,000 units one
     * unit fewer moves the result by ~4e-6 of it, against float summation error of
     * ~1e-7 (the loop's tree over 192 values of ~4) */
    const int64_t cu[] = {1, 99999, 100000, 100001};
    for (size_t u = 0; u < sizeof cu / sizeof cu[0]; u++) {
        const double got = rb_overlap_block_avx512(cu[u], NULL, NULL, 0, k, v, 0);
        const double want = expect(cu[u], k, v, 0);
        check(fabs(got - want) <= 1e-6 * fabs(want),
              "rb_overlap_block_avx512(units %lld, n 0) = %.9g, expected %.9g (relative "
              "error %.2e, bound 1e-6)", (long long)cu[u], got, want,
              fabs(got - want) / fabs(want));
    }
    {
        const double a = expect(100000, k, v, 0), b = expect(100000 - 1, k, v, 0);
        check(fabs(a - b) > 2e-6 * fabs(a), "the chains do not tell 100,000 units from "
              "99,999 (%.9g, %.9g): the test above could not see a unit left out", a, b);
    }
    /* rb_overlap_probe: bad arguments refused with out untouched; a small valid call */
    double out[3] = {-7, -7, -7};
    check(rb_overlap_probe(1, 1000, 1e6, out) == -1 && out[0] == -7,
          "rb_overlap_probe with less than one block (1000 bytes) must return -1, out untouched");
    check(rb_overlap_probe(1, 1 << 20, -1.0, out) == -1 && out[0] == -7,
          "rb_overlap_probe with flop -1 must return -1, out untouched");
    check(rb_overlap_probe(1, 1 << 20, NAN, out) == -1 && out[0] == -7,
          "rb_overlap_probe with flop NaN must return -1, out untouched");
    check(rb_overlap_probe(1, 1 << 20, 1e30, out) == -1 && out[0] == -7,
          "rb_overlap_probe with flop 1e30 (units past int64) must return -1, out untouched");
    for (int t = 1; t <= 2; t++) {
        const int rc = rb_overlap_probe(t, (size_t)4 << 20, 5e7, out);
        check(rc == 0 && out[0] > 0 && out[1] > 0 && out[2] > 0 && isfinite(out[2]),
              "rb_overlap_probe(%d threads, 4 MiB, 5e7 FLOP) = %d, times %g %g %g", t, rc,
              out[0], out[1], out[2]);
    }
    rb_test_overlap_free(k, v, pk, pv);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
