/* rb_kernels.h — public interface of kernels/: RoPE schedules, exact phases, RoPE
 * application, the attention tile and the row-state merge. No MPI, no files. */
#ifndef RB_KERNELS_H
#define RB_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------
 * Error codes shared by every module: 0 is success, negative values are failures.
 * Functions that can fail also take (char *err, size_t errlen) and write one line
 * (no trailing newline) naming the offending parameter and the reason.
 * ------------------------------------------------------------------------------- */
enum {
    RB_OK = 0,
    RB_EINVAL = -1,      /* a parameter is out of range or inconsistent */
    RB_ENOMEM = -2,      /* allocation failed */
    RB_EIO = -3,         /* a file could not be read or written */
    RB_EFORMAT = -4,     /* a file is not in the expected format */
    RB_EMPI = -5,        /* an MPI call failed */
    RB_EUNSUPPORTED = -6 /* requested feature/ISA not available here */
};

/* Write a formatted one-line message into err (if err && errlen), return code. */
int rb_errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---------------------------------------------------------------------------------
 * RoPE frequency schedules (kernels/ref/rope_schedule.c)
 * ------------------------------------------------------------------------------- */
typedef enum {
    RB_ROPE_NONE = 0,
    RB_ROPE_PI,          /* HF "linear": inv_freq / factor */
    RB_ROPE_NTK,         /* NTK-aware static: base * factor^(d/(d-2)) */
    RB_ROPE_DYNAMIC_NTK, /* HF "dynamic" at seq_len = max(seq_len, original_ctx) */
    RB_ROPE_YARN,        /* HF "yarn" */
    RB_ROPE_LLAMA3,      /* HF "llama3" */
    RB_ROPE_LONGROPE,    /* HF "longrope" */
    RB_ROPE_COUNT
} rb_rope_method;

typedef enum { RB_LAYOUT_NEOX = 0, RB_LAYOUT_GPTJ = 1 } rb_rope_layout;

/* Parameters of one schedule. Zero-initialise, then set what applies. */
typedef struct {
    rb_rope_method method;
    int rotary_dim;         /* even, > 0; pairs = rotary_dim / 2 ("dim" in HF) */
    double base;            /* > 1 */
    double factor;          /* >= 1 (ignored by none) */
    int64_t original_ctx;   /* > 0: original_max_position_embeddings */
    int64_t seq_len;        /* dynamic_ntk / longrope: the case's sequence length */
    /* yarn */
    double beta_fast;       /* HF default 32 */
    double beta_slow;       /* HF default 1 */
    int truncate;           /* 1 (HF default): floor/ceil the correction range */
    double mscale;          /* 0 = unset */
    double mscale_all_dim;  /* 0 = unset */
    /* yarn, longrope: > 0 explicit attention factor (wins); <= 0 means "auto" */
    double attention_factor;
    /* llama3 */
    double low_freq_factor;  /* HF default 1 */
    double high_freq_factor; /* HF default 4 */
    /* longrope: rotary_dim/2 entries each; long used when seq_len > original_ctx */
    const double *short_factor;
    const double *long_factor;
} rb_rope_params;

/* Result of a schedule: what was used to build inv_freq, for the record. */
typedef struct {
    double attention_factor; /* multiplies rotated q and k (logits scale by its square) */
    double base_used;        /* effective base (ntk, dynamic_ntk), else base */
    double corr_low;         /* yarn correction range (after truncate), else 0 */
    double corr_high;
} rb_rope_info;

/* rb_rope_schedule: fill inv_freq[0 .. rotary_dim/2) with the method's inverse
 * frequencies, exactly as Hugging Face transformers' modeling_rope_utils defines
 * them but computed in double (HF uses float32 powers). Also reports the attention
 * factor and the effective base in *info (may be NULL).
 * Edge cases: rotary_dim odd or <= 0, base <= 1, factor < 1, original_ctx <= 0,
 * longrope without factor lists, llama3 with high_freq_factor <= low_freq_factor:
 * RB_EINVAL with a message naming the parameter. factor == 1 is allowed and gives
 * the unscaled schedule for pi/ntk/yarn/llama3. */
int rb_rope_schedule(const rb_rope_params *p, double *inv_freq, rb_rope_info *info,
                     char *err, size_t errlen);

/* Canonical lower-case method name ("none", "pi", "ntk", "dynamic_ntk", "yarn",
 * "llama3", "longrope") and its inverse (returns -1 for an unknown name). */
const char *rb_rope_method_name(rb_rope_method m);
int rb_rope_method_parse(const char *name);

/* ---------------------------------------------------------------------------------
 * Exact phases (kernels/ref/rope_phase.c)
 * ------------------------------------------------------------------------------- */

/* rb_rope_phase: the angle pos*inv_freq reduced to [-pi, pi], where the product is
 * taken exactly (inv_freq as the double it is) and 2*pi is carried in three doubles.
 * Error: <= 1e-12 rad for 0 <= pos <= 2^40 and 0 < inv_freq <= 1 (tested against
 * MPFR). pos may be negative. */
double rb_rope_phase(int64_t pos, double inv_freq);

