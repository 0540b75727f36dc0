/* file_hdf5.c — rows of any dataset through rb_dataset_open/read/close: generated kinds
 * via rb_dataset_fill, `file` read in parallel from HDF5 (MPI-IO driver, collective
 * hyperslab reads of each rank's rows). The only MPI and HDF5 code of datasets/. */
#include "rb_datasets.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "rb_kernels.h"
#include "rb_mpi.h"

/* Largest |value| the file dataset accepts (see the read's check). */
#define RB_FILE_MAX_ABS 1e15f

/* messages hold a path (file.path takes up to 4095 bytes) and a reason */
#define MSG_LEN 5120

static const char *const tensor_names[3] = {"q", "k", "v"};

struct rb_dataset_source {
    rb_dataset ds;
    char *path;   /* owned copy of ds.path (file) */
    MPI_Comm comm;
    int heads;
    int64_t seq_len;
    hid_t file, dset[3], dxpl;
};

/* agree_first: agree, where the failing rank whose key is lowest gives the message
 * (then the lowest rank among equal keys): with key = the failure's place in the data,
 * the message names the first bad value of the whole dataset, whatever the rank count
 * and layout. */
static int agree_first(MPI_Comm comm, int rc, int64_t key, const char *msg, char *err,
                       size_t errlen)
{
    int64_t mine = rc != RB_OK ? key : INT64_MAX, low;
    MPI_Allreduce(&mine, &low, 1, MPI_INT64_T, MPI_MIN, comm);
    if (low == INT64_MAX)
        return RB_OK;
    int rank, me, first;
    MPI_Comm_rank(comm, &rank);
    me = rc != RB_OK && mine == low ? rank : INT_MAX;
    MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, comm);
    char buf[MSG_LEN];
    int code = rc;
    snprintf(buf, sizeof buf, "%s", rank == first ? msg : "");
    MPI_Bcast(&code, 1, MPI_INT, first, comm);
    MPI_Bcast(buf, MSG_LEN, MPI_CHAR, first, comm);
    buf[MSG_LEN - 1] = '\0';
    return rb_errf(err, errlen, code, "%s", buf);
}

/* Collective agreement on a local result: if any rank failed, every rank returns the
 * code and message of the lowest failing rank (copied into err). */
static int agree(MPI_Comm comm, int rc, const char *msg, char *err, size_t errlen)
{
    return agree_first(comm, rc, 0, msg, err, errlen);
}

typedef struct {
    char desc[256];
    int found;
} h5_inner;

static herr_t h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    h5_inner *in = data;
    if (n == 0 && e && e->desc && e->desc[0]) {
        snprintf(in->desc, sizeof in->desc, "%s", e->desc);
        in->found = 1;
    }
    return 0;
}

/* h5_reason: ": " and HDF5's innermost message for the call that just failed (such
 * as "truncated file: eof = ..." or "inflate() failed"), or "" if it left none; the
 * error stack is cleared. */
static void h5_reason(char *buf, size_t len)
{
    h5_inner in = {{0}, 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_walk_cb, &in);
    H5Eclear2(H5E_DEFAULT);
    snprintf(buf, len, "%s%s", in.found ? ": " : "", in.desc);
}

/* external_name: where HDF5 looks for external raw-data file `ename` of dataset dset in
 * the file at `path` (HDF5 1.10: HDF5_EXTFILE_PREFIX, else the dataset access
 * property's prefix, "${ORIGIN}" at its start standing for the file's directory; none:
 * the name as it is, relative to the working directory, as is an absolute name). */
