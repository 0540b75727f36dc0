/* rb_avx512.h — internal to kernels/: prototypes and contracts of the AVX-512 kernels,
 * and the vectorized exp they share. Include only from files compiled with the
 * AVX-512 flags (the files of kernels/avx512/); dispatch.c sees the prototypes only. */
#ifndef RB_AVX512_H
#define RB_AVX512_H

#include "rb_kernels.h"

/* rb_attn_tile_avx512: the tile contract of rb_attn_tile_fn (rb_kernels.h), computed
 * in fp32: scores, running max, l, u and acc in fp32 registers; exp as 2^t of the
 * score in base-2 units (Cephes' exp2f polynomial, < 1 ulp on the range used, see
 * exp2_512 in attn_fp32.c), row max and entropy sum kept in base 2 until the merge;
 * the fp32 state of each query row is merged into double (rb_state_merge semantics)
 * every 64 key blocks (4096 keys, whether or not the row saw them all), at the end of
 * each piece of the key-outer order's thread split and at the end of the call, so that no fp32 sum runs over more than 256 terms per lane whatever nk
 * is. Query rows are split over OpenMP threads by equal
 * visible work (causal), not equal row counts. Needs AVX-512F/BW/VL/DQ + OS ZMM state.
 * v may be NULL: no V is packed or read and no PV computed; m, l, u come out bit for
 * bit as with any v. Error vs rb_attn_tile_ref: outputs <= 1e-5 relative, lse/entropy
 * <= 1e-5; on rows of a million keys lse <= 1e-7 and entropy <= 5e-7 absolute. */
int rb_attn_tile_avx512(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                        const float *v, const int64_t *k_pos, int64_t nk, int d,
                        double scale, double *state);

/* rb_attn_tile_avx512_probe: the contract of rb_attn_tile_avx512 for probe rows: with
 * at most 2,048 rows the key-outer order whatever nk is (rb_attn_tile_avx512 takes it
 * only against at least twice as many keys), so that with d a multiple of 16 each pair
 * is scored by the same code, in the same order, in every call: a rank's balanced-in
 * keys, however few, give the bits one rank would. rb_kernel_ops.probe. */
int rb_attn_tile_avx512_probe(const float *q, const int64_t *q_pos, int64_t nq,
                              const float *k, const float *v, const int64_t *k_pos,
                              int64_t nk, int d, double scale, double *state);

/* rb_attn_tile_avx512_bf16: the same contract with q, k, p and v rounded to bf16
 * (round to nearest even) and products accumulated in fp32 by VDPBF16PS; softmax
 * state in fp32. Needs AVX512_BF16 too. Error vs reference on the raw (unrounded)
 * inputs: outputs <= 2e-2 relative, entropy <= 1e-2, for logits of about unit spread
 * (d >= 64, scale 1/sqrt(d), unit-variance q and k: what kernels.grid checks); the
 * rounding of q and k moves each score by ~2^-9 of |q||k| scale, so sharper logits or
 * small d can exceed it (d = 2 moved the entropy by ~4e-2), while against the
 * reference on the bf16-rounded inputs the bounds hold at any spread (docs/kernels.md,
 * the bf16 table). */
int rb_attn_tile_avx512_bf16(const float *q, const int64_t *q_pos, int64_t nq,
                             const float *k, const float *v, const int64_t *k_pos,
                             int64_t nk, int d, double scale, double *state);

/* rb_attn_tile_avx512_bf16ko: the contract of rb_attn_tile_avx512_bf16 (q, k, p and
 * v rounded to bf16, round to nearest even; products accumulated in fp32; softmax
 * state in fp32, l and u from the unrounded p) in rb_attn_tile_avx512's key-outer
 * loop ("ko"): each key block converted once to bf16 pairs (VCVTNE2PS2BF16) and
 * multiplied by VDPBF16PS, the scores with the dims in the lanes, PV with key pairs in
 * the lanes; one pair's score has the same bits in every block and call. Shapes the
 * loop does not take (more than 2,048 rows, or fewer than twice as many keys as rows,
 * which rb_attn_tile_avx512_bf16 never sends) run the fp32 query-outer loop with fp32
 * FMAs on the rounded values (a product of two bf16 values is exact in fp32: only the
 * order of the sums differs). Needs what rb_attn_tile_avx512 needs, and AVX512_BF16;
 * v may be NULL as there. Inputs are taken to be finite (a NaN whose payload lies in
 * the low 16 bits would round to infinity; VDPBF16PS treats bf16 subnormals as 0).
 * rb_attn_tile_avx512_bf16 takes it for probe shapes (see there). */