/* rb_rope_apply: rotate n_rows rows of x in place. Row r lives at x + r*row_stride
 * (floats), has global position pos[r], head_dim entries; the first rotary_dim
 * entries are rotated pairwise (layout neox: (i, i+rotary_dim/2), gptj: (2i, 2i+1))
 * by angle rb_rope_phase(pos[r], inv_freq[i]) and multiplied by attention_factor,
 * as HF multiplies cos and sin; entries past rotary_dim pass through unchanged.
 * Arithmetic in double, result rounded to float once. */
void rb_rope_apply(float *x, int64_t n_rows, size_t row_stride, const int64_t *pos,
                   const double *inv_freq, int head_dim, int rotary_dim,
                   rb_rope_layout layout, double attention_factor);

/* ---------------------------------------------------------------------------------
 * Row state and merge (kernels/ref/attn_ref.c)
 *
 * The state of one query row is RB_STATE_STRIDE(d) doubles:
 *   [0] m   running max of scores seen (-inf if no key seen)
 *   [1] l   sum exp(s - m)
 *   [2] u   sum exp(s - m) * (s - m)          (entropy accumulator)
 *   [3..3+d) acc = sum exp(s - m) * v
 * lse = m + log l, entropy H = log l - u / l (nats), output = acc / l.
 * A row that saw no key has m = -inf, l = u = 0, acc = 0.
 * ------------------------------------------------------------------------------- */
#define RB_STATE_STRIDE(d) ((size_t)(d) + 3u)

/* Set n_rows states to the empty state (m = -inf, rest 0). */
void rb_state_init(double *state, int64_t n_rows, int d);

/* rb_state_merge: dst[r] <- merge(dst[r], src[r]) for every row. Rescales both by
 * exp(m_i - max(m_a, m_b)); u picks up the shift l_i*(m_i - M). A side with m = -inf
 * contributes nothing (no NaN). Associative and commutative up to rounding. */
void rb_state_merge(double *dst, const double *src, int64_t n_rows, int d);

/* rb_state_merge_f32: state[row0 + i] <- merge(state[row0 + i], fp32 state i) for
 * i < nrows, where the fp32 state of row i is m[i], l[i], u[i] and acc[i*acc_stride ..
 * + d) (the layout fast kernels keep); same semantics as rb_state_merge, rows with
 * m = -inf are skipped. */
void rb_state_merge_f32(double *state, int64_t row0, int64_t nrows, int d, const float *m,
                        const float *l, const float *u, const float *acc,
                        size_t acc_stride);

/* rb_state_finalize: per row, lse (may be NULL), entropy (NULL ok) and out[d]
 * (NULL ok). A row that saw no key (m = -inf) gets lse = -inf, entropy = 0, out = 0; a
 * NaN state gives NaN lse and entropy (not taken for a row that saw no key). */
void rb_state_finalize(const double *state, int64_t n_rows, int d, double *lse,
                       double *entropy, double *out);

/* ---------------------------------------------------------------------------------
 * Attention tile
 * ------------------------------------------------------------------------------- */

/* Signature of every tile kernel.
 * Inputs: nq rotated query rows q[nq][d] with positions q_pos[nq]; nk rotated key and
 * value rows k[nk][d], v[nk][d] with positions k_pos[nk]. Key n is visible to query m
 * iff k_pos[n] <= q_pos[m]. Scores s = scale * <q_m, k_n>.
 * Effect: state[m] (RB_STATE_STRIDE(d) doubles each) is updated as if every visible
 * key had been appended to the row's online softmax; invisible keys change nothing.
 * A whole tile with min k_pos > max q_pos is skipped before any packing or allocation
 * (rb_attn_tile_masked); one with max k_pos <= min q_pos takes the unmasked path. Positions need not be sorted or contiguous.
 * v may be NULL where the variant says so (rb_kernel_ops.v_optional): the softmax state
 * (m, l, u, hence lse and entropy) is then updated exactly as with any v, and acc is
 * not accumulated (its values are unspecified), for callers that need no outputs.
 * Inputs are taken to be finite. A key whose score is -inf (weight 0) changes nothing.
 * Range: the reference forms scores in double and takes any finite score; the fp32
 * variants (blas, avx512, avx512_bf16) form them in float (avx512 and the bf16 probe
 * path in units of log2(e), blas and the bf16 row path in nats) and subtract a row's
 * running maximum from them, so they need every difference of two scores of a row in
 * float's range, in those units: |s| < FLT_MAX / (2 * 1.4427), about 1.18e38; past it
 * a row may read NaN entropy or as having seen no key. The study never comes near (the
 * file dataset refuses inputs whose scores would leave float's range).
 * nq == 0 or nk == 0 is a no-op. Returns 0, or RB_ENOMEM. */
typedef int (*rb_attn_tile_fn)(const float *q, const int64_t *q_pos, int64_t nq,
                               const float *k, const float *v, const int64_t *k_pos,
                               int64_t nk, int d, double scale, double *state);

/* rb_attn_tile_masked: 1 when no key of the tile is visible to any of its rows (min
 * k_pos > max q_pos), so that a tile kernel returns before any work; 0 otherwise, and
 * for nq or nk <= 0. One pass over both position arrays. */
int rb_attn_tile_masked(const int64_t *q_pos, int64_t nq, const int64_t *k_pos, int64_t nk);

/* rb_attn_dot: <q, k> over d dims in double, in the reference tile's order: four
 * partial sums over the dims j mod 4 (the last d mod 4 dims into the first), combined
 * as (s0 + s1) + (s2 + s3). A score is scale times it; rb_attn_tile_ref and
 * rb_probe_metrics_accumulate form their scores exactly so (bit for bit), so a caller
 * that needs one score (e.g. needle_s) should use this. d <= 0 gives 0. */
