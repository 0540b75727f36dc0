/* config.c — study configuration: the key table, INI parsing, --set overrides, typed validation with one-line errors, and the resolved INI text. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rb_bench.h"

/* Every key ropebench knows, with its default. The embedded default study is exactly
 * these defaults; docs/config.md documents each one. */
typedef struct {
    const char *section, *key, *def;
} rb_key;

static const rb_key RB_KEYS[] = {
    {"model", "head_dim", "128"},
    {"model", "rotary_dim", "auto"},
    {"model", "base", "10000"},
    {"model", "original_ctx", "4096"},
    {"model", "layout", "neox"},
    {"scaling", "methods", "none,pi,ntk,dynamic_ntk,yarn,llama3"},
    {"scaling", "factor", "8"},
    {"scaling", "beta_fast", "32"},
    {"scaling", "beta_slow", "1"},
    {"scaling", "truncate", "true"},
    {"scaling", "mscale", "unset"},
    {"scaling", "mscale_all_dim", "unset"},
    {"scaling", "attention_factor", "auto"},
    {"scaling", "low_freq_factor", "1"},
    {"scaling", "high_freq_factor", "4"},
    {"scaling", "short_factor", ""},
    {"scaling", "long_factor", ""},
    {"study", "seq_lens", "4096,8192,16384,32768,65536"},
    {"study", "probe_seq_lens", "1048576"},
    {"study", "modes", "full,probe"},
    {"study", "heads", "1"},
    {"study", "datasets", "gaussian,needle"},
    {"study", "seed", "20261129"},
    {"study", "probe_rows", "512"},
    {"study", "probe_positions", ""},
    {"study", "shard_layout", "zigzag"},
    {"study", "dtype", "fp32"},
    {"study", "threads", "auto"},
    {"study", "memory_limit_gib", "auto"},
    {"metrics", "enabled", "true"},
    {"metrics", "distance_bins", "48"},
    {"metrics", "position_bins", "32"},
    {"metrics", "precision_keys", "1024"},
    {"needle", "positions", "-2,-17,-129,-1025,-4001"},
    {"needle", "query_positions", "-1,-1,-1,-1,-1"},
    {"needle", "strength", "1.0"},
    {"spectral", "profile", "low"},
    {"spectral", "amplitudes", ""},
    {"spectral", "coherence", "1"},
    {"file", "path", ""},
};
#define RB_NKEYS ((int)(sizeof RB_KEYS / sizeof RB_KEYS[0]))

typedef struct {
    const char *file;
    char *val[RB_NKEYS];
    long line[RB_NKEYS]; /* the file line that set the key; 0: default; -1: --set */
    char *err;
    size_t errlen;
} rb_ini_ctx;

static int key_index(const char *section, const char *key)
{
    for (int i = 0; i < RB_NKEYS; i++)
        if (strcmp(RB_KEYS[i].section, section) == 0 && strcmp(RB_KEYS[i].key, key) == 0)
            return i;
    return -1;
}

static int section_known(const char *section)
{
    for (int i = 0; i < RB_NKEYS; i++)
        if (strcmp(RB_KEYS[i].section, section) == 0) return 1;
    return 0;
}

static int set_value(char **slot, const char *v)
{
    char *dup = strdup(v);
    if (!dup) return RB_ENOMEM;
    free(*slot);
    *slot = dup;
    return RB_OK;
}

#define ESC(s) rb_cli_esc((char[256]){""}, 256, (s))
/* a path, whole up to PATH_MAX (4095 bytes, a few escaped) */
#define ESC_PATH(s) rb_cli_esc((char[4400]){""}, 4400, (s))
/* its first 21 characters, then "..." when there are more (rb_cli_esc) */
#define ESC_HEAD(s) rb_cli_esc((char[25]){""}, 25, (s))

/* Whitespace, as the INI reader and --set trim it. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* Whether value v can be written into a study file and read back as it is (the
 * resolved study is stored as INI text, and the report's Regenerate runs it): no
 * control character but the tab, and no ';' at its start or after a blank, where the
 * reader would take it for a comment. 1 if so, else 0 with the reason in why[n]. */
static int value_storable(const char *v, char *why, size_t n)
{
    for (const char *p = v; *p; p++) {
        const unsigned char ch = (unsigned char)*p;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            snprintf(why, n, "a control character (\\x%02x), which a study file cannot hold",
                     ch);
            return 0;
        }
        if (ch == ';' && (p == v || isspace((unsigned char)p[-1]))) {
            snprintf(why, n, "';' %s, which a study file reads as the start of a comment",
                     p == v ? "first" : "after a blank");
            return 0;
        }
    }
    return 1;
}

/* One "key = value" of section sec at file line ln into the key table. */
static int ini_key(rb_ini_ctx *c, const char *sec, const char *name, const char *value,
                   long ln)
{
    int i = key_index(sec, name);
    if (i < 0) {
        if (!section_known(sec))
            return rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: unknown section [%s] (key %s)",
                           c->file, ln, ESC(sec), ESC(name));
        return rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: unknown key %s.%s", c->file, ln,
                       ESC(sec), ESC(name));
    }
    if (c->line[i] > 0)
        return rb_errf(c->err, c->errlen, RB_EINVAL,
                       "%s:%ld: key %s.%s given twice (first on line %ld)", c->file, ln, sec,
                       name, c->line[i]);
    c->line[i] = ln;
    if (set_value(&c->val[i], value) != RB_OK)
        return rb_errf(c->err, c->errlen, RB_ENOMEM, "out of memory reading %s", c->file);
    return RB_OK;
}

/* One line of f (with its '\n', if any) into *buf (grown as needed, *cap its size, always
 * terminated): its length; -1 at the end of the file, -2 for a line longer than max
 * bytes (a file with no line ends, such as /proc/self/pagemap, would otherwise be read
 * into memory whole), -3 if memory runs out. NUL bytes are kept (the caller checks). */
static long read_line(FILE *f, char **buf, size_t *cap, size_t max)
{
    size_t len = 0;
    int ch = EOF;
    while ((ch = getc(f)) != EOF) {
        /* max counts the line's text: its CR LF or LF may follow it */
        if (len >= max + (ch == '\n' || ch == '\r' ? 2 : 0))
            return -2;
        if (len + 2 > *cap) {
            const size_t nc = *cap ? 2 * *cap : 256;
            char *nb = realloc(*buf, nc);
            if (!nb)
                return -3;
            *buf = nb;
            *cap = nc;
        }
        (*buf)[len++] = (char)ch;
        if (ch == '\n')
            break;
    }
    if (len == 0)
        return -1;
    (*buf)[len] = '\0';
    return (long)len;
}

#define RB_CONFIG_LINE_MAX ((size_t)1 << 20)

/* Read an INI study file: "[section]" headers (known sections only) and "key = value"
 * (or "key: value") lines of up to RB_CONFIG_LINE_MAX bytes; comments are lines whose
 * first non-blank character is ';' or '#', the rest of a line from a ';' that follows a
 * blank, and anything after a section's ']' that starts with ';' or '#' (as libinih
 * read them); a UTF-8 byte order mark and LF or CR LF line ends are allowed (a CR
 * inside a line is refused). The first error, with its line, is the error. */
