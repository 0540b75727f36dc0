#!/usr/bin/env python3
"""report_damaged.py — results files damaged after the fact (one damage per copy, made
with h5py from a small study this script runs) against `ropebench report` and
`ropebench run --resume`:

  report, a finished case whose required attribute is missing, out of range or of the
  wrong type (seq_len, mode, flops), whose rows/position holds a position past seq_len,
  whose needles table holds a hit of -3 or a mass of -0.5 or inf (a mass above 1 is
  valid and shown), whose timing holds a negative time:
      exit 0, the report lists that case among the skipped ones with the reason, and
      one `ropebench:` line on stderr names the file, the case and the reason; the
      other cases are reported as from the undamaged file
  report, /provenance/triad_gbps deleted: "no triad recorded", never "nan"
  report, a file holding only the format attributes: no claim that it has a /bench
  report, one byte of the root `kernel` attribute's string size set to 0xcc (libhdf5
      1.10 crashes in H5Aiterate2 on it): exit 2, one line naming the file, no output
  report never changes its input (sha256)
  run --resume, a "complete" case whose rows/lse became strings, or whose seq_len
      became a string and whose rows/position is gone: those cases are redone, the
      rest kept, and the file then reports every case

usage: report_damaged.py WORKDIR MPIEXEC... -- ROPEBENCH
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

from rbtest import verdict

failed = []

FLAGS = ["--set", "model.head_dim=32", "--set", "model.original_ctx=64", "--set",
         "study.heads=1", "--set", "study.seq_lens=128", "--set", "study.probe_seq_lens=256",
         "--set", "study.modes=full,probe", "--set", "scaling.methods=none,yarn", "--set",
         "study.datasets=gaussian,needle", "--set", "study.probe_rows=16", "--set",
         "needle.positions=-2,-17", "--set", "needle.query_positions=-1,-1"]
CF = "/cases/none-L128-full-gaussian"
CP = "/cases/yarn-x8-L256-probe-needle"


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def ours(stderr):
    return [l for l in stderr.splitlines() if l.startswith("ropebench:")]


def report(exe, path, out):
    shutil.rmtree(out, ignore_errors=True)
    before = sha(path)
    p = subprocess.run([exe, "report", path, "-o", out], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=300)
    if sha(path) != before:
        failed.append(f"report changed its input {path}")
    return p


def skipped_case(work, exe, label, good, damage, case, reason):
    """A copy of good damaged by damage(f); report must skip `case` saying `reason`."""
    path = os.path.join(work, label + ".h5")
    shutil.copy(good, path)
    with h5py.File(path, "r+") as f:
        damage(f)
    out = os.path.join(work, "r-" + label)
    p = report(exe, path, out)
    lines = ours(p.stderr)
    name = case.rsplit("/", 1)[1]
    if p.returncode != 0:
        failed.append(f"{label}: exit {p.returncode}, expected 0: {p.stderr[-400:]!r}")
        return
    if len(lines) != 1 or name not in lines[0] or not re.search(reason, lines[0]) or \
            path not in lines[0]:
        failed.append(f"{label}: stderr lines {lines}, expected one naming {path}, {name} "
                      f"and /{reason}/")
        return
    md = open(os.path.join(out, "report.md")).read()
    sk = md.split("### Incomplete or unreadable cases (skipped)", 1)
    if len(sk) != 2 or not re.search(re.escape(f"`{name}`: ") + reason, sk[1]):
        failed.append(f"{label}: report.md does not list {name} as skipped for /{reason}/")
        return
    # the case is in no table as data: its name appears only in the skipped list
    if name in sk[0]:
        failed.append(f"{label}: report.md shows {name} before its skipped list")
        return
    print(f"ok   {label}: {lines[0]}")


def main():
    sep = sys.argv.index("--")
    work, mpi, exe = sys.argv[1], sys.argv[2:sep], sys.argv[sep + 1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    good = os.path.join(work, "good.h5")
    p = subprocess.run(mpi + ["1", exe, "run", "-q"] + FLAGS + ["-o", good],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        failed.append(f"the small study: exit {p.returncode}: {p.stderr[-600:]!r}")
        return verdict(failed)
    with h5py.File(good, "r") as f:
        ncases = len(f["cases"])
        if CF not in f or CP not in f:
            failed.append(f"the small study lacks {CF} or {CP}: {list(f['cases'])}")
            return verdict(failed)

    # the undamaged file: no note on stderr, no skipped case
    p = report(exe, good, os.path.join(work, "r-good"))
    md = open(os.path.join(work, "r-good", "report.md")).read() if p.returncode == 0 else ""
    if p.returncode != 0 or ours(p.stderr) or "(skipped)" in md:
        failed.append(f"undamaged file: exit {p.returncode}, stderr {ours(p.stderr)}, "
                      f"skipped list {'(skipped)' in md}")
    else:
        print("ok   undamaged file: exit 0, nothing on stderr, no case skipped")

    def del_attr(case, name):
        return lambda f: f[case].attrs.__delitem__(name)

    def set_attr(case, name, value):
        return lambda f: f[case].attrs.__setitem__(name, value)

    def edit(path, fn):
        def d(f):
            a = f[path][()]
            fn(a)
            f[path][...] = a
        return d

    def last(v):
        def fn(a):
            a[-1] = v
        return fn

    def first(v):
        def fn(a):
            a[0] = v
        return fn

    skipped_case(work, exe, "no-seq_len", good, del_attr(CP, "seq_len"), CP,
                 r"attribute seq_len is missing")
    skipped_case(work, exe, "string-seq_len", good, set_attr(CP, "seq_len", np.bytes_(b"256")),
                 CP, r"attribute seq_len is missing")
    skipped_case(work, exe, "no-mode", good, del_attr(CF, "mode"), CF,
                 r"attribute mode is missing")
    skipped_case(work, exe, "bad-mode", good, set_attr(CF, "mode", np.bytes_(b"fast")), CF,
                 r"attribute mode is neither")
    skipped_case(work, exe, "negative-flops", good, set_attr(CF, "flops", np.float64(-5)), CF,
                 r"attribute flops is not a number, negative")
    skipped_case(work, exe, "zero-heads", good, set_attr(CF, "heads", np.int64(0)), CF,
                 r"attribute heads is missing")
    skipped_case(work, exe, "position-past-L", good,
                 edit(CF + "/rows/position", last(10**12)), CF, r"rows/position has a value")
    for label, col, value in (("needle-hit", "hit", -3), ("needle-rank", "rank", 0),
                              ("needle-mass-negative", "mass", -0.5),
                              ("needle-mass-inf", "mass", np.inf)):
        skipped_case(work, exe, label, good, edit(CP + "/needles/" + col, first(value)), CP,
                     rf"needles/{col} has a value outside its range")
    # a mass above 1 is what a run writes where the needle holds nearly all the
    # attention (exp(s - lse) unclamped, docs/metrics.md section 6): the case is shown
    for label, mass in (("needle-mass-above-1", 1.0000015), ("needle-mass-1.48", 1.48)):
        path = os.path.join(work, label + ".h5")
        shutil.copy(good, path)
        with h5py.File(path, "r+") as f:
            edit(CP + "/needles/mass", first(mass))(f)
        p = report(exe, path, os.path.join(work, "r-" + label))
        md = open(os.path.join(work, "r-" + label, "report.md")).read() \
            if p.returncode == 0 else ""
        if p.returncode != 0 or ours(p.stderr) or "(skipped)" in md:
            failed.append(f"{label}: exit {p.returncode}, stderr {ours(p.stderr)}, "
                          f"skipped list {'(skipped)' in md}: a valid case was refused")
        else:
            print(f"ok   {label}: shown, nothing on stderr")
    skipped_case(work, exe, "negative-time", good,
                 edit(CF + "/timing/compute_s", first(-3.0)), CF,
                 r"timing/compute_s has a negative or non-finite time")
    skipped_case(work, exe, "nan-time", good,
                 edit(CF + "/timing/total_s", first(np.nan)), CF,
                 r"timing/total_s has a negative or non-finite time")

    # the attributes must say what the datasets hold (the bytes of K and V and the
    # throughput come from the attributes): heads 1000 over rows of 1 head read 11662 %
    # of the triad; and every timing holds one value per rank
    skipped_case(work, exe, "heads-vs-rows", good, set_attr(CP, "heads", np.int64(1000)), CP,
                 r"rows/entropy holds .*1.*16.*, the attributes heads and n_rows say .*1000.*16")
    skipped_case(work, exe, "n_rows-vs-rows", good, set_attr(CF, "n_rows", np.int64(100)), CF,
                 r"rows/entropy holds .*1.*128.*, the attributes heads and n_rows say .*1.*100")

    def timing_values(case, name, values):
        def d(f):
            del f[case + "/timing/" + name]
            f[case + "/timing/" + name] = np.asarray(values, np.float64)
        return d
    skipped_case(work, exe, "timing-count", good,
                 timing_values(CF, "compute_s", np.ones(50)), CF,
                 r"timing/compute_s has 50 values, the timings before it 1 \(one per rank\)")
    # two ranks' times near the largest double: their median is not inf
    path = os.path.join(work, "huge-times.h5")
    shutil.copy(good, path)
    with h5py.File(path, "r+") as f:
        for name in list(f[CF + "/timing"]):
            timing_values(CF, name, [1e308, 1e308])(f)
    p = report(exe, path, os.path.join(work, "r-huge-times"))
    md = open(os.path.join(work, "r-huge-times", "report.md")).read() \
        if p.returncode == 0 else ""
    if p.returncode != 0 or ours(p.stderr) or re.search(r"\binf\b", md):
        failed.append(f"times of 1e308 on two ranks: exit {p.returncode}, stderr "
                      f"{ours(p.stderr)}, inf in the report {bool(re.search(r'[^a-z]inf', md))}")
    else:
        print("ok   times of 1e308 on two ranks: no inf in the report")

    # no triad in /provenance: said so, not "nan"
    path = os.path.join(work, "no-triad.h5")
    shutil.copy(good, path)
    with h5py.File(path, "r+") as f:
        del f["/provenance/triad_gbps"]
    p = report(exe, path, os.path.join(work, "r-no-triad"))
    md = open(os.path.join(work, "r-no-triad", "report.md")).read() if p.returncode == 0 else ""
    if p.returncode != 0 or "no triad recorded" not in md or re.search(r"\bnan\b", md):
        failed.append(f"no /provenance/triad_gbps: exit {p.returncode}, 'no triad recorded' "
                      f"{'no triad recorded' in md}, nan {bool(re.search(r'[^a-z]nan[^a-z]', md))}")
    else:
        print("ok   no /provenance/triad_gbps: 'no triad recorded', no nan")

    # only the format attributes: no cases, no /bench, and no claim of a throughput table
    path = os.path.join(work, "root-only.h5")
    with h5py.File(path, "w") as f:
        f.attrs["format"] = np.bytes_(b"ropebench")
        f.attrs["format_version"] = np.int64(1)
    p = report(exe, path, os.path.join(work, "r-root-only"))
    md = open(os.path.join(work, "r-root-only", "report.md")).read() if p.returncode == 0 else ""
    if p.returncode != 0 or "bench -o alone" in md or "no `/bench` table" not in md:
        failed.append(f"root-only file: exit {p.returncode}, report says "
                      f"{[l for l in md.splitlines() if 'holds no' in l]}")
    else:
        print("ok   root-only file: 'no cases and no /bench table'")

    # one byte: the high byte of the root `kernel` attribute's string size (version-1
    # attribute message: name "kernel\0" padded to 8, then the datatype's 4 class bytes
    # and its 4-byte size). libhdf5 1.10.8 crashes on it; the report must not.
    b = bytearray(open(good, "rb").read())
    at = b.find(b"\x01\x00\x07\x00\x08\x00\x08\x00kernel\x00")
    if at < 0:
        failed.append("the root kernel attribute's message was not found in good.h5 "
                      "(another HDF5 file layout? the damage needs a new offset)")
    else:
        if b[at + 8 + 12:at + 8 + 16] != b"\x07\x00\x00\x00":
            failed.append(f"the kernel attribute's string size is not 7 at {at + 20}: "
                          f"{bytes(b[at + 20:at + 24])!r}")
        path = os.path.join(work, "kernel-size.h5")
        b[at + 8 + 15] = 0xCC
        open(path, "wb").write(bytes(b))
        out = os.path.join(work, "r-kernel-size")
        p = report(exe, path, out)
        lines = ours(p.stderr)
        if p.returncode != 2 or len(lines) != 1 or path not in lines[0] or \
                os.path.exists(out):
            failed.append(f"one corrupted byte in the root kernel attribute: exit "
                          f"{p.returncode} (expected 2), lines {lines}, output written "
                          f"{os.path.exists(out)}: {p.stderr[-400:]!r}")
        else:
            print(f"ok   corrupted root attribute: exit 2, {lines[0]}")

    # --resume redoes the "complete" cases a reader cannot read, keeps the others
    def resume(label, damage, redone):
        path = os.path.join(work, label + ".h5")
        shutil.copy(good, path)
        with h5py.File(path, "r+") as f:
            damage(f)
        p = subprocess.run(mpi + ["1", exe, "run", "--resume"] + FLAGS + ["-o", path],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=600)
        kept = re.findall(r"\] (\S+)\s+complete in the file, kept", p.stderr)
        want = sorted(c for c in (x.rsplit("/", 1)[1] for x in redone))
        ran = sorted(set(re.findall(r"\] (\S+)\s+[0-9.]+ s", p.stderr)))
        if p.returncode != 0 or ran != want or len(kept) != ncases - len(want):
            failed.append(f"resume {label}: exit {p.returncode}, redone {ran} (expected "
                          f"{want}), kept {len(kept)} of {ncases}: {p.stderr[-600:]!r}")
            return
        r = report(exe, path, os.path.join(work, "r-" + label))
        if r.returncode != 0 or ours(r.stderr):
            failed.append(f"resume {label}: the report afterwards: exit {r.returncode}, "
                          f"{ours(r.stderr)}")
            return
        print(f"ok   resume {label}: redid {ran}, kept {len(kept)}")

    def lse_strings(f):
        p = CF + "/rows/lse"
        a = f[p][()]
        del f[p]
        f[p] = a.astype("S8")

    def seq_string_no_pos(f):
        f[CP].attrs["seq_len"] = np.bytes_(b"256")
        del f["/cases/none-L128-full-needle/rows/position"]

    resume("resume-lse-strings", lse_strings, [CF])
    resume("resume-seq-string", seq_string_no_pos, [CP, "/cases/none-L128-full-needle"])
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
