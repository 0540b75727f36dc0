/* rope_schedule.c — RoPE inverse-frequency schedules (none, pi, ntk, dynamic_ntk, yarn,
 * llama3, longrope) as Hugging Face transformers' modeling_rope_utils defines them,
 * evaluated in double. */
#include "rb_kernels.h"

#include <math.h>
#include <string.h>

static const char *const method_names[RB_ROPE_COUNT] = {
    [RB_ROPE_NONE] = "none",   [RB_ROPE_PI] = "pi",
    [RB_ROPE_NTK] = "ntk",     [RB_ROPE_DYNAMIC_NTK] = "dynamic_ntk",
    [RB_ROPE_YARN] = "yarn",   [RB_ROPE_LLAMA3] = "llama3",
    [RB_ROPE_LONGROPE] = "longrope",
};

const char *rb_rope_method_name(rb_rope_method m)
{
    if ((int)m < 0 || m >= RB_ROPE_COUNT)
        return "unknown";
    return method_names[m];
}

int rb_rope_method_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < RB_ROPE_COUNT; i++)
        if (strcmp(name, method_names[i]) == 0)
            return i;
    return -1;
}

/* The unscaled schedule of HF's _compute_default_rope_parameters:
 * inv_freq[j] = 1 / base^(2j/dim), dim = rotary_dim. */
static void default_inv_freq(double base, int dim, double *inv_freq)
{
    for (int j = 0; j < dim / 2; j++)
        inv_freq[j] = 1.0 / pow(base, (double)(2 * j) / (double)dim);
}

/* YaRN's inverse dimension formula: the pair index (in units of HF's "dim" axis) at
 * which a frequency makes num_rotations turns over max_pos tokens. */
static double yarn_correction_dim(double num_rotations, int dim, double base,
                                  double max_pos)
{
    return ((double)dim * log(max_pos / (num_rotations * 2.0 * M_PI))) /
           (2.0 * log(base));
}

/* YaRN's mscale (HF get_mscale): 0.1 * mscale * ln(scale) + 1, or 1 for scale <= 1. */
static double yarn_get_mscale(double scale, double mscale)
{
    if (scale <= 1.0)
        return 1.0;
    return 0.1 * mscale * log(scale) + 1.0;
}

static int uses_original_ctx(rb_rope_method m)
{
    return m == RB_ROPE_DYNAMIC_NTK || m == RB_ROPE_YARN || m == RB_ROPE_LLAMA3 ||
           m == RB_ROPE_LONGROPE;
}

