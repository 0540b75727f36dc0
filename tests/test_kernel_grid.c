/* test_kernel_grid.c — every built tile kernel variant against rb_attn_tile_ref on a grid of head_dims, tile edges, position layouts, logit sizes, call splits and thread counts; a case reruns alone with --case N. */
#include "rb_kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Error metric, per query row, after rb_state_finalize of both states:
 *   output: max_j |out - ref| <= tol_out * max_j (sum_n p_n |v_nj|), the reference's
 *           softmax average of |v| (= max_j |ref out_j| when v has one sign; unlike
 *           max |out| it does not shrink when the average cancels, as at head_dim 2)
 *   lse:    |lse - ref| <= tol * max(1, |ref lse|)
 *   entropy:|H - ref| <= tol * max(1, |ref H|)       (absolute near 0, relative above 1)
 *   a row that saw no key must stay empty (lse -inf) in both, and the other way round.
 * fp32 variants: tol_out = tol = 1e-5. bf16 variants: tol_out = 2e-2, tol = 1e-2, against
 * the same fp32 reference (not a reference on bf16-rounded inputs). */
typedef struct {
    const char *name, *dtype;
    double tol_out, tol_lse, tol_ent;
} variant_t;

static const variant_t variants[] = {
    {"ref", "fp32", 1e-5, 1e-5, 1e-5},
    {"blas", "fp32", 1e-5, 1e-5, 1e-5},
    {"avx512", "fp32", 1e-5, 1e-5, 1e-5},
    {"avx512_bf16", "bf16", 2e-2, 1e-2, 1e-2},
};
enum { N_VARIANTS = 4 };

enum { POS_CAUSAL, POS_AFTER, POS_MASKED, POS_OFFSET, POS_ZIGZAG, POS_STRIPED, POS_UNSORTED,
       N_POS };
static const char *pos_names[N_POS] = {"causal", "all-visible", "fully-masked", "offset",
                                       "zigzag", "striped3", "unsorted"};

static int n_pass, n_fail;
static double worst[N_VARIANTS][3];
/* command line (main): only case only_case (-1: all) and variant only_variant (-1: all);
 * show_digest: each case prints a digest of its inputs */
static int only_case = -1, only_variant = -1, show_digest;
static int n_cases, n_cases_run; /* cases of the grid, and those run */

