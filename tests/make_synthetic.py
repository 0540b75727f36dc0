#!/usr/bin/env python3
"""make_synthetic.py — writes a small ropebench results file (format_version 1) with h5py: correct attention values, metric groups with the dataset names of bench/metrics.c, a /bench group and peaks, for testing the report and the oracle without the driver."""
import argparse
import sys

import h5py
import numpy as np


def s(x):
    """Fixed-length string, as the C writer stores them."""
    return np.bytes_(x.encode("utf-8"))


def rope_complex(x, pos, inv_freq, rotary_dim, layout, att):
    """RoPE through complex multiplication (deliberately another formulation than the
    oracle's cos/sin pairs). x: [n, d] float64."""
    half = rotary_dim // 2
    y = x.copy()
    if layout == "neox":
        re, im = x[:, :half], x[:, half:rotary_dim]
    else:
        re, im = x[:, 0:rotary_dim:2], x[:, 1:rotary_dim:2]
    z = (re + 1j * im) * np.exp(1j * np.outer(pos.astype(np.float64), inv_freq))
    if layout == "neox":
        y[:, :half], y[:, half:rotary_dim] = z.real, z.imag
    else:
        y[:, 0:rotary_dim:2], y[:, 1:rotary_dim:2] = z.real, z.imag
    y[:, :rotary_dim] *= att
    return y


def attention(q, k, v, qpos, scale):
    """Causal attention rows for the queries at qpos: lse, entropy, output."""
    lse, ent, out = [], [], []
    for i, p in enumerate(qpos):
        sc = scale * (k[: p + 1] @ q[i])
        m = sc.max()
        w = np.exp(sc - m)
        l = w.sum()
        lse.append(m + np.log(l))
        pr = w / l
        ent.append(-(pr * np.log(np.where(pr > 0, pr, 1))).sum())
        out.append(pr @ v[: p + 1])
    return np.array(lse), np.array(ent), np.array(out)


def put_cols(g, cols):
    for k, v in cols.items():
        g[k] = np.asarray(v, dtype=np.float64)


