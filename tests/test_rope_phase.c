/* test_rope_phase.c — rb_rope_phase against MPFR (200-bit pos*inv_freq reduced mod
 * 2*pi) at positions up to 2^40, and rb_rope_apply's rotation against MPFR sin/cos
 * for both pair layouts, partial rotary and the attention factor.
 *
 * Error metric (phase): |phase - r| in radians, r = the exact remainder of
 * pos*inv_freq mod 2*pi in [-pi, pi], the difference itself taken mod 2*pi (so
 * -pi and pi agree). Bounds: 1e-8 rad for |pos| <= 2^24 and 1e-6 rad for
 * |pos| <= 2^32 (DESIGN.md), and the header's 1e-12 rad for |pos| <= 2^40 with
 * 0 < inv_freq <= 1. Error metric (apply): |y - Y| <= 0.5 ulp_float(Y) +
 * 4e-16 * af * (|x_a| + |x_b|), Y the exact rotation in MPFR: one rounding to float
 * plus double arithmetic. */
#include "rb_kernels.h"
#include "rb_test.h"

#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREC 200


static mpfr_t m_twopi, m_pi, m_x, m_r, m_t;

/* Exact remainder of pos*inv_freq mod 2pi into m_r (in [-pi, pi]). */
static void exact_phase(int64_t pos, double f)
{
    mpfr_set_sj(m_x, pos, MPFR_RNDN);
    mpfr_mul_d(m_x, m_x, f, MPFR_RNDN); /* exact: 64 + 53 bits < PREC */
    mpfr_remainder(m_r, m_x, m_twopi, MPFR_RNDN);
}

/* |ours - m_r| with the difference wrapped mod 2pi. */
static double phase_error(double ours)
{
    mpfr_sub_d(m_t, m_r, ours, MPFR_RNDN);
    mpfr_remainder(m_t, m_t, m_twopi, MPFR_RNDN);
    return fabs(mpfr_get_d(m_t, MPFR_RNDN));
}

typedef struct {
    const char *name;
    double limit_pos; /* bucket: |pos| <= limit_pos */
    double bound;
    double max_err;
    int64_t worst_pos;
    double worst_f;
    long n;
} bucket;

static bucket buckets[] = {
    {"|pos| <= 2^24", 0x1p24, 1e-8, 0, 0, 0, 0},
    {"|pos| <= 2^32", 0x1p32, 1e-6, 0, 0, 0, 0},
    {"|pos| <= 2^40, f <= 1 (header goal)", 0x1p40, 1e-12, 0, 0, 0, 0},
};
enum { NB = 3 };
static double max_err_beyond; /* |pos| > 2^40 or f > 1: reported only */

static void one_phase(int64_t pos, double f)
{
    double ours = rb_rope_phase(pos, f);
    exact_phase(pos, f);
    double e = phase_error(ours);
    check(fabs(ours) <= M_PI + 1e-15,
          "rb_rope_phase(pos=%lld, inv_freq=%a) = %.17g is outside [-pi, pi]",
          (long long)pos, f, ours);
    double ap = fabs((double)pos);
    int in_any = 0;
    for (int b = 0; b < NB; b++) {
        if (ap > buckets[b].limit_pos || (b == 2 && !(f <= 1.0)))
            continue;
        in_any = 1;
        bucket *bk = &buckets[b];
        bk->n++;
        if (e > bk->max_err) {
            bk->max_err = e;
            bk->worst_pos = pos;
            bk->worst_f = f;
        }
        check(e <= bk->bound,
              "rb_rope_phase(pos=%lld, inv_freq=%a = %.17g): error %.3g rad > %g (%s); "
              "got %.17g, exact %.17g",
              (long long)pos, f, f, e, bk->bound, bk->name, ours,
              mpfr_get_d(m_r, MPFR_RNDN));
    }
    if (!in_any && e > max_err_beyond)
        max_err_beyond = e;
}

