/* report_compare.c — rb_report_compare: compare.md and a self-contained compare.html setting several results files side by side (machines, runs, study, throughput, results, a scaling model across rank counts, bench rows and their probe breakdowns). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_kernels.h"
#include "rb_reports.h"
#include "report_int.h"

/* A file's label in the tables: A, B, C, ... (RB_COMPARE_MAX files at most). */
static void label(char *b, size_t n, size_t i) { snprintf(b, n, "%c", (char)('A' + i)); }

/* lower_bound: the first i in [0, n) whose key_at(ctx, i) is not below key in strcmp
 * order (n if none), the keys being in that order: the binary search of both the case
 * and the /bench row lookups. */
static size_t lower_bound(size_t n, const char *key,
                          const char *(*key_at)(const void *, size_t), const void *ctx)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (strcmp(key_at(ctx, mid), key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const char *case_name_at(const void *f, size_t i)
{
    return ((const rp_file *)f)->cases[i].name;
}

/* The case of file f named name, in whatever state (NULL if none): a binary search
 * where the cases are in name order, as files list them (every section looks up every
 * case in every file: a linear scan made two files of 20,000 cases take 24 s). */
static const rp_case *case_named(const rp_file *f, const char *name)
{
    size_t i = 0;
    if (f->cases_sorted) {
        i = lower_bound(f->ncases, name, case_name_at, f);
    } else {
        while (i < f->ncases && strcmp(f->cases[i].name, name))
            i++;
    }
    return i < f->ncases && !strcmp(f->cases[i].name, name) ? &f->cases[i] : NULL;
}

/* The case of file f named name, when complete and readable (else NULL). */
static const rp_case *find_case(const rp_file *f, const char *name)
{
    const rp_case *c = case_named(f, name);
    return c && c->complete && !c->problem ? c : NULL;
}

static void heading(FILE *o, int html, const char *h)
{
    fprintf(o, html ? "<h2>%s</h2>\n" : "\n## %s\n\n", h);
}

/* A paragraph of our own text (no escaping needed). */
static void para(FILE *o, int html, const char *text)
{
    fprintf(o, html ? "<p>%s</p>\n" : "%s\n\n", text);
}

/* The header of a per-file table: `first`, then for each file "<label> <what[j]>" for
 * its nw columns, those with skip_a[j] left out for A (a ratio to itself); into cols
 * (names holds the text). Returns the column count. */
static int file_cols(const char **cols, char (*names)[48], size_t n, const char *first,
                     const char *const *what, const int *skip_a, int nw)
{
    int nc = 0;
    cols[nc++] = first;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < nw; j++) {
            if (i == 0 && skip_a[j])
                continue;
            snprintf(names[nc], sizeof names[0], "%c %s", (char)('A' + i), what[j]);
            cols[nc] = names[nc];
            nc++;
        }
    return nc;
}

/* Case k of file A, when every file holds it complete: 1 and cs[i] each file's; else 0. */
static int common_case(const rp_file *fs, size_t n, size_t k, const rp_case **cs)
{
    cs[0] = find_case(&fs[0], fs[0].cases[k].name);
    for (size_t i = 1; i < n && cs[0]; i++)
        if (!(cs[i] = find_case(&fs[i], cs[0]->name)))
            return 0;
    return cs[0] != NULL;
}

/* How many cases of file A every file holds complete. */
static size_t common_cases(const rp_file *fs, size_t n)
{
    const rp_case *cs[RB_COMPARE_MAX];
    size_t m = 0;
    for (size_t k = 0; k < fs[0].ncases; k++)
        m += (size_t)common_case(fs, n, k, cs);
    return m;
}

/* The files and their runs: one row per property, one column per file. */
static void write_runs(FILE *o, const rp_file *fs, size_t n, int html)
{
    heading(o, html, "Files and runs");
    const char *cols[1 + RB_COMPARE_MAX];
    char labels[RB_COMPARE_MAX][8];
    cols[0] = "";
    for (size_t i = 0; i < n; i++) {
        label(labels[i], sizeof labels[i], i);
        cols[1 + i] = labels[i];
    }
    rp_table_head(o, html, cols, (int)n + 1);
    /* battr: the /bench attribute for a file that has no study run (bench -o alone) */
    static const struct {
        const char *row, *attr;
        int prov;
        const char *battr;
    } props[] = {
        {"results file", NULL, 0, NULL},
        {"CPU", "cpu_model", 1, "cpu_model"},
        {"host (rank 0)", "hostname", 1, NULL},
        {"ranks", "nranks", 0, NULL},
        {"threads per rank", "threads_per_rank", 0, "threads_all"},
        {"kernel", "kernel", 0, NULL},
        {"dtype", "dtype", 0, NULL},
        {"ropebench", "ropebench_version", 0, "ropebench_version"},
        {"git", "git_describe", 0, NULL},
        {"compiler", "compiler", 1, NULL},
        {"MPI", "mpi_version", 1, NULL},
        {"huge pages", "hugepages", 1, "hugepages"},
        {"switches set", "environment", 1, "environment"},
        {"created (UTC)", "created_utc", 0, NULL},
    };
    for (size_t p = 0; p < sizeof props / sizeof *props; p++) {
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, props[p].row);
        for (size_t i = 0; i < n; i++) {
            const char *v = !props[p].attr ? fs[i].path
                            : rp_attr_get(props[p].prov ? &fs[i].prov : &fs[i].root,
                                          props[p].attr);
            if (!v && props[p].battr && fs[i].bench.t.n > 0)
                v = rp_attr_get(&fs[i].bench.attrs, props[p].battr);
            rp_cell_text(o, html, v ? v : "n/a");
        }
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    fprintf(o, html ? "<tr>" : "|");
    rp_cell_text(o, html, "SHA-256");
    for (size_t i = 0; i < n; i++)
        rp_cell_text(o, html, fs[i].sha256[0] ? fs[i].sha256 : "n/a");
    fprintf(o, html ? "</tr>\n" : "\n");
    static const char *const peaks[2] = {"FMA peak, GFLOP/s (sum over ranks)",
                                         "triad, GB/s (sum over ranks)"};
    static const char *const bench_peaks[2] = {"peak_gflops_all", "triad_gbps_all"};
    for (int p = 0; p < 2; p++) {
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, peaks[p]);
        for (size_t i = 0; i < n; i++) {
            const double v = p ? fs[i].triad_gbps : fs[i].peak_gflops;
            const char *bv = fs[i].bench.t.n > 0 ? rp_attr_get(&fs[i].bench.attrs,
                                                               bench_peaks[p]) : NULL;
            if (isnan(v) && bv) { /* no study run: the bench's own, all threads */
                char b[96];
                snprintf(b, sizeof b, "%.1f (bench, all threads)", strtod(bv, NULL));
                rp_cell_text(o, html, b);
            } else {
                rp_cell_num(o, html, v, "%.1f");
            }
        }
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    /* whether the /bench rows are --quick ones, whose fractions mean nothing */
    fprintf(o, html ? "<tr>" : "|");
    rp_cell_text(o, html, "bench rows");
    for (size_t i = 0; i < n; i++) {
        const char *q = fs[i].bench.t.n > 0 ? rp_attr_get(&fs[i].bench.attrs, "quick") : NULL;
        rp_cell_text(o, html, fs[i].bench.t.n == 0 ? "none"
                              : q && !strcmp(q, "1") ? "--quick (fractions mean nothing)"
                                                      : "full");
    }
    fprintf(o, html ? "</tr>\n" : "\n");
    if (html)
        fprintf(o, "</table>\n");
}

/* One "section.key = value" line of a stored study, or 0 (a header, comment or blank:
 * *sec follows the headers). */
static int study_line(const char *l, size_t len, char *sec, size_t seclen, char *key,
                      size_t keylen, const char **val, size_t *vlen)
{
    if (len && l[0] == '[') {
        const char *e = memchr(l, ']', len);
        snprintf(sec, seclen, "%.*s", (int)(e ? e - l - 1 : 0), l + 1);
        return 0;
    }
    const char *eq = NULL;
    for (const char *c = l; c + 3 <= l + len && !eq; c++)
        if (!strncmp(c, " = ", 3))
            eq = c;
    if (!len || l[0] == '#' || !eq)
        return 0;
    snprintf(key, keylen, "%s.%.*s", sec, (int)(eq - l), l);
    *val = eq + 3;
    *vlen = len - (size_t)(eq + 3 - l);
    return 1;
}

/* The value of key in a stored study text, as --resume compares values: blanks at the
 * ends and around commas dropped ("none, pi" is "none,pi"); a new string (free it),
 * or NULL if the text has no such key (or memory ran out). */
static char *study_value(const char *text, const char *key)
{
    char sec[64] = "", k[160];
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        const size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *v;
        size_t vl;
        if (study_line(l, len, sec, sizeof sec, k, sizeof k, &v, &vl) && !strcmp(k, key)) {
            char *out = malloc(vl + 1);
            size_t o = 0;
            for (size_t i = 0; out && i < vl; i++) {
                if (v[i] == ' ' || v[i] == '\t') { /* a run of blanks: kept between words */
                    size_t j = i;
                    while (j < vl && (v[j] == ' ' || v[j] == '\t'))
                        j++;
                    if (o == 0 || j == vl || v[j] == ',' || out[o - 1] == ',') {
                        i = j - 1;
                        continue;
                    }
                }
                out[o++] = v[i];
            }
            if (out)
                out[o] = '\0';
            return out;
        }
        l = e ? e + 1 : NULL;
    }
    return NULL;
}

