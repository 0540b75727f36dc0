/* cmd_tools.c — the small subcommands: `freqs` (one schedule's frequency table),
 * `info` (CPU features, kernel choice, topology, versions) and `report`. */
#include <errno.h>
#include <getopt.h>
#include <hwloc.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_bench.h"
#include "rb_build.h"
#include "rb_reports.h"
#include "rb_results.h"

extern char *openblas_get_config(void);

/* ---- freqs ------------------------------------------------------------------------- */

static void freqs_usage(FILE *f)
{
    fprintf(f,
            "usage: ropebench freqs --method M [options]\n"
            "\n"
            "Print the frequency table of one RoPE schedule: pair, inv_freq, wavelength,\n"
            "ratio to the unscaled schedule.\n"
            "\n"
            "options (each is a shortcut for a config key; see docs/config.md):\n"
            "  -m, --method M         none|pi|ntk|dynamic_ntk|yarn|llama3|longrope\n"
            "  -f, --factor F         scaling.factor\n"
            "      --head-dim D       model.head_dim\n"
            "      --rotary-dim R     model.rotary_dim\n"
            "      --base B           model.base\n"
            "      --original-ctx N   model.original_ctx\n"
            "      --seq-len N        sequence length (dynamic_ntk, longrope; K, M, G\n"
            "                         suffixes x 1024^n); default original_ctx * factor\n"
            "  -c, --config FILE      take the other keys from a study file\n"
            "  -s, --set SEC.KEY=VAL  any other key (repeatable)\n"
            "  -h, --help, --version\n");
}

/* set_key: the key of a --set setting "KEY=VALUE" as the config loader reads it, blanks
 * around it dropped: its start, and its length in *len; NULL without '='. */
static const char *set_key(const char *set, size_t *len)
{
    const char *eq = strchr(set, '=');
    if (!eq)
        return NULL;
    while (*set == ' ' || *set == '\t') set++;
    const char *e = eq;
    while (e > set && (e[-1] == ' ' || e[-1] == '\t')) e--;
    *len = (size_t)(e - set);
    return set;
}

