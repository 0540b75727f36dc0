/* rb_pf.h — internal to kernels/avx512/: a stream of software prefetches paced by the work of a key block (the probe streams of the fp32 and bf16 kernels). */
#ifndef RB_PF_H
#define RB_PF_H

#include <immintrin.h>
#include <stdint.h>

/* A stream of L2 prefetches spread evenly over the work on one key block: `left` lines
 * each of K and V from k and v on still to issue, `per` of each per step, in order, so
 * that memory stays busy while the block is computed instead of in a burst that stalls
 * the packing. (A round-robin over 4 KiB pages, which once streamed the fp32 probe's raw
 * rows faster, measured no better once its scores stopped spilling registers, so the
 * order is plain.) */
typedef struct {
    const char *k, *v;
    int64_t left, per;
} rb_pf;

/* pf_step: issue the next `per` lines of each stream (all that are left if fewer);
 * pf may be NULL, pf->v NULL when there is no V. */
static inline void pf_step(rb_pf *pf)
{
    if (!pf || pf->left <= 0)
        return;
    const int64_t n = pf->per < pf->left ? pf->per : pf->left;
    pf->left -= n;
    for (int64_t i = 0; i < n; i++) {
        _mm_prefetch(pf->k + 64 * i, _MM_HINT_T1);
        if (pf->v)
            _mm_prefetch(pf->v + 64 * i, _MM_HINT_T1);
    }
    pf->k += 64 * n;
    if (pf->v)
        pf->v += 64 * n;
}

#endif
