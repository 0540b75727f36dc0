/* test_metrics_phase.c — closed forms and known values of the analytic phase metrics: bins, YaRN bands, critical pair, D(delta) for none and PI, RoFormer bound, Men et al.'s B(delta), bad sizes. */
#include "rb_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define NPMAX 128

static int n_pass, n_fail;

/* Record one check; on failure print what and the parameters (already formatted). */
static void check(int ok, const char *what, const char *params)
{
    if (ok) {
        n_pass++;
    } else {
        n_fail++;
        printf("FAIL %s [%s]\n", what, params);
    }
}

/* Schedule for method m (defaults of HF for everything else); aborts the test on error. */
static void sched(rb_rope_method m, int d, double base, double factor, int64_t L0,
                  int truncate, double *inv)
{
    rb_rope_params p;
    memset(&p, 0, sizeof p);
    p.method = m;
    p.rotary_dim = d;
    p.base = base;
    p.factor = factor;
    p.original_ctx = L0;
    p.seq_len = L0;
    p.truncate = truncate;
    char err[256];
    if (rb_rope_schedule(&p, inv, NULL, err, sizeof err)) {
        printf("schedule failed: %s\n", err);
        exit(1);
    }
}

static double urand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / 16777216.0;
}

static void test_bins(void)
{
    int64_t e[200];
    char pr[160];
    check(rb_metrics_bins(2, 2, e) == 2 && e[0] == 0 && e[1] == 1 && e[2] == 2,
          "bins L=2 nbins=2 are {0,1,2}", "L 2 nbins 2");
    const int64_t Ls[] = {2, 3, 17, 4096, 1048576, (int64_t)1 << 33};
    const int nbs[] = {2, 3, 8, 64, 150};
    for (size_t a = 0; a < sizeof Ls / sizeof *Ls; a++)
        for (size_t b = 0; b < sizeof nbs / sizeof *nbs; b++) {
            int64_t L = Ls[a];
            int nb = nbs[b];
            int n = rb_metrics_bins(L, nb, e);
            snprintf(pr, sizeof pr, "L %lld nbins %d -> n %d", (long long)L, nb, n);
            int ok = n >= 1 && n <= nb && e[0] == 0 && e[1] == 1 && e[n] == L;
            for (int i = 0; ok && i < n; i++)
                ok = e[i + 1] > e[i];
            check(ok, "bins: 0, 1, strictly increasing, last = L, n <= nbins", pr);
            /* log spacing: every requested edge round(L^(k/m)) is present */
            int okl = 1;
            for (int k = 1; ok && k < nb - 1; k++) {
                int64_t want = (int64_t)floor(exp(log((double)L) * k / (nb - 1)) + 0.5);
                int found = 0;
                for (int i = 0; i <= n; i++)
                    found |= e[i] == want;
                okl &= found;
            }
            check(okl, "bins: every log-spaced edge round(L^(k/(nbins-1))) is an edge", pr);
        }
    check(rb_metrics_bins(1, 8, e) == RB_EINVAL, "bins: L < 2 is RB_EINVAL", "L 1 nbins 8");
    check(rb_metrics_bins(100, 1, e) == RB_EINVAL, "bins: nbins < 2 is RB_EINVAL",
          "L 100 nbins 1");
}

