/* main.c — the ropebench command: dispatches to run, report, freqs, info and bench. */
#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rb_bench.h"
#include "rb_mpi.h"
#include "rb_build.h"
#include "rb_results.h"

extern void openblas_set_num_threads(int n);
/* OpenBLAS's pthread build (Debian's default) exports this; its OpenMP build does not,
 * hence weak: NULL there */
extern int blas_thread_shutdown_(void) __attribute__((weak));

const char *rb_version_string(void)
{
    return "ropebench " RB_VERSION " (" RB_GIT_DESCRIBE ", " RB_BUILD_TYPE ")";
}

/* long_option: the index in opts of the long option that arg ("--name" or
 * "--name=value") names, by its whole name or an unambiguous prefix; -1 if none, -2 if
 * the prefix is ambiguous. */
static int long_option(const char *arg, const struct option *opts)
{
    const char *name = arg + 2, *eq = strchr(name, '=');
    const size_t n = eq ? (size_t)(eq - name) : strlen(name);
    int exact = -1, first = -1, count = 0;
    if (n == 0)
        return -1;
    for (int i = 0; opts[i].name; i++) {
        if (strncmp(opts[i].name, name, n) != 0)
            continue;
        if (strlen(opts[i].name) == n)
            exact = i;
        if (count++ == 0)
            first = i;
    }
    return exact >= 0 ? exact : count == 1 ? first : count > 1 ? -2 : -1;
}

/* rb_cli_reject: see rb_bench.h. */
const char *rb_cli_reject(char *const *argv, const struct option *opts, char *buf, size_t len)
{
    const char *a = optind >= 1 ? argv[optind - 1] : NULL;
    const int is_long = a && a[0] == '-' && a[1] == '-' && a[2];
    /* a long option without an argument given one (--resume=x): it is the argument just
     * consumed (an argument like it before it would have been rejected first), and
     * getopt sets optopt to its letter, which a short cluster after it may also hold */
    if (is_long && strchr(a, '=')) {
        const int hit = long_option(a, opts);
        if (hit >= 0 && opts[hit].has_arg == no_argument) {
            snprintf(buf, len, "option --%s takes no value ('%s')", opts[hit].name, RB_ESC(a));
            return buf;
        }
    }
    /* a short option: the cluster it came from is the current argument (optind not yet
     * past it) or, for the cluster's last letter, the one before */
    for (int back = 0; optopt > 0 && optopt < 128 && isgraph(optopt) && back < 2; back++) {
        const char *c = argv[optind - back];
        if (optind - back >= 1 && c && c[0] == '-' && c[1] != '-' && strchr(c + 1, optopt)) {
            snprintf(buf, len, "unknown option '-%c'", optopt);
            return buf;
        }
    }
    if (is_long && long_option(a, opts) == -2) {
        const char *name = a + 2, *eq = strchr(name, '=');
        const size_t n = eq ? (size_t)(eq - name) : strlen(name);
        int k = snprintf(buf, len, "option '%.*s' is ambiguous (", (int)(n + 2), a);
        for (int i = 0, m = 0; opts[i].name && k >= 0 && (size_t)k < len; i++)
            if (strncmp(opts[i].name, name, n) == 0)
                k += snprintf(buf + k, len - (size_t)k, "%s--%s", m++ ? ", " : "",
                              opts[i].name);
        if (k >= 0 && (size_t)k < len)
            snprintf(buf + k, len - (size_t)k, ")");
        return buf;
    }
    snprintf(buf, len, "unknown option '%s'", a ? RB_ESC(a) : "?");
    return buf;
}

/* rb_cli_launched: see rb_bench.h. */
int rb_cli_launched(int *rank)
{
    static int size = 0, me = 0;
    if (!size) {
        const char *v = getenv("OMPI_COMM_WORLD_SIZE");
        if (!v) v = getenv("PMI_SIZE");
        if (!v && getenv("SLURM_PROCID")) v = getenv("SLURM_NTASKS");
        size = v && atoi(v) > 1 ? atoi(v) : 1;
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r) r = getenv("PMIX_RANK");
        if (!r) r = getenv("PMI_RANK");
        if (!r) r = getenv("SLURM_PROCID");
        me = r ? atoi(r) : 0;
    }
    if (rank) *rank = me;
    return size;
}

/* rb_cli_shortest: see rb_bench.h. */
const char *rb_cli_shortest(char *buf, size_t n, double x)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

