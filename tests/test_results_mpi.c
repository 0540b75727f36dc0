/* test_results_mpi.c — MPI test of the HDF5 results backend: distributed rows in every shard layout, root-only data, attributes, errors; rank 0 rereads serially. */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_results.h"

static int g_fail = 0;
static int g_rank = 0;

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", g_rank, __FILE__, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                                              \
            fprintf(stderr, "\n");                                                     \
            g_fail++;                                                                  \
        }                                                                              \
    } while (0)

#define OK(call)                                                                       \
    do {                                                                               \
        int rc_ = (call);                                                              \
        CHECK(rc_ == RB_OK, "%s -> %d: %s", #call, rc_, err);                          \
    } while (0)

#define HEADS 3
#define ROWLEN 4

static const char *layout_name[3] = {"contiguous", "zigzag", "striped"};

/* This test's own statement of the layouts of rb_mpi.h, independent of mpi/shard.c. */
static int make_runs(int layout, int64_t L, int n, int r, rb_shard_run runs[2])
{
    switch (layout) {
    case 0:
        runs[0] = (rb_shard_run){r * (L / n), 1, L / n};
        return 1;
    case 1: {
        int64_t c = L / (2 * n);
        runs[0] = (rb_shard_run){r * c, 1, c};
        runs[1] = (rb_shard_run){(2 * n - 1 - r) * c, 1, c};
        return 2;
    }
    default:
        runs[0] = (rb_shard_run){r, n, L / n};
        return 1;
    }
}

static double val_f64(int h, int64_t g) { return h * 1000.0 + (double)g + 0.25; }
static float val_f32(int h, int64_t g, int j) { return (float)(h * 100000 + g * 10 + j); }
static int64_t val_i64(int64_t g) { return g * 7 - 3; }

/* Serial reads for the check. */
static int read_all(hid_t f, const char *path, hid_t mt, void *buf, int want_rank,
                    const hsize_t *want_dims)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0) {
        fprintf(stderr, "FAIL: %s: cannot open\n", path);
        g_fail++;
        return -1;
    }
    hid_t s = H5Dget_space(d);
    hsize_t dims[3] = {0, 0, 0};
    int nd = H5Sget_simple_extent_dims(s, dims, NULL);
    int ok = nd == want_rank;
    for (int i = 0; ok && i < nd; i++)
        ok = dims[i] == want_dims[i];
    CHECK(ok, "%s: shape rank %d [%llu,%llu,%llu], expected rank %d [%llu,%llu,%llu]",
          path, nd, (unsigned long long)dims[0], (unsigned long long)dims[1],
          (unsigned long long)dims[2], want_rank, (unsigned long long)want_dims[0],
          (unsigned long long)(want_rank > 1 ? want_dims[1] : 0),
          (unsigned long long)(want_rank > 2 ? want_dims[2] : 0));
    int rc = ok ? (int)H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : -1;
    CHECK(rc >= 0, "%s: H5Dread failed", path);
    H5Sclose(s);
    H5Dclose(d);
    return rc < 0 ? -1 : 0;
}

static void check_attr_str(hid_t f, const char *obj, const char *name, const char *want)
{
    char buf[256] = {0};
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(a >= 0, "%s@%s: missing", obj, name);
    if (a < 0)
        return;
    hid_t t = H5Aget_type(a);
    CHECK(H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0,
          "%s@%s: not a fixed-length string", obj, name);
    size_t sz = H5Tget_size(t);
    CHECK(sz == strlen(want) + 1 || (sz == 1 && !*want), "%s@%s: size %zu for \"%s\"",
          obj, name, sz, want);
    if (sz < sizeof buf && H5Aread(a, t, buf) >= 0)
        CHECK(strcmp(buf, want) == 0, "%s@%s = \"%s\", expected \"%s\"", obj, name, buf,
              want);
    H5Tclose(t);
    H5Aclose(a);
}

