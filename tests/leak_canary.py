#!/usr/bin/env python3
"""leak_canary.py — the sanitizer build's leak check must still see leaks of our own
code in an MPI program, under the environment every test runs with: run leak_canary
(which loses 8 blocks of 4000 + 16·rank + i bytes on every rank) and require a non-zero
exit, one LeakSanitizer report from each rank, and in each a record of that rank's 8
blocks (LSan merges the blocks lost from one stack: 32028 + 128·rank bytes) with
canary_make on its stack. Each process writes its report to a file of its own
(ASAN_OPTIONS log_path), so the ranks' reports cannot interleave.

usage: leak_canary.py WORKDIR NP -- mpiexec-command-prefix... leak_canary
"""
import glob
import os
import re
import shutil
import subprocess
import sys


def main():
    sep = sys.argv.index("--")
    work, nranks = sys.argv[1], int(sys.argv[2])
    cmd = sys.argv[sep + 1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":log_path="
                           + os.path.join(work, "lsan")).lstrip(":")
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120, env=env)
    problems = []
    if p.returncode == 0:
        problems.append("exit status 0: the leaks went unreported")
    logs = sorted(glob.glob(os.path.join(work, "lsan.*")))
    reports = []
    for path in logs:
        with open(path, errors="replace") as f:
            text = f.read()
        if "ERROR: LeakSanitizer: detected memory leaks" in text:
            reports.append((path, text))
    if len(reports) != nranks:
        problems.append(f"{len(reports)} LeakSanitizer reports ({len(logs)} log files), "
                        f"expected one from each of {nranks} ranks")
    # each record: "Direct leak of N byte(s) in K object(s) allocated from:" and its
    # stack, one "#i" line a frame
    found = set()
    for _, text in reports:
        for n, k, stack in re.findall(r"Direct leak of (\d+) byte\(s\) in (\d+) "
                                      r"object\(s\) allocated from:\n((?:\s+#.*\n)+)",
                                      text):
            if "canary_make" in stack:
                found.add((int(n), int(k)))
    for r in range(nranks):
        want = (sum(4000 + 16 * r + i for i in range(8)), 8)
        if want not in found:
            problems.append(f"rank {r}: no record of {want[0]} bytes in {want[1]} objects "
                            f"naming canary_make (records naming it: {sorted(found)})")
    if problems:
        print("FAIL:", " ".join(cmd))
        for x in problems:
            print("  -", x)
        print((p.stdout + p.stderr)[-2000:])
        for path, text in reports[:1]:
            print(f"--- {path}\n{text[-2000:]}")
        return 1
    print(f"PASS: {nranks} ranks, each rank's lost blocks reported with canary_make on "
          f"the stack")
    return 0


if __name__ == "__main__":
    sys.exit(main())
