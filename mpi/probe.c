/* probe.c — probe rows: per-rank partial row states combined on a root by MPI_Reduce with a merge MPI_Op. */
#include "rb_mpi.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* Seconds spent inside merge_op since the last reset; rb_probe_attention reports it as
 * merge time (the op runs inside MPI_Reduce on the calling thread). */
static double merge_op_seconds;

/* The MPI_User_function: inout[r] <- merge(inout[r], in[r]) for *len row states; the
 * row width comes from the datatype's size (RB_STATE_STRIDE(d) doubles). The -inf
 * guard for rows that saw no key is rb_state_merge's. */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    double t0 = MPI_Wtime();
    int size = 0;
    MPI_Type_size(*dt, &size);
    int d = size / (int)sizeof(double) - 3;
    if (d > 0 && *len > 0)
        rb_state_merge((double *)inout, (const double *)in, *len, d);
    merge_op_seconds += MPI_Wtime() - t0;
}

/* Contract in rb_mpi.h. Returns RB_EINVAL for d <= 0, RB_EMPI if MPI refuses; on
 * failure nothing is left allocated and *type / *op are MPI_DATATYPE_NULL / MPI_OP_NULL. */
int rb_mpi_merge_create(int d, MPI_Datatype *type, MPI_Op *op)
{
    int rc = RB_OK;
    *type = MPI_DATATYPE_NULL;
    *op = MPI_OP_NULL;
    if (d <= 0 || RB_STATE_STRIDE(d) * sizeof(double) > (size_t)INT_MAX)
        return RB_EINVAL;
    if (MPI_Type_contiguous((int)RB_STATE_STRIDE(d), MPI_DOUBLE, type) != MPI_SUCCESS ||
        MPI_Type_commit(type) != MPI_SUCCESS ||
        MPI_Op_create(merge_op, 1, op) != MPI_SUCCESS) {
        rc = RB_EMPI;
        goto cleanup;
    }
    return RB_OK;

cleanup:
    rb_mpi_merge_free(type, op);
    return rc;
}

/* Free what rb_mpi_merge_create made; safe on NULL handles, leaves them NULL. */
void rb_mpi_merge_free(MPI_Datatype *type, MPI_Op *op)
{
    if (op && *op != MPI_OP_NULL)
        MPI_Op_free(op);
    if (type && *type != MPI_DATATYPE_NULL)
        MPI_Type_free(type);
}

