/* attn_bf16.c — the bf16 AVX-512 attention tile: q, k, p, v rounded to bf16, QKᵀ and PV by VDPBF16PS (or AMX) into fp32, online softmax (m, l, u) in fp32, merged into the double row state every 4096 keys and at the end; probe shapes go to the fp32 loop on rounded operands. */
#include "rb_avx512.h"
#include "rb_omp.h"
#include "rb_pf.h"

#include <cpuid.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Blocking. Query rows go in groups of GR (the register block of both products);
 * keys in sub-blocks of SBK = 4 panels of 16 (one lane per key in QKᵀ). A query
 * block is QB_GROUPS groups (the unit of OpenMP work in row mode); a key block is
 * KB_SBS sub-blocks (what every group of a query block reads while it sits in L2). */
enum {
    GR = 4,
    SBK = 64,
    SBPAIRS = SBK / 2,
    QB_GROUPS = 64,
    KB_SBS = 4,
    STREAM_MAX_ROWS = 256,  /* at most this many rows: stream K/V, split keys */
    STREAM_MAX_PROBE = 2048, /* probe shapes: at most this many rows against 16x as many
                              * keys go to rb_attn_tile_avx512_bf16ko */
    /* a row's fp32 state takes at most this many sub-blocks (4096 keys, as the fp32 and
     * blas kernels) before it is merged into a double state and restarted: fp32 sums
     * over a whole shard grow their rounding with its length (2^-24 per term, ~1e-5
     * of l at a million keys), which made results depend on how ranks split the keys */
    FLUSH_SBS = 64
};

/* Everything one call shares between threads (read-only in the parallel parts,
 * except the packed K/V arrays while they are filled). */
typedef struct {
    int d, np, dv;        /* head_dim, bf16 pairs per q/k row, v row padded to 64 */
    float scale;
    int64_t nq, ng, nk, nsb; /* rows, groups of GR rows, keys, sub-blocks */
    const float *k, *v;
    const uint32_t *qp;   /* [ng*GR][np] bf16 pairs, padded rows copy the last row */
    const int64_t *qposp; /* [ng*GR] positions, padded like qp */
    const int64_t *gqmin, *gqmax; /* per group, over its real rows */
    const int64_t *kposp; /* [nsb*SBK], padded with INT64_MAX */
    const int64_t *sbmin, *sbmax; /* per sub-block, over its real keys */
    const int *sbval;     /* real keys in each sub-block (1..SBK) */
} bf_ctx;

/* The fp32 online state of a run of rows: m, l, u per row and acc[dv] per row. */
typedef struct {
    float *m, *l, *u, *acc;
} bf_state;

static inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* Pack one row of d floats as np bf16 pairs: out[i] = (x[2i], x[2i+1]), round to
 * nearest even; dims past d (an odd d's partner, the padding to np) are 0. */
static void pack_row_pairs(const float *x, int d, int np, uint32_t *out)
{
    for (int i0 = 0; i0 < np; i0 += 16) {
        const int f0 = 2 * i0;
        const int nlo = d - f0 >= 16 ? 16 : (d - f0 > 0 ? d - f0 : 0);
        const int nhi = d - f0 - 16 >= 16 ? 16 : (d - f0 - 16 > 0 ? d - f0 - 16 : 0);
        const __m512 lo = _mm512_maskz_loadu_ps((__mmask16)((1u << nlo) - 1u), x + f0);
        const __m512 hi = _mm512_maskz_loadu_ps((__mmask16)((1u << nhi) - 1u), x + f0 + 16);
        const __m512i pr = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
        const int cnt = np - i0 >= 16 ? 16 : np - i0;
        _mm512_mask_storeu_epi32(out + i0, (__mmask16)((1u << cnt) - 1u), pr);
    }
}

/* Transpose 16 rows of 16 32-bit elements in place (r[i][j] -> r[j][i]). */
static inline void transpose16_epi32(__m512i *r)
{
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + c], 128-bit lane L: element 4L + c of rows 4i .. 4i+3 */
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* 4x4 transpose of 128-bit lanes for each c */
    for (int c = 0; c < 4; c++) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
        r[c] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(2, 0, 2, 0));
        r[8 + c] = _mm512_shuffle_i32x4(v0, v2, _MM_SHUFFLE(3, 1, 3, 1));
        r[4 + c] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + c] = _mm512_shuffle_i32x4(v1, v3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* The 16 bf16 pairs i0 .. i0+15 of a row of d floats (dims past d are 0). */
static inline __m512i row_pairs16(const float *x, int d, int i0)
{
    const int f0 = 2 * i0;
    const int nlo = d - f0 >= 16 ? 16 : (d - f0 > 0 ? d - f0 : 0);
    const int nhi = d - f0 - 16 >= 16 ? 16 : (d - f0 - 16 > 0 ? d - f0 - 16 : 0);
    const __m512 lo = _mm512_maskz_loadu_ps((__mmask16)((1u << nlo) - 1u), x + f0);
    const __m512 hi = _mm512_maskz_loadu_ps((__mmask16)((1u << nhi) - 1u), x + f0 + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* Pack sub-block sb of K and V. kp[i*SBK + n] = pair i of key n (keys in lanes, for
 * QKᵀ; 16x16 blocks transposed in registers); vp[t*dv + j] = (v[2t][j], v[2t+1][j])
 * (consecutive keys interleaved, for PV). Keys past nk and dims past d are zero. One
 * pf_step (pf may be NULL) per 4 key rows of a transpose and per 2 pairs of V rows:
 * PACK_STEPS(np) in all. */
#define PACK_STEPS(np) (4 * ((np) / 16) * (SBK / 16) + SBPAIRS / 2)
static void pack_sb(const bf_ctx *c, int64_t sb, uint32_t *kp, uint32_t *vp, rb_pf *pf)
{
    const int d = c->d, np = c->np, dv = c->dv;
    const int64_t k0 = sb * SBK;
    const int nval = c->sbval[sb];
    for (int p = 0; p < SBK / 16; p++) {
        for (int i0 = 0; i0 < np; i0 += 16) { /* np is a multiple of 16 */
            __m512i r[16];
            for (int n = 0; n < 16; n++) {
                const int key = 16 * p + n;
                if (n % 4 == 0)
                    pf_step(pf);
                r[n] = key < nval ? row_pairs16(c->k + (size_t)(k0 + key) * (size_t)d, d, i0)
                                  : _mm512_setzero_si512();
            }
            transpose16_epi32(r);
            for (int j = 0; j < 16; j++)
                _mm512_store_si512(kp + (size_t)(i0 + j) * SBK + 16 * p, r[j]);
        }
    }
    /* (a_j, b_j) interleaved: 16-bit lane 2j takes a_j (0..15), 2j+1 takes b_j (16..31) */
    const __m512i ilv = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25,
                                         9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
                                         17, 1, 16, 0);
    for (int t = 0; t < SBPAIRS; t++) {
        const int n0 = 2 * t, n1 = 2 * t + 1;
        if (t % 2 == 0)
            pf_step(pf);
        const float *v0 = n0 < nval ? c->v + (size_t)(k0 + n0) * (size_t)d : NULL;
        const float *v1 = n1 < nval ? c->v + (size_t)(k0 + n1) * (size_t)d : NULL;
        uint32_t *o = vp + (size_t)t * (size_t)dv;
        for (int j = 0; j < dv; j += 16) {
            const int cnt = d - j >= 16 ? 16 : (d - j > 0 ? d - j : 0);
            const __mmask16 mk = (__mmask16)((1u << cnt) - 1u);
            const __m512 a = v0 ? _mm512_maskz_loadu_ps(mk, v0 + j) : _mm512_setzero_ps();
            const __m512 b = v1 ? _mm512_maskz_loadu_ps(mk, v1 + j) : _mm512_setzero_ps();
            const __m512i ab = (__m512i)_mm512_cvtne2ps_pbh(b, a);
            _mm512_store_si512(o + j, _mm512_permutexvar_epi16(ilv, ab));
        }
    }
}

/* S = Q_g Kᵀ for the GR rows of a group (qg, stride np) and the SBK keys of a packed
 * sub-block: S[r*SBK + n] is the raw dot product of row r and key n (64-aligned). */
static inline void qk_group(const uint32_t *qg, int np, const uint32_t *kp, float *S)
{
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
    __m512 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    __m512 a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    __m512 a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    const uint32_t *q0 = qg, *q1 = qg + np, *q2 = qg + 2 * np, *q3 = qg + 3 * np;
    for (int i = 0; i < np; i++) {
        const uint32_t *kk = kp + (size_t)i * SBK;
        const __m512bh b0 = (__m512bh)_mm512_load_si512(kk);
        const __m512bh b1 = (__m512bh)_mm512_load_si512(kk + 16);
        const __m512bh b2 = (__m512bh)_mm512_load_si512(kk + 32);
        const __m512bh b3 = (__m512bh)_mm512_load_si512(kk + 48);
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)q0[i]);
        a00 = _mm512_dpbf16_ps(a00, x, b0);
        a01 = _mm512_dpbf16_ps(a01, x, b1);
        a02 = _mm512_dpbf16_ps(a02, x, b2);
        a03 = _mm512_dpbf16_ps(a03, x, b3);
        x = (__m512bh)_mm512_set1_epi32((int)q1[i]);
        a10 = _mm512_dpbf16_ps(a10, x, b0);
        a11 = _mm512_dpbf16_ps(a11, x, b1);
        a12 = _mm512_dpbf16_ps(a12, x, b2);
        a13 = _mm512_dpbf16_ps(a13, x, b3);
        x = (__m512bh)_mm512_set1_epi32((int)q2[i]);
        a20 = _mm512_dpbf16_ps(a20, x, b0);
        a21 = _mm512_dpbf16_ps(a21, x, b1);
        a22 = _mm512_dpbf16_ps(a22, x, b2);
        a23 = _mm512_dpbf16_ps(a23, x, b3);
        x = (__m512bh)_mm512_set1_epi32((int)q3[i]);
        a30 = _mm512_dpbf16_ps(a30, x, b0);
        a31 = _mm512_dpbf16_ps(a31, x, b1);
        a32 = _mm512_dpbf16_ps(a32, x, b2);
        a33 = _mm512_dpbf16_ps(a33, x, b3);
    }
    _mm512_store_ps(S + 0, a00), _mm512_store_ps(S + 16, a01);
    _mm512_store_ps(S + 32, a02), _mm512_store_ps(S + 48, a03);
    _mm512_store_ps(S + 64, a10), _mm512_store_ps(S + 80, a11);
    _mm512_store_ps(S + 96, a12), _mm512_store_ps(S + 112, a13);
    _mm512_store_ps(S + 128, a20), _mm512_store_ps(S + 144, a21);
    _mm512_store_ps(S + 160, a22), _mm512_store_ps(S + 176, a23);
    _mm512_store_ps(S + 192, a30), _mm512_store_ps(S + 208, a31);
    _mm512_store_ps(S + 224, a32), _mm512_store_ps(S + 240, a33);
}

/* acc[r] <- alpha[r] * acc[r] + P[r] V for the GR rows of a group: pt holds each
 * row's SBK probabilities as SBPAIRS bf16 pairs (row stride SBPAIRS), vp the packed
 * V of the sub-block, acc GR rows of dv floats. Four 16-dim chunks at a time. */
