/* test_metrics_probe.c — rb_probe_metrics_accumulate against a brute-force double computation over all (row, key) pairs, and rb_rope_apply_fp32phase against a float rotation written differently plus its phase error vs rb_rope_phase.
 *
 * Metrics: random shapes (d 8..128, rotary_dim <= d, neox and gptj), gapped and
 * unsorted positions with duplicates, rows that see no key, keys split over 1-3 calls
 * on disjoint subsets, 1 and 2 threads, needles (one with an exact duplicate key so a
 * tie is tested), with and without the share/rho arrays, and large scales so the
 * documented p < 1e-30 share skip applies (the reference applies the same rule).
 * The reference sums each score sequentially over dims and everything else per pair
 * directly (c_j, |q_j||k_j|); tolerances: counts and ranks exact, mins/maxes 1e-12
 * relative, sums 1e-9 of the sum of absolute terms (the share sums 2^-24 + 1e-9: the
 * kernel rounds each share weight to float, so that its products with keys are exact;
 * share_den also 1e-9 of the same weights rounded to float from libm's exp, plus two
 * float ulps of the bin's largest, which checks the kernel's own exp).
 * The default (AVX-512 where available) and ROPEBENCH_ISA=ref builds must agree bit
 * for bit.
 * fp32 RoPE: rotation equal to a complex-float product within 4 float ulps of the
 * pair norm; pass-through dims untouched; the phase measured from a rotated unit
 * vector obeys |err| <= 2.5 * 2^-24 * pos * inv_freq + 1e-6 and grows with position
 * (max over pairs at 1M printed). */
#include "rb_kernels.h"
#include "rb_test.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Independent score: sequential sum. */
static double score_seq(const float *q, const float *k, int d, double scale)
{
    double s = 0;
    for (int j = 0; j < d; j++)
        s += (double)q[j] * (double)k[j];
    return scale * s;
}

/* Log-spaced integer edges: 0, 1, then round(L^(i/n')) deduplicated, last = L. */
static int make_edges(int64_t L, int nbins, int64_t *edges)
{
    int n = 0;
    edges[n++] = 0;
    edges[n++] = 1;
    for (int i = 1; i <= nbins - 1; i++) {
        int64_t e = (int64_t)llround(pow((double)L, (double)i / (nbins - 1)));
        if (i == nbins - 1)
            e = L;
        if (e > edges[n - 1])
            edges[n++] = e;
    }
    return n - 1;
}

