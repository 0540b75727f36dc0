#!/usr/bin/env python3
"""interrupted.py — a run killed after its 2nd case (ROPEBENCH_TEST_ABORT_AFTER=2) must
leave those 2 cases complete and readable, no other case marked complete, and
`ropebench report` must still work on the file.

usage: interrupted.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import os
import subprocess
import sys

import h5py


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "interrupted.h5")
    env = dict(os.environ, ROPEBENCH_TEST_ABORT_AFTER="2")
    p = subprocess.run(mpi + ["2", exe, "run", "-q", "-c", cfg, "-o", out], env=env,
                       capture_output=True, text=True, timeout=300)
    failed = []
    if p.returncode == 0:
        failed.append("the interrupted run exited 0")
    with h5py.File(out, "r") as f:
        cases = f["cases"]
        done = [n for n in cases if cases[n].attrs.get("complete") == 1]
        if len(done) != 2:
            failed.append(f"{len(done)} complete cases, expected 2: {done}")
        for n in done:
            lse = cases[n]["rows/lse"][()]
            if lse.size == 0 or not (lse[lse > -1e300] == lse[lse > -1e300]).all():
                failed.append(f"case {n}: lse unreadable or NaN")
    r = subprocess.run([exe, "report", out, "-o", os.path.join(work, "interrupted-report")],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        failed.append(f"report failed on the interrupted file: {r.stderr.strip()}")
    for x in failed:
        print("FAIL:", x)
    if failed:
        print(p.stderr)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
