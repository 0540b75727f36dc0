/* ring.c — ring attention: rotated K/V blocks with their positions travel around the ranks; row states merge by log-sum-exp. */
#include "rb_mpi.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* Largest single message, bytes: keeps every MPI count below INT_MAX. */
#define RING_CHUNK ((size_t)1 << 30)

/* One block as it travels: [k_pos int64 nk][k float nk*d][v float nk*d]. */
typedef struct {
    unsigned char *buf;
    int64_t *pos;
    float *k, *v;
} ring_block;

static void block_bind(ring_block *b, int64_t nk, int d)
{
    b->pos = (int64_t *)b->buf;
    b->k = (float *)(b->buf + (size_t)nk * sizeof(int64_t));
    b->v = b->k + (size_t)nk * (size_t)d;
}

/* Key ranges a step's tile is split into while its block's successor is in flight, so
 * that the pending requests are tested between them (Open MPI moves a message on only
 * inside MPI calls), and the fewest keys such a range may have. */
#define RING_SUBTILES 8
#define RING_SUBTILE_MIN 4096

/* The fewest keys of a key range: RING_SUBTILE_MIN, or for the test suite
 * ROPEBENCH_TEST_RING_SUBTILE (a positive integer), so that small rings split too. */
static int64_t subtile_min(void)
{
    const char *e = getenv("ROPEBENCH_TEST_RING_SUBTILE");
    const long long v = e ? atoll(e) : 0;
    return v > 0 ? (int64_t)v : RING_SUBTILE_MIN;
}

/* The messages of one block: RING_CHUNK bytes each, the last shorter (1 for none). */
static size_t ring_chunks(size_t bytes)
{
    return bytes ? (bytes + RING_CHUNK - 1) / RING_CHUNK : 1;
}

/* Start sending `bytes` of sbuf to dst and receiving as many into rbuf from src, in
 * chunks of at most RING_CHUNK: the receives first, then the sends, into req (room for
 * 2 * ring_chunks(bytes)); *nreq their count. */
static int exchange_start(const void *sbuf, void *rbuf, size_t bytes, int dst, int src,
                          MPI_Comm comm, MPI_Request *req, int *nreq, char *err,
                          size_t errlen)
{
    const size_t nc = ring_chunks(bytes);
    *nreq = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t c = 0; c < nc; c++) {
            const size_t off = c * RING_CHUNK;
            const int n = (int)(bytes - off < RING_CHUNK ? bytes - off : RING_CHUNK);
            const int mrc =
                pass ? MPI_Isend((const unsigned char *)sbuf + off, n, MPI_BYTE, dst, 71,
                                 comm, &req[*nreq])
                     : MPI_Irecv((unsigned char *)rbuf + off, n, MPI_BYTE, src, 71, comm,
                                 &req[*nreq]);
            if (mrc != MPI_SUCCESS)
                return rb_mpi_fail(err, errlen, mrc, pass ? "ring attention: MPI_Isend"
                                                          : "ring attention: MPI_Irecv");
            ++*nreq;
        }
    return RB_OK;
}

/* Contract in rb_mpi.h. Additionally: argument errors on any rank, or ranks passing
 * different nk, make every rank return RB_EINVAL (checked collectively before any
 * exchange, so nobody hangs); a tile kernel failure on one rank lets the ring finish
 * and then every rank returns that code. t may be NULL. */
