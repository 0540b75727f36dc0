/* metrics_phase.c — analytic metrics: distance bins, YaRN bands, per-pair phase table, phase distance D(delta) to the trained set, RoFormer and Men et al. decay bounds. */
#include "rb_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const double RB_MP_PI = 0x1.921fb54442d18p+1;
static const double RB_MP_2PI = 0x1.921fb54442d18p+2;
static const double RB_MP_INV_2PI = 0x1.45f306dc9c883p-3;
static const double RB_MP_RND = 0x1.8p52; /* (x + RND) - RND rounds |x| < 2^51 */

/* Phase-distance scan: lanes per pair (t, t+1, .., t+LANES-1 advance together by
 * LANES*theta), trained distances per tile (re-anchored exactly at every tile), and
 * the capacity of the list of near-minimal t that get an exact re-evaluation. */
#define RB_MP_LANES 8
#define RB_MP_TILE 2048
#define RB_MP_CAND 64

/* Largest distance accepted (rb_rope_phase is exact far beyond it). */
static const double RB_MP_MAX_DELTA = 0x1p53;

/* x in [-3pi, 3pi] -> [-pi, pi] by one shift of 2pi. */
static inline double wrap1(double x)
{
    if (x > RB_MP_PI)
        return x - RB_MP_2PI;
    if (x < -RB_MP_PI)
        return x + RB_MP_2PI;
    return x;
}

/* theta * x reduced to [-pi, pi] for a real x >= 0 (< 2^53): the integer part goes
 * through the exact reduction, the fraction's f*theta (f < 1) is added; below 2pi rad
 * (every theta <= 1, base frequencies) one shift wraps it, above (a LongRoPE factor
 * below 1 gives theta > 1) it is reduced whole. */
static double phase_real(double x, double theta)
{
    double n = floor(x);
    double f = x - n; /* exact */
    double p = rb_rope_phase((int64_t)n, theta);
    if (f == 0.0)
        return p;
    const double a = p + f * theta;
    return fabs(a) <= 3.0 * RB_MP_PI ? wrap1(a) : wrap1(remainder(a, RB_MP_2PI));
}

int rb_metrics_bins(int64_t L, int nbins, int64_t *edges)
{
    if (L < 2 || nbins < 2 || !edges)
        return RB_EINVAL;
    const int m = nbins - 1; /* log-spaced bins after the [0, 1) bin */
    const double lg = log((double)L);
    int n = 1;
    edges[0] = 0;
    edges[1] = 1;
    for (int k = 1; k <= m; k++) {
        int64_t e = k == m ? L : (int64_t)floor(exp(lg * k / m) + 0.5);
        if (e > L)
            e = L;
        if (e > edges[n])
            edges[++n] = e;
    }
    return n;
}

void rb_metrics_bands(const double *inv_freq_base, int np, int64_t L0, double beta_fast,
                      double beta_slow, int *band)
{
    if (!inv_freq_base || !band || np <= 0)
        return;
    const double bf = beta_fast > 0 ? beta_fast : 32.0;
    const double bs = beta_slow > 0 ? beta_slow : 1.0;
    const double hi_lim = (double)L0 / bf, lo_lim = (double)L0 / bs;
    for (int j = 0; j < np; j++) {
        double th = inv_freq_base[j];
        double wl = th > 0 ? RB_MP_2PI / th : INFINITY;
        band[j] = wl < hi_lim ? 0 : wl > lo_lim ? 2 : 1;
    }
}

int rb_metrics_phase_pairs(const double *inv_freq_base, const double *inv_freq, int np,
                           int64_t L0, int64_t L, double *trained_span, double *max_phase,
                           double *turns, int *ood)
{
    if (!inv_freq_base || !inv_freq || np < 1 || L0 < 1 || L < 1)
        return RB_EINVAL;
    int critical = np;
    for (int j = 0; j < np; j++) {
        double span = inv_freq_base[j] * (double)(L0 - 1);
        double mx = inv_freq[j] * (double)(L - 1);
        if (trained_span)
            trained_span[j] = span;
        if (max_phase)
            max_phase[j] = mx;
        if (turns)
            turns[j] = mx / RB_MP_2PI;
        if (ood)
            ood[j] = span < RB_MP_2PI && mx > span;
        if (critical == np && span < RB_MP_2PI)
            critical = j;
    }
    return critical;
}

/* ---- phase distance ------------------------------------------------------------- */

/* Shared, read-only description of the pairs for the scan, in band order 0, 1, 2
 * (pairs with w_j = 0 dropped: they add nothing to any sum). */
