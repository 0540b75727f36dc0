/* dispatch.c — CPU feature detection (cpuid + xgetbv) and run-time choice of the
 * attention tile kernel among the variants built into this binary. */
#include "rb_kernels.h"
#include "avx512/rb_avx512.h"
#include "blas/rb_blas.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define RB_X86 1
#else
#define RB_X86 0
#endif

#if RB_X86
/* XCR0 via xgetbv(0); only call when CPUID.1:ECX.OSXSAVE is set. */
static unsigned long long rb_xgetbv0(void)
{
    unsigned int eax, edx;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}
#endif

/* Copy a brand string, dropping leading and trailing blanks. */
static void trim_copy(char *dst, size_t dstlen, const char *src)
{
    while (*src == ' ')
        src++;
    size_t n = strlen(src);
    while (n > 0 && (src[n - 1] == ' ' || src[n - 1] == '\0'))
        n--;
    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* cpu_field: the field of *ci named name[0..n) (ROPEBENCH_TEST_CPU_HIDE's names), or NULL. */
static int *cpu_field(rb_cpu_info *ci, const char *name, size_t n)
{
    const struct {
        const char *name;
        int *field;
    } f[] = {{"avx2", &ci->avx2},           {"fma", &ci->fma},
             {"avx512f", &ci->avx512f},     {"avx512bw", &ci->avx512bw},
             {"avx512vl", &ci->avx512vl},   {"avx512dq", &ci->avx512dq},
             {"avx512_bf16", &ci->avx512_bf16}, {"os_zmm", &ci->os_zmm}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (strlen(f[i].name) == n && strncmp(f[i].name, name, n) == 0)
            return f[i].field;
    return NULL;
}

/* hide_walk: the names of the comma list `list` (NULL: none; empty names skipped),
 * each known one cleared in *ci when ci is not NULL; returns the offset of the first
 * unknown name (its length in *len), or (size_t)-1; the names after it are still walked. The one parser of
 * ROPEBENCH_TEST_CPU_HIDE, for rb_cpu_detect and rb_cpu_hide_check. */
static size_t hide_walk(const char *list, rb_cpu_info *ci, size_t *len)
{
    rb_cpu_info scratch; /* (only its field addresses are taken when ci is NULL) */
    size_t bad = (size_t)-1;
    for (size_t o = 0; list && list[o];) {
        const size_t n = strcspn(list + o, ",");
        int *f = n ? cpu_field(ci ? ci : &scratch, list + o, n) : NULL;
        if (n && !f && bad == (size_t)-1) {
            bad = o;
            *len = n;
        }
        if (f && ci)
            *f = 0;
        o += n + (list[o + n] == ',');
    }
    return bad;
}

/* rb_cpu_hide_check: see rb_kernels.h. */
size_t rb_cpu_hide_check(const char *list, size_t *len) { return hide_walk(list, NULL, len); }

/* avx2 and fma are reported as usable (CPU bit and the OS saves YMM state);
 * the avx512* fields are the CPU bits alone, and os_zmm says whether the OS saves
 * opmask/ZMM state; "AVX-512 usable" (rb_cpu_avx512_usable) is F, BW, VL, DQ and
 * os_zmm together. */
void rb_cpu_detect(rb_cpu_info *ci)
{
    if (!ci)
        return;
    memset(ci, 0, sizeof *ci);
#if RB_X86
    unsigned int a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return;
    const unsigned int max_leaf = a;
    memcpy(ci->vendor + 0, &b, 4);
    memcpy(ci->vendor + 4, &d, 4);
    memcpy(ci->vendor + 8, &c, 4);
    ci->vendor[12] = '\0';

    int os_ymm = 0;
    if (max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
        const int has_fma = (c >> 12) & 1;
        const int osxsave = (c >> 27) & 1;
        const int has_avx = (c >> 28) & 1;
        if (osxsave) {
            const unsigned long long xcr0 = rb_xgetbv0();
            os_ymm = (xcr0 & 0x6ull) == 0x6ull; /* SSE (1) + AVX (2) state */
            /* opmask (5), ZMM_Hi256 (6), Hi16_ZMM (7), on top of SSE and AVX */
            ci->os_zmm = (xcr0 & 0xE6ull) == 0xE6ull;
        }
        ci->fma = has_fma && has_avx && os_ymm;
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        const unsigned int max_sub7 = a;
        ci->avx2 = ((b >> 5) & 1) && os_ymm;
        ci->avx512f = (b >> 16) & 1;
        ci->avx512dq = (b >> 17) & 1;
        ci->avx512bw = (b >> 30) & 1;
        ci->avx512vl = (b >> 31) & 1;
        if (max_sub7 >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            ci->avx512_bf16 = (a >> 5) & 1;
        }
    }
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
        unsigned int regs[12];
        for (unsigned int i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1],
                        &regs[4 * i + 2], &regs[4 * i + 3]);
        char brand[49];
        memcpy(brand, regs, 48);
        brand[48] = '\0';
        trim_copy(ci->model, sizeof ci->model, brand);
    }
#endif
    size_t unknown_len; /* (unknown names: refused by rb_cli_check_env) */
    (void)hide_walk(getenv("ROPEBENCH_TEST_CPU_HIDE"), ci, &unknown_len);
}

/* ---- kernel variants ------------------------------------------------------------
 * One row per kernel name the project knows. `tile` is NULL when the variant is not
 * compiled into this binary; `supported` says whether this CPU can run it. A new
 * ISA (kernels/avx512/...) adds its tile function here under its build macro.
 * Automatic selection walks the table in order and takes the first variant that
 * is built, supported and `automatic` (variants that change the numerics, such as
 * bf16 inputs, are only taken on request). */
typedef struct {
    const char *name;
    rb_attn_tile_fn tile;
    int (*supported)(const rb_cpu_info *ci);
    int automatic;
    const char *auto_reason; /* the log line when chosen automatically */
    const char *dtype;       /* arithmetic of the tile */
    rb_rope_apply_fn rope;   /* RoPE application paired with it */
    const char *(*detail)(void); /* how it computes here, for the record */
    rb_attn_tile_fn probe;   /* rb_kernel_ops.probe (NULL: tile) */
} rb_kernel_variant;

static int cpu_any(const rb_cpu_info *ci)
{
    (void)ci;
    return 1;
}

/* rb_cpu_avx512_usable: see rb_kernels.h. */
int rb_cpu_avx512_usable(const rb_cpu_info *ci)
{
    return ci->avx512f && ci->avx512bw && ci->avx512vl && ci->avx512dq && ci->os_zmm;
}

int rb_kernels_helpers_avx512(void)
{
    static atomic_int have = -1;
    int h = atomic_load(&have);
    if (h < 0) {
        rb_cpu_info ci;
        rb_cpu_detect(&ci);
        h = rb_cpu_avx512_usable(&ci);
        atomic_store(&have, h);
    }
    const char *isa = getenv("ROPEBENCH_ISA");
    return h && !(isa && strcmp(isa, "ref") == 0);
}

static int cpu_avx512_bf16(const rb_cpu_info *ci)
{
    return rb_cpu_avx512_usable(ci) && ci->avx512_bf16;
}

/* The build defines RB_HAVE_<variant> for each kernel file it compiles (CMake). */
#ifdef RB_HAVE_AVX512_ROPE
#define RB_ROPE_FAST rb_rope_apply_avx512
#else
#define RB_ROPE_FAST rb_rope_apply
#endif
#ifdef RB_HAVE_AVX512_BF16
#define RB_TILE_AVX512_BF16 rb_attn_tile_avx512_bf16
#define RB_PROBE_AVX512_BF16 rb_attn_tile_avx512_bf16_probe
#define RB_DETAIL_BF16 rb_attn_bf16_path
#else
#define RB_TILE_AVX512_BF16 NULL
#define RB_PROBE_AVX512_BF16 NULL
#define RB_DETAIL_BF16 detail_not_built
#endif
#ifdef RB_HAVE_AVX512_FP32
#define RB_TILE_AVX512 rb_attn_tile_avx512
#define RB_PROBE_AVX512 rb_attn_tile_avx512_probe
#else
#define RB_TILE_AVX512 NULL
#define RB_PROBE_AVX512 NULL
#endif
#ifdef RB_HAVE_BLAS
#define RB_TILE_BLAS rb_attn_tile_blas
#else
#define RB_TILE_BLAS NULL
#endif

#ifndef RB_HAVE_AVX512_BF16
static const char *detail_not_built(void) { return "not built"; }
#endif
static const char *detail_avx512(void)
{
    return "AVX-512F fp32 register-blocked QK^T and PV, vectorized exp";
}
static const char *detail_blas(void) { return "cblas_sgemm (OpenBLAS) for QK^T and PV"; }
static const char *detail_ref(void) { return "scalar, double-precision scores and state"; }

/* rb_probe_profile_set: see rb_kernels.h. */
int rb_probe_profile_set(rb_probe_profile *p)
{
#ifdef RB_HAVE_AVX512_FP32
    rb_probe_profile_set_avx512(p);
    return 1;
#else
    (void)p;
    return 0;
#endif
}

static const rb_kernel_variant variants[] = {
    {"avx512_bf16", RB_TILE_AVX512_BF16, cpu_avx512_bf16, 1,
     "avx512_bf16: the bf16 kernel, AVX512_BF16 present", "bf16", RB_ROPE_FAST,
     RB_DETAIL_BF16, RB_PROBE_AVX512_BF16},
    {"avx512", RB_TILE_AVX512, rb_cpu_avx512_usable, 1, "avx512: AVX-512 present and ZMM state enabled",
     "fp32", RB_ROPE_FAST, detail_avx512, RB_PROBE_AVX512},
    {"blas", RB_TILE_BLAS, cpu_any, 1, "blas: no usable AVX-512 kernel", "fp32",
     rb_rope_apply, detail_blas, NULL},
    {"ref", rb_attn_tile_ref, cpu_any, 1, "ref: no faster kernel built", "fp32",
     rb_rope_apply, detail_ref, NULL},
};
enum { N_VARIANTS = (int)(sizeof variants / sizeof variants[0]) };

/* rb_kernels_rope_fast: see rb_kernels.h. */
rb_rope_apply_fn rb_kernels_rope_fast(const char **name)
{
#ifdef RB_HAVE_AVX512_ROPE
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    if (rb_cpu_avx512_usable(&ci)) {
        if (name)
            *name = "avx512";
        return rb_rope_apply_avx512;
    }
#endif
    if (name)
        *name = "ref";
    return rb_rope_apply;
}

/* What this CPU (or its OS) lacks for an AVX-512 variant (name "avx512...") into buf
 * ("avx512dq, avx512_bf16", or "ZMM state, which the OS does not save (XCR0)"); ""
 * for the others. */
static void missing_features(const rb_cpu_info *ci, const char *name, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    if (strncmp(name, "avx512", 6) != 0)
        return;
    const struct {
        int have;
        const char *what;
    } need[] = {{ci->avx512f, "avx512f"},
                {ci->avx512bw, "avx512bw"},
                {ci->avx512vl, "avx512vl"},
                {ci->avx512dq, "avx512dq"},
                {strcmp(name, "avx512_bf16") != 0 || ci->avx512_bf16, "avx512_bf16"},
                {ci->os_zmm, "ZMM state, which the OS does not save (XCR0)"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0] && o < n; i++)
        if (!need[i].have) {
            int k = snprintf(buf + o, n - o, "%s%s", o ? ", " : "", need[i].what);
            o += k > 0 ? (size_t)k : 0;
        }
}

/* "a, b, c": names of the variants that are built and supported here. */
static void list_available(const rb_cpu_info *ci, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    for (int i = N_VARIANTS - 1; i >= 0; i--) {
        if (!variants[i].tile || !variants[i].supported(ci))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                         variants[i].name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

static void fill_ops(const rb_kernel_variant *kv, rb_kernel_ops *ops)
{
    if (!ops)
        return;
    ops->name = kv->name;
    ops->tile = kv->tile;
    ops->probe = kv->probe;
    ops->dtype = kv->dtype;
    ops->rope = kv->rope;
    ops->detail = kv->detail();
    /* the fp32 variants take v = NULL (no PV, no V traffic); the bf16 one does not */
    ops->v_optional = strcmp(kv->dtype, "fp32") == 0;
}

int rb_kernels_select(const char *override, rb_kernel_ops *ops, const char **reason,
                      char *err, size_t errlen)
{
    return rb_kernels_select_dtype(override, "fp32", ops, reason, err, errlen);
}

int rb_kernels_select_dtype(const char *override, const char *dtype, rb_kernel_ops *ops,
                            const char **reason, char *err, size_t errlen)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    char avail[128];
    list_available(&ci, avail, sizeof avail);
    if (!dtype)
        dtype = "fp32";

    if (!override || !override[0]) {
        for (int i = 0; i < N_VARIANTS; i++) {
            const rb_kernel_variant *kv = &variants[i];
            if (!kv->tile || !kv->automatic || !kv->supported(&ci) ||
                strcmp(kv->dtype, dtype) != 0)
                continue;
            fill_ops(kv, ops);
            if (reason)
                *reason = kv->auto_reason;
            return 0;
        }
        return rb_errf(err, errlen, RB_EUNSUPPORTED,
                       "study.dtype = %.8s: no %.8s kernel usable on this CPU (available: %s)",
                       dtype, dtype, avail);
    }
    for (int i = 0; i < N_VARIANTS; i++) {
        const rb_kernel_variant *kv = &variants[i];
        if (strcmp(override, kv->name) != 0)
            continue;
        if (!kv->tile)
            return rb_errf(err, errlen, RB_EUNSUPPORTED,
                           "ROPEBENCH_ISA=%s: not built in this version (available: %s)",
                           override, avail);
        if (!kv->supported(&ci)) {
            char miss[160];
            missing_features(&ci, kv->name, miss, sizeof miss);
            return rb_errf(err, errlen, RB_EUNSUPPORTED,
                           "ROPEBENCH_ISA=%s: not supported by this CPU (%s)%s%s "
                           "(available: %s)",
                           override, ci.model[0] ? ci.model : "unknown model",
                           miss[0] ? ": it lacks " : "", miss, avail);
        }
        if (strcmp(kv->dtype, dtype) != 0)
            return rb_errf(err, errlen, RB_EUNSUPPORTED,
                           "ROPEBENCH_ISA=%s computes %s, but study.dtype = %.8s",
                           override, kv->dtype, dtype);
        fill_ops(kv, ops);
        if (reason)
            *reason = "requested by ROPEBENCH_ISA";
        return 0;
    }
    char known[128];
    size_t used = 0;
    known[0] = '\0';
    for (int i = N_VARIANTS - 1; i >= 0; i--) {
        int n = snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
                         variants[i].name);
        if (n < 0 || (size_t)n >= sizeof known - used)
            break;
        used += (size_t)n;
    }
    return rb_errf(err, errlen, RB_EUNSUPPORTED,
                   "ROPEBENCH_ISA=%.40s: unknown kernel (known: %s; available: %s)",
                   override, known, avail);
}

/* hugepages_wanted: ROPEBENCH_HUGEPAGES unset, empty or anything but "0". */
static int hugepages_wanted(void)
{
    const char *e = getenv("ROPEBENCH_HUGEPAGES");
    return !(e && !strcmp(e, "0"));
}

/* rb_kernels_hugepages: see rb_kernels.h. */
const char *rb_kernels_hugepages(const char *setting)
{
    static const char *const modes[] = {"always", "madvise", "never"};
    const char *m = NULL;
    for (int i = 0; i < 3 && setting && !m; i++) {
        char want[16];
        snprintf(want, sizeof want, "[%s]", modes[i]);
        if (strstr(setting, want))
            m = modes[i];
    }
    if (!m)
        return "unsupported";
    if (!strcmp(m, "never"))
        return "off (system: never)";
    if (!hugepages_wanted())
        return !strcmp(m, "always") ? "always" : "off (ROPEBENCH_HUGEPAGES=0)";
    return "madvise";
}

/* alloc_align, alloc_len: rb_kernels_alloc's alignment for a block of `bytes`, and the
 * length it allocates (a non-zero multiple of it; 0 when that overflows) */
static size_t alloc_align(size_t bytes)
{
    return bytes >= RB_HUGE_MIN ? ((size_t)2 << 20) : bytes >= ((size_t)64 << 10) ? 4096 : 64;
}

static size_t alloc_len(size_t bytes)
{
    const size_t a = alloc_align(bytes);
    if (bytes > SIZE_MAX - a)
        return 0;
    return bytes == 0 ? a : (bytes + a - 1) & ~(a - 1);
}

/* rb_kernels_alloc: see rb_kernels.h. aligned_alloc wants a non-zero multiple of the
 * alignment. Blocks of 64 KiB and more start a page: glibc puts a 64-byte aligned
 * large block 64 bytes into its first page, where the in-place RoPE measured 5-8 %
 * slower (an aliasing of its stores with other streams; 0, 16 and 128 bytes in do not
 * show it). Large blocks start a 2 MiB boundary so that huge pages can back them from
 * their first byte. Measured on the AMD host (2026-11-30, 1M keys, 116 log-spaced
 * probe rows): huge pages took the fp32 probe from 0.065 to 0.057 s at 1 thread and
 * from 0.038 to 0.031 s at 2, a STREAM triad from 30.6 to 33.6 GB/s and from 61.5 to
 * 67.0 GB/s (fewer TLB misses and page walks on a 1 GiB stream); on the Intel host
 * of earlier sessions they raised the probe by 23 % and the triad by 35 %. The cost is
 * at first touch, and it depends on the system: a fault that finds no free huge page
 * may stall in direct compaction (first touch of 1 GiB: 0.68-2.3 s in a process started
 * after a long build, 0.07-0.17 s once free huge pages exist, 0.39 s on 4 KiB pages);
 * the default study on 2 ranks took 56 s with them and 58 s without. */
void *rb_kernels_alloc(size_t bytes)
{
    const int huge = bytes >= RB_HUGE_MIN;
    const size_t a = alloc_align(bytes), len = alloc_len(bytes);
    if (len == 0)
        return NULL;
    void *p = aligned_alloc(a, len);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && huge && hugepages_wanted())
        (void)madvise(p, len, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#endif
    return p;
}

/* The kept scratch block (rb_kernels_scratch_take): at most one, guarded by a spin
 * flag held only to swap these two words. */
static atomic_flag scratch_busy = ATOMIC_FLAG_INIT;
static void *scratch_kept;
static size_t scratch_kept_bytes;

static void scratch_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&scratch_busy, memory_order_acquire))
        ;
}

