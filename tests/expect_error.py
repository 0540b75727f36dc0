#!/usr/bin/env python3
"""expect_error.py — run a command that must fail cleanly: exit status EXPECTED, one
line on stderr matching REGEX (besides the note that finished cases stay readable, which
a run that fails after creating its results file adds), no crash or sanitizer report.

usage: expect_error.py EXPECTED_RC REGEX -- command args...
"""
import re
import subprocess
import sys


def main():
    sep = sys.argv.index("--")
    want_rc, pattern = int(sys.argv[1]), sys.argv[2]
    cmd = sys.argv[sep + 1:]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)
    err = p.stderr
    problems = []
    if p.returncode != want_rc:
        problems.append(f"exit status {p.returncode}, expected {want_rc}")
    for bad in ("Sanitizer", "runtime error", "Segmentation", "Aborted", "core dumped",
                "HDF5-DIAG", "Traceback"):
        if bad in err or bad in p.stdout:
            problems.append(f"output contains '{bad}'")
    # a run that fails after it created its results file adds its standard note on
    # what the file keeps
    # (and a study's notes on keys it sets but does not use, docs/config.md)
    note = re.compile(r"ropebench: (the \d+ finished case\(s\) stay readable in |"
                      r"no case was finished|.* no longer exists$|note: )")
    ours = [l for l in err.splitlines() if l.startswith("ropebench:") and not note.match(l)]
    if len(ours) != 1:
        problems.append(f"{len(ours)} 'ropebench:' error lines on stderr, expected 1")
    elif not re.search(pattern, ours[0]):
        problems.append(f"message {ours[0]!r} does not match {pattern!r}")
    if problems:
        print("FAIL:", " ".join(cmd))
        for x in problems:
            print("  -", x)
        print("--- stderr ---\n" + err + "--- stdout ---\n" + p.stdout)
        print("0 passed, 1 failed")
        return 1
    print("ok:", ours[0])
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
