/* metrics.c — the metrics of one case (docs/metrics.md): analytic ones from the
 * schedule, data-driven ones accumulated head by head on every rank, reduced across
 * ranks and written under /cases/<case>/ through the results interface. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_bench.h"
#include "rb_results.h"

struct rb_case_metrics {
    const rb_config *cfg;
    int mode, H, np, d;
    int64_t L, nq;
    const int64_t *qpos;      /* probe/full row positions of this rank (full: local) */
    double scale, attention_factor;
    const double *inv_base, *inv;
    /* distance bins */
    int nbins;
    int64_t *edges;
    /* pair norms for E[rho_j] (full mode): per head [H][np], sums over the rotated q rows
     * and k rows, and the rows counted over all heads */
    double *qnorm_sum, *knorm_sum, nq_rows, nk_rows;
    /* probe metrics (probe mode) */
    int probe;
    rb_probe_metrics pm;
    double *count, *sum_s, *sum_s2, *share_num, *share_den, *rho_sum;
    double *row_min_s, *row_max_abs_s, *row_count; /* [H][nq] */
    double *lse_all;                               /* [H][nq], every rank */
    /* needles [H][n] */
    int n_needles;
    int64_t needle_key[RB_NEEDLE_MAX], needle_query[RB_NEEDLE_MAX], needle_row[RB_NEEDLE_MAX];
    double *needle_s, *needle_above;
    /* precision [H][nq] (root holds entropy_err) */
    int precision;
    double *phase_err, *phase_err_mean, *score_err, *bound_ratio, *entropy_err;
};

static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

static void pair_dims(rb_rope_layout layout, int rd, int j, int *a, int *b)
{
    if (layout == RB_LAYOUT_NEOX) {
        *a = j;
        *b = j + rd / 2;
    } else {
        *a = 2 * j;
        *b = 2 * j + 1;
    }
}

/* Add the pair norms of n rows to sum[np]. */
static void add_pair_norms(const float *x, int64_t n, int d, int rd, rb_rope_layout layout,
                           double *sum)
{
    for (int64_t r = 0; r < n; r++)
        for (int j = 0; j < rd / 2; j++) {
            int a, b;
            pair_dims(layout, rd, j, &a, &b);
            sum[j] += hypot(x[(size_t)r * d + a], x[(size_t)r * d + b]);
        }
}

int rb_metrics_begin(rb_case_metrics **out, const rb_config *c, int mode, int64_t L, int H,
                     int64_t nq, const int64_t *qpos, const rb_dataset *ds,
                     const double *inv_base, const double *inv, double attention_factor,
                     double scale, char *err, size_t errlen)
{
    rb_case_metrics *m = zalloc(1, sizeof *m);
    int rc = RB_OK;
    if (!m) return rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)");
    m->cfg = c;
    m->mode = mode;
    m->L = L;
    m->H = H;
    m->nq = nq;
    m->qpos = qpos;
    m->np = c->rotary_dim / 2;
    m->d = c->head_dim;
    m->scale = scale;
    m->attention_factor = attention_factor;
    m->inv_base = inv_base;
    m->inv = inv;
    m->probe = mode == RB_MODE_PROBE;
    m->edges = zalloc((size_t)c->metrics_distance_bins + 1, sizeof *m->edges);
    m->qnorm_sum = zalloc((size_t)H * (size_t)m->np, sizeof(double));
    m->knorm_sum = zalloc((size_t)H * (size_t)m->np, sizeof(double));
    if (!m->edges || !m->qnorm_sum || !m->knorm_sum) goto nomem;
    m->nbins = rb_metrics_bins(L, c->metrics_distance_bins, m->edges);
    if (m->nbins < 0) {
        rc = rb_errf(err, errlen, RB_EINVAL, "metrics: seq_len %lld too short for distance bins",
                     (long long)L);
        goto cleanup;
    }
    if (m->probe) {
        const size_t nb = (size_t)m->nbins, hq = (size_t)H * (size_t)nq;
        m->count = zalloc(nb, sizeof(double));
        m->sum_s = zalloc(nb, sizeof(double));
        m->sum_s2 = zalloc(nb, sizeof(double));
        m->share_num = zalloc(nb * (size_t)m->np, sizeof(double));
        m->share_den = zalloc(nb, sizeof(double));
        m->rho_sum = zalloc((size_t)m->np, sizeof(double));
        m->row_min_s = zalloc(hq, sizeof(double));
        m->row_max_abs_s = zalloc(hq, sizeof(double));
        m->row_count = zalloc(hq, sizeof(double));
        m->lse_all = zalloc(hq, sizeof(double));
        if (!m->count || !m->sum_s || !m->sum_s2 || !m->share_num || !m->share_den || !m->rho_sum ||
            !m->row_min_s || !m->row_max_abs_s || !m->row_count || !m->lse_all)
            goto nomem;
        for (size_t i = 0; i < hq; i++) m->row_min_s[i] = INFINITY;
        if (ds->kind == RB_DATA_NEEDLE) {
            for (int i = 0; i < ds->n_needles; i++) {
                /* the probe row that looks for needle i (probe rows include them) */
                int64_t row = -1;
                for (int64_t r = 0; r < nq; r++)
                    if (qpos[r] == ds->query_pos[i]) row = r;
                if (row < 0) continue;
                m->needle_key[m->n_needles] = ds->needle_pos[i];
                m->needle_query[m->n_needles] = ds->query_pos[i];
                m->needle_row[m->n_needles] = row;
                m->n_needles++;
            }
            m->needle_s = zalloc((size_t)H * (size_t)m->n_needles, sizeof(double));
            m->needle_above = zalloc((size_t)H * (size_t)m->n_needles, sizeof(double));
            if (!m->needle_s || !m->needle_above) goto nomem;
        }
        m->precision = c->metrics_precision_keys > 0;
        if (m->precision) {
            m->phase_err = zalloc(hq, sizeof(double));
            m->phase_err_mean = zalloc(hq, sizeof(double));
            m->score_err = zalloc(hq, sizeof(double));
            m->bound_ratio = zalloc(hq, sizeof(double));
            m->entropy_err = zalloc(hq, sizeof(double));
            if (!m->phase_err || !m->phase_err_mean || !m->score_err || !m->bound_ratio ||
                !m->entropy_err)
                goto nomem;
        }
    }
    *out = m;
    return RB_OK;
