/* bench_tiles_bf16_blas.c — private micro-benchmark (not a test) of the tile kernels: causal GFLOP/s at d=128, L=4096/16384 on 1 and 2 threads, and probe-row K/V bandwidth; best of a few short runs.
 *
 * Usage: bench_tiles_bf16_blas [kernel[:dtype] ...] [-L len] [-r reps] [-t threads]
 *        [-p probe_keys [-n probe_rows]] [-d head_dim]
 *        (kernels by dispatch name; default: avx512_bf16 avx512 blas)
 * GFLOP/s counts causal attention as 2 L^2 d (QKᵀ + PV over the visible half); the
 * rate per CPU-second (process CPU time) is also given, steadier on a busy machine. */
#include "rb_kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds of the whole process: on a machine shared with other jobs, the
 * per-core rate work / cpu_time is far steadier than wall-clock time. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double best_cpu; /* best CPU seconds of the last timing */

static float *rand_mat(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    if (!x)
        return NULL;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    return x;
}

/* Best time of reps runs of one causal tile (nq = nk = L, positions 0..L-1). */
static double time_causal(rb_attn_tile_fn fn, int L, int d, int reps)
{
    float *q = rand_mat((size_t)L * d, 1), *k = rand_mat((size_t)L * d, 2);
    float *v = rand_mat((size_t)L * d, 3);
    int64_t *pos = malloc((size_t)L * sizeof *pos);
    double *st = malloc((size_t)L * RB_STATE_STRIDE(d) * sizeof *st);
    double best = INFINITY;
    best_cpu = INFINITY;
    if (q && k && v && pos && st) {
        for (int i = 0; i < L; i++)
            pos[i] = i;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up, not timed */
            rb_state_init(st, L, d);
            double t0 = now(), c0 = cpu_now();
            fn(q, pos, L, k, v, pos, L, d, 1.0 / sqrt((double)d), st);
            double t = now() - t0, c = cpu_now() - c0;
            if (r >= 0) {
                best = t < best ? t : best;
                best_cpu = c < best_cpu ? c : best_cpu;
            }
        }
    }
    free(q), free(k), free(v), free(pos), free(st);
    return best;
}

/* Best time of reps runs of nq probe rows (positions past every key) against nk keys. */
static double time_probe(rb_attn_tile_fn fn, int nq, int nk, int d, int reps)
{
    float *q = rand_mat((size_t)nq * d, 1), *k = rand_mat((size_t)nk * d, 2);
    float *v = rand_mat((size_t)nk * d, 3);
    int64_t *qp = malloc((size_t)nq * sizeof *qp), *kp = malloc((size_t)nk * sizeof *kp);
    double *st = malloc((size_t)nq * RB_STATE_STRIDE(d) * sizeof *st);
    double best = INFINITY;
    best_cpu = INFINITY;
    if (q && k && v && qp && kp && st) {
        for (int i = 0; i < nk; i++)
            kp[i] = i;
        for (int i = 0; i < nq; i++)
            qp[i] = (int64_t)nk * (i + 1) / nq;
        for (int r = 0; r < reps; r++) {
            rb_state_init(st, nq, d);
            double t0 = now(), c0 = cpu_now();
            fn(q, qp, nq, k, v, kp, nk, d, 1.0 / sqrt((double)d), st);
            double t = now() - t0, c = cpu_now() - c0;
            best = t < best ? t : best;
            best_cpu = c < best_cpu ? c : best_cpu;
        }
    }
    free(q), free(k), free(v), free(qp), free(kp), free(st);
    return best;
}

int main(int argc, char **argv)
{
    const char *names[8];
    int nn = 0, reps = 3, only_L = 0, only_t = 0, probe_keys = 0, probe_rows = 64, d = 128;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-L") && i + 1 < argc)
            only_L = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            only_t = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc)
            probe_keys = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            probe_rows = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-d") && i + 1 < argc)
            d = atoi(argv[++i]);
        else if (nn < 8)
            names[nn++] = argv[i];
    }
    if (nn == 0) {
        names[nn++] = "avx512_bf16";
        names[nn++] = "avx512";
        names[nn++] = "blas";
    }
    static const int Ls[] = {4096, 16384};
    for (int ki = 0; ki < nn; ki++) {
        rb_kernel_ops ops;
        char err[256];
        const char *dtype = strcmp(names[ki], "avx512_bf16") ? "fp32" : "bf16";
        if (rb_kernels_select_dtype(names[ki], dtype, &ops, NULL, err, sizeof err)) {
            printf("%-12s skipped: %s\n", names[ki], err);
            continue;
        }
        for (int t = 1; t <= 2; t++) {
            if (only_t && t != only_t)
                continue;
            rb_kernels_set_threads(t);
            if (probe_keys > 0) {
                const int nq = probe_rows;
                double s = time_probe(ops.tile, nq, probe_keys, d, reps);
                double bytes = 2.0 * probe_keys * d * sizeof(float);
                printf("%-12s d %3d probe %4d rows x %8d keys threads %d  best %8.4f s  "
                       "%7.2f GB/s K+V  %7.2f GFLOP/s  (%7.2f GB per CPU-second)\n",
                       names[ki], d, nq, probe_keys, t, s, bytes / s / 1e9,
                       4.0 * nq * probe_keys * d / s / 1e9, bytes / best_cpu / 1e9);
                continue;
            }
            for (size_t li = 0; li < sizeof Ls / sizeof Ls[0]; li++) {
                const int L = only_L ? only_L : Ls[li];
                if (only_L && li > 0)
                    break;
                double s = time_causal(ops.tile, L, d, reps);
                const double fl = 2.0 * L * (double)L * d;
                printf("%-12s d %3d L %6d causal threads %d  best %8.4f s  %7.2f GFLOP/s"
                       "  (%7.2f GFLOP per CPU-second)\n",
                       names[ki], d, L, t, s, fl / s / 1e9, fl / best_cpu / 1e9);
                fflush(stdout);
            }
        }
    }
    return 0;
}
