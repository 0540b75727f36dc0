/* attn_blas.c — the OpenBLAS attention tile: S = Q Kᵀ and O += P V by cblas_sgemm per (query block, key block), fp32 online softmax with the entropy accumulator in plain vectorizable C. */
#include "rb_blas.h"
#include "rb_omp.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Blocking: BR query rows (the unit of OpenMP work in row mode; BR_STREAM in stream
 * mode, so that key blocks no row of a block can see are skipped, as for probe rows
 * sorted by position) against BC keys per pair of sgemm calls. With at most STREAM_MAX_ROWS rows, or STREAM_MAX_PROBE rows
 * and 16x as many keys (probe rows), the keys are split between threads instead. */
enum { BR = 256, BR_STREAM = 32, BC = 256, STREAM_MAX_ROWS = 256, STREAM_MAX_PROBE = 2048 };
/* A row's fp32 state takes at most FLUSH_BLOCKS key blocks (4096 keys) before it is
 * merged into a double state and restarted: l is one fp32 sum per row here, and over a
 * million keys its rounding reached ~1e-5 (the entropy ~1e-5 nats). */
enum { FLUSH_BLOCKS = 16 };

/* p * ds, or 0 where p == 0 (there ds may be -inf), without a trapping compare. */
static inline float times_if_nonzero(float p, float ds)
{
    const float pd = p * ds;
    uint32_t pdb, pb;
    memcpy(&pdb, &pd, sizeof pdb);
    memcpy(&pb, &p, sizeof pb);
    pdb &= pb ? 0xFFFFFFFFu : 0u;
    float z;
    memcpy(&z, &pdb, sizeof z);
    return z;
}

/* Order-preserving integer key of a float (-inf < ... < -0 < +0 < ... < +inf), and
 * back: integer compares do not trap, so the max below vectorizes without ISA flags
 * (a float max loop stays scalar, and an `omp simd` max reduction goes through the
 * stack in gcc 12). */
static inline int32_t float_key(float x)
{
    int32_t b;
    memcpy(&b, &x, sizeof b);
    return b ^ (int32_t)((uint32_t)(b >> 31) & 0x7FFFFFFFu);
}

/* max of n floats (-inf for n == 0 or all -inf); no NaN expected. */
static float row_max(const float *s, int64_t n)
{
    int32_t mk[8];
    for (int j = 0; j < 8; j++)
        mk[j] = INT32_MIN;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            const int32_t key = float_key(s[i + j]);
            mk[j] = key > mk[j] ? key : mk[j];
        }
    int32_t m = float_key(-INFINITY);
    for (int j = 0; j < 8; j++)
        m = mk[j] > m ? mk[j] : m;
    for (; i < n; i++) {
        const int32_t key = float_key(s[i]);
        m = key > m ? key : m;
    }
    const int32_t b = m ^ (int32_t)((uint32_t)(m >> 31) & 0x7FFFFFFFu);
    float r;
    memcpy(&r, &b, sizeof r);
    return r;
}

/* The fp32 online state of BR (row mode) or all (stream mode) rows. */
typedef struct {
    float *m, *l, *u, *acc; /* acc: rows x d */
    float *s;               /* scores / probabilities: BR x BC */
} bl_state;

/* Rows [r0, r0+br) of q (fp32 state rows from st row sr0) against keys [k0, k0+bc)
 * (positions within [kmin, kmax]): S = scale Q Kᵀ, mask by position unless
 * `unmasked` (per element only for rows with kmin <= q_pos < kmax), online softmax
 * update of m, l, u, rescale of acc rows, acc += P V. Rows that see nothing keep
 * their state. */
