/* report_write.c — rb_report_write: report.md, a self-contained report.html (inline CSS and SVG, every file string escaped) and study.ini (the stored configuration, which the reports' Regenerate section runs) from a results file. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rb_kernels.h"
#include "rb_reports.h"
#include "report_int.h"

static void fmt_timing(char *b, size_t n, const rp_case *c, int j)
{
    if (isnan(c->tmed[j]))
        snprintf(b, n, "n/a");
    else
        snprintf(b, n, "%.4g / %.4g / %.4g", c->tmin[j], c->tmed[j], c->tmax[j]);
}

const char *rp_attr_get(const rp_attrs *as, const char *name)
{
    for (size_t i = 0; i < as->n; i++)
        if (strcmp(as->v[i].name, name) == 0)
            return as->v[i].value;
    return NULL;
}

/* plain_token: s is non-empty, starts with a letter or digit and has only
 * [A-Za-z0-9._-] (safe to print into a shell command and a code block unquoted, and
 * never read as an option). digits_token: s is a positive integer in decimal. */
static int plain_token(const char *s)
{
    if (!s || !isalnum((unsigned char)*s))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
            return 0;
    return 1;
}

static int digits_token(const char *s)
{
    if (!s || *s < '1' || *s > '9' || strlen(s) > 9)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* ticks_run: the longest run of backticks in s. put_ticks: n backticks. A Markdown
 * code span or fence longer than any run inside holds s as it is. */
static size_t ticks_run(const char *s)
{
    size_t run = 0, best = 0;
    for (; *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        best = run > best ? run : best;
    }
    return best;
}

static void put_ticks(FILE *o, size_t n)
{
    while (n--)
        fputc('`', o);
}

/* s raw but for the characters a report never shows (rp_unsafe_len): '?' instead; in a
 * code span (span = 1) line breaks too, as spaces (a blank line would end the span and
 * let the rest of the file's text be read as Markdown) */
static void put_raw(FILE *o, const char *s, int span)
{
    for (; *s; s++) {
        const size_t u = rp_unsafe_len(s);
        if (u) {
            fputc('?', o);
            s += u - 1;
        } else
            fputc(span && (*s == '\n' || *s == '\r') ? ' ' : *s, o);
    }
}

/* md_code: s as one Markdown code span, raw (a code span shows backslashes and
 * entities literally), fenced by more backticks than any run inside it. */
static void md_code(FILE *o, const char *s)
{
    const size_t n = strlen(s), fence = ticks_run(s) + 1;
    const int pad = n && (s[0] == '`' || s[n - 1] == '`'); /* else the fence would merge */
    put_ticks(o, fence);
    if (pad) fputc(' ', o);
    put_raw(o, s, 1);
    if (pad) fputc(' ', o);
    put_ticks(o, fence);
}

/* study_file_path: when the resolved configuration text cfg (sections, then one
 * "key = value" per line, as `ropebench run` writes it) lists `file` in [study]
 * datasets (a comma list whose items may carry spaces), its [file] path into out[n]
 * (1); else 0. */
static int study_file_path(const char *cfg, char *out, size_t n)
{
    char sect[64] = "", path[4096] = "";
    int uses = 0;
    for (const char *l = cfg; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const size_t step = len + (e != NULL);
        if (len && l[len - 1] == '\r')
            len--;
        if (len > 2 && l[0] == '[' && l[len - 1] == ']')
            snprintf(sect, sizeof sect, "%.*s", (int)(len - 2), l + 1);
        else if (!strcmp(sect, "study") && len > 11 && !strncmp(l, "datasets = ", 11)) {
            uses = 0;
            for (size_t a = 11; a < len;) { /* items between commas, spaces trimmed */
                size_t b = a;
                while (b < len && l[b] != ',')
                    b++;
                size_t x = a, y = b;
                while (x < y && isspace((unsigned char)l[x]))
                    x++;
                while (y > x && isspace((unsigned char)l[y - 1]))
                    y--;
                uses |= y - x == 4 && !strncmp(l + x, "file", 4);
                a = b + 1;
            }
        } else if (!strcmp(sect, "file") && len > 7 && !strncmp(l, "path = ", 7) &&
                   len - 7 < sizeof path)
            snprintf(path, sizeof path, "%.*s", (int)(len - 7), l + 7);
        l += step;
    }
    if (!uses || !path[0])
        return 0;
    snprintf(out, n, "%s", path);
    return 1;
}

/* write_regenerate: how to run the study of f again, as a section of the report
 * (html or Markdown): the source at the file's git_describe, the configuration it
 * stored (written beside the report as study.ini), its rank and thread counts, its
 * kernel forced with ROPEBENCH_ISA and --dump-inputs when it had them; a resumed file
 * and a `file` dataset's input are pointed out. Nothing without config_text; a value
 * that is not a plain token (a damaged or foreign file) is left out, with its part of
 * the command. */
static void write_regenerate(FILE *o, const rp_file *f, int html)
{
    if (!rp_attr_get(&f->root, "config_text"))
        return;
    const char *git = rp_attr_get(&f->root, "git_describe"), *nr = rp_attr_get(&f->root, "nranks");
    const char *kern = rp_attr_get(&f->root, "kernel");
    const char *dump = rp_attr_get(&f->root, "dump_inputs");
    const char *thr = rp_attr_get(&f->root, "threads_per_rank");
    const int kernel_ok = plain_token(kern);
    char rev[128] = "";
    int dirty = 0;
    if (plain_token(git) && strcmp(git, "unknown") != 0 && strlen(git) < sizeof rev) {
        strcpy(rev, git);
        const size_t n = strlen(rev);
        if (n > 6 && strcmp(rev + n - 6, "-dirty") == 0) {
            rev[n - 6] = '\0';
            dirty = 1;
        }
    }
    const char *code = html ? "<code>" : "`", *uncode = html ? "</code>" : "`";
    fprintf(o, html ? "<h3>Regenerate</h3>\n<p>" : "\n### Regenerate\n\n");
    fprintf(o, "The resolved configuration above is saved beside this report as "
               "%sstudy.ini%s; copy it into a clone of the ropebench repository and run "
               "there:%s",
            code, uncode, html ? "</p>\n<pre>" : "\n\n```sh\n");
    if (rev[0])
        fprintf(o, "git checkout %s\n", rev);
    fprintf(o, "scripts/setup.sh && cmake --preset default && cmake --build build/default\n");
    if (kernel_ok)
        fprintf(o, "ROPEBENCH_ISA=%s ", kern);
    /* the other switches the run had set (/provenance environment): known names with
     * plain values only */
    const char *env = rp_attr_get(&f->prov, "environment");
    for (const char *w = env; w && *w;) {
        while (*w == ' ')
            w++;
        const size_t n = strcspn(w, " ");
        char word[96];
        if (n > 0 && n < sizeof word) {
            snprintf(word, sizeof word, "%.*s", (int)n, w);
            char *eq = strchr(word, '=');
            if (eq) {
                *eq = '\0';
                if ((!strcmp(word, "ROPEBENCH_HUGEPAGES") ||
                     !strcmp(word, "ROPEBENCH_PROBE_BALANCE") ||
                     !strcmp(word, "ROPEBENCH_BF16_AMX")) &&
                    plain_token(eq + 1))
                    fprintf(o, "%s=%s ", word, eq + 1);
            }
        }
        w += n;
    }
    fprintf(o, "scripts/mpirun.sh %s build/default/ropebench run -c study.ini",
            digits_token(nr) ? nr : "N");
    if (digits_token(thr))
        fprintf(o, " --set study.threads=%s", thr);
    fprintf(o, "%s -o results.h5\n", dump && strcmp(dump, "1") == 0 ? " --dump-inputs" : "");
    fprintf(o, "build/default/ropebench report results.h5 -o report\n");
    fprintf(o, html ? "</pre>\n<p>" : "```\n\n");
    fprintf(o, "%s; timings and peaks are the new machine's own.",
            kernel_ok ? "ROPEBENCH_ISA forces the kernel that ran and study.threads the "
                        "threads each rank used (leave them out to let the new machine "
                        "choose)"
                      : "The file does not name its kernel plainly, so the new machine "
                        "chooses one");
    if (dirty)
        fprintf(o, " The build that wrote this file had uncommitted changes (%s): the source "
                   "at %s is not exactly what ran.", git, rev);
    else if (!rev[0])
        fprintf(o, " The file does not name the commit that was built.");
    if (rp_attr_get(&f->root, "resumed_utc")) {
        fprintf(o, " This file was completed by %s--resume%s: the rank and thread counts "
                   "above are its first run's, and each case records its own.", code,
                uncode);
        const char *re = rp_attr_get(&f->root, "resume_environment"),
                   *fe = rp_attr_get(&f->prov, "environment");
        if (re && strcmp(re, fe ? fe : "") != 0) {
            fprintf(o, " The --resume run had other switches set: ");
            if (html)
                rp_html_esc(o, *re ? re : "none");
            else
                md_code(o, *re ? re : "none");
            fprintf(o, ".");
        }
    }
    char in[4096];
    if (study_file_path(rp_attr_get(&f->root, "config_text"), in, sizeof in)) {
        fprintf(o, " The %sfile%s dataset reads q, k and v from ", code, uncode);
        if (html) {
            fprintf(o, "<code>");
            rp_html_esc(o, in);
            fprintf(o, "</code>");
        } else
            md_code(o, in);
        fprintf(o, "%s: that file must be there too (or %spath%s in study.ini changed to "
                   "where it is).", in[0] == '/' ? "" : " (relative to where the run started)",
                code, uncode);
    }
    fprintf(o, " To compare the new %sresults.h5%s with this file (call it %sTHIS.h5%s): "
               "%s/usr/bin/python3 tests/compare_results.py THIS.h5 results.h5%s (every row's "
               "lse and entropy, 1e-6 relative) and %s/usr/bin/python3 tests/compare_metrics.py "
               "THIS.h5 results.h5%s (every metric; docs/results-format.md, \"Comparing two "
               "results files\").", code, uncode, code, uncode, code, uncode, code, uncode);
    fprintf(o, html ? "</p>\n" : "\n");
}

static size_t count_complete(const rp_file *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ncases; i++)
        n += f->cases[i].complete && !f->cases[i].problem;
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the study's case i (/provenance/planned_cases) is in the file at all (a run
 * that stopped before it began a case leaves no group for it): a search of the case
 * names, sorted in names (NULL without memory: a scan instead). */
