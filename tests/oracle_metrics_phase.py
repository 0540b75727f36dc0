#!/usr/bin/python3
# oracle_metrics_phase.py — an independent numpy float64 implementation of the analytic phase metrics (bins, bands, phase table, D(delta) by brute force over t, decay bounds, first negative B), compared with dump_metrics_phase.
"""Compare ropebench's analytic phase metrics with a brute-force numpy computation.

Usage: oracle_metrics_phase.py /path/to/dump_metrics_phase /path/to/dump_schedule

Schedules of every method come from dump_schedule (itself checked against the HF
formulas by oracle_schedules.py). Phases are formed exactly here too, but another way:
a Veltkamp/Dekker two-product of delta*theta and a two-term 2*pi, all in float64 numpy.
D(delta) is the plain minimum over every trained distance t < L0 of the weighted RMS.
Real outputs must agree to 1e-9 relative (1e-12 absolute near 0); integers exactly.
Exit status 1 on any mismatch.
"""
import math
import subprocess
import sys

import numpy as np

REL_TOL = 1e-9
ABS_TOL = 1e-12
TWO_PI_HI = 6.283185307179586             # 2*pi rounded to double
TWO_PI_LO = 2.4492935982947064e-16        # 2*pi - TWO_PI_HI
PI = math.pi


# ---- exact phases ------------------------------------------------------------------

def _split(a):
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def wrap(x):
    """x in [-3pi, 3pi] -> [-pi, pi]."""
    x = np.where(x > PI, x - TWO_PI_HI, x)
    return np.where(x < -PI, x + TWO_PI_HI, x)


def phase(x, theta):
    """x*theta mod 2pi in [-pi, pi], x and theta float64 arrays (broadcast)."""
    x, theta = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(theta, np.float64))
    p, e = _two_prod(x, theta)
    k = np.rint(p / TWO_PI_HI)
    kh, kl = _two_prod(k, np.full_like(k, TWO_PI_HI))
    r = ((p - kh) - kl) + (e - k * TWO_PI_LO)
    for _ in range(2):
        r = wrap(r)
    return r


# ---- the metrics -------------------------------------------------------------------

def bins(L, nbins):
    if L < 2 or nbins < 2:
        return None
    m = nbins - 1
    e = [0, 1]
    for k in range(1, m + 1):
        v = L if k == m else min(L, int(math.floor(math.exp(math.log(L) * k / m) + 0.5)))
        if v > e[-1]:
            e.append(v)
    return e


def bands(theta, L0, bf, bs):
    bf = bf if bf > 0 else 32.0
    bs = bs if bs > 0 else 1.0
    with np.errstate(divide="ignore"):
        wl = np.where(theta > 0, 2 * math.pi / theta, np.inf)
    return np.where(wl < L0 / bf, 0, np.where(wl > L0 / bs, 2, 1))


def pairs(theta, thetap, L0, L):
    span = theta * float(L0 - 1)
    mx = thetap * float(L - 1)
    ood = (span < 2 * math.pi) & (mx > span)
    crit = np.nonzero(span < 2 * math.pi)[0]
    return span, mx, mx / (2 * math.pi), ood.astype(int), int(crit[0]) if len(crit) else len(theta)


def distance(theta, thetap, w, band, L0, deltas):
    t = np.arange(L0, dtype=np.float64)
    trained = phase(t[:, None], theta[None, :])            # [L0, np]
    # columns: all pairs, then bands 0, 1, 2 (weights outside the group zeroed)
    M = np.stack([w] + [np.where(band == b, w, 0.0) for b in range(3)], axis=1)
    Wq = M.sum(axis=0)
    span = theta * float(L0 - 1)
    out = []
    for d in deltas:
        a = phase(d, thetap)
        diff = wrap(a[None, :] - trained)
        S = (diff * diff) @ M                               # [L0, 4]
        Dq = [math.sqrt(S[:, q].min() / Wq[q]) if Wq[q] > 0 else math.nan
              for q in range(4)]
        ood = (span < 2 * math.pi) & (thetap * d > span)
        out.append(Dq + [ood.sum() / len(theta), w[ood].sum() / Wq[0]])
    return out


