/* report_read.c — reads a ropebench results file (serial HDF5, read-only) into an rp_file for the report; never crashes on a damaged file. */
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rb_kernels.h"
#include "report_int.h"

/* Largest dataset read into memory (elements), far above any real results file. */
#define RP_MAX_ELEMS ((hsize_t)1 << 31)

/* Innermost HDF5 error description, then the stack is cleared. */
typedef struct {
    char desc[200];
} h5msg;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    if (n == 0 && e && e->desc)
        snprintf(((h5msg *)data)->desc, sizeof((h5msg *)data)->desc, "%s", e->desc);
    return 0;
}

static const char *h5_last(h5msg *m)
{
    m->desc[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, m);
    H5Eclear2(H5E_DEFAULT);
    return m->desc[0] ? m->desc : "unknown HDF5 error";
}

/* Printable, bounded copy of a value from the file for an error line. */
static void printable(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len && i < 40; i++)
        dst[i] = (src[i] >= 32 && src[i] < 127) ? src[i] : '?';
    dst[i] = '\0';
}

/* ---- attributes -------------------------------------------------------------------- */

/* Read a string attribute (fixed or variable length) into a malloc'd string.
 * 1 found, 0 missing, RB_EFORMAT not a string, RB_EIO read error. */
static int attr_str(hid_t obj, const char *name, char **out)
{
    int rc = RB_OK;
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, sp = H5I_INVALID_HID,
          mt = H5I_INVALID_HID;
    char *buf = NULL;
    *out = NULL;
    htri_t ex = H5Aexists(obj, name);
    if (ex <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return ex < 0 ? RB_EIO : 0;
    }
    if ((a = H5Aopen(obj, name, H5P_DEFAULT)) < 0 || (t = H5Aget_type(a)) < 0 ||
        (sp = H5Aget_space(a)) < 0) {
        rc = RB_EIO;
        goto cleanup;
    }
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        rc = RB_EFORMAT;
        goto cleanup;
    }
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        if ((mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Aread(a, mt, &v) < 0) {
            rc = RB_EIO;
            goto cleanup;
        }
        buf = strdup(v ? v : "");
        H5free_memory(v);
    } else {
        size_t sz = H5Tget_size(t);
        if (sz == 0 || sz > ((size_t)1 << 28)) {
            rc = RB_EFORMAT;
            goto cleanup;
        }
        buf = calloc(1, sz + 1);
        if (buf && H5Aread(a, t, buf) < 0) {
            rc = RB_EIO;
            goto cleanup;
        }
    }
    if (!buf) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    *out = buf;
    buf = NULL;
    rc = 1;
cleanup:
    free(buf);
    if (mt >= 0)
        H5Tclose(mt);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    if (a >= 0)
        H5Aclose(a);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* Read a numeric scalar attribute as double. 1 found, 0 missing, RB_EFORMAT if not a
 * number, RB_EIO on a read error. */
