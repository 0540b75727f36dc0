/* rope_phase.c — exact RoPE phases (pos * inv_freq reduced mod 2*pi in extended
 * precision) and the reference RoPE rotation of q/k rows (neox and gptj layouts). */
#include "rb_kernels.h"

#include <math.h>

/* 2*pi = RB_2PI_1 + RB_2PI_2 + RB_2PI_3 (each the rounded remainder of the previous
 * split, so the sum carries ~160 bits of 2*pi). */
static const double RB_2PI_1 = 0x1.921fb54442d18p+2;
static const double RB_2PI_2 = 0x1.1a62633145c07p-52;
static const double RB_2PI_3 = -0x1.f1976b7ed8fbcp-108;
static const double RB_INV_2PI = 0x1.45f306dc9c883p-3;
static const double RB_PI_D = 0x1.921fb54442d18p+1; /* pi rounded to double */

/* a*b = *p + *e exactly (FMA two-product), barring underflow. */
static inline void two_prod(double a, double b, double *p, double *e)
{
    *p = a * b;
    *e = fma(a, b, -*p);
}

/* a+b = *s + *e exactly (Knuth two-sum, no ordering assumption). */
static inline void two_sum(double a, double b, double *s, double *e)
{
    double t = a + b;
    double bb = t - a;
    *e = (a - (t - bb)) + (b - bb);
    *s = t;
}

/* Cascaded compensated sum (Ogita-Rump-Oishi Sum2) of n terms into s + c. */
static inline void sum2(const double *t, int n, double *s, double *c)
{
    double acc = t[0], comp = 0.0;
    for (int i = 1; i < n; i++) {
        double e;
        two_sum(acc, t[i], &acc, &e);
        comp += e;
    }
    *s = acc;
    *c = comp;
}

/* Round to the nearest integer (ties to even) without a libm call: exact for
 * |q| < 2^51 by the 1.5*2^52 trick; doubles with |q| >= 2^52 are integers already. */
static inline double round_int(double q)
{
    const double magic = 0x1.8p52;
    if (fabs(q) < 0x1p51) {
        double t = q + magic; /* rounds q at the units place */
        return t - magic;
    }
    return fabs(q) >= 0x1p52 ? q : nearbyint(q);
}

/* Error analysis: |pos| <= 2^53 is exact in double; larger pos is split into hi
 * (a multiple of 2^32, <= 32 significant bits) and lo (< 2^32); each product with
 * inv_freq (53 bits) is exact as a two-product. k = round(x / 2pi) is an
 * integer-valued double, and k*C1, k*C2 are exact two-products; k*C3 is rounded
 * (relative 2^-53 of a term ~2^-107 |x|). The nine terms are summed with Sum2, whose
 * error is about u|r| + (9u)^2 sum|t_i|: the final rounding of r, at most half an ulp of
 * |r| <= pi (2.2e-16 rad), plus ~2^-100 * 2|x| (below 1e-17 rad for |x| <= 2^40).
 * Measured against MPFR: at most 2.22e-16 rad. */
double rb_rope_phase(int64_t pos, double inv_freq)
{
    if (pos == 0)
        return 0.0 * inv_freq; /* keeps NaN inputs NaN */
    double a1 = 0, a2 = 0, b1, b2;
    if (pos >= -((int64_t)1 << 53) && pos <= ((int64_t)1 << 53)) {
        two_prod((double)pos, inv_freq, &b1, &b2); /* (double)pos is exact */
    } else {
        int64_t lo_i = pos & (int64_t)0xFFFFFFFF; /* in [0, 2^32) */
        int64_t hi_i = pos - lo_i;                 /* multiple of 2^32, no overflow */
        two_prod((double)hi_i, inv_freq, &a1, &a2);
        two_prod((double)lo_i, inv_freq, &b1, &b2);
    }
    double k = round_int((a1 + b1) * RB_INV_2PI);
    double c1h, c1l, c2h, c2l;
    two_prod(k, RB_2PI_1, &c1h, &c1l);
    two_prod(k, RB_2PI_2, &c2h, &c2l);
    double c3 = k * RB_2PI_3;
    const double t[9] = {a1, -c1h, b1, a2, -c1l, b2, -c2h, -c2l, -c3};
    double s, c;
    sum2(t, 9, &s, &c);
    /* k came from a rounded quotient (off by one near odd multiples of pi, by more
     * when |x| > 2^53): reduce the remainder again until it lies in [-pi, pi]. */
    for (int it = 0; it < 4; it++) {
        double r = s + c;
        if (r <= RB_PI_D && r >= -RB_PI_D)
            break;
        double k2 = round_int(r * RB_INV_2PI);
        if (k2 == 0)
            k2 = r > 0 ? 1.0 : -1.0;
        two_prod(k2, RB_2PI_1, &c1h, &c1l);
        two_prod(k2, RB_2PI_2, &c2h, &c2l);
        const double t2[7] = {s, -c1h, c, -c1l, -c2h, -c2l, -k2 * RB_2PI_3};
        sum2(t2, 7, &s, &c);
    }
    return s + c;
}

void rb_rope_apply(float *x, int64_t n_rows, size_t row_stride, const int64_t *pos,
                   const double *inv_freq, int head_dim, int rotary_dim,
                   rb_rope_layout layout, double attention_factor)
{
    if (!x || n_rows <= 0 || rotary_dim <= 0 || rotary_dim > head_dim)
        return;
    const int half = rotary_dim / 2;
    for (int64_t r = 0; r < n_rows; r++) {
        float *row = x + (size_t)r * row_stride;
        for (int i = 0; i < half; i++) {
            double theta = rb_rope_phase(pos[r], inv_freq[i]);
            double c = cos(theta) * attention_factor;
            double s = sin(theta) * attention_factor;
            int ia, ib;
            if (layout == RB_LAYOUT_GPTJ) {
                ia = 2 * i;
                ib = 2 * i + 1;
            } else {
                ia = i;
                ib = i + half;
            }
            double x1 = row[ia], x2 = row[ib];
            row[ia] = (float)(x1 * c - x2 * s);
            row[ib] = (float)(x2 * c + x1 * s);
        }
    }
}
