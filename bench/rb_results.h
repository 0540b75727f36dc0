/* rb_results.h — the results-storage interface of bench/: the study driver writes
 * through these calls and never sees HDF5 (the one backend is results_hdf5.c). */
#ifndef RB_RESULTS_H
#define RB_RESULTS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "rb_mpi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rb_results rb_results; /* opaque */

/* Every function below is COLLECTIVE over the communicator given at create: all ranks
 * call it in the same order with the same object paths, names and attribute values
 * (broadcast strings first). Paths are absolute ("/cases/x/rows/lse"); parent groups
 * are created as needed. Each returns RB_OK or a negative RB_E code with one line in
 * err naming the path and the backend's own message. */

/* Create (truncate) the file with the mpio driver. */
int rb_results_create(rb_results **out, const char *path, MPI_Comm comm, char *err,
                      size_t errlen);

/* Open an existing results file read-write (for --resume): RB_EIO if it is missing
 * or not HDF5. */
int rb_results_open(rb_results **out, const char *path, MPI_Comm comm, char *err,
                    size_t errlen);

/* Attributes on an object (group created if missing). Strings are fixed-length,
 * null-terminated ASCII/UTF-8. */
int rb_results_attr_str(rb_results *r, const char *obj, const char *name,
                        const char *value, char *err, size_t errlen);
int rb_results_attr_f64(rb_results *r, const char *obj, const char *name, double v,
                        char *err, size_t errlen);
int rb_results_attr_i64(rb_results *r, const char *obj, const char *name, int64_t v,
                        char *err, size_t errlen);

/* Read an integer attribute (e.g. "complete"): 1 and *v set if it exists, 0 if the
 * object or the attribute is missing, negative RB_E code on a read error. */
int rb_results_attr_get_i64(rb_results *r, const char *obj, const char *name,
                            int64_t *v, char *err, size_t errlen);

/* Read a string attribute (fixed-length, or variable-length as h5py writes it): 1 and
 * *v = malloc'd copy (caller frees) if it exists, 0 (*v = NULL) if the object or
 * attribute is missing, negative RB_E code on a read error or a non-string attribute. */
int rb_results_attr_get_str(rb_results *r, const char *obj, const char *name, char **v,
                            char *err, size_t errlen);

/* rb_results_peek_whole: whether every object of the file at path and every
 * attribute of each can be read (read-only, not collective, as rb_results_peek_str):
 * RB_OK, or RB_EFORMAT with err naming the first object that cannot, and the library's
 * message (a file whose writer died inside a metadata write: a damaged object header,
 * a link with an empty name). For checks before a file is resumed: HDF5 would fail on
 * such an object only when it reaches it, after the run began. */
int rb_results_peek_whole(const char *path, char *err, size_t errlen);

/* rb_results_peek_i64: an integer attribute of the root group of the file at path, as
 * rb_results_attr_get_i64 returns it, read-only and not collective (as
 * rb_results_peek_str). */
int rb_results_peek_i64(const char *path, const char *name, int64_t *v, char *err,
                        size_t errlen);

/* rb_results_peek_str: a string attribute of the root group of the file at path, as
 * rb_results_attr_get_str returns it, read without opening the file for writing (not
 * collective; any rank may call it): for checks before a file is accepted, which must
 * leave a refused file exactly as it was. */
int rb_results_peek_str(const char *path, const char *name, char **v, char *err,
                        size_t errlen);

/* Unlink an object (e.g. an incomplete case group before it is redone); a missing
 * object is not an error. The space is not reclaimed (HDF5 has no free-space reuse
 * across sessions by default). */
int rb_results_remove(rb_results *r, const char *path, char *err, size_t errlen);

/* rb_results_check_free: RB_OK unless another process writes the file at path (holds
 * the writer lock that create and open take on the file itself, so under any name:
 * symbolic and hard links included); then RB_EINVAL "results: PATH: another ropebench
 * run is writing this file ...". An absent or unreadable file is RB_OK. Not collective;
 * create and open call it on rank 0 before touching the file, rename before replacing,
 * and a command may call it before long work. */
int rb_results_check_free(const char *path, char *err, size_t errlen);

/* rb_results_hold: take the writer lock (as create and open take it) on the existing
 * file at path without opening it for HDF5, into *fd (-1 when the file cannot be
 * opened read-write, or the file system has no such locks); the caller closes *fd to
 * release it. RB_EINVAL "another ropebench run ..." when another process holds it.
 * Not collective: run holds the file it is about to replace while it writes the
 * replacement under another name. */
int rb_results_hold(const char *path, int *fd, char *err, size_t errlen);

/* rb_results_rename: give the open file the name `to` (a file system path): rank 0
 * renames it (rename(2): `to` is replaced in one step, and the open file, its inode,
 * is not touched), and every rank takes the new name for its later messages and
 * checks. Collective. held (rank 0's): the caller holds `to`'s writer lock
 * (rb_results_hold) and keeps it across the rename, so no other writer can have taken
 * `to` in between; otherwise `to` is checked free first. RB_EIO with the reason when
 * the rename fails (every rank then keeps the old name); RB_EINVAL for an empty name. */