static int attr_num(hid_t obj, const char *name, double *v)
{
    int rc = RB_OK;
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, sp = H5I_INVALID_HID;
    htri_t ex = H5Aexists(obj, name);
    if (ex <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return ex < 0 ? RB_EIO : 0;
    }
    if ((a = H5Aopen(obj, name, H5P_DEFAULT)) < 0 || (t = H5Aget_type(a)) < 0 ||
        (sp = H5Aget_space(a)) < 0) {
        rc = RB_EIO;
        goto cleanup;
    }
    H5T_class_t c = H5Tget_class(t);
    if ((c != H5T_INTEGER && c != H5T_FLOAT) || H5Sget_simple_extent_npoints(sp) != 1) {
        rc = RB_EFORMAT;
        goto cleanup;
    }
    rc = H5Aread(a, H5T_NATIVE_DOUBLE, v) < 0 ? RB_EIO : 1;
cleanup:
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    if (a >= 0)
        H5Aclose(a);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* Render any attribute as text: strings as they are, numbers (up to 16 elements)
 * comma-separated, anything else as "(<class> attribute)". */
static herr_t attr_iter_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    rp_attrs *as = data;
    char *val = NULL;
    double v[16];
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, sp = H5I_INVALID_HID;
    rp_attr *nv = realloc(as->v, (as->n + 1) * sizeof *nv);
    if (!nv)
        return -1;
    as->v = nv;
    int s = attr_str(loc, name, &val);
    if (s == RB_EFORMAT) {
        val = malloc(512);
        if (!val)
            return -1;
        snprintf(val, 512, "(unreadable attribute)");
        if ((a = H5Aopen(loc, name, H5P_DEFAULT)) >= 0 && (t = H5Aget_type(a)) >= 0 &&
            (sp = H5Aget_space(a)) >= 0) {
            H5T_class_t c = H5Tget_class(t);
            hssize_t np = H5Sget_simple_extent_npoints(sp);
            if ((c == H5T_INTEGER || c == H5T_FLOAT) && np >= 1 && np <= 16 &&
                H5Aread(a, H5T_NATIVE_DOUBLE, v) >= 0) {
                size_t off = 0;
                val[0] = '\0';
                for (hssize_t i = 0; i < np && off < 480; i++)
                    off += (size_t)snprintf(val + off, 512 - off, "%s%.10g", i ? ", " : "",
                                            v[i]);
            } else if (c == H5T_INTEGER || c == H5T_FLOAT)
                snprintf(val, 512, "(%lld numbers)", (long long)np);
        }
        if (sp >= 0)
            H5Sclose(sp);
        if (t >= 0)
            H5Tclose(t);
        if (a >= 0)
            H5Aclose(a);
        H5Eclear2(H5E_DEFAULT);
    } else if (s <= 0) {
        val = strdup("(unreadable attribute)");
    }
    as->v[as->n].name = strdup(name);
    as->v[as->n].value = val;
    if (!as->v[as->n].name || !val) {
        free(as->v[as->n].name);
        free(val);
        return -1;
    }
    as->n++;
    return 0;
}

static int attrs_read(hid_t obj, rp_attrs *as)
{
    hsize_t idx = 0;
    herr_t e = H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_iter_cb, as);
    H5Eclear2(H5E_DEFAULT);
    return e < 0 ? RB_EIO : RB_OK;
}

static void attrs_free(rp_attrs *as)
{
    for (size_t i = 0; i < as->n; i++) {
        free(as->v[i].name);
        free(as->v[i].value);
    }
    free(as->v);
    as->v = NULL;
    as->n = 0;
}

/* ---- datasets ---------------------------------------------------------------------- */

/* Read a numeric dataset as doubles. dims receives up to 3 extents, *nd the rank.
 * RB_OK, or a code with reason (static text) set. */
static int dset_f64(hid_t loc, const char *path, double **out, hsize_t dims[3], int *nd,
                    const char **reason)
{
    int rc = RB_OK;
    hid_t d = H5I_INVALID_HID, sp = H5I_INVALID_HID, t = H5I_INVALID_HID;
    *out = NULL;
    *nd = 0;
    htri_t ex = H5Lexists(loc, path, H5P_DEFAULT);
    if (ex <= 0) {
        *reason = "missing";
        rc = RB_EFORMAT;
        goto cleanup;
    }
    if ((d = H5Dopen2(loc, path, H5P_DEFAULT)) < 0 || (sp = H5Dget_space(d)) < 0 ||
        (t = H5Dget_type(d)) < 0) {
        *reason = "cannot be opened";
        rc = RB_EIO;
        goto cleanup;
    }
    int n = H5Sget_simple_extent_ndims(sp);
    H5T_class_t c = H5Tget_class(t);
    if (n < 1 || n > 3 || (c != H5T_INTEGER && c != H5T_FLOAT)) {
        *reason = "is not a 1-3 dimensional numeric dataset";
        rc = RB_EFORMAT;
        goto cleanup;
    }
    H5Sget_simple_extent_dims(sp, dims, NULL);
    hsize_t total = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] > 0 && total > RP_MAX_ELEMS / dims[i]) {
            *reason = "is too large";
            rc = RB_EFORMAT;
            goto cleanup;
        }
        total *= dims[i];
    }
    *out = malloc((total ? total : 1) * sizeof(double));
    if (!*out) {
        *reason = "does not fit in memory";
        rc = RB_ENOMEM;
        goto cleanup;
    }
    if (total > 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        *reason = "cannot be read (damaged file?)";
        rc = RB_EIO;
        goto cleanup;
    }
    *nd = n;
