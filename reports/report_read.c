/* report_read.c — reads a ropebench results file (serial HDF5, read-only) into an rp_file for the report; never crashes on a damaged file. */
#include <errno.h>
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* rp_printable: see report_int.h. */
void rp_printable(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = (src[i] >= 32 && src[i] < 127) ? src[i] : '?';
    if (len)
        dst[i] = '\0';
}

/* printable: rp_printable of at most 40 characters (a value from the file in an error
 * line). */
static void printable(char *dst, size_t len, const char *src)
{
    rp_printable(dst, len < 41 ? len : 41, src);
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
        /* the memory type takes the file's character set (h5py writes UTF-8): HDF5
         * converts no strings between ASCII and UTF-8 */
        if ((mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Tset_cset(mt, H5Tget_cset(t)) < 0 || H5Aread(a, mt, &v) < 0) {
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

/* The walk over a file's links before anything is read (walk_file): depth first, at
 * most RP_WALK_DEPTH groups deep and RP_WALK_LINKS links in all, every object once.
 * ropebench writes a tree (groups at most 4 deep, each object under one name) with no
 * link into another file; anything else is refused by name. HDF5's own H5Lvisit
 * recursed once per level (a file of 15,000 nested groups overflowed the stack) and
 * let one group be reached under many names (each hard link a case of its own). */
#define RP_WALK_DEPTH 16
#define RP_WALK_LINKS 4000000
typedef struct {
    char path[512];     /* the link being looked at, from the root */
    const char *why;    /* set when the walk stops on a refusal */
    int depth;
    size_t links;
    haddr_t *seen;      /* addresses of the objects met, open addressing */
    size_t cap, nseen;
    int oom;
} walk_ctx;

/* 1 if addr was met before (else records it); -1 without memory. */
static int walk_seen(walk_ctx *w, haddr_t addr)
{
    if (2 * (w->nseen + 1) > w->cap) {
        const size_t cap = w->cap ? 2 * w->cap : 1024;
        haddr_t *t = malloc(cap * sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < cap; i++) t[i] = HADDR_UNDEF;
        for (size_t i = 0; i < w->cap; i++) {
            if (w->seen[i] == HADDR_UNDEF) continue;
            size_t h = (size_t)(w->seen[i] * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (t[h] != HADDR_UNDEF) h = (h + 1) & (cap - 1);
            t[h] = w->seen[i];
        }
        free(w->seen);
        w->seen = t;
        w->cap = cap;
    }
    size_t h = (size_t)(addr * 0x9E3779B97F4A7C15ull) & (w->cap - 1);
    for (; w->seen[h] != HADDR_UNDEF; h = (h + 1) & (w->cap - 1))
        if (w->seen[h] == addr)
            return 1;
    w->seen[h] = addr;
    w->nseen++;
    return 0;
}

static herr_t link_cb(hid_t g, const char *name, const H5L_info_t *info, void *op)
{
    walk_ctx *w = op;
    const size_t at = strlen(w->path);
    snprintf(w->path + at, sizeof w->path - at, "/%s", name);
    herr_t r = 0;
    if (++w->links > RP_WALK_LINKS) {
        w->why = "more links than a results file holds";
        return 1;
    }
    if (info->type == H5L_TYPE_SOFT) { /* (a name for another path, not followed) */
        w->path[at] = '\0';
        return 0;
    }
    if (info->type != H5L_TYPE_HARD) {
        w->why = "a link into another file";
        return 1;
    }
    H5O_info_t oi;
    if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0)
        return -1;
    const int s = walk_seen(w, oi.addr);
    if (s < 0) {
        w->oom = 1;
        return -1;
    }
    if (s) {
        w->why = "a second name for an object met before";
        return 1;
    }
    if (oi.type == H5O_TYPE_GROUP) {
        if (w->depth == RP_WALK_DEPTH) {
            w->why = "groups nested deeper than a results file's";
            return 1;
        }
        hid_t sub = H5Gopen2(g, name, H5P_DEFAULT);
        if (sub < 0)
            return -1;
        w->depth++;
        r = H5Literate(sub, H5_INDEX_NAME, H5_ITER_INC, NULL, link_cb, w);
        w->depth--;
        H5Gclose(sub);
    }
    if (r == 0)
        w->path[at] = '\0';
    return r;
}

/* A number read from the file as an integer: bad (e.g. -1) where it is not finite or
 * lies outside int64's range (a cast would be undefined there). */
static int64_t d2i(double v, int64_t bad)
{
    return v >= -9.2e18 && v <= 9.2e18 ? (int64_t)v : bad;
}

/* in_range: x lies in [lo, hi] (NaN never does), and is a whole number where `whole`. */
static int in_range(double x, double lo, double hi, int whole)
{
    return x >= lo && x <= hi && (!whole || x == floor(x));
}

/* 1 if dataset d keeps its data outside the results file (external raw storage, or a
 * virtual dataset mapping other files): the report reads only the file it was given. */
static int stored_outside(hid_t d)
{
    hid_t pl = H5Dget_create_plist(d);
    if (pl < 0)
        return 1;
    const int out = H5Pget_layout(pl) == H5D_VIRTUAL || H5Pget_external_count(pl) != 0;
    H5Pclose(pl);
    return out;
}

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
    if (stored_outside(d)) {
        *reason = "is stored outside the results file (external or virtual): not read";
        rc = RB_EFORMAT;
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
    /* a few bytes of a file must not make the report allocate gigabytes (a chunked
     * dataset with huge dims and no chunks written): a dataset holds at most 16 values
     * per byte of the file (ropebench writes 4 or 8 bytes per value, uncompressed) */
    {
        hsize_t fsize = 0;
        hid_t fid = H5Iget_file_id(loc);
        if (fid < 0 || H5Fget_filesize(fid, &fsize) < 0)
            fsize = 0;
        if (fid >= 0)
            H5Fclose(fid);
        if (total > ((hsize_t)1 << 20) && total / 16 > fsize) {
            *reason = "has more values than the file could hold (damaged?)";
            rc = RB_EFORMAT;
            goto cleanup;
        }
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

/* Read a 1-D string dataset (fixed or variable length, any character set) into
 * malloc'd strings; a missing dataset gives n = 0 and RB_OK, one that cannot be read
 * an error code with *out NULL and n = 0 (never some strings NULL). */
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
        (t = H5Dget_type(d)) < 0 || stored_outside(d)) {
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
        /* in the file's character set: HDF5 converts none to another (h5py writes
         * UTF-8, this project ASCII) */
        if (!vl || (mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Tset_cset(mt, H5Tget_cset(t)) < 0 ||
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
    if (rc != RB_OK && *out) { /* nothing half read reaches the caller */
        for (size_t i = 0; i < *n; i++)
            free((*out)[i]);
        free(*out);
        *out = NULL;
        *n = 0;
    }
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
    /* the attributes say what the datasets hold: throughput and the bytes of K and V
     * are computed from them, the means from the datasets */
    if (heads != c->heads || n != c->n_rows) {
        char why[160];
        snprintf(why, sizeof why, "holds [%lld][%lld], the attributes heads and n_rows "
                                  "say [%lld][%lld]",
                 (long long)heads, (long long)n, (long long)c->heads, (long long)c->n_rows);
        set_problem(c, "%s %s", "rows/entropy", why);
        goto cleanup;
    }
    for (int64_t i = 0; i < n; i++)
        if (!in_range(pos[i], 0, (double)c->seq_len - 1, 1)) {
            set_problem(c, "%s %s", "rows/position",
                        "has a value that is not a position of the case (0 .. seq_len-1)");
            goto cleanup;
        }
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
            if (i < n && pos[i] >= 1 && pos[i] <= 9e18) {
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

    /* Timings across ranks; the metrics' cost from the per-rank values */
    static const char *tn[RP_T_COUNT] = {"timing/setup_s", "timing/compute_s",
                                         "timing/comm_wait_s", "timing/merge_s",
                                         "timing/total_s", "timing/metrics_s"};
    double *tc = NULL;
    hsize_t ntc = 0, nranks = 0; /* every timing holds one value per rank */
    c->metrics_cost = NAN;
    for (int j = 0; j < RP_T_COUNT; j++) {
        c->tmin[j] = c->tmed[j] = c->tmax[j] = NAN;
        const int got = dset_f64(g, tn[j], &t, dt, &nt, &why);
        if (got != RB_OK && strcmp(why, "missing") == 0) { /* (metrics_s: older files) */
            free(t);
            t = NULL;
            continue;
        }
        if (got != RB_OK || nt != 1 || dt[0] == 0) { /* there, but not a time per rank */
            set_problem(c, "%s %s", tn[j],
                        got != RB_OK ? why : "is not one value per rank (1-D, not empty)");
            free(t);
            free(tc);
            goto cleanup;
        }
        if (nranks && dt[0] != nranks) {
            char why[128];
            snprintf(why, sizeof why, "has %llu values, the timings before it %llu (one "
                                      "per rank)",
                     (unsigned long long)dt[0], (unsigned long long)nranks);
            set_problem(c, "%s %s", tn[j], why);
            free(t);
            free(tc);
            goto cleanup;
        }
        nranks = dt[0];
        for (hsize_t r = 0; r < dt[0]; r++)
            if (!(isfinite(t[r]) && t[r] >= 0)) {
                set_problem(c, "%s %s", tn[j], "has a negative or non-finite time");
                free(t);
                free(tc);
                goto cleanup;
            }
        if (j == RP_T_COMPUTE && (tc = malloc(dt[0] * sizeof *tc)) != NULL) {
            memcpy(tc, t, dt[0] * sizeof *tc);
            ntc = dt[0];
        }
        if (j == RP_T_METRICS && tc && ntc == dt[0]) {
            /* the ranks meet at the end of each part, so each part lasts as long as its
             * slowest rank: max over r of (compute + metrics) against max of compute */
            double on = 0.0, off = 0.0;
            int ok = 1;
            for (hsize_t r = 0; r < ntc; r++) {
                ok = ok && isfinite(tc[r]) && tc[r] >= 0 && isfinite(t[r]) && t[r] >= 0;
                off = tc[r] > off ? tc[r] : off;
            }
            /* each term over off first: compute + metrics may overflow where neither does */
            for (hsize_t r = 0; ok && off > 0 && r < ntc; r++)
                on = tc[r] / off + t[r] / off > on ? tc[r] / off + t[r] / off : on;
            c->metrics_cost = ok && off > 0 ? on : NAN;
        }
        qsort(t, dt[0], sizeof *t, cmp_double);
        c->tmin[j] = t[0];
        c->tmax[j] = t[dt[0] - 1];
        c->tmed[j] = dt[0] % 2 ? t[dt[0] / 2]
                               : t[dt[0] / 2 - 1] + 0.5 * (t[dt[0] / 2] - t[dt[0] / 2 - 1]);
        if (j != RP_T_METRICS) /* the attention's timings say how many ranks ran */
            c->timing_ranks = (int64_t)dt[0];
        free(t);
        t = NULL;
    }
    free(tc);
cleanup:
    free(pos);
    free(H);
    free(lse);
}

/* rp_tab_specs: see report_int.h (dataset names as bench/metrics.c writes them). */
const rp_tab_spec rp_tab_specs[RP_TAB_COUNT] = {
    [RP_TAB_PAIRS] = {"phase/pairs", 8, {"=j", "inv_freq_base", "inv_freq", "wavelength",
                                          "trained_span", "max_phase", "turns", "ood"}},
    [RP_TAB_PHASE] = {"phase/by_distance", 7, {"distance", "D", "D_high", "D_mid", "D_low",
                                                "ood_frac_count", "ood_frac_energy"}},
    [RP_TAB_DECAY] = {"decay/by_distance", 6, {"distance", "count", "mean_score",
                                                "std_score", "roformer_bound", "B"}},
    [RP_TAB_SHARE] = {"pair_share", 7, {"distance", "weight_sum", "=top_pair", "=top_share",
                                         "=high", "=mid", "=low"}},
    [RP_TAB_NEEDLES] = {"needles", 10, {"head", "query_pos", "needle_pos", "distance",
                                         "score", "mass", "rank", "hit", "rank_haystack",
                                         "hit_haystack"}},
    [RP_TAB_PRECISION] = {"precision", 6, {"position", "phase_err_max", "score_err_max",
                                            "entropy_err", "bound_ratio_max",
                                            "phase_err_mean"}},
    [RP_TAB_FLOOR] = {"softmax_floor", 4, {"position", "min_weight_times_n", "floor",
                                            "ratio"}},
    [RP_TAB_ENTROPY] = {"entropy/by_position", 7, {"position", "count", "mean", "min", "max",
                                                    "std", "mean_normalized"}},
    [RP_TAB_FLOOR_POS] = {"softmax_floor_by_position", 6, {"position", "bin_start", "bin_end",
                                                            "count", "min_ratio",
                                                            "min_weight_times_n"}},
};

/* rp_bench_spec: see report_int.h. */
const rp_tab_spec rp_bench_spec = {"bench", 11, {"head_dim", "seq_len", "threads", "median_s",
                                                 "gflops", "gbps", "fraction_of_peak", "cv",
                                                 "overlap_ceiling", "calls_per_rep", "n_rows"}};

/* rp_bench_breakdown_spec: see report_int.h. */
const rp_tab_spec rp_bench_breakdown_spec = {
    "bench/probe_breakdown", 11,
    {"row", "rows_min", "rows_max", "blocks", "keys", "pairs", "s", "qk_s", "softmax_s", "pv_s",
     "call_s"}};

static void tab_free(rp_tab *t)
{
    for (int k = 0; k < RP_TAB_MAXCOL; k++)
        free(t->col[k]);
    memset(t, 0, sizeof *t);
}

/* Read the columns of spec under loc into t. The length n comes from the first stored
 * (non-derived) column, which must exist; every other stored column must be 1-D of
 * length n or is NaN-filled when missing; derived columns ('=') are NaN-filled for the
 * caller to compute, and "=j" is the row index. Any mismatch leaves t empty. */
static void tab_read(hid_t loc, const rp_tab_spec *spec, rp_tab *t)
{
    char path[160];
    hsize_t dims[3];
    int nd = 0, first = -1;
    const char *why = "";
    memset(t, 0, sizeof *t);
    t->n = -1;
    for (int k = 0; k < spec->ncol; k++) {
        if (spec->cols[k][0] == '=')
            continue;
        snprintf(path, sizeof path, "%s/%s", spec->group, spec->cols[k]);
        if (H5Lexists(loc, spec->group, H5P_DEFAULT) <= 0 ||
            dset_f64(loc, path, &t->col[k], dims, &nd, &why) != RB_OK) {
            free(t->col[k]);
            t->col[k] = NULL;
            if (first < 0)
                goto fail;
            continue;
        }
        if (nd != 1 || (first >= 0 && (int64_t)dims[0] != t->n))
            goto fail;
        if (first < 0) {
            first = k;
            t->n = (int64_t)dims[0];
        }
    }
    if (first < 0 || t->n <= 0)
        goto fail;
    for (int k = 0; k < spec->ncol; k++) {
        if (t->col[k])
            continue;
        if (!(t->col[k] = malloc((size_t)t->n * sizeof(double))))
            goto fail;
        for (int64_t i = 0; i < t->n; i++)
            t->col[k][i] = strcmp(spec->cols[k], "=j") == 0 ? (double)i : NAN;
    }
    H5Eclear2(H5E_DEFAULT);
    return;
fail:
    tab_free(t);
    H5Eclear2(H5E_DEFAULT);
}

/* Summary of pair_share per distance bin (RP_TAB_SHARE): the pair with the largest
 * |share| and that share, and the sum of the shares of the pairs of each YaRN band
 * (phase/by_distance/band: 0 high, 1 mid, 2 low frequency). */
static void share_summary(hid_t g, rp_case *c)
{
    rp_tab *t = &c->tab[RP_TAB_SHARE];
    double *band = NULL;
    hsize_t dims[3];
    int nd = 0;
    const char *why = "";
    if (!c->share || t->n != c->share_bins) {
        tab_free(t);
        return;
    }
    if (dset_f64(g, "phase/by_distance/band", &band, dims, &nd, &why) != RB_OK || nd != 1 ||
        (int64_t)dims[0] != c->share_pairs) {
        free(band);
        band = NULL;
    }
    for (int64_t b = 0; b < t->n; b++) {
        const double *row = c->share + b * c->share_pairs;
        int64_t top = -1;
        double sum[3] = {0, 0, 0};
        int seen[3] = {0, 0, 0};
        for (int64_t j = 0; j < c->share_pairs; j++) {
            if (!isfinite(row[j]))
                continue;
            if (top < 0 || fabs(row[j]) > fabs(row[top]))
                top = j;
            int k = band && band[j] >= 0 && band[j] < 3 ? (int)band[j] : -1;
            if (k >= 0 && k < 3) {
                sum[k] += row[j];
                seen[k] = 1;
            }
        }
        t->col[RP_SHARE_TOP_PAIR][b] = top < 0 ? NAN : (double)top;
        t->col[RP_SHARE_TOP][b] = top < 0 ? NAN : row[top];
        for (int k = 0; k < 3; k++)
            t->col[RP_SHARE_HIGH + k][b] = seen[k] ? sum[k] : NAN;
    }
    free(band);
    H5Eclear2(H5E_DEFAULT);
}

/* Largest (op 0), smallest (op 1) or largest absolute (op 2) non-NaN value of a column;
 * NaN if the table is absent or holds only NaN. */
static double col_reduce(const rp_tab *t, int col, int op)
{
    double r = NAN;
    for (int64_t i = 0; i < t->n; i++) {
        double x = op == 2 ? fabs(t->col[col][i]) : t->col[col][i];
        if (isnan(x))
            continue;
        r = isnan(r) ? x : op == 1 ? fmin(r, x) : fmax(r, x);
    }
    return r;
}

/* sub_attr_num: attr_num of attribute `name` on the group `path` under g (whose first
 * component is `top`, checked first so that a missing group is no HDF5 error); 0 when
 * the group or attribute is missing. */
static int sub_attr_num(hid_t g, const char *top, const char *path, const char *name,
                        double *v)
{
    int rc = 0;
    hid_t sub;
    if (H5Lexists(g, top, H5P_DEFAULT) > 0 && H5Lexists(g, path, H5P_DEFAULT) > 0 &&
        (sub = H5Gopen2(g, path, H5P_DEFAULT)) >= 0) {
        rc = attr_num(sub, name, v);
        H5Gclose(sub);
    }
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* Metric tables and summaries of a complete case (any group may be missing). */
static void case_read_metrics(hid_t g, rp_case *c)
{
    rp_metrics *m = &c->met;
    double v = NAN, *a = NULL;
    hsize_t dims[3];
    int nd = 0;
    const char *why = "";
    m->critical_pair = -1;
    m->first_negative_B = -2;
    m->d_exact = -2;
    m->d_leaves_zero = m->d_zero_before = m->entropy_last = m->needle_hit_rate = m->needle_hit_rate_all = m->phase_err_max = NAN;
    m->entropy_err_max = m->floor_ratio_min = m->bound_ratio_max = NAN;
    for (int k = 0; k < RP_TAB_COUNT; k++)
        tab_read(g, &rp_tab_specs[k], &c->tab[k]);
    c->has_metrics = c->tab[RP_TAB_PHASE].n > 0;
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
    share_summary(g, c);
    /* distances: a whole number >= 1, or -1 for "none" as runs write it; anything
     * else (NaN, -3, 2.5: a damaged file) reads as absent (-2, shown n/a), not as
     * "never" */
    if (sub_attr_num(g, "phase", "phase/pairs", "critical_pair", &v) == 1)
        m->critical_pair = in_range(v, 0, 9.2e18, 1) ? (int64_t)v : -1;
    if (sub_attr_num(g, "decay", "decay/by_distance", "first_negative_B", &v) == 1)
        m->first_negative_B = v == -1 ? -1 : in_range(v, 1, 9.2e18, 1) ? (int64_t)v : -2;
    if (sub_attr_num(g, "phase", "phase/by_distance", "D_leaves_zero", &v) == 1)
        m->d_exact = v == -1 ? -1 : in_range(v, 1, 9.2e18, 1) ? (int64_t)v : -2;
    const rp_tab *D = &c->tab[RP_TAB_PHASE];
    for (int64_t i = 0; i < D->n; i++)
        if (D->col[RP_PHASE_D][i] > RB_METRICS_D_ZERO_TOL) {
            m->d_leaves_zero = D->col[RP_PHASE_DIST][i];
            m->d_zero_before = i > 0 ? D->col[RP_PHASE_DIST][i - 1] : NAN;
            break;
        }
    if (dset_f64(g, "entropy/by_position/mean", &a, dims, &nd, &why) == RB_OK && nd == 1 && dims[0])
        m->entropy_last = a[dims[0] - 1];
    free(a);
    rp_tab *N = &c->tab[RP_TAB_NEEDLES];
    if (N->n > 0) {
        /* files written before the haystack columns: derived from the others, as the
         * writer derives them */
        if (isnan(N->col[RP_NEEDLE_RANK_HAY][0]) &&
            rb_metrics_needle_haystack_rank(N->n, N->col[RP_NEEDLE_HEAD], N->col[RP_NEEDLE_QPOS],
                                            N->col[RP_NEEDLE_NPOS], N->col[RP_NEEDLE_SCORE],
                                            N->col[RP_NEEDLE_RANK],
                                            N->col[RP_NEEDLE_RANK_HAY]) == RB_OK)
            for (int64_t i = 0; i < N->n; i++)
                N->col[RP_NEEDLE_HIT_HAY][i] = N->col[RP_NEEDLE_RANK_HAY][i] == 1.0;
        double h = 0, ha = 0;
        for (int64_t i = 0; i < N->n; i++) {
            h += N->col[RP_NEEDLE_HIT_HAY][i];
            ha += N->col[RP_NEEDLE_HIT][i];
        }
        m->needle_hit_rate = h / (double)N->n;
        m->needle_hit_rate_all = ha / (double)N->n;
    }
    m->phase_err_max = col_reduce(&c->tab[RP_TAB_PRECISION], RP_PREC_PHASE, 0);
    m->entropy_err_max = col_reduce(&c->tab[RP_TAB_PRECISION], RP_PREC_ENTROPY, 2);
    m->bound_ratio_max = col_reduce(&c->tab[RP_TAB_PRECISION], RP_PREC_BOUND, 0);
    m->floor_ratio_min = col_reduce(&c->tab[RP_TAB_FLOOR], RP_FLOOR_RATIO, 1);
    H5Eclear2(H5E_DEFAULT);
}

/* The numeric attributes of a case group, read once each by case_cb, and what a finished
 * case holds in them (docs/results-format.md, "Case groups"): a value in [lo, hi], whole
 * where `whole`; `need` 1: always there, 0: absent in files that predate it (the tables
 * show n/a then) but in range when present. `why` names the fault (NULL: "is missing,
 * not a whole number, or outside lo .. hi"). */
enum { CA_SEQ, CA_HEADS, CA_HD, CA_NROWS, CA_THREADS, CA_FLOPS, CA_PEAK, CA_TRIAD, CA_FACTOR,
       CA_N };
static const struct {
    const char *name;
    double lo, hi;
    int whole, need;
    const char *why;
} case_nums[CA_N] = {
    [CA_SEQ] = {"seq_len", 1, 9e15, 1, 1, NULL},
    [CA_HEADS] = {"heads", 1, 1e9, 1, 1, NULL},
    [CA_HD] = {"head_dim", 2, 1e9, 1, 1, NULL},
    [CA_NROWS] = {"n_rows", 0, 9e15, 1, 1, NULL},
    [CA_THREADS] = {"threads", 1, 1e9, 1, 0, NULL},
    [CA_FLOPS] = {"flops", 0, DBL_MAX, 0, 0, "is not a number, negative or not finite"},
    [CA_PEAK] = {"peak_fma_gflops", DBL_MIN, DBL_MAX, 0, 0, "is not a positive number"},
    [CA_TRIAD] = {"triad_gbps", DBL_MIN, DBL_MAX, 0, 0, "is not a positive number"},
    /* scaling.factor's range; 1 for method none (case_check_attrs) */
    [CA_FACTOR] = {"factor", 1, 1e6, 0, 0, "is not a number in [1, 1e6] (1 for method none)"},
};

/* case_check_attrs: the string attributes every finished case carries, and the numeric
 * ones as case_cb read them (num[k]: the value, st[k]: attr_num's status), each present
 * and in range, so that no table shows a stand-in (a seq_len of -1, a blank method, a
 * negative GFLOP/s); the first that is not makes the case a problem, which the report
 * lists among the cases it could not read. */
static void case_check_attrs(rp_case *c, const double num[CA_N], const int st[CA_N])
{
    static const char *const strs[] = {"method", "mode", "dataset", "kernel", "dtype"};
    const char *vals[] = {c->method, c->mode, c->dataset, c->kernel, c->dtype};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (!vals[i][0]) {
            set_problem(c, "attribute %s %s", strs[i], "is missing, empty or not a string");
            return;
        }
    if (strcmp(c->mode, "full") != 0 && strcmp(c->mode, "probe") != 0) {
        set_problem(c, "%s %s", "attribute mode", "is neither \"full\" nor \"probe\"");
        return;
    }
    if (rb_rope_method_parse(c->method) < 0) {
        char why[200] = "is not a method ropebench knows (";
        for (int m = 0; m < RB_ROPE_COUNT; m++)
            snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", m ? ", " : "",
                     rb_rope_method_name((rb_rope_method)m));
        snprintf(why + strlen(why), sizeof why - strlen(why), ")");
        set_problem(c, "%s %s", "attribute method", why);
        return;
    }
    for (int k = 0; k < CA_N; k++) {
        if ((st[k] == 0 && !case_nums[k].need) ||
            (st[k] == 1 && in_range(num[k], case_nums[k].lo, case_nums[k].hi,
                                    case_nums[k].whole)))
            continue;
        char what[96], why[96];
        snprintf(what, sizeof what, "attribute %s", case_nums[k].name);
        if (case_nums[k].why)
            snprintf(why, sizeof why, "%s", case_nums[k].why);
        else
            snprintf(why, sizeof why, "is missing, not a whole number, or outside %g .. %g",
                     case_nums[k].lo, case_nums[k].hi);
        set_problem(c, "%s %s", what, why);
        return;
    }
    if (st[CA_FACTOR] == 1 && num[CA_FACTOR] != 1 && strcmp(c->method, "none") == 0)
        set_problem(c, "%s %s", "attribute factor", case_nums[CA_FACTOR].why);
}

/* needles_check: the needles table of a case in its ranges (head in [0, heads),
 * positions in [0, seq_len), ranks >= 1, hits 0 or 1, mass finite and >= 0: not <= 1,
 * since a mass is exp(s - lse) with the kernel's lse, unclamped, and reads 1.000003 or
 * more where the needle holds nearly all the attention, docs/metrics.md); NaN is let
 * through in the haystack columns, which files from before them lack. */
static void needles_check(rp_case *c)
{
    const rp_tab *N = &c->tab[RP_TAB_NEEDLES];
    const double L = (double)c->seq_len, H = (double)c->heads;
    const struct {
        int col;
        const char *name;
        double lo, hi;
        int whole, nan_ok;
    } cols[] = {{RP_NEEDLE_HEAD, "head", 0, H - 1, 1, 0},
                {RP_NEEDLE_QPOS, "query_pos", 0, L - 1, 1, 0},
                {RP_NEEDLE_NPOS, "needle_pos", 0, L - 1, 1, 0},
                {RP_NEEDLE_MASS, "mass", 0, DBL_MAX, 0, 0},
                {RP_NEEDLE_RANK, "rank", 1, 9e15, 1, 0},
                {RP_NEEDLE_HIT, "hit", 0, 1, 1, 0},
                {RP_NEEDLE_RANK_HAY, "rank_haystack", 1, 9e15, 1, 1},
                {RP_NEEDLE_HIT_HAY, "hit_haystack", 0, 1, 1, 1}};
    for (size_t k = 0; k < sizeof cols / sizeof *cols; k++)
        for (int64_t i = 0; i < N->n; i++) {
            const double x = N->col[cols[k].col][i];
            if ((cols[k].nan_ok && isnan(x)) ||
                in_range(x, cols[k].lo, cols[k].hi, cols[k].whole))
                continue;
            char what[96];
            snprintf(what, sizeof what, "needles/%s", cols[k].name);
            set_problem(c, "%s %s", what, "has a value outside its range");
            return;
        }
}

typedef struct {
    rp_file *f;
    int rc;
} iter_ctx;

static herr_t case_cb(hid_t cases, const char *name, const H5L_info_t *info, void *data)
{
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
    c->metrics_cost = NAN;
    c->name = strdup(name);
    if (!c->name) {
        ctx->rc = RB_ENOMEM;
        return -1;
    }
    /* a soft link: another name for a case (or for anything), which no run writes;
     * followed, each would be one more copy of its target in every table and plot, and
     * its data read once more (20,000 of them: 20 s) */
    if (info->type != H5L_TYPE_HARD) {
        set_problem(c, "%s %s", "/cases entry", "is a soft link, which no run writes (not "
                    "followed)");
        c->not_case = 1;
        return 0;
    }
    H5O_info_t oi;
    hid_t g = H5I_INVALID_HID;
    if (H5Oget_info_by_name(cases, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_GROUP ||
        (g = H5Gopen2(cases, name, H5P_DEFAULT)) < 0) {
        H5Eclear2(H5E_DEFAULT);
        set_problem(c, "%s %s", "/cases entry", "is not a readable group");
        c->not_case = 1;
        return 0;
    }
    attrs_read(g, &c->attrs);
    copy_attr(g, "method", c->method, sizeof c->method);
    copy_attr(g, "attention_factor_setting", c->af_setting, sizeof c->af_setting);
    copy_attr(g, "mode", c->mode, sizeof c->mode);
    copy_attr(g, "dataset", c->dataset, sizeof c->dataset);
    copy_attr(g, "shard_layout", c->shard_layout, sizeof c->shard_layout);
    copy_attr(g, "kernel", c->kernel, sizeof c->kernel);
    copy_attr(g, "dtype", c->dtype, sizeof c->dtype);
    double v = NAN, num[CA_N];
    int st[CA_N];
    for (int k = 0; k < CA_N; k++) {
        st[k] = attr_num(g, case_nums[k].name, &num[k]);
        if (st[k] != 1)
            num[k] = NAN;
    }
    c->factor = num[CA_FACTOR];
    c->seq_len = d2i(num[CA_SEQ], -1);
    c->heads = d2i(num[CA_HEADS], -1);
    c->n_rows = d2i(num[CA_NROWS], -1);
    c->head_dim = d2i(num[CA_HD], -1);
    c->threads = d2i(num[CA_THREADS], -1);
    c->flops = num[CA_FLOPS];
    c->peak_gflops = num[CA_PEAK];
    c->triad_gbps = num[CA_TRIAD];
    int cr = attr_num(g, "complete", &v);
    c->complete = cr == 1 && v == 1;
    if (!c->complete)
        set_problem(c, "%s%s", "incomplete (no complete=1: interrupted run)", "");
    else {
        case_check_attrs(c, num, st);
        if (!c->problem)
            case_read_rows(g, c);
        if (!c->problem)
            case_read_metrics(g, c);
        if (!c->problem)
            needles_check(c);
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
    if (dset_f64(g, name, &v, dims, &nd, &why) == RB_OK && nd == 1 && dims[0] > 0 &&
        (*nranks <= 0 || (int64_t)dims[0] == *nranks)) {
        /* every rank's peak a finite positive number (as runs write them), else the
         * file holds no usable peaks: absent, not a sum of -5 and 1 or a NaN */
        double s = 0;
        hsize_t i = 0;
        for (; i < dims[0] && isfinite(v[i]) && v[i] > 0; i++) s += v[i];
        if (i == dims[0]) {
            *sum = s;
            *nranks = (int64_t)dims[0];
        }
    }
    free(v);
    H5Eclear2(H5E_DEFAULT);
}

/* ---- /bench ------------------------------------------------------------------------ */

static void strv_free(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

static void bench_free(rp_bench *b)
{
    strv_free(b->kernel, (size_t)b->t.n);
    strv_free(b->dtype, (size_t)b->t.n);
    strv_free(b->bench, (size_t)b->t.n);
    tab_free(&b->t);
    tab_free(&b->pb);
    attrs_free(&b->attrs);
    memset(b, 0, sizeof *b);
}

/* The /bench group of `ropebench bench -o`: numeric columns, the three string columns
 * (each as long as the numeric ones) and the attributes. Anything inconsistent leaves
 * it empty and b->unreadable set: the report then says so instead of a table. Its probe breakdown
 * (/bench/probe_breakdown, when there) goes to b->pb; a breakdown whose columns do not
 * agree leaves pb empty and the rest as read. */
static void bench_read(hid_t fid, rp_bench *b)
{
    hid_t g = H5I_INVALID_HID;
    size_t nk = 0, nd = 0, nb = 0;
    memset(b, 0, sizeof *b);
    if (H5Lexists(fid, "/bench", H5P_DEFAULT) <= 0)
        goto cleanup;
    b->unreadable = 1; /* until the table is whole */
    tab_read(fid, &rp_bench_spec, &b->t);
    if (b->t.n <= 0)
        goto cleanup;
    const int64_t n = b->t.n;
    b->t.n = 0; /* the string vectors are freed with this length: set once all are read */
    int ok = dset_strings(fid, "bench/kernel", &b->kernel, &nk) == RB_OK &&
             dset_strings(fid, "bench/dtype", &b->dtype, &nd) == RB_OK &&
             dset_strings(fid, "bench/bench", &b->bench, &nb) == RB_OK;
    if (!ok || (int64_t)nk != n || (int64_t)nd != n || (int64_t)nb != n) {
        strv_free(b->kernel, nk);
        strv_free(b->dtype, nd);
        strv_free(b->bench, nb);
        b->kernel = b->dtype = b->bench = NULL;
        tab_free(&b->t);
        goto cleanup;
    }
    b->t.n = n;
    b->unreadable = 0;
    if ((g = H5Gopen2(fid, "/bench", H5P_DEFAULT)) >= 0)
        attrs_read(g, &b->attrs);
    tab_read(fid, &rp_bench_breakdown_spec, &b->pb); /* (absent: pb empty) */
cleanup:
    if (g >= 0)
        H5Gclose(g);
    H5Eclear2(H5E_DEFAULT);
}

/* ---- file -------------------------------------------------------------------------- */

/* The HDF5 library (1.10.8, Debian 12) crashes on some damaged files instead of
 * returning an error: one corrupted byte in the size of a root attribute's string type
 * makes H5Aiterate2 free a half-built attribute table (SIGSEGV in H5A__close); opening
 * that attribute by name fails cleanly, but every walk over a group's attributes goes
 * through that table. While rp_file_read reads, SIGSEGV and SIGBUS therefore end the
 * process with one line naming the file (written before the read: a handler may only
 * write(2) and _exit) and exit status 2, as for any refused file, instead of a core
 * dump; nothing has been written by then. The previous handlers come back afterwards. */
#define RP_EXIT_DAMAGED 2 /* bench/rb_bench.h's RB_EXIT_USAGE: a file refused */
static char rp_crash_line[700];
static size_t rp_crash_len;

static void rp_crash(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, rp_crash_line, rp_crash_len);
    (void)w;
    _exit(RP_EXIT_DAMAGED);
}

static int rp_file_read_body(const char *path, rp_file *f, char *err, size_t errlen);

/* rp_file_read: see report_int.h. */
int rp_file_read(const char *path, rp_file *f, char *err, size_t errlen)
{
    const int n = snprintf(rp_crash_line, sizeof rp_crash_line,
                           "ropebench: %.560s: the HDF5 library crashed while reading it (a "
                           "damaged file); no report was written\n", path ? path : "");
    rp_crash_len = n < 0 ? 0 : (size_t)n < sizeof rp_crash_line ? (size_t)n
                                                                 : sizeof rp_crash_line - 1;
    struct sigaction sa, old_segv, old_bus;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rp_crash;
    sigemptyset(&sa.sa_mask);
    const int armed = sigaction(SIGSEGV, &sa, &old_segv) == 0;
    const int armed_bus = sigaction(SIGBUS, &sa, &old_bus) == 0;
    const int rc = rp_file_read_body(path, f, err, errlen);
    if (armed)
        sigaction(SIGSEGV, &old_segv, NULL);
    if (armed_bus)
        sigaction(SIGBUS, &old_bus, NULL);
    return rc;
}

static int rp_file_read_body(const char *path, rp_file *f, char *err, size_t errlen)
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
    /* stat first: opening a FIFO would wait for a writer */
    if (stat(path, &st) != 0)
        return rb_errf(err, errlen, RB_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return rb_errf(err, errlen, RB_EIO, "%s: not a regular file", path);
    FILE *probe = fopen(path, "rb");
    if (!probe)
        return rb_errf(err, errlen, RB_EIO, "%s: %s", path, strerror(errno));
    fclose(probe);
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
    /* links into other files are never followed: ropebench writes none, and the report
     * reads only the file it was given (an external link could name any file, or a FIFO
     * that blocks forever) */
    {
        walk_ctx w = {.path = ""};
        H5O_info_t root;
        const herr_t wr = H5Oget_info(fid, &root) < 0 || walk_seen(&w, root.addr) < 0
                              ? -1
                              : H5Literate(fid, H5_INDEX_NAME, H5_ITER_INC, NULL, link_cb, &w);
        free(w.seen);
        if (wr < 0 || w.why) {
            char shown[160];
            printable(shown, sizeof shown, w.path[0] ? w.path : "/");
            if (w.why)
                rc = rb_errf(err, errlen, RB_EFORMAT,
                             "%s: %s is %s: not a ropebench results file as written, not "
                             "read", path, shown, w.why);
            else
                rc = rb_errf(err, errlen, w.oom ? RB_ENOMEM : RB_EFORMAT,
                             "%s: cannot list the file's objects (%s, at %s)", path,
                             w.oom ? "out of memory" : "damaged?", shown);
            goto cleanup;
        }
        H5Eclear2(H5E_DEFAULT);
    }
    f->path = strdup(path);
    if (!f->path || attrs_read(fid, &f->root) != RB_OK) {
        rc = rb_errf(err, errlen, RB_EIO, "%s: cannot read the root attributes (damaged?)",
                     path);
        goto cleanup;
    }
    {
        double v = NAN;
        f->peak_threads = attr_num(fid, "threads_per_rank", &v) == 1 ? d2i(v, -1) : -1;
    }
    if (H5Lexists(fid, "/provenance", H5P_DEFAULT) > 0 &&
        (g = H5Gopen2(fid, "/provenance", H5P_DEFAULT)) >= 0) {
        attrs_read(g, &f->prov);
        dset_strings(g, "rank_host", &f->rank_host, &f->nrank_host);
        dset_strings(g, "rank_binding", &f->rank_binding, &f->nrank_binding);
        dset_strings(g, "hosts", &f->hosts, &f->nhosts);
        dset_strings(g, "planned_cases", &f->planned, &f->nplanned);
        strings_lengths(g, "topology_xml", &f->topo_xml_len, &f->ntopo);
        f->peak_gflops = f->triad_gbps = NAN;
        peaks_read(g, "peak_fma_gflops", &f->peak_gflops, &f->peak_ranks);
        peaks_read(g, "triad_gbps", &f->triad_gbps, &f->peak_ranks);
        H5Gclose(g);
        g = H5I_INVALID_HID;
    }
    H5Eclear2(H5E_DEFAULT);
    bench_read(fid, &f->bench);
    if (H5Lexists(fid, "/cases", H5P_DEFAULT) > 0) {
        H5O_info_t oi;
        if (H5Oget_info_by_name(fid, "/cases", &oi, H5P_DEFAULT) < 0 ||
            oi.type != H5O_TYPE_GROUP || (g = H5Gopen2(fid, "/cases", H5P_DEFAULT)) < 0) {
            rc = rb_errf(err, errlen, RB_EFORMAT, "%s: /cases is not a group (damaged?)",
                         path);
            goto cleanup;
        }
        iter_ctx ctx = {f, RB_OK};
        hsize_t idx = 0;
        herr_t e = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, case_cb, &ctx);
        if (ctx.rc != RB_OK || e < 0) {
            rc = rb_errf(err, errlen, ctx.rc != RB_OK ? ctx.rc : RB_EIO,
                         "%s: cannot list /cases (%s)", path,
                         ctx.rc == RB_ENOMEM ? "out of memory" : h5_last(&m));
            goto cleanup;
        }
        f->cases_sorted = 1;
        for (size_t i = 1; i < f->ncases && f->cases_sorted; i++)
            f->cases_sorted = strcmp(f->cases[i - 1].name, f->cases[i].name) < 0;
    }
    H5Eclear2(H5E_DEFAULT);
cleanup:
    free(fmt);
    if (g >= 0)
        H5Gclose(g);
    if (fid >= 0 && H5Fclose(fid) < 0 && rc == RB_OK)
        rc = rb_errf(err, errlen, RB_EIO, "%s: close failed: %s", path, h5_last(&m));
    H5Eclear2(H5E_DEFAULT);
    /* the bytes the report is made from, named exactly (a report shows "" as unknown) */
    if (rc == RB_OK && rp_sha256_file(path, f->sha256, &f->size) != RB_OK)
        f->size = -1;
    if (rc != RB_OK)
        rp_file_free(f);
    return rc;
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
    strv_free(f->planned, f->nplanned);
    free(f->topo_xml_len);
    bench_free(&f->bench);
    for (size_t i = 0; i < f->ncases; i++) {
        rp_case *c = &f->cases[i];
        free(c->name);
        attrs_free(&c->attrs);
        free(c->problem);
        free(c->x);
        free(c->y);
        for (int k = 0; k < RP_TAB_COUNT; k++)
            tab_free(&c->tab[k]);
        free(c->share);
        free(c->share_dist);
    }
    free(f->cases);
    memset(f, 0, sizeof *f);
}
