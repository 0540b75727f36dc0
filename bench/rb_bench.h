/* rb_bench.h — internal interface of the ropebench command: study configuration
 * (INI + --set overrides, validated before any work) and the subcommands. */
#ifndef RB_BENCH_H
#define RB_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "rb_datasets.h"
#include "rb_kernels.h"
#include "rb_mpi.h"
#include <mpi.h>

#define RB_MAX_LIST 64      /* longest list a key may hold */
#define RB_MAX_AF 8         /* values of scaling.attention_factor */
#define RB_MAX_ENTRIES (RB_ROPE_COUNT * RB_MAX_AF) /* method entries of a study */
#define RB_EXIT_USAGE 2     /* bad input: config, options, files */
#define RB_EXIT_FAIL 1      /* a run that started and failed */

typedef enum { RB_MODE_FULL = 0, RB_MODE_PROBE = 1 } rb_mode;

/* A fully resolved and validated study. */
typedef struct {
    /* [model] */
    int head_dim, rotary_dim;
    double base;
    int64_t original_ctx;
    rb_rope_layout layout;
    /* [scaling] */
    /* method entries, in the order of scaling.methods: one per method, and one per
     * scaling.attention_factor value for the methods that use it (yarn, longrope) */
    int n_methods;
    rb_rope_method methods[RB_MAX_ENTRIES];
    double method_af[RB_MAX_ENTRIES];  /* the entry's attention factor (<= 0: auto) */
    double factor;
    double beta_fast, beta_slow;
    int truncate;
    double mscale, mscale_all_dim;
    double attention_factor; /* the first of attention_factors (<= 0: auto) */
    int n_attention_factors; /* 1..RB_MAX_AF values of scaling.attention_factor */
    double attention_factors[RB_MAX_AF];
    double low_freq_factor, high_freq_factor;
    int n_short_factor, n_long_factor;
    double short_factor[RB_MAX_LIST * 4], long_factor[RB_MAX_LIST * 4];
    /* [study] */
    int n_full_lens, n_probe_lens;
    int probe_from_full; /* probe_lens copied from seq_lens (probe_seq_lens empty) */
    unsigned load_flags; /* RB_CONFIG_* given to rb_config_load_ex */
    int64_t full_lens[RB_MAX_LIST], probe_lens[RB_MAX_LIST];
    int modes[2];            /* modes[RB_MODE_FULL], modes[RB_MODE_PROBE]: enabled? */
    int heads;
    int n_datasets;
    rb_dataset_kind datasets[RB_DATA_COUNT];
    uint64_t seed;
    int probe_rows;          /* number of log-spaced probe rows */
    int n_probe_positions;   /* user-given probe positions (negative: from the end) */
    int64_t probe_positions[RB_MAX_LIST];
    rb_shard_layout shard_layout;
    char dtype[8];
    int threads;             /* OpenMP threads per rank; 0: auto (OpenMP default) */
    double memory_limit_gib; /* 0: 90% of this host's available memory */
    /* [metrics] */
    int metrics_enabled;
    int metrics_distance_bins;
    int metrics_position_bins;
    int metrics_precision_keys; /* sampled keys per rank for metric 7; 0: metric 7 off */
    /* [needle] */
    int n_needles;
    int64_t needle_positions[RB_NEEDLE_MAX];   /* negative: from the end */
    int64_t needle_queries[RB_NEEDLE_MAX];
    double needle_strength;
    /* [spectral] */
    rb_spectral_profile spectral_profile;
    int n_spectral_amplitudes;
    double spectral_amplitudes[RB_SPECTRAL_MAX_PAIRS];
    double spectral_coherence;
    /* [file] */
    char file_path[4096];
    /* the resolved configuration as INI text (every key, final values) */
    char *text;
    /* keys set to something other than their default that this study never reads
     * (a method, dataset, mode or metrics switch that would read them is not on): one
     * line per group, for the command to show; not an error, so that one study file can
     * serve runs of a subset (--set scaling.methods=pi) */
    int n_notes;
    char notes[16][320];
    /* where the values came from, for errors found after loading (rb_config_check_ranks):
     * the study file as messages show it ("" without -c) and each key's line there, in
     * the order of config.c's key table (0: default, -1: --set) */
    char src_file[1024];
    long key_line[64];
} rb_config;

/* rb_config_load: start from the defaults (which are the default study), read
 * `path` (NULL: none), apply the n_sets "section.key=value" overrides in order, then validate every
 * key and the combination. On error returns RB_EINVAL (bad key/value/combination) or
 * RB_EIO (unreadable file) with one line in err naming the file/key and the reason;
 * *cfg is then empty. Free with rb_config_free. Does no MPI and no big allocation. */
