/* test_attn_ref.c — rb_attn_tile_ref and the row-state merge against a plain
 * double-precision softmax computed directly, on random shapes and positions.
 *
 * Error metric. For each query row the direct reference computes, over its visible
 * keys only, s_n = scale * sum_j q_j k_j (double, sequential), M = max s,
 * Z = sum exp(s - M), lse = M + log Z, p_n = exp(s_n - M) / Z,
 * H = -sum p log p (terms with p == 0 skipped), out = sum p v.
 * The tile forms the same scores in another summation order, so each score may
 * differ by about d * eps * A where A = max_n scale * sum_j |q_j k_j| (the row's
 * "score magnitude"). Let su = DBL_EPSILON * (1 + A) (one score ulp) and
 * W = 1 + (max s - min s) over the visible keys. Tolerances per row:
 *   |lse_tile - lse_direct|       <= 16 * d' * su            (d' = max(d, 8))
 *   |H_tile - H_direct|           <= 64 * d' * su * W
 *   |out_tile - out_direct|_inf   <= 16 * d' * su * W * max|v|
 * (30000 random cases used at most 1.5%, 12% and 0.15% of these tolerances.)
 * A row with no visible key must be exactly the empty state (m = -inf, l = u = 0,
 * acc = 0) and finalize to lse = -inf, H = 0, out = 0; no NaN may appear anywhere.
 * The largest errors seen, in units of the tolerance and absolute, are printed.
 * Also here: kernel dispatch (rb_kernels_select picks this tile; cpuid flags agree
 * with /proc/cpuinfo where it exists). */
#include "rb_kernels.h"
#include "rb_test.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* uniform integer in [0, n) */
static int rng_below(int n) { return (int)rng_int(0, n - 1); }

enum { REG_NORMAL, REG_OFFSET_POS, REG_OFFSET_NEG, REG_SPREAD, REG_EQUAL, REG_COUNT };
static const char *reg_name[] = {"normal", "offset+1e4", "offset-1e4", "spread1e4",
                                 "equal"};
enum { POS_RANDOM, POS_VISIBLE, POS_MASKED, POS_NOKEY_ROWS, POS_DUP, POS_COUNT };
static const char *pos_name[] = {"random", "fully-visible", "fully-masked",
                                 "rows-without-keys", "duplicates"};

typedef struct {
    int id, d, nq, nk, reg, posmode;
    uint64_t seed;
    double scale;
    float *q, *k, *v;
    int64_t *q_pos, *k_pos;
    /* direct reference per row */
    double *lse, *H, *out, *A, *W, *vmax;
    int *nvis;
} tcase;

static char case_desc[256];
static const char *describe(const tcase *c)
{
    snprintf(case_desc, sizeof case_desc,
             "case %d seed %llu d %d nq %d nk %d logits %s positions %s scale %.6g",
             c->id, (unsigned long long)c->seed, c->d, c->nq, c->nk, reg_name[c->reg],
             pos_name[c->posmode], c->scale);
    return case_desc;
}

static double worst_ratio[3], worst_abs[3]; /* lse, H, out */

static void direct_reference(tcase *c)
{
    const int d = c->d;
    double *s = malloc((size_t)c->nk * sizeof *s);
    for (int m = 0; m < c->nq; m++) {
        const float *q = c->q + (size_t)m * d;
        int n = 0;
        double M = -INFINITY, mn = INFINITY, A = 0;
        for (int i = 0; i < c->nk; i++) {
            s[i] = NAN;
            if (c->k_pos[i] > c->q_pos[m])
                continue;
            const float *k = c->k + (size_t)i * d;
            double acc = 0, aabs = 0;
            for (int j = 0; j < d; j++) {
                acc += (double)q[j] * (double)k[j];
                aabs += fabs((double)q[j] * (double)k[j]);
            }
            s[i] = c->scale * acc;
            A = fmax(A, fabs(c->scale) * aabs);
            M = fmax(M, s[i]);
            mn = fmin(mn, s[i]);
            n++;
        }
        c->nvis[m] = n;
        double *o = c->out + (size_t)m * d;
        for (int j = 0; j < d; j++)
            o[j] = 0;
        c->A[m] = A;
        c->W[m] = n ? 1 + (M - mn) : 1;
        c->vmax[m] = 0;
        if (n == 0) {
            c->lse[m] = -INFINITY;
            c->H[m] = 0;
            continue;
        }
        double Z = 0;
        for (int i = 0; i < c->nk; i++)
            if (!isnan(s[i]))
                Z += exp(s[i] - M);
        c->lse[m] = M + log(Z);
        double H = 0;
        for (int i = 0; i < c->nk; i++) {
            if (isnan(s[i]))
                continue;
            double p = exp(s[i] - M) / Z;
            if (p > 0)
                H -= p * log(p);
            const float *v = c->v + (size_t)i * d;
            for (int j = 0; j < d; j++) {
                o[j] += p * (double)v[j];
                c->vmax[m] = fmax(c->vmax[m], fabs((double)v[j]));
            }
        }
        c->H[m] = H;
    }
    free(s);
}

