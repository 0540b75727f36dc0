#!/usr/bin/env python3
"""long_output_name.py — an existing results file whose name leaves no room for the
staged replacement's ".partial-XXXXXX" within NAME_MAX (255 bytes): a run that fails
before its first case is finished (ROPEBENCH_TEST_ALLOC_FAIL_RANK=0) must leave it byte
for byte as it was, as for any other name (until 2026-12-03 such a file was truncated in
place and then removed), and a run that succeeds must replace it; neither may leave a
staged file or a lock beside it.

usage: long_output_name.py WORKDIR ROPEBENCH -- mpiexec-command-prefix...
"""
import hashlib
import os
import shutil
import subprocess
import sys

from rbtest import tiny_study, verdict, work_exe_mpi


def main():
    work, exe, mpi = work_exe_mpi(sys.argv)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    name = "r" * 247 + ".h5"  # 250 bytes: + ".partial-XXXXXX" is 265 > NAME_MAX
    out = os.path.join(work, name)
    study = tiny_study("none")
    failed = []
    digest = lambda: hashlib.sha256(open(out, "rb").read()).hexdigest()
    others = lambda: sorted(x for x in os.listdir(work) if x != name)

    a = subprocess.run(mpi + ["2", exe, "run", "-q"] + study + ["-o", out],
                       capture_output=True, text=True, timeout=300)
    if a.returncode != 0 or not os.path.exists(out):
        return verdict([f"first run: exit {a.returncode}, {a.stderr.strip()!r}"])
    before = digest()

    env = dict(os.environ, ROPEBENCH_TEST_ALLOC_FAIL_RANK="0")
    b = subprocess.run(mpi + ["2", exe, "run", "-q"] + study + ["-o", out], env=env,
                       capture_output=True, text=True, timeout=300)
    if b.returncode == 0:
        failed.append("the run whose first case cannot allocate exited 0")
    if not os.path.exists(out):
        failed.append(f"the old results file is gone after a failed run: {b.stderr.strip()!r}")
    elif digest() != before:
        failed.append("the old results file changed under a run that finished no case")
    if others():
        failed.append(f"left beside the file after the failed run: {others()}")

    c = subprocess.run(mpi + ["2", exe, "run", "-q"] + study + ["-o", out],
                       capture_output=True, text=True, timeout=300)
    if c.returncode != 0:
        failed.append(f"the replacing run: exit {c.returncode}, {c.stderr.strip()!r}")
    elif not os.path.exists(out) or digest() == before:
        failed.append("the replacing run did not replace the file")
    if others():
        failed.append(f"left beside the file after the replacing run: {others()}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
