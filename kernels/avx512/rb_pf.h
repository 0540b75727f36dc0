/* rb_pf.h — internal to kernels/avx512/: a stream of software prefetches paced by the work of a key block (the probe streams of the fp32 and bf16 kernels). */
#ifndef RB_PF_H
#define RB_PF_H

#include <immintrin.h>
#include <stdint.h>

/* A stream of L2 prefetches spread evenly over the work on one key block: `left` lines
 * each of K and V from k and v on still to issue, `per` of each per step, so
 * that memory stays busy while the block is computed instead of in a burst that stalls
 * the packing. With nch > 1 the lines go round-robin over nch 4 KiB chunks (line i of
 * every chunk, then line i + 1): the L2 streamer then follows 2*nch pages at once,
 * which streams raw K/V rows from memory ~25% faster than one line after the other
 * (the fp32 probe); nch = 1 is plain sequential order (the fp32 kernel's packed blocks in
 * query-outer order, and the bf16 kernel's probe stream, where it measured faster). The
 * next line is line `lip` of chunk `ch`. */
typedef struct {
    const char *k, *v;
    int64_t left, per, nch, ch, lip;
} rb_pf;

/* pf_step: issue the next `per` lines of each stream (all that are left if fewer);
 * pf may be NULL, pf->v NULL when there is no V. */
static inline void pf_step(rb_pf *pf)
{
    if (!pf || pf->left <= 0)
        return;
    const int64_t n = pf->per < pf->left ? pf->per : pf->left;
    pf->left -= n;
    if (pf->nch == 1) {
        for (int64_t i = 0; i < n; i++) {
            _mm_prefetch(pf->k + 64 * i, _MM_HINT_T1);
            if (pf->v)
                _mm_prefetch(pf->v + 64 * i, _MM_HINT_T1);
        }
        pf->k += 64 * n;
        if (pf->v)
            pf->v += 64 * n;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t off = pf->ch * 4096 + pf->lip * 64;
        _mm_prefetch(pf->k + off, _MM_HINT_T1);
        if (pf->v)
            _mm_prefetch(pf->v + off, _MM_HINT_T1);
        if (++pf->ch == pf->nch) {
            pf->ch = 0;
            pf->lip++;
        }
    }
}

#endif