static inline void pv_group(const uint32_t *pt, const uint32_t *vp, int dv, float *acc,
                            const float *alpha)
{
    const __m512 al0 = _mm512_set1_ps(alpha[0]), al1 = _mm512_set1_ps(alpha[1]);
    const __m512 al2 = _mm512_set1_ps(alpha[2]), al3 = _mm512_set1_ps(alpha[3]);
    const size_t sd = (size_t)dv;
    for (int c0 = 0; c0 < dv; c0 += 64) {
        float *o0 = acc + c0, *o1 = o0 + sd, *o2 = o1 + sd, *o3 = o2 + sd;
        __m512 a00 = _mm512_mul_ps(al0, _mm512_load_ps(o0));
        __m512 a01 = _mm512_mul_ps(al0, _mm512_load_ps(o0 + 16));
        __m512 a02 = _mm512_mul_ps(al0, _mm512_load_ps(o0 + 32));
        __m512 a03 = _mm512_mul_ps(al0, _mm512_load_ps(o0 + 48));
        __m512 a10 = _mm512_mul_ps(al1, _mm512_load_ps(o1));
        __m512 a11 = _mm512_mul_ps(al1, _mm512_load_ps(o1 + 16));
        __m512 a12 = _mm512_mul_ps(al1, _mm512_load_ps(o1 + 32));
        __m512 a13 = _mm512_mul_ps(al1, _mm512_load_ps(o1 + 48));
        __m512 a20 = _mm512_mul_ps(al2, _mm512_load_ps(o2));
        __m512 a21 = _mm512_mul_ps(al2, _mm512_load_ps(o2 + 16));
        __m512 a22 = _mm512_mul_ps(al2, _mm512_load_ps(o2 + 32));
        __m512 a23 = _mm512_mul_ps(al2, _mm512_load_ps(o2 + 48));
        __m512 a30 = _mm512_mul_ps(al3, _mm512_load_ps(o3));
        __m512 a31 = _mm512_mul_ps(al3, _mm512_load_ps(o3 + 16));
        __m512 a32 = _mm512_mul_ps(al3, _mm512_load_ps(o3 + 32));
        __m512 a33 = _mm512_mul_ps(al3, _mm512_load_ps(o3 + 48));
        for (int t = 0; t < SBPAIRS; t++) {
            const uint32_t *vv = vp + (size_t)t * sd + c0;
            const __m512bh b0 = (__m512bh)_mm512_load_si512(vv);
            const __m512bh b1 = (__m512bh)_mm512_load_si512(vv + 16);
            const __m512bh b2 = (__m512bh)_mm512_load_si512(vv + 32);
            const __m512bh b3 = (__m512bh)_mm512_load_si512(vv + 48);
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)pt[t]);
            a00 = _mm512_dpbf16_ps(a00, x, b0);
            a01 = _mm512_dpbf16_ps(a01, x, b1);
            a02 = _mm512_dpbf16_ps(a02, x, b2);
            a03 = _mm512_dpbf16_ps(a03, x, b3);
            x = (__m512bh)_mm512_set1_epi32((int)pt[SBPAIRS + t]);
            a10 = _mm512_dpbf16_ps(a10, x, b0);
            a11 = _mm512_dpbf16_ps(a11, x, b1);
            a12 = _mm512_dpbf16_ps(a12, x, b2);
            a13 = _mm512_dpbf16_ps(a13, x, b3);
            x = (__m512bh)_mm512_set1_epi32((int)pt[2 * SBPAIRS + t]);
            a20 = _mm512_dpbf16_ps(a20, x, b0);
            a21 = _mm512_dpbf16_ps(a21, x, b1);
            a22 = _mm512_dpbf16_ps(a22, x, b2);
            a23 = _mm512_dpbf16_ps(a23, x, b3);
            x = (__m512bh)_mm512_set1_epi32((int)pt[3 * SBPAIRS + t]);
            a30 = _mm512_dpbf16_ps(a30, x, b0);
            a31 = _mm512_dpbf16_ps(a31, x, b1);
            a32 = _mm512_dpbf16_ps(a32, x, b2);
            a33 = _mm512_dpbf16_ps(a33, x, b3);
        }
        _mm512_store_ps(o0, a00), _mm512_store_ps(o0 + 16, a01);
        _mm512_store_ps(o0 + 32, a02), _mm512_store_ps(o0 + 48, a03);
        _mm512_store_ps(o1, a10), _mm512_store_ps(o1 + 16, a11);
        _mm512_store_ps(o1 + 32, a12), _mm512_store_ps(o1 + 48, a13);
        _mm512_store_ps(o2, a20), _mm512_store_ps(o2 + 16, a21);
        _mm512_store_ps(o2 + 32, a22), _mm512_store_ps(o2 + 48, a23);
        _mm512_store_ps(o3, a30), _mm512_store_ps(o3 + 16, a31);
        _mm512_store_ps(o3 + 32, a32), _mm512_store_ps(o3 + 48, a33);
    }
}

/* ---- AMX path --------------------------------------------------------------------
 * Where the CPU has AMX-BF16 and the OS grants the tile data state, QKᵀ and PV of a
 * 16-row group run on TDPBF16PS (same bf16 operands and fp32 accumulation as the
 * VDPBF16PS path; the packed layouts above are already AMX's: K's pairs of dims and
 * V's pairs of keys interleaved). Softmax stays in AVX-512. ROPEBENCH_BF16_AMX=0
 * turns it off. */
enum { AG = 16 }; /* rows per AMX group: AG / GR register groups */

typedef struct __attribute__((packed, aligned(64))) {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tilecfg;

/* 1 if AMX-BF16 may be used by this process (asks the kernel once for the tile
 * data permission; the answer is cached), 0 otherwise or if ROPEBENCH_BF16_AMX=0. */
static int amx_usable(void)
{
    static int cached; /* 0 unknown, 1 yes, -1 no */
    const char *env = getenv("ROPEBENCH_BF16_AMX");
    if (env && env[0] == '0')
        return 0;
    int s = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (s == 0) {
        s = -1;
        unsigned int a, b, cx, dx;
        if (__get_cpuid_max(0, NULL) >= 7 && __get_cpuid(1, &a, &b, &cx, &dx) &&
            ((cx >> 27) & 1)) { /* OSXSAVE */
            __cpuid_count(7, 0, a, b, cx, dx);
            const int amx_bf16 = (dx >> 22) & 1, amx_tile = (dx >> 24) & 1;
            unsigned int lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            const int os_tiles = ((lo >> 17) & 3u) == 3u; /* XTILECFG, XTILEDATA */
            /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18) */
            if (amx_bf16 && amx_tile && os_tiles && syscall(SYS_arch_prctl, 0x1023, 18) == 0)
                s = 1;
        }
        __atomic_store_n(&cached, s, __ATOMIC_RELEASE);
    }
    return s == 1;
}

/* rb_attn_bf16_path: see rb_avx512.h. */
const char *rb_attn_bf16_path(void)
{
    return amx_usable() ? "AMX-BF16 tiles (TDPBF16PS) for QK^T and PV; probe shapes: "
                          "VDPBF16PS on key blocks converted to bf16 pairs"
                        : "VDPBF16PS for QK^T and PV; probe shapes: VDPBF16PS on key "
                          "blocks converted to bf16 pairs";
}

/* Configure every tile as 16 rows x 64 bytes (this thread). */
static void amx_config(void)
{
    amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int i = 0; i < 8; i++) {
        cfg.rows[i] = 16;
        cfg.colsb[i] = 64;
    }
    /* gcc 12's _tile_loadconfig describes its operand as a smaller type, and the
     * stores of rows/colsb were dropped as dead: pass the whole 64 bytes */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
}

__attribute__((target("amx-tile"))) static void amx_release(void) { _tile_release(); }

/* Transposed horizontal reductions: lane r of the result is the max (sum) of the 16
 * lanes of v[r]. Four shuffle levels (46 operations for 16 rows instead of ~130 for
 * 16 separate reductions); after them lane 4*b + t holds row 4*t + b, undone by
 * one permute. */