/* Compare n_rows states (rows r0 .. r0+n_rows of the case) with the direct values. */
static void compare_state(const tcase *c, const double *state, const char *how)
{
    const int d = c->d;
    const size_t stride = RB_STATE_STRIDE(d);
    double *lse = malloc((size_t)c->nq * sizeof *lse);
    double *H = malloc((size_t)c->nq * sizeof *H);
    double *out = malloc((size_t)c->nq * (size_t)d * sizeof *out);
    rb_state_finalize(state, c->nq, d, lse, H, out);
    for (int m = 0; m < c->nq; m++) {
        const double *st = state + (size_t)m * stride;
        int has_nan = 0;
        for (size_t j = 0; j < stride; j++)
            has_nan |= isnan(st[j]);
        has_nan |= isnan(lse[m]) || isnan(H[m]);
        for (int j = 0; j < d; j++)
            has_nan |= isnan(out[(size_t)m * d + j]);
        check(!has_nan, "%s [%s] row %d (q_pos %lld, %d visible keys): NaN in state or "
              "result", describe(c), how, m, (long long)c->q_pos[m], c->nvis[m]);
        if (c->nvis[m] == 0) {
            int empty = st[0] == -INFINITY && st[1] == 0 && st[2] == 0;
            for (int j = 0; j < d; j++)
                empty &= st[3 + j] == 0 && out[(size_t)m * d + j] == 0;
            check(empty && lse[m] == -INFINITY && H[m] == 0,
                  "%s [%s] row %d (q_pos %lld) sees no key: state m=%g l=%g u=%g, "
                  "lse=%g H=%g; want the empty state, lse -inf, H 0, out 0",
                  describe(c), how, m, (long long)c->q_pos[m], st[0], st[1], st[2],
                  lse[m], H[m]);
            continue;
        }
        const double dp = d > 8 ? d : 8;
        const double su = DBL_EPSILON * (1 + c->A[m]);
        const double tl = 16 * dp * su, th = 64 * dp * su * c->W[m],
                     to = 16 * dp * su * c->W[m] * (c->vmax[m] > 0 ? c->vmax[m] : 1);
        double el = fabs(lse[m] - c->lse[m]), eh = fabs(H[m] - c->H[m]), eo = 0;
        for (int j = 0; j < d; j++)
            eo = fmax(eo, fabs(out[(size_t)m * d + j] - c->out[(size_t)m * d + j]));
        double e[3] = {el, eh, eo}, t[3] = {tl, th, to};
        for (int i = 0; i < 3; i++) {
            if (!(e[i] / t[i] <= worst_ratio[i]))
                worst_ratio[i] = e[i] / t[i];
            worst_abs[i] = fmax(worst_abs[i], e[i]);
        }
        check(el <= tl, "%s [%s] row %d (q_pos %lld, %d visible): lse %.17g, direct "
              "%.17g, error %.3g > tol %.3g",
              describe(c), how, m, (long long)c->q_pos[m], c->nvis[m], lse[m],
              c->lse[m], el, tl);
        check(eh <= th, "%s [%s] row %d (q_pos %lld, %d visible): entropy %.17g, "
              "direct %.17g, error %.3g > tol %.3g",
              describe(c), how, m, (long long)c->q_pos[m], c->nvis[m], H[m], c->H[m],
              eh, th);
        check(eo <= to, "%s [%s] row %d (q_pos %lld, %d visible): output max error "
              "%.3g > tol %.3g",
              describe(c), how, m, (long long)c->q_pos[m], c->nvis[m], eo, to);
    }
    free(lse);
    free(H);
    free(out);
}

