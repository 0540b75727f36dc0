/* results_hdf5.c — the parallel-HDF5 backend of rb_results.h (mpio driver, collective I/O). */
#include "rb_results.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "rb_kernels.h"
#include "rb_mpi.h"

struct rb_results {
    hid_t file;
    hid_t dxpl; /* collective data transfer */
    hid_t lcpl; /* creates missing parent groups */
    MPI_Comm comm;
    int rank, nranks;
    char *path;      /* as opened, for the disk reservation (reserve_blocks) */
    dev_t dev;       /* rank 0: the file that was opened, so that a path that now */
    ino_t ino;       /* names another file (deleted, replaced) is told (reserve_blocks) */
    int dirty;       /* written to since the last flush that succeeded */
    int lock_fd;     /* rank 0: holds the writer lock on the file (writer_lock), or -1 */
};

/* ---- errors ----------------------------------------------------------------------- */

/* rb_results_names_it: see rb_results.h. */
int rb_results_names_it(rb_results *r, const char *path)
{
    struct stat st;
    if (!r || r->rank != 0)
        return -1;
    return stat(path, &st) == 0 && st.st_dev == r->dev && st.st_ino == r->ino;
}

typedef struct {
    char desc[256];
    char func[64];
    int found;
} h5_inner;

/* Walked upward, entry 0 is the innermost (most specific) error of the stack. */
static herr_t h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    h5_inner *in = data;
    if (n == 0 && e) {
        snprintf(in->desc, sizeof in->desc, "%s", e->desc ? e->desc : "");
        snprintf(in->func, sizeof in->func, "%s", e->func_name ? e->func_name : "");
        in->found = 1;
    }
    return 0;
}

/* The results file open in this process (one at a time: run and bench each open one),
 * named in every HDF5 error, so that a failed write says which file it was. */
static const char *h5_file_name;

/* Fill err with "results: <file>: <path>: <call> failed: <HDF5's innermost message> (in
 * <H5 function>, <source file>:<line>)", clear the HDF5 error stack and return code. */
static int h5_fail(char *err, size_t errlen, int code, const char *file, int line,
                   const char *path, const char *call)
{
    h5_inner in = {{0}, {0}, 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_walk_cb, &in);
    H5Eclear2(H5E_DEFAULT);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *fn = h5_file_name ? h5_file_name : "?";
    if (strcmp(fn, path) == 0 || !h5_file_name) { /* the file itself (open, close) */
        if (in.found)
            return rb_errf(err, errlen, code, "results: %s: %s failed: %s (in %s, %s:%d)",
                           path, call, in.desc, in.func, base, line);
        return rb_errf(err, errlen, code, "results: %s: %s failed (%s:%d)", path, call,
                       base, line);
    }
    if (in.found)
        return rb_errf(err, errlen, code, "results: %s: %s: %s failed: %s (in %s, %s:%d)",
                       fn, path, call, in.desc, in.func, base, line);
    return rb_errf(err, errlen, code, "results: %s: %s: %s failed (%s:%d)", fn, path, call,
                   base, line);
}

/* Evaluate an HDF5 call; on a negative result record HDF5's message and jump to the
 * function's cleanup label with rc set. Needs `rc`, `err`, `errlen`, `path` in scope. */
#define H5TRY_TO(expr, call, label)                                                    \
    do {                                                                               \
        if ((expr) < 0) {                                                              \
            rc = h5_fail(err, errlen, RB_EIO, __FILE__, __LINE__, path, call);         \
            goto label;                                                                \
        }                                                                              \
    } while (0)
#define H5TRY(expr, call) H5TRY_TO(expr, call, cleanup)

/* H5TRY for the local steps before a collective H5Dwrite: a failure goes to the
 * function's `ready:` label, where every rank agrees before any of them writes (one that
 * failed alone would leave the others inside H5Dwrite). */
#define H5PRE(expr, call) H5TRY_TO(expr, call, ready)

/* Agree on a local status: every rank gets the most negative code of all ranks, so
 * that a local failure never leaves the others blocked in a later collective. When the
 * failure is another rank's, rank 0 gets that rank's message (with "on rank N"), since
 * rank 0 is the one that reports; the rest get "failed on rank N". */
