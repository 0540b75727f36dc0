/* metrics_probe.c — data-driven probe metrics (score decay, attention share, needle rank, softmax floor, E[rho]) over (probe row, visible key) pairs. */
#include "rb_kernels.h"
#include "rb_omp.h"

#include <math.h>
#ifdef RB_METRICS_PROBE_AVX512
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* This file is also compiled with AVX-512 flags, by kernels/avx512/metrics_probe_avx512.c
 * including it with RB_METRICS_PROBE_AVX512 defined: the same loops, vectorized 8
 * doubles wide, plus a few AVX-512 intrinsic loops for the hot spots. Every vector loop
 * is lane-wise (no reassociation) and both builds get -ffp-contract=off (CMakeLists.txt;
 * GCC's C17 mode is that already), so a*b+c is never fused behind our back; the
 * AVX-512 loops that do use FMA only ever multiply two values whose product is exact
 * in double (a float times a float, or a float times a share weight rounded to float),
 * so FMA and the portable multiply-then-add round once, alike. Both builds therefore
 * give bit-identical results; rb_probe_metrics_accumulate runs the AVX-512 build when
 * the CPU and OS allow it and ROPEBENCH_ISA is not "ref". */
#ifdef RB_METRICS_PROBE_AVX512
#define ACCUMULATE_IMPL rb_probe_metrics_accumulate_avx512
int ACCUMULATE_IMPL(const float *q, const int64_t *q_pos, const double *lse, int64_t nq,
                    const float *k, const int64_t *k_pos, int64_t nk, double scale,
                    rb_probe_metrics *m, char *err, size_t errlen);
#else
#define ACCUMULATE_IMPL accumulate_portable
#endif

/* How the work is cut. Keys are taken in blocks of KB, converted once to double in two
 * layouts (kd[n][d] for the weighted key sums of the share, kT[d][KB] for the scores),
 * then met by every probe row that sees part of the block; blocks go to threads
 * cyclically (block b to thread b mod T: with log-spaced rows the early keys are seen
 * by many more rows than the late ones). Scores are computed KC keys at a time (all 16
 * at once, in registers, in the AVX-512 build) with the dims split over 4 partial sums exactly as
 * rb_attn_tile_ref's dot product, so a score here is bit-identical to the reference
 * tile's (and to a caller's needle_s computed the same way). Each row's run (its sums
 * in the current distance bin, and its W) lives across the blocks of a thread, since
 * a row meets its keys in block order and changes bin rarely; it is flushed into the
 * bin when the bin changes and after the last block (with nq * rotary_dim above 4M,
 * which would make W large, every block flushes its runs instead). Two paths per
 * (row, block): when the row sees all 16 keys of a whole block, all in one bin
 * (nearly always), the block's sums are pairwise trees and
 * W += p k runs over the 16 keys in one pass with W in registers; otherwise key by
 * key, with W += p k applied up to 4 keys at a time, ((W + p0 k0) + p1 k1) + ..., in
 * key order. */
#define KB 16 /* kd and kT take 2 x 16 KiB at d = 128, so they stay in L1 beside W and
                  * the row while every row passes over them (32 keys: 10-16 % slower) */
_Static_assert(KB == 16, "sum16, apply16 and the whole-block path take 16 keys");
#define KC 4 /* the portable build's keys per pass: fits 16 xmm registers */

/* Keys with s - lse below log(1e-30), i.e. p < 1e-30, are left out of share_num and
 * share_den (both, so each bin's ratio stays a weighted mean over the keys it holds).
 * Per row, every skipped term is < 1e-30 of that row's attention mass (which sums to
 * 1), so share_den[b] is low by < 1e-30 * count[b] and share_num[b][j] by
 * < 1e-30 * scale * sum over the skipped pairs of rho_j, in absolute terms. */
#define SHARE_LOG_FLOOR (-69.07755278982137) /* log(1e-30) */
#define SHARE_LOG_CAP 88.0 /* e^88 < FLT_MAX */

/* A run of keys of one row in one bin: its sums, added to the thread's bin b. */
typedef struct {
    int b;
    int64_t lo, hi; /* distance window of bin b */
    double cnt, ss, ss2, den;
    int wdirty;
    int npend;     /* keys waiting for W += p k */
    double pp[4];  /* their p */
    const double *pk[4]; /* their rows in kd */
} run_acc;

/* exp(x) for x in [SHARE_LOG_FLOOR, 700] (the share weights p = exp(s - lse), s <= lse
 * up to rounding), written lane-wise so that a loop over a block vectorizes: x = n ln2
 * + r with ln2 in two parts (Cody-Waite; n * ln2_hi is exact), |r| <= ln2/2, e^r by
 * its Taylor series to degree 9 (truncation < 7e-12 relative), times 2^n built in the
 * exponent bits (n in [-100, 1010]: a normal double). The polynomial is evaluated in
 * Estrin's order (pairs, then r^2, r^4, r^8), 7 operations deep: the caller rounds p
 * to float at once, so double-precision digits past ~1e-9 buy nothing, and the
 * loop's latency is what the accumulation waits on (until 2026-12-04: degree 13 in
 * Horner's order, 26 deep: the accumulation took 8 % longer). Measured at 5.1M points of
 * [log 1e-30, 1] and [log 1e-30, 700]: within 9.5e-12 relative of libm's exp, and
 * rounded to float equal to libm's exp rounded to float at all but 25 (one float ulp
 * apart). The accumulators that use it are checked against libm's exp in
 * tests/test_metrics_probe.c. Plain multiplies and adds: the portable and the
 * AVX-512 builds round alike. */
static inline double exp_share(double x)
{
    const double n = nearbyint(x * 1.4426950408889634);
    const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
    const double r2 = r * r, r4 = r2 * r2;
    const double a0 = 1.0 + r, a1 = 0.5 + r * (1.0 / 6.0);
    const double a2 = 1.0 / 24.0 + r * (1.0 / 120.0), a3 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    const double a4 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    const double p = ((a0 + r2 * a1) + r4 * (a2 + r2 * a3)) + (r4 * r4) * a4;
    union {
        double d;
        int64_t i;
    } sc;
    sc.i = ((int64_t)n + 1023) << 52;
    return p * sc.d;
}

/* Per-thread accumulators and scratch: one slice of a single allocation. */
typedef struct {
    double *count, *sum_s, *sum_s2, *den, *num; /* [nbins], [nbins * np] */
    double *rmin, *rmax, *rcnt;                 /* [nq] */
    double *above;                              /* [n_needles] */
    double *rho;                                /* [np] */
    double *kd, *kT, *sc, *W;                   /* [KB*d], [d*KB], [KB], [d] */
    double *pe;                                 /* [KB]: share weights of the row */
    run_acc *runs;                              /* [nq] when c->persist */
    double *Wr;                                 /* [nq * rot] when c->persist */
} thread_acc;

/* Everything the block loop reads, shared by the threads. */
typedef struct {
    const rb_probe_metrics *m;
    const float *k;
    const int64_t *k_pos, *q_pos;
    const double *lse;
    int64_t nq, nk;
    int d, np, rot;
    double scale;
    const double *qd;       /* [nq][d] rows in double, unscaled */
    const int64_t *order;  /* row indices sorted by q_pos */
    const int64_t *spos;   /* q_pos in that order */
    const double *qsuf;    /* [(nq+1)][np]: sum of |q pair j| over sorted rows r.. */
    const int64_t *nstart; /* [nq+1]: needles of row m are nidx[nstart[m]..nstart[m+1]) */
    const int64_t *nidx;
    const int *pa, *pb;    /* the two dims of pair j */
    int share, rho;        /* accumulate the share / rho_sum */
    int persist;           /* runs and W kept per row across blocks (else per block) */
} shared_ctx;

/* First index r in sorted a[0..n) with a[r] >= x (n if none). */
static int64_t lower_bound(const int64_t *a, int64_t n, int64_t x)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Bin of a distance: the largest b with edges[b] <= dist, clamped to [0, nbins). */
static int bin_of(const int64_t *edges, int nbins, int64_t dist)
{
    int lo = 0, hi = nbins - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (edges[mid] <= dist)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Scores of one double row q against the KB (zero-padded) keys of kT: sc[n] = scale *
 * ((s0 + s1) + (s2 + s3)), s_t the sum over dims i = t mod 4 in order (the last d mod 4
 * dims go to s0), as rb_attn_tile_ref. The portable loops over KC keys vectorize. */
static void block_scores(const double *q, const double *kT, int d, double scale,
                         double *sc)
{
#ifdef RB_METRICS_PROBE_AVX512
    /* the same sums for all 16 keys at once, 8 chains of one zmm (4 partial sums x 2
     * halves of the block). FMA here gives the portable loop's result bit for bit: q
     * and k are floats widened to double, so q * k (at most 48 significant bits) is
     * exact and only the add rounds, in both. */
    {
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        __m512d b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        int i = 0;
        for (; i + 4 <= d; i += 4) {
            const double *k0 = kT + (size_t)i * KB;
            const __m512d q0 = _mm512_set1_pd(q[i]), q1 = _mm512_set1_pd(q[i + 1]);
            const __m512d q2 = _mm512_set1_pd(q[i + 2]), q3 = _mm512_set1_pd(q[i + 3]);
            a0 = _mm512_fmadd_pd(q0, _mm512_loadu_pd(k0), a0);
            b0 = _mm512_fmadd_pd(q0, _mm512_loadu_pd(k0 + 8), b0);
            a1 = _mm512_fmadd_pd(q1, _mm512_loadu_pd(k0 + KB), a1);
            b1 = _mm512_fmadd_pd(q1, _mm512_loadu_pd(k0 + KB + 8), b1);
            a2 = _mm512_fmadd_pd(q2, _mm512_loadu_pd(k0 + 2 * KB), a2);
            b2 = _mm512_fmadd_pd(q2, _mm512_loadu_pd(k0 + 2 * KB + 8), b2);
            a3 = _mm512_fmadd_pd(q3, _mm512_loadu_pd(k0 + 3 * KB), a3);
            b3 = _mm512_fmadd_pd(q3, _mm512_loadu_pd(k0 + 3 * KB + 8), b3);
        }
        for (; i < d; i++) {
            const double *k0 = kT + (size_t)i * KB;
            const __m512d qi = _mm512_set1_pd(q[i]);
            a0 = _mm512_fmadd_pd(qi, _mm512_loadu_pd(k0), a0);
            b0 = _mm512_fmadd_pd(qi, _mm512_loadu_pd(k0 + 8), b0);
        }
        const __m512d vs = _mm512_set1_pd(scale);
        _mm512_storeu_pd(sc, _mm512_mul_pd(vs, _mm512_add_pd(_mm512_add_pd(a0, a1),
                                                            _mm512_add_pd(a2, a3))));
        _mm512_storeu_pd(sc + 8, _mm512_mul_pd(vs, _mm512_add_pd(_mm512_add_pd(b0, b1),
                                                                _mm512_add_pd(b2, b3))));
    }
#else
    for (int n0 = 0; n0 < KB; n0 += KC) {
        double a0[KC] = {0}, a1[KC] = {0}, a2[KC] = {0}, a3[KC] = {0};
        int i = 0;
        for (; i + 4 <= d; i += 4) {
            const double *k0 = kT + (size_t)i * KB + n0;
            const double q0 = q[i], q1 = q[i + 1], q2 = q[i + 2], q3 = q[i + 3];
            for (int c = 0; c < KC; c++) {
                a0[c] += q0 * k0[c];
                a1[c] += q1 * k0[KB + c];
                a2[c] += q2 * k0[2 * KB + c];
                a3[c] += q3 * k0[3 * KB + c];
            }
        }
        for (; i < d; i++) {
            const double *k0 = kT + (size_t)i * KB + n0;
            for (int c = 0; c < KC; c++)
                a0[c] += q[i] * k0[c];
        }
        for (int c = 0; c < KC; c++)
            sc[n0 + c] = scale * ((a0[c] + a1[c]) + (a2[c] + a3[c]));
    }
#endif
}

/* W[0..rot) += p_i k_i for the pending keys, in order. Each p_i is a double holding a
 * float (see the share weights in do_block) and k_i a float widened to double, so
 * p_i * k_i is exact: the AVX-512 build's FMA and the portable multiply-then-add round
 * once, alike. */
#ifdef RB_METRICS_PROBE_AVX512
#define RB_MAC(a, x, y) fma((x), (y), (a))
#else
#define RB_MAC(a, x, y) ((a) + (x) * (y))
#endif
static void run_apply(run_acc *r, double *restrict W, int rot)
{
    const double p0 = r->pp[0], p1 = r->pp[1], p2 = r->pp[2], p3 = r->pp[3];
    const double *restrict k0 = r->pk[0], *restrict k1 = r->pk[1];
    const double *restrict k2 = r->pk[2], *restrict k3 = r->pk[3];
    switch (r->npend) {
    case 4:
#ifdef _OPENMP
#pragma omp simd
#endif
        for (int i = 0; i < rot; i++)
            W[i] = RB_MAC(RB_MAC(RB_MAC(RB_MAC(W[i], p0, k0[i]), p1, k1[i]), p2, k2[i]), p3,
                          k3[i]);
        break;
    case 3:
        for (int i = 0; i < rot; i++)
            W[i] = RB_MAC(RB_MAC(RB_MAC(W[i], p0, k0[i]), p1, k1[i]), p2, k2[i]);
        break;
    case 2:
        for (int i = 0; i < rot; i++)
            W[i] = RB_MAC(RB_MAC(W[i], p0, k0[i]), p1, k1[i]);
        break;
    case 1:
        for (int i = 0; i < rot; i++)
            W[i] = RB_MAC(W[i], p0, k0[i]);
        break;
    default:
        break;
    }
    r->npend = 0;
}

static void run_flush(run_acc *r, const shared_ctx *c, const double *q, double *W,
                      thread_acc *t)
{
    if (r->b < 0)
        return;
    const int b = r->b;
    t->count[b] += r->cnt;
    t->sum_s[b] += r->ss;
    t->sum_s2[b] += r->ss2;
    if (c->share) {
        t->den[b] += r->den;
        run_apply(r, W, c->rot);
        if (r->wdirty) {
            double *num = t->num + (size_t)b * (size_t)c->np;
            for (int j = 0; j < c->np; j++) {
                const int ia = c->pa[j], ib = c->pb[j];
                num[j] += c->scale * (q[ia] * W[ia] + q[ib] * W[ib]);
            }
            memset(W, 0, sizeof(double) * (size_t)c->rot);
        }
    }
    r->b = -1;
    r->cnt = r->ss = r->ss2 = r->den = 0.0;
    r->wdirty = 0;
}

#ifdef RB_METRICS_PROBE_AVX512
/* kT[i][n] = kd[n][i] for a whole block (16 keys) and d a multiple of 8: 8 x 8
 * transposes of doubles in registers (data movement only, so the same kT as the
 * scalar loop). */
static void transpose_block(const double *kd, int d, double *kT)
{
    for (int n0 = 0; n0 < KB; n0 += 8)
        for (int i0 = 0; i0 < d; i0 += 8) {
            __m512d r[8], t[8];
            for (int j = 0; j < 8; j++)
                r[j] = _mm512_loadu_pd(kd + (size_t)(n0 + j) * (size_t)d + i0);
            for (int j = 0; j < 8; j += 2) {
                t[j] = _mm512_unpacklo_pd(r[j], r[j + 1]);
                t[j + 1] = _mm512_unpackhi_pd(r[j], r[j + 1]);
            }
            /* t[0]: lanes (r0[0] r1[0]) (r0[2] r1[2]) (r0[4] r1[4]) (r0[6] r1[6]); t[1]
             * the odd elements; t[2], t[3] of r2, r3; ... */
            for (int h = 0; h < 2; h++) {
                const __m512d v0 = _mm512_shuffle_f64x2(t[h], t[h + 2], 0x44);
                const __m512d v1 = _mm512_shuffle_f64x2(t[h], t[h + 2], 0xEE);
                const __m512d w0 = _mm512_shuffle_f64x2(t[h + 4], t[h + 6], 0x44);
                const __m512d w1 = _mm512_shuffle_f64x2(t[h + 4], t[h + 6], 0xEE);
                double *o = kT + (size_t)(i0 + h) * KB + n0;
                _mm512_storeu_pd(o, _mm512_shuffle_f64x2(v0, w0, 0x88));
                _mm512_storeu_pd(o + 2 * KB, _mm512_shuffle_f64x2(v0, w0, 0xDD));
                _mm512_storeu_pd(o + 4 * KB, _mm512_shuffle_f64x2(v1, w1, 0x88));
                _mm512_storeu_pd(o + 6 * KB, _mm512_shuffle_f64x2(v1, w1, 0xDD));
            }
        }
}
#endif

/* Sum of 16 values as a pairwise tree, written out so that both builds add alike. */
static inline double sum16(const double *x)
{
    double h[8];
    for (int i = 0; i < 8; i++)
        h[i] = x[i] + x[i + 8];
    for (int i = 0; i < 4; i++)
        h[i] += h[i + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
}

#ifdef RB_METRICS_PROBE_AVX512
/* sum16 of the 16 values of lo (0-7) and hi (8-15), from registers: the same tree
 * (lane i + lane i + 8, then + lane i + 4, then (0 + 2) + (1 + 3)), so the same bits,
 * without storing the values for sum16 to load back (a vector load of values just
 * stored one by one cannot be forwarded from the stores, and waits for them). */
static inline double sum16v(__m512d lo, __m512d hi)
{
    const __m512d h = _mm512_add_pd(lo, hi);
    const __m256d g = _mm256_add_pd(_mm512_castpd512_pd256(h), _mm512_extractf64x4_pd(h, 1));
    const __m128d c = _mm_add_pd(_mm256_castpd256_pd128(g), _mm256_extractf128_pd(g, 1));
    return _mm_cvtsd_f64(_mm_add_sd(c, _mm_unpackhi_pd(c, c)));
}

/* The smallest of 16 values and the largest of their magnitudes, folded into *mn and
 * *mx as the scalar loop `mn = x < mn ? x : mn; mx = |x| > mx ? |x| : mx` over them in
 * order does. Returns 0, leaving both as they were, when some value is NaN (which the
 * scalar loop skips but a lane-wise tree would carry) or the smallest is zero (where
 * the scalar loop keeps the first zero of the two signs it meets): the caller then
 * runs that loop. */
static inline int minmax16v(__m512d lo, __m512d hi, double *mn, double *mx)
{
    if (_mm512_cmp_pd_mask(lo, hi, _CMP_UNORD_Q))
        return 0;
    __m512d m = _mm512_min_pd(lo, hi);
    __m256d m4 = _mm256_min_pd(_mm512_castpd512_pd256(m), _mm512_extractf64x4_pd(m, 1));
    __m128d m2 = _mm_min_pd(_mm256_castpd256_pd128(m4), _mm256_extractf128_pd(m4, 1));
    const double v = _mm_cvtsd_f64(_mm_min_sd(m2, _mm_unpackhi_pd(m2, m2)));
    if (v == 0.0)
        return 0;
    const __m512d a = _mm512_max_pd(_mm512_abs_pd(lo), _mm512_abs_pd(hi));
    __m256d a4 = _mm256_max_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1));
    __m128d a2 = _mm_max_pd(_mm256_castpd256_pd128(a4), _mm256_extractf128_pd(a4, 1));
    const double w = _mm_cvtsd_f64(_mm_max_sd(a2, _mm_unpackhi_pd(a2, a2)));
    *mn = v < *mn ? v : *mn;
    *mx = w > *mx ? w : *mx;
    return 1;
}
#endif

/* W[0..rot) += p_n k_n for the 16 keys of kd in key order, W held in registers over
 * the keys; the same roundings as run_apply. Keys with p_n = 0 (not used) are skipped,
 * as the per-key path skips them (0 * k would be NaN for an infinite key). */
static void apply16(double *restrict W, const double *restrict p, const double *restrict kd,
                    int d, int rot)
{
    int i = 0;
#if defined(RB_METRICS_PROBE_AVX512)
    /* 64 dims at a time: 8 independent FMA chains, so the chain of 16 keys per
     * element is not bound by the FMA latency */
    for (; i + 64 <= rot; i += 64) {
        __m512d w0 = _mm512_loadu_pd(W + i), w1 = _mm512_loadu_pd(W + i + 8);
        __m512d w2 = _mm512_loadu_pd(W + i + 16), w3 = _mm512_loadu_pd(W + i + 24);
        __m512d w4 = _mm512_loadu_pd(W + i + 32), w5 = _mm512_loadu_pd(W + i + 40);
        __m512d w6 = _mm512_loadu_pd(W + i + 48), w7 = _mm512_loadu_pd(W + i + 56);
        for (int n = 0; n < KB; n++) {
            if (p[n] == 0.0)
                continue;
            const double *k = kd + (size_t)n * (size_t)d + i;
            const __m512d pn = _mm512_set1_pd(p[n]);
            w0 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k), w0);
            w1 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 8), w1);
            w2 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 16), w2);
            w3 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 24), w3);
            w4 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 32), w4);
            w5 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 40), w5);
            w6 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 48), w6);
            w7 = _mm512_fmadd_pd(pn, _mm512_loadu_pd(k + 56), w7);
        }
        _mm512_storeu_pd(W + i, w0);
        _mm512_storeu_pd(W + i + 8, w1);
        _mm512_storeu_pd(W + i + 16, w2);
        _mm512_storeu_pd(W + i + 24, w3);
        _mm512_storeu_pd(W + i + 32, w4);
        _mm512_storeu_pd(W + i + 40, w5);
        _mm512_storeu_pd(W + i + 48, w6);
        _mm512_storeu_pd(W + i + 56, w7);
    }
    for (; i + 8 <= rot; i += 8) {
        __m512d w = _mm512_loadu_pd(W + i);
        for (int n = 0; n < KB; n++)
            if (p[n] != 0.0)
                w = _mm512_fmadd_pd(_mm512_set1_pd(p[n]),
                                    _mm512_loadu_pd(kd + (size_t)n * (size_t)d + i), w);
        _mm512_storeu_pd(W + i, w);
    }
