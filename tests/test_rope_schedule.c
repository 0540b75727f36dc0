/* test_rope_schedule.c — RoPE schedules against published/hand-derived values, the
 * identities between methods, every method's attention factor, and bad parameters. */
#include "rb_kernels.h"
#include "rb_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static double rel(double a, double b)
{
    if (a == b)
        return 0.0;
    return fabs(a - b) / fmax(fabs(a), fabs(b));
}

static rb_rope_params base_params(rb_rope_method m, int dim, double base, double f,
                                  int64_t orig)
{
    rb_rope_params p;
    memset(&p, 0, sizeof p);
    p.method = m;
    p.rotary_dim = dim;
    p.base = base;
    p.factor = f;
    p.original_ctx = orig;
    p.truncate = 1;
    return p;
}

/* Run a schedule that must succeed; returns 0 on success. */
static int sched(const rb_rope_params *p, double *inv, rb_rope_info *info,
                 const char *what)
{
    char err[256] = "";
    int rc = rb_rope_schedule(p, inv, info, err, sizeof err);
    check(rc == 0, "%s: rb_rope_schedule(method=%s dim=%d base=%g factor=%g orig=%lld) "
                   "returned %d: %s",
          what, rb_rope_method_name(p->method), p->rotary_dim, p->base, p->factor,
          (long long)p->original_ctx, rc, err);
    return rc;
}

static void default_of(int dim, double base, double *inv)
{
    rb_rope_params p = base_params(RB_ROPE_NONE, dim, base, 1, 0);
    sched(&p, inv, NULL, "default");
}

static void test_yarn_known(void)
{
    double inv[64], def[64];
    rb_rope_info info;
    default_of(128, 10000, def);
    rb_rope_params p = base_params(RB_ROPE_YARN, 128, 10000, 10, 2048);
    if (sched(&p, inv, &info, "yarn x10 orig 2048"))
        return;
    check(info.corr_low == 16 && info.corr_high == 41,
          "yarn x10 orig 2048 truncate=1: correction range (%g, %g), want (16, 41)",
          info.corr_low, info.corr_high);
    check(fabs(inv[17] - 8.3479e-2) <= 0.5e-6,
          "yarn x10 orig 2048: inv_freq[17] = %.8g, want 8.3479e-2", inv[17]);
    check(fabs(inv[40] - 4.3007e-4) <= 0.5e-8,
          "yarn x10 orig 2048: inv_freq[40] = %.8g, want 4.3007e-4", inv[40]);
    for (int j = 41; j < 64; j++)
        check(rel(inv[j], def[j] / 10) <= 1e-15,
              "yarn x10 orig 2048: inv_freq[%d] = %.17g, want default/10 = %.17g", j,
              inv[j], def[j] / 10);
    for (int j = 0; j <= 16; j++)
        check(rel(inv[j], def[j]) <= 1e-15,
              "yarn x10 orig 2048: inv_freq[%d] = %.17g, want default %.17g", j, inv[j],
              def[j]);
    check(fabs(info.attention_factor - 1.2302585) <= 0.5e-7,
          "yarn x10: attention factor %.10g, want 1.2302585", info.attention_factor);

    /* truncate = 0 keeps the range fractional: 16.128..., 40.21... */
    p.truncate = 0;
    if (sched(&p, inv, &info, "yarn x10 truncate=0"))
        return;
    double lo = 128 * log(2048 / (32 * 2 * M_PI)) / (2 * log(10000.0));
    double hi = 128 * log(2048 / (1 * 2 * M_PI)) / (2 * log(10000.0));
    check(rel(info.corr_low, lo) <= 1e-15 && rel(info.corr_high, hi) <= 1e-15,
          "yarn x10 truncate=0: range (%.17g, %.17g), want (%.17g, %.17g)",
          info.corr_low, info.corr_high, lo, hi);
    check(floor(info.corr_low) != info.corr_low && floor(info.corr_high) != info.corr_high,
          "yarn x10 truncate=0: range (%g, %g) is not fractional", info.corr_low,
          info.corr_high);
    for (int j = 0; j < 64; j++) {
        double r = fmin(fmax((j - lo) / (hi - lo), 0), 1);
        double want = def[j] / 10 * r + def[j] * (1 - r);
        check(rel(inv[j], want) <= 1e-14,
              "yarn x10 truncate=0: inv_freq[%d] = %.17g, want %.17g", j, inv[j], want);
    }
    /* pair 16 lies below the fractional range (pure extrapolation); pair 17's ramp
     * weight is (17 - 16.128)/(40.21 - 16.128) instead of the truncated 1/25 */
    check(inv[16] == def[16], "yarn x10 truncate=0: inv_freq[16] = %.17g, want %.17g",
          inv[16], def[16]);
    double r17 = (17 - lo) / (hi - lo);
    check(fabs(r17 - 0.04) > 1e-3 && inv[17] > def[17] / 10 && inv[17] < def[17] &&
              fabs(inv[17] - 8.3479e-2) > 1e-5,
          "yarn x10 truncate=0: inv_freq[17] = %.17g should differ from the truncated "
          "8.3479e-2", inv[17]);
}

