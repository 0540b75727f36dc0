#!/usr/bin/env python3
"""output_replaced.py — a results file replaced by another file while the run that
writes it is held before its 2nd case (ROPEBENCH_TEST_HOLD_UNTIL/_FROM): the run must
fail (exit 1) saying the path is no longer its file and that the case it finished went
with that file; until 2026-12-02 it said the finished case "stays readable" in the path,
which by then held the other file. The other file must be left as it was.

usage: output_replaced.py WORKDIR ROPEBENCH -- mpiexec-command-prefix...
"""
import hashlib
import os
import subprocess
import sys
import time

from rbtest import tiny_study, verdict, work_exe_mpi


def main():
    work, exe, mpi = work_exe_mpi(sys.argv)
    os.makedirs(work, exist_ok=True)
    out, other, go = (os.path.join(work, n) for n in ("e.h5", "other.h5", "go"))
    for p in (out, other, go):
        if os.path.exists(p):
            os.remove(p)
    study = tiny_study("none,pi")
    failed = []
    a = subprocess.run(mpi + ["2", exe, "run", "-q"] + study + ["-o", other],
                       capture_output=True, text=True, timeout=300)
    if a.returncode != 0:
        failed.append(f"the other file's run: exit {a.returncode}, {a.stderr.strip()!r}")
    errf = os.path.join(work, "stderr.txt")
    env = dict(os.environ, ROPEBENCH_TEST_HOLD_UNTIL=go, ROPEBENCH_TEST_HOLD_FROM="2")
    with open(errf, "w") as ef:
        p = subprocess.Popen(mpi + ["2", exe, "run"] + study + ["-o", out], env=env,
                             stdout=subprocess.DEVNULL, stderr=ef, text=True)
        t0 = time.time()
        while "[ 2/" not in open(errf).read() and time.time() - t0 < 240 and p.poll() is None:
            time.sleep(0.05)
        # replace the path in one step, as mv does
        tmp = out + ".new"
        with open(other, "rb") as s, open(tmp, "wb") as d:
            d.write(s.read())
        before = hashlib.sha256(open(tmp, "rb").read()).hexdigest()
        os.rename(tmp, out)
        open(go, "w").close()
        rc = p.wait(timeout=300)
    err = open(errf).read()
    if rc != 1:
        failed.append(f"exit {rc}, expected 1")
    if "is no longer the file this run wrote" not in err or \
            "the 1 finished case(s) it held went with that file" not in err:
        failed.append(f"no line saying the finished case went with the replaced file: {err!r}")
    if "stay readable" in err:
        failed.append(f"says the finished cases stay readable in the replaced path: {err!r}")
    if hashlib.sha256(open(out, "rb").read()).hexdigest() != before:
        failed.append("the file put in its place was changed")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