/* The studies: whether the stored configurations agree, and if not, the keys whose
 * values differ (from file A's keys, then keys only the others have), compared as
 * --resume compares them. The note above the table says which two keys change how
 * cases run rather than what they compute. */
static void write_study(FILE *o, const rp_file *fs, size_t n, int html)
{
    heading(o, html, "Study");
    const char *ta = rp_attr_get(&fs[0].root, "config_text");
    int differ = 0, missing = 0;
    for (size_t i = 0; i < n; i++)
        missing |= !rp_attr_get(&fs[i].root, "config_text");
    if (missing) {
        para(o, html, "Not every file stores its configuration (root attribute config_text), "
                      "so the studies cannot be compared key by key.");
        return;
    }
    /* every key of every file, once, in order of first appearance */
    const char *cols[2 + RB_COMPARE_MAX];
    char labels[RB_COMPARE_MAX][8];
    cols[0] = "key";
    for (size_t i = 0; i < n; i++) {
        label(labels[i], sizeof labels[i], i);
        cols[1 + i] = labels[i];
    }
    char seen[8192] = "\n";
    for (size_t f = 0; f < n; f++) {
        const char *text = rp_attr_get(&fs[f].root, "config_text");
        char sec[64] = "", key[160];
        for (const char *l = text, *next = NULL; l && *l; l = next) {
            const char *e = strchr(l, '\n');
            const size_t len = e ? (size_t)(e - l) : strlen(l);
            const char *v;
            size_t vl;
            next = e ? e + 1 : NULL;
            if (!study_line(l, len, sec, sizeof sec, key, sizeof key, &v, &vl))
                continue;
            char probe[170];
            snprintf(probe, sizeof probe, "\n%s\n", key);
            if (strstr(seen, probe))
                continue;
            if (strlen(seen) + strlen(key) + 2 < sizeof seen) {
                strcat(seen, key);
                strcat(seen, "\n");
            }
            char *vals[RB_COMPARE_MAX];
            int same = 1;
            for (size_t i = 0; i < n; i++) {
                vals[i] = study_value(rp_attr_get(&fs[i].root, "config_text"), key);
                same &= (vals[i] == NULL) == (vals[0] == NULL) &&
                        (!vals[i] || !strcmp(vals[i], vals[0]));
            }
            if (same) {
                for (size_t i = 0; i < n; i++)
                    free(vals[i]);
                continue;
            }
            if (!differ++) {
                para(o, html, "The stored configurations differ in these keys (study.threads "
                              "and study.memory_limit_gib change how cases run, not what "
                              "they compute):");
                rp_table_head(o, html, cols, (int)n + 1);
            }
            fprintf(o, html ? "<tr>" : "|");
            rp_cell_text(o, html, key);
            for (size_t i = 0; i < n; i++) {
                rp_cell_text(o, html, vals[i] ? vals[i] : "(absent)");
                free(vals[i]);
            }
            fprintf(o, html ? "</tr>\n" : "\n");
        }
    }
    if (differ && html)
        fprintf(o, "</table>\n");
    if (!differ)
        para(o, html, ta && *ta ? "Every file stores the same configuration (every key and "
                                  "value)."
                                : "Every file stores the same, empty, configuration.");
}

