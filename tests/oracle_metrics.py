#!/usr/bin/env python3
"""oracle_metrics.py — recompute the metrics of a results file written with
`ropebench run --dump-inputs` independently with numpy float64 from the dumped pre-RoPE
inputs, the stored inv_freq and the case attributes, and compare with what the run
stored (docs/metrics.md):

  entropy/by_position   count, mean, min, max, std, mean_normalized per stored bin
  phase/pairs           trained_span, max_phase, turns, ood, critical_pair
  phase/by_distance     D, D per band, ood fractions (numpy brute force over trained
                        distances, with the stored weights); in probe mode the weights
                        themselves, E[rho_j] over the (probe row, key) pairs
  decay/by_distance     B(delta), first_negative_B (brute force), and in probe mode
                        count, mean_score, std_score over (row, key) pairs per bin
  pair_share            sum p c_j / sum p per bin (probe)
  needles               score, mass, rank, hit (probe, needle dataset)
  softmax_floor         ratio = min weight * n / exp(-2 max|s|) per row (probe)
  precision             phase_err_max (fp32 phases); bound_ratio_max <= 1 (probe)

Error metric: |x - y| <= tol * max(|x|, |y|, 1): 1e-9 for analytic values, 1e-5 for
data-driven ones (the run computes from fp32-rounded rotations).

usage: oracle_metrics.py RESULTS.h5
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_metrics_phase as phase_oracle  # noqa: E402  (independent numpy D, bands)

passed = 0
failed = 0


def check(what, got, want, tol):
    global passed, failed
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failed += 1
        print(f"FAIL {what}: shape {got.shape} vs {want.shape}")
        return
    both_nan = np.isnan(got) & np.isnan(want)
    same_inf = np.isinf(got) & (got == want)
    scale = np.maximum(np.maximum(np.abs(got), np.abs(want)), 1.0)
    err = np.where(both_nan | same_inf, 0.0, np.abs(got - want) / scale)
    err = np.where(np.isnan(err), np.inf, err)
    if err.size and err.max() > tol:
        i = np.unravel_index(np.argmax(err), err.shape)
        failed += 1
        print(f"FAIL {what}: at {i}: stored {got[i]!r}, recomputed {want[i]!r} "
              f"(err {err[i]:.3g} > {tol:g})")
    else:
        passed += 1


def rotate(x, pos, inv, rd, layout, af):
    """RoPE in float64 with phases reduced mod 2 pi; x [n][d], pos [n]."""
    y = x.astype(np.float64).copy()
    ang = np.mod(np.outer(pos.astype(np.float64), inv), 2 * np.pi)
    c, s = np.cos(ang), np.sin(ang)
    if layout == "neox":
        a, b = np.arange(rd // 2), np.arange(rd // 2) + rd // 2
    else:
        a, b = 2 * np.arange(rd // 2), 2 * np.arange(rd // 2) + 1
    xa, xb = y[:, a].copy(), y[:, b].copy()
    y[:, a] = af * (xa * c - xb * s)
    y[:, b] = af * (xa * s + xb * c)
    return y, a, b


def attr(g, k):
    v = g.attrs[k]
    return v.decode() if isinstance(v, bytes) else v


def case(name, c):
    L = int(attr(c, "seq_len"))
    d = int(attr(c, "head_dim"))
    rd = int(attr(c, "rotary_dim"))
    H = int(attr(c, "heads"))
    L0 = int(attr(c, "original_ctx"))
    layout = attr(c, "layout")
    af = float(attr(c, "attention_factor"))
    scale = float(attr(c, "scale"))
    mode = attr(c, "mode")
    inv = c["freqs/inv_freq"][()]
    base = c["freqs/inv_freq_base"][()]
    np_ = rd // 2
    pos = c["rows/position"][()]
    lse = c["rows/lse"][()]
    ent = c["rows/entropy"][()]

    # 3. entropy by position
    g = c["entropy/by_position"]
    lo, hi = g["bin_start"][()], g["bin_end"][()]
    cnt, mean, mn, mx, sd, mnorm = [], [], [], [], [], []
    for a, b in zip(lo, hi):
        sel = (pos >= a) & (pos < b)
        x = ent[:, sel].ravel()
        p = np.tile(pos[sel], H)
        cnt.append(x.size)
        mean.append(x.mean())
        mn.append(x.min())
        mx.append(x.max())
        sd.append(np.sqrt(max(0.0, (x * x).mean() - x.mean() ** 2)))
        nz = p > 0
        mnorm.append(np.nan if a == 0 and b == 1 else (x[nz] / np.log(p[nz] + 1.0)).sum() / x.size)
    check(f"{name} entropy count", g["count"][()], cnt, 0)
    check(f"{name} entropy mean", g["mean"][()], mean, 1e-9)
    check(f"{name} entropy min", g["min"][()], mn, 1e-9)
    check(f"{name} entropy max", g["max"][()], mx, 1e-9)
    check(f"{name} entropy std", g["std"][()], sd, 1e-6)
    check(f"{name} entropy mean_normalized", g["mean_normalized"][()], mnorm, 1e-9)

    # 1. phase table
    g = c["phase/pairs"]
    span = base * (L0 - 1)
    maxp = inv * (L - 1)
    check(f"{name} trained_span", g["trained_span"][()], span, 1e-9)
    check(f"{name} max_phase", g["max_phase"][()], maxp, 1e-9)
    check(f"{name} turns", g["turns"][()], maxp / (2 * np.pi), 1e-9)
    check(f"{name} ood", g["ood"][()], ((span < 2 * np.pi) & (maxp > span)).astype(float), 0)
    crit = np.flatnonzero(span < 2 * np.pi)
    check(f"{name} critical_pair", attr(g, "critical_pair"), crit[0] if crit.size else np_, 0)

    # 2. phase distance, with the stored weights (checked below in probe mode)
    g = c["phase/by_distance"]
    w = g["weight"][()]
    dist2 = g["distance"][()]
    band = phase_oracle.bands(base, L0, 32.0, 1.0)
    rows = np.array(phase_oracle.distance(base, inv, w, band, L0, dist2))  # [nd, 6]
    for col, key in enumerate(("D", "D_high", "D_mid", "D_low", "ood_frac_count",
                               "ood_frac_energy")):
        check(f"{name} {key}", g[key][()], rows[:, col], 1e-9)

    # 4. analytic decay
    g = c["decay/by_distance"]
    dist = g["distance"][()]
    B = np.cos(np.outer(dist, inv)).sum(axis=1)
    check(f"{name} B", g["B"][()], B, 1e-9)
    deltas = np.arange(1, L + 1, dtype=np.float64)
    Ball = np.concatenate([np.cos(np.outer(ch, inv)).sum(axis=1)
                           for ch in np.array_split(deltas, max(1, L // 4096))])
    neg = np.flatnonzero(Ball < 0)
    check(f"{name} first_negative_B", attr(g, "first_negative_B"),
          int(deltas[neg[0]]) if neg.size else -1, 0)

    if mode != "probe" or "inputs" not in c:
        return
    # data-driven, probe mode: from the dumped inputs
    q_all, k_all = c["inputs/q"][()], c["inputs/k"][()]
    kpos = np.arange(L)
    blo, bhi = g["bin_start"][()], g["bin_end"][()]
    nb = blo.size
    count = np.zeros(nb)
    ssum = np.zeros(nb)
    ssum2 = np.zeros(nb)
    snum = np.zeros((nb, np_))
    sden = np.zeros(nb)
    ratio = np.full(pos.size, np.inf)
    rho = np.zeros(np_)
    needles = {}
    if "needles" in c:
        ng = c["needles"]
        for i in range(ng["head"].shape[0]):
            needles[(int(ng["head"][i]), int(ng["query_pos"][i]), int(ng["needle_pos"][i]))] = i
    n_score = np.zeros(len(needles))
    n_mass = np.zeros(len(needles))
    n_rank = np.zeros(len(needles))
    for h in range(H):
        kr, a, b = rotate(k_all[h], kpos, inv, rd, layout, af)
        qr, _, _ = rotate(q_all[h][pos], pos, inv, rd, layout, af)
        for r, p in enumerate(pos):
            vis = kr[: p + 1]
            s = scale * vis @ qr[r]
            dd = p - np.arange(p + 1)
            bi = np.searchsorted(bhi, dd, side="right")
            pr = np.exp(s - lse[h, r])
            cj = scale * (qr[r, a] * vis[:, a] + qr[r, b] * vis[:, b])
            np.add.at(count, bi, 1)
            np.add.at(ssum, bi, s)
            np.add.at(ssum2, bi, s * s)
            np.add.at(sden, bi, pr)
            np.add.at(snum, bi, pr[:, None] * cj)
            rho += (np.hypot(qr[r, a], qr[r, b])[None, :] * np.hypot(vis[:, a], vis[:, b])).sum(axis=0)
            rr = np.exp(s.min() - lse[h, r]) * s.size / np.exp(-2 * np.abs(s).max())
            ratio[r] = min(ratio[r], rr)
            for (nh, nq, nk), i in needles.items():
                if nh == h and nq == p:
                    n_score[i] = s[nk]
                    n_mass[i] = np.exp(s[nk] - lse[h, r])
                    n_rank[i] = 1 + np.count_nonzero(np.delete(s, nk) > s[nk])
    check(f"{name} decay count", g["count"][()], count, 0)
    check(f"{name} phase weights E[rho]", c["phase/by_distance/weight"][()], rho / count.sum(), 1e-5)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = ssum / count
        check(f"{name} decay mean_score", g["mean_score"][()], m, 1e-5)
        sdv = np.where(count > 1, np.sqrt(np.maximum(ssum2 / count - m * m, 0)), np.nan)
        check(f"{name} decay std_score", g["std_score"][()], sdv, 1e-4)
        check(f"{name} pair_share", c["pair_share/share"][()], snum / sden[:, None], 1e-5)
    check(f"{name} softmax_floor ratio", c["softmax_floor/ratio"][()], ratio, 1e-5)
    if np.any(c["softmax_floor/ratio"][()] < 1 - 1e-9):
        failed_ratio = c["softmax_floor/ratio"][()].min()
        check(f"{name} softmax floor ratio >= 1", failed_ratio, 1.0, 0)
    if needles:
        ng = c["needles"]
        check(f"{name} needle score", ng["score"][()], n_score, 1e-5)
        check(f"{name} needle mass", ng["mass"][()], n_mass, 1e-5)
        check(f"{name} needle rank", ng["rank"][()], n_rank, 0)
        check(f"{name} needle hit", ng["hit"][()], (n_rank == 1).astype(float), 0)
    if "precision" in c:
        pg = c["precision"]
        pf = (pos.astype(np.float32)[:, None] * inv.astype(np.float32)[None, :]).astype(np.float64)
        pe = np.abs(np.mod(pf - np.outer(pos.astype(np.float64), inv) + np.pi, 2 * np.pi) - np.pi)
        check(f"{name} precision phase_err_max", pg["phase_err_max"][()], pe.max(axis=1), 1e-9)
        br = pg["bound_ratio_max"][()]
        if br.max() > 1.0:
            check(f"{name} precision bound ratio <= 1", br.max(), 1.0, 0)
        else:
            global passed
            passed += 1


def main():
    with h5py.File(sys.argv[1], "r") as f:
        for name in sorted(f["cases"]):
            c = f["cases"][name]
            if c.attrs.get("complete") != 1 or "entropy" not in c:
                continue
            case(name, c)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