/* Bands are YaRN's ramp: band 0 pairs are not interpolated, band 2 pairs fully. */
static void test_bands(void)
{
    double base_f[NPMAX], yarn[NPMAX];
    int band[NPMAX];
    char pr[200];
    sched(RB_ROPE_NONE, 128, 10000, 1, 4096, 1, base_f);
    rb_metrics_bands(base_f, 64, 4096, 32, 1, band);
    int cnt[3] = {0, 0, 0};
    for (int j = 0; j < 64; j++)
        cnt[band[j]]++;
    snprintf(pr, sizeof pr, "d 128 base 1e4 L0 4096 beta 32/1: counts %d %d %d", cnt[0],
             cnt[1], cnt[2]);
    check(cnt[0] == 21 && cnt[1] == 25 && cnt[2] == 18 && band[20] == 0 && band[46] == 2,
          "bands: 21 high (j<=20), 25 mid, 18 low (j>=46)", pr);
    rb_metrics_bands(base_f, 64, 4096, 0, 0, band + 64); /* 0 = HF defaults */
    check(!memcmp(band, band + 64, 64 * sizeof *band), "bands: beta 0 means 32 / 1", pr);

    const int ds[] = {64, 128, 96};
    const double bases[] = {10000, 500000, 1e6};
    const int64_t L0s[] = {2048, 4096, 8192};
    const double fs[] = {4, 8, 32};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                for (int tr = 0; tr < 2; tr++) {
                    int d = ds[a], np = d / 2;
                    double f = fs[c];
                    sched(RB_ROPE_NONE, d, bases[b], 1, L0s[c], tr, base_f);
                    sched(RB_ROPE_YARN, d, bases[b], f, L0s[c], tr, yarn);
                    rb_metrics_bands(base_f, np, L0s[c], 32, 1, band);
                    int ok = 1, bad = -1;
                    for (int j = 0; j < np && ok; j++) {
                        double r = yarn[j] / base_f[j];
                        if (band[j] == 0)
                            ok = fabs(r - 1) < 1e-14;
                        else if (band[j] == 2)
                            ok = fabs(r * f - 1) < 1e-14;
                        else if (!tr) /* untruncated ramp: strictly in between */
                            ok = r < 1 && r * f > 1;
                        if (!ok)
                            bad = j;
                    }
                    snprintf(pr, sizeof pr,
                             "d %d base %g L0 %lld factor %g truncate %d pair %d", d,
                             bases[b], (long long)L0s[c], f, tr, bad);
                    check(ok, "bands match YaRN's ramp (0: extrapolated, 2: interpolated)",
                          pr);
                }
}

static void test_pairs(void)
{
    double base_f[NPMAX], pi[NPMAX], span[NPMAX], mx[NPMAX], turns[NPMAX];
    int ood[NPMAX];
    char pr[200];
    sched(RB_ROPE_NONE, 128, 10000, 1, 4096, 1, base_f);
    int c = rb_metrics_phase_pairs(base_f, base_f, 64, 4096, 4096, span, mx, turns, ood);
    int any = 0;
    for (int j = 0; j < 64; j++)
        any |= ood[j];
    snprintf(pr, sizeof pr, "none d 128 base 1e4 L0 4096 L 4096: critical %d", c);
    check(c == 46, "critical pair 46 (critical dimension 92, Liu et al. 2023)", pr);
    check(!any, "none with L = L0: no ood pair", pr);
    int okf = 1;
    for (int j = 0; j < 64; j++)
        okf &= span[j] == base_f[j] * 4095 && mx[j] == base_f[j] * 4095 &&
                fabs(turns[j] - mx[j] / (2 * M_PI)) <= 1e-15 * turns[j];
    check(okf, "span = theta (L0-1), max_phase = theta' (L-1), turns = max_phase / 2pi", pr);
    c = rb_metrics_phase_pairs(base_f, base_f, 64, 4096, 8192, span, mx, turns, ood);
    int okp = 1;
    for (int j = 0; j < 64; j++)
        okp &= ood[j] == (j >= 46);
    check(okp && c == 46, "none with L = 2 L0: ood exactly the pairs j >= 46",
          "none d 128 base 1e4 L0 4096 L 8192");
    sched(RB_ROPE_PI, 128, 10000, 8, 4096, 1, pi);
    c = rb_metrics_phase_pairs(base_f, pi, 64, 4096, 8 * 4095 + 1, span, mx, turns, ood);
    any = 0;
    for (int j = 0; j < 64; j++)
        any |= ood[j];
    check(!any, "pi x8 with L - 1 = 8 (L0 - 1): no ood pair", "pi x8 L0 4096 L 32761");
    check(rb_metrics_phase_pairs(base_f, pi, 0, 4096, 10, span, mx, turns, ood) ==
              RB_EINVAL,
          "phase_pairs: np 0 is RB_EINVAL", "np 0");
    check(rb_metrics_phase_pairs(base_f, pi, 64, 0, 10, NULL, NULL, NULL, NULL) ==
              RB_EINVAL,
          "phase_pairs: L0 0 is RB_EINVAL", "L0 0");
}

