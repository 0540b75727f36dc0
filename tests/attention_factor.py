#!/usr/bin/env python3
"""attention_factor.py — one study with scaling.attention_factor = auto,1,1.5 shows
YaRN's temperature correction on and off side by side: one case per value for yarn
(named -afauto, -af1, -af1.5), one for a method that does not take the factor, the
resolved factor and the setting recorded per case, the same frequencies for all three,
the row entropy falling as the factor grows (it scales every score by its square), and
the report keeping the entries apart in its tables and plot legends.

usage: attention_factor.py WORK EXE CONFIG -- MPIEXEC... (the launcher up to -n)
"""
import math
import os
import subprocess
import sys

import h5py
import numpy as np


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "attention_factor.h5")
    cmd = mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", out,
                 "--set", "scaling.methods=yarn,llama3",
                 "--set", "scaling.attention_factor=auto,1,1.5",
                 "--set", "study.modes=probe", "--set", "study.datasets=gaussian"]
    subprocess.run(cmd, check=True)
    fails = []
    with h5py.File(out, "r") as f:
        cases = sorted(f["/cases"].keys())
        factor = float(f["/cases"][cases[0]].attrs["factor"])
        L = int(f["/cases"][cases[0]].attrs["seq_len"])
        tag = f"x{factor:g}"
        want = {f"yarn-{tag}-afauto-L{L}-probe-gaussian": ("auto", 0.1 * math.log(factor) + 1),
                f"yarn-{tag}-af1-L{L}-probe-gaussian": ("1", 1.0),
                f"yarn-{tag}-af1.5-L{L}-probe-gaussian": ("1.5", 1.5),
                f"llama3-{tag}-L{L}-probe-gaussian": ("auto", 1.0)}
        if sorted(want) != cases:
            fails.append(f"cases {cases}, want {sorted(want)}")
        ent = {}
        for name, (setting, af) in want.items():
            if name not in f["/cases"]:
                continue
            g = f["/cases"][name]
            got_s = g.attrs["attention_factor_setting"]
            got_s = got_s.decode() if isinstance(got_s, bytes) else str(got_s)
            got_af = float(g.attrs["attention_factor"])
            if got_s != setting:
                fails.append(f"{name}: attention_factor_setting {got_s!r}, want {setting!r}")
            if abs(got_af - af) > 1e-12 * af:
                fails.append(f"{name}: attention_factor {got_af!r}, want {af!r}")
            ent[name] = float(np.mean(g["rows/entropy"][()]))
        yarn = [n for n in want if n.startswith("yarn") and n in f["/cases"]]
        inv = [f["/cases"][n]["phase/pairs/inv_freq"][()] for n in yarn]
        if any(not np.array_equal(inv[0], x) for x in inv[1:]):
            fails.append("the yarn entries' inv_freq differ (only the factor may)")
        names = [f"yarn-{tag}-af1-L{L}-probe-gaussian", f"yarn-{tag}-afauto-L{L}-probe-gaussian",
                 f"yarn-{tag}-af1.5-L{L}-probe-gaussian"]
        if all(n in ent for n in names):
            h = [ent[n] for n in names]
            print("mean row entropy (nats) at attention factor 1, auto "
                  f"({0.1 * math.log(factor) + 1:.4f}), 1.5: " + ", ".join(f"{x:.6f}" for x in h))
            if not h[0] > h[1] > h[2]:
                fails.append(f"entropy does not fall as the factor grows: {h}")
    # the report keeps the entries apart: their own rows in the metric tables, their own
    # lines (labelled with the setting) in the plots
    rep = os.path.join(work, "attention_factor_report")
    subprocess.run([exe, "report", out, "-o", rep], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(rep, "report.md")) as fh:
        md = fh.read()
    with open(os.path.join(rep, f"entropy-L{L}-probe-gaussian.svg")) as fh:
        svg = fh.read()
    for setting in ("auto", "1", "1.5"):
        name = f"yarn-{tag}-af{setting}-L{L}-probe-gaussian"
        if f"| {name} |" not in md:
            fails.append(f"report.md has no table row for {name}")
        if f"yarn {tag} af {setting}<" not in svg:
            fails.append(f"the entropy plot has no line labelled 'yarn {tag} af {setting}'")
    for m in fails:
        print("FAIL:", m)
    print(f"{0 if fails else 1} passed, {len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
