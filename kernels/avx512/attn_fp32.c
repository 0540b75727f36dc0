/* attn_fp32.c — the fp32 AVX-512 attention tile: K packed into 64-key panels and V into aligned rows (or, for the sparse blocks of a probe, both read in place), register-blocked QK^T and PV (6-row tiles), online softmax with the entropy accumulator, OpenMP; with bf16 rounding, the bf16 kernel's probe path (VDPBF16PS on key blocks converted to bf16 pairs in the key-outer order). */
#include "rb_avx512.h"
#include "rb_peak.h"
#include "rb_pf.h"
#include "rb_omp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Block sizes. A key block is BC keys packed as K^T[d][BC] (four 16-key panels side
 * by side) and V[BC][dp] (64-byte aligned rows, zero padded); a group is up to RG query
 * rows against one key block. Register tiles hold at most 24 zmm accumulators: at most
 * TR = 6 rows x 64 keys (QK^T) or x 64 dims (PV), a group of 7..12 rows taking two, so
 * that every 24 FMAs issue 10 loads (4 K or V vectors, 6 broadcasts) where 12 x 32 tiles
 * issued 14. Measured on the Intel host of 2026-12-01 (d = 128, L = 16384, 1 thread,
 * one process alternating the two builds): 2.4 % faster than 12 x 32 for groups of 7..12
 * rows (2.5 % at d = 64, 0-0.5 % at d = 256 and at L = 4096), the same bits. A query
 * block (query-outer order) is BR rows, whose
 * fp32 state stays in L1/L2 while the key blocks stream by. */
#define BC 64
#define RG 12
#define TR 6
#define BR 96
/* key-outer order (the probe): at most this many query rows (their fp32 state, 1 MiB at
 * d = 128, and their scores for one block stay in L2); block_rows_run takes at most
 * this many rows at once (rb_kernels.h) */
#define KO_ROWS RB_PROBE_ROWS_MAX
/* key-outer schedule (ko_schedule): KO_KAPPA is the visible (row, key) pairs whose
 * arithmetic takes about as long as streaming one key's K and V rows on one core; a
 * block's work prefetches nr * cnt / KO_KAPPA keys' lines of the blocks after it, and
 * the cursor runs at most KO_AHEAD blocks ahead (256 KiB of K and V at d = 128, well
 * inside L2). Measured on the AMD host of 2026-11-30 (1M keys, 116 log-spaced rows):
 * KO_KAPPA 5, 7, 10, 14, 20, 30 and KO_AHEAD 2, 4, 6, 8, 12; 10 and 4 were best or
 * within the noise of it at 1 and 2 threads. */
#define KO_KAPPA 10
#define KO_AHEAD 4
/* the bf16 key-outer order's partition cost of a block beyond its rows (kblock_pack_bf16's
 * conversion and the stream of K and V, in units of one row's VDPBF16PS work on the
 * block): the fp32 order's 32 (stream) + 32 (packing), not tuned on its own; a row's
 * VDPBF16PS work is about half an fp32 row's, and the conversion reads the whole block */
#define KO_BF16_FIXED 64
/* key-outer tail (run_key_outer, T > 1): the last KO_TAIL_PERMILLE / 1000 of the
 * schedule's estimated cost is cut into pieces that the threads take as they finish
 * (KO_TAIL_PER_THREAD a thread, but at most KO_TAIL_MAX, one per KO_TAIL_MIN_BLOCKS
 * key blocks of the call, and as many double states of nq rows as fit KO_TAIL_BYTES;
 * none when that leaves fewer than 2), each merged into a double state of its own, so
 * that a thread slowed by its neighbour or its host does not hold the call back, and
 * the bits do not depend on which thread took which piece */
#define KO_TAIL_PERMILLE 200
#define KO_TAIL_PER_THREAD 8
#define KO_TAIL_MAX 64
#define KO_TAIL_MIN_BLOCKS 16
#define KO_TAIL_BYTES ((size_t)32 << 20)
_Static_assert(BR <= KO_ROWS, "block_rows_run's group mask");
_Static_assert(RG <= 2 * TR, "qk_block and pv_rows split a group into two tiles at most");
/* query-outer order: at most this many packed K floats at once (larger nk in chunks) */
#define KPACK_MAX ((size_t)8 << 20)
/* a row's fp32 state takes at most this many key blocks (FLUSH_BLOCKS * BC keys, i.e.
 * FLUSH_BLOCKS * BC / 16 terms per lane of l, u) before it is merged into a double
 * state and restarted: fp32 sums over a whole million-key shard lost ~1e-5 of l and of
 * the outputs to rounding (the entropy ~3e-6 nats), enough to make a probe's metrics
 * differ between rank counts, which split the keys differently */
#define FLUSH_BLOCKS 64

#define RB_AI static inline __attribute__((always_inline))

/* log2 e and ln 2: the fp32 row state is kept in base 2 (softmax_row) */
#define RB_LOG2E 1.44269504088896340736
#define RB_LN2 0.69314718055994530942

static size_t round64(size_t n) { return (n + 63u) & ~(size_t)63u; }

/* bf16_round: x rounded to bf16 (nearest, ties to even: what VCVTNEPS2BF16 does to a
 * finite float), kept as a float; the low 16 bits become 0. bf16_round1: one float. */
RB_AI __m512 bf16_round(__m512 x)
{
    const __m512i u = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF)));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u)));
}

static float bf16_round1(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* One query row after sorting by position: its position and its index in q/state. */
typedef struct {
    int64_t pos;
    int64_t idx;
} rb_row;

static int row_cmp(const void *a, const void *b)
{
    const rb_row *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* First index i in [lo, hi) of the sorted rows with pos >= p (hi if none). */
static int64_t rows_lower_bound(const rb_row *rows, int64_t lo, int64_t hi, int64_t p)
{
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (rows[mid].pos < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Transpose 16 rows of 16 floats in registers: r[i][j] -> r[j][i]. */
RB_AI void tr16x16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), e = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
    }
    __m512 o[16];
    for (int k = 0; k < 4; k++) {
        const __m512 t0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x44);
        const __m512 t1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xEE);
        const __m512 t2 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x44);
        const __m512 t3 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xEE);
        o[k] = _mm512_shuffle_f32x4(t0, t2, 0x88);
        o[k + 4] = _mm512_shuffle_f32x4(t0, t2, 0xDD);
        o[k + 8] = _mm512_shuffle_f32x4(t1, t3, 0x88);
        o[k + 12] = _mm512_shuffle_f32x4(t1, t3, 0xDD);
    }
    for (int i = 0; i < 16; i++)
        r[i] = o[i];
}

/* One key block, packed (K^T) or read in place (key rows), its padded positions, and
 * where its V rows are. */
typedef struct {
    const float *kt;  /* [d][BC], keys past cnt are 0; NULL: keys read in place */
    const float *kr;  /* kt NULL: the block's BC key rows in place (row stride d) */
    const int64_t *kp; /* [BC], INT64_MAX past cnt */
    const float *vt;  /* [BC][dp], 64-byte aligned, zero past cnt and past d (in place:
                       * the caller's rows, whole block and dp = d); NULL without V */
    int cnt;          /* valid keys, 1..BC */
    int64_t kmin, kmax;
    int cold_k, cold_v; /* 1: kr (vt) are the caller's rows, in L2 at best (rb_pf); 0:
                         * packed or copied into scratch just now */
    /* bf16 key-outer blocks (kblock_pack_bf16; kt, kr and vt NULL): BC key rows as bf16
     * pairs, kr2[c][i] = (k_c[2i], k_c[2i + 1]) (row stride np, bf16_np), and V as bf16
     * key pairs, vt2[t][j] = (v_2t[j], v_2t+1[j]) (row stride dp), the lower half of each
     * 32-bit element the even one, as VDPBF16PS pairs them; zero past cnt and past d */
    const uint32_t *kr2, *vt2;
} rb_kblock;

/* kblock_positions: kp[0..BC) from k_pos[c0..c0 + cnt) (INT64_MAX past cnt), and the
 * block's count and position range into *b. */
static void kblock_positions(const int64_t *k_pos, int64_t c0, int cnt, int64_t *kp,
                             rb_kblock *b)
{
    int64_t lo = k_pos[c0], hi = k_pos[c0];
    for (int c = 0; c < BC; c++) {
        const int64_t p = c < cnt ? k_pos[c0 + c] : INT64_MAX;
        kp[c] = p;
        if (c < cnt) {
            lo = p < lo ? p : lo;
            hi = p > hi ? p : hi;
        }
    }
    b->kp = kp;
    b->cnt = cnt;
    b->kmin = lo;
    b->kmax = hi;
}

/* rb_kblock_pack: pack keys [c0, c0 + cnt) of k (rows of d floats) into kt[d][BC]
 * (64-byte aligned) with 16x16 register transposes where a whole 16x16 square exists,
 * element by element elsewhere; zero past cnt. Their v rows are copied into vt[BC][dp]
 * (64-byte aligned, so that PV loads never split a line), zero past d and past cnt.
 * Fills b->kt, b->kr and b->vt; its positions are kblock_positions' (called first).
 * cnt is 1..BC. One pf_step (pf may be NULL) per transpose and per 16 v rows. v = NULL:
 * no V (b->vt = NULL). bf16: every k and v value rounded to bf16 on the way. */
static void rb_kblock_pack(const float *k, const float *v, int64_t c0, int cnt, int d,
                           int dp, int bf16, rb_pf *pf, float *kt, float *vt, rb_kblock *b)
{
    const float *kb = k + (size_t)c0 * (size_t)d;
    int jdone = 0;
    if (cnt == BC) {
        for (; jdone + 16 <= d; jdone += 16)
            for (int p = 0; p < BC / 16; p++) {
                pf_step(pf);
                __m512 r[16];
                for (int i = 0; i < 16; i++) {
                    r[i] = _mm512_loadu_ps(kb + (size_t)(16 * p + i) * (size_t)d + jdone);
                    if (bf16)
                        r[i] = bf16_round(r[i]);
                }
                tr16x16(r);
                for (int i = 0; i < 16; i++)
                    _mm512_store_ps(kt + (size_t)(jdone + i) * BC + 16 * p, r[i]);
            }
    }
    for (int j = jdone; j < d; j++)
        for (int c = 0; c < BC; c++) {
            const float x = c < cnt ? kb[(size_t)c * (size_t)d + j] : 0.0f;
            kt[(size_t)j * BC + c] = bf16 ? bf16_round1(x) : x;
        }
    const int tail = d % 16;
    const __mmask16 mt = (__mmask16)((1u << tail) - 1u);
    for (int c = 0; v && c < BC; c++) {
        const float *vs = v + (size_t)c0 * (size_t)d;
        if (c % 16 == 0)
            pf_step(pf);
        float *dst = vt + (size_t)c * (size_t)dp;
        if (c >= cnt) {
            for (int j = 0; j < dp; j += 16)
                _mm512_store_ps(dst + j, _mm512_setzero_ps());
            continue;
        }
        const float *src = vs + (size_t)c * (size_t)d;
        int j = 0;
        for (; j + 16 <= d; j += 16) {
            const __m512 x = _mm512_loadu_ps(src + j);
            _mm512_store_ps(dst + j, bf16 ? bf16_round(x) : x);
        }
        if (tail) {
            const __m512 x = _mm512_maskz_loadu_ps(mt, src + j);
            _mm512_store_ps(dst + j, bf16 ? bf16_round(x) : x);
        }
    }
    b->kt = kt;
    b->kr = NULL;
    b->kr2 = b->vt2 = NULL;
    b->vt = v ? vt : NULL;
    b->cold_k = b->cold_v = 0;
}

