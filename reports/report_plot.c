/* report_plot.c — groups complete cases (by seq_len, mode and dataset; by seq_len for the analytic metrics) and renders entropy, metric line/panel plots and pair-share heat maps to SVG with gnuplot. */
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

/* safe_label_mid: rp_safe_label, but a src too long for dst (len >= 16) keeps its
 * start and its end around "...", so that long case names that differ only at one end
 * still differ in a plot's title and caption. */
static void safe_label_mid(char *dst, size_t len, const char *src)
{
    const size_t n = strlen(src);
    if (n < len || len < 16) {
        rp_safe_label(dst, len, src);
        return;
    }
    const size_t head = (len - 4) / 2, tail = len - 4 - head;
    rp_safe_label(dst, head + 1, src);
    memcpy(dst + head, "...", 3);
    rp_safe_label(dst + head + 3, tail + 1, src + n - tail);
}

/* rp_case_label: see report_int.h. */
void rp_case_label(char *dst, size_t len, const rp_case *c)
{
    char m[80], a[40] = "";
    rp_safe_label(m, sizeof m, c->method);
    if (c->af_setting[0] && c->name && strstr(c->name, "-af")) {
        char s[32];
        rp_safe_label(s, sizeof s, c->af_setting);
        snprintf(a, sizeof a, " af %s", s);
    }
    snprintf(dst, len, "%s x%g%s", m, c->factor, a);
}

/* rp_same_variant: see report_int.h. */
int rp_same_variant(const rp_case *a, const rp_case *b)
{
    return strcmp(a->method, b->method) == 0 &&
           (a->factor == b->factor || (isnan(a->factor) && isnan(b->factor))) &&
           strcmp(a->af_setting, b->af_setting) == 0;
}

/* File-name part: [A-Za-z0-9._-] only. */
static void safe_name(char *dst, size_t len, const char *src)
{
    rp_safe_label(dst, len, src);
    for (char *p = dst; *p; p++)
        if (strchr(" +=,", *p))
            *p = '_';
}

/* What each kind of plot shows: columns of one of the case's tables (tab -1: the
 * entropy rows, x = column 0, y = column 1). Without panels every case is a colour and
 * every y column a dash type; with panels every case (method) is a panel and every y
 * column a colour. Analytic kinds depend on the schedule only: one plot per seq_len
 * with the first case of each method. Rows with a non-zero flag column get a circle;
 * hline_title != NULL draws the horizontal line y = hline. */
typedef struct {
    const char *file;   /* SVG name prefix */
    const char *xlabel, *ylabel;
    const char *caption; /* first sentence of the caption */
    int tab, x, ny, y[4];
    const char *yname[4];
    int logx, logy, points, absy, analytic, panels;
    int flag;
    const char *flag_title;
    double hline;
    const char *hline_title;
} rp_kind;

