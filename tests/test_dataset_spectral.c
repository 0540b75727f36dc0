/* test_dataset_spectral.c — the spectral dataset: determinism, shards equal to one-rank
 * generation, the kappa=1 phase/score law, uniform phases at kappa=0, the profiles. */
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_datasets.h"
#include "rb_kernels.h"
#include "rb_mpi.h"
#include "rb_test.h"

static const double PI = 3.14159265358979323846;

static double wrap(double x) { return remainder(x, 2 * PI); }

static void spec(rb_dataset *ds, int d, int rd, rb_rope_layout lay, rb_spectral_profile p,
                 double kappa) {
    memset(ds, 0, sizeof *ds);
    ds->kind = RB_DATA_SPECTRAL;
    ds->seed = 0x5eed5eedull;
    ds->head_dim = d;
    ds->rotary_dim = rd;
    ds->layout = lay;
    ds->profile = p;
    ds->coherence = kappa;
}

/* dims of pair j */
static void pair_dims(const rb_dataset *ds, int j, int *a, int *b) {
    int np = ds->rotary_dim / 2;
    *a = ds->layout == RB_LAYOUT_GPTJ ? 2 * j : j;
    *b = ds->layout == RB_LAYOUT_GPTJ ? 2 * j + 1 : j + np;
}

/* every rank's shard equals rank 0's one-call generation (as test_dataset_mpi) */
static void test_shards(int rank, int N) {
    const int d = 40;
    const int64_t L = 2 * (int64_t)N * 24;
    const rb_shard_layout layouts[] = {RB_SHARD_CONTIGUOUS, RB_SHARD_ZIGZAG,
                                       RB_SHARD_STRIPED};
    int64_t *all = malloc((size_t)L * sizeof *all), *pos = malloc((size_t)L * sizeof *pos);
    float *ref = malloc((size_t)L * d * sizeof(float)),
          *mine = malloc((size_t)L * d * sizeof(float));
    float *got = malloc((size_t)L * d * sizeof(float));
    char err[256];
    for (int64_t g = 0; g < L; g++)
        all[g] = g;
    for (int li = 0; li < 3; li++)
        for (int lay = 0; lay < 2; lay++)
            for (int t = 0; t < 3; t++) {
                rb_dataset ds;
                spec(&ds, d, 32, (rb_rope_layout)lay, RB_SPECTRAL_LOW, 0.5);
                int64_t n = rb_shard_local_count(layouts[li], L, N);
                for (int64_t i = 0; i < n; i++)
                    pos[i] = rb_shard_global(layouts[li], L, N, rank, i);
                int rc =
                    rb_dataset_fill(&ds, (rb_tensor)t, 3, pos, n, mine, err, sizeof err);
                MPI_Gather(mine, (int)(n * d), MPI_FLOAT, got, (int)(n * d), MPI_FLOAT, 0,
                           MPI_COMM_WORLD);
                if (rank != 0)
                    continue;
                rc |= rb_dataset_fill(&ds, (rb_tensor)t, 3, all, L, ref, err, sizeof err);
                int bad = rc != RB_OK;
                for (int r = 0; r < N && !bad; r++)
                    for (int64_t i = 0; i < n && !bad; i++) {
                        int64_t g = rb_shard_global(layouts[li], L, N, r, i);
                        if (memcmp(got + ((size_t)r * n + i) * d, ref + (size_t)g * d,
                                   d * sizeof(float))) {
                            bad = 1;
                            printf("  layout %s ranks %d pair layout %d tensor %d: rank %d "
                                   "position %lld differs\n",
                                   rb_shard_layout_name(layouts[li]), N, lay, t, r,
                                   (long long)g);
                        }
                    }
                check(!bad,
                      "shard == one-rank generation (layout %s, %d ranks, pairs %s, "
                      "tensor %d)",
                      rb_shard_layout_name(layouts[li]), N, lay ? "gptj" : "neox", t);
            }
    free(all);
    free(pos);
    free(ref);
    free(mine);
    free(got);
}