static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void metrics_case(int ci)
{
    const int d = (int)rng_int(2, 32) * 4 - (int)rng_int(0, 1) * 2; /* 6..128, even */
    const int dd = d < 8 ? 8 : d;
    const int rot = (rng_unit() < 0.5) ? dd : 2 * (int)rng_int(1, dd / 2);
    const rb_rope_layout layout = rng_unit() < 0.5 ? RB_LAYOUT_NEOX : RB_LAYOUT_GPTJ;
    const int np = rot / 2;
    const int64_t nq = rng_int(1, 24), nk = rng_int(1, 260);
    const int threads = (int)rng_int(1, 2);
    const int ncalls = (int)rng_int(1, 3);
    const int with_share = rng_unit() < 0.85, with_rho = rng_unit() < 0.85;
    const double scale = rng_unit() < 0.25 ? 3.0 + 4 * rng_unit() : 1.0 / sqrt((double)dd);
    const int64_t span = rng_int(4, 5000);
    char P[256];
    snprintf(P, sizeof P, "case %d: d=%d rot=%d %s nq=%lld nk=%lld threads=%d calls=%d "
             "share=%d rho=%d scale=%.3g span=%lld", ci, dd, rot,
             layout == RB_LAYOUT_GPTJ ? "gptj" : "neox", (long long)nq, (long long)nk,
             threads, ncalls, with_share, with_rho, scale, (long long)span);

    float *q = malloc(sizeof(float) * nq * dd), *k = malloc(sizeof(float) * nk * dd);
    int64_t *qp = malloc(sizeof(int64_t) * nq), *kp = malloc(sizeof(int64_t) * nk);
    double *lse = malloc(sizeof(double) * nq);
    for (int64_t i = 0; i < nq * dd; i++)
        q[i] = (float)rng_normal();
    for (int64_t i = 0; i < nk * dd; i++)
        k[i] = (float)rng_normal();
    /* keys: contiguous, shuffled or gapped; rows anywhere (some before every key) */
    const int kmode = (int)rng_int(0, 2);
    const int64_t k0 = rng_int(0, span / 4);
    for (int64_t n = 0; n < nk; n++)
        kp[n] = kmode == 0 ? k0 + n : rng_int(0, span);
    if (kmode == 1)
        for (int64_t n = nk - 1; n > 0; n--) {
            int64_t j = rng_int(0, n), t = kp[n];
            kp[n] = kp[j];
            kp[j] = t;
        }
    for (int64_t m = 0; m < nq; m++)
        qp[m] = rng_int(0, span + nk);
    /* needles: random (row, visible key); one duplicated exactly at another position */
    int nn = (int)rng_int(0, 4);
    int64_t nrow[8], nkpos[8];
    double ns[8], nabove[8] = {0};
    int64_t nkidx[8];
    int real_nn = 0;
    for (int i = 0; i < nn; i++) {
        int64_t m = rng_int(0, nq - 1), n = rng_int(0, nk - 1);
        if (kp[n] > qp[m])
            continue;
        nrow[real_nn] = m;
        nkidx[real_nn] = n;
        real_nn++;
    }
    nn = real_nn;
    if (nn > 0 && nk > 2) {
        int64_t n = nkidx[0], other = (n + 1) % nk;
        memcpy(k + other * dd, k + n * dd, sizeof(float) * dd);
    }
    /* needle key positions unique among the keys: a second needle whose key shares a
     * position with an earlier one (another key) is dropped, then every other key at a
     * needle position moves far into the past (still visible, never the needle) */
    int kept = 0;
    for (int i = 0; i < nn; i++) {
        int ok = 1;
        for (int e = 0; e < kept; e++)
            if (nkidx[e] != nkidx[i] && kp[nkidx[e]] == kp[nkidx[i]])
                ok = 0;
        if (ok) {
            nrow[kept] = nrow[i];
            nkidx[kept] = nkidx[i];
            kept++;
        }
    }
    nn = kept;
    for (int64_t o = 0; o < nk; o++) {
        int is_needle = 0, clash = 0;
        for (int i = 0; i < nn; i++) {
            is_needle |= nkidx[i] == o;
            clash |= kp[nkidx[i]] == kp[o];
        }
        if (clash && !is_needle)
            kp[o] = -1 - o;
    }
    for (int i = 0; i < nn; i++) {
        nkpos[i] = kp[nkidx[i]];
        ns[i] = scale * rb_attn_dot(q + nrow[i] * dd, k + nkidx[i] * dd, dd);
    }
    int64_t L = 2;
    for (int64_t m = 0; m < nq; m++)
        for (int64_t n = 0; n < nk; n++)
            if (kp[n] <= qp[m] && qp[m] - kp[n] + 1 > L)
                L = qp[m] - kp[n] + 1;
    int64_t edges[40];
    const int nb2 = make_edges(L, (int)rng_int(2, 30), edges);

    /* brute force */
    double *s = malloc(sizeof(double) * nq * nk);
    for (int64_t m = 0; m < nq; m++) {
        double mx = -INFINITY;
        for (int64_t n = 0; n < nk; n++) {
            s[m * nk + n] = score_seq(q + m * dd, k + n * dd, dd, scale);
            if (kp[n] <= qp[m] && s[m * nk + n] > mx)
                mx = s[m * nk + n];
        }
        double z = 0;
        for (int64_t n = 0; n < nk; n++)
            if (kp[n] <= qp[m])
                z += exp(s[m * nk + n] - mx);
        lse[m] = mx == -INFINITY ? -INFINITY : mx + log(z);
    }
    const int B = nb2;
    double *R = calloc((size_t)(B * (8 + 2 * np) + 3 * nq + 2 * np + 16), sizeof(double));
    double *rc = R, *rss = rc + B, *rss2 = rss + B, *rden = rss2 + B, *rnum = rden + B;
    double *aabs_ss = rnum + B * np, *aabs_num = aabs_ss + B, *rrho = aabs_num + B * np;
    double *rmin = rrho + np, *rmax = rmin + nq, *rcnt = rmax + nq;
    double rabove[8] = {0};
    /* the share weights rounded to float as the kernel rounds them, from libm's exp:
     * their sums and each bin's largest weight (share_den is checked against these to
     * 1e-9, which an exp good to float precision only would fail) */
    double *rdenf = calloc((size_t)(2 * B), sizeof(double)), *pmaxf = rdenf + B;
    for (int64_t m = 0; m < nq; m++) {
        rmin[m] = INFINITY;
        rmax[m] = 0;
        for (int64_t n = 0; n < nk; n++) {
            if (kp[n] > qp[m])
                continue;
            const double sc = s[m * nk + n];
            const int64_t dist = qp[m] - kp[n];
            int b = 0;
            while (b + 1 < B && edges[b + 1] <= dist)
                b++;
            rc[b] += 1;
            rss[b] += sc;
            aabs_ss[b] += fabs(sc);
            rss2[b] += sc * sc;
            rcnt[m] += 1;
            if (sc < rmin[m])
                rmin[m] = sc;
            if (fabs(sc) > rmax[m])
                rmax[m] = fabs(sc);
            const double p = exp(sc - lse[m]);
            const int keep = p >= 1e-30;
            if (keep) {
                const double pf = (double)(float)p;
                rden[b] += p;
                rdenf[b] += pf;
                pmaxf[b] = pf > pmaxf[b] ? pf : pmaxf[b];
            }
            for (int j = 0; j < np; j++) {
                int a = layout == RB_LAYOUT_GPTJ ? 2 * j : j;
                int bb = layout == RB_LAYOUT_GPTJ ? 2 * j + 1 : j + np;
                const float *qr = q + m * dd, *kr = k + n * dd;
                double cj = scale * ((double)qr[a] * kr[a] + (double)qr[bb] * kr[bb]);
                if (keep) {
                    rnum[b * np + j] += p * cj;
                    aabs_num[b * np + j] += p * fabs(cj) + 2e-21 * fabs(cj); /* flips at the 1e-30 floor */
                }
                rrho[j] += hypot(qr[a], qr[bb]) * hypot(kr[a], kr[bb]);
            }
            for (int i = 0; i < nn; i++)
                if (nrow[i] == m && kp[n] != nkpos[i] &&
                    scale * rb_attn_dot(q + m * dd, k + n * dd, dd) > ns[i])
                    rabove[i] += 1;
        }
    }

    /* kernel, over ncalls disjoint key subsets (a random assignment) */
    double *K = calloc((size_t)(B * (4 + np) + 3 * nq + np + 8), sizeof(double));
    double *kc = K, *kss = kc + B, *kss2 = kss + B, *kden = kss2 + B, *knum = kden + B;
    double *krho = knum + B * np, *kmin = krho + np, *kmax = kmin + nq, *kcnt = kmax + nq;
    for (int64_t m = 0; m < nq; m++)
        kmin[m] = INFINITY;
    rb_probe_metrics pm = {0};
    pm.d = dd;
    pm.rotary_dim = rot;
    pm.layout = layout;
    pm.nbins = B;
    pm.edges = edges;
    pm.count = kc;
    pm.sum_s = kss;
    pm.sum_s2 = kss2;
    pm.share_num = with_share ? knum : NULL;
    pm.share_den = with_share ? kden : NULL;
    pm.row_min_s = kmin;
    pm.row_max_abs_s = kmax;
    pm.row_count = kcnt;
    pm.rho_sum = with_rho ? krho : NULL;
    pm.n_needles = nn;
    pm.needle_key_pos = nkpos;
    pm.needle_row = nrow;
    pm.needle_s = ns;
    pm.needle_above = nabove;
    int *owner = malloc(sizeof(int) * nk);
    for (int64_t n = 0; n < nk; n++)
        owner[n] = (int)rng_int(0, ncalls - 1);
    float *ks = malloc(sizeof(float) * nk * dd);
    int64_t *kps = malloc(sizeof(int64_t) * nk);
    rb_kernels_set_threads(threads);
    for (int cl = 0; cl < ncalls; cl++) {
        int64_t cnt = 0;
        for (int64_t n = 0; n < nk; n++)
            if (owner[n] == cl) {
                memcpy(ks + cnt * dd, k + n * dd, sizeof(float) * dd);
                kps[cnt++] = kp[n];
            }
        char err[256] = "";
        int r = rb_probe_metrics_accumulate(q, qp, lse, nq, ks, kps, cnt, scale, &pm, err,
                                            sizeof err);
        check(r == RB_OK, "%s: call %d returned %d (%s)", P, cl, r, err);
    }
    rb_kernels_set_threads(2);

    for (int b = 0; b < B; b++) {
        check(kc[b] == rc[b], "%s: count[%d] %g vs %g", P, b, kc[b], rc[b]);
        check(close_to(kss[b], rss[b], 1e-9 * (aabs_ss[b] + 1e-300)),
              "%s: sum_s[%d] %.17g vs %.17g", P, b, kss[b], rss[b]);
        check(close_to(kss2[b], rss2[b], 1e-9 * rss2[b]), "%s: sum_s2[%d] %.17g vs %.17g",
              P, b, kss2[b], rss2[b]);
        if (with_share) {
            /* the kernel rounds each share weight to float (so that p * k is exact),
             * a relative change of at most 2^-24 per term */
            check(close_to(kden[b], rden[b], (0x1.0p-24 + 1e-9) * rden[b] + 1e-30 * rc[b]),
                  "%s: share_den[%d] %.17g vs %.17g", P, b, kden[b], rden[b]);
            /* against the same weights rounded to float from libm's exp: the kernel's
             * exp is within 1e-11 of it, so the two roundings differ (by one float ulp)
             * for about 1 weight in 200,000; two such of the bin's largest weight are
             * allowed */
            check(close_to(kden[b], rdenf[b], 1e-9 * rdenf[b] + 0x1.0p-22 * pmaxf[b] +
                                                  1e-30 * rc[b]),
                  "%s: share_den[%d] %.17g vs %.17g (libm's exp rounded to float: "
                  "relative difference %.3g)", P, b, kden[b], rdenf[b],
                  fabs(kden[b] - rdenf[b]) / (rdenf[b] + 1e-300));
            for (int j = 0; j < np; j++)
                check(close_to(knum[b * np + j], rnum[b * np + j],
                               (0x1.0p-24 + 1e-9) * aabs_num[b * np + j] + 1e-300),
                      "%s: share_num[%d][%d] %.17g vs %.17g", P, b, j, knum[b * np + j],
                      rnum[b * np + j]);
        }
    }
    for (int64_t m = 0; m < nq; m++) {
        check(kcnt[m] == rcnt[m], "%s: row %lld count %g vs %g", P, (long long)m, kcnt[m],
              rcnt[m]);
        check(kmin[m] == rmin[m] || close_to(kmin[m], rmin[m], 1e-12 * fabs(rmin[m]) + 1e-11),
              "%s: row %lld min %.17g vs %.17g", P, (long long)m, kmin[m], rmin[m]);
        check(close_to(kmax[m], rmax[m], 1e-12 * rmax[m] + 1e-11),
              "%s: row %lld max|s| %.17g vs %.17g", P, (long long)m, kmax[m], rmax[m]);
    }
    if (with_rho)
        for (int j = 0; j < np; j++)
            check(close_to(krho[j], rrho[j], 1e-9 * rrho[j]), "%s: rho_sum[%d] %.17g vs %.17g",
                  P, j, krho[j], rrho[j]);
    for (int i = 0; i < nn; i++)
        check(nabove[i] == rabove[i], "%s: needle %d (row %lld, key pos %lld) above %g vs %g",
              P, i, (long long)nrow[i], (long long)nkpos[i], nabove[i], rabove[i]);

    free(q); free(k); free(qp); free(kp); free(lse); free(s); free(R); free(rdenf); free(K);
    free(owner); free(ks); free(kps);
}

