/* philox.c — counter-based dataset generation: gaussian and needle rows (through the
 * generator of datasets/gauss.c), and the spectral dataset's per-pair amplitudes and
 * phases. */
#include "rb_datasets.h"

#include <math.h>
#include <string.h>

#include <Random123/philox.h>

#include "rb_gauss.h"
#include "rb_kernels.h"

static const char *const kind_names[] = {"gaussian", "needle", "spectral", "file"};
static const char *const profile_names[] = {"flat", "low", "high", "list"};

/* Canonical name of a dataset kind; "unknown" for a value outside the enum. */
const char *rb_dataset_kind_name(rb_dataset_kind k)
{
    if ((int)k < 0 || (int)k >= (int)(sizeof kind_names / sizeof kind_names[0]))
        return "unknown";
    return kind_names[k];
}

/* Inverse of rb_dataset_kind_name (exact, case-sensitive); -1 for NULL or unknown. */
int rb_dataset_kind_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < (int)(sizeof kind_names / sizeof kind_names[0]); i++)
        if (strcmp(name, kind_names[i]) == 0)
            return i;
    return -1;
}

/* Canonical name of a spectral profile; "unknown" for a value outside the enum. */
const char *rb_spectral_profile_name(rb_spectral_profile p)
{
    if ((int)p < 0 || (int)p >= (int)(sizeof profile_names / sizeof profile_names[0]))
        return "unknown";
    return profile_names[p];
}

/* Inverse of rb_spectral_profile_name (exact, case-sensitive); -1 for NULL or unknown. */
int rb_spectral_profile_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < (int)(sizeof profile_names / sizeof profile_names[0]); i++)
        if (strcmp(name, profile_names[i]) == 0)
            return i;
    return -1;
}

/* Uniform in (0, 1): (x + 0.5) / 2^32. */
static double u01_open(uint32_t x)
{
    return ((double)x + 0.5) * (1.0 / 4294967296.0);
}

/* The rotary dims of a spectral description (0 means head_dim). */
static int spectral_rotary_dim(const rb_dataset *ds)
{
    return ds->rotary_dim ? ds->rotary_dim : ds->head_dim;
}

/* Contract in rb_datasets.h. */
int rb_spectral_amplitudes(const rb_dataset *ds, double *a, char *err, size_t errlen)
{
    const int rd = spectral_rotary_dim(ds), np = rd / 2;
    if (rd <= 0 || rd % 2 != 0 || rd > ds->head_dim || np > RB_SPECTRAL_MAX_PAIRS)
        return rb_errf(err, errlen, RB_EINVAL,
                       "dataset: spectral rotary_dim %d must be even, positive and <= "
                       "head_dim %d", rd, ds->head_dim);
    switch (ds->profile) {
    case RB_SPECTRAL_FLAT:
        for (int j = 0; j < np; j++)
            a[j] = 1.0;
        return RB_OK;
    case RB_SPECTRAL_LOW:
    case RB_SPECTRAL_HIGH: {
        const double g = ds->profile == RB_SPECTRAL_LOW ? RB_SPECTRAL_GAMMA
                                                        : -RB_SPECTRAL_GAMMA;
        double e = 0;
        for (int j = 0; j < np; j++) {
            a[j] = exp(g * j / np);
            e += a[j] * a[j];
        }
        const double c = sqrt(np / e);
        for (int j = 0; j < np; j++)
            a[j] *= c;
        return RB_OK;
    }
    case RB_SPECTRAL_LIST: {
        if (ds->n_amplitudes != np)
            return rb_errf(err, errlen, RB_EINVAL,
                           "dataset: spectral profile list needs %d amplitudes "
                           "(rotary_dim/2), got %d", np, ds->n_amplitudes);
        double e = 0;
        for (int j = 0; j < np; j++) {
            if (!isfinite(ds->amplitudes[j]) || ds->amplitudes[j] < 0)
                return rb_errf(err, errlen, RB_EINVAL,
                               "dataset: spectral amplitude %d = %g must be finite and "
                               ">= 0", j, ds->amplitudes[j]);
            a[j] = ds->amplitudes[j];
            e += a[j] * a[j];
        }
        if (e == 0)
            return rb_errf(err, errlen, RB_EINVAL,
                           "dataset: spectral amplitudes are all 0");
        return RB_OK;
    }
    }
    return rb_errf(err, errlen, RB_EINVAL, "dataset: unknown spectral profile %d",
                   (int)ds->profile);
}