cleanup:
    if (rc != RB_OK) {
        free(*out);
        *out = NULL;
    }
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* Read a 1-D string dataset (fixed or variable length) into malloc'd strings; a
 * missing dataset gives n = 0 and RB_OK. */
static int dset_strings(hid_t loc, const char *path, char ***out, size_t *n)
{
    int rc = RB_OK;
    hid_t d = H5I_INVALID_HID, sp = H5I_INVALID_HID, t = H5I_INVALID_HID,
          mt = H5I_INVALID_HID;
    char *buf = NULL;
    char **vl = NULL;
    hsize_t dim = 0;
    *out = NULL;
    *n = 0;
    htri_t ex = H5Lexists(loc, path, H5P_DEFAULT);
    if (ex <= 0)
        goto cleanup;
    if ((d = H5Dopen2(loc, path, H5P_DEFAULT)) < 0 || (sp = H5Dget_space(d)) < 0 ||
        (t = H5Dget_type(d)) < 0) {
        rc = RB_EIO;
        goto cleanup;
    }
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_ndims(sp) != 1) {
        rc = RB_EFORMAT;
        goto cleanup;
    }
    H5Sget_simple_extent_dims(sp, &dim, NULL);
    if (dim == 0 || dim > 1000000) {
        rc = dim == 0 ? RB_OK : RB_EFORMAT;
        goto cleanup;
    }
    char **s = calloc(dim, sizeof *s);
    if (!s) {
        rc = RB_ENOMEM;
        goto cleanup;
    }
    *out = s;
    *n = dim;
    if (H5Tis_variable_str(t) > 0) {
        vl = calloc(dim, sizeof *vl);
        if (!vl || (mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vl) < 0) {
            rc = RB_EIO;
            goto cleanup;
        }
        for (hsize_t i = 0; i < dim; i++)
            s[i] = strdup(vl[i] ? vl[i] : "");
        H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, vl);
    } else {
        size_t w = H5Tget_size(t);
        if (w == 0 || w > ((size_t)1 << 26) || dim * w > ((size_t)1 << 30)) {
            rc = RB_EFORMAT;
            goto cleanup;
        }
        buf = calloc(dim, w);
        if (!buf || H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
            rc = RB_EIO;
            goto cleanup;
        }
        for (hsize_t i = 0; i < dim; i++)
            s[i] = strndup(buf + i * w, w);
    }
    for (hsize_t i = 0; i < dim; i++)
        if (!s[i])
            rc = RB_ENOMEM;
cleanup:
    free(buf);
    free(vl);
    if (mt >= 0)
        H5Tclose(mt);
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* Lengths of the strings of a 1-D string dataset (topology XML is not loaded into
 * the report, only its size). */
static int strings_lengths(hid_t loc, const char *path, size_t **lens, size_t *n)
{
    char **s = NULL;
    size_t k = 0;
    int rc = dset_strings(loc, path, &s, &k);
    *lens = NULL;
    *n = 0;
    if (rc == RB_OK && k > 0) {
        *lens = calloc(k, sizeof **lens);
        if (*lens) {
            for (size_t i = 0; i < k; i++)
                (*lens)[i] = s[i] ? strlen(s[i]) : 0;
            *n = k;
        }
    }
    for (size_t i = 0; i < k; i++)
        free(s ? s[i] : NULL);
    free(s);
    return rc;
}

