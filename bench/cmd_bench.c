/* cmd_bench.c — `ropebench bench`: microbenchmarks of the attention tile, probe rows
 * and RoPE application of every built kernel, each given as a fraction of the FMA peak
 * and STREAM triad measured in the same run; table, JSON and a /bench results group. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rb_bench.h"
#include "rb_build.h"
#include "rb_results.h"

#define MAX_KERNELS 8
#define MAX_THREADS 8
#define ROWS_INITIAL 64
#define MAX_SHAPES 4
#define REP_BUDGET_S 10.0 /* without --reps: repetitions of a row stop at about this */
#define MIN_REP_S 0.01    /* --min-rep-time's default: a repetition of calls lasts this */
#define MAX_CALLS (1 << 20) /* calls in one repetition, at most */
/* The probe rows' shape: --probe-rows log-spaced query positions (default
 * PROBE_ROWS_DEFAULT, at most RB_PROBE_ROWS_MAX: up to that many rows the AVX-512
 * kernels take the key-outer order a probe row measures, and record its breakdown),
 * head_dim PROBE_D, against probe_keys(o) keys (also the RoPE rows' count). */
#define PROBE_ROWS_DEFAULT 128
#define PROBE_D 128

static const char *const known_kernels[] = {"ref", "blas", "avx512", "avx512_bf16"};
enum { N_KNOWN = 4 };

typedef struct {
    int quick;
    const char *json, *out;
    int reps, reps_given, warmup;
    double min_rep_s; /* --min-rep-time: shorter calls are timed several to a repetition */
    int n_kernels;
    rb_kernel_ops kernels[MAX_KERNELS];
    int n_threads;
    int threads[MAX_THREADS]; /* resolved counts */
    int all_threads;
    int do_causal, do_probe, do_rope;  /* --only */
    int n_dims, dims[MAX_SHAPES];      /* causal head_dims (--head-dims) */
    int n_lens;
    int64_t lens[MAX_SHAPES];          /* causal lengths (--lengths); 0 = the defaults */
    int probe_rows;                    /* probe query positions asked for (--probe-rows) */
} bench_opts;

/* One class of a probe row's breakdown (rb_probe_profile, in seconds): the blocks that
 * rows_min..rows_max query rows see (rows_max -1: no bound), their keys and pairs, and
 * thread-seconds for the blocks and their scores, softmax and PV. */
typedef struct {
    int64_t rows_min, rows_max, blocks, keys, pairs;
    double s, qk_s, softmax_s, pv_s;
} bench_class;

typedef struct {
    char kernel[16], dtype[8];
    const char *detail; /* how the kernel computes on this CPU (e.g. AMX or VDPBF16PS) */
    const char *bench;  /* "causal", "probe", "rope" */
    int head_dim;
    int64_t seq_len;    /* causal: L; probe: keys; rope: rows */
    int64_t n_rows;     /* query rows (causal L, probe count) or rotated rows */
    int causal;
    int threads, reps, warmup;
    int64_t calls;       /* calls timed together in each repetition (measure) */
    double median_s, min_s, max_s, cv;
    double gflops, gbps; /* gbps NAN where it does not apply */
    double peak_gflops, triad_gbps, fraction;
    double overlap_ceiling; /* probe rows: rb_overlap_probe's stream rate / triad; else NAN */
    /* probe rows of a kernel that records one (probe_profile): the classes of key blocks
     * that had blocks, in thread-seconds, and the profiled pass's wall time; else n_cls 0 */
    int n_cls;
    bench_class cls[RB_PROF_CLASSES];
    double prof_call_s;
} bench_row;

typedef struct {
    double fma1, fma_all, triad1, triad_all;
    double tiles1; /* rb_tile_ceiling_gflops, -1 where there is no avx512 kernel */
    double dpbf16; /* rb_peak_dpbf16_gflops (1 thread), -1 without AVX512_BF16 */
    int implausible; /* the all-thread FMA peak or triad stayed below 0.9 x 1 thread's */
    size_t triad_bytes;
    /* both peaks at each other --threads count (neither 1 nor all), measured too */
    int n_other, other[MAX_THREADS];
    double fma_other[MAX_THREADS], triad_other[MAX_THREADS];
    /* rb_overlap_probe at each thread count the probe rows are measured at (1, all, the
     * others: ov_threads[i]), where they are: seconds of FMA alone, stream alone, both */
    int n_ov, ov_threads[MAX_THREADS + 2];
    double ov[MAX_THREADS + 2][3];
    double ov_flop, ov_bytes; /* the probe rows' FLOP and K+V bytes it measured with */
} bench_peaks;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: ropebench bench [options]\n"
            "\n"
            "Microbenchmarks, Google-Benchmark style (warm-up, repetitions, median/min/max/CV):\n"
            "  causal  one tile call on the whole causal (q, k, v) of length L, positions\n"
            "          0..L-1, into a fresh state (batched calls: the state the call\n"
            "          before left); GFLOP/s counts 2*L^2*d per head\n"
            "  probe   128 log-spaced query positions (--probe-rows) against 1,048,576\n"
            "          keys; GB/s counts K+V once\n"
            "  rope    RoPE with exact phases over 1,048,576 rows of 128, in place; GB/s\n"
            "          counts one read and one write per row\n"
            "for every built and supported kernel x head_dim {64,128} x L {4096,16384} x\n"
            "threads, each also as a fraction of the FMA peak / STREAM triad measured in\n"
            "the same run (see docs/bench.md).\n"
            "\n"
            "options:\n"
            "      --quick            small sizes (L 1024/2048, 65536 keys/rows, 1 rep), for tests\n"
            "      --json FILE        also write the rows as a JSON array\n"
            "  -o, --output FILE      write a /bench group into FILE (HDF5; an existing\n"
            "                         results file keeps everything else)\n"
            "      --reps N           repetitions per row (default 5; without --reps, fewer\n"
            "                         where 5 would take over %.0f s; --quick: 1)\n"
            "      --warmup N         untimed calls before the repetitions (default 1;\n"
            "                         --quick: 0)\n"
            "      --min-rep-time S   time calls shorter than S seconds several to a\n"
            "                         repetition, so that one lasts about S (default %.2f;\n"
            "                         0..1; 0 or --warmup 0: one call per repetition)\n"
            "      --kernels a,b      kernels to measure (ref, blas, avx512, avx512_bf16;\n"
            "                         default: every one built and supported here)\n"
            "      --threads LIST     thread counts, integers or 'all' (default 1,all)\n"
            "      --only LIST        row kinds to measure: causal, probe, rope (default all)\n"
            "      --head-dims LIST   causal head_dims, even, 2..512 (default 64,128)\n"
            "      --lengths LIST     causal lengths L, 16..1048576, K/M suffixes (default 4096,16384;\n"
            "                         --quick: 1024,2048)\n"
            "      --probe-rows N     probe query positions, log-spaced, 1..%d (default %d;\n"
            "                         repeats merged: 128 are 116 distinct rows at\n"
            "                         1,048,576 keys)\n"
            "  -h, --help, --version\n"
            "\n"
            "Environment: ROPEBENCH_ISA=ref|blas|avx512|avx512_bf16 measures that kernel\n"
            "only (as --kernels K would; both must agree); ROPEBENCH_HUGEPAGES=0 keeps arrays\n"
            "(and the triad's) off transparent huge pages; ROPEBENCH_BF16_AMX=0 keeps the\n"
            "avx512_bf16 kernel off AMX tiles where the CPU has them.\n",
            REP_BUDGET_S, MIN_REP_S, RB_PROBE_ROWS_MAX, PROBE_ROWS_DEFAULT);
}

/* Parse a positive (or, with allow_zero, non-negative) integer option value, written
 * in digits only, at most max. */
static int parse_count(const char *opt, const char *s, int allow_zero, int max, int *v)
{
    char *end = NULL;
    errno = 0;
    long x = isdigit((unsigned char)*s) ? strtol(s, &end, 10) : -1;
    if (x < 0 || *end || x < (allow_zero ? 0 : 1)) {
        fprintf(stderr, "ropebench: bench: %s '%s': not a %s integer\n", opt, RB_ESC(s),
                allow_zero ? "non-negative" : "positive");
        return -1;
    }
    if (errno == ERANGE || x > max) {
        fprintf(stderr, "ropebench: bench: %s '%s': at most %d\n", opt, RB_ESC(s), max);
        return -1;
    }
    *v = (int)x;
    return 0;
}

/* list_copy: copy the comma list s of option opt into buf (n bytes) for strtok_r; an
 * empty or too long list, or one with an empty item (",", "a,,b", "a,"), which strtok_r
 * would skip, is one line naming the option and an example, and -1. */
static int list_copy(const char *opt, const char *s, char *buf, size_t n, const char *example)
{
    const size_t len = strlen(s);
    if (len >= n || !*s || s[0] == ',' || s[len - 1] == ',' || strstr(s, ",,")) {
        fprintf(stderr, "ropebench: bench: %s '%.40s': expected a list such as %s\n", opt, RB_ESC(s),
                example);
        return -1;
    }
    strcpy(buf, s);
    return 0;
}

/* --kernels a,b (or ROPEBENCH_ISA, named by `what` in messages): every name known,
 * built and supported; listed once each. */
static int parse_kernels(const char *what, const char *s, bench_opts *o)
{
    char buf[256], err[256];
    if (list_copy(what, s, buf, sizeof buf, "ref,avx512"))
        return -1;
    o->n_kernels = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int known = 0;
        for (int i = 0; i < N_KNOWN; i++) known |= !strcmp(t, known_kernels[i]);
        if (!known) {
            fprintf(stderr, "ropebench: bench: %s: unknown kernel '%s' (known: ref, blas, "
                            "avx512, avx512_bf16)\n", what, RB_ESC(t));
            return -1;
        }
        for (int i = 0; i < o->n_kernels; i++)
            if (!strcmp(o->kernels[i].name, t)) {
                fprintf(stderr, "ropebench: bench: %s: '%s' listed twice\n", what, RB_ESC(t));
                return -1;
            }
        const char *dtype = strcmp(t, "avx512_bf16") ? "fp32" : "bf16";
        if (rb_kernels_select_dtype(t, dtype, &o->kernels[o->n_kernels], NULL, err, sizeof err)) {
            fprintf(stderr, "ropebench: bench: %s: %s\n", what, err);
            return -1;
        }
        o->n_kernels++;
    }
    return 0;
}

/* Default kernel list: every known kernel that is built and supported here. */
static void default_kernels(bench_opts *o, char *missing, size_t len)
{
    char err[256];
    missing[0] = '\0';
    o->n_kernels = 0;
    for (int i = 0; i < N_KNOWN; i++) {
        const char *dtype = strcmp(known_kernels[i], "avx512_bf16") ? "fp32" : "bf16";
        if (rb_kernels_select_dtype(known_kernels[i], dtype, &o->kernels[o->n_kernels], NULL,
                                    err, sizeof err) == 0)
            o->n_kernels++;
        else
            snprintf(missing + strlen(missing), len - strlen(missing), "%s%s",
                     missing[0] ? ", " : "", known_kernels[i]);
    }
}