/* The AVX-512 build of the kernel (chosen when the CPU allows) and the portable one
 * (ROPEBENCH_ISA=ref) give bit-identical accumulators. */
/* pm_over: point pm's accumulators into one array a laid out as [count, sum_s, sum_s2,
 * share_den][B], share_num[B][np], then row_min_s, row_max_abs_s, row_count [nq_total]
 * each and rho_sum[np]; the row arrays start at row r0 (for calls over a row subset). */
static void pm_over(rb_probe_metrics *pm, double *a, int B, int d, rb_rope_layout layout,
                    const int64_t *edges, int64_t nq_total, int64_t r0)
{
    const int np = d / 2;
    double *rows = a + (size_t)B * (4 + (size_t)np);
    memset(pm, 0, sizeof *pm);
    pm->d = d;
    pm->rotary_dim = d;
    pm->layout = layout;
    pm->nbins = B;
    pm->edges = edges;
    pm->count = a;
    pm->sum_s = a + B;
    pm->sum_s2 = a + 2 * B;
    pm->share_den = a + 3 * B;
    pm->share_num = a + 4 * B;
    pm->row_min_s = rows + r0;
    pm->row_max_abs_s = rows + nq_total + r0;
    pm->row_count = rows + 2 * nq_total + r0;
    pm->rho_sum = rows + 3 * nq_total;
}

