/* report_tables.c — Markdown/HTML table cells, the per-metric tables of representative cases (issue 4) and the `ropebench bench` throughput table (/bench). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

/* ---- cells ------------------------------------------------------------------------- */

/* rp_unsafe_len: see report_int.h. */
size_t rp_unsafe_len(const char *s)
{
    const unsigned char c = (unsigned char)s[0];
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
        return 1; /* C0 controls and DEL: ESC would reach a terminal that shows the file */
    if (c == 0xE2 && (unsigned char)s[1] == 0x80 &&
        (((unsigned char)s[2] >= 0xAA && (unsigned char)s[2] <= 0xAE) ||
         (unsigned char)s[2] == 0x8E || (unsigned char)s[2] == 0x8F))
        return 3; /* U+202A..U+202E embeddings and overrides, U+200E/F marks */
    if (c == 0xE2 && (unsigned char)s[1] == 0x81 && (unsigned char)s[2] >= 0xA6 &&
        (unsigned char)s[2] <= 0xA9)
        return 3; /* U+2066..U+2069 isolates */
    if (c == 0xD8 && (unsigned char)s[1] == 0x9C)
        return 2; /* U+061C arabic letter mark */
    if (c == 0xC2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9F)
        return 2; /* U+0080..U+009F, the C1 controls: CSI (U+009B) is ESC [ to a terminal
                   * that takes C1 controls from UTF-8 */
    if (c == 0xE2 && (unsigned char)s[1] == 0x80 &&
        ((unsigned char)s[2] == 0xA8 || (unsigned char)s[2] == 0xA9))
        return 3; /* U+2028, U+2029 line and paragraph separators: a line break */
    return 0;
}

/* rp_html_esc: see report_int.h. */
void rp_html_esc(FILE *o, const char *s)
{
    for (; s && *s; s++) {
        const size_t u = rp_unsafe_len(s);
        if (u) {
            fputs("&#xFFFD;", o);
            s += u - 1;
            continue;
        }
        switch (*s) {
        case '&': fputs("&amp;", o); break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '"': fputs("&quot;", o); break;
        case '\'': fputs("&#39;", o); break;
        default: fputc(*s, o);
        }
    }
}

/* rp_md_esc: see report_int.h. */
void rp_md_esc(FILE *o, const char *s)
{
    const char *const s0 = s;
    for (; s && *s; s++) {
        const size_t u = rp_unsafe_len(s);
        if (u) {
            fputc('?', o);
            s += u - 1;
            continue;
        }
        switch (*s) {
        case '|': fputs("\\|", o); break;
        case '\\': fputs("\\\\", o); break;
        case '`': fputs("\\`", o); break;
        case '[': fputs("\\[", o); break; /* no link or image from the file's text */
        case ']': fputs("\\]", o); break;
        case '*': fputs("\\*", o); break;
        case '~': fputs("\\~", o); break; /* strikethrough (GFM) */
        case '_': /* emphasis, except inside a word ("yarn_gaussian" stays as it is) */
            if (s > s0 && isalnum((unsigned char)s[-1]) && isalnum((unsigned char)s[1]))
                fputc('_', o);
            else
                fputs("\\_", o);
            break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '&': fputs("&amp;", o); break;
        case '\n':
        case '\r': fputc(' ', o); break;
        default: fputc(*s, o);
        }
    }
}

/* rp_fmt_num: see report_int.h. */
void rp_fmt_num(char *b, size_t n, double v, const char *f)
{
    if (isnan(v))
        snprintf(b, n, "n/a");
    else
        snprintf(b, n, f, v);
}

/* rp_table_head: see report_int.h. */
void rp_table_head(FILE *o, int html, const char *const *cols, int ncol)
{
    fprintf(o, html ? "<table>\n<thead><tr>" : "|");
    for (int j = 0; j < ncol; j++)
        fprintf(o, html ? "<th>%s</th>" : " %s |", cols[j]);
    fprintf(o, html ? "</tr></thead>\n" : "\n|");
    for (int j = 0; !html && j < ncol; j++)
        fprintf(o, "---|");
    fprintf(o, html ? "" : "\n");
}

/* rp_cell_text: see report_int.h. */
void rp_cell_text(FILE *o, int html, const char *s)
{
    fprintf(o, html ? "<td>" : " ");
    if (html)
        rp_html_esc(o, s);
    else
        rp_md_esc(o, s);
    fprintf(o, html ? "</td>" : " |");
}

