/* test_topo.c — hwloc collection: every rank ends with identical hosts, bindings and XML; local summary works. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"
#include "rb_mpi.h"

static int rank, nranks, n_pass, n_fail;

/* Collective check: ok must hold on every rank; rank 0 counts it. */
static void check(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!ok)
        printf("FAIL rank %d of %d: %s\n", rank, nranks, what);
    if (all)
        n_pass++;
    else
        n_fail++;
}

/* FNV-1a of a string (NULL hashes as a distinct value). */
static uint64_t hash_str(uint64_t h, const char *s)
{
    if (!s)
        return h ^ 0x9e3779b97f4a7c15ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull;
}

/* Same value on every rank? */
static int identical(uint64_t h)
{
    uint64_t mx = 0, mn = 0;
    MPI_Allreduce(&h, &mx, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &mn, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    return mx == mn;
}

/* rb_topo_binding_format (rank-local, every rank the same): the whole text when it fits,
 * the list alone next, and past that a head cut after a whole entry that says it was cut
 * (a scattered binding on a machine of hundreds of PUs: the ~500-PU case of hwloc's
 * list form, which a fixed 96-byte list used to cut silently). */
static void check_binding_format(void)
{
    char list[4096] = "", buf[256], what[600];
    size_t n = 0;
    for (int pu = 0; pu < 600; pu += 2)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", pu ? "," : "", pu);
    rb_topo_binding_format(buf, sizeof buf, "0x3", "0-1", 2, 0);
    snprintf(what, sizeof what, "binding format, short: \"%s\"", buf);
    check(strcmp(buf, "cpuset 0x3 = PU 0-1") == 0, what);
    rb_topo_binding_format(buf, sizeof buf, "0xff", "0-7", 8, 1);
    snprintf(what, sizeof what, "binding format, unbound: \"%s\"", buf);
    check(strcmp(buf, "cpuset 0xff = PU 0-7 (unbound)") == 0, what);
    char mask[300];
    memset(mask, 'f', sizeof mask - 1);
    mask[sizeof mask - 1] = '\0';
    rb_topo_binding_format(buf, sizeof buf, mask, "0-1195", 1196, 1);
    snprintf(what, sizeof what, "binding format, long mask: \"%s\"", buf);
    check(strcmp(buf, "PU 0-1195 (unbound)") == 0, what);
    rb_topo_binding_format(buf, sizeof buf, "0x5555", list, 300, 0);
    const char *cut = strstr(buf, ",... (cut; 300 PUs)");
    size_t head = cut ? (size_t)(cut - buf) : 0;
    snprintf(what, sizeof what, "binding format, 300 scattered PUs: \"%s\" (want a head of "
             "the list ending before a comma, then \",... (cut; 300 PUs)\", in %zu bytes)",
             buf, sizeof buf);
    check(cut && strncmp(buf, "PU 0,2,4,", 9) == 0 && strlen(buf) < sizeof buf &&
              strcmp(cut, ",... (cut; 300 PUs)") == 0 && head > 3 + 200 &&
              strncmp(buf + 3, list, head - 3) == 0 && list[head - 3] == ',',
          what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (rank == 0)
        printf("test_topo on %d ranks: rb_topo_collect succeeds, strings are non-empty and "
               "identical on every rank (FNV hash compared), XML starts with \"<?xml\"\n", nranks);
    check_binding_format();
    char err[256] = "", what[1024];
    rb_topo t;
    int rc = rb_topo_collect(MPI_COMM_WORLD, &t, err, sizeof err);
    snprintf(what, sizeof what, "rb_topo_collect rc %d: %s", rc, err);
    check(rc == RB_OK, what);
    if (rc == RB_OK) {
        snprintf(what, sizeof what, "nranks %d (want %d), nhosts %d", t.nranks, nranks, t.nhosts);
        check(t.nranks == nranks && t.nhosts >= 1 && t.nhosts <= nranks, what);

        int nonempty = t.hwloc_version[0] && t.summary[0];
        for (int r = 0; r < t.nranks; r++)
            nonempty &= t.rank_host[r] && t.rank_host[r][0] && t.rank_binding[r] &&
                        (strncmp(t.rank_binding[r], "cpuset ", 7) == 0 ||
                         strncmp(t.rank_binding[r], "PU ", 3) == 0);
        snprintf(what, sizeof what, "non-empty strings: version \"%s\", summary \"%s\", "
                 "rank 0 host \"%s\" binding \"%s\"", t.hwloc_version, t.summary,
                 t.rank_host ? t.rank_host[0] : "?", t.rank_binding ? t.rank_binding[0] : "?");
        check(nonempty, what);

        int xml_ok = 1;
        for (int h = 0; h < t.nhosts; h++)
            xml_ok &= t.host_name[h] && t.host_xml[h] && strncmp(t.host_xml[h], "<?xml", 5) == 0 &&
                      strstr(t.host_xml[h], "<topology") != NULL;
        snprintf(what, sizeof what, "XML of every host starts with <?xml and has <topology> "
                 "(host 0 XML %zu bytes)", t.host_xml[0] ? strlen(t.host_xml[0]) : 0);
        check(xml_ok, what);

        /* My own host and binding are where rank r's entries say. */
        char me[MPI_MAX_PROCESSOR_NAME];
        int len;
        MPI_Get_processor_name(me, &len);
        snprintf(what, sizeof what, "rank_host[%d] \"%s\" is this rank's host \"%s\"", rank,
                 t.rank_host[rank], me);
        check(strcmp(t.rank_host[rank], me) == 0, what);
        int found = 0;
        for (int h = 0; h < t.nhosts; h++)
            found += strcmp(t.host_name[h], me) == 0;
        check(found == 1, "this rank's host appears exactly once among the hosts");

        uint64_t hh = 1469598103934665603ull;
        hh = hash_str(hh, t.hwloc_version);
        hh = hash_str(hh, t.summary);
        for (int r = 0; r < t.nranks; r++) {
            hh = hash_str(hh, t.rank_host[r]);
            hh = hash_str(hh, t.rank_binding[r]);
        }
        for (int h = 0; h < t.nhosts; h++) {
            hh = hash_str(hh, t.host_name[h]);
            hh = hash_str(hh, t.host_xml[h]);
        }
        hh ^= (uint64_t)t.nhosts << 32 | (uint64_t)t.nranks;
        check(identical(hh), "identical rb_topo contents on every rank");
        if (rank == 0)
            printf("  hwloc %s, %d host(s), summary \"%s\", rank 0 binding \"%s\"\n",
                   t.hwloc_version, t.nhosts, t.summary, t.rank_binding[0]);
    }
    rb_topo_free(&t);
    check(t.rank_host == NULL && t.nranks == 0, "rb_topo_free clears the struct");
    rb_topo_free(&t); /* twice is harmless */

    char sum[200] = "", bind[200] = "";
    rc = rb_topo_local_summary(sum, sizeof sum, bind, sizeof bind);
    snprintf(what, sizeof what, "rb_topo_local_summary rc %d summary \"%s\" binding \"%s\"", rc, sum,
             bind);
    check(rc == RB_OK && strstr(sum, "package") && strstr(sum, "PU") &&
              strncmp(bind, "cpuset ", 7) == 0, what);

    int counts[2] = {n_pass, n_fail};
    MPI_Bcast(counts, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d passed, %d failed\n", counts[0], counts[1]);
    MPI_Finalize();
    return counts[1] ? 1 : 0;
}
