/* rb_mpi.h — public interface of mpi/: sharding layouts, ring attention, probe rows
 * reduced with a merge MPI_Op, and hwloc topology/binding collection. No HDF5. */
#ifndef RB_MPI_H
#define RB_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "rb_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------
 * Sharding layouts (mpi/shard.c): pure functions, no communication.
 *   contiguous: rank r holds [r*L/N, (r+1)*L/N)                 needs L % N == 0
 *   zigzag:     2N chunks of c = L/(2N); rank r holds chunks r and 2N-1-r
 *                                                               needs L % (2N) == 0
 *   striped:    rank r holds positions r, r+N, r+2N, ...        needs L % N == 0
 * Local index order is always increasing global position.
 * ------------------------------------------------------------------------------- */
typedef enum {
    RB_SHARD_CONTIGUOUS = 0,
    RB_SHARD_ZIGZAG = 1,
    RB_SHARD_STRIPED = 2
} rb_shard_layout;

/* A run of global positions: start, start+stride, ..., count of them. */
typedef struct {
    int64_t start, stride, count;
} rb_shard_run;

#define RB_SHARD_MAX_RUNS 2

const char *rb_shard_layout_name(rb_shard_layout s);
int rb_shard_layout_parse(const char *name); /* -1 if unknown */

/* Multiple of which L must be for this layout and rank count (N or 2N). */
int64_t rb_shard_multiple(rb_shard_layout s, int nranks);

/* RB_OK if (L, nranks) is valid for the layout, else RB_EINVAL with a message
 * "seq_len L is not a multiple of M required by <layout> on N ranks". */
int rb_shard_check(rb_shard_layout s, int64_t L, int nranks, char *err, size_t errlen);

/* Rows held by each rank (L / N for every layout). */
int64_t rb_shard_local_count(rb_shard_layout s, int64_t L, int nranks);

/* Global position of local index i on rank r (0 <= i < local_count). */
int64_t rb_shard_global(rb_shard_layout s, int64_t L, int nranks, int rank, int64_t i);

/* Owner rank and local index of global position g (0 <= g < L). */
void rb_shard_owner(rb_shard_layout s, int64_t L, int nranks, int64_t g, int *rank,
                    int64_t *local);

/* Rank r's positions as at most RB_SHARD_MAX_RUNS runs, in local order; returns the
 * number of runs. */
int rb_shard_runs(rb_shard_layout s, int64_t L, int nranks, int rank,
                  rb_shard_run runs[RB_SHARD_MAX_RUNS]);

/* ---------------------------------------------------------------------------------
 * Timings of one distributed attention call, seconds, this rank.
 * ------------------------------------------------------------------------------- */
typedef struct {
    double compute_s;   /* inside tile kernels */
    double comm_wait_s; /* blocked in sends/receives/reductions (the probe balance's
                         * whole exchange step, its pricing pass of the keys included;
                         * the agreement collectives at a call's start and end are in
                         * total_s only) */
    double merge_s;     /* merging row states */
    double total_s;     /* wall time of the whole call */
    int64_t keys_sent;  /* probe: keys this rank handed to others to even out the work */
    int64_t keys_received; /* probe: keys it took from others (ring: both 0) */
} rb_timing;

/* Optional progress callback: called on every rank after each ring step / reduction
 * with (step done, steps total, user). May be NULL. */
typedef void (*rb_progress_fn)(int step, int nsteps, void *user);

/* rb_ring_attention: causal attention of this rank's query rows against every rank's
 * keys. Collective over comm; every rank passes the same nk (shards are equal).
 * q[nq][d], q_pos: this rank's rotated queries; k, v [nk][d], k_pos: this rank's
 * rotated keys/values. The K/V/position block travels around the ring (step s
 * computes against the block that started on rank (rank - s) mod N); each step's
 * tile result goes into a fresh state that is merged into `state`
 * (nq * RB_STATE_STRIDE(d) doubles, initialised here). The next block is received
 * (MPI_Irecv/MPI_Isend into a second buffer) while this one is computed, the tile
 * split into up to 8 key ranges of at least 4096 keys with MPI_Testall between them
 * (Open MPI moves a message on only inside MPI calls); timing: comm_wait_s is the time
 * in those calls and in the MPI_Waitall that ends each step.
 * Returns RB_OK, RB_ENOMEM or RB_EMPI (message in err). */