double rb_attn_dot(const float *q, const float *k, int d);

/* The portable reference: scores in double, per-row two-pass softmax over the
 * visible keys of the tile, then merged into state. */
int rb_attn_tile_ref(const float *q, const int64_t *q_pos, int64_t nq, const float *k,
                     const float *v, const int64_t *k_pos, int64_t nk, int d,
                     double scale, double *state);

/* ---------------------------------------------------------------------------------
 * Kernel dispatch (kernels/dispatch.c)
 * ------------------------------------------------------------------------------- */
typedef struct {
    char vendor[16];
    char model[64];     /* brand string, trimmed */
    int avx2, fma;
    int avx512f, avx512bw, avx512vl, avx512dq, avx512_bf16;
    int os_zmm;         /* XCR0 has opmask, ZMM_Hi256 and Hi16_ZMM state enabled */
} rb_cpu_info;

/* Fill *ci from cpuid + xgetbv. Never fails; unknown fields stay 0.
 *
 * Test hook (tests only, README): ROPEBENCH_TEST_CPU_HIDE=name[,name...] clears the
 * named fields afterwards, as on a CPU or OS without them: avx2, fma, avx512f,
 * avx512bw, avx512vl, avx512dq, avx512_bf16, os_zmm (the OS not saving ZMM state).
 * Every choice made from this function (the kernel, the RoPE, metrics and dataset
 * helpers, the peak probes) then falls back as it would there, which this CPU could
 * not otherwise show. Unknown names are ignored here: rb_cpu_hide_check finds them
 * for the command line to refuse. */
void rb_cpu_detect(rb_cpu_info *ci);

/* rb_cpu_hide_check: the offset in `list` (a ROPEBENCH_TEST_CPU_HIDE value, NULL
 * allowed) of its first name that rb_cpu_detect does not know, its length in *len; or
 * (size_t)-1 when every name is known (empty names between commas count as known). */
size_t rb_cpu_hide_check(const char *list, size_t *len);

/* rb_cpu_avx512_usable: 1 when *ci has AVX-512 F, BW, VL and DQ and the OS saves ZMM
 * state: what every AVX-512 build in kernels/ and datasets/avx512/ needs (they are
 * compiled with all four), so every choice of such a build asks this. */
int rb_cpu_avx512_usable(const rb_cpu_info *ci);

/* Signature of every RoPE application variant: the contract of rb_rope_apply, except
 * that a fast variant may form the angle otherwise than as one rounding of
 * rb_rope_phase(pos, f): rb_rope_apply_avx512 generates it by a recurrence within
 * 1e-12 rad of it up to position 2^32 (kernels/avx512/rb_avx512.h), far below the float
 * output's rounding. */
typedef void (*rb_rope_apply_fn)(float *x, int64_t n_rows, size_t row_stride,
                                 const int64_t *pos, const double *inv_freq, int head_dim,
                                 int rotary_dim, rb_rope_layout layout,
                                 double attention_factor);

/* rb_kernels_rope_fast: the fastest RoPE application variant this build and CPU can
 * run (cpuid + xgetbv, as the kernel dispatch checks), its name in *name (name may be
 * NULL): rb_rope_apply_avx512 as "avx512" where AVX-512 F/BW/VL/DQ are there and the OS
 * saves ZMM state, else the reference rb_rope_apply as "ref". ROPEBENCH_ISA is not
 * read (`ropebench bench` pairs the reference with it whatever tile kernels it
 * measures). */
rb_rope_apply_fn rb_kernels_rope_fast(const char **name);

typedef struct {
    const char *name;        /* "ref", "blas", "avx512", "avx512_bf16" (recorded) */
    rb_attn_tile_fn tile;
    const char *dtype;       /* "fp32" or "bf16": the arithmetic of the tile */
    rb_rope_apply_fn rope;   /* RoPE application that goes with it */
    const char *detail;      /* how it computes on this CPU, for the record */
    int v_optional;          /* 1: tile accepts v = NULL (softmax state only) */
    /* the tile contract for probe rows (few query rows against a rank's keys, called
     * by rb_probe_attention): each pair scored by one code path in every call, however
     * few keys a call has, so that probe rows split over ranks and balanced-in keys
     * agree with one rank to the merges' rounding; NULL: tile serves */
    rb_attn_tile_fn probe;
} rb_kernel_ops;

/* rb_kernels_select: choose the tile kernel for fp32 studies; same as
 * rb_kernels_select_dtype(override, "fp32", ...). */
int rb_kernels_select(const char *override, rb_kernel_ops *ops, const char **reason,
                      char *err, size_t errlen);

/* rb_kernels_select_dtype: choose the kernel. override is the value of ROPEBENCH_ISA
 * (NULL or "" = best available for dtype). Known names: ref, blas, avx512,
 * avx512_bf16. dtype "fp32" chooses among ref/blas/avx512, "bf16" needs avx512_bf16.
 * An unknown name, one not built or not supported by this CPU (no AVX-512 or no OS
 * ZMM state), or one whose dtype differs from the study's, is RB_EUNSUPPORTED with a
 * message that lists what is available. *reason (may be NULL) receives a short
 * static string explaining the choice, for the log. */