static int ini_read(rb_ini_ctx *c, FILE *f)
{
    char *buf = NULL, sec[128] = "";
    size_t cap = 0;
    long ln = 0;
    int rc = RB_OK;
    for (;;) {
        errno = 0;
        const long len = read_line(f, &buf, &cap, RB_CONFIG_LINE_MAX);
        if (ferror(f)) /* a failed read, not the end: before the line is parsed */
            break;
        if (len == -1)
            break;
        ln++;
        if (len < 0) {
            rc = len == -2 ? rb_errf(c->err, c->errlen, RB_EINVAL,
                                     "%s:%ld: a line longer than %zu KiB (not a study file?)",
                                     c->file, ln, RB_CONFIG_LINE_MAX >> 10)
                           : rb_errf(c->err, c->errlen, RB_ENOMEM, "%s: out of memory",
                                     c->file);
            goto cleanup;
        }
        if ((size_t)len != strlen(buf)) {
            rc = rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: NUL byte in the line",
                         c->file, ln);
            goto cleanup;
        }
        const char *cr = strchr(buf, '\r');
        if (cr && cr[1] != '\0' && cr[1] != '\n') {
            rc = rb_errf(c->err, c->errlen, RB_EINVAL,
                         "%s:%ld: a carriage return inside the line (CR line ends? the "
                         "reader takes LF or CR LF)", c->file, ln);
            goto cleanup;
        }
        char *t = buf;
        if (ln == 1 && (unsigned char)t[0] == 0xEF && (unsigned char)t[1] == 0xBB &&
            (unsigned char)t[2] == 0xBF)
            t += 3;
        t = trim(t);
        if (!*t || *t == ';' || *t == '#')
            continue;
        for (char *p = t + 1; *p; p++) /* an inline comment: ';' after a blank */
            if (*p == ';' && isspace((unsigned char)p[-1])) {
                *p = '\0';
                break;
            }
        t = trim(t);
        if (*t == '[') {
            char *e = strchr(t, ']');
            const char *after = e ? e + 1 : "";
            while (isspace((unsigned char)*after))
                after++;
            if (!e || (*after && *after != ';' && *after != '#')) {
                rc = rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: %s", c->file, ln,
                             !e ? "section header without its closing ']'"
                                : "text after the section header's ']' (not a comment)");
                goto cleanup;
            }
            *e = '\0';
            char *name = trim(t + 1);
            if (!*name || strlen(name) >= sizeof sec) {
                rc = rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: section name %s", c->file,
                             ln, *name ? "too long" : "empty");
                goto cleanup;
            }
            if (!section_known(name)) {
                rc = rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: unknown section [%s]",
                             c->file, ln, ESC(name));
                goto cleanup;
            }
            snprintf(sec, sizeof sec, "%s", name);
            continue;
        }
        char *eq = strpbrk(t, "=:");
        if (!eq) {
            rc = rb_errf(c->err, c->errlen, RB_EINVAL,
                         "%s:%ld: syntax error (expected [section] or key = value)", c->file,
                         ln);
            goto cleanup;
        }
        *eq = '\0';
        char *name = trim(t), *value = trim(eq + 1);
        if (!*name) {
            rc = rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: a value without a key",
                         c->file, ln);
            goto cleanup;
        }
        if (!*sec) {
            rc = rb_errf(c->err, c->errlen, RB_EINVAL,
                         "%s:%ld: key %s before any [section]", c->file, ln, ESC(name));
            goto cleanup;
        }
        char why[128];
        if (!value_storable(value, why, sizeof why)) {
            rc = rb_errf(c->err, c->errlen, RB_EINVAL, "%s:%ld: %s.%s = '%s' has %s",
                         c->file, ln, ESC(sec), ESC(name), ESC(value), why);
            goto cleanup;
        }
        if ((rc = ini_key(c, sec, name, value, ln)))
            goto cleanup;
    }
    if (ferror(f)) /* a failed read, not the end */
        rc = rb_errf(c->err, c->errlen, RB_EIO, "%s: cannot read config: %s", c->file,
                     strerror(errno ? errno : EIO));
cleanup:
    free(buf);
    return rc;
}

/* ---- typed parsing helpers: each names the key in its message ---------------------- */

/* Copy s into buf[n]; 0 if it did not fit (a value longer than any valid one). */
static int fits(char *buf, size_t n, const char *s)
{
    return snprintf(buf, n, "%s", s) < (int)n;
}

#define KEYNAME(i) RB_KEYS[i].section, RB_KEYS[i].key

/* A number's value as written (trimmed into buf[64]), for messages that compare it with
 * a bound or another key: %g would round 0.99999999999 onto 1 and contradict itself.
 * Only for values that parse_f64 took, which fit. */
static const char *written(char *buf, const char *s)
{
    return fits(buf, 64, s) ? trim(buf) : "?";
}
#define WRITTEN(s) written((char[64]){""}, (s))

/* The shortest sequence the metrics take: rb_metrics_bins needs a distance >= 1. */
#define RB_METRICS_MIN_LEN 2

/* The largest model.original_ctx (2^26): the phase-distance metric's cost is linear in it. */
#define RB_ORIGINAL_CTX_MAX ((int64_t)1 << 26)

static int parse_i64(const char *s, int i, int64_t lo, int64_t hi, int64_t *out,
                     char *err, size_t errlen)
{
    char buf[64];
    if (!fits(buf, sizeof buf, s))
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = '%s': not an integer (too long)",
                       KEYNAME(i), ESC_HEAD(s));
    char *t = trim(buf);
    long long v = 0;
    if (rb_cli_parse_count(t, &v) != 0)
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = '%s': %s", KEYNAME(i), ESC(s),
                       errno == ERANGE ? "outside the range of a 64-bit integer"
                                       : "not an integer");
    if (v < lo || v > hi)
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = %lld: must be in [%lld, %lld]",
                       KEYNAME(i), v, (long long)lo, (long long)hi);
    *out = v;
    return RB_OK;
}

static int parse_f64(const char *s, int i, double lo, double hi, double *out, char *err,
                     size_t errlen)
{
    char buf[64];
    if (!fits(buf, sizeof buf, s))
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = '%s': not a number (too long)",
                       KEYNAME(i), ESC_HEAD(s));
    char *t = trim(buf), *end = NULL;
    /* strtod reads hexadecimal ("0x10" is 16); integer keys do not, nor do the docs */
    const char *digits = t + (*t == '+' || *t == '-');
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = '%s': not a decimal number "
                       "(hexadecimal is not accepted)", KEYNAME(i), ESC(s));
    errno = 0;
    double v = strtod(t, &end);
    if (*t && end && !*end && errno == ERANGE && isfinite(v) && v != 0.0)
        errno = 0; /* a subnormal (1e-310): a double all the same, for the range below */
    if (*t && end && !*end && errno == ERANGE)
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = '%s': outside the range of a double "
                       "(overflow or underflow)", KEYNAME(i), ESC(s));
    if (!*t || !end || *end || errno || !isfinite(v))
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = '%s': not a finite number",
                       KEYNAME(i), ESC(s));
    if (v < lo || v > hi) /* the value as written: %g could round it onto the bound */
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s = %s: must be in [%.10g, %.10g]",
                       KEYNAME(i), t, lo, hi);
    *out = v;
    return RB_OK;
}

