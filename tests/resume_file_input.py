#!/usr/bin/env python3
"""resume_file_input.py — `run --resume` of a `file`-dataset study keeps its cases only
with the input they were computed from: the same file resumes (exit 0, the kept case
untouched); the file replaced at the same path, with other values, is refused (exit 2,
one line naming file.path and both inputs) and the results file is left as it was.
Until 2026-12-02 the study text (which names the path only) was all that was compared,
and the resumed file mixed cases of two inputs.

usage: resume_file_input.py WORKDIR ROPEBENCH -- mpiexec-command-prefix...
"""
import hashlib
import os
import subprocess
import sys

import h5py
import numpy as np

from rbtest import verdict


def write_input(path, seed):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        for n in "qkv":
            f[n] = rng.standard_normal((1, 64, 16)).astype(np.float32)


def main():
    sep = sys.argv.index("--")
    work, exe = sys.argv[1:3]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    inp, out = os.path.join(work, "qkv.h5"), os.path.join(work, "res.h5")
    for p in (inp, out):
        if os.path.exists(p):
            os.remove(p)
    write_input(inp, 1)
    run = mpi + ["2", exe, "run", "-q", "--set", "study.seq_lens=64", "--set",
                 "study.modes=full", "--set", "model.head_dim=16", "--set",
                 "scaling.methods=none,pi", "--set", "study.datasets=file", "--set",
                 f"file.path={inp}", "-o", out]
    failed = []

    def aborted():
        a = subprocess.run(run, env=dict(os.environ, ROPEBENCH_TEST_ABORT_AFTER="1"),
                           capture_output=True, text=True, timeout=300)
        if a.returncode == 0:
            failed.append("the interrupted run exited 0")

    aborted()
    with h5py.File(out, "r") as f:
        ident = f.attrs.get("dataset_file_id")
        ident = ident.decode() if isinstance(ident, bytes) else ident
        if not ident or not ident.startswith(os.path.realpath(inp) + ", "):
            failed.append(f"dataset_file_id {ident!r} does not name {inp}")

    # the same input: resumed
    same = subprocess.run(run + ["--resume"], capture_output=True, text=True, timeout=300)
    if same.returncode != 0:
        failed.append(f"--resume with the same input: exit {same.returncode}, "
                      f"{same.stderr.strip()!r}")

    # another input at the same path: refused, the file untouched
    os.remove(out)
    aborted()
    write_input(inp, 2)
    before = hashlib.sha256(open(out, "rb").read()).hexdigest()
    other = subprocess.run(run + ["--resume"], capture_output=True, text=True, timeout=300)
    lines = [x for x in other.stderr.splitlines() if x.startswith("ropebench:")]
    if other.returncode != 2 or len(lines) != 1 or \
            "--resume: file.path is not the input its cases were computed from" not in lines[0]:
        failed.append(f"--resume with another input: exit {other.returncode}, "
                      f"{other.stderr.strip()!r}")
    if hashlib.sha256(open(out, "rb").read()).hexdigest() != before:
        failed.append("the refused --resume changed the results file")

    # each rank reading its own copy (node-local paths: rank 1 in another directory,
    # its copy made later, so its time differs): resumed, rank 0's input being the one
    # recorded (every rank compared its own with rank 0's record, and refused)
    d0, d1 = os.path.join(work, "node0"), os.path.join(work, "node1")
    for d in (d0, d1):
        os.makedirs(d, exist_ok=True)
    write_input(os.path.join(d0, "qkv.h5"), 3)
    with open(os.path.join(d0, "qkv.h5"), "rb") as s_, \
            open(os.path.join(d1, "qkv.h5"), "wb") as d_:
        d_.write(s_.read())
    os.utime(os.path.join(d1, "qkv.h5"), (1e9, 1e9))
    wrap = os.path.join(work, "node_dir.sh")
    with open(wrap, "w") as f:
        f.write(f"cd '{d0}'\n[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && cd '{d1}'\n"
                "exec \"$@\"\n")
    out2 = os.path.join(work, "res-nodes.h5")
    if os.path.exists(out2):
        os.remove(out2)
    nodes = [x if x != f"file.path={inp}" else "file.path=qkv.h5" for x in run]
    nodes = [x if x != out else out2 for x in nodes]
    nodes = nodes[:len(mpi) + 1] + ["sh", wrap] + nodes[len(mpi) + 1:]
    a = subprocess.run(nodes, env=dict(os.environ, ROPEBENCH_TEST_ABORT_AFTER="1"),
                       capture_output=True, text=True, timeout=300)
    r = subprocess.run(nodes + ["--resume"], capture_output=True, text=True, timeout=300)
    if a.returncode == 0 or r.returncode != 0:
        failed.append(f"node-local copies: interrupted run exit {a.returncode}, --resume "
                      f"exit {r.returncode}, {r.stderr.strip()!r}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