/* rp_cell_num: see report_int.h. */
void rp_cell_num(FILE *o, int html, double v, const char *fmt)
{
    char b[64];
    rp_fmt_num(b, sizeof b, v, fmt);
    fprintf(o, html ? "<td class=\"num\">%s</td>" : " %s |", b);
}


/* ---- metric tables ----------------------------------------------------------------- */

/* Rows shown of a long table: every RP_TABLE_ROWS-th fraction, the last row and `extra`. */
#define RP_TABLE_ROWS 12

/* One metric table: columns of one of the case tables (rp_tab_specs). */
typedef struct {
    int tab;
    const char *title, *intro;
    int ncol;
    int col[RP_TAB_MAXCOL];
    const char *head[RP_TAB_MAXCOL];
    const char *fmt[RP_TAB_MAXCOL];
} rp_mtable;

static const rp_mtable mtables[] = {
    {RP_TAB_PAIRS, "Metric 1: per-pair phase table (phase/pairs)",
     "θ_j base and θ'_j scaled inverse frequency (rad/token), wavelength 2π/θ'_j (tokens), "
     "trained span Φ_j = θ_j(L0−1) and max phase φ_j = θ'_j(L−1) (rad), turns φ_j/2π, ood = 1 "
     "when Φ_j < 2π and φ_j > Φ_j. The critical pair (first j with Φ_j < 2π) is always shown.",
     8,
     {RP_PAIRS_J, RP_PAIRS_INV_BASE, RP_PAIRS_INV, RP_PAIRS_WAVELENGTH, RP_PAIRS_SPAN,
      RP_PAIRS_MAX_PHASE, RP_PAIRS_TURNS, RP_PAIRS_OOD},
     {"j", "inv_freq_base", "inv_freq", "wavelength", "trained_span", "max_phase", "turns",
      "ood"},
     {"%.0f", "%.6g", "%.6g", "%.6g", "%.6g", "%.6g", "%.6g", "%.0f"}},
    {RP_TAB_PHASE, "Metric 2: phase distance to the trained set by distance (phase/by_distance)",
     "D and its YaRN bands in rad (n/a: a band with no pair or no weight), and the fraction "
     "of pairs (by count and by score energy) that the distance drives past their trained "
     "phases.",
     7,
     {RP_PHASE_DIST, RP_PHASE_D, RP_PHASE_D_HIGH, RP_PHASE_D_MID, RP_PHASE_D_LOW,
      RP_PHASE_OOD_COUNT, RP_PHASE_OOD_ENERGY},
     {"distance", "D", "D_high", "D_mid", "D_low", "ood_frac_count", "ood_frac_energy"},
     {"%.6g", "%.4g", "%.4g", "%.4g", "%.4g", "%.4g", "%.4g"}},
    {RP_TAB_ENTROPY, "Metric 3: entropy by position (entropy/by_position)",
     "Row entropy H (nats) over the rows and heads of each log-spaced position bin: count, "
     "mean, min, max, std, and the mean of H / log(visible keys) (1 = uniform over the keys "
     "the row sees).",
     7, {RP_ENT_POS, RP_ENT_COUNT, RP_ENT_MEAN, RP_ENT_MIN, RP_ENT_MAX, RP_ENT_STD, RP_ENT_NORM},
     {"position", "count", "mean", "min", "max", "std", "mean_normalized"},
     {"%.6g", "%.0f", "%.6g", "%.6g", "%.6g", "%.4g", "%.4g"}},
    {RP_TAB_DECAY, "Metric 4: score decay by distance (decay/by_distance)",
     "Measured mean and std of the scaled score over (probe row, key) pairs per distance bin "
     "(probe mode; n/a in full mode), beside the analytic RoFormer relative upper bound and "
     "Men et al.'s B(Δ) = Σ_j cos(Δθ'_j).",
     6,
     {RP_DECAY_DIST, RP_DECAY_COUNT, RP_DECAY_MEAN, RP_DECAY_STD, RP_DECAY_ROFORMER,
      RP_DECAY_B},
     {"distance", "count", "mean_score", "std_score", "roformer_bound", "B"},
     {"%.6g", "%.0f", "%.4g", "%.4g", "%.4g", "%.4g"}},
    {RP_TAB_SHARE, "Metric 5: per-pair attention share by distance (pair_share)",
     "Per distance bin: the attention mass (weight_sum), the rotary pair with the largest "
     "|share| and its share, and the summed shares of the pairs of each YaRN band (high, mid, "
     "low frequency; n/a: no pair in the band), in logit units. The heat maps show every "
     "pair.",
     7,
     {RP_SHARE_DIST, RP_SHARE_WEIGHT, RP_SHARE_TOP_PAIR, RP_SHARE_TOP, RP_SHARE_HIGH,
      RP_SHARE_MID, RP_SHARE_LOW},
     {"distance", "weight_sum", "top pair", "top share", "share high", "share mid",
      "share low"},
     {"%.6g", "%.4g", "%.0f", "%.4g", "%.4g", "%.4g", "%.4g"}},
    {RP_TAB_NEEDLES, "Metric 6: needle retrieval (needles)",
     "Per (head, query, needle): the needle's score, the attention mass on it, its rank among "
     "all the keys the query sees and hit = rank 1, and the same against the haystack: "
     "among the keys that are not the query's needles (a query that looks for several "
     "needles finds them competing with each other among all keys).",
     10,
     {RP_NEEDLE_HEAD, RP_NEEDLE_QPOS, RP_NEEDLE_NPOS, RP_NEEDLE_DIST, RP_NEEDLE_SCORE,
      RP_NEEDLE_MASS, RP_NEEDLE_RANK, RP_NEEDLE_HIT, RP_NEEDLE_RANK_HAY, RP_NEEDLE_HIT_HAY},
     {"head", "query_pos", "needle_pos", "distance", "score", "mass", "rank", "hit",
      "rank_haystack", "hit_haystack"},
     {"%.0f", "%.0f", "%.0f", "%.0f", "%.4g", "%.4g", "%.0f", "%.0f", "%.0f", "%.0f"}},
    {RP_TAB_PRECISION, "Metric 7: phase precision of fp32 phases (precision)",
     "Per probe row, max over heads: phase error of fp32 phases (rad; max and mean over the "
     "pairs), the score error it causes (logit units), the entropy error (nats, signed, "
     "largest |x|), and the measured score error over its bound (≤ 1).",
     6, {RP_PREC_POS, RP_PREC_PHASE, RP_PREC_PHASE_MEAN, RP_PREC_SCORE, RP_PREC_ENTROPY,
         RP_PREC_BOUND},
     {"position", "phase_err_max", "phase_err_mean", "score_err_max", "entropy_err",
      "bound_ratio_max"},
     {"%.0f", "%.3g", "%.3g", "%.3g", "%.3g", "%.3g"}},
    {RP_TAB_FLOOR, "Metric 8: softmax floor (softmax_floor)",
     "Per probe row (the head with the smallest ratio): the smallest attention weight times the "
     "visible keys n, the floor e^(−2R), and their ratio (≥ 1).",
     4, {RP_FLOOR_POS, RP_FLOOR_MWN, RP_FLOOR_FLOOR, RP_FLOOR_RATIO},
     {"position", "min_weight_times_n", "floor", "ratio"}, {"%.0f", "%.4g", "%.4g", "%.4g"}},
    {RP_TAB_FLOOR_POS, "Metric 8, by position bin (softmax_floor_by_position)",
     "The same per log-spaced position bin [bin_start, bin_end): rows × heads in it, the "
     "smallest ratio (≥ 1) and the smallest weight times n.",
     6, {RP_FLOORP_POS, RP_FLOORP_START, RP_FLOORP_END, RP_FLOORP_COUNT, RP_FLOORP_RATIO,
         RP_FLOORP_MWN},
     {"position", "bin_start", "bin_end", "count", "min_ratio", "min_weight_times_n"},
     {"%.6g", "%.0f", "%.0f", "%.0f", "%.4g", "%.4g"}},
};