/* The default (AVX-512 where available) and ROPEBENCH_ISA=ref builds, bit for bit: even
 * d 2..130 (so d % 8 and d % 4 tails, and the scalar key transpose, are met), rotary_dim
 * <= d, needles (one at an exact duplicate of another key, so a tie), a row with
 * lse = -inf, scale 0 in every fourth case (scores of both zero signs); case 0 has so
 * many rows that every block flushes its runs. */
static void isa_identity_case(int ci)
{
    const int many = ci == 0;
    const int d = many ? 512 : 2 * (int)rng_int(1, 65), nbins = 12;
    const int rot = ci % 3 == 2 ? 2 * (int)rng_int(0, d / 2) : d, np = rot / 2;
    const int64_t nq = many ? 8200 : rng_int(1, 40), nk = many ? rng_int(17, 70) : rng_int(1, 700);
    const rb_rope_layout layout = ci % 2 ? RB_LAYOUT_GPTJ : RB_LAYOUT_NEOX;
    float *q = malloc(sizeof(float) * nq * d), *k = malloc(sizeof(float) * nk * d);
    int64_t *qp = malloc(sizeof(int64_t) * nq), *kp = malloc(sizeof(int64_t) * nk);
    double *lse = malloc(sizeof(double) * nq);
    for (int64_t i = 0; i < nq * d; i++)
        q[i] = (float)rng_normal();
    for (int64_t i = 0; i < nk * d; i++)
        k[i] = (float)rng_normal();
    for (int64_t n = 0; n < nk; n++)
        kp[n] = n;
    for (int64_t m = 0; m < nq; m++) {
        qp[m] = rng_int(0, nk + 5);
        lse[m] = 2.0 + rng_unit() * 8.0;
    }
    if (nq > 1)
        lse[rng_int(0, nq - 1)] = -INFINITY;
    /* two needles of one row: a random key, and (with 2+ keys) a key made an exact
     * copy of another, so that its score ties */
    int64_t nkey[2], nrow[2];
    double ns[2];
    const int nn = nk >= 2 ? 2 : 1;
    nrow[0] = nrow[1] = rng_int(0, nq - 1);
    qp[nrow[0]] = nk + 5; /* sees every key */
    nkey[0] = rng_int(0, nk - 1);
    if (nn == 2) {
        nkey[1] = nkey[0] == nk - 1 ? 0 : nkey[0] + 1;
        memcpy(k + nkey[1] * d, k + rng_int(0, nk - 1) * d, sizeof(float) * d);
    }
    /* every fourth case with scale 0: each score is then +0 or -0 (the sign of the
     * dot product), so a row's smallest score is a zero of the sign met first, which
     * a tree of vector mins (returning their second operand on equal values) would
     * not keep */
    const double scale = ci % 4 == 1 ? 0.0 : 0.3;
    for (int i = 0; i < nn; i++)
        ns[i] = scale * rb_attn_dot(q + nrow[i] * d, k + nkey[i] * d, d);
    /* every eighth case from 6 on, a NaN in every seventh key (not the needles): every
     * row's score with such a key is NaN, beside finite ones in its block, which the
     * scalar min/max loop skips and a vector tree would carry into the row's minimum
     * or drop with the block's (the AVX-512 build falls back to the scalar loop there).
     * Outside the contract (inputs finite), but the two builds must still agree. */
    int64_t nan_keys = 0;
    if (ci % 8 == 6)
        for (int64_t n = 3; n < nk; n += 7)
            if (n != nkey[0] && (nn < 2 || n != nkey[1])) {
                k[(size_t)n * (size_t)d + (size_t)rng_int(0, d - 1)] = NAN;
                nan_keys++;
            }
    int64_t edges[40];
    const int B = make_edges(nk + 6, nbins, edges);
    const size_t len = (size_t)B * (4 + (size_t)d / 2) + 3 * (size_t)nq + (size_t)d / 2 + 2;
    double *acc[2];
    for (int v = 0; v < 2; v++) {
        acc[v] = calloc(len, sizeof(double));
        double *a = acc[v];
        rb_probe_metrics pm;
        pm_over(&pm, a, B, d, layout, edges, nq, 0);
        pm.rotary_dim = rot;
        if (np == 0)
            pm.rho_sum = NULL;
        pm.n_needles = nn;
        pm.needle_key_pos = nkey; /* positions equal indices here */
        pm.needle_row = nrow;
        pm.needle_s = ns;
        pm.needle_above = a + len - 2;
        for (int64_t m = 0; m < nq; m++)
            pm.row_min_s[m] = INFINITY;
        if (v == 1)
            setenv("ROPEBENCH_ISA", "ref", 1);
        char err[256] = "";
        int r = rb_probe_metrics_accumulate(q, qp, lse, nq, k, kp, nk, scale, &pm, err,
                                            sizeof err);
        unsetenv("ROPEBENCH_ISA");
        check(r == RB_OK, "isa case %d: returned %d (%s)", ci, r, err);
    }
    size_t at = len; /* the first accumulator whose bits differ (two NaNs are equal) */
    for (size_t i = 0; i < len && at == len; i++)
        if (memcmp(&acc[0][i], &acc[1][i], sizeof(double)) &&
            !(isnan(acc[0][i]) && isnan(acc[1][i])))
            at = i;
    check(at == len,
          "isa case %d: d=%d rot=%d nq=%lld nk=%lld %s scale=%g nan_keys=%lld: default and "
          "ROPEBENCH_ISA=ref differ at accumulator %zu of %zu (%.17g against %.17g)",
          ci, d, rot, (long long)nq, (long long)nk, layout == RB_LAYOUT_GPTJ ? "gptj" : "neox",
          scale, (long long)nan_keys, at, len, at < len ? acc[0][at] : 0.0, at < len ? acc[1][at] : 0.0);
    free(acc[0]); free(acc[1]); free(q); free(k); free(qp); free(kp); free(lse);
}