static const rp_kind kinds[RP_K_COUNT] = {
    [RP_K_ENTROPY] = {"entropy", "query position (tokens)", "attention entropy (nats, mean over heads)",
                      "Attention entropy (nats, mean over heads) against query position, log x "
                      "axis",
                      -1, 0, 1, {1}, {""}, .logx = 1},
    [RP_K_D] = {"phase-distance", "distance (tokens)",
                "D: phase distance to the trained set (rad)",
                "Phase distance D to the trained set (rad, amplitude-weighted RMS of wrapped "
                "phase differences, minimised over trained distances) against distance, log x "
                "axis",
                RP_TAB_PHASE, RP_PHASE_DIST, 1, {RP_PHASE_D}, {""}, .logx = 1},
    [RP_K_BANDS] = {"phase-bands", "distance (tokens)", "phase distance (rad)",
                    "Phase distance D and its YaRN frequency bands (D_high: wavelength < "
                    "L0/beta_fast, D_mid, D_low: wavelength > L0/beta_slow; each minimised "
                    "over trained distances on its own, NaN bands not drawn) against distance, "
                    "log x axis",
                    RP_TAB_PHASE, RP_PHASE_DIST, 4,
                    {RP_PHASE_D, RP_PHASE_D_HIGH, RP_PHASE_D_MID, RP_PHASE_D_LOW},
                    {"D", "D_high", "D_mid", "D_low"}, .logx = 1, .panels = 1},
    [RP_K_OOD] = {"ood-fraction", "distance (tokens)", "fraction of pairs past their trained phases",
                  "Fraction of rotary pairs that distance drives past the phases they saw in "
                  "training (solid: by count, ood_frac_count; dashed: by score energy E[rho_j], "
                  "ood_frac_energy), log x axis",
                  RP_TAB_PHASE, RP_PHASE_DIST, 2, {RP_PHASE_OOD_COUNT, RP_PHASE_OOD_ENERGY},
                  {"count", "energy"}, .logx = 1},
    [RP_K_TURNS] = {"pair-turns", "rotary pair j (0 = highest frequency)",
                    "turns at the longest distance, phi_j / 2pi",
                    "Turns phi_j/2pi = theta'_j (L-1)/2pi of each rotary pair at the case's "
                    "longest distance, log y axis; circles: ood pairs (trained span Phi_j < 2pi "
                    "and phi_j > Phi_j); dashed line: one full turn",
                    RP_TAB_PAIRS, RP_PAIRS_J, 1, {RP_PAIRS_TURNS}, {""}, .logy = 1,
                    .analytic = 1, .flag = RP_PAIRS_OOD, .flag_title = "ood pair",
                    .hline = 1.0, .hline_title = "one turn (2pi)"},
    [RP_K_DECAY] = {"decay", "distance (tokens)", "mean score (logit units)",
                    "Mean attention score (logit units) over all (probe row, key) pairs per "
                    "distance bin, log x axis",
                    RP_TAB_DECAY, RP_DECAY_DIST, 1, {RP_DECAY_MEAN}, {""}, .logx = 1},
    [RP_K_BOUNDS] = {"decay-bounds", "distance (tokens)", "dimensionless",
                     "Analytic score-decay curves (the measured mean score is in the decay plots of "
                     "probe cases): Men et al.'s "
                     "B(distance) = sum_j cos(distance theta'_j) (solid) and the RoFormer "
                     "relative upper bound (1/np) sum_i |S_i| (dashed), log x axis",
                     RP_TAB_DECAY, RP_DECAY_DIST, 2, {RP_DECAY_B, RP_DECAY_ROFORMER},
                     {"B", "RoFormer bound"}, .logx = 1, .analytic = 1,
                     .hline = 0.0, .hline_title = "B = 0"},
    [RP_K_NEEDLE_RANK] = {"needle-rank", "needle distance (tokens)",
                          "rank of the needle score (1 = hit)",
                          "Rank of each needle's score (1 = retrieved) against the haystack "
                          "(the keys its query sees that are not the query's needles) and "
                          "among all the keys its query sees, against needle distance, log x "
                          "and y axes, all heads",
                          RP_TAB_NEEDLES, RP_NEEDLE_DIST, 2, {RP_NEEDLE_RANK_HAY, RP_NEEDLE_RANK},
                          {"against the haystack", "among all keys"}, .logx = 1,
                          .logy = 1, .points = 1},
    [RP_K_NEEDLE_MASS] = {"needle-mass", "needle distance (tokens)",
                          "attention mass on the needle",
                          "Attention mass exp(s_needle - lse) each query puts on its needle, "
                          "against needle distance, log x and y axes (a mass of 0, an "
                          "underflow, has no place on them and is left out), all heads",
                          RP_TAB_NEEDLES, RP_NEEDLE_DIST, 1, {RP_NEEDLE_MASS}, {""}, .logx = 1,
                          .logy = 1, .points = 1},
    [RP_K_PRECISION] = {"precision", "query position (tokens)", "error (rad, logit units, nats) or ratio",
                        "Effect of fp32 phases (float pos * float inv_freq) against exact phases "
                        "per probe row, max over heads: phase_err_max (rad), score_err_max "
                        "(logit units), |entropy_err| (nats) and bound_ratio_max (measured "
                        "score error / bound, <= 1), log x and y axes (zeros not drawn)",
                        RP_TAB_PRECISION, RP_PREC_POS, 4,
                        {RP_PREC_PHASE, RP_PREC_SCORE, RP_PREC_ENTROPY, RP_PREC_BOUND},
                        {"phase_err_max", "score_err_max", "|entropy_err|", "bound_ratio_max"},
                        .logx = 1, .logy = 1, .absy = 1, .panels = 1},
    [RP_K_FLOOR] = {"softmax-floor", "query position (tokens)", "min weight * n / exp(-2R)",
                    "Softmax floor: measured min weight * n over exp(-2R) per probe row (min "
                    "over heads; >= 1 always), log x and y axes",
                    RP_TAB_FLOOR, RP_FLOOR_POS, 1, {RP_FLOOR_RATIO}, {""}, .logx = 1,
                    .logy = 1, .hline = 1.0, .hline_title = "ratio 1"},
};