static void external_name(const char *path, hid_t dset, const char *ename, char *out,
                          size_t len)
{
    char pre[PATH_MAX] = "";
    const char *env = getenv("HDF5_EXTFILE_PREFIX");
    if (env && *env) { /* (an empty one is no prefix to HDF5: the property then) */
        snprintf(pre, sizeof pre, "%s", env);
    } else {
        const hid_t dapl = H5Dget_access_plist(dset);
        if (dapl < 0 || H5Pget_efile_prefix(dapl, pre, sizeof pre) < 0)
            pre[0] = '\0';
        if (dapl >= 0) H5Pclose(dapl);
    }
    if (ename[0] == '/' || !pre[0]) {
        snprintf(out, len, "%s", ename);
        return;
    }
    if (!strncmp(pre, "${ORIGIN}", 9)) {
        const char *slash = strrchr(path, '/');
        snprintf(out, len, "%.*s%s/%s", slash ? (int)(slash - path) : 1, slash ? path : ".",
                 pre + 9, ename);
    } else {
        snprintf(out, len, "%s/%s", pre, ename);
    }
}

/* float_fields: whether `type`'s float layout could be read (sign, exponent and
 * mantissa sizes, exponent bias), into *e, *m, *bias; and whether it is IEEE-like
 * (*ieee: bias 2^(e-1) - 1 and an implied leading mantissa bit). */
static int float_fields(hid_t type, size_t *e, size_t *m, size_t *bias, int *ieee)
{
    size_t spos = 0, epos = 0, mpos = 0;
    if (H5Tget_fields(type, &spos, &epos, e, &mpos, m) < 0 || *e < 1 || *e > 32)
        return 0;
    *bias = H5Tget_ebias(type);
    *ieee = *bias == ((size_t)1 << (*e - 1)) - 1 && H5Tget_norm(type) == H5T_NORM_IMPLIED;
    return 1;
}

/* "float32", "int32", "uint8", "string", ... for a message; a float type that is not
 * float16, bfloat16, float32 or float64 by its fields, by its fields ("a 4-byte float
 * with 11 exponent bits (bias 1023) and 20 mantissa bits"). */
static void type_name(hid_t type, char *buf, size_t len)
{
    H5T_class_t c = H5Tget_class(type);
    size_t bits = H5Tget_size(type) * 8, e = 0, m = 0, bias = 0;
    int ieee = 0;
    if (c == H5T_FLOAT && float_fields(type, &e, &m, &bias, &ieee) &&
        !(ieee && ((bits == 16 && e == 5 && m == 10) || (bits == 16 && e == 8 && m == 7) ||
                   (bits == 32 && e == 8 && m == 23) || (bits == 64 && e == 11 && m == 52)))) {
        snprintf(buf, len, "a %zu-byte float with %zu exponent bits (bias %zu%s) and %zu "
                           "mantissa bits", bits / 8, e, bias,
                 H5Tget_norm(type) == H5T_NORM_IMPLIED ? "" : ", no implied leading bit", m);
        return;
    }
    switch (c) {
    case H5T_INTEGER:
        snprintf(buf, len, "%s%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int",
                 bits);
        break;
    case H5T_FLOAT:
        snprintf(buf, len, bits == 16 && e == 8 ? "bfloat16" : "float%zu", bits);
        break;
    case H5T_STRING: snprintf(buf, len, "string"); break;
    case H5T_COMPOUND: snprintf(buf, len, "compound"); break;
    case H5T_ENUM: snprintf(buf, len, "enum"); break;
    case H5T_ARRAY: snprintf(buf, len, "array"); break;
    default: snprintf(buf, len, "non-numeric (HDF5 class %d)", (int)c); break;
    }
}

/* not_a_dataset: the error for link `name` of `file` (path p) that does not open as a
 * dataset, naming a soft or external link's target (a dangling link is the usual
 * cause); RB_EFORMAT. */
