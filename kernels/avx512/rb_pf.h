/* rb_pf.h — internal to kernels/avx512/: a stream of software prefetches paced by the work of a key block (the fp32 and bf16 kernels), one block ahead or along a schedule of blocks. */
#ifndef RB_PF_H
#define RB_PF_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* A stream of L2 prefetches spread evenly over the work on one key block, one line of K
 * and one of V per line counted, `per` lines per pf_step, in order, so that memory stays
 * busy while the block is computed instead of in a burst that stalls the packing. (A
 * round-robin over 4 KiB pages, which once streamed the fp32 probe's raw rows faster,
 * measured no better once its scores stopped spilling registers, so the order is plain.)
 *
 * Two shapes. One block ahead (pf_block): `left` lines from k and v, all of them over
 * the current block's work. Or a cursor along a schedule of key blocks (pf_sched_start,
 * pf_sched_block: the fp32 key-outer probe order): the lines come from the blocks after
 * the current one in schedule order, block after block, and each block's work issues a
 * `budget` of them that the caller sizes to the block's arithmetic, so that a block with
 * much arithmetic prefetches several sparse blocks ahead and one with little issues
 * little. */
typedef struct {
    const char *k, *v;  /* next line of each stream; v NULL: no V */
    int64_t left;       /* lines left in the cursor's block */
    int64_t per;        /* lines per pf_step */
    int64_t budget;     /* lines still to issue over the current block's work */
    /* schedule cursor (ord NULL: the one block only) */
    const int64_t *ord; /* block indices in schedule order; the cursor is at ord[j], j < n */
    int64_t j, n;
    const char *kbase, *vbase; /* block b starts at kbase + b * bbytes (and vbase) */
    size_t bbytes;
    int64_t blines;  /* lines of a whole block */
    int64_t nwhole;  /* blocks [0, nwhole) are whole; later ones are not prefetched */
    int64_t issued;  /* lines issued or skipped from the start of the schedule */
} rb_pf;

/* RB_PF_NONE: a stream that issues nothing. */
#define RB_PF_NONE ((rb_pf){0})

/* pf_block: *pf = `lines` lines of k and v (v may be NULL), spread over `steps` pf_steps
 * (steps <= 0: all at the first). */
static inline void pf_block(rb_pf *pf, const char *k, const char *v, int64_t lines,
                            int64_t steps)
{
    *pf = RB_PF_NONE;
    pf->k = k;
    pf->v = v;
    pf->left = pf->budget = lines;
    pf->per = steps > 0 ? (lines + steps - 1) / steps : lines;
}

/* pf_issue: n lines (n <= left, n <= budget) from the cursor. */
static inline void pf_issue(rb_pf *pf, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        _mm_prefetch(pf->k + 64 * i, _MM_HINT_T1);
        if (pf->v)
            _mm_prefetch(pf->v + 64 * i, _MM_HINT_T1);
    }
    pf->k += 64 * n;
    if (pf->v)
        pf->v += 64 * n;
    pf->left -= n;
    pf->budget -= n;
    pf->issued += n;
}

/* pf_seek: the cursor to the start of schedule entry j (nothing left past the end). */
static inline void pf_seek(rb_pf *pf, int64_t j)
{
    pf->j = j;
    if (j >= pf->n) {
        pf->left = 0;
        return;
    }
    const int64_t b = pf->ord[j];
    pf->k = pf->kbase + (size_t)b * pf->bbytes;
    pf->v = pf->vbase ? pf->vbase + (size_t)b * pf->bbytes : NULL;
    pf->left = b < pf->nwhole ? pf->blines : 0;
}

/* pf_cross: issue n lines across the end of the cursor's block, moving along the
 * schedule; stops (budget 0) at its end or, for one block, at the block's end. */
static __attribute__((noinline, unused)) void pf_cross(rb_pf *pf, int64_t n)
{
    while (n > 0) {
        if (pf->left == 0) {
            if (!pf->ord || pf->j + 1 >= pf->n) {
                pf->budget = 0;
                return;
            }
            pf_seek(pf, pf->j + 1);
            continue;
        }
        const int64_t m = n < pf->left ? n : pf->left;
        pf_issue(pf, m);
        n -= m;
    }
}

/* pf_step: issue the next `per` lines (fewer when the budget is smaller); pf may be NULL. */
static inline void pf_step(rb_pf *pf)
{
    if (!pf)
        return;
    const int64_t n = pf->per < pf->budget ? pf->per : pf->budget;
    if (n <= 0)
        return;
    if (n <= pf->left)
        pf_issue(pf, n);
    else
        pf_cross(pf, n);
}

/* pf_sched_start: *pf = a cursor over schedule entries [j0, j1) of ord, blocks of
 * bbytes from kbase and vbase (vbase may be NULL), blines lines each, blocks before
 * nwhole prefetched; issues nothing until pf_sched_block. */
static inline void pf_sched_start(rb_pf *pf, const int64_t *ord, int64_t j0, int64_t j1,
                                  const char *kbase, const char *vbase, size_t bbytes,
                                  int64_t blines, int64_t nwhole)
{
    *pf = RB_PF_NONE;
    pf->ord = ord;
    pf->n = j1;
    pf->kbase = kbase;
    pf->vbase = vbase;
    pf->bbytes = bbytes;
    pf->blines = blines;
    pf->nwhole = nwhole;
    pf_seek(pf, j0);
}

/* pf_sched_block: the work of schedule entry jj begins; `consumed` is the lines of the
 * entries up to and including jj. A cursor that fell behind moves to entry jj + 1 (what
 * it skipped is left to the hardware). Then the block's budget: `want` lines, but no
 * more than puts the cursor `ahead_max` lines past the end of entry jj, spread over
 * `steps` pf_steps. */
static inline void pf_sched_block(rb_pf *pf, int64_t jj, int64_t consumed, int64_t want,
                                  int64_t ahead_max, int64_t steps)
{
    if (pf->issued < consumed || pf->j <= jj) {
        pf_seek(pf, jj + 1);
        pf->issued = consumed;
    }
    const int64_t room = ahead_max - (pf->issued - consumed);
    pf->budget = want < room ? want : room;
    if (pf->budget < 0)
        pf->budget = 0;
    pf->per = steps > 0 ? (pf->budget + steps - 1) / steps : pf->budget;
}

#endif