/* ---- cases ------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void set_problem(rp_case *c, const char *fmt, const char *what, const char *why)
{
    if (c->problem)
        return;
    size_t n = strlen(fmt) + strlen(what) + strlen(why) + 1;
    c->problem = malloc(n);
    if (c->problem)
        snprintf(c->problem, n, fmt, what, why);
}

static void copy_attr(hid_t g, const char *name, char *dst, size_t len)
{
    char *s = NULL;
    dst[0] = '\0';
    if (attr_str(g, name, &s) == 1)
        snprintf(dst, len, "%s", s);
    free(s);
}

/* Means over heads and rows, the plot series (mean over heads per row, log-binned
 * above RP_BIN_ABOVE rows; position 0 is left out of the log axis), timings. */
static void case_read_rows(hid_t g, rp_case *c)
{
    double *pos = NULL, *H = NULL, *lse = NULL, *t = NULL;
    hsize_t dp[3], dh[3], dl[3], dt[3];
    int np, nh, nl, nt;
    const char *why = "";
    if (dset_f64(g, "rows/position", &pos, dp, &np, &why) != RB_OK) {
        set_problem(c, "%s %s", "rows/position", why);
        goto cleanup;
    }
    if (dset_f64(g, "rows/entropy", &H, dh, &nh, &why) != RB_OK) {
        set_problem(c, "%s %s", "rows/entropy", why);
        goto cleanup;
    }
    if (dset_f64(g, "rows/lse", &lse, dl, &nl, &why) != RB_OK) {
        set_problem(c, "%s %s", "rows/lse", why);
        goto cleanup;
    }
    if (np != 1 || nh != 2 || nl != 2 || dh[1] != dp[0] || dl[0] != dh[0] ||
        dl[1] != dh[1]) {
        set_problem(c, "%s %s", "rows/{position,entropy,lse}",
                    "have inconsistent shapes (expected [n_rows] and [heads][n_rows])");
        goto cleanup;
    }
    int64_t heads = (int64_t)dh[0], n = (int64_t)dp[0];
    c->nrows_read = n;
    double sh = 0, sl = 0;
    int64_t ch = 0, cl = 0;
    for (int64_t i = 0; i < heads * n; i++) {
        if (isfinite(H[i]))
            sh += H[i], ch++;
        else
            c->nonfinite++;
        if (isfinite(lse[i]))
            sl += lse[i], cl++;
        else
            c->nonfinite++;
    }
    c->mean_entropy = ch ? sh / (double)ch : NAN;
    c->mean_lse = cl ? sl / (double)cl : NAN;

    /* Plot series. */
    c->binned = n > RP_BIN_ABOVE;
    c->x = malloc((size_t)(n ? n : 1) * sizeof(double));
    c->y = malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!c->x || !c->y) {
        set_problem(c, "%s %s", "rows", "do not fit in memory");
        goto cleanup;
    }
    int64_t k = 0;
    if (!c->binned) {
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            int64_t m = 0;
            for (int64_t h = 0; h < heads; h++)
                if (isfinite(H[h * n + i]))
                    s += H[h * n + i], m++;
            if (pos[i] >= 1 && m > 0) {
                c->x[k] = pos[i];
                c->y[k++] = s / (double)m;
            }
        }
    } else {
        int64_t cur = -1;
        double sx = 0, sy = 0;
        int64_t cnt = 0;
        for (int64_t i = 0; i <= n; i++) {
            int64_t b = -2;
            double s = 0;
            int64_t m = 0;
            if (i < n && pos[i] >= 1) {
                b = (int64_t)floor(log2(pos[i]) * RP_BINS_PER_OCTAVE);
                for (int64_t h = 0; h < heads; h++)
                    if (isfinite(H[h * n + i]))
                        s += H[h * n + i], m++;
            } else if (i < n)
                continue;
            if (b != cur && cnt > 0) {
                c->x[k] = sx / (double)cnt;
                c->y[k++] = sy / (double)cnt;
                sx = sy = 0;
                cnt = 0;
            }
            cur = b;
            if (m > 0) {
                sx += pos[i];
                sy += s / (double)m;
                cnt++;
            }
        }
    }
    c->npts = k;

    /* Timings across ranks. */
    static const char *tn[RP_T_COUNT] = {"timing/setup_s", "timing/compute_s",
                                         "timing/comm_wait_s", "timing/merge_s",
                                         "timing/total_s"};
    for (int j = 0; j < RP_T_COUNT; j++) {
        c->tmin[j] = c->tmed[j] = c->tmax[j] = NAN;
        if (dset_f64(g, tn[j], &t, dt, &nt, &why) != RB_OK || nt != 1 || dt[0] == 0) {
            free(t);
            t = NULL;
            continue;
        }
        qsort(t, dt[0], sizeof *t, cmp_double);
        c->tmin[j] = t[0];
        c->tmax[j] = t[dt[0] - 1];
        c->tmed[j] = dt[0] % 2 ? t[dt[0] / 2] : 0.5 * (t[dt[0] / 2 - 1] + t[dt[0] / 2]);
        c->timing_ranks = (int64_t)dt[0];
        free(t);
        t = NULL;
    }
