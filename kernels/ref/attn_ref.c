/* attn_ref.c — the portable reference attention tile and the online row state
 * (m, l, u, acc): init, log-sum-exp merge with the -inf guard, finalize. */
#include "rb_kernels.h"

#include <math.h>
#include <stdlib.h>

void rb_state_init(double *state, int64_t n_rows, int d)
{
    const size_t stride = RB_STATE_STRIDE(d);
    for (int64_t r = 0; r < n_rows; r++) {
        double *st = state + (size_t)r * stride;
        st[0] = -INFINITY;
        for (size_t j = 1; j < stride; j++)
            st[j] = 0.0;
    }
}

/* Merge one row: a <- merge(a, b). A side with m = -inf is empty and contributes
 * nothing; only finite maxima enter exp() and the (m_i - M) shifts. */
/* u of one side after its shift: alpha (u + l dm), alpha = exp(dm). 0 where alpha
 * underflowed to 0: dm (or l dm) may then be -inf (finite maxima 1e308 apart), and
 * 0 * -inf is NaN where the side's weight is simply gone. */
static inline double u_shift(double alpha, double u, double l, double dm)
{
    return alpha > 0.0 ? alpha * (u + l * dm) : 0.0;
}

static inline void merge_row(double *a, const double *b, int d)
{
    const double mb = b[0];
    if (mb == -INFINITY)
        return;
    const double ma = a[0];
    if (ma == -INFINITY) {
        for (size_t j = 0; j < RB_STATE_STRIDE(d); j++)
            a[j] = b[j];
        return;
    }
    const double M = ma > mb ? ma : mb;
    const double da = ma - M, db = mb - M; /* both <= 0, one is 0 */
    const double alpha = exp(da), beta = exp(db);
    const double la = a[1], lb = b[1];
    a[0] = M;
    a[1] = alpha * la + beta * lb;
    a[2] = u_shift(alpha, a[2], la, da) + u_shift(beta, b[2], lb, db);
    double *acc = a + 3;
    const double *bacc = b + 3;
    for (int j = 0; j < d; j++)
        acc[j] = alpha * acc[j] + beta * bacc[j];
}

void rb_state_merge(double *dst, const double *src, int64_t n_rows, int d)
{
    const size_t stride = RB_STATE_STRIDE(d);
    for (int64_t r = 0; r < n_rows; r++)
        merge_row(dst + (size_t)r * stride, src + (size_t)r * stride, d);
}

void rb_state_merge_f32(double *state, int64_t row0, int64_t nrows, int d, const float *m,
                        const float *l, const float *u, const float *acc,
                        size_t acc_stride)
{
    const size_t stride = RB_STATE_STRIDE(d);
    for (int64_t i = 0; i < nrows; i++) {
        double b[3];
        if (m[i] == -INFINITY)
            continue;
        b[0] = m[i];
        b[1] = l[i];
        b[2] = u[i];
        double *a = state + (size_t)(row0 + i) * stride;
        const float *bacc = acc + (size_t)i * acc_stride;
        const double ma = a[0];
        if (ma == -INFINITY) {
            a[0] = b[0];
            a[1] = b[1];
            a[2] = b[2];
            for (int j = 0; j < d; j++)
                a[3 + j] = bacc[j];
            continue;
        }
        const double M = ma > b[0] ? ma : b[0];
        const double da = ma - M, db = b[0] - M;
        const double alpha = exp(da), beta = exp(db);
        const double la = a[1];
        a[0] = M;
        a[1] = alpha * la + beta * b[1];
        a[2] = u_shift(alpha, a[2], la, da) + u_shift(beta, b[2], b[1], db);
        for (int j = 0; j < d; j++)
            a[3 + j] = alpha * a[3 + j] + beta * (double)bacc[j];
    }
}

void rb_state_finalize(const double *state, int64_t n_rows, int d, double *lse,
                       double *entropy, double *out)
{
    const size_t stride = RB_STATE_STRIDE(d);
    for (int64_t r = 0; r < n_rows; r++) {
        const double *st = state + (size_t)r * stride;
        const double m = st[0], l = st[1], u = st[2];
        /* a row that saw no key; a NaN state (from NaN scores) is not one: its NaN goes
         * on into lse and entropy, where the caller sees it, instead of reading as an
         * empty row (lse -inf, entropy 0) */
        const int empty = m == -INFINITY || l == 0.0;
        if (lse)
            lse[r] = empty ? -INFINITY : m + log(l);
        if (entropy)
            entropy[r] = empty ? 0.0 : log(l) - u / l;
        if (out) {
            double *o = out + (size_t)r * (size_t)d;
            for (int j = 0; j < d; j++)
                o[j] = empty ? 0.0 : st[3 + j] / l;
        }
    }
}