/* rank 0 only: determinism, kappa laws, profiles, errors */
static void test_serial(void) {
    char err[256];
    const int d = 64, rd = 48, np = rd / 2;
    enum { NPOS = 4096 };
    int64_t *pos = malloc(NPOS * sizeof *pos), *rev = malloc(NPOS * sizeof *rev);
    float *a = malloc((size_t)NPOS * d * sizeof(float)),
          *b = malloc((size_t)NPOS * d * sizeof(float));
    float *k = malloc((size_t)NPOS * d * sizeof(float)),
          *g = malloc((size_t)NPOS * d * sizeof(float));
    for (int i = 0; i < NPOS; i++) {
        pos[i] = (int64_t)i * 7919 + (i % 3) * 1000003; /* spread up to ~3.2e7 */
        rev[NPOS - 1 - i] = pos[i];
    }

    for (int lay = 0; lay < 2; lay++) {
        const char *ln = lay ? "gptj" : "neox";
        rb_dataset ds, gs;
        /* determinism and order independence */
        spec(&ds, d, rd, (rb_rope_layout)lay, RB_SPECTRAL_LOW, 0.3);
        int rc = rb_dataset_fill(&ds, RB_TENSOR_Q, 2, pos, NPOS, a, err, sizeof err);
        rc |= rb_dataset_fill(&ds, RB_TENSOR_Q, 2, pos, NPOS, b, err, sizeof err);
        check(rc == RB_OK && !memcmp(a, b, (size_t)NPOS * d * sizeof(float)),
              "%s: two calls give identical rows", ln);
        rc = rb_dataset_fill(&ds, RB_TENSOR_Q, 2, rev, NPOS, b, err, sizeof err);
        int same = rc == RB_OK;
        for (int i = 0; i < NPOS && same; i++)
            same = !memcmp(a + (size_t)i * d, b + (size_t)(NPOS - 1 - i) * d,
                           d * sizeof(float));
        check(same, "%s: rows do not depend on the order of positions", ln);
        /* v and pass-through dims are the gaussian dataset's values */
        memset(&gs, 0, sizeof gs);
        gs.kind = RB_DATA_GAUSSIAN;
        gs.seed = ds.seed;
        gs.head_dim = d;
        rb_dataset_fill(&gs, RB_TENSOR_Q, 2, pos, NPOS, g, err, sizeof err);
        same = 1;
        for (int i = 0; i < NPOS && same; i++)
            same = !memcmp(a + (size_t)i * d + rd, g + (size_t)i * d + rd,
                           (d - rd) * sizeof(float));
        check(same, "%s: dims past rotary_dim are the gaussian values", ln);
        rb_dataset_fill(&ds, RB_TENSOR_V, 2, pos, NPOS, a, err, sizeof err);
        rb_dataset_fill(&gs, RB_TENSOR_V, 2, pos, NPOS, g, err, sizeof err);
        check(!memcmp(a, g, (size_t)NPOS * d * sizeof(float)), "%s: v is the gaussian v",
              ln);

        /* kappa = 1: every q and k pair has the same phase psi_j (pre-RoPE difference 0) */
        spec(&ds, d, rd, (rb_rope_layout)lay, RB_SPECTRAL_LOW, 1.0);
        rb_dataset_fill(&ds, RB_TENSOR_Q, 0, pos, NPOS, a, err, sizeof err);
        rb_dataset_fill(&ds, RB_TENSOR_K, 0, rev, NPOS, k, err, sizeof err);
        double psi[RB_SPECTRAL_MAX_PAIRS], amp[RB_SPECTRAL_MAX_PAIRS], worst = 0;
        rb_spectral_amplitudes(&ds, amp, err, sizeof err);
        for (int j = 0; j < np; j++) {
            int ia, ib;
            pair_dims(&ds, j, &ia, &ib);
            psi[j] = atan2(a[ib], a[ia]);
            for (int i = 0; i < NPOS; i++) {
                double pq = atan2(a[(size_t)i * d + ib], a[(size_t)i * d + ia]);
                double pk = atan2(k[(size_t)i * d + ib], k[(size_t)i * d + ia]);
                worst = rb_test_max(worst, rb_test_max(fabs(wrap(pq - pk)), fabs(wrap(pq - psi[j]))));
            }
        }
        check(worst < 1e-5,
              "%s: kappa=1: pre-RoPE q/k pair phases all equal psi_j (max "
              "difference %.2e rad, tolerance 1e-5: float rounding)",
              ln, worst);

        /* kappa = 1, after RoPE: score(m, n) = sum_j |q_j||k_j| cos((m-n) theta_j), within
         * the magnitude noise of sum_j a_j^2 cos((m-n) theta_j) */
        double inv[RB_SPECTRAL_MAX_PAIRS];
        rb_rope_params pp;
        rb_rope_info info;
        memset(&pp, 0, sizeof pp);
        pp.method = RB_ROPE_NONE;
        pp.rotary_dim = rd;
        pp.base = 10000;
        pp.original_ctx = 4096;
        pp.seq_len = 4096;
        rc = rb_rope_schedule(&pp, inv, &info, err, sizeof err);
        memcpy(b, a, (size_t)NPOS * d * sizeof(float));
        memcpy(g, k, (size_t)NPOS * d * sizeof(float));
        rb_rope_apply(b, NPOS, (size_t)d, pos, inv, d, rd, (rb_rope_layout)lay, 1.0);
        rb_rope_apply(g, NPOS, (size_t)d, rev, inv, d, rd, (rb_rope_layout)lay, 1.0);
        double e_exact = 0, e_law = 0, sum_a2 = 0;
        const double eta = RB_SPECTRAL_MAG_NOISE, noise = (1 + eta) * (1 + eta) - 1;
        for (int j = 0; j < np; j++)
            sum_a2 += amp[j] * amp[j];
        for (int i = 0; i < NPOS; i += 17) {
            int m = i, n = (i * 31 + 5) % NPOS;
            const float *q = b + (size_t)m * d, *kk = g + (size_t)n * d;
            const float *q0 = a + (size_t)m * d, *k0 = k + (size_t)n * d;
            int64_t delta = pos[m] - rev[n];
            double s = 0, exact = 0, law = 0;
            for (int x = 0; x < rd; x++)
                s += (double)q[x] * kk[x];
            for (int j = 0; j < np; j++) {
                int ia, ib;
                pair_dims(&ds, j, &ia, &ib);
                double c = cos(rb_rope_phase(delta, inv[j]));
                exact += hypot(q0[ia], q0[ib]) * hypot(k0[ia], k0[ib]) * c;
                law += amp[j] * amp[j] * c;
            }
            e_exact = rb_test_max(e_exact, fabs(s - exact) / sum_a2);
            e_law = rb_test_max(e_law, fabs(s - law) / sum_a2);
        }
        check(
            rc == RB_OK && e_exact < 1e-5,
            "%s: kappa=1: post-RoPE score = sum_j |q_j||k_j| cos(delta theta_j) (max error "
            "%.2e of sum a_j^2, tolerance 1e-5)",
            ln, e_exact);
        check(e_law <= noise + 1e-5,
              "%s: kappa=1: post-RoPE score within the magnitude noise of sum_j a_j^2 "
              "cos(delta theta_j) (max %.4f of sum a_j^2, bound (1+eta)^2-1 = %.4f)",
              ln, e_law, noise);

        /* kappa = 0.5: phases within +-(1-kappa) pi of psi_j, and the window is used */
        spec(&ds, d, rd, (rb_rope_layout)lay, RB_SPECTRAL_LOW, 0.5);
        rb_dataset_fill(&ds, RB_TENSOR_K, 0, pos, NPOS, a, err, sizeof err);
        double far = 0;
        for (int j = 0; j < np; j++) {
            int ia, ib;
            pair_dims(&ds, j, &ia, &ib);
            for (int i = 0; i < NPOS; i++)
                far = rb_test_max(far,
                           fabs(wrap(atan2(a[(size_t)i * d + ib], a[(size_t)i * d + ia]) -
                                     psi[j])));
        }
        check(
            far <= 0.5 * PI + 1e-5 && far > 0.49 * PI,
            "%s: kappa=0.5: max |phase - psi_j| = %.4f rad, expected <= pi/2 and > 0.49 pi",
            ln, far);

        /* kappa = 0: phases uniform. Per pair, 16-bin histogram of q phases and of q-k
         * phase differences over 4096 positions: chi^2 (15 dof) < 50 (p < 1e-5 under
         * uniformity) and mean resultant length < 4/sqrt(4096) */
        spec(&ds, d, rd, (rb_rope_layout)lay, RB_SPECTRAL_FLAT, 0.0);
        rb_dataset_fill(&ds, RB_TENSOR_Q, 1, pos, NPOS, a, err, sizeof err);
        rb_dataset_fill(&ds, RB_TENSOR_K, 1, pos, NPOS, k, err, sizeof err);
        double chi_max = 0, r_max = 0;
        for (int j = 0; j < np; j++)
            for (int which = 0; which < 2; which++) {
                int ia, ib, hist[16] = {0};
                double cs = 0, sn = 0;
                pair_dims(&ds, j, &ia, &ib);
                for (int i = 0; i < NPOS; i++) {
                    double ph = atan2(a[(size_t)i * d + ib], a[(size_t)i * d + ia]);
                    if (which)
                        ph = wrap(ph - atan2(k[(size_t)i * d + ib], k[(size_t)i * d + ia]));
                    int bin = (int)floor((ph + PI) / (2 * PI) * 16);
                    hist[bin < 0 ? 0 : bin > 15 ? 15 : bin]++;
                    cs += cos(ph);
                    sn += sin(ph);
                }
                double chi = 0, ex = NPOS / 16.0;
                for (int x = 0; x < 16; x++)
                    chi += (hist[x] - ex) * (hist[x] - ex) / ex;
                chi_max = rb_test_max(chi_max, chi);
                r_max = rb_test_max(r_max, hypot(cs, sn) / NPOS);
            }
        check(chi_max < 50 && r_max < 4 / sqrt(NPOS),
              "%s: kappa=0: phases and q-k phase differences uniform (max chi^2 %.1f < 50, "
              "max resultant length %.4f < %.4f)",
              ln, chi_max, r_max, 4 / sqrt(NPOS));

        /* profiles: mean pair energy |q_j|^2 = a_j^2 (1 + eta^2/3) within 1% */
        static const char *pn[4] = {"flat", "low", "high", "list"};
        double lowa[RB_SPECTRAL_MAX_PAIRS], higha[RB_SPECTRAL_MAX_PAIRS];
        for (int p = 0; p < 4; p++) {
            spec(&ds, d, rd, (rb_rope_layout)lay, (rb_spectral_profile)p, 0.7);
            if (p == RB_SPECTRAL_LIST) {
                ds.n_amplitudes = np;
                for (int j = 0; j < np; j++)
                    ds.amplitudes[j] = j % 5 == 0 ? 0.0 : 0.1 * j;
            }
            rc = rb_spectral_amplitudes(&ds, amp, err, sizeof err);
            rc |= rb_dataset_fill(&ds, RB_TENSOR_Q, 4, pos, NPOS, a, err, sizeof err);
            double e2 = 0, worst_e = 0, upper = 0;
            for (int j = 0; j < np; j++) {
                int ia, ib;
                pair_dims(&ds, j, &ia, &ib);
                double m2 = 0;
                for (int i = 0; i < NPOS; i++)
                    m2 += (double)a[(size_t)i * d + ia] * a[(size_t)i * d + ia] +
                          (double)a[(size_t)i * d + ib] * a[(size_t)i * d + ib];
                m2 /= NPOS;
                double want = amp[j] * amp[j] * (1 + eta * eta / 3);
                worst_e = rb_test_max(worst_e, fabs(m2 - want) / fmax(want, 1e-300));
                if (want == 0)
                    worst_e = rb_test_max(worst_e, m2);
                e2 += amp[j] * amp[j];
                if (j >= np / 2)
                    upper += amp[j] * amp[j];
            }
            check(rc == RB_OK && worst_e < 0.01,
                  "%s: profile %s: mean pair energy = a_j^2 (1+eta^2/3) (max rel. error "
                  "%.4f)",
                  ln, pn[p], worst_e);
            if (p == RB_SPECTRAL_LOW)
                memcpy(lowa, amp, sizeof lowa);
            if (p == RB_SPECTRAL_HIGH)
                memcpy(higha, amp, sizeof higha);
            if (p != RB_SPECTRAL_LIST)
                check(fabs(e2 - np) < 1e-9, "%s: profile %s: sum a_j^2 = np (%.12f)", ln,
                      pn[p], e2);
            if (p == RB_SPECTRAL_LOW)
                check(upper / e2 > 0.85,
                      "%s: profile low: %.3f of the energy in the "
                      "low-frequency half of the pairs (> 0.85)",
                      ln, upper / e2);
            if (p == RB_SPECTRAL_LIST)
                check(amp[7] == ds.amplitudes[7] && amp[5] == 0,
                      "%s: profile list: amplitudes as given", ln);
        }
        int mirror = 1, mono = 1;
        for (int j = 0; j < np; j++) {
            mirror &= fabs(higha[j] - lowa[np - 1 - j]) < 1e-12;
            if (j)
                mono &= lowa[j] > lowa[j - 1];
        }
        check(mirror && mono, "%s: low increases with j, high is its mirror", ln);
    }

    /* errors */
    rb_dataset ds;
    int64_t p0 = 0;
    spec(&ds, d, rd, RB_LAYOUT_NEOX, RB_SPECTRAL_FLAT, 1.5);
    check(rb_dataset_fill(&ds, RB_TENSOR_Q, 0, &p0, 1, a, err, sizeof err) == RB_EINVAL &&
              strstr(err, "coherence"),
          "coherence 1.5 rejected: %s", err);
    spec(&ds, d, 66, RB_LAYOUT_NEOX, RB_SPECTRAL_FLAT, 1);
    check(rb_dataset_fill(&ds, RB_TENSOR_Q, 0, &p0, 1, a, err, sizeof err) == RB_EINVAL,
          "rotary_dim > head_dim rejected: %s", err);
    spec(&ds, d, rd, RB_LAYOUT_NEOX, RB_SPECTRAL_LIST, 1);
    ds.n_amplitudes = 3;
    check(rb_dataset_fill(&ds, RB_TENSOR_Q, 0, &p0, 1, a, err, sizeof err) == RB_EINVAL &&
              strstr(err, "24 amplitudes"),
          "list with 3 of 24 amplitudes rejected: %s", err);
    ds.kind = RB_DATA_FILE;
    check(rb_dataset_fill(&ds, RB_TENSOR_Q, 0, &p0, 1, a, err, sizeof err) == RB_EINVAL,
          "file kind is not generated: %s", err);
    check(rb_dataset_kind_parse("spectral") == RB_DATA_SPECTRAL &&
              rb_dataset_kind_parse("file") == RB_DATA_FILE &&
              !strcmp(rb_spectral_profile_name(RB_SPECTRAL_HIGH), "high") &&
              rb_spectral_profile_parse("medium") == -1,
          "names parse");
    free(pos);
    free(rev);
    free(a);
    free(b);
    free(k);
    free(g);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, N;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    if (rank == 0)
        printf("test_dataset_spectral on %d ranks: determinism, shards, kappa laws, "
               "profiles\n",
               N);
    test_shards(rank, N);
    if (rank == 0)
        test_serial();
    int f = n_fail;
    MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d passed, %d failed\n", n_pass, f);
    MPI_Finalize();
    return f ? 1 : 0;
}