/* rb_cli_esc: see rb_bench.h. */
const char *rb_cli_esc(char *buf, size_t n, const char *s)
{
    size_t o = 0, keep = 0; /* keep: the end of the last whole character with room after
                             * it for "..." */
    const char *p = s;
    for (; p && *p; p++) {
        const unsigned char ch = (unsigned char)*p;
        char e[8] = {(char)ch, '\0'};
        if (ch == '\n' || ch == '\t' || ch == '\r')
            snprintf(e, sizeof e, "\\%c", ch == '\n' ? 'n' : ch == '\t' ? 't' : 'r');
        else if (ch < 0x20 || ch == 0x7f)
            snprintf(e, sizeof e, "\\x%02x", ch);
        const size_t l = strlen(e);
        if (o + l >= n) break;
        memcpy(buf + o, e, l);
        o += l;
        if (((unsigned char)p[1] & 0xC0) != 0x80 && o + 3 < n) /* (not inside UTF-8) */
            keep = o;
    }
    if (p && *p && n >= 4) { /* cut: said, so that a shorter text is not taken for it */
        o = keep;
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    if (n) buf[o] = '\0';
    return buf;
}

/* rb_cli_fsize_floor: see rb_bench.h. */
int rb_cli_fsize_floor(char *err, size_t errlen)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= RB_CLI_FSIZE_FLOOR)
        return RB_OK;
    return rb_errf(err, errlen, RB_EIO,
                   "the file-size limit (ulimit -f) is %llu KiB: MPI's start-up writes "
                   "files of a few MiB; allow at least %d MiB",
                   (unsigned long long)(rl.rlim_cur >> 10), (int)(RB_CLI_FSIZE_FLOOR >> 20));
}

/* rb_cli_fsize_hook: see rb_bench.h. */
void rb_cli_fsize_hook(void)
{
    signal(SIGXFSZ, SIG_IGN);
    rb_cli_fsize_hook_env("ROPEBENCH_TEST_FSIZE_LIMIT");
}

/* 0: no window; -1: a window, nothing held; > 0: a window holding that signal. One
 * lock-free atomic, so that a handler running on another thread (an OpenMP or MPI
 * thread) and the window's end cannot both miss a signal. */
static _Atomic int defer_state;

/* rb_cli_defer_begin: see rb_bench.h. */
void rb_cli_defer_begin(void) { atomic_store(&defer_state, -1); }

/* rb_cli_defer_hold: see rb_bench.h. A second signal inside the window is not held:
 * a user's second Ctrl-C, or a rank whose peer died inside a collective, still ends
 * the process. */
int rb_cli_defer_hold(int sig)
{
    int open = -1;
    return atomic_compare_exchange_strong(&defer_state, &open, sig);
}

/* rb_cli_defer_end: see rb_bench.h. */
int rb_cli_defer_end(void)
{
    const int was = atomic_exchange(&defer_state, 0);
    return was > 0 ? was : 0;
}