/* The table a kind reads from a case (tab -1: the entropy rows as two columns). */
static rp_tab kind_tab(const rp_case *c, const rp_kind *k)
{
    rp_tab t;
    if (k->tab >= 0)
        return c->tab[k->tab];
    memset(&t, 0, sizeof t);
    t.n = c->npts;
    t.col[0] = c->x;
    t.col[1] = c->y;
    return t;
}

/* Value v as drawn (|v| if absv), NaN where the axis cannot show it. */
static double axis_value(double v, int absv, int logaxis)
{
    if (absv)
        v = fabs(v);
    return isfinite(v) && (!logaxis || v > 0) ? v : NAN;
}

/* Whether case c has at least one point that kind k can draw. */
static int has_points(const rp_case *c, const rp_kind *k)
{
    rp_tab t = kind_tab(c, k);
    for (int64_t i = 0; i < t.n; i++) {
        if (isnan(axis_value(t.col[k->x][i], 0, k->logx)))
            continue;
        for (int j = 0; j < k->ny; j++)
            if (!isnan(axis_value(t.col[k->y[j]][i], k->absy, k->logy)))
                return 1;
    }
    return 0;
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
    const rp_kind *k = &kinds[p->kind];
    char where[200];
    if (k->analytic)
        snprintf(where, sizeof where, "seq_len %lld (analytic: the schedule alone decides it, "
                                      "so every mode and dataset gives the same curve)",
                 (long long)p->seq_len);
    else
        snprintf(where, sizeof where, "seq_len %lld, %s mode, %s data", (long long)p->seq_len,
                 p->mode, p->dataset);
    snprintf(b, n, "%s: %s; %s.%s%s", k->caption, where,
             k->panels ? "one panel per method" : "one line per method",
             p->kind == RP_K_ENTROPY ? " Position 0 (a single visible key: entropy 0, up to "
                                       "the kernel's rounding) is not shown."
                                     : "",
             p->kind == RP_K_ENTROPY && p->binned
                 ? " Cases with more than 512 rows are drawn as log-binned means (8 bins per "
                   "octave of position) so that the SVG stays small."
                 : "");
}

/* Whether case a belongs to plot p of the given kind: same seq_len, and for kinds that
 * are not analytic the same mode and dataset. */
static int group_cmp(const rp_case *a, int kind, const rp_plot *p)
{
    return p->kind == kind && a->seq_len == p->seq_len &&
           (kinds[kind].analytic ||
            (strcmp(a->mode, p->mode) == 0 && strcmp(a->dataset, p->dataset) == 0));
}