static int planned_in_file(const rp_file *f, char *const *names, size_t i)
{
    if (names)
        return bsearch(&f->planned[i], names, f->ncases, sizeof *names, cmp_str) != NULL;
    for (size_t j = 0; j < f->ncases; j++)
        if (f->cases[j].name && strcmp(f->cases[j].name, f->planned[i]) == 0)
            return 1;
    return 0;
}

/* The summary line under the title: complete, incomplete and never-run cases (the first
 * RP_MISSING_LIST of the latter by name), escaped for Markdown or HTML. */
#define RP_MISSING_LIST 8
static void write_case_summary(FILE *o, const rp_file *f, int html)
{
    size_t missing = 0;
    char **names = f->ncases ? malloc(f->ncases * sizeof *names) : NULL;
    for (size_t j = 0; names && j < f->ncases; j++)
        names[j] = f->cases[j].name ? f->cases[j].name : "";
    if (names)
        qsort(names, f->ncases, sizeof *names, cmp_str);
    for (size_t i = 0; i < f->nplanned; i++)
        missing += !planned_in_file(f, names, i);
    const size_t done = count_complete(f);
    fprintf(o, " — %zu complete case(s), %zu incomplete or unreadable", done,
            f->ncases - done);
    if (missing) {
        fprintf(o, "; %zu of the study's %zu case(s) never run: ", missing, f->nplanned);
        size_t shown = 0;
        for (size_t i = 0; i < f->nplanned && shown < RP_MISSING_LIST; i++) {
            if (planned_in_file(f, names, i)) continue;
            fprintf(o, "%s", shown++ ? ", " : "");
            if (html) rp_html_esc(o, f->planned[i]);
            else rp_md_esc(o, f->planned[i]);
        }
        if (missing > shown) fprintf(o, ", …");
        fprintf(o, html ? " (<code>run --resume</code> with the same study does them)"
                        : " (`run --resume` with the same study does them)");
    }
    fprintf(o, ".");
    free(names);
}

/* rp_out_tmp: see report_int.h. */
void rp_out_tmp(char *t, size_t n, const char *path)
{
    snprintf(t, n, "%s.tmp-%ld", path, (long)getpid());
}