cleanup:
    free(pos);
    free(H);
    free(lse);
}

/* Read series y(x) from two 1-D datasets of the same length (missing: n = 0). */
static void series_read(hid_t g, const char *xp, const char *yp, rp_series *s)
{
    double *x = NULL, *y = NULL;
    hsize_t dx[3], dy[3];
    int nx = 0, ny = 0;
    const char *why = "";
    memset(s, 0, sizeof *s);
    if (dset_f64(g, xp, &x, dx, &nx, &why) == RB_OK && dset_f64(g, yp, &y, dy, &ny, &why) == RB_OK &&
        nx == 1 && ny == 1 && dx[0] == dy[0]) {
        s->x = x;
        s->y = y;
        s->n = (int64_t)dx[0];
        return;
    }
    free(x);
    free(y);
}

/* Metric series and summaries of a complete case (any group may be missing). */
static void case_read_metrics(hid_t g, rp_case *c)
{
    rp_metrics *m = &c->met;
    double v = NAN, *a = NULL;
    hsize_t dims[3];
    int nd = 0;
    const char *why = "";
    m->critical_pair = m->first_negative_B = -1;
    m->d_leaves_zero = m->entropy_last = m->needle_hit_rate = m->phase_err_max = NAN;
    m->entropy_err_max = m->floor_ratio_min = m->bound_ratio_max = NAN;
    series_read(g, "phase/by_distance/distance", "phase/by_distance/D", &c->s[RP_S_D]);
    series_read(g, "decay/by_distance/distance", "decay/by_distance/mean_score",
                &c->s[RP_S_DECAY]);
    series_read(g, "precision/position", "precision/phase_err_max", &c->s[RP_S_PRECISION]);
    series_read(g, "needles/distance", "needles/rank", &c->s[RP_S_NEEDLE]);
    c->has_metrics = c->s[RP_S_D].n > 0;
    {
        double *sh = NULL, *sd = NULL;
        hsize_t d2[3], d1[3];
        int n2 = 0, n1 = 0;
        if (dset_f64(g, "pair_share/share", &sh, d2, &n2, &why) == RB_OK && n2 == 2 &&
            dset_f64(g, "pair_share/distance", &sd, d1, &n1, &why) == RB_OK && n1 == 1 &&
            d1[0] == d2[0] && d2[0] > 0 && d2[1] > 0) {
            c->share = sh;
            c->share_dist = sd;
            c->share_bins = (int64_t)d2[0];
            c->share_pairs = (int64_t)d2[1];
        } else {
            free(sh);
            free(sd);
        }
    }
    hid_t sub;
    if (H5Lexists(g, "phase", H5P_DEFAULT) > 0 && H5Lexists(g, "phase/pairs", H5P_DEFAULT) > 0 &&
        (sub = H5Gopen2(g, "phase/pairs", H5P_DEFAULT)) >= 0) {
        if (attr_num(sub, "critical_pair", &v) == 1) m->critical_pair = (int64_t)v;
        H5Gclose(sub);
    }
    if (H5Lexists(g, "decay", H5P_DEFAULT) > 0 &&
        H5Lexists(g, "decay/by_distance", H5P_DEFAULT) > 0 &&
        (sub = H5Gopen2(g, "decay/by_distance", H5P_DEFAULT)) >= 0) {
        if (attr_num(sub, "first_negative_B", &v) == 1) m->first_negative_B = (int64_t)v;
        H5Gclose(sub);
    }
    H5Eclear2(H5E_DEFAULT);
    const rp_series *D = &c->s[RP_S_D];
    for (int64_t i = 0; i < D->n; i++)
        if (D->y[i] > 1e-9) {
            m->d_leaves_zero = D->x[i];
            break;
        }
    if (dset_f64(g, "entropy/by_position/mean", &a, dims, &nd, &why) == RB_OK && nd == 1 && dims[0])
        m->entropy_last = a[dims[0] - 1];
    free(a);
    a = NULL;
    if (dset_f64(g, "needles/hit", &a, dims, &nd, &why) == RB_OK && nd == 1 && dims[0]) {
        double h = 0;
        for (hsize_t i = 0; i < dims[0]; i++) h += a[i];
        m->needle_hit_rate = h / (double)dims[0];
    }
    free(a);
    a = NULL;
    static const struct {
        const char *path;
        int op; /* 0 max, 1 min, 2 max |x| */
        size_t off;
    } red[] = {{"precision/phase_err_max", 0, offsetof(rp_metrics, phase_err_max)},
               {"precision/entropy_err", 2, offsetof(rp_metrics, entropy_err_max)},
               {"softmax_floor/ratio", 1, offsetof(rp_metrics, floor_ratio_min)},
               {"precision/bound_ratio_max", 0, offsetof(rp_metrics, bound_ratio_max)}};
    for (size_t k = 0; k < sizeof red / sizeof red[0]; k++) {
        if (dset_f64(g, red[k].path, &a, dims, &nd, &why) == RB_OK && nd == 1 && dims[0]) {
            double r = red[k].op == 1 ? INFINITY : 0;
            for (hsize_t i = 0; i < dims[0]; i++) {
                double x = red[k].op == 2 ? fabs(a[i]) : a[i];
                if (isnan(x)) continue;
                r = red[k].op == 1 ? fmin(r, x) : fmax(r, x);
            }
            *(double *)((char *)m + red[k].off) = r;
        }
        free(a);
        a = NULL;
    }
    H5Eclear2(H5E_DEFAULT);
}