static void block_update(const float *q, const int64_t *q_pos, int64_t r0, int64_t br,
                         const float *k, const float *v, const int64_t *k_pos, int64_t k0,
                         int64_t bc, int64_t kmin, int64_t kmax, int d, float scale,
                         int unmasked, const bl_state *st, int64_t sr0)
{
    const size_t sd = (size_t)d;
    float *S = st->s;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)br, (int)bc, d, scale,
                q + (size_t)r0 * sd, d, k + (size_t)k0 * sd, d, 0.0f, S, (int)bc);
    int any = 0;
    for (int64_t r = 0; r < br; r++) {
        float *srow = S + (size_t)r * (size_t)bc;
        const int64_t qp = q_pos[r0 + r];
        const int64_t *kp = k_pos + k0;
        if (!unmasked && qp < kmax) { /* rows that see the whole block skip this */
            if (qp < kmin) {
                for (int64_t n = 0; n < bc; n++)
                    srow[n] = -INFINITY;
            } else {
                for (int64_t n = 0; n < bc; n++)
                    srow[n] = kp[n] <= qp ? srow[n] : -INFINITY;
            }
        }
        const float mx = row_max(srow, bc);
        const size_t ri = (size_t)(sr0 + r);
        const float mo = st->m[ri];
        const float mn = mx > mo ? mx : mo;
        float *acc = st->acc + ri * sd;
        if (mn == -INFINITY) { /* nothing seen yet, nothing visible here */
            memset(srow, 0, (size_t)bc * sizeof *srow);
            continue;
        }
        any = 1;
        float lsum = 0.0f, usum = 0.0f;
#pragma omp simd reduction(+ : lsum, usum)
        for (int64_t n = 0; n < bc; n++) {
            const float ds = srow[n] - mn; /* -inf where masked */
            const float p = rb_blas_exp_neg(ds);
            srow[n] = p;
            lsum += p;
            usum += times_if_nonzero(p, ds);
        }
        if (mo == -INFINITY) {
            st->u[ri] = usum;
            st->l[ri] = lsum;
        } else {
            const float a = expf(mo - mn);
            st->u[ri] = a * (st->u[ri] + st->l[ri] * (mo - mn)) + usum;
            st->l[ri] = a * st->l[ri] + lsum;
            if (a != 1.0f) {
#pragma omp simd
                for (int j = 0; j < d; j++)
                    acc[j] *= a;
            }
        }
        st->m[ri] = mn;
    }
    if (any && v) /* v = NULL: softmax state only */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)br, d, (int)bc, 1.0f,
                    S, (int)bc, v + (size_t)k0 * sd, d, 1.0f,
                    st->acc + (size_t)sr0 * sd, d);
}

/* Merge nrows fp32 state rows (from local row local0) into the double state rows
 * from row0 (rb_state_merge_f32). */
static void merge_rows(const bl_state *st, int64_t local0, int64_t row0, int64_t nrows,
                       int d, double *state)
{
    rb_state_merge_f32(state, row0, nrows, d, st->m + local0, st->l + local0, st->u + local0,
                       st->acc + (size_t)local0 * (size_t)d, (size_t)d);
}

static void state_reset(const bl_state *st, int64_t nrows, int d)
{
    for (int64_t i = 0; i < nrows; i++) {
        st->m[i] = -INFINITY;
        st->l[i] = 0.0f;
        st->u[i] = 0.0f;
    }
    memset(st->acc, 0, (size_t)nrows * (size_t)d * sizeof(float));
}

typedef struct {
    int64_t work, blk;
} bl_job;
static int job_cmp(const void *a, const void *b)
{
    const bl_job *x = a, *y = b;
    if (x->work != y->work)
        return x->work > y->work ? -1 : 1;
    return x->blk < y->blk ? -1 : (x->blk > y->blk);
}

/* rb_attn_tile_blas: the tile contract (rb_kernels.h, rb_blas.h) in fp32 with
 * cblas_sgemm for S = scale Q Kᵀ and O += P V, online softmax and entropy in fp32
 * C loops, fp32 row states merged into double every FLUSH_BLOCKS key blocks and at the
 * end (into `state`, or in stream mode into a double state per thread). Positions may be
 * unsorted, gapped or repeated. Two schedules:
 *  - row mode (e.g. causal tiles, nq ~ nk): query blocks of BR rows go to OpenMP
 *    threads largest visible work first (dynamic), each sweeping the key blocks of
 *    BC keys its rows can see (fully masked blocks skipped, fully visible ones
 *    unmasked);
 *  - stream mode (nq <= STREAM_MAX_ROWS, or nq <= STREAM_MAX_PROBE with nk >= 16 nq:
 *    probe rows): keys are split into one range per thread by equal visible work,
 *    every thread runs all rows against its keys, and the per-thread states are
 *    merged in thread order.
 * OpenBLAS threads: Debian's OpenBLAS is the pthread build, which knows nothing of
 * OpenMP; called from our threads with its default thread count, each call hands
 * work to its own pool (3+ threads on 2 cores here; results were correct, but the
 * cores are oversubscribed). So the count is set to 1 for the call (each sgemm
 * runs in the calling thread; concurrent single-threaded calls are safe) and
 * restored after. That setting is process-wide: concurrent calls of this kernel
 * from several application threads are not supported. Returns 0 or RB_ENOMEM. */