int rb_kernels_select_dtype(const char *override, const char *dtype, rb_kernel_ops *ops,
                            const char **reason, char *err, size_t errlen);

/* rb_kernels_helpers_avx512: 1 when the helper kernels that have an AVX-512 build
 * (rb_probe_metrics_accumulate, rb_rope_apply_fp32phase) run it: the CPU and OS allow
 * AVX-512F/BW/VL/DQ with ZMM state and ROPEBENCH_ISA is not "ref"; else 0 and they run
 * their portable code. The CPU is probed once per process, the variable read on every
 * call. */
int rb_kernels_helpers_avx512(void);

/* rb_kernels_alloc: `bytes` of memory at a 64-byte boundary (0 bytes: a valid block
 * all the same, as malloc(0) may give), for the q, k
 * and v arrays handed to the kernels: the fp32 kernel reads the key and value rows of a
 * probe's sparse blocks in place when they are 64-byte aligned (and copies them when
 * not), and no load of a row of 16k floats then splits a cache line. Blocks of 64 KiB
 * and more start a page; blocks of RB_HUGE_MIN bytes and more start a 2 MiB boundary
 * and, on Linux, ask for transparent huge pages (madvise MADV_HUGEPAGE; a hint the
 * system may ignore, see rb_kernels_hugepages) unless ROPEBENCH_HUGEPAGES=0. The
 * STREAM triad (rb_triad_gbps) allocates through here too, so that a kernel's fraction
 * of it compares like with like. Release with free(). NULL if out of memory. */
void *rb_kernels_alloc(size_t bytes);

/* rb_kernels_scratch_take: a block of at least `bytes` (rb_kernels_alloc's alignment
 * and huge pages) for one kernel call's scratch (packed K and V, row states); *got
 * receives its usable size in bytes (>= bytes). It is the block an earlier call gave
 * back (rb_kernels_scratch_give) when that is large enough, its pages already faulted
 * in, else a new one. Why: a fresh block of megabytes per call is faulted in page by
 * page on every call (glibc unmaps or trims blocks that large when they are freed; how
 * often depends on what the process allocated before). On the 2-vCPU Zen 5 VM of
 * 2026-12-04 the fp32 kernel's packing of K and V for a causal L = 16384, d = 128 call
 * (16 MiB) took 47 ms of its 0.43 s that way (docs/kernels.md, Scratch). Contents are
 * undefined. Several threads may take blocks at once; each gets its own. NULL (and
 * *got = 0) if out of memory. */
void *rb_kernels_scratch_take(size_t bytes, size_t *got);

/* rb_kernels_scratch_give: the end of a call's use of a block from
 * rb_kernels_scratch_take (p NULL: nothing; bytes: its *got). One block is kept for
 * the next call, the largest given back; the process holds it until
 * rb_kernels_scratch_release (a live pointer, not a leak, to a leak checker). */
void rb_kernels_scratch_give(void *p, size_t bytes);

/* rb_kernels_scratch_release: free the kept block (none kept: nothing). For a process
 * that is done with the kernels, or that wants the memory back between phases. */
void rb_kernels_scratch_release(void);

/* RB_HUGE_MIN: the smallest block rb_kernels_alloc asks huge pages for (4 MiB). */
#define RB_HUGE_MIN ((size_t)4 << 20)

/* rb_kernels_hugepages: what rb_kernels_alloc does about huge pages, for the log and
 * the bench's header, given the system's setting: the text of
 * /sys/kernel/mm/transparent_hugepage/enabled, whose bracketed word ("[always]",
 * "[madvise]" or "[never]") is the mode in force (NULL or no such word: unknown; the
 * caller reads the file, kernels/ reads none). A static string: "madvise" (asked for,
 * and the system allows it: "always" or "madvise"), "always" (the system gives them
 * unasked: ROPEBENCH_HUGEPAGES=0 cannot turn them off), "off (ROPEBENCH_HUGEPAGES=0)",
 * "off (system: never)" or "unsupported" (not Linux, or the setting unknown). The
 * environment is read on every call. */
const char *rb_kernels_hugepages(const char *setting);

/* Threads the tile and RoPE kernels use (OpenMP): the requested count capped by
 * OMP_THREAD_LIMIT, i.e. what a parallel region gets (with OMP_DYNAMIC=true a region may
 * still get fewer, which the kernels handle); 1 in a build without OpenMP. */
int rb_kernels_threads(void);
/* Set it (n >= 1); no effect without OpenMP. */
void rb_kernels_set_threads(int n);
/* The most threads a parallel region can get: OMP_THREAD_LIMIT (OpenMP's default for
 * it is INT_MAX), 1 in a build without OpenMP. */
int rb_kernels_thread_limit(void);

/* ---------------------------------------------------------------------------------
 * Machine peaks (kernels/peak.c): what benchmark figures are given as fractions of.
 * ------------------------------------------------------------------------------- */

/* rb_peak_fma_gflops: fp32 FMA throughput in GFLOP/s (an FMA counts 2 FLOP), summed
 * over `threads` OpenMP threads (<= 0: all, i.e. rb_kernels_threads()). Each thread
 * runs independent FMA chains -- 12 zmm accumulators with AVX-512 when the CPU and OS
 * allow it, else 12 ymm accumulators with AVX2 and FMA, otherwise a plain-C loop the
 * compiler vectorizes as far as its flags allow (rb_peak_fma_isa says which) -- for a
 * warm-up of 0.1*seconds, then for `seconds` (<= 0: 0.2 s) in 8 windows that all
 * threads start together and that end when the last thread is done; the result is the
 * best window's FLOP of all threads over its wall time (so a time slice lost to another
 * process lowers one window, not the peak, and more threads than cores cannot read
 * more than the cores do). No memory traffic; never fails. */
