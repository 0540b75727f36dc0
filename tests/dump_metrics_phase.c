/* dump_metrics_phase.c — prints every analytic phase metric for cases read from stdin, for the numpy oracle (oracle_metrics_phase.py) to compare; --bench times D(delta).
 *
 * Usage: dump_metrics_phase                  cases on stdin, results on stdout
 *        dump_metrics_phase --bench L0 np nd [L]   time rb_metrics_phase_distance
 * A case is a block of lines "key values..." ending with "end":
 *   L0 N | L N | nbins K | beta F S | max_delta M | max_delta_D M
 *   inv_freq_base v0 v1 ... | inv_freq v0 ... | w v0 ... | delta v0 ...
 * Output per case (all %.17g), then "end":
 *   bins n e_0 .. e_n          (or "bins error")
 *   bands b_0 .. b_{np-1}
 *   critical c
 *   pair j trained_span max_phase turns ood
 *   dist i D D_high D_mid D_low ood_count ood_energy   (or "dist error MESSAGE")
 *   decay i roformer B
 *   first_negative d
 *   d_leaves_zero d            (or "d_leaves_zero error MESSAGE") */
#include "rb_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXV 4096

typedef struct {
    int64_t L0, L, max_delta, max_delta_D;
    int nbins;
    double bf, bs;
    double base[MAXV], inv[MAXV], w[MAXV], delta[MAXV];
    int nb, ni, nw, ndl;
} dcase;

/* Read the numbers after the key on one line into v (capacity MAXV); returns count. */
static int read_list(char *rest, double *v)
{
    int n = 0;
    for (char *t = strtok(rest, " \t\r\n"); t && n < MAXV; t = strtok(NULL, " \t\r\n"))
        v[n++] = strtod(t, NULL);
    return n;
}

static void run_case(const dcase *c)
{
    static int64_t edges[MAXV + 1];
    static int band[MAXV], ood[MAXV];
    static double span[MAXV], mx[MAXV], turns[MAXV], D[MAXV], Db[3 * MAXV], oc[MAXV],
        oe[MAXV], rf[MAXV], B[MAXV];
    const int np = c->nb;
    if (c->nbins > MAXV) {
        printf("bins error\n");
    } else {
        int n = rb_metrics_bins(c->L, c->nbins, edges);
        if (n < 0) {
            printf("bins error\n");
        } else {
            printf("bins %d", n);
            for (int i = 0; i <= n; i++)
                printf(" %lld", (long long)edges[i]);
            printf("\n");
        }
    }
    rb_metrics_bands(c->base, np, c->L0, c->bf, c->bs, band);
    printf("bands");
    for (int j = 0; j < np; j++)
        printf(" %d", band[j]);
    printf("\n");
    int crit = rb_metrics_phase_pairs(c->base, c->inv, np, c->L0, c->L, span, mx, turns, ood);
    printf("critical %d\n", crit);
    for (int j = 0; j < np && crit >= 0; j++)
        printf("pair %d %.17g %.17g %.17g %d\n", j, span[j], mx[j], turns[j], ood[j]);
    char err[256] = "";
    int rc = rb_metrics_phase_distance(c->base, c->inv, c->w, band, np, c->L0, c->delta,
                                       c->ndl, D, Db, oc, oe, err, sizeof err);
    if (rc) {
        printf("dist error %s\n", err);
    } else {
        for (int i = 0; i < c->ndl; i++)
            printf("dist %d %.17g %.17g %.17g %.17g %.17g %.17g\n", i, D[i], Db[i],
                   Db[c->ndl + i], Db[2 * c->ndl + i], oc[i], oe[i]);
    }
    rb_metrics_decay_bounds(c->inv, np, c->delta, c->ndl, rf, B);
    for (int i = 0; i < c->ndl; i++)
        printf("decay %d %.17g %.17g\n", i, rf[i], B[i]);
    printf("first_negative %lld\n",
           (long long)rb_metrics_first_negative_B(c->inv, np, c->max_delta));
    int64_t dz;
    rc = rb_metrics_D_leaves_zero(c->base, c->inv, c->w, np, c->L0, c->max_delta_D,
                                  RB_METRICS_D_ZERO_TOL, &dz, err, sizeof err);
    if (rc)
        printf("d_leaves_zero error %s\n", err);
    else
        printf("d_leaves_zero %lld\n", (long long)dz);
    printf("end\n");
    fflush(stdout);
}

