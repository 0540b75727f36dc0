#!/usr/bin/env python3
"""concurrent_output.py — a second `ropebench run` on a results file that a first run is
still writing must stop before it touches the file (exit 2, one line naming the other
run), also when it names the file through a symbolic or a hard link, and so must
`ropebench bench -o`; h5py can still read the file meanwhile; and the first run must
finish with an intact file and no lock file left. The runs under test wait before each
case until the test lets them go (the ROPEBENCH_TEST_HOLD_UNTIL hook), so the checks
fall inside the window they test at any speed of the build.

usage: concurrent_output.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import os
import subprocess
import sys
import time

import h5py

from rbtest import verdict


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "shared.h5")
    go = os.path.join(work, "go")
    for p in (out, out + ".lock", go):
        if os.path.exists(p):
            os.remove(p)
    # the first run holds the file (and waits before its first case) until `go` exists
    first = mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", out]
    env = dict(os.environ, ROPEBENCH_TEST_HOLD_UNTIL=go)
    a = subprocess.Popen(first, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    failed = []
    t0 = time.time()
    while not os.path.exists(out) and a.poll() is None and time.time() - t0 < 120:
        time.sleep(0.05)
    if a.poll() is not None:
        failed.append("the first run ended before the second could start; make it longer")
    else:
        # the same path, a symbolic link, a hard link (the lock is on the file itself),
        # and `bench -o` through the hard link: each refused before touching the file
        sym, hard = os.path.join(work, "shared-sym.h5"), os.path.join(work, "shared-hard.h5")
        for x in (sym, hard):
            if os.path.lexists(x):
                os.remove(x)
        os.symlink(os.path.basename(out), sym)
        os.link(out, hard)
        for label, cmd in (
                ("second run", ["run", "-q", "-c", cfg, "-o", out]),
                ("second run through a symbolic link", ["run", "-q", "-c", cfg, "-o", sym]),
                ("second run through a hard link", ["run", "-q", "-c", cfg, "-o", hard]),
                ("bench -o through a hard link", ["bench", "--quick", "--kernels", "ref",
                                                  "--only", "rope", "--threads", "1",
                                                  "-o", hard])):
            b = subprocess.run(mpi + ["1", exe] + cmd, capture_output=True, text=True,
                               timeout=300)
            ours = [x for x in b.stderr.splitlines() if x.startswith("ropebench:")]
            if b.returncode != 2 or len(ours) != 1 or \
                    "another ropebench run is writing this file" not in ours[0]:
                failed.append(f"{label}: exit {b.returncode}, {b.stderr[-600:]!r}")
            else:
                print(f"ok   {label}: {ours[0]}")
        # readers are not locked out: the writer's lock is not HDF5's own
        try:
            with h5py.File(out, "r") as f:
                f.attrs.get("format")
        except OSError as e:
            failed.append(f"h5py cannot open the file while the run writes it: {e}")
        if a.poll() is not None:
            failed.append("the first run had ended when the second was refused: inconclusive")
    open(go, "w").close()
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

    # again over the results file just written: the run writes its replacement under
    # a staging name until its first case is finished, and the old file stays locked
    # meanwhile (bench -o into it, or a run through a hard link, would be lost when
    # the rename replaces it)
    if not failed:
        # the replacing run waits before its first case, so with its replacement staged,
        # until `go` exists again; the checks also verify that it was staged throughout
        os.remove(go)
        again = mpi + ["1", exe, "run", "-q", "-c", cfg, "--set", "study.modes=full",
                       "--set", "scaling.methods=none", "--set", "study.datasets=gaussian",
                       "-o", out]
        a = subprocess.Popen(again, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        t0 = time.time()
        staging = lambda: [x for x in os.listdir(work) if x.startswith("shared.h5.partial-")]
        while not staging() and a.poll() is None and time.time() - t0 < 120:
            time.sleep(0.01)
        if a.poll() is not None or not staging():
            failed.append("replacing: the staging file never showed while the run was on")
        else:
            for label, cmd in (
                    ("bench -o while the replacement is staged",
                     ["bench", "--quick", "--kernels", "ref", "--only", "rope", "--threads",
                      "1", "-o", out]),
                    ("a run through a hard link while the replacement is staged",
                     ["run", "-q", "-c", cfg, "-o", hard])):
                b = subprocess.run(mpi + ["1", exe] + cmd, capture_output=True, text=True,
                                   timeout=300)
                if b.returncode != 2 or "another ropebench run is writing" not in b.stderr:
                    failed.append(f"{label}: exit {b.returncode}, {b.stderr[-400:]!r}")
                elif not staging():
                    failed.append(f"{label}: the replacement was no longer staged when it "
                                  "was refused: inconclusive")
                else:
                    print(f"ok   {label}")
        open(go, "w").close()
        so, se = a.communicate(timeout=600)
        if a.returncode != 0:
            failed.append(f"replacing run: exit {a.returncode}: {se[-600:]}")
        elif staging():
            failed.append(f"staging files left after the run: {staging()}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