/* --threads 1,all,4: resolved against all = OpenMP's default thread count (capped by
 * OMP_THREAD_LIMIT); a count above that limit is refused, since a row labelled with it
 * would have run with fewer threads. */
static int parse_threads(const char *s, bench_opts *o)
{
    char buf[128];
    if (list_copy("--threads", s, buf, sizeof buf, "1,all"))
        return -1;
    o->n_threads = 0;
    int from_all[MAX_THREADS] = {0}, limit = rb_kernels_thread_limit();
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const int is_all = !strcmp(t, "all");
        int n;
        if (is_all)
            n = o->all_threads;
        else if (parse_count("--threads", t, 0, 1024, &n))
            return -1;
        if (n > 1024) {
            if (is_all)
                fprintf(stderr, "ropebench: bench: --threads all: OpenMP's default here is "
                                "%d threads (OMP_NUM_THREADS or the CPUs), at most 1024\n", n);
            else
                fprintf(stderr, "ropebench: bench: --threads %d: at most 1024\n", n);
            return -1;
        }
        if (n > limit) {
            fprintf(stderr, "ropebench: bench: --threads %d: %s allows at most %d thread%s "
                            "here, so the row would run with fewer\n", n,
#ifdef _OPENMP
                    "OMP_THREAD_LIMIT",
#else
                    "this build (without OpenMP)",
#endif
                    limit, limit == 1 ? "" : "s");
            return -1;
        }
        /* a value given twice (1,1 or 1,01) is refused; "1,all" where all is 1 is one
         * row (the default list on a 1-CPU machine) */
        int dup = -1;
        for (int i = 0; i < o->n_threads; i++)
            if (o->threads[i] == n) dup = i;
        if (dup >= 0 && is_all != from_all[dup]) continue;
        if (dup >= 0) {
            fprintf(stderr, "ropebench: bench: --threads: '%s' listed twice\n", RB_ESC(t));
            return -1;
        }
        if (o->n_threads == MAX_THREADS) {
            fprintf(stderr, "ropebench: bench: --threads: more than %d values\n", MAX_THREADS);
            return -1;
        }
        from_all[o->n_threads] = is_all;
        o->threads[o->n_threads++] = n;
    }
    return 0;
}

/* --only causal,probe,rope: the row kinds to measure, each known, at least one. */
static int parse_only(const char *s, bench_opts *o)
{
    char buf[64];
    if (list_copy("--only", s, buf, sizeof buf, "causal,probe"))
        return -1;
    o->do_causal = o->do_probe = o->do_rope = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int *flag = !strcmp(t, "causal") ? &o->do_causal
                    : !strcmp(t, "probe") ? &o->do_probe
                    : !strcmp(t, "rope")  ? &o->do_rope
                                          : NULL;
        if (flag && *flag) {
            fprintf(stderr, "ropebench: bench: --only: '%s' listed twice\n", t);
            return -1;
        }
        if (flag) *flag = 1;
        else {
            fprintf(stderr, "ropebench: bench: --only: unknown row kind '%s' (known: causal, "
                            "probe, rope)\n", RB_ESC(t));
            return -1;
        }
    }
    return 0;
}

/* parse_seconds: a decimal number of seconds in [0, max] (digits, an optional point
 * and fraction; no sign, exponent or space), into *v. */
static int parse_seconds(const char *opt, const char *s, double max, double *v)
{
    const char *p = s;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++;
    const double x = digits && !*p ? strtod(s, NULL) : -1;
    if (!(x >= 0 && x <= max)) {
        fprintf(stderr, "ropebench: bench: %s '%s': not a number of seconds in [0, %g]\n", opt,
                RB_ESC(s), max);
        return -1;
    }
    *v = x;
    return 0;
}

/* --head-dims / --lengths: up to MAX_SHAPES integers in [lo, hi] (head_dims even). */
static int parse_shape_list(const char *opt, const char *s, int64_t lo, int64_t hi, int even,
                            int64_t *out, int *n)
{
    char buf[128];
    if (list_copy(opt, s, buf, sizeof buf, even ? "64,128" : "4096,16384"))
        return -1;
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long long x = 0;
        if (rb_cli_parse_count(t, &x) != 0 || x < lo || x > hi || (even && x % 2)) {
            fprintf(stderr, "ropebench: bench: %s '%s': not %s integer in [%lld, %lld]\n", opt,
                    RB_ESC(t), even ? "an even" : "an", (long long)lo, (long long)hi);
            return -1;
        }
        if (*n == MAX_SHAPES) {
            fprintf(stderr, "ropebench: bench: %s: more than %d values\n", opt, MAX_SHAPES);
            return -1;
        }
        for (int i = 0; i < *n; i++)
            if (out[i] == x) { /* the same rows twice would be measured twice */
                fprintf(stderr, "ropebench: bench: %s: %lld listed twice\n", opt, x);
                return -1;
            }
        out[(*n)++] = x;
    }
    return 0;
}

/* ---- measurement --------------------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One benchmark: prepare (untimed) then call (timed), warm-up then repetitions. */
typedef struct {
    void *ctx;
    void (*prepare)(void *ctx);
    int (*call)(void *ctx);
} bench_fn;

/* calls_batch: prepare once (untimed), then k calls; the seconds the k calls took, or
 * -1 when one failed (RB_ENOMEM). */
static double calls_batch(const bench_fn *f, int64_t k)
{
    if (f->prepare) f->prepare(f->ctx);
    const double t0 = now_s();
    for (int64_t i = 0; i < k; i++)
        if (f->call(f->ctx)) return -1;
    return now_s() - t0;
}

/* measure: fill median/min/max/cv/reps/warmup/calls of row, the times per call.
 * Warm-up calls first (untimed). Then, as Google Benchmark sizes its iterations, a call
 * shorter than o->min_rep_s is timed k at a time: k grows, at most 10x a step (untimed
 * batches, counted in row->warmup), until k times the fastest time per call measured
 * so far reaches 0.9 x min_rep_s, or k reaches MAX_CALLS, and
 * each repetition is then k calls after one prepare, its time divided by k, so that a
 * repetition of microsecond calls is not a single clock reading's worth. The calls of a
 * batch merge into the state the earlier ones left, as a ring's steps do; the
 * prepare (a fresh state) stays untimed. Without a warm-up (--warmup 0, --quick) no
 * call is timed warm, so none is batched: k = 1. Without --reps, a row whose
 * repetition is long gets fewer repetitions (at least one) so it stays near
 * REP_BUDGET_S. */
static int measure(const bench_opts *o, const bench_fn *f, bench_row *row)
{
    double t_est = -1, ts[64];
    int warm = o->warmup;
    for (int i = 0; i < warm; i++) {
        const double t = calls_batch(f, 1);
        if (t < 0) return RB_ENOMEM;
        t_est = t;
        if (!o->reps_given && t_est > 1.0) { /* long rows: one warm-up is enough */
            warm = i + 1;
            break;
        }
    }
    int64_t k = 1;
    if (warm > 0 && o->min_rep_s > 0) {
        /* per: the fastest seconds per call measured so far (a clock that read 0 taken
         * as 1 ns), so that a batch the host slowed cannot end the sizing early (under
         * a parallel CI run one took 30x its calls' time and left k at 10); k grows at
         * most 10x a step, as Google Benchmark's iterations do, so that one fast
         * reading cannot jump it to MAX_CALLS */
        for (double per = t_est;;) {
            per = per > 1e-9 ? per : 1e-9;
            if ((double)k * per >= 0.9 * o->min_rep_s || k == MAX_CALLS)
                break;
            double want = ceil(o->min_rep_s / per);
            want = want < 10.0 * (double)k ? want : 10.0 * (double)k;
            const int64_t next = want >= MAX_CALLS ? MAX_CALLS : (int64_t)want;
            if (next <= k)
                break;
            k = next;
            const double t = calls_batch(f, k);
            if (t < 0) return RB_ENOMEM;
            warm += (int)k;
            per = t / (double)k < per ? t / (double)k : per;
            t_est = per; /* the repetitions' budget below: a warm call, not the first */
        }
    }
    int reps = o->reps > 64 ? 64 : o->reps;
    for (int i = 0; i < reps; i++) {
        /* without --reps, a row whose repetition is long gets fewer (at least one):
         * estimated from the warm-up, or without one from the first repetition */
        if (!o->reps_given && (i == 0 || (i == 1 && warm == 0)) && t_est > 0 &&
            t_est * (double)k * reps > REP_BUDGET_S) {
            const int fit = (int)(REP_BUDGET_S / (t_est * (double)k));
            reps = fit > i ? fit : (i ? i : 1);
        }
        if (i >= reps)
            break;
        const double t = calls_batch(f, k);
        if (t < 0) return RB_ENOMEM;
        ts[i] = t / (double)k;
        if (i == 0 && warm == 0)
            t_est = ts[0];
    }
    double mean = 0, var = 0;
    for (int i = 0; i < reps; i++) mean += ts[i] / reps;
    for (int i = 0; i < reps; i++) var += (ts[i] - mean) * (ts[i] - mean);
    qsort(ts, (size_t)reps, sizeof *ts, cmp_dbl);
    row->reps = reps;
    row->warmup = warm;
    row->calls = k;
    row->min_s = ts[0];
    row->max_s = ts[reps - 1];
    row->median_s = reps % 2 ? ts[reps / 2] : 0.5 * (ts[reps / 2 - 1] + ts[reps / 2]);
    /* (one repetition has no spread to tell: NaN, shown as "-" and null, not 0) */
    row->cv = reps > 1 && mean > 0 ? sqrt(var / (reps - 1)) / mean : NAN;
    return 0;
}

/* splitmix64-driven uniform floats in [-amp, amp] */
static void fill_random(float *x, size_t n, uint64_t seed, float amp)
{
    /* SplitMix64's i-th value depends on i alone, so the fill is split over OpenMP's
     * threads as the triad's first touch is (static): on a NUMA machine the pages then
     * lie where the all-thread rows and the triad they are set against read them */
    const long long nn = (long long)n;
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < nn; i++) {
        uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = amp * (float)((double)(z >> 11) * 0x1p-52 - 1.0);
    }
}

typedef struct {
    const rb_kernel_ops *ops;
    const float *q, *k, *v;
    const int64_t *q_pos, *k_pos;
    int64_t nq, nk;
    int d;
    double *state;
} tile_ctx;

static void tile_prepare(void *c)
{
    tile_ctx *t = c;
    rb_state_init(t->state, t->nq, t->d);
}