/* A double near (2*pi*k + eps)/pos: pos*f lands next to a multiple of 2pi (or pi),
 * the hardest case for the reduction. */
static double adversarial_f(int64_t pos, double target)
{
    mpfr_set_d(m_t, target, MPFR_RNDN);
    mpfr_div_si(m_t, m_t, (long)pos, MPFR_RNDN);
    return mpfr_get_d(m_t, MPFR_RNDN);
}

static void test_phases(void)
{
    /* inverse frequencies: real schedules plus random and special values */
    double fs[1024];
    int nf = 0;
    double bases[] = {10000, 500000, 1e6};
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < 64; j++)
            fs[nf++] = 1.0 / pow(bases[b], j / 64.0);
    {
        rb_rope_params p;
        memset(&p, 0, sizeof p);
        p.method = RB_ROPE_YARN;
        p.rotary_dim = 128;
        p.base = 10000;
        p.factor = 10;
        p.original_ctx = 2048;
        p.truncate = 1;
        char err[128];
        if (rb_rope_schedule(&p, fs + nf, NULL, err, sizeof err) == 0)
            nf += 64;
        else
            check(0, "yarn schedule for the phase test failed: %s", err);
    }
    for (int i = 0; i < 100; i++)
        fs[nf++] = exp(-25.0 * rng_unit()); /* log-uniform in [1.4e-11, 1] */
    fs[nf++] = 1.0;
    fs[nf++] = 0.5;
    fs[nf++] = nextafter(1.0, 0.0);
    fs[nf++] = 1e-300;

    /* positions */
    int64_t small[] = {0, 1, 2, 3, 7, 100, 4095, 4096, 8191, 65535, 1000000};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        for (int k = 0; k < nf; k++) {
            one_phase(small[i], fs[k]);
            one_phase(-small[i], fs[k]);
        }
    for (int e = 1; e <= 62; e++)
        for (int k = 0; k < nf; k++) {
            int64_t p2 = (int64_t)1 << e;
            one_phase(p2, fs[k]);
            one_phase(p2 - 1, fs[k]);
            one_phase(p2 + 1, fs[k]);
        }
    one_phase(INT64_MAX, 1.0);
    one_phase(INT64_MIN, 1.0);
    one_phase(INT64_MIN + 1, 0.3);
    /* random positions, uniform and log-uniform up to 2^24, 2^32, 2^40 */
    double limits[] = {0x1p24, 0x1p32, 0x1p40};
    for (int li = 0; li < 3; li++)
        for (int i = 0; i < 20000; i++) {
            int64_t pos = (i & 1) ? (int64_t)(rng_unit() * limits[li])
                                  : (int64_t)exp(rng_unit() * log(limits[li]));
            double f = fs[rng_u64() % (uint64_t)nf];
            one_phase(pos, f);
        }
    /* adversarial: pos*f within a few ulps of a multiple of pi */
    for (int li = 0; li < 3; li++)
        for (int i = 0; i < 5000; i++) {
            int64_t pos = 1 + (int64_t)(rng_unit() * limits[li]);
            double maxk = fmin((double)pos / (2 * M_PI), 1e12);
            double k = floor(rng_unit() * maxk);
            double target = (i & 1) ? 2 * M_PI * k : M_PI * (2 * k + 1);
            double f = adversarial_f(pos, target);
            if (f > 0 && f <= 1)
                one_phase(pos, f);
        }
}

/* ---- rb_rope_apply ----------------------------------------------------------- */

static double ulpf(double y)
{
    double a = fabs(y);
    if (a < FLT_MIN)
        return ldexp(1.0, -149);
    int e;
    frexp(a, &e);
    return ldexp(1.0, e - 24);
}

static double max_apply_ulps; /* worst |y - Y| / ulp_float(Y) seen */