typedef struct {
    int n;                 /* active pairs */
    int start[4];          /* band b is [start[b], start[b+1]) */
    double W[4];           /* weight sums: W[0] all, W[1 + b] band b */
    const int *idx;        /* original pair index */
    const double *th;      /* theta_j */
    const double *thp;     /* theta'_j */
    const double *w;       /* w_j */
    const double *step;    /* LANES*theta_j reduced to [-pi, pi] */
    const double *lane;    /* [n][LANES]: k*theta_j reduced, k < LANES */
    int64_t L0;
    double eps;            /* bound on the scan's error in one wrapped difference */
} pd_ctx;

/* Near-minimal trained distances of one group, by their approximate sums. */
typedef struct {
    int n;
    double best; /* smallest approximate sum seen */
    int64_t t[RB_MP_CAND];
    double v[RB_MP_CAND];
} pd_cand;

/* Bound on |approx - exact| of a group sum v (weight sum W): each wrapped difference
 * is off by <= eps, so |d~^2 - d^2| <= eps (2|d| + eps), summed with Cauchy-Schwarz,
 * plus the rounding of the sum itself. Tight near v = 0, which keeps D = 0 exact. */
static inline double pd_margin(double v, double W, double eps)
{
    return 2.0 * eps * sqrt(W * v) + W * eps * eps + 1e-14 * v + 1e-300;
}

static void pd_cand_add(pd_cand *c, int64_t t, double v, double W, double eps)
{
    double mv = pd_margin(v, W, eps);
    if (v > c->best + pd_margin(c->best, W, eps) + mv)
        return;
    if (v < c->best) {
        c->best = v;
        double lim = v + pd_margin(v, W, eps);
        int k = 0;
        for (int i = 0; i < c->n; i++)
            if (c->v[i] <= lim + pd_margin(c->v[i], W, eps)) {
                c->t[k] = c->t[i];
                c->v[k++] = c->v[i];
            }
        c->n = k;
    }
    if (c->n < RB_MP_CAND) {
        c->t[c->n] = t;
        c->v[c->n++] = v;
        return;
    }
    int worst = 0; /* full: keep the smallest approximate sums */
    for (int i = 1; i < c->n; i++)
        if (c->v[i] > c->v[worst])
            worst = i;
    if (v < c->v[worst]) {
        c->t[worst] = t;
        c->v[worst] = v;
    }
}

/* Exact weighted sum of squared wrapped differences over pairs [j0, j1) at t. */
static double pd_exact(const pd_ctx *c, const double *a, int j0, int j1, int64_t t)
{
    double s = 0.0;
    for (int j = j0; j < j1; j++) {
        double d = wrap1(a[j] - rb_rope_phase(t, c->th[j]));
        s += c->w[j] * d * d;
    }
    return s;
}

/* D and D_band for one distance. a[n] (scratch): target phases theta'_j delta;
 * V (scratch): RB_MP_TILE wrapped differences of one pair; P (scratch): 3 * RB_MP_TILE
 * partial sums, one row per band. Writes out[4]:
 * D, D_high, D_mid, D_low (NaN for a group with zero weight). */
