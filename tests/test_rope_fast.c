/* test_rope_fast.c — rb_rope_apply_avx512 against the reference rb_rope_apply, and the
 * angle error of its incremental phases against the exact rb_rope_phase up to 2^32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avx512/rb_avx512.h"
#include "avx512/rb_rope_fast.h"
#include "rb_test_avx512.h"
#include "rb_kernels.h"

#define TWO32 ((int64_t)1 << 32)

static int failures = 0;

/* splitmix64: reproducible test data */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_unit(void) { return (double)(rng_next() >> 11) * 0x1p-53; }

static double wrap_pi(double a)
{
    while (a > M_PI) a -= 2 * M_PI;
    while (a < -M_PI) a += 2 * M_PI;
    return a;
}

/* inv_freq of the HF default schedule (base 10000) for `half` pairs, with a few
 * extreme values mixed in: 1, and very low frequencies as PI/YaRN give. */
static void make_inv_freq(double *f, int half, double base)
{
    for (int j = 0; j < half; j++)
        f[j] = pow(base, -2.0 * j / (2.0 * half));
    if (half > 4) {
        f[half - 1] = 1.0 / (base * 64.0);
        f[half - 2] = 0.999999999;
        f[1] = 0.7853981633974483; /* pi/4: quadrant boundaries of the sincos */
    }
}

/* ---- 1. angle error of the recurrence ---------------------------------------------- */

/* Worst |angle(C, S) - rb_rope_phase| and worst ||(C,S)| - 1| over one sequence. */
static void phase_errors(const int64_t *pos, int64_t n, const double *f, int half,
                         double *worst_angle, double *worst_norm, int64_t *worst_pos,
                         double *worst_freq)
{
    double *c = malloc((size_t)n * half * sizeof *c), *s = malloc((size_t)n * half * sizeof *s);
    if (!c || !s || rb_rope_phases_avx512(pos, n, f, half, c, s) != 0) {
        printf("FAIL rb_rope_phases_avx512 (n %lld, half %d)\n", (long long)n, half);
        failures++;
        goto cleanup;
    }
    for (int64_t r = 0; r < n; r++)
        for (int j = 0; j < half; j++) {
            double cc = c[r * half + j], ss = s[r * half + j];
            double e = fabs(wrap_pi(atan2(ss, cc) - rb_rope_phase(pos[r], f[j])));
            double nrm = fabs(sqrt(cc * cc + ss * ss) - 1.0);
            if (!(e <= *worst_angle) && !isnan(*worst_angle)) { /* (a NaN stays) */
                *worst_angle = e;
                *worst_pos = pos[r];
                *worst_freq = f[j];
            }
            if (!(nrm <= *worst_norm) && !isnan(*worst_norm)) *worst_norm = nrm;
        }
cleanup:
    free(c);
    free(s);
}

static void test_phase_bound(void)
{
    enum { HALF = 64, N = 4 * RB_ROPE_ANCHOR };
    double f[HALF];
    int64_t pos[N];
    double wa = 0, wn = 0, wf = 0;
    int64_t wp = 0;
    long anchors = 0;
    make_inv_freq(f, HALF, 10000.0);
    const int64_t steps[] = {1, 2, 3, 4, 7, 8, 64, 4095, 65537, 1000003, 16777259};
    /* many anchors: sequences ending at or just below 2^32, and spread over [0, 2^32] */
    for (int t = 0; t < 400; t++) {
        int64_t d = steps[t % (int)(sizeof steps / sizeof steps[0])];
        int64_t start;
        if (t < 200)
            start = TWO32 - (int64_t)(N - 1) * d - (int64_t)(rng_next() % 4096);
        else
            start = (int64_t)(rng_unit() * (double)(TWO32 - (int64_t)(N - 1) * d));
        for (int r = 0; r < N; r++) pos[r] = start + r * d;
        phase_errors(pos, N, f, HALF, &wa, &wn, &wp, &wf);
        anchors += N / RB_ROPE_ANCHOR;
    }
    /* other frequency sets: random in (0, 1], and a large base */
    for (int t = 0; t < 40; t++) {
        double g[HALF];
        for (int j = 0; j < HALF; j++) g[j] = t % 2 ? rng_unit() : pow(5e6, -(double)j / HALF);
        int64_t d = 1 + (int64_t)(rng_next() % 1000);
        int64_t start = TWO32 - (int64_t)(N - 1) * d;
        for (int r = 0; r < N; r++) pos[r] = start + r * d;
        phase_errors(pos, N, g, HALF, &wa, &wn, &wp, &wf);
        anchors += N / RB_ROPE_ANCHOR;
    }
    printf("phase bound: worst angle error %.3e rad (at pos %lld, inv_freq %.6g), worst "
           "|norm - 1| %.3e, over %ld anchors x %d rows x %d pairs, positions <= 2^32\n",
           wa, (long long)wp, wf, wn, anchors, RB_ROPE_ANCHOR, HALF);
    if (!(wa <= 1e-12) || !(wn <= 1e-12)) {
        printf("FAIL phase bound: angle %.3e or norm %.3e above 1e-12\n", wa, wn);
        failures++;
    }
}

