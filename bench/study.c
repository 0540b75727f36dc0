/* study.c — `ropebench run`: validates the study, then for every case generates the
 * rank's shard, applies RoPE, runs ring (full) or probe attention, and writes rows,
 * timings and provenance through the results interface. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rb_bench.h"
#include "rb_build.h"
#include "rb_results.h"

extern char *openblas_get_config(void);

#define RB_DUMP_LIMIT_BYTES (256.0 * 1048576.0) /* --dump-inputs: q+k+v per case */

typedef struct {
    const rb_config *cfg;
    MPI_Comm comm;
    int rank, nranks;
    rb_kernel_ops ops;
    char kernel_detail[256]; /* rank 0's ops.detail, which ops.detail then points to */
    rb_results *res;
    int dump;
    int resume;
    int quiet;
    int case_no, n_cases;
    int n_ran;     /* cases computed by this run (the rest were kept from the file) */
    int line_open; /* rank 0: a case's progress line waits for its end */
    int n_kept;      /* cases complete in the file: flushed by this run or kept on resume */
    int n_flushed;   /* flushes of the file that succeeded in this run */
    int abort_after; /* test hook: ROPEBENCH_TEST_ABORT_AFTER=n cases */
    const char *final_path; /* where the results go when they are written under a */
    int staged;             /* temporary name until the first case is finished, */
    int *hold_fd;           /* while rank 0 holds the old file's writer lock here */
    double t_start;
    double peak_sum[2]; /* this run's FMA peak and triad, sums over its ranks (every rank) */
    int peaks_quick;    /* those measured in miniature (ROPEBENCH_TEST_QUICK_PEAKS) */
    int over_peak;      /* rank 0: cases of this run above 100 % of peak_sum[0] */
    double over_worst;  /* rank 0: the highest such %, for the run's last line */
    char err[5200]; /* a message may hold a path of up to 4095 bytes and its reason */
} rb_run;

/* Test hook: with ROPEBENCH_TEST_HOLD_UNTIL=PATH set, every rank waits before each
 * case it computes (once its progress line has begun; with ROPEBENCH_TEST_HOLD_FROM=N,
 * only from the study's N-th case on) until PATH exists (rb_cli_test_wait), so that a
 * test can act while a run holds its results file open, or its replacement staged. */
static void test_hold(int case_no)
{
    const char *p = getenv("ROPEBENCH_TEST_HOLD_UNTIL");
    const char *from = getenv("ROPEBENCH_TEST_HOLD_FROM");
    if (p && *p && !(from && case_no < atoi(from)))
        rb_cli_test_wait(p);
}

/* Ctrl-C and kill (SIGINT, SIGTERM, SIGHUP; mpirun passes SIGINT and SIGTERM on to
 * every rank as SIGTERM), and SIGPIPE: a write to a stderr whose reader has gone (mpirun
 * tearing the job down after another rank died first, which then never sends rank 0
 * its SIGTERM, or `2>&1 | head`), which used to kill rank 0 before it removed its lock
 * file; on rank 0: one line saying what is left where (lost when stderr is the broken
 * pipe), the run's
 * own files that hold nothing removed, then the signal's default action ends the
 * process. What the handler does follows the run's stage (stop_set), from the lock on:
 *   RB_STOP_BEFORE   nothing written yet: "before writing to FILE";
 *   RB_STOP_STAGED   FILE.partial-XXXXXX made, no case finished in it: it is removed,
 *                    FILE (the old results) is left as it was;
 *   RB_STOP_STAGED_CASE  its first case flushed, not yet renamed over FILE: kept, and
 *                    named;
 *   RB_STOP_NEW      FILE made new (an existing one is staged, or the run refused)
 *                    but never flushed, so not
 *                    readable: removed, as a failing run removes it;
 *   RB_STOP_FILE     FILE flushed (or reopened by --resume): its finished cases stay
 *                    readable for --resume;
 *   RB_STOP_QUIET    the run has said how it ended: no line.
 * The lock file is removed in every stage while the run holds it (stop_lock_live).
 * The handler reads the paths and lines set before the stage that uses them (a signal
 * fence orders the two), and calls only async-signal-safe functions. A signal the
 * process was started ignoring (nohup's SIGHUP, SIGINT of a job a script put in the
 * background) stays ignored. */
enum { RB_STOP_BEFORE, RB_STOP_STAGED, RB_STOP_STAGED_CASE, RB_STOP_NEW, RB_STOP_FILE,
       RB_STOP_QUIET, RB_STOP_NSTAGES };
static char stop_staged[PATH_MAX + 16], stop_out[PATH_MAX + 16], stop_lock[4200];
static char stop_msg[RB_STOP_NSTAGES][2 * PATH_MAX + 200];
static volatile sig_atomic_t stop_stage = RB_STOP_QUIET, stop_lock_live;
static struct stat stop_out_st; /* FILE as made, for RB_STOP_NEW (st_nlink 0: unknown) */

static void stop_signal(int sig)
{
    if (rb_cli_defer_hold(sig))
        return; /* the file is being changed: acted on at the window's end */
    const int st = stop_stage;
    const char *msg = stop_msg[st];
    if (msg[0] && write(STDERR_FILENO, msg, strlen(msg)) < 0) { /* nothing more to do */ }
    if (st == RB_STOP_STAGED) unlink(stop_staged);
    /* FILE only while the name still leads to the file this run made: another
     * process may have put its own file there since (the failure path checks the same
     * with rb_results_names_it) */
    struct stat now;
    if (st == RB_STOP_NEW && stop_out_st.st_nlink && stat(stop_out, &now) == 0 &&
        now.st_dev == stop_out_st.st_dev && now.st_ino == stop_out_st.st_ino)
        unlink(stop_out);
    if (stop_lock_live) unlink(stop_lock);
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns: the default action */
}

/* stop_set: the run is at stage st from now on (rank 0; a no-op elsewhere, where no
 * handler is installed and the stage stays RB_STOP_QUIET). */
static void stop_set(int st)
{
    atomic_signal_fence(memory_order_seq_cst);
    if (stop_lock_live) stop_stage = st;
}

/* write_window_end: every rank has finished changing the results file and the caller
 * flushed it (rc RB_OK): the window of held stop signals (rb_cli_defer_begin) ends,
 * after a barrier so that no rank acts on a signal while another still writes, and a
 * signal held inside it is acted on now (raised again: stop_signal, the stage's line,
 * the default action). On an error (rc not RB_OK) the window just ends: the run is ending anyway. */
static void write_window_end(MPI_Comm comm, int rc)
{
    if (rc == RB_OK)
        MPI_Barrier(comm);
    const int sig = rb_cli_defer_end();
    if (sig && rc == RB_OK)
        raise(sig); /* through the handler, with the stop signals blocked while it runs */
}

/* stop_cleanup_install (rank 0, holding the run's lock file `lock`): the lines for
 * results file `out` and the handler; stage RB_STOP_BEFORE. */
static void stop_cleanup_install(const char *out, const char *lock)
{
    snprintf(stop_out, sizeof stop_out, "%s", out);
    snprintf(stop_lock, sizeof stop_lock, "%s", lock);
    snprintf(stop_msg[RB_STOP_BEFORE], sizeof stop_msg[0],
             "\nropebench: interrupted before writing to %s\n", out);
    snprintf(stop_msg[RB_STOP_STAGED], sizeof stop_msg[0],
             "\nropebench: interrupted before a case was finished; %s is left as it was\n",
             out);
    snprintf(stop_msg[RB_STOP_NEW], sizeof stop_msg[0],
             "\nropebench: interrupted before anything readable was written; removed %s\n",
             out);
    snprintf(stop_msg[RB_STOP_FILE], sizeof stop_msg[0],
             "\nropebench: interrupted; the cases finished so far stay readable in %s "
             "(run again with --resume to do the rest)\n", out);
    stop_msg[RB_STOP_QUIET][0] = '\0';
    stop_lock_live = 1;
    stop_set(RB_STOP_BEFORE);
    rb_cli_stop_install(stop_signal);
}

/* stop_staged_set (rank 0): the replacement is being written under `staged` (the
 * stage RB_STOP_STAGED), for results that will be `out`. */
static void stop_staged_set(const char *staged, const char *out)
{
    snprintf(stop_staged, sizeof stop_staged, "%s", staged);
    snprintf(stop_msg[RB_STOP_STAGED_CASE], sizeof stop_msg[0],
             "\nropebench: interrupted; the finished case stays readable in %s (it did not "
             "replace %s)\n", staged, out);
    stop_set(RB_STOP_STAGED);
}

/* The end of a run that failed after its results file was opened. The file is left as
 * its last flush left it: every finished case ends with a flush, and nothing written
 * after that is trusted. It is not closed, because closing after a failed write can make
 * it unreadable (the close rewrites the superblock at offset 0, which still succeeds,
 * pointing at metadata that could not be written past the point of failure) or hang
 * (the ranks take different paths inside H5Fclose, one flushing metadata collectively,
 * another truncating: seen with a full file system, libhdf5 1.10.8 and ROMIO); and so
 * MPI_Finalize is not called either (HDF5 closes its open files there). The ranks meet
 * first, so that rank 0's lines are out before mpirun ends the job, under a watchdog in
 * case one of them is stuck in a collective: after RB_FAIL_WATCHDOG_S seconds a rank
 * says so and exits anyway. Rank 0 removes the run's lock file. Exits RB_EXIT_FAIL. */
#define RB_FAIL_WATCHDOG_S 20
static char watchdog_msg[160];
static size_t watchdog_len;
static char watchdog_unlink[4200];

static void fail_watchdog_fire(int sig)
{
    (void)sig;
    if (write(STDERR_FILENO, watchdog_msg, watchdog_len) < 0) { /* nothing more to do */ }
    if (watchdog_unlink[0]) unlink(watchdog_unlink);
    _exit(RB_EXIT_FAIL);
}

static void fail_exit(MPI_Comm comm, const char *lock)
{
    stop_set(RB_STOP_QUIET); /* the failure path has said what is left */
    snprintf(watchdog_msg, sizeof watchdog_msg,
             "ropebench: the other ranks did not stop within %d s; exiting\n",
             RB_FAIL_WATCHDOG_S);
    watchdog_len = strlen(watchdog_msg);
    snprintf(watchdog_unlink, sizeof watchdog_unlink, "%s", lock ? lock : "");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fail_watchdog_fire;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(RB_FAIL_WATCHDOG_S);
    fflush(stdout);
    fflush(stderr);
    MPI_Barrier(comm);
    stop_lock_live = 0;
    if (lock) unlink(lock);
    _exit(RB_EXIT_FAIL);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -n N ropebench run [options]\n"
            "\n"
            "Run a study: every case (method x seq_len x mode x dataset) on all ranks,\n"
            "results gathered into one HDF5 file.\n"
            "\n"
            "options:\n"
            "  -c, --config FILE       study INI file (default: the built-in default study)\n"
            "  -s, --set SEC.KEY=VAL   override one key (repeatable), e.g.\n"
            "                          --set scaling.factor=16 --set study.heads=2\n"
            "  -o, --output FILE       results file (default: results.h5)\n"
            "      --dump-inputs       also store pre-RoPE q/k/v and outputs (at most\n"
            "                          256 MiB of inputs per case)\n"
            "      --resume            keep the complete cases of an existing results file\n"
            "                          written by the same study; redo the others\n"
            "      --dry-run           validate, print the resolved study and the cases, "
            "exit\n"
            "  -q, --quiet             no progress lines\n"
            "  -h, --help              this help\n"
            "      --version           print the version\n"
            "\n"
            "Every key is validated before any work; errors exit with status 2.\n"
            "Environment: ROPEBENCH_ISA=ref|blas|avx512|avx512_bf16 forces a kernel;\n"
            "ROPEBENCH_HUGEPAGES=0 keeps the large arrays off transparent huge pages;\n"
            "ROPEBENCH_PROBE_BALANCE=0 leaves each rank its own probe keys (no balance);\n"
            "ROPEBENCH_BF16_AMX=0 keeps the bf16 kernel off AMX tiles. The file records\n"
            "those set (/provenance environment).\n"
            "See docs/config.md for the keys.\n");
}

/* ---- small helpers ----------------------------------------------------------------- */

/* This process's rank as the launcher announces it (0 when not launched by one). */
static int launcher_rank(void)
{
    int me = 0;
    rb_cli_launched(&me);
    return me;
}

/* How many ranks the launcher started (rb_cli_launched); 1 when not launched by one. */
static int launcher_size(void) { return rb_cli_launched(NULL); }

/* agree_refusal: the input checks made before MPI_Init can fail on some ranks only (a
 * file.path missing on one node, ROPEBENCH_ISA set for one rank); where only rank 0
 * spoke, a refusal by another rank ended the job with exit 2 and no word. Under a
 * launcher of 2+ ranks every rank therefore calls this once MPI is up, `failed` with
 * its own line in err: the lowest rank that failed prints it (naming itself unless it
 * is rank 0, so an input every rank refuses reads as before). Returns 1 if any rank
 * failed. Collective over comm. */