/* Bad inputs are refused with a message, nothing is touched. */
static void metrics_errors(void)
{
    double acc[8] = {0};
    int64_t edges[3] = {0, 1, 4};
    float q[8] = {0}, k[8] = {0};
    int64_t pos[1] = {3};
    double lse[1] = {0};
    rb_probe_metrics pm = {0};
    pm.d = 8;
    pm.rotary_dim = 9;
    pm.nbins = 2;
    pm.edges = edges;
    pm.count = pm.sum_s = pm.sum_s2 = acc;
    pm.row_min_s = pm.row_max_abs_s = pm.row_count = acc;
    char err[256] = "";
    int r = rb_probe_metrics_accumulate(q, pos, lse, 1, k, pos, 1, 1.0, &pm, err, sizeof err);
    check(r == RB_EINVAL && strstr(err, "rotary_dim"), "odd rotary_dim: %d (%s)", r, err);
    pm.rotary_dim = 8;
    int64_t nr = 5, nkp = 3;
    double ns = 0, na = 0;
    pm.n_needles = 1;
    pm.needle_row = &nr;
    pm.needle_key_pos = &nkp;
    pm.needle_s = &ns;
    pm.needle_above = &na;
    r = rb_probe_metrics_accumulate(q, pos, lse, 1, k, pos, 1, 1.0, &pm, err, sizeof err);
    check(r == RB_EINVAL && strstr(err, "needle"), "needle row out of range: %d (%s)", r, err);
    pm.n_needles = 0;
    pm.count = NULL;
    r = rb_probe_metrics_accumulate(q, pos, lse, 1, k, pos, 1, 1.0, &pm, err, sizeof err);
    check(r == RB_EINVAL, "count NULL: %d (%s)", r, err);
    r = rb_probe_metrics_accumulate(q, pos, lse, 1, k, pos, 1, 1.0, NULL, err, sizeof err);
    check(r == RB_EINVAL, "no struct: %d", r);
}