static void test_yarn_attention(void)
{
    double inv[64];
    rb_rope_info info;
    struct {
        double f, mscale, mscale_all, explicit_af, want;
    } cases[] = {
        {10, 0, 0, 0, 0.1 * log(10.0) + 1},
        {40, 1, 0, 0, 0.1 * log(40.0) + 1}, /* mscale alone is ignored, as in HF */
        {40, 0, 1, 0, 0.1 * log(40.0) + 1},
        {40, 1, 1, 0, 1.0},                 /* DeepSeek-V3 style: ratio 1 */
        {40, 1, 0.5, 0, (0.1 * log(40.0) + 1) / (0.05 * log(40.0) + 1)},
        {40, 0.707, 1, 0, (0.0707 * log(40.0) + 1) / (0.1 * log(40.0) + 1)},
        {40, 1, 0.5, 0.9, 0.9},             /* explicit wins */
        {1, 0, 0, 0, 1.0},                  /* get_mscale(1) = 1 */
        {1, 2, 1, 0, 1.0},
        {8, 0, 0, 1.5, 1.5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rb_rope_params p = base_params(RB_ROPE_YARN, 128, 10000, cases[i].f, 4096);
        p.mscale = cases[i].mscale;
        p.mscale_all_dim = cases[i].mscale_all;
        p.attention_factor = cases[i].explicit_af;
        if (sched(&p, inv, &info, "yarn attention"))
            continue;
        check(rel(info.attention_factor, cases[i].want) <= 1e-15,
              "yarn factor=%g mscale=%g mscale_all_dim=%g attention_factor=%g: got "
              "%.17g, want %.17g",
              cases[i].f, cases[i].mscale, cases[i].mscale_all, cases[i].explicit_af,
              info.attention_factor, cases[i].want);
    }
    /* beta_fast/beta_slow: 0 means HF's defaults 32/1 */
    rb_rope_params p = base_params(RB_ROPE_YARN, 128, 10000, 10, 2048);
    double a[64], b[64];
    sched(&p, a, NULL, "yarn betas default");
    p.beta_fast = 32;
    p.beta_slow = 1;
    sched(&p, b, NULL, "yarn betas explicit");
    check(memcmp(a, b, sizeof a) == 0, "yarn: beta 0/0 differs from explicit 32/1");
    p.beta_fast = 16;
    p.beta_slow = 2;
    sched(&p, b, &info, "yarn betas 16/2");
    double lo = floor(128 * log(2048 / (16 * 2 * M_PI)) / (2 * log(10000.0)));
    double hi = ceil(128 * log(2048 / (2 * 2 * M_PI)) / (2 * log(10000.0)));
    check(info.corr_low == lo && info.corr_high == hi,
          "yarn beta 16/2: range (%g, %g), want (%g, %g)", info.corr_low,
          info.corr_high, lo, hi);
}

static void test_ntk_dynamic(void)
{
    double inv[64], def[64];
    rb_rope_info info;
    rb_rope_params p = base_params(RB_ROPE_NTK, 128, 10000, 8, 4096);
    if (!sched(&p, inv, &info, "ntk x8")) {
        check(fabs(info.base_used - 82684.62) <= 0.005,
              "ntk x8 dim 128: base %.10g, want 82684.62", info.base_used);
        default_of(128, info.base_used, def);
        check(memcmp(inv, def, sizeof inv) == 0,
              "ntk x8: inv_freq differs from default at base_used");
    }
    p = base_params(RB_ROPE_DYNAMIC_NTK, 128, 10000, 8, 4096);
    p.seq_len = 16384;
    if (!sched(&p, inv, &info, "dynamic x8 L16384"))
        check(fabs(info.base_used - 263105.26) <= 0.005,
              "dynamic_ntk x8 orig 4096 seq 16384: base %.10g, want 263105.26",
              info.base_used);
    /* seq_len <= original_ctx (or unset) -> max(seq_len, orig) = orig -> base */
    default_of(128, 10000, def);
    int64_t lens[] = {0, 1, 4095, 4096};
    for (size_t i = 0; i < 4; i++) {
        p.seq_len = lens[i];
        if (sched(&p, inv, &info, "dynamic short"))
            continue;
        check(info.base_used == 10000 && memcmp(inv, def, sizeof inv) == 0,
              "dynamic_ntk x8 orig 4096 seq_len %lld: base %.17g, want 10000 unchanged",
              (long long)lens[i], info.base_used);
    }
    /* the general formula at another point, dim 64 */
    p = base_params(RB_ROPE_DYNAMIC_NTK, 64, 500000, 4, 8192);
    p.seq_len = 100000;
    if (!sched(&p, inv, &info, "dynamic dim 64")) {
        double want = 500000 * pow(4.0 * 100000 / 8192 - 3, 64.0 / 62.0);
        check(rel(info.base_used, want) <= 1e-15,
              "dynamic_ntk x4 orig 8192 seq 100000 dim 64: base %.17g want %.17g",
              info.base_used, want);
    }
}

static void test_llama3(void)
{
    double inv[64], def[64];
    rb_rope_info info;
    default_of(128, 500000, def);
    rb_rope_params p = base_params(RB_ROPE_LLAMA3, 128, 500000, 8, 8192);
    p.low_freq_factor = 1;
    p.high_freq_factor = 4;
    if (sched(&p, inv, &info, "llama3"))
        return;
    for (int j = 0; j <= 28; j++)
        check(inv[j] == def[j], "llama3 x8: pair %d = %.17g, want unchanged %.17g", j,
              inv[j], def[j]);
    for (int j = 29; j <= 34; j++)
        check(inv[j] < def[j] && inv[j] > def[j] / 8,
              "llama3 x8: pair %d = %.17g, want strictly between def/8 and def", j,
              inv[j]);
    for (int j = 35; j < 64; j++)
        check(inv[j] == def[j] / 8, "llama3 x8: pair %d = %.17g, want def/8 = %.17g", j,
              inv[j], def[j] / 8);
    check(info.attention_factor == 1.0, "llama3: attention factor %g, want 1",
          info.attention_factor);
    /* medium band: smooth interpolation formula */
    for (int j = 29; j <= 34; j++) {
        double wl = 2 * M_PI / def[j];
        double sm = (8192 / wl - 1) / 3;
        double want = (1 - sm) * def[j] / 8 + sm * def[j];
        check(rel(inv[j], want) <= 1e-15, "llama3 x8: pair %d = %.17g, want %.17g", j,
              inv[j], want);
    }
    /* 0 means HF's defaults 1 / 4 */
    double b[64];
    p.low_freq_factor = 0;
    p.high_freq_factor = 0;
    sched(&p, b, NULL, "llama3 default factors");
    check(memcmp(inv, b, sizeof b) == 0, "llama3: low/high 0/0 differ from 1/4");
}

static void test_longrope(void)
{
    double sf[32], lf[32], inv[32], def[32];
    rb_rope_info info;
    for (int j = 0; j < 32; j++) {
        sf[j] = 1.0 + 0.01 * j;
        lf[j] = 1.0 + 0.5 * j;
    }
    default_of(64, 10000, def);
    rb_rope_params p = base_params(RB_ROPE_LONGROPE, 64, 10000, 32, 4096);
    p.short_factor = sf;
    p.long_factor = lf;
    struct {
        int64_t seq;
        const double *ext;
    } sel[] = {{0, sf}, {4096, sf}, {4097, lf}, {131072, lf}};
    for (size_t i = 0; i < 4; i++) {
        p.seq_len = sel[i].seq;
        if (sched(&p, inv, &info, "longrope"))
            continue;
        for (int j = 0; j < 32; j++)
            check(rel(inv[j], def[j] / sel[i].ext[j]) <= 1e-15,
                  "longrope seq_len %lld orig 4096: pair %d = %.17g, want %.17g (%s)",
                  (long long)sel[i].seq, j, inv[j], def[j] / sel[i].ext[j],
                  sel[i].ext == sf ? "short" : "long");
        double want = sqrt(1 + log(32.0) / log(4096.0));
        check(rel(info.attention_factor, want) <= 1e-15,
              "longrope x32 orig 4096: attention factor %.17g, want %.17g",
              info.attention_factor, want);
    }
    p.attention_factor = 1.25;
    if (!sched(&p, inv, &info, "longrope explicit"))
        check(info.attention_factor == 1.25,
              "longrope explicit attention_factor 1.25: got %.17g",
              info.attention_factor);
    p.attention_factor = 0;
    p.factor = 1;
    if (!sched(&p, inv, &info, "longrope x1"))
        check(info.attention_factor == 1.0, "longrope x1: attention factor %.17g, want 1",
              info.attention_factor);
}

/* factor 1 gives the unscaled schedule; pi divides; attention factor 1 where HF's is. */
static void test_identities(void)
{
    int dims[] = {4, 32, 64, 96, 128, 256};
    double bases[] = {10000, 500000, 1e6};
    for (size_t di = 0; di < 6; di++)
        for (size_t bi = 0; bi < 3; bi++) {
            int d = dims[di];
            double inv[128], def[128];
            rb_rope_info info;
            default_of(d, bases[bi], def);
            for (int j = 0; j < d / 2; j++) {
                double want = 1 / pow(bases[bi], 2.0 * j / d);
                check(rel(def[j], want) <= 1e-15,
                      "none dim %d base %g: pair %d = %.17g want %.17g", d, bases[bi], j,
                      def[j], want);
            }
            /* (dynamic_ntk is not in the list: at factor 1 HF's formula still gives
             * base * (L/orig)^(d/(d-2)) for L > orig) */
            rb_rope_method ms[] = {RB_ROPE_PI, RB_ROPE_NTK, RB_ROPE_YARN, RB_ROPE_LLAMA3};
            for (size_t mi = 0; mi < 4; mi++) {
                rb_rope_params p = base_params(ms[mi], d, bases[bi], 1, 4096);
                p.seq_len = 1 << 20;
                if (sched(&p, inv, &info, "factor 1"))
                    continue;
                double worst = 0;
                for (int j = 0; j < d / 2; j++)
                    worst = rb_test_max(worst, rel(inv[j], def[j]));
                check(worst <= 1e-14 && info.attention_factor == 1.0,
                      "%s factor 1 dim %d base %g: max rel diff to default %.3g, "
                      "attention factor %.17g (want 0 and 1)",
                      rb_rope_method_name(ms[mi]), d, bases[bi], worst,
                      info.attention_factor);
            }
            double fs[] = {2, 8, 16.5};
            for (size_t fi = 0; fi < 3; fi++) {
                rb_rope_method ones[] = {RB_ROPE_NONE, RB_ROPE_PI, RB_ROPE_NTK,
                                         RB_ROPE_DYNAMIC_NTK, RB_ROPE_LLAMA3};
                for (size_t mi = 0; mi < 5; mi++) {
                    rb_rope_params p = base_params(ones[mi], d, bases[bi], fs[fi], 4096);
                    p.seq_len = 65536;
                    if (sched(&p, inv, &info, "attention factor 1"))
                        continue;
                    check(info.attention_factor == 1.0,
                          "%s factor %g dim %d: attention factor %.17g, want 1",
                          rb_rope_method_name(ones[mi]), fs[fi], d,
                          info.attention_factor);
                }
                rb_rope_params p = base_params(RB_ROPE_PI, d, bases[bi], fs[fi], 4096);
                sched(&p, inv, NULL, "pi");
                for (int j = 0; j < d / 2; j++)
                    check(inv[j] == def[j] / fs[fi],
                          "pi x%g dim %d base %g: pair %d = %.17g, want %.17g", fs[fi], d,
                          bases[bi], j, inv[j], def[j] / fs[fi]);
            }
        }
}

static void expect_einval(const rb_rope_params *p, const char *key, const char *what)
{
    double inv[512];
    char err[256] = "";
    int rc = rb_rope_schedule(p, inv, NULL, err, sizeof err);
    check(rc == RB_EINVAL && strstr(err, key) != NULL,
          "%s (method %s): rc %d, message \"%s\"; want RB_EINVAL naming \"%s\"", what,
          rb_rope_method_name(p->method), rc, err, key);
}

static void test_bad_params(void)
{
    for (int m = 0; m < RB_ROPE_COUNT; m++) {
        rb_rope_params p = base_params((rb_rope_method)m, 128, 10000, 8, 4096);
        double sf[64], lf[64];
        for (int j = 0; j < 64; j++)
            sf[j] = lf[j] = 1;
        p.short_factor = sf;
        p.long_factor = lf;
        rb_rope_params q = p;
        q.rotary_dim = 127;
        expect_einval(&q, "rotary_dim", "odd rotary_dim");
        q.rotary_dim = 0;
        expect_einval(&q, "rotary_dim", "zero rotary_dim");
        q.rotary_dim = -4;
        expect_einval(&q, "rotary_dim", "negative rotary_dim");
        q = p;
        q.base = 1;
        expect_einval(&q, "base", "base 1");
        q.base = NAN;
        expect_einval(&q, "base", "base NaN");
        if (m != RB_ROPE_NONE) {
            q = p;
            q.factor = 0.5;
            expect_einval(&q, "factor", "factor 0.5");
            q.factor = NAN;
            expect_einval(&q, "factor", "factor NaN");
        }
        if (m == RB_ROPE_DYNAMIC_NTK || m == RB_ROPE_YARN || m == RB_ROPE_LLAMA3 ||
            m == RB_ROPE_LONGROPE) {
            q = p;
            q.original_ctx = 0;
            expect_einval(&q, "original_ctx", "original_ctx 0");
            q.original_ctx = -5;
            expect_einval(&q, "original_ctx", "original_ctx -5");
        }
    }
    rb_rope_params p = base_params(RB_ROPE_LONGROPE, 128, 10000, 8, 4096);
    expect_einval(&p, "short_factor", "longrope without factor lists");
    double sf[64];
    for (int j = 0; j < 64; j++)
        sf[j] = 1;
    p.short_factor = sf;
    expect_einval(&p, "long_factor", "longrope without long_factor");
    p.long_factor = sf;
    sf[7] = 0;
    expect_einval(&p, "short_factor[7]", "longrope with a zero factor");
    p = base_params(RB_ROPE_LLAMA3, 128, 500000, 8, 8192);
    p.low_freq_factor = 4;
    p.high_freq_factor = 4;
    expect_einval(&p, "high_freq_factor", "llama3 high == low");
    p.high_freq_factor = 2;
    expect_einval(&p, "high_freq_factor", "llama3 high < low");
    p = base_params(RB_ROPE_YARN, 128, 10000, 8, 4096);
    p.beta_fast = 1;
    p.beta_slow = 32;
    expect_einval(&p, "beta_fast", "yarn beta_fast < beta_slow");
    p = base_params((rb_rope_method)99, 128, 10000, 8, 4096);
    expect_einval(&p, "method", "unknown method");
    /* NULL err buffer must not crash */
    p = base_params(RB_ROPE_NONE, 3, 10000, 1, 0);
    double inv[8];
    check(rb_rope_schedule(&p, inv, NULL, NULL, 0) == RB_EINVAL,
          "rotary_dim 3 with NULL err: want RB_EINVAL");
}

static void test_names(void)
{
    const char *names[] = {"none", "pi", "ntk", "dynamic_ntk", "yarn", "llama3",
                           "longrope"};
    for (int m = 0; m < RB_ROPE_COUNT; m++) {
        check(strcmp(rb_rope_method_name((rb_rope_method)m), names[m]) == 0,
              "rb_rope_method_name(%d) = \"%s\", want \"%s\"", m,
              rb_rope_method_name((rb_rope_method)m), names[m]);
        check(rb_rope_method_parse(names[m]) == m, "rb_rope_method_parse(\"%s\") = %d",
              names[m], rb_rope_method_parse(names[m]));
    }
    const char *bad[] = {"", "YARN", "linear", "dynamic", "yarn ", "unknown"};
    for (size_t i = 0; i < 6; i++)
        check(rb_rope_method_parse(bad[i]) == -1, "rb_rope_method_parse(\"%s\") = %d, "
              "want -1", bad[i], rb_rope_method_parse(bad[i]));
    check(rb_rope_method_parse(NULL) == -1, "rb_rope_method_parse(NULL) != -1");
}

int main(void)
{
    test_yarn_known();
    test_yarn_attention();
    test_ntk_dynamic();
    test_llama3();
    test_longrope();
    test_identities();
    test_bad_params();
    test_names();
    printf("test_rope_schedule: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