/* Whether plot p (analytic) already has a case of a's method and factor. */
static int has_method(const rp_file *f, const rp_case *a, const rp_plot *p)
{
    for (size_t j = 0; j < p->n; j++) {
        const rp_case *b = &f->cases[p->idx[j]];
        if (strcmp(a->method, b->method) == 0 &&
            (a->factor == b->factor || (isnan(a->factor) && isnan(b->factor))))
            return 1;
    }
    return 0;
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

/* The ids met so far in one SVG (pointers into it and lengths): gnuplot repeats the ids
 * of its plot groups (id="gnuplot_plot_1a") in every panel of a multiplot. */
typedef struct {
    const char **p;
    size_t *n;
    int count, cap;
} id_set;

/* id_seen: whether the id value at v (up to its closing quote) was met before; records
 * it otherwise. -1 when out of memory. */
static int id_seen(id_set *ids, const char *v)
{
    const size_t n = strcspn(v, "'\"");
    for (int i = 0; i < ids->count; i++)
        if (ids->n[i] == n && strncmp(ids->p[i], v, n) == 0)
            return 1;
    if (ids->count == ids->cap) {
        const int cap = ids->cap ? 2 * ids->cap : 64;
        const char **p2 = realloc(ids->p, (size_t)cap * sizeof *p2);
        if (p2)
            ids->p = p2;
        size_t *n2 = p2 ? realloc(ids->n, (size_t)cap * sizeof *n2) : NULL;
        if (!n2)
            return -1;
        ids->n = n2;
        ids->cap = cap;
    }
    ids->p[ids->count] = v;
    ids->n[ids->count++] = n;
    return 0;
}

/* Make ids of one inline SVG unique in the page: id='x' -> id='pK_x', and the
 * references to them; an id that repeats within the SVG (never referenced: gnuplot's
 * per-panel plot groups) becomes pK_dN_x for its N-th repetition. */
static char *svg_for_inline(const char *svg, int k)
{
    const char *s = strstr(svg, "<svg");
    if (!s)
        return NULL;
    id_set ids = {0};
    char pre[16], dup[40];
    int pl = snprintf(pre, sizeof pre, "p%d_", k), ndup = 0;
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
                const char *use = pre;
                int ul = pl;
                const int seen = i < 2 ? id_seen(&ids, s + n) : 0;
                if (seen < 0) {
                    free(out);
                    out = NULL;
                    goto done;
                }
                if (seen) {
                    ul = snprintf(dup, sizeof dup, "p%d_d%d_", k, ++ndup);
                    use = dup;
                }
                if (o + n + (size_t)ul + 2 >= cap) {
                    char *n2 = realloc(out, cap = 2 * cap + n + (size_t)ul);
                    if (!n2) {
                        free(out);
                        out = NULL;
                        goto done;
                    }
                    out = n2;
                }
                memcpy(out + o, s, n);
                o += n;
                memcpy(out + o, use, (size_t)ul);
                o += (size_t)ul;
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
                    out = NULL;
                    goto done;
                }
                out = n2;
            }
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
done:
    free(ids.p);
    free(ids.n);
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
        snprintf(f, sizeof f, "%s/p%zu.gp", dir, k);
        unlink(f);
    }
    snprintf(f, sizeof f, "%s/plots.gp", dir);
    unlink(f);
    snprintf(f, sizeof f, "%s/gnuplot.log", dir);
    unlink(f);
    rmdir(dir);
}

/* Run gnuplot on dir/script (dir is its working directory), output to dir/gnuplot.log.
 * Returns RB_OK, RB_EUNSUPPORTED (not found) or RB_EIO (failed). */
static int run_gnuplot(const char *dir, const char *script, char *err, size_t errlen)
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
    char *argv[] = {"gnuplot", (char *)script, NULL};
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

/* Write the data file of case j of plot k (columns x, the y columns as drawn, the flag;
 * "NaN" where a value cannot be drawn). */
static int write_dat(const rp_case *c, const rp_kind *kd, size_t k, size_t j, const char *tmp,
                     char *err, size_t errlen)
{
    char fn[4200];
    rp_tab t = kind_tab(c, kd);
    snprintf(fn, sizeof fn, "%s/p%zu_%zu.dat", tmp, k, j);
    FILE *dat = fopen(fn, "w");
    if (!dat)
        return rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
    for (int64_t i = 0; i < t.n; i++) {
        const double x = axis_value(t.col[kd->x][i], 0, kd->logx);
        if (isnan(x))
            continue;
        fprintf(dat, "%.17g", x);
        for (int y = 0; y < kd->ny; y++) {
            const double v = axis_value(t.col[kd->y[y]][i], kd->absy, kd->logy);
            fprintf(dat, isnan(v) ? " NaN" : " %.17g", v);
        }
        fprintf(dat, " %d\n", kd->flag_title && t.col[kd->flag][i] != 0 &&
                                      !isnan(t.col[kd->flag][i]));
    }
    if (fclose(dat) != 0)
        return rb_errf(err, errlen, RB_EIO, "report: %s: write failed", fn);
    return RB_OK;
}