static int parse_bool(const char *s, int i, int *out, char *err, size_t errlen)
{
    char buf[16];
    if (!fits(buf, sizeof buf, s))
        return rb_errf(err, errlen, RB_EINVAL,
                       "%s.%s = '%s': not a boolean (true|false|yes|no|on|off|1|0)",
                       KEYNAME(i), ESC_HEAD(s));
    char *t = trim(buf);
    for (char *p = t; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (!strcmp(t, "true") || !strcmp(t, "yes") || !strcmp(t, "on") || !strcmp(t, "1"))
        *out = 1;
    else if (!strcmp(t, "false") || !strcmp(t, "no") || !strcmp(t, "off") ||
             !strcmp(t, "0"))
        *out = 0;
    else
        return rb_errf(err, errlen, RB_EINVAL,
                       "%s.%s = '%s': not a boolean (true|false|yes|no|on|off|1|0)",
                       KEYNAME(i), ESC(s));
    return RB_OK;
}

/* Split a comma-separated list into trimmed items (modifies buf). Empty list: 0. */
static int split_list(char *buf, char **items, int max, int i, char *err, size_t errlen)
{
    int n = 0;
    char *t = trim(buf);
    if (!*t) return 0;
    for (char *p = t;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        char *item = trim(p);
        if (!*item)
            return rb_errf(err, errlen, RB_EINVAL, "%s.%s: empty item in list", KEYNAME(i));
        if (n == max)
            return rb_errf(err, errlen, RB_EINVAL, "%s.%s: more than %d items", KEYNAME(i),
                           max);
        items[n++] = item;
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

/* Parse a comma-separated list of numbers into out (elements of `size` bytes), each
 * item by `one` (parse_i64 or parse_f64 with the range lo..hi): one split, one error
 * path for both element types. */
typedef int (*parse_one_fn)(const char *s, int i, const void *lo, const void *hi,
                            void *out, char *err, size_t errlen);

static int one_i64(const char *s, int i, const void *lo, const void *hi, void *out,
                   char *err, size_t errlen)
{
    return parse_i64(s, i, *(const int64_t *)lo, *(const int64_t *)hi, out, err, errlen);
}

static int one_f64(const char *s, int i, const void *lo, const void *hi, void *out,
                   char *err, size_t errlen)
{
    return parse_f64(s, i, *(const double *)lo, *(const double *)hi, out, err, errlen);
}

static int parse_list(const char *s, int i, parse_one_fn one, const void *lo,
                      const void *hi, void *out, size_t size, int max, int *n_out,
                      char *err, size_t errlen)
{
    char *buf = strdup(s), *items[RB_MAX_LIST * 4];
    int rc = RB_ENOMEM;
    if (!buf) goto cleanup;
    int n = split_list(buf, items, max, i, err, errlen);
    if (n < 0) { rc = n; goto cleanup; }
    for (int k = 0; k < n; k++) {
        rc = one(items[k], i, lo, hi, (char *)out + (size_t)k * size, err, errlen);
        if (rc) goto cleanup;
    }
    *n_out = n;
    rc = RB_OK;
cleanup:
    free(buf);
    return rc;
}

static int parse_i64_list(const char *s, int i, int64_t lo, int64_t hi, int64_t *out,
                          int max, int *n_out, char *err, size_t errlen)
{
    return parse_list(s, i, one_i64, &lo, &hi, out, sizeof *out, max, n_out, err, errlen);
}

static int parse_f64_list(const char *s, int i, double lo, double hi, double *out,
                          int max, int *n_out, char *err, size_t errlen)
{
    return parse_list(s, i, one_f64, &lo, &hi, out, sizeof *out, max, n_out, err, errlen);
}

/* Parse a list of names with parse_fn into out[] (duplicates rejected). */
static int parse_name_list(const char *s, int i, int (*parse_fn)(const char *),
                           const char *choices, int *out, int max, int *n_out, char *err,
                           size_t errlen)
{
    char *buf = strdup(s), *items[RB_MAX_LIST];
    int rc = RB_ENOMEM;
    if (!buf) goto cleanup;
    int n = split_list(buf, items, max < RB_MAX_LIST ? max : RB_MAX_LIST, i, err, errlen);
    if (n < 0) { rc = n; goto cleanup; }
    if (n == 0) {
        rc = rb_errf(err, errlen, RB_EINVAL, "%s.%s: empty list (choose from %s)",
                     KEYNAME(i), choices);
        goto cleanup;
    }
    for (int k = 0; k < n; k++) {
        int v = parse_fn(items[k]);
        if (v < 0) {
            rc = rb_errf(err, errlen, RB_EINVAL, "%s.%s: unknown value '%s' (choose from %s)",
                         KEYNAME(i), ESC(items[k]), choices);
            goto cleanup;
        }
        for (int j = 0; j < k; j++)
            if (out[j] == v) {
                rc = rb_errf(err, errlen, RB_EINVAL, "%s.%s: '%s' listed twice", KEYNAME(i),
                             ESC(items[k]));
                goto cleanup;
            }
        out[k] = v;
    }
    *n_out = n;
    rc = RB_OK;
cleanup:
    free(buf);
    return rc;
}

static int mode_parse(const char *s)
{
    return !strcmp(s, "full") ? RB_MODE_FULL : !strcmp(s, "probe") ? RB_MODE_PROBE : -1;
}
static int layout_parse(const char *s)
{
    return !strcmp(s, "neox") ? RB_LAYOUT_NEOX : !strcmp(s, "gptj") ? RB_LAYOUT_GPTJ : -1;
}

/* "auto"/"unset" or a number in [lo, hi]; *out = dflt for the keyword. */
static int parse_f64_or(const char *s, int i, const char *word, double dflt, double lo,
                        double hi, double *out, char *err, size_t errlen)
{
    char buf[64];
    if (fits(buf, sizeof buf, s) && !strcmp(trim(buf), word)) {
        *out = dflt;
        return RB_OK;
    }
    return parse_f64(s, i, lo, hi, out, err, errlen);
}

/* one attention factor: "auto" (stored as 0) or a number in [lo, hi] */
static int one_af(const char *s, int i, const void *lo, const void *hi, void *out,
                  char *err, size_t errlen)
{
    return parse_f64_or(s, i, "auto", 0, *(const double *)lo, *(const double *)hi, out, err,
                        errlen);
}

/* scaling.attention_factor: 1..RB_MAX_AF values, each "auto" or a number in
 * [1e-6, 1e6], none twice; then the method entries: every method once, and the methods
 * whose schedule takes the factor (yarn, longrope) once per value, in list order
 * (c->methods holds the methods as parsed and is rewritten here). */
static int parse_af_list(const char *s, int i, rb_config *c, char *err, size_t errlen)
{
    const double lo = 1e-6, hi = 1e6;
    int n = 0, rc = parse_list(s, i, one_af, &lo, &hi, c->attention_factors, sizeof(double),
                               RB_MAX_AF, &n, err, errlen);
    if (rc) return rc;
    if (n == 0)
        return rb_errf(err, errlen, RB_EINVAL, "%s.%s: empty list (auto or a number)",
                       KEYNAME(i));
    for (int k = 0; k < n; k++)
        for (int j = 0; j < k; j++) {
            char a[32];
            snprintf(a, sizeof a, "%s", rb_config_af_label(c->attention_factors[j]));
            if (c->attention_factors[j] == c->attention_factors[k])
                return rb_errf(err, errlen, RB_EINVAL, "%s.%s: '%s' listed twice",
                               KEYNAME(i), a);
            /* the label names the case: two factors must not share one */
            if (!strcmp(a, rb_config_af_label(c->attention_factors[k])))
                return rb_errf(err, errlen, RB_EINVAL,
                               "%s.%s: %.9g and %.9g both name their cases -af%s; give "
                               "factors that differ in the first 6 digits",
                               KEYNAME(i), c->attention_factors[j],
                               c->attention_factors[k], a);
        }
    c->n_attention_factors = n;
    c->attention_factor = c->attention_factors[0];
    rb_rope_method m[RB_ROPE_COUNT];
    const int nm = c->n_methods;
    memcpy(m, c->methods, (size_t)nm * sizeof *m);
    c->n_methods = 0;
    for (int k = 0; k < nm; k++) {
        const int uses = m[k] == RB_ROPE_YARN || m[k] == RB_ROPE_LONGROPE;
        for (int a = 0; a < (uses ? n : 1); a++) {
            c->methods[c->n_methods] = m[k];
            c->method_af[c->n_methods++] = c->attention_factors[a];
        }
    }
    return RB_OK;
}

/* rb_config_af_label: see rb_bench.h. */
const char *rb_config_af_label(double af)
{
    static _Thread_local char buf[32];
    if (af <= 0) return "auto";
    snprintf(buf, sizeof buf, "%g", af);
    return buf;
}

/* rb_config_entry_suffix: see rb_bench.h. */
void rb_config_entry_suffix(const rb_config *c, int mi, char *buf, size_t len)
{
    const rb_rope_method m = c->methods[mi];
    if (c->n_attention_factors > 1 && (m == RB_ROPE_YARN || m == RB_ROPE_LONGROPE))
        snprintf(buf, len, "-af%s", rb_config_af_label(c->method_af[mi]));
    else if (len)
        buf[0] = '\0';
}

/* ---- the typed config from the string table --------------------------------------- */

static int convert(rb_config *c, char **v, char *err, size_t errlen)
{
    int rc, n, tmp[RB_MAX_LIST];
    int64_t x;
#define K(sec, key) key_index(sec, key)
#define V(sec, key) v[K(sec, key)]
    /* [model] */
    if ((rc = parse_i64(V("model", "head_dim"), K("model", "head_dim"), 2, 512, &x, err,
                        errlen)))
        return rc;
    if (x % 2)
        return rb_errf(err, errlen, RB_EINVAL, "model.head_dim = %lld: must be even",
                       (long long)x);
    c->head_dim = (int)x;
    {
        char b[32];
        if (fits(b, sizeof b, V("model", "rotary_dim")) && !strcmp(trim(b), "auto"))
            x = c->head_dim;
        else if ((rc = parse_i64(V("model", "rotary_dim"), K("model", "rotary_dim"), 2,
                                 c->head_dim, &x, err, errlen))) {
            /* the bound is another key's value: say whose */
            if (strstr(err, ": must be in [") && strlen(err) + 40 < errlen)
                snprintf(err + strlen(err), errlen - strlen(err), " (%d = model.head_dim)",
                         c->head_dim);
            return rc;
        }
        if (x % 2)
            return rb_errf(err, errlen, RB_EINVAL, "model.rotary_dim = %lld: must be even",
                           (long long)x);
        c->rotary_dim = (int)x;
    }
    if ((rc = parse_f64(V("model", "base"), K("model", "base"), 1.0000001, 1e12, &c->base,
                        err, errlen)))
        return rc;
    /* the phase-distance metric (metric 2) scans every trained position per distance:
     * its cost grows linearly with L0 (about 5 s per case at 2^27) */
    if ((rc = parse_i64(V("model", "original_ctx"), K("model", "original_ctx"), INT64_MIN,
                        INT64_MAX, &c->original_ctx, err, errlen)))
        return rc;
    if (c->original_ctx > RB_ORIGINAL_CTX_MAX)
        return rb_errf(err, errlen, RB_EINVAL,
                       "model.original_ctx = %lld: above %lld, the largest supported (the "
                       "phase-distance metric's cost grows with it)",
                       (long long)c->original_ctx, (long long)RB_ORIGINAL_CTX_MAX);
    if (c->original_ctx < 2)
        return rb_errf(err, errlen, RB_EINVAL, "model.original_ctx = %lld: must be in [2, %lld]",
                       (long long)c->original_ctx, (long long)RB_ORIGINAL_CTX_MAX);
    if ((rc = parse_name_list(V("model", "layout"), K("model", "layout"), layout_parse,
                              "neox, gptj", tmp, 1, &n, err, errlen)))
        return rc;
    c->layout = (rb_rope_layout)tmp[0];

    /* [scaling] */
    if ((rc = parse_name_list(V("scaling", "methods"), K("scaling", "methods"),
                              rb_rope_method_parse,
                              "none, pi, ntk, dynamic_ntk, yarn, llama3, longrope", tmp,
                              RB_ROPE_COUNT, &c->n_methods, err, errlen)))
        return rc;
    for (int k = 0; k < c->n_methods; k++) c->methods[k] = (rb_rope_method)tmp[k];
    if ((rc = parse_f64(V("scaling", "factor"), K("scaling", "factor"), -1e300, 1e300,
                        &c->factor, err, errlen)))
        return rc;
    if (c->factor < 1)
        return rb_errf(err, errlen, RB_EINVAL,
                       "scaling.factor = %s: must be >= 1 (a context-extension factor)",
                       WRITTEN(V("scaling", "factor")));
    if (c->factor > 1e6)
        return rb_errf(err, errlen, RB_EINVAL, "scaling.factor = %s: must be <= 1e6",
                       WRITTEN(V("scaling", "factor")));
    if ((rc = parse_f64(V("scaling", "beta_fast"), K("scaling", "beta_fast"), 1e-9, 1e9,
                        &c->beta_fast, err, errlen)) ||
        (rc = parse_f64(V("scaling", "beta_slow"), K("scaling", "beta_slow"), 1e-9, 1e9,
                        &c->beta_slow, err, errlen)))
        return rc;
    if (c->beta_fast <= c->beta_slow)
        return rb_errf(err, errlen, RB_EINVAL,
                       "scaling.beta_fast = %s: must be greater than scaling.beta_slow = %s",
                       WRITTEN(V("scaling", "beta_fast")), WRITTEN(V("scaling", "beta_slow")));
    if ((rc = parse_bool(V("scaling", "truncate"), K("scaling", "truncate"), &c->truncate,
                         err, errlen)))
        return rc;
    if ((rc = parse_f64_or(V("scaling", "mscale"), K("scaling", "mscale"), "unset", 0,
                           1e-9, 1e6, &c->mscale, err, errlen)) ||
        (rc = parse_f64_or(V("scaling", "mscale_all_dim"), K("scaling", "mscale_all_dim"),
                           "unset", 0, 1e-9, 1e6, &c->mscale_all_dim, err, errlen)) ||
        (rc = parse_af_list(V("scaling", "attention_factor"), K("scaling", "attention_factor"),
                            c, err, errlen)))
        return rc;
    if ((rc = parse_f64(V("scaling", "low_freq_factor"), K("scaling", "low_freq_factor"),
                        1e-9, 1e9, &c->low_freq_factor, err, errlen)) ||
        (rc = parse_f64(V("scaling", "high_freq_factor"), K("scaling", "high_freq_factor"),
                        1e-9, 1e9, &c->high_freq_factor, err, errlen)))
        return rc;
    if (c->high_freq_factor <= c->low_freq_factor)
        return rb_errf(err, errlen, RB_EINVAL,
                       "scaling.high_freq_factor = %s: must be greater than "
                       "scaling.low_freq_factor = %s",
                       WRITTEN(V("scaling", "high_freq_factor")),
                       WRITTEN(V("scaling", "low_freq_factor")));
    if ((rc = parse_f64_list(V("scaling", "short_factor"), K("scaling", "short_factor"),
                             1e-9, 1e9, c->short_factor, RB_MAX_LIST * 4,
                             &c->n_short_factor, err, errlen)) ||
        (rc = parse_f64_list(V("scaling", "long_factor"), K("scaling", "long_factor"), 1e-9,
                             1e9, c->long_factor, RB_MAX_LIST * 4, &c->n_long_factor, err,
                             errlen)))
        return rc;
    for (int k = 0; k < c->n_methods; k++) {
        if (c->methods[k] != RB_ROPE_LONGROPE) continue;
        int want = c->rotary_dim / 2;
        if (c->n_short_factor != want)
            return rb_errf(err, errlen, RB_EINVAL,
                           "scaling.short_factor: longrope needs %d values (rotary_dim/2), "
                           "got %d",
                           want, c->n_short_factor);
        if (c->n_long_factor != want)
            return rb_errf(err, errlen, RB_EINVAL,
                           "scaling.long_factor: longrope needs %d values (rotary_dim/2), "
                           "got %d",
                           want, c->n_long_factor);
    }

    /* [study] */
    if ((rc = parse_i64_list(V("study", "seq_lens"), K("study", "seq_lens"), 1,
                             (int64_t)1 << 40, c->full_lens, RB_MAX_LIST, &c->n_full_lens,
                             err, errlen)) ||
        (rc = parse_i64_list(V("study", "probe_seq_lens"), K("study", "probe_seq_lens"), 1,
                             (int64_t)1 << 40, c->probe_lens, RB_MAX_LIST, &c->n_probe_lens,
                             err, errlen)))
        return rc;
    /* a length twice would give two cases of one name, the second overwriting the first */
    for (int w = 0; w < 2; w++) {
        const int64_t *l = w ? c->probe_lens : c->full_lens;
        const int nl = w ? c->n_probe_lens : c->n_full_lens;
        for (int a = 0; a < nl; a++)
            for (int b = 0; b < a; b++)
                if (l[a] == l[b])
                    return rb_errf(err, errlen, RB_EINVAL, "study.%s: %lld listed twice",
                                   w ? "probe_seq_lens" : "seq_lens", (long long)l[a]);
    }
    if ((rc = parse_name_list(V("study", "modes"), K("study", "modes"), mode_parse,
                              "full, probe", tmp, 2, &n, err, errlen)))
        return rc;
    c->modes[0] = c->modes[1] = 0;
    for (int k = 0; k < n; k++) c->modes[tmp[k]] = 1;
    int probe_from_full = 0; /* probe_lens copied from seq_lens: errors name that key */
    c->probe_from_full = 0;
    if (c->modes[RB_MODE_PROBE] && c->n_probe_lens == 0) {
        /* no probe_seq_lens: probe the same lengths as full mode */
        memcpy(c->probe_lens, c->full_lens, sizeof c->full_lens);
        c->n_probe_lens = c->n_full_lens;
        probe_from_full = c->probe_from_full = 1;
    }
    if (c->modes[RB_MODE_FULL] && c->n_full_lens == 0)
        return rb_errf(err, errlen, RB_EINVAL,
                       "study.seq_lens: empty, but study.modes includes full");
    if (c->modes[RB_MODE_PROBE] && c->n_probe_lens == 0)
        return rb_errf(err, errlen, RB_EINVAL,
                       "study.probe_seq_lens and study.seq_lens: both empty, but study.modes "
                       "includes probe");
    if ((rc = parse_i64(V("study", "heads"), K("study", "heads"), 1, 4096, &x, err,
                        errlen)))
        return rc;
    c->heads = (int)x;
    if ((rc = parse_name_list(V("study", "datasets"), K("study", "datasets"),
                              rb_dataset_kind_parse, "gaussian, needle, spectral, file",
                              tmp, RB_DATA_COUNT,
                              &c->n_datasets, err, errlen)))
        return rc;
    for (int k = 0; k < c->n_datasets; k++) c->datasets[k] = (rb_dataset_kind)tmp[k];
    if ((rc = parse_i64(V("study", "seed"), K("study", "seed"), 0, INT64_MAX, &x, err,
                        errlen)))
        return rc;
    c->seed = (uint64_t)x;
    if ((rc = parse_i64(V("study", "probe_rows"), K("study", "probe_rows"), 1, 65536, &x,
                        err, errlen)))
        return rc;
    c->probe_rows = (int)x;
    if ((rc = parse_i64_list(V("study", "probe_positions"), K("study", "probe_positions"),
                             -((int64_t)1 << 40), (int64_t)1 << 40, c->probe_positions,
                             RB_MAX_LIST, &c->n_probe_positions, err, errlen)))
        return rc;
    if ((rc = parse_name_list(V("study", "shard_layout"), K("study", "shard_layout"),
                              rb_shard_layout_parse, "contiguous, zigzag, striped", tmp, 1,
                              &n, err, errlen)))
        return rc;
    c->shard_layout = (rb_shard_layout)tmp[0];
    {
        char b[32];
        const int ok = fits(b, sizeof b, V("study", "dtype"));
        char *t = trim(b);
        if (!ok || (strcmp(t, "fp32") && strcmp(t, "bf16")))
            return rb_errf(err, errlen, RB_EINVAL,
                           "study.dtype = '%s': unknown (choose from fp32, bf16)",
                           ok ? ESC(t) : ESC(V("study", "dtype")));
        snprintf(c->dtype, sizeof c->dtype, "%s", t);
    }
    {
        char b[32];
        if (fits(b, sizeof b, V("study", "threads")) && !strcmp(trim(b), "auto")) x = 0;
        else if ((rc = parse_i64(V("study", "threads"), K("study", "threads"), 1, 1024, &x,
                                 err, errlen)))
            return rc;
        c->threads = (int)x;
    }
    if ((rc = parse_f64_or(V("study", "memory_limit_gib"), K("study", "memory_limit_gib"),
                           "auto", 0, 1e-3, 1e9, &c->memory_limit_gib, err, errlen)))
        return rc;

    /* [metrics] */
    if ((rc = parse_bool(V("metrics", "enabled"), K("metrics", "enabled"), &c->metrics_enabled,
                         err, errlen)))
        return rc;
    if ((rc = parse_i64(V("metrics", "distance_bins"), K("metrics", "distance_bins"), 2, 1024,
                        &x, err, errlen)))
        return rc;
    c->metrics_distance_bins = (int)x;
    if ((rc = parse_i64(V("metrics", "position_bins"), K("metrics", "position_bins"), 2, 1024,
                        &x, err, errlen)))
        return rc;
    c->metrics_position_bins = (int)x;
    if ((rc = parse_i64(V("metrics", "precision_keys"), K("metrics", "precision_keys"), 0,
                        1 << 20, &x, err, errlen)))
        return rc;
    c->metrics_precision_keys = (int)x;
    /* the metrics' distance and position bins (rb_metrics_bins) need L >= 2: a shorter
     * case would fail only once the run has replaced its results file */
    for (int w = 0; c->metrics_enabled && w < 2; w++) {
        const int64_t *l = w ? c->probe_lens : c->full_lens;
        const int nl = !c->modes[w ? RB_MODE_PROBE : RB_MODE_FULL] ? 0
                       : w ? c->n_probe_lens : c->n_full_lens;
        for (int k = 0; k < nl; k++)
            if (l[k] < RB_METRICS_MIN_LEN)
                return rb_errf(err, errlen, RB_EINVAL,
                               "study.%s: seq_len %lld is too short for the metrics (at "
                               "least %d tokens, or metrics.enabled = false)",
                               w && !probe_from_full ? "probe_seq_lens" : "seq_lens",
                               (long long)l[k], RB_METRICS_MIN_LEN);
    }

    /* [needle] */
    int nq = 0;
    if ((rc = parse_i64_list(V("needle", "positions"), K("needle", "positions"),
                             -((int64_t)1 << 40), (int64_t)1 << 40, c->needle_positions,
                             RB_NEEDLE_MAX, &c->n_needles, err, errlen)) ||
        (rc = parse_i64_list(V("needle", "query_positions"), K("needle", "query_positions"),
                             -((int64_t)1 << 40), (int64_t)1 << 40, c->needle_queries,
                             RB_NEEDLE_MAX, &nq, err, errlen)))
        return rc;
    if (nq != c->n_needles)
        return rb_errf(err, errlen, RB_EINVAL,
                       "needle.query_positions: %d entries, but needle.positions has %d (one "
                       "query per needle)",
                       nq, c->n_needles);
    if ((rc = parse_f64(V("needle", "strength"), K("needle", "strength"), -1e6, 1e6,
                        &c->needle_strength, err, errlen)))
        return rc;
    if (c->needle_strength == 0.0) /* (-0 too) */
        return rb_errf(err, errlen, RB_EINVAL, "needle.strength = 0: a needle of strength 0 "
                       "is an all-zero key, which no query can find; give a nonzero scale");
    /* the key is strength x a float query, rounded to float: below ~1e-38 it is all 0
     * (or subnormal), the key the check above refuses */
    if (fabs(c->needle_strength) < 1e-30)
        return rb_errf(err, errlen, RB_EINVAL,
                       "needle.strength = %s: below 1e-30 in magnitude the planted key "
                       "vanishes in float (an all-zero key, which no query can find)",
                       rb_cli_shortest((char[32]){""}, 32, c->needle_strength));
    for (int k = 0; k < c->n_datasets; k++)
        if (c->datasets[k] == RB_DATA_NEEDLE && c->n_needles == 0)
            return rb_errf(err, errlen, RB_EINVAL,
                           "needle.positions: empty, but study.datasets includes needle");

    /* [spectral] */
    if ((rc = parse_name_list(V("spectral", "profile"), K("spectral", "profile"),
                              rb_spectral_profile_parse, "flat, low, high, list", tmp, 1, &n,
                              err, errlen)))
        return rc;
    c->spectral_profile = (rb_spectral_profile)tmp[0];
    if ((rc = parse_f64_list(V("spectral", "amplitudes"), K("spectral", "amplitudes"), 0,
                             1e6, c->spectral_amplitudes, RB_SPECTRAL_MAX_PAIRS,
                             &c->n_spectral_amplitudes, err, errlen)))
        return rc;
    if ((rc = parse_f64(V("spectral", "coherence"), K("spectral", "coherence"), 0, 1,
                        &c->spectral_coherence, err, errlen)))
        return rc;
    if (c->spectral_profile == RB_SPECTRAL_LIST) {
        double e = 0;
        for (int k = 0; k < c->n_spectral_amplitudes; k++) {
            const double a = c->spectral_amplitudes[k];
            /* q and k are float: an amplitude below ~1e-45 makes them 0 (the run then
             * fails on its first case), and squares below ~1e-162 summed to "all 0" */
            if (a != 0 && a < 1e-30)
                return rb_errf(err, errlen, RB_EINVAL,
                               "spectral.amplitudes: %s is neither 0 nor at least 1e-30 "
                               "(smaller amplitudes vanish in float q and k)",
                               rb_cli_shortest((char[32]){""}, 32, a));
            e += a * a;
        }
        if (c->n_spectral_amplitudes != c->rotary_dim / 2)
            return rb_errf(err, errlen, RB_EINVAL,
                           "spectral.amplitudes: profile list needs %d values "
                           "(rotary_dim/2), got %d",
                           c->rotary_dim / 2, c->n_spectral_amplitudes);
        if (e == 0)
            return rb_errf(err, errlen, RB_EINVAL, "spectral.amplitudes: all values are 0");
    } else if (c->n_spectral_amplitudes > 0) {
        /* they would be read by nothing: the profile makes the amplitudes */
        return rb_errf(err, errlen, RB_EINVAL,
                       "spectral.amplitudes: given, but spectral.profile = %s makes its own "
                       "(the list is used with profile = list only)",
                       rb_spectral_profile_name(c->spectral_profile));
    }

    /* [file]: the path must name a readable file; its contents are checked (collective
     * HDF5 open) once the ranks are up */
    {
        char *pth = trim(V("file", "path"));
        int uses_file = 0;
        for (int k = 0; k < c->n_datasets; k++) uses_file |= c->datasets[k] == RB_DATA_FILE;
        if (c->load_flags & RB_CONFIG_SCHEDULE_ONLY)
            uses_file = 0; /* read by no one: the path is kept, as given */
        if (strlen(pth) >= sizeof c->file_path)
            return rb_errf(err, errlen, RB_EINVAL, "file.path: longer than %zu characters",
                           sizeof c->file_path - 1);
        snprintf(c->file_path, sizeof c->file_path, "%s", pth);
        struct stat st;
        if (uses_file && !*pth)
            return rb_errf(err, errlen, RB_EINVAL,
                           "file.path: empty, but study.datasets includes file");
        if (uses_file && (stat(pth, &st) != 0 || access(pth, R_OK) != 0))
            return rb_errf(err, errlen, RB_EIO, "file.path = '%s': cannot read: %s",
                           ESC_PATH(pth), strerror(errno));
        if (uses_file && !S_ISREG(st.st_mode))
            return rb_errf(err, errlen, RB_EIO, "file.path = '%s': not a regular file",
                           ESC_PATH(pth));
    }
#undef K
#undef V
    /* every schedule the study will build, built once now: a combination the method
     * cannot take (ntk with rotary_dim 2, ...) stops the study before any work */
    for (int mi = 0; mi < c->n_methods && !(c->load_flags & RB_CONFIG_SCHEDULE_ONLY); mi++)
        for (int w = 0; w < 2; w++) {
            const int64_t *l = w ? c->probe_lens : c->full_lens;
            const int nl = !c->modes[w ? RB_MODE_PROBE : RB_MODE_FULL] ? 0
                           : w ? c->n_probe_lens : c->n_full_lens;
            for (int k = 0; k < nl; k++) {
                rb_rope_params pp;
                rb_rope_info info;
                double inv[256];
                char why[256];
                rb_config_rope_params(c, c->methods[mi], l[k], &pp);
                pp.attention_factor = c->method_af[mi];
                if (c->rotary_dim / 2 > (int)(sizeof inv / sizeof inv[0]))
                    break;
                if (rb_rope_schedule(&pp, inv, &info, why, sizeof why) != RB_OK)
                    return rb_errf(err, errlen, RB_EINVAL, "scaling.methods: %s at seq_len "
                                   "%lld: %s", rb_rope_method_name(c->methods[mi]),
                                   (long long)l[k], why);
            }
        }
    return RB_OK;
}

/* Resolved INI text: every key with its final value, section by section. */
static char *render_text(char **v)
{
    size_t cap = 4096, len = 0;
    for (int i = 0; i < RB_NKEYS; i++) cap += strlen(v[i]) + 64;
    char *s = malloc(cap);
    if (!s) return NULL;
    len += (size_t)snprintf(s + len, cap - len, "# ropebench resolved study\n");
    const char *sec = "";
    for (int i = 0; i < RB_NKEYS; i++) {
        if (strcmp(sec, RB_KEYS[i].section)) {
            sec = RB_KEYS[i].section;
            len += (size_t)snprintf(s + len, cap - len, "[%s]\n", sec);
        }
        len += (size_t)snprintf(s + len, cap - len, "%s = %s\n", RB_KEYS[i].key, v[i]);
    }
    return s;
}

/* One "section.key = value" line of a rendered study: name and value, value with the
 * blanks around commas and at its ends dropped (so "none, pi" equals "none,pi"). */
typedef struct {
    char name[96];
    char *value;
} text_kv;

/* The vlen characters at v into out (room for vlen + 1): blanks at the ends and around
 * commas dropped, other runs of blanks kept. */
static void norm_value(const char *v, size_t vlen, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < vlen; i++) {
        if (v[i] == ' ' || v[i] == '\t') { /* a run of blanks: kept only between words */
            size_t j = i;
            while (j < vlen && (v[j] == ' ' || v[j] == '\t')) j++;
            if (o == 0 || j == vlen || v[j] == ',' || out[o - 1] == ',') {
                i = j - 1;
                continue;
            }
        }
        out[o++] = v[i];
    }
    out[o] = 0;
}

static int text_parse(const char *text, text_kv **out, int *n)
{
    *out = NULL;
    *n = 0;
    int cap = 0;
    char sec[64] = "";
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        const size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *eq = NULL;
        for (const char *c = l; c + 3 <= l + len && !eq; c++)
            if (!strncmp(c, " = ", 3)) eq = c;
        const char *next = e ? e + 1 : NULL;
        if (l[0] == '[') {
            const char *rb = memchr(l, ']', len);
            snprintf(sec, sizeof sec, "%.*s", (int)(rb ? rb - l - 1 : 0), l + 1);
            l = next;
            continue;
        }
        if (l[0] == '#' || !eq) {
            l = next;
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            text_kv *t = realloc(*out, (size_t)cap * sizeof *t);
            if (!t) return RB_ENOMEM;
            *out = t;
        }
        text_kv *kv = &(*out)[*n];
        snprintf(kv->name, sizeof kv->name, "%.31s.%.*s", sec, (int)(eq - l < 63 ? eq - l : 63), l);
        const char *v = eq + 3;
        const size_t vlen = len - (size_t)(v - l);
        if (!(kv->value = malloc(vlen + 1))) return RB_ENOMEM;
        (*n)++;
        l = next;
        norm_value(v, vlen, kv->value);
    }
    return RB_OK;
}

static void text_free(text_kv *kv, int n)
{
    for (int i = 0; i < n; i++) free(kv[i].value);
    free(kv);
}

/* rb_config_text_differs: see rb_bench.h. */
int rb_config_text_differs(const char *file_text, const char *now_text, char *msg, size_t msglen)
{
    static const char *ignored[] = {"study.threads", "study.memory_limit_gib"};
    text_kv *a = NULL, *b = NULL;
    int na = 0, nb = 0, rc = 0;
    if (text_parse(file_text, &a, &na) != RB_OK || text_parse(now_text, &b, &nb) != RB_OK) {
        snprintf(msg, msglen, "out of memory comparing the studies");
        rc = 1;
        goto cleanup;
    }
    for (int pass = 0; pass < 2 && !rc; pass++) {
        const text_kv *x = pass ? a : b, *y = pass ? b : a;
        const int nx = pass ? na : nb, ny = pass ? nb : na;
        for (int i = 0; i < nx && !rc; i++) {
            int skip = 0;
            for (size_t k = 0; k < sizeof ignored / sizeof *ignored; k++)
                skip |= !strcmp(x[i].name, ignored[k]);
            if (skip) continue;
            int j = 0;
            while (j < ny && strcmp(y[j].name, x[i].name)) j++;
            if (j == ny) {
                snprintf(msg, msglen, "%s is %s", x[i].name,
                         pass ? "in the file's study only" : "not in the file's study");
                rc = 1;
            } else if (!pass && strcmp(x[i].value, y[j].value)) {
                snprintf(msg, msglen, "%s is '%s' in the file, '%s' now", x[i].name,
                         y[j].value, x[i].value);
                rc = 1;
            }
        }
    }
cleanup:
    text_free(a, na);
    text_free(b, nb);
    return rc;
}

/* Open the study file for reading: a regular file only (a FIFO would block the
 * open or the read, a device such as /dev/zero never ends), opened without blocking
 * and checked on the descriptor before anything is read. */
/* Whether the study's value of key i is its default (as values compare for --resume). */
static int at_default(char **v, int i, int *is_default)
{
    const size_t a = strlen(v[i]), b = strlen(RB_KEYS[i].def);
    char *x = malloc(a + 1), *y = malloc(b + 1);
    if (!x || !y) {
        free(x);
        free(y);
        return RB_ENOMEM;
    }
    norm_value(v[i], a, x);
    norm_value(RB_KEYS[i].def, b, y);
    *is_default = strcmp(x, y) == 0;
    free(x);
    free(y);
    return RB_OK;
}

/* The keys a study sets but never reads, into c->notes (see rb_bench.h): for each group
 * of keys that one switch of the study turns on, the ones whose value is not the
 * default while that switch is off. */
static int unused_notes(rb_config *c, char **v, char *err, size_t errlen)
{
    int has[RB_ROPE_COUNT] = {0}, ds[RB_DATA_COUNT] = {0}, scaled = 0;
    for (int k = 0; k < c->n_methods; k++) {
        has[c->methods[k]] = 1;
        scaled |= c->methods[k] != RB_ROPE_NONE;
    }
    for (int k = 0; k < c->n_datasets; k++) ds[c->datasets[k]] = 1;
    /* mscale and mscale_all_dim make yarn's automatic attention factor only together */
    int yarn_auto = 0;
    for (int k = 0; k < c->n_methods; k++)
        yarn_auto |= c->methods[k] == RB_ROPE_YARN && c->method_af[k] <= 0;
    const char *mscale_why = !has[RB_ROPE_YARN] ? "yarn is not in scaling.methods"
                             : !yarn_auto
                                 ? "every yarn entry has its scaling.attention_factor"
                                 : "yarn reads mscale and mscale_all_dim only together, as "
                                   "Hugging Face does";
    /* probe mode without probe_seq_lens probes the seq_lens */
    int probe_own = 0;
    for (const char *t = v[key_index("study", "probe_seq_lens")]; *t; t++)
        probe_own |= !isspace((unsigned char)*t);
    const struct {
        int used;
        const char *keys[6]; /* section.key */
        const char *why;
    } groups[] = {
        {scaled, {"scaling.factor"}, "scaling.methods lists only none"},
        {has[RB_ROPE_YARN], {"scaling.beta_fast", "scaling.beta_slow", "scaling.truncate"},
         "yarn is not in scaling.methods"},
        {yarn_auto && c->mscale > 0 && c->mscale_all_dim > 0,
         {"scaling.mscale", "scaling.mscale_all_dim"}, mscale_why},
        {has[RB_ROPE_YARN] || has[RB_ROPE_LONGROPE], {"scaling.attention_factor"},
         "neither yarn nor longrope is in scaling.methods"},
        {has[RB_ROPE_LLAMA3], {"scaling.low_freq_factor", "scaling.high_freq_factor"},
         "llama3 is not in scaling.methods"},
        {has[RB_ROPE_LONGROPE], {"scaling.short_factor", "scaling.long_factor"},
         "longrope is not in scaling.methods"},
        {c->modes[RB_MODE_PROBE],
         {"study.probe_seq_lens", "study.probe_rows", "study.probe_positions"},
         "probe is not in study.modes"},
        {c->modes[RB_MODE_FULL] || (c->modes[RB_MODE_PROBE] && !probe_own),
         {"study.seq_lens"}, "full is not in study.modes and probe has its probe_seq_lens"},
        {c->metrics_enabled,
         {"metrics.distance_bins", "metrics.position_bins", "metrics.precision_keys"},
         "metrics.enabled is false"},
        {ds[RB_DATA_NEEDLE],
         {"needle.positions", "needle.query_positions", "needle.strength"},
         "needle is not in study.datasets"},
        {ds[RB_DATA_SPECTRAL],
         {"spectral.profile", "spectral.amplitudes", "spectral.coherence"},
         "spectral is not in study.datasets"},
        {ds[RB_DATA_FILE], {"file.path"}, "file is not in study.datasets"},
    };
    c->n_notes = 0;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        if (groups[g].used) continue;
        char names[256] = "";
        int n = 0;
        for (int k = 0; k < 6 && groups[g].keys[k]; k++) {
            const char *dot = strchr(groups[g].keys[k], '.');
            char sec[32];
            snprintf(sec, sizeof sec, "%.*s", (int)(dot - groups[g].keys[k]),
                     groups[g].keys[k]);
            const int i = key_index(sec, dot + 1);
            int dflt = 1;
            if (i < 0 || at_default(v, i, &dflt) != RB_OK)
                return rb_errf(err, errlen, RB_ENOMEM, "out of memory");
            if (dflt) continue;
            const size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", n ? ", " : "",
                     groups[g].keys[k]);
            n++;
        }
        _Static_assert(sizeof c->notes / sizeof *c->notes >= sizeof groups / sizeof *groups + 1,
                       "a note for every group, and the yarn range's");
        if (n)
            snprintf(c->notes[c->n_notes++], sizeof c->notes[0],
                     "note: %s %s set but this study does not use %s (%s)", names,
                     n > 1 ? "are" : "is", n > 1 ? "them" : "it", groups[g].why);
    }
    /* YaRN with original_ctx below 2*pi*beta_slow: the correction range comes out empty
     * (high < low after Hugging Face's clamp), every pair keeps its base frequency and
     * only the attention factor acts, which a study of YaRN rarely means */
    if (has[RB_ROPE_YARN]) {
        rb_rope_params p;
        rb_rope_info info;
        double inv[RB_MAX_LIST * 4];
        char e2[256];
        double base_inv[RB_MAX_LIST * 4];
        rb_rope_info binfo;
        rb_rope_params pb;
        rb_config_rope_params(c, RB_ROPE_YARN, c->original_ctx, &p);
        rb_config_rope_params(c, RB_ROPE_NONE, c->original_ctx, &pb);
        int untouched = c->rotary_dim / 2 <= (int)(sizeof inv / sizeof *inv) &&
                        rb_rope_schedule(&p, inv, &info, e2, sizeof e2) == RB_OK &&
                        rb_rope_schedule(&pb, base_inv, &binfo, e2, sizeof e2) == RB_OK &&
                        info.corr_high < info.corr_low && c->factor > 1;
        for (int j = 0; untouched && j < c->rotary_dim / 2; j++)
            untouched = inv[j] == base_inv[j];
        if (untouched)
            snprintf(c->notes[c->n_notes++], sizeof c->notes[0],
                     "note: yarn's correction range [%.6g, %.6g] is empty at original_ctx "
                     "%lld with beta_slow %g (below 2*pi*beta_slow): no pair is "
                     "interpolated, only the attention factor acts (as in Hugging Face)",
                     info.corr_low + 0.0, info.corr_high + 0.0, (long long)c->original_ctx,
                     c->beta_slow);
    }
    return RB_OK;
}

