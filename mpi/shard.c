/* shard.c — sharding layouts (contiguous, zigzag, striped) as pure functions between local index and global position. */
#include "rb_mpi.h"

#include <string.h>

static const char *const layout_names[] = {"contiguous", "zigzag", "striped"};
#define N_LAYOUTS ((int)(sizeof layout_names / sizeof layout_names[0]))

/* Canonical layout name; "unknown" outside the enum. */
const char *rb_shard_layout_name(rb_shard_layout s)
{
    if ((int)s < 0 || (int)s >= N_LAYOUTS)
        return "unknown";
    return layout_names[s];
}

/* Inverse of rb_shard_layout_name (exact); -1 for NULL or unknown. */
int rb_shard_layout_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < N_LAYOUTS; i++)
        if (strcmp(name, layout_names[i]) == 0)
            return i;
    return -1;
}

/* 2N for zigzag, N otherwise (N itself for an unknown layout). */
int64_t rb_shard_multiple(rb_shard_layout s, int nranks)
{
    return s == RB_SHARD_ZIGZAG ? 2 * (int64_t)nranks : (int64_t)nranks;
}

/* Contract in rb_mpi.h; also rejects an unknown layout, nranks < 1 and L < 1. */
int rb_shard_check(rb_shard_layout s, int64_t L, int nranks, char *err, size_t errlen)
{
    if ((int)s < 0 || (int)s >= N_LAYOUTS)
        return rb_errf(err, errlen, RB_EINVAL, "shard_layout %d is unknown", (int)s);
    if (nranks < 1)
        return rb_errf(err, errlen, RB_EINVAL, "rank count %d must be at least 1", nranks);
    if (L < 1)
        return rb_errf(err, errlen, RB_EINVAL, "seq_len %lld must be positive",
                       (long long)L);
    int64_t m = rb_shard_multiple(s, nranks);
    if (L % m != 0)
        return rb_errf(err, errlen, RB_EINVAL,
                       "seq_len %lld is not a multiple of %lld required by %s on %d ranks",
                       (long long)L, (long long)m, rb_shard_layout_name(s), nranks);
    return RB_OK;
}

/* L / N for every layout (valid (L, N) assumed). */
int64_t rb_shard_local_count(rb_shard_layout s, int64_t L, int nranks)
{
    (void)s;
    return L / nranks;
}

/* Contract in rb_mpi.h; (L, nranks) must pass rb_shard_check. */
int64_t rb_shard_global(rb_shard_layout s, int64_t L, int nranks, int rank, int64_t i)
{
    switch (s) {
    case RB_SHARD_ZIGZAG: {
        int64_t c = L / (2 * (int64_t)nranks);
        if (i < c)
            return (int64_t)rank * c + i;
        return (2 * (int64_t)nranks - 1 - rank) * c + (i - c);
    }
    case RB_SHARD_STRIPED:
        return (int64_t)rank + i * nranks;
    case RB_SHARD_CONTIGUOUS:
    default:
        return (int64_t)rank * (L / nranks) + i;
    }
}

/* Contract in rb_mpi.h; inverse of rb_shard_global. */
void rb_shard_owner(rb_shard_layout s, int64_t L, int nranks, int64_t g, int *rank,
                    int64_t *local)
{
    int r;
    int64_t i;
    switch (s) {
    case RB_SHARD_ZIGZAG: {
        int64_t c = L / (2 * (int64_t)nranks);
        int64_t chunk = g / c;
        if (chunk < nranks) {
            r = (int)chunk;
            i = g % c;
        } else {
            r = (int)(2 * (int64_t)nranks - 1 - chunk);
            i = c + g % c;
        }
        break;
    }
    case RB_SHARD_STRIPED:
        r = (int)(g % nranks);
        i = g / nranks;
        break;
    case RB_SHARD_CONTIGUOUS:
    default: {
        int64_t c = L / nranks;
        r = (int)(g / c);
        i = g % c;
        break;
    }
    }
    if (rank)
        *rank = r;
    if (local)
        *local = i;
}

/* Contract in rb_mpi.h: contiguous and striped are one run, zigzag always two runs of
 * L/(2N) (also for N = 1, where the two chunks happen to be adjacent). */
int rb_shard_runs(rb_shard_layout s, int64_t L, int nranks, int rank,
                  rb_shard_run runs[RB_SHARD_MAX_RUNS])
{
    switch (s) {
    case RB_SHARD_ZIGZAG: {
        int64_t c = L / (2 * (int64_t)nranks);
        runs[0] = (rb_shard_run){(int64_t)rank * c, 1, c};
        runs[1] = (rb_shard_run){(2 * (int64_t)nranks - 1 - rank) * c, 1, c};
        return 2;
    }
    case RB_SHARD_STRIPED:
        runs[0] = (rb_shard_run){rank, nranks, L / nranks};
        return 1;
    case RB_SHARD_CONTIGUOUS:
    default:
        runs[0] = (rb_shard_run){(int64_t)rank * (L / nranks), 1, L / nranks};
        return 1;
    }
}