/* The cases that some file lacks (or holds incomplete): each once, named with the files
 * that lack it; nothing when every file has every case. */
static void write_missing(FILE *o, const rp_file *fs, size_t n, int html)
{
    int any = 0;
    for (size_t f = 0; f < n; f++)
        for (size_t i = 0; i < fs[f].ncases; i++) {
            const rp_case *c = &fs[f].cases[i];
            char who[64] = "";
            int lacking = 0;
            for (size_t g = 0; g < n; g++) {
                if (find_case(&fs[g], c->name))
                    continue;
                char l[8];
                label(l, sizeof l, g);
                strcat(who, lacking++ ? ", " : "");
                strcat(who, l);
            }
            int first = 1; /* listed once: by the first file that has it */
            for (size_t g = 0; g < f && first; g++)
                first = case_named(&fs[g], c->name) == NULL;
            if (!lacking || !first)
                continue;
            if (!any++) {
                heading(o, html, "Cases not in every file");
                static const char *cols[2] = {"case", "missing or incomplete in"};
                rp_table_head(o, html, cols, 2);
            }
            fprintf(o, html ? "<tr>" : "|");
            rp_cell_text(o, html, c->name);
            rp_cell_text(o, html, who);
            fprintf(o, html ? "</tr>\n" : "\n");
        }
    if (any && html)
        fprintf(o, "</table>\n");
}

/* shape_differs: 1 and what differs (into why: "n_rows differs between A and B") when
 * the runs of case cs[0..n) are not the same problem -- seq_len, heads, head_dim or
 * n_rows (probe rows) --, so that setting their figures side by side compares apples
 * with pears; 0 otherwise. */
static int shape_differs(size_t n, const rp_case **cs, char *why, size_t len)
{
    for (size_t i = 1; i < n; i++) {
        const rp_case *a = cs[0], *c = cs[i];
        const char *what = a->seq_len != c->seq_len       ? "seq_len"
                           : a->heads != c->heads         ? "heads"
                           : a->head_dim != c->head_dim   ? "head_dim"
                           : a->n_rows != c->n_rows       ? "n_rows"
                                                          : NULL;
        if (what) {
            char la[8], lc[8];
            label(la, sizeof la, 0);
            label(lc, sizeof lc, i);
            snprintf(why, len, "%s differs between %s and %s", what, la, lc);
            return 1;
        }
    }
    return 0;
}

/* case_cell: the case's name, with what makes its runs different problems (shape_differs)
 * after it, so that no table sets such figures side by side as comparable. */
static void case_cell(FILE *o, int html, size_t n, const rp_case **cs)
{
    char why[96], nm[400];
    if (shape_differs(n, cs, why, sizeof why))
        snprintf(nm, sizeof nm, "%s (not comparable: %s)", cs[0]->name, why);
    else
        snprintf(nm, sizeof nm, "%s", cs[0]->name);
    rp_cell_text(o, html, nm);
}

/* Throughput of the cases complete in every file: GFLOP/s and % of each run's own FMA
 * peak (probe cases: their K/V GB/s as % of the run's triad, the yardstick of a stream),
 * and each file's GFLOP/s over A's. */