/* Whether case a is a better representative than case b: longer sequence, then probe
 * mode (it has the data-driven columns), then b stays (file order). */
static int better_rep(const rp_case *a, const rp_case *b)
{
    if (a->seq_len != b->seq_len)
        return a->seq_len > b->seq_len;
    return strcmp(a->mode, "probe") == 0 && strcmp(b->mode, "probe") != 0;
}

/* Representative cases of table tab: per (method, factor), in file order of their first
 * case, the complete case with that table that better_rep prefers. Fills idx (room for
 * f->ncases) and returns how many. */
static size_t rep_cases(const rp_file *f, int tab, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < f->ncases; i++) {
        const rp_case *c = &f->cases[i];
        if (!c->complete || c->problem || c->tab[tab].n <= 0)
            continue;
        size_t k = 0;
        for (; k < n; k++) {
            const rp_case *r = &f->cases[idx[k]];
            if (rp_same_variant(r, c))
                break;
        }
        if (k == n)
            idx[n++] = i;
        else if (better_rep(c, &f->cases[idx[k]]))
            idx[k] = i;
    }
    return n;
}

/* rp_write_metric_tables: see report_int.h. */
void rp_write_metric_tables(FILE *o, const rp_file *f, int html)
{
    int any = 0;
    size_t *scratch = malloc((f->ncases ? f->ncases : 1) * sizeof *scratch);
    if (!scratch) {
        fprintf(o, html ? "<p class=\"warn\">Metric tables left out: out of memory.</p>\n"
                        : "\nMetric tables left out: out of memory.\n");
        return;
    }
    for (size_t t = 0; t < sizeof mtables / sizeof mtables[0]; t++) {
        const rp_mtable *m = &mtables[t];
        const size_t nrep = rep_cases(f, m->tab, scratch);
        if (nrep == 0)
            continue;
        if (!any) {
            fprintf(o, html ? "<h2>Metric tables</h2>\n<p>" : "\n## Metric tables\n\n");
            fprintf(o, "One representative case per method: its longest sequence, probe mode "
                       "before full mode, then the first in file order (the plots show every "
                       "case). A case with more than %d rows shows every k-th row (k = "
                       "⌈rows/%d⌉) and the last one.%s",
                    RP_TABLE_ROWS, RP_TABLE_ROWS, html ? "</p>\n" : "\n");
            any = 1;
        }
        fprintf(o, html ? "<h3>%s</h3>\n<p>%s</p>\n" : "\n### %s\n\n%s\n\n", m->title, m->intro);
        const char *head[RP_TAB_MAXCOL + 1] = {"case"};
        for (int j = 0; j < m->ncol; j++)
            head[j + 1] = m->head[j];
        rp_table_head(o, html, head, m->ncol + 1);
        for (size_t r = 0; r < nrep; r++) {
            const rp_case *c = &f->cases[scratch[r]];
            const rp_tab *tb = &c->tab[m->tab];
            const int64_t step = (tb->n + RP_TABLE_ROWS - 1) / RP_TABLE_ROWS;
            const int64_t extra = m->tab == RP_TAB_PAIRS ? c->met.critical_pair : -1;
            for (int64_t i = 0; i < tb->n; i++) {
                if (i % step != 0 && i != tb->n - 1 && i != extra)
                    continue;
                fprintf(o, html ? "<tr>" : "|");
                rp_cell_text(o, html, c->name);
                for (int j = 0; j < m->ncol; j++)
                    rp_cell_num(o, html, tb->col[m->col[j]][i], m->fmt[j]);
                fprintf(o, html ? "</tr>\n" : "\n");
            }
        }
        if (html)
            fprintf(o, "</table>\n");
    }
    free(scratch);
}

