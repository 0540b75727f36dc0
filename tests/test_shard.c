/* test_shard.c — sharding layouts: bijection, runs, local order and validation messages, for every layout and many (L, N). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_mpi.h"

static int n_pass, n_fail;

/* Count one case; print its parameters when it failed. */
static void report(int ok, const char *what)
{
    if (ok) {
        n_pass++;
    } else {
        n_fail++;
        printf("FAIL %s\n", what);
    }
}

/* Everything about one (layout, L, N): returns 1 when all holds, else prints the first
 * problem (with layout, L, N, rank, local index, position) into msg. */
static int check_layout(rb_shard_layout s, int64_t L, int N, char *msg, size_t len)
{
    const char *ln = rb_shard_layout_name(s);
    char err[256];
    int ok = 1;
    unsigned char *seen = calloc((size_t)L, 1);
    if (!seen) {
        snprintf(msg, len, "out of memory");
        return 0;
    }
    if (rb_shard_check(s, L, N, err, sizeof err) != RB_OK) {
        snprintf(msg, len, "%s L=%lld N=%d: valid input rejected: %s", ln, (long long)L, N, err);
        ok = 0;
        goto done;
    }
    int64_t nloc = rb_shard_local_count(s, L, N);
    if (nloc * N != L) {
        snprintf(msg, len, "%s L=%lld N=%d: local_count %lld * N != L", ln, (long long)L, N,
                 (long long)nloc);
        ok = 0;
        goto done;
    }
    for (int r = 0; r < N && ok; r++) {
        rb_shard_run runs[RB_SHARD_MAX_RUNS];
        int nr = rb_shard_runs(s, L, N, r, runs);
        if (nr < 1 || nr > RB_SHARD_MAX_RUNS) {
            snprintf(msg, len, "%s L=%lld N=%d rank %d: %d runs", ln, (long long)L, N, r, nr);
            ok = 0;
            break;
        }
        int run = 0;
        int64_t in_run = 0, run_total = 0;
        for (int q = 0; q < nr; q++)
            run_total += runs[q].count;
        if (run_total != nloc) {
            snprintf(msg, len, "%s L=%lld N=%d rank %d: runs cover %lld positions, not %lld",
                     ln, (long long)L, N, r, (long long)run_total, (long long)nloc);
            ok = 0;
            break;
        }
        int64_t prev = -1;
        for (int64_t i = 0; i < nloc; i++) {
            int64_t g = rb_shard_global(s, L, N, r, i);
            int orank = -1;
            int64_t oloc = -1;
            while (run < nr && in_run >= runs[run].count) {
                run++;
                in_run = 0;
            }
            int64_t rg = run < nr ? runs[run].start + in_run * runs[run].stride : -1;
            in_run++;
            if (g < 0 || g >= L) {
                snprintf(msg, len, "%s L=%lld N=%d rank %d local %lld: global %lld out of range",
                         ln, (long long)L, N, r, (long long)i, (long long)g);
                ok = 0;
                break;
            }
            if (seen[g]) {
                snprintf(msg, len, "%s L=%lld N=%d rank %d local %lld: global %lld held twice",
                         ln, (long long)L, N, r, (long long)i, (long long)g);
                ok = 0;
                break;
            }
            seen[g] = 1;
            rb_shard_owner(s, L, N, g, &orank, &oloc);
            if (orank != r || oloc != i) {
                snprintf(msg, len, "%s L=%lld N=%d: global(%d,%lld)=%lld but owner(%lld)=(%d,%lld)",
                         ln, (long long)L, N, r, (long long)i, (long long)g, (long long)g, orank,
                         (long long)oloc);
                ok = 0;
                break;
            }
            if (g <= prev) {
                snprintf(msg, len, "%s L=%lld N=%d rank %d local %lld: global %lld not above %lld",
                         ln, (long long)L, N, r, (long long)i, (long long)g, (long long)prev);
                ok = 0;
                break;
            }
            if (rg != g) {
                snprintf(msg, len, "%s L=%lld N=%d rank %d local %lld: runs give %lld, global %lld",
                         ln, (long long)L, N, r, (long long)i, (long long)rg, (long long)g);
                ok = 0;
                break;
            }
            prev = g;
        }
        /* Layout-specific shape. */
        if (ok && s == RB_SHARD_ZIGZAG) {
            int64_t c = L / (2 * N);
            if (nr != 2 || runs[0].start != r * c || runs[1].start != (2 * N - 1 - r) * c ||
                runs[0].count != c || runs[1].count != c) {
                snprintf(msg, len, "zigzag L=%lld N=%d rank %d: not chunks %d and %d", (long long)L,
                         N, r, r, 2 * N - 1 - r);
                ok = 0;
            }
        }
        if (ok && s == RB_SHARD_STRIPED &&
            (nr != 1 || runs[0].start != r || runs[0].stride != N)) {
            snprintf(msg, len, "striped L=%lld N=%d rank %d: run not (r, N)", (long long)L, N, r);
            ok = 0;
        }
        if (ok && s == RB_SHARD_CONTIGUOUS &&
            (nr != 1 || runs[0].start != r * nloc || runs[0].stride != 1)) {
            snprintf(msg, len, "contiguous L=%lld N=%d rank %d: run not [r*L/N, ...)", (long long)L,
                     N, r);
            ok = 0;
        }
    }
    for (int64_t g = 0; ok && g < L; g++)
        if (!seen[g]) {
            snprintf(msg, len, "%s L=%lld N=%d: global %lld held by nobody", ln, (long long)L, N,
                     (long long)g);
            ok = 0;
        }
done:
    free(seen);
    return ok;
}

