/* report_int.h — internal types of reports/: the results file as read into memory, and the reader/plot/writer functions between the report's files. */
#ifndef RB_REPORT_INT_H
#define RB_REPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One attribute rendered as text (name, value), in name order. */
typedef struct {
    char *name;
    char *value;
} rp_attr;

typedef struct {
    rp_attr *v;
    size_t n;
} rp_attrs;

enum { RP_T_SETUP, RP_T_COMPUTE, RP_T_COMM, RP_T_MERGE, RP_T_TOTAL, RP_T_METRICS, RP_T_COUNT };

/* Metric tables of a case (docs/metrics.md): each is a group of equally long 1-D
 * datasets read as columns of doubles. Columns whose name starts with '=' are derived
 * by the reader (see rp_tab_specs); a missing optional column reads as NaN; a table
 * whose first column is missing, or whose columns differ in length, is absent (n = 0). */
enum {
    RP_TAB_PAIRS,     /* phase/pairs (metric 1) */
    RP_TAB_PHASE,     /* phase/by_distance (metric 2) */
    RP_TAB_DECAY,     /* decay/by_distance (metric 4) */
    RP_TAB_SHARE,     /* pair_share summarised per distance bin (metric 5, derived) */
    RP_TAB_NEEDLES,   /* needles (metric 6) */
    RP_TAB_PRECISION, /* precision (metric 7) */
    RP_TAB_FLOOR,     /* softmax_floor (metric 8) */
    RP_TAB_ENTROPY,   /* entropy/by_position (metric 3) */
    RP_TAB_FLOOR_POS, /* softmax_floor_by_position (metric 8 per position bin) */
    RP_TAB_COUNT
};
#define RP_TAB_MAXCOL 12

/* Column indices of each table, in the order of rp_tab_specs[t].cols. */
enum { RP_PAIRS_J, RP_PAIRS_INV_BASE, RP_PAIRS_INV, RP_PAIRS_WAVELENGTH, RP_PAIRS_SPAN,
       RP_PAIRS_MAX_PHASE, RP_PAIRS_TURNS, RP_PAIRS_OOD };
enum { RP_PHASE_DIST, RP_PHASE_D, RP_PHASE_D_HIGH, RP_PHASE_D_MID, RP_PHASE_D_LOW,
       RP_PHASE_OOD_COUNT, RP_PHASE_OOD_ENERGY };
enum { RP_DECAY_DIST, RP_DECAY_COUNT, RP_DECAY_MEAN, RP_DECAY_STD, RP_DECAY_ROFORMER,
       RP_DECAY_B };
enum { RP_SHARE_DIST, RP_SHARE_WEIGHT, RP_SHARE_TOP_PAIR, RP_SHARE_TOP, RP_SHARE_HIGH,
       RP_SHARE_MID, RP_SHARE_LOW };
enum { RP_NEEDLE_HEAD, RP_NEEDLE_QPOS, RP_NEEDLE_NPOS, RP_NEEDLE_DIST, RP_NEEDLE_SCORE,
       RP_NEEDLE_MASS, RP_NEEDLE_RANK, RP_NEEDLE_HIT, RP_NEEDLE_RANK_HAY, RP_NEEDLE_HIT_HAY };
enum { RP_PREC_POS, RP_PREC_PHASE, RP_PREC_SCORE, RP_PREC_ENTROPY, RP_PREC_BOUND,
       RP_PREC_PHASE_MEAN };
enum { RP_FLOOR_POS, RP_FLOOR_MWN, RP_FLOOR_FLOOR, RP_FLOOR_RATIO };
enum { RP_ENT_POS, RP_ENT_COUNT, RP_ENT_MEAN, RP_ENT_MIN, RP_ENT_MAX, RP_ENT_STD,
       RP_ENT_NORM };
enum { RP_FLOORP_POS, RP_FLOORP_START, RP_FLOORP_END, RP_FLOORP_COUNT, RP_FLOORP_RATIO,
       RP_FLOORP_MWN };

typedef struct {
    const char *group;                /* group under the case */
    int ncol;
    const char *cols[RP_TAB_MAXCOL];  /* dataset names ('=': derived) */
} rp_tab_spec;
extern const rp_tab_spec rp_tab_specs[RP_TAB_COUNT];