/* rp_close_staged: see report_int.h. */
int rp_close_staged(FILE *o, const char *path, char *err, size_t errlen)
{
    char tmp[4300];
    rp_out_tmp(tmp, sizeof tmp, path);
    /* a failed write leaves errno at its cause; flushing what is buffered sees it
     * again if the stream had not yet */
    errno = 0;
    int bad = fflush(o) != 0 || ferror(o);
    int e = errno;
    if (fclose(o) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad)
        return RB_OK;
    unlink(tmp);
    return rb_errf(err, errlen, RB_EIO,
                   "report: cannot write %s: %s (an earlier one there, if any, is left as it "
                   "was)", path, e ? strerror(e) : "write error");
}

/* rp_commit: see report_int.h. */
int rp_commit(const char *path, char *err, size_t errlen)
{
    char tmp[4300];
    rp_out_tmp(tmp, sizeof tmp, path);
    if (rename(tmp, path) == 0)
        return RB_OK;
    const int e = errno;
    unlink(tmp);
    return rb_errf(err, errlen, RB_EIO, "report: cannot write %s: %s", path, strerror(e));
}

/* rp_check_target: see report_int.h. */
int rp_check_target(const char *outdir, const char *name, char *err, size_t errlen)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    const int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return rb_errf(err, errlen, RB_EIO, "report: cannot create %s: not a regular file",
                       path);
    if (access(exists ? path : outdir, W_OK) != 0)
        return rb_errf(err, errlen, RB_EIO, "report: cannot create %s: %s", path,
                       strerror(errno));
    return RB_OK;
}

/* rp_discard: see report_int.h. */
void rp_discard(const char *path)
{
    char tmp[4300];
    rp_out_tmp(tmp, sizeof tmp, path);
    unlink(tmp); /* (gone already is fine) */
}

/* rp_open_out: see report_int.h. */
int rp_open_out(const char *outdir, const char *name, FILE **o, char *path, size_t plen,
                char *err, size_t errlen)
{
    char tmp[4300];
    snprintf(path, plen, "%s/%s", outdir, name);
    rp_out_tmp(tmp, sizeof tmp, path);
    *o = fopen(tmp, "w");
    return *o ? RB_OK
              : rb_errf(err, errlen, RB_EIO, "report: cannot create %s: %s", path,
                        strerror(errno));
}

/* ---- Markdown ---------------------------------------------------------------------- */

/* rp_case_tput: see report_int.h. */
void rp_case_tput(const rp_file *f, const rp_case *c, rp_tput *t)
{
    t->compute_s = c->tmax[RP_T_COMPUTE];
    t->gflops = t->pct_peak = t->gbps = t->pct_triad = NAN;
    if (!(t->compute_s > 0))
        return;
    t->gflops = c->flops / t->compute_s / 1e9;
    /* the peaks of the run that computed the case; files from before the case recorded
     * them: the file's, only for a case of the same rank and thread counts as the run
     * that measured those (a resumed run may use others) */
    double peak = c->peak_gflops, triad = c->triad_gbps;
    if (!isfinite(peak) && c->timing_ranks == f->peak_ranks &&
        (c->threads < 0 || f->peak_threads < 0 || c->threads == f->peak_threads)) {
        peak = f->peak_gflops;
        triad = f->triad_gbps;
    }
    t->pct_peak = 100.0 * t->gflops / peak;
    t->peak_comparable = strcmp(c->dtype, "fp32") == 0;
    t->triad_comparable = 0;
    if (strcmp(c->mode, "probe") == 0 && c->heads > 0 && c->head_dim > 0) {
        double bytes = (double)c->heads * (double)c->seq_len * (double)c->head_dim * 4.0 * 2.0;
        t->gbps = bytes / t->compute_s / 1e9;
        t->pct_triad = 100.0 * t->gbps / triad;
        const double llc = rp_llc_bytes(rp_attr_get(&f->prov, "topology_summary"));
        const double ranks = c->timing_ranks > 0 ? (double)c->timing_ranks : 1.0;
        t->triad_comparable = !(llc > 0) || bytes / ranks > 4.0 * llc;
    }
}

/* rp_llc_bytes: see report_int.h. */
double rp_llc_bytes(const char *summary)
{
    static const char *const lv[2] = {", L3 ", ", L2 "}; /* (the summary has one) */
    const char *p = NULL;
    for (int i = 0; i < 2 && summary && !p; i++)
        if ((p = strstr(summary, lv[i])))
            p += strlen(lv[i]);
    if (!p) return 0.0;
    double n = 1.0, size = 0.0;
    char unit[8] = "";
    if (sscanf(p, "%lf x %lf %7s", &n, &size, unit) != 3) {
        n = 1.0;
        if (sscanf(p, "%lf %7s", &size, unit) != 2) return 0.0;
    }
    const double m = strncmp(unit, "KiB", 3) == 0   ? 1024.0
                     : strncmp(unit, "MiB", 3) == 0 ? 1048576.0
                     : strncmp(unit, "GiB", 3) == 0 ? 1073741824.0
                                                    : 0.0;
    return n > 0 && size > 0 ? n * size * m : 0.0;
}

/* rp_tput_tally: see report_int.h. */
void rp_tput_tally(const rp_tput *t, int over[2], double worst[2])
{
    for (int k = 0; k < 2; k++) {
        const double pct = k ? t->pct_triad : t->pct_peak;
        if (!(k ? t->triad_comparable : t->peak_comparable))
            continue;
        if (pct > 100.0) { /* (NaN: not counted) */
            over[k]++;
            worst[k] = pct > worst[k] ? pct : worst[k];
        }
    }
}

/* rp_tput_over: see report_int.h. */
void rp_tput_over(FILE *o, int html, const char *where, const int over[2],
                  const double worst[2])
{
    static const char *what[2] = {"FMA peak", "triad"};
    for (int k = 0; k < 2; k++) {
        if (over[k] == 0)
            continue;
        fprintf(o, "%s%s %s%d case(s) read above 100 %% of the %s that their run measured "
                   "(up to %.1f %%). A run measures its peaks once, at its start, over a "
                   "fraction of a second; these came out low, because the machine was busier "
                   "then than while the cases ran (other processes, a clock not yet up to "
                   "speed), so every %% of %s of such a run is overstated. Compare runs made "
                   "on an idle machine.%s",
                html ? "<p>" : "\n", html ? "<strong>Note:</strong>" : "**Note:**",
                where ? where : "", over[k], what[k], worst[k], what[k],
                html ? "</p>\n" : "\n");
    }
}