static int agree_refusal(int failed, const char *err, MPI_Comm comm)
{
    int me = 0, mine, lowest = INT_MAX;
    MPI_Comm_rank(comm, &me);
    mine = failed ? me : INT_MAX;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
    if (lowest == INT_MAX)
        return 0;
    if (me == lowest && me == 0)
        fprintf(stderr, "ropebench: %s\n", err);
    else if (me == lowest)
        fprintf(stderr, "ropebench: rank %d: %s\n", me, err);
    return 1;
}

/* agree_alloc: collective over r->comm: whether every rank's allocations for `what`
 * succeeded (ok). Where some rank's failed, every rank returns RB_ENOMEM with r->err
 * saying so ("out of memory (what)" on the lowest rank that failed, "... on rank K"
 * elsewhere, so that rank 0's line names it): all ranks leave together instead of the
 * others waiting in the next collective for one that has gone (a hang). */
static int agree_alloc(rb_run *r, int ok, const char *what)
{
    int mine = ok ? INT_MAX : r->rank, lowest = INT_MAX;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, r->comm);
    if (lowest == INT_MAX)
        return RB_OK;
    if (lowest == r->rank)
        return rb_errf(r->err, sizeof r->err, RB_ENOMEM, "out of memory (%s)", what);
    return rb_errf(r->err, sizeof r->err, RB_ENOMEM, "out of memory on rank %d (%s)", lowest,
                   what);
}

/* refuse_early: a check before MPI_Init failed with the line in err. Alone (no launcher,
 * or one rank), rank 0 prints it; under a launcher of 2+ ranks MPI is started (*mpi_up
 * set, so the caller's cleanup finalizes it) and agree_refusal meets the other ranks,
 * which call it right after their own MPI_Init. Unless the file-size limit is below
 * what MPI_Init needs: then this rank prints its line itself (naming itself unless it
 * is rank 0), and the launcher ends the job. */
static void refuse_early(const char *err, int *argc, char ***argv, int *mpi_up)
{
    char fe[512];
    if (launcher_size() <= 1) {
        if (launcher_rank() == 0) fprintf(stderr, "ropebench: %s\n", err);
        return;
    }
    if (rb_cli_fsize_floor(fe, sizeof fe) != RB_OK) { /* no MPI: each such rank speaks */
        const int me = launcher_rank();
        if (me == 0)
            fprintf(stderr, "ropebench: %s\n", err);
        else
            fprintf(stderr, "ropebench: rank %d: %s\n", me, err);
        return;
    }
    MPI_Init(argc, argv);
    *mpi_up = 1;
    agree_refusal(1, err, MPI_COMM_WORLD);
}

/* file_identity: the `file` dataset's input as this rank finds it, "<absolute path>,
 * <size> bytes, modified <UTC time to the ns>", into buf[n] ("" when the study reads no
 * file, or it cannot be found: the run's own checks report that). The root attribute
 * dataset_file_id keeps the first run's, and --resume refuses an input that differs:
 * the study text names the path only, so a file replaced (or a relative path met from
 * another directory) mixed cases computed from two inputs. */
static void file_identity(const rb_config *c, char *buf, size_t n)
{
    int reads = 0;
    for (int i = 0; i < c->n_datasets; i++) reads |= c->datasets[i] == RB_DATA_FILE;
    buf[0] = '\0';
    char abs[PATH_MAX];
    struct stat st;
    if (!reads || !realpath(c->file_path, abs) || stat(abs, &st) != 0)
        return;
    struct tm tm;
    char when[40] = "?";
    if (gmtime_r(&st.st_mtim.tv_sec, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s, %lld bytes, modified %s.%09ldZ", abs, (long long)st.st_size, when,
             (long)st.st_mtim.tv_nsec);
}

static void bcast_str(char *buf, int cap, MPI_Comm comm)
{
    MPI_Bcast(buf, cap, MPI_CHAR, 0, comm);
    buf[cap - 1] = '\0';
}

/* fnv1a: the 64-bit FNV-1a hash of the string s (the study text's fingerprint, and the
 * names of the lock and staging files that stand in for over-long ones). */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* check_same_setup: collective. The choices each rank made alone before MPI_Init must
 * be one choice: the kernel (ROPEBENCH_ISA, or a CPU that differs between nodes), the
 * thread count (OMP_NUM_THREADS, OMP_THREAD_LIMIT) and the study (a -c file that
 * differs between nodes gives other cases: the ranks would wait in different
 * collectives), and how the kernel computes (ops.detail: AMX tiles or VDPBF16PS). A rank that differs from rank 0 refuses the run with one line naming
 * both values (agree_refusal); returns 1 then. Otherwise 0, and ops.detail points to
 * the rank's copy (identical on every rank, as the file's attributes must be). */
static int check_same_setup(rb_run *r)
{
    char name[64], mine[sizeof r->err], own_detail[sizeof r->kernel_detail];
    uint64_t hash = fnv1a(r->cfg->text), h0 = hash;
    int threads = rb_kernels_threads(), t0 = threads, failed = 1;
    snprintf(name, sizeof name, "%s", r->ops.name);
    snprintf(own_detail, sizeof own_detail, "%s", r->ops.detail);
    snprintf(r->kernel_detail, sizeof r->kernel_detail, "%s", r->ops.detail);
    bcast_str(name, (int)sizeof name, r->comm);
    bcast_str(r->kernel_detail, (int)sizeof r->kernel_detail, r->comm);
    MPI_Bcast(&t0, 1, MPI_INT, 0, r->comm);
    MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, r->comm);
    r->ops.detail = r->kernel_detail;
    if (strcmp(name, r->ops.name) != 0)
        snprintf(mine, sizeof mine, "this rank chose kernel %s and rank 0 %s (ROPEBENCH_ISA, "
                 "or the CPUs, differ between the ranks); set ROPEBENCH_ISA to a kernel "
                 "every rank's CPU has", r->ops.name, name);
    else if (strcmp(own_detail, r->kernel_detail) != 0)
        snprintf(mine, sizeof mine, "kernel %s computes here as '%s' and on rank 0 as '%s' "
                 "(ROPEBENCH_BF16_AMX, or the CPUs, differ between the ranks); give every "
                 "rank the same", name, RB_ESC(own_detail), RB_ESC(r->kernel_detail));
    else if (threads != t0)
        snprintf(mine, sizeof mine, "this rank runs %d thread(s) and rank 0 %d "
                 "(OMP_NUM_THREADS or OMP_THREAD_LIMIT differ between the ranks); give "
                 "every rank the same", threads, t0);
    else if (hash != h0)
        snprintf(mine, sizeof mine, "this rank read another study than rank 0 (the -c file "
                 "differs between the nodes); give every rank the same file");
    else
        failed = 0;
    return agree_refusal(failed, mine, r->comm);
}

static int64_t resolve_pos(int64_t p, int64_t L) { return p < 0 ? L + p : p; }