/* rb_cli_defer_raise: see rb_bench.h. */
void rb_cli_defer_raise(int sig)
{
    if (!sig)
        return;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void defer_handler(int sig)
{
    if (!rb_cli_defer_hold(sig))
        rb_cli_defer_raise(sig);
}

/* rb_cli_stop_install: see rb_bench.h. */
void rb_cli_stop_install(void (*handler)(int))
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    /* a held stop (inside a write) must not interrupt that write: a call that does not
     * retry on EINTR (MPI-IO's pwritev on some file systems, fallocate) then failed, and
     * the run ended "write failed" instead of stopping cleanly after it */
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&sa.sa_mask, sigs[i]);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction was;
        if (sigaction(sigs[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

/* rb_cli_defer_install: see rb_bench.h. */
void rb_cli_defer_install(void) { rb_cli_stop_install(defer_handler); }

/* rb_cli_test_wait: see rb_bench.h. */
void rb_cli_test_wait(const char *path)
{
    const struct timespec tick = {0, 20 * 1000 * 1000};
    for (int i = 0; i < RB_CLI_TEST_WAIT_MAX_S * 50 && access(path, F_OK) != 0; i++)
        nanosleep(&tick, NULL);
}

/* rb_cli_test_hold_in_write: see rb_bench.h. */
void rb_cli_test_hold_in_write(int mark)
{
    const char *p = getenv("ROPEBENCH_TEST_HOLD_IN_WRITE");
    if (!p || !*p)
        return;
    if (mark) {
        char reached[PATH_MAX + 16];
        snprintf(reached, sizeof reached, "%s.reached", p);
        FILE *f = fopen(reached, "w");
        if (f)
            fclose(f);
    }
    rb_cli_test_wait(p);
}

/* rb_cli_fsize_hook_env: see rb_bench.h. */
void rb_cli_fsize_hook_env(const char *var)
{
    const char *fl = getenv(var);
    if (fl) {
        char *end;
        errno = 0;
        const unsigned long long v = strtoull(fl, &end, 10);
        if (!isdigit((unsigned char)fl[0]) || *end || errno) {
            /* a test hook: a typo must not become a limit of 0 bytes, silently */
            fprintf(stderr, "ropebench: %s='%.40s': not a whole number of bytes; ignored\n",
                    var, fl);
            return;
        }
        struct rlimit rl;
        getrlimit(RLIMIT_FSIZE, &rl);
        rl.rlim_cur = (rlim_t)v;
        setrlimit(RLIMIT_FSIZE, &rl);
    }
}

/* rb_cli_space_hint: see rb_bench.h. */
void rb_cli_space_hint(const char *out)
{
    const double free_b = rb_results_free_bytes(out);
    struct stat st;
    struct rlimit rl;
    if (free_b >= 0 && free_b < 1048576.0)
        fprintf(stderr, "ropebench: the file system of %s is full (%.0f KiB free)\n", out,
                free_b / 1024.0);
    if (stat(out, &st) == 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY && (double)st.st_size + 65536.0 >= (double)rl.rlim_cur)
        fprintf(stderr, "ropebench: %s is at or near the file-size limit of this process (%llu "
                        "bytes, ulimit -f)\n", out, (unsigned long long)rl.rlim_cur);
}

/* rb_cli_check_output: see rb_bench.h. */
int rb_cli_check_output(const char *opt, const char *out, char *err, size_t errlen)
{
    struct stat st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    if (!*out)
        return rb_errf(err, errlen, RB_EINVAL, "%s: empty file name", opt);
    if (stat(out, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return rb_errf(err, errlen, RB_EINVAL, "%s %s: not a regular file (%s)", opt, out,
                           S_ISDIR(st.st_mode)    ? "a directory"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                  : "a device");
        if (access(out, W_OK) != 0)
            return rb_errf(err, errlen, RB_EIO, "%s %s: cannot be written: %s", opt, out,
                           strerror(errno));
        return RB_OK;
    }
    if (errno != ENOENT)
        return rb_errf(err, errlen, RB_EIO, "%s %s: %s", opt, out, strerror(errno));
    /* a symbolic link that points nowhere yet: the file is made where it points (through
     * every link of a chain), so that directory is the one to check */
    char path[4096], link[4096];
    snprintf(path, sizeof path, "%s", out);
    int links = 0;
    for (; links < 40; links++) {
        struct stat ls;
        if (lstat(path, &ls) != 0 || !S_ISLNK(ls.st_mode))
            break;
        const ssize_t n = readlink(path, link, sizeof link - 1);
        if (n < 0)
            break;
        link[n] = '\0';
        char *ps = strrchr(path, '/');
        if (link[0] == '/' || !ps)
            snprintf(path, sizeof path, "%s", link);
        else if ((size_t)(ps - path) + 1 + (size_t)n < sizeof path)
            memcpy(ps + 1, link, (size_t)n + 1); /* relative to the link's directory */
        else
            return rb_errf(err, errlen, RB_EINVAL, "%s %s: the path a symbolic link names is "
                           "too long", opt, out);
    }
    if (links) {
        snprintf(dir, sizeof dir, "%s", path);
        slash = strrchr(dir, '/');
        if (slash)
            slash[slash == dir ? 1 : 0] = '\0';
    }
    if (access(slash ? dir : ".", W_OK | X_OK) != 0) {
        if (links)
            return rb_errf(err, errlen, RB_EIO, "%s %s: a symbolic link to %s, whose directory "
                           "does not exist or cannot be written", opt, out, path);
        return rb_errf(err, errlen, RB_EIO, "%s %s: its directory does not exist or cannot "
                       "be written", opt, out);
    }
    return RB_OK;
}

/* rb_cli_check_env: see rb_bench.h. */
int rb_cli_check_env(char *err, size_t errlen)
{
    const char *isa = getenv("ROPEBENCH_ISA");
    for (const char *p = isa; p && *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != ',')
            return rb_errf(err, errlen, RB_EINVAL, "ROPEBENCH_ISA='%s': not a kernel name "
                           "(ref, blas, avx512, avx512_bf16)", RB_ESC(isa));
    const char *hide = getenv("ROPEBENCH_TEST_CPU_HIDE"); /* tests only */
    size_t blen = 0;
    const size_t bad = rb_cpu_hide_check(hide, &blen);
    if (bad != (size_t)-1)
        return rb_errf(err, errlen, RB_EINVAL,
                       "ROPEBENCH_TEST_CPU_HIDE=%s: unknown feature '%.*s' (known: avx2, fma, "
                       "avx512f, avx512bw, avx512vl, avx512dq, avx512_bf16, os_zmm)",
                       RB_ESC(hide), (int)(blen < 40 ? blen : 40), hide + bad);
    static const char *const vars[] = {"ROPEBENCH_HUGEPAGES", "ROPEBENCH_PROBE_BALANCE",
                                       "ROPEBENCH_BF16_AMX"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return rb_errf(err, errlen, RB_EINVAL, "%s=%s: expected 0 (off) or 1 (on, the "
                           "default)", vars[i], RB_ESC(v));
    }
    return RB_OK;
}

/* rb_cli_thp_setting: see rb_bench.h. */
const char *rb_cli_thp_setting(void)
{
    static char text[128];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return NULL;
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* rb_cli_env_record: see rb_bench.h. */
void rb_cli_env_record(char *buf, size_t len)
{
    static const char *const vars[] = {"ROPEBENCH_ISA", "ROPEBENCH_HUGEPAGES",
                                       "ROPEBENCH_PROBE_BALANCE", "ROPEBENCH_BF16_AMX",
                                       "ROPEBENCH_TEST_CPU_HIDE",
                                       "ROPEBENCH_TEST_QUICK_PEAKS"};
    size_t o = 0;
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < sizeof vars / sizeof *vars && o < len; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        char esc[256];
        const int n = snprintf(buf + o, len - o, "%s%s=%s", o ? " " : "", vars[i],
                               rb_cli_esc(esc, sizeof esc, v));
        o += n > 0 ? (size_t)n : 0;
    }
}

/* rb_cli_parse_count: see rb_bench.h. */
int rb_cli_parse_count(const char *s, long long *v)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || isspace((unsigned char)*s)) {
        errno = EINVAL;
        return -1;
    }
    if (*end && strchr("kKmMgG", *end)) { /* either case, as docs/config.md says */
        const int u = toupper((unsigned char)*end);
        const long long m = u == 'M' ? 1LL << 20 : u == 'G' ? 1LL << 30 : 1LL << 10;
        if (x > LLONG_MAX / m || x < LLONG_MIN / m)
            errno = ERANGE; /* (or strtoll's own ERANGE already set) */
        else if (!errno)
            x *= m;
        end++;
    }
    if (errno || *end) {
        if (!errno)
            errno = EINVAL;
        return -1;
    }
    *v = x;
    return 0;
}

/* rb_cli_once: see rb_bench.h. */
int rb_cli_once(const char *cmd, const char *opt, const char **slot, const char *value)
{
    if (*slot) {
        fprintf(stderr, "ropebench: %s: %s given twice ('%.200s', then '%.200s')\n", cmd, opt,
                RB_ESC(*slot), RB_ESC(value));
        return 1;
    }
    *slot = value;
    return 0;
}

/* rb_cli_check_name: see rb_bench.h. */
int rb_cli_check_name(const char *opt, const char *name, char *err, size_t errlen)
{
    for (const char *p = name; p && *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
            return rb_errf(err, errlen, RB_EINVAL,
                           "%s '%s': a control character in the file name; use another "
                           "name", opt, RB_ESC(name));
    return RB_OK;
}

/* rb_cli_refusal: see rb_bench.h. */
const char *rb_cli_refusal(int kind)
{
    return kind == RB_CLI_NOT_HDF5       ? "not an HDF5 file"
           : kind == RB_CLI_FOREIGN_HDF5 ? "an HDF5 file that is not a ropebench results "
                                           "file (no format = \"ropebench\" attribute)"
           : kind == RB_CLI_OTHER_VERSION ? "a ropebench results file whose format_version "
                                            "is not 1, the one this build writes"
                                          : "";
}

/* rb_cli_same_file: see rb_bench.h. */
int rb_cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    const int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea || eb)
        return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[4096], db[4096], ra[4096], rb[4096];
    const char *na = strrchr(a, '/'), *nb = strrchr(b, '/');
    snprintf(da, sizeof da, "%.*s", na ? (int)(na - a) + 1 : 1, na ? a : ".");
    snprintf(db, sizeof db, "%.*s", nb ? (int)(nb - b) + 1 : 1, nb ? b : ".");
    return realpath(da, ra) && realpath(db, rb) && !strcmp(ra, rb) &&
           !strcmp(na ? na + 1 : a, nb ? nb + 1 : b);
}

/* rb_cli_results_file: see rb_bench.h. */
int rb_cli_results_file(const char *path, char *err, size_t errlen)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? RB_CLI_ABSENT
                               : rb_errf(err, errlen, RB_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return RB_CLI_NOT_HDF5;
    if (st.st_size == 0)
        return RB_CLI_EMPTY;
    FILE *f = fopen(path, "rb");
    if (!f)
        return rb_errf(err, errlen, RB_EIO, "%s: %s", path, strerror(errno));
    int hdf5 = 0;
    unsigned char b[8];
    for (long off = 0; off + 8 <= (long)st.st_size && !hdf5; off = off ? 2 * off : 512)
        hdf5 = fseek(f, off, SEEK_SET) == 0 && fread(b, 1, 8, f) == 8 && !memcmp(b, sig, 8);
    fclose(f);
    if (!hdf5)
        return RB_CLI_NOT_HDF5;
    char *fmt = NULL;
    const int rc = rb_results_peek_str(path, "format", &fmt, err, errlen);
    const int ours = rc == 1 && strcmp(fmt, "ropebench") == 0;
    free(fmt);
    if (rc < 0 || !ours)
        return rc < 0 ? rc : RB_CLI_FOREIGN_HDF5;
    /* a format this build does not write (a later ropebench's): not ours to change */
    int64_t ver = 0;
    const int vrc = rb_results_peek_i64(path, "format_version", &ver, err, errlen);
    return vrc < 0 ? vrc : vrc == 1 && ver == 1 ? RB_CLI_RESULTS : RB_CLI_OTHER_VERSION;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ropebench <command> [options]\n"
            "\n"
            "commands:\n"
            "  run      run a study under mpirun and write results.h5\n"
            "  report   write report.md and report.html from a results file\n"
            "  freqs    print the frequency table of one RoPE schedule\n"
            "  info     detected CPU features, kernel choice, topology, library versions\n"
            "  bench    microbenchmarks of the kernels as fractions of measured peaks\n"
            "\n"
            "'ropebench <command> --help' describes each command; --version prints the "
            "version.\n");
}

