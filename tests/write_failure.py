#!/usr/bin/env python3
"""write_failure.py — a run whose results file stops taking writes (a file-size limit set
through the ROPEBENCH_TEST_FSIZE_LIMIT hook, which fails writes the way a full file
system does) must exit 1 without hanging, say in its first line what failed on which
file, say that the limit stopped it, and say how many cases stay readable — and they
must: the file opens, exactly that many cases are complete with readable lse, `ropebench
report` works on it and the lock file is gone. Three places to be stopped: at a flush
(the room it reserves for its metadata is not there; then `run --resume` without the
limit must complete the file equal to an uninterrupted run, REFERENCE, by
compare_results.py), in a dataset write between two flushes (--dump-inputs of longer
cases), and before the file is made (no room for its first MiB: exit 2, and no file;
replacing an earlier results file, that file byte for byte as it was and no staged
replacement left). Also `ropebench bench -o` into an existing results file (with a
/bench) that cannot grow: refused before anything is measured (exit 2, an earlier
--json file kept as it was) when the room is not there at the start, exit 1 when it
goes while measuring; either way the file still opens with its cases and /bench
unchanged.

usage: write_failure.py WORKDIR ROPEBENCH CONFIG REFERENCE.h5 -- mpiexec-command-prefix...
"""
import os
import re
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

from rbtest import verdict


# runs its arguments with the limit only where the rank (Open MPI's variable) is 1
RANK1_ONLY = ('if [ "${OMPI_COMM_WORLD_RANK:-$PMIX_RANK}" = 1 ]; then '
              'export ROPEBENCH_TEST_FSIZE_LIMIT="$RB_TEST_LIMIT_RANK1"; fi; exec "$0" "$@"')


# the reference kernel (CTest sets ROPEBENCH_ISA=ref) only where a run's results are
# compared with REFERENCE; the other runs take the fastest kernel, which writes the same
# datasets (and in sanitizer builds is many times faster)
FAST = {k: v for k, v in os.environ.items() if k != "ROPEBENCH_ISA"}


