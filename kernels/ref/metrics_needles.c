/* metrics_needles.c — needle rank against the haystack: a needle's rank with the other needles of its own query left out. */
#include "rb_kernels.h"

/* rb_metrics_needle_haystack_rank: see rb_kernels.h. For needle i, the keys to take out
 * of rank[i] are the needles j of the same head and query at a position other than
 * needle i's (the accumulator never counted the key at needle i's own position), each
 * position once (two needles may name one key), and only those that scored above
 * needle i (only those were counted). O(n^2); n is at most a few hundred. */
void rb_metrics_needle_haystack_rank(int64_t n, const double *head, const double *query_pos,
                                     const double *needle_pos, const double *score,
                                     const double *rank, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        double r = rank[i];
        for (int64_t j = 0; j < n; j++) {
            if (head[j] != head[i] || query_pos[j] != query_pos[i] ||
                needle_pos[j] == needle_pos[i] || !(score[j] > score[i]))
                continue;
            int64_t first = j; /* count a position at its first needle only */
            for (int64_t k = 0; k < j; k++)
                if (head[k] == head[i] && query_pos[k] == query_pos[i] &&
                    needle_pos[k] == needle_pos[j]) {
                    first = k;
                    break;
                }
            if (first == j)
                r -= 1.0;
        }
        out[i] = r;
    }
}