static void test_distance_none(void)
{
    double base_f[NPMAX], w[NPMAX], D[16], Db[48], oc[16], oe[16];
    int band[NPMAX];
    char pr[200], err[256];
    sched(RB_ROPE_NONE, 128, 10000, 1, 4096, 1, base_f);
    rb_metrics_bands(base_f, 64, 4096, 32, 1, band);
    unsigned s = 7;
    for (int j = 0; j < 64; j++)
        w[j] = 0.1 + urand(&s);
    const double dl[] = {0, 1, 7, 100, 1000, 2047, 2048, 4095, 4096, 5000, 100000, 1048575};
    const int nd = 12;
    int rc = rb_metrics_phase_distance(base_f, base_f, w, band, 64, 4096, dl, nd, D, Db, oc,
                                       oe, err, sizeof err);
    check(rc == 0, "phase_distance none succeeds", err);
    for (int i = 0; i < nd && rc == 0; i++) {
        snprintf(pr, sizeof pr, "none d 128 L0 4096 delta %g: D %.3g D_band %.3g %.3g %.3g "
                 "ood %.3g %.3g", dl[i], D[i], Db[i], Db[nd + i], Db[2 * nd + i], oc[i],
                 oe[i]);
        if (dl[i] < 4096) {
            check(D[i] == 0 && Db[i] == 0 && Db[nd + i] == 0 && Db[2 * nd + i] == 0,
                  "none, delta < L0: D = 0 exactly (every band too)", pr);
            check(oc[i] == 0 && oe[i] == 0, "none, delta < L0: no ood pair", pr);
        } else {
            check(D[i] > 0 && D[i] <= M_PI, "none, delta >= L0: 0 < D <= pi", pr);
            check(oc[i] == 18.0 / 64, "none, delta >= L0: the 18 pairs j >= 46 are ood", pr);
        }
        double comb = 0; /* the band minima bound the total from below */
        double W = 0, Wb[3] = {0, 0, 0};
        for (int j = 0; j < 64; j++) {
            W += w[j];
            Wb[band[j]] += w[j];
        }
        for (int b = 0; b < 3; b++)
            comb += Wb[b] * Db[b * nd + i] * Db[b * nd + i];
        check(D[i] * D[i] >= comb / W * (1 - 1e-12) - 1e-300,
              "D^2 >= sum_b W_b D_b^2 / W (each band minimises on its own)", pr);
    }
    /* a long trained context: many tiles, still exact */
    double d1 = 100000;
    rc = rb_metrics_phase_distance(base_f, base_f, w, band, 64, 131072, &d1, 1, D, Db, oc, oe,
                                   err, sizeof err);
    check(rc == 0 && D[0] == 0 && oc[0] == 0, "none, L0 131072, delta 100000: D = 0",
          "none d 128 L0 131072 delta 100000");
}

/* PI with factor s: trained t* = min(round(delta/s), L0-1) gives the bound. */
static void test_distance_pi(void)
{
    double base_f[NPMAX], pi[NPMAX], w[NPMAX], dl[64], D[64];
    char pr[240], err[256];
    const double fs[] = {2, 2.5, 8, 16};
    const int64_t L0s[] = {512, 4096};
    unsigned s = 11;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++) {
            double f = fs[a];
            int64_t L0 = L0s[b];
            sched(RB_ROPE_NONE, 64, 10000, 1, L0, 1, base_f);
            sched(RB_ROPE_PI, 64, 10000, f, L0, 1, pi);
            double W = 0;
            for (int j = 0; j < 32; j++)
                W += (w[j] = urand(&s));
            for (int i = 0; i < 64; i++) /* 0 .. s L0 - 1, with the last ones */
                dl[i] = i < 60 ? floor((f * L0 - 1) * urand(&s)) : f * L0 - 1 - (i - 60);
            int rc = rb_metrics_phase_distance(base_f, pi, w, NULL, 32, L0, dl, 64, D, NULL,
                                               NULL, NULL, err, sizeof err);
            check(rc == 0, "phase_distance pi succeeds", err);
            for (int i = 0; i < 64 && rc == 0; i++) {
                double q = dl[i] / f, t = floor(q + 0.5);
                if (t > (double)(L0 - 1))
                    t = (double)(L0 - 1);
                double acc = 0;
                for (int j = 0; j < 32; j++) {
                    double e = base_f[j] * fabs(q - t);
                    acc += w[j] * e * e;
                }
                double bound = sqrt(acc / W);
                snprintf(pr, sizeof pr, "pi x%g d 64 L0 %lld delta %g: D %.17g bound %.17g", f,
                         (long long)L0, dl[i], D[i], bound);
                check(D[i] <= bound * (1 + 1e-12) + 1e-12,
                      "pi: D <= weighted RMS of theta_j |delta/s - t*|", pr);
            }
        }
}