/* Exact rotation of (xa, xb) by the exact phase of (pos, f), times af, into ya, yb. */
static void exact_rotation(int64_t pos, double f, double af, double xa, double xb,
                           double *ya, double *yb)
{
    mpfr_t c, s, t1, t2;
    mpfr_inits2(PREC, c, s, t1, t2, (mpfr_ptr)0);
    exact_phase(pos, f);
    mpfr_sin_cos(s, c, m_r, MPFR_RNDN);
    mpfr_mul_d(c, c, af, MPFR_RNDN);
    mpfr_mul_d(s, s, af, MPFR_RNDN);
    mpfr_mul_d(t1, c, xa, MPFR_RNDN);
    mpfr_mul_d(t2, s, xb, MPFR_RNDN);
    mpfr_sub(t1, t1, t2, MPFR_RNDN);
    *ya = mpfr_get_d(t1, MPFR_RNDN);
    mpfr_mul_d(t1, c, xb, MPFR_RNDN);
    mpfr_mul_d(t2, s, xa, MPFR_RNDN);
    mpfr_add(t1, t1, t2, MPFR_RNDN);
    *yb = mpfr_get_d(t1, MPFR_RNDN);
    mpfr_clears(c, s, t1, t2, (mpfr_ptr)0);
}

static void test_apply_case(int head_dim, int rotary_dim, rb_rope_layout layout,
                            double af, int unit_vectors)
{
    const int half = rotary_dim / 2;
    const int n_rows = unit_vectors ? 2 * half : 9;
    const size_t stride = (size_t)head_dim + 3; /* padding must stay untouched */
    double inv[256];
    rb_rope_params p;
    memset(&p, 0, sizeof p);
    p.method = RB_ROPE_NONE;
    p.rotary_dim = rotary_dim;
    p.base = 10000;
    char err[128];
    if (rb_rope_schedule(&p, inv, NULL, err, sizeof err) != 0) {
        check(0, "schedule for apply test failed: %s", err);
        return;
    }
    float *x = malloc((size_t)n_rows * stride * sizeof *x);
    float *x0 = malloc((size_t)n_rows * stride * sizeof *x0);
    int64_t *pos = malloc((size_t)n_rows * sizeof *pos);
    if (!x || !x0 || !pos) {
        check(0, "out of memory");
        goto cleanup;
    }
    int64_t pos_choices[] = {0, 1, 17, 4096, 1 << 20, 16777215, 1000000007,
                             4294967295LL, -3};
    for (int r = 0; r < n_rows; r++) {
        pos[r] = unit_vectors ? pos_choices[(r / 2) % 9] : pos_choices[r % 9];
        for (size_t j = 0; j < stride; j++)
            x0[(size_t)r * stride + j] = (float)(2 * rng_unit() - 1);
        if (unit_vectors) {
            /* row r rotates only pair r/2: (1,0) for even r, (0,1) for odd r */
            int i = r / 2;
            int ia = layout == RB_LAYOUT_GPTJ ? 2 * i : i;
            int ib = layout == RB_LAYOUT_GPTJ ? 2 * i + 1 : i + half;
            for (int j = 0; j < rotary_dim; j++)
                x0[(size_t)r * stride + j] = 0;
            x0[(size_t)r * stride + (r % 2 ? ib : ia)] = 1;
        }
    }
    memcpy(x, x0, (size_t)n_rows * stride * sizeof *x);
    rb_rope_apply(x, n_rows, stride, pos, inv, head_dim, rotary_dim, layout, af);
    const char *ln = layout == RB_LAYOUT_GPTJ ? "gptj" : "neox";
    for (int r = 0; r < n_rows; r++) {
        const float *in = x0 + (size_t)r * stride, *out = x + (size_t)r * stride;
        for (size_t j = (size_t)rotary_dim; j < stride; j++)
            check(memcmp(&in[j], &out[j], sizeof(float)) == 0,
                  "rope_apply %s head_dim %d rotary_dim %d af %g row %d pos %lld: "
                  "entry %zu (not rotated) changed %.9g -> %.9g",
                  ln, head_dim, rotary_dim, af, r, (long long)pos[r], j, in[j], out[j]);
        for (int i = 0; i < half; i++) {
            int ia = layout == RB_LAYOUT_GPTJ ? 2 * i : i;
            int ib = layout == RB_LAYOUT_GPTJ ? 2 * i + 1 : i + half;
            double ya, yb;
            exact_rotation(pos[r], inv[i], af, in[ia], in[ib], &ya, &yb);
            double slack = 4e-16 * af * (fabs(in[ia]) + fabs(in[ib]));
            double ea = fabs(out[ia] - ya), eb = fabs(out[ib] - yb);
            double ta = 0.5 * ulpf(ya) + slack, tb = 0.5 * ulpf(yb) + slack;
            max_apply_ulps = fmax(max_apply_ulps, fmax(ea / ulpf(ya), eb / ulpf(yb)));
            check(ea <= ta && eb <= tb,
                  "rope_apply %s head_dim %d rotary_dim %d af %g row %d pos %lld pair %d "
                  "inv_freq %.17g in (%.9g, %.9g): got (%.9g, %.9g), exact (%.12g, %.12g)"
                  "%s",
                  ln, head_dim, rotary_dim, af, r, (long long)pos[r], i, inv[i], in[ia],
                  in[ib], out[ia], out[ib], ya, yb,
                  unit_vectors ? " [unit vector: (cos, sin) * af]" : "");
        }
    }
cleanup:
    free(x);
    free(x0);
    free(pos);
}

