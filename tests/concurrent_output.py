#!/usr/bin/env python3
"""concurrent_output.py — a second `ropebench run` on a results file that a first run is
still writing must stop before it touches the file (exit 2, one line naming the other
run), and the first run must finish with an intact file and no lock file left.

usage: concurrent_output.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import os
import subprocess
import sys
import time

import h5py


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "shared.h5")
    for p in (out, out + ".lock"):
        if os.path.exists(p):
            os.remove(p)
    # long enough (the reference kernel, larger lengths) for the second run to start
    # while the first one holds the file
    first = mpi + ["1", exe, "run", "-q", "-c", cfg, "--set", "study.seq_lens=240,960,1920,3840",
                   "--set", "study.probe_seq_lens=480,2048", "-o", out]
    env = dict(os.environ, ROPEBENCH_ISA="ref")
    a = subprocess.Popen(first, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    failed = []
    t0 = time.time()
    while not os.path.exists(out) and a.poll() is None and time.time() - t0 < 120:
        time.sleep(0.05)
    if a.poll() is not None:
        failed.append("the first run ended before the second could start; make it longer")
    else:
        b = subprocess.run(mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", out],
                           capture_output=True, text=True, timeout=300)
        ours = [x for x in b.stderr.splitlines() if x.startswith("ropebench:")]
        if b.returncode != 2 or len(ours) != 1 or \
                "another ropebench run is writing this file" not in ours[0]:
            failed.append(f"second run: exit {b.returncode}, {b.stderr[-600:]!r}")
        if a.poll() is not None:
            failed.append("the first run had ended when the second was refused: inconclusive")
    so, se = a.communicate(timeout=600)
    if a.returncode != 0:
        failed.append(f"first run: exit {a.returncode}: {se[-600:]}")
    else:
        with h5py.File(out, "r") as f:
            cases = f["cases"]
            done = [n for n in cases if cases[n].attrs.get("complete") == 1]
            if not done or len(done) != len(cases):
                failed.append(f"{len(done)} of {len(cases)} cases complete after the run")
    if os.path.exists(out + ".lock"):
        failed.append("the lock file is left after the run")
    for x in failed:
        print("FAIL:", x)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