static void gen_case(tcase *c)
{
    static const int ds[] = {1, 2, 3, 5, 8, 16, 64, 128};
    static const int nqs[] = {1, 1, 2, 3, 7, 16, 33};
    static const int nks[] = {1, 1, 2, 5, 17, 64, 150};
    rng_state = c->seed;
    c->d = ds[rng_below(8)];
    c->nq = nqs[rng_below(7)];
    c->nk = nks[rng_below(7)];
    c->reg = rng_below(REG_COUNT);
    c->posmode = rng_below(POS_COUNT);
    const int d = c->d, nq = c->nq, nk = c->nk;
    c->q = malloc((size_t)nq * d * sizeof(float));
    c->k = malloc((size_t)nk * d * sizeof(float));
    c->v = malloc((size_t)nk * d * sizeof(float));
    c->q_pos = malloc((size_t)nq * sizeof(int64_t));
    c->k_pos = malloc((size_t)nk * sizeof(int64_t));
    c->lse = malloc((size_t)nq * sizeof(double));
    c->H = malloc((size_t)nq * sizeof(double));
    c->A = malloc((size_t)nq * sizeof(double));
    c->W = malloc((size_t)nq * sizeof(double));
    c->vmax = malloc((size_t)nq * sizeof(double));
    c->out = malloc((size_t)nq * d * sizeof(double));
    c->nvis = malloc((size_t)nq * sizeof(int));

    /* values */
    double w[128];
    for (int j = 0; j < d; j++)
        w[j] = rng_normal();
    double wn = 0;
    for (int j = 0; j < d; j++)
        wn += w[j] * w[j];
    c->scale = 1 / sqrt((double)d);
    for (int i = 0; i < nk; i++)
        for (int j = 0; j < d; j++) {
            double kv = rng_normal();
            if (c->reg == REG_OFFSET_POS || c->reg == REG_OFFSET_NEG)
                kv = w[j] + 0.05 * kv;
            if (c->reg == REG_EQUAL)
                kv = w[j];
            c->k[(size_t)i * d + j] = (float)kv;
            c->v[(size_t)i * d + j] = (float)(rng_normal() * 3);
        }
    /* offset regimes: q = a*w + noise with a*|w|^2*scale = +-1e4 */
    double a = 1e4 / (wn * c->scale);
    for (int m = 0; m < nq; m++)
        for (int j = 0; j < d; j++) {
            double qv = rng_normal();
            if (c->reg == REG_OFFSET_POS)
                qv = a * w[j] + qv;
            else if (c->reg == REG_OFFSET_NEG)
                qv = -a * w[j] + qv;
            c->q[(size_t)m * d + j] = (float)qv;
        }
    if (c->reg == REG_SPREAD)
        c->scale = 1e4 / sqrt((double)d);

    /* positions: unsorted, gapped, possibly negative */
    int64_t base = (int64_t)rng_below(3) * 1000000 - 1000;
    for (int i = 0; i < nk; i++)
        c->k_pos[i] = base + rng_below(c->posmode == POS_DUP ? 8 : 1000);
    for (int m = 0; m < nq; m++)
        c->q_pos[m] = base + rng_below(c->posmode == POS_DUP ? 8 : 1000);
    int64_t kmin = c->k_pos[0], kmax = c->k_pos[0];
    for (int i = 1; i < nk; i++) {
        kmin = c->k_pos[i] < kmin ? c->k_pos[i] : kmin;
        kmax = c->k_pos[i] > kmax ? c->k_pos[i] : kmax;
    }
    if (c->posmode == POS_VISIBLE)
        for (int m = 0; m < nq; m++)
            c->q_pos[m] = kmax + rng_below(3) * rng_below(500);
    else if (c->posmode == POS_MASKED)
        for (int m = 0; m < nq; m++)
            c->q_pos[m] = kmin - 1 - rng_below(500);
    else if (c->posmode == POS_NOKEY_ROWS)
        for (int m = 0; m < nq; m += 2)
            c->q_pos[m] = kmin - 1 - rng_below(10);
    direct_reference(c);
}

static void free_case(tcase *c)
{
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->q_pos);
    free(c->k_pos);
    free(c->lse);
    free(c->H);
    free(c->A);
    free(c->W);
    free(c->vmax);
    free(c->out);
    free(c->nvis);
}

/* Keys of piece p: gathered copies of the keys assigned to p. */
typedef struct {
    int n;
    float *k, *v;
    int64_t *pos;
} piece;