double rb_peak_fma_gflops(int threads, double seconds);
/* rb_peak_fma_isa: the loop rb_peak_fma_gflops runs on this CPU (after
 * ROPEBENCH_TEST_CPU_HIDE): "avx512", "avx2+fma" or "c". */
const char *rb_peak_fma_isa(void);

/* rb_tile_ceiling_gflops: fp32 GFLOP/s of the avx512 kernel's register tiles alone on
 * the calling thread -- QK^T of 12 query rows x 64 keys and PV of 12 rows x 128 dims
 * over 64 keys, head_dim 128, no softmax, no memory traffic: 79 KiB in all (each
 * product's operands, 41 KiB, fit a 48 KiB L1 but not a 32 KiB one; the two evict each
 * other, so part comes from L2) -- timed like rb_peak_fma_gflops (warm-up
 * 0.1*seconds, then the best of 8 windows over `seconds`; <= 0: 0.2 s). It is what the
 * fused kernel could reach if the softmax, the packing and the loads from memory cost
 * nothing, so it separates the register kernel's own limit (loads and broadcasts issued
 * next to the FMAs) from the rest. -1 where the avx512 kernel is not built or the
 * CPU/OS cannot run it. */
double rb_tile_ceiling_gflops(double seconds);

/* rb_peak_dpbf16_gflops: the bf16 dot-product peak of the calling thread: 12
 * independent VDPBF16PS chains (64 FLOP per instruction: 16 lanes, 2 products and 2
 * adds each), no memory traffic, timed like rb_peak_fma_gflops (warm-up 0.1*seconds,
 * then the best of 8 windows over `seconds`; <= 0: 0.2 s). What the bf16 kernels'
 * VDPBF16PS products can reach at most; it need not be twice the FMA peak (a core may
 * retire VDPBF16PS more slowly than FMAs). -1 where the CPU or OS cannot run AVX512_BF16. */
double rb_peak_dpbf16_gflops(double seconds);

/* rb_triad_gbps: STREAM triad a[i] = b[i] + s*c[i] over three double arrays of
 * bytes_per_array bytes each (choose >> last-level cache), first-touched in parallel by
 * `threads` OpenMP threads (<= 0: all), one warm-up pass then the best of 5; counts
 * 24 bytes per element as STREAM does (no write-allocate traffic). Returns GB/s
 * (1e9 bytes/s), or -1 if bytes_per_array < 8 KiB or the arrays cannot be allocated. */
double rb_triad_gbps(int threads, size_t bytes_per_array);

/* rb_overlap_probe: how much of a memory stream this machine hides under arithmetic on
 * `threads` OpenMP threads (<= 0: all), an estimate of the probe rows' ideal: two
 * arrays (K and V) of bytes_per_array bytes (rounded down to whole blocks of 64 x 128
 * floats, 32 KiB), first-touched in parallel, each thread reading a contiguous share of
 * the blocks once, and `flop` FLOP of fp32 FMA chains (the FMA probe's: 12 zmm chains
 * with AVX-512, 12 ymm chains with AVX2 and FMA, plain C otherwise; 1,536 FLOP a unit)
 * spread evenly over the blocks.
 * Three passes, each one warm-up then the best of 4: out[0] the arithmetic alone (the
 * reads going to the thread's first block, in cache), out[1] the stream alone (each
 * block summed, no FMA), out[2] both: a block's FMA units with, spread evenly between
 * them, the prefetches into L2 (PREFETCHT1, as the kernels' block cursor asks for its
 * blocks: kernels/avx512/rb_pf.h) of the block two ahead and the reads of the block.
 * Seconds, wall time of all threads. out[2] against out[0] + out[1] is what the
 * machine overlaps; bytes / out[2] is about the stream rate a kernel doing that
 * arithmetic at out[0]'s rate (near the FMA peak) and no other work could reach.
 * Returns 0, or -1 (out untouched) when bytes_per_array is under one block, flop is
 * negative, NaN or above 1e18, or the arrays cannot be allocated. */
int rb_overlap_probe(int threads, size_t bytes_per_array, double flop, double out[3]);

/* rb_overlap_block_c: one block of rb_overlap_probe on a CPU without usable AVX-512,
 * AVX2 or FMA (the contract of rb_overlap_block_avx512, kernels/avx512/rb_peak.h, in
 * plain C; rb_overlap_block_avx2 there where the CPU has AVX2 and FMA):
 * `units` units of arithmetic, each the portable FMA probe's loop run 6 iterations (8
 * chains of 16 floats, x = x * 0.999999 + 1e-7 from x = 1 + chain + lane, 1,536 FLOP),
 * with, spread evenly between the units, prefetches of `lines` 64-byte lines from pk and
 * pv (skipped when pk is NULL) and reads of the n floats of k and of v in chunks of 16
 * (n a multiple of 16; what is left after the last unit, all of it for units = 0).
 * Returns the sum of every unit's 128 chain values and of every float of k and v
 * (float sums in 16 lanes, then double), so that no work can be optimised away.
 * Exposed for its test (tests/test_overlap_c.c). */