def run_limited(run, limit, rank1_only=False, base=None):
    base = FAST if base is None else base
    if rank1_only:
        env = dict(base, RB_TEST_LIMIT_RANK1=str(limit))
        env.pop("ROPEBENCH_TEST_FSIZE_LIMIT", None)
    else:
        env = dict(base, ROPEBENCH_TEST_FSIZE_LIMIT=str(limit))
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
    sizes = {}
    big = ["--dump-inputs", "--set", "study.seq_lens=2048", "--set",
           "study.probe_seq_lens=4096"]
    for key, extra in (("small", ["--dump-inputs"]), ("big", big)):
        whole = os.path.join(work, f"write-whole-{key}.h5")
        if os.path.exists(whole):
            os.remove(whole)
        w = subprocess.run(mpi + ["2", exe, "run", "-q", "-c", cfg, "-o", whole] + extra,
                           env=FAST, capture_output=True, text=True, timeout=240)
        if w.returncode != 0:
            print(f"FAIL: the unlimited run exited {w.returncode}: {w.stderr[-800:]}")
            return 1
        sizes[key] = os.path.getsize(whole)

    out = os.path.join(work, "write-limited.h5")
    # "part way": the limit is met by the room a flush reserves for its metadata;
    # "in a raw write": by a case's large inputs (--dump-inputs) between two flushes
    # (where the limit falls decides which one meets it first: four places are tried
    # for the second, and one of them must meet it in a dataset write)
    # "rank 1 only": the limit on one rank alone (its own file-size limit, as an I/O
    # error on one node would be): the ranks must still stop together, within the
    # timeout, with the file as its last flush left it (until 2026-11-30 they hung in
    # different collectives inside H5Fflush and the file no longer opened)
    raw_hits = 0
    for label, extra, limit, size in (
            ("part way", ["--dump-inputs"], int(sizes["small"] * 0.6), sizes["small"]),
            ("before any case", [], 20000, sizes["small"]),
            ("before any case, replacing", [], 20000, sizes["small"])) + tuple(
            ("in a raw write", big, int(sizes["big"] * f), sizes["big"])
            for f in (0.5, 0.55, 0.6, 0.65)) + tuple(
            ("rank 1 only", big, int(sizes["big"] * f), sizes["big"])
            for f in (0.3, 0.6)):
        one = label == "rank 1 only"
        run = mpi + ["2"] + (["bash", "-c", RANK1_ONLY] if one else []) + \
            [exe, "run", "-q", "-c", cfg, "-o", out] + extra
        if os.path.exists(out):
            os.remove(out)
        if label == "before any case, replacing":  # an earlier results file in its place
            shutil.copyfile(os.path.join(work, "write-whole-small.h5"), out)
            with open(out, "rb") as f:
                old_bytes = f.read()
        p, secs = run_limited(run, limit, one,
                              dict(os.environ) if label == "part way" else None)
        if p is None:
            failed.append(f"{label}: the run hung (no exit within {secs:.0f} s)")
            continue
        lines = [x for x in p.stderr.splitlines() if x.startswith("ropebench:")]
        text = "\n".join(lines)
        if label == "before any case":
            # refused before the file is made (no room for its first writes): exit 2
            if p.returncode != 2 or len(lines) != 1 or out not in lines[0] or \
                    "no room to write it" not in lines[0] or os.path.exists(out) or \
                    os.path.exists(out + ".lock"):
                failed.append(f"{label}: exit {p.returncode}, file left "
                              f"{os.path.exists(out)}, {p.stderr[-800:]!r}")
            print(f"{label}: limit {limit}, exit {p.returncode} in {secs:.1f} s: {text[:90]}")
            continue
        if label == "before any case, replacing":
            # the replacement cannot be made: exit 2, the old file as it was, no staged
            # replacement (FILE.partial-XXXXXX) left beside it
            left = [x for x in os.listdir(work)
                    if x.startswith(os.path.basename(out) + ".partial-")]
            same = os.path.exists(out) and open(out, "rb").read() == old_bytes
            if p.returncode != 2 or len(lines) != 1 or "no room to write it" not in text or \
                    f"the replacement of {out}, which is left as it was" not in text or \
                    not same or left or os.path.exists(out + ".lock"):
                failed.append(f"{label}: exit {p.returncode}, file kept {same}, left {left}, "
                              f"{p.stderr[-800:]!r}")
            print(f"{label}: limit {limit}, exit {p.returncode} in {secs:.1f} s: {text[:90]}")
            continue
        if p.returncode != 1:
            failed.append(f"{label}: exit {p.returncode}, expected 1: {p.stderr[-800:]!r}")
            continue
        if "Sanitizer" in p.stderr or "runtime error" in p.stderr:
            failed.append(f"{label}: sanitizer report: {p.stderr[-800:]!r}")
        if not lines or out not in lines[0] or \
                ("failed" not in lines[0] and "no room" not in lines[0]):
            failed.append(f"{label}: first line does not name the failed write: {text!r}")
        if "the file-size limit" not in text and "File too large" not in lines[0]:
            failed.append(f"{label}: nothing says the file-size limit stopped it: {text!r}")
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
        if True:
            if not m or int(m.group(1)) != len(done) or not done:
                failed.append(f"{label}: message says {m.group(1) if m else 'nothing'} "
                              f"finished cases, the file has {len(done)} complete")
            r = subprocess.run([exe, "report", out, "-o", os.path.join(work, "write-report")],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                failed.append(f"{label}: report failed on the file: {r.stderr.strip()}")
        raw_hits += label == "in a raw write" and "H5Dwrite failed" in lines[0]
        if label == "part way":
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
        print(f"{label}: limit {limit} of {size} bytes, exit {p.returncode} in {secs:.1f} s, "
              f"{len(done)} cases kept: {lines[0][:90]}")
    if not raw_hits:
        failed.append("in a raw write: no limit was met in a dataset write")

    # `ropebench bench -o` into an existing results file that cannot grow: exit 1, and
    # the file still holds every case it held (a close after the failed write would
    # have made it unreadable)
    target = os.path.join(work, "write-bench.h5")
    shutil.copyfile(os.path.join(work, "write-whole-small.h5"), target)
    bench = mpi + ["1", exe, "bench", "--quick", "--only", "rope", "--kernels", "ref",
                   "--threads", "1", "-o", target]
    b = subprocess.run(bench, capture_output=True, text=True, timeout=240)  # a /bench
    if b.returncode != 0:
        failed.append(f"bench -o without a limit: exit {b.returncode}, {b.stderr[-800:]!r}")

    def content(f):
        got = {n: f["cases"][n]["rows/lse"][()] for n in f["cases"]}
        got.update({"bench/" + k: f["bench"][k][()] for k in f["bench"]
                    if isinstance(f["bench"][k], h5py.Dataset)})
        return got
    with h5py.File(target, "r") as f:
        before = content(f)
    json_out = os.path.join(work, "write-bench.json")
    # without room for its first MiB: refused before anything is measured (exit 2, no
    # table rows, no --json file); with that room at the start but not when it writes
    # (the limit set just before the write): exit 1. Either way the file still opens with
    # every case and /bench it held.
    for var, want in (("ROPEBENCH_TEST_FSIZE_LIMIT", 2),
                      ("ROPEBENCH_TEST_FSIZE_LIMIT_AT_WRITE", 1)):
        with open(json_out, "w") as f:  # an earlier --json file: kept until rows exist
            f.write('{"earlier": 1}\n')
        env = dict(os.environ, **{var: str(os.path.getsize(target) + 8000)})
        b = subprocess.run(bench + ["--json", json_out], env=env, capture_output=True,
                           text=True, timeout=240)
        blines = [x for x in b.stderr.splitlines() if x.startswith("ropebench:")]
        rows = [x for x in b.stdout.splitlines() if x.strip() and not x.startswith("#")]
        if b.returncode != want or not blines or target not in blines[0] or \
                "no room" not in blines[0]:
            failed.append(f"bench -o ({var}): exit {b.returncode} (want {want}), "
                          f"{b.stderr[-800:]!r}")
        with open(json_out) as f:
            json_text = f.read()
        if want == 2 and (rows or json_text != '{"earlier": 1}\n'):
            failed.append(f"bench -o ({var}): measured before refusing: {len(rows)} rows, "
                          f"--json file now {json_text[:60]!r}")
        if want == 1 and not rows:
            failed.append(f"bench -o ({var}): no rows measured before the write")
        try:
            with h5py.File(target, "r") as f:
                after = content(f)
                # (float columns compared with NaN equal to NaN: /bench/gbps and
                # /bench/overlap_ceiling are NaN where they do not apply)
                if sorted(after) != sorted(before) or \
                        any(not np.array_equal(after[n], before[n],
                                               equal_nan=after[n].dtype.kind == "f")
                            for n in before):
                    failed.append(f"bench -o ({var}): the cases or /bench of the file changed")
        except OSError as e:
            failed.append(f"bench -o ({var}): the file does not open after the failed "
                          f"write: {e}")
        print(f"bench -o ({var}): exit {b.returncode}, {len(rows)} rows: "
              f"{blines[0][:100] if blines else ''}")
    # a limit that is not a number is ignored with one line (it once became 0 bytes:
    # every write failed and nothing said why)
    junk_out = os.path.join(work, "write-junk.h5")
    b = subprocess.run(bench[:-1] + [junk_out], env=dict(os.environ, ROPEBENCH_TEST_FSIZE_LIMIT="1k"),
                       capture_output=True, text=True, timeout=240)
    blines = [x for x in b.stderr.splitlines() if x.startswith("ropebench:")]
    if b.returncode != 0 or len(blines) != 1 or \
            "ROPEBENCH_TEST_FSIZE_LIMIT='1k': not a whole number of bytes; ignored" not in \
            blines[0] or not os.path.isfile(junk_out):
        failed.append(f"bench -o with ROPEBENCH_TEST_FSIZE_LIMIT=1k: exit {b.returncode}, "
                      f"{b.stderr[-400:]!r}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