static void test_decay(void)
{
    double base_f[NPMAX], rf[8], B[8];
    char pr[200];
    sched(RB_ROPE_NONE, 128, 10000, 1, 4096, 1, base_f);
    const double dl[] = {0, 1706, 1707, 10, 2.5, 100000, 1048575, 3};
    rb_metrics_decay_bounds(base_f, 64, dl, 8, rf, B);
    snprintf(pr, sizeof pr, "none d 128 base 1e4: B(1706) %.6g B(1707) %.6g", B[1], B[2]);
    check(B[1] > 0 && B[2] < 0, "B(1706) > 0 > B(1707) (Men et al.)", pr);
    check(rb_metrics_first_negative_B(base_f, 64, 1 << 20) == 1707,
          "first_negative_B = 1707", pr);
    check(rb_metrics_first_negative_B(base_f, 64, 1706) == -1,
          "first_negative_B = -1 when max_delta = 1706", pr);
    snprintf(pr, sizeof pr, "delta 0: roformer %.17g B %.17g", rf[0], B[0]);
    check(rf[0] == 32.5 && B[0] == 64, "delta 0: roformer = (np+1)/2, B = np", pr);
    unsigned s = 5;
    for (int i = 0; i < 8; i++) {
        double sr = 0, si = 0, b = 0;
        for (int j = 0; j < 64; j++) {
            sr += cos(dl[i] * base_f[j]);
            si += sin(dl[i] * base_f[j]);
            b += cos(dl[i] * base_f[j]);
        }
        snprintf(pr, sizeof pr, "delta %g: roformer %.17g B %.17g |S_np| %.17g", dl[i], rf[i],
                 B[i], hypot(sr, si));
        check(rf[i] >= hypot(sr, si) / 64 - 1e-9 && rf[i] <= 32.5 + 1e-12,
              "|S_np|/np <= roformer <= (np+1)/2", pr);
        if (dl[i] < 20000)
            check(fabs(B[i] - b) < 1e-9, "B = sum cos(delta theta) (small delta, direct)",
                  pr);
        /* the RoFormer inequality itself: |sum h_j e^{i delta theta_j}| <=
         * max |h_{j+1} - h_j| * sum |S_i| with h_np = 0 */
        int okb = 1;
        for (int trial = 0; trial < 20 && okb; trial++) {
            double h[65], hr = 0, hi = 0, md = 0;
            for (int j = 0; j < 64; j++)
                h[j] = (trial % 2 ? 1.0 - j / 64.0 : 0) + 0.3 * urand(&s);
            h[64] = 0;
            for (int j = 0; j < 64; j++) {
                hr += h[j] * cos(dl[i] * base_f[j]);
                hi += h[j] * sin(dl[i] * base_f[j]);
                md = fmax(md, fabs(h[j + 1] - h[j]));
            }
            okb = hypot(hr, hi) <= md * 64 * rf[i] * (1 + 1e-9) + 1e-9;
        }
        check(okb, "RoFormer: |sum h e| <= max|dh| * np * roformer (20 random h)", pr);
    }
}