static int tile_call(void *c)
{
    tile_ctx *t = c;
    return t->ops->tile(t->q, t->q_pos, t->nq, t->k, t->v, t->k_pos, t->nk, t->d,
                        1.0 / sqrt((double)t->d), t->state) < 0;
}

typedef struct {
    rb_rope_apply_fn fn;
    float *x;
    const int64_t *pos;
    const double *inv_freq;
    int64_t n;
    int d;
} rope_ctx;

static int rope_call(void *c)
{
    rope_ctx *r = c;
    r->fn(r->x, r->n, (size_t)r->d, r->pos, r->inv_freq, r->d, r->d, RB_LAYOUT_NEOX, 1.0);
    return 0;
}

static void row_peaks(const bench_peaks *pk, const bench_opts *o, bench_row *row)
{
    /* the peaks measured at the row's thread count */
    if (row->threads == 1) {
        row->peak_gflops = pk->fma1;
        row->triad_gbps = pk->triad1;
    } else if (row->threads == o->all_threads) {
        row->peak_gflops = pk->fma_all;
        row->triad_gbps = pk->triad_all;
    } else {
        row->peak_gflops = row->triad_gbps = NAN;
        for (int i = 0; i < pk->n_other; i++)
            if (pk->other[i] == row->threads) {
                row->peak_gflops = pk->fma_other[i];
                row->triad_gbps = pk->triad_other[i];
            }
    }
    row->fraction = isnan(row->gbps) ? row->gflops / row->peak_gflops
                                     : row->gbps / row->triad_gbps;
}

static void progress(const bench_opts *o, int i, int n, const bench_row *r)
{
    if (o->quick) return;
    fprintf(stderr, "bench: [%d/%d] %s %s %s d=%d L=%lld threads=%d\n", i, n, r->kernel,
            r->dtype, r->bench, r->head_dim, (long long)r->seq_len, r->threads);
}

/* ---- output ----------------------------------------------------------------------------- */

static void print_table(FILE *f, const bench_row *rows, int n)
{
    fprintf(f, "# %-11s %-5s %-6s %4s %8s %7s %4s %7s %11s %11s %11s %6s %10s %8s %12s %11s "
               "%8s\n",
            "kernel", "dtype", "bench", "d", "L[tok]", "threads", "reps", "calls", "median[s]",
            "min[s]", "max[s]", "cv[%]", "GFLOP/s", "GB/s", "peak[GF/s]", "triad[GB/s]", "frac");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        char gb[16], cv[16];
        if (isnan(r->gbps)) snprintf(gb, sizeof gb, "-");
        else snprintf(gb, sizeof gb, "%.2f", r->gbps);
        if (isnan(r->cv)) snprintf(cv, sizeof cv, "-");
        else snprintf(cv, sizeof cv, "%.2f", 100 * r->cv);
        /* seconds in 5 significant digits (a row of a few microseconds read 0.00000) */
        fprintf(f, "  %-11s %-5s %-6s %4d %8lld %7d %4d %7lld %11.5g %11.5g %11.5g %6s %10.2f "
                   "%8s %12.1f %11.2f %8.3f\n",
                r->kernel, r->dtype, r->bench, r->head_dim, (long long)r->seq_len, r->threads,
                r->reps, (long long)r->calls, r->median_s, r->min_s, r->max_s, cv, r->gflops, gb,
                r->peak_gflops, r->triad_gbps, r->fraction);
    }
}

/* print_breakdown: `#` lines with the probe rows' breakdowns (rows with n_cls > 0), one
 * line per class and one per row for the whole pass. */
static void print_breakdown(FILE *f, const bench_row *rows, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= rows[i].n_cls > 0;
    if (!any)
        return;
    fprintf(f, "# probe breakdown: one more call of each probe row with time-stamp counter "
               "timers around every key block; blocks of 64 keys by the query rows that see "
               "them (at or after the block's first key); time = thread-seconds (summed over "
               "threads); ns per pair computed (rows x keys, masked pairs included); other = "
               "positions, packing and the prefetch schedule; K+V GB/s = the class's keys' K "
               "and V bytes over its time\n");
    fprintf(f, "# %-11s %-5s %7s %9s %7s %8s %9s %9s %8s %8s %7s %11s %7s %9s %9s\n", "kernel",
            "dtype", "threads", "rows", "blocks", "keys", "pairs", "time[s]", "share[%]",
            "ns/pair", "qk[ns]", "softmax[ns]", "pv[ns]", "other[ns]", "K+V[GB/s]");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (!r->n_cls)
            continue;
        double all = 0;
        for (int c = 0; c < r->n_cls; c++)
            all += r->cls[c].s;
        for (int c = 0; c < r->n_cls; c++) {
            const bench_class *e = &r->cls[c];
            char rr[32];
            if (e->rows_max < 0) snprintf(rr, sizeof rr, "%lld+", (long long)e->rows_min);
            else snprintf(rr, sizeof rr, "%lld-%lld", (long long)e->rows_min, (long long)e->rows_max);
            const double pr = (double)e->pairs;
            fprintf(f, "# %-11s %-5s %7d %9s %7lld %8lld %9lld %9.5f %8.1f %8.2f %7.2f %11.2f "
                       "%7.2f %9.2f %9.2f\n",
                    r->kernel, r->dtype, r->threads, rr, (long long)e->blocks,
                    (long long)e->keys, (long long)e->pairs, e->s,
                    all > 0 ? 100 * e->s / all : 0.0, 1e9 * e->s / pr, 1e9 * e->qk_s / pr,
                    1e9 * e->softmax_s / pr, 1e9 * e->pv_s / pr,
                    1e9 * (e->s - e->qk_s - e->softmax_s - e->pv_s) / pr,
                    e->s > 0 ? 2.0 * (double)e->keys * r->head_dim * sizeof(float) / e->s * 1e-9
                             : 0.0);
        }
        fprintf(f, "# %-11s %-5s %7d   the call: %.5f s wall (median of the row %.5f s); its "
                   "blocks %.5f thread-s = %.1f %% of %d x the wall\n",
                r->kernel, r->dtype, r->threads, r->prof_call_s, r->median_s, all,
                r->prof_call_s > 0 ? 100 * all / (r->threads * r->prof_call_s) : 0.0,
                r->threads);
    }
}

/* json_breakdown: the "breakdown" member of a probe row with one (seconds). */
static void json_breakdown(FILE *f, const bench_row *r)
{
    fprintf(f, "\"breakdown\": {\"call_s\": %.9g, \"classes\": [", r->prof_call_s);
    for (int c = 0; c < r->n_cls; c++) {
        const bench_class *e = &r->cls[c];
        fprintf(f, "%s{\"rows_min\": %lld, \"rows_max\": %lld, \"blocks\": %lld, "
                   "\"keys\": %lld, \"pairs\": %lld, \"s\": %.9g, \"qk_s\": %.9g, "
                   "\"softmax_s\": %.9g, \"pv_s\": %.9g}",
                c ? ", " : "", (long long)e->rows_min, (long long)e->rows_max,
                (long long)e->blocks, (long long)e->keys, (long long)e->pairs, e->s, e->qk_s,
                e->softmax_s, e->pv_s);
    }
    fprintf(f, "]}, ");
}

/* json_num: "key": value with fmt, or "key": null where value is not finite (JSON has
 * no NaN or inf), then ", " */
static void json_num(FILE *f, const char *key, double v, const char *fmt)
{
    fprintf(f, "\"%s\": ", key);
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("null", f);
    fputs(", ", f);
}

static int write_json(const bench_row *rows, int n, const bench_peaks *pk,
                      const bench_opts *o, FILE *f)
{
    fprintf(f, "[\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        fprintf(f, "  {\"kernel\": \"%s\", \"kernel_detail\": \"%s\", \"dtype\": \"%s\", "
                   "\"bench\": \"%s\", "
                   "\"head_dim\": %d, \"seq_len\": %lld, \"n_rows\": %lld, \"causal\": %s, "
                   "\"threads\": %d, \"reps\": %d, \"warmup\": %d, \"calls_per_rep\": %lld, ",
                r->kernel, r->detail, r->dtype, r->bench, r->head_dim, (long long)r->seq_len,
                (long long)r->n_rows, r->causal ? "true" : "false", r->threads, r->reps,
                r->warmup, (long long)r->calls);
        json_num(f, "median_s", r->median_s, "%.9g");
        json_num(f, "min_s", r->min_s, "%.9g");
        json_num(f, "max_s", r->max_s, "%.9g");
        json_num(f, "cv", r->cv, "%.6g");          /* null: one repetition */
        json_num(f, "gflops", r->gflops, "%.9g");
        json_num(f, "gbps", r->gbps, "%.9g");      /* null: causal rows */
        json_num(f, "overlap_ceiling", r->overlap_ceiling, "%.9g");
        if (!strcmp(r->bench, "probe")) /* (of which n_rows are distinct) */
            fprintf(f, "\"probe_positions\": %d, ", o->probe_rows);
        if (r->n_cls)
            json_breakdown(f, r);
        json_num(f, "peak_gflops", r->peak_gflops, "%.9g");
        json_num(f, "triad_gbps", r->triad_gbps, "%.9g");
        json_num(f, "fraction_of_peak", r->fraction, "%.9g");
        fprintf(f, "\"fraction_of\": \"%s\", \"triad_bytes_per_array\": %zu, "
                   "\"min_rep_time_s\": %.9g, \"peaks_implausible\": %s}%s\n",
                isnan(r->gbps) ? "peak_gflops" : "triad_gbps", pk->triad_bytes, o->min_rep_s,
                pk->implausible ? "true" : "false", i + 1 < n ? "," : "");
    }
    fprintf(f, "]\n");
    return 0;
}

/* write_json_file: the rows as JSON (write_json) into path.tmp-<pid> beside path, renamed
 * over path only when whole: a write that fails (a full disk, a file-size limit) leaves
 * an earlier file at path as it was (a symbolic link at path is replaced, not
 * followed), says so in one line with the cause, and returns -1. */
