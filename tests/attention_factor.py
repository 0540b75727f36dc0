#!/usr/bin/env python3
"""attention_factor.py — one study with scaling.attention_factor = auto,1,1.5 shows YaRN's
temperature correction on and off side by side (docs/config.md, metric 3 of
docs/metrics.md). Per sequence length and mode (full and probe):

  - one yarn case per value, named -afauto, -af1, -af1.5, and one case for llama3 (which
    takes no factor), each recording its setting and the factor it resolved to
    (auto: 0.1 ln(factor) + 1), the yarn ones with the same frequencies;
  - the entropy falls as the factor grows (it scales the logits by its square, and
    dH/dbeta = -beta Var_p(s) < 0 for the softmax of beta * s): on every row past
    position 0 (never higher by more than 1e-12), in the mean over those rows by more
    than 1 %, in rows/entropy_normalized (NaN at position 0), and in entropy/by_position's
    mean and mean_normalized in every bin past [0, 1);

and the report keeps the entries apart: their own rows in the metric tables, their own
lines (labelled with the setting) in the plots.

usage: attention_factor.py WORK EXE CONFIG -- MPIEXEC... (the launcher up to -n)
"""
import math
import os
import subprocess
import sys

import h5py
import numpy as np

SETTINGS = ["1", "auto", "1.5"]  # increasing factor for the small study (auto = 1.139)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def study(mpi, exe, cfg, out, *sets):
    """Run the small study on 1 rank into out (replaced) with --set each of sets."""
    if os.path.exists(out):
        os.remove(out)
    subprocess.run(mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", out] +
                   [x for kv in sets for x in ("--set", kv)], check=True)


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "attention_factor.h5")
    study(mpi, exe, cfg, out, "scaling.methods=yarn,llama3",
          "scaling.attention_factor=auto,1,1.5", "study.datasets=gaussian")
    fails, groups = [], []
    with h5py.File(out, "r") as f:
        C = f["/cases"]
        first = C[sorted(C.keys())[0]]
        s = float(first.attrs["factor"])
        tag = f"x{s:g}"
        resolved = {"1": 1.0, "auto": 0.1 * math.log(s) + 1, "1.5": 1.5}
        want = set()
        for c in C.values():
            want.add((int(c.attrs["seq_len"]), text(c.attrs["mode"])))
        names = set()
        for L, mode in sorted(want):
            yarn = [f"yarn-{tag}-af{a}-L{L}-{mode}-gaussian" for a in SETTINGS]
            names.update(yarn + [f"llama3-{tag}-L{L}-{mode}-gaussian"])
            groups.append((L, mode, yarn))
        if names != set(C.keys()):
            fails.append(f"cases {sorted(C.keys())}, want {sorted(names)}")
        for L, mode, yarn in groups:
            if not all(n in C for n in yarn):
                continue
            g = [C[n] for n in yarn]
            for c, a in zip(g, SETTINGS):
                if text(c.attrs["attention_factor_setting"]) != a:
                    fails.append(f"{c.name}: attention_factor_setting "
                                 f"{text(c.attrs['attention_factor_setting'])!r}, want {a!r}")
                if abs(float(c.attrs["attention_factor"]) - resolved[a]) > 1e-12:
                    fails.append(f"{c.name}: attention_factor {c.attrs['attention_factor']!r}, "
                                 f"want {resolved[a]!r}")
            ll = C[f"llama3-{tag}-L{L}-{mode}-gaussian"]
            if text(ll.attrs["attention_factor_setting"]) != "unused" or \
                    float(ll.attrs["attention_factor"]) != 1.0:
                fails.append(f"{ll.name}: attention_factor_setting "
                             f"{text(ll.attrs['attention_factor_setting'])!r} and "
                             f"attention_factor {ll.attrs['attention_factor']!r}: llama3 takes "
                             f"none ('unused', 1)")
            inv = [c["phase/pairs/inv_freq"][()] for c in g]
            if any(not np.array_equal(inv[0], x) for x in inv[1:]):
                fails.append(f"L{L} {mode}: the yarn entries' inv_freq differ")
            far = g[0]["rows/position"][()] > 0
            h = [c["rows/entropy"][()][:, far] for c in g]
            hn = [c["rows/entropy_normalized"][()] for c in g]
            for k in range(2):
                lo, hi = SETTINGS[k + 1], SETTINGS[k]
                if (h[k + 1] > h[k] + 1e-12).any():
                    fails.append(f"L{L} {mode}: entropy at factor {lo} above factor {hi} in "
                                 f"{np.count_nonzero(h[k + 1] > h[k] + 1e-12)} rows")
                if not h[k + 1].mean() < 0.99 * h[k].mean():
                    fails.append(f"L{L} {mode}: mean entropy {h[k + 1].mean():.6f} at {lo} not "
                                 f"1 % below {h[k].mean():.6f} at {hi}")
                if (hn[k + 1][:, far] > hn[k][:, far] + 1e-12).any():
                    fails.append(f"L{L} {mode}: normalized entropy at {lo} above {hi}")
                bp = [c["entropy/by_position"] for c in g[k:k + 2]]
                past0 = bp[0]["bin_start"][()] > 0
                for col in ("mean", "mean_normalized"):
                    if not (bp[1][col][()][past0] < bp[0][col][()][past0]).all():
                        fails.append(f"L{L} {mode}: entropy/by_position {col} at {lo} not "
                                     f"below {hi} in every bin")
            if any(not np.isnan(x[:, ~far]).all() for x in hn):
                fails.append(f"L{L} {mode}: entropy_normalized not NaN at position 0")
            print(f"L{L} {mode}: mean row entropy (nats) at factor 1, auto "
                  f"({resolved['auto']:.4f}), 1.5: " + ", ".join(f"{x.mean():.6f}" for x in h))
        probe = [(L, y) for L, mode, y in groups if mode == "probe"]
    rep = os.path.join(work, "attention_factor_report")
    subprocess.run([exe, "report", out, "-o", rep], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(rep, "report.md")) as fh:
        md = fh.read()
    for L, yarn in probe:
        with open(os.path.join(rep, f"entropy-L{L}-probe-gaussian.svg")) as fh:
            svg = fh.read()
        for name, a in zip(yarn, SETTINGS):
            if f"| {name} |" not in md:
                fails.append(f"report.md has no table row for {name}")
            if f"yarn {tag} af {a}<" not in svg:
                fails.append(f"the entropy plot has no line labelled 'yarn {tag} af {a}'")
    if not groups or not probe:
        fails.append("no full or no probe case to check")
    # a factor with more digits than a case name's label keeps: the setting as given
    out2 = os.path.join(work, "attention_factor_digits.h5")
    study(mpi, exe, cfg, out2, "scaling.methods=yarn", "scaling.attention_factor=1.23456789",
          "study.datasets=gaussian", "study.modes=full")
    with h5py.File(out2, "r") as f:
        got = {text(c.attrs["attention_factor_setting"]) for c in f["/cases"].values()}
    if got != {"1.23456789"}:
        fails.append(f"attention_factor 1.23456789: settings stored {sorted(got)}")
    for m in fails:
        print("FAIL:", m)
    print(f"{len(groups)} groups checked, {len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
