#!/usr/bin/env python3
"""test_report.py — runs a report command on good and bad results files: a report with escaped strings and SVG plots from a synthetic file; one clear line and a non-zero exit (never a crash) for missing, empty, truncated, foreign HDF5 files.

usage: test_report.py WORKDIR CMD... (CMD contains {in} and {out}, e.g.
       ropebench report {in} -o {out})
"""
import os
import shutil
import signal
import subprocess
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(cmd, inp, out, env=None):
    argv = [a.replace("{in}", inp).replace("{out}", out) for a in cmd]
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return r.returncode, r.stdout, r.stderr


def expect_error(cmd, work, label, path, must_contain):
    out = os.path.join(work, "out-" + label)
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, path, out)
    lines = [l for l in (so + se).splitlines() if l.strip()]
    where = "%s (%s)" % (label, path)
    if rc == 0:
        fail("%s: exit status 0, expected non-zero" % where)
    if rc < 0 or rc >= 128:
        fail("%s: killed by signal / crashed (status %d): %s" % (where, rc, se[-2000:]))
    if len(lines) != 1:
        fail("%s: expected one line of output, got %d:\n%s" % (where, len(lines),
                                                              "\n".join(lines[:20])))
    text = "\n".join(lines)
    if path not in text:
        fail("%s: message does not name the file: %r" % (where, text))
    for m in must_contain:
        if m not in text:
            fail("%s: message lacks %r: %r" % (where, m, text))
    for bad in ("HDF5-DIAG", "Traceback", "Sanitizer", "#000"):
        if bad in so + se:
            fail("%s: output contains %r" % (where, bad))
    if os.path.exists(os.path.join(out, "report.md")):
        fail("%s: report.md written for a bad file" % where)
    print("ok   %s: rc %d: %s" % (label, rc, lines[0] if lines else ""))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    work, cmd = sys.argv[1], sys.argv[2:]
    os.makedirs(work, exist_ok=True)
    good = os.path.join(work, "synthetic.h5")
    subprocess.run([sys.executable, os.path.join(HERE, "make_synthetic.py"), good],
                   check=True, stdout=subprocess.DEVNULL)

    # --- a good file: report.md, report.html, SVGs -------------------------------------
    out = os.path.join(work, "out-good")
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, good, out)
    if rc != 0:
        fail("good file: exit status %d: %s %s" % (rc, so, se))
    else:
        md = open(os.path.join(out, "report.md")).read()
        html = open(os.path.join(out, "report.html")).read()
        svgs = sorted(f for f in os.listdir(out) if f.endswith(".svg"))
        if len(svgs) != 3:
            fail("good file: expected 3 SVG plots (one per seq_len/mode/dataset group), got %s"
                 % svgs)
        for s in svgs:
            if "(%s)" % s not in md:
                fail("report.md does not link %s" % s)
            if os.path.getsize(os.path.join(out, s)) > 200000:
                fail("%s is larger than 200 kB" % s)
        if html.count("<svg") != len(svgs):
            fail("report.html inlines %d SVGs, expected %d" % (html.count("<svg"), len(svgs)))
        if "<script>alert" in html or "&lt;script&gt;alert(1)&lt;/script&gt;" not in html:
            fail("report.html does not escape the command_line attribute")
        if "# a &lt;tag&gt; &amp; &quot;quotes&quot;" not in html or "<pre>" not in html:
            fail("report.html: config_text missing from <pre> or not escaped")
        for needle in ("yarn-x8-L64-full-gaussian", "log-binned", "synthetic cpu_model",
                       "cpuset 0x2 = PU 1", "none-x1-L1024-full-gaussian"):
            if needle not in html or needle not in md:
                fail("report lacks %r" % needle)
        for ext in ('src="http', "href=\"http", "<link", "<img"):
            if ext in html:
                fail("report.html is not self-contained (%s)" % ext)
        # the incomplete case is not in the cases table
        table = md.split("## Cases")[1].split("### Incomplete")[0]
        if "yarn-x8" in table:
            fail("incomplete case listed in the cases table")
        print("ok   good file: report.md, report.html, %d SVGs" % len(svgs))

    # --- gnuplot missing: Markdown still written, error names gnuplot -------------------
    out = os.path.join(work, "out-nognuplot")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PATH=os.path.join(work, "no-such-bin"))
    argv0 = shutil.which(cmd[0]) or cmd[0]
    rc, so, se = run([os.path.abspath(argv0)] + cmd[1:], good, out, env=env)
    if rc == 0 or "gnuplot" not in so + se or rc < 0:
        fail("no gnuplot: rc %d, output %r" % (rc, (so + se)[-500:]))
    elif not os.path.exists(os.path.join(out, "report.md")):
        fail("no gnuplot: report.md not written")
    else:
        print("ok   no gnuplot: rc %d: %s" % (rc, (so + se).strip().splitlines()[-1]))

    # --- bad files ------------------------------------------------------------------------
    expect_error(cmd, work, "missing", os.path.join(work, "does-not-exist.h5"),
                 ["No such file"])
    empty = os.path.join(work, "empty.h5")
    open(empty, "wb").close()
    expect_error(cmd, work, "empty", empty, ["empty"])
    text = os.path.join(work, "text.h5")
    with open(text, "w") as f:
        f.write("this is not HDF5\n" * 100)
    expect_error(cmd, work, "text", text, ["not an HDF5 file"])
    foreign = os.path.join(work, "foreign.h5")
    with h5py.File(foreign, "w") as f:
        f["data"] = np.arange(10)
        f.attrs["title"] = "someone else's file"
    expect_error(cmd, work, "foreign", foreign,
                 ["not a ropebench results file (no format attribute)"])
    other = os.path.join(work, "other-format.h5")
    with h5py.File(other, "w") as f:
        f.attrs["format"] = np.bytes_(b"netcdf")
        f.attrs["format_version"] = np.int64(1)
    expect_error(cmd, work, "other-format", other, ['format is "netcdf"'])
    v2 = os.path.join(work, "version2.h5")
    with h5py.File(v2, "w") as f:
        f.attrs["format"] = np.bytes_(b"ropebench")
        f.attrs["format_version"] = np.int64(2)
    expect_error(cmd, work, "version2", v2, ["format_version 2"])
    data = open(good, "rb").read()
    for frac in (0.01, 0.3, 0.6, 0.95):
        cut = max(1, int(len(data) * frac))
        p = os.path.join(work, "truncated-%d.h5" % int(frac * 100))
        with open(p, "wb") as f:
            f.write(data[:cut])
        expect_error(cmd, work, "truncated-%d%%" % int(frac * 100), p, [])
    p = os.path.join(work, "truncated-100bytes.h5")
    with open(p, "wb") as f:
        f.write(data[:100])
    expect_error(cmd, work, "truncated-100bytes", p, [])
    # Overwritten bytes (metadata or data): any outcome but a crash or a stack dump.
    rng = np.random.default_rng(7)
    for t in range(8):
        d = bytearray(data)
        off = int(rng.integers(0, len(d) - 256))
        d[off:off + 256] = rng.integers(0, 256, 256, dtype=np.uint8).tobytes()
        p = os.path.join(work, "damaged-%d.h5" % t)
        with open(p, "wb") as f:
            f.write(d)
        rc, so, se = run(cmd, p, os.path.join(work, "out-damaged"))
        if rc < 0 or rc >= 128 or any(b in so + se for b in ("HDF5-DIAG", "Sanitizer",
                                                             "runtime error")):
            fail("damaged file (bytes %d..%d overwritten): status %d: %s" % (
                off, off + 256, rc, (so + se)[-1500:]))
    print("ok   damaged files: no crash")
    p = os.path.join(work, "truncated-1byte.h5")
    with open(p, "wb") as f:
        f.write(data[:-1])
    expect_error(cmd, work, "truncated-1byte", p, [])

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
