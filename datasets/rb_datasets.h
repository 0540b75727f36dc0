/* rb_datasets.h — public interface of datasets/: counter-based (Philox) generation of
 * pre-RoPE Q/K/V rows, so that any rank can produce any global position, and the
 * parallel reader of Q/K/V from an HDF5 file (the only MPI/HDF5 user in datasets/). */
#ifndef RB_DATASETS_H
#define RB_DATASETS_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "rb_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    RB_DATA_GAUSSIAN = 0,
    RB_DATA_NEEDLE = 1,
    RB_DATA_SPECTRAL = 2,
    RB_DATA_FILE = 3
} rb_dataset_kind;
#define RB_DATA_COUNT 4

/* Amplitude profiles of the spectral dataset (names "flat", "low", "high", "list"). */
typedef enum {
    RB_SPECTRAL_FLAT = 0,
    RB_SPECTRAL_LOW = 1,
    RB_SPECTRAL_HIGH = 2,
    RB_SPECTRAL_LIST = 3
} rb_spectral_profile;
typedef enum { RB_TENSOR_Q = 0, RB_TENSOR_K = 1, RB_TENSOR_V = 2 } rb_tensor;

#define RB_NEEDLE_MAX 64
#define RB_SPECTRAL_MAX_PAIRS 256   /* rotary_dim/2 for head_dim <= 512 */
#define RB_SPECTRAL_GAMMA 2.0       /* low/high: a_j proportional to exp(+-gamma j/np) */
#define RB_SPECTRAL_MAG_NOISE 0.05  /* spectral: pair magnitudes a_j (1 + eta (2u - 1)) */

/* A dataset description. Needle positions are absolute (already resolved against the
 * sequence length by the caller); needle i plants key needle_pos[i] aligned with the
 * query at query_pos[i]. Zero-initialise, then set what the kind uses. */
typedef struct {
    rb_dataset_kind kind;
    uint64_t seed;
    int head_dim;
    /* needle */
    int n_needles;
    int64_t needle_pos[RB_NEEDLE_MAX];
    int64_t query_pos[RB_NEEDLE_MAX];
    double strength;
    /* spectral: the pairs are those RoPE rotates (rotary_dim 0 means head_dim) */
    int rotary_dim;
    rb_rope_layout layout;
    rb_spectral_profile profile;
    int n_amplitudes;                          /* profile list: rotary_dim/2 values */
    double amplitudes[RB_SPECTRAL_MAX_PAIRS];
    double coherence;                          /* kappa in [0, 1] */
    /* file: HDF5 file with datasets q, k, v (borrowed, not owned) */
    const char *path;
} rb_dataset;

/* Canonical name ("gaussian", "needle", "spectral", "file") and parse (-1 if unknown). */
const char *rb_dataset_kind_name(rb_dataset_kind k);
int rb_dataset_kind_parse(const char *name);

/* Canonical name ("flat", "low", "high", "list") and parse (-1 if unknown). */
const char *rb_spectral_profile_name(rb_spectral_profile p);
int rb_spectral_profile_parse(const char *name);

/* rb_spectral_amplitudes: the pair amplitudes a_j, j < np = rotary_dim/2, of a spectral
 * description (j = 0 is the highest-frequency pair). flat: a_j = 1. low: a_j = c
 * exp(gamma j/np), high: a_j = c exp(-gamma j/np), gamma = RB_SPECTRAL_GAMMA, c such
 * that sum_j a_j^2 = np. list: amplitudes[] as given (n_amplitudes must equal np,
 * every value finite and >= 0, not all 0). Writes np values to a; RB_EINVAL with a
 * message for a bad profile, rotary_dim or list. */
int rb_spectral_amplitudes(const rb_dataset *ds, double *a, char *err, size_t errlen);