int rb_ring_attention(MPI_Comm comm, const rb_kernel_ops *ops, const float *q,
                      const int64_t *q_pos, int64_t nq, const float *k, const float *v,
                      const int64_t *k_pos, int64_t nk, int d, double scale,
                      double *state, rb_timing *t, rb_progress_fn progress,
                      void *progress_user, char *err, size_t errlen);

/* rb_probe_attention: every rank passes the same nq probe query rows (rotated, with
 * positions) and its own keys; each computes partial states against its keys, and
 * the states are combined on `root` by MPI_Reduce with the merge MPI_Op. On root,
 * state (nq * RB_STATE_STRIDE(d) doubles) receives the exact row states; on other
 * ranks it is scratch. v may be NULL where ops->v_optional: lse and entropy only
 * (the states' outputs are then unspecified). Collective.
 *
 * Work is evened out first: a key at position p costs the probe rows at or after p
 * (its visible pairs) plus RB_PROBE_KEY_COST (its stream), and with log-spaced probe
 * rows the ranks holding the low positions (rank 0 under zigzag and contiguous) carry
 * far more than the mean (1.18x at 2 ranks, 1.63x at 8 and 2.35x at 64: the default
 * study's 512 probe rows at 1M keys, zigzag). When the largest cost exceeds the mean by
 * more than
 * RB_PROBE_BALANCE_TOL, ranks above the mean hand their lowest-position keys (k, v
 * and positions) to ranks below it (rb_probe_balance_plan), and each rank computes
 * its remaining keys and the ones it took (in runs of RB_PROBE_BALANCE_QUANTUM keys).
 * Only the summation order changes. It is
 * skipped when nq = 0, when a rank's k_pos are not ascending, when a count would
 * overflow an MPI int, when some ranks with keys pass v and others NULL, when memory
 * runs out, or with ROPEBENCH_PROBE_BALANCE=0 on any rank; t->keys_sent and
 * t->keys_received say what moved, and the exchange's time is in t->comm_wait_s. */
int rb_probe_attention(MPI_Comm comm, int root, const rb_kernel_ops *ops,
                       const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                       const float *v, const int64_t *k_pos, int64_t nk, int d,
                       double scale, double *state, rb_timing *t, char *err,
                       size_t errlen);

/* rb_probe_balance_plan: rank `from`'s row of the transfers that even out per-rank
 * costs cost[0..n), in cost units, into give[n] (give[r]: what `from` hands to rank
 * r). Ranks above the mean give their excess to ranks below it, givers and takers
 * matched in rank order, so every rank computes the same plan from the same costs;
 * O(n) time and memory for one row. All 0 when n < 2, `from` is outside [0, n), the
 * total is not positive, the largest cost is within tol (a fraction) of the mean, or
 * `from` is not above the mean. Returns the number of nonzero entries. Pure. */
int rb_probe_balance_plan(const double *cost, int n, double tol, int from, double *give);

/* Cost model and threshold of the probe balance (rb_probe_attention). Keys move in
 * runs of RB_PROBE_BALANCE_QUANTUM from the start of a rank's keys (the last run may
 * end at its last key): 64 is the key block of the fast kernels, so a shard whose
 * length is a multiple of 64 keeps the blocks of the one-rank run, and with them each
 * block's maximum, hence the bits of each exp (cuts anywhere put the needles at the
 * end of a shard into other blocks, and the 2-rank default study's needle row 1.1e-5
 * nats from the 1-rank one). */
#define RB_PROBE_KEY_COST 16
#define RB_PROBE_BALANCE_TOL 0.02
#define RB_PROBE_BALANCE_QUANTUM 64

/* Create the MPI datatype of one row state (RB_STATE_STRIDE(d) doubles, contiguous)
 * and the commutative merge MPI_Op that applies rb_state_merge; free both with
 * rb_mpi_merge_free. The op reads d back from the datatype's size. */