typedef struct {
    int64_t n;                    /* rows (0: absent) */
    double *col[RP_TAB_MAXCOL];   /* [ncol][n] */
} rp_tab;

/* Scalar summaries of a case's metrics (NaN / -1 where absent). */
typedef struct {
    int64_t critical_pair;
    double d_leaves_zero;     /* first bin-centre distance with D > 1e-9 (NaN: never) */
    double d_zero_before;     /* the bin centre before it (D <= 1e-9 there; NaN: none) */
    int64_t d_exact;          /* its D_leaves_zero attribute (-1: never; -2: absent) */
    double entropy_last;      /* mean entropy of the last position bin */
    double needle_hit_rate;   /* hits against the haystack / needles, over heads */
    double needle_hit_rate_all; /* hits among all visible keys / needles, over heads */
    double phase_err_max;     /* fp32 phase error, max over probe rows */
    double entropy_err_max;   /* |entropy error| from fp32 phases, max over rows */
    double floor_ratio_min;   /* softmax floor ratio, min over rows (>= 1) */
    double bound_ratio_max;   /* precision bound ratio, max (<= 1) */
    int64_t first_negative_B; /* -1: none in [1, L-1]; -2: not in the file */
} rp_metrics;

/* One case group. Strings are sanitised copies of the file's values only where noted;
 * everything else is the file's text, to be escaped by the writer. */
typedef struct {
    char *name;
    rp_attrs attrs;
    char method[64], mode[32], dataset[64], shard_layout[64];
    char af_setting[32]; /* attribute attention_factor_setting ("" if absent) */
    double factor;
    int64_t seq_len, heads, n_rows, head_dim;
    char kernel[32], dtype[16];
    double flops;       /* attribute flops (NaN if absent) */
    double peak_gflops, triad_gbps; /* the peaks of the run that computed the case, sums
                                     * over its ranks (attributes; NaN if absent) */
    int64_t threads;    /* attribute threads (-1 if absent) */
    int complete;       /* complete == 1 */
    char *problem;      /* why it is listed as incomplete/unreadable, NULL if fine */
    int not_case;       /* a /cases entry that is no case at all (a soft link, not a
                         * readable group): said on stderr as a damaged finished case is */
    /* rows (complete cases only) */
    int64_t nrows_read;
    double mean_entropy, mean_lse;
    int64_t nonfinite;  /* non-finite entropy/lse values left out of the means */
    double *x, *y;      /* plot series: position, entropy averaged over heads */
    int64_t npts;
    int binned;         /* series is log-binned means */
    /* timings: min, median, max across ranks, per RP_T_* (NaN if absent) */
    double tmin[RP_T_COUNT], tmed[RP_T_COUNT], tmax[RP_T_COUNT];
    int64_t timing_ranks;
    /* the metrics' cost: max over ranks of (compute_s + metrics_s) over max over ranks
     * of compute_s (NaN without both timings, or where every compute_s is 0) */
    double metrics_cost;
    rp_tab tab[RP_TAB_COUNT];
    /* pair_share/share [share_bins][share_pairs] and its bin distances (probe) */
    double *share, *share_dist;
    int64_t share_bins, share_pairs;
    rp_metrics met;
    int has_metrics;
} rp_case;

/* The /bench group of `ropebench bench -o` (docs/results-format.md), n = 0 if absent. */
enum { RP_BENCH_HEAD_DIM, RP_BENCH_SEQ_LEN, RP_BENCH_THREADS, RP_BENCH_MEDIAN,
       RP_BENCH_GFLOPS, RP_BENCH_GBPS, RP_BENCH_FRACTION, RP_BENCH_CV,
       RP_BENCH_OVERLAP, RP_BENCH_CALLS, RP_BENCH_NROWS };
extern const rp_tab_spec rp_bench_spec;
/* /bench/probe_breakdown (bench -o with AVX-512 probe rows; docs/bench.md) */
enum { RP_PB_ROW, RP_PB_ROWS_MIN, RP_PB_ROWS_MAX, RP_PB_BLOCKS, RP_PB_KEYS, RP_PB_PAIRS,
       RP_PB_S, RP_PB_QK, RP_PB_SOFTMAX, RP_PB_PV, RP_PB_CALL };