double rb_overlap_block_c(int64_t units, const char *pk, const char *pv, int64_t lines,
                          const float *k, const float *v, int64_t n);

/* rb_probe_profile: where the AVX-512 kernels' key-outer (probe) order spends its time,
 * by class of key block. Class c holds the blocks of 64 keys (fewer for a call's last)
 * that n query rows see, 2^c <= n < 2^(c+1), the last class every n from
 * 2^(RB_PROF_CLASSES-1) up; n counts the rows at or after the block's first key position,
 * so a row whose position falls inside the block counts (its later keys masked) and
 * blocks no row sees are not there. Per class: blocks, keys and pairs (n times the
 * block's keys: the pairs computed, masked ones included), and time-stamp counter ticks
 * (rdtsc), summed over the threads: `ticks` for the whole of each block's work (its
 * positions, its packing or copying, the prefetch schedule and the three phases), of
 * which `ticks_qk` the scores (with the L1 prefetch of K rows read in place),
 * `ticks_softmax` the softmax and `ticks_pv` PV (with the L1 prefetch of V rows read in
 * place). call_ticks and call_s: the calling thread's ticks and wall seconds
 * (CLOCK_MONOTONIC) from the start of each key-outer pass to the end of its merges,
 * summed over the calls recorded (call_count), so that call_s / call_ticks converts
 * ticks to seconds. */
#define RB_PROF_CLASSES 12
typedef struct {
    int64_t blocks[RB_PROF_CLASSES], keys[RB_PROF_CLASSES], pairs[RB_PROF_CLASSES];
    uint64_t ticks[RB_PROF_CLASSES], ticks_qk[RB_PROF_CLASSES],
        ticks_softmax[RB_PROF_CLASSES], ticks_pv[RB_PROF_CLASSES];
    uint64_t call_ticks;
    double call_s;
    int64_t call_count;
} rb_probe_profile;

/* RB_PROBE_ROWS_MAX: the most query rows for which the AVX-512 kernels' probe forms
 * take the key-outer order (K and V streamed once for all rows) whatever the keys; more
 * rows take their row order. */
#define RB_PROBE_ROWS_MAX 2048

/* rb_probe_profile_set: the calls of the AVX-512 kernels that take the key-outer order
 * (rb_attn_tile_avx512 and the avx512_bf16 kernel on few rows against many keys, their
 * probe forms on up to 2,048 rows whatever the keys) add to *p from now on; NULL stops
 * it. The caller zeroes *p first. One profile per process: not for calls running
 * concurrently from several threads of the caller. The timers cost six rdtsc per block
 * (16,384 blocks at 1M keys) and are not read at all when no profile is set. Returns 1 when this build has the AVX-512
 * kernels (the only ones that record), else 0 (nothing set). */
int rb_probe_profile_set(rb_probe_profile *p);

/* ---------------------------------------------------------------------------------
 * Metrics (kernels/ref/metrics_phase.c: analytic; kernels/ref/metrics_probe.c:
 * data-driven). Notation: theta_j = inv_freq_base[j], theta'_j = inv_freq[j],
 * np = rotary_dim/2 pairs, L0 = original_ctx, L = seq_len. docs/metrics.md has the
 * formulas.
 * ------------------------------------------------------------------------------- */

/* Distance bins shared by every by-distance metric: edges[0] = 0, edges[1] = 1, then
 * log-spaced integers up to edges[n] = L (duplicates dropped), bin b = distances
 * [edges[b], edges[b+1]). Writes at most nbins+1 edges; returns the number of bins n
 * (<= nbins), or RB_EINVAL if L < 2 or nbins < 2. */
int rb_metrics_bins(int64_t L, int nbins, int64_t *edges);

/* YaRN frequency bands of the base schedule: band[j] = 0 (high: wavelength 2*pi/theta_j
 * < L0/beta_fast), 2 (low: wavelength > L0/beta_slow), 1 (mid) otherwise. */
void rb_metrics_bands(const double *inv_freq_base, int np, int64_t L0, double beta_fast,
                      double beta_slow, int *band);

/* Per-pair phase table: trained_span[j] = theta_j (L0-1), max_phase[j] =
 * theta'_j (L-1) (both not reduced), turns[j] = max_phase/2pi, ood[j] = trained_span <
 * 2pi && max_phase > trained_span; each output may be NULL. Returns the critical pair
 * (first j with trained_span < 2pi; np if none), or RB_EINVAL if np < 1, L0 < 1, L < 1
 * or an input is NULL. */
int rb_metrics_phase_pairs(const double *inv_freq_base, const double *inv_freq, int np,
                           int64_t L0, int64_t L, double *trained_span, double *max_phase,
                           double *turns, int *ood);

/* Phase distance to the trained set at distances delta[0..nd): D = min over trained
 * distances 0 <= t < L0 of sqrt(sum_j w_j wrap(theta'_j delta - theta_j t)^2 / sum_j
 * w_j), wrap to [-pi, pi], weights w_j >= 0 (E[rho_j] from the data); D_band[b*nd+i]
 * the same restricted to the pairs of band b and minimised on its own (NaN if the band
 * has no pair or no weight); ood_count[i] / ood_energy[i] the count- and w-weighted
 * fraction of pairs with trained_span < 2pi and theta'_j delta > trained_span.
 * delta may be non-integer (0 <= delta <= 2^53; n + f is phased as n exactly plus f
 * theta). Phases are exact; D is the exact-phase value at a minimising t (so 0 exactly
 * when a trained t matches). Outputs may be NULL (D_band needs band). OpenMP over the
 * distances; O(nd L0 np). RB_EINVAL on bad sizes, negative or non-finite weights, a
 * zero weight sum, a band outside 0..2 or a bad delta; RB_ENOMEM. */