/* The gnuplot commands and data files of line plot k (not a heat map). */
static int plot_lines(const rp_file *f, const rp_plot *pl, size_t k, const char *tmp, FILE *gp,
                      char *err, size_t errlen)
{
    const rp_kind *kd = &kinds[pl->kind];
    char mode[40], ds[80], title[200];
    rp_safe_label(mode, sizeof mode, pl->mode);
    rp_safe_label(ds, sizeof ds, pl->dataset);
    if (kd->analytic)
        snprintf(title, sizeof title, "seq_len %lld (analytic)", (long long)pl->seq_len);
    else
        snprintf(title, sizeof title, "seq_len %lld, %s mode, %s data",
                 (long long)pl->seq_len, mode, ds);
    const int cols = kd->panels && pl->n > 1 ? 2 : 1;
    const int rows = kd->panels ? (int)((pl->n + (size_t)cols - 1) / (size_t)cols) : 1;
    fprintf(gp, "reset\nset terminal svg size 820,%d dynamic font 'sans,11' "
                "background '#ffffff'\n",
            kd->panels ? 60 + 300 * rows : 480);
    fprintf(gp, "set output 'p%zu.svg'\n%s%sset grid\n", k, kd->logx ? "set logscale x 10\n" : "",
            kd->logy ? "set logscale y 10\n" : "");
    /* the key: outside the lines beside a single plot; in the first panel only (opaque,
     * over the grid) for panels, since every panel draws the same columns */
    fprintf(gp, "set xlabel '%s'\nset ylabel '%s'\nset key %s noenhanced\n", kd->xlabel,
            kd->ylabel, kd->panels ? "left top opaque box font ',9'" : "outside right top");
    if (kd->panels)
        fprintf(gp, "set multiplot layout %d,%d title '%s' noenhanced\n", rows, cols, title);
    else
        fprintf(gp, "set title '%s' noenhanced\nplot ", title);
    for (size_t j = 0; j < pl->n; j++) {
        const rp_case *c = &f->cases[pl->idx[j]];
        int rc = write_dat(c, kd, k, j, tmp, err, errlen);
        if (rc != RB_OK)
            return rc;
        char lab[128];
        rp_case_label(lab, sizeof lab, c);
        if (kd->panels)
            fprintf(gp, "set title '%s' noenhanced\nplot ", lab);
        for (int y = 0; y < kd->ny; y++) {
            const int first = kd->panels ? y == 0 : j == 0 && y == 0;
            /* one style per (case, series): the colour says the case (gnuplot's 8 line
             * colours, then again); m = (round of colours) x series + series numbers
             * the rest, the marker its m % 12 (6 filled shapes, then the same open) and
             * a line's dash m % 5, so that no two series of a plot share all three
             * below 8 x 60 / series (points: 8 x 12 / series) cases */
            static const int marks[12] = {7, 5, 9, 11, 13, 15, 6, 4, 8, 10, 12, 14};
            const int cyc = kd->panels ? 0 : (int)(j / 8);
            const int lt = kd->panels ? y + 1 : (int)(j % 8) + 1;
            const int m = cyc * kd->ny + y;
            const int pt = marks[m % 12];
            const int dt = kd->panels ? 1 : m % 5 + 1;
            fprintf(gp, "%s'p%zu_%zu.dat' using 1:%d with %s pt %d ps %s lt %d dt %d title '%s%s%s'",
                    first ? "" : ", \\\n     ", k, j, 2 + y,
                    kd->points ? "points" : "linespoints lw 1.5", pt,
                    kd->points ? "0.8" : "0.35", lt, dt,
                    kd->panels ? "" : lab, kd->panels || kd->ny == 1 ? "" : ", ",
                    kd->ny == 1 ? "" : kd->yname[y]);
        }
        if (kd->flag_title)
            fprintf(gp, ", \\\n     'p%zu_%zu.dat' using 1:($%d > 0 ? $2 : 1/0) with points pt 6 "
                        "ps 1.4 lc rgb '#000000' %s%s%s",
                    k, j, 2 + kd->ny, j == 0 || kd->panels ? "title '" : "notitle",
                    j == 0 || kd->panels ? kd->flag_title : "", j == 0 || kd->panels ? "'" : "");
        if (kd->panels || j + 1 == pl->n) {
            if (kd->hline_title)
                fprintf(gp, ", \\\n     %.17g with lines dt 2 lw 1.5 lc rgb '#555555' title '%s'",
                        kd->hline, kd->hline_title);
            fprintf(gp, "\n%s", kd->panels ? "unset key\n" : "");
        }
    }
    fprintf(gp, "%sunset output\n", kd->panels ? "unset multiplot\n" : "");
    return RB_OK;
}

