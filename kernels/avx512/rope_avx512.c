/* rope_avx512.c — RoPE application with exact phases generated incrementally in double
 * (angle-addition recurrence over runs of constant position step, re-anchored from
 * rb_rope_phase every RB_ROPE_ANCHOR rows), vectorized with AVX-512, OpenMP over blocks. */
#include "rb_avx512.h"
#include "rb_rope_fast.h"

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- vector sin/cos of reduced angles ---------------------------------------------
 * Input |t| <= pi (+ a few ulp), as rb_rope_phase returns. t = k*pi/2 + r with k in
 * {-2..2} and pi/2 split in two (fdlibm's pio2_1 has 33 bits, so k*pio2_1 and t - k*pio2_1
 * are exact; the second term adds ~1e-26 rad of error), |r| <= pi/4. sin r and cos r by
 * fdlibm's __kernel_sin / __kernel_cos polynomials (< 1 ulp on [-pi/4, pi/4]), then
 * the quadrant selects and negates. Error <= ~1 ulp of the result, i.e. <= 2.3e-16. */
static inline void sincos8(__m512d t, __m512d *sn, __m512d *cs)
{
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(t, _mm512_set1_pd(0x1.45f306dc9c883p-1)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(1.57079632673412561417e+00), t);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(6.07710050650619224932e-11), r);
    const __m512d z = _mm512_mul_pd(r, r);
    /* sin r = r + r^3 (S1 + z (S2 + z (S3 + z (S4 + z (S5 + z S6))))) */
    __m512d ps = _mm512_set1_pd(1.58969099521155010221e-10);
    ps = _mm512_fmadd_pd(ps, z, _mm512_set1_pd(-2.50507602534068634195e-08));
    ps = _mm512_fmadd_pd(ps, z, _mm512_set1_pd(2.75573137070700676789e-06));
    ps = _mm512_fmadd_pd(ps, z, _mm512_set1_pd(-1.98412698298579493134e-04));
    ps = _mm512_fmadd_pd(ps, z, _mm512_set1_pd(8.33333333332248946124e-03));
    ps = _mm512_fmadd_pd(ps, z, _mm512_set1_pd(-1.66666666666666324348e-01));
    const __m512d s = _mm512_fmadd_pd(_mm512_mul_pd(z, r), ps, r);
    /* cos r = w + ((1 - w) - z/2 + z^2 (C1 + z (C2 + ...))), w = 1 - z/2 (FreeBSD k_cos) */
    __m512d pc = _mm512_set1_pd(-1.13596475577881948265e-11);
    pc = _mm512_fmadd_pd(pc, z, _mm512_set1_pd(2.08757232129817482790e-09));
    pc = _mm512_fmadd_pd(pc, z, _mm512_set1_pd(-2.75573143513906633035e-07));
    pc = _mm512_fmadd_pd(pc, z, _mm512_set1_pd(2.48015872894767294178e-05));
    pc = _mm512_fmadd_pd(pc, z, _mm512_set1_pd(-1.38888888888741095749e-03));
    pc = _mm512_fmadd_pd(pc, z, _mm512_set1_pd(4.16666666666666019037e-02));
    const __m512d one = _mm512_set1_pd(1.0);
    const __m512d hz = _mm512_mul_pd(z, _mm512_set1_pd(0.5));
    const __m512d w = _mm512_sub_pd(one, hz);
    const __m512d corr = _mm512_fmadd_pd(_mm512_mul_pd(z, z), pc,
                                         _mm512_sub_pd(_mm512_sub_pd(one, w), hz));
    const __m512d c = _mm512_add_pd(w, corr);
    /* quadrant q = k mod 4: sin = (s, c, -s, -c)[q], cos = (c, -s, -c, s)[q] */
    const __m512i q = _mm512_cvtpd_epi64(k);
    const __mmask8 swap = _mm512_test_epi64_mask(q, _mm512_set1_epi64(1));
    const __mmask8 neg_s = _mm512_test_epi64_mask(q, _mm512_set1_epi64(2));
    const __mmask8 neg_c =
        _mm512_test_epi64_mask(_mm512_add_epi64(q, _mm512_set1_epi64(1)), _mm512_set1_epi64(2));
    __m512d so = _mm512_mask_blend_pd(swap, s, c);
    __m512d co = _mm512_mask_blend_pd(swap, c, s);
    const __m512d zero = _mm512_setzero_pd();
    *sn = _mm512_mask_sub_pd(so, neg_s, zero, so);
    *cs = _mm512_mask_sub_pd(co, neg_c, zero, co);
}

/* ---- the phase generator -----------------------------------------------------------
 * Holds (cos, sin) of one row's angles for every lane: lane e is pair e (neox) or pair
 * e/2 (gptj, each pair twice so that a row is rotated without shuffling the phases).
 * Lanes are padded to a multiple of 8 with angle 0. */
