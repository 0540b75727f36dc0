/* report_int.h — internal types of reports/: the results file as read into memory, and the reader/plot/writer functions between the report's files. */
#ifndef RB_REPORT_INT_H
#define RB_REPORT_INT_H

#include <stddef.h>
#include <stdint.h>

/* One attribute rendered as text (name, value), in name order. */
typedef struct {
    char *name;
    char *value;
} rp_attr;

typedef struct {
    rp_attr *v;
    size_t n;
} rp_attrs;

enum { RP_T_SETUP, RP_T_COMPUTE, RP_T_COMM, RP_T_MERGE, RP_T_TOTAL, RP_T_COUNT };

/* Plot series of a case: entropy against position (x, y of rp_case) and the metric
 * series read from its metric groups (docs/metrics.md). */
enum {
    RP_S_ENTROPY,   /* rows/entropy (rp_case.x/y) */
    RP_S_D,         /* phase/by_distance: D against distance */
    RP_S_DECAY,     /* decay/by_distance: mean_score against distance (probe) */
    RP_S_NEEDLE,    /* needles: rank against distance (head 0) */
    RP_S_PRECISION, /* precision: phase_err_max against position */
    RP_S_COUNT
};
typedef struct {
    double *x, *y;
    int64_t n;
} rp_series;

/* Scalar summaries of a case's metrics (NaN / -1 where absent). */
typedef struct {
    int64_t critical_pair;
    double d_leaves_zero;     /* first bin-centre distance with D > 1e-9 (NaN: never) */
    double entropy_last;      /* mean entropy of the last position bin */
    double needle_hit_rate;   /* hits / needles over heads */
    double phase_err_max;     /* fp32 phase error, max over probe rows */
    double entropy_err_max;   /* |entropy error| from fp32 phases, max over rows */
    double floor_ratio_min;   /* softmax floor ratio, min over rows (>= 1) */
    double bound_ratio_max;   /* precision bound ratio, max (<= 1) */
    int64_t first_negative_B;
} rp_metrics;

/* One case group. Strings are sanitised copies of the file's values only where noted;
 * everything else is the file's text, to be escaped by the writer. */
typedef struct {
    char *name;
    rp_attrs attrs;
    char method[64], mode[32], dataset[64], shard_layout[64];
    double factor;
    int64_t seq_len, heads, n_rows, head_dim;
    char kernel[32], dtype[16];
    double flops;       /* attribute flops (NaN if absent) */
    int64_t threads;    /* attribute threads (-1 if absent) */
    int complete;       /* complete == 1 */
    char *problem;      /* why it is listed as incomplete/unreadable, NULL if fine */
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
    rp_series s[RP_S_COUNT]; /* s[RP_S_ENTROPY] unused: entropy is x/y above */
    /* pair_share/share [share_bins][share_pairs] and its bin distances (probe) */
    double *share, *share_dist;
    int64_t share_bins, share_pairs;
    rp_metrics met;
    int has_metrics;
} rp_case;

typedef struct {
    char *path;
    rp_attrs root, prov;
    char **rank_host, **rank_binding, **hosts;
    size_t nrank_host, nrank_binding, nhosts;
    size_t *topo_xml_len; /* length of each host's hwloc XML */
    size_t ntopo;
    rp_case *cases;
    size_t ncases;
    /* peaks measured by the run on all ranks at once: sums over ranks (NaN if absent) */
    double peak_gflops, triad_gbps;
    int64_t peak_ranks;
} rp_file;

/* Rows above which a plot series is reduced to log-binned means, and the bins per
 * octave of position. */
#define RP_BIN_ABOVE 512
#define RP_BINS_PER_OCTAVE 8

/* Read the whole file (serial HDF5, read-only). File-level problems (missing,
 * unreadable, truncated, not ropebench, unsupported version) return RB_EIO/RB_EFORMAT
 * with one line naming the file; problems inside one case mark that case's problem. */
int rp_file_read(const char *path, rp_file *f, char *err, size_t errlen);
void rp_file_free(rp_file *f);

/* A plot: the cases of one (seq_len, mode, dataset) group. */
#define RP_HEATMAP RP_S_COUNT /* rp_plot.kind of a per-case pair-share heat map */

typedef struct {
    int kind; /* RP_S_*, or RP_HEATMAP (one case: idx[0]) */
    int64_t seq_len;
    char mode[32], dataset[64];
    size_t *idx; /* indices into rp_file.cases (complete cases with points) */
    size_t n;
    int binned;  /* some series are log-binned */
    char svg_name[96]; /* file name beside the report, "" if not rendered */
    char case_name[80]; /* RP_HEATMAP: the case (safe label) */
    char *svg;         /* SVG text for inlining, NULL if not rendered */
} rp_plot;

/* Group the complete cases and render each group with gnuplot into outdir.
 * RB_EUNSUPPORTED naming gnuplot if it cannot be started; RB_EIO if it fails (the
 * message carries the last line gnuplot printed). *plots/nplots are filled even on
 * error (without SVGs) so the tables can still be written. */
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

/* Label safe for gnuplot and the file system: [A-Za-z0-9 ._+=,-], others -> '_'. */
void rp_safe_label(char *dst, size_t len, const char *src);

#endif