int rb_config_load(rb_config *cfg, const char *path, char *const *sets, int n_sets,
                   char *err, size_t errlen);
/* rb_config_load_ex: rb_config_load with flags. RB_CONFIG_SCHEDULE_ONLY is for a caller
 * that only builds schedules (freqs): the study's input (file.path) is not checked for
 * reading, and the schedules are not built at the study's lengths (the caller builds
 * its own at its own length), so a study file from another machine still reads. */
#define RB_CONFIG_SCHEDULE_ONLY 1u
int rb_config_load_ex(rb_config *cfg, const char *path, char *const *sets, int n_sets,
                      unsigned flags, char *err, size_t errlen);
void rb_config_free(rb_config *cfg);

/* rb_config_text_differs: whether two rendered studies (rb_config.text, a results
 * file's config_text) describe different studies for --resume: 0 if every key has the
 * same value in both, else 1 with msg naming the first key that differs ("KEY is 'a' in
 * the file, 'b' now", or that one text lacks it). Values compare as text, with blanks
 * at their ends and around commas dropped. study.threads and study.memory_limit_gib
 * are not compared: they change how a case runs, not its results (a resumed run may
 * use other thread counts; its cases record their own). */
int rb_config_text_differs(const char *file_text, const char *now_text, char *msg,
                           size_t msglen);

/* rb_config_check_ranks: checks that need the rank count and memory: every case's
 * seq_len against the sharding layout, probe/needle positions inside the sequence,
 * and the per-rank memory estimate times ranks_per_host against the limit. */
int rb_config_check_ranks(const rb_config *cfg, int nranks, int ranks_per_host,
                          char *err, size_t errlen);

/* rb_config_host_available_bytes: this host's MemAvailable (/proc/meminfo), or its
 * physical memory where that cannot be read; what the memory checks of a study
 * (0.9 of it, unless [study] memory_limit_gib says) and of `bench` hold sizes to. */
double rb_config_host_available_bytes(void);

/* rb_config_af_label: "auto" for af <= 0, else af printed with %g (a thread-local
 * buffer, valid until the next call on the thread). */
const char *rb_config_af_label(double af);

/* rb_config_entry_suffix: the part of a case name that tells method entry mi apart from
 * the other entries of its method: "-af<label>" when scaling.attention_factor lists
 * several values and the method takes one (yarn, longrope), else "". */
void rb_config_entry_suffix(const rb_config *c, int mi, char *buf, size_t len);

/* Fill a schedule's parameters from the config for method m at sequence length L (the
 * attention factor is the first listed; a method entry's own is cfg->method_af[mi]). */
void rb_config_rope_params(const rb_config *cfg, rb_rope_method m, int64_t L,
                           rb_rope_params *p);

/* Bytes one rank needs for a case (estimate used by the memory check). */
double rb_config_case_bytes(const rb_config *cfg, rb_mode mode, int64_t L, int nranks);

/* ---- metrics of one case (bench/metrics.c, docs/metrics.md) ------------------------ */
typedef struct rb_case_metrics rb_case_metrics;
struct rb_results;

/* rb_metrics_begin: set up the metrics of a case (mode, L, H heads, the case's rows:
 * probe rows (same on every rank) or this rank's full-mode rows), its dataset, the
 * base and method schedules (kept by pointer until rb_metrics_free), attention factor
 * and softmax scale. Not collective. */
int rb_metrics_begin(rb_case_metrics **m, const rb_config *c, int mode, int64_t L, int H,
                     int64_t nq, const int64_t *qpos, const rb_dataset *ds,
                     const double *inv_base, const double *inv, double attention_factor,
                     double scale, char *err, size_t errlen);

/* rb_test_alloc_fail: the test hook ROPEBENCH_TEST_ALLOC_FAIL_RANK=K[:where]: whether
 * this rank's allocations at `where` are to count as failed ("case": a case's arrays,
 * also when the hook gives no where; "metrics": rb_metrics_head's buffers;
 * "precision": its phase-precision sample; "metrics_write": rb_metrics_write's;
 * "peaks": the triad's arrays at the run's start). Unset or another rank: 0. */
int rb_test_alloc_fail(int rank, const char *where);