int rb_attn_tile_blas(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                      const float *v, const int64_t *k_pos, int64_t nk, int d,
                      double scale, double *state)
{
    if (nq <= 0 || nk <= 0 || d <= 0 || rb_attn_tile_masked(q_pos, nq, k_pos, nk))
        return 0;
    int rc = 0;
    /* few rows, or rows much fewer than keys (probe rows): stream the keys */
    const int stream = nq <= STREAM_MAX_ROWS || (nk >= 16 * nq && nq <= STREAM_MAX_PROBE);
    const int64_t brow = stream ? BR_STREAM : BR; /* rows per query block */
    const int64_t nqb = (nq + brow - 1) / brow, nkb = (nk + BC - 1) / BC;
    int nthr = rb_kernels_threads();
    if (nthr < 1)
        nthr = 1;
    if (!stream && nthr > nqb)
        nthr = (int)nqb;
    if (stream && nthr > nkb)
        nthr = (int)nkb;
    const size_t strows = stream ? (size_t)nq : (size_t)BR;
    const size_t st_floats = strows * 3 + strows * (size_t)d + (size_t)BR * BC;
    const size_t sst = RB_STATE_STRIDE(d);

    int64_t *bqmin = NULL, *bqmax = NULL, *kbmin = NULL, *kbmax = NULL, *cut = NULL;
    bl_job *jobs = NULL;
    float *stbuf = NULL;
    double *dsbuf = NULL; /* stream mode: a double state of nq rows per thread */
    bqmin = malloc((size_t)nqb * sizeof *bqmin);
    bqmax = malloc((size_t)nqb * sizeof *bqmax);
    kbmin = malloc((size_t)nkb * sizeof *kbmin);
    kbmax = malloc((size_t)nkb * sizeof *kbmax);
    jobs = malloc((size_t)nqb * sizeof *jobs);
    cut = malloc(((size_t)nthr + 1) * sizeof *cut);
    stbuf = malloc((size_t)nthr * st_floats * sizeof *stbuf);
    if (stream)
        dsbuf = malloc((size_t)nthr * (size_t)nq * sst * sizeof *dsbuf);
    if (!bqmin || !bqmax || !kbmin || !kbmax || !jobs || !cut || !stbuf ||
        (stream && !dsbuf)) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    for (int64_t b = 0; b < nqb; b++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t r = b * brow; r < (b + 1) * brow && r < nq; r++) {
            lo = q_pos[r] < lo ? q_pos[r] : lo;
            hi = q_pos[r] > hi ? q_pos[r] : hi;
        }
        bqmin[b] = lo;
        bqmax[b] = hi;
    }
    for (int64_t b = 0; b < nkb; b++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t n = b * BC; n < (b + 1) * BC && n < nk; n++) {
            lo = k_pos[n] < lo ? k_pos[n] : lo;
            hi = k_pos[n] > hi ? k_pos[n] : hi;
        }
        kbmin[b] = lo;
        kbmax[b] = hi;
    }
    if (!stream) {
        for (int64_t b = 0; b < nqb; b++) {
            int64_t w = 0;
            for (int64_t kb = 0; kb < nkb; kb++)
                w += kbmin[kb] <= bqmax[b];
            jobs[b].work = w;
            jobs[b].blk = b;
        }
        qsort(jobs, (size_t)nqb, sizeof *jobs, job_cmp);
    } else {
        /* key block kb costs reading it (about one block product, measured) plus
         * the query blocks that can see it */
        int64_t total = 0, acc = 0;
        for (int64_t kb = 0; kb < nkb; kb++) {
            total += 1;
            for (int64_t b = 0; b < nqb; b++)
                total += kbmin[kb] <= bqmax[b];
        }
        cut[0] = 0;
        int t = 1;
        for (int64_t kb = 0; kb < nkb && t < nthr; kb++) {
            acc += 1;
            for (int64_t b = 0; b < nqb; b++)
                acc += kbmin[kb] <= bqmax[b];
            while (t < nthr && acc * nthr >= total * t)
                cut[t++] = kb + 1;
        }
        while (t <= nthr)
            cut[t++] = nkb;
    }

    int used = nthr; /* stream mode: threads that ran (set in the parallel region) */
    const int blas_threads = openblas_get_num_threads();