static int write_json_file(const char *path, const bench_row *rows, int n,
                           const bench_peaks *pk, const bench_opts *o)
{
    char tmp[4200]; /* (PATH_MAX 4096 and the suffix) */
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int e = errno, bad = !f;
    if (f) {
        errno = 0;
        write_json(rows, n, pk, o, f);
        bad = fflush(f) != 0 || ferror(f);
        e = errno;
        if (fclose(f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        if (!bad && rename(tmp, path) != 0) {
            bad = 1;
            e = errno;
        }
        if (bad)
            unlink(tmp);
    }
    if (bad)
        fprintf(stderr, "ropebench: bench: --json %s: cannot write: %s (an earlier file "
                        "there, if any, is left as it was)\n",
                path, e ? strerror(e) : "write error");
    return bad ? -1 : 0;
}

/* bench_check_json: whether --json may write path: not the -o file (out may be NULL),
 * and not an HDF5 file (a results file or a user's input given as --json by mistake
 * would be overwritten with JSON). Reads only. RB_OK or an error "--json ...: why". */
static int bench_check_json(const char *path, const char *out, char *err, size_t el)
{
    if (!*path)
        return rb_errf(err, el, RB_EINVAL, "--json: empty file name");
    if (out && rb_cli_same_file(path, out))
        return rb_errf(err, el, RB_EINVAL, "--json %s and -o %s name the same file", path,
                       out);
    /* an existing path as -o's: a FIFO would block the open below until a reader came,
     * a device (/dev/full, /dev/null) would fail only at the end, after every row was
     * measured (a new file's directory is left to the open, which names the error) */
    struct stat sb;
    if (stat(path, &sb) == 0 && rb_cli_check_output("--json", path, err, el) != RB_OK)
        return RB_EINVAL;
    char e2[256];
    const int kind = rb_cli_results_file(path, e2, sizeof e2);
    if (kind == RB_CLI_RESULTS || kind == RB_CLI_FOREIGN_HDF5 || kind == RB_CLI_OTHER_VERSION)
        return rb_errf(err, el, RB_EINVAL, "--json %s: %s; --json would overwrite it with "
                       "JSON: choose another name", path,
                       kind == RB_CLI_RESULTS ? "a ropebench results file" : "an HDF5 file");
    if (kind == RB_CLI_NOT_HDF5) {
        /* an existing file is replaced only when it looks like JSON as an earlier --json
         * left it (an array of objects: '[' then '{' or ']'; or an object), not a config
         * ("[model]" starts like an array), a script or notes */
        struct stat st;
        int c = EOF, json = 0;
        FILE *f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "r") : NULL;
        if (f) {
            for (int k = 0; k < 2; k++) {
                do c = getc(f);
                while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
                if (k == 0 && c != '[') break;
            }
            json = c == '{' || c == ']';
            fclose(f);
        }
        if (f && !json)
            return rb_errf(err, el, RB_EINVAL, "--json %s: an existing file that is not "
                           "JSON; --json replaces only JSON: choose another name", path);
    }
    return RB_OK;
}

/* bench_check_output: whether -o may take /bench: an existing results file (*exists =
 * 1), or a new or empty file (*exists = 0, the writer creates it); anything else is
 * refused and left as it was (rb_cli_results_file). Reads only, on this rank. */
static int bench_check_output(const char *path, int *exists, char *err, size_t el)
{
    const int kind = rb_cli_results_file(path, err, el);
    *exists = kind == RB_CLI_RESULTS;
    if (kind < 0 || kind == RB_CLI_ABSENT || kind == RB_CLI_EMPTY || kind == RB_CLI_RESULTS)
        return kind < 0 ? kind : RB_OK;
    return rb_errf(err, el, RB_EFORMAT, "-o %s: %s; bench -o adds /bench to a results file "
                   "or creates a new one", path, rb_cli_refusal(kind));
}

/* write_breakdown: the probe breakdown of the rows that have one (n_cls > 0) as the 1-D
 * columns of /bench.new/probe_breakdown, one entry per (row, class): row (the row's
 * index in /bench), rows_min, rows_max (-1: no bound), blocks, keys, pairs, and the
 * seconds s, qk_s, softmax_s, pv_s and call_s (the row's profiled pass). Writes nothing
 * when no row has one. */
static int write_breakdown(rb_results *res, const bench_row *rows, int n, char *err, size_t el)
{
    int64_t m = 0;
    for (int i = 0; i < n; i++)
        m += rows[i].n_cls;
    if (m == 0)
        return 0;
    int rc = 0;
    int64_t *iv = malloc((size_t)m * sizeof *iv);
    double *dv = malloc((size_t)m * sizeof *dv);
    const int64_t dims[1] = {m};
    if (!iv || !dv) {
        rc = rb_errf(err, el, RB_ENOMEM, "/bench/probe_breakdown: out of memory");
        goto cleanup;
    }
    static const char *const icol[] = {"row", "rows_min", "rows_max", "blocks", "keys",
                                       "pairs"};
    static const char *const dcol[] = {"s", "qk_s", "softmax_s", "pv_s", "call_s"};
    char path[96];
    for (int k = 0; k < 6 + 5; k++) {
        int64_t j = 0;
        for (int i = 0; i < n; i++)
            for (int c = 0; c < rows[i].n_cls; c++) {
                const bench_class *e = &rows[i].cls[c];
                const int64_t ix[6] = {i, e->rows_min, e->rows_max, e->blocks, e->keys,
                                       e->pairs};
                const double dx[5] = {e->s, e->qk_s, e->softmax_s, e->pv_s,
                                      rows[i].prof_call_s};
                if (k < 6)
                    iv[j++] = ix[k];
                else
                    dv[j++] = dx[k - 6];
            }
        snprintf(path, sizeof path, "/bench.new/probe_breakdown/%s", k < 6 ? icol[k] : dcol[k - 6]);
        if ((rc = k < 6 ? rb_results_write_i64(res, path, 1, dims, iv, 0, err, el)
                        : rb_results_write_f64(res, path, 1, dims, dv, 0, err, el)))
            goto cleanup;
    }
cleanup:
    free(iv);
    free(dv);
    return rc;
}

/* The /bench group: one 1-D dataset per column, peaks as attributes. Collective over
 * MPI_COMM_WORLD (this command runs on one rank). When a write fails once the file is
 * open, the file is not closed (*abandoned = 1): closing after a failed write rewrites
 * the superblock to point at metadata that could not be written, and an existing
 * results file would no longer open (the same reason as a failed `ropebench run`, see
 * docs/results-format.md); the caller then exits without MPI_Finalize, where HDF5 would
 * close it. *created: set when path did not exist (or was empty) and this call made it. */
static int write_h5(const char *path, const bench_row *rows, int n, const bench_peaks *pk,
                    const bench_opts *o, char *err, size_t el, int *abandoned, int *created)
{
    rb_results *res = NULL;
    int rc = 0;
    const char **s = malloc((size_t)n * sizeof *s);
    int64_t *iv = malloc((size_t)n * sizeof *iv);
    double *dv = malloc((size_t)n * sizeof *dv);
    const int64_t dims[1] = {n};
    if (!s || !iv || !dv) {
        rc = rb_errf(err, el, RB_ENOMEM, "-o %s: out of memory", path);
        goto cleanup;
    }
    char when[32];
    time_t now = time(NULL);
    struct tm tmv;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    char env[1024];
    rb_cli_env_record(env, sizeof env);
    /* the new tables go to /bench.new first and replace /bench only once all of them
     * are written: removing /bench first would let HDF5 put the new columns over the
     * old ones' space, which the file on disk still points at until the next flush */
    int exists = 0;
    if ((rc = bench_check_output(path, &exists, err, el))) goto cleanup;
    if (exists) {
        if ((rc = rb_results_open(&res, path, MPI_COMM_WORLD, err, el)) ||
            (rc = rb_results_remove(res, "/bench.new", err, el)))
            goto cleanup;
    } else {
        /* a new (or empty) file gets the root attributes of a results file, so that
         * `ropebench report` and other readers accept it (docs/results-format.md) */
        *created = 1;
        if ((rc = rb_results_create(&res, path, MPI_COMM_WORLD, err, el)) ||
            (rc = rb_results_attr_str(res, "/", "format", "ropebench", err, el)) ||
            (rc = rb_results_attr_i64(res, "/", "format_version", 1, err, el)) ||
            (rc = rb_results_attr_str(res, "/", "ropebench_version", RB_VERSION, err, el)) ||
            (rc = rb_results_attr_str(res, "/", "git_describe", RB_GIT_DESCRIBE, err, el)) ||
            (rc = rb_results_attr_str(res, "/", "created_utc", when, err, el)))
            goto cleanup;
    }
#define STR_COL(name, expr)                                                                   \
    do {                                                                                      \
        for (int i = 0; i < n; i++) s[i] = (expr);                                            \
        if ((rc = rb_results_write_strings(res, "/bench.new/" name, n, s, 0, err, el))) goto cleanup; \
    } while (0)
#define I64_COL(name, expr)                                                                   \
    do {                                                                                      \
        for (int i = 0; i < n; i++) iv[i] = (int64_t)(expr);                                  \
        if ((rc = rb_results_write_i64(res, "/bench.new/" name, 1, dims, iv, 0, err, el))) goto cleanup; \
    } while (0)
#define F64_COL(name, expr)                                                                   \
    do {                                                                                      \
        for (int i = 0; i < n; i++) dv[i] = (expr);                                           \
        if ((rc = rb_results_write_f64(res, "/bench.new/" name, 1, dims, dv, 0, err, el))) goto cleanup; \
    } while (0)
    STR_COL("kernel", rows[i].kernel);
    STR_COL("kernel_detail", rows[i].detail);
    STR_COL("dtype", rows[i].dtype);
    STR_COL("bench", rows[i].bench);
    I64_COL("head_dim", rows[i].head_dim);
    I64_COL("seq_len", rows[i].seq_len);
    I64_COL("n_rows", rows[i].n_rows);
    I64_COL("causal", rows[i].causal);
    I64_COL("threads", rows[i].threads);
    I64_COL("reps", rows[i].reps);
    I64_COL("warmup", rows[i].warmup);
    I64_COL("calls_per_rep", rows[i].calls);
    F64_COL("median_s", rows[i].median_s);
    F64_COL("min_s", rows[i].min_s);
    F64_COL("max_s", rows[i].max_s);
    F64_COL("cv", rows[i].cv);
    F64_COL("gflops", rows[i].gflops);
    F64_COL("gbps", rows[i].gbps);
    F64_COL("peak_gflops", rows[i].peak_gflops);
    F64_COL("triad_gbps", rows[i].triad_gbps);
    F64_COL("fraction_of_peak", rows[i].fraction);
    F64_COL("overlap_ceiling", rows[i].overlap_ceiling);
    if ((rc = write_breakdown(res, rows, n, err, el))) goto cleanup;
#undef STR_COL
#undef I64_COL
#undef F64_COL
    {
        rb_cpu_info ci;
        rb_cpu_detect(&ci);
        const struct { const char *k; double v; } fa[] = {
            {"peak_gflops_1thread", pk->fma1}, {"peak_gflops_all", pk->fma_all},
            {"triad_gbps_1thread", pk->triad1}, {"triad_gbps_all", pk->triad_all},
            {"tile_ceiling_gflops_1thread", pk->tiles1},
            {"dpbf16_peak_gflops_1thread", pk->dpbf16}};
        for (size_t i = 0; i < sizeof fa / sizeof fa[0]; i++)
            if ((rc = rb_results_attr_f64(res, "/bench.new", fa[i].k, fa[i].v, err, el))) goto cleanup;
        if ((rc = rb_results_attr_i64(res, "/bench.new", "threads_all", o->all_threads, err, el)) ||
            (rc = rb_results_attr_i64(res, "/bench.new", "triad_bytes_per_array",
                                      (int64_t)pk->triad_bytes, err, el)) ||
            (rc = rb_results_attr_i64(res, "/bench.new", "quick", o->quick, err, el)) ||
            (o->do_probe && o->n_kernels > 0 &&
             (rc = rb_results_attr_i64(res, "/bench.new", "probe_positions", o->probe_rows,
                                       err, el))) ||
            (rc = rb_results_attr_f64(res, "/bench.new", "min_rep_time_s", o->min_rep_s, err,
                                      el)) ||
            (rc = rb_results_attr_i64(res, "/bench.new", "peaks_implausible", pk->implausible,
                                      err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "cpu_model", ci.model, err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "peak_fma_isa", rb_peak_fma_isa(), err,
                                      el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "hugepages",
                                      rb_kernels_hugepages(rb_cli_thp_setting()), err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "environment", env, err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "ropebench_version", rb_version_string(),
                                      err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "created_utc", when, err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "flop_counting",
                                      "causal: 2*L^2*d per call; probe: 4*d per visible "
                                      "(query, key) pair; rope: 6 per rotated pair",
                                      err, el)) ||
            (rc = rb_results_attr_str(res, "/bench.new", "byte_counting",
                                      "probe: K+V bytes read once (fp32); rope: 2*rows*d*4 "
                                      "(one read, one write); triad: 24 bytes per element",
                                      err, el)))
            goto cleanup;
    }
    if ((rc = rb_results_remove(res, "/bench", err, el)) ||
        (rc = rb_results_move(res, "/bench.new", "/bench", err, el)))
        goto cleanup;
cleanup:
    if (res && rc) {
        *abandoned = 1;
    } else if (res) {
        char e2[256];
        int crc = rb_results_close(res, e2, sizeof e2);
        if (!rc && crc) {
            rc = crc;
            *abandoned = 1; /* the close may have left the file open */
            snprintf(err, el, "%s", e2);
        }
    }
    free(s);
    free(iv);
    free(dv);
    return rc;
}

/* ---- the rows ------------------------------------------------------------------------- */

static int64_t probe_keys(const bench_opts *o) { return o->quick ? 65536 : 1048576; }

/* Log-spaced probe positions in [0, L-1] as the study makes them; sorted, unique. */
static int64_t probe_positions(int64_t L, int P, int64_t *p)
{
    int64_t n = 0;
    for (int i = 0; i < P; i++) {
        double x = P == 1 ? (double)L : exp(log((double)L) * i / (P - 1));
        int64_t v = (int64_t)llround(x) - 1;
        if (v < 0) v = 0;
        if (v > L - 1) v = L - 1;
        if (n == 0 || v != p[n - 1]) p[n++] = v;
    }
    return n;
}

/* probe_flop: the probe rows' FLOP, 4 d per visible (query, key) pair, with P
 * log-spaced rows against n_keys keys; -1 when out of memory. */
static double probe_flop(int64_t n_keys, int P, int d)
{
    int64_t *p = malloc((size_t)P * sizeof *p);
    if (!p) return -1;
    const int64_t nq = probe_positions(n_keys, P, p);
    double pairs = 0;
    for (int64_t i = 0; i < nq; i++) pairs += (double)(p[i] + 1);
    free(p);
    return 4.0 * d * pairs;
}

/* probe_roofline: `#` lines with the probe rows' roofline at each measured thread count:
 * their FLOP (4 d per visible pair) and bytes (K and V once, fp32), the time neither the
 * FMA peak nor the triad allows going below, max(FLOP / peak, bytes / triad), and so the
 * highest fraction of the triad the row could show (below 1 where the arithmetic, not
 * the stream, bounds it); bf16 against bf16_x times the peak: the VDPBF16PS peak's
 * multiple of the FMA peak measured in the same run (2, what VDPBF16PS does per
 * instruction against an FMA, where it was not measured). */
static void probe_roofline(FILE *f, int64_t n_keys, int P, int d, const int *thr, int n_thr,
                           const double *peak, const double *triad, double bf16_x)
{
    const double flop = probe_flop(n_keys, P, d), bytes = 2.0 * (double)n_keys * d * sizeof(float);
    if (flop < 0) return;
    fprintf(f, "# probe roofline: %.3f GFLOP on %.3f GB (%.2f FLOP/B); frac cannot exceed "
               "min(1, (bytes/triad) / (FLOP/peak)):", flop * 1e-9, bytes * 1e-9, flop / bytes);
    for (int i = 0; i < n_thr; i++) {
        const double tc = flop / (peak[i] * 1e9), tb = bytes / (triad[i] * 1e9);
        fprintf(f, "%s %d thread%s: balance %.2f FLOP/B, fp32 <= %.3f, bf16 <= %.3f", i ? ";" : "",
                thr[i], thr[i] == 1 ? "" : "s", peak[i] / triad[i], tb >= tc ? 1.0 : tb / tc,
                tb >= tc / bf16_x ? 1.0 : bf16_x * tb / tc);
    }
    fprintf(f, "\n");
}

typedef struct {
    bench_row *rows;
    int n, cap;
} row_list;

/* row_new: the next row of rl, zeroed and labelled (rl grows as needed; NULL when out
 * of memory). Counted in rl->n only once the caller has measured it. */
static bench_row *row_new(row_list *rl, const rb_kernel_ops *k, const char *bench, int d,
                          int64_t L, int64_t n_rows, int causal, int threads)
{
    if (rl->n == rl->cap) {
        const int cap = rl->cap ? 2 * rl->cap : ROWS_INITIAL;
        bench_row *nr = realloc(rl->rows, (size_t)cap * sizeof *nr);
        if (!nr) return NULL;
        rl->rows = nr;
        rl->cap = cap;
    }
    bench_row *r = &rl->rows[rl->n];
    memset(r, 0, sizeof *r);
    snprintf(r->kernel, sizeof r->kernel, "%s", k ? k->name : "ref");
    snprintf(r->dtype, sizeof r->dtype, "%s", k ? k->dtype : "fp32");
    r->detail = k && k->detail ? k->detail : "";
    r->bench = bench;
    r->head_dim = d;
    r->seq_len = L;
    r->n_rows = n_rows;
    r->causal = causal;
    r->threads = threads;
    r->gbps = NAN;
    r->overlap_ceiling = NAN;
    return r;
}

/* rope_variants: the RoPE rows' functions and names into fns[2], names[2]: the
 * reference, then the fast variant a measured kernel brings, else this CPU's fastest if
 * it is not the reference (fns[1] NULL: none). The fast row is named by its own variant
 * (rb_kernels_rope_fast's name), not by the kernel that brought it: avx512 and
 * avx512_bf16 share one, and a comparison matches rows by name. Returns how many. */
/* thread_count: the count row ti of a variant runs with, or 0 to skip it. A serial
 * variant (the reference tile and RoPE, which have no OpenMP) runs once, as 1 thread:
 * at the list's 1 if it has one, else at its first entry; rows of it at N threads were
 * the 1-thread row again, labelled N and set against the N-thread peaks. */
static int thread_count(const bench_opts *o, int ti, int serial)
{
    if (!serial)
        return o->threads[ti];
    int one = -1;
    for (int i = 0; i < o->n_threads && one < 0; i++)
        if (o->threads[i] == 1) one = i;
    return ti == (one >= 0 ? one : 0) ? 1 : 0;
}

static int rope_variants(const bench_opts *o, rb_rope_apply_fn fns[2], const char *names[2])
{
    const char *fast_name = NULL;
    const rb_rope_apply_fn fast = rb_kernels_rope_fast(&fast_name);
    fns[0] = rb_rope_apply;
    names[0] = "ref";
    fns[1] = NULL;
    names[1] = NULL;
    for (int kk = 0; kk < o->n_kernels && !fns[1]; kk++)
        if (o->kernels[kk].rope && o->kernels[kk].rope != rb_rope_apply) {
            fns[1] = o->kernels[kk].rope;
            names[1] = fns[1] == fast ? fast_name : o->kernels[kk].name;
        }
    if (!fns[1] && fast != rb_rope_apply) {
        fns[1] = fast;
        names[1] = fast_name;
    }
    return fns[1] ? 2 : 1;
}

/* probe_profile: one more call of probe row r (after its timed ones, so that the timers
 * change none of them) with the key-outer profile on (rb_probe_profile_set); r->cls
 * gets its classes that had blocks, in seconds (ticks over the pass's ticks times its
 * wall time), none when the kernel records nothing (not an AVX-512 kernel, or a build
 * without them). 0, or RB_ENOMEM. */
static int probe_profile(const bench_fn *f, bench_row *r)
{
    rb_probe_profile p;
    memset(&p, 0, sizeof p);
    if (!rb_probe_profile_set(&p))
        return 0;
    if (f->prepare) f->prepare(f->ctx);
    const int bad = f->call(f->ctx);
    rb_probe_profile_set(NULL);
    if (bad)
        return RB_ENOMEM;
    const double spt = p.call_ticks ? p.call_s / (double)p.call_ticks : 0;
    for (int c = 0; c < RB_PROF_CLASSES; c++) {
        if (p.blocks[c] <= 0)
            continue;
        r->cls[r->n_cls++] = (bench_class){
            (int64_t)1 << c, c == RB_PROF_CLASSES - 1 ? -1 : ((int64_t)2 << c) - 1,
            p.blocks[c], p.keys[c], p.pairs[c], (double)p.ticks[c] * spt,
            (double)p.ticks_qk[c] * spt, (double)p.ticks_softmax[c] * spt,
            (double)p.ticks_pv[c] * spt};
    }
    r->prof_call_s = p.call_s;
    return 0;
}

/* causal_shapes: the causal rows' lengths and head_dims (--lengths and --head-dims, or
 * the defaults: 4096 and 16384, 1024 and 2048 with --quick; 64 and 128), none without
 * causal rows. */
static void causal_shapes(const bench_opts *o, int64_t *Ls, int *nL, int *heads, int *nH)
{
    const int64_t dL[2] = {o->quick ? 1024 : 4096, o->quick ? 2048 : 16384};
    const int dH[2] = {64, 128};
    *nL = o->n_lens ? o->n_lens : 2;
    *nH = o->n_dims ? o->n_dims : 2;
    for (int i = 0; i < *nL; i++) Ls[i] = o->n_lens ? o->lens[i] : dL[i];
    for (int i = 0; i < *nH; i++) heads[i] = o->n_dims ? o->dims[i] : dH[i];
    if (!o->do_causal) *nL = *nH = 0;
}

/* bench_memory_need: a lower bound on the bytes the largest row holds at once (its
 * arrays: q, k, v, positions and the row state of 8-byte doubles; a kernel's own
 * packing comes on top), into *bytes, and which row into what (n bytes). */
static void bench_memory_need(const bench_opts *o, double *bytes, char *what, size_t n)
{
    *bytes = 0;
    what[0] = '\0';
    if (o->n_kernels > 0) {
        int64_t Ls[MAX_SHAPES];
        int heads[MAX_SHAPES], nL, nH;
        causal_shapes(o, Ls, &nL, heads, &nH);
        for (int li = 0; li < nL; li++)
            for (int hi = 0; hi < nH; hi++) {
                const double L = (double)Ls[li];
                const int d = heads[hi];
                const double b = L * d * 4.0 * 3 + L * 8.0 + L * (double)RB_STATE_STRIDE(d) * 8;
                if (b > *bytes) {
                    *bytes = b;
                    snprintf(what, n, "the causal rows of L = %.0f, head_dim %d", L, d);
                }
            }
    }
    if (o->do_probe && o->n_kernels > 0) {
        const double nk = (double)probe_keys(o), d = PROBE_D;
        const double b = nk * d * 4.0 * 2 + nk * 8.0 +
                         o->probe_rows * (d * 4.0 + 8.0 + (double)RB_STATE_STRIDE(PROBE_D) * 8);
        if (b > *bytes) {
            *bytes = b;
            snprintf(what, n, "the probe rows (%.0f keys)", nk);
        }
    }
}

static int run_rows(const bench_opts *o, const bench_peaks *pk, row_list *rl)
{
    int64_t Ls[MAX_SHAPES];
    int heads[MAX_SHAPES], nL, nH;
    causal_shapes(o, Ls, &nL, heads, &nH);
    const int64_t n_keys = probe_keys(o), n_rope = n_keys;
    const int P = o->probe_rows;
    int rc = 0;
    float *q = NULL, *k = NULL, *v = NULL;
    int64_t *pos = NULL, *qpos = NULL;
    double *state = NULL, inv_freq[64];
    /* rows in order: causal, probe, rope */
    rb_rope_apply_fn rfns[2];
    const char *rnames[2];
    const int n_rope_fns = rope_variants(o, rfns, rnames);
    int total = 0;
    for (int ti = 0; ti < o->n_threads; ti++) {
        for (int kk = 0; kk < o->n_kernels; kk++)
            total += !!thread_count(o, ti, !strcmp(o->kernels[kk].name, "ref")) *
                     (nH * nL + (o->do_probe ? 1 : 0));
        for (int vi = 0; vi < n_rope_fns && o->do_rope; vi++)
            total += !!thread_count(o, ti, !strcmp(rnames[vi], "ref"));
    }
    int idx = 0;

    /* causal tiles */
    for (int kk = 0; kk < o->n_kernels && !rc; kk++)
        for (int hi = 0; hi < nH && !rc; hi++)
            for (int li = 0; li < nL && !rc; li++) {
                const int d = heads[hi];
                const int64_t L = Ls[li];
                q = rb_kernels_alloc((size_t)L * d * sizeof *q);
                k = rb_kernels_alloc((size_t)L * d * sizeof *k);
                v = rb_kernels_alloc((size_t)L * d * sizeof *v);
                pos = malloc((size_t)L * sizeof *pos);
                state = malloc((size_t)L * RB_STATE_STRIDE(d) * sizeof *state);
                if (!q || !k || !v || !pos || !state) {
                    rc = RB_ENOMEM;
                    break;
                }
                fill_random(q, (size_t)L * d, 1, 1.0f);
                fill_random(k, (size_t)L * d, 2, 1.0f);
                fill_random(v, (size_t)L * d, 3, 1.0f);
                for (int64_t i = 0; i < L; i++) pos[i] = i;
                tile_ctx tc = {&o->kernels[kk], q, k, v, pos, pos, L, L, d, state};
                bench_fn f = {&tc, tile_prepare, tile_call};
                for (int ti = 0; ti < o->n_threads && !rc; ti++) {
                    const int th = thread_count(o, ti, !strcmp(o->kernels[kk].name, "ref"));
                    if (!th) continue;
                    bench_row *r = row_new(rl, &o->kernels[kk], "causal", d, L, L, 1, th);
                    if (!r) { rc = RB_ENOMEM; break; }
                    progress(o, ++idx, total, r);
                    rb_kernels_set_threads(r->threads);
                    if ((rc = measure(o, &f, r))) break;
                    r->gflops = 2.0 * (double)L * (double)L * d / r->median_s * 1e-9;
                    row_peaks(pk, o, r);
                    rl->n++;
                }
                free(q); free(k); free(v); free(pos); free(state);
                q = k = v = NULL;
                pos = NULL;
                state = NULL;
            }

    /* probe rows: P log-spaced queries against n_keys keys, head_dim PROBE_D */
    if (!rc && o->n_kernels > 0 && o->do_probe) {
        const int d = PROBE_D;
        k = rb_kernels_alloc((size_t)n_keys * d * sizeof *k);
        v = rb_kernels_alloc((size_t)n_keys * d * sizeof *v);
        pos = malloc((size_t)n_keys * sizeof *pos);
        qpos = malloc((size_t)P * sizeof *qpos);
        q = rb_kernels_alloc((size_t)P * d * sizeof *q);
        state = malloc((size_t)P * RB_STATE_STRIDE(d) * sizeof *state);
        if (!k || !v || !pos || !qpos || !q || !state) {
            rc = RB_ENOMEM;
        } else {
            fill_random(k, (size_t)n_keys * d, 4, 1.0f);
            fill_random(v, (size_t)n_keys * d, 5, 1.0f);
            fill_random(q, (size_t)P * d, 6, 1.0f);
            for (int64_t i = 0; i < n_keys; i++) pos[i] = i;
            const int64_t nq = probe_positions(n_keys, P, qpos);
            double visible = 0;
            for (int64_t i = 0; i < nq; i++) visible += (double)(qpos[i] + 1);
            for (int kk = 0; kk < o->n_kernels && !rc; kk++) {
                tile_ctx tc = {&o->kernels[kk], q, k, v, qpos, pos, nq, n_keys, d, state};
                bench_fn f = {&tc, tile_prepare, tile_call};
                for (int ti = 0; ti < o->n_threads && !rc; ti++) {
                    const int th = thread_count(o, ti, !strcmp(o->kernels[kk].name, "ref"));
                    if (!th) continue;
                    bench_row *r = row_new(rl, &o->kernels[kk], "probe", d, n_keys, nq, 1, th);
                    if (!r) { rc = RB_ENOMEM; break; }
                    progress(o, ++idx, total, r);
                    rb_kernels_set_threads(r->threads);
                    /* (the breakdown's timers are in the AVX-512 kernels alone: no
                     * untimed extra call of the others) */
                    if ((rc = measure(o, &f, r)) ||
                        (!strncmp(r->kernel, "avx512", 6) && (rc = probe_profile(&f, r))))
                        break;
                    r->gflops = 4.0 * d * visible / r->median_s * 1e-9;
                    r->gbps = 2.0 * (double)n_keys * d * sizeof(float) / r->median_s * 1e-9;
                    row_peaks(pk, o, r);
                    for (int i = 0; i < pk->n_ov; i++)
                        if (pk->ov_threads[i] == r->threads)
                            r->overlap_ceiling = pk->ov_bytes / pk->ov[i][2] * 1e-9 / r->triad_gbps;
                    rl->n++;
                }
            }
        }
        free(k); free(v); free(pos); free(qpos); free(q); free(state);
        k = v = q = NULL;
        pos = qpos = NULL;
        state = NULL;
    }

    /* RoPE application: the reference and the fast variant, n_rope rows of 128 */
    if (!rc && o->do_rope) {
        const int d = 128;
        rb_rope_apply_fn fns[2];
        const char *names[2];
        rope_variants(o, fns, names);
        k = rb_kernels_alloc((size_t)n_rope * d * sizeof *k);
        pos = malloc((size_t)n_rope * sizeof *pos);
        if (!k || !pos) {
            rc = RB_ENOMEM;
        } else {
            fill_random(k, (size_t)n_rope * d, 7, 1.0f);
            for (int64_t i = 0; i < n_rope; i++) pos[i] = i;
            for (int j = 0; j < d / 2; j++) inv_freq[j] = pow(10000.0, -2.0 * j / d);
            for (int vi = 0; vi < 2 && fns[vi] && !rc; vi++) {
                rope_ctx rc_ = {fns[vi], k, pos, inv_freq, n_rope, d};
                bench_fn f = {&rc_, NULL, rope_call};
                rb_kernel_ops label = {.name = names[vi], .dtype = "fp32", .rope = fns[vi],
                                       .detail = vi ? "RoPE, exact phases generated "
                                                      "incrementally in double, AVX-512"
                                                    : "RoPE, exact phases per row (reference)"};
                for (int ti = 0; ti < o->n_threads && !rc; ti++) {
                    const int th = thread_count(o, ti, !strcmp(names[vi], "ref"));
                    if (!th) continue;
                    bench_row *r = row_new(rl, &label, "rope", d, n_rope, n_rope, 0, th);
                    if (!r) { rc = RB_ENOMEM; break; }
                    progress(o, ++idx, total, r);
                    rb_kernels_set_threads(r->threads);
                    if ((rc = measure(o, &f, r))) break;
                    r->gflops = 3.0 * d * (double)n_rope / r->median_s * 1e-9;
                    r->gbps = 2.0 * (double)n_rope * d * sizeof(float) / r->median_s * 1e-9;
                    row_peaks(pk, o, r);
                    rl->n++;
                }
            }
        }
        free(k); free(pos);
        k = NULL;
        pos = NULL;
    }
    rb_kernels_set_threads(o->all_threads);
    return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

int rb_cmd_bench(int argc, char **argv)
{
    enum { O_QUICK = 256, O_JSON, O_REPS, O_WARM, O_KERN, O_THR, O_VER, O_ONLY, O_DIMS, O_LENS,
           O_MINREP, O_PROWS };
    static const struct option opts[] = {
        {"quick", no_argument, 0, O_QUICK},      {"json", required_argument, 0, O_JSON},
        {"output", required_argument, 0, 'o'},   {"reps", required_argument, 0, O_REPS},
        {"warmup", required_argument, 0, O_WARM}, {"kernels", required_argument, 0, O_KERN},
        {"threads", required_argument, 0, O_THR}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VER},      {"only", required_argument, 0, O_ONLY},
        {"head-dims", required_argument, 0, O_DIMS}, {"lengths", required_argument, 0, O_LENS},
        {"min-rep-time", required_argument, 0, O_MINREP},
        {"probe-rows", required_argument, 0, O_PROWS}, {0, 0, 0, 0}};
    bench_opts o;
    memset(&o, 0, sizeof o);
    o.reps = 5;
    o.warmup = 1;
    o.min_rep_s = MIN_REP_S;
    o.probe_rows = PROBE_ROWS_DEFAULT;
    o.all_threads = rb_kernels_threads();
    const char *kernels_arg = NULL, *threads_arg = NULL;
    o.do_causal = o.do_probe = o.do_rope = 1;
    int64_t dims64[MAX_SHAPES];
    int code = 0, opt, mpi_up = 0, warm_given = 0;
    row_list rl = {NULL, 0, 0};
    char err[512], missing[128] = "";
    bench_peaks pk = {.tiles1 = -1, .dpbf16 = -1};

    optind = 1;
    opterr = 0;
    char ob[200]; /* what is wrong with a rejected option (rb_cli_reject) */
    /* the single-valued options: a second one would silently win */
    const char *reps_arg = NULL, *warm_arg = NULL, *only_arg = NULL, *dims_arg = NULL,
               *lens_arg = NULL, *minrep_arg = NULL, *prows_arg = NULL;
    while ((opt = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        const char **slot = opt == O_REPS   ? &reps_arg
                            : opt == O_WARM ? &warm_arg
                            : opt == O_KERN ? &kernels_arg
                            : opt == O_THR  ? &threads_arg
                            : opt == O_ONLY ? &only_arg
                            : opt == O_DIMS ? &dims_arg
                            : opt == O_LENS ? &lens_arg
                            : opt == O_MINREP ? &minrep_arg
                            : opt == O_PROWS ? &prows_arg
                                            : NULL;
        const char *name = opt == O_REPS   ? "--reps"
                           : opt == O_WARM ? "--warmup"
                           : opt == O_KERN ? "--kernels"
                           : opt == O_THR  ? "--threads"
                           : opt == O_ONLY ? "--only"
                           : opt == O_DIMS ? "--head-dims"
                           : opt == O_MINREP ? "--min-rep-time"
                           : opt == O_PROWS ? "--probe-rows"
                                           : "--lengths";
        if (slot && rb_cli_once("bench", name, slot, optarg)) {
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        switch (opt) {
        case O_QUICK:
            if (o.quick) {
                fprintf(stderr, "ropebench: bench: --quick given twice\n");
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
            o.quick = 1;
            break;
        case O_JSON:
        case 'o': {
            /* one of each: a second would silently win */
            const char **slot = opt == 'o' ? &o.out : &o.json;
            if (*slot) {
                fprintf(stderr, "ropebench: bench: %s given twice ('%s', then '%s')\n",
                        opt == 'o' ? "-o/--output" : "--json", RB_ESC(*slot), RB_ESC(optarg));
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
            *slot = optarg;
            break;
        }
        case O_REPS:
            if (parse_count("--reps", optarg, 0, 64, &o.reps)) { code = RB_EXIT_USAGE; goto cleanup; }
            o.reps_given = 1;
            break;
        case O_WARM:
            if (parse_count("--warmup", optarg, 1, 1000000, &o.warmup)) { code = RB_EXIT_USAGE; goto cleanup; }
            warm_given = 1;
            break;
        case O_MINREP:
            if (parse_seconds("--min-rep-time", optarg, 1.0, &o.min_rep_s)) {
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
            break;
        case O_KERN: /* kernels_arg, threads_arg: set above */
        case O_THR: break;
        case O_ONLY:
            if (parse_only(optarg, &o)) { code = RB_EXIT_USAGE; goto cleanup; }
            break;
        case O_DIMS:
            if (parse_shape_list("--head-dims", optarg, 2, 512, 1, dims64, &o.n_dims)) {
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
            for (int i = 0; i < o.n_dims; i++) o.dims[i] = (int)dims64[i];
            break;
        case O_LENS:
            if (parse_shape_list("--lengths", optarg, 16, 1048576, 0, o.lens, &o.n_lens)) {
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
            break;
        case O_PROWS:
            if (parse_count("--probe-rows", optarg, 0, RB_PROBE_ROWS_MAX, &o.probe_rows)) {
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
            break;
        case 'h': bench_usage(stdout); goto cleanup;
        case O_VER: printf("%s\n", rb_version_string()); goto cleanup;
        case ':':
            fprintf(stderr, "ropebench: bench: option %s needs a value\n",
                    RB_ESC(argv[optind - 1]));
            code = RB_EXIT_USAGE;
            goto cleanup;
        default:
            fprintf(stderr, "ropebench: bench: %s (see ropebench bench --help)\n",
                    rb_cli_reject(argv, opts, ob, sizeof ob));
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ropebench: bench: unexpected argument '%s'\n", RB_ESC(argv[optind]));
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (o.quick && !o.reps_given) o.reps = 1;
    if (o.quick && !warm_given) o.warmup = 0;
    if (o.reps > 64) {
        fprintf(stderr, "ropebench: bench: --reps %d: at most 64\n", o.reps);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    /* one process measures: ranks started together would compete for the cores, print
     * a table each and, with -o, write one /bench from several ranks' figures */
    int my_rank, nlaunched = rb_cli_launched(&my_rank);
    if (nlaunched > 1) {
        if (my_rank == 0)
            fprintf(stderr, "ropebench: bench: started as %d MPI ranks; bench measures one "
                            "process and its threads: run it without mpiexec, or with -n 1\n",
                    nlaunched);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (!o.do_causal && (o.n_dims || o.n_lens)) {
        fprintf(stderr, "ropebench: bench: %s set the causal rows' shapes, but --only "
                        "leaves out causal (the probe's shape is --probe-rows', the "
                        "rope rows' fixed, docs/bench.md)\n",
                o.n_dims && o.n_lens ? "--head-dims and --lengths"
                : o.n_dims           ? "--head-dims"
                                     : "--lengths");
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (!o.do_probe && prows_arg) {
        fprintf(stderr, "ropebench: bench: --probe-rows sets the probe rows' shape, but --only "
                        "leaves out probe (docs/bench.md)\n");
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (rb_cli_check_env(err, sizeof err) != RB_OK) {
        fprintf(stderr, "ropebench: bench: %s\n", err);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    /* ROPEBENCH_ISA chooses the kernel as it does for a study: the bench then measures
     * that one; --kernels as well must name the same one alone */
    const char *isa_env = getenv("ROPEBENCH_ISA");
    if (isa_env && strchr(isa_env, ',')) {
        fprintf(stderr, "ropebench: bench: ROPEBENCH_ISA=%s: names one kernel (ref, blas, "
                        "avx512 or avx512_bf16), as for a study\n", RB_ESC(isa_env));
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (isa_env && *isa_env && kernels_arg && strcmp(isa_env, kernels_arg) != 0) {
        fprintf(stderr, "ropebench: bench: ROPEBENCH_ISA=%s and --kernels %s choose different "
                        "kernels; unset one\n", RB_ESC(isa_env), RB_ESC(kernels_arg));
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (isa_env && *isa_env ? parse_kernels("ROPEBENCH_ISA", isa_env, &o)
        : kernels_arg      ? parse_kernels("--kernels", kernels_arg, &o)
                           : (default_kernels(&o, missing, sizeof missing), 0)) {
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (parse_threads(threads_arg ? threads_arg : "1,all", &o)) {
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (o.out && !*o.out) {
        fprintf(stderr, "ropebench: bench: -o: empty file name\n");
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if ((o.out && rb_cli_check_name("-o", o.out, err, sizeof err) != RB_OK) ||
        (o.json && rb_cli_check_name("--json", o.json, err, sizeof err) != RB_OK) ||
        (o.out && rb_cli_check_output("-o", o.out, err, sizeof err) != RB_OK) ||
        (o.json && bench_check_json(o.json, o.out, err, sizeof err) != RB_OK)) {
        fprintf(stderr, "ropebench: bench: %s\n", err); /* before anything is measured */
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (o.out) {
        /* MPI only for the results file; an existing file must open as a results file */
        if (rb_cli_fsize_floor(err, sizeof err) != RB_OK) {
            fprintf(stderr, "ropebench: bench: %s\n", err);
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
            fprintf(stderr, "ropebench: bench: MPI_Init failed\n");
            code = RB_EXIT_FAIL;
            goto cleanup;
        }
        mpi_up = 1;
        int world = 1;
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        if (world > 1) { /* a launcher rb_cli_launched does not know */
            int me = 0;
            MPI_Comm_rank(MPI_COMM_WORLD, &me);
            if (me == 0)
                fprintf(stderr, "ropebench: bench: started as %d MPI ranks; bench measures "
                                "one process and its threads: run it with -n 1\n", world);
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        rb_cli_fsize_hook();
        int exists = 0;
        if (bench_check_output(o.out, &exists, err, sizeof err) ||
            rb_results_room(o.out, err, sizeof err) ||
            rb_results_check_free(o.out, err, sizeof err)) {
            fprintf(stderr, "ropebench: bench: %s\n", err);
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
    }
    /* after -o's checks, so that a refused -o leaves no empty --json file: that it can
     * be written is checked before any measurement (opened without truncating: an
     * existing file keeps its content; write_json_file replaces it once the rows are
     * measured) */
    if (o.json) {
        const int fd = open(o.json, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            fprintf(stderr, "ropebench: bench: --json %s: cannot open for writing: %s\n",
                    o.json, strerror(errno));
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        close(fd);
    }
    /* rows that cannot fit are refused before any measuring (they failed after the
     * peaks, or took the machine into swap) */
    {
        double need = 0;
        char what[96];
        bench_memory_need(&o, &need, what, sizeof what);
        double avail = 0.9 * rb_config_host_available_bytes(); /* (as a study's) */
        const char *whose = "0.9 of what this machine has available";
        struct rlimit as;
        if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
            (double)as.rlim_cur < avail) {
            avail = (double)as.rlim_cur;
            whose = "the process's address-space limit (ulimit -v)";
        }
        if (avail > 0 && need > avail) {
            fprintf(stderr, "ropebench: bench: %s need at least %.1f GiB of memory, more than "
                            "%s (%.1f GiB); give smaller --lengths or --head-dims\n",
                    what, need / 1073741824.0, whose, avail / 1073741824.0);
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
    }
    /* peaks first, so that every row can be given as a fraction of them */
    {
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        size_t bytes = (size_t)256 << 20;
        if (llc > 0 && (size_t)llc * 2 > bytes) bytes = (size_t)llc * 2;
        if (bytes > ((size_t)1 << 30)) bytes = (size_t)1 << 30;
        if (o.quick) bytes = (size_t)32 << 20;
        const double secs = o.quick ? 0.05 : 0.5;
        pk.triad_bytes = bytes;
        if (!o.quick) fprintf(stderr, "bench: peak-FMA probe and triad\n");
        pk.fma1 = rb_peak_fma_gflops(1, secs);
        pk.fma_all = rb_peak_fma_gflops(o.all_threads, secs);
        pk.tiles1 = rb_tile_ceiling_gflops(secs);
        pk.dpbf16 = rb_peak_dpbf16_gflops(secs);
        pk.triad1 = rb_triad_gbps(1, bytes);
        pk.triad_all = rb_triad_gbps(o.all_threads, bytes);
        int triad_ok = pk.triad1 > 0 && pk.triad_all > 0;
        for (int i = 0; i < o.n_threads; i++) {
            const int t = o.threads[i];
            if (t == 1 || t == o.all_threads) continue;
            pk.other[pk.n_other] = t;
            pk.fma_other[pk.n_other] = rb_peak_fma_gflops(t, secs);
            pk.triad_other[pk.n_other] = rb_triad_gbps(t, bytes);
            triad_ok = triad_ok && pk.triad_other[pk.n_other] > 0;
            pk.n_other++;
        }
        if (!triad_ok) {
            fprintf(stderr, "ropebench: bench: triad: cannot allocate 3 x %zu bytes\n", bytes);
            code = RB_EXIT_FAIL;
            goto cleanup;
        }
        /* A team's peak below one thread's is a measurement the host spoiled (a noisy
         * VM: 44 against 116 GFLOP/s was seen, which set a row at 5x "its peak"), not
         * the machine: measured again, up to twice, keeping the best; what stays
         * implausible is said in a `#` line (pk.implausible). */
        for (int again = 0; again < 2 && o.all_threads > 1; again++) {
            const int low_fma = pk.fma_all < 0.9 * pk.fma1,
                      low_triad = pk.triad_all < 0.9 * pk.triad1;
            if (!low_fma && !low_triad) break;
            if (low_fma) {
                const double f = rb_peak_fma_gflops(o.all_threads, secs);
                pk.fma_all = f > pk.fma_all ? f : pk.fma_all;
            }
            if (low_triad) {
                const double t = rb_triad_gbps(o.all_threads, bytes);
                pk.triad_all = t > pk.triad_all ? t : pk.triad_all;
            }
        }
        pk.implausible = o.all_threads > 1 &&
                         (pk.fma_all < 0.9 * pk.fma1 || pk.triad_all < 0.9 * pk.triad1);
        /* the probe rows' ideal at each of their thread counts: their FLOP as FMA chains
         * interleaved with a stream of their K and V bytes */
        if (o.do_probe && o.n_kernels > 0) {
            const size_t kv = (size_t)probe_keys(&o) * PROBE_D * sizeof(float);
            pk.ov_flop = probe_flop(probe_keys(&o), o.probe_rows, PROBE_D);
            pk.ov_bytes = 2.0 * (double)kv;
            if (!o.quick) fprintf(stderr, "bench: probe overlap (FMA chains under a stream)\n");
            /* the thread counts probe rows run at: the list's, and 1 for a serial
             * kernel (thread_count) when the list has no 1 */
            int ov_thr[MAX_THREADS + 1], n_ov_thr = 0, has1 = 0, serial = 0;
            for (int i = 0; i < o.n_threads; i++) {
                ov_thr[n_ov_thr++] = o.threads[i];
                has1 |= o.threads[i] == 1;
            }
            for (int kk = 0; kk < o.n_kernels; kk++)
                serial |= !strcmp(o.kernels[kk].name, "ref");
            if (serial && !has1)
                ov_thr[n_ov_thr++] = 1;
            for (int i = 0; i < n_ov_thr; i++) {
                pk.ov_threads[pk.n_ov] = ov_thr[i];
                if (pk.ov_flop < 0 ||
                    rb_overlap_probe(ov_thr[i], kv, pk.ov_flop, pk.ov[pk.n_ov])) {
                    fprintf(stderr, "ropebench: bench: probe overlap: cannot allocate 2 x %zu "
                                    "bytes\n", kv);
                    code = RB_EXIT_FAIL;
                    goto cleanup;
                }
                pk.n_ov++;
            }
        }
    }
    if (run_rows(&o, &pk, &rl)) {
        fprintf(stderr, "ropebench: bench: out of memory or kernel failure after %d rows\n", rl.n);
        code = RB_EXIT_FAIL;
        goto cleanup;
    }

    {
        rb_cpu_info ci;
        rb_cpu_detect(&ci);
        printf("# ropebench bench — %s\n", rb_version_string());
        printf("# machine: %s, %d threads (OpenMP)%s\n", ci.model[0] ? ci.model : "unknown CPU",
               o.all_threads, o.quick ? ", --quick sizes" : "");
        printf("# peak FMA (fp32, measured, %s loop): %.1f GFLOP/s 1 thread", rb_peak_fma_isa(),
               pk.fma1);
        if (o.all_threads != 1) /* (all = 1: its rows take the 1-thread peaks) */
            printf(", %.1f GFLOP/s %d threads", pk.fma_all, o.all_threads);
        for (int i = 0; i < pk.n_other; i++)
            printf(", %.1f GFLOP/s %d threads", pk.fma_other[i], pk.other[i]);
        printf("\n");
        if (pk.tiles1 > 0)
            printf("# avx512 fp32 register tiles alone (12x64 QK^T + PV, d=128, in L1/L2, "
                   "no softmax): %.1f GFLOP/s 1 thread = %.3f of peak, the fused kernel's "
                   "ceiling\n", pk.tiles1, pk.tiles1 / pk.fma1);
        if (pk.dpbf16 > 0)
            printf("# peak VDPBF16PS (bf16 pairs into fp32, measured): %.1f GFLOP/s 1 thread = "
                   "%.2f x the FMA peak (what the bf16 kernels' VDPBF16PS products can reach)\n",
                   pk.dpbf16, pk.dpbf16 / pk.fma1);
        if (pk.implausible)
            printf("# warning: the %d-thread peaks (FMA %.1f GFLOP/s, triad %.2f GB/s) stayed "
                   "below 0.9 x the 1-thread ones after two more tries (time taken by another "
                   "process or the hypervisor, or fewer cores than threads): the %d-thread "
                   "fractions are against that lower figure\n", o.all_threads, pk.fma_all,
                   pk.triad_all, o.all_threads);
        printf("# memory: arrays of %zu MiB and more in transparent huge pages: %s\n",
               RB_HUGE_MIN >> 20, rb_kernels_hugepages(rb_cli_thp_setting()));
        printf("# triad (STREAM, 3 x %zu MiB, 24 B/elem): %.2f GB/s 1 thread",
               pk.triad_bytes >> 20, pk.triad1);
        if (o.all_threads != 1)
            printf(", %.2f GB/s %d threads", pk.triad_all, o.all_threads);
        for (int i = 0; i < pk.n_other; i++)
            printf(", %.2f GB/s %d threads", pk.triad_other[i], pk.other[i]);
        printf("\n");
        int64_t probe_nq = 0;
        {
            int64_t *pp = malloc((size_t)o.probe_rows * sizeof *pp);
            if (pp) probe_nq = probe_positions(probe_keys(&o), o.probe_rows, pp);
            free(pp);
        }
        printf("# causal: GFLOP/s counts 2*L^2*d per head, frac = GFLOP/s / peak; probe: %d "
               "log-spaced positions (%lld distinct rows), GB/s counts K+V once, frac = GB/s / "
               "triad; rope: GB/s counts read+write, frac = GB/s / triad\n", o.probe_rows,
               (long long)probe_nq);
        if (o.do_probe && o.n_kernels > 0) {
            int thr[MAX_THREADS + 2], n = 0;
            double pe[MAX_THREADS + 2], tr[MAX_THREADS + 2];
            thr[n] = 1, pe[n] = pk.fma1, tr[n++] = pk.triad1;
            if (o.all_threads != 1) thr[n] = o.all_threads, pe[n] = pk.fma_all, tr[n++] = pk.triad_all;
            for (int i = 0; i < pk.n_other; i++)
                thr[n] = pk.other[i], pe[n] = pk.fma_other[i], tr[n++] = pk.triad_other[i];
            probe_roofline(stdout, probe_keys(&o), o.probe_rows, PROBE_D, thr, n, pe, tr,
                           pk.dpbf16 > 0 ? pk.dpbf16 / pk.fma1 : 2.0);
            printf("# probe overlap (the probe's FLOP as FMA chains and its K and V read once, "
                   "evenly interleaved, no attention: about an ideal kernel's time):");
            for (int i = 0; i < pk.n_ov; i++) {
                const int t = pk.ov_threads[i];
                double triad = NAN, peak = NAN;
                for (int j = 0; j < n; j++)
                    if (thr[j] == t) triad = tr[j], peak = pe[j];
                const double gf = pk.ov_flop / pk.ov[i][0] * 1e-9,
                             gb = pk.ov_bytes / pk.ov[i][2] * 1e-9;
                printf("%s %d thread%s: FMA alone %.4g s (%.1f GFLOP/s = %.3f of peak), stream "
                       "alone %.4g s, both %.4g s = %.2f GB/s = %.3f of the triad",
                       i ? ";" : "", t, t == 1 ? "" : "s", pk.ov[i][0], gf, gf / peak,
                       pk.ov[i][1], pk.ov[i][2], gb, gb / triad);
            }
            printf("\n");
        }
        if (missing[0]) printf("# kernels not built or not supported here: %s\n", missing);
        for (int i = 0; i < o.n_kernels; i++)
            printf("# kernel %s: %s\n", o.kernels[i].name, o.kernels[i].detail);
        print_table(stdout, rl.rows, rl.n);
        print_breakdown(stdout, rl.rows, rl.n);
        fflush(stdout);
    }
    /* (a JSON that cannot be written does not keep the rows from -o) */
    if (o.json && write_json_file(o.json, rl.rows, rl.n, &pk, &o))
        code = RB_EXIT_FAIL;
    int abandoned = 0, created = 0, wrc = 0;
    if (o.out) {
        rb_cli_fsize_hook_env("ROPEBENCH_TEST_FSIZE_LIMIT_AT_WRITE"); /* tests only */
        /* -o may be a results file with a study's cases: a stop signal waits until
         * /bench is written and the file closed (rb_cli_defer_begin), then takes its
         * default action */
        rb_cli_defer_install();
        rb_cli_defer_begin();
        rb_cli_test_hold_in_write(1);
        wrc = write_h5(o.out, rl.rows, rl.n, &pk, &o, err, sizeof err, &abandoned, &created);
        const int held = rb_cli_defer_end();
        if (held && wrc == 0) {
            fprintf(stderr, "ropebench: bench: interrupted after writing %s\n", o.out);
            rb_cli_defer_raise(held);
        }
    }
    if (wrc) {
        fprintf(stderr, "ropebench: bench: %s\n", err);
        code = RB_EXIT_FAIL;
        if (abandoned) {
            rb_cli_space_hint(o.out);
            if (created && unlink(o.out) == 0) /* (a fragment no reader would take) */
                fprintf(stderr, "ropebench: bench: %s was new: what this run had written of "
                                "it is removed\n", o.out);
            else
                fprintf(stderr, "ropebench: bench: %s was not closed after the failed write, "
                                "so it still holds what it held before\n", o.out);
            fflush(stdout);
            fflush(stderr);
            _exit(RB_EXIT_FAIL);
        }
        goto cleanup;
    }
cleanup:
    free(rl.rows);
    if (mpi_up) MPI_Finalize();
    return code;
}