static int agree(rb_results *r, int rc, char *err, size_t errlen, const char *path)
{
    struct {
        int v, rank;
    } in = {rc, r->rank}, all = {rc, r->rank};
    if (MPI_Allreduce(&in, &all, 1, MPI_2INT, MPI_MINLOC, r->comm) != MPI_SUCCESS)
        return rb_errf(err, errlen, RB_EMPI, "results: %s: MPI_Allreduce failed", path);
    if (all.v >= 0 || (all.rank == r->rank && r->rank == 0))
        return all.v < 0 ? all.v : rc;
    if (r->rank == 0 || r->rank == all.rank) {
        /* the failing rank's message to rank 0 (the only pair that talks here) */
        char msg[512] = "";
        if (r->rank == all.rank) {
            snprintf(msg, sizeof msg, "%s", err && errlen ? err : "");
            if (MPI_Send(msg, (int)sizeof msg, MPI_CHAR, 0, 0, r->comm) != MPI_SUCCESS)
                return rb_errf(err, errlen, RB_EMPI, "results: %s: MPI_Send failed", path);
            return all.v;
        }
        if (MPI_Recv(msg, (int)sizeof msg, MPI_CHAR, all.rank, 0, r->comm,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return rb_errf(err, errlen, RB_EMPI, "results: %s: MPI_Recv failed", path);
        msg[sizeof msg - 1] = '\0';
        if (msg[0])
            return rb_errf(err, errlen, all.v, "%s (on rank %d)", msg, all.rank);
    }
    return rb_errf(err, errlen, all.v, "results: %s: failed on rank %d", path, all.rank);
}

/* ---- file ------------------------------------------------------------------------- */

/* The writer lock: an open-file-description lock (F_OFD_SETLK, Linux) on one byte far
 * past any end of file, taken by rank 0 on the file it writes and held until it is
 * closed or the process ends, however it ends. It is on the file itself (its inode),
 * so a second writer that reaches the file under another name (a symbolic or hard
 * link) sees it, and it does not conflict with the flock() that HDF5 takes for readers
 * (h5py, `ropebench report`) on local file systems. */
#define RB_LOCK_OFFSET ((off_t)1 << 62)

static int writer_lock_op(int fd, int cmd, struct flock *fl)
{
    memset(fl, 0, sizeof *fl);
    fl->l_type = F_WRLCK;
    fl->l_whence = SEEK_SET;
    fl->l_start = RB_LOCK_OFFSET;
    fl->l_len = 1;
    return fcntl(fd, cmd, fl);
}

/* The refusal of a file whose writer lock another process holds. */
static int busy_error(const char *path, char *err, size_t errlen)
{
    return rb_errf(err, errlen, RB_EINVAL,
                   "results: %s: another ropebench run is writing this file (under this or "
                   "another name)", path);
}

/* rb_results_check_free: see rb_results.h. */
int rb_results_check_free(const char *path, char *err, size_t errlen)
{
    struct flock fl;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return RB_OK; /* absent or unreadable: the create or open says why */
    int busy = writer_lock_op(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return busy ? busy_error(path, err, errlen) : RB_OK;
}

/* take_lock: the writer lock on the file at path, opened read-write (made when create),
 * into *fd (-1 when the file cannot be opened so: the create or open that follows says
 * why; or on a file system without these locks). RB_EINVAL "another ropebench run ..."
 * when another process holds it. */
static int take_lock(const char *path, int create, int *fd, char *err, size_t errlen)
{
    struct flock fl;
    *fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0666);
    if (*fd < 0)
        return RB_OK;
    if (writer_lock_op(*fd, F_OFD_SETLK, &fl) != 0) {
        const int e = errno;
        close(*fd);
        *fd = -1;
        if (e == EAGAIN || e == EACCES)
            return busy_error(path, err, errlen);
    }
    return RB_OK;
}

/* rb_results_hold: see rb_results.h. */
int rb_results_hold(const char *path, int *fd, char *err, size_t errlen)
{
    return take_lock(path, 0, fd, err, errlen);
}

/* Room kept for a flush or close beyond what the metadata cache holds: the metadata and
 * small-data aggregators' blocks (2 KiB each by default) and what the flush allocates. */
#define RB_RESERVE_SLACK ((off_t)64 << 10)

/* reserve_blocks: before a flush or close, make sure the file system will take every
 * write it makes. A flush writes the dirty metadata wherever HDF5 allocated it, some of
 * it in holes below the file's end (raw data allocated after it was written first) and
 * some past the end, and the superblock at offset 0, which is written first: if the rest
 * is then refused (a full file system, a file-size limit), the file no longer opens. So
 * rank 0 gives the holes their disk blocks (fallocate over the file, which changes no
 * byte) and reserves blocks past the end for at most all the metadata the cache holds
 * (H5Fget_mdc_size) + RB_RESERVE_SLACK (FALLOC_FL_KEEP_SIZE, so the size stays HDF5's),
 * and checks that much growth against the process's file-size limit. A file system
 * that cannot reserve (EOPNOTSUPP) is let through as before. Collective: the ranks
 * agree. RB_EIO "no room ..." when the room is not there. */
static int reserve_blocks(rb_results *r, char *err, size_t errlen)
{
    int rc = RB_OK;
    size_t max_size = 0, min_clean = 0, cur_size = 0;
    int n_entries = 0;
    const char *path = "/";
    H5TRY(H5Fget_mdc_size(r->file, &max_size, &min_clean, &cur_size, &n_entries),
          "H5Fget_mdc_size");
    const off_t extra = (off_t)cur_size + RB_RESERVE_SLACK;
    if (r->rank != 0) {
        /* a file-size limit is the process's own: every rank that takes part in the
         * flush checks its own (a rank whose metadata write fails there leaves the
         * others in a different collective inside H5Fflush: a hang) */
        struct stat st;
        struct rlimit rl;
        if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            stat(r->path, &st) == 0 &&
            (double)st.st_size + (double)extra > (double)rl.rlim_cur)
            rc = rb_errf(err, errlen, RB_EIO,
                         "results: %s: no room to write its metadata (%lld bytes past "
                         "its %lld): %s",
                         r->path, (long long)extra, (long long)st.st_size, strerror(EFBIG));
    } else {
        int fd = open(r->path, O_WRONLY | O_CLOEXEC);
        struct stat st;
        struct rlimit rl;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != r->dev || st.st_ino != r->ino) {
            rc = rb_errf(err, errlen, RB_EIO,
                         "results: %s: no longer the file this process writes (deleted, "
                         "renamed or replaced while open%s%s)",
                         r->path, fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
        } else {
            int e = 0;
            if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
                (double)st.st_size + (double)extra > (double)rl.rlim_cur)
                e = EFBIG;
            else if ((st.st_size > 0 && fallocate(fd, 0, 0, st.st_size) != 0) ||
                     fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size, extra) != 0)
                e = errno;
            if (e == ENOSPC || e == EFBIG || e == EDQUOT)
                rc = rb_errf(err, errlen, RB_EIO,
                             "results: %s: no room to write its metadata (%lld bytes past "
                             "its %lld): %s",
                             r->path, (long long)extra, (long long)st.st_size, strerror(e));
        }
        if (fd >= 0)
            close(fd);
    }
cleanup:
    return agree(r, rc, err, errlen, path);
}

/* Room a results file must have to be made or opened for writing: its first flush (a
 * new file's provenance) needs about a tenth of this. */
#define RB_ROOM_FIRST ((off_t)1 << 20)

/* rb_results_free_bytes: see rb_results.h. */
double rb_results_free_bytes(const char *path)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct statvfs vs;
    return statvfs(dir, &vs) == 0 ? (double)vs.f_bavail * (double)vs.f_frsize : -1.0;
}

/* rb_results_room: see rb_results.h (RB_ROOM_FIRST bytes). */
int rb_results_room(const char *path, char *err, size_t errlen)
{
    struct stat st;
    struct rlimit rl;
    const off_t size = stat(path, &st) == 0 ? st.st_size : 0;
    const double free_b = rb_results_free_bytes(path);
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (double)size + (double)RB_ROOM_FIRST > (double)rl.rlim_cur)
        return rb_errf(err, errlen, RB_EIO,
                       "results: %s: no room to write it: the file-size limit of this "
                       "process is %llu bytes (ulimit -f)",
                       path, (unsigned long long)rl.rlim_cur);
    if (free_b >= 0 && free_b < (double)RB_ROOM_FIRST)
        return rb_errf(err, errlen, RB_EIO,
                       "results: %s: no room to write it: %.0f KiB free on its file system",
                       path, free_b / 1024.0);
    return RB_OK;
}

static int open_stranded; /* rb_results_open_stranded */

/* Contract in rb_results.h. */
int rb_results_open_stranded(void) { return open_stranded; }