def d_leaves_zero(theta, thetap, w, L0, max_delta, tol=1e-9):
    """First integer delta in [1, max_delta] with D(delta) > tol, by brute force over
    every trained distance, or -1."""
    trained = phase(np.arange(L0, dtype=np.float64)[:, None], theta[None, :])  # [L0, np]
    W = w.sum()
    chunk = max(1, (1 << 22) // max(1, L0 * len(theta)))
    for d0 in range(1, max_delta + 1, chunk):
        d = np.arange(d0, min(d0 + chunk, max_delta + 1), dtype=np.float64)
        a = phase(d[:, None], thetap[None, :])                           # [k, np]
        diff = wrap(a[:, None, :] - trained[None, :, :])                 # [k, L0, np]
        D = np.sqrt(((diff * diff) @ w).min(axis=1) / W)
        pos = np.nonzero(D > tol)[0]
        if len(pos):
            return int(d[pos[0]])
    return -1


def decay(thetap, deltas):
    out = []
    for d in deltas:
        ph = phase(d, thetap)
        z = np.cos(ph) + 1j * np.sin(ph)
        out.append([np.abs(np.cumsum(z)).mean(), np.cos(ph).sum()])
    return out


def first_negative_B(thetap, max_delta):
    for d0 in range(1, max_delta + 1, 4096):
        d = np.arange(d0, min(d0 + 4096, max_delta + 1), dtype=np.float64)
        B = np.cos(phase(d[:, None], thetap[None, :])).sum(axis=1)
        neg = np.nonzero(B < 0)[0]
        if len(neg):
            return int(d[neg[0]])
    return -1


# ---- the grid ----------------------------------------------------------------------

def schedules(dump_schedule):
    """(label, rotary_dim, base, L0, inv_freq_base, inv_freq) for a grid of methods."""
    specs = []
    rng = np.random.default_rng(5)
    for d in (64, 128):
        for base in (10000.0, 500000.0):
            for L0 in (256, 4096):
                common = f"--rotary-dim {d} --base {base} --original-ctx {L0}"
                specs.append(("none", d, base, L0, f"--method none {common}"))
                specs.append(("pi x8", d, base, L0, f"--method pi --factor 8 {common}"))
                specs.append(("ntk x4", d, base, L0, f"--method ntk --factor 4 {common}"))
                specs.append(("yarn x16 t1", d, base, L0,
                              f"--method yarn --factor 16 --truncate 1 {common}"))
                if base == 10000.0:
                    specs.append(("dynamic_ntk x4 L 8L0", d, base, L0,
                                  f"--method dynamic_ntk --factor 4 --seq-len {8 * L0} "
                                  f"{common}"))
                    specs.append(("yarn x8 t0", d, base, L0,
                                  f"--method yarn --factor 8 --truncate 0 {common}"))
                    specs.append(("llama3 x8", d, base, L0, f"--method llama3 --factor 8 "
                                  f"--low-freq-factor 1 --high-freq-factor 4 {common}"))
                    sf = ",".join(f"{v:.6f}" for v in 1 + rng.random(d // 2))
                    lf = ",".join(f"{v:.6f}" for v in 1 + 30 * rng.random(d // 2))
                    specs.append(("longrope x16", d, base, L0,
                                  f"--method longrope --factor 16 --seq-len {16 * L0} "
                                  f"--short-factor {sf} --long-factor {lf} {common}"))
    # odd trained lengths: one pair lane short of a tile, a partial tile, tiny
    for L0 in (1, 3, 2049, 5000):
        specs.append(("pi x2.5 odd L0", 64, 10000.0, L0,
                      f"--method pi --factor 2.5 --rotary-dim 64 --original-ctx {L0}"))
    text = "\n".join(f"--method none --rotary-dim {s[1]} --base {s[2]} "
                     f"--original-ctx {s[3]}\n{s[4]}" for s in specs) + "\n"
    out = subprocess.run([dump_schedule, "--batch"], input=text, capture_output=True,
                         text=True, check=True).stdout
    blocks, cur = [], []
    for line in out.splitlines():
        f = line.split()
        if f[0] == "error":
            raise SystemExit(f"dump_schedule: {line}")
        if f[0] == "inv_freq":
            cur.append(float(f[2]))
        elif f[0] == "end":
            blocks.append(np.array(cur))
            cur = []
    return [(s[0], s[1], s[2], s[3], blocks[2 * i], blocks[2 * i + 1])
            for i, s in enumerate(specs)]


def weights(np_, kind, rng, band):
    if kind == "flat":
        return np.ones(np_)
    if kind == "random":
        return rng.random(np_)
    if kind == "low":  # energy in the low-frequency pairs, as trained models show
        return np.linspace(0.05, 1.0, np_) ** 3
    if kind == "no-high":  # one band without weight: its D is NaN
        w = rng.random(np_) + 0.1
        w[band == 0] = 0
        return w
    raise ValueError(kind)


def close(c, o):
    if math.isnan(o) or math.isnan(c):
        return math.isnan(o) and math.isnan(c)
    return abs(c - o) <= REL_TOL * abs(o) + ABS_TOL


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    dump, dump_schedule = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(17)
    cases = []
    kinds = ("flat", "random", "low", "no-high")
    for n, (label, d, base, L0, base_f, inv) in enumerate(schedules(dump_schedule)):
        L = int(rng.choice([L0, 8 * L0, 1048576]))
        nbins = int(rng.choice([8, 32, 64]))
        bf, bs = [(32.0, 1.0), (0.0, 0.0), (16.0, 2.0)][n % 3]
        band = bands(base_f, L0, bf, bs)
        w = weights(d // 2, kinds[n % 4], rng, band)
        e = bins(L, nbins)
        deltas = [float(v) for v in e[:: max(1, len(e) // 10)]]
        deltas += [float(v) for v in rng.integers(0, 2 * L, 6)]
        deltas += [math.sqrt(e[-2] * (e[-1] - 1.0)), 2.5, 0.0, float(L0 - 1), float(L0)]
        max_delta = int(rng.choice([3000, 20000])) if d == 64 else 2000
        # D leaves 0: past L0 where the brute force is cheap (an unscaled schedule
        # leaves 0 exactly there), the first 300 distances where it is not
        max_delta_D = L0 + 16 if L0 <= 300 else 300
        cases.append(dict(label=label, d=d, base=base, L0=L0, L=L, nbins=nbins, bf=bf,
                          bs=bs, theta=base_f, thetap=inv, w=w, deltas=deltas,
                          max_delta=max_delta, max_delta_D=max_delta_D))
    # frequencies doubled (a compression, no real method): D(delta) = 0 through t =
    # 2 delta, which only the second quick candidate finds, until 2 delta reaches L0
    for d, L0 in ((64, 256), (32, 100)):
        theta = 10000.0 ** (-np.arange(d // 2) / (d // 2))
        cases.append(dict(label="doubled", d=d, base=10000.0, L0=L0, L=4 * L0, nbins=8,
                          bf=32.0, bs=1.0, theta=theta, thetap=2 * theta,
                          w=np.ones(d // 2), deltas=[1.0, 2.0, float(L0)], max_delta=200,
                          max_delta_D=L0 + 16))
    text = ""
    for c in cases:
        def fl(a):
            return " ".join(f"{v:.17g}" for v in a)
        text += (f"L0 {c['L0']}\nL {c['L']}\nnbins {c['nbins']}\nbeta {c['bf']} {c['bs']}\n"
                 f"max_delta {c['max_delta']}\nmax_delta_D {c['max_delta_D']}\n"
                 f"inv_freq_base {fl(c['theta'])}\n"
                 f"inv_freq {fl(c['thetap'])}\nw {fl(c['w'])}\ndelta {fl(c['deltas'])}\n"
                 "end\n")
    out = subprocess.run([dump], input=text, capture_output=True, text=True, check=True)
    results, cur = [], {"pair": [], "dist": [], "decay": []}
    for line in out.stdout.splitlines():
        f = line.split()
        if f[0] == "end":
            results.append(cur)
            cur = {"pair": [], "dist": [], "decay": []}
        elif f[0] in ("pair", "dist", "decay"):
            if f[1] == "error":
                cur[f[0]] = line
            else:
                cur[f[0]].append([float(v) for v in f[2:]])
        else:
            cur[f[0]] = f[1:]
    if len(results) != len(cases):
        print(f"FAIL: {len(results)} result blocks for {len(cases)} cases")
        return 1

    fails = checks = 0

    def report(ok, what, c, extra=""):
        nonlocal fails, checks
        checks += 1
        if not ok:
            fails += 1
            print(f"FAIL {what}: {c['label']} d {c['d']} base {c['base']:g} L0 {c['L0']} "
                  f"L {c['L']} nbins {c['nbins']} beta {c['bf']:g}/{c['bs']:g} {extra}")

    for c, r in zip(cases, results):
        e = bins(c["L"], c["nbins"])
        got = [int(v) for v in r["bins"][1:]]
        report(int(r["bins"][0]) == len(e) - 1 and got == e, "bins", c,
               f"got {r['bins'][:6]}... want {len(e) - 1} {e[:5]}...")
        band = bands(c["theta"], c["L0"], c["bf"], c["bs"])
        report([int(v) for v in r["bands"]] == list(band), "bands", c)
        span, mx, turns, ood, crit = pairs(c["theta"], c["thetap"], c["L0"], c["L"])
        report(int(r["critical"][0]) == crit, "critical pair", c,
               f"got {r['critical'][0]} want {crit}")
        # every pair and every distance answered (zip would stop at the shorter list)
        report(len(r["pair"]) == len(span), "phase table length", c,
               f"got {len(r['pair'])} rows want {len(span)}")
        for j, row in enumerate(r["pair"]):
            ok = (close(row[0], span[j]) and close(row[1], mx[j]) and close(row[2], turns[j])
                  and int(row[3]) == ood[j])
            report(ok, "phase table", c, f"pair {j}: got {row} want "
                   f"{[span[j], mx[j], turns[j], ood[j]]}")
        if isinstance(r["dist"], str):
            report(False, "phase distance", c, r["dist"])
            continue
        want = distance(c["theta"], c["thetap"], c["w"], band, c["L0"], c["deltas"])
        report(len(r["dist"]) == len(want), "phase distance length", c,
               f"got {len(r['dist'])} rows want {len(want)}")
        for i, (g, o) in enumerate(zip(r["dist"], want)):
            ok = all(close(a, b) for a, b in zip(g, o))
            report(ok, "D, D_high, D_mid, D_low, ood_count, ood_energy", c,
                   f"w {kinds[cases.index(c) % 4]} delta {c['deltas'][i]:.17g}: got {g} "
                   f"want {o}")
        want = decay(c["thetap"], c["deltas"])
        report(len(r["decay"]) == len(want), "decay length", c,
               f"got {len(r['decay'])} rows want {len(want)}")
        for i, (g, o) in enumerate(zip(r["decay"], want)):
            report(close(g[0], o[0]) and close(g[1], o[1]), "roformer bound, B", c,
                   f"delta {c['deltas'][i]:.17g}: got {g} want {o}")
        fn = first_negative_B(c["thetap"], c["max_delta"])
        report(int(r["first_negative"][0]) == fn, "first negative B", c,
               f"max_delta {c['max_delta']}: got {r['first_negative'][0]} want {fn}")
        dz = d_leaves_zero(c["theta"], c["thetap"], c["w"], c["L0"], c["max_delta_D"])
        report(r["d_leaves_zero"][0] != "error" and int(r["d_leaves_zero"][0]) == dz,
               "D leaves 0", c, f"w {kinds[cases.index(c) % 4]} max_delta "
               f"{c['max_delta_D']}: got {' '.join(r['d_leaves_zero'])} want {dz}")
    print(f"{checks - fails} passed, {fails} failed ({len(cases)} cases)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
