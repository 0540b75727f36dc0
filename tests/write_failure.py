#!/usr/bin/env python3
"""write_failure.py — a run whose results file stops taking writes part way (a file-size
limit set through the ROPEBENCH_TEST_FSIZE_LIMIT hook, which fails writes the way a full
file system does) must exit 1 without hanging, say in one line what failed and that the
file reached the limit, say how many cases stay readable — and they must: the file opens,
exactly that many cases are complete with readable lse, `ropebench report` works on it,
the lock file is gone, and `run --resume` without the limit completes it equal to an
uninterrupted run (REFERENCE, compared by compare_results.py). A limit hit before the
first case gives "no case was finished" and a file that still opens.

usage: write_failure.py WORKDIR ROPEBENCH CONFIG REFERENCE.h5 -- mpiexec-command-prefix...
"""
import os
import re
import subprocess
import sys
import time

import h5py


def run_limited(run, limit):
    env = dict(os.environ, ROPEBENCH_TEST_FSIZE_LIMIT=str(limit))
    t0 = time.monotonic()
    try:
        p = subprocess.run(run, env=env, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0
    return p, time.monotonic() - t0


def main():
    sep = sys.argv.index("--")
    work, exe, cfg, reference = sys.argv[1:5]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    failed = []

    # the size a whole run writes, to place the limits
    whole = os.path.join(work, "write-whole.h5")
    if os.path.exists(whole):
        os.remove(whole)
    w = subprocess.run(mpi + ["2", exe, "run", "-q", "-c", cfg, "-o", whole],
                       capture_output=True, text=True, timeout=240)
    if w.returncode != 0:
        print(f"FAIL: the unlimited run exited {w.returncode}: {w.stderr[-800:]}")
        return 1
    size = os.path.getsize(whole)

    out = os.path.join(work, "write-limited.h5")
    run = mpi + ["2", exe, "run", "-q", "-c", cfg, "-o", out]
    for label, limit in (("part way", int(size * 0.6)), ("before any case", 20000)):
        if os.path.exists(out):
            os.remove(out)
        p, secs = run_limited(run, limit)
        if p is None:
            failed.append(f"{label}: the run hung (no exit within {secs:.0f} s)")
            continue
        lines = [x for x in p.stderr.splitlines() if x.startswith("ropebench:")]
        text = "\n".join(lines)
        if p.returncode != 1:
            failed.append(f"{label}: exit {p.returncode}, expected 1: {p.stderr[-800:]!r}")
            continue
        if "Sanitizer" in p.stderr or "runtime error" in p.stderr:
            failed.append(f"{label}: sanitizer report: {p.stderr[-800:]!r}")
        if not lines or "failed" not in lines[0] or out not in text:
            failed.append(f"{label}: first line does not name the failed write: {text!r}")
        if "reached the file-size limit" not in text:
            failed.append(f"{label}: no line about the file-size limit: {text!r}")
        if os.path.exists(out + ".lock"):
            failed.append(f"{label}: the lock file was left behind")
        m = re.search(r"the (\d+) finished case\(s\) stay readable", text)
        try:
            with h5py.File(out, "r") as f:
                cases = f.get("cases")
                done = [n for n in (cases or {}) if cases[n].attrs.get("complete") == 1]
                for n in done:
                    lse = cases[n]["rows/lse"][()]
                    if lse.size == 0 or (lse != lse).any():
                        failed.append(f"{label}: case {n}: lse unreadable or NaN")
                if "provenance" not in f:
                    failed.append(f"{label}: no /provenance in the file")
        except OSError as e:
            failed.append(f"{label}: the file does not open: {e}")
            continue
        if label == "part way":
            if not m or int(m.group(1)) != len(done) or not done:
                failed.append(f"{label}: message says {m.group(1) if m else 'nothing'} "
                              f"finished cases, the file has {len(done)} complete")
            r = subprocess.run([exe, "report", out, "-o", os.path.join(work, "write-report")],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                failed.append(f"report failed on the file: {r.stderr.strip()}")
            q = subprocess.run(run + ["--resume"], capture_output=True, text=True,
                               timeout=240)
            if q.returncode != 0:
                failed.append(f"--resume exited {q.returncode}: {q.stderr.strip()}")
            else:
                c = subprocess.run([sys.executable,
                                    os.path.join(os.path.dirname(__file__),
                                                 "compare_results.py"), reference, out],
                                   capture_output=True, text=True, timeout=300)
                if c.returncode != 0:
                    failed.append("resumed file differs from the uninterrupted run:\n" +
                                  c.stdout)
        else:
            if "no case was finished" not in text or done:
                failed.append(f"{label}: {len(done)} complete cases, message {text!r}")
        print(f"{label}: limit {limit} of {size} bytes, exit {p.returncode} in {secs:.1f} s, "
              f"{len(done)} cases kept")
    for x in failed:
        print("FAIL:", x)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