/* ---- ropebench bench ---------------------------------------------------------------- */

static const char *attr_value(const rp_attrs *as, const char *name)
{
    for (size_t i = 0; i < as->n; i++)
        if (strcmp(as->v[i].name, name) == 0)
            return as->v[i].value;
    return NULL;
}

/* rp_pb_row_ok: see report_int.h. */
int rp_pb_row_ok(const rp_bench *b, double ri)
{
    return ri >= 0 && ri < (double)b->t.n && ri == floor(ri) &&
           strcmp(b->bench[(int64_t)ri], "probe") == 0;
}

/* rp_per_pair: see report_int.h. */
double rp_per_pair(double x, double pairs)
{
    return pairs > 0 && x >= 0 ? 1e9 * x / pairs : NAN;
}

/* rp_pb_totals: see report_int.h. */
int64_t rp_pb_totals(const rp_bench *b, double *tot)
{
    const rp_tab *p = &b->pb;
    int64_t shown = 0;
    for (int64_t r = 0; r < b->t.n; r++)
        tot[r] = 0;
    for (int64_t k = 0; k < p->n; k++)
        if (rp_pb_row_ok(b, p->col[RP_PB_ROW][k])) {
            tot[(int64_t)p->col[RP_PB_ROW][k]] += p->col[RP_PB_S][k];
            shown++;
        }
    return shown;
}

/* write_breakdown: the probe breakdown of /bench/probe_breakdown (nothing when the file
 * has none, or none of its entries names a probe row of the table): per probe row and
 * class of key block, the blocks and keys, the class's share of the row's block time,
 * ns per pair computed for the block and its three phases, and the K and V bytes of its
 * keys over its time (n/a where a count or time is not positive). Entries whose row is
 * not a probe row of the /bench table are left out. */
