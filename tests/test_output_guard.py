#!/usr/bin/env python3
"""test_output_guard.py — files the commands must refuse without touching them, and the
inputs whose failure must say why (one `ropebench:` line, the exit status, and for
refused outputs the file's bytes unchanged):

  bench -o an HDF5 file that is not a results file (a user's q/k/v, say, with bytes
  after HDF5's end of allocation, which a read-write open would trim)   exit 2, unchanged
  run --resume -o that file                                             exit 2, unchanged
  bench -o a text file                                                     exit 2, unchanged
  bench --json F -o F, and bench --json that HDF5 file                 exit 2, unchanged
  bench -o an empty file (as mktemp leaves it)       exit 0, a results file with /bench
  run --resume -o that file (no study in it)         exit 2, "holds no study", unchanged
  run --resume -o an empty file                      exit 2, still empty
  run -o the non-results HDF5 file, or the text file (no --resume)      exit 2, unchanged
  run -o an empty file, then again (replacing the results file it wrote)  exit 0 twice
  report a FIFO                                      exit 2 at once (no wait for a writer)
  run -o a name of 253 characters (its .lock would exceed NAME_MAX)  exit 0, no lock left
  bench -o, run -o a path of 300+ characters with OMPI_MCA_io unset   exit 0, readable
  report into a directory where report.md is a directory   exit 2, no plots left behind
  report under a file-size limit (report.html too large)  exit 2, "File too large",
                                                     the earlier report.html unchanged
  report a file whose config_text was damaged        exit 0, one line: study.ini does not load
  report an HDF5 file whose format is a UTF-8 variable-length string, as h5py writes it:
                                                     "not a ropebench results file (format is ...)"
  run on the `file` dataset with k all zero          exit 1, the message names the case and why
  the same into an existing results file             exit 1, the file unchanged, no .partial-*
  run -o a symbolic link to a results file           exit 0, the link kept, its target replaced
  run -o a results file beside a user's FILE.partial exit 0, FILE.partial untouched, mode kept
  run --resume with another kernel, or another --dump-inputs, than the file's cases
                                                     exit 2, unchanged
  run --resume, run -o, bench -o a file of format_version 99   exit 2, unchanged
  run --resume where a complete case lost rows/lse   exit 0, that case redone
  report a run stopped after its first case          names the case never run
  bench --json a study INI file                      exit 2, unchanged

usage: test_output_guard.py WORKDIR MPIEXEC... -- ROPEBENCH
"""
import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys

import h5py
import numpy as np

failed = []


def ours(stderr):
    note = re.compile(r"ropebench: (the \d+ finished case\(s\) stay readable in |"
                      r"no case was finished)")
    return [l for l in stderr.splitlines() if l.startswith("ropebench:") and not note.match(l)]


def expect(label, cmd, rc, pattern, timeout=120, env=None):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        failed.append(f"{label}: no answer in {timeout} s")
        return
    lines = ours(p.stderr)
    if p.returncode != rc:
        failed.append(f"{label}: exit {p.returncode}, expected {rc}: {p.stderr[-600:]!r}")
    elif pattern and (len(lines) != 1 or not re.search(pattern, lines[0])):
        failed.append(f"{label}: stderr lines {lines}, expected one matching {pattern!r}")
    else:
        print(f"ok   {label}: {lines[0] if lines else 'exit 0'}")


