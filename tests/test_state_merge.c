/* test_state_merge.c — rb_state_merge_f32_avx512 (the fast kernels' merge of fp32 row states) against the reference rb_state_merge on random states, index maps and units. */
#include "rb_avx512.h"
#include "rb_test_avx512.h"
#include "rb_test.h"

#include <stdlib.h>
#include <string.h>

/* Error metric: per double of the merged state, |got - want| <= 1e-14 * (|alpha*x| +
 * |beta*y|) + 1e-300, the terms of the merge formula (a product and a sum fused or not
 * differ by well under that); m exactly; untouched rows bit for bit. */
static int close_to(double got, double want, double scale)
{
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= 1e-14 * scale + 1e-300;
}

/* One case: n fp32 rows merged into a state of n + 5 rows through a random injective
 * index map (stride 2, as the kernels' sorted rows keep it) or row0 + i. */
static void run_case(int d, int n, int use_idx, double mu_scale)
{
    const size_t S = RB_STATE_STRIDE(d);
    const int nd = n + 5;
    const size_t dv = (size_t)d + 3; /* an fp32 acc stride that is not d */
    double *st = malloc((size_t)nd * S * sizeof *st), *want = malloc((size_t)nd * S * sizeof *want);
    double *orig = malloc((size_t)nd * S * sizeof *orig); /* the state before the merge */
    double *src = malloc(S * sizeof *src);
    float *m = malloc((size_t)n * sizeof *m), *l = malloc((size_t)n * sizeof *l);
    float *u = malloc((size_t)n * sizeof *u), *acc = malloc((size_t)n * dv * sizeof *acc);
    int64_t *idx = malloc((size_t)2 * n * sizeof *idx), *perm = malloc((size_t)nd * sizeof *perm);
    for (int r = 0; r < nd; r++) {
        perm[r] = r;
        double *a = st + (size_t)r * S;
        a[0] = rng_int(0, 5) == 0 ? -INFINITY : 30.0 * (rng_unit() - 0.5);
        a[1] = a[0] == -INFINITY ? 0.0 : 1.0 + 50.0 * rng_unit();
        a[2] = a[0] == -INFINITY ? 0.0 : 10.0 * (rng_unit() - 0.5);
        for (int j = 0; j < d; j++)
            a[3 + j] = a[0] == -INFINITY ? 0.0 : rng_normal();
    }
    for (int r = nd - 1; r > 0; r--) {
        const int k = rng_int(0, r);
        const int64_t t = perm[r];
        perm[r] = perm[k];
        perm[k] = t;
    }
    const int64_t row0 = 3;
    for (int i = 0; i < n; i++) {
        idx[2 * i] = perm[i];
        idx[2 * i + 1] = -1; /* the other field of the pair: must not be read as an index */
        m[i] = rng_int(0, 6) == 0 ? -INFINITY : (float)(40.0 * (rng_unit() - 0.5));
        l[i] = (float)(1.0 + 50.0 * rng_unit());
        u[i] = (float)(10.0 * (rng_unit() - 0.5));
        for (size_t j = 0; j < dv; j++)
            acc[(size_t)i * dv + j] = (float)rng_normal();
    }
    memcpy(want, st, (size_t)nd * S * sizeof *st);
    memcpy(orig, st, (size_t)nd * S * sizeof *st);
    for (int i = 0; i < n; i++) {
        if (m[i] == -INFINITY)
            continue;
        src[0] = (double)m[i] * mu_scale;
        src[1] = l[i];
        src[2] = (double)u[i] * mu_scale;
        for (int j = 0; j < d; j++)
            src[3 + j] = acc[(size_t)i * dv + j];
        const int64_t r = use_idx ? idx[2 * i] : row0 + i;
        rb_state_merge(want + (size_t)r * S, src, 1, d);
    }
    rb_state_merge_f32_avx512(st, use_idx ? idx : NULL, 2, row0, n, d, m, l, u, acc, dv,
                              mu_scale);
    int bad = 0;
    for (int r = 0; r < nd && bad < 3; r++) {
        const double *g = st + (size_t)r * S, *w = want + (size_t)r * S, *o = orig + (size_t)r * S;
        if (memcmp(w, o, S * sizeof *w) == 0) { /* no fp32 row merges into it */
            const int ok = memcmp(g, o, S * sizeof *g) == 0;
            check(ok, "d=%d n=%d idx=%d mu=%.3f row %d: untouched row changed", d, n, use_idx,
                  mu_scale, r);
            bad += !ok;
            continue;
        }
        for (size_t j = 0; j < S && bad < 3; j++) {
            /* scale: the larger of the two sides' magnitudes before the merge */
            const double sc = fabs(o[j]) + fabs(w[j]) + (j == 2 ? 100.0 : 1.0);
            const int ok = j == 0 ? (g[0] == w[0]) : close_to(g[j], w[j], sc);
            check(ok, "d=%d n=%d idx=%d mu=%.3f row %d elem %zu: got %.17g want %.17g", d, n,
                  use_idx, mu_scale, r, j, g[j], w[j]);
            bad += !ok;
        }
    }
    free(st);
    free(want);
    free(src);
    free(m);
    free(l);
    free(u);
    free(acc);
    free(idx);
    free(perm);
    free(orig);
}