/* rb_metrics_head: collective, once per head after that head's attention: pair norms
 * for E[rho_j]; in probe mode also the data-driven accumulators (lse_root/ent_root:
 * the head's probe-row lse and entropy, valid on rank 0), the needle scores and, when
 * metrics.precision_keys > 0, the fp32-phase attention pass (uses scratch_state,
 * nq * RB_STATE_STRIDE(d) doubles) and the phase-precision sample. That pass rotates
 * kpre with fp32 phases into krot, once the accumulators are done with the exactly
 * rotated keys there (saves a key-sized buffer, and its page faults, per head): in
 * probe mode with precision on, krot holds the fp32-phase keys on return. */
int rb_metrics_head(rb_case_metrics *m, MPI_Comm comm, const rb_kernel_ops *ops, int h,
                    const float *qrot, const float *qpre, float *krot,
                    const float *kpre, const float *v, const int64_t *kpos, int64_t nk,
                    const rb_dataset *ds, const double *lse_root, const double *ent_root,
                    double *scratch_state, char *err, size_t errlen);

/* rb_metrics_write: collective: reduce across ranks and write every metric group of
 * the case under case_g. row_pos/entropy ([H][n_local]) are the rows this rank holds
 * (probe mode: rank 0 all, others none). */
int rb_metrics_write(rb_case_metrics *m, MPI_Comm comm, struct rb_results *res,
                     const char *case_g, const int64_t *row_pos, const double *entropy,
                     int64_t n_local, char *err, size_t errlen);
void rb_metrics_free(rb_case_metrics *m);

/* rb_metrics_max_abs_score: after rb_metrics_write, on rank 0, the largest |s| of any
 * probe row's visible key (metric 8's R over rows and heads); 0 in full mode, on other
 * ranks, or with no visible key. */
double rb_metrics_max_abs_score(const rb_case_metrics *m);

/* rb_metrics_entropy_normalized: out[h*n + r] = entropy[h*n + r] / log(pos[r] + 1), the
 * entropy of a row relative to the uniform distribution over its pos[r] + 1 visible keys
 * (every key at positions 0 ... pos[r]); NaN where pos[r] == 0 (one visible key, log 1 =
 * 0). entropy and out are [H][n]; out may not alias entropy. */
void rb_metrics_entropy_normalized(const int64_t *pos, int64_t n, int H, const double *entropy,
                                   double *out);

/* Subcommands: each parses its own argv (argv[0] is the subcommand name) and
 * returns the process exit code. */
int rb_cmd_run(int argc, char **argv);
int rb_cmd_report(int argc, char **argv);
int rb_cmd_freqs(int argc, char **argv);
int rb_cmd_info(int argc, char **argv);
int rb_cmd_bench(int argc, char **argv);

/* Version line "ropebench X.Y.Z (git ...)". */
const char *rb_version_string(void);

/* What is wrong with the option getopt_long (over opts, with opterr = 0) has just
 * rejected, as a phrase naming it as the user wrote it: "unknown option '-x'" for a
 * short option (also inside a cluster such as -xy, where argv[optind - 1] would be the
 * argument before it), "option --resume takes no value ('--resume=1')" for a long
 * option without an argument given one (by its name or an unambiguous prefix),
 * "option '--re' is ambiguous (--resume, --reps)" for a prefix of several, else
 * "unknown option '--frobnicate'". Written into buf (len bytes, cut to fit); returns
 * buf. */
struct option;
const char *rb_cli_reject(char *const *argv, const struct option *opts, char *buf, size_t len);

/* Where option `opt` (-o, --json) may write a file, checked before any work: a
 * non-empty path naming an existing regular file that can be written, or a new file in
 * a directory that exists and can be written (a device or FIFO would block, or fail one
 * rank's collective write or the last write after all the work). RB_OK, or an error
 * "OPT OUT: why". */
int rb_cli_check_output(const char *opt, const char *out, char *err, size_t errlen);

/* rb_cli_once: a single-valued option `opt` (its name, as the help spells it) of
 * command `cmd` seen with `value`: stores value in *slot and returns 0 the first
 * time; when *slot is set already prints one line ("CMD: OPT given twice ('a', then
 * 'b')") and returns 1 (the second would silently win). */
int rb_cli_once(const char *cmd, const char *opt, const char **slot, const char *value);

/* rb_cli_check_name: a file or directory name given with option `opt` (run and bench
 * -o, --json, report's RESULTS and -o; -c is shown escaped instead) holds no control
 * character: RB_OK, or RB_EINVAL with one
 * line ("OPT 'NAME': a control character in the file name", the name escaped). The
 * commands check their names first, so that no later message prints a newline from
 * one. */
int rb_cli_check_name(const char *opt, const char *name, char *err, size_t errlen);

