/* report_cli.c — test driver: runs rb_report_write(FILE, DIR) without MPI and prints its error lines, as `ropebench report` does. */
#include <stdio.h>
#include <string.h>

#include "rb_kernels.h"
#include "rb_reports.h"

int main(int argc, char **argv)
{
    char err[1024] = "";
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s results.h5 [outdir]\n", argv[0]);
        return 2;
    }
    int rc = rb_report_write(argv[1], argc > 2 ? argv[2] : ".", err, sizeof err, NULL);
    for (char *l = err, *nl; *l; l = nl ? nl + 1 : l + strlen(l)) {
        nl = strchr(l, '\n');
        fprintf(stderr, "report_cli: %.*s\n", nl ? (int)(nl - l) : (int)strlen(l), l);
    }
    if (rc != RB_OK)
        return 1;
    printf("report written to %s/report.md and %s/report.html\n", argc > 2 ? argv[2] : ".",
           argc > 2 ? argv[2] : ".");
    return 0;
}