typedef struct {
    const double *inv_freq;
    int half;       /* pairs */
    int dup;        /* lanes hold each pair twice (gptj) */
    int nvec;       /* vectors of 8 lanes */
    double *C, *S;  /* current row */
    double *CD, *SD; /* step: cos, sin of delta * inv_freq */
    double *ang;    /* scratch: exact angles */
    int64_t step;   /* delta of CD/SD when step_ok */
    int step_ok;
    void *mem;
} rope_gen;

static int gen_init(rope_gen *g, const double *inv_freq, int half, int dup)
{
    memset(g, 0, sizeof *g);
    g->inv_freq = inv_freq;
    g->half = half;
    g->dup = dup;
    const int lanes = dup ? 2 * half : half;
    g->nvec = (lanes + 7) / 8;
    const size_t n = (size_t)g->nvec * 8;
    g->mem = aligned_alloc(64, 5 * n * sizeof(double));
    if (!g->mem)
        return RB_ENOMEM;
    double *m = g->mem;
    g->C = m;
    g->S = m + n;
    g->CD = m + 2 * n;
    g->SD = m + 3 * n;
    g->ang = m + 4 * n;
    memset(g->ang, 0, n * sizeof(double));
    return 0;
}

static void gen_free(rope_gen *g) { free(g->mem); }

/* Exact angles of position p in g->ang (padding lanes stay 0), then (cos, sin) of them
 * into (c, s). */
static void gen_exact(rope_gen *g, int64_t p, double *c, double *s)
{
    if (g->dup) {
        for (int j = 0; j < g->half; j++)
            g->ang[2 * j] = g->ang[2 * j + 1] = rb_rope_phase(p, g->inv_freq[j]);
    } else {
        for (int j = 0; j < g->half; j++)
            g->ang[j] = rb_rope_phase(p, g->inv_freq[j]);
    }
    for (int v = 0; v < g->nvec; v++) {
        __m512d sv, cv;
        sincos8(_mm512_load_pd(g->ang + 8 * v), &sv, &cv);
        _mm512_store_pd(c + 8 * v, cv);
        _mm512_store_pd(s + 8 * v, sv);
    }
}

/* (C, S) <- (C, S) rotated by (CD, SD): the angle-addition formulas, 8 lanes a time. */
static inline __attribute__((always_inline)) void gen_advance(rope_gen *g)
{
    for (int v = 0; v < g->nvec; v++) {
        const __m512d c = _mm512_load_pd(g->C + 8 * v), s = _mm512_load_pd(g->S + 8 * v);
        const __m512d cd = _mm512_load_pd(g->CD + 8 * v), sd = _mm512_load_pd(g->SD + 8 * v);
        _mm512_store_pd(g->C + 8 * v, _mm512_fmsub_pd(c, cd, _mm512_mul_pd(s, sd)));
        _mm512_store_pd(g->S + 8 * v, _mm512_fmadd_pd(s, cd, _mm512_mul_pd(c, sd)));
    }
}

/* Phases of row r of block [b0, b1) into (C, S), given that they hold row r-1's when
 * r > b0. The first row of a block is anchored exactly; a row continuing the cached
 * step advances; a row starting a run of >= 3 rows with a new constant step sets the
 * step (exact phases of delta) and advances; any other row is anchored exactly. */
static inline void gen_row(rope_gen *g, const int64_t *pos, int64_t r, int64_t b0, int64_t b1)
{
    int64_t d, d2;
    if (r == b0 || __builtin_sub_overflow(pos[r], pos[r - 1], &d)) {
        gen_exact(g, pos[r], g->C, g->S);
        return;
    }
    if (g->step_ok && d == g->step) {
        gen_advance(g);
        return;
    }
    if (r + 1 < b1 && !__builtin_sub_overflow(pos[r + 1], pos[r], &d2) && d2 == d) {
        gen_exact(g, d, g->CD, g->SD);
        g->step = d;
        g->step_ok = 1;
        gen_advance(g);
        return;
    }
    gen_exact(g, pos[r], g->C, g->S);
}

/* ---- rotation of one row ------------------------------------------------------------ */

static inline __mmask8 tail_mask(int left) { return left >= 8 ? 0xFF : (__mmask8)((1u << left) - 1); }