int rb_attn_tile_avx512_bf16ko(const float *q, const int64_t *q_pos, int64_t nq,
                               const float *k, const float *v, const int64_t *k_pos,
                               int64_t nk, int d, double scale, double *state);

/* rb_attn_tile_avx512_bf16ko_probe: rb_attn_tile_avx512_bf16ko for probe rows, as
 * rb_attn_tile_avx512_probe is for rb_attn_tile_avx512. */
int rb_attn_tile_avx512_bf16ko_probe(const float *q, const int64_t *q_pos, int64_t nq,
                                     const float *k, const float *v, const int64_t *k_pos,
                                     int64_t nk, int d, double scale, double *state);

/* rb_probe_profile_set_avx512: rb_probe_profile_set for this build's AVX-512 kernels
 * (kernels/avx512/attn_fp32.c's key-outer order records into p; NULL: stop). */
void rb_probe_profile_set_avx512(rb_probe_profile *p);

/* rb_attn_tile_avx512_bf16_probe: rb_attn_tile_avx512_bf16 for probe rows: at most
 * 2,048 rows go to rb_attn_tile_avx512_bf16ko_probe whatever nk is (the bf16 kernel
 * sends them there only against at least 16 times as many keys), more to
 * rb_attn_tile_avx512_bf16. rb_kernel_ops.probe. */
int rb_attn_tile_avx512_bf16_probe(const float *q, const int64_t *q_pos, int64_t nq,
                                   const float *k, const float *v, const int64_t *k_pos,
                                   int64_t nk, int d, double scale, double *state);

/* rb_attn_bf16_path: which product path rb_attn_tile_avx512_bf16 takes in this process
 * (AMX-BF16 tiles where the CPU has them, the OS grants the tile state and
 * ROPEBENCH_BF16_AMX is not 0; VDPBF16PS otherwise), as a static string for the
 * record. */
const char *rb_attn_bf16_path(void);

/* rb_rope_apply_avx512: the contract of rb_rope_apply. Phases of runs of rows whose
 * positions step by a constant are generated incrementally in double (angle-addition
 * recurrence), re-anchored from the exact rb_rope_phase at the first row of every
 * block of at most RB_ROPE_ANCHOR rows; other rows use the exact phase. Angle error
 * <= 1e-12 rad up to position 2^32. Why: the anchor's (cos, sin) carry <= ~1 ulp
 * (rb_rope_phase's reduced angle and the sincos polynomial); so do the step's (CD,
 * SD), exact phases of the step; each of the <= 255 advances (one complex multiply,
 * FMA) adds <= ~2 ulp of relative error to (C, S) and repeats the step's angle error,
 * so the angle drifts by at most ~255 x (2 + 1) x 2^-53 ~ 9e-14 rad and the norm
 * by as much; 1e-12 leaves a factor of ten. Tested on the dump of the same generator
 * (rb_rope_phases_avx512: constant steps near and below 2^32, and the rotation test's
 * patterns with steps that change inside a block), measured <= 8e-14. */
#define RB_ROPE_ANCHOR 256
void rb_rope_apply_avx512(float *x, int64_t n_rows, size_t row_stride, const int64_t *pos,
                          const double *inv_freq, int head_dim, int rotary_dim,
                          rb_rope_layout layout, double attention_factor);