double rb_attn_dot(const float *q, const float *k, int d)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int j = 0;
    for (; j + 4 <= d; j += 4) {
        s0 += (double)q[j] * (double)k[j];
        s1 += (double)q[j + 1] * (double)k[j + 1];
        s2 += (double)q[j + 2] * (double)k[j + 2];
        s3 += (double)q[j + 3] * (double)k[j + 3];
    }
    for (; j < d; j++)
        s0 += (double)q[j] * (double)k[j];
    return (s0 + s1) + (s2 + s3);
}

/* One query row against the tile: scores of its visible keys into s[] (idx[] holds
 * their key indices, or NULL when every key is visible), then one pass that rescales
 * the row state once to the new max and adds every key's exp(s - M) to l, u, acc. */
static void tile_row(const float *qrow, int64_t qpos, const float *k, const float *v,
                     const int64_t *k_pos, int64_t nk, int d, double scale,
                     int all_visible, double *s, int64_t *idx, double *st)
{
    int64_t n = 0;
    double mt = -INFINITY;
    for (int64_t i = 0; i < nk; i++) {
        if (!all_visible && k_pos[i] > qpos)
            continue;
        double sc = scale * rb_attn_dot(qrow, k + (size_t)i * (size_t)d, d);
        s[n] = sc;
        idx[n] = i;
        n++;
        if (sc > mt)
            mt = sc;
    }
    /* no key, or only keys scoring -inf (weight 0, e.g. a -inf in q or k): the state
     * is left as it is, as the fast kernels leave it (-inf - -inf would be NaN) */
    if (n == 0 || mt == -INFINITY)
        return;
    double *acc = st + 3;
    double M = st[0];
    if (M == -INFINITY) {
        M = mt; /* empty state: l = u = acc = 0 already */
    } else if (mt > M) {
        const double dm = M - mt, alpha = exp(dm);
        st[2] = u_shift(alpha, st[2], st[1], dm);
        st[1] *= alpha;
        for (int j = 0; j < d; j++)
            acc[j] *= alpha;
        M = mt;
    }
    st[0] = M;
    double l = st[1], u = st[2];
    for (int64_t t = 0; t < n; t++) {
        const double ds = s[t] - M;
        const double e = exp(ds);
        if (e == 0.0)
            continue; /* weight 0 adds nothing; e * ds would be NaN at s = -inf */
        l += e;
        u += e * ds;
        if (!v)
            continue; /* softmax state only */
        const float *vr = v + (size_t)idx[t] * (size_t)d;
        for (int j = 0; j < d; j++)
            acc[j] += e * (double)vr[j];
    }
    st[1] = l;
    st[2] = u;
}

/* rb_attn_tile_masked: see rb_kernels.h. */
int rb_attn_tile_masked(const int64_t *q_pos, int64_t nq, const int64_t *k_pos, int64_t nk)
{
    if (nq <= 0 || nk <= 0)
        return 0;
    int64_t qmax = q_pos[0], kmin = k_pos[0];
    for (int64_t i = 1; i < nq; i++)
        qmax = q_pos[i] > qmax ? q_pos[i] : qmax;
    for (int64_t i = 1; i < nk; i++)
        kmin = k_pos[i] < kmin ? k_pos[i] : kmin;
    return kmin > qmax;
}

int rb_attn_tile_ref(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                     const float *v, const int64_t *k_pos, int64_t nk, int d,
                     double scale, double *state)
{
    if (nq <= 0 || nk <= 0 || d <= 0)
        return 0;
    int64_t qmin = q_pos[0], qmax = q_pos[0], kmin = k_pos[0], kmax = k_pos[0];
    for (int64_t i = 1; i < nq; i++) {
        if (q_pos[i] < qmin)
            qmin = q_pos[i];
        if (q_pos[i] > qmax)
            qmax = q_pos[i];
    }
    for (int64_t i = 1; i < nk; i++) {
        if (k_pos[i] < kmin)
            kmin = k_pos[i];
        if (k_pos[i] > kmax)
            kmax = k_pos[i];
    }
    if (kmin > qmax)
        return 0; /* fully masked tile */
    const int all_visible = kmax <= qmin;

    int rc = 0;
    double *s = malloc((size_t)nk * sizeof *s);
    int64_t *idx = malloc((size_t)nk * sizeof *idx);
    if (!s || !idx) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    const size_t stride = RB_STATE_STRIDE(d);
    for (int64_t m = 0; m < nq; m++)
        tile_row(q + (size_t)m * (size_t)d, q_pos[m], k, v, k_pos, nk, d, scale,
                 all_visible, s, idx, state + (size_t)m * stride);
cleanup:
    free(s);
    free(idx);
    return rc;
}
