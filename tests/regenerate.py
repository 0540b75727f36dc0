#!/usr/bin/env python3
"""regenerate.py — a report's Regenerate section must regenerate its results: `ropebench
report` writes study.ini equal to the file's config_text and, in report.md and
report.html, the command that runs it with the file's rank count, kernel and
--dump-inputs; that command, run as printed (only the repository paths and the output
name put in), writes a file whose rows equal the original's (compare_results.py, no
tolerance: the same binary, kernel and ranks) and whose metrics agree
(compare_metrics.py).

usage: regenerate.py WORKDIR ROPEBENCH RESULTS.h5 SOURCE_DIR
"""
import html
import os
import re
import shlex
import shutil
import subprocess
import sys

import h5py

from rbtest import verdict

HERE = os.path.dirname(os.path.abspath(__file__))


def text_attr(f, name):
    v = f.attrs.get(name)
    return v.decode() if isinstance(v, bytes) else v


def main():
    work, exe, results, src = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rep = os.path.join(work, "report")
    failed = []
    p = subprocess.run([exe, "report", results, "-o", rep], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        return verdict([f"report exited {p.returncode}: {p.stderr[-600:]}"])
    with h5py.File(results, "r") as f:
        cfg = text_attr(f, "config_text")
        kernel, nranks = text_attr(f, "kernel"), int(f.attrs["nranks"])
        threads = int(f.attrs["threads_per_rank"])
        dump = int(f.attrs.get("dump_inputs", 0))
    ini = os.path.join(rep, "study.ini")
    text = open(ini).read() if os.path.exists(ini) else ""
    if not text.startswith("# study.ini written by `ropebench report`") or \
            not text.endswith(cfg):
        failed.append("study.ini missing, or not the report's mark and the file's "
                      "config_text")
    md = open(os.path.join(rep, "report.md")).read()
    block = re.search(r"### Regenerate\n.*?```sh\n(.*?)```", md, re.S)
    runs = [x for x in block.group(1).splitlines() if " run -c study.ini" in x] if block \
        else []
    if len(runs) != 1:
        return verdict(failed + [f"report.md: no single run line in a Regenerate block: "
                                 f"{block.group(0) if block else md[:300]!r}"])
    line = runs[0]
    want = (f"ROPEBENCH_ISA={kernel} scripts/mpirun.sh {nranks} build/default/ropebench run "
            f"-c study.ini --set study.threads={threads}{' --dump-inputs' if dump else ''} "
            "-o results.h5")
    if line != want:
        failed.append(f"run line {line!r}, want {want!r}")
    if html.escape(line, quote=False) not in open(os.path.join(rep, "report.html")).read():
        failed.append("report.html lacks the run line")
    # run it as printed, from the report's folder (where study.ini is)
    out = os.path.join(work, "regenerated.h5")
    # (quoted: a checkout path with blanks stays one word)
    cmd = line.replace("scripts/mpirun.sh",
                       shlex.quote(os.path.join(src, "scripts", "mpirun.sh")), 1) \
              .replace("build/default/ropebench", shlex.quote(exe), 1) \
              .replace("results.h5", shlex.quote(out), 1)
    r = subprocess.run(["bash", "-c", cmd], cwd=rep, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        return verdict(failed + [f"the run line exited {r.returncode}: {r.stderr[-600:]}"])
    for tool, extra in (("compare_results.py", ["--rtol", "0", "--otol", "0"]),
                        ("compare_metrics.py", [])):
        c = subprocess.run([sys.executable, os.path.join(HERE, tool), results, out] + extra,
                           capture_output=True, text=True, timeout=300)
        if c.returncode != 0:
            failed.append(f"{tool}: the regenerated file differs:\n{c.stdout[-1500:]}")
    if not failed:
        print(f"ok   {line}: regenerated {results} exactly")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