/* Parameter checks shared by every method; 0 or RB_EINVAL with a message. */
static int check_params(const rb_rope_params *p, char *err, size_t errlen)
{
    if ((int)p->method < 0 || p->method >= RB_ROPE_COUNT)
        return rb_errf(err, errlen, RB_EINVAL, "method: unknown RoPE method %d",
                       (int)p->method);
    const char *mn = rb_rope_method_name(p->method);
    if (p->rotary_dim <= 0 || p->rotary_dim % 2 != 0)
        return rb_errf(err, errlen, RB_EINVAL,
                       "rotary_dim: must be even and > 0 (got %d)", p->rotary_dim);
    if (!(p->base > 1.0) || !isfinite(p->base))
        return rb_errf(err, errlen, RB_EINVAL, "base: must be finite and > 1 (got %g)",
                       p->base);
    if (p->method != RB_ROPE_NONE && (!(p->factor >= 1.0) || !isfinite(p->factor)))
        return rb_errf(err, errlen, RB_EINVAL,
                       "factor: must be finite and >= 1 for method %s (got %g)", mn,
                       p->factor);
    if (uses_original_ctx(p->method) && p->original_ctx <= 0)
        return rb_errf(err, errlen, RB_EINVAL,
                       "original_ctx: must be > 0 for method %s (got %lld)", mn,
                       (long long)p->original_ctx);
    if (p->method == RB_ROPE_DYNAMIC_NTK && p->rotary_dim <= 2)
        return rb_errf(err, errlen, RB_EINVAL,
                       "rotary_dim: must be > 2 for method %s (exponent d/(d-2))", mn);
    if (p->method == RB_ROPE_NTK && p->rotary_dim <= 2)
        return rb_errf(err, errlen, RB_EINVAL,
                       "rotary_dim: must be > 2 for method %s (exponent d/(d-2))", mn);
    if (p->method == RB_ROPE_YARN) {
        if (p->beta_fast < 0 || p->beta_slow < 0 || !isfinite(p->beta_fast) ||
            !isfinite(p->beta_slow))
            return rb_errf(err, errlen, RB_EINVAL,
                           "beta_fast/beta_slow: must be finite and >= 0 (0 = default)");
        double bf = p->beta_fast > 0 ? p->beta_fast : 32.0;
        double bs = p->beta_slow > 0 ? p->beta_slow : 1.0;
        if (bf < bs)
            return rb_errf(err, errlen, RB_EINVAL,
                           "beta_fast: must be >= beta_slow (got %g < %g)", bf, bs);
        if (p->mscale < 0 || p->mscale_all_dim < 0)
            return rb_errf(err, errlen, RB_EINVAL,
                           "mscale/mscale_all_dim: must be >= 0 (0 = unset)");
    }
    if (p->method == RB_ROPE_LLAMA3) {
        if (p->low_freq_factor < 0 || p->high_freq_factor < 0)
            return rb_errf(err, errlen, RB_EINVAL,
                           "low_freq_factor/high_freq_factor: must be >= 0 (0 = default)");
        double lo = p->low_freq_factor > 0 ? p->low_freq_factor : 1.0;
        double hi = p->high_freq_factor > 0 ? p->high_freq_factor : 4.0;
        if (!(hi > lo))
            return rb_errf(err, errlen, RB_EINVAL,
                           "high_freq_factor: must be > low_freq_factor (got %g <= %g)",
                           hi, lo);
    }
    if (p->method == RB_ROPE_LONGROPE) {
        if (!p->short_factor || !p->long_factor)
            return rb_errf(err, errlen, RB_EINVAL,
                           "short_factor/long_factor: method longrope needs both lists "
                           "(rotary_dim/2 = %d entries each)", p->rotary_dim / 2);
        for (int j = 0; j < p->rotary_dim / 2; j++) {
            if (!(p->short_factor[j] > 0) || !isfinite(p->short_factor[j]))
                return rb_errf(err, errlen, RB_EINVAL,
                               "short_factor[%d]: must be finite and > 0 (got %g)", j,
                               p->short_factor[j]);
            if (!(p->long_factor[j] > 0) || !isfinite(p->long_factor[j]))
                return rb_errf(err, errlen, RB_EINVAL,
                               "long_factor[%d]: must be finite and > 0 (got %g)", j,
                               p->long_factor[j]);
        }
    }
    if (isnan(p->attention_factor) || isinf(p->attention_factor))
        return rb_errf(err, errlen, RB_EINVAL, "attention_factor: must be finite");
    return 0;
}