int rb_ring_attention(MPI_Comm comm, const rb_kernel_ops *ops, const float *q,
                      const int64_t *q_pos, int64_t nq, const float *k, const float *v,
                      const int64_t *k_pos, int64_t nk, int d, double scale,
                      double *state, rb_timing *t, rb_progress_fn progress,
                      void *progress_user, char *err, size_t errlen)
{
    double t_start = MPI_Wtime();
    rb_timing tm = {0};
    ring_block blk[2] = {{0}, {0}};
    double *fresh = NULL;
    MPI_Request *req = NULL;
    int nreq = 0;
    int rc = RB_OK, mrc, rank = 0, nranks = 1;

    if ((mrc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (mrc = MPI_Comm_size(comm, &nranks)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "ring attention: communicator");
        goto cleanup;
    }

    /* Arguments, checked on every rank, then agreed on together with nk. */
    int bad = 0;
    if (!ops || !ops->tile)
        bad = rb_errf(err, errlen, RB_EINVAL, "ring attention: no tile kernel given");
    else if (d <= 0)
        bad = rb_errf(err, errlen, RB_EINVAL, "ring attention: head_dim %d must be positive", d);
    else if (nq < 0 || nk < 0)
        bad = rb_errf(err, errlen, RB_EINVAL, "ring attention: negative row count (nq %lld, nk %lld)",
                      (long long)nq, (long long)nk);
    else if ((nq > 0 && (!q || !q_pos || !state)) || (nk > 0 && (!k || !v || !k_pos)))
        bad = rb_errf(err, errlen, RB_EINVAL, "ring attention: NULL buffer");
    long long chk[3] = {bad ? 1 : 0, (long long)nk, -(long long)nk}, all[3];
    if ((mrc = MPI_Allreduce(chk, all, 3, MPI_LONG_LONG, MPI_MAX, comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "ring attention: MPI_Allreduce");
        goto cleanup;
    }
    if (bad) {
        rc = bad;
        goto cleanup;
    }
    if (all[0]) {
        rc = rb_errf(err, errlen, RB_EINVAL, "ring attention: bad arguments on another rank");
        goto cleanup;
    }
    if (all[1] != -all[2]) {
        rc = rb_errf(err, errlen, RB_EINVAL,
                     "ring attention: ranks pass different key counts (%lld to %lld); "
                     "shards must be equal", -all[2], all[1]);
        goto cleanup;
    }

    const size_t stride = RB_STATE_STRIDE(d);
    const size_t bytes = (size_t)nk * (sizeof(int64_t) + 2 * (size_t)d * sizeof(float));
    int alloc_rc = RB_OK;
    req = malloc(2 * ring_chunks(bytes) * sizeof *req);
    /* fresh (34 MB at 32,768 rows, d = 128) and the two K/V blocks (33 MB each at
     * 32,768 keys) from the kernels' allocator: huge pages, so that their first touch
     * (rb_state_init, the copy below, the first receive) takes a few faults where 4 KiB
     * pages took thousands (docs/scaling.md, Ring buffers) */
    fresh = rb_kernels_alloc((nq > 0 ? (size_t)nq : 1) * stride * sizeof(double));
    for (int b = 0; b < 2; b++)
        blk[b].buf = rb_kernels_alloc(bytes > 0 ? bytes : 1);
    if (!fresh || !req || !blk[0].buf || !blk[1].buf)
        alloc_rc = rb_errf(err, errlen, RB_ENOMEM,
                           "ring attention: cannot allocate %zu bytes of K/V blocks and "
                           "%lld row states", 2 * bytes, (long long)nq);
    if ((rc = rb_mpi_agree(comm, alloc_rc, "ring attention: allocation", err, errlen)) < 0)
        goto cleanup;

    for (int b = 0; b < 2; b++)
        block_bind(&blk[b], nk, d);
    if (nk > 0) {
        memcpy(blk[0].pos, k_pos, (size_t)nk * sizeof(int64_t));
        memcpy(blk[0].k, k, (size_t)nk * (size_t)d * sizeof(float));
        memcpy(blk[0].v, v, (size_t)nk * (size_t)d * sizeof(float));
    }
    rb_state_init(state, nq, d);

    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    int cur = 0, tile_rc = RB_OK;
    for (int s = 0; s < nranks; s++) {
        /* Step s: the block that started on rank (rank - s) mod N. The next block is
         * received into the other buffer while this one is computed (and sent on: both
         * only read it), the requests tested between key ranges of the tile. After a
         * kernel failure keep passing blocks, so the other ranks finish their ring. */
        const int pending = s + 1 < nranks;
        if (pending) {
            const double w0 = MPI_Wtime();
            rc = exchange_start(blk[cur].buf, blk[1 - cur].buf, bytes, next, prev, comm, req,
                                &nreq, err, errlen);
            tm.comm_wait_s += MPI_Wtime() - w0;
            if (rc < 0)
                goto cleanup;
        }
        if (tile_rc == RB_OK && nq > 0 && nk > 0) {
            rb_state_init(fresh, nq, d);
            const int64_t smin = subtile_min();
            int64_t parts = pending ? RING_SUBTILES : 1;
            if (nk / parts < smin)
                parts = nk / smin > 1 ? nk / smin : 1;
            int trc = 0;
            /* cuts at multiples of 64 keys (the fast kernels' block), as the probe
             * balance's, so that a block holds the same keys whatever the split (the
             * test hook's small ranges cut anywhere) */
            const int64_t unit = smin < 64 ? 1 : 64;
            for (int64_t p = 0; p < parts && trc >= 0; p++) {
                const int64_t k0 = nk * p / parts / unit * unit,
                              k1 = p + 1 == parts ? nk : nk * (p + 1) / parts / unit * unit;
                if (k1 <= k0)
                    continue;
                const double c0 = MPI_Wtime();
                trc = ops->tile(q, q_pos, nq, blk[cur].k + (size_t)k0 * (size_t)d,
                                blk[cur].v + (size_t)k0 * (size_t)d, blk[cur].pos + k0,
                                k1 - k0, d, scale, fresh);
                const double c1 = MPI_Wtime();
                tm.compute_s += c1 - c0;
                if (pending && p + 1 < parts) {
                    int done = 0;
                    const int mrc = MPI_Testall(nreq, req, &done, MPI_STATUSES_IGNORE);
                    tm.comm_wait_s += MPI_Wtime() - c1;
                    if (mrc != MPI_SUCCESS) {
                        rc = rb_mpi_fail(err, errlen, mrc, "ring attention: MPI_Testall");
                        goto cleanup;
                    }
                }
            }
            if (trc < 0) {
                tile_rc = rb_errf(err, errlen, trc,
                                  "ring attention: tile kernel %s failed (code %d) at step %d",
                                  ops->name ? ops->name : "?", trc, s);
            } else {
                const double m0 = MPI_Wtime();
                rb_state_merge(state, fresh, nq, d);
                tm.merge_s += MPI_Wtime() - m0;
            }
        }
        if (pending) {
            const double w0 = MPI_Wtime();
            const int mrc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
            tm.comm_wait_s += MPI_Wtime() - w0;
            if (mrc != MPI_SUCCESS) { /* requests may still be pending: nreq stays */
                rc = rb_mpi_fail(err, errlen, mrc, "ring attention: MPI_Waitall");
                goto cleanup;
            }
            nreq = 0;
            cur = 1 - cur;
        }
        if (progress)
            progress(s + 1, nranks, progress_user);
    }
    rc = rb_mpi_agree(comm, tile_rc, "ring attention: tile kernel", err, errlen);

cleanup:
    /* an MPI failure part way (reachable only under MPI_ERRORS_RETURN, which the tests
     * set: with MPI's default handler the job aborts at the failing call, and a rank
     * returning here would leave its neighbours in MPI_Waitall): the requests still
     * pending are left to MPI's teardown, as freeing a buffer under a live receive
     * would be worse */
    if (nreq == 0) {
        free(blk[0].buf);
        free(blk[1].buf);
    }
    free(fresh);
    free(req);
    tm.total_s = MPI_Wtime() - t_start;
    if (t)
        *t = tm;
    return rc;
}