static void pd_one(const pd_ctx *c, double delta, double *a, double *restrict V,
                   double *restrict P, double *out)
{
    const int n = c->n;
    for (int j = 0; j < n; j++)
        a[j] = phase_real(delta, c->thp[j]);
    pd_cand cand[4];
    for (int q = 0; q < 4; q++) {
        cand[q].n = 0;
        cand[q].best = INFINITY;
    }
    for (int64_t t0 = 0; t0 < c->L0; t0 += RB_MP_TILE) {
        int64_t len = c->L0 - t0 < RB_MP_TILE ? c->L0 - t0 : RB_MP_TILE;
        const int nr = (int)len;
        memset(P, 0, sizeof(double) * 3 * RB_MP_TILE);
        for (int b = 0; b < 3; b++) {
            double *restrict Pb = P + (size_t)b * RB_MP_TILE;
            for (int j = c->start[b]; j < c->start[b + 1]; j++) {
                /* V[i] = wrap(theta'_j delta - theta_j (t0 + i)): 8 exact anchors, then
                 * V[i] = V[i-8] - step (dependence distance 8, so it vectorizes) */
                const double wj = c->w[j], st = c->step[j];
                double d0 = wrap1(a[j] - rb_rope_phase(t0, c->th[j]));
                for (int k = 0; k < RB_MP_LANES; k++) {
                    double v = wrap1(d0 - c->lane[(size_t)j * RB_MP_LANES + k]);
                    V[k] = v;
                    Pb[k] += wj * v * v;
                }
#pragma omp simd safelen(8)
                for (int i = RB_MP_LANES; i < nr; i++) {
                    double v = V[i - RB_MP_LANES] - st; /* in [-2pi, 2pi] */
                    double k = (v * RB_MP_INV_2PI + RB_MP_RND) - RB_MP_RND; /* -1, 0, 1 */
                    v -= k * RB_MP_2PI;
                    V[i] = v;
                    Pb[i] += wj * v * v;
                }
            }
        }
        /* quick reject: no group sum exceeds pi^2 W, so its margin is at most mcap */
        double lim[4];
        for (int q = 0; q < 4; q++)
            lim[q] = cand[q].best + pd_margin(cand[q].best, c->W[q], c->eps) +
                     pd_margin(RB_MP_PI * RB_MP_PI * c->W[q], c->W[q], c->eps);
        for (int64_t i = 0; i < len; i++) {
            double p0 = P[i], p1 = P[RB_MP_TILE + i], p2 = P[2 * RB_MP_TILE + i];
            double v[4] = {p0 + p1 + p2, p0, p1, p2};
            for (int q = 0; q < 4; q++) {
                if (c->W[q] > 0 && v[q] <= lim[q]) {
                    pd_cand_add(&cand[q], t0 + i, v[q], c->W[q], c->eps);
                    lim[q] = cand[q].best + pd_margin(cand[q].best, c->W[q], c->eps) +
                             pd_margin(RB_MP_PI * RB_MP_PI * c->W[q], c->W[q], c->eps);
                }
            }
        }
    }
    for (int q = 0; q < 4; q++) {
        if (!(c->W[q] > 0)) {
            out[q] = NAN;
            continue;
        }
        int j0 = q == 0 ? 0 : c->start[q - 1], j1 = q == 0 ? n : c->start[q];
        double best = INFINITY;
        for (int i = 0; i < cand[q].n; i++) {
            double s = pd_exact(c, a, j0, j1, cand[q].t[i]);
            if (s < best)
                best = s;
        }
        out[q] = sqrt(best / c->W[q]);
    }
}

