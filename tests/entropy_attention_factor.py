#!/usr/bin/env python3
"""entropy_attention_factor.py — YaRN's attention factor must show in the entropy (metric 3,
docs/metrics.md): the same small YaRN study run with scaling.attention_factor = auto
(0.1 ln s + 1, logits times its square) and = 1. Sharper logits lower the entropy of
every row that sees more than one key (dH/dbeta = -beta Var_p(s) < 0 for the softmax of
beta * s), so per case, in full and probe mode:

  - the attribute attention_factor is 0.1 ln(factor) + 1 and 1 (1e-12);
  - rows/entropy is lower with auto on every row past position 0 (never higher than
    1e-12 above), and its mean over those rows is lower by more than 1% of the mean;
  - rows/entropy_normalized is lower in the same rows, and NaN at position 0 in both;
  - entropy/by_position: mean and mean_normalized are lower in every bin past [0, 1).

usage: entropy_attention_factor.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import math
import os
import subprocess
import sys

import h5py
import numpy as np


def run(mpi, exe, cfg, out, af):
    if os.path.exists(out):
        os.remove(out)
    cmd = mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", out, "--set", "scaling.methods=yarn",
                 "--set", "study.datasets=gaussian", "--set", f"scaling.attention_factor={af}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    fa, f1 = os.path.join(work, "af_auto.h5"), os.path.join(work, "af_one.h5")
    run(mpi, exe, cfg, fa, "auto")
    run(mpi, exe, cfg, f1, "1")
    failed, checked = [], 0
    with h5py.File(fa, "r") as A, h5py.File(f1, "r") as B:
        names = sorted(A["cases"])
        if sorted(B["cases"]) != names or not names:
            sys.exit(f"FAIL: cases differ: {names} vs {sorted(B['cases'])}")
        for name in names:
            a, b = A["cases"][name], B["cases"][name]
            s = float(a.attrs["factor"])
            for c, want in ((a, 0.1 * math.log(s) + 1.0), (b, 1.0)):
                if abs(float(c.attrs["attention_factor"]) - want) > 1e-12:
                    failed.append(f"{name}: attention_factor {c.attrs['attention_factor']!r}, "
                                  f"expected {want!r}")
            pos = a["rows/position"][()]
            far = pos > 0
            ha, hb = a["rows/entropy"][()][:, far], b["rows/entropy"][()][:, far]
            if (ha > hb + 1e-12).any():
                failed.append(f"{name}: entropy higher with the attention factor in "
                              f"{np.count_nonzero(ha > hb + 1e-12)} rows")
            ma, mb = ha.mean(), hb.mean()
            if not ma < mb - 0.01 * mb:
                failed.append(f"{name}: mean entropy {ma:.6f} (auto) not below {mb:.6f} (1) "
                              f"by 1%")
            na, nb = a["rows/entropy_normalized"][()], b["rows/entropy_normalized"][()]
            if not (np.isnan(na[:, ~far]).all() and np.isnan(nb[:, ~far]).all()):
                failed.append(f"{name}: entropy_normalized not NaN at position 0")
            if (na[:, far] > nb[:, far] + 1e-12).any():
                failed.append(f"{name}: normalized entropy higher with the attention factor")
            ga, gb = a["entropy/by_position"], b["entropy/by_position"]
            past0 = ga["bin_start"][()] > 0
            for col in ("mean", "mean_normalized"):
                xa, xb = ga[col][()][past0], gb[col][()][past0]
                if not (xa < xb).all():
                    failed.append(f"{name}: entropy/by_position {col} not lower in every bin")
            checked += 1
    for f in failed:
        print("FAIL", f)
    print(f"{checked} cases checked, {len(failed)} failures")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