static void write_tput_cmp(FILE *o, const rp_file *fs, size_t n, int html)
{
    heading(o, html, "Throughput of the cases in every file");
    para(o, html, "GFLOP/s over the slowest rank's compute time (4·d FLOP per visible "
                  "(query, key) pair), as in each file's report; % of the FMA peak that run "
                  "measured (sums over its ranks), and for probe cases, which stream K and V, "
                  "their K/V GB/s as % of that run's triad instead; ×A is a file's GFLOP/s "
                  "over A's, so above 1 is faster than A.");
    if (!common_cases(fs, n)) { /* a sentence, not an empty table (Markdown would take a
                                  * line below it for one of its rows) */
        para(o, html, "No case is complete in every file.");
        return;
    }
    static const char *const what[3] = {"GFLOP/s", "% of peak (probe: of triad)", "×A"};
    static const int skip_a[3] = {0, 0, 1};
    const char *cols[1 + 3 * RB_COMPARE_MAX];
    char names[1 + 3 * RB_COMPARE_MAX][48];
    rp_table_head(o, html, cols, file_cols(cols, names, n, "case", what, skip_a, 3));
    int over[RB_COMPARE_MAX][2] = {{0}};         /* per file: cases above 100 % of peak */
    double worst[RB_COMPARE_MAX][2] = {{0.0}};  /* the highest of those % */
    for (size_t k = 0; k < fs[0].ncases; k++) {
        const rp_case *cs[RB_COMPARE_MAX];
        if (!common_case(fs, n, k, cs))
            continue;
        fprintf(o, html ? "<tr>" : "|");
        case_cell(o, html, n, cs);
        rp_tput ta;
        rp_case_tput(&fs[0], cs[0], &ta);
        for (size_t i = 0; i < n; i++) {
            rp_tput t;
            rp_case_tput(&fs[i], cs[i], &t);
            rp_cell_num(o, html, t.gflops, "%.2f");
            const int probe = strcmp(cs[i]->mode, "probe") == 0;
            rp_cell_num(o, html, probe ? t.pct_triad : t.pct_peak, "%.1f");
            if (probe) /* (the note follows the column: one yardstick per case) */
                t.pct_peak = NAN;
            else
                t.pct_triad = NAN;
            rp_tput_tally(&t, over[i], worst[i]);
            if (i)
                rp_cell_num(o, html, t.gflops / ta.gflops, "%.3f");
        }
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
    for (size_t i = 0; i < n; i++) {
        char where[16];
        snprintf(where, sizeof where, "in %c, ", (char)('A' + i));
        rp_tput_over(o, html, where, over[i], worst[i]);
    }
}

/* The results of the cases in every file: mean entropy and mean lse of the rows (over
 * rows and heads) per file, and the largest difference from A. */
static void write_results_cmp(FILE *o, const rp_file *fs, size_t n, int html)
{
    heading(o, html, "Results of the cases in every file");
    para(o, html, "Means over each case's rows and heads (the same study on two machines, "
                  "rank counts or kernels should agree to the kernels' bounds, 1e-5 relative "
                  "for fp32; row by row and metric by metric: tests/compare_results.py and "
                  "tests/compare_metrics.py, docs/results-format.md).");
    if (!common_cases(fs, n)) {
        para(o, html, "No case is complete in every file.");
        return;
    }
    static const char *const what[1] = {"mean entropy, nats"};
    static const int skip_a[1] = {0};
    const char *cols[3 + RB_COMPARE_MAX];
    char names[1 + RB_COMPARE_MAX][48];
    int nc = file_cols(cols, names, n, "case", what, skip_a, 1);
    cols[nc++] = "mean entropy: largest difference from A (absolute)";
    cols[nc++] = "mean lse: largest difference from A (absolute)";
    rp_table_head(o, html, cols, nc);
    for (size_t k = 0; k < fs[0].ncases; k++) {
        const rp_case *cs[RB_COMPARE_MAX];
        if (!common_case(fs, n, k, cs))
            continue;
        fprintf(o, html ? "<tr>" : "|");
        case_cell(o, html, n, cs);
        double de = 0, dl = 0;
        for (size_t i = 0; i < n; i++) {
            rp_cell_num(o, html, cs[i]->mean_entropy, "%.9g");
            const double e = fabs(cs[i]->mean_entropy - cs[0]->mean_entropy),
                         l = fabs(cs[i]->mean_lse - cs[0]->mean_lse);
            de = isnan(e) || e > de ? e : de;
            dl = isnan(l) || l > dl ? l : dl;
        }
        rp_cell_num(o, html, de, "%.3g");
        rp_cell_num(o, html, dl, "%.3g");
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
    /* values the means leave out (as each file's report says): a broken kernel's NaN
     * rows would otherwise read as a small difference, or as agreement */
    int any = 0;
    for (size_t k = 0; k < fs[0].ncases; k++) {
        const rp_case *cs[RB_COMPARE_MAX];
        if (!common_case(fs, n, k, cs))
            continue;
        for (size_t i = 0; i < n; i++) {
            if (cs[i]->nonfinite == 0)
                continue;
            if (!any)
                fprintf(o, html ? "<p><strong>Note:</strong> left out of the means as not "
                                  "finite (NaN or ±inf), entropy and lse values together: "
                                : "\n**Note:** left out of the means as not finite (NaN or "
                                  "±inf), entropy and lse values together: ");
            fprintf(o, "%sin %c, ", any ? "; " : "", (char)('A' + i));
            if (html)
                rp_html_esc(o, cs[i]->name);
            else
                rp_md_esc(o, cs[i]->name);
            fprintf(o, " %lld", (long long)cs[i]->nonfinite);
            any = 1;
        }
    }
    if (any)
        fprintf(o, html ? ". Those cases' differences compare fewer values than they "
                          "hold.</p>\n"
                        : ". Those cases' differences compare fewer values than they hold.\n");
}

/* Row r of a /bench table as its key "kernel dtype bench d L threads", and for a probe
 * row " positions=P" (the /bench attribute probe_positions, `bench --probe-rows`; 128 in
 * files from before it, which took 128): probes of different positions are different
 * shapes, even where their distinct rows happen to be as many. */
static void bench_key(char *b, size_t n, const rp_bench *bn, int64_t r)
{
    char rs[64] = "";
    if (strcmp(bn->bench[r], "probe") == 0) {
        const char *pp = rp_attr_get(&bn->attrs, "probe_positions");
        snprintf(rs, sizeof rs, " positions=%.40s", pp ? pp : "128");
    }
    snprintf(b, n, "%s %s %s d=%.0f L=%.0f threads=%.0f%s", bn->kernel[r], bn->dtype[r],
             bn->bench[r], bn->t.col[RP_BENCH_HEAD_DIM][r], bn->t.col[RP_BENCH_SEQ_LEN][r],
             bn->t.col[RP_BENCH_THREADS][r], rs);
}

/* A file's /bench rows by key (bench_key): sorted by key, then row, so that a key's
 * first row comes first. */
typedef struct {
    char *key;
    int64_t row;
} bench_ent;
typedef struct {
    bench_ent *e;
    int64_t n;
} bench_index;

static int bench_ent_cmp(const void *a, const void *b)
{
    const bench_ent *x = a, *y = b;
    const int c = strcmp(x->key, y->key);
    return c ? c : (x->row > y->row) - (x->row < y->row);
}

static void bench_indexes_free(bench_index *ix, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (int64_t r = 0; r < ix[i].n; r++)
            free(ix[i].e[r].key);
        free(ix[i].e);
        ix[i] = (bench_index){NULL, 0};
    }
}

/* bench_indexes: ix[i] (out) the rows of file i's /bench by key, for files 1 to n - 1
 * (A's rows are walked in order, never looked up: ix[0] stays empty), so that each
 * lookup is a binary search (a damaged file with many rows stays linear-logarithmic);
 * 0, or -1 out of memory (ix freed). */
static int bench_indexes(const rp_file *fs, size_t n, bench_index *ix)
{
    for (size_t i = 0; i < n; i++)
        ix[i] = (bench_index){NULL, 0};
    for (size_t i = 1; i < n; i++) {
        const rp_bench *bn = &fs[i].bench;
        if (bn->t.n <= 0)
            continue;
        if (!(ix[i].e = calloc((size_t)bn->t.n, sizeof *ix[i].e)))
            goto fail;
        for (int64_t r = 0; r < bn->t.n; r++) {
            char k[256];
            bench_key(k, sizeof k, bn, r);
            if (!(ix[i].e[r].key = strdup(k)))
                goto fail;
            ix[i].e[r].row = r;
            ix[i].n = r + 1;
        }
        qsort(ix[i].e, (size_t)ix[i].n, sizeof *ix[i].e, bench_ent_cmp);
    }
    return 0;
fail:
    bench_indexes_free(ix, n);
    return -1;
}

static const char *bench_key_at(const void *ix, size_t i)
{
    return ((const bench_index *)ix)->e[i].key;
}

/* bench_find: the first row of ix with this key; -1 if none. */
static int64_t bench_find(const bench_index *ix, const char *key)
{
    const size_t lo = lower_bound((size_t)ix->n, key, bench_key_at, ix);
    return lo < (size_t)ix->n && !strcmp(ix->e[lo].key, key) ? ix->e[lo].row : -1;
}

/* bench_rows_at: whether every file after A has a /bench row with `key`, that of A's
 * row r (bench_key); at[0] = r and at[i] (out) the first such row of file i, as far as
 * they were found. */
static int bench_rows_at(const bench_index *ix, size_t n, const char *key, int64_t r,
                         int64_t *at)
{
    at[0] = r;
    for (size_t i = 1; i < n; i++)
        if ((at[i] = bench_find(&ix[i], key)) < 0)
            return 0;
    return 1;
}

/* bench_row_everywhere: whether A's /bench row r has a row of its key (bench_key, into
 * key) in every file; at as bench_rows_at. */
static int bench_row_everywhere(const rp_file *fs, const bench_index *ix, size_t n, int64_t r,
                                char *key, size_t klen, int64_t *at)
{
    bench_key(key, klen, &fs[0].bench, r);
    return bench_rows_at(ix, n, key, r, at);
}

/* bench_batched: whether a /bench row's repetitions timed several calls together
 * (calls_per_rep > 1; a file from before that column timed one call each). */
static int bench_batched(const rp_bench *b, int64_t r)
{
    const double k = b->t.col[RP_BENCH_CALLS][r];
    return !isnan(k) && k > 1;
}

/* write_bench_method: after the benchmark table, the rows that one file timed call by
 * call and another in batches (calls_per_rep, docs/bench.md "Short calls are batched"):
 * part of their time ratio is the timing method (one call of microseconds also pays a
 * clock reading and the thread team's wake-up); at most 12 named, then a count. */
static void write_bench_method(FILE *o, const rp_file *fs, const bench_index *ix, size_t n,
                               int html)
{
    const rp_bench *ba = &fs[0].bench;
    int64_t shown = 0, more = 0;
    for (int64_t r = 0; r < ba->t.n; r++) {
        char key[256];
        int64_t at[RB_COMPARE_MAX];
        if (!bench_row_everywhere(fs, ix, n, r, key, sizeof key, at))
            continue;
        int batched = 0, single = 0;
        for (size_t i = 0; i < n; i++)
            bench_batched(&fs[i].bench, at[i]) ? batched++ : single++;
        if (!batched || !single)
            continue;
        if (shown == 12) {
            more++;
            continue;
        }
        fprintf(o, shown ? "; " : html ? "<p>" : "\n"); /* (markdown: a blank line ends the table) */
        if (!shown)
            fprintf(o, "Timed differently (one file timed these rows call by call, another "
                       "in batches of calls, docs/bench.md: part of their time ratio is the "
                       "method, not the machine): ");
        if (html)
            rp_html_esc(o, key);
        else
            rp_md_esc(o, key);
        fprintf(o, " (calls per repetition:");
        for (size_t i = 0; i < n; i++) {
            char l[8], b[32];
            label(l, sizeof l, i);
            rp_fmt_num(b, sizeof b, fs[i].bench.t.col[RP_BENCH_CALLS][at[i]], "%.0f");
            fprintf(o, " %s %s", l, b);
        }
        fprintf(o, ")");
        shown++;
    }
    if (more)
        fprintf(o, "; and %lld more rows", (long long)more);
    if (shown)
        fprintf(o, html ? ".</p>\n" : ".\n\n");
}

/* The /bench rows that every file has (same kernel, dtype, bench, shape and threads):
 * each file's fraction of its own peak (FMA for causal rows, triad otherwise) and its
 * median time over A's (ix: each file's rows by key, bench_indexes). Nothing unless
 * every file has a /bench group. */
static void write_bench_cmp(FILE *o, const rp_file *fs, const bench_index *ix, size_t n,
                            int html)
{
    for (size_t i = 0; i < n; i++)
        if (fs[i].bench.t.n == 0)
            return;
    heading(o, html, "Benchmark rows in every file (ropebench bench)");
    para(o, html, "Fraction of the peak each run measured (FMA for causal rows, triad for "
                  "probe and RoPE rows: the figure that carries across machines), and the "
                  "median time over A's (below 1 is faster than A).");
    static const char *const what[2] = {"fraction of peak", "time / A's"};
    static const int skip_a[2] = {0, 1};
    const char *cols[1 + 2 * RB_COMPARE_MAX];
    char names[1 + 2 * RB_COMPARE_MAX][48];
    const int nc = file_cols(cols, names, n, "row", what, skip_a, 2);
    rp_table_head(o, html, cols, nc);
    const rp_bench *ba = &fs[0].bench;
    for (int64_t r = 0; r < ba->t.n; r++) {
        char key[256];
        int64_t at[RB_COMPARE_MAX];
        if (!bench_row_everywhere(fs, ix, n, r, key, sizeof key, at))
            continue;
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, key);
        const double ma = ba->t.col[RP_BENCH_MEDIAN][r];
        for (size_t i = 0; i < n; i++) {
            rp_cell_num(o, html, fs[i].bench.t.col[RP_BENCH_FRACTION][at[i]], "%.3f");
            if (i)
                rp_cell_num(o, html, fs[i].bench.t.col[RP_BENCH_MEDIAN][at[i]] / ma, "%.3f");
        }
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
    write_bench_method(o, fs, ix, n, html);
}

/* One probe-breakdown entry of a file: its probe row, class of blocks and index. */
typedef struct {
    double row, rmin, rmax;
    int64_t k;
} pb_ent;

static int pb_ent_cmp(const void *a, const void *b)
{
    const pb_ent *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->rmin != y->rmin)
        return x->rmin < y->rmin ? -1 : 1;
    if (x->rmax != y->rmax)
        return x->rmax < y->rmax ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* pb_sorted: the probe-breakdown entries of b that name a probe row (rp_pb_row_ok)
 * and whose class bounds are numbers (a NaN would break the order), sorted by row,
 * then class (rows_min, rows_max), then index, into a new array (*out, caller frees;
 * NULL when there are none); returns their count, -1 if out of memory. */
static int64_t pb_sorted(const rp_bench *b, pb_ent **out)
{
    const rp_tab *p = &b->pb;
    *out = NULL;
    int64_t m = 0;
    if (p->n <= 0)
        return 0;
    pb_ent *e = malloc((size_t)p->n * sizeof *e);
    if (!e)
        return -1;
    for (int64_t k = 0; k < p->n; k++)
        if (rp_pb_row_ok(b, p->col[RP_PB_ROW][k]) && !isnan(p->col[RP_PB_ROWS_MIN][k]) &&
            !isnan(p->col[RP_PB_ROWS_MAX][k]))
            e[m++] = (pb_ent){p->col[RP_PB_ROW][k], p->col[RP_PB_ROWS_MIN][k],
                              p->col[RP_PB_ROWS_MAX][k], k};
    if (m == 0) {
        free(e);
        return 0;
    }
    qsort(e, (size_t)m, sizeof *e, pb_ent_cmp);
    *out = e;
    return m;
}

/* pb_find: the index of the first of the m sorted entries e for (row, rmin, rmax);
 * -1 if none. */
static int64_t pb_find(const pb_ent *e, int64_t m, double row, double rmin, double rmax)
{
    int64_t lo = 0, hi = m;
    const pb_ent key = {row, rmin, rmax, -1};
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (pb_ent_cmp(&e[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m && e[lo].row == row && e[lo].rmin == rmin && e[lo].rmax == rmax ? e[lo].k
                                                                                   : -1;
}

/* write_breakdown_cmp: the probe breakdown (/bench/probe_breakdown) of the probe rows
 * every file has (bench_key), for the classes of blocks (rows_min, rows_max) every
 * file's row has: each file's share of the row's block time and its ns per pair, and
 * the ns per pair over A's, so that two machines show where their probe time goes
 * side by side. A file's entries that do not name one of its probe rows are left out
 * (rp_pb_row_ok), as are those whose rows_min or rows_max is NaN; where a row has two
 * entries of one class the first in the file is taken; ix: each file's rows by key
 * (bench_indexes). Nothing unless every file has such entries and some row and class
 * are in all. */
static void write_breakdown_cmp(FILE *o, const rp_file *fs, const bench_index *ix, size_t n,
                                int html)
{
    pb_ent *ent[RB_COMPARE_MAX] = {NULL};
    int64_t ne[RB_COMPARE_MAX];
    double *tot[RB_COMPARE_MAX] = {NULL};
    int started = 0;
    for (size_t i = 0; i < n; i++) {
        ne[i] = pb_sorted(&fs[i].bench, &ent[i]);
        if (ne[i] <= 0 || !(tot[i] = calloc((size_t)fs[i].bench.t.n, sizeof *tot[i])))
            goto cleanup;
        rp_pb_totals(&fs[i].bench, tot[i]);
    }
    static const char *const what[3] = {"% of time", "ns/pair", "ns/pair / A's"};
    static const int skip_a[3] = {0, 0, 1};
    const char *cols[1 + 3 * RB_COMPARE_MAX];
    char names[1 + 3 * RB_COMPARE_MAX][48];
    const int nc = file_cols(cols, names, n, "probe row, rows per block", what, skip_a, 3);
    const rp_bench *ba = &fs[0].bench;
    int64_t at[RB_COMPARE_MAX]; /* the row of A's current entry in each file */
    double cur = -1;
    int row_all = 0;
    for (int64_t j = 0; j < ne[0]; j++) {
        const pb_ent *a = &ent[0][j];
        if (j > 0 && a->row == ent[0][j - 1].row && a->rmin == ent[0][j - 1].rmin &&
            a->rmax == ent[0][j - 1].rmax)
            continue; /* a second entry of one class: the first is shown */
        char key[256];
        bench_key(key, sizeof key, ba, (int64_t)a->row);
        if (a->row != cur) {
            cur = a->row;
            row_all = bench_rows_at(ix, n, key, (int64_t)a->row, at);
        }
        if (!row_all)
            continue;
        int64_t kk[RB_COMPARE_MAX];
        int all = 1;
        for (size_t i = 0; i < n && all; i++)
            all = (kk[i] = pb_find(ent[i], ne[i], (double)at[i], a->rmin, a->rmax)) >= 0;
        if (!all)
            continue;
        if (!started) {
            heading(o, html, "Probe breakdown of the bench rows in every file");
            para(o, html, "The blocks of 64 keys of each AVX-512 probe row grouped by the "
                          "query rows that see them (docs/bench.md, Probe breakdown), for the "
                          "rows and groups every file has: each file's share of the row's "
                          "block time, its time per pair computed (rows x keys), and that "
                          "time over A's (below 1 is faster than A). The groups few rows see "
                          "are a stream, those many rows see arithmetic: where the machines "
                          "differ tells which of the two does.");
            rp_table_head(o, html, cols, nc);
            started = 1;
        }
        char label[320];
        if (a->rmax < 0)
            snprintf(label, sizeof label, "%s, %.0f+", key, a->rmin);
        else
            snprintf(label, sizeof label, "%s, %.0f-%.0f", key, a->rmin, a->rmax);
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, label);
        double na = NAN;
        for (size_t i = 0; i < n; i++) {
            const rp_tab *p = &fs[i].bench.pb;
            const double t = p->col[RP_PB_S][kk[i]], T = tot[i][at[i]];
            const double ns = rp_per_pair(t, p->col[RP_PB_PAIRS][kk[i]]);
            rp_cell_num(o, html, T > 0 && t >= 0 ? 100.0 * t / T : NAN, "%.1f");
            rp_cell_num(o, html, ns, "%.2f");
            if (i == 0)
                na = ns;
            else
                rp_cell_num(o, html, na > 0 ? ns / na : NAN, "%.3f");
        }
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (started && html)
        fprintf(o, "</table>\n");
cleanup:
    for (size_t i = 0; i < n; i++) {
        free(ent[i]);
        free(tot[i]);
    }
}

/* scaling_mismatch: 1 and what differs (into why) when the runs of case cs[0..n) differ
 * in more than their rank count -- the shape (shape_differs), kernel, dtype, layout or
 * threads per rank of the case, or the CPU of the files (compared among all the files
 * that record it; one that does not, beside one that does, is a mismatch too) -- so
 * that a fit of T(N) across them would mix other effects into what it calls scaling;
 * 0 when only the ranks may differ. */
static int scaling_mismatch(const rp_file *fs, size_t n, const rp_case **cs, char *why,
                            size_t len)
{
    if (shape_differs(n, cs, why, len))
        return 1;
    char la[8], lc[8];
    for (size_t i = 1; i < n; i++) {
        const rp_case *a = cs[0], *c = cs[i];
        const char *what = strcmp(a->kernel, c->kernel)           ? "kernel"
                           : strcmp(a->dtype, c->dtype)           ? "dtype"
                           : strcmp(a->shard_layout, c->shard_layout) ? "shard_layout"
                           : a->threads != c->threads             ? "threads per rank"
                                                                  : NULL;
        if (what) {
            label(la, sizeof la, 0);
            label(lc, sizeof lc, i);
            snprintf(why, len, "%s differs between %s and %s", what, la, lc);
            return 1;
        }
    }
    /* the build and the run-time switches: a fit across two builds, or with the probe
     * balance or huge pages on in one run only, measures those, not the rank count
     * (compared where both files record them: older files lack some) */
    static const struct {
        int prov;
        const char *name, *what;
    } same[] = {{0, "git_describe", "the build (git_describe)"},
                {1, "compiler", "the compiler"},
                {1, "cflags", "the compiler flags"},
                {1, "environment", "the recorded environment"},
                {1, "hugepages", "huge pages"}};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
        for (size_t i = 1; i < n; i++) {
            const char *x = rp_attr_get(same[k].prov ? &fs[0].prov : &fs[0].root, same[k].name),
                       *y = rp_attr_get(same[k].prov ? &fs[i].prov : &fs[i].root, same[k].name);
            if (x && y && strcmp(x, y) != 0) {
                label(la, sizeof la, 0);
                label(lc, sizeof lc, i);
                snprintf(why, len, "%s differs between %s and %s", same[k].what, la, lc);
                return 1;
            }
        }
    size_t ref = n;
    for (size_t i = 0; i < n; i++) {
        const char *c = rp_attr_get(&fs[i].prov, "cpu_model");
        if (!c)
            continue;
        if (ref == n) {
            ref = i;
        } else if (strcmp(rp_attr_get(&fs[ref].prov, "cpu_model"), c) != 0) {
            label(la, sizeof la, ref);
            label(lc, sizeof lc, i);
            snprintf(why, len, "CPU differs between %s and %s", la, lc);
            return 1;
        }
    }
    for (size_t i = 0; ref < n && i < n; i++)
        if (!rp_attr_get(&fs[i].prov, "cpu_model")) {
            label(lc, sizeof lc, i);
            snprintf(why, len, "no CPU recorded in %s", lc);
            return 1;
        }
    return 0;
}

/* Scaling across rank counts, for the cases every file holds complete when the files'
 * cases ran on at least two rank counts: each file's slowest-rank total time at its
 * rank count N (the case's own timing length), the strong-scaling efficiency of the
 * largest N against the smallest, and the model T(N) = a + b/N fitted by least squares
 * over the files (exact for two rank counts), with its prediction at 4x the largest N.
 * A model of these runs on this kind of machine: a is what does not shrink with more
 * ranks (communication, imbalance, serial work); a cluster's network changes it. */
static void write_scaling(FILE *o, const rp_file *fs, size_t n, int html)
{
    int heading_done = 0;
    char skipped[1024] = "";
    size_t nskipped = 0;
    /* whether the files' cases ran on two rank counts or more: the section exists */
    int spans = 0;
    for (size_t k = 0; k < fs[0].ncases && !spans; k++) {
        const rp_case *cs[RB_COMPARE_MAX];
        for (size_t i = 1; i < n && common_case(fs, n, k, cs); i++)
            spans |= cs[i]->timing_ranks > 0 && cs[0]->timing_ranks > 0 &&
                     cs[i]->timing_ranks != cs[0]->timing_ranks;
    }
    for (size_t k = 0; k < fs[0].ncases; k++) {
        const rp_case *cs[RB_COMPARE_MAX];
        if (!common_case(fs, n, k, cs))
            continue;
        /* a time of 0 (or none) cannot be fitted: said, not dropped without a word */
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; i++)
            if (!(cs[i]->timing_ranks > 0 && cs[i]->tmax[RP_T_TOTAL] > 0))
                bad = i;
        if (bad < n) {
            const size_t len = strlen(skipped);
            char lb[8];
            label(lb, sizeof lb, bad);
            if (spans && nskipped++ < 4)
                snprintf(skipped + len, sizeof skipped - len, "%s%s (no total time above 0 "
                         "in %s)", len ? "; " : "", cs[0]->name, lb);
            continue;
        }
        int64_t nmin = cs[0]->timing_ranks, nmax = nmin;
        size_t imin = 0, imax = 0;
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t i = 0; i < n; i++) {
            const int64_t r = cs[i]->timing_ranks;
            const double x = 1.0 / (double)r, y = cs[i]->tmax[RP_T_TOTAL];
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
            if (r < nmin || (r == nmin && y < cs[imin]->tmax[RP_T_TOTAL])) {
                nmin = r;
                imin = i;
            }
            if (r > nmax || (r == nmax && y < cs[imax]->tmax[RP_T_TOTAL])) {
                nmax = r;
                imax = i;
            }
        }
        if (nmin == nmax)
            continue;
        char why[160];
        if (scaling_mismatch(fs, n, cs, why, sizeof why)) {
            const size_t len = strlen(skipped);
            if (nskipped++ < 4)
                snprintf(skipped + len, sizeof skipped - len, "%s%s (%s)", len ? "; " : "",
                         cs[0]->name, why);
            continue;
        }
        /* least squares on x = 1/N, kept to a, b >= 0 (times do not fall below zero
         * with more ranks; noisy runs can make a free fit say so) */
        const double m = (double)n, var = sxx - sx * sx / m;
        double b = (sxy - sx * sy / m) / var, a = (sy - b * sx) / m;
        /* held: marked only past rounding (an exact a = 0 came out as -7e-16) */
        const double tol = 1e-9 * sy / m;
        int bounded = 0;
        if (a < 0) {
            bounded = a < -tol;
            a = 0;
            b = sxy / sxx;
        }
        if (b < 0) {
            bounded |= b < -tol;
            b = 0;
            a = sy / m;
        }
        /* how well the model fits: rms residual over the mean time (0 with two rank
         * counts, where the line passes through both) */
        double ss = 0;
        for (size_t i = 0; i < n; i++) {
            const double r = cs[i]->tmax[RP_T_TOTAL] - a - b / (double)cs[i]->timing_ranks;
            ss += r * r;
        }
        const double resid = sqrt(ss / m) / (sy / m);
        if (!heading_done++) {
            heading(o, html, "Scaling across rank counts (a model)");
            para(o, html,
                 "Each case's total time (slowest rank, s) at each file's rank count N, the "
                 "strong-scaling efficiency T(N_min)·N_min / (T(N_max)·N_max), and the model "
                 "T(N) = a + b/N fitted to these files by least squares, with what it "
                 "predicts at 4 × N_max (a and b held at 0 or above: a case where the free "
                 "fit went below is marked). A model of these runs on this kind of machine "
                 "only: a is what more ranks do not shrink (communication, imbalance, serial "
                 "work), and a cluster's network and topology change it. The rms residual "
                 "(% of the mean time) says how well T(N) = a + b/N fits the runs; with two "
                 "files on two rank counts the line passes through both, so it is 0 and says "
                 "nothing of the prediction's error (\"2 rank counts\"). A case whose runs differ in "
                 "more than the rank count, or lack a total time, is not fitted (named "
                 "below).");
            static const char *cols[] = {"case", "N: total s", "efficiency N_max vs N_min",
                                         "a, s", "b, s", "rms residual, % of mean",
                                         "predicted s at 4 × N_max"};
            rp_table_head(o, html, cols, 7);
        }
        char runs[512] = "";
        for (size_t i = 0; i < n; i++) {
            const size_t len = strlen(runs);
            snprintf(runs + len, sizeof runs - len, "%s%lld: %.4g", i ? ", " : "",
                     (long long)cs[i]->timing_ranks, cs[i]->tmax[RP_T_TOTAL]);
        }
        const double eff = cs[imin]->tmax[RP_T_TOTAL] * (double)nmin /
                           (cs[imax]->tmax[RP_T_TOTAL] * (double)nmax);
        fprintf(o, html ? "<tr>" : "|");
        char nm[300];
        snprintf(nm, sizeof nm, "%s%s", cs[0]->name, bounded ? " (fit held at a, b ≥ 0)" : "");
        rp_cell_text(o, html, nm);
        rp_cell_text(o, html, runs);
        rp_cell_num(o, html, eff, "%.3f");
        rp_cell_num(o, html, a, "%.4g");
        rp_cell_num(o, html, b, "%.4g");
        if (n == 2 && !bounded) /* the line through both points: residual 0 by construction */
            rp_cell_text(o, html, "2 rank counts");
        else
            rp_cell_num(o, html, 100.0 * resid, "%.3g");
        rp_cell_num(o, html, a + b / (4.0 * (double)nmax), "%.4g");
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (heading_done && html)
        fprintf(o, "</table>\n");
    if (nskipped) {
        if (!heading_done)
            heading(o, html, "Scaling across rank counts (a model)");
        char b[1400];
        snprintf(b, sizeof b, "Not fitted: %zu case(s) whose runs differ in more than the rank "
                              "count (a fit would call those differences scaling) or lack a "
                              "total time: %s%s.",
                 nskipped, skipped, nskipped > 4 ? "; …" : "");
        /* case names are the file's text: escaped */
        fprintf(o, html ? "<p>" : heading_done ? "\n" : "");
        if (html)
            rp_html_esc(o, b);
        else
            rp_md_esc(o, b);
        fprintf(o, html ? "</p>\n" : "\n\n");
    }
}

static int write_doc(const rp_file *fs, size_t n, const char *outdir, int html, char *err,
                     size_t errlen)
{
    char path[4200];
    FILE *o;
    int rc = rp_open_out(outdir, html ? "compare.html" : "compare.md", &o, path, sizeof path,
                         err, errlen);
    if (rc != RB_OK)
        return rc;
    if (html) {
        rp_html_begin(o, "ropebench comparison");
        fprintf(o, "<p>");
    }
    else
        fprintf(o, "# ropebench comparison\n\n");
    fprintf(o, "%zu results files, A to %c; A is the baseline of every ratio. Each file's "
               "own report (ropebench report FILE) has its plots and metric tables.",
            n, (char)('A' + n - 1));
    fprintf(o, html ? "</p>\n" : "\n");
    write_runs(o, fs, n, html);
    write_study(o, fs, n, html);
    write_tput_cmp(o, fs, n, html);
    write_results_cmp(o, fs, n, html);
    write_scaling(o, fs, n, html);
    write_missing(o, fs, n, html);
    bench_index ix[RB_COMPARE_MAX];
    if (bench_indexes(fs, n, ix) == 0) {
        write_bench_cmp(o, fs, ix, n, html);
        write_breakdown_cmp(o, fs, ix, n, html);
        bench_indexes_free(ix, n);
    } else
        para(o, html, "(The benchmark rows are left out: out of memory.)");
    if (html)
        fprintf(o, "</body>\n</html>\n");
    return rp_close_staged(o, path, err, errlen); /* (renamed by rb_report_compare) */
}

/* rb_report_compare: see rb_reports.h. */
int rb_report_compare(const char *const *paths, int n, const char *outdir, char *err,
                      size_t errlen)
{
    rp_file fs[RB_COMPARE_MAX];
    int nread = 0, rc = RB_OK;
    if (n < 2 || n > RB_COMPARE_MAX)
        return rb_errf(err, errlen, RB_EINVAL, "report: compare 2 to %d results files (got %d)",
                       RB_COMPARE_MAX, n);
    if (!outdir || !*outdir)
        outdir = ".";
    for (; nread < n && rc == RB_OK; nread++)
        rc = rp_file_read(paths[nread], &fs[nread], err, errlen);
    if (rc != RB_OK) {
        nread--; /* the failed read left nothing to free */
        goto cleanup;
    }
    /* both documents under their temporary names, then both renamed: a comparison that
     * fails half-way leaves the earlier pair as it was */
    if ((rc = rp_make_dirs(outdir, err, errlen)) == RB_OK &&
        (rc = rp_check_target(outdir, "compare.md", err, errlen)) == RB_OK &&
        (rc = rp_check_target(outdir, "compare.html", err, errlen)) == RB_OK &&
        (rc = write_doc(fs, (size_t)n, outdir, 0, err, errlen)) == RB_OK)
        rc = write_doc(fs, (size_t)n, outdir, 1, err, errlen);
    if (rc == RB_OK || nread == n) {
        static const char *const names[2] = {"compare.html", "compare.md"};
        for (int i = 0; i < 2; i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", outdir, names[i]);
            if (rc == RB_OK)
                rc = rp_commit(path, err, errlen);
            else
                rp_discard(path);
        }
    }
cleanup:
    for (int i = 0; i < nread; i++)
        rp_file_free(&fs[i]);
    return rc;
}
