/* test_kernels_scratch.c — the kernels' kept scratch block (rb_kernels_scratch_take/give/release): reuse, growth, blocks of concurrent callers kept apart, and fast kernels whose results do not depend on what an earlier call left in the block. */
#include "rb_kernels.h"
#include "rb_test.h"
#include "avx512/rb_avx512.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The pool on one thread: a block given back is taken again while large enough, a
 * larger need replaces it, two blocks taken at once are distinct and the larger is the
 * one kept, release empties the pool. */
static void pool_sequence(void)
{
    rb_kernels_scratch_release();
    size_t g1 = 0, g2 = 0, ga = 0, gb = 0;
    char *p1 = rb_kernels_scratch_take(1000, &g1);
    check(p1 && g1 >= 1000 && (uintptr_t)p1 % 64 == 0,
          "take(1000) = %p, got %zu: want a 64-byte aligned block of >= 1000", (void *)p1, g1);
    if (!p1)
        return;
    memset(p1, 0x11, g1);
    rb_kernels_scratch_give(p1, g1);
    char *p2 = rb_kernels_scratch_take(500, &g2);
    check(p2 == p1 && g2 == g1, "take(500) after giving back %p (%zu): got %p (%zu), want the same block",
          (void *)p1, g1, (void *)p2, g2);
    rb_kernels_scratch_give(p2, g2);

    /* a need beyond the kept block: a new block of that size */
    char *p3 = rb_kernels_scratch_take(g1 + 4096, &g2);
    check(p3 && g2 >= g1 + 4096, "take(%zu) with %zu kept: got %zu", g1 + 4096, g1, g2);
    if (p3)
        memset(p3, 0x22, g2);

    /* two blocks held at once (as two threads' calls would): distinct */
    char *b = rb_kernels_scratch_take(100, &gb);
    check(b && b != p3, "a second take while %p is held returned %p", (void *)p3, (void *)b);
    if (b)
        memset(b, 0x33, gb);
    rb_kernels_scratch_give(b, gb);  /* kept: b */
    rb_kernels_scratch_give(p3, g2); /* larger: p3 kept, b freed */
    char *a = rb_kernels_scratch_take(1, &ga);
    check(a == p3 && ga == g2, "after giving back %zu and %zu bytes, take(1) got %p (%zu), want the larger %p",
          gb, g2, (void *)a, ga, (void *)p3);
    check(a == p3 && (unsigned char)a[g2 - 1] == 0x22, "the kept block's contents changed under it");
    rb_kernels_scratch_give(a, ga);

    /* release: the next take starts a new block of what it asks */
    rb_kernels_scratch_release();
    char *f = rb_kernels_scratch_take(64, &ga);
    check(f && ga == 64, "take(64) after release: got %zu bytes, want a new block of 64", ga);
    rb_kernels_scratch_give(f, ga);
    rb_kernels_scratch_give(NULL, 0); /* nothing */
    rb_kernels_scratch_release();
}

/* Several threads taking and giving back blocks at once: each fills its block with its
 * own mark and finds it intact before giving it back, so no block is ever handed to two
 * holders (under the sanitizers also: no double free, no use after free). */
static void pool_threads(void)
{
    int bad = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(4) reduction(+ : bad)
#endif
    {
#ifdef _OPENMP
        const int tid = omp_get_thread_num();
#else
        const int tid = 0;
#endif
        uint64_t s = 0x1234u + (uint64_t)tid;
        for (int it = 0; it < 2000; it++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            const size_t want = 64 + (size_t)(s >> 40) % 20000;
            size_t got = 0;
            unsigned char *p = rb_kernels_scratch_take(want, &got);
            if (!p || got < want) {
                bad++;
                rb_kernels_scratch_give(p, got);
                continue;
            }
            const unsigned char mark = (unsigned char)(0x40 + tid);
            memset(p, mark, want);
            for (volatile int spin = 0; spin < 200; spin++)
                ;
            for (size_t i = 0; i < want; i += 97)
                bad += p[i] != mark;
            bad += p[want - 1] != mark;
            rb_kernels_scratch_give(p, got);
        }
    }
    check(bad == 0, "4 threads x 2000 take/give: %d blocks short, shared or overwritten", bad);
    rb_kernels_scratch_release();
}

/* poison: leave a kept block of 64 MiB (more than any call below needs) filled with
 * byte b; returns it, so that the caller can see the kernel took it */
static void *poison(unsigned char b)
{
    rb_kernels_scratch_release();
    size_t got = 0;
    void *p = rb_kernels_scratch_take((size_t)64 << 20, &got);
    if (p) {
        memset(p, b, got);
        rb_kernels_scratch_give(p, got);
    }
    return p;
}

typedef int (*tile_fn)(const float *, const int64_t *, int64_t, const float *, const float *,
                       const int64_t *, int64_t, int, double, double *);

/* One shape through one kernel with the kept block poisoned three ways (0xFF: NaN
 * floats; 0x00; 0x7F: 3.4e38): the states must be identical bit for bit and finite, and
 * the call must have used the poisoned block: it is kept again afterwards, and the
 * 0xFF call wrote its first line (every kernel puts scratch it writes there: packed K,
 * or thread 0's row state). */
