/* test_dataset_file.c — reads q/k/v of an HDF5 file through rb_dataset_open/read on N
 * ranks (every sharding layout, and unsorted positions with repeats) and writes what
 * the ranks read, assembled on rank 0, for dataset_file.py to compare with numpy.
 *
 * usage: test_dataset_file FILE HEADS L HEAD_DIM OUT.bin   (OUT: float32
 * [3][HEADS][L][HEAD_DIM]) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_datasets.h"
#include "rb_mpi.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, N, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (argc != 6) {
        if (rank == 0)
            fprintf(stderr, "usage: test_dataset_file FILE HEADS L HEAD_DIM OUT\n");
        MPI_Finalize();
        return 2;
    }
    const int H = atoi(argv[2]), d = atoi(argv[4]);
    const int64_t L = atoll(argv[3]);
    const size_t per_t = (size_t)H * (size_t)L * (size_t)d;
    const rb_shard_layout layouts[] = {RB_SHARD_CONTIGUOUS, RB_SHARD_ZIGZAG,
                                       RB_SHARD_STRIPED};
    char err[512];
    rb_dataset ds;
    rb_dataset_source *src = NULL;
    memset(&ds, 0, sizeof ds);
    ds.kind = RB_DATA_FILE;
    ds.head_dim = d;
    ds.path = argv[1];
    float *all = calloc(3 * per_t, sizeof(float)), *ref = calloc(3 * per_t, sizeof(float));
    float *mine = malloc((size_t)L * d * sizeof(float)),
          *got = malloc((size_t)L * d * sizeof(float));
    int64_t *pos = malloc(2 * (size_t)L * sizeof *pos);
    if (rb_dataset_open(&src, &ds, MPI_COMM_WORLD, H, L, err, sizeof err) != RB_OK) {
        if (rank == 0)
            printf("FAIL: open: %s\n", err);
        fails++;
        goto done;
    }
    for (int li = 0; li < 3; li++) {
        rb_shard_layout s = layouts[li];
        int64_t n = rb_shard_local_count(s, L, N);
        for (int64_t i = 0; i < n; i++)
            pos[i] = rb_shard_global(s, L, N, rank, i);
        for (int t = 0; t < 3; t++)
            for (int h = 0; h < H; h++) {
                if (rb_dataset_read(src, (rb_tensor)t, h, pos, n, mine, err, sizeof err)) {
                    printf("FAIL: rank %d read (layout %s): %s\n", rank,
                           rb_shard_layout_name(s), err);
                    fails++;
                }
                MPI_Gather(mine, (int)(n * d), MPI_FLOAT, got, (int)(n * d), MPI_FLOAT, 0,
                           MPI_COMM_WORLD);
                for (int r = 0; rank == 0 && r < N; r++)
                    for (int64_t i = 0; i < n; i++) {
                        int64_t g = rb_shard_global(s, L, N, r, i);
                        memcpy(all + (size_t)t * per_t + ((size_t)h * L + g) * d,
                               got + ((size_t)r * n + i) * d, d * sizeof(float));
                    }
            }
        if (rank == 0 && li == 0)
            memcpy(ref, all, 3 * per_t * sizeof(float));
        if (rank == 0 && memcmp(ref, all, 3 * per_t * sizeof(float))) {
            printf("FAIL: layout %s on %d ranks reads other values than contiguous\n",
                   rb_shard_layout_name(s), N);
            fails++;
        }
    }
    /* unsorted positions with repeats: rank r reads positions L-1-r, L-1-r-N, ... twice
     * over, in decreasing order (a rank may read none); every rank checks its own reads
     * against rank 0's contiguous values */
    MPI_Bcast(ref, (int)(3 * per_t), MPI_FLOAT, 0, MPI_COMM_WORLD);
    {
        int64_t n = 0;
        for (int rep = 0; rep < 2; rep++)
            for (int64_t p = L - 1 - rank; p >= 0; p -= N)
                pos[n++] = p;
        if (rank == N - 1 && N > 1)
            n = 0; /* and one rank takes part with no rows */
        float *rows = malloc(((size_t)n + 1) * d * sizeof(float));
        for (int t = 0; t < 3; t++)
            for (int h = 0; h < H; h++) {
                if (rb_dataset_read(src, (rb_tensor)t, h, pos, n, rows, err, sizeof err)) {
                    printf("FAIL: rank %d unsorted read: %s\n", rank, err);
                    fails++;
                    continue;
                }
                for (int64_t i = 0; i < n; i++)
                    if (memcmp(rows + (size_t)i * d,
                               ref + (size_t)t * per_t + ((size_t)h * L + pos[i]) * d,
                               d * sizeof(float))) {
                        printf("FAIL: rank %d: unsorted read, tensor %d head %d position "
                               "%lld differs\n",
                               rank, t, h, (long long)pos[i]);
                        fails++;
                        break;
                    }
            }
        free(rows);
    }
    /* a position past L is refused on every rank */
    {
        int64_t bad = rank == 0 ? L : 0;
        int rc = rb_dataset_read(src, RB_TENSOR_K, 0, &bad, 1, mine, err, sizeof err);
        if (rc != RB_EINVAL || !strstr(err, "outside")) {
            printf("FAIL: rank %d: position %lld was not refused (rc %d)\n", rank,
                   (long long)L, rc);
            fails++;
        }
    }
    if (rank == 0) {
        FILE *f = fopen(argv[5], "wb");
        if (!f || fwrite(ref, sizeof(float), 3 * per_t, f) != 3 * per_t) {
            printf("FAIL: cannot write %s\n", argv[5]);
            fails++;
        }
        if (f)
            fclose(f);
    }
done:
    rb_dataset_close(src);
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_dataset_file on %d ranks: %s\n", N,
               fails ? "FAILED" : "all layouts agree");
    free(all);
    free(ref);
    free(mine);
    free(got);
    free(pos);
    MPI_Finalize();
    return fails ? 1 : 0;
}