extern const rp_tab_spec rp_bench_breakdown_spec;
typedef struct {
    rp_tab t;                      /* numeric columns (rp_bench_spec) */
    char **kernel, **dtype, **bench; /* string columns, t.n each */
    rp_attrs attrs;                /* attributes of /bench */
    rp_tab pb;                     /* the probe breakdown (n 0: none) */
    int unreadable;                /* /bench is there, but its table could not be read */
} rp_bench;

typedef struct {
    char *path;
    char sha256[65];  /* the file's SHA-256, hex ("" if it could not be read whole) */
    int64_t size;     /* its size in bytes (-1: unknown) */
    rp_attrs root, prov;
    rp_bench bench;
    char **rank_host, **rank_binding, **hosts;
    size_t nrank_host, nrank_binding, nhosts;
    char **planned; /* /provenance/planned_cases: the study's cases (absent: 0) */
    size_t nplanned;
    size_t *topo_xml_len; /* length of each host's hwloc XML */
    size_t ntopo;
    rp_case *cases;
    size_t ncases;
    int cases_sorted; /* cases in strcmp order of their names (HDF5's name index gives
                       * them so), for a binary search by name */
    /* peaks measured by the run on all ranks at once: sums over ranks (NaN if absent) */
    double peak_gflops, triad_gbps;
    int64_t peak_ranks;
    int64_t peak_threads; /* root threads_per_rank: the run that measured them (-1: absent) */
} rp_file;

/* Rows above which a plot series is reduced to log-binned means, and the bins per
 * octave of position. */
#define RP_BIN_ABOVE 512
#define RP_BINS_PER_OCTAVE 8

/* Read the whole file (serial HDF5, read-only). File-level problems (missing,
 * unreadable, truncated, not ropebench, unsupported version) return RB_EIO/RB_EFORMAT
 * with one line naming the file; problems inside one case mark that case's problem. */
int rp_file_read(const char *path, rp_file *f, char *err, size_t errlen);

/* rp_sha256_file: the SHA-256 of the bytes of `path` as 64 lowercase hex digits in hex
 * (terminated; "" on failure) and their count in *size (size may be NULL). RB_OK, or
 * RB_EIO if the file cannot be opened or read to its end. (report_sha256.c) */
int rp_sha256_file(const char *path, char hex[65], int64_t *size);
void rp_file_free(rp_file *f);

/* Kinds of plot (report_plot.c says what each shows), in the order of the report. */
enum {
    RP_K_ENTROPY,     /* rows/entropy against position (metric 3) */
    RP_K_D,           /* metric 2: D */
    RP_K_BANDS,       /* metric 2: D and its bands, one panel per method */
    RP_K_OOD,         /* metric 2: ood fractions */
    RP_K_TURNS,       /* metric 1: turns per pair (analytic) */
    RP_K_DECAY,       /* metric 4: mean score (probe) */
    RP_K_BOUNDS,      /* metric 4: B and the RoFormer bound (analytic) */
    RP_K_NEEDLE_RANK, /* metric 6 */
    RP_K_NEEDLE_MASS, /* metric 6 */
    RP_K_PRECISION,   /* metric 7, one panel per method */
    RP_K_FLOOR,       /* metric 8 */
    RP_K_COUNT
};
#define RP_HEATMAP RP_K_COUNT /* rp_plot.kind of a per-case pair-share heat map */

/* A plot: the cases of one (seq_len, mode, dataset) group, or of one seq_len for the
 * analytic kinds (one case per method). */

typedef struct {
    int kind; /* RP_K_*, or RP_HEATMAP (one case: idx[0]) */
    int64_t seq_len;
    char mode[32], dataset[64];
    size_t *idx; /* indices into rp_file.cases (complete cases with points) */
    size_t n;
    int binned;  /* some series are log-binned */
    char svg_name[96]; /* file name beside the report, "" if not rendered */
    char case_name[200]; /* RP_HEATMAP: the case (safe label; a longer name keeps its
                          * start and end around "...") */
    char *svg;         /* SVG text for inlining, NULL if not rendered */
} rp_plot;

/* Group the complete cases and render each group with gnuplot into outdir, each SVG
 * under its temporary name (rp_out_tmp of outdir/svg_name) for the caller to rename
 * (rp_commit) or remove (rp_discard); on an error that leaves no plot, none is left.
 * RB_EUNSUPPORTED naming gnuplot if it cannot be started; RB_EIO if it fails (the
 * message carries the last line gnuplot printed). When only some plots fail (their
 * data stops gnuplot), the others are still rendered and RB_EIO names the first that
 * failed. *plots/nplots are filled even on error (the failed ones without SVGs) so the
 * tables can still be written. */
