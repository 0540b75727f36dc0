#!/usr/bin/env python3
"""progress_line.py — the line `ropebench run` prints per case ends with the case's mean
entropy: the mean over every row and head, as the results file and the report have it
(until 2026-12-02 it was rank 0's own rows of head 0). A 2-head study on 2 ranks (full
cases split across the ranks, probe cases on rank 0); each printed mean against numpy's
mean of the file's rows/entropy, to the 4 decimals printed.

usage: progress_line.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import os
import re
import subprocess
import sys

import h5py
import numpy as np

from rbtest import verdict


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "progress.h5")
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run(mpi + ["2", exe, "run", "-c", cfg, "-o", out, "--set", "study.heads=2",
                              "--set", "scaling.methods=none,yarn"],
                       capture_output=True, text=True, timeout=300)
    failed = []
    if p.returncode != 0:
        failed.append(f"exit {p.returncode}: {p.stderr[-600:]!r}")
        return verdict(failed)
    printed = dict(re.findall(r"^\[\s*\d+/\d+\] (\S+) .*mean entropy ([-0-9.naif]+)\)$",
                              p.stderr, re.M))
    with h5py.File(out, "r") as f:
        names = sorted(f["cases"])
        for n in names:
            want = f["cases"][n]["rows/entropy"][()].mean()
            got = printed.get(n)
            if got is None or abs(float(got) - want) > 5.1e-5:
                failed.append(f"{n}: printed mean entropy {got}, the file's rows {want:.6f}")
    print(f"{len(names)} cases, {len(printed)} progress lines")
    if not names:
        failed.append("no case in the file")
    if "warning:" in p.stderr:
        failed.append(f"a warning from a run with miniature test peaks: {p.stderr[-400:]!r}")
    over_peak(work, exe, cfg, mpi, failed)
    return verdict(failed)


def over_peak(work, exe, cfg, mpi, failed):
    """With a peak measured far too low (ROPEBENCH_TEST_QUICK_PEAKS=low: the FMA figure
    divided by 1000), the run's last lines say how many cases ran above it and by how
    much at most: both recomputed from the file (flops over the slowest rank's
    compute_s, against the case's peak_fma_gflops)."""
    out = os.path.join(work, "low-peak.h5")
    if os.path.exists(out):
        os.remove(out)
    env = dict(os.environ, ROPEBENCH_TEST_QUICK_PEAKS="low")
    p = subprocess.run(mpi + ["2", exe, "run", "-c", cfg, "-o", out], capture_output=True,
                       text=True, timeout=300, env=env)
    if p.returncode != 0:
        failed.append(f"low peak: exit {p.returncode}: {p.stderr[-600:]!r}")
        return
    pcts = []
    with h5py.File(out, "r") as f:
        for c in f["cases"].values():
            slow = float(np.max(c["timing/compute_s"][()]))
            pcts.append(100.0 * c.attrs["flops"] / slow / 1e9 / c.attrs["peak_fma_gflops"])
    over = [x for x in pcts if x > 100.0]
    m = re.search(r"^ropebench: warning: (\d+) case\(s\) ran above the FMA peak measured at "
                  r"the start \(up to (\d+) % of its", p.stderr, re.M)
    if not over or not m or int(m.group(1)) != len(over) or \
            abs(int(m.group(2)) - max(over)) > 0.5 + 1e-6 * max(over):
        failed.append(f"low peak: {len(over)} of {len(pcts)} cases above it (up to "
                      f"{max(pcts):.0f} %), the run said {m.group(0) if m else None!r}")
    else:
        print(f"low peak: {m.group(0)}")


if __name__ == "__main__":
    sys.exit(main())