static int not_a_dataset(hid_t file, const char *p, const char *name, char *msg)
{
    H5L_info_t li;
    char val[1024];
    if (H5Lget_info(file, name, &li, H5P_DEFAULT) >= 0 && li.type != H5L_TYPE_HARD &&
        li.u.val_size <= sizeof val &&
        H5Lget_val(file, name, val, sizeof val, H5P_DEFAULT) >= 0) {
        unsigned flags = 0;
        const char *ef = NULL, *eo = NULL;
        if (li.type == H5L_TYPE_SOFT)
            return rb_errf(msg, MSG_LEN, RB_EFORMAT,
                           "%s: '%s' is a soft link to '%.300s', which is not a dataset", p,
                           name, val);
        if (li.type == H5L_TYPE_EXTERNAL &&
            H5Lunpack_elink_val(val, li.u.val_size, &flags, &ef, &eo) >= 0)
            return rb_errf(msg, MSG_LEN, RB_EFORMAT,
                           "%s: '%s' is an external link to '%.300s' in file '%.300s', which "
                           "cannot be opened as a dataset", p, name, eo, ef);
    }
    return rb_errf(msg, MSG_LEN, RB_EFORMAT, "%s: '%s' is not a dataset", p, name);
}

/* Open dataset `name` of s->file and check rank, type and dims (local; the same result
 * on every rank). */