static void run_tile(const tcase *c, const float *q, const int64_t *qp, int nq,
                     const piece *pc, double *state, const char *how)
{
    int rc = rb_attn_tile_ref(q, qp, nq, pc->k, pc->v, pc->pos, pc->n, c->d, c->scale,
                              state);
    check(rc == 0, "%s [%s]: rb_attn_tile_ref returned %d", describe(c), how, rc);
}

static void test_case(tcase *c)
{
    const int d = c->d, nq = c->nq, nk = c->nk;
    const size_t stride = RB_STATE_STRIDE(d);
    const size_t ssz = (size_t)nq * stride;
    double *st = malloc(ssz * sizeof *st);
    double *st2 = malloc(ssz * sizeof *st2);
    double *tmp = malloc(ssz * sizeof *tmp);
    piece all = {nk, c->k, c->v, c->k_pos};

    /* 1. one tile over everything */
    rb_state_init(st, nq, d);
    run_tile(c, c->q, c->q_pos, nq, &all, st, "single tile");
    compare_state(c, st, "single tile");

    /* 2. the rows in two blocks (state offsets) */
    int a = nq > 1 ? 1 + rng_below(nq - 1) : nq;
    rb_state_init(st, nq, d);
    run_tile(c, c->q, c->q_pos, a, &all, st, "row block 1");
    if (a < nq)
        run_tile(c, c->q + (size_t)a * d, c->q_pos + a, nq - a, &all, st + a * stride,
                 "row block 2");
    compare_state(c, st, "rows split in two blocks");

    /* 3. keys split in P random pieces */
    int P = 2 + rng_below(4);
    piece pcs[5];
    int *owner = malloc((size_t)nk * sizeof *owner);
    for (int p = 0; p < P; p++) {
        pcs[p].n = 0;
        pcs[p].k = malloc((size_t)nk * d * sizeof(float) + 1);
        pcs[p].v = malloc((size_t)nk * d * sizeof(float) + 1);
        pcs[p].pos = malloc((size_t)nk * sizeof(int64_t) + 1);
    }
    for (int i = 0; i < nk; i++) {
        int p = rng_below(P);
        owner[i] = p;
        piece *pc = &pcs[p];
        memcpy(pc->k + (size_t)pc->n * d, c->k + (size_t)i * d, (size_t)d * sizeof(float));
        memcpy(pc->v + (size_t)pc->n * d, c->v + (size_t)i * d, (size_t)d * sizeof(float));
        pc->pos[pc->n] = c->k_pos[i];
        pc->n++;
    }
    int order[5];
    for (int p = 0; p < P; p++)
        order[p] = p;
    for (int p = P - 1; p > 0; p--) {
        int j = rng_below(p + 1), t = order[p];
        order[p] = order[j];
        order[j] = t;
    }
    char how[96];
    snprintf(how, sizeof how, "%d pieces into one state, order %d%d%d%d%d", P, order[0],
             order[1], P > 2 ? order[2] : 9, P > 3 ? order[3] : 9, P > 4 ? order[4] : 9);
    rb_state_init(st, nq, d);
    for (int p = 0; p < P; p++)
        run_tile(c, c->q, c->q_pos, nq, &pcs[order[p]], st, how);
    compare_state(c, st, how);

    /* each piece in its own state, merged left to right in the shuffled order */
    snprintf(how, sizeof how, "%d pieces merged sequentially", P);
    rb_state_init(st, nq, d);
    for (int p = 0; p < P; p++) {
        rb_state_init(tmp, nq, d);
        run_tile(c, c->q, c->q_pos, nq, &pcs[order[p]], tmp, how);
        rb_state_merge(st, tmp, nq, d);
    }
    compare_state(c, st, how);

    /* tree merge: ((0 1) (2 3)) 4, into the right-hand side */
    snprintf(how, sizeof how, "%d pieces merged as a tree", P);
    double *ps = malloc((size_t)P * ssz * sizeof *ps);
    for (int p = 0; p < P; p++) {
        rb_state_init(ps + p * ssz, nq, d);
        run_tile(c, c->q, c->q_pos, nq, &pcs[p], ps + p * ssz, how);
    }
    for (int step = 1; step < P; step *= 2)
        for (int p = 0; p + step < P; p += 2 * step) {
            /* dst = right, src = left: the other argument order than above */
            rb_state_merge(ps + (p + step) * ssz, ps + p * ssz, nq, d);
            memcpy(ps + p * ssz, ps + (p + step) * ssz, ssz * sizeof *ps);
        }
    compare_state(c, ps, how);

    /* merge is commutative: merge(A, B) ~ merge(B, A), and empty sides are exact */
    memcpy(st, ps + 0 * ssz, ssz * sizeof *st); /* full result */
    rb_state_init(st2, nq, d);
    rb_state_merge(st2, st, nq, d);
    check(memcmp(st2, st, ssz * sizeof *st) == 0,
          "%s: merge(empty, X) is not exactly X", describe(c));
    memcpy(tmp, st, ssz * sizeof *st);
    rb_state_init(st2, nq, d);
    rb_state_merge(tmp, st2, nq, d);
    check(memcmp(tmp, st, ssz * sizeof *st) == 0,
          "%s: merge(X, empty) is not exactly X", describe(c));

    /* a fully masked tile leaves a non-empty state bit-identical */
    {
        int64_t qmax = c->q_pos[0];
        for (int m = 1; m < nq; m++)
            qmax = c->q_pos[m] > qmax ? c->q_pos[m] : qmax;
        int64_t *late = malloc((size_t)nk * sizeof *late);
        for (int i = 0; i < nk; i++)
            late[i] = qmax + 1 + rng_below(100);
        piece lp = {nk, c->k, c->v, late};
        memcpy(tmp, st, ssz * sizeof *st);
        run_tile(c, c->q, c->q_pos, nq, &lp, tmp, "fully masked tile");
        check(memcmp(tmp, st, ssz * sizeof *st) == 0,
              "%s: a fully masked tile changed the state", describe(c));
        free(late);
    }

    /* nq == 0 and nk == 0 are no-ops */
    memcpy(tmp, st, ssz * sizeof *st);
    check(rb_attn_tile_ref(c->q, c->q_pos, 0, c->k, c->v, c->k_pos, nk, d, c->scale,
                           tmp) == 0 &&
              rb_attn_tile_ref(c->q, c->q_pos, nq, c->k, c->v, c->k_pos, 0, d, c->scale,
                               tmp) == 0 &&
              memcmp(tmp, st, ssz * sizeof *st) == 0,
          "%s: nq == 0 / nk == 0 changed the state or failed", describe(c));

    for (int p = 0; p < P; p++) {
        free(pcs[p].k);
        free(pcs[p].v);
        free(pcs[p].pos);
    }
    free(owner);
    free(ps);
    free(st);
    free(st2);
    free(tmp);
}