int rb_mpi_merge_create(int d, MPI_Datatype *type, MPI_Op *op);
void rb_mpi_merge_free(MPI_Datatype *type, MPI_Op *op);

/* rb_mpi_env_defaults: MPI settings this program needs whichever way it is started
 * (alone, under plain mpirun, or through scripts/mpirun.sh), set in the environment
 * before MPI_Init reads it, each only where the user has not set it. With Open MPI 4:
 * OMPI_MCA_io=romio321, i.e. ROMIO for MPI-IO, as the tests and scripts/mpirun.sh run
 * it. Its OMPIO has hung in collective HDF5 writes, and its shared-file-pointer
 * components, which OMPIO queries on every open, overflow a buffer on paths of ~240
 * characters and more (a results file under a deep directory aborted the run with a
 * backtrace and left an empty file). Other MPIs: nothing. Call it first in main. */
void rb_mpi_env_defaults(void);

/* rb_mpi_io_names: the names under which to open file `path` through MPI-IO (HDF5's
 * MPI-IO driver), in order. ROMIO (Open MPI's io component romio321, MPICH) reads the
 * text before a name's first ':' as a file-system type: it refuses one it does not
 * know ('run_10:00.h5') and, worse, opens 'o.h5' for 'nfs:o.h5' (a type it knows);
 * "ufs:" + name is the plain Unix file system to it. OMPIO takes names as they are (and
 * would make a file literally named "ufs:..."). So a name with a ':' is made absolute
 * (it then starts with '/', never with a type) into first, and "ufs:" + that goes into
 * second, to be tried only when every rank failed with first; returns 2. A name without
 * ':' is copied into first as it is; returns 1. Returns 0 when a name does not fit len
 * bytes or the working directory cannot be read (then open `path` as it is). */
int rb_mpi_io_names(const char *path, char *first, char *second, size_t len);

/* ---------------------------------------------------------------------------------
 * Topology (mpi/topo.c, hwloc)
 * ------------------------------------------------------------------------------- */
typedef struct {
    int nranks;
    int nhosts;
    char **rank_host;     /* [nranks] hostname of each rank (same on every rank) */
    char **rank_binding;  /* [nranks] "cpuset 0x3 = PU 0-1" style binding summary */
    char **host_name;     /* [nhosts] distinct hosts, in order of first rank */
    char **host_xml;      /* [nhosts] hwloc XML topology of each host */
    char hwloc_version[32];
    char summary[256];    /* this host: "1 package, 2 cores, 2 PUs, L3 32 MiB" */
} rb_topo;

/* ---------------------------------------------------------------------------------
 * Agreement on a local failure (mpi/mpi_util.c).
 * ------------------------------------------------------------------------------- */

/* rb_mpi_agree_err: collective over comm, for a step whose failure can be local to one
 * rank (memory, a read, a kernel refusal) and is followed by collectives that the
 * other ranks would wait in for good. rc: this rank's result (0 or a negative RB_E
 * code), err: its message when rc < 0. Returns 0 on every rank when every rc was 0;
 * otherwise the code of the lowest failing rank K on every rank, and every rank but K
 * has err replaced by "rank K: <K's message>" (at most 511 bytes of it), so that
 * whichever rank prints names the cause. If the agreement itself fails: RB_EMPI. */
int rb_mpi_agree_err(MPI_Comm comm, int rc, char *err, size_t errlen);

/* Collective: gather hostnames and bindings from every rank, export the hwloc XML on
 * the first rank of each host; every rank ends with identical contents (XML and
 * strings broadcast), as HDF5 attribute/object creation needs. */
int rb_topo_collect(MPI_Comm comm, rb_topo *t, char *err, size_t errlen);
void rb_topo_free(rb_topo *t);

/* Non-collective local summary for `ropebench info` (no MPI needed). */
int rb_topo_local_summary(char *buf, size_t len, char *binding, size_t blen);

#ifdef __cplusplus
}
#endif
#endif