#define RB_HREDUCE16(name, op)                                                            \
    static inline __m512 name(const __m512 *v)                                            \
    {                                                                                     \
        __m512 w[8], x[4], y[2];                                                          \
        for (int i = 0; i < 8; i++)                                                       \
            w[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)), \
                      _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2))); \
        for (int i = 0; i < 4; i++)                                                       \
            x[i] = op(_mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)), \
                      _mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1))); \
        for (int i = 0; i < 2; i++)                                                       \
            y[i] = op(_mm512_shuffle_ps(x[2 * i], x[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),  \
                      _mm512_shuffle_ps(x[2 * i], x[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));  \
        const __m512 z = op(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),        \
                            _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));        \
        const __m512i idx =                                                               \
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);      \
        return _mm512_permutexvar_ps(idx, z);                                             \
    }
RB_HREDUCE16(hmax16, _mm512_max_ps)
RB_HREDUCE16(hsum16, _mm512_add_ps)
#undef RB_HREDUCE16

/* Online-softmax update of AG consecutive rows with the SBK raw dot products of a
 * sub-block each (S: AG x SBK, 64-aligned; overwritten with the masked scores):
 * scores scale*S, masked by position unless `unmasked` (lanes past nval always), new
 * max, l and u updated in fp32 (u picks up the shift l*(m_old - m_new)),
 * p = exp(s - m_new) written as SBPAIRS bf16 pairs per row to pt, and
 * alpha = exp(m_old - m_new), the factor for each row's acc. qpos, m, l, u and alpha
 * are AG consecutive entries. Masked lanes become -inf, give p = 0 and add nothing;
 * a row that has still seen no key (m = -inf) is left as it is with p = 0 and
 * alpha = 1 (no -inf - -inf). Row maxima and sums are reduced 16 rows at a time,
 * alpha by one vector exp. */
static inline void softmax_rows16(float *S, float scale, const int64_t *qpos,
                                  const int64_t *kpos, int nval, int unmasked, float *m,
                                  float *l, float *u, uint32_t *pt, float *alpha)
{
    const __m512 vscale = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    __m512 rv[AG];
    for (int r = 0; r < AG; r++) {
        float *sr = S + r * SBK;
        __m512 x0 = _mm512_mul_ps(_mm512_load_ps(sr), vscale);
        __m512 x1 = _mm512_mul_ps(_mm512_load_ps(sr + 16), vscale);
        __m512 x2 = _mm512_mul_ps(_mm512_load_ps(sr + 32), vscale);
        __m512 x3 = _mm512_mul_ps(_mm512_load_ps(sr + 48), vscale);
        if (!unmasked) {
            const __m512i qv = _mm512_set1_epi64(qpos[r]);
            __mmask16 mk[4];
            for (int p = 0; p < 4; p++) {
                const int left = nval - 16 * p;
                const unsigned valid =
                    left >= 16 ? 0xFFFFu : (left > 0 ? (1u << left) - 1u : 0u);
                const __mmask8 lo =
                    _mm512_cmple_epi64_mask(_mm512_loadu_si512(kpos + 16 * p), qv);
                const __mmask8 hi =
                    _mm512_cmple_epi64_mask(_mm512_loadu_si512(kpos + 16 * p + 8), qv);
                mk[p] = (__mmask16)(((unsigned)lo | ((unsigned)hi << 8)) & valid);
            }
            x0 = _mm512_mask_mov_ps(ninf, mk[0], x0);
            x1 = _mm512_mask_mov_ps(ninf, mk[1], x1);
            x2 = _mm512_mask_mov_ps(ninf, mk[2], x2);
            x3 = _mm512_mask_mov_ps(ninf, mk[3], x3);
        }
        _mm512_store_ps(sr, x0);
        _mm512_store_ps(sr + 16, x1);
        _mm512_store_ps(sr + 32, x2);
        _mm512_store_ps(sr + 48, x3);
        rv[r] = _mm512_max_ps(_mm512_max_ps(x0, x1), _mm512_max_ps(x2, x3));
    }
    const __m512 mo = _mm512_loadu_ps(m);
    const __m512 mn = _mm512_max_ps(mo, hmax16(rv));
    const __mmask16 seen = _mm512_cmp_ps_mask(mn, ninf, _CMP_NEQ_OQ);
    const __mmask16 had = _mm512_cmp_ps_mask(mo, ninf, _CMP_NEQ_OQ);
    /* shift m_old - m_new where there was a state, else 0 (alpha 1, no -inf - -inf);
     * rows that see nothing subtract 0 from their -inf scores: p = 0 */
    const __m512 dmo = _mm512_maskz_sub_ps(had, mo, mn);
    const __m512 a = rb_exp512_ps(dmo);
    float mnv[AG] __attribute__((aligned(64)));
    _mm512_store_ps(mnv, _mm512_maskz_mov_ps(seen, mn));
    __m512 ls[AG], us[AG];
    for (int r = 0; r < AG; r++) {
        const float *sr = S + r * SBK;
        const __m512 vm = _mm512_set1_ps(mnv[r]);
        const __m512 x0 = _mm512_load_ps(sr), x1 = _mm512_load_ps(sr + 16);
        const __m512 x2 = _mm512_load_ps(sr + 32), x3 = _mm512_load_ps(sr + 48);
        const __m512 d0 = _mm512_sub_ps(x0, vm), d1 = _mm512_sub_ps(x1, vm);
        const __m512 d2 = _mm512_sub_ps(x2, vm), d3 = _mm512_sub_ps(x3, vm);
        const __m512 e0 = rb_exp512_ps(d0), e1 = rb_exp512_ps(d1);
        const __m512 e2 = rb_exp512_ps(d2), e3 = rb_exp512_ps(d3);
        ls[r] = _mm512_add_ps(_mm512_add_ps(e0, e1), _mm512_add_ps(e2, e3));
        __m512 eu;
        if (unmasked) {
            eu = _mm512_mul_ps(e0, d0);
            eu = _mm512_fmadd_ps(e1, d1, eu);
            eu = _mm512_fmadd_ps(e2, d2, eu);
            eu = _mm512_fmadd_ps(e3, d3, eu);
        } else { /* masked lanes: e = 0 but d = -inf */
            eu = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(x0, ninf, _CMP_NEQ_OQ), e0, d0);
            eu = _mm512_mask3_fmadd_ps(e1, d1, eu, _mm512_cmp_ps_mask(x1, ninf, _CMP_NEQ_OQ));
            eu = _mm512_mask3_fmadd_ps(e2, d2, eu, _mm512_cmp_ps_mask(x2, ninf, _CMP_NEQ_OQ));
            eu = _mm512_mask3_fmadd_ps(e3, d3, eu, _mm512_cmp_ps_mask(x3, ninf, _CMP_NEQ_OQ));
        }
        us[r] = eu;
        _mm512_store_si512(pt + r * SBPAIRS, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
        _mm512_store_si512(pt + r * SBPAIRS + 16, (__m512i)_mm512_cvtne2ps_pbh(e3, e2));
    }
    const __m512 lo = _mm512_loadu_ps(l), uo = _mm512_loadu_ps(u);
    /* l = a l + L; u = a (u + l (m_old - m_new)) + U; rows without a state: a = 1 and
     * l = u = 0, rows that saw nothing: L = U = 0 */
    _mm512_storeu_ps(l, _mm512_fmadd_ps(a, lo, hsum16(ls)));
    _mm512_storeu_ps(u, _mm512_fmadd_ps(a, _mm512_fmadd_ps(lo, dmo, uo), hsum16(us)));
    _mm512_storeu_ps(m, mn);
    _mm512_store_ps(alpha, a);
}