/* The command line ("ropebench run ...") and the current UTC time (ISO 8601). */
static void run_stamp(char *cmd, size_t cmdlen, char *when, size_t whenlen, int argc,
                      char **argv)
{
    size_t len = (size_t)snprintf(cmd, cmdlen, "ropebench");
    for (int i = 0; i < argc && len < cmdlen - 2; i++)
        len += (size_t)snprintf(cmd + len, cmdlen - len, " %s", argv[i]);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, whenlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Probe positions of a case of dataset `kind`: min(probe_rows, L) distinct log-spaced
 * positions in [0, L-1], user positions and, for the needle dataset only, its needle
 * queries (so that another dataset's case has the same rows whether or not the study
 * also lists needle: until 2026-12-03 every dataset's had them then); sorted, unique. Row i of the P
 * log-spaced ones is round(L^(i/(P-1))) - 1, raised to one past row i-1 where that
 * would repeat it and lowered to L - P + i so that every later row still fits: at
 * 1M tokens and P = 512 the first ~100 rows are the positions 0, 1, 2, ... (where
 * log spacing is finer than one token), the rest log-spaced to L - 1. Returns the
 * count; *out is malloc'd. */
static int64_t probe_positions(const rb_config *c, int64_t L, rb_dataset_kind kind,
                               int64_t **out)
{
    int64_t cap = c->probe_rows + c->n_probe_positions + c->n_needles + 1, n = 0;
    int64_t *p = malloc((size_t)cap * sizeof *p);
    if (!p) return -1;
    const int64_t P = c->probe_rows < L ? c->probe_rows : L;
    for (int64_t i = 0; i < P; i++) {
        double x = P == 1 ? (double)L : exp(log((double)L) * (double)i / (double)(P - 1));
        int64_t v = (int64_t)llround(x) - 1;
        if (i > 0 && v <= p[n - 1]) v = p[n - 1] + 1;
        if (v > L - P + i) v = L - P + i;
        p[n++] = v;
    }
    for (int i = 0; i < c->n_probe_positions; i++)
        p[n++] = resolve_pos(c->probe_positions[i], L);
    for (int i = 0; kind == RB_DATA_NEEDLE && i < c->n_needles; i++)
        p[n++] = resolve_pos(c->needle_queries[i], L);
    qsort(p, (size_t)n, sizeof *p, cmp_i64);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (m == 0 || p[i] != p[m - 1]) p[m++] = p[i];
    *out = p;
    return m;
}

/* case_name: "<method>[-x<factor>][-af<attention factor>]-L<L>-<mode>-<dataset>" for
 * method entry mi of the study (the -af part only where the entry needs it, see
 * rb_config_entry_suffix). */
static void case_name(char *buf, size_t len, const rb_config *c, int mi, int64_t L,
                      int mode, rb_dataset_kind ds)
{
    const rb_rope_method m = c->methods[mi];
    char f[32] = "", af[48];
    if (m != RB_ROPE_NONE) snprintf(f, sizeof f, "-x%g", c->factor);
    rb_config_entry_suffix(c, mi, af, sizeof af);
    snprintf(buf, len, "%s%s%s-L%lld-%s-%s", rb_rope_method_name(m), f, af, (long long)L,
             mode == RB_MODE_FULL ? "full" : "probe", rb_dataset_kind_name(ds));
}

/* case_intact: 1 if the case group g (of length L, `rows` rows: L in full mode, the
 * probe positions' count in probe mode) holds what every reader of a finished case
 * needs, as they read it: seq_len = L, heads = the study's and n_rows = rows as
 * integers, rows/position [n_rows] and rows/lse, rows/entropy [heads][n_rows] as
 * numbers; else 0, and `--resume` redoes the case. Collective (every rank reads the
 * same metadata). */
static int case_intact(const rb_run *r, const char *g, int64_t L, int64_t rows)
{
    char e[256], ds[320];
    int64_t seq = 0, heads = 0, n = 0, dims[4];
    if (rb_results_attr_get_i64(r->res, g, "seq_len", &seq, e, sizeof e) != 1 || seq != L ||
        rb_results_attr_get_i64(r->res, g, "heads", &heads, e, sizeof e) != 1 ||
        heads != r->cfg->heads ||
        rb_results_attr_get_i64(r->res, g, "n_rows", &n, e, sizeof e) != 1 || n != rows)
        return 0;
    snprintf(ds, sizeof ds, "%s/rows/position", g);
    if (rb_results_dims(r->res, ds, dims, 4) != 1 || dims[0] != n)
        return 0;
    static const char *const hn[] = {"rows/lse", "rows/entropy"};
    for (size_t i = 0; i < sizeof hn / sizeof *hn; i++) {
        snprintf(ds, sizeof ds, "%s/%s", g, hn[i]);
        if (rb_results_dims(r->res, ds, dims, 4) != 2 || dims[0] != heads || dims[1] != n)
            return 0;
    }
    return 1;
}

/* FLOPs of a case: 4*d per visible (query, key) pair (2d for q.k, 2d for p*v), over
 * heads; full mode has L(L+1)/2 pairs, a probe row at position p sees p+1 keys. */
static double case_flops(const int64_t *qpos, int64_t nq, int mode, int64_t L, int d, int H)
{
    double pairs = 0;
    if (mode == RB_MODE_FULL)
        pairs = (double)L * (double)(L + 1) / 2.0;
    else
        for (int64_t i = 0; i < nq; i++) pairs += (double)qpos[i] + 1.0;
    return pairs * 4.0 * d * H;
}

static void dataset_for(const rb_config *c, rb_dataset_kind kind, int64_t L,
                        rb_dataset *ds)
{
    memset(ds, 0, sizeof *ds);
    ds->kind = kind;
    ds->seed = c->seed;
    ds->head_dim = c->head_dim;
    if (kind == RB_DATA_NEEDLE) {
        ds->n_needles = c->n_needles;
        ds->strength = c->needle_strength;
        for (int i = 0; i < c->n_needles; i++) {
            ds->needle_pos[i] = resolve_pos(c->needle_positions[i], L);
            ds->query_pos[i] = resolve_pos(c->needle_queries[i], L);
        }
    }
    ds->rotary_dim = c->rotary_dim;
    ds->layout = c->layout;
    ds->profile = c->spectral_profile;
    ds->n_amplitudes = c->n_spectral_amplitudes;
    memcpy(ds->amplitudes, c->spectral_amplitudes, sizeof ds->amplitudes);
    ds->coherence = c->spectral_coherence;
    ds->path = c->file_path;
}

/* With the file dataset listed: open it (collective; checks q, k, v against the heads and
 * the longest case) and close it again, so a bad file stops the run before any case. */
static int check_file_dataset(const rb_config *c, MPI_Comm comm, char *err, size_t errlen)
{
    int64_t maxL = 1;
    for (int k = 0; c->modes[RB_MODE_FULL] && k < c->n_full_lens; k++)
        if (c->full_lens[k] > maxL) maxL = c->full_lens[k];
    for (int k = 0; c->modes[RB_MODE_PROBE] && k < c->n_probe_lens; k++)
        if (c->probe_lens[k] > maxL) maxL = c->probe_lens[k];
    for (int k = 0; k < c->n_datasets; k++) {
        if (c->datasets[k] != RB_DATA_FILE) continue;
        rb_dataset ds;
        rb_dataset_source *src = NULL;
        dataset_for(c, RB_DATA_FILE, maxL, &ds);
        int rc = rb_dataset_open(&src, &ds, comm, c->heads, maxL, err, errlen);
        rb_dataset_close(src);
        return rc;
    }
    return RB_OK;
}

static void progress_step(int step, int nsteps, void *user)
{
    rb_run *r = user;
    if (r->rank == 0 && !r->quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "\r    ring step %d/%d", step, nsteps);
    if (r->rank == 0 && !r->quiet && isatty(STDERR_FILENO) && step == nsteps)
        fprintf(stderr, "\r%*s\r", 30, "");
}

/* ---- writing ------------------------------------------------------------------------ */

#define TRY(call)                                                                       \
    do {                                                                                \
        if ((rc = (call)) != RB_OK) goto cleanup;                                       \
    } while (0)

static int write_case_attrs(rb_run *r, const char *g, int mi, int64_t L, int mode,
                            rb_dataset_kind kind, const rb_rope_info *info, double scale,
                            int64_t n_rows, double flops)
{
    const rb_config *c = r->cfg;
    const rb_rope_method m = c->methods[mi];
    char *e = r->err;
    size_t el = sizeof r->err;
    int rc;
    TRY(rb_results_attr_str(r->res, g, "method", rb_rope_method_name(m), e, el));
    TRY(rb_results_attr_f64(r->res, g, "factor", m == RB_ROPE_NONE ? 1.0 : c->factor, e,
                            el));
    TRY(rb_results_attr_f64(r->res, g, "base", c->base, e, el));
    TRY(rb_results_attr_f64(r->res, g, "base_used", info->base_used, e, el));
    TRY(rb_results_attr_i64(r->res, g, "head_dim", c->head_dim, e, el));
    TRY(rb_results_attr_i64(r->res, g, "rotary_dim", c->rotary_dim, e, el));
    TRY(rb_results_attr_str(r->res, g, "layout",
                            c->layout == RB_LAYOUT_NEOX ? "neox" : "gptj", e, el));
    TRY(rb_results_attr_i64(r->res, g, "original_ctx", c->original_ctx, e, el));
    TRY(rb_results_attr_i64(r->res, g, "seq_len", L, e, el));
    TRY(rb_results_attr_i64(r->res, g, "heads", c->heads, e, el));
    TRY(rb_results_attr_str(r->res, g, "mode", mode == RB_MODE_FULL ? "full" : "probe", e,
                            el));
    TRY(rb_results_attr_str(r->res, g, "shard_layout",
                            rb_shard_layout_name(c->shard_layout), e, el));
    TRY(rb_results_attr_str(r->res, g, "dataset", rb_dataset_kind_name(kind), e, el));
    TRY(rb_results_attr_i64(r->res, g, "seed", (int64_t)c->seed, e, el));
    TRY(rb_results_attr_f64(r->res, g, "attention_factor", info->attention_factor, e,
                            el));
    {
        /* what scaling.attention_factor gave this case: "unused" where the method takes
         * none (it runs with 1), "auto", or the number in the shortest digits that give
         * it back (the case name's label keeps 6) */
        char afs[40] = "unused";
        const double af = c->method_af[mi];
        const int uses = c->methods[mi] == RB_ROPE_YARN || c->methods[mi] == RB_ROPE_LONGROPE;
        if (uses && af <= 0)
            snprintf(afs, sizeof afs, "auto");
        if (uses && af > 0)
            rb_cli_shortest(afs, sizeof afs, af);
        TRY(rb_results_attr_str(r->res, g, "attention_factor_setting", afs, e, el));
    }
    TRY(rb_results_attr_f64(r->res, g, "scale", scale, e, el));
    TRY(rb_results_attr_str(r->res, g, "kernel", r->ops.name, e, el));
    TRY(rb_results_attr_str(r->res, g, "kernel_detail", r->ops.detail, e, el));
    /* the build that computed this case (a resumed file may hold cases of two) */
    TRY(rb_results_attr_str(r->res, g, "git_describe", RB_GIT_DESCRIBE, e, el));
    TRY(rb_results_attr_str(r->res, g, "dtype", c->dtype, e, el));
    TRY(rb_results_attr_i64(r->res, g, "n_rows", n_rows, e, el));
    TRY(rb_results_attr_i64(r->res, g, "nranks", r->nranks, e, el));
    TRY(rb_results_attr_i64(r->res, g, "threads", rb_kernels_threads(), e, el));
    TRY(rb_results_attr_f64(r->res, g, "flops", flops, e, el));
    /* the peaks of the run that computed the case: a resumed run may use other rank
     * and thread counts than the one whose peaks /provenance holds */
    TRY(rb_results_attr_f64(r->res, g, "peak_fma_gflops", r->peak_sum[0], e, el));
    TRY(rb_results_attr_f64(r->res, g, "triad_gbps", r->peak_sum[1], e, el));
    if (m == RB_ROPE_YARN) {
        TRY(rb_results_attr_f64(r->res, g, "yarn_corr_low", info->corr_low, e, el));
        TRY(rb_results_attr_f64(r->res, g, "yarn_corr_high", info->corr_high, e, el));
    }
cleanup:
    return rc;
}

/* Gather every rank's timing to rank 0 and write [nranks] datasets. On rank 0, a case
 * of fp32 whose flops over its slowest rank's compute time beat the run's FMA peak counts in
 * r->over_peak (said at the end of the run: the peak came out low). */
static int write_timing(rb_run *r, const char *g, const rb_timing *t, double setup_s,
                        double generate_s, double metrics_s, double flops)
{
    enum { NT = 9, NF = 7 }; /* the first NF seconds, then key counts (exact in double) */
    double mine[NT] = {setup_s,    t->compute_s, t->comm_wait_s,
                       t->merge_s, t->total_s,   generate_s,
                       metrics_s,  (double)t->keys_sent, (double)t->keys_received};
    static const char *names[NT] = {"setup_s",  "compute_s",  "comm_wait_s",
                                    "merge_s",  "total_s",    "generate_s",
                                    "metrics_s", "keys_sent", "keys_received"};
    int64_t *icol = NULL;
    double *all = NULL, *col = NULL;
    int rc = RB_OK;
    all = malloc(sizeof(double) * NT * (size_t)r->nranks);
    col = malloc(sizeof(double) * (size_t)r->nranks);
    icol = malloc(sizeof(int64_t) * (size_t)r->nranks);
    if ((rc = agree_alloc(r, all && col && icol, "timings")))
        goto cleanup;
    MPI_Gather(mine, NT, MPI_DOUBLE, all, NT, MPI_DOUBLE, 0, r->comm);
    /* (fp32 only: a bf16 case's products are not FMAs, VDPBF16PS does twice the FLOPs,
     * so beating the FMA peak is no sign of a low peak there) */
    if (r->rank == 0 && r->peak_sum[0] > 0 && strcmp(r->cfg->dtype, "fp32") == 0) {
        double slowest = 0;
        for (int i = 0; i < r->nranks; i++)
            slowest = all[i * NT + 1] > slowest ? all[i * NT + 1] : slowest;
        const double pct = slowest > 0 ? 100.0 * flops / slowest / 1e9 / r->peak_sum[0] : 0;
        if (pct > 100.0) {
            r->over_peak++;
            r->over_worst = pct > r->over_worst ? pct : r->over_worst;
        }
    }
    for (int k = 0; k < NT; k++) {
        char path[512];
        int64_t dims[1] = {r->nranks};
        for (int i = 0; r->rank == 0 && i < r->nranks; i++) {
            col[i] = all[i * NT + k];
            icol[i] = (int64_t)col[i];
        }
        snprintf(path, sizeof path, "%s/timing/%s", g, names[k]);
        if (k < NF)
            TRY(rb_results_write_f64(r->res, path, 1, dims, col, 0, r->err, sizeof r->err));
        else
            TRY(rb_results_write_i64(r->res, path, 1, dims, icol, 0, r->err, sizeof r->err));
    }
cleanup:
    free(all);
    free(col);
    free(icol);
    return rc;
}

/* ---- one group: (mode, L, dataset); the data are generated once, then each method
 * is one case. ---------------------------------------------------------------------- */

static int run_group(rb_run *r, int mode, int64_t L, rb_dataset_kind kind)
{
    const rb_config *c = r->cfg;
    const int d = c->head_dim, H = c->heads, np = c->rotary_dim / 2;
    const int64_t n = rb_shard_local_count(c->shard_layout, L, r->nranks);
    const double scale = 1.0 / sqrt((double)d);
    const size_t row = (size_t)d;
    char *e = r->err;
    size_t el = sizeof r->err;
    int rc = RB_OK;
    rb_dataset ds;
    rb_dataset_source *src = NULL;
    rb_shard_run runs[RB_SHARD_MAX_RUNS], root_run[1];
    int nruns = rb_shard_runs(c->shard_layout, L, r->nranks, r->rank, runs);
    int64_t *pos = NULL, *qpos = NULL;
    int64_t nq = 0;
    float *kpre = NULL, *vpre = NULL, *qpre = NULL, *qrot = NULL, *krot = NULL;
    float *outs = NULL;
    double *state = NULL, *lse = NULL, *ent = NULL, *entn = NULL, *outd = NULL;
    double inv_freq[RB_MAX_LIST * 4], inv_base[RB_MAX_LIST * 4];

    /* --resume: complete cases stay; incomplete ones are removed and redone */
    int done[RB_MAX_ENTRIES] = {0}, n_done = 0;
    int64_t want_rows = L; /* the rows a finished case of this length and mode has */
    if (r->resume && mode == RB_MODE_PROBE) {
        int64_t *pp = NULL;
        want_rows = probe_positions(c, L, kind, &pp);
        free(pp);
        if ((rc = agree_alloc(r, want_rows >= 0, "the probe rows")))
            goto cleanup;
    }
    for (int mi = 0; r->resume && mi < c->n_methods; mi++) {
        char name[160], g[256];
        int64_t complete = 0;
        case_name(name, sizeof name, c, mi, L, mode, kind);
        snprintf(g, sizeof g, "/cases/%s", name);
        rc = rb_results_attr_get_i64(r->res, g, "complete", &complete, e, el);
        if (rc < 0) goto cleanup;
        /* and only with the per-row results every reader needs, as a reader finds them
         * (a file edited or damaged after the fact can say complete without them, or
         * with a string where a number belongs): else it is redone */
        if (rc == 1 && complete == 1)
            complete = case_intact(r, g, L, want_rows);
        if (rc == 1 && complete == 1) {
            done[mi] = 1;
            n_done++;
            r->n_kept++;
        } else if (rb_results_exists(r->res, g) == 1) {
            /* removed and flushed at once, inside a window: the file stays readable
             * whenever the run stops during the cases that follow */
            rb_cli_defer_begin();
            rc = rb_results_remove(r->res, g, e, el);
            if (rc == RB_OK)
                rc = rb_results_flush(r->res, e, el);
            write_window_end(r->comm, rc);
            if (rc != RB_OK)
                goto cleanup;
        }
        rc = RB_OK;
    }
    if (n_done == c->n_methods) {
        for (int mi = 0; mi < c->n_methods; mi++) {
            char name[160];
            case_name(name, sizeof name, c, mi, L, mode, kind);
            r->case_no++;
            if (r->rank == 0 && !r->quiet)
                fprintf(stderr, "[%2d/%d] %-40s complete in the file, kept\n", r->case_no,
                        r->n_cases, name);
        }
        goto cleanup;
    }

    dataset_for(c, kind, L, &ds);
    TRY(rb_dataset_open(&src, &ds, r->comm, H, L, e, el)); /* collective (file) */
    /* the case's arrays; a rank that cannot have them says so to the others before the
     * next collective (agree_alloc) */
    int ok = (pos = malloc((size_t)n * sizeof *pos)) != NULL;
    for (int64_t i = 0; ok && i < n; i++)
        pos[i] = rb_shard_global(c->shard_layout, L, r->nranks, r->rank, i);
    if (mode == RB_MODE_FULL) {
        qpos = pos;
        nq = n;
    } else if (ok && (nq = probe_positions(c, L, kind, &qpos)) < 0) {
        ok = 0;
        nq = 0;
    }

    /* generate this rank's pre-RoPE data, every head */
    double t0 = MPI_Wtime();
    if (ok) {
        kpre = rb_kernels_alloc((size_t)H * (size_t)n * row * sizeof(float));
        vpre = rb_kernels_alloc((size_t)H * (size_t)n * row * sizeof(float));
        qpre = rb_kernels_alloc((size_t)H * (size_t)nq * row * sizeof(float));
        qrot = rb_kernels_alloc((size_t)nq * row * sizeof(float));
        krot = rb_kernels_alloc((size_t)n * row * sizeof(float));
        state = malloc((size_t)nq * RB_STATE_STRIDE(d) * sizeof(double));
        lse = malloc((size_t)H * (size_t)nq * sizeof(double));
        ent = malloc((size_t)H * (size_t)nq * sizeof(double));
        entn = malloc((size_t)H * (size_t)nq * sizeof(double));
        ok = kpre && vpre && qpre && qrot && krot && state && lse && ent && entn;
    }
    if (ok && r->dump) {
        outs = malloc((size_t)H * (size_t)nq * row * sizeof(float));
        outd = malloc((size_t)nq * row * sizeof(double));
        ok = outs && outd;
    }
    {
        /* test hook: rank K's arrays count as not allocated (an out-of-memory on one
         * rank, which once hung the others) */
        if (rb_test_alloc_fail(r->rank, "case"))
            ok = 0;
        char what[64];
        snprintf(what, sizeof what, "a case of %lld tokens", (long long)L);
        if ((rc = agree_alloc(r, ok, what)))
            goto cleanup;
    }
    for (int h = 0; h < H; h++) {
        size_t off = (size_t)h * (size_t)n * row;
        TRY(rb_dataset_read(src, RB_TENSOR_K, h, pos, n, kpre + off, e, el));
        TRY(rb_dataset_read(src, RB_TENSOR_V, h, pos, n, vpre + off, e, el));
        TRY(rb_dataset_read(src, RB_TENSOR_Q, h, qpos, nq, qpre + (size_t)h * nq * row, e,
                            el));
    }
    double generate_s = MPI_Wtime() - t0;

    rb_rope_params pp;
    rb_rope_info info, info_base;
    rb_config_rope_params(c, RB_ROPE_NONE, L, &pp);
    TRY(rb_rope_schedule(&pp, inv_base, &info_base, e, el));

    for (int mi = 0; mi < c->n_methods; mi++) {
        rb_rope_method m = c->methods[mi];
        char name[160], g[256], path[512];
        case_name(name, sizeof name, c, mi, L, mode, kind);
        snprintf(g, sizeof g, "/cases/%s", name);
        r->case_no++;
        if (done[mi]) {
            if (r->rank == 0 && !r->quiet)
                fprintf(stderr, "[%2d/%d] %-40s complete in the file, kept\n", r->case_no,
                        r->n_cases, name);
            continue;
        }
        double tc = MPI_Wtime();
        if (r->rank == 0 && !r->quiet) {
            fprintf(stderr, "[%2d/%d] %-40s ", r->case_no, r->n_cases, name);
            r->line_open = 1;
        }
        test_hold(r->case_no);

        rb_config_rope_params(c, m, L, &pp);
        pp.attention_factor = c->method_af[mi]; /* this entry's own */
        TRY(rb_rope_schedule(&pp, inv_freq, &info, e, el));

        rb_timing tsum = {0}, t;
        double setup_s = 0, metrics_s = 0;
        rb_case_metrics *cm = NULL;
        if (c->metrics_enabled) { /* (memory, or a length too short for the bins) */
            const int mrc = rb_metrics_begin(&cm, c, mode, L, H, nq, qpos, &ds, inv_base,
                                             inv_freq, info.attention_factor, scale, e, el);
            if ((rc = rb_mpi_agree_err(r->comm, mrc, e, el))) {
                rb_metrics_free(cm);
                goto cleanup;
            }
        }
        for (int h = 0; h < H; h++) {
            double ts = MPI_Wtime();
            memcpy(qrot, qpre + (size_t)h * nq * row, (size_t)nq * row * sizeof(float));
            memcpy(krot, kpre + (size_t)h * n * row, (size_t)n * row * sizeof(float));
            r->ops.rope(qrot, nq, row, qpos, inv_freq, d, c->rotary_dim, c->layout,
                        info.attention_factor);
            r->ops.rope(krot, n, row, pos, inv_freq, d, c->rotary_dim, c->layout,
                        info.attention_factor);
            setup_s += MPI_Wtime() - ts;
            const float *vh = vpre + (size_t)h * n * row;
            if (mode == RB_MODE_FULL)
                rc = rb_ring_attention(r->comm, &r->ops, qrot, qpos, nq, krot, vh, pos, n, d,
                                       scale, state, &t, progress_step, r, e, el);
            else
                rc = rb_probe_attention(r->comm, 0, &r->ops, qrot, qpos, nq, krot, vh, pos,
                                        n, d, scale, state, &t, e, el);
            if (rc) goto cleanup;
            tsum.compute_s += t.compute_s;
            tsum.comm_wait_s += t.comm_wait_s;
            tsum.merge_s += t.merge_s;
            tsum.total_s += t.total_s;
            tsum.keys_sent += t.keys_sent;
            tsum.keys_received += t.keys_received;
            rb_state_finalize(state, nq, d, lse + (size_t)h * nq, ent + (size_t)h * nq, outd);
            {
                /* every row sees a key (itself, at least), so its lse is finite unless the
                 * kernel's scores overflowed (fp32: inputs near the `file` dataset's 1e15
                 * bound times a large attention_factor): refused, not stored as results */
                long long bad[2] = {0, 0}; /* rows with a non-finite lse, rows counted */
                if (mode == RB_MODE_FULL || r->rank == 0) /* (probe rows: on rank 0) */
                    for (int64_t i = 0; i < nq; i++) {
                        bad[0] += !isfinite(lse[(size_t)h * nq + (size_t)i]);
                        bad[1]++;
                    }
                MPI_Allreduce(MPI_IN_PLACE, bad, 2, MPI_LONG_LONG, MPI_SUM, r->comm);
                if (bad[0]) {
                    rb_metrics_free(cm);
                    rc = rb_errf(e, el, RB_EINVAL,
                                 "case %s: head %d: the %s kernel's attention scores overflowed "
                                 "(lse not finite in %lld of %lld rows): q and k this large, "
                                 "rotated with attention_factor %g, have scores beyond float32; "
                                 "scale the inputs down", name, h, r->ops.name, bad[0], bad[1],
                                 info.attention_factor);
                    goto cleanup;
                }
            }
            if (outs)
                for (size_t i = 0; i < (size_t)nq * row; i++)
                    outs[(size_t)h * nq * row + i] = (float)outd[i];
            if (cm) {
                double tm = MPI_Wtime();
                rc = rb_metrics_head(cm, r->comm, &r->ops, h, qrot, qpre + (size_t)h * nq * row,
                                     krot, kpre + (size_t)h * n * row, vh, pos, n, &ds,
                                     lse + (size_t)h * nq, ent + (size_t)h * nq, state, e, el);
                metrics_s += MPI_Wtime() - tm;
                if (rc) {
                    rb_metrics_free(cm);
                    goto cleanup;
                }
            }
        }
        double big_s = 0; /* the probe rows' largest |s| (rank 0), for the note below */
        /* from the first write of the case to its flush (and the staged file's rename),
         * a stop signal waits (rb_cli_defer_begin): dying inside HDF5's metadata writes
         * could leave the file unreadable, the cases before it included */
        rb_cli_defer_begin();
        if (cm) {
            double tm = MPI_Wtime();
            int64_t n_local = mode == RB_MODE_FULL ? nq : (r->rank == 0 ? nq : 0);
            rc = rb_metrics_write(cm, r->comm, r->res, g, qpos, ent, n_local, e, el);
            metrics_s += MPI_Wtime() - tm;
            big_s = rb_metrics_max_abs_score(cm);
            rb_metrics_free(cm);
            if (rc) goto cleanup;
        }

        /* write: attributes, schedule, rows, timings, inputs; complete=1 last */
        int64_t n_rows = mode == RB_MODE_FULL ? L : nq;
        const double flops = case_flops(qpos, nq, mode, L, d, H);
        TRY(write_case_attrs(r, g, mi, L, mode, kind, &info, scale, n_rows, flops));
        if (r->case_no == 1) /* rank 0 says it is there (rb_cli_test_hold_in_write) */
            rb_cli_test_hold_in_write(r->rank == 0);
        int64_t dims[1] = {np};
        snprintf(path, sizeof path, "%s/freqs/inv_freq", g);
        TRY(rb_results_write_f64(r->res, path, 1, dims, inv_freq, 0, e, el));
        snprintf(path, sizeof path, "%s/freqs/inv_freq_base", g);
        TRY(rb_results_write_f64(r->res, path, 1, dims, inv_base, 0, e, el));
        const rb_shard_run *rr = runs;
        int nr = nruns;
        if (mode == RB_MODE_PROBE) { /* rows live on rank 0 */
            root_run[0] = (rb_shard_run){0, 1, nq};
            rr = root_run;
            nr = r->rank == 0 ? 1 : 0;
        }
        snprintf(path, sizeof path, "%s/rows/position", g);
        TRY(rb_results_write_rows_i64(r->res, path, n_rows, rr, nr, qpos, e, el));
        snprintf(path, sizeof path, "%s/rows/lse", g);
        TRY(rb_results_write_rows_f64(r->res, path, H, n_rows, rr, nr, lse, e, el));
        snprintf(path, sizeof path, "%s/rows/entropy", g);
        TRY(rb_results_write_rows_f64(r->res, path, H, n_rows, rr, nr, ent, e, el));
        rb_metrics_entropy_normalized(qpos, nq, H, ent, entn);
        snprintf(path, sizeof path, "%s/rows/entropy_normalized", g);
        TRY(rb_results_write_rows_f64(r->res, path, H, n_rows, rr, nr, entn, e, el));
        if (outs) {
            snprintf(path, sizeof path, "%s/rows/output", g);
            TRY(rb_results_write_rows_f32(r->res, path, H, n_rows, d, rr, nr, outs, e, el));
        }
        TRY(write_timing(r, g, &tsum, setup_s, generate_s, metrics_s, flops));
        if (kind == RB_DATA_NEEDLE) {
            int64_t nd[1] = {ds.n_needles};
            snprintf(path, sizeof path, "%s/needle", g);
            TRY(rb_results_attr_f64(r->res, path, "strength", ds.strength, e, el));
            snprintf(path, sizeof path, "%s/needle/key_pos", g);
            TRY(rb_results_write_i64(r->res, path, 1, nd, ds.needle_pos, 0, e, el));
            snprintf(path, sizeof path, "%s/needle/query_pos", g);
            TRY(rb_results_write_i64(r->res, path, 1, nd, ds.query_pos, 0, e, el));
        }
        if (kind == RB_DATA_SPECTRAL) {
            /* the parameters that made the data, and the amplitudes they resolve to */
            double amp[RB_SPECTRAL_MAX_PAIRS];
            const int64_t na[1] = {c->rotary_dim / 2};
            TRY(rb_spectral_amplitudes(&ds, amp, e, el));
            snprintf(path, sizeof path, "%s/spectral/amplitudes", g);
            TRY(rb_results_write_f64(r->res, path, 1, na, amp, 0, e, el));
            snprintf(path, sizeof path, "%s/spectral", g);
            TRY(rb_results_attr_str(r->res, path, "profile",
                                    rb_spectral_profile_name(ds.profile), e, el));
            TRY(rb_results_attr_f64(r->res, path, "coherence", ds.coherence, e, el));
            TRY(rb_results_attr_f64(r->res, path, "magnitude_noise", RB_SPECTRAL_MAG_NOISE, e,
                                    el));
        }
        if (kind == RB_DATA_FILE)
            TRY(rb_results_attr_str(r->res, g, "dataset_file", c->file_path, e, el));
        if (r->dump) {
            /* the full pre-RoPE sequence, each rank its shard (q regenerated for probe) */
            float *qd = mode == RB_MODE_FULL ? qpre : NULL;
            if (!qd) {
                qd = malloc((size_t)H * (size_t)n * row * sizeof(float));
                if ((rc = agree_alloc(r, qd != NULL, "the dumped inputs")))
                    goto cleanup; /* (all ranks: the reads below are collective) */
                for (int h = 0; h < H && rc == RB_OK; h++)
                    rc = rb_dataset_read(src, RB_TENSOR_Q, h, pos, n,
                                         qd + (size_t)h * n * row, e, el);
            }
            static const char *tn[3] = {"q", "k", "v"};
            const float *src[3] = {qd, kpre, vpre};
            for (int k = 0; k < 3 && rc == RB_OK; k++) {
                snprintf(path, sizeof path, "%s/inputs/%s", g, tn[k]);
                rc = rb_results_write_rows_f32(r->res, path, H, L, d, runs, nruns, src[k], e,
                                               el);
            }
            if (qd != qpre) free(qd);
            if (rc) goto cleanup;
        }
        TRY(rb_results_attr_i64(r->res, g, "complete", 1, e, el));
        TRY(rb_results_flush(r->res, e, el));
        /* the staged file holds a finished case now: keep it */
        stop_set(r->staged ? RB_STOP_STAGED_CASE : RB_STOP_FILE);
        r->n_kept++;
        r->n_flushed++;
        if (r->staged) { /* the first finished case: now it replaces the old file */
            /* renamed while the old file's lock is still held (released just before,
             * another writer could take the old file in the gap and lose its results
             * to the rename); the lock goes with the old file after */
            const int held = r->hold_fd && *r->hold_fd >= 0;
            rc = rb_results_rename(r->res, r->final_path, held, e, el);
            if (held) {
                close(*r->hold_fd);
                *r->hold_fd = -1;
            }
            if (rc) goto cleanup;
            stop_set(RB_STOP_FILE);
            r->staged = 0;
        }
        write_window_end(r->comm, RB_OK);

        if (!r->quiet) {
            /* the mean over every row and head of the case, as the file and the report
             * have it: each rank's own rows (probe rows live on rank 0), summed on rank 0
             * (it was rank 0's rows of head 0) */
            double part[2] = {0, 0}, all[2] = {0, 0};
            if (mode == RB_MODE_FULL || r->rank == 0) {
                for (int64_t i = 0; i < (int64_t)H * nq; i++) part[0] += ent[i];
                part[1] = (double)H * (double)nq;
            }
            MPI_Reduce(part, all, 2, MPI_DOUBLE, MPI_SUM, 0, r->comm);
            if (r->rank == 0) {
                fprintf(stderr, "%7.2f s  (compute %.2f s, mean entropy %.4f)\n",
                        MPI_Wtime() - tc, tsum.compute_s, all[1] > 0 ? all[0] / all[1] : NAN);
                r->line_open = 0;
            }
        }
        /* the probe metrics weigh pairs by exp(s - lse) with the kernel's lse; an fp32
         * kernel's is good to ~1e-7 of |s| (docs/metrics.md, "Large logits") */
        if (r->rank == 0 && big_s > 1e5 && strcmp(r->ops.name, "ref") != 0)
            fprintf(stderr, "ropebench: note: %s: scores reach |s| = %.3g, and the probe "
                            "metrics' weights exp(s - lse) use the %s kernel's fp32 lse, good "
                            "to ~1e-7 of |s|: they may be off by a factor up to ~e^%.2g "
                            "(ROPEBENCH_ISA=ref computes them exactly)\n",
                    name, big_s, r->ops.name, 1e-7 * big_s);
        r->n_ran++;
        if (r->abort_after > 0 && r->case_no >= r->abort_after) {
            if (r->rank == 0)
                fprintf(stderr, "ropebench: ROPEBENCH_TEST_ABORT_AFTER=%d reached, "
                                "aborting to simulate an interruption\n",
                        r->abort_after);
            MPI_Abort(r->comm, 3);
        }
    }
cleanup:
    (void)rb_cli_defer_end(); /* a window an error left open (the run ends) */
    rb_dataset_close(src);
    if (qpos != pos) free(qpos);
    free(pos);
    free(kpre);
    free(vpre);
    free(qpre);
    free(qrot);
    free(krot);
    free(state);
    free(lse);
    free(ent);
    free(entn);
    free(outs);
    free(outd);
    return rc;
}

/* study_case: the study's case i (0 <= i < count_cases) in run order, as rb_cmd_run and
 * run_group take them (modes, lengths, datasets, methods). */
typedef struct {
    int mode, mi;
    int64_t L;
    rb_dataset_kind kind;
} rb_case_ref;

static rb_case_ref study_case(const rb_config *c, int i)
{
    rb_case_ref x = {0, 0, 0, RB_DATA_GAUSSIAN};
    for (int mode = 0; mode < 2; mode++) {
        if (!c->modes[mode]) continue;
        const int nl = mode == RB_MODE_FULL ? c->n_full_lens : c->n_probe_lens;
        const int per_len = c->n_datasets * c->n_methods;
        if (i >= nl * per_len) {
            i -= nl * per_len;
            continue;
        }
        x.mode = mode;
        x.L = (mode == RB_MODE_FULL ? c->full_lens : c->probe_lens)[i / per_len];
        x.kind = c->datasets[(i % per_len) / c->n_methods];
        x.mi = i % c->n_methods;
        break;
    }
    return x;
}

/* ---- provenance --------------------------------------------------------------------- */

static int write_provenance(rb_run *r, int argc, char **argv)
{
    char *e = r->err;
    size_t el = sizeof r->err;
    int rc = RB_OK;
    rb_topo topo;
    int have_topo = 0;
    char (*planned)[160] = NULL;
    char cmd[4096] = "", created[64] = "", mpiv[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    char cpu[128] = "", isa[256] = "", blas[256] = "", env[1024] = "";

    /* rank 0's view, broadcast: attribute values must be identical everywhere */
    if (r->rank == 0) {
        run_stamp(cmd, sizeof cmd, created, sizeof created, argc, argv);
        int l = 0;
        MPI_Get_library_version(mpiv, &l);
        char *nl = strchr(mpiv, '\n');
        if (nl) *nl = '\0';
        nl = strchr(mpiv, ',');
        if (nl) *nl = '\0';
        rb_cpu_info ci;
        rb_cpu_detect(&ci);
        snprintf(cpu, sizeof cpu, "%s", ci.model);
        snprintf(isa, sizeof isa,
                 "%s (cpu: avx2=%d fma=%d avx512f=%d avx512bw=%d avx512vl=%d "
                 "avx512dq=%d avx512_bf16=%d os_zmm=%d)",
                 r->ops.name, ci.avx2, ci.fma, ci.avx512f, ci.avx512bw, ci.avx512vl,
                 ci.avx512dq, ci.avx512_bf16, ci.os_zmm);
        snprintf(blas, sizeof blas, "%s", openblas_get_config());
        rb_cli_env_record(env, sizeof env);
    }
    bcast_str(cmd, sizeof cmd, r->comm);
    bcast_str(created, sizeof created, r->comm);
    bcast_str(mpiv, sizeof mpiv, r->comm);
    bcast_str(cpu, sizeof cpu, r->comm);
    bcast_str(isa, sizeof isa, r->comm);
    bcast_str(blas, sizeof blas, r->comm);
    bcast_str(env, sizeof env, r->comm);

    TRY(rb_topo_collect(r->comm, &topo, e, el));
    have_topo = 1;
    /* the summary and the library versions are each rank's own (hosts may differ):
     * rank 0's everywhere, since a collective attribute write takes the same value on
     * every rank */
    bcast_str(topo.summary, sizeof topo.summary, r->comm);
    bcast_str(topo.hwloc_version, sizeof topo.hwloc_version, r->comm);
    char h5v[32];
    snprintf(h5v, sizeof h5v, "%s", rb_results_backend_version());
    bcast_str(h5v, sizeof h5v, r->comm);

    rb_cli_defer_begin(); /* to the flush below: write_window_end */
    TRY(rb_results_attr_str(r->res, "/", "format", "ropebench", e, el));
    TRY(rb_results_attr_i64(r->res, "/", "format_version", 1, e, el));
    TRY(rb_results_attr_str(r->res, "/", "ropebench_version", RB_VERSION, e, el));
    TRY(rb_results_attr_str(r->res, "/", "git_describe", RB_GIT_DESCRIBE, e, el));
    TRY(rb_results_attr_str(r->res, "/", "created_utc", created, e, el));
    TRY(rb_results_attr_str(r->res, "/", "command_line", cmd, e, el));
    TRY(rb_results_attr_str(r->res, "/", "config_text", r->cfg->text, e, el));
    TRY(rb_results_attr_i64(r->res, "/", "nranks", r->nranks, e, el));
    TRY(rb_results_attr_i64(r->res, "/", "threads_per_rank", rb_kernels_threads(), e, el));
    TRY(rb_results_attr_str(r->res, "/", "dtype", r->cfg->dtype, e, el));
    TRY(rb_results_attr_str(r->res, "/", "kernel", r->ops.name, e, el));
    TRY(rb_results_attr_i64(r->res, "/", "dump_inputs", r->dump, e, el));
    {
        char id[PATH_MAX + 128];
        if (r->rank == 0) file_identity(r->cfg, id, sizeof id);
        bcast_str(id, (int)sizeof id, r->comm);
        if (id[0]) TRY(rb_results_attr_str(r->res, "/", "dataset_file_id", id, e, el));
    }

    const char *p = "/provenance";
    TRY(rb_results_attr_str(r->res, p, "compiler", RB_COMPILER, e, el));
    TRY(rb_results_attr_str(r->res, p, "cflags", RB_CFLAGS, e, el));
    TRY(rb_results_attr_str(r->res, p, "build_type", RB_BUILD_TYPE, e, el));
    TRY(rb_results_attr_str(r->res, p, "kernel_isa", isa, e, el));
    TRY(rb_results_attr_str(r->res, p, "cpu_model", cpu, e, el));
    {
        char hp[64]; /* rank 0's (the nodes' settings may differ) */
        snprintf(hp, sizeof hp, "%s", rb_kernels_hugepages(rb_cli_thp_setting()));
        bcast_str(hp, (int)sizeof hp, r->comm);
        TRY(rb_results_attr_str(r->res, p, "hugepages", hp, e, el));
    }
    TRY(rb_results_attr_str(r->res, p, "environment", env, e, el));
    TRY(rb_results_attr_str(r->res, p, "mpi_version", mpiv, e, el));
    TRY(rb_results_attr_str(r->res, p, "hdf5_version", h5v, e, el));
    TRY(rb_results_attr_str(r->res, p, "openblas_config", blas, e, el));
    TRY(rb_results_attr_str(r->res, p, "hwloc_version", topo.hwloc_version, e, el));
    TRY(rb_results_attr_str(r->res, p, "hostname", topo.rank_host[0], e, el));
    TRY(rb_results_attr_str(r->res, p, "topology_summary", topo.summary, e, el));
    TRY(rb_results_write_strings(r->res, "/provenance/hosts", topo.nhosts,
                                 (const char *const *)topo.host_name, 0, e, el));
    TRY(rb_results_write_strings(r->res, "/provenance/topology_xml", topo.nhosts,
                                 (const char *const *)topo.host_xml, 0, e, el));
    TRY(rb_results_write_strings(r->res, "/provenance/rank_host", topo.nranks,
                                 (const char *const *)topo.rank_host, 0, e, el));
    TRY(rb_results_write_strings(r->res, "/provenance/rank_binding", topo.nranks,
                                 (const char *const *)topo.rank_binding, 0, e, el));
    /* the study's cases in run order, so that a reader can tell the ones never run */
    planned = malloc((size_t)(r->n_cases > 0 ? r->n_cases : 1) * sizeof *planned);
    const int np = r->n_cases;
    const char **pv = malloc((size_t)(np > 0 ? np : 1) * sizeof *pv);
    if ((rc = agree_alloc(r, planned && pv, "case names"))) {
        free(pv);
        goto cleanup;
    }
    for (int i = 0; i < np; i++) {
        const rb_case_ref x = study_case(r->cfg, i);
        case_name(planned[i], sizeof planned[i], r->cfg, x.mi, x.L, x.mode, x.kind);
    }
    {
        for (int i = 0; i < np; i++) pv[i] = planned[i];
        rc = rb_results_write_strings(r->res, "/provenance/planned_cases", np, pv, 0, e, el);
        free(pv);
        if (rc != RB_OK) goto cleanup;
    }
    TRY(rb_results_flush(r->res, e, el));
    r->n_flushed++;
    write_window_end(r->comm, RB_OK);
    if (r->rank == 0 && !r->quiet) {
        fprintf(stderr, "ropebench %s: %d rank(s) on %d host(s); %s\n", RB_VERSION,
                r->nranks, topo.nhosts, topo.summary);
        for (int i = 0; i < topo.nranks; i++)
            fprintf(stderr, "  rank %d on %s: %s\n", i, topo.rank_host[i],
                    topo.rank_binding[i]);
    }
cleanup:
    (void)rb_cli_defer_end(); /* a window an error left open (the run ends) */
    if (have_topo) rb_topo_free(&topo);
    free(planned);
    return rc;
}


/* --resume: whether the existing file is a ropebench file of the same resolved study
 * (config_text, compared by rb_config_text_differs), read on this rank alone. */
static int resume_check(rb_run *r, const char *path)
{
    char *text = NULL;
    /* read only: a refused file is left exactly as it was */
    int rc = rb_cli_results_file(path, r->err, sizeof r->err);
    if (rc < 0) goto cleanup;
    if (rc == RB_CLI_OTHER_VERSION) {
        rc = rb_errf(r->err, sizeof r->err, RB_EFORMAT, "%s: --resume: %s", path,
                     rb_cli_refusal(rc));
        goto cleanup;
    }
    if (rc != RB_CLI_RESULTS) {
        rc = rb_errf(r->err, sizeof r->err, RB_EFORMAT, "%s: --resume: %snot a ropebench "
                     "results file", path, rc == RB_CLI_EMPTY      ? "empty file, "
                                           : rc == RB_CLI_NOT_HDF5 ? "not an HDF5 file, "
                                                                   : "");
        goto cleanup;
    }
    /* every object readable: a writer that died inside a metadata write (SIGKILL, a
     * crash) can leave a file whose damage HDF5 meets only when the run reaches it */
    if (r->rank == 0) { /* (open_for_resume passes a refusal on to every rank) */
        char why[1024];
        if (rb_results_peek_whole(path, why, sizeof why) != RB_OK) {
            rc = rb_errf(r->err, sizeof r->err, RB_EFORMAT, "%s: --resume: the file is "
                         "damaged, not resumed (ropebench report shows what it still "
                         "reads; write the study to another -o): %s", path, why);
            goto cleanup;
        }
    }
    rc = rb_results_peek_str(path, "config_text", &text, r->err, sizeof r->err);
    if (rc < 0) goto cleanup;
    if (rc == 0) {
        rc = rb_errf(r->err, sizeof r->err, RB_EINVAL,
                     "%s: --resume: the file holds no study to resume (no config_text "
                     "attribute; written by ropebench bench -o?): use another -o", path);
        goto cleanup;
    }
    char why[512];
    if (rb_config_text_differs(text, r->cfg->text, why, sizeof why)) {
        rc = rb_errf(r->err, sizeof r->err, RB_EINVAL,
                     "%s: --resume: the file was written by a different study (%s); use "
                     "the same -c/--set, or another -o", path, why);
        goto cleanup;
    }
    /* the same kernel and the same --dump-inputs as the cases already there: the root
     * attributes describe every case of the file */
    free(text);
    text = NULL;
    rc = rb_results_peek_str(path, "kernel", &text, r->err, sizeof r->err);
    if (rc < 0) goto cleanup;
    if (rc == 1 && strcmp(text, r->ops.name) != 0) {
        rc = rb_errf(r->err, sizeof r->err, RB_EINVAL,
                     "%s: --resume: its cases ran on kernel %s, this run would use %s "
                     "(ROPEBENCH_ISA, study.dtype); use the same kernel, or another -o",
                     path, text, r->ops.name);
        goto cleanup;
    }
    free(text);
    text = NULL;
    /* rank 0's input against rank 0's record: other ranks may read their own copies
     * (node-local paths), whose times differ */
    char id[PATH_MAX + 128] = "";
    if (r->rank == 0)
        file_identity(r->cfg, id, sizeof id);
    rc = rb_results_peek_str(path, "dataset_file_id", &text, r->err, sizeof r->err);
    if (rc < 0) goto cleanup;
    if (rc == 1 && id[0] && strcmp(text, id) != 0) {
        rc = rb_errf(r->err, sizeof r->err, RB_EINVAL,
                     "%s: --resume: file.path is not the input its cases were computed "
                     "from (%s; now %s); use that file, or another -o",
                     path, text, id);
        goto cleanup;
    }
    int64_t dumped = 0;
    rc = rb_results_peek_i64(path, "dump_inputs", &dumped, r->err, sizeof r->err);
    if (rc < 0) goto cleanup;
    if (rc == 1 && (dumped != 0) != (r->dump != 0)) {
        rc = rb_errf(r->err, sizeof r->err, RB_EINVAL,
                     "%s: --resume: its cases were run %s --dump-inputs, this one %s; "
                     "resume as it was begun, or use another -o",
                     path, dumped ? "with" : "without", r->dump ? "with it" : "without it");
        goto cleanup;
    }
    rc = RB_OK;
cleanup:
    free(text);
    return rc;
}

/* --resume: open the existing file once every rank's resume_check accepted it;
 * collective. */
static int open_for_resume(rb_run *r, const char *path)
{
    int rc = resume_check(r, path), worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, r->comm);
    if (rc == RB_OK && worst != RB_OK)
        rc = rb_errf(r->err, sizeof r->err, worst, "%s: --resume: another rank could not "
                     "accept the file", path);
    if (rc != RB_OK)
        return rc;
    return rb_results_open(&r->res, path, r->comm, r->err, sizeof r->err);
}

/* --resume: record when and how the file was resumed (root attributes), flushed. */
static int note_resume(rb_run *r, int argc, char **argv)
{
    char cmd[4096] = "", when[64] = "";
    if (r->rank == 0) {
        run_stamp(cmd, sizeof cmd, when, sizeof when, argc, argv);
    }
    char env[1024] = "";
    if (r->rank == 0)
        rb_cli_env_record(env, sizeof env);
    bcast_str(cmd, sizeof cmd, r->comm);
    bcast_str(when, sizeof when, r->comm);
    bcast_str(env, sizeof env, r->comm);
    rb_cli_defer_begin(); /* written and flushed inside a window (write_window_end) */
    int rc = rb_results_attr_str(r->res, "/", "resumed_utc", when, r->err, sizeof r->err);
    if (rc == RB_OK)
        rc = rb_results_attr_str(r->res, "/", "resume_command_line", cmd, r->err,
                                 sizeof r->err);
    if (rc == RB_OK)
        rc = rb_results_attr_str(r->res, "/", "resume_environment", env, r->err,
                                 sizeof r->err);
    /* the build that resumed, beside git_describe, the one that started the file: cases
     * of both may then sit in it (each case records its own, attribute git_describe) */
    if (rc == RB_OK)
        rc = rb_results_attr_str(r->res, "/", "resume_git_describe", RB_GIT_DESCRIBE, r->err,
                                 sizeof r->err);
    if (rc == RB_OK)
        rc = rb_results_flush(r->res, r->err, sizeof r->err);
    write_window_end(r->comm, rc);
    if (rc == RB_OK && r->rank == 0 && !r->quiet)
        fprintf(stderr, "ropebench: resuming a study of %d cases in an existing file\n",
                r->n_cases);
    return rc;
}

/* Peaks of this machine, measured by every rank at the same time (so each rank's
 * figure is its share while all run, as during the cases): FMA throughput of the
 * rank's threads and STREAM triad bandwidth; their sums over ranks into r->peak_sum on
 * every rank (each case records them), and with store, per rank under /provenance
 * (flushed). */
static int measure_peaks(rb_run *r, int store)
{
    double mine[2], *all = NULL, *col = NULL;
    int rc = RB_OK;
    /* test hook: ROPEBENCH_TEST_QUICK_PEAKS=1 measures both in miniature (0.02 s of
     * FMAs, 8 MiB arrays, which a last-level cache may hold): the same code and file
     * contents at a fraction of the ~1 s and 768 MiB per rank, for the test suite's
     * hundreds of small runs; never for figures anyone reads */
    const char *qp = getenv("ROPEBENCH_TEST_QUICK_PEAKS");
    /* ROPEBENCH_TEST_QUICK_PEAKS=low: the same, the FMA figure then divided by 1000, as
     * a peak measured on a very busy machine would come out (the run's warning about
     * cases above it is tested so) */
    const int low = qp && strcmp(qp, "low") == 0;
    int quick = qp && (strcmp(qp, "1") == 0 || low);
    r->peaks_quick = quick && !low;
    MPI_Barrier(r->comm);
    mine[0] = rb_peak_fma_gflops(0, quick ? 0.02 : 0.2) / (low ? 1000.0 : 1.0);
    MPI_Barrier(r->comm);
    const int triad_mib = quick ? 8 : 256; /* per array */
    mine[1] = rb_triad_gbps(0, (size_t)triad_mib << 20);
    /* (test hook: rank K's triad counts as not allocated) */
    if (rb_test_alloc_fail(r->rank, "peaks"))
        mine[1] = -1.0;
    all = malloc(sizeof(double) * 2 * (size_t)r->nranks);
    col = malloc(sizeof(double) * (size_t)r->nranks);
    /* a triad that could not have its arrays (-1) is not stored as a figure: every case
     * records the sum, and the report skips cases with a peak <= 0 as damaged */
    char what[64];
    snprintf(what, sizeof what, "the peak probes: the triad's 3 arrays of %d MiB", triad_mib);
    if ((rc = agree_alloc(r, all && col && mine[1] > 0, what)))
        goto cleanup;
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, r->comm);
    /* the sums from rank 0 to all: every rank then writes the same attribute values
     * (collective HDF5 calls want identical arguments) */
    r->peak_sum[0] = r->peak_sum[1] = 0;
    for (int i = 0; r->rank == 0 && i < r->nranks; i++) {
        r->peak_sum[0] += all[i * 2];
        r->peak_sum[1] += all[i * 2 + 1];
    }
    MPI_Bcast(r->peak_sum, 2, MPI_DOUBLE, 0, r->comm);
    /* the FMA loop rank 0 ran (avx512, avx2+fma or c), the same string on every rank */
    char loop[16];
    snprintf(loop, sizeof loop, "%s", rb_peak_fma_isa());
    bcast_str(loop, (int)sizeof loop, r->comm);
    static const char *names[2] = {"/provenance/peak_fma_gflops", "/provenance/triad_gbps"};
    if (store) { /* written and flushed inside a window (write_window_end) */
        rb_cli_defer_begin();
        for (int k = 0; k < 2; k++) {
            int64_t dims[1] = {r->nranks};
            for (int i = 0; r->rank == 0 && i < r->nranks; i++)
                col[i] = all[i * 2 + k];
            TRY(rb_results_write_f64(r->res, names[k], 1, dims, col, 0, r->err,
                                     sizeof r->err));
        }
        TRY(rb_results_attr_str(r->res, names[0], "loop", loop, r->err, sizeof r->err));
        TRY(rb_results_flush(r->res, r->err, sizeof r->err));
        write_window_end(r->comm, RB_OK);
    }
    if (r->rank == 0 && !r->quiet)
        fprintf(stderr, "ropebench: measured peaks: FMA %.1f GFLOP/s (%s loop), triad %.1f "
                        "GB/s (all ranks together)\n",
                r->peak_sum[0], loop, r->peak_sum[1]);

cleanup:
    (void)rb_cli_defer_end(); /* a window an error left open (the run ends) */
    free(all);
    free(col);
    return rc;
}

/* stage_file (rank 0): for an existing output `out`, the path it resolves to (a
 * symbolic link followed) into final, and a new file beside it, "FINAL.partial-XXXXXX"
 * made with O_EXCL (so no existing file, link or input is ever taken for it), with
 * FINAL's permission bits, into staged; where FINAL's name leaves no room for the
 * suffix within NAME_MAX, ".ropebench-HASH.partial-XXXXXX" in the same directory (HASH:
 * FNV-1a of the name, as the lock's). 1 when made; 0 with errno set when out cannot
 * be resolved or the directory takes no new file (staged then holds the name tried, or
 * ""): the caller refuses the run rather than truncate out. */
static int stage_file(const char *out, char *final, size_t flen, char *staged, size_t slen)
{
    struct stat st;
    staged[0] = '\0';
    char *real = realpath(out, NULL);
    if (!real) return 0;
    const char *slash = strrchr(real, '/');
    const char *name = slash ? slash + 1 : real;
    const int dirlen = slash ? (int)(slash - real) : 0;
    if (stat(real, &st) != 0) { /* (errno says why) */
        free(real);
        return 0;
    }
    int ok = (size_t)snprintf(final, flen, "%s", real) < flen;
    if (ok && strlen(name) + sizeof ".partial-XXXXXX" - 1 <= NAME_MAX) {
        ok = (size_t)snprintf(staged, slen, "%s.partial-XXXXXX", real) < slen;
    } else if (ok) {
        ok = (size_t)snprintf(staged, slen, "%.*s/.ropebench-%016llx.partial-XXXXXX", dirlen,
                              real, (unsigned long long)fnv1a(name)) < slen;
    }
    free(real);
    if (!ok) { /* a path past the buffers */
        staged[0] = '\0';
        errno = ENAMETOOLONG;
        return 0;
    }
    const int fd = mkstemp(staged);
    if (fd < 0) {
        const int e = errno;
        memcpy(staged + strlen(staged) - 6, "XXXXXX", 6); /* the name tried, not one made */
        errno = e;
        return 0;
    }
    if (fchmod(fd, st.st_mode & 07777) != 0) { /* not fatal: the umask's mode then */ }
    close(fd);
    return 1;
}

/* lock_output_once: one try of lock_output, without the check that the name still
 * leads to the locked file. */
static int lock_output_once(const char *out, char *path, size_t len, int *fd, char *err,
                            size_t errlen)
{
    snprintf(path, len, "%s.lock", out);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0 && errno == ENAMETOOLONG) {
        /* a file name within NAME_MAX whose ".lock" is not: the same directory, a name
         * from a hash of the file name (FNV-1a), the same for every run on that file */
        const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
        snprintf(path, len, "%.*s.ropebench-%016llx.lock", slash ? (int)(base - out) : 0, out,
                 (unsigned long long)fnv1a(base));
        *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    }
    if (*fd < 0)
        return rb_errf(err, errlen, RB_EIO, "-o %s: cannot create its lock file %s: %s", out,
                       path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        close(*fd);
        *fd = -1;
        const int rc = e == EWOULDBLOCK
                           ? rb_errf(err, errlen, RB_EINVAL, "-o %s: another ropebench run is "
                                     "writing this file (it holds %s)", out, path)
                           : rb_errf(err, errlen, RB_EIO, "-o %s: cannot lock %s: %s", out,
                                     path, strerror(e));
        path[0] = '\0'; /* not ours: not removed at the end */
        return rc;
    }
    return RB_OK;
}