static int check_dataset(rb_dataset_source *s, int t, char *msg)
{
    const char *name = tensor_names[t], *p = s->path;
    hid_t space = H5I_INVALID_HID, type = H5I_INVALID_HID;
    hsize_t dims[H5S_MAX_RANK];
    char tn[128];
    int rc = RB_OK;
    if (H5Lexists(s->file, name, H5P_DEFAULT) <= 0) {
        rc = rb_errf(msg, MSG_LEN, RB_EFORMAT,
                     "%s: no dataset '%s' (expected datasets q, k, v of shape "
                     "[heads][seq][head_dim])", p, name);
        goto cleanup;
    }
    s->dset[t] = H5Dopen2(s->file, name, H5P_DEFAULT);
    if (s->dset[t] < 0) {
        rc = not_a_dataset(s->file, p, name, msg);
        goto cleanup;
    }
    /* storage this build can read in parallel: not a virtual dataset, every filter
     * available, every external raw-data file readable */
    {
        hid_t pl = H5Dget_create_plist(s->dset[t]);
        const char *why = pl < 0 ? "cannot read its creation properties" : NULL;
        char what[1200] = "";
        if (!why && H5Pget_layout(pl) == H5D_VIRTUAL)
            why = "is a virtual dataset (parallel HDF5 cannot read those); copy it into a "
                  "plain dataset";
        for (int f = 0, nf = why ? 0 : H5Pget_nfilters(pl); !why && f < nf; f++) {
            unsigned flags = 0, conf = 0;
            size_t ncd = 0;
            char fname[64] = "";
            const H5Z_filter_t id = H5Pget_filter2(pl, (unsigned)f, &flags, &ncd, NULL,
                                                   sizeof fname, fname, &conf);
            if (id < 0 || H5Zfilter_avail(id) <= 0) {
                snprintf(what, sizeof what, "is compressed with filter %d (%.40s), which this "
                         "HDF5 does not have", (int)id, fname[0] ? fname : "unknown");
                why = what;
            }
        }
        for (int e = 0, ne = why ? 0 : H5Pget_external_count(pl); !why && e < ne; e++) {
            char ename[PATH_MAX] = "", full[2 * PATH_MAX + 2];
            off_t off = 0;
            hsize_t esz = 0;
            const int got = H5Pget_external(pl, (unsigned)e, sizeof ename, ename, &off, &esz);
            if (got >= 0)
                external_name(p, s->dset[t], ename, full, sizeof full);
            if (got < 0 || access(full, R_OK) != 0) {
                const int other = got >= 0 && strcmp(full, ename) != 0; /* a prefix applied */
                snprintf(what, sizeof what, "keeps its data in external file '%.200s'%s%.700s%s, "
                         "which cannot be read", ename, other ? " (looked for at " : "",
                         other ? full : "", other ? ")" : "");
                why = what;
            }
        }
        if (pl >= 0) H5Pclose(pl);
        if (why) {
            rc = rb_errf(msg, MSG_LEN, RB_EFORMAT, "%s: dataset %s %s", p, name, why);
            goto cleanup;
        }
    }
    space = H5Dget_space(s->dset[t]);
    type = H5Dget_type(s->dset[t]);
    int nd = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    if (nd < 0 || type < 0) {
        rc = rb_errf(msg, MSG_LEN, RB_EFORMAT, "%s: cannot read the shape of dataset %s", p,
                     name);
        goto cleanup;
    }
    H5Sget_simple_extent_dims(space, dims, NULL);
    char shape[256] = "";
    size_t sl = 0;
    for (int i = 0; i < nd && sl < sizeof shape - 24; i++)
        sl += (size_t)snprintf(shape + sl, sizeof shape - sl, "[%llu]",
                               (unsigned long long)dims[i]);
    if (nd != 3) {
        rc = rb_errf(msg, MSG_LEN, RB_EFORMAT,
                     "%s: dataset %s has rank %d (shape %s), expected 3: "
                     "[heads][seq][head_dim]", p, name, nd,
                     nd                                               ? shape
                     : H5Sget_simple_extent_type(space) == H5S_NULL ? "empty: no data"
                                                                      : "scalar");
        goto cleanup;
    }
    size_t size = H5Tget_size(type), esize = 0, msize = 0, ebias = 0;
    int ieee = 0;
    /* a float HDF5 converts to float32 exactly: IEEE-like (bias 2^(e-1) - 1, implied
     * leading bit) with at most float's 8 exponent and 23 mantissa bits (float16,
     * bfloat16, float32 in either byte order), whose every value, subnormals included,
     * float32 holds; a wider exponent, or another bias, would turn finite values into
     * inf or 0 */
    const int narrow = H5Tget_class(type) == H5T_FLOAT &&
                       float_fields(type, &esize, &msize, &ebias, &ieee) && ieee &&
                       esize <= 8 && msize <= 23;
    if ((size != 4 && size != 2) || !narrow) {
        type_name(type, tn, sizeof tn);
        rc = rb_errf(msg, MSG_LEN, RB_EFORMAT,
                     "%s: dataset %s has type %s, expected float32 or float16", p, name,
                     tn);
        goto cleanup;
    }
    if (dims[0] < (hsize_t)s->heads || dims[1] < (hsize_t)s->seq_len ||
        dims[2] != (hsize_t)s->ds.head_dim) {
        rc = rb_errf(msg, MSG_LEN, RB_EFORMAT,
                     "%s: dataset %s has shape %s, expected [>=%d][>=%lld][%d] "
                     "([heads][seq][head_dim])", p, name, shape, s->heads,
                     (long long)s->seq_len, s->ds.head_dim);
        goto cleanup;
    }
cleanup:
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Opens s->path collectively and checks q, k, v; the result agreed on all ranks. */
static int open_file(rb_dataset_source *s, char *err, size_t errlen)
{
    char msg[MSG_LEN] = "";
    hid_t fapl = H5I_INVALID_HID;
    int rc = RB_OK;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(s->path, R_OK) != 0)
        rc = rb_errf(msg, sizeof msg, RB_EIO, "%s: cannot open: %s", s->path,
                     strerror(errno));
    else if (H5Fis_hdf5(s->path) <= 0)
        rc = rb_errf(msg, sizeof msg, RB_EFORMAT, "%s: not an HDF5 file", s->path);
    if ((rc = agree(s->comm, rc, msg, err, errlen)) != RB_OK)
        goto cleanup;

    fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_fapl_mpio(fapl, s->comm, MPI_INFO_NULL) < 0) {
        rc = rb_errf(msg, sizeof msg, RB_EIO, "%s: cannot set up MPI-IO access", s->path);
    } else {
        /* a name with a ':' as MPI-IO takes it (rb_mpi_io_names): absolute, then, when
         * every rank failed, as ROMIO's "ufs:" + name */
        char first[PATH_MAX + 8], second[PATH_MAX + 8];
        const int nn = rb_mpi_io_names(s->path, first, second, sizeof first);
        s->file = H5Fopen(nn ? first : s->path, H5F_ACC_RDONLY, fapl);
        int ok = s->file >= 0, all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MAX, s->comm);
        if (!all_ok && nn == 2) {
            H5Eclear2(H5E_DEFAULT);
            s->file = H5Fopen(second, H5F_ACC_RDONLY, fapl);
        }
        if (s->file < 0) {
            char why[300];
            h5_reason(why, sizeof why);
            rc = rb_errf(msg, sizeof msg, RB_EIO, "%s: cannot open the HDF5 file%s", s->path,
                         why);
        }
    }
    if ((rc = agree(s->comm, rc, msg, err, errlen)) != RB_OK)
        goto cleanup;

    for (int t = 0; t < 3 && rc == RB_OK; t++)
        rc = check_dataset(s, t, msg);
    if ((rc = agree(s->comm, rc, msg, err, errlen)) != RB_OK)
        goto cleanup;
    /* a chunked dataset whose chunks were not all written (a valid file: the others
     * read as its fill value) fails collective reads in HDF5 1.10 ("MPI_File_set_view
     * failed: MPI_ERR_TYPE"); such a file is read independently. The status is file
     * metadata, the same on every rank. */
    int partial = 0;
    for (int t = 0; t < 3; t++) {
        H5D_space_status_t st = H5D_SPACE_STATUS_ERROR;
        /* (never written at all as well: ranks with rows and a rank with none could
         * take different paths through a collective read of fill values) */
        if (H5Dget_space_status(s->dset[t], &st) < 0 ||
            st == H5D_SPACE_STATUS_PART_ALLOCATED || st == H5D_SPACE_STATUS_NOT_ALLOCATED)
            partial = 1;
    }
    H5Eclear2(H5E_DEFAULT);
    { /* one transfer mode for all: a rank reading independently beside collective
       * readers would hang them */
        int any = partial;
        MPI_Allreduce(&partial, &any, 1, MPI_INT, MPI_MAX, s->comm);
        partial = any;
    }
    s->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (s->dxpl < 0 ||
        H5Pset_dxpl_mpio(s->dxpl, partial ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE) < 0)
        rc = rb_errf(msg, sizeof msg, RB_EIO, "%s: cannot set up parallel reads", s->path);
    rc = agree(s->comm, rc, msg, err, errlen);