/* ---- 2. rotation against the reference ---------------------------------------------- */

typedef enum { P_CONTIG, P_HIGH, P_STRIPED, P_ZIGZAG, P_UNSORTED, P_DUPS, P_COUNT } pos_kind;
static const char *pos_names[] = {"contiguous", "near2^32", "striped4", "zigzag",
                                  "unsorted", "duplicates"};

static void make_positions(int64_t *p, int64_t n, pos_kind k)
{
    switch (k) {
    case P_CONTIG: for (int64_t i = 0; i < n; i++) p[i] = i; break;
    case P_HIGH: for (int64_t i = 0; i < n; i++) p[i] = TWO32 - n + i; break;
    case P_STRIPED: for (int64_t i = 0; i < n; i++) p[i] = 1 + 4 * i; break;
    case P_ZIGZAG: { /* rank 1 of 4: chunks 1 and 6 of 8, chunk length 37 (not 64) */
        const int64_t cl = 37;
        for (int64_t i = 0; i < n; i++) {
            int64_t c = i / cl, o = i % cl;
            p[i] = (c % 2 == 0 ? (1 + 8 * (c / 2)) : (6 + 8 * (c / 2))) * cl + o;
        }
        break;
    }
    case P_UNSORTED: for (int64_t i = 0; i < n; i++) p[i] = (int64_t)(rng_next() % 5000000); break;
    case P_DUPS: for (int64_t i = 0; i < n; i++) p[i] = 1000 + i / 3; break;
    default: break;
    }
}

/* The recurrence's angle bound on the rotation test's position patterns, shifted to end
 * just below 2^32: steps that change inside a block (zigzag's chunk switch, gaps,
 * repeats, unsorted positions), which the constant-step sequences above never have. */
static void test_phase_patterns(void)
{
    enum { HALF = 64, N = 3 * RB_ROPE_ANCHOR + 17 };
    double f[HALF], wa = 0, wn = 0, wf = 0;
    int64_t pos[N], wp = 0;
    make_inv_freq(f, HALF, 10000.0);
    for (int k = 0; k < P_COUNT; k++) {
        make_positions(pos, N, (pos_kind)k);
        int64_t mx = 0;
        for (int i = 0; i < N; i++) mx = pos[i] > mx ? pos[i] : mx;
        for (int i = 0; k != P_HIGH && i < N; i++) pos[i] += TWO32 - 1 - mx;
        phase_errors(pos, N, f, HALF, &wa, &wn, &wp, &wf);
        if (!(wa <= 1e-12) || !(wn <= 1e-12)) {
            printf("FAIL phase bound, positions %s near 2^32: angle %.3e (pos %lld, inv_freq "
                   "%.6g) or norm %.3e above 1e-12\n", pos_names[k], wa, (long long)wp, wf,
                   wn);
            failures++;
            return;
        }
    }
    printf("phase bound on the rotation patterns near 2^32: worst angle error %.3e rad\n", wa);
}

