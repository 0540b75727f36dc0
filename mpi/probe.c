/* probe.c — probe rows: per-rank partial row states combined on a root by MPI_Reduce with a merge MPI_Op. */
#include "rb_mpi.h"

#include <limits.h>

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

/* Contract in rb_mpi.h. Additionally: argument errors on any rank, or ranks passing
 * different nq or a different root, make every rank return RB_EINVAL before any
 * reduction; a tile kernel failure on one rank still takes part in the reduction and
 * then every rank returns that code. Timing: compute = tile kernel, merge = time in
 * the merge op on this rank, comm wait = the rest of MPI_Reduce. t may be NULL. */
int rb_probe_attention(MPI_Comm comm, int root, const rb_kernel_ops *ops,
                       const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                       const float *v, const int64_t *k_pos, int64_t nk, int d,
                       double scale, double *state, rb_timing *t, char *err,
                       size_t errlen)
{
    double t_start = MPI_Wtime();
    rb_timing tm = {0, 0, 0, 0};
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
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

    /* Partial states of every probe row against this rank's keys. */
    int tile_rc = RB_OK;
    rb_state_init(state, nq, d);
    if (nq > 0 && nk > 0) {
        double c0 = MPI_Wtime();
        int trc = ops->tile(q, q_pos, nq, k, v, k_pos, nk, d, scale, state);
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
    tm.comm_wait_s = reduce_s > tm.merge_s ? reduce_s - tm.merge_s : 0.0;
    rc = rb_mpi_agree(comm, tile_rc, "probe attention: tile kernel", err, errlen);

cleanup:
    rb_mpi_merge_free(&type, &op);
    tm.total_s = MPI_Wtime() - t_start;
    if (t)
        *t = tm;
    return rc;
}