/* One spectral Q or K row: gaussian for the pass-through dims, then each rotary pair
 * set from its amplitude, the head's phase offsets psi[] and this position's Philox
 * block (contract in rb_datasets.h). */
static void spectral_row(const rb_dataset *ds, rb_gauss_row_fn gen, rb_tensor t, int head,
                         int64_t pos, const double *a, const double *psi, float *row)
{
    const double pi = 3.14159265358979323846264338327950288;
    const int d = ds->head_dim, rd = spectral_rotary_dim(ds), np = rd / 2;
    const double w = (1.0 - ds->coherence) * pi;
    gen(ds->seed, (int)t, head, pos, d, row);
    philox4x32_key_t key = {{(uint32_t)ds->seed, (uint32_t)(ds->seed >> 32)}};
    philox4x32_ctr_t ctr = {{(uint32_t)(uint64_t)pos, (uint32_t)((uint64_t)pos >> 32),
                             (1u << 24) | ((uint32_t)t << 16) | (uint32_t)head, 0}};
    for (int j = 0; j < np; j++) {
        ctr.v[3] = (uint32_t)j;
        philox4x32_ctr_t r = philox4x32(ctr, key);
        double phi = psi[j] + w * (2.0 * u01_open(r.v[0]) - 1.0);
        double m = a[j] * (1.0 + RB_SPECTRAL_MAG_NOISE * (2.0 * u01_open(r.v[1]) - 1.0));
        int ia = ds->layout == RB_LAYOUT_GPTJ ? 2 * j : j;
        int ib = ds->layout == RB_LAYOUT_GPTJ ? 2 * j + 1 : j + np;
        row[ia] = (float)(m * cos(phi));
        row[ib] = (float)(m * sin(phi));
    }
}

/* The head's fixed pair phase offsets psi_j(h) in [0, 2pi), shared by Q and K. */
static void spectral_offsets(const rb_dataset *ds, int head, int np, double *psi)
{
    const double two_pi = 6.283185307179586476925286766559;
    philox4x32_key_t key = {{(uint32_t)ds->seed, (uint32_t)(ds->seed >> 32)}};
    philox4x32_ctr_t ctr = {{0, 0, (1u << 24) | (3u << 16) | (uint32_t)head, 0}};
    for (int j = 0; j < np; j++) {
        ctr.v[3] = (uint32_t)j;
        psi[j] = two_pi * u01_open(philox4x32(ctr, key).v[0]);
    }
}

/* Contract in rb_datasets.h. Needle rows are computed from the aligned query row, so a
 * shard needs no other rank's data. */
