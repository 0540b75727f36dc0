#!/usr/bin/env python3
"""make_synthetic.py — writes a small ropebench results file (format_version 1) with h5py, with correct attention values, for testing the report and the oracle without the driver."""
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


def write_case(g_cases, name, method, factor, L, mode, dataset, heads, d, rdim, layout,
               att, rng, nranks, dump=True, complete=True, probe=None, corrupt=False):
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
    if dataset == "needle":
        g["needle/key_pos"] = np.array([3, L // 2], np.int64)
        g["needle/query_pos"] = np.array([L // 4, L - 1], np.int64)
        g["needle"].attrs["strength"] = np.float64(4.0)
    if dump:
        g["inputs/q"], g["inputs/k"], g["inputs/v"] = q, k_, v
    if complete:
        g.attrs["complete"] = np.int64(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--corrupt", action="store_true",
                    help="perturb one stored entropy value (the oracle must catch it)")
    a = ap.parse_args()
    rng = np.random.default_rng(1234)
    nranks = 2
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
        c = f.create_group("cases")
        write_case(c, "none-x1-L64-full-gaussian", "none", 1.0, 64, "full", "gaussian", 2,
                   16, 16, "neox", 1.0, rng, nranks, corrupt=a.corrupt)
        write_case(c, "pi-x4-L64-full-gaussian", "pi", 4.0, 64, "full", "gaussian", 2, 16,
                   8, "gptj", 1.1, rng, nranks)
        write_case(c, "pi-x4-L128-probe-needle", "pi", 4.0, 128, "probe", "needle", 1, 8, 8,
                   "neox", 1.0, rng, nranks, probe=[0, 1, 5, 37, 100, 127])
        write_case(c, "none-x1-L1024-full-gaussian", "none", 1.0, 1024, "full", "gaussian",
                   1, 8, 8, "neox", 1.0, rng, nranks, dump=False)
        write_case(c, "yarn-x8-L64-full-gaussian", "yarn", 8.0, 64, "full", "gaussian", 1,
                   8, 8, "neox", 1.0, rng, nranks, complete=False)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