/* rb_cli_check_env: the on/off switches ROPEBENCH_HUGEPAGES, ROPEBENCH_PROBE_BALANCE
 * and ROPEBENCH_BF16_AMX must be unset, empty, "0" or "1" (the code reads only "0" as
 * off, so "off" or "no" would silently leave the feature on), and ROPEBENCH_ISA, when
 * set, only letters, digits, '_' and ',' (so that every later message can show it as
 * it is; the kernel dispatch judges the name); RB_EINVAL with one line naming the
 * variable and its value otherwise. */
int rb_cli_check_env(char *err, size_t errlen);

/* rb_cli_thp_setting: the system's transparent huge page setting, the text of
 * /sys/kernel/mm/transparent_hugepage/enabled (a static buffer), or NULL when it
 * cannot be read (not Linux); for rb_kernels_hugepages. */
const char *rb_cli_thp_setting(void);

/* rb_cli_env_record: the environment variables that change what a run computes or how
 * (ROPEBENCH_ISA, ROPEBENCH_HUGEPAGES, ROPEBENCH_PROBE_BALANCE, ROPEBENCH_BF16_AMX; not
 * the test hooks) that are set and not empty, as "NAME=value" words separated by one
 * blank (value escaped as rb_cli_esc does; the ones read are checked before any work
 * to hold no blank), into buf (always terminated; "" when none). A results file keeps
 * it so that a reader can rerun the same way (the report's Regenerate line sets them). */
void rb_cli_env_record(char *buf, size_t len);

/* rb_cli_parse_count: a decimal integer with an optional suffix K or k (x 1024), M
 * (x 1024^2) or G (x 1024^3), the whole of s (no spaces): 0 and *v, or -1 (errno
 * ERANGE when it overflows int64, else EINVAL). Shared by the study keys and the
 * command options, so that 1K means the same everywhere. */
int rb_cli_parse_count(const char *s, long long *v);

/* What an output path holds, for the commands that add to a results file (bench -o,
 * run --resume): rb_cli_results_file reads the first bytes (the HDF5 signature at offset
 * 0, 512, 1024, ... as HDF5 places it after a user block) and, for an HDF5 file, the
 * root `format` attribute through a read-only open, so a file it refuses is left exactly
 * as it was (a read-write open and close would trim bytes past HDF5's end of
 * allocation). Returns one of these, or a negative RB_E code with err set when the file
 * cannot be read. */
enum {
    RB_CLI_ABSENT = 0,  /* no such path */
    RB_CLI_EMPTY,       /* an empty regular file */
    RB_CLI_RESULTS,     /* HDF5 with format = "ropebench" */
    RB_CLI_NOT_HDF5,    /* anything else without the HDF5 signature */
    RB_CLI_FOREIGN_HDF5, /* HDF5 without format = "ropebench" */
    RB_CLI_OTHER_VERSION /* format = "ropebench" with a format_version other than 1 */
};
int rb_cli_results_file(const char *path, char *err, size_t errlen);

/* rb_cli_refusal: why a file of kind RB_CLI_NOT_HDF5 or RB_CLI_FOREIGN_HDF5 is refused,
 * as the commands word it ("not an HDF5 file", "an HDF5 file that is not a ropebench
 * results file (no format = \"ropebench\" attribute)"); "" for the other kinds. */
const char *rb_cli_refusal(int kind);

/* rb_cli_same_file: whether paths a and b name the same file: the same device and inode
 * when both exist (links count), the same directory (after realpath) and name when
 * neither does; 0 when only one exists. */
int rb_cli_same_file(const char *a, const char *b);

/* rb_cli_esc: s copied into buf[n] with its control characters escaped (\n, \t, \r,
 * \xHH), so that user text echoed in an error keeps the message on one line; what does
 * not fit is left off at a whole character (escape or UTF-8), and "..." says so (when n
 * >= 4). Returns buf. RB_ESC(s) does it into a
 * 256-byte buffer that lives for the statement. */
const char *rb_cli_esc(char *buf, size_t n, const char *s);
#define RB_ESC(s) rb_cli_esc((char[256]){""}, 256, (s))

/* rb_cli_launched: how many ranks an MPI launcher started with this process, read from
 * its environment before MPI_Init (Open MPI's OMPI_COMM_WORLD_SIZE, PMI_SIZE of MPICH and
 * Intel MPI, srun's SLURM_NTASKS; 1 when none says more than 1), and this process's
 * rank in *rank (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID; 0 when none is
 * set). Read once and kept, so that calls before and after MPI_Init agree. */
int rb_cli_launched(int *rank);