int rb_dataset_fill(const rb_dataset *ds, rb_tensor t, int head, const int64_t *pos,
                    int64_t n, float *out, char *err, size_t errlen)
{
    if (!ds)
        return rb_errf(err, errlen, RB_EINVAL, "dataset: no dataset description given");
    if (ds->kind == RB_DATA_FILE)
        return rb_errf(err, errlen, RB_EINVAL,
                       "dataset: file rows are read (rb_dataset_open/rb_dataset_read), "
                       "not generated");
    if (ds->kind != RB_DATA_GAUSSIAN && ds->kind != RB_DATA_NEEDLE &&
        ds->kind != RB_DATA_SPECTRAL)
        return rb_errf(err, errlen, RB_EINVAL, "dataset: unknown kind %d", (int)ds->kind);
    if (ds->head_dim <= 0 || ds->head_dim % 2 != 0)
        return rb_errf(err, errlen, RB_EINVAL,
                       "dataset: head_dim %d must be positive and even", ds->head_dim);
    if (t != RB_TENSOR_Q && t != RB_TENSOR_K && t != RB_TENSOR_V)
        return rb_errf(err, errlen, RB_EINVAL, "dataset: unknown tensor %d", (int)t);
    if (head < 0 || head > 65535)
        return rb_errf(err, errlen, RB_EINVAL, "dataset: head %d outside [0, 65535]", head);
    if (n < 0 || (n > 0 && (!pos || !out)))
        return rb_errf(err, errlen, RB_EINVAL, "dataset: bad row count %lld or NULL buffer",
                       (long long)n);
    if (ds->kind == RB_DATA_NEEDLE) {
        if (ds->n_needles < 0 || ds->n_needles > RB_NEEDLE_MAX)
            return rb_errf(err, errlen, RB_EINVAL,
                           "dataset: n_needles %d outside [0, %d]", ds->n_needles,
                           RB_NEEDLE_MAX);
        for (int i = 0; i < ds->n_needles; i++)
            if (ds->needle_pos[i] < 0 || ds->query_pos[i] < 0)
                return rb_errf(err, errlen, RB_EINVAL,
                               "dataset: needle %d has negative position (key %lld, "
                               "query %lld)", i, (long long)ds->needle_pos[i],
                               (long long)ds->query_pos[i]);
    }
    double amp[RB_SPECTRAL_MAX_PAIRS], psi[RB_SPECTRAL_MAX_PAIRS];
    if (ds->kind == RB_DATA_SPECTRAL) {
        if (!(ds->coherence >= 0 && ds->coherence <= 1))
            return rb_errf(err, errlen, RB_EINVAL,
                           "dataset: spectral coherence %g outside [0, 1]", ds->coherence);
        if (ds->layout != RB_LAYOUT_NEOX && ds->layout != RB_LAYOUT_GPTJ)
            return rb_errf(err, errlen, RB_EINVAL, "dataset: unknown layout %d",
                           (int)ds->layout);
        int rc = rb_spectral_amplitudes(ds, amp, err, errlen);
        if (rc != RB_OK)
            return rc;
        spectral_offsets(ds, head, spectral_rotary_dim(ds) / 2, psi);
    }
    for (int64_t r = 0; r < n; r++)
        if (pos[r] < 0)
            return rb_errf(err, errlen, RB_EINVAL,
                           "dataset: negative position %lld at row %lld",
                           (long long)pos[r], (long long)r);

    const int d = ds->head_dim;
    const rb_gauss_row_fn gen = rb_gauss_row_select();
    /* rows are independent: OpenMP threads (the kernels' count) take them in static
     * chunks; the values do not depend on the thread count */
    if (ds->kind == RB_DATA_SPECTRAL) {
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < n; r++) {
            float *row = out + (size_t)r * (size_t)d;
            if (t == RB_TENSOR_V)
                gen(ds->seed, (int)t, head, pos[r], d, row);
            else
                spectral_row(ds, gen, t, head, pos[r], amp, psi, row);
        }
        return RB_OK;
    }
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n; r++) {
        float *row = out + (size_t)r * (size_t)d;
        int needle = -1;
        if (ds->kind == RB_DATA_NEEDLE && t == RB_TENSOR_K)
            for (int i = 0; i < ds->n_needles; i++)
                if (ds->needle_pos[i] == pos[r])
                    needle = i; /* the later needle wins */
        if (needle < 0) {
            gen(ds->seed, (int)t, head, pos[r], d, row);
        } else {
            gen(ds->seed, RB_TENSOR_Q, head, ds->query_pos[needle], d, row);
            for (int i = 0; i < d; i++)
                row[i] = (float)(ds->strength * (double)row[i]);
        }
    }
    return RB_OK;
}