static int open_common(rb_results **out, const char *path, MPI_Comm comm, int create,
                       char *err, size_t errlen)
{
    open_stranded = 0;
    int rc = RB_OK;
    hid_t fapl = H5I_INVALID_HID;
    rb_results *r = NULL;
    if (!out || !path || !*path)
        return rb_errf(err, errlen, RB_EINVAL, "results: no output path given");
    *out = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    r = calloc(1, sizeof *r);
    if (!r)
        return rb_errf(err, errlen, RB_ENOMEM, "results: %s: out of memory", path);
    r->file = r->dxpl = r->lcpl = H5I_INVALID_HID;
    r->lock_fd = -1;
    if (MPI_Comm_dup(comm, &r->comm) != MPI_SUCCESS) {
        free(r);
        return rb_errf(err, errlen, RB_EMPI, "results: %s: MPI_Comm_dup failed", path);
    }
    MPI_Comm_rank(r->comm, &r->rank);
    MPI_Comm_size(r->comm, &r->nranks);
    if (!(r->path = strdup(path))) {
        rc = rb_errf(err, errlen, RB_ENOMEM, "results: %s: out of memory", path);
        goto cleanup;
    }
    h5_file_name = r->path;

    /* room for the first writes, checked before the file is made or opened: once HDF5
     * holds it, a write refused on one rank can leave the others inside a collective
     * (see rb_results_flush), and even its close can hang */
    if ((rc = agree(r, r->rank == 0 ? rb_results_room(path, err, errlen) : RB_OK, err, errlen,
                    path)) != RB_OK)
        goto cleanup;
    /* and never a file another run writes: the lock is taken before HDF5 touches the
     * file (create truncates), so two writers that name it differently cannot both get
     * past this point */
    if ((rc = agree(r, r->rank == 0 ? take_lock(path, create, &r->lock_fd, err, errlen)
                                    : RB_OK,
                    err, errlen, path)) != RB_OK)
        goto cleanup;
    H5TRY(fapl = H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate");
    H5TRY(H5Pset_fapl_mpio(fapl, r->comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    /* Metadata reads done once and broadcast; metadata written collectively. */
    H5TRY(H5Pset_all_coll_metadata_ops(fapl, 1), "H5Pset_all_coll_metadata_ops");
    H5TRY(H5Pset_coll_metadata_write(fapl, 1), "H5Pset_coll_metadata_write");
    {
        /* a name with a ':' as MPI-IO takes it (rb_mpi_io_names): absolute (ROMIO
         * opened 'o.h5' for 'nfs:o.h5'), then, when every rank failed, as ROMIO's
         * "ufs:" + name */
        char first[PATH_MAX + 8], second[PATH_MAX + 8];
        const int nn = rb_mpi_io_names(path, first, second, sizeof first);
        const char *name = nn ? first : path;
        r->file = create ? H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                         : H5Fopen(name, H5F_ACC_RDWR, fapl);
        int ok = r->file >= 0, all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MAX, r->comm);
        if (!all_ok && nn == 2) {
            H5Eclear2(H5E_DEFAULT);
            r->file = create ? H5Fcreate(second, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                             : H5Fopen(second, H5F_ACC_RDWR, fapl);
        }
        int mm[2] = {r->file >= 0, -(r->file >= 0)}; /* every rank's, any rank's */
        MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT, MPI_MIN, r->comm);
        if (r->file < 0)
            rc = h5_fail(err, errlen, RB_EIO, __FILE__, __LINE__, path,
                         create ? "H5Fcreate" : "H5Fopen");
        open_stranded = !mm[0] && mm[1] < 0;
        if (open_stranded) {
            /* open on some ranks only: the failing rank's line reaches rank 0; the file
             * stays open where it opened, since its close is collective and the others
             * would never join it (the caller leaves without MPI_Finalize) */
            rc = agree(r, rc, err, errlen, path);
            r->file = H5I_INVALID_HID;
        }
        if (rc != RB_OK)
            goto cleanup;
    }
    r->dirty = create;
    if (r->rank == 0) {
        struct stat st;
        if (stat(path, &st) == 0) {
            r->dev = st.st_dev;
            r->ino = st.st_ino;
        }
    }
    H5TRY(r->dxpl = H5Pcreate(H5P_DATASET_XFER), "H5Pcreate");
    H5TRY(H5Pset_dxpl_mpio(r->dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    H5TRY(r->lcpl = H5Pcreate(H5P_LINK_CREATE), "H5Pcreate");
    H5TRY(H5Pset_create_intermediate_group(r->lcpl, 1), "H5Pset_create_intermediate_group");

cleanup:
    if (fapl >= 0)
        H5Pclose(fapl);
    if (rc != RB_OK) {
        r->dirty = 0; /* nothing written yet: the close needs no room */
        rb_results_close(r, NULL, 0);
        return rc;
    }
    *out = r;
    return RB_OK;
}

/* sync_parent_dir: fsync the directory that holds path, so that a rename into it is
 * on disk (the file's own data is, by H5Fflush's MPI_File_sync); best effort: a file
 * system that cannot sync a directory changes nothing the run can act on. */
static void sync_parent_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return;
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    (void)fsync(fd);
    close(fd);
}

/* rb_results_rename: see rb_results.h. */
int rb_results_rename(rb_results *r, const char *to, int held, char *err, size_t errlen)
{
    int rc = RB_OK;
    char *copy = NULL;
    if (!r || !to || !*to)
        return rb_errf(err, errlen, RB_EINVAL, "results: rename without a name");
    if (!(copy = strdup(to)))
        rc = rb_errf(err, errlen, RB_ENOMEM, "results: %s: out of memory", to);
    /* every rank ready before rank 0 renames: a failure after the rename would leave
     * the ranks disagreeing about the name */
    if ((rc = agree(r, rc, err, errlen, to)) == RB_OK && r->rank == 0) {
        if (!held && (rc = rb_results_check_free(to, err, errlen)) != RB_OK)
            ; /* another run has begun writing `to` since this one started */
        else if (rename(r->path, to) != 0)
            rc = rb_errf(err, errlen, RB_EIO, "results: cannot rename %s to %s: %s", r->path,
                         to, strerror(errno));
        else
            sync_parent_dir(to); /* the new name survives a crash of the node, too */
    }
    if ((rc = agree(r, rc, err, errlen, to)) != RB_OK) {
        free(copy);
        return rc;
    }
    free(r->path);
    r->path = copy;
    h5_file_name = r->path;
    return RB_OK;
}

/* rb_results_create: see rb_results.h. Collective; the file is truncated. */
int rb_results_create(rb_results **out, const char *path, MPI_Comm comm, char *err,
                      size_t errlen)
{
    return open_common(out, path, comm, 1, err, errlen);
}

/* rb_results_open: see rb_results.h. Collective; opens an existing file read-write. */
int rb_results_open(rb_results **out, const char *path, MPI_Comm comm, char *err,
                    size_t errlen)
{
    return open_common(out, path, comm, 0, err, errlen);
}

/* rb_results_flush: see rb_results.h. */
int rb_results_flush(rb_results *r, char *err, size_t errlen)
{
    int rc = RB_OK;
    const char *path = "/";
    if (!r)
        return rb_errf(err, errlen, RB_EINVAL, "results: flush of a closed file");
    if ((rc = reserve_blocks(r, err, errlen)) != RB_OK)
        return rc;
    H5TRY(H5Fflush(r->file, H5F_SCOPE_GLOBAL), "H5Fflush");
    r->dirty = 0;
cleanup:
    return agree(r, rc, err, errlen, path); /* a flush that failed on one rank only */
}

/* rb_results_close: see rb_results.h. Also checks that no HDF5 object of the file is
 * still open (a leak in this backend), which is reported as RB_EIO. */
int rb_results_close(rb_results *r, char *err, size_t errlen)
{
    int rc = RB_OK;
    const char *path = "/";
    if (!r)
        return RB_OK;
    if (r->file >= 0) {
        ssize_t n = H5Fget_obj_count(r->file, H5F_OBJ_ALL | H5F_OBJ_LOCAL);
        if (n > 1 && rc == RB_OK)
            rc = rb_errf(err, errlen, RB_EIO,
                         "results: %zd HDF5 objects still open at close (backend leak)",
                         n - 1);
        /* after a flush with nothing written since, the close only rewrites blocks the
         * file has (the superblock) and truncates: no room needed */
        int rrc = r->dirty ? reserve_blocks(r, rc == RB_OK ? err : NULL,
                                            rc == RB_OK ? errlen : 0)
                           : RB_OK;
        if (rrc != RB_OK) {
            if (rc == RB_OK)
                rc = rrc;
        } else if (H5Fclose(r->file) < 0 && rc == RB_OK) {
            rc = h5_fail(err, errlen, RB_EIO, __FILE__, __LINE__, path, "H5Fclose");
        }
    }
    if (r->dxpl >= 0)
        H5Pclose(r->dxpl);
    if (r->lcpl >= 0)
        H5Pclose(r->lcpl);
    if (r->comm != MPI_COMM_NULL && r->comm != 0)
        MPI_Comm_free(&r->comm);
    if (h5_file_name == r->path)
        h5_file_name = NULL;
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    free(r->path);
    free(r);
    return rc;
}

/* rb_results_backend_version: see rb_results.h. */
const char *rb_results_backend_version(void)
{
    static char buf[32];
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, rel);
    return buf;
}

/* ---- objects ---------------------------------------------------------------------- */

/* 1 if every component of path exists as a link, 0 if one is missing, <0 on error. */
static int path_exists(hid_t file, const char *path)
{
    char buf[1024];
    if (!path || path[0] != '/' || strlen(path) >= sizeof buf)
        return -1;
    if (strcmp(path, "/") == 0)
        return 1;
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            htri_t e = H5Lexists(file, buf, H5P_DEFAULT);
            *p = c;
            if (e <= 0) /* e < 0: what holds this link is not a group */
                return e < 0 ? -2 : 0;
            if (c == '\0')
                return 1;
        }
    }
}