/* locate: an error about the study, prefixed with where in the study file the value it
 * is about was set: the key the message starts with, when the file set it; else the
 * first key the message names that the file set (a rule between two keys, "beta_fast =
 * 32: must be greater than beta_slow = 40", starts with the one left at its default).
 * line[i]: key i's line in `file` (0: default, -1: --set). Nothing without such a key,
 * nor when the key the message is about (its first) was given by --set: the line of
 * another key it names as a bound would read as the place of the error (a rotary_dim
 * from --set was reported at head_dim's line). */
static void locate(const char *file, const long *line, char *err, size_t errlen, int rc)
{
    int best = -1, first = -1;
    size_t blen = 0, bat = SIZE_MAX, fat = SIZE_MAX, flen = 0;
    for (int i = 0; err && file && i < RB_NKEYS; i++) {
        char kn[96];
        size_t n = (size_t)snprintf(kn, sizeof kn, "%s.%s", RB_KEYS[i].section,
                                    RB_KEYS[i].key);
        for (const char *at = strstr(err, kn); at; at = strstr(at + 1, kn)) {
            const size_t pos = (size_t)(at - err);
            if (!strchr(" :=,)", at[n]) || (pos && at[-1] != ' ' && at[-1] != '('))
                continue; /* a longer key's name, or inside a word */
            if (pos < fat || (pos == fat && n > flen)) {
                first = i;
                flen = n;
                fat = pos;
            }
            if (line[i] > 0 && (pos < bat || (pos == bat && n > blen))) {
                best = i;
                blen = n;
                bat = pos;
            }
            break;
        }
    }
    if (best >= 0 && !(first >= 0 && line[first] < 0)) {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s", err);
        rb_errf(err, errlen, rc, "%s:%ld: %s", file, line[best], tmp);
    }
}