/* Hand-made states: merge with -inf sides, finalize of empty rows, known values. */
static void test_merge_edges(void)
{
    const int d = 2;
    const size_t S = RB_STATE_STRIDE(d);
    double e[2 * 5], x[2 * 5], y[2 * 5];
    rb_state_init(e, 2, d);
    check(e[0] == -INFINITY && e[1] == 0 && e[2] == 0 && e[3] == 0 && e[4] == 0,
          "rb_state_init: not (m=-inf, 0, 0, 0...)");
    /* empty + empty stays empty, no NaN */
    memcpy(x, e, sizeof x);
    rb_state_merge(x, e, 2, d);
    check(x[0] == -INFINITY && x[1] == 0 && x[2] == 0 && !isnan(x[3]) && x[3] == 0,
          "merge(empty, empty): m=%g l=%g u=%g acc0=%g", x[0], x[1], x[2], x[3]);
    double lse[2], H[2], out[4];
    rb_state_finalize(x, 2, d, lse, H, out);
    check(lse[0] == -INFINITY && H[0] == 0 && out[0] == 0 && out[1] == 0,
          "finalize(empty): lse=%g H=%g out=(%g, %g); want -inf, 0, 0", lse[0], H[0],
          out[0], out[1]);
    rb_state_finalize(x, 2, d, NULL, NULL, NULL); /* NULL outputs are allowed */
    /* one key, score 3, v = (1, -2): l = 1, u = 0, lse = 3, H = 0, out = v */
    double one[5] = {3, 1, 0, 1, -2};
    memcpy(x, e, sizeof x);
    rb_state_merge(x, one, 1, d);
    check(memcmp(x, one, sizeof one) == 0, "merge(empty, one-key state) != that state");
    rb_state_finalize(one, 1, d, lse, H, out);
    check(lse[0] == 3 && H[0] == 0 && out[0] == 1 && out[1] == -2,
          "finalize(one key): lse=%g H=%g out=(%g, %g)", lse[0], H[0], out[0], out[1]);
    /* two keys with scores 0 and log 3 from separate states: p = (1/4, 3/4) */
    double s0[5] = {0, 1, 0, 4, 0}, s1[5] = {log(3.0), 1, 0, 0, 8};
    double lw = log(4.0), Hw = -(0.25 * log(0.25) + 0.75 * log(0.75));
    for (int order = 0; order < 2; order++) {
        memcpy(y, order ? s1 : s0, sizeof s0);
        rb_state_merge(y, order ? s0 : s1, 1, d);
        rb_state_finalize(y, 1, d, lse, H, out);
        check(fabs(lse[0] - lw) < 1e-15 && fabs(H[0] - Hw) < 1e-15 &&
                  fabs(out[0] - 1) < 1e-15 && fabs(out[1] - 6) < 1e-14,
              "merge of scores {0, log 3} (order %d): lse %.17g (want %.17g) H %.17g "
              "(want %.17g) out (%.17g, %.17g) (want 1, 6)",
              order, lse[0], lw, H[0], Hw, out[0], out[1]);
    }
    /* rows are independent: row 1 empty, row 0 not */
    double two[10] = {1, 2, 0.5, 1, 1, -INFINITY, 0, 0, 0, 0};
    memcpy(y, two, sizeof two);
    rb_state_merge(y, e, 2, d);
    check(memcmp(y, two, sizeof two) == 0, "merge(mixed rows, empty) changed a row");
    memcpy(y, e, sizeof y);
    rb_state_merge(y, two, 2, d);
    check(memcmp(y, two, sizeof two) == 0, "merge(empty, mixed rows) != mixed rows");
    /* a zero-row merge touches nothing */
    rb_state_merge(y, e, 0, d);
    (void)S;
    /* extreme logits: states at m = +1e4 and m = -1e4 merge without overflow */
    double hi[5] = {1e4, 1, 0, 1, 1}, lo[5] = {-1e4, 1, 0, 5, 5};
    memcpy(y, lo, sizeof lo);
    rb_state_merge(y, hi, 1, d);
    rb_state_finalize(y, 1, d, lse, H, out);
    check(y[0] == 1e4 && y[1] == 1 && fabs(H[0]) < 1e-300 + 1e-15 && out[0] == 1 &&
              !isnan(H[0]),
          "merge(m=-1e4, m=+1e4): m=%g l=%.17g H=%.17g out0=%.17g", y[0], y[1], H[0],
          out[0]);
    /* a NaN state (NaN scores) merged into a finite one stays NaN through finalize: not
     * lse = -inf and entropy 0, which read as a row that saw no key */
    double fin[5] = {2, 1, 0, 1, 1}, bad[5] = {NAN, NAN, NAN, NAN, NAN};
    memcpy(y, fin, sizeof fin);
    rb_state_merge(y, bad, 1, d);
    rb_state_finalize(y, 1, d, lse, H, out);
    check(isnan(lse[0]) && isnan(H[0]), "finalize(NaN state): lse=%g H=%g; want NaN, NaN",
          lse[0], H[0]);
}