/* xorshift64* uniform in [0,1) */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * 0x1.0p-53;
}
static double grand(void)
{
    double u1 = urand(), u2 = urand();
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* case_seed: the generator's state for case number no (SplitMix64 of it, never 0), so
 * that a case's inputs depend on its number alone and --case reruns it as the grid ran
 * it. */
static uint64_t case_seed(int no)
{
    uint64_t z = 0x9E3779B97F4A7C15ull * (uint64_t)(no + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z ? z : 88172645463325252ull;
}

/* fnv1a: FNV-1a 64 of n bytes at p, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001B3ull;
    return h;
}

/* Fill positions of nq queries and nk keys for a pattern. */
static void make_positions(int pat, int64_t *qp, int64_t nq, int64_t *kp, int64_t nk)
{
    const int64_t base = 1000;
    switch (pat) {
    case POS_CAUSAL: /* same range, queries at the end (diagonal tile) */
        for (int64_t i = 0; i < nk; i++)
            kp[i] = base + i;
        for (int64_t i = 0; i < nq; i++)
            qp[i] = base + (nk > nq ? nk - nq : 0) + i;
        break;
    case POS_AFTER: /* every key before every query */
        for (int64_t i = 0; i < nk; i++)
            kp[i] = base + i;
        for (int64_t i = 0; i < nq; i++)
            qp[i] = base + nk + 5 + i;
        break;
    case POS_MASKED: /* every key after every query */
        for (int64_t i = 0; i < nq; i++)
            qp[i] = base + i;
        for (int64_t i = 0; i < nk; i++)
            kp[i] = base + nq + i;
        break;
    case POS_OFFSET: /* queries start 37 before the keys: early rows see nothing */
        for (int64_t i = 0; i < nk; i++)
            kp[i] = base + i;
        for (int64_t i = 0; i < nq; i++)
            qp[i] = base - 37 + 2 * i;
        break;
    case POS_ZIGZAG: { /* two chunks per rank (rank 1 of 3 ranks, chunk c): gaps */
        const int64_t cq = (nq + 1) / 2, ck = (nk + 1) / 2;
        for (int64_t i = 0; i < nq; i++)
            qp[i] = i < cq ? cq + i : 4 * cq + (i - cq);
        for (int64_t i = 0; i < nk; i++)
            kp[i] = i < ck ? 2 * ck + i : 3 * ck + (i - ck); /* another rank's chunks */
        break;
    }
    case POS_STRIPED: /* stride 3: queries at 3i (+ an offset when nk > nq), keys at 3j+1:
                       * row 0 sees no key where nk <= nq */
        for (int64_t i = 0; i < nq; i++)
            qp[i] = 3 * i + (nk > nq ? 3 * (nk - nq) / 2 : 0);
        for (int64_t i = 0; i < nk; i++)
            kp[i] = 3 * i + 1;
        break;
    default: /* unsorted: a shuffled causal layout with repeated positions */
        for (int64_t i = 0; i < nk; i++)
            kp[i] = base + i / 2 * 3;
        for (int64_t i = 0; i < nq; i++)
            qp[i] = base + (int64_t)(urand() * (double)(3 * nk / 2 + 10)) - 5;
        for (int64_t i = nk - 1; i > 0; i--) {
            int64_t j = (int64_t)(urand() * (double)(i + 1)), t = kp[i];
            kp[i] = kp[j];
            kp[j] = t;
        }
        break;
    }
}

/* One grid point: the reference once, then every variant and thread count. */
typedef struct {
    int d;
    int64_t nq, nk;
    int pat;
    int large;   /* 1: integer q, k in [-4, 4] and scale 64: |s| ~ 1e3..1e4, exact in fp32;
                  * 2: the same q, k and scale 2^26: |s| ~ 1e9..1e10, past 2^31 in the fp32
                  * kernel's base-2 units (one rounding of the largest score is then
                  * hundreds of units), as YaRN's attention_factor = 1e5 makes them */
    int ncalls;  /* keys split into this many calls accumulating into one state */
    int sharp;   /* gaussian logits s ~ N(0, c^2), c in [1, 3] instead of c = 1 */
    int scase;   /* 0: the scale above; 1: negated (the fp32 softmax takes the max of -S);
                  * 2: zero (every score 0, masked lanes' -inf times 0 must not leak) */
} gcase;

/* The keys in ncalls uneven calls accumulating into one state (the first a third, then
 * the rest in ncalls - 1 calls); v may be NULL. Returns the first nonzero rc, or 0. */
static int tile_calls(const rb_kernel_ops *op, int ncalls, const float *q, const int64_t *qp,
                      int64_t nq, const float *k, const float *v, const int64_t *kp,
                      int64_t nk, int d, double scale, double *state)
{
    int rc = 0;
    int64_t k0 = 0;
    for (int cidx = 0; cidx < ncalls && rc == 0; cidx++) {
        int64_t n = cidx == ncalls - 1 ? nk - k0 : (nk - k0) / (ncalls - cidx) + cidx;
        if (n > nk - k0)
            n = nk - k0;
        rc = op->tile(q, qp, nq, k + (size_t)k0 * d, v ? v + (size_t)k0 * d : NULL, kp + k0,
                      n, d, scale, state);
        k0 += n;
    }
    return rc;
}

static void run_case(const gcase *gc, const rb_kernel_ops *ops, const int *ok)
{
    const int d = gc->d;
    const int64_t nq = gc->nq, nk = gc->nk;
    const size_t stride = RB_STATE_STRIDE(d);
    /* k and v start at a 64-byte boundary in even cases and 16 bytes past one in odd
     * ones: the fp32 kernel reads a probe's aligned rows in place, copies the others */
    const int no = n_cases++;
    if (only_case >= 0 && no != only_case)
        return;
    n_cases_run++;
    const int fails_before = n_fail;
    rng_state = case_seed(no);
    const int kvoff = (no % 2) * 4;
    float *q = malloc((size_t)nq * d * sizeof *q);
    float *kbuf = rb_kernels_alloc(((size_t)nk * d + 4) * sizeof(float));
    float *vbuf = rb_kernels_alloc(((size_t)nk * d + 4) * sizeof(float));
    float *k = kbuf ? kbuf + kvoff : NULL, *v = vbuf ? vbuf + kvoff : NULL;
    int64_t *qp = malloc((size_t)nq * sizeof *qp);
    int64_t *kp = malloc((size_t)nk * sizeof *kp);
    double *sref = malloc((size_t)nq * stride * sizeof *sref);
    double *sk = malloc((size_t)nq * stride * sizeof *sk);
    double *lr = malloc((size_t)nq * 2 * sizeof(double)), *lk = lr ? lr + nq : NULL;
    double *hr = malloc((size_t)nq * 2 * sizeof(double)), *hk = hr ? hr + nq : NULL;
    double *orf = malloc((size_t)nq * d * 3 * sizeof(double)), *ok_ = orf ? orf + (size_t)nq * d : NULL;
    double *oab = orf ? orf + 2 * (size_t)nq * d : NULL;
    float *vab = malloc((size_t)nk * d * sizeof *vab);
    if (!q || !k || !v || !qp || !kp || !sref || !sk || !lr || !hr || !orf || !vab) {
        printf("FAIL: out of memory for d %d nq %lld nk %lld\n", d, (long long)nq,
               (long long)nk);
        n_fail++;
        goto cleanup;
    }
    double scale = 1.0 / sqrt((double)d);
    if (gc->large) {
        scale = gc->large == 2 ? 0x1p26 : 64.0;
        for (size_t i = 0; i < (size_t)nq * d; i++)
            q[i] = (float)((int)(urand() * 9.0) - 4);
        for (size_t i = 0; i < (size_t)nk * d; i++)
            k[i] = (float)((int)(urand() * 9.0) - 4);
    } else {
        for (size_t i = 0; i < (size_t)nq * d; i++)
            q[i] = (float)grand();
        for (size_t i = 0; i < (size_t)nk * d; i++)
            k[i] = (float)grand();
        if (gc->sharp)
            scale *= 1.0 + 2.0 * urand(); /* s ~ N(0, c^2), c in [1, 3] */
    }
    scale = gc->scase == 1 ? -scale : gc->scase == 2 ? 0.0 : scale;
    for (size_t i = 0; i < (size_t)nk * d; i++)
        v[i] = (float)(0.5 + grand());
    make_positions(gc->pat, qp, nq, kp, nk);
    if (show_digest) {
        uint64_t h = 0xCBF29CE484222325ull;
        h = fnv1a(h, q, (size_t)nq * d * sizeof *q);
        h = fnv1a(h, k, (size_t)nk * d * sizeof *k);
        h = fnv1a(h, v, (size_t)nk * d * sizeof *v);
        h = fnv1a(h, qp, (size_t)nq * sizeof *qp);
        h = fnv1a(h, kp, (size_t)nk * sizeof *kp);
        h = fnv1a(h, &scale, sizeof scale);
        printf("case %d: d %d nq %lld nk %lld pos %s k,v +%d B: inputs digest %016llx\n", no,
               d, (long long)nq, (long long)nk, pos_names[gc->pat], 4 * kvoff,
               (unsigned long long)h);
    }

    rb_state_init(sref, nq, d);
    if (rb_attn_tile_ref(q, qp, nq, k, v, kp, nk, d, scale, sref) != 0) {
        printf("FAIL: reference tile returned an error\n");
        n_fail++;
        goto cleanup;
    }
    rb_state_finalize(sref, nq, d, lr, hr, orf);
    for (size_t i = 0; i < (size_t)nk * d; i++)
        vab[i] = fabsf(v[i]);
    rb_state_init(sk, nq, d);
    rb_attn_tile_ref(q, qp, nq, k, vab, kp, nk, d, scale, sk);
    rb_state_finalize(sk, nq, d, NULL, NULL, oab);

    for (int vi = 0; vi < N_VARIANTS; vi++) {
        if (!ok[vi] || (only_variant >= 0 && vi != only_variant))
            continue;
        const variant_t *var = &variants[vi];
        /* bf16 rounding of q and k alone moves s by ~1.6e-3 * sd(s): the bf16 bounds hold
         * for sd(s) ~ 1 (and for the exact integer logits), not for sharper gaussians */
        if (gc->sharp && !gc->large && strcmp(var->dtype, "bf16") == 0)
            continue;
        for (int th = 1; th <= 2; th++) {
            rb_kernels_set_threads(th);
            rb_state_init(sk, nq, d);
            int rc = tile_calls(&ops[vi], gc->ncalls, q, qp, nq, k, v, kp, nk, d, scale, sk);
            if (rc != 0) {
                printf("FAIL: %s d %d nq %lld nk %lld pos %s threads %d calls %d: rc %d\n",
                       var->name, d, (long long)nq, (long long)nk, pos_names[gc->pat], th,
                       gc->ncalls, rc);
                n_fail++;
                continue;
            }
            rb_state_finalize(sk, nq, d, lk, hk, ok_);
            int bad = 0;
            if (ops[vi].v_optional) {
                /* v = NULL, the same calls: the softmax state (m, l, u) bit for bit */
                double *sn = malloc((size_t)nq * stride * sizeof *sn);
                int rcn = RB_ENOMEM;
                if (sn) {
                    rb_state_init(sn, nq, d);
                    rcn = tile_calls(&ops[vi], gc->ncalls, q, qp, nq, k, NULL, kp, nk, d,
                                     scale, sn);
                }
                for (int64_t r = 0; rcn == 0 && r < nq; r++)
                    if (memcmp(sn + (size_t)r * stride, sk + (size_t)r * stride,
                               3 * sizeof(double)) != 0) {
                        rcn = -1;
                        printf("FAIL: %s d %d nq %lld nk %lld pos %s threads %d calls %d row "
                               "%lld: v = NULL changes (m, l, u): (%.17g %.17g %.17g) vs "
                               "(%.17g %.17g %.17g)\n",
                               var->name, d, (long long)nq, (long long)nk, pos_names[gc->pat],
                               th, gc->ncalls, (long long)r, sn[r * stride], sn[r * stride + 1],
                               sn[r * stride + 2], sk[r * stride], sk[r * stride + 1],
                               sk[r * stride + 2]);
                    }
                if (rcn > 0)
                    printf("FAIL: %s d %d with v = NULL: rc %d\n", var->name, d, rcn);
                bad += rcn != 0;
                free(sn);
            }
            for (int64_t r = 0; r < nq && bad < 3; r++) {
                const char *what = NULL;
                double got = 0, want = 0, err = 0, lim = 0;
                const int er = lr[r] == -INFINITY, ek = lk[r] == -INFINITY;
                if (er != ek || isnan(lk[r]) || isnan(hk[r])) {
                    what = "empty/lse";
                    got = lk[r];
                    want = lr[r];
                } else if (er) {
                    /* a row that saw no key: the empty state exactly (m = -inf, l = u =
                     * acc = 0; finalize would hide a stray l or acc behind m = -inf) */
                    const double *st = sk + (size_t)r * stride;
                    for (size_t j = 1; j < stride && !what; j++)
                        if (st[j] != 0.0) {
                            what = j == 1 ? "empty state l" : j == 2 ? "empty state u"
                                                                     : "empty state acc";
                            got = st[j];
                        }
                } else {
                    double e = fabs(lk[r] - lr[r]), l = var->tol_lse * fmax(1.0, fabs(lr[r]));
                    if (gc->large == 2) {
                        /* huge logits (~1e9): 1e-5 of |lse| allows ~100 float ulps of the
                         * score; the scores are exact here (integers times 2^26), so the
                         * error must stay within the rest of lse (log l) at the
                         * variant's tolerance plus 2 float ulps of the largest score */
                        const double m = sref[(size_t)r * stride];
                        const float mf = (float)fabs(m);
                        l = var->tol_lse * fmax(1.0, fabs(lr[r] - m)) +
                            2.0 * ((double)nextafterf(mf, INFINITY) - (double)mf);
                    }
                    worst[vi][0] = fmax(worst[vi][0], e / l);
                    if (!(e <= l)) {
                        what = "lse", got = lk[r], want = lr[r], err = e, lim = l;
                    }
                    e = fabs(hk[r] - hr[r]);
                    l = var->tol_ent * fmax(1.0, fabs(hr[r]));
                    worst[vi][1] = fmax(worst[vi][1], e / l);
                    if (!what && !(e <= l)) {
                        what = "entropy", got = hk[r], want = hr[r], err = e, lim = l;
                    }
                    double mx = 1e-30, me = 0;
                    int jw = 0;
                    for (int j = 0; j < d; j++)
                        mx = fmax(mx, oab[(size_t)r * d + j]);
                    for (int j = 0; j < d; j++) {
                        double ej = fabs(ok_[(size_t)r * d + j] - orf[(size_t)r * d + j]);
                        if (isnan(ej)) { /* (it must stay: a later finite one replaced it) */
                            me = NAN;
                            jw = j;
                            break;
                        }
                        if (ej > me) {
                            me = ej;
                            jw = j;
                        }
                    }
                    l = var->tol_out * mx;
                    worst[vi][2] = fmax(worst[vi][2], me / l);
                    if (!what && !(me <= l)) {
                        what = "output";
                        got = ok_[(size_t)r * d + jw];
                        want = orf[(size_t)r * d + jw];
                        err = me;
                        lim = l;
                    }
                }
                if (what) {
                    printf("FAIL: %s d %d nq %lld nk %lld pos %s%s%s%s scale %.9g k,v +%d B "
                           "threads %d calls %d row %lld (q_pos %lld): %s got %.9g want %.9g "
                           "(err %.3g > %.3g)\n",
                           var->name, d, (long long)nq, (long long)nk, pos_names[gc->pat],
                           gc->large == 2 ? " huge-logits" : gc->large ? " large-logits" : "",
                           gc->scase == 1 ? " scale<0" : gc->scase == 2 ? " scale=0" : "",
                           gc->sharp ? " sharp" : "", scale, 4 * kvoff, th, gc->ncalls,
                           (long long)r, (long long)qp[r], what, got, want, err, lim);
                    bad++;
                }
            }
            if (bad)
                n_fail++;
            else
                n_pass++;
        }
    }
cleanup:
    if (n_fail > fails_before) {
        const char *lim = getenv("OMP_THREAD_LIMIT");
        printf("case %d failed: rerun it alone with `%s%s%stest_kernel_grid --case %d` (add "
               "--variant NAME for one kernel)\n",
               no, lim ? "OMP_THREAD_LIMIT=" : "", lim ? lim : "", lim ? " " : "", no);
    }
    free(q);
    free(kbuf);
    free(vbuf);
    free(qp);
    free(kp);
    free(sref);
    free(sk);
    free(lr);
    free(hr);
    free(orf);
    free(vab);
}

/* repeat_bits_case: a probe shape of nq rows at log-spaced positions against nk keys at
 * 0..nk-1, head_dim d, run eight times at 2, 3 and 4 threads by every fast variant:
 * the same bits every time. The fp32 and bf16 key-outer orders hand the last part of
 * their schedule to whichever thread is free (run_key_outer's tail); with more threads
 * than cores the threads take those pieces in a different order from run to run, and
 * each piece must still be merged in its own place. Error metric: any differing byte
 * of a row's state (m, l, u, acc), reported with the first such word. A thread count
 * OpenMP does not grant (kernels.grid_thread_limit) is left out, and said so. */
static void repeat_bits_case(const rb_kernel_ops *ops, const int *ok, int nq, int nk, int d)
{
    enum { RUNS = 8 };
    const size_t stride = RB_STATE_STRIDE(d), sbytes = (size_t)nq * stride * sizeof(double);
    float *q = malloc((size_t)nq * d * sizeof *q), *k = malloc((size_t)nk * d * sizeof *k),
          *v = malloc((size_t)nk * d * sizeof *v);
    int64_t *qp = malloc((size_t)nq * sizeof *qp), *kp = malloc((size_t)nk * sizeof *kp);
    double *first = malloc(sbytes), *again = malloc(sbytes);
    if (!q || !k || !v || !qp || !kp || !first || !again) {
        printf("FAIL repeat bits: out of memory\n");
        n_fail++;
        goto cleanup;
    }
    rng_state = case_seed(2000000 + d); /* its own inputs, whatever ran before (--variant) */
    for (size_t i = 0; i < (size_t)nq * d; i++)
        q[i] = (float)grand();
    for (size_t i = 0; i < (size_t)nk * d; i++) {
        k[i] = (float)grand();
        v[i] = (float)grand();
    }
    for (int64_t j = 0; j < nk; j++)
        kp[j] = j;
    for (int64_t i = 0; i < nq; i++) /* log-spaced in [0, nk - 1] */
        qp[i] = (int64_t)llround(exp(log((double)nk) * (double)i / (nq - 1))) - 1;
    for (int vi = 0; vi < N_VARIANTS; vi++) {
        if (!ok[vi] || strcmp(variants[vi].name, "ref") == 0)
            continue;
        for (int th = 2; th <= 4; th++) {
            rb_kernels_set_threads(th);
            if (rb_kernels_threads() < th) {
                printf("repeat bits %s threads %d: not run, OpenMP grants %d\n",
                       variants[vi].name, th, rb_kernels_threads());
                continue;
            }
            int bad = 0;
            for (int run = 0; run < RUNS && !bad; run++) {
                double *st = run == 0 ? first : again;
                rb_state_init(st, nq, d);
                const int rc = ops[vi].tile(q, qp, nq, k, v, kp, nk, d, 0.125, st);
                if (rc) {
                    printf("FAIL repeat bits %s threads %d run %d: tile returned %d\n",
                           variants[vi].name, th, run, rc);
                    bad = 1;
                    break;
                }
                for (int64_t r = 0; run > 0 && r < nq && !bad; r++)
                    for (size_t f = 0; f < stride && !bad; f++) { /* m, l, u, acc[0..d) */
                        const double x = again[(size_t)r * stride + f],
                                     y = first[(size_t)r * stride + f];
                        if (memcmp(&x, &y, sizeof x) != 0) {
                            printf("FAIL repeat bits %s d %d nq %d nk %d threads %d: run %d "
                                   "differs from run 0 at row %lld (q_pos %lld), state word "
                                   "%zu: %.17g against %.17g\n",
                                   variants[vi].name, d, nq, nk, th, run, (long long)r,
                                   (long long)qp[r], f, x, y);
                            bad = 1;
                        }
                    }
            }
            if (bad)
                n_fail++;
            else
                n_pass++;
        }
    }
    rb_kernels_set_threads(1);
cleanup:
    free(q);
    free(k);
    free(v);
    free(qp);
    free(kp);
    free(first);
    free(again);
}

/* check_repeat_bits: repeat_bits_case on whole blocks read in place (d = 64) and on a
 * call ending in a short block with a head_dim the key-outer order packs (d = 40). */
static void check_repeat_bits(const rb_kernel_ops *ops, const int *ok)
{
    repeat_bits_case(ops, ok, 48, 24000, 64);
    repeat_bits_case(ops, ok, 33, 20037, 40);
}

/* The AVX-512 kernels score a pair (q, k) with the same bits whatever block of whatever
 * call the key falls in (d a multiple of 16: every block, short ones too, scored by the
 * in-place path), so that probe rows split over ranks agree with one rank to the
 * merges' rounding. Observed through a row at position 0 that sees one key (the others
 * sit at later positions): its lse is that key's score. Per head_dim and trial,
 * the key goes to a random slot of a 128-key call (whole blocks), the last slot of a
 * 37-key call and slot 80 of a 100-key call (short blocks), and through the probe
 * entry (rb_kernel_ops.probe) in a call of 8 rows and 10 keys; the lse (and entropies)
 * must be equal bit for bit. Until 2026-12-01 a short block was packed and scored in
 * another order: a needle's score at ~16 came out ~2 ulps apart on 2 ranks. */
static void check_score_bits(const rb_kernel_ops *ops, const int *ok)
{
    for (int vi = 0; vi < N_VARIANTS; vi++) {
        if (!ok[vi] || strncmp(variants[vi].name, "avx512", 6) != 0)
            continue;
        rng_state = case_seed(1000000 + vi); /* the variant's own trials (--variant) */
        int bad = 0, checked = 0;
        for (int d = 64; d <= 128 && !bad; d += 64)
            for (int trial = 0; trial < 40 && !bad; trial++) {
                enum { NK = 128 };
                float q[128], k[NK * 128], v[NK * 128];
                int64_t kp[NK], qp = 0;
                for (int j = 0; j < d; j++)
                    q[j] = (float)(2.0 * grand());
                for (int i = 0; i < NK * d; i++) {
                    k[i] = (float)(2.0 * grand());
                    v[i] = (float)grand();
                }
                const int nks[3] = {NK, 37, 100};
                const int slot[3] = {(int)(urand() * NK), 36, 80};
                double lse[3], ent[3], out[128];
                for (int c = 0; c < 3; c++) {
                    /* the key of interest (row 0 of k) moved to slot[c]; others after 0 */
                    float kc[NK * 128], vc[NK * 128];
                    for (int i = 0; i < nks[c]; i++) {
                        const int src = i == slot[c] ? 0 : (i < slot[c] ? i + 1 : i);
                        const size_t row = (size_t)d * sizeof(float);
                        memcpy(kc + (size_t)i * d, k + (size_t)src * d, row);
                        memcpy(vc + (size_t)i * d, v + (size_t)src * d, row);
                        kp[i] = i == slot[c] ? 0 : 1 + i;
                    }
                    double st[128 + 3];
                    rb_state_init(st, 1, d);
                    const int rc = ops[vi].tile(q, &qp, 1, kc, vc, kp, nks[c], d,
                                                1.0 / sqrt((double)d), st);
                    rb_state_finalize(st, 1, d, &lse[c], &ent[c], out);
                    if (rc) {
                        printf("FAIL score bits %s d=%d: tile returned %d\n", variants[vi].name, d,
                               rc);
                        bad = 1;
                    }
                }
                /* the probe entry (rb_kernel_ops.probe) on a call of fewer keys than
                 * twice its rows (8 rows, 10 keys, as a rank's few balanced-in keys):
                 * row 0 (position 0) still sees the one key, scored as above */
                double lse_p = lse[0], ent_p = ent[0];
                if (ops[vi].probe && !bad) {
                    float qs[8 * 128], kc[10 * 128], vc[10 * 128];
                    int64_t qps[8], kps[10];
                    for (int r = 0; r < 8; r++) {
                        memcpy(qs + (size_t)r * d, q, (size_t)d * sizeof(float));
                        qps[r] = r ? 1000 + r : 0;
                    }
                    for (int i = 0; i < 10; i++) {
                        memcpy(kc + (size_t)i * d, k + (size_t)(i == 9 ? 0 : i + 1) * d,
                               (size_t)d * sizeof(float));
                        memcpy(vc + (size_t)i * d, v + (size_t)(i == 9 ? 0 : i + 1) * d,
                               (size_t)d * sizeof(float));
                        kps[i] = i == 9 ? 0 : 1 + i;
                    }
                    double st[8 * (128 + 3)], o8[128];
                    rb_state_init(st, 8, d);
                    if (ops[vi].probe(qs, qps, 8, kc, vc, kps, 10, d, 1.0 / sqrt((double)d),
                                      st) != 0) {
                        printf("FAIL score bits %s d=%d: the probe entry failed\n",
                               variants[vi].name, d);
                        bad = 1;
                    }
                    rb_state_finalize(st, 1, d, &lse_p, &ent_p, o8);
                }
                checked++;
                if (!bad && (lse_p != lse[0] || ent_p != ent[0])) {
                    printf("FAIL score bits %s d=%d trial %d: the probe entry with 8 rows and "
                           "10 keys gives lse %.17g, entropy %.17g; want %.17g, %.17g\n",
                           variants[vi].name, d, trial, lse_p, ent_p, lse[0], ent[0]);
                    bad = 1;
                }
                if (!bad && (lse[1] != lse[0] || lse[2] != lse[0] || ent[1] != ent[0] ||
                             ent[2] != ent[0])) {
                    printf("FAIL score bits %s d=%d trial %d: one visible key's lse %.17g "
                           "(slot %d of %d keys), %.17g (slot 36 of 37), %.17g (slot 80 of 100); "
                           "entropy %.17g %.17g %.17g (want each equal)\n",
                           variants[vi].name, d, trial, lse[0], slot[0], NK, lse[1], lse[2],
                           ent[0], ent[1], ent[2]);
                    bad = 1;
                }
            }
        printf("%s score bits %s: one pair's score equal in whole and short blocks and through "
               "the probe entry (%d trials)\n",
               bad ? "FAIL" : "ok  ", variants[vi].name, checked);
        bad ? n_fail++ : n_pass++;
    }
}

/* parse_args: --case N, --variant NAME, --digest; 0, or -1 after a usage line. */
static int parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--digest")) {
            show_digest = 1;
        } else if ((!strcmp(a, "--case") && only_case >= 0) ||
                   (!strcmp(a, "--variant") && only_variant >= 0)) {
            fprintf(stderr, "test_kernel_grid: %s given twice\n", a);
            return -1;
        } else if (!strcmp(a, "--case") && i + 1 < argc) {
            char *end;
            const long n = strtol(argv[++i], &end, 10);
            if (*argv[i] < '0' || *argv[i] > '9' || *end || n > 1000000) {
                fprintf(stderr, "test_kernel_grid: --case '%s': not a case number\n",
                        argv[i]);
                return -1;
            }
            only_case = (int)n;
        } else if (!strcmp(a, "--variant") && i + 1 < argc) {
            for (int v = 0; v < N_VARIANTS; v++)
                if (!strcmp(argv[i + 1], variants[v].name))
                    only_variant = v;
            if (only_variant < 0) {
                fprintf(stderr, "test_kernel_grid: --variant '%s': not ref, blas, avx512 or "
                                "avx512_bf16\n",
                        argv[i + 1]);
                return -1;
            }
            i++;
        } else {
            fprintf(stderr, "usage: test_kernel_grid [--case N] [--variant NAME] [--digest]\n");
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (parse_args(argc, argv))
        return 2;
    rb_kernel_ops ops[N_VARIANTS];
    int ok[N_VARIANTS];
    for (int i = 0; i < N_VARIANTS; i++) {
        char err[256] = "";
        const char *reason = NULL;
        ok[i] = rb_kernels_select_dtype(variants[i].name, variants[i].dtype, &ops[i], &reason,
                                        err, sizeof err) == 0;
        if (ok[i])
            printf("variant %s (%s): tested, outputs <= %g relative to the row's max softmax "
                   "average of |v|, "
                   "lse <= %g, entropy <= %g\n",
                   variants[i].name, variants[i].dtype, variants[i].tol_out,
                   variants[i].tol_lse, variants[i].tol_ent);
        else
            printf("skipped: %s\n", err);
    }
    /* under OMP_THREAD_LIMIT (kernels.grid_thread_limit) the thread count the kernels
     * report, and the study records, is the capped one */
    const char *lim = getenv("OMP_THREAD_LIMIT");
    if (lim && atoi(lim) >= 1 && only_case < 0) { /* (a check of the grid, not a case) */
        rb_kernels_set_threads(atoi(lim) + 1);
        const int got = rb_kernels_threads();
        if (got > atoi(lim)) {
            printf("FAIL: rb_kernels_threads() = %d with OMP_THREAD_LIMIT=%s and %d asked\n",
                   got, lim, atoi(lim) + 1);
            n_fail++;
        } else {
            n_pass++;
        }
    }
    const int dims[] = {2, 6, 40, 64, 128, 256};
    /* tile edges of the kernels (64-key blocks, 6-row groups, 96-row query blocks,
     * 16-lane vectors), both loop orders (few rows vs many keys, and square) */
    const int64_t shapes[][2] = {{1, 1},    {5, 63},   {6, 64},    {7, 65},  {17, 129},
                                 {95, 97},  {96, 96},  {97, 191},  {200, 150}, {37, 700},
                                 {130, 333}, {193, 64}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    int idx = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int s = 0; s < nshapes; s++)
            for (int pat = 0; pat < N_POS; pat++) {
                const int d = dims[di];
                /* keep the grid small at the largest head_dims */
                if (d >= 128 && (s + pat) % 2)
                    continue;
                gcase gc = {d, shapes[s][0], shapes[s][1], pat, 0, 1 + idx % 3, idx % 2, 0};
                run_case(&gc, ops, ok);
                if (idx % 4 == 0) {
                    gc.large = 1;
                    run_case(&gc, ops, ok);
                }
                if (idx % 8 == 2) {
                    gc.large = 2;
                    run_case(&gc, ops, ok);
                }
                idx++;
            }
    /* a bigger causal tile split into calls, 2 threads balanced by visible work */
    gcase big = {128, 700, 700, POS_CAUSAL, 0, 2, 0, 0};
    run_case(&big, ops, ok);
    gcase probe = {64, 128, 5000, POS_STRIPED, 0, 1, 1, 0};
    run_case(&probe, ops, ok);
    /* probe order with more than 64 row groups of 12 (the fp32 group mask's second word) */
    gcase probe_many = {64, 900, 2000, POS_STRIPED, 0, 1, 0, 0};
    run_case(&probe_many, ops, ok);
    /* huge logits in the probe (key-outer) order too */
    gcase probe_huge = {64, 40, 3000, POS_ZIGZAG, 2, 1, 0, 0};
    run_case(&probe_huge, ops, ok);
    /* a negative and a zero scale, in both loop orders and with masked blocks */
    for (int sc = 1; sc <= 2; sc++) {
        gcase sq = {64, 97, 191, POS_CAUSAL, 0, 2, 0, sc};
        gcase pr = {128, 20, 3000, POS_ZIGZAG, 0, 1, 0, sc};
        run_case(&sq, ops, ok);
        run_case(&pr, ops, ok);
    }
    if (only_case >= 0) {
        /* one case of the grid alone: the bit checks below are not cases */
        if (!n_cases_run) {
            printf("FAIL: --case %d: the grid has cases 0 to %d\n", only_case, n_cases - 1);
            n_fail++;
        } else if (n_pass + n_fail == 0) {
            printf("FAIL: --case %d checked nothing: %s\n", only_case,
                   only_variant >= 0 && !ok[only_variant]
                       ? "that variant is not built or not supported here"
                       : "no variant is tested on this case (bf16 leaves out sharp logits)");
            n_fail++;
        }
        for (int i = 0; i < N_VARIANTS; i++)
            if (ok[i] && (only_variant < 0 || i == only_variant))
                printf("%s: worst error / tolerance: lse %.3g, entropy %.3g, output %.3g\n",
                       variants[i].name, worst[i][0], worst[i][1], worst[i][2]);
        printf("case %d of %d run alone; %d passed, %d failed\n", only_case, n_cases, n_pass,
               n_fail);
        return n_fail ? 1 : 0;
    }
    if (only_variant >= 0)
        for (int i = 0; i < N_VARIANTS; i++)
            ok[i] &= i == only_variant;
    check_score_bits(ops, ok);
    check_repeat_bits(ops, ok);
    for (int i = 0; i < N_VARIANTS; i++)
        if (ok[i])
            printf("%s: worst error / tolerance: lse %.3g, entropy %.3g, output %.3g\n",
                   variants[i].name, worst[i][0], worst[i][1], worst[i][2]);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
