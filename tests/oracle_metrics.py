#!/usr/bin/env python3
"""oracle_metrics.py — recompute the metrics of a results file written with
`ropebench run --dump-inputs` independently with numpy float64 from the dumped pre-RoPE
inputs, the stored inv_freq and the case attributes, and compare with what the run
stored (docs/metrics.md):

  entropy/by_position   count, mean, min, max, std, mean_normalized per stored bin
  phase/pairs           trained_span, max_phase, turns, ood, critical_pair
  phase/by_distance     D, D per band, ood fractions (numpy brute force over trained
                        distances, with the stored weights), D_leaves_zero (the same brute
                        force at every distance until D > 1e-9); in probe mode the weights
                        themselves, E[rho_j] over the (probe row, key) pairs
  decay/by_distance     B(delta), first_negative_B (brute force), and in probe mode
                        count, mean_score, std_score over (row, key) pairs per bin
  pair_share            sum p c_j / sum p per bin (probe)
  needles               score, mass, rank, hit, rank_haystack, hit_haystack (probe,
                        needle dataset)
  rows/entropy_normalized  H / log(p + 1) with H recomputed from the inputs (every mode)
  softmax_floor         min_weight_times_n, floor, ratio per row, lse recomputed (probe)
  softmax_floor_by_position  bins, count, min_ratio, min_weight_times_n (probe)
  precision             phase_err_max, phase_err_mean (fp32 phases), score_err_max on
                        the key sample, entropy_err (fp32-phase RoPE emulated in float32
                        numpy), the sample attributes; bound_ratio_max <= 1 (probe)

Error metric: |x - y| <= tol * max(|x|, |y|, 1): 1e-9 for analytic values, 1e-5 for
data-driven ones (the run computes from fp32-rounded rotations). Values far below 1
(phase, score and entropy errors, weights) are compared relative to their own size,
|x - y| <= rtol * max(|x|, |y|) + atol, each with the tolerance its function states.
The emulation of the fp32-phase RoPE calls libm's cosf/sinf (through ctypes) as the
reference build does: run the files to check with ROPEBENCH_ISA=ref, as the tests do.

usage: oracle_metrics.py RESULTS.h5
"""
import ctypes
import ctypes.util
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_metrics_phase as phase_oracle  # noqa: E402  (independent numpy D, bands)
import oracle_schedules  # noqa: E402  (independent numpy HF schedules)

passed = 0
failed = 0
# --only WORD: check only the quantities whose label holds WORD (a file whose other
# metrics fall outside their tolerances by design, e.g. large logits for the floor)
ONLY = None


def check(what, got, want, tol, atol=None):
    """Stored `got` against recomputed `want`. Without atol: |x - y| / max(|x|, |y|, 1) <= tol.
    With atol (check_rel, for quantities far below 1, such as phase errors), relative to
    the values themselves: |x - y| <= tol * max(|x|, |y|) + atol. NaN only matches NaN."""
    global passed, failed
    if ONLY and ONLY not in what:
        return
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failed += 1
        print(f"FAIL {what}: shape {got.shape} vs {want.shape}")
        return
    same = (np.isnan(got) & np.isnan(want)) | (np.isinf(got) & (got == want))
    big = np.maximum(np.abs(got), np.abs(want))
    with np.errstate(invalid="ignore"):
        if atol is None:
            err = np.abs(got - want) / np.maximum(big, 1.0)
            limit = f"{tol:g}"
        else:
            err = np.abs(got - want) - (tol * big + atol)
            limit = f"{tol:g} relative + {atol:g}"
            tol = 0.0
        err = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))
    if err.size and err.max() > tol:
        i = np.unravel_index(np.argmax(err), err.shape)
        failed += 1
        print(f"FAIL {what}: at {i}: stored {got[i]!r}, recomputed {want[i]!r} "
              f"(|diff| {abs(got[i] - want[i]):.3g}, beyond {limit})")
    else:
        passed += 1


def check_rel(what, got, want, rtol, atol):
    check(what, got, want, rtol, atol)