#ifdef _OPENMP
    /* an OpenMP build of OpenBLAS sets OpenMP's own default through
     * openblas_set_num_threads (omp_set_num_threads): the caller's is put back below */
    const int omp_threads = omp_get_max_threads();
#endif
    openblas_set_num_threads(1);
    const float fscale = (float)scale;
#pragma omp parallel num_threads(nthr)
    {
#ifdef _OPENMP
        const int tid = omp_get_thread_num();
#else
        const int tid = 0;
#endif
        float *b_ = stbuf + (size_t)tid * st_floats;
        const bl_state st = {b_, b_ + strows, b_ + 2 * strows, b_ + 3 * strows,
                             b_ + 3 * strows + strows * (size_t)d};
        if (!stream) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t j = 0; j < nqb; j++) {
                const int64_t b = jobs[j].blk, r0 = b * brow;
                const int64_t br = r0 + brow <= nq ? brow : nq - r0;
                state_reset(&st, br, d);
                int nb = 0;
                for (int64_t kb = 0; kb < nkb; kb++) {
                    if (kbmin[kb] > bqmax[b])
                        continue;
                    const int64_t k0 = kb * BC, bc = k0 + BC <= nk ? BC : nk - k0;
                    block_update(q, q_pos, r0, br, k, v, k_pos, k0, bc, kbmin[kb],
                                 kbmax[kb], d, fscale, kbmax[kb] <= bqmin[b], &st, 0);
                    if (++nb == FLUSH_BLOCKS) {
                        merge_rows(&st, 0, r0, br, d, state);
                        state_reset(&st, br, d);
                        nb = 0;
                    }
                }
                if (nb)
                    merge_rows(&st, 0, r0, br, d, state);
            }
        } else {
            /* the team may be smaller than asked (OMP_THREAD_LIMIT, OMP_DYNAMIC): each
             * thread takes key ranges tid, tid + team, ... so that none is left out */
            const int team = rb_omp_team();
            if (tid == 0)
                used = team;
            double *ds = dsbuf + (size_t)tid * (size_t)nq * sst;
            state_reset(&st, nq, d);
            rb_state_init(ds, nq, d);
            for (int part = tid; part < nthr; part += team) {
                int nb = 0;
                for (int64_t kb = cut[part]; kb < cut[part + 1]; kb++) {
                    const int64_t k0 = kb * BC, bc = k0 + BC <= nk ? BC : nk - k0;
                    for (int64_t b = 0; b < nqb; b++) {
                        if (kbmin[kb] > bqmax[b])
                            continue;
                        const int64_t r0 = b * brow, br = r0 + brow <= nq ? brow : nq - r0;
                        block_update(q, q_pos, r0, br, k, v, k_pos, k0, bc, kbmin[kb],
                                     kbmax[kb], d, fscale, kbmax[kb] <= bqmin[b], &st, r0);
                    }
                    if (++nb == FLUSH_BLOCKS || kb + 1 == cut[part + 1]) {
                        merge_rows(&st, 0, 0, nq, d, ds);
                        state_reset(&st, nq, d);
                        nb = 0;
                    }
                }
            }
        }
    }
    openblas_set_num_threads(blas_threads);
#ifdef _OPENMP
    omp_set_num_threads(omp_threads);
#endif
    if (stream) {
        /* merge the states of the threads that ran, in thread order: deterministic */
        for (int t = 0; t < used; t++)
            rb_state_merge(state, dsbuf + (size_t)t * (size_t)nq * sst, nq, d);
    }

cleanup:
    free(bqmin);
    free(bqmax);
    free(kbmin);
    free(kbmax);
    free(jobs);
    free(cut);
    free(stbuf);
    free(dsbuf);
    return rc;
}
