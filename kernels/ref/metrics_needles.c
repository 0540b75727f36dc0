/* metrics_needles.c — needle rank against the haystack: a needle's rank with the other needles of its own query left out. */
#include "rb_kernels.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    double head, query;
    int64_t i;
} needle_key;

static int cmp_needle(const void *a, const void *b)
{
    const needle_key *x = a, *y = b;
    if (x->head != y->head)
        return x->head < y->head ? -1 : 1;
    if (x->query != y->query)
        return x->query < y->query ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* rb_metrics_needle_haystack_rank: see rb_kernels.h. The entries are grouped by (head,
 * query) first (a sort, O(n log n)), so the pairwise work is only within a group, whose
 * size is a query's needle count. For needle i, the keys to take out of rank[i] are
 * the group's needles at a position other than needle i's (the accumulator never
 * counted the key at needle i's own position), each position once (two needles may
 * name one key), and only those that scored above needle i (only those were counted). */
int rb_metrics_needle_haystack_rank(int64_t n, const double *head, const double *query_pos,
                                    const double *needle_pos, const double *score,
                                    const double *rank, double *out)
{
    if (n <= 0)
        return RB_OK;
    needle_key *k = malloc((size_t)n * sizeof *k);
    unsigned char *first = malloc((size_t)n);
    if (!k || !first) {
        free(k);
        free(first);
        return RB_ENOMEM;
    }
    for (int64_t i = 0; i < n; i++)
        k[i] = (needle_key){head[i], query_pos[i], i};
    qsort(k, (size_t)n, sizeof *k, cmp_needle);
    for (int64_t g0 = 0, g1; g0 < n; g0 = g1) {
        for (g1 = g0 + 1; g1 < n && k[g1].head == k[g0].head && k[g1].query == k[g0].query;)
            g1++;
        if (g1 - g0 > RB_NEEDLE_GROUP_MAX) { /* not from ropebench: not derived */
            for (int64_t a = g0; a < g1; a++)
                out[k[a].i] = NAN;
            continue;
        }
        /* first[b]: entry b is the group's first needle at its position (a position
         * is counted once, at that needle) */
        for (int64_t b = g0; b < g1; b++) {
            first[b] = 1;
            for (int64_t c = g0; c < b && first[b]; c++)
                first[b] = needle_pos[k[c].i] != needle_pos[k[b].i];
        }
        for (int64_t a = g0; a < g1; a++) {
            const int64_t i = k[a].i;
            double r = rank[i];
            for (int64_t b = g0; b < g1; b++) {
                const int64_t j = k[b].i;
                if (first[b] && needle_pos[j] != needle_pos[i] && score[j] > score[i])
                    r -= 1.0;
            }
            out[i] = r;
        }
    }
    free(k);
    free(first);
    return RB_OK;
}