/* rb_probe_balance_plan: contract in rb_mpi.h. */
int rb_probe_balance_plan(const double *cost, int n, double tol, int from, double *give)
{
    if (n <= 0)
        return 0;
    memset(give, 0, (size_t)n * sizeof *give);
    double total = 0.0, most = 0.0;
    for (int i = 0; i < n; i++) {
        total += cost[i];
        most = cost[i] > most ? cost[i] : most;
    }
    if (n < 2 || !(total > 0.0) || from < 0 || from >= n)
        return 0;
    const double mean = total / n, eps = 1e-12 * total;
    if (!(most > mean * (1.0 + tol)))
        return 0;
    int moves = 0, s = -1, r = -1;
    double ex = 0.0, de = 0.0; /* what giver s has left to give, taker r to take */
    for (;;) {
        if (ex <= eps) {
            do
                s++;
            while (s < n && !(cost[s] > mean + eps));
            if (s >= n || s > from)
                break; /* the givers after `from` do not change its row */
            ex = cost[s] - mean;
        }
        if (de <= eps) {
            do
                r++;
            while (r < n && !(cost[r] < mean - eps));
            if (r >= n)
                break;
            de = mean - cost[r];
        }
        const double t = ex < de ? ex : de;
        if (s == from) {
            give[r] += t;
            moves++;
        }
        ex -= t;
        de -= t;
    }
    return moves;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* key_cost: the balance's price of a key at position p: the sorted probe rows qs[0..nq)
 * at or after p, plus RB_PROBE_KEY_COST. *j is a cursor into qs that only moves forward,
 * so ascending positions cost O(nk + nq) in all. */
static double key_cost(const int64_t *qs, int64_t nq, int64_t p, int64_t *j)
{
    while (*j < nq && qs[*j] < p)
        ++*j;
    return (double)(nq - *j) + RB_PROBE_KEY_COST;
}

/* Keys taken from other ranks by probe_balance, and where this rank's own start. */
typedef struct {
    int64_t keep0; /* this rank computes its own keys [keep0, nk) */
    float *k, *v;  /* n keys taken from others (v NULL without v), rank order */
    int64_t *pos;
    int64_t n;
} rb_taken;

static void taken_free(rb_taken *b)
{
    free(b->k);
    free(b->v);
    free(b->pos);
    memset(b, 0, sizeof *b);
}

/* probe_balance: the key exchange of rb_probe_attention (contract there). Every rank
 * learns every rank's cost and whether it can take part; the plan in cost units
 * (rb_probe_balance_plan) becomes, on each giver, consecutive ranges of its
 * lowest-position keys, one per taker in rank order, cut where the running cost comes
 * nearest the planned amount; then MPI_Alltoall of the key counts and MPI_Alltoallv of
 * positions, k and (when every rank has it) v. Anything that makes a rank unable to
 * take part (a setting, unsorted k_pos, an int count that would overflow, memory, v
 * given on some ranks only) makes
 * every rank skip the exchange: *b then holds keep0 = 0 and nothing taken, and the
 * call still succeeds. RB_EMPI (message in err) if MPI fails. Collective. */
static int probe_balance(MPI_Comm comm, int rank, int nranks, const int64_t *q_pos, int64_t nq,
                         const float *k, const float *v, const int64_t *k_pos, int64_t nk,
                         int d, rb_taken *b, char *err, size_t errlen)
{
    int rc = RB_OK, mrc;
    const size_t n = (size_t)nranks;
    int64_t *qs = NULL;
    double *all = NULL, *give = NULL;
    int *cnt = NULL; /* 8 arrays of n: send/recv keys, displs, floats, float displs */
    memset(b, 0, sizeof *b);

    const char *env = getenv("ROPEBENCH_PROBE_BALANCE");
    /* (MPI counts are ints: keys here, floats for the rows that move, checked below
     * against what moves, a few per cent of the keys, not against all of them: that
     * turned the balance off from 16M keys a rank at d = 128) */
    int usable = nq > 0 && !(env && strcmp(env, "0") == 0) && nk <= INT_MAX;
    for (int64_t i = 1; i < nk && usable; i++)
        usable = k_pos[i] >= k_pos[i - 1];
    qs = nq > 0 ? malloc((size_t)nq * sizeof *qs) : NULL;
    all = malloc(n * sizeof *all);
    give = malloc(n * sizeof *give);
    cnt = malloc(8 * n * sizeof *cnt);
    if ((nq > 0 && !qs) || !all || !give || !cnt)
        usable = 0;
    double cost = 0.0;
    if (usable) {
        memcpy(qs, q_pos, (size_t)nq * sizeof *qs);
        qsort(qs, (size_t)nq, sizeof *qs, cmp_i64);
        for (int64_t i = 0, j = 0; i < nk; i++)
            cost += key_cost(qs, nq, k_pos[i], &j);
    }
    /* first whether every rank can take part and whether the ranks with keys all have
     * v or all have none (a rank without keys may pass v NULL either way), then the
     * costs */
    int mine[3] = {usable, nk > 0 ? v != NULL : 1, nk > 0 ? -(v != NULL) : 0};
    int every[3] = {0, 0, 0};
    if ((mrc = MPI_Allreduce(mine, every, 3, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: balance: MPI_Allreduce");
        goto cleanup;
    }
    if (!every[0] || every[1] != -every[2]) /* v on some ranks only: leave it alone */
        goto cleanup;
    const int with_v = every[1];
    if ((mrc = MPI_Allgather(&cost, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: balance: MPI_Allgather");
        goto cleanup;
    }
    /* does anything move at all (the plan's own test, the same on every rank)? */
    double total = 0.0, most = 0.0;
    for (size_t r = 0; r < n; r++) {
        total += all[r];
        most = all[r] > most ? all[r] : most;
    }
    if (!(total > 0.0) || !(most > total / nranks * (1.0 + RB_PROBE_BALANCE_TOL)))
        goto cleanup;
    rb_probe_balance_plan(all, nranks, RB_PROBE_BALANCE_TOL, rank, give); /* my row */

    int *sk = cnt, *rk = cnt + n, *sd = cnt + 2 * n, *rd = cnt + 3 * n;
    int *sf = cnt + 4 * n, *rf = cnt + 5 * n, *sfd = cnt + 6 * n, *rfd = cnt + 7 * n;
    /* whole runs of RB_PROBE_BALANCE_QUANTUM keys: a run is handed on while that
     * brings the running cost nearer the target (cursor j is committed per run) */
    int64_t cur = 0, j = 0;
    double run = 0.0, target = 0.0;
    for (size_t r = 0; r < n; r++) {
        sd[r] = (int)cur;
        target += give[r];
        const int64_t from = cur;
        while (cur < nk) {
            const int64_t e = nk - cur < RB_PROBE_BALANCE_QUANTUM ? nk
                                                                 : cur + RB_PROBE_BALANCE_QUANTUM;
            int64_t jj = j;
            double c = 0.0;
            for (int64_t i = cur; i < e; i++)
                c += key_cost(qs, nq, k_pos[i], &jj);
            if (!(run + 0.5 * c < target))
                break;
            run += c;
            cur = e;
            j = jj;
        }
        sk[r] = (int)(cur - from);
    }
    if ((mrc = MPI_Alltoall(sk, 1, MPI_INT, rk, 1, MPI_INT, comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: balance: MPI_Alltoall");
        goto cleanup;
    }
    int64_t taken = 0;
    for (size_t r = 0; r < n; r++) {
        rd[r] = (int)taken;
        taken += rk[r];
    }
    int ok = (int64_t)d * taken <= INT_MAX && (int64_t)d * cur <= INT_MAX;
    if (ok && taken > 0) {
        /* 64-byte aligned, as the study's own rows: the fp32 kernel reads aligned
         * key and value rows in place */
        b->pos = malloc((size_t)taken * sizeof *b->pos);
        b->k = rb_kernels_alloc((size_t)taken * (size_t)d * sizeof *b->k);
        b->v = with_v ? rb_kernels_alloc((size_t)taken * (size_t)d * sizeof *b->v) : NULL;
        ok = b->pos && b->k && (!with_v || b->v);
    }
    int every_ok = 0;
    if ((mrc = MPI_Allreduce(&ok, &every_ok, 1, MPI_INT, MPI_LAND, comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: balance: MPI_Allreduce");
        goto cleanup;
    }
    if (!every_ok) {
        taken_free(b);
        goto cleanup;
    }
    for (size_t r = 0; r < n; r++) {
        sf[r] = sk[r] * d;
        sfd[r] = sd[r] * d;
        rf[r] = rk[r] * d;
        rfd[r] = rd[r] * d;
    }
    if ((mrc = MPI_Alltoallv(k_pos, sk, sd, MPI_INT64_T, b->pos, rk, rd, MPI_INT64_T, comm)) !=
            MPI_SUCCESS ||
        (mrc = MPI_Alltoallv(k, sf, sfd, MPI_FLOAT, b->k, rf, rfd, MPI_FLOAT, comm)) !=
            MPI_SUCCESS ||
        (with_v &&
         (mrc = MPI_Alltoallv(v, sf, sfd, MPI_FLOAT, b->v, rf, rfd, MPI_FLOAT, comm)) !=
             MPI_SUCCESS)) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: balance: MPI_Alltoallv");
        taken_free(b);
        goto cleanup;
    }
    b->keep0 = cur;
    b->n = taken;

cleanup:
    free(qs);
    free(all);
    free(give);
    free(cnt);
    return rc;
}

/* Contract in rb_mpi.h. Additionally: argument errors on any rank, or ranks passing
 * different nq or a different root, make every rank return RB_EINVAL before any
 * reduction; a tile kernel failure on one rank still takes part in the reduction and
 * then every rank returns that code. Timing: compute = tile kernels, merge = time in
 * the merge op on this rank, comm wait = the key balance (its cost pass and exchange)
 * and the rest of MPI_Reduce. t may be NULL. */
int rb_probe_attention(MPI_Comm comm, int root, const rb_kernel_ops *ops,
                       const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                       const float *v, const int64_t *k_pos, int64_t nk, int d,
                       double scale, double *state, rb_timing *t, char *err,
                       size_t errlen)
{
    double t_start = MPI_Wtime();
    rb_timing tm = {0};
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    rb_taken taken = {0};
    int rc = RB_OK, mrc, rank = 0, nranks = 1;

    if ((mrc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (mrc = MPI_Comm_size(comm, &nranks)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: communicator");
        goto cleanup;
    }

    int bad = 0;
    if (!ops || !ops->tile)
        bad = rb_errf(err, errlen, RB_EINVAL, "probe attention: no tile kernel given");
    else if (d <= 0)
        bad = rb_errf(err, errlen, RB_EINVAL, "probe attention: head_dim %d must be positive", d);
    else if (root < 0 || root >= nranks)
        bad = rb_errf(err, errlen, RB_EINVAL, "probe attention: root %d outside [0, %d)", root,
                      nranks);
    else if (nq < 0 || nk < 0)
        bad = rb_errf(err, errlen, RB_EINVAL, "probe attention: negative row count (nq %lld, nk %lld)",
                      (long long)nq, (long long)nk);
    else if ((nq > 0 && (!q || !q_pos || !state)) || (nk > 0 && (!k || !k_pos)) ||
             (nk > 0 && !v && !ops->v_optional))
        bad = rb_errf(err, errlen, RB_EINVAL, "probe attention: NULL buffer");
    long long chk[5] = {bad ? 1 : 0, (long long)nq, -(long long)nq, root, -(long long)root};
    long long all[5];
    if ((mrc = MPI_Allreduce(chk, all, 5, MPI_LONG_LONG, MPI_MAX, comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "probe attention: MPI_Allreduce");
        goto cleanup;
    }
    if (bad) {
        rc = bad;
        goto cleanup;
    }
    if (all[0]) {
        rc = rb_errf(err, errlen, RB_EINVAL, "probe attention: bad arguments on another rank");
        goto cleanup;
    }
    if (all[1] != -all[2] || all[3] != -all[4]) {
        rc = rb_errf(err, errlen, RB_EINVAL,
                     "probe attention: ranks pass different probe counts (%lld to %lld) or "
                     "roots (%lld to %lld)", -all[2], all[1], -all[4], all[3]);
        goto cleanup;
    }

    int cr = rb_mpi_merge_create(d, &type, &op);
    if (cr < 0)
        cr = rb_errf(err, errlen, cr, "probe attention: cannot create the merge datatype/op "
                     "for head_dim %d", d);
    if ((rc = rb_mpi_agree(comm, cr, "probe attention: merge op", err, errlen)) < 0)
        goto cleanup;

    /* Even out the work: keys from the ranks with the most to those with the least. */
    double b0 = MPI_Wtime();
    if (nranks > 1 &&
        (rc = probe_balance(comm, rank, nranks, q_pos, nq, k, v, k_pos, nk, d, &taken, err,
                            errlen)) < 0)
        goto cleanup;
    tm.comm_wait_s += MPI_Wtime() - b0;
    tm.keys_sent = taken.keep0;
    tm.keys_received = taken.n;

    /* Partial states of every probe row against the keys this rank computes: its own
     * from keep0 on, then those it took. */
    int tile_rc = RB_OK;
    rb_state_init(state, nq, d);
    const int64_t own = nk - taken.keep0;
    if (nq > 0 && (own > 0 || taken.n > 0)) {
        double c0 = MPI_Wtime();
        const size_t o = (size_t)taken.keep0 * (size_t)d;
        /* the probe entry where the kernel has one: every call, however few keys it
         * has, scores a pair the same way (rb_kernel_ops.probe) */
        const rb_attn_tile_fn tile = ops->probe ? ops->probe : ops->tile;
        int trc = own > 0 ? tile(q, q_pos, nq, k + o, v ? v + o : NULL,
                                 k_pos + taken.keep0, own, d, scale, state)
                          : RB_OK;
        if (trc >= 0 && taken.n > 0)
            trc = tile(q, q_pos, nq, taken.k, taken.v, taken.pos, taken.n, d, scale, state);
        tm.compute_s = MPI_Wtime() - c0;
        if (trc < 0) {
            tile_rc = rb_errf(err, errlen, trc,
                              "probe attention: tile kernel %s failed (code %d)",
                              ops->name ? ops->name : "?", trc);
            rb_state_init(state, nq, d); /* contribute nothing, but take part */
        }
    }

    /* Reduce in chunks of rows that keep the count an int. */
    const size_t stride = RB_STATE_STRIDE(d);
    double r0 = MPI_Wtime();
    merge_op_seconds = 0.0;
    for (int64_t off = 0; off < nq; off += INT_MAX) {
        int n = (int)(nq - off < INT_MAX ? nq - off : INT_MAX);
        double *p = state + (size_t)off * stride;
        mrc = rank == root ? MPI_Reduce(MPI_IN_PLACE, p, n, type, op, root, comm)
                           : MPI_Reduce(p, NULL, n, type, op, root, comm);
        if (mrc != MPI_SUCCESS) {
            rc = rb_mpi_fail(err, errlen, mrc, "probe attention: MPI_Reduce");
            goto cleanup;
        }
    }
    double reduce_s = MPI_Wtime() - r0;
    tm.merge_s = merge_op_seconds;
    tm.comm_wait_s += reduce_s > tm.merge_s ? reduce_s - tm.merge_s : 0.0;
    rc = rb_mpi_agree(comm, tile_rc, "probe attention: tile kernel", err, errlen);

cleanup:
    rb_mpi_merge_free(&type, &op);
    taken_free(&taken);
    tm.total_s = MPI_Wtime() - t_start;
    if (t)
        *t = tm;
    return rc;
}