typedef struct {
    rp_file *f;
    int rc;
} iter_ctx;

static herr_t case_cb(hid_t cases, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    iter_ctx *ctx = data;
    rp_file *f = ctx->f;
    rp_case *nc = realloc(f->cases, (f->ncases + 1) * sizeof *nc);
    if (!nc) {
        ctx->rc = RB_ENOMEM;
        return -1;
    }
    f->cases = nc;
    rp_case *c = &f->cases[f->ncases++];
    memset(c, 0, sizeof *c);
    c->mean_entropy = c->mean_lse = NAN;
    for (int j = 0; j < RP_T_COUNT; j++)
        c->tmin[j] = c->tmed[j] = c->tmax[j] = NAN;
    c->name = strdup(name);
    if (!c->name) {
        ctx->rc = RB_ENOMEM;
        return -1;
    }
    H5O_info_t oi;
    hid_t g = H5I_INVALID_HID;
    if (H5Oget_info_by_name(cases, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_GROUP ||
        (g = H5Gopen2(cases, name, H5P_DEFAULT)) < 0) {
        H5Eclear2(H5E_DEFAULT);
        set_problem(c, "%s %s", "/cases entry", "is not a readable group");
        return 0;
    }
    attrs_read(g, &c->attrs);
    copy_attr(g, "method", c->method, sizeof c->method);
    copy_attr(g, "mode", c->mode, sizeof c->mode);
    copy_attr(g, "dataset", c->dataset, sizeof c->dataset);
    copy_attr(g, "shard_layout", c->shard_layout, sizeof c->shard_layout);
    copy_attr(g, "kernel", c->kernel, sizeof c->kernel);
    copy_attr(g, "dtype", c->dtype, sizeof c->dtype);
    double v = NAN;
    c->factor = attr_num(g, "factor", &v) == 1 ? v : NAN;
    c->seq_len = attr_num(g, "seq_len", &v) == 1 ? (int64_t)v : -1;
    c->heads = attr_num(g, "heads", &v) == 1 ? (int64_t)v : -1;
    c->n_rows = attr_num(g, "n_rows", &v) == 1 ? (int64_t)v : -1;
    c->head_dim = attr_num(g, "head_dim", &v) == 1 ? (int64_t)v : -1;
    c->threads = attr_num(g, "threads", &v) == 1 ? (int64_t)v : -1;
    c->flops = attr_num(g, "flops", &v) == 1 ? v : NAN;
    int cr = attr_num(g, "complete", &v);
    c->complete = cr == 1 && v == 1;
    if (!c->complete)
        set_problem(c, "%s%s", "incomplete (no complete=1: interrupted run)", "");
    else {
        case_read_rows(g, c);
        case_read_metrics(g, c);
    }
    H5Gclose(g);
    H5Eclear2(H5E_DEFAULT);
    return 0;
}

/* Sum of a per-rank peak dataset ([nranks] float64); leaves *sum alone if absent. */
static void peaks_read(hid_t g, const char *name, double *sum, int64_t *nranks)
{
    double *v = NULL;
    hsize_t dims[3];
    int nd = 0;
    const char *why = "";
    if (dset_f64(g, name, &v, dims, &nd, &why) == RB_OK && nd == 1 && dims[0] > 0) {
        double s = 0;
        for (hsize_t i = 0; i < dims[0]; i++) s += v[i];
        *sum = s;
        *nranks = (int64_t)dims[0];
    }
    free(v);
    H5Eclear2(H5E_DEFAULT);
}

/* ---- file -------------------------------------------------------------------------- */

/* rp_file_read: see report_int.h. */
int rp_file_read(const char *path, rp_file *f, char *err, size_t errlen)
{
    int rc = RB_OK;
    hid_t fid = H5I_INVALID_HID, g = H5I_INVALID_HID;
    char *fmt = NULL;
    h5msg m;
    struct stat st;
    memset(f, 0, sizeof *f);
    f->peak_gflops = f->triad_gbps = NAN;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (!path || !*path)
        return rb_errf(err, errlen, RB_EINVAL, "report: no results file given");
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return rb_errf(err, errlen, RB_EIO, "%s: %s", path, strerror(errno));
    fclose(probe);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return rb_errf(err, errlen, RB_EIO, "%s: not a regular file", path);
    if (st.st_size == 0)
        return rb_errf(err, errlen, RB_EFORMAT, "%s: empty file, not a ropebench results file",
                       path);
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        h5_last(&m);
        return rb_errf(err, errlen, RB_EFORMAT,
                       "%s: not an HDF5 file, so not a ropebench results file", path);
    }
    fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid < 0) {
        rc = rb_errf(err, errlen, RB_EIO, "%s: cannot open HDF5 file (truncated or damaged?): %s",
                     path, h5_last(&m));
        goto cleanup;
    }
    /* Format checks before anything else is read. */
    int s = attr_str(fid, "format", &fmt);
    if (s == 0 || s == RB_EFORMAT) {
        rc = rb_errf(err, errlen, RB_EFORMAT,
                     "%s: not a ropebench results file (no format attribute)", path);
        goto cleanup;
    }
    if (s < 0) {
        rc = rb_errf(err, errlen, RB_EIO,
                     "%s: cannot read the format attribute (truncated or damaged?)", path);
        goto cleanup;
    }
    if (strcmp(fmt, "ropebench") != 0) {
        char shown[48];
        printable(shown, sizeof shown, fmt);
        rc = rb_errf(err, errlen, RB_EFORMAT,
                     "%s: not a ropebench results file (format is \"%s\")", path, shown);
        goto cleanup;
    }
    double ver = NAN;
    s = attr_num(fid, "format_version", &ver);
    if (s != 1) {
        rc = rb_errf(err, errlen, RB_EFORMAT,
                     "%s: not a ropebench results file (no numeric format_version attribute)",
                     path);
        goto cleanup;
    }
    if (ver != 1) {
        rc = rb_errf(err, errlen, RB_EFORMAT,
                     "%s: unsupported ropebench format_version %g (this build reads 1)",
                     path, ver);
        goto cleanup;
    }
    f->path = strdup(path);
    if (!f->path || attrs_read(fid, &f->root) != RB_OK) {
        rc = rb_errf(err, errlen, RB_EIO, "%s: cannot read the root attributes (damaged?)",
                     path);
        goto cleanup;
    }
    if (H5Lexists(fid, "/provenance", H5P_DEFAULT) > 0 &&
        (g = H5Gopen2(fid, "/provenance", H5P_DEFAULT)) >= 0) {
        attrs_read(g, &f->prov);
        dset_strings(g, "rank_host", &f->rank_host, &f->nrank_host);
        dset_strings(g, "rank_binding", &f->rank_binding, &f->nrank_binding);
        dset_strings(g, "hosts", &f->hosts, &f->nhosts);
        strings_lengths(g, "topology_xml", &f->topo_xml_len, &f->ntopo);
        f->peak_gflops = f->triad_gbps = NAN;
        peaks_read(g, "peak_fma_gflops", &f->peak_gflops, &f->peak_ranks);
        peaks_read(g, "triad_gbps", &f->triad_gbps, &f->peak_ranks);
        H5Gclose(g);
        g = H5I_INVALID_HID;
    }
    H5Eclear2(H5E_DEFAULT);
    if (H5Lexists(fid, "/cases", H5P_DEFAULT) > 0 &&
        (g = H5Gopen2(fid, "/cases", H5P_DEFAULT)) >= 0) {
        iter_ctx ctx = {f, RB_OK};
        hsize_t idx = 0;
        herr_t e = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, case_cb, &ctx);
        if (ctx.rc != RB_OK || e < 0) {
            rc = rb_errf(err, errlen, ctx.rc != RB_OK ? ctx.rc : RB_EIO,
                         "%s: cannot list /cases (%s)", path,
                         ctx.rc == RB_ENOMEM ? "out of memory" : h5_last(&m));
            goto cleanup;
        }
    }
    H5Eclear2(H5E_DEFAULT);