static int open_config(const char *path, const char *shown, FILE **out, char *err,
                       size_t errlen)
{
    if (!*path)
        return rb_errf(err, errlen, RB_EINVAL, "-c: empty file name");
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return rb_errf(err, errlen, RB_EIO, "%s: cannot open config: %s", shown,
                       strerror(errno));
    struct stat st;
    int rc = RB_OK;
    if (fstat(fd, &st) != 0)
        rc = rb_errf(err, errlen, RB_EIO, "%s: cannot read config: %s", shown, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = rb_errf(err, errlen, RB_EINVAL, "%s: cannot read config: is a directory", shown);
    else if (!S_ISREG(st.st_mode))
        rc = rb_errf(err, errlen, RB_EINVAL, "-c %s: not a regular file", shown);
    else {
        const int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 || !(*out = fdopen(fd, "r")))
            rc = rb_errf(err, errlen, RB_EIO, "%s: cannot read config: %s", shown,
                         strerror(errno));
    }
    if (rc) close(fd);
    return rc;
}

int rb_config_load(rb_config *cfg, const char *path, char *const *sets, int n_sets,
                   char *err, size_t errlen)
{
    return rb_config_load_ex(cfg, path, sets, n_sets, 0, err, errlen);
}

/* rb_config_load_ex: see rb_bench.h. */
int rb_config_load_ex(rb_config *cfg, const char *path, char *const *sets, int n_sets,
                      unsigned flags, char *err, size_t errlen)
{
    rb_ini_ctx ctx;
    int rc = RB_OK;
    memset(cfg, 0, sizeof *cfg);
    cfg->load_flags = flags;
    memset(&ctx, 0, sizeof ctx);
    ctx.err = err;
    ctx.errlen = errlen;
    for (int i = 0; i < RB_NKEYS; i++)
        if ((rc = set_value(&ctx.val[i], RB_KEYS[i].def))) goto cleanup;

    char shown[1024] = ""; /* the file name as messages show it */
    if (path) {
        ctx.file = rb_cli_esc(shown, sizeof shown, path);
        FILE *f = NULL;
        if ((rc = open_config(path, shown, &f, err, errlen))) goto cleanup;
        rc = ini_read(&ctx, f);
        fclose(f);
        if (rc) goto cleanup;
    }

    for (int s = 0; s < n_sets; s++) {
        const char *a = sets[s], *eq = strchr(a, '='), *dot = strchr(a, '.');
        if (!eq || !dot || dot > eq) {
            rc = rb_errf(err, errlen, RB_EINVAL,
                         "--set '%s': expected section.key=value", ESC(a));
            goto cleanup;
        }
        /* a name that does not fit is no key (cutting it to fit made
         * "model.head_dim<60 blanks>junk" read as model.head_dim) */
        char sec[64], key[64];
        const int sl = snprintf(sec, sizeof sec, "%.*s", (int)(dot - a), a);
        const int kl = snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
        int i = sl < (int)sizeof sec && kl < (int)sizeof key ? key_index(trim(sec), trim(key))
                                                               : -1;
        if (i < 0 && (sl >= (int)sizeof sec || kl >= (int)sizeof key)) {
            rc = rb_errf(err, errlen, RB_EINVAL,
                         "--set '%s': unknown key (name too long)", ESC_HEAD(a));
            goto cleanup;
        }
        if (i < 0) {
            rc = rb_errf(err, errlen, RB_EINVAL, "--set %s.%s: unknown key", ESC(sec),
                         ESC(key));
            goto cleanup;
        }
        char *val = strdup(eq + 1);
        if (!val) {
            rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory");
            goto cleanup;
        }
        char why[128];
        const char *tv = trim(val);
        if (!value_storable(tv, why, sizeof why)) {
            rc = rb_errf(err, errlen, RB_EINVAL, "--set %s.%s: value '%s' has %s", ESC(sec),
                         ESC(key), ESC(tv), why);
            free(val);
            goto cleanup;
        }
        rc = set_value(&ctx.val[i], tv);
        free(val);
        if (rc) goto cleanup;
        ctx.line[i] = -1;
    }

    if ((rc = convert(cfg, ctx.val, err, errlen))) {
        locate(ctx.file, ctx.line, err, errlen, rc);
        goto cleanup;
    }
    cfg->text = render_text(ctx.val);
    if (path)
        snprintf(cfg->src_file, sizeof cfg->src_file, "%s", ctx.file);
    _Static_assert(RB_NKEYS <= (int)(sizeof cfg->key_line / sizeof *cfg->key_line),
                   "a line for every key");
    memcpy(cfg->key_line, ctx.line, sizeof ctx.line);
    if (!cfg->text) rc = rb_errf(err, errlen, RB_ENOMEM, "out of memory");
    else rc = unused_notes(cfg, ctx.val, err, errlen);
cleanup:
    for (int i = 0; i < RB_NKEYS; i++) free(ctx.val[i]);
    if (rc) rb_config_free(cfg);
    return rc;
}