def write_metrics(g, inv_base, inv, L, L0, pos, heads, probe):
    """Metric groups as bench/metrics.c names them (docs/metrics.md). The analytic
    columns follow their formulas; the rest are distinct made-up values (the report only
    shows them), with a NaN band and an empty share bin as real files have."""
    npairs = len(inv)
    two_pi = 2 * np.pi
    span, maxp = inv_base * (L0 - 1), inv * (L - 1)
    ood = (span < two_pi) & (maxp > span)
    pp = g.create_group("phase/pairs")
    put_cols(pp, {"inv_freq_base": inv_base, "inv_freq": inv, "wavelength": two_pi / inv,
                  "trained_span": span, "max_phase": maxp, "turns": maxp / two_pi,
                  "ood": ood.astype(np.float64)})
    crit = np.flatnonzero(span < two_pi)
    pp.attrs["critical_pair"] = np.int64(crit[0] if len(crit) else npairs)
    nb = 20 if probe else 9
    dist = np.concatenate([[0.0], np.geomspace(1, L - 1, nb - 1)])
    i = np.arange(nb, dtype=np.float64)
    band = np.minimum(np.arange(npairs) * 3 // npairs, 2).astype(np.float64)
    pd = g.create_group("phase/by_distance")
    if probe:  # the full-mode case stands for a file written before the attribute
        pd.attrs["D_leaves_zero"] = np.int64(37)
    # full mode (no attribute): D 0 at the first bin centres, so that the report shows
    # the two centres around its first positive value
    Dv = 0.0125 * i if probe else 0.0125 * np.maximum(i - 3, 0)
    put_cols(pd, {
        "distance": dist, "D": Dv, "D_high": np.full(nb, np.nan),
        "D_mid": 0.0211 * i + 0.003, "D_low": 0.0333 * i ** 1.5, "ood_frac_count": i / (4 * nb),
        "ood_frac_energy": i / (7 * nb), "weight": np.linspace(1, 2, npairs), "band": band})
    put_cols(g.create_group("entropy/by_position"), {
        "position": dist, "count": np.full(nb, 3.0), "mean": 0.1 + 0.2 * i, "min": 0.05 * i,
        "max": 0.5 + 0.2 * i, "std": np.full(nb, 0.01), "mean_normalized": np.full(nb, 0.9),
        "bin_start": np.floor(dist), "bin_end": np.floor(dist) + 1})
    dec = g.create_group("decay/by_distance")
    put_cols(dec, {"distance": dist, "bin_start": np.floor(dist), "bin_end": np.floor(dist) + 1,
                   "roformer_bound": (npairs + 1) / 2 / (1 + 0.37 * i),
                   "B": npairs * np.cos(0.19 * i)})
    dec.attrs["first_negative_B"] = np.int64(9 if probe else -1)
    if not probe:
        return
    put_cols(dec, {"count": 10 + 3 * i, "mean_score": 0.71 - 0.043 * i, "std_score": 0.2 + 0.011 * i})
    share = np.sin(np.outer(i + 1, np.arange(npairs) + 0.5)) * (1 + 0.1 * i)[:, None]
    share[3, :] = np.nan  # a bin without attention
    ps = g.create_group("pair_share")
    put_cols(ps, {"share": share, "distance": dist, "weight_sum": 0.5 + 0.061 * i})
    ps["weight_sum"][3] = 0.0
    n = len(pos)
    r = np.arange(n, dtype=np.float64)
    put_cols(g.create_group("precision"), {
        "position": pos, "phase_err_max": 1e-7 * (r + 1), "phase_err_mean": 4e-8 * (r + 1),
        "score_err_max": 3e-8 * (r + 2),
        "entropy_err": -4e-9 * (r + 3), "bound_ratio_max": 0.05 + 0.1 * r})
    g["precision"].attrs["bound_ratio_max"] = np.float64(0.05 + 0.1 * (n - 1))
    put_cols(g.create_group("softmax_floor"), {
        "position": pos, "min_weight_times_n": 0.8 - 0.1 * r, "floor": 0.3 - 0.04 * r,
        "ratio": (0.8 - 0.1 * r) / (0.3 - 0.04 * r)})
    put_cols(g.create_group("softmax_floor_by_position"), {
        "position": pos, "bin_start": np.floor(pos), "bin_end": np.floor(pos) + 1,
        "count": np.full(n, 2.0), "min_ratio": 1.5 + 0.25 * r, "min_weight_times_n": 0.7 - 0.05 * r})


def write_needles(g, key_pos, query_pos, heads):
    rows = [(h, q, k) for h in range(heads) for q, k in zip(query_pos, key_pos)]
    m = len(rows)
    j = np.arange(m, dtype=np.float64)
    put_cols(g.create_group("needles"), {
        "head": [r[0] for r in rows], "query_pos": [r[1] for r in rows],
        "needle_pos": [r[2] for r in rows], "distance": [r[1] - r[2] for r in rows],
        "score": 3.5 - 0.25 * j, "mass": 0.61 / (j + 1), "rank": j + 1, "hit": (j == 0) * 1.0})


def write_case(g_cases, name, method, factor, L, mode, dataset, heads, d, rdim, layout,
               att, rng, nranks, dump=True, complete=True, probe=None, corrupt=False,
               metrics=False, flops=None, attrs=None):
    base = 10000.0
    inv_base = base ** (-np.arange(0, rdim, 2, dtype=np.float64) / rdim)
    inv = inv_base / factor if method == "pi" else inv_base
    scale = 1.0 / np.sqrt(d)
    g = g_cases.create_group(name)
    for k, val in dict(method=method, layout=layout, mode=mode, shard_layout="zigzag",
                       dataset=dataset, kernel="ref", dtype="fp32").items():
        g.attrs[k] = s(val)
    for k, val in dict(factor=factor, base=base, base_used=base, attention_factor=att,
                       scale=scale).items():
        g.attrs[k] = np.float64(val)
    pos = np.arange(L, dtype=np.int64) if mode == "full" else np.array(probe, np.int64)
    for k, val in dict(head_dim=d, rotary_dim=rdim, original_ctx=L // 4, seq_len=L,
                       heads=heads, seed=7, n_rows=len(pos)).items():
        g.attrs[k] = np.int64(val)
    g["freqs/inv_freq"] = inv
    g["freqs/inv_freq_base"] = inv_base
    g["rows/position"] = pos
    q = rng.standard_normal((heads, L, d)).astype(np.float32)
    k_ = rng.standard_normal((heads, L, d)).astype(np.float32)
    v = rng.standard_normal((heads, L, d)).astype(np.float32)
    allpos = np.arange(L)
    lse = np.zeros((heads, len(pos)))
    ent = np.zeros((heads, len(pos)))
    out = np.zeros((heads, len(pos), d), np.float32)
    for h in range(heads):
        qr = rope_complex(q[h].astype(np.float64), allpos, inv, rdim, layout, att)
        kr = rope_complex(k_[h].astype(np.float64), allpos, inv, rdim, layout, att)
        lse[h], ent[h], o = attention(qr[pos], kr, v[h].astype(np.float64), pos, scale)
        out[h] = o
    if corrupt:
        ent[0, -1] *= 1.001
    if complete:
        g["rows/lse"] = lse
        g["rows/entropy"] = ent
        if dump:
            g["rows/output"] = out
    for t in ("setup_s", "compute_s", "comm_wait_s", "merge_s", "total_s"):
        g["timing/" + t] = np.linspace(0.01, 0.02, nranks)
    if metrics:
        # with compute 0.01 .. 0.02: the report's metrics on / off is 0.06 / 0.02 = 3,
        # where adding the largest times would give 3.5 and rank 0's own ratio 6
        g["timing/metrics_s"] = np.linspace(0.05, 0.03, nranks)
    else:
        g["timing/metrics_s"] = np.zeros(nranks)  # as metrics.enabled = false writes it
    if dataset == "needle":
        g["needle/key_pos"] = np.array([3, L // 2, L // 2 + 1], np.int64)
        g["needle/query_pos"] = np.array([L // 4, L - 1, L - 1], np.int64)
        g["needle"].attrs["strength"] = np.float64(4.0)
    if metrics:
        write_metrics(g, inv_base, inv, L, L // 4, pos, heads, mode == "probe")
        if dataset == "needle" and mode == "probe":
            # two needles for the last query, so that they compete (rank_haystack)
            write_needles(g, [3, L // 2, L // 2 + 1], [L // 4, L - 1, L - 1], heads)
    if flops is not None:
        g.attrs["flops"] = np.float64(flops)  # made up, so that GFLOP/s is not ~0
    for k, val in (attrs or {}).items():
        g.attrs[k] = val
    if dump:
        g["inputs/q"], g["inputs/k"], g["inputs/v"] = q, k_, v
    if complete:
        g.attrs["complete"] = np.int64(1)


# /bench rows: kernel, dtype, bench, head_dim, seq_len, threads, median_s, gflops, gbps,
# peak_gflops, triad_gbps (fraction_of_peak follows as bench/cmd_bench.c computes it)
BENCH_ROWS = [
    ("avx512", "fp32", "causal", 128, 16384, 1, 0.0402, 85.47, np.nan, 110.5, 14.2),
    ("avx512_bf16", "bf16", "causal", 128, 16384, 2, 0.0119, 288.6, np.nan, 219.0, 24.8),
    ("avx512", "fp32", "probe", 128, 1048576, 1, 0.1001, 1.37, 10.73, 110.5, 14.2),
    ("ref", "fp32", "rope", 128, 1048576, 1, 0.4444, 1.81, 4.83, 110.5, 14.2),
]


def write_bench(f):
    g = f.create_group("bench")
    rows = BENCH_ROWS
    for k, j in (("kernel", 0), ("dtype", 1), ("bench", 2)):
        g[k] = np.array([r[j].encode() for r in rows], dtype="S")
    for k, j in (("head_dim", 3), ("seq_len", 4), ("threads", 5)):
        g[k] = np.array([r[j] for r in rows], np.int64)
    g["n_rows"] = np.array([r[4] for r in rows], np.int64)
    g["causal"] = np.array([r[2] != "rope" for r in rows], np.int64)
    g["reps"] = np.full(len(rows), 5, np.int64)
    g["warmup"] = np.ones(len(rows), np.int64)
    for k, j in (("median_s", 6), ("gflops", 7), ("gbps", 8), ("peak_gflops", 9),
                 ("triad_gbps", 10)):
        g[k] = np.array([r[j] for r in rows], np.float64)
    g["min_s"] = g["median_s"][:] * 0.98
    g["max_s"] = g["median_s"][:] * 1.05
    g["cv"] = np.full(len(rows), 0.012)
    g["fraction_of_peak"] = np.array([r[7] / r[9] if np.isnan(r[8]) else r[8] / r[10]
                                      for r in rows])
    for k, v in (("peak_gflops_1thread", 110.5), ("peak_gflops_all", 219.0),
                 ("triad_gbps_1thread", 14.2), ("triad_gbps_all", 24.8),
                 ("tile_ceiling_gflops_1thread", 90.25)):
        g.attrs[k] = np.float64(v)
    g.attrs["threads_all"] = np.int64(2)
    g.attrs["quick"] = np.int64(0)
    g.attrs["cpu_model"] = s("synthetic <cpu>")
    # the probe breakdown: three classes of the probe row (2), then entries the report
    # must leave out (a causal row, a row past the table) and one whose
    # pairs are 0 (n/a per pair)
    pb = [  # row, rows_min, rows_max, blocks, keys, pairs, s, qk_s, softmax_s, pv_s
        (2, 1, 1, 1694, 108416, 108416, 0.00200, 0.00090, 0.00012, 0.00085),
        (2, 8, 15, 4444, 284416, 3110016, 0.01900, 0.01000, 0.00170, 0.00690),
        (2, 2048, -1, 3, 192, 393216, 0.00110, 0.00060, 0.00010, 0.00035),
        (0, 1, 1, 10, 640, 640, 0.5, 0.1, 0.1, 0.1),
        (99, 1, 1, 10, 640, 640, 0.5, 0.1, 0.1, 0.1),
        (2, 4, 7, 0, 0, 0, 0.0, 0.0, 0.0, 0.0),
    ]
    names = ("row", "rows_min", "rows_max", "blocks", "keys", "pairs")
    for j, k in enumerate(names):
        g["probe_breakdown/" + k] = np.array([e[j] for e in pb], np.int64)
    for j, k in enumerate(("s", "qk_s", "softmax_s", "pv_s")):
        g["probe_breakdown/" + k] = np.array([e[6 + j] for e in pb], np.float64)
    g["probe_breakdown/call_s"] = np.array([0.0235 if e[0] == 2 else 1.0 for e in pb])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--corrupt", action="store_true",
                    help="perturb one stored entropy value (the oracle must catch it)")
    ap.add_argument("--bench-only", action="store_true",
                    help="only the root attributes and /bench, as `ropebench bench -o` "
                         "writes into a new file")
    a = ap.parse_args()
    rng = np.random.default_rng(1234)
    nranks = 2
    if a.bench_only:
        with h5py.File(a.out, "w") as f:
            f.attrs["format"] = s("ropebench")
            f.attrs["format_version"] = np.int64(1)
            f.attrs["ropebench_version"] = s("0.1.0")
            write_bench(f)
        print("wrote", a.out)
        return 0
    with h5py.File(a.out, "w") as f:
        root = dict(format="ropebench", ropebench_version="0.1.0", git_describe="synthetic",
                    created_utc="2025-01-01T00:00:00Z",
                    command_line="make_synthetic.py <script>alert(1)</script>",
                    config_text="[model]\nhead_dim = 16\n# a <tag> & \"quotes\"\n",
                    kernel="ref")
        for k, val in root.items():
            f.attrs[k] = s(val)
        f.attrs["format_version"] = np.int64(1)
        f.attrs["nranks"] = np.int64(nranks)
        f.attrs["threads_per_rank"] = np.int64(1)
        p = f.create_group("provenance")
        for k in ("compiler", "cflags", "kernel_isa", "cpu_model", "mpi_version",
                  "hdf5_version", "openblas_config", "hwloc_version", "hostname",
                  "topology_summary"):
            p.attrs[k] = s("synthetic " + k)
        p["hosts"] = np.array([b"host-a"], dtype="S")
        p["topology_xml"] = np.array([b"<topology><object type='Machine'/></topology>"], dtype="S")
        p["rank_host"] = np.array([b"host-a", b"host-a"], dtype="S")
        p["rank_binding"] = np.array([b"cpuset 0x1 = PU 0", b"cpuset 0x2 = PU 1"], dtype="S")
        p["peak_fma_gflops"] = np.array([100.0, 110.0])
        p["triad_gbps"] = np.array([10.0, 12.0])
        write_bench(f)
        c = f.create_group("cases")
        # the peaks of the run that computed the case (a resumed run's own), and a case
        # of another thread count than /provenance's peaks without them (% n/a)
        write_case(c, "none-x1-L64-full-gaussian", "none", 1.0, 64, "full", "gaussian", 2,
                   16, 16, "neox", 1.0, rng, nranks, corrupt=a.corrupt, metrics=True,
                   flops=1e9, attrs={"peak_fma_gflops": np.float64(400.0),
                                     "triad_gbps": np.float64(40.0)})
        write_case(c, "pi-x4-L64-full-gaussian", "pi", 4.0, 64, "full", "gaussian", 2, 16,
                   8, "gptj", 1.1, rng, nranks, flops=1e9,
                   attrs={"threads": np.int64(2)})
        write_case(c, "pi-x4-L128-probe-needle", "pi", 4.0, 128, "probe", "needle", 1, 8, 8,
                   "neox", 1.0, rng, nranks, probe=[0, 1, 5, 37, 100, 127], metrics=True,
                   flops=3.3e9)
        write_case(c, "none-x1-L1024-full-gaussian", "none", 1.0, 1024, "full", "gaussian",
                   1, 8, 8, "neox", 1.0, rng, nranks, dump=False)
        write_case(c, "yarn-x8-L64-full-gaussian", "yarn", 8.0, 64, "full", "gaussian", 1,
                   8, 8, "neox", 1.0, rng, nranks, complete=False)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