/* rb_rope_apply_fp32phase_avx512: the contract of rb_rope_apply_fp32phase (rb_kernels.h)
 * with AVX-512: per row, the float angles (float)pos * (float)inv_freq[i] exactly as
 * the portable code forms them, widened to double, reduced mod 2 pi (two-part 2 pi,
 * FMA; exact to ~4e-16 rad for angles below 2^40) and given to the double sin/cos
 * polynomial of rb_rope_apply_avx512 (<= ~1 ulp), rounded to float, times the float
 * attention factor; the rotation in float with separate multiplies and add/subtract, as
 * the portable code. neox rows are vectorized over pairs (8 per vector); gptj rows, and
 * rows whose angles reach 2^40, take the portable code. OpenMP over rows. */
void rb_rope_apply_fp32phase_avx512(float *x, const float *src, int64_t n_rows,
                                    size_t row_stride,
                                    const int64_t *pos, const double *inv_freq, int head_dim,
                                    int rotary_dim, rb_rope_layout layout,
                                    double attention_factor);

/* rb_state_merge_f32_avx512: the contract of rb_state_merge_f32 (rb_kernels.h) with the
 * two things the fast kernels need besides: fp32 row i goes to double state row
 * idx[i * idx_stride] (row0 + i when idx is NULL), so that rows kept sorted by position
 * merge straight into their own places; and the fp32 m and u are in units of
 * 1/mu_scale (they are multiplied by mu_scale in double first: 1 for natural units,
 * ln 2 for a state kept in base 2). Rows with m = -inf are skipped; a destination row
 * with m = -inf takes the row as it is. Same formula as rb_state_merge in double, the
 * d accumulators 8 at a time (the compiler may fuse a product and a sum: each result
 * within 2 ulp of rb_state_merge's, tests/test_exp512.c). */
void rb_state_merge_f32_avx512(double *state, const int64_t *idx, size_t idx_stride,
                               int64_t row0, int64_t nrows, int d, const float *m,
                               const float *l, const float *u, const float *acc,
                               size_t acc_stride, double mu_scale);

#ifdef __AVX512F__
#include <immintrin.h>

/* rb_exp512_ps: e^x for 16 floats. Range reduction x = n ln2 + r with ln2 split in
 * two (Cody–Waite), |r| <= ln2/2, e^r by Cephes' degree-7 expf polynomial
 * 1 + r + r^2 P(r), result scaled by 2^n with VSCALEFPS. Inputs below -103.9 (and
 * -inf) give +0, above 88.72 give +inf; NaN gives NaN. Error <= 2 ulp for
 * x in [-87.3, 88.7] (measured in tests/test_exp512.c); denormal results are not
 * exact. */
static inline __m512 rb_exp512_ps(__m512 x)
{
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2_hi = _mm512_set1_ps(0.693359375f);
    const __m512 ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
    /* max/min return their second operand when one is NaN: x second keeps NaN -> NaN */
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x); /* -inf -> 0 through scalef */
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 r2 = _mm512_mul_ps(r, r);
    p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}
/* rb_exp2_512_ps: 2^t for 16 floats t <= ~0 (the fp32 kernel's softmax exponents, kept
 * in base 2): t = n + r, n = round(t), |r| <= 1/2 exact, 2^r by Cephes' exp2f polynomial
 * (degree 6), scaled by 2^n with VSCALEFPS. Error <= 1 ulp for t in [-126, 0]
 * (tests/test_exp512.c checks <= 3 ulp, the kernels' contract, at every 31st float of
 * [-1, 0] and a sampling of [-126, -1]; measured 0.95 ulp); t < -151 (and -inf) gives
 * +0, NaN gives NaN; denormal results (t < -126) are not exact. */
static inline __m512 rb_exp2_512_ps(__m512 t)
{
    /* max returns its second operand when one is NaN: t second keeps NaN -> NaN */
    t = _mm512_max_ps(_mm512_set1_ps(-151.0f), t);
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_sub_ps(t, n);
    __m512 p = _mm512_set1_ps(1.535336188319500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.339887440266574e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.618437357674640e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.550332471162809e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(2.402264791363012e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(6.931472028550421e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
#endif

#endif