/* The throughput section, as Markdown (html = 0) or HTML (html = 1). */
static void write_tput(FILE *o, const rp_file *f, int html)
{
    int over[2] = {0, 0};         /* cases above 100 % of the FMA peak, of the triad */
    double worst[2] = {0.0, 0.0}; /* the highest of those % */
    static const char *cols[] = {"case", "kernel", "dtype", "threads/rank",
                                 "compute s (slowest rank)", "GFLOP/s", "% of FMA peak",
                                 "K/V GB/s (probe)", "% of triad",
                                 "metrics on / off (× compute)"};
    const int ncol = (int)(sizeof cols / sizeof cols[0]);
    if (count_complete(f) == 0)
        return;
    fprintf(o, html ? "<h2>Throughput</h2>\n<p>" : "\n## Throughput\n\n");
    if (isfinite(f->peak_gflops)) {
        char tri[64];
        if (isfinite(f->triad_gbps))
            snprintf(tri, sizeof tri, "triad %.1f GB/s", f->triad_gbps);
        else
            snprintf(tri, sizeof tri, "no triad recorded");
        fprintf(o, "Peaks measured by this run on all %lld rank(s) at once: FMA %.1f GFLOP/s, "
                   "%s (sums over ranks). Each case is compared with the peaks "
                   "of the run that computed it (a resumed run measures its own, for its rank "
                   "and thread counts; in files from before cases recorded them, a case of "
                   "other counts than this run's shows n/a). ",
                (long long)f->peak_ranks, f->peak_gflops, tri);
    } else
        fprintf(o, "This file holds no peak measurements: the %% columns are n/a. ");
    fprintf(o, "GFLOP/s counts 4·d FLOP per visible (query, key) pair (the case's `flops` "
               "attribute) over the slowest rank's compute time; probe cases also show the "
               "K/V bytes streamed once per head. Metrics on / off is what the case's metrics "
               "cost on top of its attention, as the slowest rank sets both: the largest "
               "compute + metrics seconds of a rank over the largest compute seconds (the "
               "`timing/compute_s` and `timing/metrics_s` datasets).%s",
            html ? "</p>\n" : "\n\n");
    rp_table_head(o, html, cols, ncol);
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem)
            continue;
        rp_tput t;
        rp_case_tput(f, c, &t);
        const char *cells[3] = {c->name, c->kernel, c->dtype};
        fprintf(o, html ? "<tr>" : "|");
        for (int j = 0; j < 3; j++)
            rp_cell_text(o, html, cells[j]);
        /* metrics.enabled = false writes metrics_s = 0: no cost to show, not 1.00 */
        double nums[7] = {(double)c->threads, t.compute_s, t.gflops, t.pct_peak, t.gbps,
                          t.pct_triad, c->has_metrics ? c->metrics_cost : NAN};
        static const char *fmts[7] = {"%.0f", "%.4g", "%.2f", "%.1f", "%.2f", "%.1f", "%.2f"};
        for (int j = 0; j < 7; j++)
            rp_cell_num(o, html, j == 0 && c->threads < 0 ? NAN : nums[j], fmts[j]);
        fprintf(o, html ? "</tr>\n" : "\n");
        rp_tput_tally(&t, over, worst);
    }
    if (html)
        fprintf(o, "</table>\n");
    rp_tput_over(o, html, NULL, over, worst);
}

/* The cases table (complete cases: means, timings), as Markdown (html = 0) or HTML
 * (html = 1); a file without cases (ropebench bench -o alone) says so instead. */
static void write_cases(FILE *o, const rp_file *f, int html)
{
    static const char *cols[] = {"case", "method", "factor", "seq_len", "mode", "dataset",
                                 "rows", "mean entropy (nats)", "mean lse (nats)", "compute s",
                                 "comm wait s", "merge s", "total s", "metrics s"};
    char b[256];
    fprintf(o, html ? "<h2>Cases</h2>\n<p>" : "\n## Cases\n\n");
    if (f->ncases == 0) {
        if (f->bench.t.n > 0 || f->bench.unreadable)
            fprintf(o, "This file holds no cases: it was written by ropebench bench -o alone, "
                       "so only its throughput table is shown%s.%s",
                    f->bench.unreadable ? " (which could not be read)" : "",
                    html ? "</p>\n" : "\n");
        else
            fprintf(o, "This file holds no cases and no `/bench` table: no case of its study "
                       "finished, or the file was written by neither `run` nor `bench -o`.%s",
                    html ? "</p>\n" : "\n");
        return;
    }
    fprintf(o, "Means are over heads and rows; timings are min / median / max across ranks, "
               "in seconds.%s",
            html ? "</p>\n" : "\n\n");
    rp_table_head(o, html, cols, (int)(sizeof cols / sizeof cols[0]));
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem)
            continue;
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, c->name);
        rp_cell_text(o, html, c->method);
        rp_cell_num(o, html, c->factor, "%g");
        rp_cell_num(o, html, (double)c->seq_len, "%.0f");
        rp_cell_text(o, html, c->mode);
        rp_cell_text(o, html, c->dataset);
        rp_cell_num(o, html, (double)c->nrows_read, "%.0f");
        rp_cell_num(o, html, c->mean_entropy, "%.6f");
        rp_cell_num(o, html, c->mean_lse, "%.6f");
        for (int j = RP_T_COMPUTE; j < RP_T_COUNT; j++) {
            fmt_timing(b, sizeof b, c, j);
            fprintf(o, html ? "<td class=\"num\">%s</td>" : " %s |", b);
        }
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
    /* values the means leave out, so that a mean over fewer rows than shown is told */
    int any = 0;
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem || c->nonfinite == 0)
            continue;
        if (!any)
            fprintf(o, html ? "<p>Left out of the means as not finite (NaN or ±inf), "
                              "entropy and lse values together: "
                            : "\nLeft out of the means as not finite (NaN or ±inf), "
                              "entropy and lse values together: ");
        fprintf(o, "%s", any ? "; " : "");
        if (html)
            rp_html_esc(o, c->name);
        else
            rp_md_esc(o, c->name);
        fprintf(o, " %lld", (long long)c->nonfinite);
        any = 1;
    }
    if (any)
        fprintf(o, html ? ".</p>\n" : ".\n");
}

