/* test_dataset.c — Philox datasets: known answer, documented counter layout, determinism, gaussian statistics, needles, errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <Random123/philox.h>

#include "rb_datasets.h"
#include "rb_gauss.h"
#include "rb_kernels.h"

static int n_pass, n_fail;

static void report(int ok, const char *what)
{
    if (ok) {
        n_pass++;
    } else {
        n_fail++;
        printf("FAIL %s\n", what);
    }
}

/* Element (t, h, p, i) written out from the header's words, independently of philox.c:
 * key (seed lo, seed hi), counter (p lo, p hi, t<<16|h, i/4); within the block, pair
 * (x[2k], x[2k+1]) with k = (i%4)/2 gives radius sqrt(-2 log u(x[2k])) and angle
 * 2 pi u(x[2k+1]), u(x) = (x+1)/2^32; even i takes the cosine, odd i the sine. */
static float expected_value(uint64_t seed, int t, int h, int64_t p, int i)
{
    philox4x32_key_t key = {{(uint32_t)(seed & 0xffffffffu), (uint32_t)(seed >> 32)}};
    philox4x32_ctr_t ctr = {{(uint32_t)((uint64_t)p & 0xffffffffu), (uint32_t)((uint64_t)p >> 32),
                             (uint32_t)((t << 16) | h), (uint32_t)(i / 4)}};
    philox4x32_ctr_t r = philox4x32(ctr, key);
    int k = (i % 4) / 2;
    double u1 = ((double)r.v[2 * k] + 1.0) / 4294967296.0;
    double u2 = ((double)r.v[2 * k + 1] + 1.0) / 4294967296.0;
    double rad = sqrt(-2.0 * log(u1)), ang = 2.0 * M_PI * u2;
    return (float)(i % 2 == 0 ? rad * cos(ang) : rad * sin(ang));
}

static rb_dataset gaussian(uint64_t seed, int d)
{
    rb_dataset ds;
    memset(&ds, 0, sizeof ds);
    ds.kind = RB_DATA_GAUSSIAN;
    ds.seed = seed;
    ds.head_dim = d;
    return ds;
}

