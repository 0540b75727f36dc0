#!/usr/bin/env python3
"""stage_refused.py — an existing results file in a directory that takes no new file
(here made immutable with chattr +i, its lock file made beforehand): the run cannot make
the staged replacement beside it, and must be refused (exit 2) naming the cause, leaving
the file byte for byte as it was (until 2026-12-03 the file was written in place, its
old results truncated before the run had any). Exits 77 (reported as skipped) where
chattr +i is not possible (a file system or a process without it).

usage: stage_refused.py WORKDIR ROPEBENCH -- mpiexec-command-prefix...
"""
import hashlib
import os
import shutil
import subprocess
import sys

from rbtest import tiny_study, verdict, work_exe_mpi


def chattr(flag, path):
    """chattr FLAG PATH; a missing chattr reads as a failure (returncode 127), so that
    the test is skipped rather than crashing where e2fsprogs is not installed."""
    try:
        return subprocess.run(["chattr", flag, path], capture_output=True, text=True)
    except OSError as e:
        return subprocess.CompletedProcess(["chattr", flag, path], 127, "", str(e))


def main():
    work, exe, mpi = work_exe_mpi(sys.argv)
    if os.path.isdir(work):
        chattr("-i", work)  # (left immutable by a run that was killed)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "out.h5")
    study = tiny_study("none")
    a = subprocess.run(mpi + ["1", exe, "run", "-q"] + study + ["-o", out],
                       capture_output=True, text=True, timeout=300)
    if a.returncode != 0 or not os.path.exists(out):
        return verdict([f"first run: exit {a.returncode}, {a.stderr.strip()!r}"])
    before = hashlib.sha256(open(out, "rb").read()).hexdigest()
    open(out + ".lock", "a").close()  # the lock is taken on an existing file
    c = chattr("+i", work)
    if c.returncode != 0:
        print(f"SKIP: chattr +i {work}: {c.stderr.strip()} (no immutable directories here)")
        return 77
    failed = []
    try:
        b = subprocess.run(mpi + ["1", exe, "run", "-q"] + study + ["-o", out],
                           capture_output=True, text=True, timeout=300)
        # (the first line: mpiexec may add its banner about the exit status after it)
        lines = b.stderr.strip().splitlines()[:1]
        want = (f"ropebench: -o {out}: cannot make the file that is to replace it beside it "
                f"({out}.partial-XXXXXX): ")
        if b.returncode != 2 or not lines or not lines[0].startswith(want) or \
                f"{out} is left as it was" not in lines[0]:
            failed.append(f"the run that cannot stage its replacement: exit {b.returncode}, "
                          f"stderr {lines!r} (want exit 2 and one line starting {want!r})")
        if hashlib.sha256(open(out, "rb").read()).hexdigest() != before:
            failed.append("the old results file changed under a refused run")
    finally:
        chattr("-i", work)
    left = sorted(x for x in os.listdir(work) if x not in ("out.h5", "out.h5.lock"))
    if left:
        failed.append(f"left beside the file: {left}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
