#!/usr/bin/env python3
"""leak_canary.py — the sanitizer build's leak check must still see leaks of our own
code in an MPI program, under the environment every test runs with. leak_canary loses
8 blocks of 4000 + 16·rank + i bytes on every rank, and one of 6000 + 16·rank bytes in
a reduction operator that Open MPI calls. Run as the tests run, it must exit non-zero
with a LeakSanitizer report; run with every rank let finish, each rank must report a
record of its 8 blocks (LSan merges the blocks lost from one stack: 32028 + 128·rank
bytes) with canary_make on its stack, and one of the operator's block with canary_op
on its stack. Each process writes its report to a file of its own (ASAN_OPTIONS
log_path), so the ranks' reports cannot interleave.

usage: leak_canary.py WORKDIR NP -- mpiexec-command-prefix... leak_canary
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from rbtest import verdict


def main():
    sep = sys.argv.index("--")
    work, nranks = sys.argv[1], int(sys.argv[2])
    cmd = sys.argv[sep + 1:]
    problems = []

    def run(sub, keep_going):
        """run the canary with every process's report in WORK/SUB/lsan.PID; with
        keep_going, mpiexec lets every rank finish (it kills the others as soon as one
        exits non-zero, maybe before they write their reports, and then also exits 0)"""
        logs = os.path.join(work, sub)
        shutil.rmtree(logs, ignore_errors=True)
        os.makedirs(logs)
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":log_path="
                               + os.path.join(logs, "lsan")).lstrip(":")
        if keep_going:
            env["OMPI_MCA_orte_abort_on_non_zero_status"] = "0"
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=120, env=env)
        texts = []
        for path in sorted(glob.glob(os.path.join(logs, "lsan.*"))):
            with open(path, errors="replace") as f:
                texts.append(f.read())
        return p, [t for t in texts if "ERROR: LeakSanitizer: detected memory leaks" in t]

    # as every test runs: the leak must make the run exit non-zero
    p, reports = run("stop", False)
    if p.returncode == 0:
        problems.append("exit status 0: the leaks did not fail the run")
    if not reports:
        problems.append("no LeakSanitizer report")
    # every rank to its end: every rank must report both leaks
    p, reports = run("all", True)
    if len(reports) != nranks:
        problems.append(f"{len(reports)} LeakSanitizer reports, expected one from each of "
                        f"{nranks} ranks")
    # each record: "Direct leak of N byte(s) in K object(s) allocated from:" and its
    # stack, one "#i" line a frame
    found = set()
    for text in reports:
        for n, k, stack in re.findall(r"Direct leak of (\d+) byte\(s\) in (\d+) "
                                      r"object\(s\) allocated from:\n((?:\s+#.*\n)+)",
                                      text):
            for fn in ("canary_make", "canary_op"):
                if fn in stack:
                    found.add((fn, int(n), int(k)))
    for r in range(nranks):
        for want in (("canary_make", sum(4000 + 16 * r + i for i in range(8)), 8),
                     ("canary_op", 6000 + 16 * r, 1)):
            if want not in found:
                problems.append(f"rank {r}: no record of {want[1]} bytes in {want[2]} "
                                f"object(s) naming {want[0]} (records naming ours: "
                                f"{sorted(found)})")
    if problems:
        print(" ".join(cmd))
        print((p.stdout + p.stderr)[-2000:])
        for text in reports[:1]:
            print(f"--- the first report\n{text[-2000:]}")
    return verdict(problems)


if __name__ == "__main__":
    sys.exit(main())