/* The metrics summary (docs/metrics.md), as Markdown (html = 0) or HTML (html = 1). */
static void write_metrics(FILE *o, const rp_file *f, int html)
{
    static const char *cols[] = {"case", "critical pair", "D leaves 0 at distance",
                                 "first Δ with negative B(Δ)", "entropy, last position bin (nats)",
                                 "needle hit rate against the haystack",
                                 "needle hit rate among all keys", "fp32 phase error max (rad)",
                                 "max abs entropy error from fp32 phases (nats)", "softmax floor ratio min (≥ 1)",
                                 "precision bound ratio max (≤ 1)"};
    const int ncol = (int)(sizeof cols / sizeof cols[0]);
    size_t n = 0;
    for (size_t i = 0; i < f->ncases; i++)
        n += f->cases[i].complete && !f->cases[i].problem && f->cases[i].has_metrics;
    if (n == 0)
        return;
    fprintf(o, html ? "<h2>Metrics</h2>\n<p>" : "\n## Metrics\n\n");
    fprintf(o, "Per case, from its metric groups (formulas in docs/metrics.md). n/a: not "
               "computed for this mode or dataset. D leaves 0: the first distance Δ in [1, L−1] "
               "with D(Δ) > 1e-9 rad (phase/by_distance@D_leaves_zero; never: none); in files "
               "without that attribute, from the bin centres where D was sampled, a–b: D = 0 "
               "at a and D > 0 at the next centre b. none: B(Δ) ≥ 0 for every Δ in "
               "[1, L−1]. Needle hit rate: the share of (head, needle) pairs whose needle "
               "scores first, against the haystack (the keys that are not the query's "
               "needles) and among all the keys the query sees.%s",
            html ? "</p>\n" : "\n\n");
    rp_table_head(o, html, cols, ncol);
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem || !c->has_metrics)
            continue;
        const rp_metrics *m = &c->met;
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, c->name);
        /* critical_pair = np (docs/metrics.md, 1) when every pair completed a turn in
         * training: no pair of that index exists */
        if (m->critical_pair >= 0 && m->critical_pair >= c->tab[RP_TAB_PAIRS].n &&
            c->tab[RP_TAB_PAIRS].n > 0)
            rp_cell_text(o, html, "none");
        else
            rp_cell_num(o, html, m->critical_pair < 0 ? NAN : (double)m->critical_pair,
                        "%.0f");
        char b[96];
        if (m->d_exact > 0)
            snprintf(b, sizeof b, "%lld", (long long)m->d_exact);
        else if (m->d_exact == -1)
            snprintf(b, sizeof b, "never");
        else if (c->tab[RP_TAB_PHASE].n == 0)
            snprintf(b, sizeof b, "n/a");
        else if (isnan(m->d_leaves_zero))
            snprintf(b, sizeof b, "never");
        else if (isnan(m->d_zero_before) || m->d_leaves_zero - m->d_zero_before == 1.0)
            snprintf(b, sizeof b, "%.0f", m->d_leaves_zero);
        else
            snprintf(b, sizeof b, "%.0f–%.0f", m->d_zero_before, m->d_leaves_zero);
        rp_cell_text(o, html, b);
        if (m->first_negative_B == -1)
            rp_cell_text(o, html, "none");
        else
            rp_cell_num(o, html, m->first_negative_B < 0 ? NAN : (double)m->first_negative_B,
                        "%.0f");
        double v[7] = {m->entropy_last,    m->needle_hit_rate, m->needle_hit_rate_all,
                       m->phase_err_max,   m->entropy_err_max, m->floor_ratio_min,
                       m->bound_ratio_max};
        static const char *fmt[7] = {"%.4f", "%.2f", "%.2f", "%.3g", "%.3g", "%.3g", "%.3g"};
        for (int j = 0; j < 7; j++)
            rp_cell_num(o, html, v[j], fmt[j]);
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
}

/* plot_tool: what drew the plots, from the first SVG drawn (under its temporary name,
 * rp_plots_render): its "Produced by ..." line (gnuplot writes its version there), into b[n]; "" if none. */
static void plot_tool(const rp_plot *p, size_t np, const char *outdir, char *b, size_t n)
{
    b[0] = '\0';
    for (size_t k = 0; k < np && !b[0]; k++) {
        if (!p[k].svg_name[0])
            continue;
        char dst[4200], path[4300], head[4096];
        snprintf(dst, sizeof dst, "%s/%s", outdir, p[k].svg_name);
        rp_out_tmp(path, sizeof path, dst); /* (staged until the report is whole) */
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        const size_t got = fread(head, 1, sizeof head - 1, f);
        fclose(f);
        head[got] = '\0';
        const char *at = strstr(head, "Produced by ");
        if (!at)
            continue;
        at += strlen("Produced by ");
        size_t len = strcspn(at, "<\n");
        while (len && at[len - 1] == ' ')
            len--;
        if (len >= n)
            len = n - 1;
        for (size_t i = 0; i < len; i++) /* plain text only */
            b[i] = isprint((unsigned char)at[i]) ? at[i] : '?';
        b[len] = '\0';
    }
}

/* write_file_id: after the results file's name, its size and SHA-256 (so that a reader
 * can tell the report was made from the file they hold) and what drew the plots. */
static void write_file_id(FILE *o, const rp_file *f, const rp_plot *p, size_t np,
                          const char *outdir, int html)
{
    const char *code = html ? "<code>" : "`", *uncode = html ? "</code>" : "`";
    if (f->sha256[0])
        fprintf(o, " (%lld bytes, SHA-256 %s%s%s)", (long long)f->size, code, f->sha256,
                uncode);
    char tool[128];
    plot_tool(p, np, outdir, tool, sizeof tool);
    if (tool[0]) {
        fprintf(o, ", plots drawn by ");
        if (html)
            rp_html_esc(o, tool);
        else
            rp_md_esc(o, tool);
    }
}