/* neox: pairs (row[j], row[j + half]); lanes of C/S are pairs. */
static inline __attribute__((always_inline)) void rotate_neox(float *row, const double *C,
                                                              const double *S, int half,
                                                              int scaled, __m512d af)
{
    for (int e = 0; e < half; e += 8) {
        const __mmask8 m = tail_mask(half - e);
        __m512d c = _mm512_load_pd(C + e), s = _mm512_load_pd(S + e);
        if (scaled) {
            c = _mm512_mul_pd(c, af);
            s = _mm512_mul_pd(s, af);
        }
        const __m512d x1 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, row + e));
        const __m512d x2 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, row + half + e));
        const __m512d o1 = _mm512_fmsub_pd(x1, c, _mm512_mul_pd(x2, s));
        const __m512d o2 = _mm512_fmadd_pd(x2, c, _mm512_mul_pd(x1, s));
        _mm256_mask_storeu_ps(row + e, m, _mm512_cvtpd_ps(o1));
        _mm256_mask_storeu_ps(row + half + e, m, _mm512_cvtpd_ps(o2));
    }
}

/* gptj: pairs (row[2j], row[2j+1]); lanes of C/S hold each pair twice, so
 * out = x*C -/+ swap(x)*S (even lanes subtract, odd lanes add). */
static inline __attribute__((always_inline)) void rotate_gptj(float *row, const double *C,
                                                              const double *S, int rot,
                                                              int scaled, __m512d af)
{
    for (int e = 0; e < rot; e += 8) {
        const __mmask8 m = tail_mask(rot - e);
        __m512d c = _mm512_load_pd(C + e), s = _mm512_load_pd(S + e);
        if (scaled) {
            c = _mm512_mul_pd(c, af);
            s = _mm512_mul_pd(s, af);
        }
        const __m512d xv = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, row + e));
        const __m512d sw = _mm512_permute_pd(xv, 0x55);
        const __m512d o = _mm512_fmaddsub_pd(xv, c, _mm512_mul_pd(sw, s));
        _mm256_mask_storeu_ps(row + e, m, _mm512_cvtpd_ps(o));
    }
}

/* One block of rows [b0, b1): phases and rotation row by row. The fixed-size calls let
 * the compiler unroll the common head_dim 64/128 cases. */
static void rope_block(rope_gen *g, float *x, size_t stride, const int64_t *pos, int64_t b0,
                       int64_t b1, int rot, rb_rope_layout layout, double attention_factor)
{
    const int half = rot / 2;
    const int scaled = attention_factor != 1.0;
    const __m512d af = _mm512_set1_pd(attention_factor);
    for (int64_t r = b0; r < b1; r++) {
        gen_row(g, pos, r, b0, b1);
        float *row = x + (size_t)r * stride;
        if (layout == RB_LAYOUT_GPTJ) {
            if (rot == 128 && !scaled)
                rotate_gptj(row, g->C, g->S, 128, 0, af);
            else if (rot == 64 && !scaled)
                rotate_gptj(row, g->C, g->S, 64, 0, af);
            else
                rotate_gptj(row, g->C, g->S, rot, scaled, af);
        } else {
            if (half == 64 && !scaled)
                rotate_neox(row, g->C, g->S, 64, 0, af);
            else if (half == 32 && !scaled)
                rotate_neox(row, g->C, g->S, 32, 0, af);
            else
                rotate_neox(row, g->C, g->S, half, scaled, af);
        }
    }
}

void rb_rope_apply_avx512(float *x, int64_t n_rows, size_t row_stride, const int64_t *pos,
                          const double *inv_freq, int head_dim, int rotary_dim,
                          rb_rope_layout layout, double attention_factor)
{
    if (!x || n_rows <= 0 || rotary_dim <= 0 || rotary_dim > head_dim)
        return;
    const int rot = rotary_dim & ~1;
    if (rot == 0)
        return;
    const int64_t A = RB_ROPE_ANCHOR;
    const int64_t nblk = (n_rows + A - 1) / A;
#pragma omp parallel if (nblk > 1)
    {
        rope_gen g;
        const int ok = gen_init(&g, inv_freq, rot / 2, layout == RB_LAYOUT_GPTJ) == 0;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t b0 = b * A, b1 = b0 + A < n_rows ? b0 + A : n_rows;
            if (ok)
                rope_block(&g, x, row_stride, pos, b0, b1, rot, layout, attention_factor);
            else /* no scratch memory: the reference is exact and needs none */
                rb_rope_apply(x + (size_t)b0 * row_stride, b1 - b0, row_stride, pos + b0,
                              inv_freq, head_dim, rotary_dim, layout, attention_factor);
        }
        gen_free(&g);
    }
}

