/* rb_reports.h — public interface of reports/: read a results file (HDF5, serial,
 * read-only) and write report.md + self-contained report.html with gnuplot SVG plots,
 * or set several files side by side (compare.md + compare.html).
 * Never calls MPI collectives, never recomputes attention. */
#ifndef RB_REPORTS_H
#define RB_REPORTS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rb_report_write: read `results_path` and write <outdir>/report.md,
 * <outdir>/report.html and the plots' SVG files (outdir is created if missing).
 * Cases without complete=1 are listed as incomplete and otherwise skipped.
 * Errors: file missing/unreadable, truncated, or not a ropebench file (root attribute
 * format != "ropebench" or unsupported format_version): RB_EIO / RB_EFORMAT with one
 * line naming the file and the reason; nothing is written in that case.
 * gnuplot missing: RB_EUNSUPPORTED naming gnuplot (the Markdown report is still
 * written). Some plots failing (their data stops gnuplot): RB_EIO naming the first, the
 * documents and the other plots written. On RB_OK, err is empty, or holds one line
 * when finished cases (complete=1) could not be read (a damaged file: a required
 * attribute missing or out of range, a dataset of the wrong shape, values no run
 * writes): they are listed as skipped in the report and the line says how many and
 * why the first was; after a plot failure that line follows the failure's, after a
 * '\n'. The documents, the plots, study.ini and the list of plots replace their
 * earlier versions together, once all are written: a report that fails leaves the
 * directory as it was (its new files removed). *written (when written is not NULL)
 * is set to 1 when the documents (and study.ini) are in place, on RB_OK and after a
 * plot failure alike, and to 0 otherwise: the caller's way to tell "written but for
 * plots" from "not written" without reading err. */
int rb_report_write(const char *results_path, const char *outdir, char *err,
                    size_t errlen, int *written);

/* RB_COMPARE_MAX: the most results files one comparison takes (labelled A, B, ...). */
#define RB_COMPARE_MAX 8

/* rb_report_compare: read the n results files paths[0..n) (2 <= n <= RB_COMPARE_MAX)
 * and write <outdir>/compare.md and a self-contained <outdir>/compare.html (outdir is
 * created if missing) that set them side by side, file A (paths[0]) the baseline:
 * machines and runs (CPU, host, ranks, threads, kernel, versions, switches, peaks), the
 * keys whose stored configurations differ, throughput of the cases every file holds
 * complete (GFLOP/s, % of each run's own peak, ratio to A), their mean entropy and the
 * largest difference from A, where the files ran on two or more rank counts a model
 * T(N) = a + b/N of each case's total time fitted over them (its efficiency and its
 * prediction at 4x the largest N), the cases some file lacks, and the /bench rows every file
 * has (fraction of its own peak, time over A's). Reads only the files. Errors: n out of
 * range (RB_EINVAL), any file that rb_report_write would refuse (its error, naming
 * it; nothing written), an output that cannot be written (RB_EIO naming it). */
int rb_report_compare(const char *const *paths, int n, const char *outdir, char *err,
                      size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