/* The gnuplot commands (into gp) and the data files (into tmp) of plot k. */
static int plot_script(const rp_file *f, rp_plot *p, size_t k, const char *tmp, FILE *gp,
                       char *err, size_t errlen)
{
    char fn[4200];
    if (p[k].kind == RP_HEATMAP) {
        const rp_case *c = &f->cases[p[k].idx[0]];
        snprintf(fn, sizeof fn, "%s/p%zu_0.dat", tmp, k);
        FILE *dat = fopen(fn, "w");
        if (!dat)
            return rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
        /* one filled box per (pair, distance bin) in that cell's own colour (pm3d on
         * the cell values, as until 2026-12-02, coloured each quadrangle by the mean of
         * its four corners: a lone pair showed as two half-strength columns beside
         * it). Boxes span j +- 1/2 and, on the log distance axis, from the geometric
         * mean of a bin's centre and the previous one's to that with the next (bin 0,
         * distance 0, is drawn at 0.5). Cells without a value (NaN) are grey; the colour
         * range is symmetric so that white is a zero share. */
        const int64_t nb = c->share_bins, npair = c->share_pairs;
        double zmax = 0;
        int any_nan = 0;
        for (int64_t i2 = 0; i2 < nb * npair; i2++) {
            if (isfinite(c->share[i2]) && fabs(c->share[i2]) > zmax)
                zmax = fabs(c->share[i2]);
            any_nan |= !isfinite(c->share[i2]);
        }
        if (!(zmax > 0))
            zmax = 1;
#define RP_BIN_Y(b) (c->share_dist[(b)] > 0 ? c->share_dist[(b)] : 0.5)
        double y_lo = 0, y_hi = 0;
        for (int64_t b = 0; b < nb; b++) {
            const double y = RP_BIN_Y(b);
            const double lo = b > 0 ? sqrt(RP_BIN_Y(b - 1) * y)
                              : nb > 1 ? y / sqrt(RP_BIN_Y(1) / y) : y / 2;
            const double hi = b + 1 < nb ? sqrt(y * RP_BIN_Y(b + 1))
                              : nb > 1 ? y * sqrt(y / RP_BIN_Y(b - 1)) : y * 2;
            if (b == 0)
                y_lo = lo;
            y_hi = hi;
            for (int64_t j = 0; j < npair; j++) {
                const double z = c->share[b * npair + j];
                /* the last column says whether the cell has a value (gnuplot takes a
                 * NaN colour column for an undefined colour and draws the box white) */
                fprintf(dat, "%lld %.17g %.17g %.17g %.17g %.17g %.17g %d\n", (long long)j, y,
                        (double)j - 0.5, (double)j + 0.5, lo, hi, isfinite(z) ? z : 0.0,
                        isfinite(z));
            }
        }
#undef RP_BIN_Y
        if (fclose(dat) != 0)
            return rb_errf(err, errlen, RB_EIO, "report: %s: write failed", fn);
        fprintf(gp, "reset\nset terminal svg size 820,520 dynamic font 'sans,11' "
                    "background '#ffffff'\nset output 'p%zu.svg'\n", k);
        fprintf(gp, "set logscale y 10\nset xlabel 'rotary pair j'\n"
                    "set ylabel 'distance (tokens)'\nset cblabel 'share (logit units)'\n"
                    "set title '%s' noenhanced\nset palette defined (-1 '#2166ac', 0 "
                    "'#f7f7f7', 1 '#b2182b')\nunset key\nset cbrange [%.17g:%.17g]\n"
                    "set xrange [-0.5:%.17g]\nset yrange [%.17g:%.17g]\n",
                p[k].case_name, -zmax, zmax, (double)npair - 0.5, y_lo, y_hi);
        fprintf(gp, "plot 'p%zu_0.dat' using 1:($8 > 0 ? $2 : 1/0):3:4:5:6:7 "
                    "with boxxyerror fs solid 1.0 noborder lc palette", k);
        if (any_nan)
            fprintf(gp, ", \\\n     'p%zu_0.dat' using 1:($8 > 0 ? 1/0 : $2):3:4:5:6 "
                        "with boxxyerror fs solid 1.0 noborder fc rgb '#bdbdbd'", k);
        fprintf(gp, "\nunset output\n");
        return RB_OK;
    }
    return plot_lines(f, &p[k], k, tmp, gp, err, errlen);
}

