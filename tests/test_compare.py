#!/usr/bin/python3
"""test_compare.py — `ropebench report A.h5 B.h5 -o DIR` (rb_report_compare) against
numbers computed here from the two files: a synthetic file A (make_synthetic.py) and a
copy B with one case's compute times halved (its GFLOP/s ×A must read 2.000), one
case's entropies scaled by 1 + 1e-3 (the largest |Δ entropy| is that of the means), one
case removed (listed as missing in B), another configuration key, a /bench row twice
as slow, a probe breakdown class 1.5 times as slow, one removed and one of NaN bounds added, B's
bench rows in reverse order (the breakdown table recomputed here from both files, in
Markdown and HTML), and a probe case on 4 ranks instead of 2 with 0.6 of A's time (the scaling
model T = a + b/N through both points, its efficiency and prediction at 16 ranks). Then the refusals: a second file that is not a results file (one line naming
it, exit 2, no compare.md), 9 files (more than the 8 compared at once).

Error metric: the table cells as printed (%.2f, %.3f, %.3g, %.9g) against the value
computed here, to the printed precision.

usage: test_compare.py WORKDIR ROPEBENCH
"""
import hashlib
import html as html_mod
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

from rbtest import cut_rows

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def table(md, heading):
    """The first Markdown table after `heading`: header cells, then rows of cells."""
    if heading not in md:
        return None, []
    lines = md.split(heading, 1)[1].splitlines()
    rows = [l for l in lines if l.startswith("|")]
    start = next((i for i, l in enumerate(lines) if l.startswith("|")), None)
    if start is None:
        return None, []
    block = []
    for l in lines[start:]:
        if not l.startswith("|"):
            break
        block.append([c.strip() for c in l.strip().strip("|").split("|")])
    del rows
    return block[0], block[2:]


def gflops(c):
    return c.attrs["flops"] / c["timing/compute_s"][()].max() / 1e9


def pct_of_peak(f, c):
    """The comparison's % column: full cases % of the run's FMA peak, probe cases their
    K/V GB/s (K and V read once) as % of its triad."""
    slow = float(c["timing/compute_s"][()].max())
    a = c.attrs

    def peak(name):  # the case's own, else /provenance's sum for the same rank and
        if name in a:  # thread counts (the run that measured them)
            return float(a[name])
        p = f["provenance"].get(name)
        ranks = c["timing/compute_s"].shape[0]
        th, tf = a.get("threads"), f.attrs.get("threads_per_rank")
        same = p is not None and p.shape[0] == ranks and \
            (th is None or tf is None or int(th) == int(tf))
        return float(np.sum(p[()])) if same else np.nan
    if text_attr(a["mode"]) == "probe":
        nbytes = float(a["heads"]) * float(a["seq_len"]) * float(a["head_dim"]) * 8.0
        return 100.0 * nbytes / slow / 1e9 / peak("triad_gbps")
    return 100.0 * gflops(c) / peak("peak_fma_gflops")