nomem:
    rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)");
cleanup:
    rb_metrics_free(m);
    return rc;
}

/* rb_metrics_max_abs_score: see rb_bench.h. */
double rb_metrics_max_abs_score(const rb_case_metrics *m)
{
    double R = 0;
    if (!m || !m->probe || !m->row_max_abs_s)
        return 0;
    for (size_t i = 0; i < (size_t)m->H * (size_t)m->nq; i++)
        if (isfinite(m->row_max_abs_s[i]) && m->row_max_abs_s[i] > R)
            R = m->row_max_abs_s[i];
    return R;
}

void rb_metrics_free(rb_case_metrics *m)
{
    if (!m) return;
    double *arrays[] = {m->qnorm_sum, m->knorm_sum, m->count,     m->sum_s, m->rho_sum,
                        m->sum_s2,    m->share_num, m->share_den, m->row_min_s,
                        m->row_max_abs_s, m->row_count, m->lse_all, m->needle_s,
                        m->needle_above, m->phase_err, m->phase_err_mean, m->score_err,
                        m->bound_ratio, m->entropy_err};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
    free(m->edges);
    free(m);
}

/* Row-key pairs of the probe accumulation that keys [0, n) of kp (ascending) bring: for
 * each key the rows at or after its position (sq: the row positions, sorted); w[i] gets
 * the running sum up to and including key i. Returns the total. */
static double visible_pairs(const int64_t *sq, int64_t nq, const int64_t *kp, int64_t n,
                            double *w)
{
    double tot = 0.0;
    int64_t lo = 0; /* first row at or after kp[i]: only moves forward */
    for (int64_t i = 0; i < n; i++) {
        while (lo < nq && sq[lo] < kp[i]) lo++;
        tot += (double)(nq - lo);
        w[i] = tot;
    }
    return tot;
}

/* The phase-precision key sample (metric 7): every global position that is a multiple
 * of this stride, ceil(L / precision_keys), so the sample does not depend on the ranks. */
static int64_t precision_stride(int64_t L, int64_t precision_keys)
{
    return (L + precision_keys - 1) / precision_keys;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* rb_probe_metrics_accumulate over the keys of every rank with the work balanced: with
 * log-spaced probe rows the keys at low positions are seen by far more rows, so under
 * zigzag rank 0 holds ~1.7x the row-key pairs of rank 1. Each rank counts the pairs its
 * keys bring; ranks above the mean send their first keys (the lowest positions, the
 * heaviest) to ranks below it (rb_probe_balance_plan, the probe attention's plan, in
 * pairs), and every rank accumulates what it kept and what it received (two calls: the
 * accumulators only add, take minima and maxima, so the result differs from the
 * unbalanced one by summation order alone).
 * Needs the local positions ascending (every shard layout stores them so); otherwise,
 * or on one rank, the keys stay where they are. Collective. */
static int accumulate_balanced(MPI_Comm comm, const float *q, const int64_t *qpos,
                               const double *lse, int64_t nq, const float *k,
                               const int64_t *kpos, int64_t nk, int d, double scale,
                               rb_probe_metrics *pm, char *err, size_t errlen)
{
    int rank = 0, P = 1, rc = RB_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    const size_t nP = (size_t)(P > 0 ? P : 1);
    int64_t *sq = NULL, *cnt = NULL, *rpos = NULL;
    double *W = NULL, *run = NULL, *give = NULL;
    float *rk = NULL;
    int *sc = NULL, *sd = NULL, *rcn = NULL, *rd = NULL;
    int ok = 1, all = 1;
    for (int64_t i = 1; i < nk; i++) ok &= kpos[i - 1] <= kpos[i];
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (P == 1 || !all)
        goto unbalanced;
    sq = malloc((size_t)(nq ? nq : 1) * sizeof *sq);
    W = malloc(nP * sizeof *W);
    give = malloc(nP * sizeof *give);
    run = malloc((size_t)(nk ? nk : 1) * sizeof *run);
    cnt = calloc(nP * nP, sizeof *cnt); /* cnt[s*P + r]: keys s sends r */
    sc = calloc(nP, sizeof *sc);
    sd = calloc(nP, sizeof *sd);
    rcn = calloc(nP, sizeof *rcn);
    rd = calloc(nP, sizeof *rd);
    ok = sq && W && give && run && cnt && sc && sd && rcn && rd;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm); /* every rank, or none, goes on */
    if (!all) goto nomem;
    memcpy(sq, qpos, (size_t)nq * sizeof *sq);
    qsort(sq, (size_t)nq, sizeof *sq, cmp_i64);
    double mine = visible_pairs(sq, nq, kpos, nk, run);
    MPI_Allgather(&mine, 1, MPI_DOUBLE, W, 1, MPI_DOUBLE, comm);
    /* the plan, in pairs: rb_probe_balance_plan, as the probe attention's balance, gives
     * this rank's row (give[r]: pairs it hands rank r); it turns those amounts into
     * key counts, consecutive prefixes of its keys cut where its running sum first
     * reaches the planned total */
    int64_t *mycnt = cnt + (size_t)rank * nP;
    rb_probe_balance_plan(W, P, RB_PROBE_BALANCE_TOL, rank, give);
    double given = 0.0;
    int64_t keys = 0;
    for (int r = 0; r < P; r++) {
        if (!(give[r] > 0.0)) continue;
        given += give[r];
        int64_t upto = keys;
        while (upto < nk && run[upto] < given) upto++;
        mycnt[r] = upto - keys;
        keys = upto;
    }
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, cnt, P, MPI_INT64_T, comm);
    int64_t nsend = 0, nrecv = 0;
    for (int r = 0; r < P; r++) {
        nsend += mycnt[r];
        nrecv += cnt[(size_t)r * nP + (size_t)rank];
    }
    /* MPI counts are ints: a plan whose floats do not fit one is dropped by every rank */
    ok = (nsend + nrecv) * (int64_t)d < INT32_MAX;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (!all) goto unbalanced;
    rk = malloc((size_t)(nrecv ? nrecv : 1) * (size_t)d * sizeof *rk);
    rpos = malloc((size_t)(nrecv ? nrecv : 1) * sizeof *rpos);
    ok = rk && rpos;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    if (!all) goto nomem;
    for (int pass = 0; pass < 2; pass++) { /* rows (d floats each), then positions */
        const int w = pass ? 1 : d;
        int64_t so = 0, ro = 0;
        for (int r = 0; r < P; r++) {
            const int64_t c = cnt[(size_t)r * nP + (size_t)rank];
            sc[r] = (int)(mycnt[r] * w);
            sd[r] = (int)(so * w);
            rcn[r] = (int)(c * w);
            rd[r] = (int)(ro * w);
            so += mycnt[r];
            ro += c;
        }
        if (pass == 0)
            MPI_Alltoallv(k, sc, sd, MPI_FLOAT, rk, rcn, rd, MPI_FLOAT, comm);
        else
            MPI_Alltoallv(kpos, sc, sd, MPI_INT64_T, rpos, rcn, rd, MPI_INT64_T, comm);
    }
    rc = rb_probe_metrics_accumulate(q, qpos, lse, nq, k + (size_t)nsend * (size_t)d,
                                     kpos + nsend, nk - nsend, scale, pm, err, errlen);
    if (rc == RB_OK && nrecv > 0)
        rc = rb_probe_metrics_accumulate(q, qpos, lse, nq, rk, rpos, nrecv, scale, pm, err,
                                         errlen);
    goto cleanup;