int main(void)
{
    printf("test_shard: exact checks (integer positions): bijection (rank, local) <-> global, "
           "increasing local order, runs == rb_shard_global, layout shapes, validation messages\n");
    const rb_shard_layout layouts[] = {RB_SHARD_CONTIGUOUS, RB_SHARD_ZIGZAG, RB_SHARD_STRIPED};
    char msg[512], err[256], what[640];

    for (int li = 0; li < 3; li++) {
        rb_shard_layout s = layouts[li];
        const char *ln = rb_shard_layout_name(s);
        snprintf(what, sizeof what, "name/parse round trip of %s", ln);
        report(rb_shard_layout_parse(ln) == (int)s, what);

        for (int N = 1; N <= 8; N++) {
            int64_t m = rb_shard_multiple(s, N);
            snprintf(what, sizeof what, "%s N=%d: multiple %lld", ln, N, (long long)m);
            report(m == (s == RB_SHARD_ZIGZAG ? 2 * N : N), what);
            const int64_t mults[] = {1, 2, 3, 7, 16, 125};
            for (int k = 0; k < 6; k++) {
                int64_t L = m * mults[k];
                int ok = check_layout(s, L, N, msg, sizeof msg);
                report(ok, msg);
            }
            /* Bad L: not a multiple (when such exists), zero, negative. */
            if (m > 1) {
                int64_t L = 5 * m + 1;
                char want[200];
                snprintf(want, sizeof want,
                         "seq_len %lld is not a multiple of %lld required by %s on %d ranks",
                         (long long)L, (long long)m, ln, N);
                err[0] = '\0';
                int rc = rb_shard_check(s, L, N, err, sizeof err);
                snprintf(what, sizeof what, "%s N=%d L=%lld: rc %d, message \"%s\", want \"%s\"",
                         ln, N, (long long)L, rc, err, want);
                report(rc == RB_EINVAL && strcmp(err, want) == 0, what);
            }
            for (int64_t L = -2; L <= 0; L++) {
                err[0] = '\0';
                int rc = rb_shard_check(s, L, N, err, sizeof err);
                snprintf(what, sizeof what, "%s N=%d L=%lld: rc %d message \"%s\"", ln, N,
                         (long long)L, rc, err);
                report(rc == RB_EINVAL && err[0] != '\0', what);
            }
        }
        err[0] = '\0';
        int rc = rb_shard_check(s, 64, 0, err, sizeof err);
        snprintf(what, sizeof what, "%s N=0: rc %d message \"%s\"", ln, rc, err);
        report(rc == RB_EINVAL && err[0] != '\0', what);
    }
    report(rb_shard_layout_parse("ring") == -1 && rb_shard_layout_parse(NULL) == -1 &&
               rb_shard_layout_parse("Zigzag") == -1,
           "unknown layout names must parse to -1");
    err[0] = '\0';
    report(rb_shard_check((rb_shard_layout)7, 64, 2, err, sizeof err) == RB_EINVAL && err[0],
           "unknown layout value must be rejected with a message");

    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