/* group_sees: whether the AG rows from register group g see any key of sub-block sb;
 * if so, *nval = its valid keys and *unmasked = every row sees every one of them. */
static int group_sees(const bf_ctx *c, int64_t g, int64_t sb, int *nval, int *unmasked)
{
    int64_t qmin = INT64_MAX, qmax = INT64_MIN;
    for (int64_t j = g; j < g + AG / GR; j++) {
        qmin = c->gqmin[j] < qmin ? c->gqmin[j] : qmin;
        qmax = c->gqmax[j] > qmax ? c->gqmax[j] : qmax;
    }
    if (c->sbmin[sb] > qmax)
        return 0;
    *nval = c->sbval[sb];
    *unmasked = *nval == SBK && c->sbmax[sb] <= qmin;
    return 1;
}

/* One group of AG rows (first register group g, a multiple of AG/GR; state rows from
 * local row0) against one packed sub-block sb with VDPBF16PS: GR rows at a time for
 * the products, AG rows at once for the softmax. Skipped when fully masked, unmasked
 * fast path when every key is visible to every row, else position masks. */
static void group16_dp(const bf_ctx *c, int64_t g, int64_t sb, const uint32_t *kp,
                       const uint32_t *vp, const bf_state *st, int64_t row0)
{
    int nval, unmasked;
    if (!group_sees(c, g, sb, &nval, &unmasked))
        return;
    const size_t np = (size_t)c->np, dv = (size_t)c->dv;
    float S[AG * SBK] __attribute__((aligned(64)));
    for (int j = 0; j < AG / GR; j++)
        qk_group(c->qp + (size_t)(g + j) * GR * np, c->np, kp, S + j * GR * SBK);
    uint32_t pt[AG * SBPAIRS] __attribute__((aligned(64)));
    float alpha[AG] __attribute__((aligned(64)));
    softmax_rows16(S, c->scale, c->qposp + g * GR, c->kposp + sb * SBK, nval, unmasked,
                   st->m + row0, st->l + row0, st->u + row0, pt, alpha);
    for (int j = 0; j < AG / GR; j++)
        pv_group(pt + j * GR * SBPAIRS, vp, c->dv, st->acc + (size_t)(row0 + j * GR) * dv,
                 alpha + j * GR);
}

/* One group of AG rows (first register group g, a multiple of AG/GR; state rows from
 * local row0) against sub-block sb, products on AMX. Tiles: 0-3 C, 4-5 A, 6-7 B. */
__attribute__((target("amx-tile,amx-bf16"))) static void
group16_sb(const bf_ctx *c, int64_t g, int64_t sb, const uint32_t *kp, const uint32_t *vp,
           const bf_state *st, int64_t row0)
{
    int nval, unmasked;
    if (!group_sees(c, g, sb, &nval, &unmasked))
        return;
    const int np = c->np;
    const size_t dv = (size_t)c->dv;
    const uint32_t *qg = c->qp + (size_t)g * GR * (size_t)np;
    float S[AG * SBK] __attribute__((aligned(64)));
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int ks = 0; ks < np; ks += 16) { /* 32 dims per step */
        const uint32_t *kk = kp + (size_t)ks * SBK;
        _tile_loadd(4, qg + ks, (size_t)np * 4);
        _tile_loadd(6, kk, SBK * 4);
        _tile_loadd(7, kk + 16, SBK * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(6, kk + 32, SBK * 4);
        _tile_loadd(7, kk + 48, SBK * 4);
        _tile_dpbf16ps(2, 4, 6);
        _tile_dpbf16ps(3, 4, 7);
    }
    _tile_stored(0, S, SBK * 4);
    _tile_stored(1, S + 16, SBK * 4);
    _tile_stored(2, S + 32, SBK * 4);
    _tile_stored(3, S + 48, SBK * 4);

    uint32_t pt[AG * SBPAIRS] __attribute__((aligned(64)));
    float alpha[AG] __attribute__((aligned(64)));
    float *acc = st->acc + (size_t)row0 * dv;
    softmax_rows16(S, c->scale, c->qposp + g * GR, c->kposp + sb * SBK, nval, unmasked,
                   st->m + row0, st->l + row0, st->u + row0, pt, alpha);
    for (int r = 0; r < AG; r++) {
        if (alpha[r] != 1.0f) {
            const __m512 va = _mm512_set1_ps(alpha[r]);
            float *o = acc + (size_t)r * dv;
            for (size_t j = 0; j < dv; j += 16)
                _mm512_store_ps(o + j, _mm512_mul_ps(va, _mm512_load_ps(o + j)));
        }
    }
    /* acc += P V: P as two 32-key steps, 64 dims (four C tiles) at a time */
    _tile_loadd(4, pt, SBPAIRS * 4);
    _tile_loadd(5, pt + 16, SBPAIRS * 4);
    const size_t vs = dv * 4, v16 = 16 * dv;
    for (size_t c0 = 0; c0 < dv; c0 += 64) {
        float *o = acc + c0;
        const uint32_t *vv = vp + c0;
        _tile_loadd(0, o, vs);
        _tile_loadd(1, o + 16, vs);
        _tile_loadd(2, o + 32, vs);
        _tile_loadd(3, o + 48, vs);
        _tile_loadd(6, vv, vs);
        _tile_loadd(7, vv + v16, vs);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(0, 5, 7);
        _tile_loadd(6, vv + 16, vs);
        _tile_loadd(7, vv + v16 + 16, vs);
        _tile_dpbf16ps(1, 4, 6);
        _tile_dpbf16ps(1, 5, 7);
        _tile_loadd(6, vv + 32, vs);
        _tile_loadd(7, vv + v16 + 32, vs);
        _tile_dpbf16ps(2, 4, 6);
        _tile_dpbf16ps(2, 5, 7);
        _tile_loadd(6, vv + 48, vs);
        _tile_loadd(7, vv + v16 + 48, vs);
        _tile_dpbf16ps(3, 4, 6);
        _tile_dpbf16ps(3, 5, 7);
        _tile_stored(0, o, vs);
        _tile_stored(1, o + 16, vs);
        _tile_stored(2, o + 32, vs);
        _tile_stored(3, o + 48, vs);
    }
}