int main(void)
{
    printf("test_dataset: exact equality (bitwise floats) for the counter layout, determinism and "
           "needles; gaussian statistics within 5 standard errors\n");
    char what[512], err[256];

    /* Random123's own known answer: Philox4x32-10, counter 0, key 0. */
    {
        philox4x32_ctr_t c = {{0, 0, 0, 0}};
        philox4x32_key_t k = {{0, 0}};
        philox4x32_ctr_t r = philox4x32(c, k);
        snprintf(what, sizeof what, "Philox4x32-10 KAT: got %08x %08x %08x %08x, want 6627e8d5 "
                 "e169c58d bc57ac4c 9b00dbd8", r.v[0], r.v[1], r.v[2], r.v[3]);
        report(r.v[0] == 0x6627e8d5u && r.v[1] == 0xe169c58du && r.v[2] == 0xbc57ac4cu &&
                   r.v[3] == 0x9b00dbd8u, what);
    }

    /* The documented layout, value by value, for several seeds/tensors/heads/positions,
     * including head_dim 6 (a half block) and positions above 2^32. */
    {
        const uint64_t seeds[] = {0, 42, 0x123456789abcdefull};
        const int64_t poss[] = {0, 1, 4095, 1048575, (int64_t)1 << 33, ((int64_t)1 << 40) + 7};
        const int dims[] = {6, 128};
        int bad = 0;
        float row[128];
        for (int si = 0; si < 3; si++)
            for (int t = 0; t < 3; t++)
                for (int h = 0; h < 65536; h += 21845)
                    for (int pi = 0; pi < 6; pi++)
                        for (int di = 0; di < 2; di++) {
                            rb_dataset ds = gaussian(seeds[si], dims[di]);
                            int rc = rb_dataset_fill(&ds, (rb_tensor)t, h, &poss[pi], 1, row,
                                                     err, sizeof err);
                            for (int i = 0; i < dims[di]; i++) {
                                float want = expected_value(seeds[si], t, h, poss[pi], i);
                                if (rc != RB_OK || memcmp(&row[i], &want, sizeof want) != 0) {
                                    if (bad++ < 5)
                                        printf("  layout mismatch seed %llu t %d h %d pos %lld d %d "
                                               "i %d: got %.9g want %.9g (rc %d)\n",
                                               (unsigned long long)seeds[si], t, h,
                                               (long long)poss[pi], dims[di], i, row[i], want, rc);
                                }
                            }
                        }
        snprintf(what, sizeof what, "values follow the documented counter layout (%d mismatches)",
                 bad);
        report(bad == 0, what);
    }

    /* The two builds of the generator (datasets/gauss.c): bit-identical rows, including
     * widths of several passes and a half block; and libm-independent values within
     * one float ulp of the libm formula (the layout check above asks for equality on
     * its grid). Where the CPU cannot run AVX-512 only the portable build exists. */
    {
        const int dims[] = {2, 6, 128, 130, 256, 1026};
        float a[1026], b[1026];
        long diff = 0, far = 0, n = 0;
        const int fast = rb_kernels_helpers_avx512();
        uint64_t x = 12345;
        for (int di = 0; di < 6; di++)
            for (int r = 0; r < 400; r++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                const int64_t p = (int64_t)(x >> 20);
                const int t = (int)(x % 3), h = (int)((x >> 8) % 65536);
                rb_gauss_row_portable(x >> 7, t, h, p, dims[di], a);
                if (fast)
                    rb_gauss_row_avx512(x >> 7, t, h, p, dims[di], b);
                for (int i = 0; i < dims[di]; i++) {
                    n++;
                    if (fast && memcmp(&a[i], &b[i], sizeof a[i]) != 0 && diff++ < 5)
                        printf("  builds differ: d %d pos %lld dim %d: %.9g vs %.9g\n",
                               dims[di], (long long)p, i, a[i], b[i]);
                    const float want = expected_value(x >> 7, t, h, p, i);
                    const float ulp = nextafterf(fabsf(want), INFINITY) - fabsf(want);
                    if (fabsf(a[i] - want) > ulp + 4e-15f && far++ < 5)
                        printf("  d %d pos %lld dim %d: %.9g, libm formula %.9g\n", dims[di],
                               (long long)p, i, a[i], want);
                }
            }
        snprintf(what, sizeof what,
                 "portable and AVX-512 generators bit-identical (%s; %ld of %ld differ), within "
                 "1 ulp of the libm formula (%ld outside)",
                 fast ? "both run" : "AVX-512 not usable here: portable only", diff, n, far);
        report(diff == 0 && far == 0, what);
    }

    /* Determinism and independence from the batch: rows of positions 0..n-1 filled at
     * once equal the same positions filled in reverse order, one at a time. */
    {
        const int d = 64, n = 257;
        int64_t *pos = malloc(n * sizeof *pos), *rev = malloc(n * sizeof *rev);
        float *a = malloc((size_t)n * d * sizeof *a), *b = malloc((size_t)n * d * sizeof *b);
        for (int i = 0; i < n; i++)
            pos[i] = 1000 + 3 * i;
        for (int i = 0; i < n; i++)
            rev[i] = pos[n - 1 - i];
        rb_dataset ds = gaussian(7, d);
        int rc1 = rb_dataset_fill(&ds, RB_TENSOR_K, 3, pos, n, a, err, sizeof err);
        int rc2 = rb_dataset_fill(&ds, RB_TENSOR_K, 3, rev, n, b, err, sizeof err);
        int same = rc1 == RB_OK && rc2 == RB_OK;
        for (int i = 0; i < n && same; i++)
            same = memcmp(a + (size_t)i * d, b + (size_t)(n - 1 - i) * d, d * sizeof(float)) == 0;
        report(same, "reversed batch gives the same rows");
        same = 1;
        for (int i = 0; i < n && same; i++) {
            rb_dataset_fill(&ds, RB_TENSOR_K, 3, &pos[i], 1, b, err, sizeof err);
            same = memcmp(a + (size_t)i * d, b, d * sizeof(float)) == 0;
        }
        report(same, "row-at-a-time gives the same rows");
        /* the rows are shared among OpenMP threads: 1 and 3 threads, the same bits */
        const int th = rb_kernels_threads();
        rb_kernels_set_threads(1);
        rc1 = rb_dataset_fill(&ds, RB_TENSOR_K, 3, pos, n, b, err, sizeof err);
        rb_kernels_set_threads(3);
        rc2 = rb_dataset_fill(&ds, RB_TENSOR_K, 3, pos, n, a, err, sizeof err);
        rb_kernels_set_threads(th);
        report(rc1 == RB_OK && rc2 == RB_OK && memcmp(a, b, (size_t)n * d * sizeof *a) == 0,
               "1 and 3 threads give the same rows");
        /* Every input of the tuple matters. */
        struct { uint64_t seed; int t, h; const char *name; } var[] = {
            {8, RB_TENSOR_K, 3, "seed"}, {7, RB_TENSOR_Q, 3, "tensor"}, {7, RB_TENSOR_K, 4, "head"}};
        for (int k = 0; k < 3; k++) {
            rb_dataset dv = gaussian(var[k].seed, d);
            rb_dataset_fill(&dv, (rb_tensor)var[k].t, var[k].h, pos, n, b, err, sizeof err);
            int ndiff = 0;
            for (size_t i = 0; i < (size_t)n * d; i++)
                ndiff += a[i] != b[i];
            snprintf(what, sizeof what, "changing the %s changes the values (%d of %d differ)",
                     var[k].name, ndiff, n * d);
            report(ndiff > n * d * 99 / 100, what);
        }
        /* Neighbouring positions differ. */
        int ndiff = 0;
        for (size_t i = 0; i < (size_t)d; i++)
            ndiff += a[i] != a[d + i];
        report(ndiff == d, "neighbouring positions give different rows");
        free(pos);
        free(rev);
        free(a);
        free(b);
    }

    /* Statistics of gaussian: 4096 positions x 128 dims = 524288 values. Tolerances are
     * 5 standard errors: mean 5/sqrt(n), variance 5*sqrt(2/n), fraction within one sigma
     * 5*sqrt(p(1-p)/n), fourth moment 5*sqrt(96/n); per dim slot i%4 (each Box-Muller
     * output) mean and variance with n/4; correlation of dims 4j and 4j+1 within 5/sqrt(n/4). */
    {
        const int d = 128, n = 4096;
        const double N = (double)n * d;
        int64_t *pos = malloc(n * sizeof *pos);
        float *x = malloc((size_t)n * d * sizeof *x);
        for (int i = 0; i < n; i++)
            pos[i] = i;
        rb_dataset ds = gaussian(2024, d);
        rb_dataset_fill(&ds, RB_TENSOR_V, 0, pos, n, x, err, sizeof err);
        double s1 = 0, s2 = 0, s4 = 0, in1 = 0, sl1[4] = {0}, sl2[4] = {0}, cxy = 0;
        for (int p = 0; p < n; p++)
            for (int i = 0; i < d; i++) {
                double v = x[(size_t)p * d + i];
                s1 += v;
                s2 += v * v;
                s4 += v * v * v * v;
                in1 += fabs(v) < 1.0;
                sl1[i % 4] += v;
                sl2[i % 4] += v * v;
                if (i % 4 == 0)
                    cxy += v * x[(size_t)p * d + i + 1];
            }
        double mean = s1 / N, var = s2 / N - mean * mean, m4 = s4 / N, f1 = in1 / N;
        const double p1 = 0.682689492137086;
        printf("  gaussian: mean %.5f var %.5f E[x^4] %.4f P(|x|<1) %.5f over %.0f values\n", mean,
               var, m4, f1, N);
        snprintf(what, sizeof what, "gaussian mean %.6f, tolerance %.6f", mean, 5 / sqrt(N));
        report(fabs(mean) <= 5 / sqrt(N), what);
        snprintf(what, sizeof what, "gaussian variance %.6f, tolerance 1 +- %.6f", var,
                 5 * sqrt(2 / N));
        report(fabs(var - 1) <= 5 * sqrt(2 / N), what);
        snprintf(what, sizeof what, "gaussian E[x^4] %.5f, tolerance 3 +- %.5f", m4, 5 * sqrt(96 / N));
        report(fabs(m4 - 3) <= 5 * sqrt(96 / N), what);
        snprintf(what, sizeof what, "gaussian P(|x|<1) %.6f, want %.6f +- %.6f", f1, p1,
                 5 * sqrt(p1 * (1 - p1) / N));
        report(fabs(f1 - p1) <= 5 * sqrt(p1 * (1 - p1) / N), what);
        for (int k = 0; k < 4; k++) {
            double m = sl1[k] / (N / 4), v = sl2[k] / (N / 4) - m * m;
            snprintf(what, sizeof what, "gaussian slot %d: mean %.6f var %.6f, tolerances %.6f %.6f",
                     k, m, v, 5 / sqrt(N / 4), 5 * sqrt(2 / (N / 4)));
            report(fabs(m) <= 5 / sqrt(N / 4) && fabs(v - 1) <= 5 * sqrt(2 / (N / 4)), what);
        }
        double corr = cxy / (N / 4);
        snprintf(what, sizeof what, "gaussian corr(dim 4j, 4j+1) %.6f, tolerance %.6f", corr,
                 5 / sqrt(N / 4));
        report(fabs(corr) <= 5 / sqrt(N / 4), what);
        free(pos);
        free(x);
    }

    /* Needles: K at needle_pos[i] == (float)(strength * Q at query_pos[i]); other rows and
     * the Q/V tensors are the gaussian ones; a repeated key position takes the later needle. */
    {
        const int d = 32, n = 64;
        rb_dataset g = gaussian(99, d), nd = g;
        nd.kind = RB_DATA_NEEDLE;
        nd.n_needles = 3;
        nd.needle_pos[0] = 5;
        nd.query_pos[0] = 60;
        nd.needle_pos[1] = 20;
        nd.query_pos[1] = 1000000;
        nd.needle_pos[2] = 5; /* same key as needle 0: wins */
        nd.query_pos[2] = 33;
        nd.strength = 2.5;
        int64_t pos[64];
        for (int i = 0; i < n; i++)
            pos[i] = i;
        float *kn = malloc((size_t)n * d * sizeof(float)), *kg = malloc((size_t)n * d * sizeof(float));
        float qrow[32];
        for (int t = 0; t < 3; t++) {
            int rc1 = rb_dataset_fill(&nd, (rb_tensor)t, 1, pos, n, kn, err, sizeof err);
            int rc2 = rb_dataset_fill(&g, (rb_tensor)t, 1, pos, n, kg, err, sizeof err);
            int bad = rc1 != RB_OK || rc2 != RB_OK;
            for (int r = 0; r < n && !bad; r++) {
                const float *row = kn + (size_t)r * d;
                int needle = t == RB_TENSOR_K ? (r == 5 ? 2 : r == 20 ? 1 : -1) : -1;
                if (needle < 0) {
                    bad = memcmp(row, kg + (size_t)r * d, d * sizeof(float)) != 0;
                    if (bad)
                        printf("  needle: tensor %d row %d differs from gaussian\n", t, r);
                    continue;
                }
                rb_dataset_fill(&g, RB_TENSOR_Q, 1, &nd.query_pos[needle], 1, qrow, err, sizeof err);
                for (int i = 0; i < d && !bad; i++) {
                    float want = (float)(nd.strength * (double)qrow[i]);
                    if (row[i] != want) {
                        bad = 1;
                        printf("  needle %d: key %lld dim %d = %.9g, want %.9g = %.2f * q[%lld]\n",
                               needle, (long long)r, i, row[i], want, nd.strength,
                               (long long)nd.query_pos[needle]);
                    }
                }
            }
            snprintf(what, sizeof what, "needle dataset, tensor %d: planted keys = strength * q row, "
                     "rest gaussian", t);
            report(!bad, what);
        }
        free(kn);
        free(kg);
    }

    /* Errors and names. */
    {
        float row[16];
        int64_t p0 = 0, pneg = -1;
        struct { int d, head, n_needles; int64_t *pos; const char *name; } cases[] = {
            {7, 0, 0, &p0, "odd head_dim"},      {0, 0, 0, &p0, "zero head_dim"},
            {-4, 0, 0, &p0, "negative head_dim"}, {8, -1, 0, &p0, "head -1"},
            {8, 65536, 0, &p0, "head 65536"},     {8, 0, 0, &pneg, "negative position"},
            {8, 0, RB_NEEDLE_MAX + 1, &p0, "too many needles"}, {8, 0, -1, &p0, "negative needles"}};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            rb_dataset ds = gaussian(1, cases[c].d);
            if (cases[c].n_needles) {
                ds.kind = RB_DATA_NEEDLE;
                ds.n_needles = cases[c].n_needles;
            }
            err[0] = '\0';
            int rc = rb_dataset_fill(&ds, RB_TENSOR_Q, cases[c].head, cases[c].pos, 1, row, err,
                                     sizeof err);
            snprintf(what, sizeof what, "%s: rc %d (want %d), message \"%s\"", cases[c].name, rc,
                     RB_EINVAL, err);
            report(rc == RB_EINVAL && err[0] != '\0' && !strchr(err, '\n'), what);
        }
        report(rb_dataset_kind_parse("gaussian") == RB_DATA_GAUSSIAN &&
                   rb_dataset_kind_parse("needle") == RB_DATA_NEEDLE &&
                   rb_dataset_kind_parse("spectral") == RB_DATA_SPECTRAL &&
                   rb_dataset_kind_parse("file") == RB_DATA_FILE &&
                   rb_dataset_kind_parse("spectrum") == -1 && rb_dataset_kind_parse(NULL) == -1 &&
                   strcmp(rb_dataset_kind_name(RB_DATA_NEEDLE), "needle") == 0 &&
                   strcmp(rb_dataset_kind_name(RB_DATA_GAUSSIAN), "gaussian") == 0,
               "dataset kind names and parse");
    }

    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