int rp_plots_render(const rp_file *f, const char *outdir, rp_plot **plots,
                    size_t *nplots, char *err, size_t errlen);
void rp_plots_free(rp_plot *p, size_t n);

/* Caption of a plot (what it shows, for which group). */
void rp_plot_caption(char *b, size_t n, const rp_plot *p);

/* Write report.md and report.html into outdir. */
int rp_write_md(const rp_file *f, const rp_plot *p, size_t np, const char *outdir,
                const char *plot_note, char *err, size_t errlen);
int rp_write_html(const rp_file *f, const rp_plot *p, size_t np, const char *outdir,
                  const char *plot_note, char *err, size_t errlen);

/* Table output (report_tables.c), Markdown (html = 0) or HTML (html = 1). Text from
 * the file is escaped: rp_html_esc for HTML, rp_md_esc for a Markdown table cell (no
 * line breaks, pipes, raw HTML, links, images, emphasis or strikethrough; an '_'
 * inside a word is left as it is, as CommonMark reads it; a bare URL may still be
 * shown as a link by GFM's extended autolinks). rp_fmt_num prints v with printf format f, "n/a" for
 * NaN. rp_table_head writes the header row of ncol columns; rows are then written with
 * rp_cell_text / rp_cell_num between "<tr>"/"|" and "</tr>"/newline, and an HTML table
 * is closed with "</table>". */
void rp_html_esc(FILE *o, const char *s);
void rp_md_esc(FILE *o, const char *s);
/* rp_unsafe_len: the length of a character at s that a report never shows as it is
 * (0 if none): a C0 control other than tab and line ends, DEL, a C1 control
 * (U+0080..U+009F), U+2028/U+2029, or a Unicode bidi control (embeddings, overrides,
 * isolates, marks), which could make text of the file
 * drive the terminal that shows report.md, or read differently from the study.ini it
 * names. The escapers and the raw code spans replace it (? in Markdown, U+FFFD in
 * HTML). */
size_t rp_unsafe_len(const char *s);
void rp_fmt_num(char *b, size_t n, double v, const char *f);
void rp_table_head(FILE *o, int html, const char *const *cols, int ncol);
void rp_cell_text(FILE *o, int html, const char *s);
void rp_cell_num(FILE *o, int html, double v, const char *fmt);

/* The metric tables (metrics 1, 2, 4-8) of one representative case per method: the
 * longest sequence, probe before full mode, then file order; long tables show every
 * k-th row and the last. Nothing is written when no case has a metric table. */
void rp_write_metric_tables(FILE *o, const rp_file *f, int html);

/* The throughput table of the /bench group (nothing if the file has none): one row per
 * benchmark with its % of the FMA peak (causal) or of the triad (probe, rope); then,
 * when the file has /bench/probe_breakdown entries of its probe rows, the Probe
 * breakdown table (docs/bench.md). */
void rp_write_bench(FILE *o, const rp_file *f, int html);

/* rp_pb_row_ok: whether probe-breakdown entry row index ri names a probe row of b's
 * table (a whole number in range whose bench is "probe"): entries that do not are left
 * out of every table. */
int rp_pb_row_ok(const rp_bench *b, double ri);

/* rp_per_pair: ns per pair of x seconds over `pairs` pairs; NaN (n/a) unless both are
 * non-negative and pairs positive. */
double rp_per_pair(double x, double pairs);

/* rp_pb_totals: each probe row's block time, the sum of its breakdown entries'
 * seconds, into tot[b->t.n] (zeroed first; rows without entries stay 0), in one pass
 * over the entries; returns how many entries name a probe row (rp_pb_row_ok). */
int64_t rp_pb_totals(const rp_bench *b, double *tot);

/* Throughput of a case from its attributes and timings: GFLOP/s over the slowest
 * rank's compute time, K/V streaming GB/s for probe cases (K and V read once), and
 * both as % of the peaks the run measured (sums over ranks). NaN where unknown. */