/* Register groups [g0, g1) (state rows of the group g0 from local row 0; g0 and g1
 * multiples of AG/GR) against sub-block sb, on AMX or VDPBF16PS; one pf_step (pf may
 * be NULL) per group of AG rows. */
static void groups_sb(const bf_ctx *c, int amx, int64_t g0, int64_t g1, int64_t sb,
                      const uint32_t *kp, const uint32_t *vp, const bf_state *st, rb_pf *pf)
{
    for (int64_t g = g0; g < g1; g += AG / GR) {
        pf_step(pf);
        if (amx)
            group16_sb(c, g, sb, kp, vp, st, (g - g0) * GR);
        else
            group16_dp(c, g, sb, kp, vp, st, (g - g0) * GR);
    }
}

/* Merge nrows fp32 state rows (from local row local0) into the double state rows
 * from row0 (rb_state_merge_f32_avx512). */
static void merge_rows(const bf_state *st, int64_t local0, int64_t row0, int64_t nrows,
                       int d, int dv, double *state)
{
    rb_state_merge_f32_avx512(state, NULL, 0, row0, nrows, d, st->m + local0, st->l + local0,
                              st->u + local0, st->acc + (size_t)local0 * (size_t)dv,
                              (size_t)dv, 1.0);
}

/* Reset nrows fp32 state rows starting at local row 0. */
static void state_reset(const bf_state *st, int64_t nrows, int dv)
{
    for (int64_t i = 0; i < nrows; i++) {
        st->m[i] = -INFINITY;
        st->l[i] = 0.0f;
        st->u[i] = 0.0f;
    }
    memset(st->acc, 0, (size_t)nrows * (size_t)dv * sizeof(float));
}

/* Sort helper: query blocks by decreasing estimated work. */
typedef struct {
    int64_t work, blk;
} bf_job;
static int job_cmp(const void *a, const void *b)
{
    const bf_job *x = a, *y = b;
    if (x->work != y->work)
        return x->work > y->work ? -1 : 1;
    return x->blk < y->blk ? -1 : (x->blk > y->blk);
}

/* rb_attn_tile_avx512_bf16: the tile contract (rb_kernels.h, rb_avx512.h) with q, k,
 * p and v rounded to bf16 (nearest even) and every product accumulated in fp32;
 * softmax state (m, l, u, acc) in fp32, merged into `state` every 4096 keys
 * (FLUSH_SBS, row mode) and at the end, so its rounding does not grow with the key
 * count. Products
 * run on AMX-BF16 where the CPU has it and the OS grants the tile state (else, or
 * with ROPEBENCH_BF16_AMX=0, on VDPBF16PS); both give the same class of results.
 * Any head_dim >= 1 (padded internally to 32 dims for q/k, 64 for v); positions may
 * be unsorted, gapped or repeated. Probe shapes (nq <= STREAM_MAX_PROBE rows against
 * nk >= 16 nq keys) go to rb_attn_tile_avx512_bf16ko: the same rounding, VDPBF16PS in
 * the fp32 kernel's key-outer loop, which converts each key block once with less
 * work per key than this file's packing into AMX/VDPBF16PS tiles (few rows see most
 * blocks of those shapes). Everything else takes one of two schedules:
 *  - row mode (e.g. causal tiles, nq ~ nk): K and V are packed to bf16 once, in
 *    parallel (extra memory about 4 nk d bytes, in the kernels' kept block,
 *    rb_kernels_scratch_take, held after the call for the next); query blocks of
 *    QB_GROUPS*GR rows go to threads largest visible work first (dynamic), each
 *    sweeping the key sub-blocks its rows can see, fully masked (group, sub-block)
 *    pairs skipped;
 *  - stream mode (nq <= STREAM_MAX_ROWS): the keys are split into one range per
 *    thread by equal visible work; each thread packs one key block at a time and
 *    runs every row against it while it is in cache, so K/V are read once; the
 *    per-thread states are merged in thread order.
 * Results do not depend on which thread ran a block; in stream mode they depend on
 * the thread count through the order of the final merges (rounding only). Rows
 * with no visible key stay untouched. Returns 0 or RB_ENOMEM. */