/* The error for a path_exists() result below 0. */
static int path_error(char *err, size_t errlen, const char *path, int e)
{
    return e == -2 ? rb_errf(err, errlen, RB_EFORMAT, "results: %s: a part of the path is not "
                             "a group (not written by ropebench, or damaged)", path)
                   : rb_errf(err, errlen, RB_EINVAL, "results: %s: not an absolute path",
                             path ? path : "(null)");
}

/* rb_results_exists: see rb_results.h. Returns -1 on a bad path. */
int rb_results_exists(rb_results *r, const char *path)
{
    if (!r)
        return -1;
    int e = path_exists(r->file, path);
    H5Eclear2(H5E_DEFAULT);
    return e < 0 ? -1 : e;
}

/* rb_results_dims: see rb_results.h. */
int rb_results_dims(rb_results *r, const char *path, int64_t *dims, int maxdims)
{
    int nd = -1;
    hid_t d = H5I_INVALID_HID, t = H5I_INVALID_HID, s = H5I_INVALID_HID;
    if (!r || !dims || path_exists(r->file, path) != 1)
        goto cleanup;
    H5O_info_t oi;
    if (H5Oget_info_by_name(r->file, path, &oi, H5P_DEFAULT) < 0 ||
        oi.type != H5O_TYPE_DATASET || (d = H5Dopen2(r->file, path, H5P_DEFAULT)) < 0 ||
        (t = H5Dget_type(d)) < 0 || (s = H5Dget_space(d)) < 0)
        goto cleanup;
    const H5T_class_t cl = H5Tget_class(t);
    const int n = H5Sget_simple_extent_ndims(s);
    hsize_t hd[H5S_MAX_RANK];
    if ((cl == H5T_INTEGER || cl == H5T_FLOAT) && n >= 0 && n <= maxdims &&
        H5Sget_simple_extent_dims(s, hd, NULL) == n) {
        for (int i = 0; i < n; i++)
            dims[i] = (int64_t)hd[i];
        nd = n;
    }
cleanup:
    if (s >= 0)
        H5Sclose(s);
    if (t >= 0)
        H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    return nd;
}

/* Open the object at path, creating a group (and its parents) when it is missing. */
static int open_or_make_group(rb_results *r, const char *path, hid_t *obj, char *err,
                              size_t errlen)
{
    int rc = RB_OK;
    hid_t g = H5I_INVALID_HID;
    int e = path_exists(r->file, path);
    if (e < 0)
        return path_error(err, errlen, path, e);
    if (e == 0)
        H5TRY(g = H5Gcreate2(r->file, path, r->lcpl, H5P_DEFAULT, H5P_DEFAULT),
              "H5Gcreate2");
    else
        H5TRY(g = H5Oopen(r->file, path, H5P_DEFAULT), "H5Oopen");
cleanup:
    *obj = g;
    return rc;
}

/* Write one scalar attribute of memory type mt and file type ft (replacing an
 * existing attribute of the same name). */