int rb_results_rename(rb_results *r, const char *to, int held, char *err, size_t errlen);

/* rb_results_open_stranded: 1 when the last create or open failed because the file
 * opened on some ranks but not on others (the same answer on every rank). The ranks
 * where it opened keep it open (its close is collective, and the others would never
 * join it), so the caller must not call MPI_Finalize, which closes open HDF5 files:
 * it leaves without (as after a failed write). */
int rb_results_open_stranded(void);

/* Rename the object at path `from` to `to` (collective; `to` must not exist, its parent
 * groups are made). */
int rb_results_move(rb_results *r, const char *from, const char *to, char *err,
                    size_t errlen);

/* Dataset whose whole content is held by `root` (others' data pointers ignored):
 * rank-many dims (1 or 2), float64 or int64. Written collectively (root selects all,
 * others select none). Any existing object at path is replaced. */
int rb_results_write_f64(rb_results *r, const char *path, int rank, const int64_t *dims,
                         const double *data, int root, char *err, size_t errlen);
int rb_results_write_i64(rb_results *r, const char *path, int rank, const int64_t *dims,
                         const int64_t *data, int root, char *err, size_t errlen);

/* 1-D dataset of n fixed-length strings held by root. */
int rb_results_write_strings(rb_results *r, const char *path, int n,
                             const char *const *strings, int root, char *err,
                             size_t errlen);

/* Distributed rows: dataset [heads][n_total] (row_len == 0) or
 * [heads][n_total][row_len] (row_len > 0), where this rank holds the positions given
 * by runs (local order = increasing global index) for every head; local data is
 * [heads][n_local] or [heads][n_local][row_len]. Collective write. */
int rb_results_write_rows_f64(rb_results *r, const char *path, int heads,
                              int64_t n_total, const rb_shard_run *runs, int nruns,
                              const double *local, char *err, size_t errlen);
int rb_results_write_rows_i64(rb_results *r, const char *path, int64_t n_total,
                              const rb_shard_run *runs, int nruns,
                              const int64_t *local, char *err, size_t errlen);
int rb_results_write_rows_f32(rb_results *r, const char *path, int heads,
                              int64_t n_total, int row_len, const rb_shard_run *runs,
                              int nruns, const float *local, char *err, size_t errlen);

/* rb_results_names_it (rank 0, not collective): 1 if the file system path `path` names
 * the file r has open (the same device and inode), 0 if it names another file or none
 * (the open file was deleted, renamed or replaced), -1 where the handle keeps no
 * identity (ranks other than 0). */
int rb_results_names_it(rb_results *r, const char *path);

/* Does the object exist? (collective metadata read; 1 yes, 0 no, -1 not an absolute
 * path) */
int rb_results_exists(rb_results *r, const char *path);

/* rb_results_dims: the rank of the integer or floating-point dataset at path (absolute),
 * its dimensions in dims[0 .. rank) (rank <= maxdims); -1 where path is missing, not a
 * dataset, of another type class (a string, a compound) or of a rank above maxdims.
 * Every rank calls it (collective metadata read), and nothing is reported: a caller
 * checking what a file holds decides what a -1 means. */
int rb_results_dims(rb_results *r, const char *path, int64_t *dims, int maxdims);

/* Push everything written so far to disk (H5Fflush), so that an interruption later
 * leaves it readable. First rank 0 makes sure the file system will take the whole flush
 * (fallocate: blocks for the file's holes, and past its end room for all the metadata
 * the cache holds + 64 KiB, also checked against the file-size limit): a flush writes
 * the superblock at offset 0 first, so if the rest were refused the file would point at
 * what was never written. Where the room is not there (ENOSPC, EFBIG, EDQUOT) nothing
 * is flushed and RB_EIO says "no room ..."; the file is then as its previous flush left
 * it, and should be left unclosed (see rb_results_close). */
int rb_results_flush(rb_results *r, char *err, size_t errlen);

/* Close and free (NULL ok). Returns the first error met while closing. The close takes
 * the same disk blocks first as rb_results_flush; where it cannot, the HDF5 file is
 * not closed but left as its last flush left it (r is freed all the same), and the
 * caller must then exit without MPI_Finalize, where HDF5 would close it. After any
 * failed write the caller should not close at all, for the same reason. */
int rb_results_close(rb_results *r, char *err, size_t errlen);

/* Bytes free (to this user) on the file system that holds `path`'s directory, or -1
 * where that cannot be told. */
double rb_results_free_bytes(const char *path);

/* rb_results_room: RB_OK if the file at path (or a new one there) can grow by the
 * 1 MiB its first writes take: under this process's file-size limit (ulimit -f) and
 * that much free on the file system of its directory; else RB_EIO with "results: PATH:
 * no room to write it: why" in err. Not collective (create and open call it on rank 0
 * and agree); a command that writes its file only at the end (bench -o) calls it
 * before any work, so that it does not measure for minutes and then fail. */
int rb_results_room(const char *path, char *err, size_t errlen);

/* "1.10.8" etc. of the backend library, for provenance. */
const char *rb_results_backend_version(void);

#ifdef __cplusplus
}
#endif
#endif