/* kblock_v_inplace: whether kblock_inplace reads a block's V rows in place (v given,
 * 64-byte aligned, a whole block) rather than copying them. */
static int kblock_v_inplace(const float *v, int cnt)
{
    return v && (uintptr_t)v % 64 == 0 && cnt == BC;
}

/* kblock_inplace: a block of cnt keys from c0 (d a multiple of 16, so dp = d) whose
 * key rows are read where they are (qk_lane), and its V rows too when v is 64-byte
 * aligned (pv_run's aligned loads; kblock_v_inplace), else copied into vt as
 * rb_kblock_pack does. Saves the K transposes and their stores, which for the few rows
 * that see a late probe block cost more than qk_lane's horizontal sums. A block of
 * fewer than BC keys (a call's last) has its K and V rows copied into kr and vt, zero
 * past cnt, so that its scores come from qk_lane too: a pair's score then has the same
 * bits whatever block of whatever key-outer call it falls in, and probe rows split over
 * ranks (and over a rank's own and balanced-in keys) agree with one rank to the merges'
 * rounding (a packed tail used to score the needles at the end of a shard ~2 ulps
 * apart). fp32 only (the bf16 key-outer order takes kblock_pack_bf16). One pf_step per
 * 16 rows copied (key rows of a short block, v rows when not aligned or a short
 * block). */
static void kblock_inplace(const float *k, const float *v, int64_t c0, int cnt, int d,
                           rb_pf *pf, float *kr, float *vt, rb_kblock *b)
{
    const int whole = cnt == BC;
    b->kt = NULL;
    b->kr2 = b->vt2 = NULL;
    b->kr = k + (size_t)c0 * (size_t)d;
    b->vt = NULL;
    b->cold_k = whole;
    b->cold_v = 0;
    if (!whole) {
        for (int c = 0; c < BC; c++) {
            if (c % 16 == 0)
                pf_step(pf);
            for (int j = 0; j < d; j += 16) {
                __m512 x = _mm512_setzero_ps();
                if (c < cnt)
                    x = _mm512_loadu_ps(b->kr + (size_t)c * (size_t)d + j);
                _mm512_store_ps(kr + (size_t)c * (size_t)d + j, x);
            }
        }
        b->kr = kr;
    }
    if (!v)
        return;
    const float *vs = v + (size_t)c0 * (size_t)d;
    if (kblock_v_inplace(v, cnt)) {
        b->vt = vs;
        b->cold_v = 1;
        return;
    }
    for (int c = 0; c < BC; c++) {
        if (c % 16 == 0)
            pf_step(pf);
        for (int j = 0; j < d; j += 16) {
            __m512 x = _mm512_setzero_ps();
            if (c < cnt)
                x = _mm512_loadu_ps(vs + (size_t)c * (size_t)d + j);
            _mm512_store_ps(vt + (size_t)c * (size_t)d + j, x);
        }
    }
    b->vt = vt;
}

/* S[r][0..16*NK) = <q_r, k_c> (unscaled) for R rows (row pointers qr) and NK 16-key
 * panels of a packed block starting at kt (row stride BC); S has row stride BC. With
 * one row, even and odd j go to separate accumulators (8 FMA chains, not 4). */
RB_AI void qk_tile(const float *const *qr, const int R, const int NK, const float *kt,
                   const int d, float *S)
{
    __m512 a[RG][4], e[4];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int w = 0; w < NK; w++)
            a[r][w] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int w = 0; w < NK; w++)
        e[w] = _mm512_setzero_ps();
    int j = 0;
    if (R == 1) {
        for (; j + 2 <= d; j += 2) {
            const float *kj = kt + (size_t)j * BC;
            const __m512 q0 = _mm512_set1_ps(qr[0][j]), q1 = _mm512_set1_ps(qr[0][j + 1]);
#pragma GCC unroll 4
            for (int w = 0; w < NK; w++) {
                a[0][w] = _mm512_fmadd_ps(q0, _mm512_load_ps(kj + 16 * w), a[0][w]);
                e[w] = _mm512_fmadd_ps(q1, _mm512_load_ps(kj + BC + 16 * w), e[w]);
            }
        }
    }
    for (; j < d; j++) {
        const float *kj = kt + (size_t)j * BC;
        __m512 kv[4];
#pragma GCC unroll 4
        for (int w = 0; w < NK; w++)
            kv[w] = _mm512_load_ps(kj + 16 * w);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            const __m512 qb = _mm512_set1_ps(qr[r][j]);
#pragma GCC unroll 4
            for (int w = 0; w < NK; w++)
                a[r][w] = _mm512_fmadd_ps(qb, kv[w], a[r][w]);
        }
    }
    if (R == 1) {
#pragma GCC unroll 4
        for (int w = 0; w < NK; w++)
            a[0][w] = _mm512_add_ps(a[0][w], e[w]);
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int w = 0; w < NK; w++)
            _mm512_store_ps(S + r * BC + 16 * w, a[r][w]);
}

/* qk_block: the scores of R rows against a whole packed block: 1..TR rows as one R x 64
 * tile, more (up to 2 TR) as a TR x 64 tile and an (R - TR) x 64 tile. */
RB_AI void qk_block(const float *const *qr, const int R, const float *kt, const int d,
                    float *S)
{
    if (R <= TR) {
        qk_tile(qr, R, 4, kt, d, S);
    } else {
        qk_tile(qr, TR, 4, kt, d, S);
        qk_tile(qr + TR, R - TR, 4, kt, d, S + TR * BC);
    }
}

#define RB_ROW_CASES(F)                                                                 \
    switch (R) {                                                                        \
    case 12: F(12); break;                                                              \
    case 11: F(11); break;                                                              \
    case 10: F(10); break;                                                              \
    case 9: F(9); break;                                                                \
    case 8: F(8); break;                                                                \
    case 7: F(7); break;                                                                \
    case 6: F(6); break;                                                                \
    case 5: F(5); break;                                                                \
    case 4: F(4); break;                                                                \
    case 3: F(3); break;                                                                \
    case 2: F(2); break;                                                                \
    default: F(1); break;                                                               \
    }

/* RB_D_CASES(F): F(128), F(64) or F(256) when d is one of them, so that the callee is
 * inlined with its dims a constant (unrolled, key rows at immediate offsets), else
 * F(d). */
#define RB_D_CASES(F)                                                                   \
    do {                                                                                \
        if (d == 128)                                                                   \
            F(128);                                                                     \
        else if (d == 64)                                                               \
            F(64);                                                                      \
        else if (d == 256)                                                              \
            F(256);                                                                     \
        else                                                                            \
            F(d);                                                                       \
    } while (0)

/* qk_run: qk_block with the row count and the common head_dims made constants. */
static void qk_run(const float *const *qr, int R, const float *kt, int d, float *S)
{
#define QK_D128(RR) qk_block(qr, RR, kt, 128, S)
#define QK_D64(RR) qk_block(qr, RR, kt, 64, S)
#define QK_D256(RR) qk_block(qr, RR, kt, 256, S)
#define QK_DANY(RR) qk_block(qr, RR, kt, d, S)
    if (d == 128) {
        RB_ROW_CASES(QK_D128)
    } else if (d == 64) {
        RB_ROW_CASES(QK_D64)
    } else if (d == 256) {
        RB_ROW_CASES(QK_D256)
    } else {
        RB_ROW_CASES(QK_DANY)
    }
#undef QK_D128
#undef QK_D64
#undef QK_D256
#undef QK_DANY
}

/* acc[r][0 .. 16*NV) += sum_c P[r][c] * vt[c][0 .. 16*NV) for R <= TR rows (acc row
 * stride dp, P row stride BC), cnt keys of a packed block (vt row stride dp, aligned).
 * With one row, even and odd keys go to separate accumulators (8 FMA chains, not 4).
 * One pf_step (pf may be NULL) per 16 keys, outside the inner loop. */
RB_AI void pv_tile(const int R, const int NV, const float *P, const float *vt, size_t dp,
                   int cnt, float *acc, rb_pf *pf)
{
    __m512 a[TR][4], e[4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int w = 0; w < NV; w++)
            a[r][w] = _mm512_load_ps(acc + (size_t)r * dp + 16 * w);
#pragma GCC unroll 4
    for (int w = 0; w < NV; w++)
        e[w] = _mm512_setzero_ps();
    for (int c0 = 0; c0 < cnt; c0 += 16) {
        pf_step(pf);
        const int c1 = cnt - c0 < 16 ? cnt : c0 + 16;
        int c = c0;
        if (R == 1) {
            for (; c + 2 <= c1; c += 2) {
                const float *vr = vt + (size_t)c * dp;
                const __m512 p0 = _mm512_set1_ps(P[c]), p1 = _mm512_set1_ps(P[c + 1]);
#pragma GCC unroll 4
                for (int w = 0; w < NV; w++) {
                    a[0][w] = _mm512_fmadd_ps(p0, _mm512_load_ps(vr + 16 * w), a[0][w]);
                    e[w] = _mm512_fmadd_ps(p1, _mm512_load_ps(vr + dp + 16 * w), e[w]);
                }
            }
        }
        for (; c < c1; c++) {
            const float *vr = vt + (size_t)c * dp;
            __m512 x[4];
#pragma GCC unroll 4
            for (int w = 0; w < NV; w++)
                x[w] = _mm512_load_ps(vr + 16 * w);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const __m512 pb = _mm512_set1_ps(P[r * BC + c]);
#pragma GCC unroll 4
                for (int w = 0; w < NV; w++)
                    a[r][w] = _mm512_fmadd_ps(pb, x[w], a[r][w]);
            }
        }
    }
    if (R == 1) {
#pragma GCC unroll 4
        for (int w = 0; w < NV; w++)
            a[0][w] = _mm512_add_ps(a[0][w], e[w]);
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int w = 0; w < NV; w++)
            _mm512_store_ps(acc + (size_t)r * dp + 16 * w, a[r][w]);
}

/* pv_tiles: acc[r][0..dp) += P[r] . V over cnt keys for R <= TR rows as one tile:
 * passes of 64 dims, then 16 at a time for the rest of dp. */
RB_AI void pv_tiles(const int R, const float *P, const float *vt, size_t dp, int cnt,
                    float *acc, rb_pf *pf)
{
    size_t j0 = 0;
    for (; j0 + 64 <= dp; j0 += 64)
        pv_tile(R, 4, P, vt + j0, dp, cnt, acc + j0, pf);
    for (; j0 < dp; j0 += 16)
        pv_tile(R, 1, P, vt + j0, dp, cnt, acc + j0, pf);
}