cleanup:
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

/* Contract in rb_datasets.h. */
int rb_dataset_open(rb_dataset_source **src, const rb_dataset *ds, MPI_Comm comm,
                    int heads, int64_t seq_len, char *err, size_t errlen)
{
    rb_dataset_source *s = NULL;
    int rc = RB_OK;
    if (!src || !ds) return rb_errf(err, errlen, RB_EINVAL, "dataset: NULL argument");
    *src = NULL;
    if (heads < 1 || seq_len < 1 || ds->head_dim <= 0 || ds->head_dim % 2) {
        rc = rb_errf(err, errlen, RB_EINVAL,
                     "dataset: bad sizes (heads %d, seq_len %lld, head_dim %d)", heads,
                     (long long)seq_len, ds->head_dim);
        goto cleanup;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        rc = rb_errf(err, errlen, RB_ENOMEM, "dataset: out of memory");
        goto cleanup;
    }
    s->ds = *ds;
    s->comm = comm;
    s->heads = heads;
    s->seq_len = seq_len;
    s->file = s->dxpl = H5I_INVALID_HID;
    for (int t = 0; t < 3; t++) s->dset[t] = H5I_INVALID_HID;
    if (ds->kind != RB_DATA_FILE) {
        /* generated: validate the description once (zero rows) */
        rc = rb_dataset_fill(ds, RB_TENSOR_Q, 0, NULL, 0, NULL, err, errlen);
        goto cleanup;
    }
    if (!ds->path || !*ds->path) {
        rc = rb_errf(err, errlen, RB_EINVAL, "dataset: file dataset without a path");
        goto cleanup;
    }
    s->path = strdup(ds->path);
    if (!s->path) {
        rc = rb_errf(err, errlen, RB_ENOMEM, "dataset: out of memory");
        goto cleanup;
    }
    s->ds.path = s->path;
    rc = open_file(s, err, errlen);
cleanup:
    if (rc != RB_OK)
        rb_dataset_close(s);
    else
        *src = s;
    return rc;
}

