/* topo.c — hwloc topology and binding of every rank, gathered so that all ranks hold identical strings and per-host XML. */
#include "rb_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>
#include <hwloc/export.h>

#include "mpi_internal.h"

#define BIND_LEN 256

/* Load this machine's topology; NULL on failure. */
static hwloc_topology_t topo_load(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return NULL;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return NULL;
    }
    return topo;
}

/* Contract in mpi_internal.h. */
void rb_topo_binding_format(char *buf, size_t len, const char *mask, const char *list,
                            int npu, int unbound)
{
    if (!len)
        return;
    const char *unb = unbound ? " (unbound)" : "";
    int n = snprintf(buf, len, "cpuset %s = PU %s%s", mask, list, unb);
    if (n >= 0 && (size_t)n < len)
        return;
    /* Too long: the PU list alone, whole if it fits, else its head cut after an entry. */
    n = snprintf(buf, len, "PU %s%s", list, unb);
    if (n >= 0 && (size_t)n < len)
        return;
    char tail[64];
    snprintf(tail, sizeof tail, ",... (cut; %d PUs)%s", npu, unb);
    const size_t fixed = strlen("PU ") + strlen(tail) + 1;
    const size_t room = len > fixed ? len - fixed : 0;
    size_t keep = strlen(list) < room ? strlen(list) : room;
    while (keep > 0 && list[keep] != ',' && list[keep] != '\0')
        keep--;
    snprintf(buf, len, "PU %.*s%s", (int)keep, list, tail);
}

/* "cpuset 0x3 = PU 0-1" (OS indexes), with " (unbound)" when the process may run on
 * every PU hwloc shows (in hwloc 2 the PUs the process's cgroup allows, not every PU
 * of the machine), or "cpuset unknown (...)" when hwloc cannot tell; cut as
 * rb_topo_binding_format says when it does not fit. */
static void binding_string(hwloc_topology_t topo, char *buf, size_t len)
{
    if (!topo) {
        snprintf(buf, len, "cpuset unknown (hwloc topology not loaded)");
        return;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    char *mask = NULL, *list = NULL;
    if (!set || hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0) {
        snprintf(buf, len, "cpuset unknown (hwloc_get_cpubind failed)");
        goto cleanup;
    }
    if (hwloc_bitmap_taskset_asprintf(&mask, set) < 0 ||
        hwloc_bitmap_list_asprintf(&list, set) < 0) {
        snprintf(buf, len, "cpuset unknown (out of memory)");
        goto cleanup;
    }
    rb_topo_binding_format(buf, len, mask, list, hwloc_bitmap_weight(set),
                           hwloc_bitmap_isequal(set, hwloc_topology_get_topology_cpuset(topo)));
cleanup:
    free(mask);
    free(list);
    hwloc_bitmap_free(set);
}

/* Byte count as "32 MiB", "1.5 MiB", "512 KiB". */
static void format_bytes(unsigned long long b, char *buf, size_t len)
{
    const unsigned long long mib = 1ull << 20, kib = 1ull << 10;
    if (b >= mib && b % mib == 0)
        snprintf(buf, len, "%llu MiB", b / mib);
    else if (b >= mib)
        snprintf(buf, len, "%.1f MiB", (double)b / (double)mib);
    else
        snprintf(buf, len, "%llu KiB", b / kib);
}

/* "1 package, 2 cores, 2 PUs, L3 32 MiB" (or "L3 2 x 16 MiB"; the last level present
 * among L3, L2 if there is no L3; nothing if hwloc reports no cache). */
static void summary_string(hwloc_topology_t topo, char *buf, size_t len)
{
    if (!topo) {
        snprintf(buf, len, "topology unknown (hwloc could not load it)");
        return;
    }
    int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    int ncore = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int n = snprintf(buf, len, "%d package%s, %d core%s, %d PU%s", npkg, npkg == 1 ? "" : "s",
                     ncore, ncore == 1 ? "" : "s", npu, npu == 1 ? "" : "s");
    if (n < 0 || (size_t)n >= len)
        return;
    static const struct {
        hwloc_obj_type_t type;
        const char *name;
    } levels[] = {{HWLOC_OBJ_L3CACHE, "L3"}, {HWLOC_OBJ_L2CACHE, "L2"}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        int nc = hwloc_get_nbobjs_by_type(topo, levels[i].type);
        if (nc <= 0)
            continue;
        hwloc_obj_t c = hwloc_get_obj_by_type(topo, levels[i].type, 0);
        char sz[32];
        format_bytes((unsigned long long)c->attr->cache.size, sz, sizeof sz);
        if (nc == 1)
            snprintf(buf + n, len - (size_t)n, ", %s %s", levels[i].name, sz);
        else
            snprintf(buf + n, len - (size_t)n, ", %s %d x %s", levels[i].name, nc, sz);
        break;
    }
}

/* Contract in rb_mpi.h. buf gets the summary, binding this process's binding; either
 * may be NULL. Returns RB_OK, or RB_EUNSUPPORTED when hwloc cannot load the topology
 * (the strings then say so). */
int rb_topo_local_summary(char *buf, size_t len, char *binding, size_t blen)
{
    hwloc_topology_t topo = topo_load();
    if (buf && len)
        summary_string(topo, buf, len);
    if (binding && blen)
        binding_string(topo, binding, blen);
    if (!topo)
        return RB_EUNSUPPORTED;
    hwloc_topology_destroy(topo);
    return RB_OK;
}

/* Free every string of t and zero it; safe on a zeroed or partly filled rb_topo. */
void rb_topo_free(rb_topo *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nranks; i++) {
        if (t->rank_host)
            free(t->rank_host[i]);
        if (t->rank_binding)
            free(t->rank_binding[i]);
    }
    for (int i = 0; i < t->nhosts; i++) {
        if (t->host_name)
            free(t->host_name[i]);
        if (t->host_xml)
            free(t->host_xml[i]);
    }
    free(t->rank_host);
    free(t->rank_binding);
    free(t->host_name);
    free(t->host_xml);
    memset(t, 0, sizeof *t);
}