/* Take the run's lock: an exclusive, non-blocking flock on OUT.lock (created if need
 * be). The kernel drops it when the process ends, however it ends, so a crashed run
 * leaves at most an unlocked file behind. The run that holds it unlinks it at its end:
 * a run that opened the old file before that and locked it after would hold a lock on
 * a file no name leads to, beside a third run holding the new OUT.lock, so a lock is
 * only kept when the name still leads to the locked file (else taken again). RB_OK
 * with *fd set, or an error naming the other run. */
static int lock_output(const char *out, char *path, size_t len, int *fd, char *err,
                       size_t errlen)
{
    for (int attempt = 0;; attempt++) {
        const int rc = lock_output_once(out, path, len, fd, err, errlen);
        if (rc != RB_OK)
            return rc;
        struct stat held, named;
        if (fstat(*fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            return RB_OK;
        close(*fd);
        *fd = -1;
        if (attempt == 8) {
            const int r = rb_errf(err, errlen, RB_EINVAL, "-o %s: another ropebench run keeps "
                                  "replacing its lock file %s", out, path);
            path[0] = '\0';
            return r;
        }
    }
}

/* The results file may only replace a regular file, and never one the study reads: the
 * config or the file dataset's input (a FIFO, /dev/full or /dev/null would block or
 * fail one rank's write while the others wait; an input given as -o would be truncated
 * before it is read). Same file = same device and inode, so links count too. And
 * without --resume (which checks the file itself, open_for_resume) only a ropebench
 * results file or an empty file is replaced: anything else (a user's q/k/v, a report,
 * a typo for another file) is refused and left as it was. */
static int check_output_path(const char *out, const char *cfg_path, const rb_config *c,
                             int resume, char *err, size_t errlen)
{
    struct stat so;
    int rc = rb_cli_check_name("-o", out, err, errlen);
    if (rc == RB_OK)
        rc = rb_cli_check_output("-o", out, err, errlen);
    if (rc != RB_OK || stat(out, &so) != 0)
        return rc; /* an error, or a new file */
    if (cfg_path && rb_cli_same_file(cfg_path, out))
        return rb_errf(err, errlen, RB_EINVAL, "-o %s is the study's config file (-c %s): "
                       "it would be overwritten", out, cfg_path);
    int reads_file = 0;
    for (int i = 0; i < c->n_datasets; i++)
        reads_file |= c->datasets[i] == RB_DATA_FILE;
    if (reads_file && rb_cli_same_file(c->file_path, out))
        return rb_errf(err, errlen, RB_EINVAL, "-o %s is the study's input file (file.path = "
                       "%s): it would be overwritten", out, c->file_path);
    /* another writer first: a file mid-way through its writes may not read, and the
     * checks below (and --resume's) would then call a healthy file unreadable or
     * damaged and tell the user to remove it */
    if ((rc = rb_results_check_free(out, err, errlen)) != RB_OK)
        return rc;
    if (resume)
        return RB_OK;
    char why[512];
    const int kind = rb_cli_results_file(out, why, sizeof why);
    if (kind < 0)
        return rb_errf(err, errlen, kind, "-o %s: cannot read it to check that it is a "
                       "ropebench results file (%s): remove it or choose another name", out,
                       why);
    if (kind == RB_CLI_NOT_HDF5 || kind == RB_CLI_FOREIGN_HDF5 || kind == RB_CLI_OTHER_VERSION)
        return rb_errf(err, errlen, RB_EFORMAT,
                       "-o %s: %s; run -o replaces only a ropebench results file (or an "
                       "empty file): remove it or choose another name",
                       out, rb_cli_refusal(kind));
    return RB_OK;
}

/* ---- the command ---------------------------------------------------------------------- */

static int count_cases(const rb_config *c)
{
    int n = 0;
    if (c->modes[RB_MODE_FULL]) n += c->n_full_lens;
    if (c->modes[RB_MODE_PROBE]) n += c->n_probe_lens;
    return n * c->n_datasets * c->n_methods;
}

static void print_cases(const rb_config *c, int nranks)
{
    printf("%s", c->text);
    printf("# cases (%d) on %d rank(s): name, rows, memory per rank [MiB]\n",
           count_cases(c), nranks);
    for (int i = 0; i < count_cases(c); i++) {
        const rb_case_ref x = study_case(c, i);
        char name[160];
        int64_t *pp = NULL;
        int64_t rows =
            x.mode == RB_MODE_FULL ? x.L : probe_positions(c, x.L, x.kind, &pp);
        free(pp);
        case_name(name, sizeof name, c, x.mi, x.L, x.mode, x.kind);
        printf("# %-44s %10lld %10.1f\n", name, (long long)rows,
               rb_config_case_bytes(c, (rb_mode)x.mode, x.L, nranks) / 1048576.0);
    }
}

int rb_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'}, {"set", required_argument, 0, 's'},
        {"output", required_argument, 0, 'o'}, {"dump-inputs", no_argument, 0, 'D'},
        {"dry-run", no_argument, 0, 'n'},      {"quiet", no_argument, 0, 'q'},
        {"resume", no_argument, 0, 'R'},
        {"help", no_argument, 0, 'h'},         {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    rb_run r;
    rb_config cfg;
    int have_cfg = 0, rc = RB_OK, exit_code = 0, opt, dry = 0, usage_err = 0, mpi_up = 0;
    const char *cfg_path = NULL, *out_path = "results.h5", *kernel_why = NULL;
    int out_given = 0;
    char lock_path[4200] = "", final_path[PATH_MAX + 16] = "", staged_path[PATH_MAX + 16] = "";
    int lock_fd = -1, hold_fd = -1;
    char **sets = NULL;
    int n_sets = 0;
    memset(&r, 0, sizeof r);
    r.peak_sum[0] = r.peak_sum[1] = NAN;

    /* Options and the config are validated before MPI starts, so --help, --version and
     * bad input need no MPI; under mpirun only rank 0 (from the launcher's
     * environment) speaks. */
    r.rank = launcher_rank();
    sets = calloc((size_t)argc + 1, sizeof *sets);
    if (!sets) {
        exit_code = RB_EXIT_FAIL;
        goto cleanup;
    }
    optind = 1;
    opterr = 0;
    char ob[200]; /* what is wrong with a rejected option (rb_cli_reject) */
    while ((opt = getopt_long(argc, argv, ":c:s:o:qh", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
        case 'o':
            /* one study file and one results file: a second would silently win */
            if (opt == 'c' ? cfg_path != NULL : out_given) {
                snprintf(r.err, sizeof r.err, "run: %s given twice ('%s', then '%s')",
                         opt == 'c' ? "-c/--config" : "-o/--output",
                         RB_ESC(opt == 'c' ? cfg_path : out_path), RB_ESC(optarg));
                usage_err = 1;
                break;
            }
            if (opt == 'c') cfg_path = optarg;
            else out_path = optarg, out_given = 1;
            break;
        case 's': sets[n_sets++] = optarg; break;
        case 'D': r.dump = 1; break;
        case 'n': dry = 1; break;
        case 'R': r.resume = 1; break;
        case 'q': r.quiet = 1; break;
        case 'h':
            if (r.rank == 0) usage(stdout);
            goto cleanup;
        case 'V':
            if (r.rank == 0) printf("%s\n", rb_version_string());
            goto cleanup;
        case ':':
            snprintf(r.err, sizeof r.err, "run: option %s needs a value",
                     RB_ESC(argv[optind - 1]));
            usage_err = 1;
            break;
        default:
            snprintf(r.err, sizeof r.err, "run: %s (see ropebench run --help)",
                     rb_cli_reject(argv, opts, ob, sizeof ob));
            usage_err = 1;
            break;
        }
        if (usage_err) break;
    }
    if (!usage_err && optind < argc) {
        snprintf(r.err, sizeof r.err, "run: unexpected argument '%s'", RB_ESC(argv[optind]));
        usage_err = 1;
    }
    if (!usage_err && rb_config_load(&cfg, cfg_path, sets, n_sets, r.err, sizeof r.err))
        usage_err = 1;
    if (usage_err) {
        refuse_early(r.err, &argc, &argv, &mpi_up);
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }
    have_cfg = 1;
    r.cfg = &cfg;
    if (r.dump) {
        for (int mode = 0; mode < 2 && rc == RB_OK; mode++) {
            if (!cfg.modes[mode]) continue;
            int nl = mode == RB_MODE_FULL ? cfg.n_full_lens : cfg.n_probe_lens;
            const int64_t *lens = mode == RB_MODE_FULL ? cfg.full_lens : cfg.probe_lens;
            for (int k = 0; k < nl && rc == RB_OK; k++) {
                double b = 3.0 * cfg.heads * (double)lens[k] * cfg.head_dim * 4;
                if (b > RB_DUMP_LIMIT_BYTES)
                    rc = rb_errf(r.err, sizeof r.err, RB_EINVAL,
                                 "--dump-inputs: %lld tokens x %d heads would store %.0f MiB "
                                 "of inputs per case (limit %.0f MiB); use smaller seq_lens",
                                 (long long)lens[k], cfg.heads, b / 1048576.0,
                                 RB_DUMP_LIMIT_BYTES / 1048576.0);
            }
        }
    }
    if (rc == RB_OK) rc = rb_cli_check_env(r.err, sizeof r.err);
    if (rc == RB_OK && cfg.threads > rb_kernels_thread_limit()) /* (as bench --threads) */
        rc = rb_errf(r.err, sizeof r.err, RB_EINVAL,
                     "study.threads = %d: %s allows at most %d thread(s) here, so the "
                     "study would run with fewer than it records",
                     cfg.threads,
#ifdef _OPENMP
                     "OMP_THREAD_LIMIT",
#else
                     "this build (without OpenMP)",
#endif
                     rb_kernels_thread_limit());
    if (rc == RB_OK) {
        const char *why = NULL;
        rc = rb_kernels_select_dtype(getenv("ROPEBENCH_ISA"), cfg.dtype, &r.ops, &why, r.err,
                                     sizeof r.err);
        kernel_why = why;
    }
    if (rc != RB_OK) {
        refuse_early(r.err, &argc, &argv, &mpi_up);
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }

    if (!dry &&
        (rc = check_output_path(out_path, cfg_path, &cfg, r.resume, r.err, sizeof r.err))) {
        refuse_early(r.err, &argc, &argv, &mpi_up);
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }

    if ((rc = rb_cli_fsize_floor(r.err, sizeof r.err)) != RB_OK) {
        /* MPI is not up: rank 0 as the launcher numbers it says so */
        const char *wr = getenv("OMPI_COMM_WORLD_RANK");
        if (!wr || strcmp(wr, "0") == 0) fprintf(stderr, "ropebench: %s\n", r.err);
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (cfg.threads > 0) rb_kernels_set_threads(cfg.threads);
    MPI_Init(&argc, &argv);
    mpi_up = 1;
    r.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(r.comm, &r.rank);
    MPI_Comm_size(r.comm, &r.nranks);
    /* every rank passed its own checks, or the lowest that did not says why */
    if (launcher_size() > 1 && agree_refusal(0, NULL, r.comm)) {
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }
    /* the same choices everywhere first: the checks below take collective paths that
     * depend on the study (the file dataset's open) */
    if (check_same_setup(&r)) {
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }
    {
        MPI_Comm node;
        int here = 1, most = 1;
        MPI_Comm_split_type(r.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &here);
        MPI_Comm_free(&node);
        MPI_Allreduce(&here, &most, 1, MPI_INT, MPI_MAX, r.comm);
        /* (the memory check reads each host's available memory: agreed, so that a rank
         * refused alone says why through rank 0, and none waits in the next collective) */
        rc = rb_mpi_agree_err(r.comm, rb_config_check_ranks(&cfg, r.nranks, most, r.err,
                                                            sizeof r.err),
                              r.err, sizeof r.err);
        if (rc == RB_OK) rc = check_file_dataset(&cfg, r.comm, r.err, sizeof r.err);
    }
    if (rc != RB_OK) {
        if (r.rank == 0) fprintf(stderr, "ropebench: %s\n", r.err);
        exit_code = RB_EXIT_USAGE;
        goto cleanup;
    }
    /* the notes on keys the study sets but does not use, once every check of the input
     * has passed (a refused run says one line, its reason): here for --dry-run, below
     * once the results file is open (--resume can still refuse it) */
    r.n_cases = count_cases(&cfg);
    if (dry) {
        for (int k = 0; k < cfg.n_notes && r.rank == 0; k++)
            fprintf(stderr, "ropebench: %s\n", cfg.notes[k]);
        if (r.rank == 0) print_cases(&cfg, r.nranks);
        goto cleanup;
    }
    const char *ab = getenv("ROPEBENCH_TEST_ABORT_AFTER");
    r.abort_after = ab ? atoi(ab) : 0;
    rb_cli_fsize_hook();

    r.t_start = MPI_Wtime();
    /* one run per results file: rank 0 holds an exclusive lock on OUT.lock from before
     * the file is created (or reopened) until the run ends, and every rank hears */
    {
        int held = r.rank == 0 ? lock_output(out_path, lock_path, sizeof lock_path, &lock_fd,
                                             r.err, sizeof r.err)
                               : RB_OK;
        MPI_Bcast(&held, 1, MPI_INT, 0, r.comm);
        if (held != RB_OK) {
            if (r.rank == 0) fprintf(stderr, "ropebench: %s\n", r.err);
            exit_code = RB_EXIT_USAGE;
            goto cleanup;
        }
        if (r.rank == 0 && lock_fd >= 0)
            stop_cleanup_install(out_path, lock_path);
        else if (r.rank != 0)
            rb_cli_defer_install(); /* the other ranks hold a stop inside a write too */
    }
    int reopened = 0, resume_existing = r.resume && r.rank == 0 && access(out_path, F_OK) == 0;
    /* decided on rank 0 and broadcast: a rank whose view of the file differed (a network
     * file system's cache) would enter the other branch's collectives */
    MPI_Bcast(&resume_existing, 1, MPI_INT, 0, r.comm);
    if (resume_existing) {
        rc = open_for_resume(&r, out_path);
        reopened = rc == RB_OK;
    } else {
        /* an existing file is replaced only once a case is finished: until then the run
         * writes FILE.partial-XXXXXX beside it (stage_file), so a run that fails early
         * (an input found bad while reading it, memory, a kernel) leaves the old results
         * as they were. The file itself, which another run may write under another name
         * (a link), is refused when its writer lock is held: here by rb_results_hold,
         * otherwise by the create or open */
        r.final_path = out_path;
        /* decided on rank 0 and broadcast: every rank must create the same file and
         * make the same collective rename */
        if (r.rank == 0 && access(out_path, F_OK) == 0 &&
            !stage_file(out_path, final_path, sizeof final_path, staged_path,
                        sizeof staged_path)) {
            /* writing FILE in place would truncate the old results before this run has
             * any (as runs did here until 2026-12-03): refused, FILE left as it was */
            rb_errf(r.err, sizeof r.err, RB_EIO, "-o %s: cannot make the file that is to "
                    "replace it beside it (%s): %s; %s is left as it was (let its directory "
                    "take a new file, or remove %s to write it anew)", out_path,
                    staged_path[0] ? staged_path : "its directory", strerror(errno), out_path,
                    out_path);
            stop_set(RB_STOP_BEFORE);
            r.staged = -1;
        } else if (r.rank == 0 && access(out_path, F_OK) == 0) {
            r.staged = 1;
            stop_staged_set(staged_path, out_path);
            /* the old file stays locked against other writers (bench -o, a run through
             * a link) until the rename replaces it */
            if (rb_results_hold(final_path, &hold_fd, r.err, sizeof r.err) != RB_OK) {
                stop_set(RB_STOP_BEFORE);
                unlink(staged_path);
                r.staged = -1;
            }
        }
        MPI_Bcast(&r.staged, 1, MPI_INT, 0, r.comm);
        if (r.staged < 0) {
            if (r.rank == 0) fprintf(stderr, "ropebench: %s\n", r.err);
            r.staged = 0;
            exit_code = RB_EXIT_USAGE;
            goto cleanup;
        }
        if (r.staged) {
            bcast_str(final_path, sizeof final_path, r.comm);
            bcast_str(staged_path, sizeof staged_path, r.comm);
            r.final_path = final_path;
            r.hold_fd = &hold_fd;
        }
        rc = rb_results_create(&r.res, r.staged ? staged_path : out_path, r.comm, r.err,
                               sizeof r.err);
    }
    if (rc != RB_OK) {
        stop_set(RB_STOP_QUIET);
        if (r.rank == 0 && r.staged) { /* the replacement could not be made: none left */
            unlink(staged_path);
            fprintf(stderr, "ropebench: %s (the replacement of %s, which is left as it was)\n",
                    r.err, out_path);
        } else if (r.rank == 0)
            fprintf(stderr, "ropebench: %s\n", r.err);
        exit_code = rc == RB_EIO || rc == RB_EFORMAT || rc == RB_EINVAL ? RB_EXIT_USAGE
                                                                         : RB_EXIT_FAIL;
        if (rb_results_open_stranded()) /* no MPI_Finalize: it would close the file */
            fail_exit(r.comm, r.rank == 0 && lock_fd >= 0 ? lock_path : NULL);
        goto cleanup;
    }
    for (int k = 0; k < cfg.n_notes && r.rank == 0; k++)
        fprintf(stderr, "ropebench: %s\n", cfg.notes[k]);
    if (r.rank == 0 && !r.quiet)
        fprintf(stderr, "ropebench: kernel %s: %s (%s)\n", r.ops.name, r.ops.detail,
                kernel_why ? kernel_why : "");
    /* reopened: its finished cases are there; made new: unreadable until
     * its first flush (staged: still RB_STOP_STAGED) */
    if (r.rank == 0 && !reopened && !r.staged && stat(out_path, &stop_out_st) != 0)
        memset(&stop_out_st, 0, sizeof stop_out_st);
    if (reopened || !r.staged)
        stop_set(reopened ? RB_STOP_FILE : RB_STOP_NEW);
    rc = reopened ? note_resume(&r, argc, argv) : write_provenance(&r, argc, argv);
    if (rc == RB_OK && !reopened) /* flushed with its provenance */
        stop_set(r.staged ? RB_STOP_STAGED : RB_STOP_FILE);
    /* every run measures its peaks (its cases record them); /provenance keeps the
     * first run's, unless that run stopped before measuring them (or the file lost
     * them): then this run's go there */
    if (rc == RB_OK)
        rc = measure_peaks(&r, !reopened ||
                                   rb_results_exists(r.res, "/provenance/peak_fma_gflops") != 1 ||
                                   rb_results_exists(r.res, "/provenance/triad_gbps") != 1);
    for (int mode = 0; mode < 2 && rc == RB_OK; mode++) {
        if (!cfg.modes[mode]) continue;
        int nl = mode == RB_MODE_FULL ? cfg.n_full_lens : cfg.n_probe_lens;
        const int64_t *lens = mode == RB_MODE_FULL ? cfg.full_lens : cfg.probe_lens;
        for (int k = 0; k < nl && rc == RB_OK; k++)
            for (int di = 0; di < cfg.n_datasets && rc == RB_OK; di++)
                rc = run_group(&r, mode, lens[k], cfg.datasets[di]);
    }
    if (rc != RB_OK) {
        stop_set(RB_STOP_QUIET); /* what is left is said here */
        /* a staged file without a finished case goes before anything is printed: a
         * reader of stderr that is gone (2>&1 | head) stops the run at the first line
         * with SIGPIPE, which in the QUIET stage removes only the lock */
        if (r.rank == 0 && r.staged && r.n_kept == 0)
            unlink(staged_path);
        if (r.rank == 0) {
            fprintf(stderr, "%sropebench: %s\n", r.line_open ? "\n" : "", r.err);
            rb_cli_space_hint(out_path);
            if (r.staged && r.n_kept > 0)
                fprintf(stderr, "ropebench: the %d finished case(s) stay readable in %s (it "
                                "could not replace %s)\n", r.n_kept, staged_path, out_path);
            else if (r.staged) { /* out_path is the old results: never touched here */
                fprintf(stderr, "ropebench: no case was finished; %s is left as it was\n",
                        out_path);
            } else if (access(out_path, F_OK) != 0)
                fprintf(stderr, "ropebench: %s no longer exists\n", out_path);
            else if (r.res && rb_results_names_it(r.res, out_path) == 0)
                fprintf(stderr, "ropebench: %s is no longer the file this run wrote "
                                "(replaced or renamed while it ran): the %d finished "
                                "case(s) it held went with that file\n",
                        out_path, r.n_kept);
            else if (r.n_kept > 0)
                fprintf(stderr,
                        "ropebench: the %d finished case(s) stay readable in %s "
                        "(run again with --resume to do the rest)\n",
                        r.n_kept, out_path);
            else if (!reopened && r.n_flushed == 0 && unlink(out_path) == 0)
                fprintf(stderr, "ropebench: no case was finished and nothing readable was "
                                "written; removed %s\n", out_path);
            else
                fprintf(stderr, "ropebench: no case was finished in %s\n", out_path);
        }
        fail_exit(r.comm, r.rank == 0 && lock_fd >= 0 ? lock_path : NULL);
    }
    {
        char cerr[512];
        rb_cli_defer_begin(); /* the close writes what is left: a stop waits for it */
        int crc = rb_results_close(r.res, cerr, sizeof cerr);
        /* every rank's close, agreed: one that failed alone would otherwise leave while
         * rank 0 reports success */
        crc = rb_mpi_agree_err(r.comm, crc, cerr, sizeof cerr);
        const int held = rb_cli_defer_end();
        r.res = NULL;
        stop_set(RB_STOP_QUIET); /* closed, or what is left is said below */
        if (held && crc == RB_OK)
            raise(held); /* the study is complete and closed: stopped as asked, silently */
        if (crc != RB_OK) { /* the file may be left open: no MPI_Finalize (fail_exit) */
            if (r.rank == 0) {
                fprintf(stderr, "ropebench: %s\n", cerr);
                rb_cli_space_hint(out_path);
                fprintf(stderr, "ropebench: the %d finished case(s) stay readable in %s\n",
                        r.n_kept, out_path);
            }
            fail_exit(r.comm, r.rank == 0 && lock_fd >= 0 ? lock_path : NULL);
        }
    }
    if (exit_code == 0 && r.rank == 0 && !r.quiet)
    {
        if (r.n_ran == r.n_cases)
            fprintf(stderr, "ropebench: %d cases in %.1f s -> %s\n", r.n_cases,
                    MPI_Wtime() - r.t_start, out_path);
        else
            fprintf(stderr, "ropebench: %d of %d cases run (the other %d kept from the file) "
                            "in %.1f s -> %s\n", r.n_ran, r.n_cases, r.n_cases - r.n_ran,
                    MPI_Wtime() - r.t_start, out_path);
        /* (miniature test peaks are not the machine's: nothing to say of them) */
        if (r.over_peak > 0 && !r.peaks_quick)
            fprintf(stderr, "ropebench: warning: %d case(s) ran above the FMA peak measured at "
                            "the start (up to %.0f %% of its %.1f GFLOP/s): the machine was "
                            "busier while it was measured, so this file's %% of peak figures "
                            "are overstated; rerun on an idle machine to compare them\n",
                    r.over_peak, r.over_worst, r.peak_sum[0]);
    }
    if (exit_code == 0 && r.rank == 0) printf("%s\n", out_path);

cleanup:
    if (r.res) rb_results_close(r.res, NULL, 0);
    if (hold_fd >= 0) close(hold_fd);
    stop_set(RB_STOP_QUIET);
    if (lock_fd >= 0) { /* unlinked while held: a waiting run takes a new file */
        stop_lock_live = 0;
        unlink(lock_path);
        close(lock_fd);
    }
    if (have_cfg) rb_config_free(&cfg);
    free(sets);
    if (mpi_up) MPI_Finalize();
    return exit_code;
}