unbalanced:
    rc = rb_probe_metrics_accumulate(q, qpos, lse, nq, k, kpos, nk, scale, pm, err, errlen);
    goto cleanup;
nomem:
    rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics work balance, on %s rank)",
                 ok ? "another" : "this");
cleanup:
    free(sq);
    free(W);
    free(give);
    free(run);
    free(cnt);
    free(sc);
    free(sd);
    free(rcn);
    free(rd);
    free(rk);
    free(rpos);
    return rc;
}

/* Contract in rb_bench.h. */
int rb_test_alloc_fail(int rank, const char *where)
{
    const char *af = getenv("ROPEBENCH_TEST_ALLOC_FAIL_RANK");
    char *end = NULL;
    if (!af || !*af) return 0;
    long k = strtol(af, &end, 10);
    if (end == af || k != rank) return 0;
    return *end == ':' ? strcmp(end + 1, where) == 0 : strcmp(where, "case") == 0;
}

int rb_metrics_head(rb_case_metrics *m, MPI_Comm comm, const rb_kernel_ops *ops, int h,
                    const float *qrot, const float *qpre, float *krot,
                    const float *kpre, const float *v, const int64_t *kpos, int64_t nk,
                    const rb_dataset *ds, const double *lse_root, const double *ent_root,
                    double *scratch_state, char *err, size_t errlen)
{
    const rb_config *c = m->cfg;
    const int d = m->d, rd = c->rotary_dim;
    const size_t row = (size_t)d;
    int rc = RB_OK;
    float *kn = NULL, *qf = NULL, *ks = NULL;
    int64_t *ksp = NULL;
    double *lf = NULL, *hf = NULL;

    if (!m->probe) {
        add_pair_norms(qrot, m->nq, d, rd, c->layout, m->qnorm_sum + (size_t)h * m->np);
        add_pair_norms(krot, nk, d, rd, c->layout, m->knorm_sum + (size_t)h * m->np);
        m->nq_rows += (double)m->nq;
        m->nk_rows += (double)nk;
        return RB_OK;
    }

    /* the local steps before the first collective (buffers, the needle keys generated)
     * are agreed on first, and so is each later local step: a rank that failed alone
     * would leave the others waiting in the next collective */
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    double ns[RB_NEEDLE_MAX];
    kn = malloc(row * sizeof *kn);
    if (m->precision) {
        /* handed to the probe kernel below: 64-byte aligned, as rb_kernels_alloc's
         * contract asks of q, k and v (malloc gave offsets of 16-48 bytes, so every
         * row load split two lines; metric 7's attention took the same 0.046-0.056 s
         * either way on the Zen 5 host of 2026-12-04, within its noise) */
        qf = rb_kernels_alloc((size_t)m->nq * row * sizeof *qf);
        lf = malloc((size_t)m->nq * sizeof *lf);
        hf = malloc((size_t)m->nq * sizeof *hf);
    }
    if (!kn || (m->precision && (!qf || !lf || !hf)) || rb_test_alloc_fail(rank, "metrics"))
        rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)");
    /* needle scores from the needle key rows, which any rank can generate */
    for (int i = 0; rc == RB_OK && i < m->n_needles; i++) {
        if ((rc = rb_dataset_fill(ds, RB_TENSOR_K, h, &m->needle_key[i], 1, kn, err, errlen)))
            break;
        ops->rope(kn, 1, row, &m->needle_key[i], m->inv, d, rd, c->layout,
                  m->attention_factor);
        const float *q = qrot + (size_t)m->needle_row[i] * row;
        ns[i] = m->scale * rb_attn_dot(q, kn, d); /* as the accumulator scores keys */
        m->needle_s[(size_t)h * m->n_needles + i] = ns[i];
    }
    if ((rc = rb_mpi_agree_err(comm, rc, err, errlen)))
        goto cleanup;

    /* every rank needs the final lse of the probe rows */
    double *lse_h = m->lse_all + (size_t)h * m->nq;
    if (rank == 0) memcpy(lse_h, lse_root, (size_t)m->nq * sizeof(double));
    MPI_Bcast(lse_h, (int)m->nq, MPI_DOUBLE, 0, comm);

    rb_probe_metrics pm;
    memset(&pm, 0, sizeof pm);
    pm.d = d;
    pm.rotary_dim = rd;
    pm.layout = c->layout;
    pm.nbins = m->nbins;
    pm.edges = m->edges;
    pm.count = m->count;
    pm.sum_s = m->sum_s;
    pm.sum_s2 = m->sum_s2;
    pm.share_num = m->share_num;
    pm.share_den = m->share_den;
    pm.rho_sum = m->rho_sum;
    pm.row_min_s = m->row_min_s + (size_t)h * m->nq;
    pm.row_max_abs_s = m->row_max_abs_s + (size_t)h * m->nq;
    pm.row_count = m->row_count + (size_t)h * m->nq;
    pm.n_needles = m->n_needles;
    pm.needle_key_pos = m->needle_key;
    pm.needle_row = m->needle_row;
    pm.needle_s = ns;
    pm.needle_above = m->needle_above + (size_t)h * m->n_needles;
    rc = accumulate_balanced(comm, qrot, m->qpos, lse_h, m->nq, krot, kpos, nk, d, m->scale,
                             &pm, err, errlen);
    if ((rc = rb_mpi_agree_err(comm, rc, err, errlen)) || !m->precision)
        goto cleanup;

    /* entropy with fp32 phases: the same attention on fp32-phase rotations; the keys go
     * into krot, which the accumulators above no longer need */
    float *kf = krot;
    rb_rope_apply_fp32phase(qf, qpre, m->nq, row, m->qpos, m->inv, d, rd, c->layout,
                            m->attention_factor);
    rb_rope_apply_fp32phase(kf, kpre, nk, row, kpos, m->inv, d, rd, c->layout,
                            m->attention_factor);
    rb_timing t;
    /* only lse and entropy are used: no V where the kernel can go without it (the probe
     * attention agrees on its failures itself) */
    if ((rc = rb_probe_attention(comm, 0, ops, qf, m->qpos, m->nq, kf,
                                 ops->v_optional ? NULL : v, kpos, nk, d, m->scale,
                                 scratch_state, &t, err, errlen)))
        goto cleanup;
    rb_state_finalize(scratch_state, m->nq, d, lf, hf, NULL);
    for (int64_t r = 0; rank == 0 && r < m->nq; r++)
        m->entropy_err[(size_t)h * m->nq + r] = hf[r] - ent_root[r];
    /* score effect of the phases alone, on a sample of keys that does not depend on the
     * ranks: every position that is a multiple of ceil(L / precision_keys); each rank
     * takes the ones it holds, and the per-row maxima reduce with MAX */
    const int64_t stride = precision_stride(m->L, c->metrics_precision_keys);
    int64_t ns_keys = 0;
    for (int64_t i = 0; i < nk; i++) ns_keys += kpos[i] % stride == 0;
    ks = malloc((size_t)(ns_keys ? ns_keys : 1) * row * sizeof *ks);
    ksp = malloc((size_t)(ns_keys ? ns_keys : 1) * sizeof *ksp);
    if (ks && ksp && !rb_test_alloc_fail(rank, "precision")) {
        for (int64_t i = 0, j = 0; i < nk; i++) {
            if (kpos[i] % stride) continue;
            memcpy(ks + (size_t)j * row, kpre + (size_t)i * row, row * sizeof *ks);
            ksp[j++] = kpos[i];
        }
        const size_t off = (size_t)h * m->nq;
        if (rb_metrics_precision(qpre, m->qpos, m->nq, ks, ksp, ns_keys, m->inv, d, rd,
                                 c->layout, m->attention_factor, m->scale,
                                 m->phase_err + off, m->phase_err_mean + off,
                                 m->score_err + off, m->bound_ratio + off) != RB_OK)
            rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics, phase precision)");
    } else {
        rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics, phase precision)");
    }
    rc = rb_mpi_agree_err(comm, rc, err, errlen);
