#!/usr/bin/env python3
"""interrupted.py — a run killed after its 2nd case (ROPEBENCH_TEST_ABORT_AFTER=2) must
leave those 2 cases complete and readable and no other case marked complete;
`ropebench report` must still work on the file; `run --resume` must keep the 2 cases
untouched, redo the rest, and end equal to an uninterrupted run (REFERENCE, compared
by compare_results.py), also when the resumed run uses another thread count and writes
a list with blanks around its commas; `--resume` with a different study must be refused
(exit 2) with the key that differs named.

usage: interrupted.py WORKDIR ROPEBENCH CONFIG REFERENCE.h5 -- mpiexec-command-prefix...
"""
import os
import subprocess
import sys

import h5py

from rbtest import cut_rows


def main():
    sep = sys.argv.index("--")
    work, exe, cfg, reference = sys.argv[1:5]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "interrupted.h5")
    if os.path.exists(out):
        os.remove(out)
    run = mpi + ["2", exe, "run", "-q", "-c", cfg, "-o", out]
    env = dict(os.environ, ROPEBENCH_TEST_ABORT_AFTER="2")
    p = subprocess.run(run, env=env, capture_output=True, text=True, timeout=300)
    failed = []
    if p.returncode == 0:
        failed.append("the interrupted run exited 0")
    kept = {}
    with h5py.File(out, "r") as f:
        cases = f["cases"]
        done = [n for n in cases if cases[n].attrs.get("complete") == 1]
        if len(done) != 2:
            failed.append(f"{len(done)} complete cases after the interruption, expected 2")
        for n in done:
            lse = cases[n]["rows/lse"][()]
            if lse.size == 0 or (lse != lse).any():
                failed.append(f"case {n}: lse unreadable or NaN")
            kept[n] = cases[n]["timing/total_s"][()].copy()
    r = subprocess.run([exe, "report", out, "-o", os.path.join(work, "interrupted-report")],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        failed.append(f"report failed on the interrupted file: {r.stderr.strip()}")

    # a different study may not resume this file
    d = subprocess.run(run + ["--resume", "--set", "scaling.factor=5"], capture_output=True,
                       text=True, timeout=300)
    if d.returncode != 2 or "written by a different study (scaling.factor is '4' in the " \
            "file, '5' now)" not in d.stderr:
        failed.append(f"--resume with another study: exit {d.returncode}, {d.stderr.strip()!r}")

    # attributes of another shape than ropebench writes: refused with one line, no
    # overflow (they were read into a single value)
    import numpy as np
    import shutil
    for label, edit, want in (
            ("complete as an array", lambda f: f["cases"][sorted(f["cases"])[0]].attrs
             .__setitem__("complete", np.array([1, 1], np.int64)), "holds 2 values"),
            ("format as an array", lambda f: f.attrs.__setitem__(
                "format", np.array([b"ropebench"] * 2, "S10")), "holds 2 values"),
            ("/cases as a dataset", lambda f: (f.__delitem__("cases"),
                                               f.__setitem__("cases", [1])),
             "a part of the path is not a group")):
        bad = os.path.join(work, "bad-attr.h5")
        shutil.copyfile(out, bad)
        with h5py.File(bad, "a") as f:
            edit(f)
        b = subprocess.run(mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", bad, "--resume"],
                           capture_output=True, text=True, timeout=300)
        lines = [x for x in b.stderr.splitlines() if x.startswith("ropebench:")]
        if b.returncode not in (1, 2) or not lines or want not in lines[0] or \
                "Sanitizer" in b.stderr or "runtime error" in b.stderr:
            failed.append(f"--resume with {label}: exit {b.returncode}, {b.stderr[-800:]!r}")

    # a file whose writer died inside a metadata write (SIGKILL, a crash): an object
    # header that no longer reads (its version byte overwritten here) is refused by
    # --resume up front with one line, the file untouched, instead of failing when the
    # run reaches it (or writing links with empty names beside it)
    import hashlib
    bad = os.path.join(work, "bad-header.h5")
    shutil.copyfile(out, bad)
    with h5py.File(bad, "r") as f:
        victim = "cases/" + sorted(f["cases"])[0] + "/timing/total_s"
        addr = h5py.h5o.get_info(f[victim].id).addr
    with open(bad, "r+b") as fh:
        fh.seek(addr)
        head = fh.read(5)
        # a version 2 header starts "OHDR" then its version (2); version 1 with 1
        at = addr + 4 if head[:4] == b"OHDR" else addr
        fh.seek(at)
        fh.write(b"\x07")
    before = hashlib.sha256(open(bad, "rb").read()).hexdigest()
    b = subprocess.run(mpi + ["1", exe, "run", "-q", "-c", cfg, "-o", bad, "--resume"],
                       capture_output=True, text=True, timeout=300)
    lines = [x for x in b.stderr.splitlines() if x.startswith("ropebench:")]
    if b.returncode != 2 or len(lines) != 1 or "the file is damaged, not resumed" not in \
            lines[0] or "bad object header version number" not in lines[0] or \
            f"(at /{victim})" not in lines[0] or \
            hashlib.sha256(open(bad, "rb").read()).hexdigest() != before:
        failed.append(f"--resume of a damaged file: exit {b.returncode}, {b.stderr[-800:]!r}")

    # a file that stopped before its peaks were measured gets them on --resume (they
    # are measured before the first case, so an interruption can leave none)
    with h5py.File(out, "a") as f:
        del f["provenance/peak_fma_gflops"]
        del f["provenance/triad_gbps"]

    # a complete case whose row count does not fit the study (cut to 3 rows, n_rows
    # with it) is redone, not kept: readers would take it for the study's
    cut = sorted(kept)[0]
    with h5py.File(out, "a") as f:
        cut_rows(f["cases"][cut], 3)
    del kept[cut]

    # the same study: other threads (they change how a case runs, not its results) and
    # the methods list of tests/data/small.ini written with blanks
    q = subprocess.run(run + ["--resume", "--set", "study.threads=1", "--set",
                              "scaling.methods= none, pi ,ntk,dynamic_ntk, yarn,llama3,longrope "],
                       capture_output=True, text=True, timeout=300)
    if q.returncode != 0:
        failed.append(f"--resume exited {q.returncode}: {q.stderr.strip()}")
    else:
        with h5py.File(out, "r") as f:
            cases = f["cases"]
            for n, t in kept.items():
                if not (cases[n]["timing/total_s"][()] == t).all():
                    failed.append(f"case {n} was complete but --resume rewrote it")
            if "resumed_utc" not in f.attrs:
                failed.append("no resumed_utc attribute after --resume")
            # the resuming build beside the starting one, and each case's own (a file
            # resumed by another build holds cases of two)
            if f.attrs.get("resume_git_describe") != f.attrs.get("git_describe"):
                failed.append(f"resume_git_describe {f.attrs.get('resume_git_describe')!r}"
                              f" is not this build's {f.attrs.get('git_describe')!r}")
            for n in cases:
                if cases[n].attrs.get("git_describe") != f.attrs.get("git_describe"):
                    failed.append(f"case {n}: git_describe "
                                  f"{cases[n].attrs.get('git_describe')!r} missing or wrong")
            # every case records the peaks of the run that computed it (the resumed
            # run measures its own: it may use other rank and thread counts)
            for n in cases:
                a = cases[n].attrs
                if not (a.get("peak_fma_gflops", 0) > 0 and a.get("triad_gbps", 0) > 0):
                    failed.append(f"case {n}: no peak_fma_gflops / triad_gbps attributes")
            for k in ("peak_fma_gflops", "triad_gbps"):
                v = f["provenance"].get(k)
                if v is None or v.shape != (2,) or not (v[()] > 0).all():
                    failed.append(f"--resume did not measure the missing {k}")
            loop = f["provenance"]["peak_fma_gflops"].attrs.get("loop") \
                if "peak_fma_gflops" in f["provenance"] else None
            loop = loop.decode() if isinstance(loop, bytes) else loop
            if loop not in ("avx512", "avx2+fma", "c"):
                failed.append(f"/provenance/peak_fma_gflops attribute loop is {loop!r}")
            if cases[cut].attrs.get("n_rows") == 3:
                failed.append(f"case {cut} with 3 of its rows was kept by --resume")
        c = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                         "compare_results.py"),
                            reference, out], capture_output=True, text=True, timeout=300)
        if c.returncode != 0:
            failed.append("resumed file differs from the uninterrupted run:\n" + c.stdout)
    for x in failed:
        print("FAIL:", x)
    if failed:
        print(p.stderr)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