int rb_rope_phases_avx512(const int64_t *pos, int64_t n_rows, const double *inv_freq,
                          int half, double *cos_out, double *sin_out)
{
    if (!pos || !inv_freq || !cos_out || !sin_out || n_rows < 0 || half <= 0)
        return RB_EINVAL;
    rope_gen g;
    int rc = gen_init(&g, inv_freq, half, 0);
    if (rc)
        goto cleanup;
    for (int64_t b0 = 0; b0 < n_rows; b0 += RB_ROPE_ANCHOR) {
        const int64_t b1 = b0 + RB_ROPE_ANCHOR < n_rows ? b0 + RB_ROPE_ANCHOR : n_rows;
        for (int64_t r = b0; r < b1; r++) {
            gen_row(&g, pos, r, b0, b1);
            memcpy(cos_out + (size_t)r * half, g.C, (size_t)half * sizeof(double));
            memcpy(sin_out + (size_t)r * half, g.S, (size_t)half * sizeof(double));
        }
    }
cleanup:
    gen_free(&g);
    return rc;
}

/* ---- fp32 phases, as common fp32 code forms them (the phase-precision metric) ------ */

/* One neox row: pairs [0, half) in steps of 8, the last step masked. */
static void fp32phase_row_neox(float *row, float fpos, const float *finv, int half, float af)
{
    const __m512d two_pi_inv = _mm512_set1_pd(0x1.45f306dc9c883p-3);
    const __m512d two_pi_hi = _mm512_set1_pd(0x1.921fb54442d18p+2);
    const __m512d two_pi_lo = _mm512_set1_pd(0x1.1a62633145c07p-52);
    const __m256 vaf = _mm256_set1_ps(af), vpos = _mm256_set1_ps(fpos);
    for (int i = 0; i < half; i += 8) {
        const int n = half - i < 8 ? half - i : 8;
        const __mmask8 mk = (__mmask8)((1u << n) - 1u);
        /* the float angle, as fpos * (float)inv_freq[i] in float */
        const __m256 a = _mm256_mul_ps(vpos, _mm256_maskz_loadu_ps(mk, finv + i));
        const __m512d ad = _mm512_cvtps_pd(a);
        const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(ad, two_pi_inv),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512d t = _mm512_fnmadd_pd(k, two_pi_lo, _mm512_fnmadd_pd(k, two_pi_hi, ad));
        __m512d sd, cd;
        sincos8(t, &sd, &cd);
        const __m256 c = _mm256_mul_ps(_mm512_cvtpd_ps(cd), vaf);
        const __m256 s = _mm256_mul_ps(_mm512_cvtpd_ps(sd), vaf);
        const __m256 x1 = _mm256_maskz_loadu_ps(mk, row + i);
        const __m256 x2 = _mm256_maskz_loadu_ps(mk, row + half + i);
        /* separate multiplies, no FMA: the rounding of the portable code */
        const __m256 y1 = _mm256_sub_ps(_mm256_mul_ps(x1, c), _mm256_mul_ps(x2, s));
        const __m256 y2 = _mm256_add_ps(_mm256_mul_ps(x2, c), _mm256_mul_ps(x1, s));
        _mm256_mask_storeu_ps(row + i, mk, y1);
        _mm256_mask_storeu_ps(row + half + i, mk, y2);
    }
}

void rb_rope_apply_fp32phase_avx512(float *x, const float *src, int64_t n_rows,
                                    size_t row_stride, const int64_t *pos,
                                    const double *inv_freq, int head_dim, int rotary_dim,
                                    rb_rope_layout layout, double attention_factor)
{
    if (!x || !pos || !inv_freq || n_rows <= 0 || rotary_dim <= 0 || rotary_dim > head_dim)
        return;
    const int half = rotary_dim / 2;
    if (layout != RB_LAYOUT_NEOX || half > 256) {
        rb_rope_apply_fp32phase_ref(x, src, n_rows, row_stride, pos, inv_freq, head_dim,
                                    rotary_dim, layout, attention_factor);
        return;
    }
    const int copy = src && src != x;
    float finv[256];
    float fmax_inv = 0.0f;
    for (int i = 0; i < half; i++) {
        finv[i] = (float)inv_freq[i];
        fmax_inv = fabsf(finv[i]) > fmax_inv ? fabsf(finv[i]) : fmax_inv;
    }
    const float af = (float)attention_factor;
    const long long n = (long long)n_rows;
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (long long r = 0; r < n; r++) {
        float *row = x + (size_t)r * row_stride;
        /* out of place: the row is copied (into L1) and rotated there */
        if (copy)
            memcpy(row, src + (size_t)r * row_stride, (size_t)head_dim * sizeof *row);
        const float fpos = (float)pos[r];
        /* angles at or past 2^40 (never from a real position and frequency): the
         * two-part reduction would lose bits there, so the portable code takes them */
        if (fabsf(fpos) * fmax_inv >= 0x1p40f)
            rb_rope_apply_fp32phase_ref(row, NULL, 1, row_stride, pos + r, inv_freq, head_dim,
                                        rotary_dim, layout, attention_factor);
        else
            fp32phase_row_neox(row, fpos, finv, half, af);
    }
}