static void check_attr_num(hid_t f, const char *obj, const char *name, double want,
                           int is_int)
{
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(a >= 0, "%s@%s: missing", obj, name);
    if (a < 0)
        return;
    hid_t t = H5Aget_type(a);
    CHECK(H5Tget_class(t) == (is_int ? H5T_INTEGER : H5T_FLOAT) && H5Tget_size(t) == 8,
          "%s@%s: wrong type class/size", obj, name);
    double v = NAN;
    H5Aread(a, H5T_NATIVE_DOUBLE, &v);
    CHECK(v == want, "%s@%s = %.17g, expected %.17g", obj, name, v, want);
    H5Tclose(t);
    H5Aclose(a);
}

static void check_file(const char *path, int nranks, const int64_t *Ls)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0, "%s: serial H5Fopen failed", path);
    if (f < 0)
        return;
    char p[256];
    for (int lay = 0; lay < 3; lay++) {
        int64_t L = Ls[lay];
        size_t n = (size_t)L;
        double *d = malloc(sizeof(double) * HEADS * n);
        float *x = malloc(sizeof(float) * HEADS * n * ROWLEN);
        int64_t *ip = malloc(sizeof(int64_t) * n);
        hsize_t d2[2] = {HEADS, n}, d3[3] = {HEADS, n, ROWLEN}, d1[1] = {n};
        snprintf(p, sizeof p, "/cases/%s/rows/lse", layout_name[lay]);
        if (read_all(f, p, H5T_NATIVE_DOUBLE, d, 2, d2) == 0)
            for (int h = 0; h < HEADS; h++)
                for (size_t g = 0; g < n; g++)
                    CHECK(d[h * n + g] == val_f64(h, (int64_t)g),
                          "%s[%d][%zu] = %.17g, expected %.17g", p, h, g, d[h * n + g],
                          val_f64(h, (int64_t)g));
        snprintf(p, sizeof p, "/cases/%s/rows/output", layout_name[lay]);
        if (read_all(f, p, H5T_NATIVE_FLOAT, x, 3, d3) == 0)
            for (int h = 0; h < HEADS; h++)
                for (size_t g = 0; g < n; g++)
                    for (int j = 0; j < ROWLEN; j++) {
                        float v = x[(h * n + g) * ROWLEN + j];
                        CHECK(v == val_f32(h, (int64_t)g, j),
                              "%s[%d][%zu][%d] = %g, expected %g", p, h, g, j, v,
                              val_f32(h, (int64_t)g, j));
                    }
        snprintf(p, sizeof p, "/cases/%s/rows/position", layout_name[lay]);
        if (read_all(f, p, H5T_NATIVE_INT64, ip, 1, d1) == 0)
            for (size_t g = 0; g < n; g++)
                CHECK(ip[g] == val_i64((int64_t)g), "%s[%zu] = %lld, expected %lld", p, g,
                      (long long)ip[g], (long long)val_i64((int64_t)g));
        snprintf(p, sizeof p, "/cases/%s", layout_name[lay]);
        check_attr_str(f, p, "shard_layout", layout_name[lay]);
        check_attr_num(f, p, "complete", 1, 1);
        free(d);
        free(x);
        free(ip);
    }
    /* Root-only datasets. */
    double m[2][5];
    hsize_t dm[2] = {2, 5};
    if (read_all(f, "/root/matrix", H5T_NATIVE_DOUBLE, m, 2, dm) == 0)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 5; j++)
                CHECK(m[i][j] == i * 10.0 + j + 0.5, "/root/matrix[%d][%d] = %g", i, j,
                      m[i][j]);
    int64_t t[64];
    hsize_t dt[1] = {(hsize_t)nranks};
    if (read_all(f, "/root/per_rank", H5T_NATIVE_INT64, t, 1, dt) == 0)
        for (int i = 0; i < nranks; i++)
            CHECK(t[i] == 100 + i, "/root/per_rank[%d] = %lld, expected %d", i,
                  (long long)t[i], 100 + i);
    hsize_t de[1] = {0};
    read_all(f, "/root/empty", H5T_NATIVE_DOUBLE, m, 1, de);
    /* Strings. */
    {
        static const char *want[3] = {"alpha", "", "a longer string, with <markup> & UTF-8 \xc3\xa9"};
        hid_t d = H5Dopen2(f, "/provenance/hosts", H5P_DEFAULT);
        CHECK(d >= 0, "/provenance/hosts missing");
        if (d >= 0) {
            hid_t ty = H5Dget_type(d);
            size_t w = H5Tget_size(ty);
            CHECK(H5Tis_variable_str(ty) == 0 && w == strlen(want[2]) + 1,
                  "/provenance/hosts: type not fixed-length of width %zu (got %zu)",
                  strlen(want[2]) + 1, w);
            char *buf = calloc(3, w);
            if (H5Dread(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0)
                for (int i = 0; i < 3; i++)
                    CHECK(strcmp(buf + i * w, want[i]) == 0,
                          "/provenance/hosts[%d] = \"%s\", expected \"%s\"", i,
                          buf + i * w, want[i]);
            free(buf);
            H5Tclose(ty);
            H5Dclose(d);
        }
    }
    /* Attributes. */
    check_attr_str(f, "/", "format", "ropebench");
    check_attr_num(f, "/", "format_version", 1, 1);
    check_attr_num(f, "/", "nranks", nranks, 1);
    check_attr_str(f, "/", "empty", "");
    check_attr_num(f, "/deep/new/group", "factor", 8.125, 0);
    check_attr_str(f, "/deep/new/group", "replaced", "second");
    check_attr_num(f, "/root/matrix", "on_dataset", -2.5, 0);
    CHECK(H5Lexists(f, "/gone", H5P_DEFAULT) == 0, "/gone still exists after remove");
    CHECK(H5Lexists(f, "/bad", H5P_DEFAULT) <= 0, "/bad written despite a bad run");
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    char err[512] = "";
    char path[512];
    snprintf(path, sizeof path, "%s/results_mpi_%d.h5", argc > 1 ? argv[1] : ".", nranks);

    /* An error names the file and carries HDF5's own message. */
    rb_results *bad = NULL;
    int rc = rb_results_create(&bad, "/nonexistent-dir/x.h5", MPI_COMM_WORLD, err,
                               sizeof err);
    CHECK(rc == RB_EIO && bad == NULL && strstr(err, "H5Fcreate") &&
              strstr(err, "results_hdf5.c:") && strstr(err, "x.h5") &&
              strstr(err, "failed: ") && strlen(strstr(err, "failed: ")) > 12,
          "create in a missing directory: rc %d, message \"%s\"", rc, err);
    if (g_rank == 0)
        printf("expected error message: %s\n", err);
    rc = rb_results_open(&bad, "/nonexistent-dir/x.h5", MPI_COMM_WORLD, err, sizeof err);
    CHECK(rc == RB_EIO && bad == NULL, "open of a missing file: rc %d", rc);

    rb_results *r = NULL;
    OK(rb_results_create(&r, path, MPI_COMM_WORLD, err, sizeof err));
    if (!r) {
        MPI_Finalize();
        return 1;
    }
    OK(rb_results_attr_str(r, "/", "format", "ropebench", err, sizeof err));
    OK(rb_results_attr_i64(r, "/", "format_version", 1, err, sizeof err));
    OK(rb_results_attr_i64(r, "/", "nranks", nranks, err, sizeof err));
    OK(rb_results_attr_str(r, "/", "empty", "", err, sizeof err));
    OK(rb_results_attr_f64(r, "/deep/new/group", "factor", 8.125, err, sizeof err));
    OK(rb_results_attr_str(r, "/deep/new/group", "replaced", "first, longer", err,
                           sizeof err));
    OK(rb_results_attr_str(r, "/deep/new/group", "replaced", "second", err, sizeof err));
    CHECK(rb_results_exists(r, "/deep/new/group") == 1, "exists(/deep/new/group) != 1");
    CHECK(rb_results_exists(r, "/deep/nothing/here") == 0, "exists(missing) != 0");
    CHECK(rb_results_exists(r, "relative") == -1, "exists(relative) != -1");

    int64_t Ls[3];
    for (int lay = 0; lay < 3; lay++) {
        int64_t L = 10 * nranks + (lay == 1 ? 0 : 2 * nranks); /* zigzag needs 2N | L */
        Ls[lay] = L;
        rb_shard_run runs[2];
        int nr = make_runs(lay, L, nranks, g_rank, runs);
        int64_t nl = 0;
        for (int i = 0; i < nr; i++)
            nl += runs[i].count;
        double *d = malloc(sizeof(double) * HEADS * nl);
        float *x = malloc(sizeof(float) * HEADS * nl * ROWLEN);
        int64_t *ip = malloc(sizeof(int64_t) * nl);
        int64_t li = 0;
        for (int i = 0; i < nr; i++)
            for (int64_t c = 0; c < runs[i].count; c++, li++) {
                int64_t g = runs[i].start + c * runs[i].stride;
                ip[li] = val_i64(g);
                for (int h = 0; h < HEADS; h++) {
                    d[h * nl + li] = val_f64(h, g);
                    for (int j = 0; j < ROWLEN; j++)
                        x[(h * nl + li) * ROWLEN + j] = val_f32(h, g, j);
                }
            }
        char p[256], c[128];
        snprintf(c, sizeof c, "/cases/%s", layout_name[lay]);
        OK(rb_results_attr_str(r, c, "shard_layout", layout_name[lay], err, sizeof err));
        snprintf(p, sizeof p, "%s/rows/lse", c);
        OK(rb_results_write_rows_f64(r, p, HEADS, L, runs, nr, d, err, sizeof err));
        snprintf(p, sizeof p, "%s/rows/output", c);
        OK(rb_results_write_rows_f32(r, p, HEADS, L, ROWLEN, runs, nr, x, err, sizeof err));
        snprintf(p, sizeof p, "%s/rows/position", c);
        OK(rb_results_write_rows_i64(r, p, L, runs, nr, ip, err, sizeof err));
        OK(rb_results_attr_i64(r, c, "complete", 1, err, sizeof err));
        int64_t v = 0;
        CHECK(rb_results_attr_get_i64(r, c, "complete", &v, err, sizeof err) == 1 && v == 1,
              "attr_get_i64(%s@complete) did not read 1", c);
        CHECK(rb_results_attr_get_i64(r, c, "nothing", &v, err, sizeof err) == 0,
              "attr_get_i64 of a missing attribute != 0");
        OK(rb_results_flush(r, err, sizeof err));
        free(d);
        free(x);
        free(ip);
    }

    /* Root-only datasets, held by the last rank. */
    int root = nranks - 1;
    double m[2][5];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++)
            m[i][j] = g_rank == root ? i * 10.0 + j + 0.5 : -1.0;
    OK(rb_results_write_f64(r, "/root/matrix", 2, (int64_t[]){2, 5},
                            g_rank == root ? &m[0][0] : NULL, root, err, sizeof err));
    OK(rb_results_attr_f64(r, "/root/matrix", "on_dataset", -2.5, err, sizeof err));
    int64_t t[64];
    for (int i = 0; i < nranks; i++)
        t[i] = 100 + i;
    OK(rb_results_write_i64(r, "/root/per_rank", 1, (int64_t[]){nranks}, t, 0, err,
                            sizeof err));
    OK(rb_results_write_f64(r, "/root/empty", 1, (int64_t[]){0}, NULL, 0, err, sizeof err));
    const char *strs[3] = {"alpha", "", "a longer string, with <markup> & UTF-8 \xc3\xa9"};
    OK(rb_results_write_strings(r, "/provenance/hosts", 3, g_rank == 0 ? strs : NULL, 0,
                                err, sizeof err));
    OK(rb_results_attr_i64(r, "/gone", "x", 1, err, sizeof err));
    OK(rb_results_remove(r, "/gone", err, sizeof err));
    OK(rb_results_remove(r, "/never/was", err, sizeof err));

    /* A bad run on one rank only: every rank gets an error, nobody hangs. */
    rb_shard_run runs[2] = {{0, 1, 2}, {1, 1, 1}};
    double dd[3] = {0, 0, 0};
    rc = rb_results_write_rows_f64(r, "/bad", 1, 4 * nranks, runs,
                                   g_rank == root ? 2 : 0, dd, err, sizeof err);
    CHECK(rc == RB_EINVAL, "bad run on rank %d: rc %d (%s)", root, rc, err);
    if (g_rank == 0)
        printf("expected error message: %s\n", err);

    OK(rb_results_close(r, err, sizeof err));
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0)
        check_file(path, nranks, Ls);
    int fails = g_fail, all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("%s: %d ranks, %d failures\n", all ? "FAIL" : "PASS", nranks, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