static void scratch_unlock(void) { atomic_flag_clear_explicit(&scratch_busy, memory_order_release); }

/* scratch_grab: the kept block (NULL: none) and its size in *n, leaving none kept */
static void *scratch_grab(size_t *n)
{
    scratch_lock();
    void *p = scratch_kept;
    *n = scratch_kept_bytes;
    scratch_kept = NULL;
    scratch_kept_bytes = 0;
    scratch_unlock();
    return p;
}

/* rb_kernels_scratch_take: see rb_kernels.h. A kept block too small is freed, so that
 * what is kept grows to the largest call's need and no further; a new block counts the
 * whole length rb_kernels_alloc gave it (up to 2 MiB past `bytes` for large blocks),
 * so that a call a little larger than the last still fits. */
void *rb_kernels_scratch_take(size_t bytes, size_t *got)
{
    size_t n = 0;
    void *p = scratch_grab(&n);
    if (p && n < bytes) {
        free(p);
        p = NULL;
    }
    if (!p) {
        p = rb_kernels_alloc(bytes);
        n = alloc_len(bytes);
    }
    *got = p ? n : 0;
    return p;
}

/* rb_kernels_scratch_give: see rb_kernels.h. Of the given block and the kept one (a
 * concurrent call's), the larger is kept. */
void rb_kernels_scratch_give(void *p, size_t bytes)
{
    if (!p)
        return;
    scratch_lock();
    if (scratch_kept_bytes < bytes) {
        void *old = scratch_kept;
        scratch_kept = p;
        scratch_kept_bytes = bytes;
        p = old;
    }
    scratch_unlock();
    free(p);
}

/* rb_kernels_scratch_release: see rb_kernels.h. */
void rb_kernels_scratch_release(void)
{
    size_t n = 0;
    free(scratch_grab(&n));
}

#ifdef _OPENMP
#include <omp.h>
int rb_kernels_threads(void)
{
    const int n = omp_get_max_threads(), lim = omp_get_thread_limit();
    return lim > 0 && lim < n ? lim : n;
}
void rb_kernels_set_threads(int n)
{
    if (n >= 1)
        omp_set_num_threads(n);
}
int rb_kernels_thread_limit(void)
{
    const int lim = omp_get_thread_limit();
    return lim > 0 ? lim : 1;
}
#else
int rb_kernels_threads(void) { return 1; }
int rb_kernels_thread_limit(void) { return 1; }
void rb_kernels_set_threads(int n) { (void)n; }
#endif
