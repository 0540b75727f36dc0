/* rb_reports.h — public interface of reports/: read a results file (HDF5, serial,
 * read-only) and write report.md + self-contained report.html with gnuplot SVG plots.
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
 * written). */
int rb_report_write(const char *results_path, const char *outdir, char *err,
                    size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