void rb_config_free(rb_config *cfg)
{
    if (!cfg) return;
    free(cfg->text);
    cfg->text = NULL;
}

void rb_config_rope_params(const rb_config *c, rb_rope_method m, int64_t L,
                           rb_rope_params *p)
{
    memset(p, 0, sizeof *p);
    p->method = m;
    p->rotary_dim = c->rotary_dim;
    p->base = c->base;
    p->factor = c->factor;
    p->original_ctx = c->original_ctx;
    p->seq_len = L;
    p->beta_fast = c->beta_fast;
    p->beta_slow = c->beta_slow;
    p->truncate = c->truncate;
    p->mscale = c->mscale;
    p->mscale_all_dim = c->mscale_all_dim;
    p->attention_factor = c->attention_factor;
    p->low_freq_factor = c->low_freq_factor;
    p->high_freq_factor = c->high_freq_factor;
    p->short_factor = c->n_short_factor ? c->short_factor : NULL;
    p->long_factor = c->n_long_factor ? c->long_factor : NULL;
}

/* Probe rows of a case: at most probe_rows log-spaced + user positions + needles. */
static int64_t max_probe_rows(const rb_config *c)
{
    return c->probe_rows + c->n_probe_positions + c->n_needles;
}

double rb_config_case_bytes(const rb_config *c, rb_mode mode, int64_t L, int nranks)
{
    double d = c->head_dim, n = (double)L / nranks, H = c->heads, st = (d + 3) * 8;
    /* bf16: the kernel's row mode packs K and V to bf16, k padded to 32 dims and v to 64
     * (kernels/avx512/attn_bf16.c) */
    const double bf16_pack = strcmp(c->dtype, "bf16") == 0
                                 ? n * (2 * 32 * ceil(d / 32) + 2 * 64 * ceil(d / 64))
                                 : 0;
    if (mode == RB_MODE_FULL) {
        return H * 3 * n * d * 4     /* pre-RoPE q, k, v of every head */
               + 2 * n * d * 4       /* rotated q, k of one head */
               + 2 * (2 * n * d * 4 + n * 8) /* ring buffers: k, v, positions */
               + 2 * n * st          /* row state + step state */
               + n * 8 * 2           /* score scratch of the tile kernel */
               + H * n * (16 + d * 4) /* lse, entropy, outputs */
               + bf16_pack;
    }
    double P = (double)max_probe_rows(c);
    double bytes = H * 2 * n * d * 4 + n * d * 4 + H * P * d * 4 * 2 + 2 * P * st + n * 8 * 2 +
                   H * P * 16 + bf16_pack;
    /* the AVX-512 key-outer order's scratch (kernels/avx512/attn_fp32.c): per thread the
     * fp32 state and one block's scores of every row and a double state (~P (d + 64 + 2d
     * + 24) * 4 bytes), and with 2+ threads at most the tail double states that
     * ko_tail_pieces allows there (8 a thread, at most 64, and 32 MiB; an upper bound,
     * since it also caps them by the call's key blocks) */
    const double Tk = c->threads > 0 ? c->threads : (double)rb_kernels_threads();
    bytes += (Tk > 0 ? Tk : 1) * P * ((d + 64 + 32) * 4 + st);
    if (Tk > 1)
        bytes += fmin(fmin(8 * Tk, 64) * P * st, 33554432.0);
    if (c->metrics_enabled) {
        /* the accumulators' per-thread scratch (kernels/ref/metrics_probe.c): each
         * row's run and weighted key sums kept across blocks while P * rot <= 4M, and
         * two double layouts of a 16-key block */
        const double rot = c->rotary_dim,
                     T = c->threads > 0 ? c->threads : (double)rb_kernels_threads();
        bytes += (T > 0 ? T : 1) * ((P * rot <= 4194304.0 ? P * rot * 8 + P * 128 : 0) +
                                    2 * 16 * d * 8);
        /* metric 7's key sample: its rows copied (4d + 8 bytes), then the exact and
         * fp32-phase rotations, errors and pair norms of each (16d + 8 rot) */
        const double keys = c->metrics_precision_keys < L ? c->metrics_precision_keys
                                                          : (double)L;
        bytes += ceil(keys / nranks) * (20 * d + 8 + 8 * rot);
    }
    return bytes;
}