/* pv_rows: pv_tiles for R <= 2 TR rows, as a TR-row tile and the rest past TR rows. */
RB_AI void pv_rows(const int R, const float *P, const float *vt, size_t dp, int cnt,
                   float *acc, rb_pf *pf)
{
    if (R > TR) {
        pv_tiles(TR, P, vt, dp, cnt, acc, pf);
        pv_tiles(R - TR, P + TR * BC, vt, dp, cnt, acc + TR * dp, pf);
    } else {
        pv_tiles(R, P, vt, dp, cnt, acc, pf);
    }
}

/* pv_steps_rows: the pf_steps pv_rows (and pv2_run, which steps once per 8 key pairs:
 * as often) takes over the row groups (RG at a time) of nr rows, dp dims and cnt keys:
 * one per 16 keys of each pass over a slice of dims, of each tile. */
static int64_t pv_steps_rows(int64_t nr, size_t dp, int cnt)
{
    int64_t tiles = nr / RG * (RG > TR ? 2 : 1);
    if (nr % RG)
        tiles += nr % RG > TR ? 2 : 1;
    return tiles * (int64_t)(dp / 64 + dp % 64 / 16) * ((cnt + 15) / 16);
}

/* pv_run: pv_rows with the row count made a constant; one pf_step (pf may be NULL) per
 * 16 keys of each pass (pv_steps_rows). */
static void pv_run(int R, const float *P, const float *vt, size_t dp, int cnt, float *acc,
                   rb_pf *pf)
{
#define PV_R(RR) pv_rows(RR, P, vt, dp, cnt, acc, pf)
    RB_ROW_CASES(PV_R);
#undef PV_R
}

/* sum16: the 16 horizontal sums of a[0..16) as one vector, lane i = the sum of the
 * lanes of a[4 * (i % 4) + i / 4] (callers order their inputs so: see qk_lane); 30
 * shuffles and 15 adds, a fixed tree. */
RB_AI __m512 sum16(const __m512 a[16])
{
    __m512 b[8], c[4], e[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xEE));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xDD));
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        e[i] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(e[0], e[1], 0x88),
                         _mm512_shuffle_ps(e[0], e[1], 0xDD));
}

/* store_quarters: the four 128-bit quarters of x (4 scores of row r in quarter r, as
 * sum16 leaves qk_lane4_d's and qk2_lane4_d's accumulators) to S + r * BC. */
RB_AI void store_quarters(float *S, __m512 x)
{
    _mm_store_ps(S + 0 * BC, _mm512_extractf32x4_ps(x, 0));
    _mm_store_ps(S + 1 * BC, _mm512_extractf32x4_ps(x, 1));
    _mm_store_ps(S + 2 * BC, _mm512_extractf32x4_ps(x, 2));
    _mm_store_ps(S + 3 * BC, _mm512_extractf32x4_ps(x, 3));
}

/* ---- bf16 pairs for VDPBF16PS: the bf16 kernel's key-outer order ------------------
 * q, k, p and v are converted to bf16 by VCVTNE2PS2BF16 (round to nearest even, as
 * bf16_round does to finite values) and multiplied by VDPBF16PS, whose every 32-bit
 * lane adds the two products of a bf16 pair (each exact in fp32) to an fp32
 * accumulator: half the instructions of fp32 FMAs on rounded values. A score is the
 * chain of one lane over the pairs i = 0, 1, ... of its dims in order, and an output
 * dim the chain of one lane over a block's key pairs in order, whatever the tile's
 * row count or the key's slot, so a pair's score has the same bits in every block of
 * every call (kernels.grid, "score bits"). VDPBF16PS treats bf16 subnormals as 0 and
 * flushes subnormal results (it does not consult MXCSR); the inputs are taken to be
 * finite, as rb_attn_tile_avx512_bf16ko says. Measured on the Zen 4 host of 2026-12-01
 * (1M keys, 116 log-spaced rows, d = 128, harness): the probe's arithmetic alone (K
 * and V aliased onto 1 MiB) 0.082 -> 0.056 s at 1 thread and 0.043 -> 0.029 s at 2
 * against fp32 FMAs on rounded values; from memory 0.097-0.104 -> 0.084-0.095 s and
 * 0.053-0.058 -> 0.049-0.054 s, the stream of K and V hidden no better than before. */

/* bf16_ld16: n floats from p (n >= 16: 16; n <= 0: none, p is not read), zero past n. */
RB_AI __m512 bf16_ld16(const float *p, int n)
{
    if (n >= 16)
        return _mm512_loadu_ps(p);
    if (n <= 0)
        return _mm512_setzero_ps();
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1u), p);
}

/* bf16x2: 32 floats (lo, then hi) as 16 bf16 pairs, pair i = (x[2i], x[2i + 1]) with
 * x[2i] in its lower half, i.e. the 32 bf16 values in memory order. */
RB_AI __m512i bf16x2(__m512 lo, __m512 hi)
{
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* bf16_np: the bf16 pairs per row of the VDPBF16PS path, (d + 1) / 2 rounded up to 16,
 * so that a row is whole 64-byte vectors (pairs past d are 0). */
static int bf16_np(int d) { return (int)(((unsigned)(d + 1) / 2u + 15u) & ~15u); }

/* l1_prefetch: ask for the `bytes` from p in L1, one PREFETCHT0 per 64 bytes (a hint:
 * when p is not line-aligned the last line may be left out). */
static void l1_prefetch(const void *p, size_t bytes)
{
    const char *c = (const char *)p;
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch(c + o, _MM_HINT_T0);
}

/* bf16_row_pairs: one row of d floats as np bf16 pairs into dst (64-byte aligned), zero
 * past d. */
static void bf16_row_pairs(const float *x, int d, int np, uint32_t *dst)
{
    for (int i0 = 0; i0 < np; i0 += 16) {
        const int j0 = 2 * i0;
        _mm512_store_si512(dst + i0, bf16x2(bf16_ld16(x + j0, d - j0),
                                            bf16_ld16(x + j0 + 16, d - j0 - 16)));
    }
}

/* kblock_pack_bf16: keys [c0, c0 + cnt) of k and v (rows of d floats) as bf16 pairs for
 * VDPBF16PS into kr2 (BC rows of np pairs, kr2[c][i] = (k_c[2i], k_c[2i + 1])) and vt2
 * (BC / 2 rows of dp pairs: vt2[t][j] = (v_2t[j], v_2t+1[j]), the two converted rows
 * interleaved by VPERMW), both 64-byte aligned, zero past cnt and past d; every whole or
 * short block, any d, the same way. K is not transposed: the scores sum the dims in
 * the lanes (qk2_lane), since on the Zen 4 host of 2026-12-01 the 16 x 16 transposes
 * of a packed K^T cost more than the few rows of a probe block save (the whole pack
 * 2.4 us a block, against ~0.5 without them). Fills b->kr2 and b->vt2 (NULL without
 * v; kt, kr and vt NULL); its positions are kblock_positions'. One pf_step (pf may be
 * NULL) per 16 key rows and per 4 key pairs of V. The block's K rows are asked for in
 * L1 (l1_prefetch) before they are read, the first half of its V rows halfway through K
 * and the rest before V, as block_rows_run does for the rows it reads in place, so that
 * the conversion's loads do not wait for one line at a time: measured on the Zen 5 host
 * of 2026-12-05 (`ropebench bench --only probe --kernels avx512_bf16 --threads 1,2
 * --reps 9`, builds alternating), 16 probe positions 0.060-0.069 -> 0.046-0.059 s at 1
 * thread and 0.032-0.034 -> 0.025-0.028 s at 2, the default 128 0.058-0.060 -> 0.053-0.057
 * and 0.029-0.031 -> 0.027-0.028 s, 512 unchanged. */
static void kblock_pack_bf16(const float *k, const float *v, int64_t c0, int cnt, int d,
                             size_t dp, rb_pf *pf, uint32_t *kr2, uint32_t *vt2, rb_kblock *b)
{
    const int np = bf16_np(d);
    const float *kb = k + (size_t)c0 * (size_t)d;
    l1_prefetch(kb, (size_t)cnt * (size_t)d * sizeof(float));
    const size_t vbytes = v ? (size_t)cnt * (size_t)d * sizeof(float) : 0;
    const float *vb = v ? v + (size_t)c0 * (size_t)d : NULL;
    for (int c = 0; c < BC; c++) {
        if (c % 16 == 0)
            pf_step(pf);
        if (c == BC / 2) /* (vbytes 0 without V) */
            l1_prefetch(vb, vbytes / 2);
        uint32_t *dst = kr2 + (size_t)c * (size_t)np;
        if (c < cnt)
            bf16_row_pairs(kb + (size_t)c * (size_t)d, d, np, dst);
        else
            for (int i = 0; i < np; i += 16)
                _mm512_store_si512(dst + i, _mm512_setzero_si512());
    }
    b->kt = b->vt = b->kr = NULL;
    b->kr2 = kr2;
    b->vt2 = NULL;
    b->cold_k = b->cold_v = 0;
    if (!v)
        return;
    /* word 2m of the result = word m of the pair (v_2t), word 2m + 1 = word 16 + m (v_2t+1) */
    const __m512i ilv = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
    l1_prefetch((const char *)vb + vbytes / 2, vbytes - vbytes / 2);
    for (int t = 0; t < BC / 2; t++) {
        if (t % 4 == 0)
            pf_step(pf);
        const int c = 2 * t;
        const float *r0 = vb + (size_t)c * (size_t)d, *r1 = r0 + d;
        uint32_t *dst = vt2 + (size_t)t * dp;
        for (int j = 0; j < (int)dp; j += 16) {
            const __m512 a = c < cnt ? bf16_ld16(r0 + j, d - j) : _mm512_setzero_ps();
            const __m512 e = c + 1 < cnt ? bf16_ld16(r1 + j, d - j) : _mm512_setzero_ps();
            _mm512_store_si512(dst + j, _mm512_permutexvar_epi16(ilv, bf16x2(a, e)));
        }
    }
    b->vt2 = vt2;
}

/* qk2_lane_d: S[0..BC) = <q, k_c> for one row (np bf16 pairs q2) against a
 * kblock_pack_bf16 block's key rows kr2, the dims in the lanes: 16 keys at a time, one
 * VDPBF16PS chain per key over its np / 16 vectors of pairs, then sum16 (the key slots
 * of qk_lane_d). Inlined with np a constant (qk2_lane). */
RB_AI void qk2_lane_d(const uint32_t *q2, const uint32_t *kr2, const int np, float *S,
                      rb_pf *pf)
{
    for (int w = 0; w < BC / 16; w++) {
        pf_step(pf);
        const uint32_t *kw = kr2 + (size_t)16 * w * (size_t)np;
        __m512 a[16];
#pragma GCC unroll 16
        for (int s = 0; s < 16; s++)
            a[s] = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int i = 0; i < np; i += 16) {
            const __m512bh qv = (__m512bh)_mm512_load_si512(q2 + i);
#pragma GCC unroll 16
            for (int s = 0; s < 16; s++)
                a[s] = _mm512_dpbf16_ps(
                    a[s], qv,
                    (__m512bh)_mm512_load_si512(kw + (size_t)(4 * (s % 4) + s / 4) * (size_t)np + i));
        }
        _mm512_store_ps(S + 16 * w, sum16(a));
    }
}