int rb_metrics_phase_distance(const double *inv_freq_base, const double *inv_freq,
                              const double *w, const int *band, int np, int64_t L0,
                              const double *delta, int nd, double *D, double *D_band,
                              double *ood_count, double *ood_energy, char *err,
                              size_t errlen)
{
    int rc = RB_OK;
    void *mem = NULL;
    double *scratch = NULL;
    if (np < 1)
        return rb_errf(err, errlen, RB_EINVAL, "phase distance: np must be >= 1 (got %d)",
                       np);
    if (L0 < 1)
        return rb_errf(err, errlen, RB_EINVAL,
                       "phase distance: original_ctx must be >= 1 (got %lld)",
                       (long long)L0);
    if (nd < 0)
        return rb_errf(err, errlen, RB_EINVAL, "phase distance: nd must be >= 0 (got %d)",
                       nd);
    if (!inv_freq_base || !inv_freq || !w || (nd > 0 && !delta))
        return rb_errf(err, errlen, RB_EINVAL,
                       "phase distance: inv_freq_base, inv_freq, w and delta are required");
    if (D_band && !band)
        return rb_errf(err, errlen, RB_EINVAL, "phase distance: D_band needs band");
    double W = 0.0;
    for (int j = 0; j < np; j++) {
        if (!(inv_freq_base[j] >= 0 && inv_freq_base[j] <= 1e300) ||
            !(inv_freq[j] >= 0 && inv_freq[j] <= 1e300))
            return rb_errf(err, errlen, RB_EINVAL,
                           "phase distance: inv_freq of pair %d must be finite and >= 0", j);
        if (!(w[j] >= 0 && w[j] <= 1e300))
            return rb_errf(err, errlen, RB_EINVAL,
                           "phase distance: weight of pair %d must be finite and >= 0 "
                           "(got %g)", j, w[j]);
        if (band && (band[j] < 0 || band[j] > 2))
            return rb_errf(err, errlen, RB_EINVAL,
                           "phase distance: band of pair %d must be 0, 1 or 2 (got %d)", j,
                           band[j]);
        W += w[j];
    }
    if (!(W > 0))
        return rb_errf(err, errlen, RB_EINVAL, "phase distance: the weights sum to 0");
    for (int i = 0; i < nd; i++)
        if (!(delta[i] >= 0 && delta[i] <= RB_MP_MAX_DELTA))
            return rb_errf(err, errlen, RB_EINVAL,
                           "phase distance: delta[%d] must be in [0, 2^53] (got %g)", i,
                           delta[i]);
    if (nd == 0)
        return RB_OK;

    /* ood fractions: no minimisation needed */
    for (int i = 0; i < nd; i++) {
        double cnt = 0, en = 0;
        for (int j = 0; j < np; j++) {
            double span = inv_freq_base[j] * (double)(L0 - 1);
            if (span < RB_MP_2PI && inv_freq[j] * delta[i] > span) {
                cnt += 1;
                en += w[j];
            }
        }
        if (ood_count)
            ood_count[i] = cnt / np;
        if (ood_energy)
            ood_energy[i] = en / W;
    }
    if (!D && !D_band)
        return RB_OK;

    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
    if (nt > nd)
        nt = nd;
#endif
    /* one block: idx[np] ints, then th, thp, w, step [np] and lane [np*LANES]
     * doubles; per thread a[np], V[TILE] and P[3*TILE] */
    size_t nctx = (size_t)np * (4 + RB_MP_LANES);
    size_t nthr = (size_t)np + 4 * (size_t)RB_MP_TILE;
    mem = malloc(sizeof(double) * (nctx + (size_t)nt * nthr) + sizeof(int) * (size_t)np);
    if (!mem) {
        rc = rb_errf(err, errlen, RB_ENOMEM, "phase distance: out of memory (np %d)", np);
        goto cleanup;
    }
    double *th = mem, *thp = th + np, *wa = thp + np, *step = wa + np;
    double *lane = step + np;
    scratch = lane + (size_t)np * RB_MP_LANES;
    int *idx = (int *)(scratch + (size_t)nt * nthr);

    pd_ctx c;
    memset(&c, 0, sizeof c);
    c.L0 = L0;
    int n = 0;
    for (int b = 0; b < 3; b++) {
        c.start[b] = n;
        for (int j = 0; j < np; j++) {
            if ((band ? band[j] : 0) != b || w[j] == 0)
                continue;
            idx[n] = j;
            th[n] = inv_freq_base[j];
            thp[n] = inv_freq[j];
            wa[n] = w[j];
            step[n] = rb_rope_phase(RB_MP_LANES, th[n]);
            for (int k = 0; k < RB_MP_LANES; k++)
                lane[(size_t)n * RB_MP_LANES + k] = rb_rope_phase(k, th[n]);
            c.W[0] += w[j];
            c.W[1 + b] += w[j];
            n++;
        }
    }
    c.start[3] = n;
    c.n = n;
    c.idx = idx;
    c.th = th;
    c.thp = thp;
    c.w = wa;
    c.step = step;
    c.lane = lane;
    /* per wrapped difference: ~2.5e-15 at the anchor, ~1.5e-15 per lane step (three
     * roundings of numbers <= 2pi and the rounded step), doubled for safety */
    c.eps = 4e-15 * (RB_MP_TILE / RB_MP_LANES + 2);

#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
    for (int i = 0; i < nd; i++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        double *a = scratch + (size_t)tid * nthr;
        double out[4];
        pd_one(&c, delta[i], a, a + np, a + np + RB_MP_TILE, out);
        if (D)
            D[i] = out[0];
        if (D_band)
            for (int b = 0; b < 3; b++)
                D_band[(size_t)b * nd + i] = out[1 + b];
    }

cleanup:
    free(mem);
    return rc;
}

