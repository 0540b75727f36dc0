/* mpi_internal.h — helpers shared by the files of mpi/ (not part of the public interface). */
#ifndef RB_MPI_INTERNAL_H
#define RB_MPI_INTERNAL_H

#include <mpi.h>
#include <stddef.h>

/* Turn a failed MPI call's return code into RB_EMPI with "<what>: <MPI error string>". */
int rb_mpi_fail(char *err, size_t errlen, int mpirc, const char *what);

/* rb_mpi_agree: collective over comm. Combines every rank's rc (0 or a negative RB_E
 * code) so that all ranks return the same verdict: the most negative code of any rank.
 * A rank whose own rc was 0 but which receives a failure gets the message
 * "<what>: failed on another rank (code N)". If the agreement itself fails: RB_EMPI. */
int rb_mpi_agree(MPI_Comm comm, int rc, const char *what, char *err, size_t errlen);

#endif
