/* test_dataset_mpi.c — a shard generated on rank r equals the same positions generated on one rank, for every layout. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_datasets.h"
#include "rb_mpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (rank == 0)
        printf("test_dataset_mpi on %d ranks: every rank's shard of Q/K/V (gaussian and needle) "
               "must equal bit for bit rank 0's single-call generation at the same global positions\n",
               N);

    const int d = 40, heads[] = {0, 5};
    const int64_t L = 2 * (int64_t)N * 24;
    const rb_shard_layout layouts[] = {RB_SHARD_CONTIGUOUS, RB_SHARD_ZIGZAG, RB_SHARD_STRIPED};
    int n_pass = 0, n_fail = 0;
    char err[256];

    rb_dataset dsets[2];
    memset(dsets, 0, sizeof dsets);
    for (int k = 0; k < 2; k++) {
        dsets[k].kind = k ? RB_DATA_NEEDLE : RB_DATA_GAUSSIAN;
        dsets[k].seed = 0xfeedbeefcafeull + (uint64_t)k;
        dsets[k].head_dim = d;
    }
    /* Needles spread over the sequence, so they land on different ranks. */
    dsets[1].n_needles = 4;
    dsets[1].strength = 3.0;
    for (int i = 0; i < 4; i++) {
        dsets[1].needle_pos[i] = (L * i) / 4 + 1;
        dsets[1].query_pos[i] = L - 1 - i;
    }

    int64_t *all_pos = malloc((size_t)L * sizeof(int64_t));
    float *ref = malloc((size_t)L * d * sizeof(float));
    float *mine = malloc((size_t)L * d * sizeof(float));
    float *gathered = malloc((size_t)L * d * sizeof(float));
    int64_t *pos = malloc((size_t)L * sizeof(int64_t));
    for (int64_t g = 0; g < L; g++)
        all_pos[g] = g;

    for (int li = 0; li < 3; li++)
        for (int k = 0; k < 2; k++)
            for (int hi = 0; hi < 2; hi++)
                for (int t = 0; t < 3; t++) {
                    rb_shard_layout s = layouts[li];
                    int64_t n = rb_shard_local_count(s, L, N);
                    for (int64_t i = 0; i < n; i++)
                        pos[i] = rb_shard_global(s, L, N, rank, i);
                    int rc = rb_dataset_fill(&dsets[k], (rb_tensor)t, heads[hi], pos, n, mine,
                                             err, sizeof err);
                    if (rc != RB_OK)
                        printf("rank %d: fill failed: %s\n", rank, err);
                    MPI_Gather(mine, (int)(n * d), MPI_FLOAT, gathered, (int)(n * d), MPI_FLOAT, 0,
                               MPI_COMM_WORLD);
                    if (rank != 0)
                        continue;
                    rc |= rb_dataset_fill(&dsets[k], (rb_tensor)t, heads[hi], all_pos, L, ref, err,
                                          sizeof err);
                    for (int r = 0; r < N; r++) {
                        int bad = rc != RB_OK;
                        for (int64_t i = 0; i < n && !bad; i++) {
                            int64_t g = rb_shard_global(s, L, N, r, i);
                            const float *a = gathered + ((size_t)r * n + i) * d;
                            const float *b = ref + (size_t)g * d;
                            for (int j = 0; j < d && !bad; j++)
                                if (memcmp(&a[j], &b[j], sizeof(float)) != 0) {
                                    bad = 1;
                                    printf("FAIL layout %s ranks %d dataset %s tensor %d head %d: "
                                           "rank %d local %lld (position %lld) dim %d = %.9g, "
                                           "single-rank value %.9g\n",
                                           rb_shard_layout_name(s), N,
                                           rb_dataset_kind_name(dsets[k].kind), t, heads[hi], r,
                                           (long long)i, (long long)g, j, a[j], b[j]);
                                }
                        }
                        if (bad)
                            n_fail++;
                        else
                            n_pass++;
                    }
                }

    int counts[2] = {n_pass, n_fail};
    MPI_Bcast(counts, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d passed, %d failed\n", counts[0], counts[1]);
    free(all_pos);
    free(ref);
    free(mine);
    free(gathered);
    free(pos);
    MPI_Finalize();
    return counts[1] || counts[0] == 0 ? 1 : 0;
}