static void poison_case(const char *name, tile_fn fn, int64_t nq, int64_t nk, int d,
                        int64_t qpos0)
{
    float *q = malloc((size_t)nq * d * sizeof *q), *k = rb_kernels_alloc((size_t)nk * d * 4),
          *v = rb_kernels_alloc((size_t)nk * d * 4);
    int64_t *qp = malloc((size_t)nq * sizeof *qp), *kp = malloc((size_t)nk * sizeof *kp);
    const size_t sn = (size_t)nq * RB_STATE_STRIDE(d);
    double *st[3];
    for (int i = 0; i < 3; i++)
        st[i] = malloc(sn * sizeof(double));
    if (!q || !k || !v || !qp || !kp || !st[0] || !st[1] || !st[2]) {
        check(0, "%s: out of memory", name);
        goto cleanup;
    }
    rng_state = 99;
    for (size_t i = 0; i < (size_t)nq * d; i++)
        q[i] = (float)rng_normal();
    for (size_t i = 0; i < (size_t)nk * d; i++) {
        k[i] = (float)rng_normal();
        v[i] = (float)rng_normal();
    }
    for (int64_t i = 0; i < nk; i++)
        kp[i] = i;
    for (int64_t i = 0; i < nq; i++) /* causal rows spread over the keys */
        qp[i] = qpos0 + (nk - 1 - qpos0) * i / (nq > 1 ? nq - 1 : 1);
    static const unsigned char bytes[3] = {0xFF, 0x00, 0x7F};
    for (int i = 0; i < 3; i++) {
        void *blk = poison(bytes[i]);
        rb_state_init(st[i], nq, d);
        const int rc = fn(q, qp, nq, k, v, kp, nk, d, 1.0 / sqrt((double)d), st[i]);
        check(rc == 0, "%s, nq %lld, nk %lld, d %d, poison 0x%02X: rc %d", name, (long long)nq,
              (long long)nk, d, bytes[i], rc);
        size_t got = 0;
        void *after = rb_kernels_scratch_take(1, &got);
        check(after == blk, "%s: the call did not give the kept block back (it holds %p, was %p)",
              name, after, blk);
        if (i == 0 && after == blk) {
            unsigned char ff[64];
            memset(ff, 0xFF, sizeof ff);
            check(memcmp(after, ff, sizeof ff) != 0,
                  "%s: the call did not write the kept block (its first line is still 0xFF)", name);
        }
        rb_kernels_scratch_give(after, got);
    }
    size_t nonfinite = 0;
    for (size_t i = 0; i < sn; i++)
        nonfinite += !isfinite(st[0][i]);
    check(nonfinite == 0, "%s, nq %lld, nk %lld, d %d: %zu non-finite state values after a NaN-filled scratch",
          name, (long long)nq, (long long)nk, d, nonfinite);
    for (int i = 1; i < 3; i++)
        check(!memcmp(st[0], st[i], sn * sizeof(double)),
              "%s, nq %lld, nk %lld, d %d: the state after scratch of bytes 0x%02X differs from 0xFF's",
              name, (long long)nq, (long long)nk, d, bytes[i]);
    printf("%s: nq %lld, nk %lld, d %d: same bits after three poisoned scratch blocks\n", name,
           (long long)nq, (long long)nk, d);
cleanup:
    free(q), free(k), free(v), free(qp), free(kp);
    for (int i = 0; i < 3; i++)
        free(st[i]);
    rb_kernels_scratch_release();
}

int main(void)
{
    pool_sequence();
    pool_threads();
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    const int avx512 = ci.avx512f && ci.avx512bw && ci.avx512vl && ci.avx512dq && ci.os_zmm;
    if (!avx512)
        printf("note: no usable AVX-512 here, only the pool itself is tested\n");
    else {
        /* fp32: query-outer (causal, packed K and V) and key-outer (probe: K read in
         * place at d = 128, packed at d = 72, whose rows are padded to 80) */
        poison_case("avx512 causal", rb_attn_tile_avx512, 700, 700, 64, 0);
        poison_case("avx512 causal", rb_attn_tile_avx512, 500, 500, 72, 0);
        poison_case("avx512 probe", rb_attn_tile_avx512_probe, 9, 40000, 128, 5);
        poison_case("avx512 probe", rb_attn_tile_avx512_probe, 9, 40000, 72, 5);
        if (ci.avx512_bf16) {
            /* bf16: row mode (causal), stream mode (<= 256 rows, fewer than 16 keys a
             * row) and probe shapes (the fp32 file's key-outer loop on bf16 pairs) */
            poison_case("avx512_bf16 causal", rb_attn_tile_avx512_bf16, 700, 700, 64, 0);
            poison_case("avx512_bf16 causal", rb_attn_tile_avx512_bf16, 500, 500, 72, 0);
            poison_case("avx512_bf16 stream", rb_attn_tile_avx512_bf16, 200, 1000, 72, 0);
            poison_case("avx512_bf16 probe", rb_attn_tile_avx512_bf16, 9, 40000, 128, 5);
        }
    }
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