static void test_threads_and_errors(void)
{
    double base_f[NPMAX], yarn[NPMAX], w[NPMAX], dl[40], D1[40], D2[40], B1[120], B2[120];
    int band[NPMAX];
    char err[256], pr[320];
    sched(RB_ROPE_NONE, 128, 10000, 1, 4096, 1, base_f);
    sched(RB_ROPE_YARN, 128, 10000, 16, 4096, 1, yarn);
    rb_metrics_bands(base_f, 64, 4096, 32, 1, band);
    unsigned s = 3;
    for (int j = 0; j < 64; j++)
        w[j] = urand(&s);
    for (int i = 0; i < 40; i++)
        dl[i] = floor(exp(i * log(1048576.0) / 39));
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    int rc1 = rb_metrics_phase_distance(base_f, yarn, w, band, 64, 4096, dl, 40, D1, B1, NULL,
                                        NULL, err, sizeof err);
#ifdef _OPENMP
    omp_set_num_threads(3);
#endif
    int rc2 = rb_metrics_phase_distance(base_f, yarn, w, band, 64, 4096, dl, 40, D2, B2, NULL,
                                        NULL, err, sizeof err);
    check(rc1 == 0 && rc2 == 0 && !memcmp(D1, D2, sizeof D1) && !memcmp(B1, B2, sizeof B1),
          "D does not depend on the thread count (1 vs 3)", "yarn x16 d 128 L0 4096");
    int okr = 1;
    for (int i = 0; i < 40; i++)
        okr &= D1[i] >= 0 && D1[i] <= M_PI;
    check(okr, "0 <= D <= pi", "yarn x16");

    struct {
        const char *what;
        int np;
        int64_t L0;
        int nd;
        double wv, dv;
        int bv, want_band;
    } bad[] = {
        {"np 0", 0, 4096, 1, 1, 1, 0, 1},
        {"L0 0", 64, 0, 1, 1, 1, 0, 1},
        {"nd -1", 64, 4096, -1, 1, 1, 0, 1},
        {"negative weight", 64, 4096, 1, -1, 1, 0, 1},
        {"zero weights", 64, 4096, 1, 0, 1, 0, 1},
        {"NaN weight", 64, 4096, 1, NAN, 1, 0, 1},
        {"negative delta", 64, 4096, 1, 1, -3, 0, 1},
        {"band 3", 64, 4096, 1, 1, 1, 3, 1},
        {"D_band without band", 64, 4096, 1, 1, 1, 0, 0},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        double ww[NPMAX], d = bad[k].dv;
        int bb[NPMAX];
        for (int j = 0; j < 64; j++) {
            ww[j] = j == 5 || bad[k].wv == 0 ? bad[k].wv : 1;
            bb[j] = j == 5 ? bad[k].bv : 0;
        }
        err[0] = '\0';
        int rc = rb_metrics_phase_distance(base_f, base_f, ww, bad[k].want_band ? bb : NULL,
                                           bad[k].np, bad[k].L0, &d, bad[k].nd, D1, B1, NULL,
                                           NULL, err, sizeof err);
        snprintf(pr, sizeof pr, "%.40s: rc %d msg '%.250s'", bad[k].what, rc, err);
        check(rc == RB_EINVAL && strlen(err) > 10 && !strchr(err, '\n'),
              "bad input: RB_EINVAL with a one-line message", pr);
    }
}

/* A non-integer distance with a frequency above 1 rad per token (a LongRoPE factor below
 * 1 allows it): f * theta' adds more than 3 pi to the integer part's phase, which one
 * shift of 2 pi did not bring back to [-pi, pi] (D read 43.2 rad, above pi). */
static void test_distance_fraction_high_freq(void)
{
    const double th[1] = {100.0}, w[1] = {1.0}, dl[1] = {2.5};
    const int band[1] = {0};
    double D[1], Db[3], oc[1], oe[1];
    char err[256];
    int rc = rb_metrics_phase_distance(th, th, w, band, 1, 2, dl, 1, D, Db, oc, oe, err,
                                       sizeof err);
    /* trained t in {0, 1}: min over t of |wrap(100 * 2.5 - 100 t)| */
    const double want = fmin(fabs(remainder(250.0, 2 * M_PI)), fabs(remainder(150.0, 2 * M_PI)));
    char params[160];
    snprintf(params, sizeof params, "theta 100, delta 2.5, L0 2: rc %d, D %.17g, want %.17g",
             rc, rc == 0 ? D[0] : NAN, want);
    check(rc == 0 && fabs(D[0] - want) <= 1e-9, "D at a fractional distance, theta > 1",
          params);
}

int main(void)
{
    test_bins();
    test_distance_fraction_high_freq();
    test_bands();
    test_pairs();
    test_distance_none();
    test_distance_pi();
    test_decay();
    test_threads_and_errors();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