int rb_cmd_freqs(int argc, char **argv)
{
    enum { O_HD = 256, O_RD, O_BASE, O_OC, O_SL, O_VER };
    static const struct option opts[] = {
        {"method", required_argument, 0, 'm'},   {"factor", required_argument, 0, 'f'},
        {"head-dim", required_argument, 0, O_HD}, {"rotary-dim", required_argument, 0, O_RD},
        {"base", required_argument, 0, O_BASE},  {"original-ctx", required_argument, 0, O_OC},
        {"seq-len", required_argument, 0, O_SL}, {"config", required_argument, 0, 'c'},
        {"set", required_argument, 0, 's'},      {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VER},      {0, 0, 0, 0}};
    char **sets = calloc((size_t)argc * 2 + 2, sizeof *sets);
    char **owned = calloc((size_t)argc * 2 + 2, sizeof *owned);
    /* the option behind each sets[] entry (NULL: a --set of the user's) */
    const char **set_opt = calloc((size_t)argc * 2 + 2, sizeof *set_opt);
    const char *cfg_path = NULL, *method = NULL, *seq = NULL;
    const char *given[5] = {NULL}; /* --factor, --head-dim, --rotary-dim, --base,
                                    * --original-ctx: each once */
    int n_sets = 0, n_owned = 0, opt, code = 0;
    rb_config cfg;
    int have_cfg = 0;
    char err[512];
    if (!sets || !owned || !set_opt) {
        code = RB_EXIT_FAIL;
        goto cleanup;
    }
    optind = 1;
    opterr = 0;
    char ob[200]; /* what is wrong with a rejected option (rb_cli_reject) */
    while ((opt = getopt_long(argc, argv, ":m:f:c:s:h", opts, NULL)) != -1) {
        const char *key = NULL;
        /* single-valued: a second would silently win */
        const char **slot = opt == 'm'      ? &method
                            : opt == O_SL   ? &seq
                            : opt == 'c'    ? &cfg_path
                            : opt == 'f'    ? &given[0]
                            : opt == O_HD   ? &given[1]
                            : opt == O_RD   ? &given[2]
                            : opt == O_BASE ? &given[3]
                            : opt == O_OC   ? &given[4]
                                            : NULL;
        const char *name = opt == 'm'      ? "-m/--method"
                           : opt == O_SL   ? "--seq-len"
                           : opt == 'c'    ? "-c/--config"
                           : opt == 'f'    ? "-f/--factor"
                           : opt == O_HD   ? "--head-dim"
                           : opt == O_RD   ? "--rotary-dim"
                           : opt == O_BASE ? "--base"
                                           : "--original-ctx";
        if (slot && rb_cli_once("freqs", name, slot, optarg)) {
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        switch (opt) {
        case 'm': break; /* method, seq, cfg_path: set above */
        case 'f': key = "scaling.factor"; break;
        case O_HD: key = "model.head_dim"; break;
        case O_RD: key = "model.rotary_dim"; break;
        case O_BASE: key = "model.base"; break;
        case O_OC: key = "model.original_ctx"; break;
        case O_SL: break;
        case 'c': break;
        case 's': sets[n_sets++] = optarg; break;
        case 'h': freqs_usage(stdout); goto cleanup;
        case O_VER: printf("%s\n", rb_version_string()); goto cleanup;
        case ':':
            fprintf(stderr, "ropebench: freqs: option %s needs a value\n", argv[optind - 1]);
            code = RB_EXIT_USAGE;
            goto cleanup;
        default:
            fprintf(stderr, "ropebench: freqs: %s (see ropebench freqs --help)\n",
                    rb_cli_reject(argv, opts, ob, sizeof ob));
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        if (key) {
            size_t len = strlen(key) + strlen(optarg) + 2;
            char *s = malloc(len);
            if (!s) { code = RB_EXIT_FAIL; goto cleanup; }
            snprintf(s, len, "%s=%s", key, optarg);
            owned[n_owned++] = s;
            set_opt[n_sets] = opt == 'f'      ? "--factor"
                              : opt == O_HD   ? "--head-dim"
                              : opt == O_RD   ? "--rotary-dim"
                              : opt == O_BASE ? "--base"
                                              : "--original-ctx";
            sets[n_sets++] = s;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ropebench: freqs: unexpected argument '%s'\n", RB_ESC(argv[optind]));
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (!method) {
        fprintf(stderr, "ropebench: freqs: --method is required (none, pi, ntk, dynamic_ntk, "
                        "yarn, llama3, longrope)\n");
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    {
        size_t len = strlen(method) + 32;
        char *s = malloc(len);
        if (!s) { code = RB_EXIT_FAIL; goto cleanup; }
        snprintf(s, len, "scaling.methods=%s", method);
        owned[n_owned++] = s;
        set_opt[n_sets] = "--method";
        sets[n_sets++] = s;
    }
    /* an option and a --set of the same key: the later would silently win */
    for (int i = 0; i < n_sets; i++) {
        if (!set_opt[i])
            continue;
        const size_t kl = strcspn(sets[i], "=");
        for (int j = 0; j < n_sets; j++) {
            size_t jl;
            const char *a = set_opt[j] ? NULL : set_key(sets[j], &jl);
            if (a && jl == kl && !strncmp(a, sets[i], kl)) {
                fprintf(stderr, "ropebench: freqs: %s and --set %s both set %.*s: give it "
                                "once\n", set_opt[i], RB_ESC(sets[j]), (int)kl, sets[i]);
                code = RB_EXIT_USAGE;
                goto cleanup;
            }
        }
    }
    if (rb_config_load_ex(&cfg, cfg_path, sets, n_sets, RB_CONFIG_SCHEDULE_ONLY, err,
                          sizeof err)) {
        /* a value given by an option is checked as its config key: name the option too,
         * when the last of the settings of the key the error names came from it */
        const char *from = NULL;
        const size_t kl = strcspn(err, ": ");
        for (int i = n_sets - 1; i >= 0; i--) {
            size_t il;
            const char *a = set_key(sets[i], &il);
            if (a && il == kl && !strncmp(a, err, kl)) {
                from = set_opt[i];
                break;
            }
        }
        if (from)
            fprintf(stderr, "ropebench: freqs: %s: %s\n", from, err);
        else
            fprintf(stderr, "ropebench: %s\n", err);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    have_cfg = 1;
    if (cfg.n_attention_factors != 1) {
        fprintf(stderr, "ropebench: freqs: scaling.attention_factor takes one value here, "
                        "got %d\n", cfg.n_attention_factors);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    if (cfg.n_methods != 1) {
        fprintf(stderr, "ropebench: freqs: --method takes one method, got %d\n", cfg.n_methods);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    int64_t L = (int64_t)llround((double)cfg.original_ctx * cfg.factor);
    if (seq) {
        long long v = 0;
        if (rb_cli_parse_count(seq, &v) != 0 || v < 1 || v > ((long long)1 << 40)) {
            fprintf(stderr, "ropebench: freqs: --seq-len '%s': not an integer in [1, 2^40] "
                            "(suffixes K, M, G as in a study file)\n", RB_ESC(seq));
            code = RB_EXIT_USAGE;
            goto cleanup;
        }
        L = v;
    }
    rb_rope_params p;
    rb_rope_info info, binfo;
    double inv[512], base_inv[512];
    rb_config_rope_params(&cfg, cfg.methods[0], L, &p);
    if (rb_rope_schedule(&p, inv, &info, err, sizeof err)) {
        /* at this command's seq_len (the study's lengths are not built here) */
        fprintf(stderr, "ropebench: freqs: %s at seq_len %lld: %s\n",
                rb_rope_method_name(cfg.methods[0]), (long long)L, err);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    rb_config_rope_params(&cfg, RB_ROPE_NONE, L, &p);
    if (rb_rope_schedule(&p, base_inv, &binfo, err, sizeof err)) {
        fprintf(stderr, "ropebench: %s\n", err);
        code = RB_EXIT_USAGE;
        goto cleanup;
    }
    printf("# ropebench freqs: method %s, factor %.10g, head_dim %d, rotary_dim %d, base "
           "%.10g, original_ctx %lld, seq_len %lld\n",
           rb_rope_method_name(cfg.methods[0]), cfg.factor, cfg.head_dim, cfg.rotary_dim,
           cfg.base, (long long)cfg.original_ctx, (long long)L);
    printf("# base_used %.17g, attention_factor %.17g", info.base_used, info.attention_factor);
    if (cfg.methods[0] == RB_ROPE_YARN)
        printf(", correction range [%.10g, %.10g]", info.corr_low + 0.0,
               info.corr_high + 0.0); /* + 0.0: ceil(-0.3) prints as 0, not -0 */
    printf("\n# %4s %22s %22s %22s\n", "pair", "inv_freq[rad/token]", "wavelength[tokens]",
           "ratio_to_base");
    /* every column with 16 significant digits: a ratio of 1e-12 (dynamic NTK far out)
     * or 1e9 (a LongRoPE factor of 1e-9) keeps its digits */
    for (int j = 0; j < cfg.rotary_dim / 2; j++)
        printf("%6d %22.15e %22.15e %22.15e\n", j, inv[j], 2 * M_PI / inv[j],
               inv[j] / base_inv[j]);
cleanup:
    for (int i = 0; i < n_owned; i++) free(owned[i]);
    free(owned);
    free(sets);
    free(set_opt);
    if (have_cfg) rb_config_free(&cfg);
    return code;
}

/* ---- info ---------------------------------------------------------------------------- */

int rb_cmd_info(int argc, char **argv)
{
    if (argc > 1) {
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
            printf("usage: ropebench info\n\nPrint the detected CPU features, the kernel "
                   "that would run (ROPEBENCH_ISA\noverrides), this host's hwloc topology "
                   "and binding, and library versions.\n");
            return 0;
        }
        if (!strcmp(argv[1], "--version")) {
            printf("%s\n", rb_version_string());
            return 0;
        }
        fprintf(stderr, "ropebench: info: unexpected argument '%s'\n", RB_ESC(argv[1]));
        return RB_EXIT_USAGE;
    }
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    printf("# ropebench info\n");
    printf("%-22s %s\n", "version", rb_version_string());
    printf("%-22s %s\n", "cpu", ci.model);
    printf("%-22s avx2=%d fma=%d avx512f=%d avx512bw=%d avx512vl=%d avx512dq=%d "
           "avx512_bf16=%d os_zmm_state=%d\n",
           "cpu_features", ci.avx2, ci.fma, ci.avx512f, ci.avx512bw, ci.avx512vl,
           ci.avx512dq, ci.avx512_bf16, ci.os_zmm);
    rb_kernel_ops ops;
    const char *why = NULL, *isa = getenv("ROPEBENCH_ISA");
    char err[512];
    int code = 0;
    /* the bf16 kernel is a choice of dtype too: shown as a bf16 study would get it */
    const char *dtype = isa && !strcmp(isa, "avx512_bf16") ? "bf16" : "fp32";
    const int env_ok = rb_cli_check_env(err, sizeof err) == RB_OK;
    if (env_ok && rb_kernels_select_dtype(isa, dtype, &ops, &why, err, sizeof err) == RB_OK)
        printf("%-22s %s (%s): %s\n", "kernel", ops.name, why ? why : "", ops.detail);
    else {
        printf("%-22s %s: %s\n", "kernel", env_ok ? "none" : "not chosen", err);
        fprintf(stderr, "ropebench: info: %s\n", err);
        code = RB_EXIT_USAGE;
    }
    printf("%-22s %s\n", "ROPEBENCH_ISA", isa ? RB_ESC(isa) : "(unset)");
    const char *hide = getenv("ROPEBENCH_TEST_CPU_HIDE"); /* tests only: say so */
    if (hide && *hide)
        printf("%-22s %s (test hook: cpu_features above hide these)\n",
               "ROPEBENCH_TEST_CPU_HIDE", RB_ESC(hide));
    char topo[256], bind[256];
    /* (where hwloc cannot load the topology both lines say so, rather than vanish) */
    (void)rb_topo_local_summary(topo, sizeof topo, bind, sizeof bind);
    printf("%-22s %s\n", "topology", topo);
    printf("%-22s %s\n", "binding", bind);
    char mpiv[MPI_MAX_LIBRARY_VERSION_STRING];
    int l = 0;
    MPI_Get_library_version(mpiv, &l);
    char *nl = strchr(mpiv, '\n');
    if (nl) *nl = '\0';
    printf("%-22s %s\n", "mpi", mpiv);
    printf("%-22s %s\n", "hdf5", rb_results_backend_version());
    printf("%-22s %s\n", "hwloc", HWLOC_VERSION);
    printf("%-22s %s\n", "openblas", openblas_get_config());
    printf("%-22s %s\n", "compiler", RB_COMPILER);
    printf("%-22s %s\n", "cflags", RB_CFLAGS);
    return code;
}

/* ---- report ---------------------------------------------------------------------------- */

/* report_check_ini: when the results file `in` stored its configuration (config_text),
 * which the report wrote beside itself as OUT/study.ini for its Regenerate section,
 * load that file as `run` would (its input file.path not read: it may be on another
 * machine) and say in one line when it does not load: a file whose config_text was
 * damaged afterwards gives a Regenerate section that cannot run as written. The report
 * itself stands (exit 0), as with the damaged cases it lists. */
static void report_check_ini(const char *in, const char *out)
{
    char *text = NULL, e[1024], ini[4200];
    if (rb_results_peek_str(in, "config_text", &text, e, sizeof e) == 1 && text) {
        rb_config c;
        snprintf(ini, sizeof ini, "%s/study.ini", out);
        if (rb_config_load_ex(&c, ini, NULL, 0, RB_CONFIG_SCHEDULE_ONLY, e, sizeof e) == RB_OK)
            rb_config_free(&c);
        else
            fprintf(stderr, "ropebench: report: the configuration stored in %s does not load "
                            "as a study (%s): the report's Regenerate section cannot run it as "
                            "written\n", RB_ESC(in), e);
    }
    free(text);
}

int rb_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {"version", no_argument, 0, 'V'},
                                         {0, 0, 0, 0}};
    const char *out = "report", *in = NULL;
    int opt, out_given = 0;
    char err[1024];
    optind = 1;
    opterr = 0;
    char ob[200]; /* what is wrong with a rejected option (rb_cli_reject) */
    while ((opt = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            if (out_given++) { /* a second would silently win */
                fprintf(stderr, "ropebench: report: -o/--output given twice ('%.200s', then "
                                "'%.200s')\n", out, optarg);
                return RB_EXIT_USAGE;
            }
            out = optarg;
            break;
        case 'h':
            printf("usage: ropebench report RESULTS.h5 [-o DIR]\n"
                   "       ropebench report A.h5 B.h5 [C.h5 ...] [-o DIR]\n\n"
                   "Read a results file (only the file) and write DIR/report.md, "
                   "DIR/report.html\n(self-contained) and the plots as SVG (gnuplot). "
                   "With 2 to %d files, set them\nside by side instead, A the baseline: "
                   "DIR/compare.md and DIR/compare.html\n(machines and runs, study "
                   "differences, throughput and its ratio to A, results,\nbenchmark "
                   "rows). DIR defaults to ./report.\n", RB_COMPARE_MAX);
            return 0;
        case 'V': printf("%s\n", rb_version_string()); return 0;
        case ':':
            fprintf(stderr, "ropebench: report: option %s needs a value\n", argv[optind - 1]);
            return RB_EXIT_USAGE;
        default:
            fprintf(stderr, "ropebench: report: %s (see ropebench report --help)\n",
                    rb_cli_reject(argv, opts, ob, sizeof ob));
            return RB_EXIT_USAGE;
        }
    }
    const int nin = argc - optind;
    if (nin < 1 || nin > RB_COMPARE_MAX) {
        fprintf(stderr, "ropebench: report: expected one results file, or 2 to %d to "
                        "compare (ropebench report RESULTS.h5 [-o DIR])\n", RB_COMPARE_MAX);
        return RB_EXIT_USAGE;
    }
    in = argv[optind];
    if (!*out) {
        fprintf(stderr, "ropebench: report: -o '': an empty directory name\n");
        return RB_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        if (rb_cli_check_name("report: RESULTS", argv[i], err, sizeof err) != RB_OK) {
            fprintf(stderr, "ropebench: %s\n", err);
            return RB_EXIT_USAGE;
        }
    if (rb_cli_check_name("report: -o", out, err, sizeof err) != RB_OK) {
        fprintf(stderr, "ropebench: %s\n", err);
        return RB_EXIT_USAGE;
    }
    /* a file beside itself (by another name, or a link) compares as equal in every
     * figure: refused rather than shown as a comparison */
    for (int i = optind; i < argc; i++)
        for (int j = i + 1; j < argc; j++)
            if (rb_cli_same_file(argv[i], argv[j]) == 1) {
                fprintf(stderr, "ropebench: report: '%s' and '%s' are the same file; give "
                                "different results files to compare\n",
                        RB_ESC(argv[i]), RB_ESC(argv[j]));
                return RB_EXIT_USAGE;
            }
    if (nin > 1) {
        const int rc = rb_report_compare((const char *const *)argv + optind, nin, out, err,
                                         sizeof err);
        if (rc != RB_OK) {
            fprintf(stderr, "ropebench: %s\n", err);
            return rc == RB_ENOMEM ? RB_EXIT_FAIL : RB_EXIT_USAGE;
        }
        printf("%s/compare.md\n%s/compare.html\n", out, out);
        return 0;
    }
    err[0] = '\0';
    int written = 0;
    int rc = rb_report_write(in, out, err, sizeof err, &written);
    /* (one line, or two: plots that failed, then cases that could not be read) */
    for (char *l = err, *nl; *l; l = nl ? nl + 1 : l + strlen(l)) {
        nl = strchr(l, '\n');
        fprintf(stderr, "ropebench: %.*s\n", nl ? (int)(nl - l) : (int)strlen(l), l);
    }
    if (rc != RB_OK) {
        /* a report written but for its plots (gnuplot missing or failing) still gets
         * its Regenerate check */
        if (written)
            report_check_ini(in, out);
        return rc == RB_EUNSUPPORTED || rc == RB_ENOMEM ? RB_EXIT_FAIL : RB_EXIT_USAGE;
    }
    report_check_ini(in, out);
    printf("%s/report.md\n%s/report.html\n", out, out);
    return 0;
}
