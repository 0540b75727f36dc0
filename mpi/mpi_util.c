/* mpi_util.c — helpers shared by mpi/ and the command: MPI error strings, collective agreement on a return code, the names MPI-IO opens a file with a ':' under, and the MPI settings the program needs whoever launches it. */
#include "mpi_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rb_kernels.h"
#include "rb_mpi.h"

/* Contract in mpi_internal.h. */
int rb_mpi_fail(char *err, size_t errlen, int mpirc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpirc, msg, &len) != MPI_SUCCESS || len <= 0)
        return rb_errf(err, errlen, RB_EMPI, "%s: MPI error %d", what, mpirc);
    msg[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
    return rb_errf(err, errlen, RB_EMPI, "%s: %s", what, msg);
}

/* Contract in mpi_internal.h. */
int rb_mpi_agree(MPI_Comm comm, int rc, const char *what, char *err, size_t errlen)
{
    int all = rc;
    int mrc = MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, comm);
    if (mrc != MPI_SUCCESS)
        return rb_mpi_fail(err, errlen, mrc, what);
    if (all < 0 && rc == 0)
        return rb_errf(err, errlen, all, "%s: failed on another rank (code %d)", what, all);
    return all < 0 ? all : 0; /* (the same code on every rank; each keeps its message) */
}

/* Contract in rb_mpi.h. */
int rb_mpi_agree_err(MPI_Comm comm, int rc, char *err, size_t errlen)
{
    int rank = 0, mine, lowest = INT_MAX, code = rc, mrc;
    char msg[512];
    MPI_Comm_rank(comm, &rank);
    mine = rc < 0 ? rank : INT_MAX;
    if ((mrc = MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm)) != MPI_SUCCESS)
        return rb_mpi_fail(err, errlen, mrc, "agreeing on a failure: MPI_Allreduce");
    if (lowest == INT_MAX)
        return 0;
    msg[0] = '\0';
    if (rank == lowest)
        snprintf(msg, sizeof msg, "%s", err && errlen ? err : "");
    if ((mrc = MPI_Bcast(&code, 1, MPI_INT, lowest, comm)) != MPI_SUCCESS ||
        (mrc = MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, lowest, comm)) != MPI_SUCCESS)
        return rb_mpi_fail(err, errlen, mrc, "agreeing on a failure: MPI_Bcast");
    if (rank != lowest)
        rb_errf(err, errlen, code, "rank %d: %s", lowest, msg);
    return code;
}

/* Contract in rb_mpi.h. */
void rb_mpi_env_defaults(void)
{
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
    setenv("OMPI_MCA_io", "romio321", 0);
#endif
}

/* Contract in rb_mpi.h. */
int rb_mpi_io_names(const char *path, char *first, char *second, size_t len)
{
    if (!path || !first || !second || !len)
        return 0;
    if (!strchr(path, ':')) {
        const int n = snprintf(first, len, "%s", path);
        return n >= 0 && (size_t)n < len ? 1 : 0;
    }
    char cwd[4096] = "";
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        return 0;
    const int n = snprintf(first, len, "%s%s%s", cwd, cwd[0] ? "/" : "", path);
    if (n < 0 || (size_t)n >= len)
        return 0;
    const int m = snprintf(second, len, "ufs:%s", first);
    return m >= 0 && (size_t)m < len ? 2 : 0;
}