int rb_rope_schedule(const rb_rope_params *p, double *inv_freq, rb_rope_info *info,
                     char *err, size_t errlen)
{
    if (!p || !inv_freq)
        return rb_errf(err, errlen, RB_EINVAL, "rb_rope_schedule: NULL argument");
    int rc = check_params(p, err, errlen);
    if (rc)
        return rc;

    const int dim = p->rotary_dim; /* HF's "dim" */
    const int half = dim / 2;
    const double f = p->factor;
    rb_rope_info out = {.attention_factor = 1.0, .base_used = p->base};

    switch (p->method) {
    case RB_ROPE_NONE:
        default_inv_freq(p->base, dim, inv_freq);
        break;
    case RB_ROPE_PI:
        default_inv_freq(p->base, dim, inv_freq);
        for (int j = 0; j < half; j++)
            inv_freq[j] /= f;
        break;
    case RB_ROPE_NTK:
        out.base_used = p->base * pow(f, (double)dim / (double)(dim - 2));
        default_inv_freq(out.base_used, dim, inv_freq);
        break;
    case RB_ROPE_DYNAMIC_NTK: {
        double orig = (double)p->original_ctx;
        double L = p->seq_len > p->original_ctx ? (double)p->seq_len : orig;
        out.base_used =
            p->base * pow(f * L / orig - (f - 1.0), (double)dim / (double)(dim - 2));
        default_inv_freq(out.base_used, dim, inv_freq);
        break;
    }
    case RB_ROPE_YARN: {
        double bf = p->beta_fast > 0 ? p->beta_fast : 32.0;
        double bs = p->beta_slow > 0 ? p->beta_slow : 1.0;
        double orig = (double)p->original_ctx;
        if (p->attention_factor > 0)
            out.attention_factor = p->attention_factor;
        else if (p->mscale > 0 && p->mscale_all_dim > 0)
            out.attention_factor =
                yarn_get_mscale(f, p->mscale) / yarn_get_mscale(f, p->mscale_all_dim);
        else
            out.attention_factor = yarn_get_mscale(f, 1.0);
        double low = yarn_correction_dim(bf, dim, p->base, orig);
        double high = yarn_correction_dim(bs, dim, p->base, orig);
        if (p->truncate) {
            low = floor(low);
            high = ceil(high);
        }
        /* HF clamps to [0, dim - 1] with dim = rotary_dim, not the pair count. */
        if (low < 0)
            low = 0;
        if (high > (double)(dim - 1))
            high = (double)(dim - 1);
        out.corr_low = low;
        out.corr_high = high;
        if (low == high)
            high += 0.001; /* HF: prevent the singularity */
        for (int j = 0; j < half; j++) {
            double pos_freq = pow(p->base, (double)(2 * j) / (double)dim);
            double extrap = 1.0 / pos_freq;
            double interp = 1.0 / (f * pos_freq);
            double ramp = ((double)j - low) / (high - low);
            ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
            double extrap_w = 1.0 - ramp; /* HF's inv_freq_extrapolation_factor */
            inv_freq[j] = interp * (1.0 - extrap_w) + extrap * extrap_w;
        }
        break;
    }
    case RB_ROPE_LLAMA3: {
        double lo = p->low_freq_factor > 0 ? p->low_freq_factor : 1.0;
        double hi = p->high_freq_factor > 0 ? p->high_freq_factor : 4.0;
        double old_ctx = (double)p->original_ctx;
        double low_freq_wavelen = old_ctx / lo;
        double high_freq_wavelen = old_ctx / hi;
        default_inv_freq(p->base, dim, inv_freq);
        for (int j = 0; j < half; j++) {
            double inv = inv_freq[j];
            double wavelen = 2.0 * M_PI / inv;
            if (wavelen < high_freq_wavelen) {
                /* high frequency: unchanged */
            } else if (wavelen > low_freq_wavelen) {
                inv_freq[j] = inv / f;
            } else {
                double smooth = (old_ctx / wavelen - lo) / (hi - lo);
                inv_freq[j] = (1.0 - smooth) * inv / f + smooth * inv;
            }
        }
        break;
    }
    case RB_ROPE_LONGROPE: {
        double orig = (double)p->original_ctx;
        if (p->attention_factor > 0)
            out.attention_factor = p->attention_factor;
        else if (f <= 1.0)
            out.attention_factor = 1.0;
        else if (p->original_ctx < 2)
            return rb_errf(err, errlen, RB_EINVAL,
                           "original_ctx: must be >= 2 for longrope's automatic "
                           "attention factor (got %lld)", (long long)p->original_ctx);
        else
            out.attention_factor = sqrt(1.0 + log(f) / log(orig));
        const double *ext = p->seq_len > p->original_ctx ? p->long_factor
                                                         : p->short_factor;
        for (int j = 0; j < half; j++)
            inv_freq[j] =
                1.0 / (ext[j] * pow(p->base, (double)(2 * j) / (double)dim));
        break;
    }
    default:
        return rb_errf(err, errlen, RB_EINVAL, "method: unknown RoPE method %d",
                       (int)p->method);
    }
    if (info)
        *info = out;
    return 0;
}