static void test_apply(void)
{
    struct {
        int head_dim, rotary_dim;
    } shapes[] = {{2, 2}, {8, 8}, {64, 64}, {128, 128}, {128, 64}, {80, 32}, {96, 24}};
    double afs[] = {1.0, 1.2302585092994046, 0.75};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int layout = 0; layout < 2; layout++)
            for (int a = 0; a < 3; a++)
                for (int unit = 0; unit < 2; unit++)
                    test_apply_case(shapes[s].head_dim, shapes[s].rotary_dim,
                                    (rb_rope_layout)layout, afs[a], unit);
    /* n_rows 0 and rotary_dim 0 leave x alone */
    float x[4] = {1, 2, 3, 4};
    int64_t pos[1] = {5};
    double inv[2] = {1, 0.5};
    rb_rope_apply(x, 0, 4, pos, inv, 4, 4, RB_LAYOUT_NEOX, 1.0);
    rb_rope_apply(x, 1, 4, pos, inv, 4, 0, RB_LAYOUT_NEOX, 1.0);
    check(x[0] == 1 && x[1] == 2 && x[2] == 3 && x[3] == 4,
          "rope_apply with n_rows 0 / rotary_dim 0 changed x");
}

int main(void)
{
    mpfr_inits2(PREC + 64, m_twopi, m_pi, m_x, m_r, m_t, (mpfr_ptr)0);
    mpfr_const_pi(m_pi, MPFR_RNDN);
    mpfr_mul_2ui(m_twopi, m_pi, 1, MPFR_RNDN);

    test_phases();
    for (int b = 0; b < NB; b++)
        printf("phase %-36s: %7ld cases, max error %.3g rad (bound %g) at pos %lld "
               "inv_freq %.17g\n",
               buckets[b].name, buckets[b].n, buckets[b].max_err, buckets[b].bound,
               (long long)buckets[b].worst_pos, buckets[b].worst_f);
    printf("phase beyond 2^40 (reported only)     : max error %.3g rad\n",
           max_err_beyond);
    test_apply();
    printf("rope_apply vs MPFR: max error %.3f float ulps\n", max_apply_ulps);

    mpfr_clears(m_twopi, m_pi, m_x, m_r, m_t, (mpfr_ptr)0);
    mpfr_free_cache();
    printf("test_rope_phase: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