/* qk2_lane4_d: qk2_lane_d for 4 rows at once (the layout of qk_lane4_d: 4 keys x 4 rows
 * in 16 accumulators, one key load feeding 4 VDPBF16PS), each score the same chain and
 * tree as qk2_lane_d, so both give the same bits. One pf_step per 4 keys. */
RB_AI void qk2_lane4_d(const uint32_t *const *q2, const uint32_t *kr2, const int np,
                       float *S, rb_pf *pf)
{
    for (int k0 = 0; k0 < BC; k0 += 4) {
        pf_step(pf);
        const uint32_t *kw = kr2 + (size_t)k0 * (size_t)np;
        __m512 a[16];
#pragma GCC unroll 16
        for (int s = 0; s < 16; s++)
            a[s] = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int i = 0; i < np; i += 16) {
            __m512bh qv[4], kv[4];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                qv[r] = (__m512bh)_mm512_load_si512(q2[r] + i);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                kv[c] = (__m512bh)_mm512_load_si512(kw + (size_t)c * (size_t)np + i);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
#pragma GCC unroll 4
                for (int r = 0; r < 4; r++)
                    a[4 * c + r] = _mm512_dpbf16_ps(a[4 * c + r], qv[r], kv[c]);
        }
        store_quarters(S + k0, sum16(a));
    }
}

/* qk2_rows: the scores of R rows (bf16 pair rows q2) against a kblock_pack_bf16 block,
 * four rows at a time (qk2_lane4_d), the rest one by one (qk2_lane_d), with the common
 * pair counts made constants; S row stride BC. */
static void qk2_rows(const uint32_t *const *q2, int R, const uint32_t *kr2, int np, float *S,
                     rb_pf *pf)
{
#define QK2_ROWS(NP)                                                                    \
    do {                                                                                \
        int r = 0;                                                                      \
        for (; r + 4 <= R; r += 4)                                                      \
            qk2_lane4_d(q2 + r, kr2, NP, S + (size_t)r * BC, pf);                       \
        for (; r < R; r++)                                                              \
            qk2_lane_d(q2[r], kr2, NP, S + (size_t)r * BC, pf);                         \
    } while (0)
    if (np == 64)
        QK2_ROWS(64);
    else if (np == 32)
        QK2_ROWS(32);
    else if (np == 128)
        QK2_ROWS(128);
    else
        QK2_ROWS(np);
#undef QK2_ROWS
}

/* pv2_tile: acc[r][0 .. 16 NV) += sum_t PP[r][t] . vt2[t][0 .. 16 NV) for R <= TR rows
 * (PP: bf16 pairs of p, row stride BC / 2; acc row stride dp) over ntp key pairs of a
 * kblock_pack_bf16 block (vt2 row stride dp); one pf_step per 8 key pairs. */
RB_AI void pv2_tile(const int R, const int NV, const uint32_t *PP, const uint32_t *vt2,
                    size_t dp, int ntp, float *acc, rb_pf *pf)
{
    __m512 a[TR][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int w = 0; w < NV; w++)
            a[r][w] = _mm512_load_ps(acc + (size_t)r * dp + 16 * w);
    for (int t0 = 0; t0 < ntp; t0 += 8) {
        pf_step(pf);
        const int t1 = ntp - t0 < 8 ? ntp : t0 + 8;
        for (int t = t0; t < t1; t++) {
            const uint32_t *vr = vt2 + (size_t)t * dp;
            __m512bh x[4];
#pragma GCC unroll 4
            for (int w = 0; w < NV; w++)
                x[w] = (__m512bh)_mm512_load_si512(vr + 16 * w);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const __m512bh pb = (__m512bh)_mm512_set1_epi32((int)PP[r * (BC / 2) + t]);
#pragma GCC unroll 4
                for (int w = 0; w < NV; w++)
                    a[r][w] = _mm512_dpbf16_ps(a[r][w], pb, x[w]);
            }
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int w = 0; w < NV; w++)
            _mm512_store_ps(acc + (size_t)r * dp + 16 * w, a[r][w]);
}

/* pv2_tiles: pv2_tile over all dp dims for R <= TR rows: passes of 64 dims, then 16. */
RB_AI void pv2_tiles(const int R, const uint32_t *PP, const uint32_t *vt2, size_t dp, int ntp,
                     float *acc, rb_pf *pf)
{
    size_t j0 = 0;
    for (; j0 + 64 <= dp; j0 += 64)
        pv2_tile(R, 4, PP, vt2 + j0, dp, ntp, acc + j0, pf);
    for (; j0 < dp; j0 += 16)
        pv2_tile(R, 1, PP, vt2 + j0, dp, ntp, acc + j0, pf);
}

/* pv2_run: pv2_tiles for R <= 2 TR rows (a TR-row tile and the rest), with R made a
 * constant. */
static void pv2_run(int R, const uint32_t *PP, const uint32_t *vt2, size_t dp, int ntp,
                    float *acc, rb_pf *pf)
{
#define PV2_R(RR)                                                                        \
    do {                                                                                 \
        if ((RR) > TR) {                                                                 \
            pv2_tiles(TR, PP, vt2, dp, ntp, acc, pf);                                    \
            pv2_tiles((RR) - TR, PP + TR * (BC / 2), vt2, dp, ntp, acc + TR * dp, pf);   \
        } else {                                                                         \
            pv2_tiles(RR, PP, vt2, dp, ntp, acc, pf);                                    \
        }                                                                                \
    } while (0)
    RB_ROW_CASES(PV2_R);
#undef PV2_R
}

/* qk_lane_d: S[0..BC) = <q, k_c> for one row q against BC key rows kr (row stride d, d a
 * multiple of 16), dims in the lanes: 16 keys at a time, one accumulator per key (16
 * independent FMA chains), then sum16. Key slot s of sum16 holds key 4 * (s % 4) + s / 4,
 * so that lane i of the result is key i. Inlined with d a constant (qk_lane), so that
 * every key row is one base register plus an immediate offset and the dims unroll. */
RB_AI void qk_lane_d(const float *q, const float *kr, const int d, float *S, rb_pf *pf)
{
    for (int w = 0; w < BC / 16; w++) {
        pf_step(pf);
        const float *kw = kr + (size_t)16 * w * (size_t)d;
        __m512 a[16];
#pragma GCC unroll 16
        for (int s = 0; s < 16; s++)
            a[s] = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int j = 0; j < d; j += 16) {
            const __m512 qv = _mm512_loadu_ps(q + j);
#pragma GCC unroll 16
            for (int s = 0; s < 16; s++)
                a[s] = _mm512_fmadd_ps(
                    qv, _mm512_loadu_ps(kw + (size_t)(4 * (s % 4) + s / 4) * (size_t)d + j),
                    a[s]);
        }
        _mm512_store_ps(S + 16 * w, sum16(a));
    }
}

/* qk_lane: qk_lane_d with the common head_dims made constants. */
static void qk_lane(const float *q, const float *kr, int d, float *S, rb_pf *pf)
{
#define QL_D(D) qk_lane_d(q, kr, D, S, pf)
    RB_D_CASES(QL_D);
#undef QL_D
}

/* qk_lane4_d: qk_lane_d for 4 rows at once, S[r * BC + c] = <q[r], k_c> for r < 4:
 * 4 keys at a time against the 4 rows in 16 accumulators (a[4 * key + row], so that
 * sum16's lane 4 * row + key is that pair and each row's 4 scores are one 128-bit
 * quarter), every key load feeding 4 FMAs instead of 1. Each score is summed exactly
 * as qk_lane_d sums it (the same FMA chain over the dims, the same tree), so the two
 * give identical bits. One pf_step per 4 keys (4 per 16 keys of each row, as qk_lane).
 * Measured (1M keys, 116 log-spaced rows, 1 thread): the arithmetic 7 % faster, the
 * probe from memory 2-3 %. */
RB_AI void qk_lane4_d(const float *const *q, const float *kr, const int d, float *S,
                      rb_pf *pf)
{
    for (int k0 = 0; k0 < BC; k0 += 4) {
        pf_step(pf);
        const float *kw = kr + (size_t)k0 * (size_t)d;
        __m512 a[16];
#pragma GCC unroll 16
        for (int s = 0; s < 16; s++)
            a[s] = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int j = 0; j < d; j += 16) {
            __m512 qv[4], kv[4];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                qv[r] = _mm512_loadu_ps(q[r] + j);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
                kv[c] = _mm512_loadu_ps(kw + (size_t)c * (size_t)d + j);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++)
#pragma GCC unroll 4
                for (int r = 0; r < 4; r++)
                    a[4 * c + r] = _mm512_fmadd_ps(qv[r], kv[c], a[4 * c + r]);
        }
        store_quarters(S + k0, sum16(a));
    }
}

/* qk_lane4: qk_lane4_d with the common head_dims made constants. */
static void qk_lane4(const float *const *q, const float *kr, int d, float *S, rb_pf *pf)
{
#define QL4_D(D) qk_lane4_d(q, kr, D, S, pf)
    RB_D_CASES(QL4_D);
#undef QL4_D
}

/* Per-row fp32 online state of a run of rows: m, l, u and acc[dp] (dp = d rounded up to
 * 16, 64-byte aligned rows); m and u in base-2 units (softmax_row). l and u are kept as
 * 16 partial sums per row (the lanes of softmax_row's vectors), so that no row's update
 * ends in a horizontal sum; rows32_merge adds the lanes up, into ls and us. */
typedef struct {
    float *m, *l, *u, *acc; /* m[n], l[n][16], u[n][16], acc[n][dp] */
    float *ls, *us;         /* [n]: the lane sums of l and u (rows32_merge) */
    size_t dp;
} rb_rows32;

/* rows32_bytes: the bytes rows32_layout takes for n rows of dp floats (64-byte
 * multiples, so that what follows stays aligned). */
static size_t rows32_bytes(int64_t n, size_t dp)
{
    return round64((size_t)n * dp * sizeof(float)) + 2 * round64((size_t)n * 16 * sizeof(float)) +
           round64(3 * (size_t)n * sizeof(float));
}

/* rows32_layout: st over the scratch at p (64-byte aligned, rows32_bytes(n, dp) long). */
static void rows32_layout(char *p, int64_t n, size_t dp, rb_rows32 *st)
{
    st->dp = dp;
    st->acc = (float *)p;
    p += round64((size_t)n * dp * sizeof(float));
    st->l = (float *)p;
    p += round64((size_t)n * 16 * sizeof(float));
    st->u = (float *)p;
    p += round64((size_t)n * 16 * sizeof(float));
    st->m = (float *)p;
    st->ls = st->m + n;
    st->us = st->ls + n;
}

/* softmax_row: turn the raw scores S[0..BC) of one row into p = 2^(t - m_new) in place,
 * t = c2 * S the score in base-2 units (c2 = scale * log2 e), so that one FMA gives the
 * exponent and rb_exp2_512_ps needs no ln 2 reduction; masked keys (position after qp, or
 * past cnt, when `masked`) give p = 0. The row's state is kept in base 2 too: m and u
 * are the natural m and u times log2 e (rows32_merge converts), l is unchanged; they
 * are updated here (l, u, acc rescaled once when the max grows), l and u as 16 lane
 * partial sums each (64-byte aligned; rb_rows32). The max is taken over
 * the raw S (over -S when c2 < 0), so that no multiply precedes it. Returns 0 (and
 * zeroes S) when the row sees no key of the block, leaving it untouched. bf16: the p
 * written to S (PV's weights) are rounded to bf16; l and u take them unrounded. */