/* fp32-phase RoPE: against a complex-float rotation and pass-through. */
static void fp32_rotation_case(int ci)
{
    const int d = 2 * (int)rng_int(2, 64);
    const int rot = rng_unit() < 0.5 ? d : 2 * (int)rng_int(1, d / 2);
    const rb_rope_layout layout = rng_unit() < 0.5 ? RB_LAYOUT_NEOX : RB_LAYOUT_GPTJ;
    const double af = rng_unit() < 0.5 ? 1.0 : 0.5 + rng_unit();
    const int64_t n = rng_int(1, 8);
    const size_t stride = (size_t)d + (size_t)rng_int(0, 3);
    const int half = rot / 2;
    double base = 500.0 + 20000.0 * rng_unit();
    double inv[64];
    for (int j = 0; j < half; j++)
        inv[j] = pow(base, -2.0 * j / rot);
    float *x = malloc(sizeof(float) * n * stride), *y = malloc(sizeof(float) * n * stride);
    int64_t pos[8];
    for (int64_t r = 0; r < n; r++) {
        pos[r] = rng_unit() < 0.5 ? rng_int(-100, 5000) : rng_int(0, 1 << 22);
        for (size_t i = 0; i < stride; i++)
            x[r * stride + i] = (float)rng_normal();
    }
    memcpy(y, x, sizeof(float) * n * stride);
    rb_rope_apply_fp32phase(y, NULL, n, stride, pos, inv, d, rot, layout, af);
    for (int64_t r = 0; r < n; r++) {
        const float *xr = x + r * stride, *yr = y + r * stride;
        for (int j = 0; j < half; j++) {
            int a = layout == RB_LAYOUT_GPTJ ? 2 * j : j;
            int b = layout == RB_LAYOUT_GPTJ ? 2 * j + 1 : j + half;
            float fp = (float)pos[r], fi = (float)inv[j];
            float ang = fp * fi;
            float complex z = CMPLXF(xr[a], xr[b]) * (CMPLXF(cosf(ang), sinf(ang)) * (float)af);
            float norm = hypotf(xr[a], xr[b]) * (float)af;
            float tol = 4.0f * 0x1.0p-23f * norm + 1e-30f;
            check(fabsf(yr[a] - crealf(z)) <= tol && fabsf(yr[b] - cimagf(z)) <= tol,
                  "fp32 rope case %d: d=%d rot=%d %s af=%g pos=%lld pair %d: (%.9g, %.9g) "
                  "vs (%.9g, %.9g)", ci, d, rot, layout == RB_LAYOUT_GPTJ ? "gptj" : "neox",
                  af, (long long)pos[r], j, yr[a], yr[b], crealf(z), cimagf(z));
        }
        for (int i = rot; i < d; i++)
            check(yr[i] == xr[i], "fp32 rope case %d: pass-through dim %d changed", ci, i);
    }
    free(x);
    free(y);
}

/* Many rows of a wide head (nq * rotary_dim above 4M): the accumulator then flushes its
 * runs per key block instead of keeping a run and a W per row. Its sums must equal those
 * of the per-row path, which it takes for each of a few row subsets whose accumulators
 * are then added up (every field is a sum, a min or a max over rows): within 1e-9
 * relative (the share sums cancel, so their roundings differ by ~1e-12 of them). */