cleanup:
    free(fmt);
    if (g >= 0)
        H5Gclose(g);
    if (fid >= 0 && H5Fclose(fid) < 0 && rc == RB_OK)
        rc = rb_errf(err, errlen, RB_EIO, "%s: close failed: %s", path, h5_last(&m));
    H5Eclear2(H5E_DEFAULT);
    if (rc != RB_OK)
        rp_file_free(f);
    return rc;
}

static void strv_free(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

/* rp_file_free: see report_int.h. */
void rp_file_free(rp_file *f)
{
    if (!f)
        return;
    free(f->path);
    attrs_free(&f->root);
    attrs_free(&f->prov);
    strv_free(f->rank_host, f->nrank_host);
    strv_free(f->rank_binding, f->nrank_binding);
    strv_free(f->hosts, f->nhosts);
    free(f->topo_xml_len);
    for (size_t i = 0; i < f->ncases; i++) {
        rp_case *c = &f->cases[i];
        free(c->name);
        attrs_free(&c->attrs);
        free(c->problem);
        free(c->x);
        free(c->y);
        for (int k = 0; k < RP_S_COUNT; k++) {
            free(c->s[k].x);
            free(c->s[k].y);
        }
        free(c->share);
        free(c->share_dist);
    }
    free(f->cases);
    memset(f, 0, sizeof *f);
}