int rb_metrics_phase_distance(const double *inv_freq_base, const double *inv_freq,
                              const double *w, const int *band, int np, int64_t L0,
                              const double *delta, int nd, double *D, double *D_band,
                              double *ood_count, double *ood_energy, char *err,
                              size_t errlen);

/* Where D counts as 0 (rad): the report's and the results file's threshold. */
#define RB_METRICS_D_ZERO_TOL 1e-9

/* rb_metrics_D_leaves_zero: the first integer distance delta in [1, max_delta] at which
 * D(delta) of rb_metrics_phase_distance (same pairs, weights and L0) exceeds tol, into
 * *first; -1 when D <= tol at every one of them (max_delta < 1: -1). Where D is what
 * the bins of phase/by_distance sample, this is the exact place it leaves 0. Each delta
 * first tries the trained distances t = delta and t = round(delta theta'_k / theta_k)
 * (k the first pair with weight): if either is within tol, D is too (D is a minimum
 * over t); only a delta that both miss gets the full O(L0 np) minimisation, so a
 * schedule that leaves 0 at delta costs O(delta np) plus one full evaluation. tol >= 0.
 * Errors as rb_metrics_phase_distance (RB_EINVAL, RB_ENOMEM), *first = -1. */
int rb_metrics_D_leaves_zero(const double *inv_freq_base, const double *inv_freq,
                             const double *w, int np, int64_t L0, int64_t max_delta,
                             double tol, int64_t *first, char *err, size_t errlen);

/* Long-range decay bounds at distances delta[0..nd): roformer[i] = (1/np) sum_{i=1..np}
 * |S_i|, S_i = sum_{k<i} exp(1i delta theta'_k) ((np+1)/2 at delta 0); B[i] =
 * sum_j cos(delta theta'_j). Exact phases; delta as in rb_metrics_phase_distance;
 * either output may be NULL; np < 1 or nd < 1 does nothing.
 * rb_metrics_first_negative_B: the first integer delta in [1, max_delta] with
 * B(delta) < 0, or -1 if none (or np outside 1..4096). O(np) per delta scanned. */
void rb_metrics_decay_bounds(const double *inv_freq, int np, const double *delta, int nd,
                             double *roformer, double *B);
int64_t rb_metrics_first_negative_B(const double *inv_freq, int np, int64_t max_delta);

/* rb_metrics_needle_haystack_rank: a needle's rank against the haystack. rank[i] is
 * needle i's rank among every key its query sees (1 + the keys other than itself with
 * a larger score: rb_probe_metrics' needle_above + 1), so a query that looks for
 * several needles finds them competing with each other: with five copies of one key at
 * five distances, only the nearest can ever rank 1. out[i] takes out of rank[i] the
 * needles of the same head and query, at a position other than needle i's, whose score
 * is larger than score[i] (each such position once): the rank among the keys that are
 * not the query's needles. All arrays have n entries, one per (head, needle), as the
 * `needles` table stores them (positions and heads as doubles); score[j] must be the
 * score the accumulator gave the key at needle_pos[j] (rb_probe_metrics' needle_s,
 * which is formed bit for bit so). out may not alias the inputs. n <= 0 does nothing.
 * A (head, query) with more than RB_NEEDLE_GROUP_MAX entries (ropebench plants at most
 * 64 needles; a table read from someone's file may claim anything) gets NaN, so the
 * work stays O(n log n + n g) for g <= RB_NEEDLE_GROUP_MAX needles per query.
 * Returns RB_OK, or RB_ENOMEM (out unset). */
#define RB_NEEDLE_GROUP_MAX 1024
int rb_metrics_needle_haystack_rank(int64_t n, const double *head, const double *query_pos,
                                    const double *needle_pos, const double *score,
                                    const double *rank, double *out);

/* Data-driven probe metrics: accumulators filled by rb_probe_metrics_accumulate over
 * (probe row, visible key) pairs, after the attention pass gave each row its final
 * lse. Every array is caller-owned and zeroed (or set as noted) before the first call;
 * calls over disjoint key sets (ranks, blocks) add up: sums add, mins take the min,
 * maxes the max, so ranks combine with MPI_SUM / MPI_MIN / MPI_MAX.
 * Pair j's contribution to a score is c_j = scale * (q_a k_a + q_b k_b) over the
 * pair's two dims (layout as in rb_rope_apply); s = sum_j c_j (+ pass-through dims). */
