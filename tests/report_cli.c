/* report_cli.c — test driver: runs rb_report_write(FILE, DIR) without MPI and prints its one-line error, as `ropebench report` does. */
#include <stdio.h>

#include "rb_kernels.h"
#include "rb_reports.h"

int main(int argc, char **argv)
{
    char err[1024] = "";
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s results.h5 [outdir]\n", argv[0]);
        return 2;
    }
    int rc = rb_report_write(argv[1], argc > 2 ? argv[2] : ".", err, sizeof err);
    if (rc != RB_OK) {
        fprintf(stderr, "report_cli: %s\n", err);
        return 1;
    }
    if (err[0])
        fprintf(stderr, "report_cli: %s\n", err);
    printf("report written to %s/report.md and %s/report.html\n", argc > 2 ? argv[2] : ".",
           argc > 2 ? argv[2] : ".");
    return 0;
}