static int softmax_row(float *S, int masked, const rb_kblock *b, int64_t qp, float c2,
                       int bf16, float *m, float *l, float *u, float *acc, size_t dp)
{
    __m512 x[BC / 16];
    __mmask16 mk[BC / 16];
    const int neg = c2 < 0.0f;
    const float ca = neg ? -c2 : c2;
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    const __m512i vq = _mm512_set1_epi64(qp);
    unsigned anym = 0;
#pragma GCC unroll 4
    for (int w = 0; w < BC / 16; w++) {
        x[w] = _mm512_load_ps(S + 16 * w);
        if (neg)
            x[w] = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x[w]),
                                                        _mm512_set1_epi32(INT32_MIN)));
        if (masked) {
            const __mmask8 lo = _mm512_cmple_epi64_mask(_mm512_load_si512(b->kp + 16 * w), vq);
            const __mmask8 hi =
                _mm512_cmple_epi64_mask(_mm512_load_si512(b->kp + 16 * w + 8), vq);
            const int base = 16 * w, n = b->cnt - base;
            const unsigned valid = n >= 16 ? 0xFFFFu : n <= 0 ? 0u : (1u << n) - 1u;
            mk[w] = (__mmask16)(((unsigned)lo | ((unsigned)hi << 8)) & valid);
            anym |= mk[w];
            vmax = _mm512_mask_max_ps(vmax, mk[w], vmax, x[w]);
        } else {
            mk[w] = 0xFFFF;
            vmax = _mm512_max_ps(vmax, x[w]);
        }
    }
    if (masked && !anym) {
        for (int w = 0; w < BC / 16; w++)
            _mm512_store_ps(S + 16 * w, _mm512_setzero_ps());
        return 0;
    }
    /* the block's max is reduced across lanes only when some lane beats the running max:
     * rounding is monotonic, so ca times a lane is at most mo for every lane exactly when
     * ca times the block's max is, and m comes out the same; after a row's first blocks
     * the max rarely grows, so most blocks skip the reduction and its latency (ca = 0:
     * every t is 0, and the masked lanes' -inf must not become NaN) */
    const float mo = *m;
    const __m512 vb =
        ca > 0.0f ? _mm512_mul_ps(vmax, _mm512_set1_ps(ca)) : _mm512_setzero_ps();
    float mn = mo;
    if (_mm512_cmp_ps_mask(vb, _mm512_set1_ps(mo), _CMP_GT_OQ)) {
        const float bm = _mm512_reduce_max_ps(vb);
        mn = mo > bm ? mo : bm;
    }
    __m512 lv = _mm512_load_ps(l), uv = _mm512_load_ps(u);
    if (mo != -INFINITY && mn > mo) {
        const float dm = mo - mn, alpha = exp2f(dm);
        const __m512 va = _mm512_set1_ps(alpha);
        uv = _mm512_mul_ps(va, _mm512_fmadd_ps(lv, _mm512_set1_ps(dm), uv));
        lv = _mm512_mul_ps(lv, va);
        for (size_t j = 0; j < dp; j += 16)
            _mm512_store_ps(acc + j, _mm512_mul_ps(_mm512_load_ps(acc + j), va));
    }
    *m = mn;
    const __m512 vm = _mm512_set1_ps(mn), vc = _mm512_set1_ps(ca);
    /* t = ca x - m in one rounding (FMA), except where |m| >= 2^24: m is the rounded
     * product of the largest x, so the fused t of that x is the product's rounding error,
     * up to half an ulp of m, and past |m| = 2^31 (scores ~1e9, as YaRN's
     * attention_factor = 1e5 gives) more than 128: 2^t overflowed (lse +inf) or every p
     * underflowed (lse -inf). There the product is rounded first, as m was: t <= 0 for
     * every key (rounding is monotonic), 0 for the largest; scores that close are equal
     * to fp32's precision anyway. Below 2^24 the bits are as before. */
    const int fused = fabsf(mn) < 0x1p24f;
    __m512 ls = _mm512_setzero_ps(), us = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int w = 0; w < BC / 16; w++) {
        const __m512 t = fused ? _mm512_maskz_fmsub_ps(mk[w], x[w], vc, vm)
                               : _mm512_maskz_sub_ps(mk[w], _mm512_mul_ps(x[w], vc), vm);
        const __m512 p = _mm512_maskz_mov_ps(mk[w], rb_exp2_512_ps(t));
        ls = _mm512_add_ps(ls, p);
        us = _mm512_fmadd_ps(p, t, us);
        _mm512_store_ps(S + 16 * w, bf16 ? bf16_round(p) : p);
    }
    _mm512_store_ps(l, _mm512_add_ps(lv, ls));
    _mm512_store_ps(u, _mm512_add_ps(uv, us));
    return 1;
}

/* Read-only description of one call, shared by the threads. */
typedef struct {
    const float *q, *k, *v;
    const int64_t *k_pos;
    int64_t nq, nk;
    int d;
    size_t dp;
    float c2;           /* scale * log2 e: scores in base-2 units */
    const rb_row *rows; /* nq rows sorted by position */
    int bf16;           /* q (by the caller), k, v and p rounded to bf16 */
    const uint32_t *q2; /* bf16 key-outer: q as bf16 pairs, np per row (bf16_np), 64-byte
                         * aligned rows; its blocks go through kblock_pack_bf16. NULL
                         * otherwise */
    int np;
} rb_call;

/* block_rows_steps: the pf_steps to pace a prefetch over, for nr rows seeing a block
 * of cnt keys in block_rows_run (a little over the count: 3 per row group), with V or
 * not, scored by rows (qk_lane, qk2_lane: `lanes`) or packed. */
static int64_t block_rows_steps(int64_t nr, size_t dp, int cnt, int has_v, int lanes)
{
    return 3 * ((nr + RG - 1) / RG) + nr + (lanes ? (BC / 16) * nr : 0) +
           (has_v ? pv_steps_rows(nr, dp, cnt) : 0);
}

/* block_rows_run: sorted rows [i0, i1) (state index relative to s0, at most KO_ROWS rows)
 * against one block, packed (b->kt) or read in place (b->kr: the scores four rows at a
 * time with qk_lane4, the rest row by row with qk_lane). Rows before the block's first position are skipped; the
 * rest go in groups of RG, in three phases so that each half of the block stays in L1
 * while all groups use it: the scores of every group (S holds a row of BC per row), the
 * softmax of every row (masked unless the block is whole and every key is at or before
 * the row's position), then PV for every group that saw a key. One pf_step (pf may be
 * NULL) per group and phase and per row, per 16 keys of each qk_lane row, and per 16
 * keys of each PV pass (pv_steps_rows counts those). ph (NULL: no timers): the rdtsc
 * ticks of the three phases are added to ph[0] (scores), ph[1] (softmax), ph[2] (PV). */
static void block_rows_run(const rb_call *c, const rb_kblock *b, int64_t i0, int64_t i1,
                           int64_t s0, const rb_rows32 *st, float *S, rb_pf *pf,
                           uint64_t *ph)
{
    if (i0 >= i1 || c->rows[i1 - 1].pos < b->kmin)
        return;
    const int64_t g0 = rows_lower_bound(c->rows, i0, i1, b->kmin);
    uint64_t t0 = ph ? __rdtsc() : 0;
    /* rows read in place come from L2 (rb_pf brought them there): ask for the K rows
     * in L1 before the scores read them, and below for the V rows before PV (by then K
     * is done with, so the two do not crowd each other out of L1); rows packed or
     * copied into scratch are there already. Measured (1M keys, huge pages,
     * alternating runs): 116 log-spaced rows 0.0535 -> 0.049 s at 1 thread and 0.033
     * -> 0.030 s at 2, 31 rows -5 to -8 %, 415 rows unchanged. */
    if (b->cold_k)
        l1_prefetch(b->kr, (size_t)BC * (size_t)c->d * sizeof(float));
    for (int64_t g = g0; g < i1; g += RG) {
        const int R = i1 - g < RG ? (int)(i1 - g) : RG;
        const float *qr[RG];
        for (int r = 0; r < R; r++)
            qr[r] = c->q + (size_t)c->rows[g + r].idx * (size_t)c->d;
        if (b->kr2) {
            const uint32_t *qr2[RG];
            for (int r = 0; r < R; r++)
                qr2[r] = c->q2 + (size_t)c->rows[g + r].idx * (size_t)c->np;
            qk2_rows(qr2, R, b->kr2, c->np, S + (size_t)(g - g0) * BC, pf);
        } else if (b->kt)
            qk_run(qr, R, b->kt, c->d, S + (size_t)(g - g0) * BC);
        else {
            int r = 0;
            for (; r + 4 <= R; r += 4)
                qk_lane4(qr + r, b->kr, c->d, S + (size_t)(g - g0 + r) * BC, pf);
            for (; r < R; r++)
                qk_lane(qr[r], b->kr, c->d, S + (size_t)(g - g0 + r) * BC, pf);
        }
        pf_step(pf);
    }
    if (ph) {
        const uint64_t t = __rdtsc();
        ph[0] += t - t0;
        t0 = t;
    }
    /* bit g of any[]: row group g saw a key of the block */
    uint64_t any[(KO_ROWS / RG + 63) / 64 + 1] = {0};
    for (int64_t g = g0, grp = 0; g < i1; g += RG, grp++) {
        const int64_t ge = i1 - g < RG ? i1 : g + RG;
        int seen = 0;
        for (int64_t r = g; r < ge; r++) {
            const int64_t i = r - s0, pos = c->rows[r].pos;
            const int masked = !(b->cnt == BC && b->kmax <= pos);
            /* (p rounded to bf16 here only for fp32 PV: the pairs' conversion rounds) */
            seen |= softmax_row(S + (size_t)(r - g0) * BC, masked, b, pos, c->c2,
                                c->bf16 && !b->vt2, st->m + i, st->l + 16 * i,
                                st->u + 16 * i, st->acc + (size_t)i * st->dp, st->dp);
            pf_step(pf);
        }
        if (seen)
            any[grp / 64] |= (uint64_t)1 << (grp % 64);
    }
    if (ph) {
        const uint64_t t = __rdtsc();
        ph[1] += t - t0;
        t0 = t;
    }
    if (b->cold_v)
        l1_prefetch(b->vt, (size_t)b->cnt * st->dp * sizeof(float));
    for (int64_t g = g0, grp = 0; g < i1; g += RG, grp++) {
        const int R = i1 - g < RG ? (int)(i1 - g) : RG;
        if (b->vt2 && (any[grp / 64] >> (grp % 64) & 1u)) {
            /* the group's p as bf16 pairs of keys (rounded here, not by softmax_row) */
            _Alignas(64) uint32_t PP[RG * (BC / 2)];
            for (int r = 0; r < R; r++) {
                const float *Sr = S + (size_t)(g - g0 + r) * BC;
                _mm512_store_si512(PP + r * (BC / 2),
                                   bf16x2(_mm512_load_ps(Sr), _mm512_load_ps(Sr + 16)));
                _mm512_store_si512(PP + r * (BC / 2) + 16,
                                   bf16x2(_mm512_load_ps(Sr + 32), _mm512_load_ps(Sr + 48)));
            }
            pv2_run(R, PP, b->vt2, st->dp, (b->cnt + 1) / 2,
                    st->acc + (size_t)(g - s0) * st->dp, pf);
        }
        if (b->vt && (any[grp / 64] >> (grp % 64) & 1u))
            pv_run(R, S + (size_t)(g - g0) * BC, b->vt, st->dp, b->cnt,
                   st->acc + (size_t)(g - s0) * st->dp, pf);
        pf_step(pf);
    }
    if (ph)
        ph[2] += __rdtsc() - t0;
}