static void write_breakdown(FILE *o, const rp_bench *b, int html)
{
    static const char *cols[] = {"kernel", "dtype", "threads", "rows per block", "blocks",
                                 "keys", "% of time", "ns/pair", "scores", "softmax", "PV",
                                 "K+V GB/s"};
    const rp_tab *p = &b->pb;
    double *tot = NULL; /* [b->t.n]: each row's block time */
    if (p->n <= 0 || b->t.n <= 0 || !(tot = calloc((size_t)b->t.n, sizeof *tot)) ||
        rp_pb_totals(b, tot) == 0)
        goto cleanup;
    fprintf(o, html ? "<h3>Probe breakdown</h3>\n<p>"
                    : "\n### Probe breakdown\n\n");
    fprintf(o, "One more call of each AVX-512 probe row with time-stamp counter timers around "
               "every key block (docs/bench.md, Probe breakdown): the blocks of 64 keys grouped "
               "by the query rows that see them, each group's share of the row's block time "
               "(summed over threads), its ns per pair computed (rows x keys) for the whole "
               "block and for the scores, the softmax and PV, and the K and V bytes of its "
               "keys over its time. The blocks few rows see are a stream; those many rows see "
               "are arithmetic, to be read against the same pieces in L1.%s",
               html ? "</p>\n" : "\n\n");
    rp_table_head(o, html, cols, (int)(sizeof cols / sizeof cols[0]));
    for (int64_t k = 0; k < p->n; k++) {
        if (!rp_pb_row_ok(b, p->col[RP_PB_ROW][k]))
            continue;
        const int64_t r = (int64_t)p->col[RP_PB_ROW][k];
        const double pairs = p->col[RP_PB_PAIRS][k], t = p->col[RP_PB_S][k];
        char range[48];
        if (p->col[RP_PB_ROWS_MAX][k] < 0)
            snprintf(range, sizeof range, "%.0f+", p->col[RP_PB_ROWS_MIN][k]);
        else
            snprintf(range, sizeof range, "%.0f-%.0f", p->col[RP_PB_ROWS_MIN][k],
                     p->col[RP_PB_ROWS_MAX][k]);
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, b->kernel[r]);
        rp_cell_text(o, html, b->dtype[r]);
        rp_cell_num(o, html, b->t.col[RP_BENCH_THREADS][r], "%.0f");
        rp_cell_text(o, html, range);
        rp_cell_num(o, html, p->col[RP_PB_BLOCKS][k], "%.0f");
        rp_cell_num(o, html, p->col[RP_PB_KEYS][k], "%.0f");
        rp_cell_num(o, html, tot[r] > 0 && t >= 0 ? 100.0 * t / tot[r] : NAN, "%.1f");
        rp_cell_num(o, html, rp_per_pair(t, pairs), "%.2f");
        rp_cell_num(o, html, rp_per_pair(p->col[RP_PB_QK][k], pairs), "%.2f");
        rp_cell_num(o, html, rp_per_pair(p->col[RP_PB_SOFTMAX][k], pairs), "%.2f");
        rp_cell_num(o, html, rp_per_pair(p->col[RP_PB_PV][k], pairs), "%.2f");
        rp_cell_num(o, html, t > 0 && p->col[RP_PB_KEYS][k] >= 0
                                 ? 2.0 * p->col[RP_PB_KEYS][k] *
                                       b->t.col[RP_BENCH_HEAD_DIM][r] * 4.0 / t * 1e-9
                                 : NAN, "%.2f");
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
cleanup:
    free(tot);
}

