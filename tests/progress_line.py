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
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
