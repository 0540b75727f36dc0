/* report_plot.c — groups complete cases by (seq_len, mode, dataset) and renders entropy-vs-position plots to SVG with gnuplot. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rb_kernels.h"
#include "report_int.h"

extern char **environ;

/* rp_safe_label: see report_int.h. */
void rp_safe_label(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    if (!len)
        return;
    for (; src && src[i] && i + 1 < len; i++) {
        char c = src[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 strchr(" ._+=,-", c) != NULL;
        dst[i] = ok ? c : '_';
    }
    dst[i] = '\0';
}

/* File-name part: [A-Za-z0-9._-] only. */
static void safe_name(char *dst, size_t len, const char *src)
{
    rp_safe_label(dst, len, src);
    for (char *p = dst; *p; p++)
        if (strchr(" +=,", *p))
            *p = '_';
}

/* What each kind of plot shows. */
static const struct {
    const char *file;   /* SVG name prefix */
    const char *xlabel, *ylabel;
    const char *caption; /* first sentence of the caption */
    int logx, points;
} kinds[RP_S_COUNT] = {
    {"entropy", "query position", "attention entropy (nats, mean over heads)",
     "Attention entropy (nats, mean over heads) against query position, log x axis", 1, 0},
    {"phase-distance", "distance (tokens)", "D: phase distance to the trained set (rad)",
     "Phase distance D to the trained set (rad, amplitude-weighted RMS of wrapped phase "
     "differences, minimised over trained distances) against distance, log x axis", 1, 0},
    {"decay", "distance (tokens)", "mean score over (probe row, key) pairs",
     "Mean attention score over all (probe row, key) pairs per distance bin, log x axis", 1, 0},
    {"needle-rank", "needle distance (tokens)", "rank of the needle score (1 = hit)",
     "Rank of each needle's score among the keys its query sees (1 = retrieved), against "
     "needle distance, log x axis, all heads", 1, 1},
    {"precision", "query position", "max phase error of fp32 phases (rad)",
     "Largest phase error of fp32 phases (float pos * float inv_freq) against exact phases, "
     "per probe row, log x axis", 1, 0},
};

/* Series of kind k of a case. */
static void series_of(const rp_case *c, int k, const double **x, const double **y,
                      int64_t *n)
{
    if (k == RP_S_ENTROPY) {
        *x = c->x;
        *y = c->y;
        *n = c->npts;
    } else {
        *x = c->s[k].x;
        *y = c->s[k].y;
        *n = c->s[k].n;
    }
}

/* rp_plot_caption: see report_int.h. */
void rp_plot_caption(char *b, size_t n, const rp_plot *p)
{
    if (p->kind == RP_HEATMAP) {
        snprintf(b, n, "Per-pair attention share (metric 5) of case %s: the attention-weighted "
                       "mean score contribution of each rotary pair (x, 0 = highest frequency) "
                       "at each distance (y, log scale, bin centres), logit units.",
                 p->case_name);
        return;
    }
    snprintf(b, n, "%s: seq_len %lld, %s mode, %s data; one line per method.%s%s",
             kinds[p->kind].caption, (long long)p->seq_len, p->mode, p->dataset,
             p->kind == RP_S_ENTROPY ? " Position 0 (a single visible key, entropy 0) is not "
                                       "shown."
                                     : "",
             p->kind == RP_S_ENTROPY && p->binned
                 ? " Cases with more than 512 rows are drawn as log-binned means (8 bins per "
                   "octave of position) so that the SVG stays small."
                 : "");
}

static int group_cmp(const rp_case *a, int kind, const rp_plot *p)
{
    return p->kind == kind && a->seq_len == p->seq_len && strcmp(a->mode, p->mode) == 0 &&
           strcmp(a->dataset, p->dataset) == 0;
}

static int plot_order(const void *x, const void *y)
{
    const rp_plot *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->seq_len != b->seq_len)
        return a->seq_len < b->seq_len ? -1 : 1;
    int c = strcmp(a->mode, b->mode);
    return c ? c : strcmp(a->dataset, b->dataset);
}

/* Read a whole small text file. */
static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    char *buf = NULL;
    if (!fp)
        return NULL;
    if (fseek(fp, 0, SEEK_END) == 0) {
        long n = ftell(fp);
        if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            size_t got = fread(buf, 1, (size_t)n, fp);
            buf[got] = '\0';
            if (len)
                *len = got;
        }
    }
    fclose(fp);
    return buf;
}

/* Last non-empty line of a text, bounded, for an error message. */
static void last_line(const char *text, char *dst, size_t len)
{
    dst[0] = '\0';
    if (!text)
        return;
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    size_t n = (size_t)(end - start);
    if (n >= len)
        n = len - 1;
    memcpy(dst, start, n);
    dst[n] = '\0';
}