static int attr_write(rb_results *r, const char *obj, const char *name, hid_t ft,
                      hid_t mt, const void *value, char *err, size_t errlen)
{
    int rc = RB_OK;
    hid_t o = H5I_INVALID_HID, sp = H5I_INVALID_HID, a = H5I_INVALID_HID;
    char path[1100];
    if (!r || !obj || !name || !*name)
        return rb_errf(err, errlen, RB_EINVAL, "results: attribute without object/name");
    snprintf(path, sizeof path, "%s@%s", obj, name);
    r->dirty = 1;
    rc = open_or_make_group(r, obj, &o, err, errlen);
    if (rc != RB_OK)
        goto cleanup;
    htri_t ex;
    H5TRY(ex = H5Aexists(o, name), "H5Aexists");
    if (ex > 0)
        H5TRY(H5Adelete(o, name), "H5Adelete");
    H5TRY(sp = H5Screate(H5S_SCALAR), "H5Screate");
    H5TRY(a = H5Acreate2(o, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2");
    H5TRY(H5Awrite(a, mt, value), "H5Awrite");
cleanup:
    if (a >= 0)
        H5Aclose(a);
    if (sp >= 0)
        H5Sclose(sp);
    if (o >= 0)
        H5Oclose(o);
    /* (as a dataset write: a rank that failed alone must not leave the others to wait
     * in the next collective) */
    return agree(r, rc, err, errlen, path);
}

/* Fixed-length, null-terminated UTF-8 string type of size n (>= 1). */
static hid_t str_type(size_t n)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return t;
    if (H5Tset_size(t, n < 1 ? 1 : n) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
        H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* rb_results_attr_str: see rb_results.h. */
int rb_results_attr_str(rb_results *r, const char *obj, const char *name,
                        const char *value, char *err, size_t errlen)
{
    int rc = RB_OK;
    const char *path = obj ? obj : "(null)";
    hid_t t = H5I_INVALID_HID;
    if (!value)
        value = "";
    /* (a type that could not be made on one rank: agreed before attr_write's
     * collective metadata calls, which that rank would not make) */
    if ((t = str_type(strlen(value) + 1)) < 0)
        rc = h5_fail(err, errlen, RB_EIO, __FILE__, __LINE__, path, "H5Tset_size");
    if ((rc = agree(r, rc, err, errlen, path)) != RB_OK)
        goto cleanup;
    rc = attr_write(r, obj, name, t, t, value, err, errlen);
cleanup:
    if (t >= 0)
        H5Tclose(t);
    return rc;
}

/* rb_results_attr_f64: see rb_results.h. */
int rb_results_attr_f64(rb_results *r, const char *obj, const char *name, double v,
                        char *err, size_t errlen)
{
    return attr_write(r, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v, err, errlen);
}

/* rb_results_attr_i64: see rb_results.h. */
int rb_results_attr_i64(rb_results *r, const char *obj, const char *name, int64_t v,
                        char *err, size_t errlen)
{
    return attr_write(r, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, err, errlen);
}

/* Open attribute obj@name for reading: 1 and *a set if it exists (and holds one value,
 * as every attribute read back does), 0 if the object or the attribute is missing,
 * negative RB_E code on an error or an attribute of another shape. */
static int attr_open_existing(rb_results *r, const char *obj, const char *name, hid_t *a,
                              char *err, size_t errlen)
{
    int rc = RB_OK;
    const char *path = obj;
    hid_t sp = H5I_INVALID_HID;
    *a = H5I_INVALID_HID;
    int e = path_exists(r->file, obj);
    H5Eclear2(H5E_DEFAULT);
    htri_t ae = 0;
    if (e > 0)
        H5TRY(ae = H5Aexists_by_name(r->file, obj, name, H5P_DEFAULT), "H5Aexists_by_name");
    if (e <= 0 || ae == 0)
        return 0;
    H5TRY(*a = H5Aopen_by_name(r->file, obj, name, H5P_DEFAULT, H5P_DEFAULT),
          "H5Aopen_by_name");
    H5TRY(sp = H5Aget_space(*a), "H5Aget_space");
    const hssize_t np = H5Sget_simple_extent_npoints(sp);
    if (np != 1) {
        rc = rb_errf(err, errlen, RB_EFORMAT, "results: %s@%s holds %lld values, expected "
                     "one (not written by ropebench?)", path, name, (long long)np);
        goto cleanup;
    }
    rc = 1;
cleanup:
    if (sp >= 0)
        H5Sclose(sp);
    if (rc != 1 && *a >= 0) {
        H5Aclose(*a);
        *a = H5I_INVALID_HID;
    }
    return rc;
}

/* peek_open: the file at path opened read-only (not collective) into tmp->file, for
 * the peek functions; the caller closes it. */
static int peek_open(const char *path, rb_results *tmp, char *err, size_t errlen)
{
    memset(tmp, 0, sizeof *tmp);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    tmp->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    return tmp->file < 0 ? h5_fail(err, errlen, RB_EIO, __FILE__, __LINE__, path, "H5Fopen")
                         : RB_OK;
}

/* rb_results_peek_str: see rb_results.h. A read-only open through the default (serial)
 * driver: a read-write open and close would trim whatever the file holds past HDF5's
 * end of allocation. */
int rb_results_peek_str(const char *path, const char *name, char **v, char *err,
                        size_t errlen)
{
    rb_results tmp;
    *v = NULL;
    int rc = peek_open(path, &tmp, err, errlen);
    if (rc == RB_OK) {
        rc = rb_results_attr_get_str(&tmp, "/", name, v, err, errlen);
        H5Fclose(tmp.file);
    }
    return rc;
}

/* peek_attr_cb: an attribute of an object being walked, read whole (its value, as its
 * own type, into a buffer of its points times the type's size; variable-length data
 * reclaimed), so that a damaged one is found. */
static herr_t peek_attr_cb(hid_t obj, const char *name, const H5A_info_t *ainfo, void *data)
{
    (void)ainfo;
    int *oom = data;
    herr_t ok = -1;
    const hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    const hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    const hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
    const hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    const size_t ts = t >= 0 ? H5Tget_size(t) : 0;
    char *buf = np >= 0 && ts > 0 ? calloc((size_t)np + 1, ts) : NULL;
    if (np >= 0 && ts > 0 && !buf)
        *oom = 1;
    else if (buf && H5Aread(a, t, buf) >= 0) {
        ok = 0;
        if (H5Tdetect_class(t, H5T_VLEN) > 0 || H5Tis_variable_str(t) > 0)
            H5Dvlen_reclaim(t, sp, H5P_DEFAULT, buf);
    }
    free(buf);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return ok;
}

typedef struct {
    char at[256]; /* the object being read */
    int bad_name, oom;
} peek_walk;

/* peek_obj: the object at name (relative to loc) opened (its header read) and every
 * attribute of it read; -1 if any of that fails. */
static herr_t peek_obj(hid_t loc, const char *name, peek_walk *w)
{
    const hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
    if (o < 0)
        return -1;
    hsize_t idx = 0;
    const herr_t r = H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, peek_attr_cb,
                                 &w->oom);
    H5Oclose(o);
    return r < 0 ? -1 : 0;
}

/* peek_link_cb: one link of the walk (H5Lvisit, so that the object named is the one
 * read next and a failure is reported at it): a name with an empty component is damage
 * (a link half written); links to other files are not followed; else the object and
 * its attributes are read. */
static herr_t peek_link_cb(hid_t root, const char *name, const H5L_info_t *info, void *data)
{
    peek_walk *w = data;
    snprintf(w->at, sizeof w->at, "/%s", name);
    const size_t n = strlen(name);
    if (n == 0 || name[n - 1] == '/' || strstr(name, "//") || name[0] == '/') {
        w->bad_name = 1;
        return -1;
    }
    if (info->type != H5L_TYPE_HARD)
        return 0;
    return peek_obj(root, name, w);
}

/* rb_results_peek_whole: see rb_results.h. */
int rb_results_peek_whole(const char *path, char *err, size_t errlen)
{
    rb_results tmp;
    int rc = peek_open(path, &tmp, err, errlen);
    if (rc != RB_OK)
        return rc;
    peek_walk w = {"/", 0, 0};
    if (peek_obj(tmp.file, ".", &w) < 0 ||
        H5Lvisit(tmp.file, H5_INDEX_NAME, H5_ITER_NATIVE, peek_link_cb, &w) < 0) {
        if (w.oom)
            rc = rb_errf(err, errlen, RB_ENOMEM, "%s: out of memory reading %s", path, w.at);
        else if (w.bad_name)
            rc = rb_errf(err, errlen, RB_EFORMAT, "%s: damaged: a link under %s has an empty "
                         "name", path, w.at);
        else {
            char m[512];
            h5_fail(m, sizeof m, RB_EFORMAT, __FILE__, __LINE__, path, "reading every object");
            rc = rb_errf(err, errlen, RB_EFORMAT, "%s (at %s)", m, w.at);
        }
    }
    H5Eclear2(H5E_DEFAULT);
    H5Fclose(tmp.file);
    return rc;
}

/* rb_results_peek_i64: see rb_results.h. */
int rb_results_peek_i64(const char *path, const char *name, int64_t *v, char *err,
                        size_t errlen)
{
    rb_results tmp;
    int rc = peek_open(path, &tmp, err, errlen);
    if (rc == RB_OK) {
        rc = rb_results_attr_get_i64(&tmp, "/", name, v, err, errlen);
        H5Fclose(tmp.file);
    }
    return rc;
}

/* rb_results_attr_get_i64: see rb_results.h. */
int rb_results_attr_get_i64(rb_results *r, const char *obj, const char *name,
                            int64_t *v, char *err, size_t errlen)
{
    const char *path = obj;
    hid_t a = H5I_INVALID_HID;
    if (!r || !obj || !name || !v)
        return rb_errf(err, errlen, RB_EINVAL, "results: attribute without object/name");
    int rc = attr_open_existing(r, obj, name, &a, err, errlen);
    if (rc <= 0)
        return rc;
    H5TRY(H5Aread(a, H5T_NATIVE_INT64, v), "H5Aread");
cleanup:
    H5Aclose(a);
    return rc;
}

/* rb_results_attr_get_str: see rb_results.h. */
int rb_results_attr_get_str(rb_results *r, const char *obj, const char *name, char **v,
                            char *err, size_t errlen)
{
    const char *path = obj;
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, mt = H5I_INVALID_HID;
    char *buf = NULL;
    if (!r || !obj || !name || !v)
        return rb_errf(err, errlen, RB_EINVAL, "results: attribute without object/name");
    *v = NULL;
    int rc = attr_open_existing(r, obj, name, &a, err, errlen);
    if (rc <= 0)
        return rc;
    H5TRY(t = H5Aget_type(a), "H5Aget_type");
    if (H5Tget_class(t) != H5T_STRING) {
        rc = rb_errf(err, errlen, RB_EFORMAT, "results: %s@%s: not a string", path, name);
        goto cleanup;
    }
    if (H5Tis_variable_str(t) > 0) { /* as h5py writes them: read, copied, freed */
        char *vs = NULL;
        H5TRY(mt = H5Tcopy(H5T_C_S1), "H5Tcopy");
        H5TRY(H5Tset_size(mt, H5T_VARIABLE), "H5Tset_size");
        H5TRY(H5Tset_cset(mt, H5Tget_cset(t)), "H5Tset_cset");
        H5TRY(H5Aread(a, mt, &vs), "H5Aread");
        *v = strdup(vs ? vs : "");
        H5free_memory(vs);
        rc = *v ? 1 : rb_errf(err, errlen, RB_ENOMEM, "results: out of memory reading %s@%s",
                              path, name);
        goto cleanup;
    }
    size_t n = H5Tget_size(t);
    buf = calloc(n + 1, 1);
    if (!buf) {
        rc = rb_errf(err, errlen, RB_ENOMEM, "results: out of memory reading %s@%s", path,
                     name);
        goto cleanup;
    }
    H5TRY(mt = H5Tcopy(H5T_C_S1), "H5Tcopy");
    H5TRY(H5Tset_size(mt, n), "H5Tset_size");
    H5TRY(H5Tset_cset(mt, H5Tget_cset(t)), "H5Tset_cset");
    H5TRY(H5Tset_strpad(mt, H5Tget_strpad(t)), "H5Tset_strpad");
    H5TRY(H5Aread(a, mt, buf), "H5Aread");
    *v = buf;
    buf = NULL;
    rc = 1;
cleanup:
    free(buf);
    if (mt >= 0)
        H5Tclose(mt);
    if (t >= 0)
        H5Tclose(t);
    if (a >= 0)
        H5Aclose(a);
    return rc;
}

/* rb_results_remove: see rb_results.h. */
int rb_results_remove(rb_results *r, const char *path, char *err, size_t errlen)
{
    int rc = RB_OK;
    if (!r || !path)
        return rb_errf(err, errlen, RB_EINVAL, "results: remove without a path");
    int e = path_exists(r->file, path);
    H5Eclear2(H5E_DEFAULT);
    if (e < 0) {
        rc = path_error(err, errlen, path, e);
        goto cleanup;
    }
    r->dirty = 1;
    if (e > 0)
        H5TRY(H5Ldelete(r->file, path, H5P_DEFAULT), "H5Ldelete");
cleanup:
    /* every rank the same verdict (the header's promise): a rank failing alone would
     * otherwise leave the others in the next collective call */
    return agree(r, rc, err, errlen, path);
}

/* rb_results_move: see rb_results.h. */
int rb_results_move(rb_results *r, const char *from, const char *to, char *err,
                    size_t errlen)
{
    int rc = RB_OK;
    const char *path = from ? from : "(null)";
    if (!r || !from || !to)
        return rb_errf(err, errlen, RB_EINVAL, "results: move without a path");
    r->dirty = 1;
    H5TRY(H5Lmove(r->file, from, r->file, to, r->lcpl, H5P_DEFAULT), "H5Lmove");
cleanup:
    return agree(r, rc, err, errlen, path);
}

/* ---- datasets --------------------------------------------------------------------- */

/* Create dataset path (replacing an existing one) with file type ft and dims. */
static int dset_create(rb_results *r, const char *path, hid_t ft, int rank,
                       const hsize_t *dims, hid_t *dset, hid_t *fspace, char *err,
                       size_t errlen)
{
    int rc = RB_OK;
    hid_t dcpl = H5I_INVALID_HID;
    *dset = *fspace = H5I_INVALID_HID;
    int e = path_exists(r->file, path);
    H5Eclear2(H5E_DEFAULT);
    if (e < 0)
        return path_error(err, errlen, path, e);
    r->dirty = 1;
    if (e > 0)
        H5TRY(H5Ldelete(r->file, path, H5P_DEFAULT), "H5Ldelete");
    H5TRY(*fspace = H5Screate_simple(rank, dims, NULL), "H5Screate_simple");
    H5TRY(dcpl = H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate");
    /* Every element is written below: no fill pass over the file. */
    H5TRY(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
    H5TRY(*dset = H5Dcreate2(r->file, path, ft, *fspace, r->lcpl, dcpl, H5P_DEFAULT),
          "H5Dcreate2");
cleanup:
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return rc;
}

/* Root-held dataset: root selects everything, the others nothing; collective write. */
static int write_root(rb_results *r, const char *path, hid_t ft, hid_t mt, int rank,
                      const int64_t *dims64, const void *data, int root, char *err,
                      size_t errlen)
{
    int rc = RB_OK;
    hid_t d = H5I_INVALID_HID, fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    hsize_t dims[2] = {0, 0};
    hsize_t total = 1;
    static const char dummy[16];
    if (!r || !path)
        return rb_errf(err, errlen, RB_EINVAL, "results: dataset without a path");
    if (rank < 1 || rank > 2 || !dims64)
        rc = rb_errf(err, errlen, RB_EINVAL, "results: %s: rank %d (1 or 2 supported)",
                     path, rank);
    for (int i = 0; rc == RB_OK && i < rank; i++) {
        if (dims64[i] < 0)
            rc = rb_errf(err, errlen, RB_EINVAL, "results: %s: negative dimension %lld",
                         path, (long long)dims64[i]);
        else {
            dims[i] = (hsize_t)dims64[i];
            total *= dims[i];
        }
    }
    if (rc == RB_OK && r->rank == root && total > 0 && !data)
        rc = rb_errf(err, errlen, RB_EINVAL, "results: %s: no data on root", path);
    if (root < 0 || root >= r->nranks)
        rc = rb_errf(err, errlen, RB_EINVAL, "results: %s: root %d out of range", path,
                     root);
    rc = agree(r, rc, err, errlen, path);
    if (rc != RB_OK)
        return rc;
    rc = dset_create(r, path, ft, rank, dims, &d, &fs, err, errlen);
    if (rc != RB_OK)
        goto ready;
    if (total > 0) {
        H5PRE(ms = H5Screate_simple(rank, dims, NULL), "H5Screate_simple");
        if (r->rank != root) {
            H5PRE(H5Sselect_none(fs), "H5Sselect_none");
            H5PRE(H5Sselect_none(ms), "H5Sselect_none");
            data = dummy;
        }
    }
ready:
    if ((rc = agree(r, rc, err, errlen, path)) == RB_OK && total > 0)
        H5TRY(H5Dwrite(d, mt, ms, fs, r->dxpl, data), "H5Dwrite");
cleanup:
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    /* a write can fail on one rank only (its own file-size limit, an I/O error on its
     * node): the others must not go on to the next collective without it */
    return agree(r, rc, err, errlen, path);
}

/* rb_results_write_f64: see rb_results.h. */
int rb_results_write_f64(rb_results *r, const char *path, int rank, const int64_t *dims,
                         const double *data, int root, char *err, size_t errlen)
{
    return write_root(r, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rank, dims, data, root,
                      err, errlen);
}

/* rb_results_write_i64: see rb_results.h. */
int rb_results_write_i64(rb_results *r, const char *path, int rank, const int64_t *dims,
                         const int64_t *data, int root, char *err, size_t errlen)
{
    return write_root(r, path, H5T_STD_I64LE, H5T_NATIVE_INT64, rank, dims, data, root,
                      err, errlen);
}

/* rb_results_write_strings: see rb_results.h. The fixed length (longest + 1) is
 * broadcast from root, so only root needs the strings. */
int rb_results_write_strings(rb_results *r, const char *path, int n,
                             const char *const *strings, int root, char *err,
                             size_t errlen)
{
    int rc = RB_OK;
    hid_t t = H5I_INVALID_HID;
    char *buf = NULL;
    unsigned long long width = 1;
    int64_t dims[1] = {n};
    if (!r || !path)
        return rb_errf(err, errlen, RB_EINVAL, "results: dataset without a path");
    if (n < 0 || root < 0 || root >= r->nranks)
        rc = rb_errf(err, errlen, RB_EINVAL, "results: %s: bad count %d or root %d", path,
                     n, root);
    if (rc == RB_OK && r->rank == root) {
        for (int i = 0; i < n; i++) {
            size_t len = strings && strings[i] ? strlen(strings[i]) + 1 : 1;
            if (len > width)
                width = len;
        }
        buf = calloc(n > 0 ? (size_t)n : 1, width);
        if (!buf)
            rc = rb_errf(err, errlen, RB_ENOMEM, "results: %s: out of memory", path);
        for (int i = 0; buf && i < n; i++)
            if (strings && strings[i])
                memcpy(buf + (size_t)i * width, strings[i], strlen(strings[i]));
    }
    rc = agree(r, rc, err, errlen, path);
    if (rc != RB_OK)
        goto cleanup;
    if (MPI_Bcast(&width, 1, MPI_UNSIGNED_LONG_LONG, root, r->comm) != MPI_SUCCESS) {
        rc = rb_errf(err, errlen, RB_EMPI, "results: %s: MPI_Bcast failed", path);
        goto cleanup;
    }
    if ((t = str_type((size_t)width)) < 0) /* (agreed before write_root's collectives) */
        rc = h5_fail(err, errlen, RB_EIO, __FILE__, __LINE__, path, "H5Tset_size");
    if ((rc = agree(r, rc, err, errlen, path)) != RB_OK)
        goto cleanup;
    rc = write_root(r, path, t, t, 1, dims, buf, root, err, errlen);
cleanup:
    if (t >= 0)
        H5Tclose(t);
    free(buf);
    return rc;
}

/* Distributed rows: the file selection is the union over runs of hyperslabs covering
 * every head (and every element of a row when row_len > 0). HDF5 walks a selection in
 * file (row-major) order, which is the memory order [heads][n_local][row_len] since
 * runs are disjoint and in increasing global position. */
static int write_rows(rb_results *r, const char *path, hid_t ft, hid_t mt, int heads,
                      int64_t n_total, int row_len, const rb_shard_run *runs, int nruns,
                      const void *local, int has_heads, char *err, size_t errlen)
{
    int rc = RB_OK;
    hid_t d = H5I_INVALID_HID, fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    hsize_t dims[3];
    int nd = 0;
    int64_t n_local = 0, last = -1;
    static const char dummy[16];
    if (!r || !path)
        return rb_errf(err, errlen, RB_EINVAL, "results: dataset without a path");
    if (heads < 1 || n_total < 0 || row_len < 0 || nruns < 0 || (nruns > 0 && !runs))
        rc = rb_errf(err, errlen, RB_EINVAL,
                     "results: %s: bad shape (heads %d, rows %lld, row_len %d, runs %d)",
                     path, heads, (long long)n_total, row_len, nruns);
    for (int i = 0; rc == RB_OK && i < nruns; i++) {
        const rb_shard_run *u = &runs[i];
        if (u->count == 0)
            continue;
        int64_t stride = u->count == 1 ? 1 : u->stride;
        if (u->count < 0 || stride < 1 || u->start <= last ||
            u->start + (u->count - 1) * stride >= n_total)
            rc = rb_errf(err, errlen, RB_EINVAL,
                         "results: %s: run %d (start %lld, stride %lld, count %lld) is "
                         "not increasing within [0, %lld)",
                         path, i, (long long)u->start, (long long)u->stride,
                         (long long)u->count, (long long)n_total);
        else {
            last = u->start + (u->count - 1) * stride;
            n_local += u->count;
        }
    }
    if (rc == RB_OK && n_local > 0 && !local)
        rc = rb_errf(err, errlen, RB_EINVAL, "results: %s: no local data", path);
    rc = agree(r, rc, err, errlen, path);
    if (rc != RB_OK)
        return rc;

    if (has_heads)
        dims[nd++] = (hsize_t)heads;
    dims[nd++] = (hsize_t)n_total;
    if (row_len > 0)
        dims[nd++] = (hsize_t)row_len;
    rc = dset_create(r, path, ft, nd, dims, &d, &fs, err, errlen);
    if (rc != RB_OK)
        goto ready;

    hsize_t nmem = (hsize_t)n_local * (has_heads ? (hsize_t)heads : 1) *
                   (row_len > 0 ? (hsize_t)row_len : 1);
    H5PRE(ms = H5Screate_simple(1, nmem > 0 ? &nmem : (hsize_t[]){1}, NULL),
          "H5Screate_simple");
    H5PRE(H5Sselect_none(fs), "H5Sselect_none");
    if (nmem == 0) {
        H5PRE(H5Sselect_none(ms), "H5Sselect_none");
        local = dummy;
    }
    for (int i = 0; i < nruns; i++) {
        const rb_shard_run *u = &runs[i];
        if (u->count == 0)
            continue;
        hsize_t start[3], stride[3], count[3], block[3];
        int k = 0;
        if (has_heads) {
            start[k] = 0, stride[k] = 1, count[k] = (hsize_t)heads, block[k] = 1;
            k++;
        }
        start[k] = (hsize_t)u->start;
        stride[k] = (hsize_t)(u->count == 1 ? 1 : u->stride);
        count[k] = (hsize_t)u->count, block[k] = 1;
        k++;
        if (row_len > 0) {
            start[k] = 0, stride[k] = 1, count[k] = 1, block[k] = (hsize_t)row_len;
            k++;
        }
        H5PRE(H5Sselect_hyperslab(fs, H5S_SELECT_OR, start, stride, count, block),
              "H5Sselect_hyperslab");
    }
ready:
    if ((rc = agree(r, rc, err, errlen, path)) == RB_OK && n_total > 0)
        H5TRY(H5Dwrite(d, mt, ms, fs, r->dxpl, local), "H5Dwrite");
cleanup:
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    if (d >= 0)
        H5Dclose(d);
    return agree(r, rc, err, errlen, path); /* as in write_root */
}

/* rb_results_write_rows_f64: see rb_results.h. */
int rb_results_write_rows_f64(rb_results *r, const char *path, int heads,
                              int64_t n_total, const rb_shard_run *runs, int nruns,
                              const double *local, char *err, size_t errlen)
{
    return write_rows(r, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, heads, n_total, 0, runs,
                      nruns, local, 1, err, errlen);
}

/* rb_results_write_rows_i64: see rb_results.h. */
int rb_results_write_rows_i64(rb_results *r, const char *path, int64_t n_total,
                              const rb_shard_run *runs, int nruns,
                              const int64_t *local, char *err, size_t errlen)
{
    return write_rows(r, path, H5T_STD_I64LE, H5T_NATIVE_INT64, 1, n_total, 0, runs, nruns,
                      local, 0, err, errlen);
}

/* rb_results_write_rows_f32: see rb_results.h. */
int rb_results_write_rows_f32(rb_results *r, const char *path, int heads,
                              int64_t n_total, int row_len, const rb_shard_run *runs,
                              int nruns, const float *local, char *err, size_t errlen)
{
    return write_rows(r, path, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, heads, n_total, row_len,
                      runs, nruns, local, 1, err, errlen);
}