/* All keys identical: H = log n exactly up to rounding, out = mean of v. */
static void test_equal_scores(void)
{
    const int d = 4, nk = 37;
    float q[4] = {0.5f, -1, 2, 0.25f}, k[37 * 4], v[37 * 4];
    int64_t qp[1] = {100}, kp[37];
    double mean[4] = {0};
    for (int i = 0; i < nk; i++) {
        for (int j = 0; j < d; j++) {
            k[i * d + j] = (float)(j + 1);
            v[i * d + j] = (float)(i * (j + 1));
            mean[j] += (double)v[i * d + j] / nk;
        }
        kp[i] = 100 - i * 3;
    }
    double st[RB_STATE_STRIDE(4)], lse, H, out[4];
    rb_state_init(st, 1, d);
    rb_attn_tile_ref(q, qp, 1, k, v, kp, nk, d, 0.5, st);
    rb_state_finalize(st, 1, d, &lse, &H, out);
    double s = 0.5 * (0.5 * 1 - 1 * 2 + 2 * 3 + 0.25 * 4);
    check(fabs(H - log(37.0)) < 1e-14 && fabs(lse - (s + log(37.0))) < 1e-13,
          "37 equal scores: H %.17g (want log 37 = %.17g), lse %.17g (want %.17g)", H,
          log(37.0), lse, s + log(37.0));
    for (int j = 0; j < d; j++)
        check(fabs(out[j] - mean[j]) < 1e-12, "37 equal scores: out[%d] %.17g, want mean "
              "%.17g", j, out[j], mean[j]);
}