/* rb_cli_shortest: x in the fewest significant digits (1 to 17, %g style) that strtod
 * reads back as x, into buf[n] (n >= 32 holds any double). Returns buf. For messages and
 * labels where %g would round a value onto a bound it is compared with. */
const char *rb_cli_shortest(char *buf, size_t n, double x);

/* rb_cli_fsize_floor: RB_OK unless the process's file-size limit (ulimit -f) is below
 * RB_CLI_FSIZE_FLOOR, which MPI_Init itself needs for its shared-memory files (Open MPI
 * 4.1 fails inside MPI_Init below ~3 MiB); then RB_EIO with one line saying so. run and
 * bench -o call it before MPI_Init. (main ignores SIGXFSZ from the start.) */
#define RB_CLI_FSIZE_FLOOR ((rlim_t)16 << 20)
int rb_cli_fsize_floor(char *err, size_t errlen);

/* rb_cli_fsize_hook: called by run and bench once MPI is up, before the results file is
 * opened. Ignores SIGXFSZ, so that a file-size limit (ulimit -f) fails a write with
 * EFBIG, reported like any failed write, instead of killing the process in the middle of
 * a collective write. Test hook: ROPEBENCH_TEST_FSIZE_LIMIT=BYTES sets that limit here,
 * after MPI_Init (whose shared-memory files a limit set before would break), so that the
 * tests can make writes fail the way a full file system does. */
void rb_cli_fsize_hook(void);

/* Signals deferred while a results file is being changed. HDF5 keeps no journal: a
 * process that dies while it writes a file's metadata (a case's groups and
 * attributes, a flush, a removal) can leave the whole file unreadable, the cases
 * finished before included. rb_cli_defer_begin: from now on a stop signal (SIGINT,
 * SIGTERM, SIGHUP, SIGPIPE) whose handler asks rb_cli_defer_hold is held instead of
 * acted on. rb_cli_defer_hold(sig): called first in such a handler (async-signal-safe);
 * 1 if the signal was held (the handler returns at once), 0 otherwise (no window, or a
 * second signal inside one: acted on at once). rb_cli_defer_end:
 * the file is consistent again (flushed, on every rank); ends the window and returns
 * the first held signal (0: none), which the caller then acts on. Only SIGKILL, a
 * crash or a power cut inside a window can still damage the file. */
void rb_cli_defer_begin(void);
int rb_cli_defer_hold(int sig);
int rb_cli_defer_end(void);

/* rb_cli_defer_install: for a process without handlers of its own for the stop signals
 * (bench, ranks other than a run's rank 0): a handler that holds a signal inside a
 * window (rb_cli_defer_hold) and otherwise takes the default action, for each stop
 * signal the process was not started ignoring. rb_cli_defer_raise(sig): the default
 * action of a signal held (sig 0: nothing). */
void rb_cli_defer_install(void);
void rb_cli_defer_raise(int sig);

/* rb_cli_stop_install: handler for each stop signal (SIGINT, SIGTERM, SIGHUP, SIGPIPE)
 * that the process was not started ignoring (nohup's SIGHUP stays ignored), with all
 * four blocked while it runs. */
void rb_cli_stop_install(void (*handler)(int));

/* Test hooks. rb_cli_test_wait: wait until path exists (polling every 20 ms, at most
 * RB_CLI_TEST_WAIT_MAX_S seconds, then go on), so that a test can act at a known point
 * however fast or slow the build is. rb_cli_test_hold_in_write: with
 * ROPEBENCH_TEST_HOLD_IN_WRITE=PATH set, make PATH.reached (when mark) and wait for
 * PATH; called inside a window of held stop signals (rb_cli_defer_begin), so that a
 * test can send one there. */
#define RB_CLI_TEST_WAIT_MAX_S 300
void rb_cli_test_wait(const char *path);
void rb_cli_test_hold_in_write(int mark);

/* rb_cli_fsize_hook_env: the file-size limit of environment variable var (bytes), if
 * set, for this process from here on (rb_cli_fsize_hook takes
 * ROPEBENCH_TEST_FSIZE_LIMIT; bench -o also takes ROPEBENCH_TEST_FSIZE_LIMIT_AT_WRITE
 * just before it writes, past its checks up front, so that the tests reach the room
 * check of the file's open at the end: exit 1 after measuring). A value that is not a
 * whole number is ignored, with one line on stderr. */
void rb_cli_fsize_hook_env(const char *var);

/* rb_cli_space_hint: after a write to the results file `out` failed, print on stderr one
 * line per likely cause that holds (its file system has under 1 MiB free; the file is
 * within 64 KiB of this process's file-size limit), or nothing. */
void rb_cli_space_hint(const char *out);

#endif
