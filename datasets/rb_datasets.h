/* rb_datasets.h — public interface of datasets/: counter-based (Philox) generation of
 * pre-RoPE Q/K/V rows, so that any rank can produce any global position. */
#ifndef RB_DATASETS_H
#define RB_DATASETS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RB_DATA_GAUSSIAN = 0, RB_DATA_NEEDLE = 1 } rb_dataset_kind;
typedef enum { RB_TENSOR_Q = 0, RB_TENSOR_K = 1, RB_TENSOR_V = 2 } rb_tensor;

#define RB_NEEDLE_MAX 64

/* A dataset description. Needle positions are absolute (already resolved against the
 * sequence length by the caller); needle i plants key needle_pos[i] aligned with the
 * query at query_pos[i]. */
typedef struct {
    rb_dataset_kind kind;
    uint64_t seed;
    int head_dim;
    /* needle */
    int n_needles;
    int64_t needle_pos[RB_NEEDLE_MAX];
    int64_t query_pos[RB_NEEDLE_MAX];
    double strength;
} rb_dataset;

/* Canonical name ("gaussian", "needle") and parse (-1 if unknown). */
const char *rb_dataset_kind_name(rb_dataset_kind k);
int rb_dataset_kind_parse(const char *name);

/* rb_dataset_fill: write n rows of head_dim floats to out (row r at out + r*head_dim)
 * for tensor t of head `head` at global positions pos[0..n).
 * Every value is a pure function of (seed, tensor, head, global position, dim):
 * element (t, h, p, i) is a standard normal drawn by Box-Muller from the Philox4x32-10
 * block with key (seed lo, seed hi) and counter (p lo, p hi, (t << 16) | h, i / 4).
 * needle: as gaussian, except that the K row at needle_pos[i] equals
 * strength * (Q row at query_pos[i]) — pre-RoPE alignment, so its score against that
 * query decays only by the rotary phases. If two needles share a key position the
 * later one wins.
 * Errors: head_dim <= 0 or odd, head outside [0, 65535], negative position,
 * n_needles outside [0, RB_NEEDLE_MAX]: RB_EINVAL (from rb_kernels.h) with a message. */
int rb_dataset_fill(const rb_dataset *ds, rb_tensor t, int head, const int64_t *pos,
                    int64_t n, float *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