typedef struct {
    int64_t pos, idx;
} pos_idx;

static int cmp_pos_idx(const void *a, const void *b)
{
    const pos_idx *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Select, in the file space of [heads][seq][d], the rows u[0..m) (strictly increasing)
 * of head h as few strided hyperslabs: greedy runs of constant stride. */
static int select_rows(hid_t space, int h, const int64_t *u, int64_t m, int d)
{
    if (m == 0) return H5Sselect_none(space) < 0 ? -1 : 0;
    for (int64_t i = 0, first = 1; i < m; first = 0) {
        int64_t j = i, stride = 1;
        if (i + 1 < m) {
            stride = u[i + 1] - u[i];
            j = i + 1;
            while (j + 1 < m && u[j + 1] - u[j] == stride) j++;
        }
        hsize_t start[3] = {(hsize_t)h, (hsize_t)u[i], 0};
        hsize_t str[3] = {1, (hsize_t)stride, 1};
        hsize_t count[3] = {1, (hsize_t)(j - i + 1), 1};
        hsize_t block[3] = {1, 1, (hsize_t)d};
        if (H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, start, str,
                                count, block) < 0)
            return -1;
        i = j + 1;
    }
    return 0;
}

/* Contract in rb_datasets.h. */
int rb_dataset_read(rb_dataset_source *src, rb_tensor t, int head, const int64_t *pos,
                    int64_t n, float *out, char *err, size_t errlen)
{
    if (!src) return rb_errf(err, errlen, RB_EINVAL, "dataset: no open dataset");
    if (src->ds.kind != RB_DATA_FILE)
        return rb_dataset_fill(&src->ds, t, head, pos, n, out, err, errlen);

    const int d = src->ds.head_dim;
    char msg[MSG_LEN] = "";
    int rc = RB_OK, sorted = 1;
    pos_idx *pi = NULL;
    int64_t *u = NULL, *map = NULL, m = 0;
    float *buf = NULL;
    hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;

    /* local checks and the selection, then agreement before the collective read */
    if (t != RB_TENSOR_Q && t != RB_TENSOR_K && t != RB_TENSOR_V)
        rc = rb_errf(msg, sizeof msg, RB_EINVAL, "dataset: unknown tensor %d", (int)t);
    else if (head < 0 || head >= src->heads)
        rc = rb_errf(msg, sizeof msg, RB_EINVAL, "%s: head %d outside [0, %d)", src->path,
                     head, src->heads);
    else if (n < 0 || (n > 0 && (!pos || !out)))
        rc = rb_errf(msg, sizeof msg, RB_EINVAL,
                     "dataset: bad row count %lld or NULL buffer", (long long)n);
    for (int64_t r = 0; rc == RB_OK && r < n; r++) {
        if (pos[r] < 0 || pos[r] >= src->seq_len)
            rc = rb_errf(msg, sizeof msg, RB_EINVAL, "%s: position %lld outside [0, %lld)",
                         src->path, (long long)pos[r], (long long)src->seq_len);
        else if (r > 0 && pos[r] <= pos[r - 1])
            sorted = 0;
    }
    if (rc == RB_OK && !sorted) {
        /* unique increasing positions u[], and map[r] = index of pos[r] in u */
        pi = malloc((size_t)n * sizeof *pi);
        u = malloc((size_t)n * sizeof *u);
        map = malloc((size_t)n * sizeof *map);
        buf = malloc((size_t)n * (size_t)d * sizeof *buf);
        if (!pi || !u || !map || !buf) {
            rc = rb_errf(msg, sizeof msg, RB_ENOMEM, "dataset: out of memory reading %s",
                         src->path);
        } else {
            for (int64_t r = 0; r < n; r++) pi[r] = (pos_idx){pos[r], r};
            qsort(pi, (size_t)n, sizeof *pi, cmp_pos_idx);
            for (int64_t r = 0; r < n; r++) {
                if (m == 0 || pi[r].pos != u[m - 1]) u[m++] = pi[r].pos;
                map[pi[r].idx] = m - 1;
            }
        }
    } else if (rc == RB_OK) {
        m = n;
    }
    if (rc == RB_OK) {
        hsize_t mdim = (hsize_t)(m > 0 ? m : 1) * (hsize_t)d;
        fspace = H5Dget_space(src->dset[t]);
        mspace = H5Screate_simple(1, &mdim, NULL);
        if (fspace < 0 || mspace < 0 || select_rows(fspace, head, sorted ? pos : u, m, d) ||
            (m == 0 && H5Sselect_none(mspace) < 0))
            rc = rb_errf(msg, sizeof msg, RB_EIO,
                         "%s: cannot select the rows of dataset %s", src->path,
                         tensor_names[t]);
    }
    if ((rc = agree(src->comm, rc, msg, err, errlen)) != RB_OK)
        goto cleanup;

    float none[1];
    void *dst = !sorted ? (void *)buf : out ? (void *)out : (void *)none;
    if (H5Dread(src->dset[t], H5T_NATIVE_FLOAT, mspace, fspace, src->dxpl, dst) < 0) {
        char why[300];
        h5_reason(why, sizeof why);
        rc = rb_errf(msg, sizeof msg, RB_EIO, "%s: reading dataset %s (head %d) failed%s",
                     src->path, tensor_names[t], head, why);
    }
    /* where the first bad value is, as a position in the dataset (-1: a read failure,
     * named first), so that every rank count names the same one */
    int64_t bad_at = rc != RB_OK ? -1 : INT64_MAX;
    /* the kernels and metrics take finite inputs whose scores stay finite in float32
     * (|q.k| <= d * max|x|^2 < 3.4e38 for d up to 2^20): a NaN, an inf or a value
     * beyond RB_FILE_MAX_ABS in the file is named */
    for (int64_t r = 0; rc == RB_OK && r < m; r++) {
        const float *row = (const float *)dst + (size_t)r * (size_t)d;
        for (int i = 0; i < d; i++)
            if (!isfinite(row[i]) || fabsf(row[i]) > RB_FILE_MAX_ABS) {
                bad_at = (int64_t)(sorted ? pos[r] : u[r]) * d + i;
                /* the shortest digits that give this float back (1.0000001e+15 is
                 * beyond 1e15; %g printed it as 1e+15) */
                char val[32];
                for (int prec = 6; prec <= 9; prec++) {
                    snprintf(val, sizeof val, "%.*g", prec, (double)row[i]);
                    if (!isfinite(row[i]) || strtof(val, NULL) == row[i])
                        break;
                }
                rc = rb_errf(msg, sizeof msg, RB_EFORMAT,
                             isfinite(row[i])
                                 ? "%s: dataset %s has a value too large (%s) at "
                                   "[%d][%lld][%d]: beyond 1e15 float32 sums of its "
                                   "products (scores, or the weighted sums of v) would "
                                   "overflow"
                                 : "%s: dataset %s has a non-finite value (%s) at "
                                   "[%d][%lld][%d]",
                             src->path, tensor_names[t], val, head,
                             (long long)(sorted ? pos[r] : u[r]), i);
                break;
            }
    }
    if ((rc = agree_first(src->comm, rc, bad_at, msg, err, errlen)) != RB_OK)
        goto cleanup;
    if (!sorted)
        for (int64_t r = 0; r < n; r++)
            memcpy(out + (size_t)r * (size_t)d, buf + (size_t)map[r] * (size_t)d,
                   (size_t)d * sizeof *out);
cleanup:
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    free(pi);
    free(u);
    free(map);
    free(buf);
    return rc;
}

/* Contract in rb_datasets.h. */
void rb_dataset_close(rb_dataset_source *src)
{
    if (!src) return;
    for (int t = 0; t < 3; t++)
        if (src->dset[t] >= 0) H5Dclose(src->dset[t]);
    if (src->dxpl >= 0) H5Pclose(src->dxpl);
    if (src->file >= 0) H5Fclose(src->file);
    free(src->path);
    free(src);
}