/* rp_write_md: see report_int.h. */
int rp_write_md(const rp_file *f, const rp_plot *p, size_t np, const char *outdir,
                const char *plot_note, char *err, size_t errlen)
{
    char path[4200];
    FILE *o;
    const int orc = rp_open_out(outdir, "report.md", &o, path, sizeof path, err, errlen);
    if (orc != RB_OK)
        return orc;
    fprintf(o, "# ropebench report\n\nResults file: ");
    md_code(o, f->path);
    write_file_id(o, f, p, np, outdir, 0);
    write_case_summary(o, f, 0);
    fprintf(o, "\n\n");

    fprintf(o, "## Provenance\n\n| attribute | value |\n|---|---|\n");
    for (size_t i = 0; i < f->root.n; i++) {
        if (strcmp(f->root.v[i].name, "config_text") == 0)
            continue;
        fprintf(o, "| ");
        rp_md_esc(o, f->root.v[i].name);
        fprintf(o, " | ");
        rp_md_esc(o, f->root.v[i].value);
        fprintf(o, " |\n");
    }
    for (size_t i = 0; i < f->prov.n; i++) {
        fprintf(o, "| provenance/");
        rp_md_esc(o, f->prov.v[i].name);
        fprintf(o, " | ");
        rp_md_esc(o, f->prov.v[i].value);
        fprintf(o, " |\n");
    }
    if (f->nrank_host) {
        fprintf(o, "\n### Ranks\n\n| rank | host | binding |\n|---|---|---|\n");
        for (size_t i = 0; i < f->nrank_host; i++) {
            fprintf(o, "| %zu | ", i);
            rp_md_esc(o, f->rank_host[i]);
            fprintf(o, " | ");
            rp_md_esc(o, i < f->nrank_binding ? f->rank_binding[i] : "");
            fprintf(o, " |\n");
        }
    }
    if (f->nhosts) {
        fprintf(o, "\nhwloc topology XML stored in `/provenance/topology_xml` for: ");
        for (size_t i = 0; i < f->nhosts; i++) {
            fprintf(o, "%s", i ? ", " : "");
            rp_md_esc(o, f->hosts[i]);
            if (i < f->ntopo)
                fprintf(o, " (%zu bytes)", f->topo_xml_len[i]);
        }
        fprintf(o, ".\n");
    }
    const char *cfg = rp_attr_get(&f->root, "config_text");
    if (cfg) {
        const size_t best = ticks_run(cfg), fence = best < 3 ? 3 : best + 1;
        fprintf(o, "\n### Configuration (resolved)\n\n");
        put_ticks(o, fence);
        fprintf(o, "ini\n");
        put_raw(o, cfg, 0);
        fprintf(o, "%s", cfg[0] && cfg[strlen(cfg) - 1] == '\n' ? "" : "\n");
        put_ticks(o, fence);
        fputc('\n', o);
    }
    write_regenerate(o, f, 0);

    write_cases(o, f, 0);
    write_tput(o, f, 0);
    write_metrics(o, f, 0);
    rp_write_metric_tables(o, f, 0);
    rp_write_bench(o, f, 0);
    if (count_complete(f) < f->ncases) {
        fprintf(o, "\n### Incomplete or unreadable cases (skipped)\n\n");
        for (size_t i = 0; i < f->ncases; i++) {
            const rp_case *c = &f->cases[i];
            if (c->complete && !c->problem)
                continue;
            fprintf(o, "- ");
            md_code(o, c->name); /* (escapes do not work inside a code span) */
            fprintf(o, ": ");
            rp_md_esc(o, c->problem ? c->problem : "incomplete");
            fprintf(o, "\n");
        }
    }

    fprintf(o, "\n## Plots\n\n");
    if (plot_note) {
        fprintf(o, "Plots not (all) rendered: ");
        rp_md_esc(o, plot_note);
        fprintf(o, "\n\n"); /* a paragraph of its own: the first figure follows */
    } else if (np == 0)
        fprintf(o, "No complete case has rows to plot.\n");
    for (size_t k = 0; k < np; k++) {
        if (!p[k].svg_name[0])
            continue;
        char cap[768];
        rp_plot_caption(cap, sizeof cap, &p[k]);
        fprintf(o, "![");
        rp_md_esc(o, cap);
        fprintf(o, "](%s)\n\n*", p[k].svg_name);
        rp_md_esc(o, cap);
        fprintf(o, "*\n\n");
    }
    return rp_close_staged(o, path, err, errlen);
}

/* ---- HTML -------------------------------------------------------------------------- */

static void html_row(FILE *o, const char *k, const char *v)
{
    fprintf(o, "<tr><th>");
    rp_html_esc(o, k);
    fprintf(o, "</th><td>");
    rp_html_esc(o, v);
    fprintf(o, "</td></tr>\n");
}

/* rp_write_html: see report_int.h. */
/* rp_html_begin: see report_int.h. */
void rp_html_begin(FILE *o, const char *title)
{
    fprintf(o,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>%s</title>\n<style>\n"
            "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;"
            "padding:0 1em;color:#222}\n"
            "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}\n"
            "th,td{border:1px solid #ccc;padding:0.25em 0.5em;text-align:left;"
            "vertical-align:top}\n"
            "thead th{background:#f0f0f0}\ntd.num{text-align:right;"
            "font-variant-numeric:tabular-nums}\n"
            "pre{background:#f7f7f7;padding:0.8em;overflow-x:auto;border:1px solid #ddd}\n"
            "figure{margin:1.5em 0}\nfigcaption{font-size:0.9em;color:#444;"
            "max-width:820px}\n"
            "svg{max-width:100%%;height:auto}\n.warn{color:#a40}\n"
            "</style>\n</head>\n<body>\n<h1>%s</h1>\n", title, title);
}