typedef struct {
    /* shape */
    int d, rotary_dim;
    rb_rope_layout layout;
    int nbins;
    const int64_t *edges;  /* rb_metrics_bins: distance = q_pos - k_pos */
    /* score decay by distance [nbins] */
    double *count, *sum_s, *sum_s2;
    /* attention share by distance: share_num[b*np + j] = sum p c_j, share_den[b] =
     * sum p, p = exp(s - lse_row) rounded to float (relative change <= 2^-24, so that
     * p times a key element is exact in double), pairs with p < 1e-30 left out
     * ([nbins * np], [nbins]); NULL to skip */
    double *share_num, *share_den;
    /* per probe row [nq]: smallest score (init +inf), largest |score| (init 0),
     * visible keys counted (init 0) */
    double *row_min_s, *row_max_abs_s, *row_count;
    /* per-pair amplitude sums for E[rho_j] over all (row, key) pairs [np] (NULL ok):
     * rho_sum[j] += |q_pair j| |k_pair j| */
    double *rho_sum;
    /* needles: needle i is the key at needle_key_pos[i] looked for by probe row
     * needle_row[i] (an index into the call's rows); needle_s[i] (input) is its score,
     * scale * rb_attn_dot(q row, needle key row, d), computed by the caller from the
     * needle's key row (any rank can generate it);
     * needle_above[i] += visible keys of that row, other than the needle, whose score
     * is larger: rank = needle_above + 1 */
    int n_needles;
    const int64_t *needle_key_pos;
    const int64_t *needle_row;
    const double *needle_s;
    double *needle_above;
} rb_probe_metrics;

/* rb_probe_metrics_accumulate: for each probe row m (rotated q[m], position q_pos[m],
 * final lse[m] of the row over ALL keys) and each visible key n of this call (rotated
 * k[n], position k_pos[n] <= q_pos[m]): add to the accumulators above. Scores in
 * double from the fp32 inputs (as the reference tile). OpenMP over rows or keys; the
 * result does not depend on the thread count beyond rounding of sums.
 * Returns RB_OK, RB_EINVAL or RB_ENOMEM. */
int rb_probe_metrics_accumulate(const float *q, const int64_t *q_pos, const double *lse,
                                int64_t nq, const float *k, const int64_t *k_pos,
                                int64_t nk, double scale, rb_probe_metrics *m,
                                char *err, size_t errlen);

/* rb_rope_apply_fp32phase: RoPE as widely used fp32 code does it: angle =
 * (float)pos * (float)inv_freq in float, cos and sin of that float angle rounded to
 * float and times (float)attention_factor, rotation x1 c - x2 s, x2 c + x1 s in float;
 * same layout and attention-factor semantics as rb_rope_apply. For the phase-precision
 * metric. Runs rb_rope_apply_fp32phase_ref, or the AVX-512 build (kernels/avx512/
 * rope_avx512.c) where rb_kernels_helpers_avx512() says so: the same float angles and
 * the same float rotation, cos/sin from a double polynomial rounded to float instead of
 * libm's cosf/sinf (within 1 ulp of them; tests/test_metrics_probe.c compares the two).
 * src: NULL or x, the rows are rotated in place; else the rows are read from src (same
 * row_stride, not modified, not overlapping x) and written to x, the first head_dim
 * floats of each row (pass-through dims copied, floats past head_dim not written), bit
 * for bit what the in-place call on a copy gives, without the copy's pass over memory. */
void rb_rope_apply_fp32phase(float *x, const float *src, int64_t n_rows, size_t row_stride,
                             const int64_t *pos, const double *inv_freq, int head_dim,
                             int rotary_dim, rb_rope_layout layout,
                             double attention_factor);

/* rb_rope_apply_fp32phase_ref: the portable version, cosf/sinf from libm per element. */
void rb_rope_apply_fp32phase_ref(float *x, const float *src, int64_t n_rows, size_t row_stride,
                                 const int64_t *pos, const double *inv_freq, int head_dim,
                                 int rotary_dim, rb_rope_layout layout,
                                 double attention_factor);

/* rb_metrics_precision: the phase-precision effect on probe rows (metric 7), isolated
 * from every other rounding: q rows (pre-RoPE, qpre[nq][d], positions q_pos) and a
 * sample of keys (pre-RoPE, kpre[nk][d], positions k_pos) are rotated in double twice,
 * with the exact phases (rb_rope_phase) and with the phases common fp32 code forms,
 * (float)pos * (float)inv_freq in float (then converted to double); scores
 * s = scale * <q, k> over the rotated dims and pass-through dims, in double.
 * Per row m: phase_err_max[m] = max_j |wrap(phi_fp32 - phi_exact)| at q_pos[m] and
 * phase_err_mean[m] = the mean of the same np terms (pairs j < rotary_dim/2, summed in
 * order j = 0, 1, ...; they depend on the position alone, not on the keys);
 * score_err_max[m] = max over visible sampled keys of |s_fp32 - s_exact|;
 * bound_ratio_max[m] = max over those keys of |s_fp32 - s_exact| /
 * (2 sin(eps/2) * sum_j rho_j), eps = max_j |relative phase perturbation| of the pair
 * (q's minus k's, wrapped), rho_j = scale * |q_j||k_j| (pair norms, attention factor
 * included); a change within 64 double ulps of the terms counts as ratio 0. Rows without a
 * visible sampled key get 0 for the score fields. Returns RB_OK or RB_ENOMEM. */
int rb_metrics_precision(const float *qpre, const int64_t *q_pos, int64_t nq,
                         const float *kpre, const int64_t *k_pos, int64_t nk,
                         const double *inv_freq, int d, int rotary_dim,
                         rb_rope_layout layout, double attention_factor, double scale,
                         double *phase_err_max, double *phase_err_mean,
                         double *score_err_max, double *bound_ratio_max);

#ifdef __cplusplus
}
#endif
#endif