int rb_attn_tile_avx512_bf16(const float *q, const int64_t *q_pos, int64_t nq,
                             const float *k, const float *v, const int64_t *k_pos,
                             int64_t nk, int d, double scale, double *state)
{
    if (nq <= 0 || nk <= 0 || d <= 0 || rb_attn_tile_masked(q_pos, nq, k_pos, nk))
        return 0;
    if (nq <= STREAM_MAX_PROBE && nk >= 16 * nq)
        return rb_attn_tile_avx512_bf16ko(q, q_pos, nq, k, v, k_pos, nk, d, scale, state);
    int rc = 0;
    bf_ctx c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.np = (int)round_up((size_t)(d + 1) / 2, 16); /* AMX steps of 16 pairs */
    c.dv = (int)round_up((size_t)d, 64);
    c.scale = (float)scale;
    c.nq = nq;
    c.ng = (int64_t)round_up((size_t)nq, AG) / GR; /* rows padded to AG */
    c.nk = nk;
    c.nsb = (nk + SBK - 1) / SBK;
    c.k = k;
    c.v = v;
    const size_t np = (size_t)c.np, dv = (size_t)c.dv;
    const size_t kp_sz = np * SBK, vp_sz = (size_t)SBPAIRS * dv; /* uint32 per SB */
    /* few rows: stream the keys (probe shapes went to the fp32 loop above) */
    const int stream = nq <= STREAM_MAX_ROWS;
    const int amx = amx_usable();
    int nthr = rb_kernels_threads();
    if (nthr < 1)
        nthr = 1;
    const int64_t nqb = (c.ng + QB_GROUPS - 1) / QB_GROUPS;
    if (!stream && nthr > nqb)
        nthr = (int)nqb;
    if (stream && nthr > c.nsb)
        nthr = (int)c.nsb;

    uint32_t *qp = NULL, *kvp = NULL;
    int64_t *qposp = NULL, *gqmin = NULL, *gqmax = NULL, *kposp = NULL, *sbmin = NULL;
    int64_t *sbmax = NULL, *cut = NULL;
    int *sbval = NULL;
    bf_job *jobs = NULL;
    float *stbuf = NULL;

    const size_t nrows_p = (size_t)c.ng * GR;
    /* per-thread fp32 state: row mode one query block, stream mode every row */
    const size_t strows = stream ? nrows_p : (size_t)QB_GROUPS * GR;
    const size_t st_floats = round_up(strows * 3, 16) + strows * dv;
    /* packed K/V: row mode all sub-blocks, stream mode one key block per thread */
    const size_t kv_sbs = stream ? (size_t)nthr * KB_SBS : (size_t)c.nsb;
    /* packed K and V, packed q and the threads' states in one kept block
     * (rb_kernels_scratch_take: not faulted in again on every call) */
    const size_t kv_bytes = round_up(kv_sbs * (kp_sz + vp_sz) * sizeof *kvp, 64),
                 qp_bytes = round_up(nrows_p * np * sizeof *qp, 64);
    size_t blk_got = 0;
    char *blk = rb_kernels_scratch_take(
        kv_bytes + qp_bytes + (size_t)nthr * st_floats * sizeof *stbuf, &blk_got);
    if (blk) {
        kvp = (uint32_t *)blk;
        qp = (uint32_t *)(blk + kv_bytes);
        stbuf = (float *)(blk + kv_bytes + qp_bytes);
    }
    qposp = malloc(nrows_p * sizeof *qposp);
    gqmin = malloc((size_t)c.ng * sizeof *gqmin);
    gqmax = malloc((size_t)c.ng * sizeof *gqmax);
    kposp = malloc((size_t)c.nsb * SBK * sizeof *kposp);
    sbmin = malloc((size_t)c.nsb * sizeof *sbmin);
    sbmax = malloc((size_t)c.nsb * sizeof *sbmax);
    sbval = malloc((size_t)c.nsb * sizeof *sbval);
    jobs = stream ? NULL : malloc((size_t)nqb * sizeof *jobs);
    cut = stream ? malloc(((size_t)nthr + 1) * sizeof *cut) : NULL;
    if (!qp || !qposp || !gqmin || !gqmax || !kposp || !sbmin || !sbmax || !sbval ||
        !stbuf || !kvp || (!stream && !jobs) || (stream && !cut)) {
        rc = RB_ENOMEM;
        goto cleanup;
    }

    /* positions: rows padded by repeating the last row, keys with INT64_MAX */
    for (size_t r = 0; r < nrows_p; r++)
        qposp[r] = q_pos[r < (size_t)nq ? r : (size_t)nq - 1];
    for (int64_t g = 0; g < c.ng; g++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t r = g * GR; r < g * GR + GR && r < nq; r++) {
            lo = q_pos[r] < lo ? q_pos[r] : lo;
            hi = q_pos[r] > hi ? q_pos[r] : hi;
        }
        gqmin[g] = lo;
        gqmax[g] = hi;
    }
    for (int64_t sb = 0; sb < c.nsb; sb++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        int nv = 0;
        for (int n = 0; n < SBK; n++) {
            const int64_t key = sb * SBK + n;
            if (key < nk) {
                kposp[key] = k_pos[key];
                lo = k_pos[key] < lo ? k_pos[key] : lo;
                hi = k_pos[key] > hi ? k_pos[key] : hi;
                nv++;
            } else {
                kposp[key] = INT64_MAX;
            }
        }
        sbmin[sb] = lo;
        sbmax[sb] = hi;
        sbval[sb] = nv;
    }
    c.qp = qp;
    c.qposp = qposp;
    c.gqmin = gqmin;
    c.gqmax = gqmax;
    c.kposp = kposp;
    c.sbmin = sbmin;
    c.sbmax = sbmax;
    c.sbval = sbval;

    if (!stream) {
        /* work per query block: visible (group, sub-block) pairs, biggest first */
        for (int64_t b = 0; b < nqb; b++) {
            int64_t w = 0;
            const int64_t g1 = (b + 1) * QB_GROUPS < c.ng ? (b + 1) * QB_GROUPS : c.ng;
            for (int64_t g = b * QB_GROUPS; g < g1; g++)
                for (int64_t sb = 0; sb < c.nsb; sb++)
                    w += sbmin[sb] <= gqmax[g];
            jobs[b].work = w;
            jobs[b].blk = b;
        }
        qsort(jobs, (size_t)nqb, sizeof *jobs, job_cmp);
    } else {
        /* key ranges of equal work: sub-block sb costs its packing (reading 64 keys
         * from memory: about 48 register-group products on AMX, 8 on VDPBF16PS,
         * measured) plus the register groups that can see it */
        const int64_t w_pack = amx ? 48 : 8;
        int64_t total = 0;
        for (int64_t sb = 0; sb < c.nsb; sb++) {
            total += w_pack;
            for (int64_t g = 0; g < c.ng; g++)
                total += sbmin[sb] <= gqmax[g];
        }
        cut[0] = 0;
        int t = 1;
        int64_t acc = 0;
        for (int64_t sb = 0; sb < c.nsb && t < nthr; sb++) {
            acc += w_pack;
            for (int64_t g = 0; g < c.ng; g++)
                acc += sbmin[sb] <= gqmax[g];
            while (t < nthr && acc * nthr >= total * t)
                cut[t++] = sb + 1;
        }
        while (t <= nthr)
            cut[t++] = c.nsb;
    }

    int used = nthr; /* stream mode: threads that ran (set in the parallel region) */