def pair_dims(rd, layout):
    """The two dims (a, b) of every rotary pair in the layout."""
    if layout == "neox":
        return np.arange(rd // 2), np.arange(rd // 2) + rd // 2
    return 2 * np.arange(rd // 2), 2 * np.arange(rd // 2) + 1


def rotate_by(x, c, s, rd, layout, af):
    """Rotate the pairs of x [n][d] by the angles whose cos/sin are c, s [n][rd/2], times
    af, in the dtype of x (float32 arithmetic for float32 inputs); other dims stay."""
    a, b = pair_dims(rd, layout)
    y = x.copy()
    xa, xb = y[:, a].copy(), y[:, b].copy()
    y[:, a] = (xa * c - xb * s) * af if x.dtype == np.float64 else xa * c - xb * s
    y[:, b] = (xa * s + xb * c) * af if x.dtype == np.float64 else xb * c + xa * s
    return y, a, b


def rotate(x, pos, inv, rd, layout, af):
    """RoPE in float64 with phases reduced mod 2 pi; x [n][d], pos [n]."""
    ang = np.mod(np.outer(pos.astype(np.float64), inv), 2 * np.pi)
    return rotate_by(x.astype(np.float64), np.cos(ang), np.sin(ang), rd, layout, af)


def rotate_exact(x, pos, inv, rd, layout, af):
    """RoPE in float64 with exactly reduced phases (two-product, oracle_metrics_phase)."""
    ang = phase_oracle.phase(pos.astype(np.float64)[:, None], inv[None, :])
    return rotate_by(x.astype(np.float64), np.cos(ang), np.sin(ang), rd, layout, af)


def phase_fp32(pos, inv):
    """The angles fp32 RoPE code forms: float(pos) * float(inv_freq), a float product."""
    return pos.astype(np.float32)[:, None] * inv.astype(np.float32)[None, :]


def phase_err(pos, inv):
    """|wrap(fp32 angle - exact angle)| [n][pairs]: the float angle minus the two-product
    pos*inv = p + e (Sterbenz: float - p is exact, the angles being that close)."""
    x = np.broadcast_to(pos.astype(np.float64)[:, None], (pos.size, inv.size))
    p, e = phase_oracle._two_prod(x, np.broadcast_to(inv[None, :], x.shape))
    return np.abs(phase_oracle.wrap((phase_fp32(pos, inv).astype(np.float64) - p) - e))


_libm = ctypes.CDLL(ctypes.util.find_library("m"))
for _f in (_libm.cosf, _libm.sinf):
    _f.restype, _f.argtypes = ctypes.c_float, [ctypes.c_float]
_cosf = np.vectorize(lambda x: _libm.cosf(float(x)), otypes=[np.float32])
_sinf = np.vectorize(lambda x: _libm.sinf(float(x)), otypes=[np.float32])


def rotate_fp32phase(x, pos, inv, rd, layout, af):
    """What kernels/ref/rope_fp32phase.c computes, in float32 numpy: angle a =
    float(pos) * float(inv_freq) in float, c = cosf(a) * float(af), s = sinf(a) * float(af)
    (libm's cosf/sinf, called through ctypes: they are not always the correctly rounded
    value, and the run's reference build calls them), x1 c - x2 s and x2 c + x1 s in float,
    each product and sum rounded (no fused multiply-add)."""
    a = phase_fp32(pos, inv)
    af32 = np.float32(af)
    return rotate_by(x.astype(np.float32), _cosf(a) * af32, _sinf(a) * af32, rd, layout,
                     None)


def logsumexp(s):
    """log sum exp(s) over the last axis (-inf entries count 0)."""
    m = s.max(axis=-1)
    return m + np.log(np.exp(s - m[..., None]).sum(axis=-1))


def attr(g, k):
    v = g.attrs[k]
    return v.decode() if isinstance(v, bytes) else v


def exact_scores(q_all, k_all, pos, inv, rd, layout, af, scale):
    """Scores [H][rows][L] of the stored rows against every key as the run forms them:
    q and k rotated with exact phases, rounded to float32 (the kernels' inputs), then
    scale * <q, k> in float64; keys after the row's position are -inf."""
    H, L = k_all.shape[0], k_all.shape[1]
    kpos = np.arange(L)
    S = np.empty((H, pos.size, L))
    for h in range(H):
        kr = rotate_exact(k_all[h], kpos, inv, rd, layout, af)[0].astype(np.float32)
        qr = rotate_exact(q_all[h][pos], pos, inv, rd, layout, af)[0].astype(np.float32)
        S[h] = scale * (qr.astype(np.float64) @ kr.astype(np.float64).T)
    S[:, kpos[None, :] > pos[:, None]] = -np.inf
    return S


def masked_entropy(S):
    """Entropy (nats) of softmax over the last axis of S, -inf entries excluded."""
    z = S - S.max(axis=-1, keepdims=True)
    w = np.exp(z)
    l = w.sum(axis=-1)
    with np.errstate(invalid="ignore"):  # 0 * -inf of the masked keys, dropped
        return np.log(l) - np.where(w > 0, w * z, 0.0).sum(axis=-1) / l


def entropy_rows(name, c, pos, S):
    """3. rows/entropy_normalized = H / log(visible keys), NaN where one key is visible;
    H recomputed from the inputs. Tolerance 1e-9 relative: the run's entropy comes from
    the same float32 rotated inputs with double scores."""
    Hx = masked_entropy(S)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.where(pos[None, :] > 0, Hx / np.log(pos[None, :] + 1.0), np.nan)
    check_rel(f"{name} rows/entropy_normalized", c["rows/entropy_normalized"][()], want,
              1e-9, 1e-12)


def softmax_floor(name, c, pos, S):
    """8. Per row and head: n visible keys, p_min * n = exp(min s - lse) * n with the lse
    recomputed here, floor = exp(-2 max|s|), ratio; per row the head of the smallest
    ratio (softmax_floor), per position bin (those of entropy/by_position that hold
    rows) the count of (row, head) and the smallest ratio and p_min * n
    (softmax_floor_by_position). Tolerance 1e-9 relative: same scores as the run."""
    vis = np.isfinite(S)
    n = vis.sum(axis=-1)
    lse = logsumexp(S)
    smin = np.where(vis, S, np.inf).min(axis=-1)
    R = np.where(vis, np.abs(S), 0).max(axis=-1)
    mwn = np.exp(smin - lse) * n
    flo = np.exp(-2 * R)
    with np.errstate(divide="ignore"):
        # in log form: past |s| ~ 372 both p_min * n and the floor underflow to 0
        ratio = np.exp(smin - lse + np.log(n) + 2 * R)
    hmin = np.argmin(ratio, axis=0)
    rows = np.arange(pos.size)
    g = c["softmax_floor"]
    check(f"{name} softmax_floor position", g["position"][()], pos, 0)
    for key, v in (("min_weight_times_n", mwn), ("floor", flo), ("ratio", ratio)):
        check_rel(f"{name} softmax_floor {key}", g[key][()], v[hmin, rows], 1e-9, 0)
    if np.any(g["ratio"][()] < 1 - 1e-9):
        check(f"{name} softmax floor ratio >= 1", g["ratio"][()].min(), 1.0, 0)
    gb = c["softmax_floor_by_position"]
    ge = c["entropy/by_position"]
    nbins = int(config_value(c.file, "metrics", "position_bins"))
    edges = np.array(phase_oracle.bins(int(attr(c, "seq_len")), nbins))
    b = np.searchsorted(edges, pos, side="right") - 1
    held = np.unique(b)
    check(f"{name} softmax_floor_by_position bin_start", gb["bin_start"][()], edges[held], 0)
    check(f"{name} softmax_floor_by_position bin_end", gb["bin_end"][()], edges[held + 1], 0)
    check(f"{name} softmax_floor_by_position = entropy bins", gb["bin_start"][()],
          ge["bin_start"][()], 0)
    check(f"{name} softmax_floor_by_position position", gb["position"][()],
          ge["position"][()], 0)
    H = S.shape[0]
    check(f"{name} softmax_floor_by_position count", gb["count"][()],
          [H * np.count_nonzero(b == i) for i in held], 0)
    check_rel(f"{name} softmax_floor_by_position min_ratio", gb["min_ratio"][()],
              [ratio[:, b == i].min() for i in held], 1e-9, 0)
    check_rel(f"{name} softmax_floor_by_position min_weight_times_n",
              gb["min_weight_times_n"][()], [mwn[:, b == i].min() for i in held], 1e-9, 0)


def precision(name, c, pos, S_exact, q_all, k_all, inv, rd, layout, af, scale):
    """7. Phase precision per probe row (docs/metrics.md):
    - phase_err_max / phase_err_mean: max / mean over pairs of |wrap(fp32 angle - exact)|
      at the row's position (the same for every head). Tolerance 1e-6 relative + 1e-12
      rad (measured: 3e-8): the run reduces the float angle in double (~1e-13 rad at
      these positions).
    - score_err_max: on the keys at multiples of ceil(L / precision_keys) that the row
      sees, max |scale * (<q_f, k_f> - <q_e, k_e>)| over keys and heads, q and k rotated
      in float64 with the fp32 angles (q_f, k_f) and the exact ones (q_e, k_e).
      Tolerance 1e-5 relative + 1e-13 (measured: 4e-7): the terms differ only in
      summation order.
    - entropy_err: H of the attention over all visible keys on q and k rotated as
      rope_fp32phase.c does (float32 angle, cos/sin rounded to float, times float af,
      rotation in float) minus H on the exactly rotated float32 inputs; per row the
      signed mean over heads. Tolerance 1e-5 relative + 1e-13 nats (measured: 3e-7):
      both entropies come from the same float32 inputs with double scores, and differ
      only in summation order (~1e-15 nats each), while the stored differences are
      >= 4e-9 nats on the small study (they are of the float rounding's size there).
    - bound_ratio_max: per row the max over heads and visible sampled keys of |ds| /
      (2 sin(eps/2) sum_j rho_j), eps = max_j |wrap(q's phase error - k's)| (fp32 angle
      minus exact, signed), rho_j = |scale| |q_j||k_j| of the exactly rotated pairs; 0
      where |ds| is within 64 double ulps of |s| + sum rho (rounding, no phase effect).
      Tolerance 1e-5 relative + 1e-6 (ratios at the noise edge are ~1e-9). And <= 1."""
    pg = c["precision"]
    L = int(attr(c, "seq_len"))
    H = q_all.shape[0]
    P = int(config_value(c.file, "metrics", "precision_keys"))
    stride = -(-L // P)
    ks = np.arange(0, L, stride)
    check(f"{name} precision precision_keys", attr(pg, "precision_keys"), P, 0)
    check(f"{name} precision key_stride", attr(pg, "key_stride"), stride, 0)
    check(f"{name} precision sampled_keys", attr(pg, "sampled_keys"), ks.size, 0)
    check(f"{name} precision position", pg["position"][()], pos, 0)
    pe = phase_err(pos, inv)
    check_rel(f"{name} precision phase_err_max", pg["phase_err_max"][()], pe.max(axis=1),
              1e-6, 1e-12)
    check_rel(f"{name} precision phase_err_mean", pg["phase_err_mean"][()], pe.mean(axis=1),
              1e-6, 1e-12)
    score_err = np.zeros((H, pos.size))
    ent_err = np.zeros((H, pos.size))
    ratio_max = np.zeros((H, pos.size))

    def signed_err(x):  # fp32 angle - exact (two-product), wrapped, [n][pairs]
        xx = np.broadcast_to(x.astype(np.float64)[:, None], (x.size, inv.size))
        p_, e_ = phase_oracle._two_prod(xx, np.broadcast_to(inv[None, :], xx.shape))
        return phase_oracle.wrap((phase_fp32(x, inv).astype(np.float64) - p_) - e_)
    qerr, kerr = signed_err(pos), signed_err(ks)
    eps = np.abs(phase_oracle.wrap(qerr[:, None, :] - kerr[None, :, :])).max(axis=2)
    eps = np.minimum(eps, np.pi)
    pf = phase_fp32(pos, inv).astype(np.float64)
    kf_ang = phase_fp32(ks, inv).astype(np.float64)
    vis = ks[None, :] <= pos[:, None]
    for h in range(H):
        qe = rotate_exact(q_all[h][pos], pos, inv, rd, layout, af)[0]
        ke = rotate_exact(k_all[h][ks], ks, inv, rd, layout, af)[0]
        qf = rotate_by(q_all[h][pos].astype(np.float64), np.cos(pf), np.sin(pf), rd, layout, af)[0]
        kf = rotate_by(k_all[h][ks].astype(np.float64), np.cos(kf_ang), np.sin(kf_ang), rd,
                       layout, af)[0]
        ds = np.abs(scale * (qf @ kf.T - qe @ ke.T))
        score_err[h] = np.where(vis, ds, 0).max(axis=1)
        a_, b_ = pair_dims(rd, layout)
        rho = abs(scale) * (np.hypot(qe[:, a_], qe[:, b_]) @ np.hypot(ke[:, a_], ke[:, b_]).T)
        noise = 64.0 * np.finfo(np.float64).eps * (np.abs(scale * (qe @ ke.T)) + rho)
        bound = 2.0 * np.sin(0.5 * eps) * rho
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(ds <= noise, 0.0, np.where(bound > 0, ds / bound, np.inf))
        ratio_max[h] = np.where(vis, ratio, 0).max(axis=1)
        q32 = rotate_fp32phase(q_all[h][pos], pos, inv, rd, layout, af)[0].astype(np.float64)
        k32 = rotate_fp32phase(k_all[h], np.arange(L), inv, rd, layout, af)[0].astype(np.float64)
        Sf = scale * (q32 @ k32.T)
        Sf[np.isinf(S_exact[h])] = -np.inf
        ent_err[h] = masked_entropy(Sf) - masked_entropy(S_exact[h])
    check_rel(f"{name} precision score_err_max", pg["score_err_max"][()],
              score_err.max(axis=0), 1e-5, 1e-13)
    check_rel(f"{name} precision entropy_err", pg["entropy_err"][()],
              ent_err.mean(axis=0), 1e-5, 1e-13)
    br = pg["bound_ratio_max"][()]
    check_rel(f"{name} precision bound_ratio_max", br, ratio_max.max(axis=0), 1e-5, 1e-6)
    check(f"{name} precision bound_ratio_max attribute", attr(pg, "bound_ratio_max"),
          ratio_max.max(), 1e-5)
    if not (br.max() <= 1.0):  # (NaN too)
        check(f"{name} precision bound ratio <= 1", br.max(), 1.0, 0)
    else:
        global passed
        passed += 1


def config_value(f, section, key):
    """A key of the run's resolved config (root attribute config_text)."""
    sec = None
    for line in attr(f, "config_text").splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            sec = line.strip("[]").strip()
        elif "=" in line and sec == section:
            k, v = (x.strip() for x in line.split("=", 1))
            if k == key:
                return v
    raise KeyError(f"{section}.{key} not in config_text")


def config_or(f, section, key, default):
    try:
        return config_value(f, section, key)
    except KeyError:
        return default


def centres(e):
    """Bin centres as docs/metrics.md defines them: a bin [a, b) of one value is a; else
    the geometric mean of its first and last value, rounded to the nearest integer."""
    return np.array([float(e[i]) if e[i + 1] - e[i] <= 1 else
                     math.floor(math.sqrt(float(e[i]) * (e[i + 1] - 1.0)) + 0.5)
                     for i in range(len(e) - 1)])


def check_schedule(name, c):
    """The case's inv_freq, attention factor and scale, which every oracle below takes
    from the file, recomputed from the study (config_text) and the case's method,
    factor and length alone (oracle_schedules' HF formulas): a run that built its
    schedule from a wrong key would otherwise agree with itself."""
    f = c.file
    num = lambda s, k: float(config_value(f, s, k))
    d = int(num("model", "head_dim"))
    rd_s = config_value(f, "model", "rotary_dim")
    rd = d if rd_s == "auto" else int(rd_s)
    opt = lambda k: None if config_value(f, "scaling", k) in ("unset", "") else num("scaling", k)
    lst = lambda k: [float(x) for x in config_value(f, "scaling", k).split(",") if x.strip()]
    setting = attr(c, "attention_factor_setting")
    factors = [float(x) for x in config_value(f, "scaling", "factor").split(",")]
    if attr(c, "method") != "none":
        check(f"{name} factor is the study's", float(attr(c, "factor")) in factors, True, 0)
    sc = {"method": attr(c, "method"), "dim": rd, "base": num("model", "base"),
          "factor": float(attr(c, "factor")), "orig": int(num("model", "original_ctx")),
          "seq_len": int(attr(c, "seq_len")),
          "attention_factor": None if setting in ("auto", "unused") else float(setting),
          "mscale": opt("mscale"), "mscale_all_dim": opt("mscale_all_dim"),
          "beta_fast": num("scaling", "beta_fast"), "beta_slow": num("scaling", "beta_slow"),
          "truncate": config_value(f, "scaling", "truncate").lower() in ("true", "yes", "on", "1"),
          "low_freq_factor": num("scaling", "low_freq_factor"),
          "high_freq_factor": num("scaling", "high_freq_factor"),
          "short_factor": lst("short_factor"), "long_factor": lst("long_factor")}
    inv, af = oracle_schedules.hf_schedule(sc)[:2]
    check_rel(f"{name} freqs/inv_freq (HF formulas from the study)", c["freqs/inv_freq"][()],
              inv, 1e-12, 0.0)
    # the base frequencies too: the trained spans, ood, critical pair, bands and D all
    # come from them, and would agree with a wrong one (head_dim for rotary_dim)
    base = oracle_schedules.hf_schedule(dict(sc, method="none", factor=1.0))[0]
    check_rel(f"{name} freqs/inv_freq_base (base^(-2j/rotary_dim) from the study)",
              c["freqs/inv_freq_base"][()], base, 1e-12, 0.0)
    check(f"{name} attention_factor (HF formulas from the study)",
          float(attr(c, "attention_factor")), af, 1e-12)
    check(f"{name} scale = 1/sqrt(head_dim)", float(attr(c, "scale")), 1 / math.sqrt(d), 1e-15)


def case(name, c):
    check_schedule(name, c)
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

    # the bins, from the study's keys alone (docs/metrics.md): never the stored edges
    pe = np.array(phase_oracle.bins(L, int(config_value(c.file, "metrics", "position_bins"))))
    de = np.array(phase_oracle.bins(L, int(config_value(c.file, "metrics", "distance_bins"))))

    # 3. entropy by position: the bins that hold rows, their centres, every row counted
    g = c["entropy/by_position"]
    held = np.unique(np.searchsorted(pe, pos, side="right") - 1)
    check(f"{name} entropy bin_start", g["bin_start"][()], pe[held], 0)
    check(f"{name} entropy bin_end", g["bin_end"][()], pe[held + 1], 0)
    check(f"{name} entropy position (bin centres)", g["position"][()], centres(pe)[held], 0)
    check(f"{name} entropy count total", g["count"][()].sum(), H * pos.size, 0)
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
    check(f"{name} inv_freq_base", g["inv_freq_base"][()], base, 0)
    check(f"{name} inv_freq", g["inv_freq"][()], inv, 0)
    check(f"{name} wavelength", g["wavelength"][()], 2 * np.pi / inv, 1e-12)
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
    check(f"{name} phase/by_distance distance (bin centres)", dist2, centres(de), 0)
    band = phase_oracle.bands(base, L0, float(config_or(c.file, "scaling", "beta_fast", 32)),
                              float(config_or(c.file, "scaling", "beta_slow", 1)))
    check(f"{name} band", g["band"][()], band, 0)
    rows = np.array(phase_oracle.distance(base, inv, w, band, L0, dist2))  # [nd, 6]
    for col, key in enumerate(("D", "D_high", "D_mid", "D_low", "ood_frac_count",
                               "ood_frac_energy")):
        check(f"{name} {key}", g[key][()], rows[:, col], 1e-9)
    check(f"{name} D_leaves_zero", attr(g, "D_leaves_zero"),
          phase_oracle.d_leaves_zero(base, inv, w, L0, L - 1), 0)

    # 4. analytic decay
    g = c["decay/by_distance"]
    dist = g["distance"][()]
    check(f"{name} decay distance (bin centres)", dist, centres(de), 0)
    check(f"{name} decay bin_start", g["bin_start"][()], de[:-1], 0)
    check(f"{name} decay bin_end", g["bin_end"][()], de[1:], 0)
    B = np.cos(np.outer(dist, inv)).sum(axis=1)
    check(f"{name} B", g["B"][()], B, 1e-9)
    # RoFormer: (1/np) sum_{i=1..np} |S_i|, S_i = sum_{k<i} e^{i delta theta'_k}
    Si = np.cumsum(np.exp(1j * np.outer(dist, inv)), axis=1)
    check(f"{name} roformer_bound", g["roformer_bound"][()], np.abs(Si).sum(axis=1) / np_,
          1e-9)
    deltas = np.arange(1, L, dtype=np.float64)  # [1, L-1]: the case's distances
    Ball = np.concatenate([np.cos(np.outer(ch, inv)).sum(axis=1)
                           for ch in np.array_split(deltas, max(1, L // 4096))])
    neg = np.flatnonzero(Ball < 0)
    check(f"{name} first_negative_B", attr(g, "first_negative_B"),
          int(deltas[neg[0]]) if neg.size else -1, 0)

    if "inputs" not in c:
        # the data-driven metrics need the dumped inputs: a file without them is not
        # what this oracle checks (a run without --dump-inputs)
        check(f"{name} has inputs/ (run with --dump-inputs)", 0, 1, 0)
        return
    q_all, k_all = c["inputs/q"][()], c["inputs/k"][()]
    S_exact = exact_scores(q_all, k_all, pos, inv, rd, layout, af, scale)
    entropy_rows(name, c, pos, S_exact)
    # the rows' lse and entropy themselves, recomputed: the data-driven metrics below
    # weigh with this lse, not the file's (which they would otherwise agree with however
    # wrong); the reference kernel's to 1e-9, an fp32 kernel's to the 1e-5
    # (relative, and absolute for values near 0)
    lse_x = logsumexp(S_exact)
    ref_k = attr(c, "kernel") == "ref"
    check_rel(f"{name} rows/lse", lse, lse_x, 1e-9 if ref_k else 1e-5, 1e-12 if ref_k else 1e-5)
    check_rel(f"{name} rows/entropy", ent, masked_entropy(S_exact), 1e-9 if ref_k else 1e-5,
              1e-12 if ref_k else 1e-5)
    if mode != "probe":
        # full mode's weights: the mean over heads of each head's E|q_j| E|k_j| over all
        # its rows (the rotated fp32 rows' pair norms), never one head's q with
        # another's k
        wf = np.zeros(np_)
        for h in range(H):
            allpos = np.arange(L)
            qr, a, b = rotate(q_all[h], allpos, inv, rd, layout, af)
            kr = rotate(k_all[h], allpos, inv, rd, layout, af)[0]
            qr, kr = qr.astype(np.float32).astype(np.float64), kr.astype(np.float32).astype(np.float64)
            wf += np.hypot(qr[:, a], qr[:, b]).mean(axis=0) * np.hypot(kr[:, a], kr[:, b]).mean(axis=0)
        check(f"{name} phase weights (full mode)", c["phase/by_distance/weight"][()], wf / H,
              1e-6)
        return
    # data-driven, probe mode: from the dumped inputs
    kpos = np.arange(L)
    blo, bhi = g["bin_start"][()], g["bin_end"][()]
    nb = blo.size
    count = np.zeros(nb)
    ssum = np.zeros(nb)
    ssum2 = np.zeros(nb)
    snum = np.zeros((nb, np_))
    sden = np.zeros(nb)
    rho = np.zeros(np_)
    needles = {}
    if "needles" in c:
        ng = c["needles"]
        for i in range(ng["head"].shape[0]):
            needles[(int(ng["head"][i]), int(ng["query_pos"][i]), int(ng["needle_pos"][i]))] = i
    # the needles the study plants (docs/config.md: negative positions count from the
    # end), each with its query, in every head: the table must hold exactly these
    want_needles = set()
    if attr(c, "dataset") == "needle":
        npos = [int(x) for x in config_value(c.file, "needle", "positions").split(",") if x.strip()]
        nqry = [int(x) for x in config_value(c.file, "needle", "query_positions").split(",")
                if x.strip()]
        want_needles = {(h, q if q >= 0 else L + q, k if k >= 0 else L + k)
                        for h in range(H) for q, k in zip(nqry, npos)}
    check(f"{name} needles: the table holds the planted (head, query, needle) triples",
          float(set(needles) == want_needles), 1.0, 0)
    check(f"{name} pair_share distance (bin centres)", c["pair_share/distance"][()],
          centres(de), 0)
    n_score = np.zeros(len(needles))
    n_mass = np.zeros(len(needles))
    n_rank = np.zeros(len(needles))
    n_rank_h = np.zeros(len(needles))
    for h in range(H):
        kr, a, b = rotate(k_all[h], kpos, inv, rd, layout, af)
        qr, _, _ = rotate(q_all[h][pos], pos, inv, rd, layout, af)
        for r, p in enumerate(pos):
            vis = kr[: p + 1]
            s = scale * vis @ qr[r]
            dd = p - np.arange(p + 1)
            bi = np.searchsorted(bhi, dd, side="right")
            pr = np.exp(s - lse_x[h, r])
            # the share leaves out pairs of p < 1e-30 (docs/metrics.md, 5.); they appear
            # only where logits are large
            ps = np.where(pr < 1e-30, 0.0, pr)
            cj = scale * (qr[r, a] * vis[:, a] + qr[r, b] * vis[:, b])
            np.add.at(count, bi, 1)
            np.add.at(ssum, bi, s)
            np.add.at(ssum2, bi, s * s)
            np.add.at(sden, bi, ps)
            np.add.at(snum, bi, ps[:, None] * cj)
            rho += (np.hypot(qr[r, a], qr[r, b])[None, :] * np.hypot(vis[:, a], vis[:, b])).sum(axis=0)
            # ranks are compared exactly, so from the scores as the run forms them
            # (float32 rows rotated with exact phases, S_exact), not from this loop's
            # float64 rows, which differ by ~1e-7 and could reorder a near tie
            sx = S_exact[h, r, : p + 1]
            for (nh, nq, nk), i in needles.items():
                if nh == h and nq == p:
                    n_score[i] = sx[nk]
                    n_mass[i] = np.exp(sx[nk] - lse_x[h, r])
                    n_rank[i] = 1 + np.count_nonzero(np.delete(sx, nk) > sx[nk])
                    # against the haystack: every needle position of this query left out
                    mine = sorted({k2 for (h2, q2, k2) in needles if h2 == h and q2 == p})
                    n_rank_h[i] = 1 + np.count_nonzero(np.delete(sx, mine) > sx[nk])
    check(f"{name} decay count", g["count"][()], count, 0)
    check(f"{name} phase weights E[rho]", c["phase/by_distance/weight"][()], rho / count.sum(), 1e-5)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = ssum / count
        check(f"{name} decay mean_score", g["mean_score"][()], m, 1e-5)
        sdv = np.where(count > 0, np.sqrt(np.maximum(ssum2 / count - m * m, 0)), np.nan)
        check(f"{name} decay std_score", g["std_score"][()], sdv, 1e-5)
        check(f"{name} pair_share", c["pair_share/share"][()], snum / sden[:, None], 1e-5)
    if needles:
        ng = c["needles"]
        check(f"{name} needle score", ng["score"][()], n_score, 1e-5)
        check(f"{name} needle mass", ng["mass"][()], n_mass, 1e-5)
        check(f"{name} needle rank", ng["rank"][()], n_rank, 0)
        check(f"{name} needle hit", ng["hit"][()], (n_rank == 1).astype(float), 0)
        check(f"{name} needle rank_haystack", ng["rank_haystack"][()], n_rank_h, 0)
        check(f"{name} needle hit_haystack", ng["hit_haystack"][()],
              (n_rank_h == 1).astype(float), 0)
    softmax_floor(name, c, pos, S_exact)
    if int(config_or(c.file, "metrics", "precision_keys", 0)) > 0 or "precision" in c:
        if "precision" not in c:
            check(f"{name} precision group present (precision_keys > 0)", 0, 1, 0)
        else:
            precision(name, c, pos, S_exact, q_all, k_all, inv, rd, layout, af, scale)


def main():
    global ONLY
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "--only":
        ONLY, args = args[1], args[2:]
    with h5py.File(args[0], "r") as f:
        for name in sorted(f["cases"]):
            c = f["cases"][name]
            if c.attrs.get("complete") != 1:
                continue
            if "entropy" not in c:  # a complete case of a study with metrics has them
                if config_or(f, "metrics", "enabled", "true").lower() in ("true", "yes",
                                                                          "on", "1"):
                    check(f"{name} has its metric groups", 0, 1, 0)
                continue
            case(name, c)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