static void many_rows_case(void)
{
    const int d = 256, np = d / 2, nbins = 10;
    const int64_t nq = 16400, nk = 40;
    float *q = malloc(sizeof(float) * nq * d), *k = malloc(sizeof(float) * nk * d);
    int64_t *qp = malloc(sizeof(int64_t) * nq), *kp = malloc(sizeof(int64_t) * nk);
    double *lse = malloc(sizeof(double) * nq);
    for (int64_t i = 0; i < nq * d; i++)
        q[i] = 0.2f * (float)rng_normal();
    for (int64_t i = 0; i < nk * d; i++)
        k[i] = 0.2f * (float)rng_normal();
    for (int64_t n = 0; n < nk; n++)
        kp[n] = 3 * n;
    for (int64_t m = 0; m < nq; m++) {
        qp[m] = rng_int(0, 3 * nk + 4);
        lse[m] = 4.0 + rng_unit();
    }
    int64_t edges[16];
    const int B = make_edges(3 * nk + 5, nbins, edges);
    const size_t len = (size_t)B * (4 + np) + 3 * (size_t)nq + np;
    double *acc[2];
    const int64_t chunk = 4000;
    for (int v = 0; v < 2; v++) {
        double *a = acc[v] = calloc(len, sizeof(double));
        for (int64_t m = 0; m < nq; m++)
            a[B * (4 + np) + m] = INFINITY;
        for (int64_t r0 = 0; r0 < nq; r0 += v ? chunk : nq) {
            const int64_t n = v ? (nq - r0 < chunk ? nq - r0 : chunk) : nq;
            rb_probe_metrics pm;
            pm_over(&pm, a, B, d, RB_LAYOUT_NEOX, edges, nq, r0);
            char err[256] = "";
            const int rc = rb_probe_metrics_accumulate(q + r0 * d, qp + r0, lse + r0, n, k, kp,
                                                       nk, 0.09, &pm, err, sizeof err);
            check(rc == RB_OK, "many rows: accumulate failed: %s", err);
        }
    }
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < len; i++) {
        const double x = acc[0][i], y = acc[1][i];
        const double e = x == y ? 0 : fabs(x - y) / fmax(fmax(fabs(x), fabs(y)), 1e-300);
        if (!(e <= worst) && !isnan(worst)) { /* a NaN on one side is kept */
            worst = e;
            at = i;
        }
    }
    check(worst <= 1e-9, "many rows (%lld x d=%d, per-block runs) vs row subsets (per-row "
          "runs): field %zu differs by %.3g relative (%.17g vs %.17g)", (long long)nq, d, at,
          worst, acc[0][at], acc[1][at]);
    free(acc[0]);
    free(acc[1]);
    free(q);
    free(k);
    free(qp);
    free(kp);
    free(lse);
}

/* The dispatched fp32-phase RoPE (the AVX-512 build where the CPU has it) against the
 * portable one: the same float angles and rotation, cos/sin within 1 ulp of libm's, so
 * every output within 3 float ulps of the pair's norm; most should be bit-identical. */
static void fp32_isa_case(int ci, int64_t *same, int64_t *total)
{
    const int d = 2 * (int)rng_int(1, 128);
    const int rot = rng_unit() < 0.6 ? d : 2 * (int)rng_int(1, d / 2);
    const rb_rope_layout layout = ci % 4 == 3 ? RB_LAYOUT_GPTJ : RB_LAYOUT_NEOX;
    const double af = rng_unit() < 0.5 ? 1.0 : 0.5 + rng_unit();
    const int64_t n = rng_int(1, 40);
    const size_t stride = (size_t)d + (size_t)rng_int(0, 5);
    const double base = ci % 5 == 0 ? 500000.0 : 10000.0 * (0.1 + rng_unit());
    double inv[256];
    for (int j = 0; j < rot / 2; j++)
        inv[j] = pow(base, -2.0 * j / rot) / (ci % 3 == 0 ? 8.0 : 1.0);
    float *x = malloc(sizeof(float) * n * stride), *ya = malloc(sizeof(float) * n * stride),
          *yr = malloc(sizeof(float) * n * stride);
    int64_t *pos = malloc(sizeof(int64_t) * n);
    for (int64_t r = 0; r < n; r++) {
        const double u = rng_unit();
        pos[r] = u < 0.3 ? rng_int(-50, 5000) : u < 0.7 ? rng_int(0, 1 << 24)
                                                         : rng_int(0, (int64_t)1 << 33);
        for (size_t i = 0; i < stride; i++)
            x[r * stride + i] = (float)rng_normal();
    }
    memcpy(ya, x, sizeof(float) * n * stride);
    memcpy(yr, x, sizeof(float) * n * stride);
    rb_rope_apply_fp32phase(ya, NULL, n, stride, pos, inv, d, rot, layout, af);
    rb_rope_apply_fp32phase_ref(yr, yr, n, stride, pos, inv, d, rot, layout, af);
    /* out of place, both builds: bit for bit the in-place rows over the first d floats
     * of a row, the source untouched, the floats past d not written */
    float *xs = malloc(sizeof(float) * n * stride), *za = malloc(sizeof(float) * n * stride),
          *zr = malloc(sizeof(float) * n * stride);
    memcpy(xs, x, sizeof(float) * n * stride);
    for (size_t i = 0; i < (size_t)n * stride; i++)
        za[i] = zr[i] = -7.0f;
    rb_rope_apply_fp32phase(za, xs, n, stride, pos, inv, d, rot, layout, af);
    rb_rope_apply_fp32phase_ref(zr, xs, n, stride, pos, inv, d, rot, layout, af);
    for (size_t i = 0; i < (size_t)n * stride; i++) {
        const int past = (int)(i % stride) >= d;
        check(memcmp(&xs[i], &x[i], sizeof(float)) == 0 &&
                  (past ? za[i] == -7.0f && zr[i] == -7.0f
                        : memcmp(&za[i], &ya[i], sizeof(float)) == 0 &&
                              memcmp(&zr[i], &yr[i], sizeof(float)) == 0),
              "fp32 rope out of place, case %d: d=%d rot=%d %s row %zu dim %zu: dispatched "
              "%.9g ref %.9g, in place %.9g / %.9g, source %s", ci, d, rot,
              layout == RB_LAYOUT_GPTJ ? "gptj" : "neox", i / stride, i % stride, za[i], zr[i],
              ya[i], yr[i], memcmp(&xs[i], &x[i], sizeof(float)) ? "changed" : "kept");
    }
    free(xs);
    free(za);
    free(zr);
    for (int64_t r = 0; r < n; r++)
        for (int j = 0; j < rot / 2; j++) {
            const int a = layout == RB_LAYOUT_GPTJ ? 2 * j : j;
            const int b = layout == RB_LAYOUT_GPTJ ? 2 * j + 1 : j + rot / 2;
            const float *xr = x + r * stride;
            const float tol = 3.0f * 0x1.0p-23f * (fabsf(xr[a]) + fabsf(xr[b])) * (float)af;
            const float *p = ya + r * stride, *q = yr + r * stride;
            check(fabsf(p[a] - q[a]) <= tol && fabsf(p[b] - q[b]) <= tol,
                  "fp32 rope dispatched vs ref, case %d: d=%d rot=%d %s pos=%lld pair %d: "
                  "(%.9g, %.9g) vs (%.9g, %.9g)", ci, d, rot,
                  layout == RB_LAYOUT_GPTJ ? "gptj" : "neox", (long long)pos[r], j, p[a], p[b],
                  q[a], q[b]);
            *same += p[a] == q[a] && p[b] == q[b];
            *total += 1;
        }
    for (int64_t r = 0; r < n; r++)
        for (size_t i = (size_t)rot; i < stride; i++)
            check(ya[r * stride + i] == x[r * stride + i],
                  "fp32 rope dispatched, case %d: dim %zu past rotary_dim changed", ci, i);
    free(x);
    free(ya);
    free(yr);
    free(pos);
}