/* rows32_reset_range: rows [i0, i1) of st back to the empty state; rows32_reset: rows
 * [0, n). */
static void rows32_reset_range(const rb_rows32 *st, int64_t i0, int64_t i1)
{
    if (i1 <= i0)
        return;
    const size_t n = (size_t)(i1 - i0);
    for (int64_t i = i0; i < i1; i++)
        st->m[i] = -INFINITY;
    memset(st->l + (size_t)i0 * 16, 0, n * 16 * sizeof(float));
    memset(st->u + (size_t)i0 * 16, 0, n * 16 * sizeof(float));
    memset(st->acc + (size_t)i0 * st->dp, 0, n * st->dp * sizeof(float));
}

static void rows32_reset(const rb_rows32 *st, int64_t n) { rows32_reset_range(st, 0, n); }

/* rows32_merge: merge the fp32 states of sorted rows [i0, i1) (st index i - s0) into the
 * double state rows they belong to, m and u back in natural units (times ln 2, in
 * double). */
static void rows32_merge(const rb_call *c, const rb_rows32 *st, int64_t i0, int64_t i1,
                         int64_t s0, double *state)
{
    if (i1 <= i0)
        return;
    const int64_t l0 = i0 - s0;
    for (int64_t i = l0; i < l0 + (i1 - i0); i++) {
        st->ls[i] = _mm512_reduce_add_ps(_mm512_load_ps(st->l + 16 * i));
        st->us[i] = _mm512_reduce_add_ps(_mm512_load_ps(st->u + 16 * i));
    }
    rb_state_merge_f32_avx512(state, &c->rows[i0].idx, sizeof(rb_row) / sizeof(int64_t), 0,
                              i1 - i0, c->d, st->m + l0, st->ls + l0, st->us + l0,
                              st->acc + (size_t)l0 * st->dp, st->dp, RB_LN2);
}

/* A query block with its estimated work, for largest-first scheduling. */
typedef struct {
    int64_t cost;
    int64_t qb;
} rb_qcost;

static int qcost_cmp(const void *a, const void *b)
{
    const rb_qcost *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return (x->qb > y->qb) - (x->qb < y->qb);
}

/* run_query_outer: keys [k0, k0 + nkc) of the call, query-outer: every block of BC keys
 * is packed once (threads share the packing), then query blocks of BR sorted rows are
 * handed to threads largest visible work first (dynamic, so threads end with equal
 * work on a causal shape and on a busy machine), each sweeping all key blocks with its
 * fp32 state in L1/L2 and merging into `state` at the end; rows of different blocks are
 * disjoint, so there is no write sharing. Scratch: kt (nkb*d*BC floats), vt
 * (nkb*BC*dp floats), kp (nkb*BC), qc (nqb), per-thread scr (T * per_thread bytes), all
 * preallocated. */
static void run_query_outer(const rb_call *c, int64_t k0, int64_t nkc, float *kt,
                            float *vt, int64_t *kp, rb_kblock *kb, rb_qcost *qc, char *scr,
                            size_t per_thread, int T, double *state)
{
    const int64_t nkb = (nkc + BC - 1) / BC, nqb = (c->nq + BR - 1) / BR;
    const int d = c->d;
#pragma omp parallel num_threads(T)
    {
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nkb; b++) {
            const int64_t c0 = k0 + b * BC;
            const int cnt = (int)(k0 + nkc - c0 < BC ? k0 + nkc - c0 : BC);
            kblock_positions(c->k_pos, c0, cnt, kp + (size_t)b * BC, &kb[b]);
            rb_kblock_pack(c->k, c->v, c0, cnt, d, (int)c->dp, c->bf16, NULL,
                           kt + (size_t)b * d * BC, vt + (size_t)b * BC * c->dp, &kb[b]);
        }
#pragma omp for schedule(static)
        for (int64_t qb = 0; qb < nqb; qb++) {
            const int64_t i0 = qb * BR, i1 = i0 + BR < c->nq ? i0 + BR : c->nq;
            int64_t cost = 0;
            for (int64_t b = 0; b < nkb; b++)
                if (kb[b].kmin <= c->rows[i1 - 1].pos)
                    cost += (i1 - rows_lower_bound(c->rows, i0, i1, kb[b].kmin)) *
                            (int64_t)kb[b].cnt;
            qc[qb].cost = cost;
            qc[qb].qb = qb;
        }
#pragma omp single
        qsort(qc, (size_t)nqb, sizeof *qc, qcost_cmp);

        char *my = scr + (size_t)rb_omp_tid() * per_thread;
        rb_rows32 st;
        rows32_layout(my, BR, c->dp, &st);
        float *S = (float *)(my + rows32_bytes(BR, c->dp));
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < nqb; t++) {
            if (qc[t].cost == 0)
                continue;
            const int64_t i0 = qc[t].qb * BR, i1 = i0 + BR < c->nq ? i0 + BR : c->nq;
            rows32_reset(&st, i1 - i0);
            for (int64_t b = 0; b < nkb; b++) {
                /* packed K and V of the next block come from L3/memory: prefetch them
                 * into L2 over this block's work (one step per group phase and row,
                 * and per 16 keys of each PV pass) */
                rb_pf pf = RB_PF_NONE;
                if (b + 1 < nkb && kb[b + 1].kmin <= c->rows[i1 - 1].pos &&
                    kb[b].kmin <= c->rows[i1 - 1].pos) {
                    const int64_t nr = i1 - rows_lower_bound(c->rows, i0, i1, kb[b].kmin);
                    pf_block(&pf, (const char *)kb[b].kt + (size_t)d * BC * sizeof(float),
                             kb[b].vt ? (const char *)kb[b].vt + (size_t)BC * c->dp * sizeof(float)
                                      : NULL,
                             (int64_t)BC * (int64_t)c->dp / 16,
                             block_rows_steps(nr, c->dp, kb[b].cnt, kb[b].vt != NULL, 0));
                }
                block_rows_run(c, &kb[b], i0, i1, i0, &st, S, &pf, NULL);
                if ((b + 1) % FLUSH_BLOCKS == 0 && b + 1 < nkb) {
                    rows32_merge(c, &st, i0, i1, i0, state);
                    rows32_reset(&st, i1 - i0);
                }
            }
            rows32_merge(c, &st, i0, i1, i0, state);
        }
    }
}

/* block_inplace_ok: whether the key-outer order reads a block of cnt keys in place
 * (kblock_inplace, qk_lane4/qk_lane) instead of packing it: every whole block when d is
 * a multiple of 16. Until 2026-11-30 only blocks that at most 32 rows see were (the
 * rest packed, as the query-outer order does); on the AMD host of that day, with the
 * scores four rows at a time (qk_lane4), reading in place measured as fast as packing
 * with K and V in L2 at 128-256 rows and 7-15 % faster at 33-64, and the 1M-key probe
 * 2-3 % faster (116 log-spaced rows) and 7 % (415, the study's; 1 thread; 1-4 % at 2),
 * harness, alternating runs. */
static int block_inplace_ok(int d, int cnt)
{
    (void)cnt; /* a short block is copied, still scored by qk_lane (kblock_inplace) */
    return d % 16 == 0;
}

/* ko_ds_offset: where a thread's double state starts in its key-outer scratch (after
 * its fp32 row states, packed K and V, key positions and scores). */
/* ko_kt_bytes: a thread's key-outer scratch for one block's packed K: d x BC floats, or
 * BC x np bf16 pairs (kblock_pack_bf16), whichever is larger. */
static size_t ko_kt_bytes(const rb_call *c)
{
    const size_t rows = (size_t)(c->d > bf16_np(c->d) ? c->d : bf16_np(c->d));
    return round64(rows * BC * sizeof(float));
}

static size_t ko_ds_offset(const rb_call *c)
{
    return rows32_bytes(c->nq, c->dp) + ko_kt_bytes(c) +
           round64((size_t)BC * c->dp * sizeof(float)) + round64(BC * sizeof(int64_t)) +
           round64((size_t)c->nq * BC * sizeof(float));
}

/* ko_schedule: the order in which the key-outer loop takes the blocks, into ord;
 * returns its length. nrb[b] (out) is the number of rows that see block b (rows at or
 * after its first position); blocks no row sees are left out (block_rows_run would skip
 * every row of them, after reading them). The rest are sorted by nrb, most rows first
 * (a stable counting sort through tmp[nkb] and cnt[nq + 1]), and then taken from the
 * two ends: a block with many rows (much arithmetic, little to stream) while the
 * modelled prefetch lead is short, else one with few (little arithmetic, a whole block
 * to stream), so that the blocks a few rows see, which leave the FMA units idle while
 * their keys arrive, come between blocks that keep them busy and that prefetch them
 * (pf_sched_block), and every contiguous piece of the schedule (a thread's static
 * share; the tail pieces of run_key_outer, where the two ends meet, less so) has
 * the same mix of both. The lead is modelled as run_key_outer paces it: a block adds
 * nr * cnt * (d / 16) / KO_KAPPA lines (at most KO_AHEAD blocks' worth) and uses its
 * own blines. */
static int64_t ko_schedule(const rb_call *c, int64_t blines, int64_t *nrb, int64_t *ord,
                           int64_t *tmp, int64_t *cnt)
{
    const int64_t nkb = (c->nk + BC - 1) / BC, nwhole = c->nk / BC;
    for (int64_t b = 0; b < nkb; b++) {
        const int64_t c0 = b * BC, n = c->nk - c0 < BC ? c->nk - c0 : BC;
        int64_t lo = c->k_pos[c0];
        for (int64_t i = 1; i < n; i++)
            lo = c->k_pos[c0 + i] < lo ? c->k_pos[c0 + i] : lo;
        nrb[b] = c->nq - rows_lower_bound(c->rows, 0, c->nq, lo);
    }
    for (int64_t r = 0; r <= c->nq; r++)
        cnt[r] = 0;
    for (int64_t b = 0; b < nkb; b++)
        cnt[nrb[b]]++;
    int64_t nvis = 0;
    for (int64_t r = c->nq; r >= 1; r--) {
        const int64_t x = cnt[r];
        cnt[r] = nvis;
        nvis += x;
    }
    for (int64_t b = 0; b < nkb; b++)
        if (nrb[b] > 0)
            tmp[cnt[nrb[b]]++] = b;
    const double cap = (double)KO_AHEAD * (double)blines, target = 0.5 * cap;
    double lead = 0;
    for (int64_t f = 0, e = nvis - 1, n = 0; f <= e; n++) {
        const int64_t b = lead < target ? tmp[f++] : tmp[e--];
        const int64_t keys = c->nk - b * BC < BC ? c->nk - b * BC : BC;
        lead -= b < nwhole ? (double)blines : 0.0;
        lead = lead < 0 ? 0 : lead;
        lead += (double)nrb[b] * (double)keys * (double)(c->d / 16) / KO_KAPPA;
        lead = lead > cap ? cap : lead;
        ord[n] = b;
    }
    return nvis;
}

