/* rb_bench.h — internal interface of the ropebench command: study configuration
 * (INI + --set overrides, validated before any work) and the subcommands. */
#ifndef RB_BENCH_H
#define RB_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "rb_datasets.h"
#include "rb_kernels.h"
#include "rb_mpi.h"

#define RB_MAX_LIST 64      /* longest list a key may hold */
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
    int n_methods;
    rb_rope_method methods[RB_ROPE_COUNT];
    double factor;
    double beta_fast, beta_slow;
    int truncate;
    double mscale, mscale_all_dim;
    double attention_factor; /* <= 0: auto */
    double low_freq_factor, high_freq_factor;
    int n_short_factor, n_long_factor;
    double short_factor[RB_MAX_LIST * 4], long_factor[RB_MAX_LIST * 4];
    /* [study] */
    int n_full_lens, n_probe_lens;
    int64_t full_lens[RB_MAX_LIST], probe_lens[RB_MAX_LIST];
    int modes[2];            /* modes[RB_MODE_FULL], modes[RB_MODE_PROBE]: enabled? */
    int heads;
    int n_datasets;
    rb_dataset_kind datasets[2];
    uint64_t seed;
    int probe_rows;          /* number of log-spaced probe rows */
    int n_probe_positions;   /* user-given probe positions (negative: from the end) */
    int64_t probe_positions[RB_MAX_LIST];
    rb_shard_layout shard_layout;
    char dtype[8];
    int threads;             /* OpenMP threads per rank; 0: auto (OpenMP default) */
    double memory_limit_gib; /* 0: 90% of this host's available memory */
    /* [needle] */
    int n_needles;
    int64_t needle_positions[RB_NEEDLE_MAX];   /* negative: from the end */
    int64_t needle_queries[RB_NEEDLE_MAX];
    double needle_strength;
    /* the resolved configuration as INI text (every key, final values) */
    char *text;
} rb_config;

/* rb_config_load: start from the defaults (which are the default study), read
 * `path` (NULL: none), apply the n_sets "section.key=value" overrides in order, then validate every
 * key and the combination. On error returns RB_EINVAL (bad key/value/combination) or
 * RB_EIO (unreadable file) with one line in err naming the file/key and the reason;
 * *cfg is then empty. Free with rb_config_free. Does no MPI and no big allocation. */
int rb_config_load(rb_config *cfg, const char *path, char *const *sets, int n_sets,
                   char *err, size_t errlen);
void rb_config_free(rb_config *cfg);

/* rb_config_check_ranks: checks that need the rank count and memory: every case's
 * seq_len against the sharding layout, probe/needle positions inside the sequence,
 * and the per-rank memory estimate times ranks_per_host against the limit. */
int rb_config_check_ranks(const rb_config *cfg, int nranks, int ranks_per_host,
                          char *err, size_t errlen);

/* Fill a schedule's parameters from the config for method m at sequence length L. */
void rb_config_rope_params(const rb_config *cfg, rb_rope_method m, int64_t L,
                           rb_rope_params *p);

/* Bytes one rank needs for a case (estimate used by the memory check). */
double rb_config_case_bytes(const rb_config *cfg, rb_mode mode, int64_t L, int nranks);

/* Subcommands: each parses its own argv (argv[0] is the subcommand name) and
 * returns the process exit code. */
int rb_cmd_run(int argc, char **argv);
int rb_cmd_report(int argc, char **argv);
int rb_cmd_freqs(int argc, char **argv);
int rb_cmd_info(int argc, char **argv);
int rb_cmd_bench(int argc, char **argv);

/* Version line "ropebench X.Y.Z (git ...)". */
const char *rb_version_string(void);

#endif