/* Phase error of fp32 phases vs rb_rope_phase, base 10000, 64 pairs, by position. */
static void fp32_phase_error(void)
{
    const int half = 64;
    double inv[64];
    for (int j = 0; j < half; j++)
        inv[j] = pow(10000.0, -2.0 * j / 128.0);
    const int64_t P[] = {10, 100, 1000, 10000, 100000, 1000000, 4000000};
    double prev = 0;
    double at1m = 0;
    for (size_t pi = 0; pi < sizeof P / sizeof P[0]; pi++) {
        /* worst over 64 positions near P[pi] */
        double worst = 0;
        for (int64_t dp = 0; dp < 64; dp++) {
            const int64_t pos = P[pi] + dp;
            float row[128];
            for (int j = 0; j < half; j++) {
                row[j] = 1.0f;
                row[j + half] = 0.0f;
            }
            rb_rope_apply_fp32phase(row, row, 1, 128, &pos, inv, 128, 128, RB_LAYOUT_NEOX, 1.0);
            for (int j = 0; j < half; j++) {
                double got = atan2(row[j + half], row[j]);
                double e = got - rb_rope_phase(pos, inv[j]);
                e -= 2 * M_PI * nearbyint(e / (2 * M_PI));
                double bound = 2.5 * 0x1.0p-24 * (double)pos * inv[j] + 1e-6;
                check(fabs(e) <= bound, "fp32 phase: pos=%lld pair %d err %.3g > bound %.3g",
                      (long long)pos, j, e, bound);
                if (fabs(e) > worst)
                    worst = fabs(e);
            }
        }
        printf("fp32 phase error, positions %lld..%lld, 64 pairs base 1e4: max %.3g rad\n",
               (long long)P[pi], (long long)(P[pi] + 63), worst);
        if (P[pi] == 1000000)
            at1m = worst;
        if (P[pi] >= 1000)
            check(worst >= 0.5 * prev, "fp32 phase error does not grow: %.3g at %lld after %.3g",
                  worst, (long long)P[pi], prev);
        if (P[pi] <= 100)
            check(worst < 3e-5, "fp32 phase error at %lld: %.3g (expected < 3e-5)",
                  (long long)P[pi], worst);
        prev = worst;
    }
    check(at1m > 1e-3 && at1m < 0.2, "fp32 phase error at 1M: %.3g (expected ~1e-2..1e-1)",
          at1m);
}

int main(void)
{
    for (int ci = 0; ci < 300; ci++)
        metrics_case(ci);
    for (int ci = 0; ci < 60; ci++)
        isa_identity_case(ci);
    metrics_errors();
    many_rows_case();
    for (int ci = 0; ci < 200; ci++)
        fp32_rotation_case(ci);
    int64_t same = 0, total = 0;
    for (int ci = 0; ci < 400; ci++)
        fp32_isa_case(ci, &same, &total);
    printf("fp32-phase RoPE, %s build vs portable: %lld of %lld pairs bit-identical\n",
           rb_kernels_helpers_avx512() ? "AVX-512" : "portable", (long long)same,
           (long long)total);
    fp32_phase_error();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