/* Time D(delta) for the default study's shape: base 10000 schedule with factor-8 PI,
 * nd log-spaced distances up to L, weights 1. */
static int bench(int64_t L0, int np, int nd, int64_t L)
{
    double *base = malloc(sizeof(double) * (size_t)np * 3);
    double *del = malloc(sizeof(double) * (size_t)nd * 6);
    int *band = malloc(sizeof(int) * (size_t)np);
    int rc = 1;
    if (!base || !del || !band)
        goto cleanup;
    double *inv = base + np, *w = inv + np;
    double *D = del + nd, *Db = D + nd;
    for (int j = 0; j < np; j++) {
        base[j] = pow(10000.0, -(double)j / np);
        inv[j] = base[j] / 8;
        w[j] = 1;
    }
    for (int i = 0; i < nd; i++)
        del[i] = floor(exp(log((double)L) * (i + 1) / nd));
    rb_metrics_bands(base, np, L0, 32, 1, band);
    struct timespec t0, t1;
    char err[256];
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = rb_metrics_phase_distance(base, inv, w, band, np, L0, del, nd, D, Db, NULL, NULL,
                                   err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t fn = rb_metrics_first_negative_B(inv, np, L);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s2 = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    /* D leaves 0 for method none (inv = base), the longest scan: delta up to L0 */
    int64_t dz = -1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rc == RB_OK)
        rc = rb_metrics_D_leaves_zero(base, base, w, np, L0, L - 1, RB_METRICS_D_ZERO_TOL, &dz,
                                      err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s3 = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("L0 %lld np %d nd %d L %lld threads %d: D %.3f s (D[last] %.6g), "
           "first_negative_B %lld in %.3f s, D leaves 0 (method none) at %lld in %.3f s\n",
           (long long)L0, np, nd, (long long)L, rb_kernels_threads(), s, D[nd - 1],
           (long long)fn, s2, (long long)dz, s3);
cleanup:
    free(base);
    free(del);
    free(band);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "--bench"))
        return bench(strtoll(argv[2], NULL, 10), atoi(argv[3]), atoi(argv[4]),
                     argc > 5 ? strtoll(argv[5], NULL, 10) : 1048576);
    static dcase c;
    static char line[1 << 20];
    memset(&c, 0, sizeof c);
    while (fgets(line, sizeof line, stdin)) {
        char *sp = line + strcspn(line, " \t\r\n");
        char save = *sp;
        *sp = '\0';
        char *rest = save ? sp + 1 : sp;
        if (!strcmp(line, "end")) {
            run_case(&c);
            memset(&c, 0, sizeof c);
        } else if (!strcmp(line, "L0"))
            c.L0 = strtoll(rest, NULL, 10);
        else if (!strcmp(line, "L"))
            c.L = strtoll(rest, NULL, 10);
        else if (!strcmp(line, "max_delta"))
            c.max_delta = strtoll(rest, NULL, 10);
        else if (!strcmp(line, "max_delta_D"))
            c.max_delta_D = strtoll(rest, NULL, 10);
        else if (!strcmp(line, "nbins"))
            c.nbins = atoi(rest);
        else if (!strcmp(line, "beta")) {
            double v[2] = {0, 0};
            read_list(rest, v);
            c.bf = v[0];
            c.bs = v[1];
        } else if (!strcmp(line, "inv_freq_base"))
            c.nb = read_list(rest, c.base);
        else if (!strcmp(line, "inv_freq"))
            c.ni = read_list(rest, c.inv);
        else if (!strcmp(line, "w"))
            c.nw = read_list(rest, c.w);
        else if (!strcmp(line, "delta"))
            c.ndl = read_list(rest, c.delta);
        else if (line[0]) {
            fprintf(stderr, "dump_metrics_phase: unknown key %s\n", line);
            return 2;
        }
    }
    return 0;
}