/* rp_plots_render: see report_int.h. */
int rp_plots_render(const rp_file *f, const char *outdir, rp_plot **plots,
                    size_t *nplots, char *err, size_t errlen)
{
    int rc = RB_OK;
    rp_plot *p = NULL;
    size_t np = 0;
    char tmp[4096] = "", fn[4200], first_fail[512] = "";
    char *failed = NULL; /* [np]: 1 where the plot's own script failed */
    size_t nfail = 0;
    FILE *gp = NULL;
    *plots = NULL;
    *nplots = 0;

    /* Groups: one plot per (kind, seq_len, mode, dataset), or per (kind, seq_len) for the
     * analytic kinds, holding the cases with something to draw. */
    for (int kind = 0; kind < RP_K_COUNT; kind++)
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem || !has_points(c, &kinds[kind]))
            continue;
        size_t k = 0;
        while (k < np && !group_cmp(c, kind, &p[k]))
            k++;
        if (k < np && kinds[kind].analytic && has_method(f, c, &p[k]))
            continue;
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
            if (!kinds[kind].analytic) {
                snprintf(p[np].mode, sizeof p[np].mode, "%s", c->mode);
                snprintf(p[np].dataset, sizeof p[np].dataset, "%s", c->dataset);
            }
            np++;
        }
        size_t *n3 = realloc(p[k].idx, (p[k].n + 1) * sizeof *n3);
        if (!n3) {
            rc = rb_errf(err, errlen, RB_ENOMEM, "report: out of memory");
            goto cleanup;
        }
        p[k].idx = n3;
        p[k].idx[p[k].n++] = i;
        if (kind == RP_K_ENTROPY)
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
        safe_label_mid(p[np].case_name, sizeof p[np].case_name, c->name);
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
    if (tmp[0] != '/') {
        /* gnuplot runs in tmp (chdir) and writes its log to a path under it: a relative
         * TMPDIR named the log relative to itself, and every plot failed */
        char cwd[4096], abs_tmp[sizeof tmp];
        if (!getcwd(cwd, sizeof cwd) ||
            snprintf(abs_tmp, sizeof abs_tmp, "%s/%s", cwd, tmp) >= (int)sizeof abs_tmp) {
            rc = rb_errf(err, errlen, RB_EIO, "report: the temporary directory %s: cannot "
                         "make its path absolute", tmp);
            rmdir(tmp);
            tmp[0] = '\0';
            goto cleanup;
        }
        snprintf(tmp, sizeof tmp, "%s", abs_tmp);
    }
    snprintf(fn, sizeof fn, "%s/plots.gp", tmp);
    if (!(gp = fopen(fn, "w"))) {
        rc = rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
        goto cleanup;
    }
    FILE *master = gp;
    for (size_t k = 0; k < np; k++) {
        /* each plot's commands in a script of its own, loaded by plots.gp: when one
         * plot's data makes gnuplot fail, the others are drawn one script at a time */
        snprintf(fn, sizeof fn, "%s/p%zu.gp", tmp, k);
        fprintf(master, "load 'p%zu.gp'\n", k);
        if (!(gp = fopen(fn, "w"))) {
            gp = master;
            rc = rb_errf(err, errlen, RB_EIO, "report: %s: %s", fn, strerror(errno));
            goto cleanup;
        }
        rc = plot_script(f, p, k, tmp, gp, err, errlen);
        const int bad = fclose(gp) != 0;
        gp = master;
        if (rc != RB_OK)
            goto cleanup;
        if (bad) {
            rc = rb_errf(err, errlen, RB_EIO, "report: cannot write %s", fn);
            goto cleanup;
        }
    }
    if (fclose(gp) != 0) {
        gp = NULL;
        rc = rb_errf(err, errlen, RB_EIO, "report: cannot write the gnuplot script");
        goto cleanup;
    }
    gp = NULL;
    rc = run_gnuplot(tmp, "plots.gp", err, errlen);
    if (rc == RB_EIO) {
        /* the data of some plot made gnuplot stop (a damaged case): draw the plots one
         * script at a time and leave out the ones that fail */
        if (!(failed = calloc(np, 1))) {
            rc = rb_errf(err, errlen, RB_ENOMEM, "report: out of memory");
            goto cleanup;
        }
        for (size_t k = 0; k < np; k++) {
            char one[64], why[300];
            snprintf(one, sizeof one, "p%zu.gp", k);
            if (run_gnuplot(tmp, one, why, sizeof why) == RB_OK)
                continue;
            failed[k] = 1;
            if (nfail++ == 0) { /* (for the terminal: the file's names, gnuplot's line) */
                char cap[768], line[512];
                rp_plot_caption(cap, sizeof cap, &p[k]);
                snprintf(line, sizeof line, "%.200s: %.290s", cap, why);
                rp_printable(first_fail, sizeof first_fail, line);
            }
        }
        rc = RB_OK;
    }
    if (rc != RB_OK)
        goto cleanup;

    /* Copy the SVGs beside the report and keep their text for inlining. */
    for (size_t k = 0; k < np; k++) {
        char mode[40], ds[80];
        size_t len = 0;
        safe_name(mode, sizeof mode, p[k].mode);
        safe_name(ds, sizeof ds, p[k].dataset);
        if (failed && failed[k])
            continue;
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
        } else if (kinds[p[k].kind].analytic) {
            snprintf(p[k].svg_name, sizeof p[k].svg_name, "%s-L%lld.svg",
                     kinds[p[k].kind].file, (long long)p[k].seq_len);
        } else {
            snprintf(p[k].svg_name, sizeof p[k].svg_name, "%s-L%lld-%.12s-%.16s.svg",
                     kinds[p[k].kind].file, (long long)p[k].seq_len, mode, ds);
        }
        /* distinct cases can share a file name (names alike but for the characters
         * safe_name replaces, or past its length): number the later ones */
        char base[96];
        snprintf(base, sizeof base, "%s", p[k].svg_name);
        base[strlen(base) - 4] = '\0'; /* ".svg" */
        for (int dup = 2;; dup++) {
            size_t j = 0;
            while (j < k && strcmp(p[j].svg_name, p[k].svg_name))
                j++;
            if (j == k)
                break;
            snprintf(p[k].svg_name, sizeof p[k].svg_name, "%.80s-%d.svg", base, dup);
        }
        /* under its temporary name: the caller renames it (rp_commit) once the report
         * is whole */
        char dst[4200];
        snprintf(dst, sizeof dst, "%s/%s", outdir, p[k].svg_name);
        rp_out_tmp(fn, sizeof fn, dst);
        FILE *o = fopen(fn, "wb");
        int bad = !o || fwrite(svg, 1, len, o) != len;
        int e = errno;
        if (o && fclose(o) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        if (!bad)
            p[k].svg = svg_for_inline(svg, (int)k);
        free(svg);
        if (bad) {
            unlink(fn);
            p[k].svg_name[0] = '\0';
            rc = rb_errf(err, errlen, RB_EIO, "report: cannot write %s: %s", dst,
                         strerror(e));
            goto cleanup;
        }
    }
    if (nfail)
        rc = rb_errf(err, errlen, RB_EIO, "gnuplot failed on %zu of %zu plots, left out "
                     "(first: %s)", nfail, np, first_fail);
cleanup:
    *plots = p;
    *nplots = np;
    free(failed);
    if (gp)
        fclose(gp);
    if (tmp[0])
        rm_tmp(tmp, np, p);
    if (rc != RB_OK && !nfail)
        for (size_t k = 0; k < np; k++) {
            if (p[k].svg_name[0]) { /* staged, never to be committed */
                snprintf(fn, sizeof fn, "%s/%s", outdir, p[k].svg_name);
                rp_discard(fn);
            }
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