int rp_write_html(const rp_file *f, const rp_plot *p, size_t np, const char *outdir,
                  const char *plot_note, char *err, size_t errlen)
{
    char path[4200], b[256];
    FILE *o;
    const int orc = rp_open_out(outdir, "report.html", &o, path, sizeof path, err, errlen);
    if (orc != RB_OK)
        return orc;
    rp_html_begin(o, "ropebench report");
    fprintf(o, "<p>Results file: <code>");
    rp_html_esc(o, f->path);
    fprintf(o, "</code>");
    write_file_id(o, f, p, np, outdir, 1);
    write_case_summary(o, f, 1);
    fprintf(o, "</p>\n");

    fprintf(o, "<h2>Provenance</h2>\n<table>\n");
    for (size_t i = 0; i < f->root.n; i++)
        if (strcmp(f->root.v[i].name, "config_text") != 0)
            html_row(o, f->root.v[i].name, f->root.v[i].value);
    for (size_t i = 0; i < f->prov.n; i++) {
        snprintf(b, sizeof b, "provenance/%s", f->prov.v[i].name);
        html_row(o, b, f->prov.v[i].value);
    }
    fprintf(o, "</table>\n");
    if (f->nrank_host) {
        fprintf(o, "<h3>Ranks</h3>\n<table>\n<thead><tr><th>rank</th><th>host</th>"
                   "<th>binding</th></tr></thead>\n");
        for (size_t i = 0; i < f->nrank_host; i++) {
            fprintf(o, "<tr><td class=\"num\">%zu</td><td>", i);
            rp_html_esc(o, f->rank_host[i]);
            fprintf(o, "</td><td>");
            rp_html_esc(o, i < f->nrank_binding ? f->rank_binding[i] : "");
            fprintf(o, "</td></tr>\n");
        }
        fprintf(o, "</table>\n");
    }
    if (f->nhosts) {
        fprintf(o, "<p>hwloc topology XML stored in <code>/provenance/topology_xml</code> "
                   "for: ");
        for (size_t i = 0; i < f->nhosts; i++) {
            fprintf(o, "%s", i ? ", " : "");
            rp_html_esc(o, f->hosts[i]);
            if (i < f->ntopo)
                fprintf(o, " (%zu bytes)", f->topo_xml_len[i]);
        }
        fprintf(o, ".</p>\n");
    }
    const char *cfg = rp_attr_get(&f->root, "config_text");
    if (cfg) {
        fprintf(o, "<h3>Configuration (resolved)</h3>\n<pre>");
        rp_html_esc(o, cfg);
        fprintf(o, "</pre>\n");
    }
    write_regenerate(o, f, 1);

    write_cases(o, f, 1);
    write_tput(o, f, 1);
    write_metrics(o, f, 1);
    rp_write_metric_tables(o, f, 1);
    rp_write_bench(o, f, 1);
    if (count_complete(f) < f->ncases) {
        fprintf(o, "<h3>Incomplete or unreadable cases (skipped)</h3>\n<ul>\n");
        for (size_t i = 0; i < f->ncases; i++) {
            const rp_case *c = &f->cases[i];
            if (c->complete && !c->problem)
                continue;
            fprintf(o, "<li><code>");
            rp_html_esc(o, c->name);
            fprintf(o, "</code>: ");
            rp_html_esc(o, c->problem ? c->problem : "incomplete");
            fprintf(o, "</li>\n");
        }
        fprintf(o, "</ul>\n");
    }

    fprintf(o, "<h2>Plots</h2>\n");
    if (plot_note) {
        fprintf(o, "<p class=\"warn\">Plots not (all) rendered: ");
        rp_html_esc(o, plot_note);
        fprintf(o, "</p>\n");
    } else if (np == 0)
        fprintf(o, "<p>No complete case has rows to plot.</p>\n");
    for (size_t k = 0; k < np; k++) {
        if (!p[k].svg)
            continue;
        char cap[768];
        rp_plot_caption(cap, sizeof cap, &p[k]);
        fprintf(o, "<figure>\n%s\n<figcaption>", p[k].svg);
        rp_html_esc(o, cap);
        fprintf(o, "</figcaption>\n</figure>\n");
    }
    fprintf(o, "</body>\n</html>\n");
    return rp_close_staged(o, path, err, errlen);
}

/* ---- entry point ------------------------------------------------------------------- */

/* rp_make_dirs: see report_int.h (mkdir -p). */
int rp_make_dirs(const char *dir, char *err, size_t errlen)
{
    char buf[4096];
    struct stat st;
    if (strlen(dir) >= sizeof buf)
        return rb_errf(err, errlen, RB_EINVAL, "report: output directory name too long");
    strcpy(buf, dir);
    for (char *q = buf + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char c = *q;
            *q = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return rb_errf(err, errlen, RB_EIO, "report: cannot create directory %s: %s",
                               buf, strerror(errno));
            *q = c;
            if (!c)
                break;
        }
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rb_errf(err, errlen, RB_EIO, "report: %s is not a directory", dir);
    return RB_OK;
}

/* study.ini's first line, by which a report knows the file as its own to replace */
#define RP_INI_MARK "# study.ini written by `ropebench report`"

/* write_study_ini: the file's config_text as OUTDIR/study.ini, after RP_INI_MARK and
 * the results file's name: the configuration the report's Regenerate section runs
 * (nothing without config_text). */
static int write_study_ini(const rp_file *f, const char *outdir, char *err, size_t errlen)
{
    const char *cfg = rp_attr_get(&f->root, "config_text");
    if (!cfg)
        return RB_OK;
    char path[4200];
    FILE *o;
    const int orc = rp_open_out(outdir, "study.ini", &o, path, sizeof path, err, errlen);
    if (orc != RB_OK)
        return orc;
    fprintf(o, "%s: the resolved configuration of the run that wrote\n# ", RP_INI_MARK);
    for (const char *c = f->path; *c; c++) /* the name on one comment line */
        fputc(*c == '\n' || *c == '\r' ? '?' : *c, o);
    fprintf(o, "\n%s%s", cfg, cfg[0] && cfg[strlen(cfg) - 1] == '\n' ? "" : "\n");
    return rp_close_staged(o, path, err, errlen);
}

/* ini_is_ours: an existing study.ini at path begins with RP_INI_MARK (a report wrote
 * it, so it may be replaced; anything else is the user's and is not). */
static int ini_is_ours(const char *path)
{
    char head[sizeof RP_INI_MARK] = "";
    FILE *i = fopen(path, "r");
    if (!i)
        return 0;
    const size_t got = fread(head, 1, sizeof head - 1, i);
    fclose(i);
    head[got] = '\0';
    return strcmp(head, RP_INI_MARK) == 0;
}

#define RP_PLOTS_LIST "report-plots.txt"
#define RP_PLOTS_MARK "# plots written by `ropebench report` into this directory"

/* old_svgs: the plots an earlier report wrote into outdir, as its RP_PLOTS_LIST lists
 * them (only a list that begins with RP_PLOTS_MARK, and only names of the characters
 * the report gives its plots, ending in .svg: nothing else is ever removed), into a
 * NUL-separated list (*names, *len bytes; NULL if none). */
static void old_svgs(const char *outdir, char **names, size_t *len)
{
    char path[4200], line[512];
    *names = NULL;
    *len = 0;
    snprintf(path, sizeof path, "%s/%s", outdir, RP_PLOTS_LIST);
    FILE *i = fopen(path, "r");
    if (!i)
        return;
    if (!fgets(line, sizeof line, i) || strncmp(line, RP_PLOTS_MARK, strlen(RP_PLOTS_MARK))) {
        fclose(i);
        return;
    }
    size_t cap = 0;
    while (fgets(line, sizeof line, i)) {
        size_t n = strcspn(line, "\n");
        line[n] = '\0';
        int ok = n > 4 && strcmp(line + n - 4, ".svg") == 0 && line[0] != '.';
        for (size_t k = 0; ok && k < n; k++)
            ok = isalnum((unsigned char)line[k]) || strchr("._-", line[k]);
        if (!ok)
            continue;
        if (*len + n + 1 > cap) {
            cap = 2 * cap + n + 4096;
            char *t = realloc(*names, cap);
            if (!t)
                break;
            *names = t;
        }
        memcpy(*names + *len, line, n + 1);
        *len += n + 1;
    }
    fclose(i);
}