cleanup:
    free(kn);
    free(qf);
    free(ks);
    free(ksp);
    free(lf);
    free(hf);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------- */

#define TRY(call)                                                                       \
    do {                                                                                \
        if ((rc = (call)) != RB_OK) goto cleanup;                                       \
    } while (0)

/* Write a 1-D float64 dataset g/name held by rank 0. */
static int put1(rb_results *res, const char *g, const char *name, const double *v,
                int64_t n, char *err, size_t errlen)
{
    char path[1100];
    int64_t dims[1] = {n};
    snprintf(path, sizeof path, "%s/%s", g, name);
    return rb_results_write_f64(res, path, 1, dims, v, 0, err, errlen);
}

static int put2(rb_results *res, const char *g, const char *name, const double *v,
                int64_t n0, int64_t n1, char *err, size_t errlen)
{
    char path[1100];
    int64_t dims[2] = {n0, n1};
    snprintf(path, sizeof path, "%s/%s", g, name);
    return rb_results_write_f64(res, path, 2, dims, v, 0, err, errlen);
}

/* In-place reduction to rank 0 (root keeps the result). */
static void reduce(double *v, int64_t n, MPI_Op op, MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (n <= 0) return;
    if (rank == 0)
        MPI_Reduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, op, 0, comm);
    else
        MPI_Reduce(v, NULL, (int)n, MPI_DOUBLE, op, 0, comm);
}

/* Bin centre: 0 for [0,1), else the geometric mean of the bin's first and last
 * distance, rounded. */
static double bin_centre(const int64_t *edges, int b)
{
    if (edges[b + 1] - edges[b] <= 1) return (double)edges[b];
    return round(sqrt((double)edges[b] * (double)(edges[b + 1] - 1)));
}

/* Entropy x of a row at position p relative to the uniform distribution over its p + 1
 * visible keys; NaN at p = 0 (one key). */
static double entropy_normalized(double x, int64_t p)
{
    return p > 0 ? x / log((double)p + 1.0) : NAN;
}