/* rp_write_bench: see report_int.h. */
void rp_write_bench(FILE *o, const rp_file *f, int html)
{
    static const char *cols[] = {"kernel", "dtype", "bench", "head_dim", "seq_len", "rows",
                                 "threads", "median s", "CV %", "GFLOP/s", "GB/s", "% of peak", "peak",
                                 "ideal % of triad", "calls"};
    const rp_bench *b = &f->bench;
    if (b->t.n <= 0 && !b->unreadable)
        return;
    fprintf(o, html ? "<h2>Throughput: ropebench bench</h2>\n<p>"
                    : "\n## Throughput: ropebench bench\n\n");
    if (b->t.n <= 0) {
        fprintf(o, "This file has a /bench group, but its table could not be read: a column "
                   "missing or empty, columns of different lengths, or a type this report "
                   "does not read (docs/results-format.md).%s",
                html ? "</p>\n" : "\n");
        return;
    }
    fprintf(o, "The /bench group written by ropebench bench -o (docs/bench.md): the median of "
               "the timed calls of each row, and their coefficient of variation (CV, the "
               "run-to-run noise: a difference between rows smaller than it is not one). "
               "Rows: the query rows of a call (causal: L; probe: the distinct rows of its "
               "log-spaced positions, bench --probe-rows; RoPE: the rows rotated). "
               "%% of peak is GFLOP/s over the FMA peak of the "
               "row's thread count for causal rows, and GB/s over the triad bandwidth for "
               "probe and rope rows (column peak), both measured by the same bench run. "
               "Ideal %% of triad (probe rows) is what the same run's probe overlap reached: "
               "the probe's FLOP as FMA chains with its K and V read between them, about what "
               "a kernel doing that arithmetic near the FMA peak and nothing else could show "
               "(n/a in files from before 2026-12-02). Calls: how many calls each repetition "
               "timed together (short calls are batched, docs/bench.md; the median and CV are "
               "per call; n/a in files from before 2026-12-03, whose repetitions were one "
               "call each).");
    static const char *pk[] = {"peak_gflops_1thread", "peak_gflops_all", "triad_gbps_1thread",
                               "triad_gbps_all", "tile_ceiling_gflops_1thread",
                               "dpbf16_peak_gflops_1thread"};
    static const char *pl[] = {"FMA peak %.1f GFLOP/s (1 thread)", "FMA peak %.1f GFLOP/s (all threads)",
                               "triad %.1f GB/s (1 thread)", "triad %.1f GB/s (all threads)",
                               "register-tile ceiling %.1f GFLOP/s (1 thread)",
                               "VDPBF16PS peak %.1f GFLOP/s (1 thread)"};
    int said = 0; /* (the peaks the file holds, "; " between them; none: said so) */
    for (size_t i = 0; i < sizeof pk / sizeof pk[0]; i++) {
        const char *v = attr_value(&b->attrs, pk[i]);
        double x = v ? strtod(v, NULL) : NAN;
        if (x > 0) {
            fprintf(o, said ? "; " : " That run measured: ");
            fprintf(o, pl[i], x);
            said = 1;
        }
    }
    if (!said)
        fprintf(o, " The file does not hold the peaks that run measured");
    const char *cpu = attr_value(&b->attrs, "cpu_model");
    if (cpu) {
        fprintf(o, " on ");
        if (html)
            rp_html_esc(o, cpu);
        else
            rp_md_esc(o, cpu);
    }
    const char *q = attr_value(&b->attrs, "quick");
    fprintf(o, ".%s%s", q && strcmp(q, "1") == 0 ? " This was a --quick run: its fractions mean "
                                                   "nothing."
                                                 : "",
            html ? "</p>\n" : "\n\n");
    rp_table_head(o, html, cols, (int)(sizeof cols / sizeof cols[0]));
    static const int num[] = {RP_BENCH_HEAD_DIM, RP_BENCH_SEQ_LEN, RP_BENCH_NROWS,
                              RP_BENCH_THREADS, RP_BENCH_MEDIAN, RP_BENCH_CV, RP_BENCH_GFLOPS,
                              RP_BENCH_GBPS};
    static const char *fmt[] = {"%.0f", "%.0f", "%.0f", "%.0f", "%.4g", "%.1f", "%.2f", "%.2f"};
    for (int64_t i = 0; i < b->t.n; i++) {
        fprintf(o, html ? "<tr>" : "|");
        rp_cell_text(o, html, b->kernel[i]);
        rp_cell_text(o, html, b->dtype[i]);
        rp_cell_text(o, html, b->bench[i]);
        for (size_t j = 0; j < sizeof num / sizeof num[0]; j++)
            rp_cell_num(o, html, b->t.col[num[j]][i] * (num[j] == RP_BENCH_CV ? 100.0 : 1.0),
                        fmt[j]);
        rp_cell_num(o, html, 100.0 * b->t.col[RP_BENCH_FRACTION][i], "%.1f");
        rp_cell_text(o, html, isnan(b->t.col[RP_BENCH_GBPS][i]) ? "FMA" : "triad");
        rp_cell_num(o, html, 100.0 * b->t.col[RP_BENCH_OVERLAP][i], "%.1f");
        rp_cell_num(o, html, b->t.col[RP_BENCH_CALLS][i], "%.0f");
        fprintf(o, html ? "</tr>\n" : "\n");
    }
    if (html)
        fprintf(o, "</table>\n");
    write_breakdown(o, b, html);
}
