#!/usr/bin/env python3
"""leak_canary.py — the sanitizer build's leak check must still see leaks of our own
code in an MPI program, under the environment every test runs with: run leak_canary
(which loses blocks of 4000 + 16·rank + i bytes on every rank) and require a non-zero
exit, a LeakSanitizer report from each rank, and each rank's blocks reported as
allocated by canary_make (one record per rank: LSan merges blocks lost from one stack).

usage: leak_canary.py NP -- mpiexec-command-prefix... leak_canary
"""
import re
import subprocess
import sys


def main():
    sep = sys.argv.index("--")
    nranks = int(sys.argv[1])
    cmd = sys.argv[sep + 1:]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)
    out = p.stdout + p.stderr
    problems = []
    if p.returncode == 0:
        problems.append("exit status 0: the leaks went unreported")
    reports = out.count("ERROR: LeakSanitizer: detected memory leaks")
    if reports != nranks:
        problems.append(f"{reports} LeakSanitizer reports, expected one from each of "
                        f"{nranks} ranks")
    # each leak record: "Direct leak of N byte(s) in K object(s) allocated from:" and
    # its stack; LSan merges the blocks lost from one stack, so a rank's 8 blocks make
    # one record of 8 objects, 32028 + 128·rank bytes
    records = re.findall(r"Direct leak of (\d+) byte\(s\) in (\d+) object\(s\) "
                         r"allocated from:\n((?:.*    #.*\n)+)", out)
    seen = {(int(n), int(k)) for n, k, stack in records if "canary_make" in stack}
    for r in range(nranks):
        want = (sum(4000 + 16 * r + i for i in range(8)), 8)
        if want not in seen:
            problems.append(f"rank {r}: no record of {want[0]} bytes in {want[1]} objects "
                            f"naming canary_make (records naming it: {sorted(seen)})")
    if problems:
        print("FAIL:", " ".join(cmd))
        for x in problems:
            print("  -", x)
        print(out[-3000:])
        return 1
    print(f"PASS: {nranks} ranks, every lost block reported with canary_make on its "
          f"stack")
    return 0


if __name__ == "__main__":
    sys.exit(main())