/* rb_metrics_D_leaves_zero: see rb_kernels.h. */
int rb_metrics_D_leaves_zero(const double *inv_freq_base, const double *inv_freq,
                             const double *w, int np, int64_t L0, int64_t max_delta,
                             double tol, int64_t *first, char *err, size_t errlen)
{
    *first = -1;
    if (!(tol >= 0))
        return rb_errf(err, errlen, RB_EINVAL, "D leaves 0: tol must be >= 0 (got %g)", tol);
    if (max_delta > RB_MP_MAX_DELTA)
        max_delta = RB_MP_MAX_DELTA;
    /* the arguments checked once, by the full function on no distance */
    int rc = rb_metrics_phase_distance(inv_freq_base, inv_freq, w, NULL, np, L0, NULL, 0, NULL,
                                       NULL, NULL, NULL, err, errlen);
    if (rc)
        return rc;
    double W = 0.0;
    int k = -1;
    for (int j = 0; j < np; j++) {
        W += w[j];
        if (k < 0 && w[j] > 0 && inv_freq_base[j] > 0)
            k = j;
    }
    const double lim = tol * tol * W; /* D <= tol  <=>  sum_j w_j diff_j^2 <= lim */
    for (int64_t delta = 1; delta <= max_delta; delta++) {
        int64_t cand[2] = {delta, -1};
        if (k >= 0) {
            const double t = nearbyint((double)delta * (inv_freq[k] / inv_freq_base[k]));
            if (t >= 0 && t < (double)L0 && t != (double)delta)
                cand[1] = (int64_t)t;
        }
        int zero = 0;
        for (int c = 0; c < 2 && !zero; c++) {
            if (cand[c] < 0 || cand[c] >= L0)
                continue;
            double s = 0.0;
            for (int j = 0; j < np; j++) {
                /* t = delta on an unscaled pair: the same phase, difference 0 exactly */
                if (cand[c] == delta && inv_freq[j] == inv_freq_base[j])
                    continue;
                const double d = wrap1(rb_rope_phase(delta, inv_freq[j]) -
                                       rb_rope_phase(cand[c], inv_freq_base[j]));
                s += w[j] * d * d;
            }
            zero = s <= lim;
        }
        if (zero)
            continue;
        const double dd = (double)delta;
        double D;
        rc = rb_metrics_phase_distance(inv_freq_base, inv_freq, w, NULL, np, L0, &dd, 1, &D,
                                       NULL, NULL, NULL, err, errlen);
        if (rc)
            return rc;
        if (D > tol) {
            *first = delta;
            return RB_OK;
        }
    }
    return RB_OK;
}

/* ---- decay bounds --------------------------------------------------------------- */

void rb_metrics_decay_bounds(const double *inv_freq, int np, const double *delta, int nd,
                             double *roformer, double *B)
{
    if (!inv_freq || !delta || np < 1 || nd < 1)
        return;
    for (int i = 0; i < nd; i++) {
        double sr = 0, si = 0, sum_abs = 0, b = 0;
        for (int j = 0; j < np; j++) {
            double ph = phase_real(delta[i], inv_freq[j]);
            double cs = cos(ph), sn = sin(ph);
            sr += cs;
            si += sn;
            sum_abs += hypot(sr, si); /* |S_{j+1}| */
            b += cs;
        }
        if (roformer)
            roformer[i] = sum_abs / np;
        if (B)
            B[i] = b;
    }
}

/* Scan delta = 1, 2, ... with (cos, sin) of every pair advanced by the angle-addition
 * rotation, re-anchored with exact phases every BLOCK distances (drift < 1e-12); a
 * candidate (approximate B below a margin far above that drift) is confirmed with
 * exact phases. */
#define RB_MP_B_BLOCK 1024
#define RB_MP_B_MAXNP 4096

int64_t rb_metrics_first_negative_B(const double *inv_freq, int np, int64_t max_delta)
{
    if (!inv_freq || np < 1 || np > RB_MP_B_MAXNP || max_delta < 1)
        return -1;
    double c[RB_MP_B_MAXNP], s[RB_MP_B_MAXNP], rc_[RB_MP_B_MAXNP], rs[RB_MP_B_MAXNP];
    for (int j = 0; j < np; j++) {
        double ph = rb_rope_phase(1, inv_freq[j]);
        rc_[j] = cos(ph);
        rs[j] = sin(ph);
    }
    const double margin = 1e-9 * np;
    for (int64_t d0 = 1; d0 <= max_delta; d0 += RB_MP_B_BLOCK) {
        for (int j = 0; j < np; j++) {
            double ph = rb_rope_phase(d0, inv_freq[j]);
            c[j] = cos(ph);
            s[j] = sin(ph);
        }
        int64_t d1 = d0 + RB_MP_B_BLOCK - 1 < max_delta ? d0 + RB_MP_B_BLOCK - 1 : max_delta;
        for (int64_t d = d0; d <= d1; d++) {
            double b = 0;
#pragma omp simd reduction(+ : b)
            for (int j = 0; j < np; j++) {
                b += c[j];
                double cn = c[j] * rc_[j] - s[j] * rs[j];
                s[j] = s[j] * rc_[j] + c[j] * rs[j];
                c[j] = cn;
            }
            if (b < margin) {
                double e = 0;
                for (int j = 0; j < np; j++)
                    e += cos(rb_rope_phase(d, inv_freq[j]));
                if (e < 0)
                    return d;
            }
        }
    }
    return -1;
}