/* Make ids of one inline SVG unique in the page: id='x' -> id='pK_x', and the
 * references to them. */
static char *svg_for_inline(const char *svg, int k)
{
    const char *s = strstr(svg, "<svg");
    if (!s)
        return NULL;
    char pre[16];
    int pl = snprintf(pre, sizeof pre, "p%d_", k);
    static const char *pat[] = {"id='", "id=\"", "href='#", "href=\"#", "url(#"};
    size_t cap = strlen(s) * 2 + 64, o = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    while (*s) {
        int hit = 0;
        for (size_t i = 0; i < sizeof pat / sizeof *pat; i++) {
            size_t n = strlen(pat[i]);
            if (strncmp(s, pat[i], n) == 0) {
                if (o + n + (size_t)pl + 1 >= cap)
                    break;
                memcpy(out + o, s, n);
                o += n;
                memcpy(out + o, pre, (size_t)pl);
                o += (size_t)pl;
                s += n;
                hit = 1;
                break;
            }
        }
        if (!hit) {
            if (o + 2 >= cap) {
                char *n2 = realloc(out, cap *= 2);
                if (!n2) {
                    free(out);
                    return NULL;
                }
                out = n2;
            }
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
    return out;
}

/* Remove the temp dir and the files this code put there. */
static void rm_tmp(const char *dir, size_t nplots, const rp_plot *p)
{
    char f[4200];
    for (size_t k = 0; k < nplots; k++) {
        for (size_t j = 0; j < p[k].n; j++) {
            snprintf(f, sizeof f, "%s/p%zu_%zu.dat", dir, k, j);
            unlink(f);
        }
        snprintf(f, sizeof f, "%s/p%zu.svg", dir, k);
        unlink(f);
    }
    snprintf(f, sizeof f, "%s/plots.gp", dir);
    unlink(f);
    snprintf(f, sizeof f, "%s/gnuplot.log", dir);
    unlink(f);
    rmdir(dir);
}

/* Run gnuplot on script in dir (its working directory), output to dir/gnuplot.log.
 * Returns RB_OK, RB_EUNSUPPORTED (not found) or RB_EIO (failed). */
static int run_gnuplot(const char *dir, char *err, size_t errlen)
{
    int rc = RB_OK;
    char log[4200];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    snprintf(log, sizeof log, "%s/gnuplot.log", dir);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char *argv[] = {"gnuplot", "plots.gp", NULL};
    int e = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        rc = rb_errf(err, errlen, RB_EUNSUPPORTED,
                     "gnuplot: cannot run it (%s); install gnuplot-nox to get plots",
                     strerror(e));
        goto cleanup;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            rc = rb_errf(err, errlen, RB_EIO, "gnuplot: waitpid failed: %s", strerror(errno));
            goto cleanup;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        rc = rb_errf(err, errlen, RB_EUNSUPPORTED,
                     "gnuplot: not found; install gnuplot-nox to get plots");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *text = slurp(log, NULL), line[200];
        last_line(text, line, sizeof line);
        free(text);
        rc = rb_errf(err, errlen, RB_EIO, "gnuplot failed (%s %d): %s",
                     WIFEXITED(status) ? "exit status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), line);
    }
cleanup:
    return rc;
}

/* rp_plots_render: see report_int.h. */
int rp_plots_render(const rp_file *f, const char *outdir, rp_plot **plots,
                    size_t *nplots, char *err, size_t errlen)
{
    int rc = RB_OK;
    rp_plot *p = NULL;
    size_t np = 0;
    char tmp[4096] = "", fn[4200];
    FILE *gp = NULL, *dat = NULL;
    *plots = NULL;
    *nplots = 0;

    /* Groups: one plot per (kind, seq_len, mode, dataset) with data. */
    for (int kind = 0; kind < RP_S_COUNT; kind++)
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        const double *sx, *sy;
        int64_t sn;
        series_of(c, kind, &sx, &sy, &sn);
        if (!c->complete || c->problem || sn == 0)
            continue;
        size_t k = 0;
        while (k < np && !group_cmp(c, kind, &p[k]))
            k++;
        if (k == np) {
            rp_plot *n2 = realloc(p, (np + 1) * sizeof *p);
            if (!n2) {
                rc = rb_errf(err, errlen, RB_ENOMEM, "report: out of memory");
                goto cleanup;
            }
            p = n2;
            memset(&p[np], 0, sizeof *p);
            p[np].kind = kind;
            p[np].seq_len = c->seq_len;
            snprintf(p[np].mode, sizeof p[np].mode, "%s", c->mode);
            snprintf(p[np].dataset, sizeof p[np].dataset, "%s", c->dataset);
            np++;
        }
        size_t *n3 = realloc(p[k].idx, (p[k].n + 1) * sizeof *n3);
        if (!n3) {
            rc = rb_errf(err, errlen, RB_ENOMEM, "report: out of memory");
            goto cleanup;
        }
        p[k].idx = n3;
        p[k].idx[p[k].n++] = i;
        if (kind == RP_S_ENTROPY)
            p[k].binned |= c->binned;
    }
    if (np > 1)
        qsort(p, np, sizeof *p, plot_order);
    /* one heat map per case with a pair-share matrix, after the line plots */
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem || !c->share)
            continue;
        rp_plot *n2 = realloc(p, (np + 1) * sizeof *p);
        size_t *ix = malloc(sizeof *ix);
        if (!n2 || !ix) {
            free(ix);
            if (n2)
                p = n2;
            rc = rb_errf(err, errlen, RB_ENOMEM, "report: out of memory");
            goto cleanup;
        }
        p = n2;
        memset(&p[np], 0, sizeof *p);
        p[np].kind = RP_HEATMAP;
        p[np].seq_len = c->seq_len;
        snprintf(p[np].mode, sizeof p[np].mode, "%s", c->mode);
        snprintf(p[np].dataset, sizeof p[np].dataset, "%s", c->dataset);
        rp_safe_label(p[np].case_name, sizeof p[np].case_name, c->name);
        ix[0] = i;
        p[np].idx = ix;
        p[np].n = 1;
        np++;
    }
    if (np == 0)
        goto cleanup;

    /* Data files and one gnuplot script in a private temp dir. */
    const char *td = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/ropebench-report-XXXXXX", td && *td ? td : "/tmp");
    if (!mkdtemp(tmp)) {
        rc = rb_errf(err, errlen, RB_EIO, "report: cannot create a temporary directory %s: %s",
                     tmp, strerror(errno));
        tmp[0] = '\0';
        goto cleanup;
    }
    snprintf(fn, sizeof fn, "%s/plots.gp", tmp);
    if (!(gp = fopen(fn, "w"))) {
        rc = rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
        goto cleanup;
    }
    for (size_t k = 0; k < np; k++) {
        char mode[40], ds[80], lab[96];
        rp_safe_label(mode, sizeof mode, p[k].mode);
        rp_safe_label(ds, sizeof ds, p[k].dataset);
        if (p[k].kind == RP_HEATMAP) {
            const rp_case *c = &f->cases[p[k].idx[0]];
            snprintf(fn, sizeof fn, "%s/p%zu_0.dat", tmp, k);
            if (!(dat = fopen(fn, "w"))) {
                rc = rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
                goto cleanup;
            }
            /* pm3d scan lines: one per distance bin (bin 0, distance 0, drawn at 0.5);
             * the colour range is symmetric so that white is a zero share */
            double zmax = 0;
            for (int64_t i2 = 0; i2 < c->share_bins * c->share_pairs; i2++)
                if (isfinite(c->share[i2]) && fabs(c->share[i2]) > zmax)
                    zmax = fabs(c->share[i2]);
            if (!(zmax > 0))
                zmax = 1;
            for (int64_t b = 0; b < c->share_bins; b++) {
                const double y = c->share_dist[b] > 0 ? c->share_dist[b] : 0.5;
                for (int64_t j = 0; j < c->share_pairs; j++) {
                    const double z = c->share[b * c->share_pairs + j];
                    if (isfinite(z))
                        fprintf(dat, "%lld %.17g %.17g\n", (long long)j, y, z);
                    else
                        fprintf(dat, "%lld %.17g NaN\n", (long long)j, y);
                }
                fprintf(dat, "\n");
            }
            if (fclose(dat) != 0) {
                dat = NULL;
                rc = rb_errf(err, errlen, RB_EIO, "report: %s: write failed", fn);
                goto cleanup;
            }
            dat = NULL;
            fprintf(gp, "reset\nset terminal svg size 820,520 dynamic font 'sans,11' "
                        "background '#ffffff'\nset output 'p%zu.svg'\n", k);
            fprintf(gp, "set view map\nset logscale y 10\nset xlabel 'rotary pair j'\n"
                        "set ylabel 'distance (tokens)'\nset cblabel 'share (logit units)'\n"
                        "set title '%s' noenhanced\nset palette defined (-1 '#2166ac', 0 "
                        "'#f7f7f7', 1 '#b2182b')\nunset key\nset cbrange [%.17g:%.17g]\n",
                    p[k].case_name, -zmax, zmax);
            fprintf(gp, "splot 'p%zu_0.dat' using 1:2:3 with pm3d\nunset output\n", k);
            continue;
        }
        fprintf(gp, "reset\nset terminal svg size 820,480 dynamic font 'sans,11' "
                    "background '#ffffff'\n");
        fprintf(gp, "set output 'p%zu.svg'\n%sset grid\n", k,
                kinds[p[k].kind].logx ? "set logscale x 10\n" : "");
        fprintf(gp, "set xlabel '%s'\nset ylabel '%s'\n", kinds[p[k].kind].xlabel,
                kinds[p[k].kind].ylabel);
        fprintf(gp, "set title 'seq_len %lld, %s mode, %s data' noenhanced\n",
                (long long)p[k].seq_len, mode, ds);
        fprintf(gp, "set key left top noenhanced\nplot ");
        for (size_t j = 0; j < p[k].n; j++) {
            const rp_case *c = &f->cases[p[k].idx[j]];
            snprintf(fn, sizeof fn, "%s/p%zu_%zu.dat", tmp, k, j);
            if (!(dat = fopen(fn, "w"))) {
                rc = rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
                goto cleanup;
            }
            const double *sx, *sy;
            int64_t sn;
            series_of(c, p[k].kind, &sx, &sy, &sn);
            for (int64_t i = 0; i < sn; i++)
                if (isfinite(sx[i]) && isfinite(sy[i]) && (!kinds[p[k].kind].logx || sx[i] > 0))
                    fprintf(dat, "%.17g %.17g\n", sx[i], sy[i]);
            if (fclose(dat) != 0) {
                dat = NULL;
                rc = rb_errf(err, errlen, RB_EIO, "report: %s: write failed", fn);
                goto cleanup;
            }
            dat = NULL;
            char m[80];
            rp_safe_label(m, sizeof m, c->method);
            snprintf(lab, sizeof lab, "%s x%g", m, c->factor);
            fprintf(gp, "%s'p%zu_%zu.dat' using 1:2 with %s title '%s'",
                    j ? ", \\\n     " : "", k, j,
                    kinds[p[k].kind].points ? "points pt 7 ps 0.8"
                                            : "linespoints pt 7 ps 0.35 lw 1.5",
                    lab);
        }
        fprintf(gp, "\nunset output\n");
    }
    if (fclose(gp) != 0) {
        gp = NULL;
        rc = rb_errf(err, errlen, RB_EIO, "report: cannot write the gnuplot script");
        goto cleanup;
    }
    gp = NULL;
    rc = run_gnuplot(tmp, err, errlen);
    if (rc != RB_OK)
        goto cleanup;

    /* Copy the SVGs beside the report and keep their text for inlining. */
    for (size_t k = 0; k < np; k++) {
        char mode[40], ds[80];
        size_t len = 0;
        safe_name(mode, sizeof mode, p[k].mode);
        safe_name(ds, sizeof ds, p[k].dataset);
        snprintf(fn, sizeof fn, "%s/p%zu.svg", tmp, k);
        char *svg = slurp(fn, &len);
        if (!svg || !strstr(svg, "<svg")) {
            free(svg);
            rc = rb_errf(err, errlen, RB_EIO, "gnuplot: produced no SVG for plot %zu", k + 1);
            goto cleanup;
        }
        if (p[k].kind == RP_HEATMAP) {
            char cn[80];
            safe_name(cn, sizeof cn, p[k].case_name);
            snprintf(p[k].svg_name, sizeof p[k].svg_name, "share-%.80s.svg", cn);
        } else {
            snprintf(p[k].svg_name, sizeof p[k].svg_name, "%s-L%lld-%.12s-%.16s.svg",
                     kinds[p[k].kind].file, (long long)p[k].seq_len, mode, ds);
        }
        snprintf(fn, sizeof fn, "%s/%s", outdir, p[k].svg_name);
        FILE *o = fopen(fn, "wb");
        int bad = !o || fwrite(svg, 1, len, o) != len;
        if (o && fclose(o) != 0)
            bad = 1;
        if (!bad)
            p[k].svg = svg_for_inline(svg, (int)k);
        free(svg);
        if (bad) {
            p[k].svg_name[0] = '\0';
            rc = rb_errf(err, errlen, RB_EIO, "report: cannot write %s: %s", fn,
                         strerror(errno));
            goto cleanup;
        }
    }
cleanup:
    *plots = p;
    *nplots = np;
    if (dat)
        fclose(dat);
    if (gp)
        fclose(gp);
    if (tmp[0])
        rm_tmp(tmp, np, p);
    if (rc != RB_OK)
        for (size_t k = 0; k < np; k++) {
            free(p[k].svg);
            p[k].svg = NULL;
            p[k].svg_name[0] = '\0';
        }
    return rc;
}

/* rp_plots_free: see report_int.h. */
void rp_plots_free(rp_plot *p, size_t n)
{
    for (size_t k = 0; p && k < n; k++) {
        free(p[k].idx);
        free(p[k].svg);
    }
    free(p);
}