#endif
    for (; i < rot; i++) {
        double w = W[i];
        for (int n = 0; n < KB; n++)
            if (p[n] != 0.0)
                w = RB_MAC(w, p[n], kd[(size_t)n * (size_t)d + i]);
        W[i] = w;
    }
}

/* 1 if every distance of the block, qp - kmax .. qp - kmin, lies in one bin, with the
 * row's run moved to that bin (flushing the old one, as the per-key path would). */
static int whole_block_bin(const shared_ctx *c, run_acc *run, const double *q, double *W,
                           thread_acc *t, int64_t qp, int64_t kmin, int64_t kmax)
{
    const int64_t dlo = qp - kmax, dhi = qp - kmin;
    if (run->b >= 0 && dlo >= run->lo && dhi < run->hi)
        return 1;
    const rb_probe_metrics *m = c->m;
    const int b = bin_of(m->edges, m->nbins, dlo);
    if (bin_of(m->edges, m->nbins, dhi) != b)
        return 0;
    run_flush(run, c, q, W, t);
    run->b = b;
    run->lo = b == 0 ? INT64_MIN : m->edges[b];
    run->hi = b == m->nbins - 1 ? INT64_MAX : m->edges[b + 1];
    return 1;
}

/* One key block [n0, n0 + nb) against every row that sees part of it. */
static void do_block(const shared_ctx *c, thread_acc *t, int64_t n0, int nb)
{
    const int d = c->d, np = c->np, rot = c->rot;
    const rb_probe_metrics *m = c->m;
    const int64_t *kp = c->k_pos + n0;
    int64_t kmin = kp[0], kmax = kp[0];
    for (int n = 0; n < nb; n++) {
        if (kp[n] < kmin)
            kmin = kp[n];
        if (kp[n] > kmax)
            kmax = kp[n];
    }
    if (kmin > c->spos[c->nq - 1])
        return; /* no row sees any key of the block */
    int64_t kvis[KB]; /* key positions, past the block's end none that a row sees */
    for (int n = 0; n < KB; n++)
        kvis[n] = n < nb ? kp[n] : INT64_MAX;
    /* kd first (contiguous, so the conversion vectorizes and the raw rows stream in
     * order), then kT from it in L1/L2 */
    {
        const float *restrict kr = c->k + (size_t)n0 * (size_t)d;
        double *restrict kd = t->kd;
        const size_t nv = (size_t)nb * (size_t)d;
#ifdef _OPENMP
#pragma omp simd
#endif
        for (size_t i = 0; i < nv; i++)
            kd[i] = (double)kr[i];
    }
#ifdef RB_METRICS_PROBE_AVX512
    if (nb == KB && d % 8 == 0)
        transpose_block(t->kd, d, t->kT);
    else
#endif
        for (int i = 0; i < d; i++) {
            double *restrict kt = t->kT + (size_t)i * KB;
            const double *restrict kd = t->kd + i;
            for (int n = 0; n < nb; n++)
                kt[n] = kd[(size_t)n * d];
            for (int n = nb; n < KB; n++)
                kt[n] = 0.0;
        }

    /* rho: sum over visible (row, key) of |q_j||k_j| = sum over keys of |k_j| times
     * the sum of |q_j| over the rows at or after the key's position (suffix sums). */
    if (c->rho) {
        for (int n = 0; n < nb; n++) {
            const int64_t r = lower_bound(c->spos, c->nq, kp[n]);
            if (r == c->nq)
                continue;
            const double *restrict qs = c->qsuf + (size_t)r * (size_t)np;
            const double *restrict kr = t->kd + (size_t)n * d;
            double *restrict rho = t->rho;
            if (m->layout == RB_LAYOUT_NEOX) {
                /* pair j is dims (j, j + np): two contiguous halves, so this vectorizes
                 * (sqrt is one instruction: the file is built without math errno) */
#ifdef _OPENMP
#pragma omp simd
#endif
                for (int j = 0; j < np; j++) {
                    const double a = kr[j], b = kr[np + j];
                    rho[j] += sqrt(a * a + b * b) * qs[j];
                }
            } else {
                for (int j = 0; j < np; j++) {
                    const double a = kr[c->pa[j]], b = kr[c->pb[j]];
                    rho[j] += sqrt(a * a + b * b) * qs[j];
                }
            }
        }
    }

    run_acc local = {.b = -1};
    for (int64_t r = lower_bound(c->spos, c->nq, kmin); r < c->nq; r++) {
        const int64_t row = c->order[r];
        const int64_t qp = c->spos[r];
        const double *q = c->qd + (size_t)row * (size_t)d;
        /* the row's run: kept across blocks (its keys come in block order, so its bin
         * changes rarely) or, without the per-row arrays, this block's */
        run_acc *run = c->persist ? &t->runs[row] : &local;
        double *W = c->persist ? t->Wr + (size_t)row * (size_t)rot : t->W;
        const double lse = c->lse[row];
        const int share = c->share && isfinite(lse);
        const int all = qp >= kmax;
        double *rsc = t->sc;
        block_scores(q, t->kT, d, c->scale, rsc);
        if (share) {
            /* the share weights of the whole block at once (the loop vectorizes),
             * rounded to float (a relative change below 6e-8, the same in numerator
             * and denominator) so that p * k is exact in run_apply; keys below the
             * floor or not visible are not used. p <= 1 up to rounding, since s <= lse
             * for a caller's true lse: only an lse below a visible score by more than
             * 88 (not the true lse) would meet the cap. */
            const double *restrict sc = rsc;
            double *restrict pe = t->pe;
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int n = 0; n < KB; n++) {
                /* a key the row does not see may score far above its lse: its weight
                 * (never used) is taken at the floor, and the others are capped where
                 * p would leave float's range (only an lse off by > 88 reaches it); a
                 * NaN score (outside the contract: inputs finite) goes to the floor
                 * too, not into exp_share's integer conversion */
                const double x = kvis[n] <= qp ? sc[n] - lse : SHARE_LOG_FLOOR;
                pe[n] = (double)(float)exp_share(!(x >= SHARE_LOG_FLOOR) ? SHARE_LOG_FLOOR
                                                 : x > SHARE_LOG_CAP ? SHARE_LOG_CAP : x);
            }
        }
        double rmin = t->rmin[row], rmax = t->rmax[row], rcnt = 0.0;
        const int64_t ns0 = c->nstart[row], ns1 = c->nstart[row + 1];
        if (nb == KB && all && whole_block_bin(c, run, q, W, t, qp, kmin, kmax)) {
            /* the common case: the row sees every key of a whole block, all in the run's
             * bin: the sums as pairwise trees, W updated in one pass over the 16 keys,
             * each needle's count of larger scores over the block at once */
            for (int64_t e = ns0; e < ns1; e++) {
                const int64_t ni = c->nidx[e];
                const double ns = m->needle_s[ni];
                const int64_t npos = m->needle_key_pos[ni];
                int above = 0;
                for (int n = 0; n < KB; n++)
                    above += rsc[n] > ns && kp[n] != npos;
                t->above[ni] += (double)above;
            }
            double pz[KB];
            int any = 0, minmax = 0; /* minmax: rmin and rmax already folded in */
            run->cnt += (double)KB;
            rcnt += (double)KB;
#ifdef RB_METRICS_PROBE_AVX512
            /* the sums, min, max and weights from registers */
            {
                const __m512d x0 = _mm512_loadu_pd(rsc), x1 = _mm512_loadu_pd(rsc + 8);
                minmax = minmax16v(x0, x1, &rmin, &rmax);
                run->ss += sum16v(x0, x1);
                run->ss2 += sum16v(_mm512_mul_pd(x0, x0), _mm512_mul_pd(x1, x1));
                if (share) {
                    const __m512d vl = _mm512_set1_pd(lse);
                    const __m512d fl = _mm512_set1_pd(SHARE_LOG_FLOOR);
                    const __mmask8 u0 =
                        _mm512_cmp_pd_mask(_mm512_sub_pd(x0, vl), fl, _CMP_GE_OQ);
                    const __mmask8 u1 =
                        _mm512_cmp_pd_mask(_mm512_sub_pd(x1, vl), fl, _CMP_GE_OQ);
                    any = (u0 | u1) != 0;
                    if (any) {
                        const __m512d p0 = _mm512_maskz_loadu_pd(u0, t->pe);
                        const __m512d p1 = _mm512_maskz_loadu_pd(u1, t->pe + 8);
                        _mm512_storeu_pd(pz, p0);
                        _mm512_storeu_pd(pz + 8, p1);
                        run->den += sum16v(p0, p1);
                    }
                }
            }
#else
            {
                double s2[KB];
                for (int n = 0; n < KB; n++)
                    s2[n] = rsc[n] * rsc[n];
                run->ss += sum16(rsc);
                run->ss2 += sum16(s2);
                if (share) {
                    for (int n = 0; n < KB; n++) {
                        const int use = rsc[n] - lse >= SHARE_LOG_FLOOR;
                        pz[n] = use ? t->pe[n] : 0.0;
                        any |= use;
                    }
                    if (any)
                        run->den += sum16(pz);
                }
            }
#endif
            if (!minmax)
                for (int n = 0; n < KB; n++) {
                    const double x = rsc[n];
                    rmin = x < rmin ? x : rmin;
                    rmax = fabs(x) > rmax ? fabs(x) : rmax;
                }
            if (any) {
                run_apply(run, W, rot);
                apply16(W, pz, t->kd, d, rot);
                run->wdirty = 1;
            }
            if (!c->persist)
                run_flush(run, c, q, W, t);
            t->rmin[row] = rmin;
            t->rmax[row] = rmax;
            t->rcnt[row] += rcnt;
            continue;
        }
        for (int n = 0; n < nb; n++) {
            if (!all && kp[n] > qp)
                continue;
            const double s = rsc[n];
            const int64_t dist = qp - kp[n];
            if (run->b < 0 || dist < run->lo || dist >= run->hi) {
                run_flush(run, c, q, W, t);
                run->b = bin_of(m->edges, m->nbins, dist);
                run->lo = run->b == 0 ? INT64_MIN : m->edges[run->b];
                run->hi = run->b == m->nbins - 1 ? INT64_MAX : m->edges[run->b + 1];
            }
            run->cnt += 1.0;
            run->ss += s;
            run->ss2 += s * s;
            rcnt += 1.0;
            if (s < rmin)
                rmin = s;
            if (fabs(s) > rmax)
                rmax = fabs(s);
            if (share && s - lse >= SHARE_LOG_FLOOR) {
                const double p = t->pe[n];
                const double *kr = t->kd + (size_t)n * d;
                run->den += p;
                run->pp[run->npend] = p;
                run->pk[run->npend] = kr;
                if (++run->npend == 4)
                    run_apply(run, W, rot);
                run->wdirty = 1;
            }
            for (int64_t e = ns0; e < ns1; e++) {
                const int64_t ni = c->nidx[e];
                if (s > m->needle_s[ni] && kp[n] != m->needle_key_pos[ni])
                    t->above[ni] += 1.0;
            }
        }
        /* keys still pending point into this block's kd: apply them now */
        if (c->persist)
            run_apply(run, W, rot);
        else
            run_flush(run, c, q, W, t);
        t->rmin[row] = rmin;
        t->rmax[row] = rmax;
        t->rcnt[row] += rcnt;
    }
}