/* Finite maxima so far apart that the lower side's shift overflows (da = -inf, or l da =
 * -inf): its weight is 0 and the merge is the other side, with no NaN (0 * -inf in the
 * entropy accumulator gave NaN until 2026-12-03), in rb_state_merge (both orders),
 * rb_state_merge_f32 and rb_state_merge_f32_avx512. */
static void extreme_maxima(void)
{
    enum { D = 3, S = D + 3 }; /* (S: RB_STATE_STRIDE(D)) */
    double lo[S], hi[S], x[S];
    const double lo_v[S] = {-1e308, 1e6, 1.0, 1.0, 2.0, 3.0};
    const double hi_v[S] = {1e308, 2.0, 0.5, 4.0, 5.0, 6.0};
    memcpy(lo, lo_v, sizeof lo);
    memcpy(hi, hi_v, sizeof hi);
    for (int order = 0; order < 2; order++) {
        memcpy(x, order ? hi : lo, sizeof x);
        rb_state_merge(x, order ? lo : hi, 1, D);
        int ok = 1;
        for (int j = 0; j < S; j++) ok &= x[j] == hi[j];
        check(ok, "rb_state_merge of maxima -1e308 and 1e308 is the upper side");
        if (!ok)
            printf("  order %d: got m %g l %g u %g acc0 %g\n", order, x[0], x[1], x[2], x[3]);
    }
    /* fp32 side at 3e38 against a double state at -1e308 of l 1e6: l da overflows */
    const float m = 3e38f, l = 2.0f, u = 0.5f, acc[D] = {4.0f, 5.0f, 6.0f};
    for (int fast = 0; fast < 2; fast++) {
        memcpy(x, lo, sizeof x);
        if (fast)
            rb_state_merge_f32_avx512(x, NULL, 0, 0, 1, D, &m, &l, &u, acc, D, 1.0);
        else
            rb_state_merge_f32(x, 0, 1, D, &m, &l, &u, acc, D);
        const int ok = x[0] == (double)m && x[1] == 2.0 && x[2] == 0.5 && x[3] == 4.0 &&
                       x[4] == 5.0 && x[5] == 6.0;
        check(ok, fast ? "rb_state_merge_f32_avx512 with l * da overflowing"
                       : "rb_state_merge_f32 with l * da overflowing");
        if (!ok)
            printf("  got m %g l %g u %g acc %g %g %g\n", x[0], x[1], x[2], x[3], x[4], x[5]);
    }
}

int main(void)
{
    rb_test_require_avx512();
    extreme_maxima();
    const int ds[] = {1, 2, 7, 8, 9, 15, 16, 64, 127, 128, 256};
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++)
        for (int n = 1; n <= 40; n += 13)
            for (int use_idx = 0; use_idx < 2; use_idx++) {
                run_case(ds[k], n, use_idx, 1.0);
                run_case(ds[k], n, use_idx, 0.69314718055994530942);
            }
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
