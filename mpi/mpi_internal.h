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

/* rb_topo_binding_format: the binding text of /provenance/rank_binding into buf (len
 * bytes, NUL-terminated; nothing written when len is 0). mask is hwloc's taskset form
 * ("0x3"), list its list form ("0-1"), npu the set's PU count, unbound nonzero when the
 * set is every PU hwloc shows. Gives "cpuset MASK = PU LIST" plus " (unbound)"; when
 * that does not fit, "PU LIST" (plus " (unbound)"), and when that does not fit either
 * "PU HEAD,... (cut; NPU PUs)" (plus " (unbound)"), HEAD being the
 * longest prefix of LIST that ends before a comma and fits (possibly empty), so a cut
 * text always says it was cut and never ends inside a number (given len >= 48; a
 * shorter buffer gets what fits). */
void rb_topo_binding_format(char *buf, size_t len, const char *mask, const char *list,
                            int npu, int unbound);

#endif