/* Rows sorted by position (ties by index, so the order is unique). */
typedef struct {
    int64_t pos, idx;
} pos_idx;

static int cmp_rows(const void *a, const void *b)
{
    const pos_idx *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

#ifndef RB_METRICS_PROBE_AVX512
static
#endif
int ACCUMULATE_IMPL(const float *q, const int64_t *q_pos, const double *lse, int64_t nq,
                    const float *k, const int64_t *k_pos, int64_t nk, double scale,
                    rb_probe_metrics *m, char *err, size_t errlen)
{
    if (!m)
        return rb_errf(err, errlen, RB_EINVAL, "probe metrics: no accumulator struct");
    const int d = m->d, rot = m->rotary_dim, np = rot / 2;
    if (d <= 0 || rot < 0 || rot > d || rot % 2)
        return rb_errf(err, errlen, RB_EINVAL,
                       "probe metrics: d=%d, rotary_dim=%d (need 0 <= rotary_dim <= d, "
                       "even)", d, rot);
    if (m->layout != RB_LAYOUT_NEOX && m->layout != RB_LAYOUT_GPTJ)
        return rb_errf(err, errlen, RB_EINVAL, "probe metrics: unknown layout %d",
                       (int)m->layout);
    if (m->nbins < 1 || !m->edges)
        return rb_errf(err, errlen, RB_EINVAL, "probe metrics: nbins=%d, edges %s",
                       m->nbins, m->edges ? "set" : "NULL");
    if (!m->count || !m->sum_s || !m->sum_s2 || !m->row_min_s || !m->row_max_abs_s ||
        !m->row_count)
        return rb_errf(err, errlen, RB_EINVAL,
                       "probe metrics: count, sum_s, sum_s2 and the row arrays are "
                       "required");
    if (!m->share_num != !m->share_den)
        return rb_errf(err, errlen, RB_EINVAL,
                       "probe metrics: share_num and share_den go together");
    if (m->n_needles < 0 || (m->n_needles > 0 && (!m->needle_key_pos || !m->needle_row ||
                                                  !m->needle_s || !m->needle_above)))
        return rb_errf(err, errlen, RB_EINVAL,
                       "probe metrics: n_needles=%d without its arrays", m->n_needles);
    if (nq < 0 || nk < 0 || (nq > 0 && (!q || !q_pos || !lse)) || (nk > 0 && (!k || !k_pos)))
        return rb_errf(err, errlen, RB_EINVAL, "probe metrics: nq=%lld, nk=%lld, "
                       "missing inputs", (long long)nq, (long long)nk);
    for (int i = 0; i < m->n_needles; i++)
        if (m->needle_row[i] < 0 || m->needle_row[i] >= nq)
            return rb_errf(err, errlen, RB_EINVAL,
                           "probe metrics: needle %d: row %lld not in [0, %lld)", i,
                           (long long)m->needle_row[i], (long long)nq);
    if (nq == 0 || nk == 0)
        return RB_OK;

    int rc = RB_OK;
    const int64_t nblocks = (nk + KB - 1) / KB;
    int T = 1;
#ifdef _OPENMP
    T = omp_get_max_threads();
#endif
    if (T < 1)
        T = 1;
    if ((int64_t)T > nblocks)
        T = (int)nblocks;
    const size_t nbins = (size_t)m->nbins, nn = (size_t)m->n_needles, nqz = (size_t)nq;
    /* every array below starts on a 64-byte line (al8: counts rounded up to 8 doubles),
     * so that no vector load of a key, row or W splits two lines */
#define al8(n) (((size_t)(n) + 7) & ~(size_t)7)
    const size_t per_thread = al8(nbins) * 4 + al8(nbins * (size_t)np) + 3 * al8(nqz) +
                              al8(nn) + al8(np) + 2 * al8((size_t)KB * (size_t)d) + 2 * KB +
                              al8(d);
    int *pab = malloc(sizeof(int) * 2 * (size_t)(np > 0 ? np : 1));
    int64_t *ib = malloc(sizeof(int64_t) * (3 * nqz + 1 + nn));
    thread_acc *ta = malloc(sizeof(thread_acc) * (size_t)T);
    pos_idx *ps = malloc(sizeof(pos_idx) * nqz);
    /* per-row runs (and their W) kept across blocks, unless that is more than 32 MiB
     * of W per thread (many rows of a wide head): then each block flushes its runs */
    const int persist = nqz * (size_t)rot <= ((size_t)4 << 20);
    run_acc *runs = persist ? malloc(sizeof(run_acc) * nqz * (size_t)T) : NULL;
    /* The double rows of q (with their suffix sums), the per-row W and the thread
     * scratch in one block from rb_kernels_alloc (64-byte aligned), at 0, 512 and 1024
     * bytes past a multiple of 4 KiB from its start: a row of q and its W are then not
     * 4 KiB apart, whose loads the core may take for depending on the other's stores.
     * With malloc's placement (the rows from mmap at a page offset of 16 bytes, so
     * every vector load of a row split two lines) the calls of one process took 0.47
     * or 0.70-0.87 s each (1M keys, 512 rows, d = 128, 1 thread, Zen 5 host,
     * 2026-12-04); placed so, the same time in every call of a process. */
#define page_up(b) (((size_t)(b) + 4095) & ~(size_t)4095)
    const size_t qd_bytes = sizeof(double) * al8(nqz * (size_t)d + (nqz + 1) * (size_t)np);
    const size_t wr_bytes = persist ? sizeof(double) * nqz * (size_t)rot * (size_t)T : 0;
    const size_t wr_at = page_up(qd_bytes) + 512, tb_at = page_up(wr_at + wr_bytes) + 1024;
#undef page_up
    char *arena = rb_kernels_alloc(tb_at + sizeof(double) * per_thread * (size_t)T);
    double *qd = (double *)arena;
    double *wr = arena && persist ? (double *)(arena + wr_at) : NULL;
    double *tb = arena ? (double *)(arena + tb_at) : NULL;
    if (wr)
        memset(wr, 0, wr_bytes);
    if (!pab || !ib || !arena || !ta || !ps || (persist && !runs)) {
        rc = rb_errf(err, errlen, RB_ENOMEM, "probe metrics: out of memory (%d threads)",
                     T);
        goto cleanup;
    }

    shared_ctx c = {0};
    c.m = m;
    c.k = k;
    c.k_pos = k_pos;
    c.q_pos = q_pos;
    c.lse = lse;
    c.nq = nq;
    c.nk = nk;
    c.d = d;
    c.np = np;
    c.rot = rot;
    c.scale = scale;
    c.share = m->share_num != NULL;
    c.persist = persist;
    c.rho = m->rho_sum != NULL && np > 0;
    int *pa = pab, *pb = pab + (np > 0 ? np : 1);
    for (int j = 0; j < np; j++) {
        pa[j] = m->layout == RB_LAYOUT_GPTJ ? 2 * j : j;
        pb[j] = m->layout == RB_LAYOUT_GPTJ ? 2 * j + 1 : j + np;
    }
    c.pa = pa;
    c.pb = pb;

    /* rows: double copies, order by position, suffix sums of pair norms */
    int64_t *order = ib, *spos = ib + nqz, *nstart = ib + 2 * nqz, *nidx = ib + 3 * nqz + 1;
    double *qsuf = qd + nqz * (size_t)d;
    for (size_t i = 0; i < nqz * (size_t)d; i++)
        qd[i] = (double)q[i];
    for (int64_t r = 0; r < nq; r++)
        ps[r] = (pos_idx){q_pos[r], r};
    qsort(ps, nqz, sizeof(pos_idx), cmp_rows);
    for (int64_t r = 0; r < nq; r++) {
        order[r] = ps[r].idx;
        spos[r] = ps[r].pos;
    }
    for (int j = 0; j < np; j++)
        qsuf[nqz * (size_t)np + (size_t)j] = 0.0;
    for (int64_t r = nq - 1; r >= 0; r--) {
        const double *qr = qd + (size_t)order[r] * (size_t)d;
        for (int j = 0; j < np; j++) {
            const double a = qr[pa[j]], b = qr[pb[j]];
            qsuf[(size_t)r * np + j] = qsuf[(size_t)(r + 1) * np + j] + sqrt(a * a + b * b);
        }
    }
    /* needles grouped by row (counting sort, stable) */
    for (size_t r = 0; r <= nqz; r++)
        nstart[r] = 0;
    for (size_t i = 0; i < nn; i++)
        nstart[m->needle_row[i] + 1]++;
    for (size_t r = 0; r < nqz; r++)
        nstart[r + 1] += nstart[r];
    for (size_t i = 0; i < nn; i++)
        nidx[nstart[m->needle_row[i]]++] = (int64_t)i;
    for (size_t r = nqz; r > 0; r--)
        nstart[r] = nstart[r - 1];
    nstart[0] = 0;
    c.qd = qd;
    c.order = order;
    c.spos = spos;
    c.qsuf = qsuf;
    c.nstart = nstart;
    c.nidx = nidx;

    for (int t = 0; t < T; t++) {
        double *p = tb + (size_t)t * per_thread;
        thread_acc *a = &ta[t];
        a->count = p; p += al8(nbins);
        a->sum_s = p; p += al8(nbins);
        a->sum_s2 = p; p += al8(nbins);
        a->den = p; p += al8(nbins);
        a->num = p; p += al8(nbins * (size_t)np);
        a->rmin = p; p += al8(nqz);
        a->rmax = p; p += al8(nqz);
        a->rcnt = p; p += al8(nqz);
        a->above = p; p += al8(nn);
        a->rho = p; p += al8(np);
        a->kd = p; p += al8((size_t)KB * (size_t)d);
        a->kT = p; p += al8((size_t)KB * (size_t)d);
        a->sc = p; p += KB;
        a->pe = p; p += KB;
        a->W = p;
        memset(tb + (size_t)t * per_thread, 0, sizeof(double) * per_thread);
        a->runs = persist ? runs + nqz * (size_t)t : NULL;
        a->Wr = persist ? wr + nqz * (size_t)rot * (size_t)t : NULL;
        for (size_t r = 0; persist && r < nqz; r++)
            a->runs[r] = (run_acc){.b = -1};
        for (size_t r = 0; r < nqz; r++)
            a->rmin[r] = INFINITY;
    }

#ifdef _OPENMP
#pragma omp parallel num_threads(T)
#endif
    {
        const int tid = rb_omp_tid(), team = rb_omp_team(); /* team may be < T */
        if (tid < T) {
            for (int64_t b = tid; b < nblocks; b += team) {
                const int64_t n0 = b * KB;
                const int nb = (int)(nk - n0 < KB ? nk - n0 : KB);
                /* the raw rows of this thread's next block, requested now so that their
                 * misses (and page walks) overlap this block's arithmetic */
                if (b + 2 * team < nblocks) {
                    const int64_t nxb = b + 2 * team;
                    const char *nx = (const char *)(k + (size_t)nxb * KB * (size_t)d);
                    const int64_t nkey = nk - nxb * KB < KB ? nk - nxb * KB : KB;
                    const size_t bytes = (size_t)nkey * (size_t)d * sizeof(float);
                    for (size_t o = 0; o < bytes; o += 64)
                        __builtin_prefetch(nx + o, 0, 2);
                }
                do_block(&c, &ta[tid], n0, nb);
            }
            /* close every row's last run */
            for (int64_t row = 0; c.persist && row < nq; row++)
                run_flush(&ta[tid].runs[row], &c, qd + (size_t)row * (size_t)d,
                          ta[tid].Wr + (size_t)row * (size_t)rot, &ta[tid]);
        }
    }

    /* reduce in thread order: sums add, mins/maxes combine */
    for (int t = 0; t < T; t++) {
        const thread_acc *a = &ta[t];
        for (size_t b = 0; b < nbins; b++) {
            m->count[b] += a->count[b];
            m->sum_s[b] += a->sum_s[b];
            m->sum_s2[b] += a->sum_s2[b];
        }
        if (c.share) {
            for (size_t b = 0; b < nbins; b++)
                m->share_den[b] += a->den[b];
            for (size_t i = 0; i < nbins * (size_t)np; i++)
                m->share_num[i] += a->num[i];
        }
        for (size_t r = 0; r < nqz; r++) {
            if (a->rmin[r] < m->row_min_s[r])
                m->row_min_s[r] = a->rmin[r];
            if (a->rmax[r] > m->row_max_abs_s[r])
                m->row_max_abs_s[r] = a->rmax[r];
            m->row_count[r] += a->rcnt[r];
        }
        for (size_t i = 0; i < nn; i++)
            m->needle_above[i] += a->above[i];
        if (c.rho)
            for (int j = 0; j < np; j++)
                m->rho_sum[j] += a->rho[j];
    }

cleanup:
    free(pab);
    free(ib);
    free(arena);
    free(ta);
    free(runs);
    free(ps);
    return rc;
#undef al8
}

#ifndef RB_METRICS_PROBE_AVX512
int rb_probe_metrics_accumulate_avx512(const float *q, const int64_t *q_pos,
                                       const double *lse, int64_t nq, const float *k,
                                       const int64_t *k_pos, int64_t nk, double scale,
                                       rb_probe_metrics *m, char *err, size_t errlen);

/* 1 if the CPU and OS run AVX-512 code (decided once). */
int rb_probe_metrics_accumulate(const float *q, const int64_t *q_pos, const double *lse,
                                int64_t nq, const float *k, const int64_t *k_pos,
                                int64_t nk, double scale, rb_probe_metrics *m,
                                char *err, size_t errlen)
{
    if (rb_kernels_helpers_avx512())
        return rb_probe_metrics_accumulate_avx512(q, q_pos, lse, nq, k, k_pos, nk, scale,
                                                  m, err, errlen);
    return accumulate_portable(q, q_pos, lse, nq, k, k_pos, nk, scale, m, err, errlen);
}
#endif