/* Keys scoring -inf carry weight 0: a row that saw a key scoring 2 and then, in another
 * call, one scoring -inf keeps lse 2, entropy 0, output v (u became 0 * -inf = NaN);
 * a row whose every visible key scores -inf keeps the empty state (m = -inf, l = u =
 * 0; -inf - -inf made l NaN). */
static void test_neg_inf_scores(void)
{
    const int d = 2;
    const float q[2] = {1, 1}, kfin[2] = {1, 1}, kinf[2] = {-INFINITY, 0};
    const float v1[2] = {3, -5}, v2[2] = {7, 11};
    const int64_t qp[1] = {10}, kp[1] = {0};
    double st[RB_STATE_STRIDE(2)], lse, H, out[2];
    rb_state_init(st, 1, d);
    rb_attn_tile_ref(q, qp, 1, kfin, v1, kp, 1, d, 1.0, st);
    rb_attn_tile_ref(q, qp, 1, kinf, v2, kp, 1, d, 1.0, st);
    rb_state_finalize(st, 1, d, &lse, &H, out);
    check(lse == 2.0 && H == 0.0 && out[0] == 3.0 && out[1] == -5.0,
          "a key scoring -inf after one scoring 2: lse %.17g (want 2), H %.17g (want 0), "
          "out %g %g (want 3 -5)", lse, H, out[0], out[1]);
    rb_state_init(st, 1, d);
    rb_attn_tile_ref(q, qp, 1, kinf, v2, kp, 1, d, 1.0, st);
    check(st[0] == -INFINITY && st[1] == 0.0 && st[2] == 0.0 && st[3] == 0.0 && st[4] == 0.0,
          "only a key scoring -inf: state m %g l %g u %g acc %g %g (want -inf 0 0 0 0)",
          st[0], st[1], st[2], st[3], st[4]);
}

/* Line "flags : ..." of /proc/cpuinfo contains the word w; -1 if unreadable. */
static int cpuinfo_has(const char *w)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    static char line[1 << 14];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = 0;
        for (char *t = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \n");
             t; t = strtok(NULL, " \n"))
            if (strcmp(t, w) == 0)
                found = 1;
        break;
    }
    fclose(f);
    return found;
}

static void test_dispatch(void)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    printf("cpu: vendor \"%s\" model \"%s\" avx2 %d fma %d avx512f/bw/vl/dq %d/%d/%d/%d "
           "bf16 %d os_zmm %d\n",
           ci.vendor, ci.model, ci.avx2, ci.fma, ci.avx512f, ci.avx512bw, ci.avx512vl,
           ci.avx512dq, ci.avx512_bf16, ci.os_zmm);
#if defined(__x86_64__)
    check(ci.vendor[0] != 0 && ci.model[0] != 0 && ci.model[0] != ' ',
          "rb_cpu_detect: empty vendor \"%s\" or untrimmed model \"%s\"", ci.vendor,
          ci.model);
    struct {
        const char *flag;
        int got;
    } fl[] = {{"avx2", ci.avx2},         {"fma", ci.fma},
              {"avx512f", ci.avx512f},   {"avx512bw", ci.avx512bw},
              {"avx512vl", ci.avx512vl}, {"avx512dq", ci.avx512dq},
              {"avx512_bf16", ci.avx512_bf16}};
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        int want = cpuinfo_has(fl[i].flag);
        if (want >= 0)
            check(want == fl[i].got, "rb_cpu_detect: %s = %d, /proc/cpuinfo says %d",
                  fl[i].flag, fl[i].got, want);
    }
    if (cpuinfo_has("avx512f") == 1)
        check(ci.os_zmm == 1, "rb_cpu_detect: Linux lists avx512f but os_zmm is 0");