/* write_plots_list: RP_PLOTS_LIST, the plots this report drew (for the next one). */
static int write_plots_list(const rp_plot *p, size_t np, const char *outdir, char *err,
                            size_t errlen)
{
    char path[4200];
    FILE *o;
    const int orc = rp_open_out(outdir, RP_PLOTS_LIST, &o, path, sizeof path, err, errlen);
    if (orc != RB_OK)
        return orc;
    fprintf(o, "%s (the next report here removes those it does not draw)\n", RP_PLOTS_MARK);
    for (size_t k = 0; k < np; k++)
        if (p[k].svg_name[0])
            fprintf(o, "%s\n", p[k].svg_name);
    return rp_close_staged(o, path, err, errlen);
}

/* rb_report_write: see rb_reports.h. When plots cannot be rendered the Markdown and
 * HTML reports are still written (saying so) and the plot error is returned. The
 * plots an earlier report listed in RP_PLOTS_LIST that this one does not draw are
 * removed (a report of another file into the same directory left them beside the new
 * one). */
int rb_report_write(const char *results_path, const char *outdir, char *err,
                    size_t errlen, int *written)
{
    if (written)
        *written = 0;
    int rc = RB_OK, prc = RB_OK;
    rp_file f;
    rp_plot *plots = NULL;
    size_t np = 0;
    char perr[512] = "", *old = NULL;
    size_t old_len = 0;
    if (!outdir || !*outdir)
        outdir = ".";
    rc = rp_file_read(results_path, &f, err, errlen);
    if (rc != RB_OK)
        return rc;
    rc = rp_make_dirs(outdir, err, errlen);
    if (rc != RB_OK)
        goto cleanup;
    /* both documents (and study.ini, when the file stored its configuration) can be
     * created, checked before any plot is drawn, so that a report that cannot be
     * written leaves no plots behind */
    static const char *const outs[4] = {"report.md", "report.html", RP_PLOTS_LIST, "study.ini"};
    for (int i = 0; i < (rp_attr_get(&f.root, "config_text") ? 4 : 3) && rc == RB_OK; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", outdir, outs[i]);
        const int exists = stat(path, &st) == 0;
        if ((rc = rp_check_target(outdir, outs[i], err, errlen)) == RB_OK && exists &&
            i == 3 && !ini_is_ours(path))
            rc = rb_errf(err, errlen, RB_EIO,
                         "report: %s exists and no report wrote it (a study of yours?); "
                         "move it, or give -o another directory", path);
    }
    if (rc != RB_OK)
        goto cleanup;
    old_svgs(outdir, &old, &old_len);
    /* every output is written under its temporary name first (rp_close_staged; the
     * plots too), and all replace their earlier versions only once all are whole: a
     * report that fails half-way leaves the directory as the last one left it, not new
     * plots beside an old report.html */
    prc = rp_plots_render(&f, outdir, &plots, &np, perr, sizeof perr);
    const char *note = prc != RB_OK ? perr : NULL;
    const int has_ini = rp_attr_get(&f.root, "config_text") != NULL;
    rc = rp_write_md(&f, plots, np, outdir, note, err, errlen);
    if (rc == RB_OK)
        rc = rp_write_html(&f, plots, np, outdir, note, err, errlen);
    if (rc == RB_OK)
        rc = write_study_ini(&f, outdir, err, errlen);
    if (rc == RB_OK)
        rc = write_plots_list(plots, np, outdir, err, errlen);
    {
        char path[4200];
        for (size_t k = 0; k < np; k++) {
            if (!plots[k].svg_name[0])
                continue;
            snprintf(path, sizeof path, "%s/%s", outdir, plots[k].svg_name);
            if (rc == RB_OK)
                rc = rp_commit(path, err, errlen);
            else
                rp_discard(path);
        }
        for (int i = 3; i >= 0; i--) { /* study.ini, the list, then the documents */
            if (i == 3 && !has_ini)
                continue;
            snprintf(path, sizeof path, "%s/%s", outdir, outs[i]);
            if (rc == RB_OK)
                rc = rp_commit(path, err, errlen);
            else
                rp_discard(path);
        }
        /* a study.ini an earlier report wrote, when this file stored no configuration,
         * would be taken for this one's */
        snprintf(path, sizeof path, "%s/study.ini", outdir);
        if (rc == RB_OK && !has_ini && ini_is_ours(path))
            unlink(path);
    }
    for (size_t at = 0; rc == RB_OK && old && at < old_len; at += strlen(old + at) + 1) {
        int kept = 0;
        for (size_t k = 0; k < np && !kept; k++)
            kept = strcmp(plots[k].svg_name, old + at) == 0;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", outdir, old + at);
        if (!kept)
            unlink(path); /* gone already is fine */
    }
    if (rc == RB_OK && written)
        *written = 1;
    if (rc == RB_OK && errlen) {
        /* finished cases that could not be read (a damaged file), and /cases entries
         * that are no case (a soft link, not a readable group), are said on the
         * terminal too, not only in the report's list of skipped cases; after the
         * plots' failure, when some failed (a line each) */
        size_t bad = 0, first = 0, drawn = 0;
        for (size_t i = 0; i < f.ncases; i++)
            if (f.cases[i].problem && (f.cases[i].complete || f.cases[i].not_case) && !bad++)
                first = i;
        for (size_t k = 0; k < np; k++)
            drawn += plots[k].svg_name[0] != '\0';
        err[0] = '\0';
        if (prc != RB_OK)
            rc = rb_errf(err, errlen, prc, "%s (report.md and report.html written %s)", perr,
                         drawn ? "with the other plots" : "without plots");
        if (bad) {
            size_t at = strlen(err);
            if (at && at + 1 < errlen) { /* the second line */
                err[at++] = '\n';
                err[at] = '\0';
            }
            char nm[600];
            rp_printable(nm, sizeof nm, f.cases[first].name);
            snprintf(err + at, errlen - at, "report: %s: %zu finished case(s) or /cases "
                     "entries could not be read and are listed as skipped (%s: %s%s)",
                     results_path, bad, nm, f.cases[first].problem,
                     bad > 1 ? "; and others" : "");
        }
    }
cleanup:
    free(old);
    rp_plots_free(plots, np);
    rp_file_free(&f);
    return rc;
}