int main(int argc, char **argv)
{
    /* Threads come from OpenMP inside the kernels; OpenBLAS's own pool would only
     * spin beside them (the blas kernel asks for 1 thread per call anyway). Its
     * constructor has already started the pool (unless OPENBLAS_NUM_THREADS=1), whose
     * threads spin for ~0.1 s before they sleep: the first peaks and rows of a process
     * shared the cores with them (bench --quick's 2-thread FMA peak read 74 GFLOP/s
     * against 440), so the pool is stopped; one thread needs none. */
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_)
        blas_thread_shutdown_();
    /* a file-size limit fails the write (EFBIG), which every writer here reports,
     * instead of killing the process with SIGXFSZ; from the start, since MPI_Init
     * writes files of its own */
    signal(SIGXFSZ, SIG_IGN);
    rb_mpi_env_defaults(); /* before any subcommand's MPI_Init */
    if (argc < 2) {
        usage(stderr);
        return RB_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    int rc;
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("%s\n", rb_version_string());
        rc = 0;
    } else if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        rc = 0;
    } else if (!strcmp(cmd, "run"))
        rc = rb_cmd_run(argc - 1, argv + 1);
    else if (!strcmp(cmd, "report"))
        rc = rb_cmd_report(argc - 1, argv + 1);
    else if (!strcmp(cmd, "freqs"))
        rc = rb_cmd_freqs(argc - 1, argv + 1);
    else if (!strcmp(cmd, "info"))
        rc = rb_cmd_info(argc - 1, argv + 1);
    else if (!strcmp(cmd, "bench"))
        rc = rb_cmd_bench(argc - 1, argv + 1);
    else {
        fprintf(stderr, "ropebench: unknown command '%s' (commands: run, report, freqs, info, "
                        "bench)\n", RB_ESC(cmd));
        return RB_EXIT_USAGE;
    }
    /* what a command printed (bench's and freqs' tables, info, the paths written) must
     * have reached its reader: a full disk or a closed pipe is a failure, not exit 0 */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ropebench: %s: cannot write to standard output: %s\n", RB_ESC(cmd),
                errno ? strerror(errno) : "write error");
        return rc ? rc : RB_EXIT_FAIL;
    }
    return rc;
}