/* rb_dataset_fill: write n rows of head_dim floats to out (row r at out + r*head_dim)
 * for tensor t of head `head` at global positions pos[0..n).
 * Every value is a pure function of (seed, tensor, head, global position, dim):
 * element (t, h, p, i) is a standard normal drawn by Box-Muller from the Philox4x32-10
 * block with key (seed lo, seed hi) and counter (p lo, p hi, (t << 16) | h, i / 4)
 * (the pairing of words and dims in datasets/rb_gauss.h). The log and cos/sin are
 * ropebench's own polynomials (datasets/gauss.c), not libm's, so the values are the
 * same on every machine and build; they match the libm formula to the bit on the
 * grid of tests/test_dataset.c and within one float ulp everywhere it checks.
 * needle: as gaussian, except that the K row at needle_pos[i] equals
 * strength * (Q row at query_pos[i]) — pre-RoPE alignment, so its score against that
 * query decays only by the rotary phases. If two needles share a key position the
 * later one wins.
 * spectral: V, and Q/K dims past rotary_dim, as gaussian. Q/K pair j (the two dims RoPE
 * rotates together: neox (j, j + rotary_dim/2), gptj (2j, 2j+1)) is the 2-vector
 * m (cos phi, sin phi) with
 *   m   = a_j (1 + eta (2 u1 - 1)),              eta = RB_SPECTRAL_MAG_NOISE,
 *   phi = psi_j(h) + (1 - coherence) pi (2 u0 - 1),
 * a_j from rb_spectral_amplitudes, psi_j(h) = 2 pi w0 a fixed offset shared by Q and K
 * (w0: word 0 of the Philox block with counter (0, 0, 1<<24 | 3<<16 | h, j)), and
 * u0, u1 words 0, 1 of the block with counter (p lo, p hi, 1<<24 | t<<16 | h, j), as
 * (x + 0.5)/2^32. coherence 1: every Q and K pair has phase psi_j, so the score of q at
 * m and k at n after RoPE is sum_j m_q m_k cos((m - n) theta'_j) (about sum_j a_j^2
 * cos); coherence 0: phases uniform on the circle. Unlike gaussian, the spectral
 * values go through libm (exp, sqrt, cos, sin): a pure function of the same inputs on
 * one host, but hosts with different math libraries may differ in the last bits (a
 * multi-host run then gives a position's values as its host computes them).
 * file: not generated; returns RB_EINVAL (read it with rb_dataset_open/read).
 * Errors: head_dim <= 0 or odd, head outside [0, 65535], negative position,
 * n_needles outside [0, RB_NEEDLE_MAX], spectral rotary_dim odd or > head_dim,
 * coherence outside [0, 1], bad amplitudes: RB_EINVAL (from rb_kernels.h) with a
 * message. */
int rb_dataset_fill(const rb_dataset *ds, rb_tensor t, int head, const int64_t *pos,
                    int64_t n, float *out, char *err, size_t errlen);

/* ---- rows from any dataset, file included (collective) --------------------------- */

typedef struct rb_dataset_source rb_dataset_source;

/* rb_dataset_open: collective over comm. Prepares reading rows of `heads` heads and
 * positions < seq_len of dataset ds (copied; ds->path is copied too). Generated kinds
 * need nothing more. file: opens ds->path with the MPI-IO driver on comm and checks
 * that datasets q, k, v exist, have rank 3, a float32 or float16 type, and dims
 * [>= heads][>= seq_len][== ds->head_dim]. Every rank returns the same code and
 * message; errors name the file and dataset, e.g. "F: dataset k has shape
 * [2][100][64], expected [>=1][>=4096][128]" (RB_EFORMAT: not HDF5, missing dataset,
 * wrong rank/type/shape; RB_EIO: cannot open; RB_EINVAL: bad arguments; RB_ENOMEM).
 * No HDF5 error stack is printed. *src is NULL on error. */
int rb_dataset_open(rb_dataset_source **src, const rb_dataset *ds, MPI_Comm comm,
                    int heads, int64_t seq_len, char *err, size_t errlen);

/* rb_dataset_read: n rows of tensor t, head `head`, at global positions pos[0..n)
 * into out (row r at out + r*head_dim), as rb_dataset_fill would generate them; for
 * file, the rows of the file converted to float (float16 exactly). Collective for
 * file: every rank calls it with the same (t, head), each with its own positions (n may
 * be 0; any order, repeats allowed); each rank reads only its rows. Errors (the same
 * code on every rank): for file, head or a position outside what open checked:
 * RB_EINVAL (the generated kinds check neither: any head and position >= 0 give
 * their rows); a read
 * failure: RB_EIO; a value that is not finite or beyond 1e15 in magnitude: RB_EFORMAT,
 * naming the first such value by [head][position][dim]; no memory: RB_ENOMEM. */
int rb_dataset_read(rb_dataset_source *src, rb_tensor t, int head, const int64_t *pos,
                    int64_t n, float *out, char *err, size_t errlen);

/* rb_dataset_close: collective; releases src (NULL is fine). */
void rb_dataset_close(rb_dataset_source *src);

#ifdef __cplusplus
}
#endif
#endif