void rb_metrics_entropy_normalized(const int64_t *pos, int64_t n, int H, const double *entropy,
                                   double *out)
{
    for (int h = 0; h < H; h++)
        for (int64_t r = 0; r < n; r++)
            out[(size_t)h * n + r] = entropy_normalized(entropy[(size_t)h * n + r], pos[r]);
}

/* The bin [edges[b], edges[b+1]) of n that holds x (the last one for x past it). */
static int bin_of(const int64_t *edges, int n, int64_t x)
{
    int b = 0;
    while (b + 1 < n && edges[b + 1] <= x) b++;
    return b;
}

int rb_metrics_write(rb_case_metrics *m, MPI_Comm comm, rb_results *res, const char *case_g,
                     const int64_t *row_pos, const double *entropy, int64_t n_local,
                     char *err, size_t errlen)
{
    const rb_config *c = m->cfg;
    const int np = m->np, nb = m->nbins, H = m->H;
    int rc = RB_OK, rank;
    char g[512];
    MPI_Comm_rank(comm, &rank);
    double *a = NULL, *b = NULL, *cc = NULL, *dd = NULL, *e = NULL, *f = NULL, *w = NULL;
    double *dist = NULL, *lo = NULL, *hi = NULL, *tmp = NULL;
    int *band = NULL, *ood = NULL;
    int64_t *pe = NULL; /* position bins (entropy and softmax floor by position) */
    double *fb = NULL;  /* softmax floor by position bin: 6 columns [nbp] */
    const size_t nbuf = (size_t)(np > nb ? np : nb) * 4 + 64 + (size_t)H * (size_t)m->nq;
    a = zalloc(nbuf, sizeof *a);
    b = zalloc(nbuf, sizeof *b);
    cc = zalloc(nbuf, sizeof *cc);
    dd = zalloc(nbuf, sizeof *dd);
    e = zalloc(nbuf, sizeof *e);
    f = zalloc(nbuf, sizeof *f);
    w = zalloc((size_t)np, sizeof *w);
    dist = zalloc((size_t)nb, sizeof *dist);
    lo = zalloc((size_t)nb, sizeof *lo);
    hi = zalloc((size_t)nb, sizeof *hi);
    tmp = zalloc((size_t)nb * 3 + 8, sizeof *tmp);
    band = zalloc((size_t)np, sizeof *band);
    ood = zalloc((size_t)np, sizeof *ood);
    pe = zalloc((size_t)c->metrics_position_bins + 1, sizeof *pe);
    fb = zalloc((size_t)c->metrics_position_bins * 6, sizeof *fb);
    /* (a step that can fail on one rank alone is agreed before the next collective:
     * rb_mpi_agree_err) */
    if (!a || !b || !cc || !dd || !e || !f || !w || !dist || !lo || !hi || !tmp || !band ||
        !ood || !pe || !fb || rb_test_alloc_fail(rank, "metrics_write"))
        rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)");
    if ((rc = rb_mpi_agree_err(comm, rc, err, errlen)))
        goto cleanup;
    const int nbp = rb_metrics_bins(m->L, c->metrics_position_bins, pe);
    for (int i = 0; i < nb; i++) {
        dist[i] = bin_centre(m->edges, i);
        lo[i] = (double)m->edges[i];
        hi[i] = (double)m->edges[i + 1];
    }

    /* ---- 1. per-pair phase table */
    snprintf(g, sizeof g, "%s/phase/pairs", case_g);
    int crit = rb_metrics_phase_pairs(m->inv_base, m->inv, np, c->original_ctx, m->L, a, b,
                                      cc, ood);
    for (int j = 0; j < np; j++) {
        dd[j] = 2.0 * M_PI / m->inv[j];
        e[j] = ood[j];
    }
    TRY(put1(res, g, "inv_freq_base", m->inv_base, np, err, errlen));
    TRY(put1(res, g, "inv_freq", m->inv, np, err, errlen));
    TRY(put1(res, g, "wavelength", dd, np, err, errlen));
    TRY(put1(res, g, "trained_span", a, np, err, errlen));
    TRY(put1(res, g, "max_phase", b, np, err, errlen));
    TRY(put1(res, g, "turns", cc, np, err, errlen));
    TRY(put1(res, g, "ood", e, np, err, errlen));
    TRY(rb_results_attr_i64(res, g, "critical_pair", crit, err, errlen));

    /* ---- 2. phase distance to the trained set, weights w_j = E[rho_j]: in probe mode
     * over the case's (probe row, visible key) pairs (rho_sum / pairs); in full mode,
     * where no per-pair pass runs, the mean over heads of each head's E|q_j| E|k_j| over
     * its rows (pair norms; a head's q never meets another head's k) */
    if (m->probe) {
        reduce(m->count, nb, MPI_SUM, comm);
        reduce(m->sum_s, nb, MPI_SUM, comm);
        reduce(m->sum_s2, nb, MPI_SUM, comm);
        reduce(m->rho_sum, np, MPI_SUM, comm);
        double pairs = 0;
        for (int i = 0; i < nb; i++) pairs += m->count[i];
        for (int j = 0; j < np; j++) w[j] = pairs > 0 ? m->rho_sum[j] / pairs : 0;
    } else {
        double qn = m->nq_rows, kn = m->nk_rows; /* rows over all heads */
        MPI_Allreduce(MPI_IN_PLACE, m->knorm_sum, H * np, MPI_DOUBLE, MPI_SUM, comm);
        MPI_Allreduce(MPI_IN_PLACE, m->qnorm_sum, H * np, MPI_DOUBLE, MPI_SUM, comm);
        MPI_Allreduce(MPI_IN_PLACE, &kn, 1, MPI_DOUBLE, MPI_SUM, comm);
        MPI_Allreduce(MPI_IN_PLACE, &qn, 1, MPI_DOUBLE, MPI_SUM, comm);
        qn /= H; /* each head's rows */
        kn /= H;
        for (int j = 0; j < np; j++) {
            double acc = 0;
            for (int hh = 0; hh < H; hh++)
                acc += (qn > 0 ? m->qnorm_sum[(size_t)hh * np + j] / qn : 0) *
                       (kn > 0 ? m->knorm_sum[(size_t)hh * np + j] / kn : 0);
            w[j] = acc / H;
        }
    }
    MPI_Bcast(w, np, MPI_DOUBLE, 0, comm);
    {
        double wsum = 0;
        for (int j = 0; j < np; j++) wsum += w[j];
        if (!(wsum > 0)) { /* the same on every rank: w was broadcast */
            const char *cn = strrchr(case_g, '/');
            rc = rb_errf(err, errlen, RB_EINVAL,
                         "metrics of case %s: q or k is zero in every rotary pair "
                         "(E[|q_j||k_j|] = 0 for all j), so the phase distance D has no "
                         "weights; check the input data (file.path for the file dataset) or "
                         "set metrics.enabled = false", cn ? cn + 1 : case_g);
            goto cleanup;
        }
    }
    rb_metrics_bands(m->inv_base, np, c->original_ctx, c->beta_fast, c->beta_slow, band);
    snprintf(g, sizeof g, "%s/phase/by_distance", case_g);
    /* a = D, tmp = D_band [3][nb], b = ood count, cc = ood energy */
    rc = rb_metrics_phase_distance(m->inv_base, m->inv, w, band, np, c->original_ctx, dist,
                                   nb, a, tmp, b, cc, err, errlen);
    TRY(rb_mpi_agree_err(comm, rc, err, errlen));
    TRY(put1(res, g, "distance", dist, nb, err, errlen));
    TRY(put1(res, g, "D", a, nb, err, errlen));
    TRY(put1(res, g, "D_high", tmp, nb, err, errlen));
    TRY(put1(res, g, "D_mid", tmp + nb, nb, err, errlen));
    TRY(put1(res, g, "D_low", tmp + 2 * nb, nb, err, errlen));
    TRY(put1(res, g, "ood_frac_count", b, nb, err, errlen));
    TRY(put1(res, g, "ood_frac_energy", cc, nb, err, errlen));
    TRY(put1(res, g, "weight", w, np, err, errlen));
    for (int j = 0; j < np; j++) e[j] = band[j];
    TRY(put1(res, g, "band", e, np, err, errlen));
    {
        int64_t dz = -1;
        rc = rb_metrics_D_leaves_zero(m->inv_base, m->inv, w, np, c->original_ctx, m->L - 1,
                                      RB_METRICS_D_ZERO_TOL, &dz, err, errlen);
        TRY(rb_mpi_agree_err(comm, rc, err, errlen));
        TRY(rb_results_attr_i64(res, g, "D_leaves_zero", dz, err, errlen));
    }

    /* ---- 3. entropy by position bins (log-spaced positions) */
    {
        /* per bin: count, sum, sum2, min, max, sum of normalized; sums, minima and
         * maxima to reduce; o: the rows of bins that hold rows */
        double *st = zalloc((size_t)nbp * 6, sizeof *st);
        double *sums = zalloc((size_t)nbp * 4, sizeof *sums);
        double *mins = zalloc((size_t)nbp, sizeof *mins), *maxs = zalloc((size_t)nbp, sizeof *maxs);
        double *o[9];
        int oom = !st || !sums || !mins || !maxs;
        for (int k = 0; k < 9; k++) oom |= !(o[k] = zalloc((size_t)nbp, sizeof(double)));
        rc = oom ? rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)") : RB_OK;
        if ((rc = rb_mpi_agree_err(comm, rc, err, errlen))) {
            for (int k = 0; k < 9; k++) free(o[k]);
            free(st); free(sums); free(mins); free(maxs);
            goto cleanup;
        }
        for (int i = 0; i < nbp; i++) {
            st[i * 6 + 3] = INFINITY;
            st[i * 6 + 4] = -INFINITY;
        }
        for (int h = 0; h < H; h++)
            for (int64_t r = 0; r < n_local; r++) {
                const int64_t p = row_pos[r];
                const double x = entropy[(size_t)h * n_local + r];
                double *s = st + bin_of(pe, nbp, p) * 6;
                s[0] += 1;
                s[1] += x;
                s[2] += x * x;
                if (x < s[3]) s[3] = x;
                if (x > s[4]) s[4] = x;
                if (p > 0) s[5] += entropy_normalized(x, p);
            }
        for (int i = 0; i < nbp; i++) {
            sums[i * 4 + 0] = st[i * 6 + 0];
            sums[i * 4 + 1] = st[i * 6 + 1];
            sums[i * 4 + 2] = st[i * 6 + 2];
            sums[i * 4 + 3] = st[i * 6 + 5];
            mins[i] = st[i * 6 + 3];
            maxs[i] = st[i * 6 + 4];
        }
        reduce(sums, (int64_t)nbp * 4, MPI_SUM, comm);
        reduce(mins, nbp, MPI_MIN, comm);
        reduce(maxs, nbp, MPI_MAX, comm);
        /* rows of bins with rows only */
        int nk = 0;
        for (int i = 0; rank == 0 && i < nbp; i++) {
            const double cnt = sums[i * 4];
            if (cnt <= 0) continue;
            const double mean = sums[i * 4 + 1] / cnt;
            /* positions of bin i that had rows: count rows with p >= 1 for normalized */
            o[0][nk] = bin_centre(pe, i);
            o[1][nk] = cnt;
            o[2][nk] = mean;
            o[3][nk] = mins[i];
            o[4][nk] = maxs[i];
            o[5][nk] = sqrt(fmax(0.0, sums[i * 4 + 2] / cnt - mean * mean));
            o[6][nk] = pe[i] == 0 && pe[i + 1] == 1 ? NAN : sums[i * 4 + 3] / cnt;
            o[7][nk] = (double)pe[i];
            o[8][nk] = (double)pe[i + 1];
            nk++;
        }
        MPI_Bcast(&nk, 1, MPI_INT, 0, comm);
        snprintf(g, sizeof g, "%s/entropy/by_position", case_g);
        static const char *names[9] = {"position", "count",           "mean",
                                       "min",      "max",             "std",
                                       "mean_normalized", "bin_start", "bin_end"};
        for (int k = 0; k < 9 && rc == RB_OK; k++) rc = put1(res, g, names[k], o[k], nk, err, errlen);
        for (int k = 0; k < 9; k++) free(o[k]);
        free(st);
        free(sums);
        free(mins);
        free(maxs);
        if (rc) goto cleanup;
    }

    /* ---- 4. score decay by distance: analytic bounds (+ data in probe mode) */
    snprintf(g, sizeof g, "%s/decay/by_distance", case_g);
    rb_metrics_decay_bounds(m->inv, np, dist, nb, a, b);
    TRY(put1(res, g, "distance", dist, nb, err, errlen));
    TRY(put1(res, g, "bin_start", lo, nb, err, errlen));
    TRY(put1(res, g, "bin_end", hi, nb, err, errlen));
    TRY(put1(res, g, "roformer_bound", a, nb, err, errlen));
    TRY(put1(res, g, "B", b, nb, err, errlen));
    TRY(rb_results_attr_i64(res, g, "first_negative_B",
                            rb_metrics_first_negative_B(m->inv, np, m->L - 1), err, errlen));
    if (m->probe) {
        for (int i = 0; i < nb; i++) {
            const double n = m->count[i];
            cc[i] = n > 0 ? m->sum_s[i] / n : NAN;
            /* population std: 0 for a bin of one pair (it was NaN, unlike
             * entropy/by_position's std), NaN for an empty bin */
            dd[i] = n > 0 ? sqrt(fmax(0.0, m->sum_s2[i] / n - cc[i] * cc[i])) : NAN;
        }
        TRY(put1(res, g, "count", m->count, nb, err, errlen));
        TRY(put1(res, g, "mean_score", cc, nb, err, errlen));
        TRY(put1(res, g, "std_score", dd, nb, err, errlen));

        /* ---- 5. per-pair attention share by distance */
        reduce(m->share_num, (int64_t)nb * np, MPI_SUM, comm);
        reduce(m->share_den, nb, MPI_SUM, comm);
        double *share = zalloc((size_t)nb * (size_t)np, sizeof *share);
        rc = share ? RB_OK : rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)");
        if ((rc = rb_mpi_agree_err(comm, rc, err, errlen))) {
            free(share);
            goto cleanup;
        }
        for (int i = 0; i < nb; i++)
            for (int j = 0; j < np; j++)
                share[(size_t)i * np + j] = m->share_den[i] > 0
                                                ? m->share_num[(size_t)i * np + j] / m->share_den[i]
                                                : NAN;
        snprintf(g, sizeof g, "%s/pair_share", case_g);
        rc = put2(res, g, "share", share, nb, np, err, errlen);
        free(share);
        if (rc) goto cleanup;
        TRY(put1(res, g, "distance", dist, nb, err, errlen));
        TRY(put1(res, g, "weight_sum", m->share_den, nb, err, errlen));

        /* ---- 8. softmax floor per probe row (min over heads of the ratio) and per
         * position bin (min over the bin's rows and heads) */
        const int64_t hq = (int64_t)H * m->nq;
        reduce(m->row_min_s, hq, MPI_MIN, comm);
        reduce(m->row_max_abs_s, hq, MPI_MAX, comm);
        reduce(m->row_count, hq, MPI_SUM, comm);
        double *pos = a, *mwn = b, *flo = cc, *rat = dd;
        double *bcnt = fb, *bratio = fb + nbp, *bmwn = fb + 2 * nbp;
        for (int i = 0; i < nbp; i++) bratio[i] = bmwn[i] = INFINITY;
        for (int64_t r = 0; r < m->nq; r++) {
            pos[r] = (double)m->qpos[r];
            mwn[r] = flo[r] = rat[r] = NAN;
            const int bi = bin_of(pe, nbp, m->qpos[r]);
            for (int h = 0; h < H; h++) {
                const size_t i = (size_t)h * m->nq + r;
                const double n = m->row_count[i];
                if (n <= 0) continue;
                /* the ratio in log form: at |s| past ~372 both the weight and the
                 * floor underflow, and x / fl was 0/0 (NaN) or x/0 (inf) where the
                 * ratio itself is finite (>= 1); it overflows only where it truly
                 * exceeds ~1e308 (a floor loose by that much) */
                const double lx = m->row_min_s[i] - m->lse_all[i] + log(n);
                const double x = exp(lx);
                const double fl = exp(-2.0 * m->row_max_abs_s[i]);
                const double ra = exp(lx + 2.0 * m->row_max_abs_s[i]);
                bcnt[bi] += 1;
                bratio[bi] = fmin(bratio[bi], ra);
                bmwn[bi] = fmin(bmwn[bi], x);
                if (isnan(rat[r]) || ra < rat[r]) {
                    rat[r] = ra;
                    mwn[r] = x;
                    flo[r] = fl;
                }
            }
        }
        snprintf(g, sizeof g, "%s/softmax_floor", case_g);
        TRY(put1(res, g, "position", pos, m->nq, err, errlen));
        TRY(put1(res, g, "min_weight_times_n", mwn, m->nq, err, errlen));
        TRY(put1(res, g, "floor", flo, m->nq, err, errlen));
        TRY(put1(res, g, "ratio", rat, m->nq, err, errlen));
        /* the bins that hold rows, compacted in place (k <= i): position, count,
         * min_ratio, min_weight_times_n, bin_start, bin_end */
        double *bpos = fb + 3 * nbp, *bst = fb + 4 * nbp, *ben = fb + 5 * nbp;
        int nfb = 0;
        for (int i = 0; rank == 0 && i < nbp; i++) {
            if (bcnt[i] <= 0) continue;
            bpos[nfb] = bin_centre(pe, i);
            bcnt[nfb] = bcnt[i];
            bratio[nfb] = bratio[i];
            bmwn[nfb] = bmwn[i];
            bst[nfb] = (double)pe[i];
            ben[nfb] = (double)pe[i + 1];
            nfb++;
        }
        MPI_Bcast(&nfb, 1, MPI_INT, 0, comm);
        snprintf(g, sizeof g, "%s/softmax_floor_by_position", case_g);
        TRY(put1(res, g, "position", bpos, nfb, err, errlen));
        TRY(put1(res, g, "bin_start", bst, nfb, err, errlen));
        TRY(put1(res, g, "bin_end", ben, nfb, err, errlen));
        TRY(put1(res, g, "count", bcnt, nfb, err, errlen));
        TRY(put1(res, g, "min_ratio", bratio, nfb, err, errlen));
        TRY(put1(res, g, "min_weight_times_n", bmwn, nfb, err, errlen));

        /* ---- 6. needles */
        if (m->n_needles > 0) {
            const int nn = m->n_needles;
            reduce(m->needle_above, (int64_t)H * nn, MPI_SUM, comm);
            enum { NCOL = 10 };
            double *cols[NCOL];
            int oom = 0;
            for (int k = 0; k < NCOL; k++) oom |= !(cols[k] = zalloc((size_t)H * nn, sizeof(double)));
            rc = oom ? rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)") : RB_OK;
            if ((rc = rb_mpi_agree_err(comm, rc, err, errlen))) {
                for (int k = 0; k < NCOL; k++) free(cols[k]);
                goto cleanup;
            }
            for (int h = 0; h < H; h++)
                for (int i = 0; i < nn; i++) {
                    const size_t k = (size_t)h * nn + i;
                    cols[0][k] = h;
                    cols[1][k] = (double)m->needle_query[i];
                    cols[2][k] = (double)m->needle_key[i];
                    cols[3][k] = (double)(m->needle_query[i] - m->needle_key[i]);
                    cols[4][k] = exp(m->needle_s[k] - m->lse_all[(size_t)h * m->nq + m->needle_row[i]]);
                    cols[5][k] = m->needle_above[k] + 1.0;
                    cols[6][k] = cols[5][k] == 1.0;
                    cols[7][k] = m->needle_s[k];
                }
            /* the rank against the haystack: the query's other needles left out */
            if (rb_metrics_needle_haystack_rank((int64_t)H * nn, cols[0], cols[1], cols[2],
                                                cols[7], cols[5], cols[8]) != RB_OK)
                rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory (metrics)");
            rc = rb_mpi_agree_err(comm, rc, err, errlen);
            for (size_t k = 0; k < (size_t)H * nn; k++) cols[9][k] = cols[8][k] == 1.0;
            snprintf(g, sizeof g, "%s/needles", case_g);
            static const char *names[NCOL] = {"head", "query_pos", "needle_pos", "distance",
                                              "mass", "rank", "hit", "score",
                                              "rank_haystack", "hit_haystack"};
            for (int k = 0; k < NCOL && rc == RB_OK; k++)
                rc = put1(res, g, names[k], cols[k], (int64_t)H * nn, err, errlen);
            for (int k = 0; k < NCOL; k++) free(cols[k]);
            if (rc) goto cleanup;
        }

        /* ---- 7. phase precision per probe row (max over heads; the phase error mean
         * over heads and pairs: H heads of np pairs each, so the mean of the heads'
         * means; the entropy error's mean over heads, signed: the head of largest
         * magnitude flipped between two heads of near-equal and opposite errors as
         * float rounding moved with the rank count; every rank computed the phase errors of every probe row itself, so
         * they need no reduction across ranks) */
        if (m->precision) {
            reduce(m->score_err, hq, MPI_MAX, comm);
            reduce(m->bound_ratio, hq, MPI_MAX, comm);
            double *pe = b, *se = cc, *ee = dd, *br = e, *pm = f;
            for (int64_t r = 0; r < m->nq; r++) {
                pe[r] = se[r] = ee[r] = br[r] = pm[r] = 0;
                for (int h = 0; h < H; h++) {
                    const size_t i = (size_t)h * m->nq + r;
                    pe[r] = fmax(pe[r], m->phase_err[i]);
                    pm[r] += m->phase_err_mean[i] / H;
                    se[r] = fmax(se[r], m->score_err[i]);
                    ee[r] += m->entropy_err[i] / H;
                    br[r] = fmax(br[r], m->bound_ratio[i]);
                }
            }
            snprintf(g, sizeof g, "%s/precision", case_g);
            TRY(put1(res, g, "position", a, m->nq, err, errlen));
            TRY(put1(res, g, "phase_err_max", pe, m->nq, err, errlen));
            TRY(put1(res, g, "phase_err_mean", pm, m->nq, err, errlen));
            TRY(put1(res, g, "score_err_max", se, m->nq, err, errlen));
            TRY(put1(res, g, "entropy_err", ee, m->nq, err, errlen));
            TRY(put1(res, g, "bound_ratio_max", br, m->nq, err, errlen));
            double bmax = 0;
            for (int64_t r = 0; r < m->nq; r++) bmax = fmax(bmax, br[r]);
            MPI_Bcast(&bmax, 1, MPI_DOUBLE, 0, comm);
            TRY(rb_results_attr_f64(res, g, "bound_ratio_max", bmax, err, errlen));
            /* the key sample of score_err_max: global, the same for any rank count */
            const int64_t stride = precision_stride(m->L, c->metrics_precision_keys);
            TRY(rb_results_attr_i64(res, g, "precision_keys", c->metrics_precision_keys, err,
                                    errlen));
            TRY(rb_results_attr_i64(res, g, "key_stride", stride, err, errlen));
            TRY(rb_results_attr_i64(res, g, "sampled_keys", (m->L - 1) / stride + 1, err,
                                    errlen));
        }
    }
cleanup:
    free(a);
    free(b);
    free(cc);
    free(dd);
    free(e);
    free(f);
    free(w);
    free(dist);
    free(lo);
    free(hi);
    free(tmp);
    free(band);
    free(ood);
    free(pe);
    free(fb);
    return rc;
}