/* Resolve a position given as "negative = from the end" against L. */
static int64_t resolve_pos(int64_t p, int64_t L) { return p < 0 ? L + p : p; }

/* rb_config_host_available_bytes: see rb_bench.h. */
double rb_config_host_available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    double kib = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
        fclose(f);
    }
    if (kib > 0) return kib * 1024.0;
    return (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

static int check_ranks(const rb_config *c, int nranks, int ranks_per_host, char *err,
                       size_t errlen);

/* rb_config_check_ranks: see rb_bench.h. */
int rb_config_check_ranks(const rb_config *c, int nranks, int ranks_per_host, char *err,
                          size_t errlen)
{
    const int rc = check_ranks(c, nranks, ranks_per_host, err, errlen);
    if (rc != RB_OK && c->src_file[0])
        locate(c->src_file, c->key_line, err, errlen, rc);
    return rc;
}

static int check_ranks(const rb_config *c, int nranks, int ranks_per_host, char *err,
                       size_t errlen)
{
    double limit = c->memory_limit_gib > 0 ? c->memory_limit_gib * 1073741824.0
                                           : 0.9 * rb_config_host_available_bytes();
    for (int mode = 0; mode < 2; mode++) {
        if (!c->modes[mode]) continue;
        int nl = mode == RB_MODE_FULL ? c->n_full_lens : c->n_probe_lens;
        const int64_t *lens = mode == RB_MODE_FULL ? c->full_lens : c->probe_lens;
        const char *key = mode == RB_MODE_FULL || c->probe_from_full ? "study.seq_lens"
                                                                     : "study.probe_seq_lens";
        for (int k = 0; k < nl; k++) {
            int64_t L = lens[k];
            char why[256];
            if (rb_shard_check(c->shard_layout, L, nranks, why, sizeof why))
                return rb_errf(err, errlen, RB_EINVAL, "%s: %s", key, why);
            for (int j = 0; j < c->n_probe_positions && mode == RB_MODE_PROBE; j++) {
                int64_t p = resolve_pos(c->probe_positions[j], L);
                if (p < 0 || p >= L)
                    return rb_errf(err, errlen, RB_EINVAL,
                                   "study.probe_positions: %lld is outside a sequence of "
                                   "%lld tokens",
                                   (long long)c->probe_positions[j], (long long)L);
            }
            for (int di = 0; di < c->n_datasets; di++) {
                if (c->datasets[di] != RB_DATA_NEEDLE) continue;
                for (int j = 0; j < c->n_needles; j++) {
                    int64_t kp = resolve_pos(c->needle_positions[j], L);
                    int64_t qp = resolve_pos(c->needle_queries[j], L);
                    if (kp < 0 || kp >= L)
                        return rb_errf(err, errlen, RB_EINVAL,
                                       "needle.positions: needle %d at %lld is outside a "
                                       "sequence of %lld tokens",
                                       j, (long long)c->needle_positions[j], (long long)L);
                    if (qp < 0 || qp >= L)
                        return rb_errf(err, errlen, RB_EINVAL,
                                       "needle.query_positions: needle %d's query at %lld is "
                                       "outside a sequence of %lld tokens",
                                       j, (long long)c->needle_queries[j], (long long)L);
                    if (kp > qp)
                        return rb_errf(err, errlen, RB_EINVAL,
                                       "needle.positions: needle %d at %lld comes after its "
                                       "query at %lld (causal: the query cannot see it)",
                                       j, (long long)kp, (long long)qp);
                    /* a key holds one needle: the dataset plants the later one there, and
                     * the earlier would be scored as a miss against a key it never had */
                    for (int i = 0; i < j; i++)
                        if (resolve_pos(c->needle_positions[i], L) == kp)
                            return rb_errf(err, errlen, RB_EINVAL,
                                           "needle.positions: needles %d and %d are both at "
                                           "key position %lld of %lld tokens (a key holds "
                                           "one needle)",
                                           i, j, (long long)kp, (long long)L);
                }
            }
            double need = rb_config_case_bytes(c, (rb_mode)mode, L, nranks) * ranks_per_host;
            if (need > limit)
                return rb_errf(err, errlen, RB_EINVAL,
                               "%s: %lld tokens in %s mode need %.6g GiB on this host "
                               "(%d rank%s here), more than the %.6g GiB limit "
                               "(study.memory_limit_gib)",
                               key, (long long)L, mode == RB_MODE_FULL ? "full" : "probe",
                               need / 1073741824.0, ranks_per_host,
                               ranks_per_host == 1 ? "" : "s", limit / 1073741824.0);
        }
    }
    return RB_OK;
}