def text_attr(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def mean_entropy(c):
    e = c["rows/entropy"][()]
    return float(np.mean(e[np.isfinite(e)]))


def num(x, fmt):
    """A number as rp_fmt_num prints it (NaN: n/a)."""
    return "n/a" if np.isnan(x) else format(x, fmt)


def breakdown(f):
    """{(bench row key, rows_min, rows_max): (% of time, ns/pair)} of f's probe
    breakdown: entries naming a probe row of /bench only, the first of a class."""
    g = f["bench"]
    nrows = len(g["bench"])
    pb = {k: g["probe_breakdown"][k][()] for k in g["probe_breakdown"]}
    ok = [i for i, r in enumerate(pb["row"]) if 0 <= r < nrows and
          g["bench"][int(r)] == b"probe"]
    total = {}  # a row's block time: every entry of it, shown or not
    for i in ok:
        total[pb["row"][i]] = total.get(pb["row"][i], 0.0) + pb["s"][i]
    out = {}
    for i in ok:
        if np.isnan(pb["rows_min"][i]) or np.isnan(pb["rows_max"][i]):
            continue
        r = int(pb["row"][i])
        key = "%s %s probe d=%d L=%d threads=%d positions=%d" % (
            g["kernel"][r].decode(), g["dtype"][r].decode(), g["head_dim"][r],
            g["seq_len"][r], g["threads"][r], g.attrs.get("probe_positions", 128))
        cls = (key, int(pb["rows_min"][i]), int(pb["rows_max"][i]))
        if cls in out:
            continue
        t, pairs = pb["s"][i], pb["pairs"][i]
        out[cls] = (100 * t / total[r] if total[r] > 0 and t >= 0 else np.nan,
                    1e9 * t / pairs if pairs > 0 and t >= 0 else np.nan, r)
    return out


def check_breakdown_cmp(md, html, fa, fb):
    """The compare's probe breakdown table: a row for each class both files have, in
    A's order of row and class, cells computed here from each file; and the same table
    in the HTML."""
    head, rows = table(md, "## Probe breakdown of the bench rows in every file")
    ba, bb = breakdown(fa), breakdown(fb)
    want = []
    for cls in sorted(ba, key=lambda c: (ba[c][2], c[1], c[2])):  # A's row, class
        if cls not in bb:
            continue
        (pa, na, _), (pb_, nb, _) = ba[cls], bb[cls]
        rng = f"{cls[1]}+" if cls[2] < 0 else f"{cls[1]}-{cls[2]}"
        want.append([f"{cls[0]}, {rng}", num(pa, ".1f"), num(na, ".2f"), num(pb_, ".1f"),
                     num(nb, ".2f"), num(nb / na if na > 0 else np.nan, ".3f")])
    if head != ["probe row, rows per block", "A % of time", "A ns/pair", "B % of time",
                "B ns/pair", "B ns/pair / A's"]:
        fail(f"probe breakdown: header {head}")
    if rows != want or len(want) < 2:
        fail(f"probe breakdown: rows {rows}, want {want}")
    slow = [r for r in rows if r[0].endswith(", 8-15")]
    if not slow or slow[0][-1] != "1.500":
        fail(f"probe breakdown: the 8-15 class made 1.5 times as slow in B reads {slow}")
    if any(r[0].endswith("2048+") for r in rows):
        fail("probe breakdown: a class B lacks has a row")
    sec = html.split("Probe breakdown of the bench rows in every file", 1)[-1]
    sec = sec.split("</table>", 1)[0]
    cells = [html_mod.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", sec)]
    if cells != [c for r in want for c in r]:
        fail(f"probe breakdown in compare.html: cells {cells[:12]}, want {want}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    work, exe = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    a, b = os.path.join(work, "a.h5"), os.path.join(work, "b.h5")
    subprocess.run([sys.executable, os.path.join(HERE, "make_synthetic.py"), a], check=True,
                   stdout=subprocess.DEVNULL)
    # a list written with blanks after its commas is the same value (as --resume has
    # it); a long list that differs only at its end is a difference
    long_a = ",".join(["1.5"] * 300)
    long_b = long_a[:-3] + "2.5"
    with h5py.File(a, "a") as f:
        f.attrs["config_text"] = np.bytes_(
            "[model]\nhead_dim = 16\n[scaling]\nmethods = none,pi\nshort_factor = "
            + long_a + "\n")
    shutil.copyfile(a, b)
    fast, shifted, gone, scaled = ("pi-x4-L64-full-gaussian", "none-x1-L64-full-gaussian",
                                   "none-x1-L1024-full-gaussian", "pi-x4-L128-probe-needle")
    with h5py.File(b, "a") as f:
        f.attrs["config_text"] = np.bytes_(
            "[model]\nhead_dim = 32\n[scaling]\nmethods = none, pi\nshort_factor = "
            + long_b + "\n[study]\nheads = 2\n")
        f.attrs["kernel"] = np.bytes_("avx512")
        t = f["cases"][fast]["timing/compute_s"]
        t[...] = t[()] / 2
        # B's case with 3 NaN entropies and 2 infinite lse: left out of its means, and
        # the comparison says so (it showed only a difference of the finite means)
        e = f["cases"][fast]["rows/entropy"]
        v = e[()]
        v.flat[:3] = np.nan
        e[...] = v
        e = f["cases"][fast]["rows/lse"]
        v = e[()]
        v.flat[-2:] = np.inf
        e[...] = v
        e = f["cases"][shifted]["rows/entropy"]
        e[...] = e[()] * (1 + 1e-3)
        # B's run measured a low FMA peak: its case reads above 100 % of it (noted)
        f["cases"][shifted].attrs["peak_fma_gflops"] = np.float64(20.0)
        # B's probe case with its run's triad: its % column is of that triad
        f["cases"][scaled].attrs["triad_gbps"] = np.float64(5.0)
        del f["cases"][gone]
        m = f["bench/median_s"]
        m[0] = m[0] * 2
        # B timed row 0 in batches of 2,500 calls and the rest call by call, A (a file
        # from before calls_per_rep) every row call by call: row 0 is named as timed
        # differently, the others are not
        f["bench/calls_per_rep"] = np.array([2500] + [1] * (len(m) - 1), np.int64)
        # B's probe breakdown: the 8-15 class 1.5 times as slow, the 2048+ class gone
        # (A's row for it must not appear), the entries reordered (matched by row and
        # class, not by place)
        pb = f["bench/probe_breakdown"]
        ent = {k: pb[k][()] for k in pb}
        slow = (ent["row"] == 2) & (ent["rows_min"] == 8)
        ent["s"] = np.where(slow, ent["s"] * 1.5, ent["s"])
        keep = np.flatnonzero(~((ent["row"] == 2) & (ent["rows_min"] == 2048)))[::-1]
        ent = {k: v[keep] for k, v in ent.items()}
        # B's bench rows in reverse order (entries follow their row: matched by the row's
        # key, not its index), and one more entry of the probe row whose class bounds
        # are NaN (left out; the others still matched)
        g = f["bench"]
        nrows = len(g["bench"])
        for k in [k for k in g if isinstance(g[k], h5py.Dataset)]:
            v = g[k][()]
            del g[k]
            g[k] = v[::-1]
        ent["row"] = np.where((ent["row"] >= 0) & (ent["row"] < nrows),
                              nrows - 1 - ent["row"], ent["row"])
        for k in ent:
            extra = {"row": nrows - 1 - 2, "rows_min": np.nan, "rows_max": np.nan}
            ent[k] = np.append(ent[k].astype(np.float64) if k in extra else ent[k],
                               extra.get(k, 1))
        for k, v in ent.items():
            del pb[k]
            pb[k] = v
        # the probe case on 4 ranks in B, its total time 0.6 of A's: the scaling model
        g = f["cases"][scaled]["timing"]
        t_a = g["total_s"][()].max()
        for name in list(g):
            del g[name]
            g[name] = np.full(4, 0.6 * t_a if name == "total_s" else 0.01)
    out = os.path.join(work, "out")
    p = subprocess.run([exe, "report", a, b, "-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"report A B: exit {p.returncode}: {p.stderr}")
        return 1
    md = open(os.path.join(out, "compare.md")).read()
    html = open(os.path.join(out, "compare.html")).read()
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        # runs: each file's kernel and path
        head, rows = table(md, "## Files and runs")
        sha = [r for r in rows if r[0] == "SHA-256"]
        want_sha = [hashlib.sha256(open(x, "rb").read()).hexdigest() for x in (a, b)]
        if not sha or sha[0][1:] != want_sha:
            fail(f"runs table: SHA-256 row {sha}, want {want_sha}")
        kern = [r for r in rows if r[0] == "kernel"]
        if head != ["", "A", "B"] or not kern or kern[0][1:] != ["ref", "avx512"]:
            fail(f"runs table: head {head}, kernel row {kern}")
        # study: the keys that differ, with both values
        head, rows = table(md, "## Study")
        got = {r[0]: [html_mod.unescape(x) for x in r[1:]] for r in rows}
        if got.get("model.head_dim") != ["16", "32"] or \
                got.get("study.heads") != ["(absent)", "2"] or "scaling.methods" in got or \
                got.get("scaling.short_factor") != [long_a, long_b]:
            fail(f"study table: {[r[:1] + [x[:40] for x in r[1:]] for r in rows]}")
        # throughput: GFLOP/s of both files and B's ratio to A, for every common case
        head, rows = table(md, "## Throughput of the cases in every file")
        common = [n for n in fa["cases"] if n in fb["cases"]
                  and fa["cases"][n].attrs.get("complete") == 1
                  and "flops" in fa["cases"][n].attrs]
        seen = {r[0]: r for r in rows}
        for n in common:
            r = seen.get(n)
            ga, gb = gflops(fa["cases"][n]), gflops(fb["cases"][n])
            if r is None:
                fail(f"throughput: no row for {n}")
                continue
            want = [f"{ga:.2f}", f"{gb:.2f}", f"{gb / ga:.3f}",
                    num(pct_of_peak(fa, fa['cases'][n]), ".1f"),
                    num(pct_of_peak(fb, fb['cases'][n]), ".1f")]
            have = [r[head.index("A GFLOP/s")], r[head.index("B GFLOP/s")],
                    r[head.index("B ×A")], r[head.index("A % of peak (probe: of triad)")],
                    r[head.index("B % of peak (probe: of triad)")]]
            if have != want:
                fail(f"throughput {n}: {have}, want {want}")
            if n == scaled and have[4] == "n/a":
                fail(f"throughput {n}: B's probe case shows no % of its triad")
        # the note under the table: B's one case above 100 % of its run's FMA peak, with
        # the % recomputed here; none for A, whose cases stay below
        c = fb["cases"][shifted]
        pct = 100.0 * gflops(c) / float(c.attrs["peak_fma_gflops"])
        want = (f"**Note:** in B, 1 case(s) read above 100 % of the FMA peak that their run "
                f"measured (up to {pct:.1f} %)")
        if want not in md or "**Note:** in A," in md or \
                want.replace("**Note:**", "<strong>Note:</strong>") not in html:
            fail(f"throughput: expected only the note {want!r}")
        if seen.get(fast, [None] * 9)[head.index("B ×A")] != "2.000":
            fail(f"throughput: {fast} (compute halved in B) is not 2.000 times A")
        if gone in seen:
            fail(f"throughput: {gone} is missing in B but has a row")
        # results: means per file and the largest difference from A
        want = ("**Note:** left out of the means as not finite (NaN or ±inf), entropy and "
                f"lse values together: in B, {fast} 5.")
        if want not in md or want.replace("**Note:**", "<strong>Note:</strong>") not in html:
            fail(f"results: expected the note {want!r}")
        head, rows = table(md, "## Results of the cases in every file")
        seen = {r[0]: r for r in rows}
        ea, eb = mean_entropy(fa["cases"][shifted]), mean_entropy(fb["cases"][shifted])
        r = seen.get(shifted)
        col = head.index("mean entropy: largest difference from A (absolute)")
        if r is None or r[col] != f"{abs(eb - ea):.3g}" \
                or r[head.index("A mean entropy, nats")] != f"{ea:.9g}":
            fail(f"results {shifted}: {r}, want A {ea:.9g}, |Δ| {abs(eb - ea):.3g}")
        # scaling: only the case whose rank counts differ, T = a + b/N through both
        head, rows = table(md, "## Scaling across rank counts (a model)")
        ta = fa["cases"][scaled]["timing/total_s"][()].max()
        tb = fb["cases"][scaled]["timing/total_s"][()].max()
        b_, a_ = np.polyfit([1 / 2, 1 / 4], [ta, tb], 1)
        want = [scaled, f"2: {ta:.4g}, 4: {tb:.4g}", f"{ta * 2 / (tb * 4):.3f}",
                f"{a_:.4g}", f"{b_:.4g}", "2 rank counts", f"{a_ + b_ / 16:.4g}"]
        if rows != [want]:
            fail(f"scaling: {rows}, want [{want}]")
        # the case B lacks
        head, rows = table(md, "## Cases not in every file")
        if [gone, "B"] not in rows:
            fail(f"missing cases: {rows}, want [{gone}, B]")
        # bench: row 0 twice as slow in B
        head, rows = table(md, "## Benchmark rows in every file")
        if not rows or rows[0][head.index("B time / A's")] != "2.000":
            fail(f"bench rows: {rows[:2]}")
        g = fa["bench"]
        keys = [f"{g['kernel'][i].decode()} {g['dtype'][i].decode()} {g['bench'][i].decode()} "
                f"d={g['head_dim'][i]} L={g['seq_len'][i]} threads={g['threads'][i]}"
                + (f" positions={g.attrs.get('probe_positions', 128)}"
                   if g["bench"][i] == b"probe" else "")
                for i in range(len(g["kernel"]))]
        want = ("Timed differently (one file timed these rows call by call, another in "
                "batches of calls, docs/bench.md: part of their time ratio is the method, "
                f"not the machine): {keys[0]} (calls per repetition: A n/a B 2500).")
        if want not in md or want not in html or any(k + " (calls" in md for k in keys[1:]):
            fail(f"bench rows timed differently: expected exactly the note {want!r}")
        check_breakdown_cmp(md, html, fa, fb)
    if "<script>" in html or "<table>" not in html or "ropebench comparison" not in html:
        fail("compare.html: not escaped or not the tables")
    # refusals: a second file that is not a results file; too many files
    bad = os.path.join(work, "bad.h5")
    with open(bad, "w") as f:
        f.write("not HDF5\n")
    out2 = os.path.join(work, "out-bad")
    p = subprocess.run([exe, "report", a, bad, "-o", out2], capture_output=True, text=True)
    lines = [l for l in p.stderr.splitlines() if l.startswith("ropebench:")]
    if p.returncode != 2 or len(lines) != 1 or bad not in lines[0] or \
            os.path.exists(os.path.join(out2, "compare.md")):
        fail(f"a foreign second file: exit {p.returncode}, {p.stderr!r}")
    p = subprocess.run([exe, "report"] + [a] * 9 + ["-o", out2], capture_output=True,
                       text=True)
    if p.returncode != 2 or "2 to 8" not in p.stderr:
        fail(f"9 files: exit {p.returncode}, {p.stderr!r}")
    # the scaled case with another thread count per rank in B: no fit across it (the
    # runs differ in more than the rank count), said in one sentence that names it
    d = os.path.join(work, "d.h5")
    shutil.copyfile(b, d)
    with h5py.File(d, "a") as f:
        f["cases"][scaled].attrs["threads"] = np.int64(7)
    out5 = os.path.join(work, "out-threads")
    p = subprocess.run([exe, "report", a, d, "-o", out5], capture_output=True, text=True)
    md5 = open(os.path.join(out5, "compare.md")).read() if p.returncode == 0 else ""
    sec = md5.split("## Scaling across rank counts (a model)", 1)[-1].split("\n## ", 1)[0] \
        if "## Scaling across" in md5 else ""
    if "|" in sec or f"Not fitted: 1 case(s)" not in sec or \
            f"{scaled} (threads per rank differs between A and B)" not in sec:
        fail(f"scaling across thread counts: exit {p.returncode}, section {sec[:400]!r}")
    # the scaling model on three files of the scaled case: its rms residual (% of the
    # mean time), the held marker only past rounding, the CPU compared among the files
    # that record it, a total time of 0 named, and cases of another shape marked in the
    # throughput and results tables
    def variant(path, src, nranks, total, edit=None):
        shutil.copyfile(src, path)
        with h5py.File(path, "a") as f:
            g = f["cases"][scaled]["timing"]
            for name in list(g):
                del g[name]
                g[name] = np.full(nranks, total if name == "total_s" else 0.01)
            if edit:
                edit(f)
        return path

    def scaling_section(files, tag):
        out = os.path.join(work, "out-" + tag)
        p = subprocess.run([exe, "report"] + files + ["-o", out], capture_output=True,
                           text=True)
        text = open(os.path.join(out, "compare.md")).read() if p.returncode == 0 else ""
        if p.returncode != 0:
            fail(f"{tag}: exit {p.returncode}: {p.stderr}")
        sec = text.split("## Scaling across rank counts (a model)", 1)[-1].split("\n## ", 1)[0] \
            if "## Scaling across" in text else ""
        return text, sec

    def fit(ns, ts):
        x, y = 1 / np.asarray(ns, float), np.asarray(ts, float)
        b_, a_ = np.polyfit(x, y, 1)
        if a_ < 0:
            a_, b_ = 0.0, float(x @ y / (x @ x))
        if b_ < 0:
            a_, b_ = float(y.mean()), 0.0
        r = np.sqrt(np.mean((y - a_ - b_ * x) ** 2)) / y.mean()
        return a_, b_, r

    # noisy: 0.7, 0.1, 0.6 s at 1, 2, 4 ranks fits poorly, and the table says how poorly
    n1 = variant(os.path.join(work, "n1.h5"), a, 1, 0.7)
    n2 = variant(os.path.join(work, "n2.h5"), a, 2, 0.1)
    n4 = variant(os.path.join(work, "n4.h5"), a, 4, 0.6)
    _, sec = scaling_section([n1, n2, n4], "noisy")
    a_, b_, r_ = fit([1, 2, 4], [0.7, 0.1, 0.6])
    _, rows = table("## T\n" + sec, "## T")
    want = [scaled, "1: 0.7, 2: 0.1, 4: 0.6", f"{0.7 * 1 / (0.6 * 4):.3f}", f"{a_:.4g}",
            f"{b_:.4g}", f"{100 * r_:.3g}", f"{a_ + b_ / 16:.4g}"]
    if want not in rows or "rms residual" not in sec:
        fail(f"noisy scaling fit: rows {rows}, want {want}")
    # exact a = 0 (0.6, 0.8 at 2 ranks, 0.35 at 4): a free fit of -7e-16 is rounding,
    # not held
    e2a = variant(os.path.join(work, "e2a.h5"), a, 2, 0.6)
    e2b = variant(os.path.join(work, "e2b.h5"), a, 2, 0.8)
    e4 = variant(os.path.join(work, "e4.h5"), a, 4, 0.35)
    _, sec = scaling_section([e2a, e2b, e4], "exact-a0")
    a_, b_, r_ = fit([2, 2, 4], [0.6, 0.8, 0.35])
    if "fit held" in sec or f"| {scaled} |" not in sec:
        fail(f"exact a = 0: marked as held or missing: {sec[:600]!r}")
    # three files on two rank counts: the residual is shown, not "2 rank counts"
    if f"| {100 * r_:.3g} |" not in sec or "| 2 rank counts |" in sec:
        fail(f"3 files on 2 rank counts: residual {100 * r_:.3g} % not shown: {sec[-400:]!r}")
    # A records no CPU, B and C different ones: not fitted, B and C named
    def cpu(name):
        return lambda f: f["provenance"].attrs.__setitem__("cpu_model", np.bytes_(name))

    def nocpu(f):
        del f["provenance"].attrs["cpu_model"]
    c1 = variant(os.path.join(work, "c1.h5"), a, 1, 1.1, nocpu)
    c2 = variant(os.path.join(work, "c2.h5"), a, 2, 0.6, cpu("Other CPU"))
    c4 = variant(os.path.join(work, "c4.h5"), a, 4, 0.35, cpu("Third CPU"))
    _, sec = scaling_section([c1, c2, c4], "cpu")
    if f"| {scaled} |" in sec or f"{scaled} (CPU differs between B and C)" not in sec:
        fail(f"CPUs of B and C differ, A has none: {sec[:600]!r}")
    # another build or run-time switch in C: not fitted, named (a fit across them
    # measured those, not the rank count)
    def env(v):
        return lambda f: f["provenance"].attrs.__setitem__("environment", np.bytes_(v))

    def build(f):
        f.attrs["git_describe"] = np.bytes_("v0-other-build")
    e1 = variant(os.path.join(work, "e1.h5"), a, 1, 0.7, env(""))
    e2 = variant(os.path.join(work, "e2.h5"), a, 2, 0.1, env(""))
    for tag, edit, what, ab in (
            ("env", env("ROPEBENCH_HUGEPAGES=0"), "the recorded environment", [e1, e2]),
            ("build", build, "the build (git_describe)", [n1, n2])):
        s4 = variant(os.path.join(work, f"s4-{tag}.h5"), a, 4, 0.35, edit)
        _, sec = scaling_section(ab + [s4], tag)
        if f"| {scaled} |" in sec or f"{scaled} ({what} differs between A and C)" not in sec:
            fail(f"{what} differs in C: fitted or not named: {sec[:600]!r}")
    # a total time of 0 in B: named among the cases not fitted
    z2 = variant(os.path.join(work, "z2.h5"), a, 2, 0.0)
    _, sec = scaling_section([n1, z2, n4], "zero")
    if f"{scaled} (no total time above 0 in B)" not in sec:
        fail(f"a total time of 0: not named: {sec[:600]!r}")
    # another number of probe rows in B: the throughput and results rows say so
    def fewer_rows(f):
        cut_rows(f["cases"][shifted], 3)
    r2 = variant(os.path.join(work, "r2.h5"), a, 2, 0.6, fewer_rows)
    text, _ = scaling_section([a, r2], "rows")
    mark = f"{shifted} (not comparable: n_rows differs between A and B)"
    for h in ("## Throughput of the cases in every file", "## Results of the cases in every file"):
        _, rows = table(text, h)
        if not any(r and r[0] == mark for r in rows):
            fail(f"{h}: no row {mark!r}: {[r[0] for r in rows]}")
    # files without a case in common: a sentence under those headings, not an empty
    # table that Markdown would read the sentence into
    c = os.path.join(work, "c.h5")
    shutil.copyfile(b, c)
    with h5py.File(c, "a") as f:
        for name in list(f["cases"]):
            f["cases"].move(name, "other-" + name)
    out3 = os.path.join(work, "out-disjoint")
    p = subprocess.run([exe, "report", a, c, "-o", out3], capture_output=True, text=True)
    md3 = open(os.path.join(out3, "compare.md")).read() if p.returncode == 0 else ""
    for h in ("## Throughput of the cases in every file", "## Results of the cases in every file"):
        sec = md3.split(h, 1)[-1].split("\n## ", 1)[0] if h in md3 else ""
        if "\nNo case is complete in every file.\n" not in sec or "|" in sec:
            fail(f"disjoint files, {h}: exit {p.returncode}, section {sec[:300]!r}")
    for label, text in (("compare.md", md), ("disjoint compare.md", md3)):
        lines = text.split("\n")
        for i in range(len(lines) - 1):
            if lines[i].startswith("|") and lines[i + 1].strip() and \
                    not lines[i + 1].startswith("|"):
                fail(f"{label}: a table runs into the line after it: {lines[i + 1][:80]!r}")
                break
    # two bench-only files (bench -o alone): the machine from /bench, not n/a, and
    # whether the rows are --quick ones
    bo = [os.path.join(work, f"bench-only-{i}.h5") for i in (1, 2)]
    for i, path in enumerate(bo):
        subprocess.run([sys.executable, os.path.join(HERE, "make_synthetic.py"),
                        "--bench-only", path], check=True, stdout=subprocess.DEVNULL)
        with h5py.File(path, "a") as f:
            f["bench"].attrs["quick"] = np.int64(i)
    out4 = os.path.join(work, "out-bench-only")
    p = subprocess.run([exe, "report"] + bo + ["-o", out4], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"bench-only files: exit {p.returncode}: {p.stderr}")
    else:
        _, rows = table(open(os.path.join(out4, "compare.md")).read(), "## Files and runs")
        got = {r[0]: [html_mod.unescape(x) for x in r[1:]] for r in rows}
        with h5py.File(bo[0], "r") as f:
            cpu = f["bench"].attrs["cpu_model"]
            cpu = cpu.decode() if isinstance(cpu, bytes) else str(cpu)
            fma = float(f["bench"].attrs["peak_gflops_all"])
        if got.get("CPU") != [cpu, cpu] or \
                got.get("bench rows") != ["full", "--quick (fractions mean nothing)"] or \
                not got.get("FMA peak, GFLOP/s (sum over ranks)", [""])[0].startswith(
                    f"{fma:.1f} (bench"):
            fail(f"bench-only files: Files and runs rows {got}")
    # a probe of other positions (`bench --probe-rows 129`) is another shape: its rows are
    # not set beside A's (which lacks the attribute: 128, as files from before it took),
    # while the other rows still are; the same attribute, 128, matches them again
    for pp, want_probe in ((129, False), (128, True)):
        other = os.path.join(work, f"bench-only-positions-{pp}.h5")
        shutil.copyfile(bo[0], other)
        with h5py.File(other, "a") as f:
            f["bench"].attrs["probe_positions"] = np.int64(pp)
        out5 = os.path.join(work, f"out-bench-positions-{pp}")
        p = subprocess.run([exe, "report", bo[0], other, "-o", out5], capture_output=True,
                           text=True)
        if p.returncode != 0:
            fail(f"bench files of probe_positions 128 and {pp}: exit {p.returncode}: "
                 f"{p.stderr}")
            continue
        _, rows = table(open(os.path.join(out5, "compare.md")).read(),
                        "## Benchmark rows in every file")
        keys = [html_mod.unescape(r[0]) for r in rows]
        probe = [k for k in keys if " probe " in k]
        if bool(probe) != want_probe or not any(" causal " in k for k in keys) or \
                (want_probe and not all(k.endswith(" positions=128") for k in probe)):
            fail(f"bench files of probe_positions 128 and {pp}: shared rows {keys}")
    # compare_results.py's usage errors: exit 2 and one line, never a silent default or a
    # traceback (an unknown --rtl compared at 1e-6 and exited 0)
    cr = os.path.join(HERE, "compare_results.py")
    for args in ([a, a, "--rtl", "0"], ["--rtol", "0", a], [a, a, "--rtol"],
                 [a, a, "--rtol", "x"], [a, a, "--otol", "-1"], [a]):
        p = subprocess.run([sys.executable, cr] + args, capture_output=True, text=True)
        if p.returncode != 2 or not p.stderr.startswith("compare_results.py: ") or \
                "Traceback" in p.stderr:
            fail(f"compare_results.py {' '.join(args[-2:])}: exit {p.returncode}, "
                 f"{p.stderr[:200]!r}")
    p = subprocess.run([sys.executable, cr, "--rtol", "0", a, a], capture_output=True,
                       text=True)
    if p.returncode == 2 or "lse 0, entropy 0," not in p.stdout:  # (A's unfinished
        # cases fail; what matters is that the options were read)
        fail(f"compare_results.py --rtol 0 A A (options first): exit {p.returncode}, "
             f"{p.stdout[-200:]!r}")
    # a target that cannot be replaced (compare.md a directory): refused before anything
    # is written, so the earlier compare.html stays (the new one was renamed in beside
    # the old compare.md, a mixed pair)
    dd = os.path.join(work, "out-target-dir")
    shutil.rmtree(dd, ignore_errors=True)
    os.makedirs(os.path.join(dd, "compare.md"))
    with open(os.path.join(dd, "compare.html"), "w") as fh:
        fh.write("old comparison\n")
    p = subprocess.run([exe, "report", a, b, "-o", dd], capture_output=True, text=True)
    left = sorted(os.listdir(dd))
    if p.returncode == 0 or "compare.md: not a regular file" not in p.stderr or \
            open(os.path.join(dd, "compare.html")).read() != "old comparison\n" or \
            left != ["compare.html", "compare.md"]:
        fail(f"compare into a directory named compare.md: exit {p.returncode}, "
             f"{p.stderr.strip()!r}, left {left}")
    print(f"{'FAIL' if failures else 'ok  '} compare: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