typedef struct {
    double compute_s, gflops, pct_peak, gbps, pct_triad;
    int peak_comparable;  /* fp32: above 100 % of the FMA peak means the peak read low
                           * (bf16 products are not FMAs: VDPBF16PS does twice the FLOPs) */
    int triad_comparable; /* the K/V a rank streams is over 4x the last-level cache the
                           * file records (or it records none): from memory, as the triad */
} rp_tput;
void rp_case_tput(const rp_file *f, const rp_case *c, rp_tput *t);

/* rp_llc_bytes: the last-level cache size in a topology summary ("..., L3 32 MiB" or
 * "L3 2 x 16 MiB": 32 MiB), or 0 where it names none. */
double rp_llc_bytes(const char *summary);

/* rp_tput_tally: a case's throughput t into the counts for rp_tput_over: over[0]/[1]
 * counts it when its % of FMA peak / of triad is above 100 and the yardstick applies
 * (peak_comparable / triad_comparable), worst[] keeps the highest. */
void rp_tput_tally(const rp_tput *t, int over[2], double worst[2]);
/* rp_tput_over: below a throughput table, one note for each of the FMA peak (k = 0)
 * and the triad (k = 1) when over[k] > 0 cases read above 100 % of it, worst[k] the
 * highest such %: a run measures its peaks once, at its start, so a figure above
 * 100 % means that they came out low (the machine was busier then than during the
 * cases), which overstates every % of that run. `where` (NULL: none) starts the count,
 * e.g. "in B, " for a compared file. Markdown (html = 0) or HTML. */
void rp_tput_over(FILE *o, int html, const char *where, const int over[2],
                  const double worst[2]);

/* Shared by the report and the comparison (report_write.c): an attribute's value by
 * name (NULL if absent); mkdir -p of dir (RB_EIO naming it); rp_open_out: OUTDIR/name
 * to be written through *o, its path in path[plen] (RB_EIO naming it), written under a
 * temporary name beside it (rp_out_tmp: path + ".tmp-<pid>", in the same directory, so
 * that the rename is atomic). Outputs replace their earlier versions together or not at
 * all (a report's documents and plots): rp_close_staged closes o and leaves what it
 * wrote under the temporary name, or, if anything written failed, removes it, RB_EIO
 * naming path and the cause (e.g. "File too large"); rp_commit renames it to path,
 * replacing what was there (a symbolic link at path is replaced, not followed; RB_EIO
 * naming path if the rename fails); rp_discard removes it. */
const char *rp_attr_get(const rp_attrs *as, const char *name);
int rp_make_dirs(const char *dir, char *err, size_t errlen);
int rp_open_out(const char *outdir, const char *name, FILE **o, char *path, size_t plen,
                char *err, size_t errlen);
int rp_close_staged(FILE *o, const char *path, char *err, size_t errlen);
int rp_commit(const char *path, char *err, size_t errlen);
void rp_discard(const char *path);
void rp_out_tmp(char *t, size_t n, const char *path);
/* rp_check_target: whether outdir/name can be created or replaced by rp_commit: RB_OK,
 * or RB_EIO with one line naming it (a directory or other non-regular file there, or no
 * write permission), before anything is written, so that a report or comparison that
 * cannot finish leaves the earlier outputs as they were. */
int rp_check_target(const char *outdir, const char *name, char *err, size_t errlen);
/* rp_printable: src into dst[len] for a line on the terminal, every byte that is not
 * printable ASCII (control characters, escape sequences, newlines, non-ASCII) as '?',
 * cut at len - 1 bytes (report_read.c). */
void rp_printable(char *dst, size_t len, const char *src);
/* rp_html_begin: a self-contained page's head (inline CSS) up to and with <h1>title</h1>
 * (title is our own text, not escaped). */
void rp_html_begin(FILE *o, const char *title);

/* Label safe for gnuplot and the file system: [A-Za-z0-9 ._+=,-], others -> '_'. */
void rp_safe_label(char *dst, size_t len, const char *src);

/* rp_case_label: "<method> x<factor>", plus " af <setting>" when the case is one of
 * several attention-factor entries of its method (its name carries "-af"), made safe
 * for gnuplot like rp_safe_label. */
void rp_case_label(char *dst, size_t len, const rp_case *c);

/* rp_same_variant: whether a and b are the same method entry: method, factor (NaN equal
 * to NaN) and attention-factor setting. */
int rp_same_variant(const rp_case *a, const rp_case *b);

#endif
