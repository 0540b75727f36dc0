/* metrics_precision.c — metric 7: what fp32 phases (pos * inv_freq formed in float, as
 * widely used RoPE code does) change in probe-row scores, against the exact phases,
 * and the check of the bound |dS| <= 2 sin(eps/2) * sum_j rho_j. */
#include "rb_kernels.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* Wrap an angle difference to [-pi, pi]. */
static double wrap(double a)
{
    return a - 2.0 * M_PI * nearbyint(a / (2.0 * M_PI));
}

/* The phase common fp32 code forms for (pos, inv_freq). */
static double phase_fp32(int64_t pos, double inv_freq)
{
    const float a = (float)pos * (float)inv_freq;
    return (double)a;
}

/* Dims of pair j in a layout. */
static void pair_dims(rb_rope_layout layout, int rotary_dim, int j, int *a, int *b)
{
    if (layout == RB_LAYOUT_NEOX) {
        *a = j;
        *b = j + rotary_dim / 2;
    } else {
        *a = 2 * j;
        *b = 2 * j + 1;
    }
}

/* Rotate one row in double: out_exact (exact phases) and out_fp32 (fp32 phases);
 * phi_err[j] = wrap(phi_fp32 - phi_exact). Pass-through dims are copied. */
static void rotate_both(const float *x, int64_t pos, const double *inv_freq, int d, int rd,
                        rb_rope_layout layout, double af, double *ex, double *f32,
                        double *phi_err)
{
    for (int i = rd; i < d; i++)
        ex[i] = f32[i] = (double)x[i];
    for (int j = 0; j < rd / 2; j++) {
        int a, b;
        pair_dims(layout, rd, j, &a, &b);
        const double pe = rb_rope_phase(pos, inv_freq[j]);
        const double pf = phase_fp32(pos, inv_freq[j]);
        const double xa = x[a], xb = x[b];
        const double ce = cos(pe), se = sin(pe), cf = cos(pf), sf = sin(pf);
        ex[a] = af * (xa * ce - xb * se);
        ex[b] = af * (xa * se + xb * ce);
        f32[a] = af * (xa * cf - xb * sf);
        f32[b] = af * (xa * sf + xb * cf);
        phi_err[j] = wrap(pf - pe);
    }
}

int rb_metrics_precision(const float *qpre, const int64_t *q_pos, int64_t nq,
                         const float *kpre, const int64_t *k_pos, int64_t nk,
                         const double *inv_freq, int d, int rotary_dim,
                         rb_rope_layout layout, double attention_factor, double scale,
                         double *phase_err_max, double *phase_err_mean,
                         double *score_err_max, double *bound_ratio_max)
{
    const int np = rotary_dim / 2;
    const size_t rowd = (size_t)d;
    int rc = RB_OK;
    /* keys rotated once: exact, fp32-phase, phase errors, pair norms */
    double *kex = malloc((size_t)nk * rowd * sizeof *kex);
    double *kf = malloc((size_t)nk * rowd * sizeof *kf);
    double *kerr = malloc((size_t)nk * (size_t)np * sizeof *kerr);
    double *knorm = malloc((size_t)nk * (size_t)np * sizeof *knorm);
    if ((nk > 0 && (!kex || !kf || !kerr || !knorm))) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    for (int64_t n = 0; n < nk; n++) {
        rotate_both(kpre + (size_t)n * rowd, k_pos[n], inv_freq, d, rotary_dim, layout,
                    attention_factor, kex + (size_t)n * rowd, kf + (size_t)n * rowd,
                    kerr + (size_t)n * np);
        for (int j = 0; j < np; j++) {
            int a, b;
            pair_dims(layout, rotary_dim, j, &a, &b);
            knorm[(size_t)n * np + j] = hypot(kex[(size_t)n * rowd + a], kex[(size_t)n * rowd + b]);
        }
    }
#pragma omp parallel
    {
        double *qex = malloc(rowd * sizeof *qex), *qf = malloc(rowd * sizeof *qf);
        double *qerr = malloc((size_t)(np > 0 ? np : 1) * sizeof *qerr);
        double *qnorm = malloc((size_t)(np > 0 ? np : 1) * sizeof *qnorm);
        int ok = qex && qf && qerr && qnorm;
        if (!ok) {
#pragma omp atomic write
            rc = RB_ENOMEM;
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t m = 0; m < nq; m++) {
            if (!ok) continue;
            rotate_both(qpre + (size_t)m * rowd, q_pos[m], inv_freq, d, rotary_dim, layout,
                        attention_factor, qex, qf, qerr);
            double pmax = 0, psum = 0;
            for (int j = 0; j < np; j++) {
                int a, b;
                pair_dims(layout, rotary_dim, j, &a, &b);
                qnorm[j] = hypot(qex[a], qex[b]);
                if (fabs(qerr[j]) > pmax) pmax = fabs(qerr[j]);
                psum += fabs(qerr[j]);
            }
            phase_err_max[m] = pmax;
            phase_err_mean[m] = np > 0 ? psum / np : 0.0;
            double emax = 0, rmax = 0;
            for (int64_t n = 0; n < nk; n++) {
                if (k_pos[n] > q_pos[m]) continue;
                const double *ke = kex + (size_t)n * rowd, *kff = kf + (size_t)n * rowd;
                double se = 0, sf = 0;
                for (int i = 0; i < d; i++) {
                    se += qex[i] * ke[i];
                    sf += qf[i] * kff[i];
                }
                const double ds = fabs(scale * (sf - se));
                double eps = 0, rho = 0;
                for (int j = 0; j < np; j++) {
                    const double e = fabs(wrap(qerr[j] - kerr[(size_t)n * np + j]));
                    if (e > eps) eps = e;
                    rho += qnorm[j] * knorm[(size_t)n * np + j];
                }
                rho *= fabs(scale);
                const double bound = 2.0 * sin(0.5 * (eps < M_PI ? eps : M_PI)) * rho;
                if (ds > emax) emax = ds;
                /* a change at the level of double rounding is no phase effect */
                const double noise = 64.0 * DBL_EPSILON * (fabs(scale * se) + rho);
                const double ratio = ds <= noise ? 0.0 : bound > 0 ? ds / bound : INFINITY;
                if (ratio > rmax) rmax = ratio;
            }
            score_err_max[m] = emax;
            bound_ratio_max[m] = rmax;
        }
        free(qex);
        free(qf);
        free(qerr);
        free(qnorm);
    }
cleanup:
    free(kex);
    free(kf);
    free(kerr);
    free(knorm);
    return rc;
}