#endif
    rb_kernel_ops ops;
    const char *reason = NULL;
    char err[256] = "";
    /* What is built is known only through dispatch: a fast variant is either selectable
     * here or "not built" (never "not supported" on a CPU that has its ISA). The
     * automatic fp32 choice is avx512 when selectable, else blas, else ref. */
    const int cpu_has_avx512 =
        ci.avx512f && ci.avx512bw && ci.avx512vl && ci.avx512dq && ci.os_zmm;
    const char *fast[] = {"blas", "avx512", "avx512_bf16"};
    const char *fast_dtype[] = {"fp32", "fp32", "bf16"};
    int selectable[3];
    for (int i = 0; i < 3; i++) {
        err[0] = 0;
        memset(&ops, 0, sizeof ops);
        int rc = rb_kernels_select_dtype(fast[i], fast_dtype[i], &ops, &reason, err,
                                         sizeof err);
        selectable[i] = rc == 0;
        char not_built[96];
        snprintf(not_built, sizeof not_built, "ROPEBENCH_ISA=%s: not built", fast[i]);
        const int cpu_ok = i == 0 || (cpu_has_avx512 && (i == 1 || ci.avx512_bf16));
        if (rc == 0)
            check(ops.name && strcmp(ops.name, fast[i]) == 0 && ops.tile &&
                      strcmp(ops.dtype, fast_dtype[i]) == 0 && cpu_ok,
                  "rb_kernels_select(\"%s\"): selected %s tile %p dtype %s on a CPU "
                  "%s",
                  fast[i], ops.name ? ops.name : "(null)", (void *)ops.tile,
                  ops.dtype ? ops.dtype : "(null)", cpu_ok ? "that has it" : "without it");
        else
            check(rc == RB_EUNSUPPORTED && strstr(err, "available: ") &&
                      (strstr(err, not_built) || (!cpu_ok && strstr(err, "not supported"))),
                  "rb_kernels_select(\"%s\"): rc %d, message \"%s\"", fast[i], rc, err);
        printf("dispatch: %s %s\n", fast[i], rc == 0 ? "selectable" : err);
    }
    const char *want_auto = selectable[1] ? "avx512" : selectable[0] ? "blas" : "ref";
    const char *autos[] = {NULL, ""};
    for (int i = 0; i < 2; i++) {
        memset(&ops, 0, sizeof ops);
        int rc = rb_kernels_select(autos[i], &ops, &reason, err, sizeof err);
        check(rc == 0 && ops.name && strcmp(ops.name, want_auto) == 0 && ops.tile &&
                  reason && reason[0],
              "rb_kernels_select(%s): rc %d name %s (want %s) reason %s err \"%s\"",
              autos[i] ? "\"\"" : "NULL", rc, ops.name ? ops.name : "(null)", want_auto,
              reason ? reason : "(null)", err);
    }
    printf("dispatch: automatic choice \"%s\" (%s)\n", ops.name ? ops.name : "?",
           reason ? reason : "?");
    int rc = rb_kernels_select("ref", &ops, &reason, err, sizeof err);
    check(rc == 0 && ops.tile == rb_attn_tile_ref, "rb_kernels_select(\"ref\"): rc %d",
          rc);
    const char *unknown[] = {"sse2", "REF", "ref ", "avx-512"};
    for (int i = 0; i < 4; i++) {
        err[0] = 0;
        rc = rb_kernels_select(unknown[i], &ops, &reason, err, sizeof err);
        check(rc == RB_EUNSUPPORTED && strstr(err, "unknown") &&
                  strstr(err, "ref, blas, avx512, avx512_bf16"),
              "rb_kernels_select(\"%s\"): rc %d, message \"%s\"", unknown[i], rc, err);
    }
    check(rb_kernels_select("sse2", NULL, NULL, NULL, 0) == RB_EUNSUPPORTED &&
              rb_kernels_select(want_auto, NULL, NULL, NULL, 0) == 0,
          "rb_kernels_select with NULL outputs");
}

int main(int argc, char **argv)
{
    test_dispatch();
    int n_cases = argc > 1 ? atoi(argv[1]) : 600;
    test_merge_edges();
    test_equal_scores();
    test_neg_inf_scores();
    for (int i = 0; i < n_cases; i++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.id = i;
        c.seed = 0x5EEDull * 1000003ull + (uint64_t)i;
        gen_case(&c);
        test_case(&c);
        free_case(&c);
    }
    printf("max error / tolerance: lse %.3g, entropy %.3g, output %.3g\n",
           worst_ratio[0], worst_ratio[1], worst_ratio[2]);
    printf("max absolute error   : lse %.3g, entropy %.3g, output %.3g\n", worst_abs[0],
           worst_abs[1], worst_abs[2]);
    printf("test_attn_ref: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