static rb_probe_profile *_Atomic ko_prof; /* rb_probe_profile_set_avx512 */

/* rb_probe_profile_set_avx512: see rb_avx512.h. */
void rb_probe_profile_set_avx512(rb_probe_profile *p) { ko_prof = p; }

/* prof_class: the rb_probe_profile class of a block that nr >= 1 rows see. */
static int prof_class(int64_t nr)
{
    int cl = 0;
    while (cl < RB_PROF_CLASSES - 1 && ((int64_t)2 << cl) <= nr)
        cl++;
    return cl;
}

/* run_key_outer: the probe order for few rows and many keys. The blocks are taken in
 * ko_schedule's order (sch: 3 * nkb + nq + 1 int64), which is split into contiguous
 * pieces by estimated work (visible rows times keys, plus the cost of streaming the
 * block; bound: T + ntail + 1 entries): one piece per thread over the first
 * 1 - KO_TAIL_PERMILLE / 1000 of the work, then ntail equal pieces (none at T = 1) that
 * the threads take as they finish their own, so that a thread slowed by the other or
 * by its host ends no later than the rest (2 threads, 1M keys, 116 rows, the AMD host
 * of 2026-12-03: the blocks' share of threads x wall 97-98 % against 90-96 % with
 * static pieces alone). Each
 * thread packs a piece's blocks one at a time and runs every sorted row against it, so
 * K and V are read once for all rows, while it prefetches the blocks after it in the
 * piece (pf_sched_block: in proportion to the block's arithmetic, at most KO_AHEAD
 * blocks ahead). It keeps the fp32 state of all nq rows, merged every FLUSH_BLOCKS
 * blocks and at each piece's end (the rows that saw them) into a double state: its own
 * for its static piece, the piece's own for a tail piece (tail: ntail states of nq
 * rows). Those are merged into `state` afterwards, the threads' in thread order and
 * then the tail's in piece order, so the bits do not depend on which thread took which
 * piece (the schedule depends on the positions alone). */
/* ko_tail_pieces: how many tail pieces run_key_outer gets for T threads, nk keys and
 * double states of sbytes each (the limits of KO_TAIL_PERMILLE's comment). */
static int64_t ko_tail_pieces(int T, int64_t nk, size_t sbytes)
{
    int64_t n = T > 1 ? (int64_t)KO_TAIL_PER_THREAD * T : 0;
    if (n > KO_TAIL_MAX)
        n = KO_TAIL_MAX;
    if (n > (nk + BC - 1) / BC / KO_TAIL_MIN_BLOCKS)
        n = (nk + BC - 1) / BC / KO_TAIL_MIN_BLOCKS;
    if ((size_t)n > KO_TAIL_BYTES / sbytes)
        n = (int64_t)(KO_TAIL_BYTES / sbytes);
    return n < 2 ? 0 : n; /* one piece would only move the static pieces' end */
}

static void run_key_outer(const rb_call *c, int64_t *bound, int64_t *sch, char *scr,
                          size_t per_thread, int T, double *tail, int64_t ntail,
                          double *state)
{
    const size_t tstride = (size_t)c->nq * RB_STATE_STRIDE(c->d); /* a tail piece's doubles */
    rb_probe_profile *const prof = ko_prof;
    struct timespec call_w0 = {0, 0};
    if (prof)
        clock_gettime(CLOCK_MONOTONIC, &call_w0);
    const uint64_t call_t0 = prof ? __rdtsc() : 0;
    const int64_t nkb = (c->nk + BC - 1) / BC, nwhole = c->nk / BC;
    /* lines of one whole block: BC rows of d floats, + 1 for a start off a line */
    const int64_t blines = (int64_t)BC * c->d / 16 + 1;
    int64_t *nrb = sch, *ord = sch + nkb;
    const int64_t nvis = ko_schedule(c, blines, nrb, ord, sch + 2 * nkb, sch + 3 * nkb);
    /* partition: cost of block b = cnt * (rows at or after its first position + 32, + 32
     * more when it is packed rather than read in place): the constant stands for the
     * stream of its K and V, the second for the transposes and the V copy. Measured
     * (1M keys, 2 threads, blocks in position order): the two threads' times differ by
     * 2-8 % at 32, 128 and 512 log-spaced rows, against 9-21 % with the + 16 of before,
     * which ignored packing. */
    int64_t total = 0, stat = 0;
    const int64_t P = T + ntail; /* pieces: T static, then the tail */
    for (int pass = 0; pass < 2; pass++) {
        int64_t run = 0, t = 1;
        bound[0] = 0;
        for (int64_t j = 0; j < nvis; j++) {
            const int64_t b = ord[j], c0 = b * BC, nr = nrb[b];
            const int cnt = (int)(c->nk - c0 < BC ? c->nk - c0 : BC);
            run += (nr + (c->q2 ? KO_BF16_FIXED : 32 + (block_inplace_ok(c->d, cnt) ? 0 : 32))) *
                   (int64_t)cnt;
            if (pass == 1)
                while (t < P && run >= (t <= T ? stat * t / T
                                                : stat + (total - stat) * (t - T) / ntail))
                    bound[t++] = j + 1;
        }
        if (pass == 1)
            while (t <= P)
                bound[t++] = nvis;
        total = run;
        stat = ntail > 0 ? total - total * KO_TAIL_PERMILLE / 1000 : total;
    }
    int used = 1;
    int64_t tail_next = 0; /* the next tail piece to take */
#pragma omp parallel num_threads(T)
    {
        const int tid = rb_omp_tid(), nth = rb_omp_team();
        if (tid == 0)
            used = nth;
        char *my = scr + (size_t)tid * per_thread;
        rb_rows32 st;
        rows32_layout(my, c->nq, c->dp, &st);
        float *kt = (float *)(my + rows32_bytes(c->nq, c->dp));
        float *vt = (float *)((char *)kt + ko_kt_bytes(c));
        int64_t *kp = (int64_t *)((char *)vt + round64((size_t)BC * c->dp * sizeof(float)));
        float *S = (float *)((char *)kp + round64(BC * sizeof(int64_t)));
        double *ds = (double *)(my + ko_ds_offset(c));
        rows32_reset(&st, c->nq);
        rb_state_init(ds, c->nq, c->d);
        rb_probe_profile mine; /* this thread's part of *prof */
        memset(&mine, 0, sizeof mine);
        int nb = 0;               /* blocks since the last flush, */
        int64_t fmin = INT64_MAX; /* and their lowest key position */
        /* whole blocks read K (and V when aligned) in place (block_inplace_ok); the static
         * pieces tid, tid + nth, ... < T into ds, then tail pieces as they come, each
         * into its own double state */
        for (int64_t part = tid;;) {
            int64_t p;
            double *dst;
            if (part < T) {
                p = part;
                dst = ds;
                part += nth;
            } else {
                int64_t k;
#pragma omp atomic capture
                k = tail_next++;
                if (k >= ntail)
                    break;
                p = T + k;
                dst = tail + (size_t)k * tstride;
                rb_state_init(dst, c->nq, c->d);
            }
            const int64_t j1 = bound[p + 1];
            rb_pf pf;
            pf_sched_start(&pf, ord, bound[p], j1, (const char *)c->k, (const char *)c->v,
                           (size_t)BC * (size_t)c->d * sizeof(float), blines, nwhole);
            int64_t consumed = 0; /* lines of this piece's blocks up to the current one */
            for (int64_t jj = bound[p]; jj < j1; jj++) {
                const int64_t b = ord[jj], c0 = b * BC, nr = nrb[b];
                const int cnt = (int)(c->nk - c0 < BC ? c->nk - c0 : BC);
                const uint64_t blk_t0 = prof ? __rdtsc() : 0;
                uint64_t ph[3] = {0, 0, 0};
                rb_kblock blk;
                kblock_positions(c->k_pos, c0, cnt, kp, &blk);
                const int inplace = block_inplace_ok(c->d, cnt);
                /* pf_steps over this block's work: one per transpose, 16 v rows copied,
                 * group phase and visible row, per 16 keys of a row when the block is
                 * read in place, and per 16 keys of each PV pass */
                const int64_t steps =
                    (c->q2 ? BC / 16 + (c->v ? BC / 8 : 0) :
                     (cnt == BC && !inplace ? (c->d / 16) * (BC / 16) : 0) +
                         (c->v && !(inplace && kblock_v_inplace(c->v, cnt)) ? BC / 16 : 0) +
                         (inplace && cnt < BC ? BC / 16 : 0)) +
                    block_rows_steps(nr, c->dp, cnt, c->v != NULL, c->q2 || inplace);
                consumed += b < nwhole ? blines : 0;
                /* the key positions of the next KO_AHEAD blocks into L2 as well (8
                 * lines a block; kblock_positions stalled on them: 1 thread 2.5-3.7 %
                 * faster, 2 threads 1-2 %, harness, alternating runs) */
                for (int64_t a = 1; a <= KO_AHEAD && jj + a < j1; a++) {
                    const int64_t p0 = ord[jj + a] * BC;
                    const char *pp = (const char *)(c->k_pos + p0);
                    const size_t bytes = (size_t)(c->nk - p0 < BC ? c->nk - p0 : BC) * 8u;
                    for (size_t l = 0; l < bytes; l += 64)
                        _mm_prefetch(pp + l, _MM_HINT_T1);
                }
                pf_sched_block(&pf, jj, consumed, nr * cnt * (c->d / 16) / KO_KAPPA,
                               KO_AHEAD * blines, steps);
                if (c->q2)
                    kblock_pack_bf16(c->k, c->v, c0, cnt, c->d, c->dp, &pf, (uint32_t *)kt,
                                     (uint32_t *)vt, &blk);
                else if (inplace)
                    kblock_inplace(c->k, c->v, c0, cnt, c->d, &pf, kt, vt, &blk);
                else
                    rb_kblock_pack(c->k, c->v, c0, cnt, c->d, (int)c->dp, c->bf16, &pf, kt, vt,
                                   &blk);
                block_rows_run(c, &blk, 0, c->nq, 0, &st, S, &pf, prof ? ph : NULL);
                if (prof) {
                    const int cl = prof_class(nr);
                    mine.ticks[cl] += __rdtsc() - blk_t0;
                    mine.ticks_qk[cl] += ph[0];
                    mine.ticks_softmax[cl] += ph[1];
                    mine.ticks_pv[cl] += ph[2];
                    mine.blocks[cl]++;
                    mine.keys[cl] += cnt;
                    mine.pairs[cl] += nr * cnt;
                }
                fmin = blk.kmin < fmin ? blk.kmin : fmin;
                if (++nb == FLUSH_BLOCKS || jj + 1 == j1) { /* and at each piece's end */
                    const int64_t i0 = rows_lower_bound(c->rows, 0, c->nq, fmin);
                    rows32_merge(c, &st, i0, c->nq, 0, dst);
                    rows32_reset_range(&st, i0, c->nq);
                    nb = 0;
                    fmin = INT64_MAX;
                }
            }
        }
        if (prof) {
#pragma omp critical(rb_probe_profile)
            for (int cl = 0; cl < RB_PROF_CLASSES; cl++) {
                prof->blocks[cl] += mine.blocks[cl];
                prof->keys[cl] += mine.keys[cl];
                prof->pairs[cl] += mine.pairs[cl];
                prof->ticks[cl] += mine.ticks[cl];
                prof->ticks_qk[cl] += mine.ticks_qk[cl];
                prof->ticks_softmax[cl] += mine.ticks_softmax[cl];
                prof->ticks_pv[cl] += mine.ticks_pv[cl];
            }
        }
    }
    for (int t = 0; t < used; t++)
        rb_state_merge(state, (const double *)(scr + (size_t)t * per_thread + ko_ds_offset(c)),
                       c->nq, c->d);
    for (int64_t k = 0; k < ntail; k++) /* in piece order, whoever took them */
        rb_state_merge(state, tail + (size_t)k * tstride, c->nq, c->d);
    if (prof) {
        prof->call_ticks += __rdtsc() - call_t0;
        struct timespec w1;
        clock_gettime(CLOCK_MONOTONIC, &w1);
        prof->call_s += (double)(w1.tv_sec - call_w0.tv_sec) +
                        1e-9 * (double)(w1.tv_nsec - call_w0.tv_nsec);
        prof->call_count++;
    }
}