def small_run(mpi, exe, seq_len, out):
    """One full-mode case of seq_len tokens (d 32, one head, method none) into out."""
    return mpi + ["1", exe, "run", "-q", "--set", "model.head_dim=32", "--set",
                  "model.original_ctx=64", "--set", "study.heads=1", "--set",
                  f"study.seq_lens={seq_len}", "--set", "study.modes=full", "--set",
                  "scaling.methods=none", "--set", "study.datasets=gaussian", "-o", out]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    sep = sys.argv.index("--")
    work, mpi, exe = sys.argv[1], sys.argv[2:sep], sys.argv[sep + 1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # under mpiexec -n 1, as users run it (Open MPI's singleton mode crashes
    # LeakSanitizer's tracer in the ASan preset)
    bench = mpi + ["1", exe, "bench", "--quick", "--only", "rope", "--kernels", "ref",
                   "--threads", "1", "-o"]

    plain = os.path.join(work, "inputs.h5")
    with h5py.File(plain, "w") as f:
        f["q"] = np.zeros((1, 4, 8), np.float32)
    # bytes past HDF5's end of allocation, which a read-write open and close would trim
    with open(plain, "ab") as f:
        f.write(b"appended payload")
    plain_digest = digest(plain)
    expect("bench -o a non-results HDF5 file", bench + [plain], 2,
           r"inputs\.h5: an HDF5 file that is not a ropebench results file")
    if digest(plain) != plain_digest:
        failed.append("bench -o changed the non-results HDF5 file")

    text = os.path.join(work, "notes.h5")
    with open(text, "w") as f:
        f.write("not hdf5\n")
    before = digest(text)
    expect("bench -o a text file", bench + [text], 2, r"notes\.h5: not an HDF5 file")
    if digest(text) != before:
        failed.append("bench -o changed the text file")

    # --json never overwrites the -o file or an HDF5 file
    both = bench[:-1] + ["--json", plain, "-o", plain]
    expect("bench --json F -o F", both, 2, r"--json .*inputs\.h5 and -o .*inputs\.h5 name the "
           r"same file")
    expect("bench --json an HDF5 file", bench[:-1] + ["--json", plain], 2,
           r"--json .*inputs\.h5: an HDF5 file; --json would overwrite it")
    if digest(plain) != plain_digest:
        failed.append("bench --json changed the HDF5 file")

    empty = os.path.join(work, "empty.h5")
    open(empty, "w").close()
    expect("bench -o an empty file", bench + [empty], 0, None)
    with h5py.File(empty, "r") as f:
        fmt = f.attrs.get("format")
        if fmt not in (b"ropebench", "ropebench") or "bench" not in f:
            failed.append(f"bench -o an empty file: format {fmt!r}, groups {list(f)}")

    def refused_resume(label, path, pattern):
        """run --resume -o path: exit 2 with the message, and the file left as it was."""
        was = digest(path)
        expect(label, mpi + ["1", exe, "run", "-q", "--resume", "--set", "study.seq_lens=64",
                             "--set", "study.modes=full", "--set", "study.datasets=gaussian",
                             "--set", "model.original_ctx=32", "-o", path], 2, pattern)
        if digest(path) != was:
            failed.append(f"{label}: the file changed")

    # that file holds /bench and no study: --resume says so (not "config_text differs")
    refused_resume("run --resume -o a file from bench -o", empty,
                   r"empty\.h5: --resume: the file holds no study to resume")
    refused_resume("run --resume -o a non-results HDF5 file", plain,
                   r"inputs\.h5: --resume: not a ropebench results file")
    empty2 = os.path.join(work, "empty2.h5")
    open(empty2, "w").close()
    refused_resume("run --resume -o an empty file", empty2,
                   r"empty2\.h5: --resume: empty file, not a ropebench results file")

    def refused_run(label, path, pattern):
        """run -o path without --resume: exit 2 with the message, the file as it was."""
        was = digest(path)
        expect(label, mpi + ["1", exe, "run", "-q", "--set", "study.seq_lens=64",
                             "--set", "study.modes=full", "--set", "study.datasets=gaussian",
                             "--set", "model.original_ctx=32", "-o", path], 2, pattern)
        if digest(path) != was:
            failed.append(f"{label}: the file changed")

    # a plain run replaces results files and empty files only
    refused_run("run -o a non-results HDF5 file", plain,
                r"inputs\.h5: an HDF5 file that is not a ropebench results file.*"
                r"replaces only a ropebench results file")
    refused_run("run -o a text file", text, r"notes\.h5: not an HDF5 file; run -o replaces")
    empty3 = os.path.join(work, "empty3.h5")
    open(empty3, "w").close()
    run_small = mpi + ["1", exe, "run", "-q", "--set", "study.seq_lens=64", "--set",
                       "study.modes=full", "--set", "study.datasets=gaussian", "--set",
                       "model.original_ctx=32", "--set", "scaling.methods=none", "-o", empty3]
    expect("run -o an empty file", run_small, 0, None)
    expect("run -o the results file it wrote (replaced)", run_small, 0, None)
    with h5py.File(empty3, "r") as f:
        if f.attrs.get("format") not in (b"ropebench", "ropebench") or \
                len(f["cases"]) != 1:
            failed.append(f"run -o an empty file, twice: {dict(f.attrs)}, {list(f)}")

    fifo = os.path.join(work, "fifo.h5")
    os.mkfifo(fifo)
    expect("report a FIFO", [exe, "report", fifo, "-o", os.path.join(work, "rep-fifo")], 2,
           r"fifo\.h5: not a regular file", timeout=20)

    vlen = os.path.join(work, "anndata.h5")
    with h5py.File(vlen, "w") as f:
        f.attrs["format"] = "anndata"  # h5py: a variable-length UTF-8 string
    expect("report an HDF5 file of another format",
           [exe, "report", vlen, "-o", os.path.join(work, "rep-vlen")], 2,
           r'anndata\.h5: not a ropebench results file \(format is "anndata"\)')

    # a report whose report.md cannot be created fails before drawing: no plots left
    small = os.path.join(work, "small.h5")
    expect("a small study for the report", small_run(mpi, exe, 128, small), 0, None)
    # an output name within NAME_MAX whose ".lock" is not: the run takes a hashed lock
    # name in the same directory and removes it at the end
    long = os.path.join(work, "r" * 250 + ".h5")
    expect("run -o a 253-character file name", small_run(mpi, exe, 128, long), 0, None)
    locks = [x for x in os.listdir(work) if x.endswith(".lock")]
    if not os.path.isfile(long) or locks:
        failed.append(f"long output name: file there {os.path.isfile(long)}, locks {locks}")

    # a results file under a deep directory (a path of 300+ characters), with
    # OMPI_MCA_io unset as a plain mpirun leaves it: the program picks ROMIO itself
    # (rb_mpi_env_defaults; Open MPI 4's OMPIO aborted in a buffer overflow of its
    # shared-file-pointer components and left an empty file)
    deep = os.path.join(work, *(["d" * 60] * 5))
    os.makedirs(deep)
    env = {k: v for k, v in os.environ.items() if k != "OMPI_MCA_io"}
    for label, cmd, out in (
            ("bench -o", bench, os.path.join(deep, "b.h5")),
            ("run -o", small_run(mpi, exe, 128, os.path.join(deep, "r.h5"))[:-1],
             os.path.join(deep, "r.h5"))):
        expect(f"{label} a path of {len(out)} characters, OMPI_MCA_io unset", cmd + [out], 0,
               None, env=env)
        try:
            with h5py.File(out, "r") as f:
                if "bench" not in f and "cases" not in f:
                    failed.append(f"{label} a deep path: groups {list(f)}")
        except OSError as e:
            failed.append(f"{label} a deep path: not readable: {e}")

    rep = os.path.join(work, "rep-blocked")
    os.makedirs(os.path.join(rep, "report.md"))
    expect("report where report.md is a directory", [exe, "report", small, "-o", rep], 2,
           r"cannot create .*report\.md: not a regular file")
    left = [x for x in os.listdir(rep) if x.endswith(".svg")]
    if left:
        failed.append(f"report left {len(left)} plots behind after failing: {left[:3]}")

    # a report that cannot be written whole (a file-size limit) names the file and the
    # cause, and leaves the earlier report's file as it was, with no temporary left
    rep = os.path.join(work, "rep-limit")
    expect("a first report", [exe, "report", small, "-o", rep], 0, None)
    html = os.path.join(rep, "report.html")
    with open(html, "ab") as f:  # so that a new report.html would differ
        f.write(b"<!-- the earlier report -->\n")
    before = digest(html)
    limit = os.path.getsize(html) // 2
    if os.path.getsize(os.path.join(rep, "report.md")) >= limit:
        failed.append(f"report under a size limit: report.md is not smaller than {limit}")

    def fsize_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run([exe, "report", small, "-o", rep], capture_output=True, text=True,
                       preexec_fn=fsize_limit, timeout=120)
    lines = ours(p.stderr)
    if p.returncode != 2 or len(lines) != 1 or not re.search(
            r"cannot write .*report\.html: File too large \(an earlier one there, if any, is left",
            lines[0]):
        failed.append(f"report under a file-size limit: exit {p.returncode}, {p.stderr!r}")
    elif digest(html) != before:
        failed.append("report under a file-size limit: the earlier report.html changed")
    else:
        print(f"ok   report under a file-size limit: {lines[0]}")
    tmp = [x for x in os.listdir(rep) if ".tmp-" in x]
    if tmp:
        failed.append(f"report under a file-size limit left {tmp}")
    # a comparison likewise: compare.md and compare.html stay the earlier pair when the
    # second cannot be written (compare.md was once replaced before compare.html failed)
    other = os.path.join(work, "other.h5")
    shutil.copyfile(small, other)
    with h5py.File(other, "a") as f:
        f.attrs["git_describe"] = np.bytes_("another run")
    cmp_dir = os.path.join(work, "cmp-limit")
    expect("a first comparison", [exe, "report", small, other, "-o", cmp_dir], 0, None)
    with open(os.path.join(cmp_dir, "compare.md"), "ab") as f:
        f.write(b"\nthe earlier comparison\n")
    docs = {n: digest(os.path.join(cmp_dir, n)) for n in ("compare.md", "compare.html")}
    climit = os.path.getsize(os.path.join(cmp_dir, "compare.html")) * 9 // 10

    def cmp_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (climit, climit))
    if os.path.getsize(os.path.join(cmp_dir, "compare.md")) >= climit:
        failed.append(f"comparison under a size limit: compare.md is not below {climit}")
    p = subprocess.run([exe, "report", small, other, "-o", cmp_dir], capture_output=True,
                       text=True, preexec_fn=cmp_limit, timeout=120)
    now = {n: digest(os.path.join(cmp_dir, n)) for n in docs}
    tmp = [x for x in os.listdir(cmp_dir) if ".tmp-" in x]
    if p.returncode == 0 or "compare.html: File too large" not in p.stderr or now != docs \
            or tmp:
        failed.append(f"comparison under a file-size limit: exit {p.returncode}, "
                      f"{p.stderr!r}, changed {[n for n in docs if now[n] != docs[n]]}, "
                      f"left {tmp}")
    else:
        print("ok   comparison under a file-size limit: both documents as they were")

    # a results file whose stored configuration was damaged afterwards: the report is
    # written (exit 0) and one line says its study.ini does not load; the intact file's
    # report says nothing
    p = subprocess.run([exe, "report", small, "-o", os.path.join(work, "rep-ini-ok")],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or ours(p.stderr):
        failed.append(f"report of an intact file: exit {p.returncode}, {p.stderr!r}")
    damaged = os.path.join(work, "cfg-damaged.h5")
    shutil.copyfile(small, damaged)
    with h5py.File(damaged, "a") as f:
        text = f.attrs["config_text"]
        text = text.decode() if isinstance(text, bytes) else text
        f.attrs["config_text"] = np.bytes_(text.replace("[model]", "[modXl]", 1))
    expect("report of a file whose config_text was damaged",
           [exe, "report", damaged, "-o", os.path.join(work, "rep-ini-bad")], 0,
           r"configuration stored in .*cfg-damaged\.h5 does not load as a study "
           r"\(.*study\.ini:\d+: unknown section \[modXl\]\)")
    # the same where gnuplot is missing: the report (but its plots) is written, exit 1,
    # and both are said, gnuplot first (until 2026-12-03 the study.ini line was not)
    p = subprocess.run([os.path.abspath(exe), "report", damaged, "-o",
                        os.path.join(work, "rep-ini-bad-noplot")], capture_output=True,
                       text=True, timeout=120,
                       env=dict(os.environ, PATH=os.path.join(work, "no-such-bin")))
    lines = ours(p.stderr)
    if p.returncode != 1 or len(lines) != 2 or not lines[0].startswith("ropebench: gnuplot:") or \
            "cfg-damaged.h5 does not load as a study" not in lines[1]:
        failed.append(f"damaged config_text without gnuplot: exit {p.returncode}, {lines!r}")
    else:
        print("ok   damaged config_text without gnuplot: both said")

    kzero = os.path.join(work, "kzero.h5")
    rng = np.random.default_rng(3)
    with h5py.File(kzero, "w") as f:
        f["q"] = rng.standard_normal((1, 128, 32)).astype(np.float32)
        f["k"] = np.zeros((1, 128, 32), np.float32)
        f["v"] = rng.standard_normal((1, 128, 32)).astype(np.float32)
    expect("file dataset with k all zero",
           mpi + ["1", exe, "run", "-q", "--set", "model.head_dim=32", "--set",
                  "model.original_ctx=64", "--set", "study.heads=1", "--set",
                  "study.seq_lens=128", "--set", "study.modes=full", "--set",
                  "scaling.methods=none", "--set", "study.datasets=file", "--set",
                  f"file.path={kzero}", "-o", os.path.join(work, "kzero-out.h5")], 1,
           r"metrics of case none-L128-full-file: q or k is zero in every rotary pair")

    # an existing results file is replaced only once a case is finished: a run that
    # fails before (here on its input) leaves it byte for byte, and no .partial behind
    before = digest(small)
    kzero_into_small = mpi + ["1", exe, "run", "-q", "--set", "model.head_dim=32", "--set",
                              "model.original_ctx=64", "--set", "study.heads=1", "--set",
                              "study.seq_lens=128", "--set", "study.modes=full", "--set",
                              "scaling.methods=none", "--set", "study.datasets=file",
                              "--set", f"file.path={kzero}", "-o", small]
    p = subprocess.run(kzero_into_small, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 1 or digest(small) != before or \
            [x for x in os.listdir(work) if x.startswith("small.h5.partial")] or \
            "is left as it was" not in p.stderr:
        failed.append(f"a failing run replaced the results file: exit {p.returncode}, "
                      f"unchanged {digest(small) == before}, .partial left "
                      f"{os.listdir(work)}: {p.stderr[-400:]!r}")
    else:
        print("ok   a run failing before its first case leaves -o as it was")
    # a file of the user's that happens to be named FILE.partial is not the staging
    # file (that one gets a unique name made with O_EXCL): left as it was; and the
    # replacement keeps the old file's permission bits
    mine = small + ".partial"
    with open(mine, "w") as f:
        f.write("my notes\n")
    os.chmod(small, 0o640)
    expect("run -o over a results file beside FILE.partial", small_run(mpi, exe, 80, small),
           0, None)
    left = [x for x in os.listdir(work) if x.startswith("small.h5.partial-")]
    if open(mine).read() != "my notes\n" or left or os.stat(small).st_mode & 0o777 != 0o640:
        failed.append(f"replacing -o: FILE.partial changed {open(mine).read()!r}, staging "
                      f"files left {left}, mode {oct(os.stat(small).st_mode & 0o777)}")
    os.remove(mine)
    # through a symbolic link: the file it names is replaced, the link stays a link
    link = os.path.join(work, "link.h5")
    os.symlink(os.path.basename(small), link)
    expect("run -o a link to a results file", small_run(mpi, exe, 96, link), 0, None)
    with h5py.File(small, "r") as f:
        names = list(f["cases"])
    if not os.path.islink(link) or names != ["none-L96-full-gaussian"] or \
            [x for x in os.listdir(work) if x.startswith("small.h5.partial")]:
        failed.append(f"run -o a link: still a link {os.path.islink(link)}, cases of the "
                      f"file it names {names}")

    # --resume only with the kernel and --dump-inputs the file's cases ran with, and
    # never into a format_version this build does not write (nor bench -o, nor run -o)
    tiny = ["--set", "model.head_dim=32", "--set", "model.original_ctx=64", "--set",
            "study.heads=1", "--set", "study.seq_lens=64,96", "--set", "study.modes=full",
            "--set", "scaling.methods=none", "--set", "study.datasets=gaussian"]
    mixed = os.path.join(work, "mixed.h5")
    ref_env = dict(os.environ, ROPEBENCH_ISA="ref", ROPEBENCH_TEST_ABORT_AFTER="1")
    subprocess.run(mpi + ["1", exe, "run", "-q"] + tiny + ["-o", mixed], env=ref_env,
                   capture_output=True, timeout=120)
    # --json replaces only JSON: a study INI (which starts with '[' too) is left alone
    ini = os.path.join(work, "study.ini")
    with open(ini, "w") as f:
        f.write("[model]\nhead_dim = 32\n")
    before = digest(ini)
    expect("bench --json an INI file", [exe, "bench", "--quick", "--only", "rope", "--kernels",
                                        "ref", "--threads", "1", "--json", ini], 2,
           r"--json .*study\.ini: an existing file that is not JSON")
    if digest(ini) != before:
        failed.append("bench --json changed the INI file it refused")
    # a JSON that cannot be written whole (a file-size limit of 0) leaves the earlier
    # JSON as it was, names the cause, and exits 1 (it was cut and half rewritten)
    js = os.path.join(work, "rows.json")
    bench_js = [exe, "bench", "--quick", "--only", "rope", "--kernels", "ref", "--threads",
                "1", "--json", js]
    expect("bench --json a first time", bench_js, 0, None)
    before = digest(js)
    p = subprocess.run(bench_js, capture_output=True, text=True, timeout=120,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    left = [x for x in os.listdir(work) if x.startswith("rows.json.tmp-")]
    if p.returncode != 1 or digest(js) != before or left or not re.search(
            r"--json .*rows\.json: cannot write: File too large \(an earlier file there, if "
            r"any, is left as it was\)", p.stderr):
        failed.append(f"bench --json under a file-size limit: exit {p.returncode}, "
                      f"{p.stderr[-300:]!r}, changed {digest(js) != before}, left {left}")
    else:
        print("ok   bench --json under a file-size limit: the earlier JSON as it was")
    # the report names the study's cases the stopped run never began
    rep_mixed = os.path.join(work, "rep-mixed")
    expect("report a stopped run", [exe, "report", mixed, "-o", rep_mixed], 0, None)
    md = open(os.path.join(rep_mixed, "report.md")).read()
    if "1 of the study's 2 case(s) never run: none-L96-full-gaussian" not in md:
        failed.append("report of a stopped run does not name the case never run: " +
                      md.splitlines()[2][:300])
    before = digest(mixed)
    expect("run --resume with another kernel",
           mpi + ["1", exe, "run", "-q", "--resume"] + tiny + ["-o", mixed], 2,
           r"mixed\.h5: --resume: its cases ran on kernel ref, this run would use blas",
           env=dict(os.environ, ROPEBENCH_ISA="blas"))
    expect("run --resume with --dump-inputs into a file without",
           mpi + ["1", exe, "run", "-q", "--resume", "--dump-inputs"] + tiny + ["-o", mixed],
           2, r"mixed\.h5: --resume: its cases were run without --dump-inputs",
           env=dict(os.environ, ROPEBENCH_ISA="ref"))
    if digest(mixed) != before:
        failed.append("a refused --resume changed the file")
    future = os.path.join(work, "future.h5")
    shutil.copy(mixed, future)
    with h5py.File(future, "r+") as f:
        f.attrs["format_version"] = np.int64(99)
    before = digest(future)
    for label, cmd in (
            ("run --resume", ["run", "-q", "--resume"] + tiny),
            ("run -o", ["run", "-q"] + tiny),
            ("bench -o", ["bench", "--quick", "--kernels", "ref", "--only", "rope",
                          "--threads", "1"])):
        expect(f"{label} a file of format_version 99", mpi + ["1", exe] + cmd + ["-o", future],
               2, r"future\.h5.*a ropebench results file whose format_version is not 1", env=dict(os.environ, ROPEBENCH_ISA="ref"))
    if digest(future) != before:
        failed.append("a refused command changed the format_version 99 file")

    # a case marked complete whose rows/lse is gone (edited, damaged) is redone by
    # --resume, not kept
    holed = os.path.join(work, "holed.h5")
    ref_only = dict(os.environ, ROPEBENCH_ISA="ref")
    subprocess.run(mpi + ["1", exe, "run", "-q"] + tiny + ["-o", holed], env=ref_only,
                   capture_output=True, timeout=120)
    with h5py.File(holed, "r+") as f:
        first = sorted(f["cases"])[0]
        del f["cases"][first]["rows"]["lse"]
    p = subprocess.run(mpi + ["1", exe, "run", "--resume"] + tiny + ["-o", holed],
                       env=ref_only, capture_output=True, text=True, timeout=120)
    with h5py.File(holed, "r") as f:
        back = "lse" in f["cases"][first]["rows"]
    if p.returncode != 0 or not back or "1 of 2 cases run" not in p.stderr:
        failed.append(f"--resume kept a complete case without rows/lse: exit {p.returncode}, "
                      f"lse back {back}: {p.stderr[-400:]!r}")
    else:
        print(f"ok   --resume redoes {first}, which had lost rows/lse")

    for x in failed:
        print("FAIL", x)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