/* Contract in rb_mpi.h. summary describes the calling rank's host (identical on all
 * ranks of one host). Errors, agreed on by all ranks: RB_ENOMEM, RB_EMPI, and
 * RB_EUNSUPPORTED when the first rank of a host cannot export its XML. On failure *t
 * is left zeroed. */
int rb_topo_collect(MPI_Comm comm, rb_topo *t, char *err, size_t errlen)
{
    hwloc_topology_t topo = NULL;
    char *hosts_all = NULL, *binds_all = NULL, *xml = NULL;
    int *first_rank = NULL;
    int rc = RB_OK, mrc, rank = 0, nranks = 1, lrc = RB_OK;
    char host[MPI_MAX_PROCESSOR_NAME + 1], bind[BIND_LEN];

    memset(t, 0, sizeof *t);
    if ((mrc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS ||
        (mrc = MPI_Comm_size(comm, &nranks)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "topology: communicator");
        goto cleanup;
    }

    /* This rank: host name, binding, summary. */
    memset(host, 0, sizeof host);
    int hlen = 0;
    if (MPI_Get_processor_name(host, &hlen) != MPI_SUCCESS || hlen <= 0)
        if (gethostname(host, sizeof host - 1) != 0)
            snprintf(host, sizeof host, "unknown");
    host[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    topo = topo_load();
    memset(bind, 0, sizeof bind);
    binding_string(topo, bind, sizeof bind);
    summary_string(topo, t->summary, sizeof t->summary);
    /* The release built against; the runtime only reports its API version (2.9 has
     * API 2.8), which is noted if it differs from the headers'. */
    unsigned v = hwloc_get_api_version();
    if (v == HWLOC_API_VERSION)
        snprintf(t->hwloc_version, sizeof t->hwloc_version, "%s", HWLOC_VERSION);
    else
        snprintf(t->hwloc_version, sizeof t->hwloc_version, "%s (runtime API %u.%u)",
                 HWLOC_VERSION, v >> 16, (v >> 8) & 0xff);

    hosts_all = malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME);
    binds_all = malloc((size_t)nranks * BIND_LEN);
    first_rank = malloc((size_t)nranks * sizeof *first_rank);
    t->rank_host = calloc((size_t)nranks, sizeof(char *));
    t->rank_binding = calloc((size_t)nranks, sizeof(char *));
    t->host_name = calloc((size_t)nranks, sizeof(char *));
    t->host_xml = calloc((size_t)nranks, sizeof(char *));
    if (!hosts_all || !binds_all || !first_rank || !t->rank_host || !t->rank_binding ||
        !t->host_name || !t->host_xml)
        lrc = rb_errf(err, errlen, RB_ENOMEM, "topology: out of memory for %d ranks", nranks);
    if ((rc = rb_mpi_agree(comm, lrc, "topology: allocation", err, errlen)) < 0)
        goto cleanup;
    t->nranks = nranks;

    if ((mrc = MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts_all,
                             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm)) != MPI_SUCCESS ||
        (mrc = MPI_Allgather(bind, BIND_LEN, MPI_CHAR, binds_all, BIND_LEN, MPI_CHAR,
                             comm)) != MPI_SUCCESS) {
        rc = rb_mpi_fail(err, errlen, mrc, "topology: MPI_Allgather");
        goto cleanup;
    }

    /* Distinct hosts in order of their first rank: the same on every rank. */
    for (int r = 0; r < nranks; r++) {
        char *h = hosts_all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        char *b = binds_all + (size_t)r * BIND_LEN;
        h[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
        b[BIND_LEN - 1] = '\0';
        t->rank_host[r] = strdup(h);
        t->rank_binding[r] = strdup(b);
        if (!t->rank_host[r] || !t->rank_binding[r])
            lrc = RB_ENOMEM;
        int k = 0;
        while (k < t->nhosts && strcmp(hosts_all + (size_t)first_rank[k] *
                                       MPI_MAX_PROCESSOR_NAME, h) != 0)
            k++;
        if (k == t->nhosts) {
            first_rank[t->nhosts] = r;
            t->host_name[t->nhosts++] = strdup(h);
            if (!t->host_name[k])
                lrc = RB_ENOMEM;
        }
    }
    if (lrc < 0)
        lrc = rb_errf(err, errlen, RB_ENOMEM, "topology: out of memory for host names");
    if ((rc = rb_mpi_agree(comm, lrc, "topology: host names", err, errlen)) < 0)
        goto cleanup;

    /* The XML of each host, exported by its first rank and broadcast to all. */
    for (int h = 0; h < t->nhosts; h++) {
        int root = first_rank[h], xlen = -1;
        if (rank == root) {
            if (topo && hwloc_topology_export_xmlbuffer(topo, &xml, &xlen, 0) == 0 &&
                xml && xlen > 0)
                xlen = (int)strlen(xml) + 1;
            else
                xlen = -1;
        }
        if ((mrc = MPI_Bcast(&xlen, 1, MPI_INT, root, comm)) != MPI_SUCCESS) {
            rc = rb_mpi_fail(err, errlen, mrc, "topology: MPI_Bcast");
            goto cleanup;
        }
        if (xlen <= 0) {
            rc = rb_errf(err, errlen, RB_EUNSUPPORTED,
                         "topology: hwloc could not export the XML of host %s (rank %d)",
                         t->host_name[h], root);
            goto cleanup;
        }
        t->host_xml[h] = malloc((size_t)xlen);
        lrc = t->host_xml[h] ? RB_OK
                             : rb_errf(err, errlen, RB_ENOMEM,
                                       "topology: out of memory for %d bytes of XML", xlen);
        if ((rc = rb_mpi_agree(comm, lrc, "topology: XML buffer", err, errlen)) < 0)
            goto cleanup;
        if (rank == root) {
            memcpy(t->host_xml[h], xml, (size_t)xlen);
            hwloc_free_xmlbuffer(topo, xml);
            xml = NULL;
        }
        if ((mrc = MPI_Bcast(t->host_xml[h], xlen, MPI_CHAR, root, comm)) != MPI_SUCCESS) {
            rc = rb_mpi_fail(err, errlen, mrc, "topology: MPI_Bcast");
            goto cleanup;
        }
        t->host_xml[h][xlen - 1] = '\0';
    }

cleanup:
    if (xml)
        hwloc_free_xmlbuffer(topo, xml);
    if (topo)
        hwloc_topology_destroy(topo);
    free(hosts_all);
    free(binds_all);
    free(first_rank);
    if (rc < 0)
        rb_topo_free(t);
    return rc;
}