/* attn_tile: rb_attn_tile_avx512, or with bf16 the contract of
 * rb_attn_tile_avx512_bf16ko. Rows are sorted by position first (an index, q is not
 * moved; with bf16 a rounded copy of q is made, and for the key-outer order its bf16
 * pairs) so that masked and skipped blocks
 * follow the causal structure whatever the layout. Loop order by shape: few rows
 * (nq <= KO_ROWS) against at least twice as many keys run key-outer (K/V streamed
 * once, the probe case), and with probe set any nk; everything else query-outer, in
 * chunks of keys whose packed K fits KPACK_MAX floats. The large scratch comes from
 * the kernels' kept block (rb_kernels_scratch_take: reused by the next call, kept after
 * this one), the rest is allocated per call; RB_ENOMEM if that fails (state
 * unchanged). */
static int attn_tile(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                     const float *v, const int64_t *k_pos, int64_t nk, int d, double scale,
                     int bf16, int probe, double *state)
{
    if (nq <= 0 || nk <= 0 || d <= 0 || rb_attn_tile_masked(q_pos, nq, k_pos, nk))
        return 0;
    int rc = 0;
    float *qb = NULL;
    const size_t dp = ((size_t)d + 15u) & ~(size_t)15u;
    const int key_outer = nq <= KO_ROWS && (nk >= 2 * nq || probe);
    /* threads (and per-thread scratch): OpenMP's count within OMP_THREAD_LIMIT, and in
     * the key-outer order no more than its key blocks */
    int T = rb_kernels_threads(); /* (>= 1) */
    if (key_outer && T > (nk + BC - 1) / BC)
        T = (int)((nk + BC - 1) / BC);
    rb_row *rows = malloc((size_t)nq * sizeof *rows);
    char *scr = NULL, *blk = NULL; /* blk: the call's rb_kernels_scratch_take block */
    size_t blk_got = 0;
    float *kt = NULL, *vt = NULL;
    int64_t *kp = NULL, *bound = NULL, *sch = NULL;
    uint32_t *q2 = NULL;
    double *tail = NULL;
    rb_kblock *kb = NULL;
    rb_qcost *qc = NULL;
    if (!rows) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    for (int64_t i = 0; i < nq; i++) {
        rows[i].pos = q_pos[i];
        rows[i].idx = i;
    }
    qsort(rows, (size_t)nq, sizeof *rows, row_cmp);
    if (bf16) {
        qb = malloc((size_t)nq * (size_t)d * sizeof *qb);
        if (!qb) {
            rc = RB_ENOMEM;
            goto cleanup;
        }
        for (size_t i = 0; i < (size_t)nq * (size_t)d; i++)
            qb[i] = bf16_round1(q[i]);
        q = qb;
    }
    rb_call c = {q, k, v, k_pos, nq, nk, d, dp, (float)(scale * RB_LOG2E), rows, bf16, NULL, 0};

    if (key_outer && bf16) {
        /* VDPBF16PS on bf16 pairs (kblock_pack_bf16); q converted once */
        c.np = bf16_np(d);
        q2 = aligned_alloc(64, round64((size_t)nq * (size_t)c.np * sizeof *q2));
        if (!q2) {
            rc = RB_ENOMEM;
            goto cleanup;
        }
        for (int64_t i = 0; i < nq; i++)
            bf16_row_pairs(q + (size_t)i * (size_t)d, d, c.np, q2 + (size_t)i * (size_t)c.np);
        c.q2 = q2;
    }
    if (key_outer) {
        const size_t sbytes = (size_t)nq * RB_STATE_STRIDE(d) * sizeof(double);
        const size_t per_thread = ko_ds_offset(&c) + round64(sbytes);
        const int64_t ntail = ko_tail_pieces(T, nk, sbytes);
        const size_t scr_bytes = per_thread * (size_t)T;
        /* the threads' scratch and the tail pieces' states in one kept block
         * (rb_kernels_scratch_take) */
        scr = blk = rb_kernels_scratch_take(scr_bytes + round64((size_t)ntail * sbytes), &blk_got);
        tail = ntail > 0 && blk ? (double *)(blk + scr_bytes) : NULL;
        bound = malloc(((size_t)T + (size_t)ntail + 1) * sizeof *bound);
        sch = malloc((3 * (size_t)((nk + BC - 1) / BC) + (size_t)nq + 1) * sizeof *sch);
        if (!scr || !bound || !sch)
            rc = RB_ENOMEM;
        else
            run_key_outer(&c, bound, sch, scr, per_thread, T, tail, ntail, state);
        goto cleanup;
    }

    int64_t kc = (int64_t)(KPACK_MAX / (size_t)d) / BC * BC;
    if (kc < BC)
        kc = BC;
    if (kc > nk)
        kc = nk;
    const int64_t nkb = (kc + BC - 1) / BC, nqb = (nq + BR - 1) / BR;
    const size_t per_thread = rows32_bytes(BR, dp) +
                              round64(BR * BC * sizeof(float));
    /* packed K, packed V, key positions and the threads' scratch in one kept block
     * (rb_kernels_scratch_take: not faulted in again on every call) */
    const size_t kt_bytes = round64((size_t)nkb * (size_t)d * BC * sizeof(float)),
                 vt_bytes = round64((size_t)nkb * BC * dp * sizeof(float)),
                 kp_bytes = round64((size_t)nkb * BC * sizeof(int64_t));
    blk = rb_kernels_scratch_take(kt_bytes + vt_bytes + kp_bytes + per_thread * (size_t)T,
                                  &blk_got);
    kb = malloc((size_t)nkb * sizeof *kb);
    qc = malloc((size_t)nqb * sizeof *qc);
    if (!blk || !kb || !qc) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    kt = (float *)blk;
    vt = (float *)(blk + kt_bytes);
    kp = (int64_t *)(blk + kt_bytes + vt_bytes);
    scr = blk + kt_bytes + vt_bytes + kp_bytes;
    for (int64_t k0 = 0; k0 < nk; k0 += kc) {
        const int64_t n = nk - k0 < kc ? nk - k0 : kc;
        run_query_outer(&c, k0, n, kt, vt, kp, kb, qc, scr, per_thread, T, state);
    }
cleanup:
    free(rows);
    free(qb);
    free(q2);
    rb_kernels_scratch_give(blk, blk_got);
    free(bound);
    free(sch);
    free(kb);
    free(qc);
    return rc;
}

/* rb_attn_tile_avx512: see rb_avx512.h. */
int rb_attn_tile_avx512(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                        const float *v, const int64_t *k_pos, int64_t nk, int d,
                        double scale, double *state)
{
    return attn_tile(q, q_pos, nq, k, v, k_pos, nk, d, scale, 0, 0, state);
}

/* rb_attn_tile_avx512_probe: see rb_avx512.h. */
int rb_attn_tile_avx512_probe(const float *q, const int64_t *q_pos, int64_t nq,
                              const float *k, const float *v, const int64_t *k_pos,
                              int64_t nk, int d, double scale, double *state)
{
    return attn_tile(q, q_pos, nq, k, v, k_pos, nk, d, scale, 0, 1, state);
}

/* rb_attn_tile_avx512_bf16ko: see rb_avx512.h. */
int rb_attn_tile_avx512_bf16ko(const float *q, const int64_t *q_pos, int64_t nq,
                               const float *k, const float *v, const int64_t *k_pos,
                               int64_t nk, int d, double scale, double *state)
{
    return attn_tile(q, q_pos, nq, k, v, k_pos, nk, d, scale, 1, 0, state);
}

/* rb_attn_tile_avx512_bf16ko_probe: see rb_avx512.h. */
int rb_attn_tile_avx512_bf16ko_probe(const float *q, const int64_t *q_pos, int64_t nq,
                                     const float *k, const float *v, const int64_t *k_pos,
                                     int64_t nk, int d, double scale, double *state)
{
    return attn_tile(q, q_pos, nq, k, v, k_pos, nk, d, scale, 1, 1, state);
}

/* rb_attn_avx512_tiles: see rb_peak.h. One 64-key block (K^T and V packed as the
 * kernel packs them) and 12 query rows, 79 KiB (L1 and L2): per iteration qk_run (12 x 64
 * scores) and pv_run (12 x 128 outputs over 64 keys) at d = 128, the register tiles of
 * a full row group, with no softmax in between (P is the score tile itself, kept
 * small so that nothing overflows). */
double rb_attn_avx512_tiles(int64_t iters, float seed)
{
    enum { D = 128 };
    static _Alignas(64) float kt[D * BC], vt[BC * D], q[RG * D], S[RG * BC], acc[RG * D];
    for (int i = 0; i < D * BC; i++) {
        kt[i] = seed * 1e-3f * (float)(i % 7);
        vt[i] = seed * 1e-3f * (float)(i % 5);
    }
    for (int i = 0; i < RG * D; i++) {
        q[i] = 1e-3f * (float)(i % 3);
        acc[i] = 0.0f;
    }
    const float *qr[RG];
    for (int r = 0; r < RG; r++)
        qr[r] = q + r * D;
    for (int64_t it = 0; it < iters; it++) {
        qk_run(qr, RG, kt, D, S);
        pv_run(RG, S, vt, D, BC, acc, NULL);
        __asm__ volatile("" : : "r"(S), "r"(acc) : "memory");
    }
    double sum = 0.0;
    for (int i = 0; i < RG * D; i++)
        sum += acc[i];
    return sum;
}