#pragma omp parallel num_threads(nthr)
    {
#ifdef _OPENMP
        const int tid = omp_get_thread_num();
#else
        const int tid = 0;
#endif
        float *sb_ = stbuf + (size_t)tid * st_floats;
        bf_state st = {sb_, sb_ + strows, sb_ + 2 * strows, sb_ + round_up(strows * 3, 16)};
        if (amx)
            amx_config();

        /* q rows to bf16 pairs (padded rows repeat the last real row) */
#pragma omp for schedule(static)
        for (int64_t r = 0; r < (int64_t)nrows_p; r++)
            pack_row_pairs(q + (size_t)(r < nq ? r : nq - 1) * (size_t)d, d, c.np,
                           qp + (size_t)r * np);

        if (!stream) {
#pragma omp for schedule(static)
            for (int64_t sb = 0; sb < c.nsb; sb++)
                pack_sb(&c, sb, kvp + (size_t)sb * kp_sz,
                        kvp + (size_t)c.nsb * kp_sz + (size_t)sb * vp_sz, NULL);
            /* implicit barrier: K/V packed */
#pragma omp for schedule(dynamic, 1)
            for (int64_t j = 0; j < nqb; j++) {
                const int64_t b = jobs[j].blk;
                const int64_t g0 = b * QB_GROUPS;
                const int64_t g1 = g0 + QB_GROUPS < c.ng ? g0 + QB_GROUPS : c.ng;
                int64_t bqmax = INT64_MIN;
                for (int64_t g = g0; g < g1; g++)
                    bqmax = gqmax[g] > bqmax ? gqmax[g] : bqmax;
                const int64_t r0 = g0 * GR;
                const int64_t r1 = g1 * GR < nq ? g1 * GR : nq;
                state_reset(&st, (g1 - g0) * GR, c.dv);
                int64_t since = 0; /* sub-blocks in the fp32 state since its last merge */
                for (int64_t kb = 0; kb < c.nsb; kb += KB_SBS) {
                    const int64_t kb1 = kb + KB_SBS < c.nsb ? kb + KB_SBS : c.nsb;
                    int64_t kbmin = INT64_MAX;
                    for (int64_t sb = kb; sb < kb1; sb++)
                        kbmin = sbmin[sb] < kbmin ? sbmin[sb] : kbmin;
                    if (kbmin > bqmax)
                        continue;
                    for (int64_t sb = kb; sb < kb1; sb++)
                        groups_sb(&c, amx, g0, g1, sb, kvp + (size_t)sb * kp_sz,
                                  kvp + (size_t)c.nsb * kp_sz + (size_t)sb * vp_sz, &st,
                                  NULL);
                    if ((since += kb1 - kb) >= FLUSH_SBS) { /* (these rows are this job's) */
                        merge_rows(&st, 0, r0, r1 - r0, d, c.dv, state);
                        state_reset(&st, (g1 - g0) * GR, c.dv);
                        since = 0;
                    }
                }
                merge_rows(&st, 0, r0, r1 - r0, d, c.dv, state);
            }
        } else {
            /* (fewer than 16 * STREAM_MAX_ROWS = 4096 keys here, the probe shapes having
             * gone to the fp32 kernel: a thread's fp32 state never needs a FLUSH_SBS
             * merge before the end) */
            state_reset(&st, (int64_t)nrows_p, c.dv);
            uint32_t *kpt = kvp + (size_t)tid * KB_SBS * (kp_sz + vp_sz);
            uint32_t *vpt = kpt + KB_SBS * kp_sz;
            /* the q packing above ends with a barrier; every thread owns its key ranges:
             * tid, tid + team, ... (the team may be smaller than asked, under
             * OMP_THREAD_LIMIT or OMP_DYNAMIC, and no range may be left out) */
            const int team = rb_omp_team();
            if (tid == 0)
                used = team;
            for (int part = tid; part < nthr; part += team) {
                for (int64_t kb = cut[part]; kb < cut[part + 1]; kb += KB_SBS) {
                    const int64_t kb1 =
                        kb + KB_SBS < cut[part + 1] ? kb + KB_SBS : cut[part + 1];
                    /* the raw K and V rows of this thread's next key block come from memory:
                     * prefetch them into L2 over this block's packing and groups, in order
                     * (no prefetch measured 20-30 % slower here) */
                    rb_pf pf = RB_PF_NONE;
                    if (kb1 < cut[part + 1]) {
                        const int64_t n1 =
                            kb1 + KB_SBS < cut[part + 1] ? kb1 + KB_SBS : cut[part + 1];
                        const int64_t keys = (n1 * SBK < nk ? n1 * SBK : nk) - kb1 * SBK;
                        const int64_t steps =
                            (kb1 - kb) * (PACK_STEPS(c.np) + (c.ng + AG / GR - 1) / (AG / GR));
                        pf_block(&pf, (const char *)(c.k + (size_t)(kb1 * SBK) * (size_t)d),
                                 (const char *)(c.v + (size_t)(kb1 * SBK) * (size_t)d),
                                 (keys * (int64_t)d * (int64_t)sizeof(float) + 63) / 64, steps);
                    }
                    for (int64_t sb = kb; sb < kb1; sb++)
                        pack_sb(&c, sb, kpt + (size_t)(sb - kb) * kp_sz,
                                vpt + (size_t)(sb - kb) * vp_sz, &pf);
                    for (int64_t sb = kb; sb < kb1; sb++)
                        groups_sb(&c, amx, 0, c.ng, sb, kpt + (size_t)(sb - kb) * kp_sz,
                                  vpt + (size_t)(sb - kb) * vp_sz, &st, &pf);
                }
            }
        }
        if (amx)
            amx_release();
    }
    if (stream) {
        /* merge the states of the threads that ran, in thread order: deterministic */
        for (int t = 0; t < used; t++) {
            float *sb_ = stbuf + (size_t)t * st_floats;
            bf_state st = {sb_, sb_ + strows, sb_ + 2 * strows,
                           sb_ + round_up(strows * 3, 16)};
            merge_rows(&st, 0, 0, nq, d, c.dv, state);
        }
    }

cleanup:
    rb_kernels_scratch_give(blk, blk_got);
    free(qposp);
    free(gqmin);
    free(gqmax);
    free(kposp);
    free(sbmin);
    free(sbmax);
    free(sbval);
    free(jobs);
    free(cut);
    return rc;
}

/* rb_attn_tile_avx512_bf16_probe: see rb_avx512.h. */
int rb_attn_tile_avx512_bf16_probe(const float *q, const int64_t *q_pos, int64_t nq,
                                   const float *k, const float *v, const int64_t *k_pos,
                                   int64_t nk, int d, double scale, double *state)
{
    if (nq <= STREAM_MAX_PROBE)
        return rb_attn_tile_avx512_bf16ko_probe(q, q_pos, nq, k, v, k_pos, nk, d, scale,
                                                 state);
    return rb_attn_tile_avx512_bf16(q, q_pos, nq, k, v, k_pos, nk, d, scale, state);
}