static void test_rotation(int head_dim, int rotary_dim, rb_rope_layout layout, double af,
                          pos_kind pk, int64_t n)
{
    const size_t stride = (size_t)head_dim + 3;
    const int half = rotary_dim / 2;
    float *a = malloc(n * stride * sizeof *a), *b = malloc(n * stride * sizeof *b);
    float *orig = malloc(n * stride * sizeof *orig);
    int64_t *pos = malloc(n * sizeof *pos);
    double *f = malloc((half > 0 ? half : 1) * sizeof *f);
    if (!a || !b || !orig || !pos || !f) {
        printf("FAIL out of memory\n");
        failures++;
        goto cleanup;
    }
    make_inv_freq(f, half, 10000.0);
    make_positions(pos, n, pk);
    for (size_t i = 0; i < n * stride; i++)
        orig[i] = (float)((rng_unit() * 2 - 1) * (i % 7 == 0 ? 1e3 : 1.0));
    memcpy(a, orig, n * stride * sizeof *a);
    memcpy(b, orig, n * stride * sizeof *b);
    rb_rope_apply(a, n, stride, pos, f, head_dim, rotary_dim, layout, af);
    rb_rope_apply_avx512(b, n, stride, pos, f, head_dim, rotary_dim, layout, af);
    double worst = 0; /* in units of the allowed error */
    int64_t wr = 0;
    int wi = 0;
    for (int64_t r = 0; r < n; r++) {
        const float *ra = a + r * stride, *rb = b + r * stride, *ro = orig + r * stride;
        for (int i = 0; i < (int)stride; i++) {
            if (i >= rotary_dim) { /* pass-through and the gap: bit-identical */
                if (memcmp(&rb[i], &ro[i], sizeof(float)) != 0) {
                    worst = INFINITY;
                    wr = r;
                    wi = i;
                }
                continue;
            }
            int partner = layout == RB_LAYOUT_GPTJ ? (i ^ 1) : (i < half ? i + half : i - half);
            double mag = af * hypot(ro[i], ro[partner]);
            float big = fmaxf(fabsf(ra[i]), fabsf(rb[i]));
            double ulp = nextafterf(big, INFINITY) - big;
            double allowed = ulp + 1e-12 * mag;
            double e = fabs((double)ra[i] - (double)rb[i]) / allowed;
            if (!(e <= worst) && !isnan(worst)) { /* (a NaN stays the worst) */
                worst = e;
                wr = r;
                wi = i;
            }
        }
    }
    if (!(worst <= 1.0)) {
        printf("FAIL rotation head_dim %d rotary_dim %d layout %s af %g positions %s n %lld: "
               "row %lld (pos %lld) elem %d ref %.9g fast %.9g (%.3g x allowed)\n",
               head_dim, rotary_dim, layout == RB_LAYOUT_GPTJ ? "gptj" : "neox", af,
               pos_names[pk], (long long)n, (long long)wr, (long long)pos[wr], wi,
               a[wr * stride + wi], b[wr * stride + wi], worst);
        failures++;
    }
cleanup:
    free(a);
    free(b);
    free(orig);
    free(pos);
    free(f);
}

static void test_edges(void)
{
    /* n_rows 0, rotary_dim 0 or > head_dim: no-ops, as the reference */
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    int64_t p[1] = {5};
    double f[4] = {1, 0.1, 0.01, 0.001};
    memcpy(y, x, sizeof x);
    rb_rope_apply_avx512(x, 0, 8, p, f, 8, 8, RB_LAYOUT_NEOX, 1.0);
    rb_rope_apply_avx512(x, 1, 8, p, f, 8, 0, RB_LAYOUT_NEOX, 1.0);
    rb_rope_apply_avx512(x, 1, 8, p, f, 4, 8, RB_LAYOUT_NEOX, 1.0);
    rb_rope_apply_avx512(NULL, 1, 8, p, f, 8, 8, RB_LAYOUT_NEOX, 1.0);
    if (memcmp(x, y, sizeof x) != 0) {
        printf("FAIL edge cases changed the data\n");
        failures++;
    }
}

int main(void)
{
    rb_test_require_avx512();
    test_phase_bound();
    test_phase_patterns();
    test_edges();
    const int shapes[][2] = {{128, 128}, {64, 64}, {128, 64}, {128, 32}, {256, 256},
                             {96, 96},   {80, 48}, {10, 10},  {2, 2},    {18, 6}};
    const int64_t counts[] = {1, 63, 300};
    for (int threads = 1; threads <= 2; threads++) {
        rb_kernels_set_threads(threads);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int lay = 0; lay < 2; lay++)
                for (int pk = 0; pk < P_COUNT; pk++)
                    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                        for (int a = 0; a < 2; a++)
                            test_rotation(shapes[s][0], shapes[s][1], (rb_rope_layout)lay,
                                          a ? 1.2345 : 1.0, (pos_kind)pk, counts[c]);
    }
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
