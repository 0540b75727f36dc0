#!/usr/bin/env python3
"""test_report.py — runs a report command on good and bad results files: a report with escaped strings, every metric table (numbers equal to the file's), the throughput tables and SVG plots from a synthetic file; one clear line and a non-zero exit (never a crash) for missing, empty, truncated, foreign HDF5 files.

usage: test_report.py [--file RESULTS] [--bench [LAUNCHER...] EXE --] WORKDIR CMD...
       CMD contains {in} and {out}, e.g. ropebench report {in} -o {out}.
       --file RESULTS: only check the report of that file (e.g. a real run's) against
                       the file's own values.
       --bench [LAUNCHER...] EXE --: also write a new file with `EXE bench --quick ...
                       -o` (e.g. under mpiexec -n 1: Open MPI's singleton mode crashes
                       LeakSanitizer) and check that its report shows the throughput table.
"""
import hashlib
import math
import os
import re
import resource
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


# ---- report content against the file ----------------------------------------------------

ROWS_SHOWN = 12  # RP_TABLE_ROWS in reports/report_tables.c

# (heading prefix, group, stored columns or derived names, report column headers)
TABLES = [
    ("Metric 1:", "phase/pairs",
     ["=j", "inv_freq_base", "inv_freq", "wavelength", "trained_span", "max_phase", "turns",
      "ood"],
     ["j", "inv_freq_base", "inv_freq", "wavelength", "trained_span", "max_phase", "turns",
      "ood"]),
    ("Metric 2:", "phase/by_distance",
     ["distance", "D", "D_high", "D_mid", "D_low", "ood_frac_count", "ood_frac_energy"], None),
    ("Metric 3:", "entropy/by_position",
     ["position", "count", "mean", "min", "max", "std", "mean_normalized"], None),
    ("Metric 4:", "decay/by_distance",
     ["distance", "count", "mean_score", "std_score", "roformer_bound", "B"], None),
    ("Metric 5:", "pair_share",
     ["distance", "weight_sum", "=top_pair", "=top_share", "=high", "=mid", "=low"],
     ["distance", "weight_sum", "top pair", "top share", "share high", "share mid",
      "share low"]),
    ("Metric 6:", "needles",
     ["head", "query_pos", "needle_pos", "distance", "score", "mass", "rank", "hit",
      "=rank_haystack", "=hit_haystack"],
     ["head", "query_pos", "needle_pos", "distance", "score", "mass", "rank", "hit",
      "rank_haystack", "hit_haystack"]),
    ("Metric 7:", "precision",
     ["position", "phase_err_max", "phase_err_mean", "score_err_max", "entropy_err",
      "bound_ratio_max"], None),
    ("Metric 8:", "softmax_floor", ["position", "min_weight_times_n", "floor", "ratio"], None),
    ("Metric 8, by position bin", "softmax_floor_by_position",
     ["position", "bin_start", "bin_end", "count", "min_ratio", "min_weight_times_n"], None),
]


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def md_table(md, heading):
    """Header and rows (lists of cells) of the first table after a line starting with
    heading; None if there is no such heading."""
    lines = md.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(heading):
            break
    else:
        return None
    rows = []
    for l in lines[i + 1:]:
        if l.startswith("#"):
            break
        if l.startswith("|"):
            rows.append([c.strip() for c in l.strip().strip("|").split(" | ")])
        elif rows:
            break
    if len(rows) < 2:
        return rows[0] if rows else [], []
    return rows[0], rows[2:]


def close(cell, want, rel=6e-3, absol=1e-12):
    if cell == "n/a":
        return want is None or (isinstance(want, float) and math.isnan(want))
    try:
        got = float(cell)
    except ValueError:
        return False
    return want is not None and not math.isnan(want) and math.isclose(got, want, rel_tol=rel,
                                                                       abs_tol=absol)


def file_table(c, group, cols):
    """The table the report should show for case group c, or None if it has none."""
    stored = [k for k in cols if not k.startswith("=")]
    if group not in c or stored[0] not in c[group]:
        return None
    g = c[group]
    n = len(g[stored[0]])
    if group == "pair_share" and "share" not in g:
        return None
    out = {}
    for k in cols:
        if k == "=j":
            out[k] = np.arange(n, dtype=float)
        elif not k.startswith("="):
            out[k] = g[k][:].astype(float) if k in g else np.full(n, np.nan)
    if group == "needles":
        out["=rank_haystack"], out["=hit_haystack"] = needle_haystack(g)
    if group == "pair_share":
        sh = g["share"][:]
        band = c["phase/by_distance/band"][:] if "phase/by_distance/band" in c else None
        for k in ("=top_pair", "=top_share", "=high", "=mid", "=low"):
            out[k] = np.full(n, np.nan)
        for b in range(n):
            fin = np.isfinite(sh[b])
            if fin.any():
                j = int(np.argmax(np.where(fin, np.abs(sh[b]), -1)))
                out["=top_pair"][b], out["=top_share"][b] = j, sh[b, j]
            for bi, k in enumerate(("=high", "=mid", "=low")):
                if band is not None:
                    m = fin & (band == bi)
                    if m.any():
                        out[k][b] = sh[b, m].sum()
    return out, n


def needle_haystack(g):
    """rank_haystack and hit_haystack of a needles group: stored, or (files written
    before them) the rank less the needles of the same head and query at another
    position that score higher, each position once."""
    if "rank_haystack" in g:
        return g["rank_haystack"][:].astype(float), g["hit_haystack"][:].astype(float)
    h, q, p = g["head"][:], g["query_pos"][:], g["needle_pos"][:]
    sc, rk = g["score"][:], g["rank"][:].astype(float)
    out = rk.copy()
    for i in range(len(rk)):
        above = {p[j] for j in range(len(rk))
                 if h[j] == h[i] and q[j] == q[i] and p[j] != p[i] and sc[j] > sc[i]}
        out[i] -= len(above)
    return out, (out == 1).astype(float)


def rep_cases(f, group, first_col):
    """Representative case per (method, factor) as the report picks them."""
    reps = {}
    order = []
    for name, c in f["cases"].items():
        if c.attrs.get("complete", 0) != 1 or file_table(c, group, first_col) is None:
            continue
        key = (text(c.attrs["method"]), float(c.attrs["factor"]))
        if key not in reps:
            reps[key] = name
            order.append(key)
            continue
        r = f["cases"][reps[key]]
        L, Lr = int(c.attrs["seq_len"]), int(r.attrs["seq_len"])
        if L > Lr or (L == Lr and text(c.attrs["mode"]) == "probe"
                      and text(r.attrs["mode"]) != "probe"):
            reps[key] = name
    return [reps[k] for k in order]


def check_tables(md, path):
    """Each metric table of the report against the file; returns how many were shown."""
    shown = 0
    with h5py.File(path, "r") as f:
        cases = f["cases"] if "cases" in f else {}
        for heading, group, cols, heads in TABLES:
            heads = heads or cols
            names = rep_cases(f, group, cols) if cases else []
            tab = md_table(md, "### " + heading)
            if not names:
                if tab is not None:
                    fail("%s: table shown but no case has %s" % (heading, group))
                continue
            if tab is None:
                fail("%s: no table for %s (cases %s)" % (heading, group, names))
                continue
            head, rows = tab
            if head != ["case"] + heads:
                fail("%s: header %s, expected %s" % (heading, head, ["case"] + heads))
                continue
            want = []
            for name in names:
                c = f["cases"][name]
                t, n = file_table(c, group, cols)
                step = -(-n // ROWS_SHOWN)
                crit = int(c["phase/pairs"].attrs.get("critical_pair", -1)) \
                    if group == "phase/pairs" else -1
                for i in range(n):
                    if i % step == 0 or i == n - 1 or i == crit:
                        want.append((name, [float(t[k][i]) for k in cols]))
            if len(rows) != len(want):
                fail("%s: %d rows, expected %d" % (heading, len(rows), len(want)))
                continue
            bad = 0
            for r, (name, vals) in zip(rows, want):
                if r[0] != name or any(not close(cell, v) for cell, v in zip(r[1:], vals)):
                    bad += 1
                    if bad <= 3:
                        fail("%s: row %s, expected %s %s" % (heading, r, name, vals))
            shown += 1
    return shown


def check_metrics_cost(md, path):
    """The throughput table's metrics on / off column against the file's timings: per
    case, max over ranks of compute_s + metrics_s over max over ranks of compute_s (n/a
    without them, or without metric groups: metrics.enabled = false stores metrics_s =
    0). Returns how many cases had a value."""
    if "\n## Throughput\n" not in md:  # (not "## Throughput: ropebench bench")
        return 0
    tab = md_table("## Throughput\n" + md.split("\n## Throughput\n", 1)[1], "## Throughput")
    if tab is None or not tab[0]:
        return 0
    head, rows = tab
    col = "metrics on / off (× compute)"
    if col not in head:
        fail("throughput table: no %r column: %s" % (col, head))
        return 0
    j = head.index(col)
    n = 0
    with h5py.File(path, "r") as f:
        for r in rows:
            c = f["cases"][r[0]]
            want = None
            if "timing/metrics_s" in c and "timing/compute_s" in c and "phase" in c:
                cs = np.asarray(c["timing/compute_s"], np.float64)
                ms = np.asarray(c["timing/metrics_s"], np.float64)
                if cs.shape == ms.shape and np.max(cs) > 0 and np.all(np.isfinite(ms)):
                    want = float(np.max(cs + ms) / np.max(cs))
                    n += 1
            if not close(r[j], want, rel=6e-3):
                fail("throughput %s: metrics on / off %s, expected %s" % (r[0], r[j], want))
    return n


def check_bench(md, path):
    """The ropebench bench throughput table against /bench (False if the file has none)."""
    with h5py.File(path, "r") as f:
        if "bench" not in f:
            if "## Throughput: ropebench bench" in md:
                fail("bench table shown for a file without /bench")
            return False
        g = f["bench"]
        tab = md_table(md, "## Throughput: ropebench bench")
        if tab is None:
            fail("no ropebench bench throughput section")
            return False
        head, rows = tab
        if "% of peak" not in head:
            fail("bench table header lacks '%% of peak': %s" % head)
            return False
        if len(rows) != len(g["kernel"]):
            fail("bench table: %d rows, /bench has %d" % (len(rows), len(g["kernel"])))
            return False
        for i, r in enumerate(rows):
            gbps = float(g["gbps"][i])
            want_t = [text(g[k][i]) for k in ("kernel", "dtype", "bench")]
            want_n = [float(g[k][i]) for k in ("head_dim", "seq_len", "n_rows", "threads",
                                                "median_s")]
            want_n.append(100.0 * float(g["cv"][i]))  # CV in %
            want_n += [float(g[k][i]) for k in ("gflops", "gbps")]
            want_n.append(100.0 * float(g["fraction_of_peak"][i]))
            ok = r[:3] == want_t and all(close(cell, v, absol=0.06)
                                         for cell, v in zip(r[3:12], want_n))
            ok = ok and r[12] == ("FMA" if math.isnan(gbps) else "triad")
            # the probe overlap's fraction, n/a where the file has none (before 2026-12-02)
            # and on rows that are not probe rows
            oc = float(g["overlap_ceiling"][i]) if "overlap_ceiling" in g else math.nan
            ok = ok and len(r) == 15 and (r[13] == "n/a" if math.isnan(oc)
                                          else close(r[13], 100.0 * oc, absol=0.06))
            # calls timed together per repetition, n/a in files from before the column
            k = int(g["calls_per_rep"][i]) if "calls_per_rep" in g else None
            ok = ok and r[14] == ("n/a" if k is None else str(k))
            if not ok:
                fail("bench row %d: %s, expected %s %s" % (i, r, want_t, want_n))
        check_breakdown_table(md, g)
    return True


def check_breakdown_table(md, g):
    """The report's Probe breakdown table against /bench/probe_breakdown, computed here:
    one line per entry of a probe row, with the row's kernel, dtype and threads, its rows
    per block, blocks and keys, its share of the row's block time, ns per pair for the
    block and its three phases, and K+V GB/s; no table when the file has no breakdown."""
    tab = md_table(md, "### Probe breakdown")
    if "probe_breakdown" not in g:
        if tab is not None:
            fail("a Probe breakdown table from a file without /bench/probe_breakdown")
        return
    if tab is None:
        fail("no Probe breakdown table although the file has /bench/probe_breakdown")
        return
    pb = {k: g["probe_breakdown"][k][()] for k in g["probe_breakdown"]}
    nb = len(g["kernel"])
    # the entries of probe rows of the table (whole, in range); the rest are left out
    keep = [k for k in range(len(pb["row"]))
            if float(pb["row"][k]).is_integer() and 0 <= int(pb["row"][k]) < nb
            and text(g["bench"][int(pb["row"][k])]) == "probe"]
    head, rows = tab
    if len(rows) != len(keep):
        fail("Probe breakdown: %d lines, the file has %d entries of probe rows"
             % (len(rows), len(keep)))
        return
    nan = math.nan
    for k, r in zip(keep, rows):
        i = int(pb["row"][k])
        total = sum(float(pb["s"][j]) for j in keep if int(pb["row"][j]) == i)
        pairs, t = float(pb["pairs"][k]), float(pb["s"][k])
        lo, hi = int(pb["rows_min"][k]), int(pb["rows_max"][k])
        want_t = [text(g["kernel"][i]), text(g["dtype"][i]), str(int(g["threads"][i])),
                  "%d+" % lo if hi < 0 else "%d-%d" % (lo, hi)]
        want_n = [float(pb["blocks"][k]), float(pb["keys"][k]),
                  100.0 * t / total if total > 0 else nan] + \
                 [1e9 * float(pb[c][k]) / pairs if pairs > 0 else nan
                  for c in ("s", "qk_s", "softmax_s", "pv_s")] + \
                 [2.0 * float(pb["keys"][k]) * float(g["head_dim"][i]) * 4 / t * 1e-9
                  if t > 0 else nan]
        if r[:4] != want_t or len(r) != 12 or \
                not all(close(c, v, absol=0.06) for c, v in zip(r[4:], want_n)):
            fail("Probe breakdown line %d: %s, expected %s %s" % (k, r, want_t, want_n))


SVG_PREFIX = [  # (file prefix, group or dataset that makes it)
    ("phase-distance-", "phase/by_distance/D"), ("phase-bands-", "phase/by_distance/D"),
    ("ood-fraction-", "phase/by_distance/ood_frac_count"), ("pair-turns-", "phase/pairs/turns"),
    ("decay-L", "decay/by_distance/mean_score"), ("decay-bounds-", "decay/by_distance/B"),
    ("needle-rank-", "needles/rank"), ("needle-mass-", "needles/mass"),
    ("precision-", "precision/phase_err_max"), ("softmax-floor-", "softmax_floor/ratio"),
    ("share-", "pair_share/share"),
]


def check_metrics_summary(md, path):
    """The Metrics table's D and B columns against the file: D_leaves_zero where the file
    has it (never for -1), else the bin centres around the first D > 1e-9 (a-b, or one
    value when they are consecutive); first_negative_B, none for -1. Returns the rows
    checked."""
    tab = md_table(md, "## Metrics")
    if tab is None:
        return 0
    head, rows = tab
    try:
        jd, jb = head.index("D leaves 0 at distance"), head.index("first Δ with negative B(Δ)")
        jh = head.index("needle hit rate against the haystack")
        ja = head.index("needle hit rate among all keys")
        jc = head.index("critical pair")
    except ValueError:
        fail("Metrics table: header %s" % head)
        return 0
    n = 0
    with h5py.File(path, "r") as f:
        for r in rows:
            c = f["cases"][r[0]]
            pd = c["phase/by_distance"]
            if "D_leaves_zero" in pd.attrs:
                v = int(pd.attrs["D_leaves_zero"])
                want = "never" if v < 0 else str(v)
            else:
                d, D = pd["distance"][()], pd["D"][()]
                nz = np.flatnonzero(D > 1e-9)
                if not nz.size:
                    want = "never"
                elif nz[0] == 0 or d[nz[0]] - d[nz[0] - 1] == 1:
                    want = "%.0f" % d[nz[0]]
                else:
                    want = "%.0f–%.0f" % (d[nz[0] - 1], d[nz[0]])
            if r[jd] != want:
                fail("Metrics table, %s: D leaves 0 %r, expected %r" % (r[0], r[jd], want))
            # critical_pair = the pair count when every pair turned in training: "none"
            cp = int(c["phase/pairs"].attrs["critical_pair"])
            want = "none" if cp >= c["phase/pairs/inv_freq"].shape[0] else str(cp)
            if r[jc] != want:
                fail("Metrics table, %s: critical pair %r, expected %r" % (r[0], r[jc], want))
            b = int(c["decay/by_distance"].attrs["first_negative_B"])
            if r[jb] != ("none" if b < 0 else str(b)):
                fail("Metrics table, %s: first negative B %r, file %d" % (r[0], r[jb], b))
            if "needles" in c:
                want = ["%.2f" % needle_haystack(c["needles"])[1].mean(),
                        "%.2f" % c["needles/hit"][()].mean()]
            else:
                want = ["n/a", "n/a"]
            if [r[jh], r[ja]] != want:
                fail("Metrics table, %s: needle hit rates %s, expected %s"
                     % (r[0], [r[jh], r[ja]], want))
            n += 1
    return n


def check_svgs(md, html, out, path):
    """Every linked SVG exists and is a non-empty SVG; each metric plot kind is there iff
    the file has what it draws."""
    svgs = sorted(f for f in os.listdir(out) if f.endswith(".svg"))
    for s in svgs:
        body = open(os.path.join(out, s), encoding="utf-8", errors="replace").read()
        if "(%s)" % s not in md:
            fail("report.md does not link %s" % s)
        if "<svg" not in body or "</svg>" not in body or os.path.getsize(os.path.join(out, s)) < 500:
            fail("%s is empty or not an SVG" % s)
    if html.count("<svg") != len(svgs):
        fail("report.html inlines %d SVGs, expected %d" % (html.count("<svg"), len(svgs)))
    ids = re.findall(r"""\bid=["']([^"']*)["']""", html)
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        fail("report.html repeats %d element ids (%s ...)" % (len(dup), dup[:3]))
    with h5py.File(path, "r") as f:
        for pre, ds in SVG_PREFIX:
            have = any(c.attrs.get("complete", 0) == 1 and ds in c
                       and np.isfinite(c[ds][:]).any() for c in f.get("cases", {}).values())
            got = [s for s in svgs if s.startswith(pre)]
            if have and not got:
                fail("no %s*.svg although the file has %s" % (pre, ds))
            if not have and got:
                fail("%s drawn although the file has no %s" % (got, ds))
    return svgs


def check_content(cmd, work, label, path, ntables=None):
    """Run the report on path and check its tables, SVGs and bench table against the file."""
    out = os.path.join(work, "out-" + label)
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, path, out)
    if rc != 0:
        fail("%s: exit status %d: %s %s" % (label, rc, so, se))
        return None
    md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    n = check_tables(md, path)
    if ntables is not None and n != ntables:
        fail("%s: %d metric tables checked, expected %d" % (label, n, ntables))
    for heading, _, _, _ in TABLES:
        if ("### " + heading in md) != (heading in html):
            fail("%s: %s in one of report.md / report.html only" % (label, heading))
    b = check_bench(md, path)
    nm = check_metrics_cost(md, path)
    ns = check_metrics_summary(md, path)
    # a file with complete cases that hold metric groups must show both tables: a
    # report that dropped one checked 0 rows and passed before 2026-12-03
    with h5py.File(path, "r") as f:
        with_metrics = any(g.attrs.get("complete") == 1 and "phase" in g
                           for g in (f["cases"].values() if "cases" in f else []))
    if with_metrics and (nm == 0 or ns == 0):
        fail("%s: the file has complete cases with metrics, but %d metrics-cost cells and "
             "%d metrics summary rows were checked" % (label, nm, ns))
    svgs = check_svgs(md, html, out, path)
    print("ok   %s: %d metric tables, %sbench table, %d SVGs, %d metrics-cost cells, "
          "%d metrics summary rows" % (label, n, "" if b else "no ", len(svgs), nm, ns))
    return md, html, svgs


# the plots of tests/make_synthetic.py's file: per (kind, seq_len, mode, dataset) group,
# per seq_len for the analytic kinds, and one heat map per probe case with pair_share
SYNTHETIC_SVGS = sorted(
    ["entropy-L64-full-gaussian.svg", "entropy-L128-probe-needle.svg",
     "entropy-L1024-full-gaussian.svg"]
    + ["%s-%s.svg" % (k, g) for k in ("phase-distance", "phase-bands", "ood-fraction")
       for g in ("L64-full-gaussian", "L128-probe-needle")]
    + ["pair-turns-L64.svg", "pair-turns-L128.svg", "decay-bounds-L64.svg",
       "decay-bounds-L128.svg"]
    + ["%s-L128-probe-needle.svg" % k for k in ("decay", "needle-rank", "needle-mass",
                                                "precision", "softmax-floor")]
    + ["share-pi-x4-L128-probe-needle.svg"])


def check_heatmap(svg, path, dataset):
    """The pair-share heat map: one filled cell per (bin, pair) with a value, each in its
    own value's colour on the palette -1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b' over
    [-max|share|, max|share|] (to within 3 of 255 per channel), compared as sorted
    lists; an interpolated map (cells coloured by the mean of their corners) fails."""
    with h5py.File(path, "r") as f:
        share = f[dataset][()]
    vals = share[np.isfinite(share)]
    zmax = np.abs(vals).max() or 1.0
    stops = np.array([[0x21, 0x66, 0xac], [0xf7, 0xf7, 0xf7], [0xb2, 0x18, 0x2b]], float)

    def colour(z):
        t = z / zmax
        a, b, u = (stops[0], stops[1], t + 1) if t < 0 else (stops[1], stops[2], t)
        return a + (b - a) * u

    def key(c):  # b - r falls along the palette from blue (139) to red (-135)
        return c[2] - c[0]

    want = sorted((tuple(colour(z)) for z in vals), key=key)
    body = open(svg, encoding="utf-8").read()
    plot = body.split('<g id="gnuplot_plot_1"', 1)[-1].split("</g>\n\t</g>", 1)[0]
    got = sorted((tuple(float(x) for x in m) for m in
                  re.findall(r"polygon fill = 'rgb\(\s*(\d+),\s*(\d+),\s*(\d+)\)'", plot)),
                 key=key)
    if len(got) != len(want):
        fail("heat map %s: %d filled cells, the file has %d values (%d bins x %d pairs)"
             % (os.path.basename(svg), len(got), len(want), *share.shape))
        return
    worst = max(max(abs(g - w) for g, w in zip(a, b)) for a, b in zip(got, want))
    if worst > 3:
        fail("heat map %s: a cell's colour is %.0f/255 from its value's" %
             (os.path.basename(svg), worst))
    else:
        print("ok   heat map: %d cells, each in its value's colour (within %.0f/255)"
              % (len(got), worst))


def plot_styles(svg):
    """(colour, marker, dash) of each titled series of a gnuplot SVG, in order."""
    body = open(svg, encoding="utf-8").read()
    out = []
    for part in re.split(r'<g id="gnuplot_plot_\d+"', body)[1:]:
        title = re.search(r"<title>([^<]*)</title>", part)
        colour = re.search(r"(?:stroke|color)='(rgb\([^)]*\))'", part)
        mark = re.search(r"xlink:href='#(gpPt\d+)'", part)
        dash = re.search(r"stroke-dasharray='([^']*)'", part)
        out.append((title.group(1) if title else "", colour and colour.group(1),
                    mark and mark.group(1), dash.group(1) if dash else ""))
    return out


def distinct_styles(cmd, work, good):
    """Thirty variants in one plot (gnuplot has 8 line colours; styles repeated from
    the 9th variant, then from the 25th) and a plot of two series per case (needle
    ranks against the haystack and among all keys): every series of a plot drawn in a
    style of its own (colour, marker, dash)."""
    P = "cases/pi-x4-L128-probe-needle"
    path = os.path.join(work, "ten-variants.h5")
    shutil.copyfile(good, path)
    with h5py.File(path, "a") as f:
        for i in range(29):
            name = "cases/pi-x%d-L128-probe-needle" % (5 + i)
            f.copy(P, name)
            f[name].attrs["factor"] = np.float64(5 + i)
    out = os.path.join(work, "out-ten-variants")
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, path, out)
    if rc != 0:
        fail("thirty variants: exit status %d: %s" % (rc, (so + se)[-500:]))
        return
    for svg, nseries in (("entropy-L128-probe-needle.svg", 30),
                         ("needle-rank-L128-probe-needle.svg", 60)):
        st = [x for x in plot_styles(os.path.join(out, svg)) if x[2]]
        seen = {}
        for title, *style in st:
            seen.setdefault(tuple(style), []).append(title)
        same = [t for t in seen.values() if len(t) > 1]
        if len(st) < nseries or same:
            fail("%s: %d series drawn (want >= %d); same style: %s" % (svg, len(st), nseries,
                                                                         same[:2]))
        else:
            print("ok   %s: %d series, each in a style of its own" % (svg, len(st)))


def damaged_cases(cmd, work, good):
    """Files that are valid HDF5 but damaged or foreign in one place: the report reads
    nothing outside the file, never crashes, and a case whose data stops gnuplot costs
    only its own plots."""
    P = "cases/pi-x4-L128-probe-needle"

    def fresh(path, out):  # no files left from an earlier run in out
        shutil.rmtree(out, ignore_errors=True)
        return run(cmd, path, out)

    def variant(name, edit):
        path = os.path.join(work, name + ".h5")
        shutil.copyfile(good, path)
        with h5py.File(path, "a") as f:
            edit(f)
        return path

    def report_of(name, edit):
        """The variant `name` of the good file, reported afresh into out-<name>: its path,
        the report's status, stdout, stderr and report.md ("" when none was written)."""
        path = variant(name, edit)
        out = os.path.join(work, "out-" + name)
        rc, so, se = fresh(path, out)
        md = os.path.join(out, "report.md")
        text = open(md, encoding="utf-8", errors="replace").read() if os.path.exists(md) else ""
        return path, rc, so, se, text

    # /bench without the peaks its run measured: the sentence says so (it read "That run
    # measured: ." or began with "; triad" when only some were missing)
    def no_peaks(f):
        for k in list(f["bench"].attrs):
            if "peak" in k or "triad" in k or "ceiling" in k:
                del f["bench"].attrs[k]
    if "bench" in h5py.File(good, "r"):
        p = variant("bench-no-peaks", no_peaks)
        out = os.path.join(work, "out-bench-no-peaks")
        rc, so, se = fresh(p, out)
        md = open(os.path.join(out, "report.md")).read() if rc == 0 else ""
        if rc != 0 or "The file does not hold the peaks that run measured" not in md or \
                "measured: ." in md or "measured: ;" in md:
            fail("bench without peaks: rc %d, %r" % (rc, md[md.find("## Throughput: "
                                                                   "ropebench"):][:900]))
    else:
        fail("bench without peaks: the synthetic file has no /bench to edit")

    # links and storage outside the file are not followed
    secret = os.path.join(work, "outside.bin")
    with open(secret, "wb") as f:
        f.write(b"OUTSIDE-SECRET\n" * 64)
    p = variant("external-link", lambda f: f.__setitem__(
        "cases/z", h5py.ExternalLink(os.path.join(work, "nowhere.h5"), "/x")))
    expect_error(cmd, work, "external-link", p, ["/cases/z is a link into another file"])

    # a file from someone else is read as a tree: groups nested deeper than a results
    # file's (15,000 of them overflowed the stack of HDF5's own recursive walk) and one
    # case group under a second name (each name was a case, with all its plots) are
    # refused, named
    def deep(f):
        g = f.create_group("z")
        for _ in range(20):
            g = g.create_group("a")
    p = variant("deep-groups", deep)
    expect_error(cmd, work, "deep-groups", p, ["/z/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a is groups "
                                              "nested deeper than a results file's"])
    p = variant("second-name", lambda f: f.__setitem__("cases/zz-again", f[P]))
    expect_error(cmd, work, "second-name", p, ["is a second name for an object met before"])
    # a soft link in /cases is not followed: listed as skipped, not a second copy of its
    # target's numbers in every table (20,000 of them took 20 s and one plot 20,000 lines)
    p, rc, so, se, text = report_of("soft-case", lambda f: f.__setitem__(
        "cases/zz-soft", h5py.SoftLink("/" + P)))
    lines = [l for l in text.splitlines() if "zz-soft" in l]
    if rc != 0 or len(lines) != 1 or "soft link" not in lines[0]:
        fail("soft-case: status %d, lines naming zz-soft %s (want one, listing it as a soft "
             "link)" % (rc, lines[:3]))
    # ... and said on stderr in one line, as the README says (it was the report alone),
    # as is a dataset under /cases
    want = "1 finished case(s) or /cases entries could not be read"
    err = [l for l in se.splitlines() if l.strip()]
    if len(err) != 1 or want not in err[0] or "zz-soft" not in err[0] or \
            "soft link" not in err[0]:
        fail("soft-case: stderr %r (want one line: '%s ... zz-soft ... soft link')" % (se, want))
    p, rc, so, se, text = report_of("dataset-case", lambda f: f.__setitem__(
        "cases/zz-data", np.arange(3.0)))
    err = [l for l in se.splitlines() if l.strip()]
    if rc != 0 or len(err) != 1 or want not in err[0] or "not a readable group" not in err[0]:
        fail("dataset-case: status %d, stderr %r (want one line: '%s ... not a readable "
             "group')" % (rc, se, want))

    # text of the file cannot become a Markdown link or image in report.md
    p, rc, so, se, text = report_of("md-link", lambda f: f.attrs.__setitem__(
        "git_describe", "v1 ![](https://evil.example/p.png) [signed](https://evil.example/)"))
    if rc != 0 or re.search(r"(?<!\\)\]\(https://evil", text) or \
            "!\\[\\](https://evil.example/p.png)" not in text:
        fail("md-link: status %d, link not escaped: %s" % (rc, [l for l in text.splitlines()
                                                              if "evil" in l][:2]))

    # attributes a run writes as whole numbers (-1: none) or as positive peaks, damaged:
    # a NaN D_leaves_zero or first_negative_B reads as absent (D's cell from the D column
    # as for a file without it, B's n/a), never as "never"/"none"; peaks that are not
    # all finite and positive as no peaks (were summed: "triad -4.0 GB/s", "inf %")
    def damaged_attrs(f):
        for c in f["cases"].values():
            if "phase/by_distance" in c:
                c["phase/by_distance"].attrs["D_leaves_zero"] = np.float64("nan")
                c["decay/by_distance"].attrs["first_negative_B"] = np.float64(2.5)
        del f["provenance/peak_fma_gflops"], f["provenance/triad_gbps"]
        f["provenance/peak_fma_gflops"] = np.array([0.0, 0.0])
        f["provenance/triad_gbps"] = np.array([-5.0, 1.0])
    p, rc, so, se, text = report_of("damaged-attrs", damaged_attrs)
    tab = md_table(text, "## Metrics")
    bad = []
    if rc != 0 or tab is None:
        bad.append("status %d, Metrics table %s" % (rc, "missing" if tab is None else "there"))
    else:
        head, rows = tab
        jd, jb = head.index("D leaves 0 at distance"), head.index("first Δ with negative B(Δ)")
        with h5py.File(p, "r") as f:
            if not any((f["cases"][r[0]]["phase/by_distance/D"][()] > 1e-9).any() for r in rows):
                bad.append("no case with D > 1e-9: the check of D's onset would see nothing")
            for r in rows:
                d, D = f["cases"][r[0]]["phase/by_distance/distance"][()], \
                    f["cases"][r[0]]["phase/by_distance/D"][()]
                nz = np.flatnonzero(D > 1e-9)
                if nz.size and r[jd] == "never":
                    bad.append("%s: D leaves 0 'never' from a NaN attribute, D > 0 at %g" %
                               (r[0], d[nz[0]]))
                if r[jb] != "n/a":
                    bad.append("%s: first negative B %r from an attribute of 2.5" % (r[0], r[jb]))
    for w in ("-4.0 GB/s", "inf %", "inf%", "| inf |"):
        if w in text:
            bad.append("damaged peaks shown: %r in report.md" % w)
    if "holds no peak measurements" not in text:
        bad.append("damaged peaks not read as absent")
    if bad:
        fail("damaged-attrs: " + "; ".join(bad[:4]))

    # a finished case whose method no run writes, or whose factor is not a positive
    # number: listed as skipped with the reason and said on stderr (both were shown as
    # ordinary cases, the factor as n/a)
    def check_skipped(label, name, rc, se, text, why):
        err = [l for l in se.splitlines() if l.strip()]
        listed = [l for l in text.splitlines() if name in l and why in l]
        if rc != 0 or len(err) != 1 or why not in err[0] or len(listed) != 1:
            fail("%s: status %d, stderr %r, report lines naming it with the reason %s" %
                 (label, rc, se, listed[:2]))
    for label, attr, val, why in (
            ("bad-method", "method", "bogus\nline", "attribute method is not a method"),
            ("nan-factor", "factor", np.float64("nan"), "attribute factor is not a number in"),
            ("zero-factor", "factor", np.float64(0.0), "attribute factor is not a number in"),
            ("half-factor", "factor", np.float64(0.5), "attribute factor is not a number in"),
            ("huge-factor", "factor", np.float64(2e6), "attribute factor is not a number in")):
        p, rc, so, se, text = report_of(label, lambda f: f[P].attrs.__setitem__(attr, val))
        check_skipped(label, P.split("/")[1], rc, se, text, why)
    # method none with a factor other than 1 (a run writes 1 there)
    with h5py.File(good, "r") as f:
        nones = [c for c in f["cases"] if f["cases"][c].attrs.get("method") in ("none", b"none")]
    if not nones:
        fail("none-factor: the file has no case of method none")
    else:
        why = "attribute factor is not a number in"
        p, rc, so, se, text = report_of("none-factor", lambda f: f["cases"][nones[0]].attrs
                                        .__setitem__("factor", np.float64(4.0)))
        check_skipped("none-factor", nones[0], rc, se, text, why)

    # nor emphasis or strikethrough (GFM), while an '_' inside a word stays as it is
    p, rc, so, se, text = report_of("md-emph", lambda f: f.attrs.__setitem__(
        "git_describe", "v1_rc2 _slanted_ __bold__ ~~struck~~ ~x~ *star*"))
    want = "v1_rc2 \\_slanted\\_ \\_\\_bold\\_\\_ \\~\\~struck\\~\\~ \\~x\\~ \\*star\\*"
    if rc != 0 or want not in text:
        fail("md-emph: status %d, emphasis or strikethrough not escaped (want %r): %s" %
             (rc, want, [l for l in text.splitlines() if "slanted" in l][:2]))

    # nor drive the terminal that shows report.md (ESC sequences, C1 controls such as
    # CSI U+009B), nor read in another order than it is (bidi overrides) or break a
    # line (U+2028): in a table cell, a code span (the results path
    # is the file's own name, so the config block stands in) and the config block
    def ctl(f):
        f.attrs["git_describe"] = "v1\x1b]0;title\x07 \u202eevil\u202c \u009b31mred\u009b0m \u2028x"
        cfg = f.attrs["config_text"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else str(cfg)
        f.attrs["config_text"] = cfg + "\n# \x1b[31mred\x1b[0m \u2066x\u2069\n"
    p = variant("control-chars", ctl)
    out = os.path.join(work, "out-control-chars")
    rc, so, se = fresh(p, out)
    for name in ("report.md", "report.html"):
        path = os.path.join(out, name)
        data = open(path, "rb").read() if os.path.exists(path) else b""
        bad = [c for c in (b"\x1b", b"\x07", "\u202e".encode(), "\u2066".encode(),
                           "\u009b".encode(), "\u2028".encode()) if c in data]
        if rc != 0 or not data or bad or b"title" not in data:
            fail("control-chars: %s: status %d, %d bytes, still holds %s" % (name, rc, len(data), bad))

    def ext_storage(f):
        del f[P + "/rows/position"]
        f.create_dataset(P + "/rows/position", shape=(64,), dtype="<f8",
                         external=[(secret, 0, 64 * 8)])
    p, rc, so, se, text = report_of("external-storage", ext_storage)
    if rc < 0 or rc >= 128 or "OUTSIDE-SECRET" in text or \
            "stored outside the results file" not in text:
        fail("external storage: status %d, case not marked as stored outside: %s" %
             (rc, (so + se)[-500:]))
    p = variant("cases-not-group", lambda f: (f.__delitem__("cases"),
                                              f.__setitem__("cases", [1])))
    expect_error(cmd, work, "cases-not-group", p, ["/cases is not a group"])
    # a number the reader turns into an integer: NaN or past int64 is not undefined
    # behaviour, just an unknown value
    p = variant("nan-attrs", lambda f: [f[P].attrs.__setitem__(k, v) for k, v in (
        ("seq_len", np.float64(np.nan)), ("heads", np.float64(1e300)),
        ("n_rows", np.int64(2 ** 63 - 1)))])
    rc, so, se = fresh(p, os.path.join(work, "out-nan-attrs"))
    if rc < 0 or rc >= 128 or any(b in so + se for b in ("Sanitizer", "runtime error")):
        fail("NaN / huge attributes: status %d: %s" % (rc, (so + se)[-800:]))
    # two case names that make one file name; a case whose share matrix is all NaN
    def twins(f):
        f.copy(P, "cases/p+q")
        f.move(P, "cases/p q")
    p = variant("twins", twins)
    out = os.path.join(work, "out-twins")
    rc, so, se = fresh(p, out)
    shares = sorted(x for x in os.listdir(out) if x.startswith("share-p_q")) \
        if os.path.isdir(out) else []
    if rc != 0 or shares != ["share-p_q-2.svg", "share-p_q.svg"]:
        fail("twin case names: status %d, heat maps %s: %s" % (rc, shares, (so + se)[-500:]))
    # two case names of 300 characters that differ only at their end: heat maps whose
    # titles and captions still tell them apart (both were cut to the first 79)
    def long_names(f):
        f.copy(P, "cases/" + "Z" * 300 + "-a")
        f.move(P, "cases/" + "Z" * 300 + "-b")
    p = variant("long-names", long_names)
    out = os.path.join(work, "out-long-names")
    rc, so, se = fresh(p, out)
    md = open(os.path.join(out, "report.md")).read() if rc == 0 else ""
    caps = set(re.findall(r"Per-pair attention share \(metric 5\) of case ([^:]*):", md))
    if rc != 0 or len(caps) != 2 or not all(c.startswith("ZZZ") for c in caps):
        fail("long case names: status %d, heat-map captions %s" % (rc, sorted(caps)))
    # a share matrix all NaN: a heat map of grey cells only (every cell drawn, none
    # in a palette colour)
    p = variant("nan-share", lambda f: f[P + "/pair_share/share"].__setitem__(
        Ellipsis, np.nan))
    out = os.path.join(work, "out-nan-share")
    rc, so, se = fresh(p, out)
    svgs = [x for x in os.listdir(out) if x.endswith(".svg")] if os.path.isdir(out) else []
    hm = os.path.join(out, "share-pi-x4-L128-probe-needle.svg")
    body = open(hm, encoding="utf-8").read() if os.path.exists(hm) else ""
    with h5py.File(p, "r") as f:
        ncell = f[P + "/pair_share/share"].size
    if rc != 0 or len(svgs) != len(SYNTHETIC_SVGS) or \
            body.count("polygon fill = 'rgb(189, 189, 189)'") != ncell:
        fail("NaN share matrix: status %d, %d SVGs (want %d), %d grey cells (want %d): %s" % (
            rc, len(svgs), len(SYNTHETIC_SVGS),
            body.count("polygon fill = 'rgb(189, 189, 189)'"), ncell, (so + se)[-800:]))
    # a distance column all NaN stops gnuplot on that plot (no y range): the report
    # says so in one line, exits non-zero, and keeps every other plot
    p = variant("nan-share-distance", lambda f: f[P + "/pair_share/distance"].__setitem__(
        Ellipsis, np.nan))
    out = os.path.join(work, "out-nan-share-distance")
    rc, so, se = fresh(p, out)
    svgs = [x for x in os.listdir(out) if x.endswith(".svg")] if os.path.isdir(out) else []
    lines = [l for l in (so + se).splitlines() if l.strip()]
    if rc in (0,) or rc < 0 or rc >= 128 or len(lines) != 1 or \
            "gnuplot failed on 1 of" not in lines[0] or "pi-x4-L128-probe-needle" not in \
            lines[0] or len(svgs) != len(SYNTHETIC_SVGS) - 1:
        fail("NaN share distances: status %d, %d SVGs (want %d): %s" % (
            rc, len(svgs), len(SYNTHETIC_SVGS) - 1, (so + se)[-800:]))
    # the report's note on it is a paragraph of its own: the first figure after it
    # joined the note's paragraph when one newline ended it
    md = os.path.join(out, "report.md")
    text = open(md, encoding="utf-8", errors="replace").read() if os.path.exists(md) else ""
    m = re.search(r"^Plots not \(all\) rendered: [^\n]*\n(.*)$", text, re.M)
    if not m or m.group(1).strip() != "":
        fail("NaN share distances: the plot note is not followed by a blank line: %r"
             % (text[text.find("Plots not"):][:300],))
    # non-finite entropy and lse values: left out of the means, and the report says how
    # many (the mean over the finite ones, against numpy)
    def nonfinite(f):
        f[P + "/rows/entropy"][0, 0] = np.nan
        f[P + "/rows/lse"][-1, 1] = np.inf
    p, rc, so, se, text = report_of("nonfinite", nonfinite)
    with h5py.File(p, "r") as f:
        H = f[P + "/rows/entropy"][()]
    want = float(np.mean(H[np.isfinite(H)]))
    tab = md_table(text, "## Cases")
    row = [r for r in (tab[1] if tab else []) if r[0] == P.split("/")[1]]
    col = tab[0].index("mean entropy (nats)") if tab else -1
    if rc != 0 or "Left out of the means as not finite" not in text or \
            "pi-x4-L128-probe-needle 2." not in text and \
            "pi-x4-L128-probe-needle 2;" not in text or \
            len(row) != 1 or not close(row[0][col], want):
        fail("non-finite rows: status %d, note or mean (want %.6f) wrong: %s" % (
            rc, want, [l for l in text.splitlines() if "Left out" in l] + row))
    # dims far beyond the file's size (chunked, nothing written): refused, not allocated
    def huge(f):
        del f[P + "/rows/position"]
        f.create_dataset(P + "/rows/position", shape=(1 << 28,), dtype="<f8",
                         chunks=(1 << 16,))
    p, rc, so, se, text = report_of("huge-dims", huge)
    if rc < 0 or rc >= 128 or "more values than the file could hold" not in text:
        fail("huge dims: status %d, not refused: %s" % (rc, (so + se)[-500:]))
    print("ok   damaged cases: external links/storage refused, twins, NaN share, non-finite "
          "rows, huge dims")


def bench_report(bench, cmd, work, name, args):
    """`ropebench bench --quick ARGS -o` into a new file NAME.h5, then check_content on
    it; its result, or None (after a failure) when the bench run failed."""
    path = os.path.join(work, name + ".h5")
    if os.path.exists(path):
        os.remove(path)
    r = subprocess.run(bench + ["bench", "--quick"] + args + ["-o", path], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        fail("bench -o %s: status %d: %s" % (path, r.returncode, r.stderr[-1000:]))
        return None
    return check_content(cmd, work, name, path, ntables=0)


def bench_new_file(bench, cmd, work):
    """`ropebench bench -o` into a new file (causal and probe rows): the report accepts it
    and shows the bench table alone; with the avx512 kernel, whose probe rows carry a
    breakdown (/bench/probe_breakdown), the Probe breakdown table too."""
    # (probe rows too, so that the table's ideal %% of triad shows a measured value)
    res = bench_report(bench, cmd, work, "bench-new",
                       ["--only", "causal,probe", "--kernels", "ref", "--threads", "1",
                        "--lengths", "64", "--head-dims", "16"])
    if res and "This file holds no cases" not in res[0]:
        fail("bench-new: the report does not say that the file has no cases")
    # (an unknown ROPEBENCH_ISA makes `info` list the kernels this build and CPU have)
    info = subprocess.run(bench + ["info"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, ROPEBENCH_ISA="no_such_kernel"))
    avail = re.search(r"available: ([^)]*)\)", info.stdout + info.stderr)
    if not avail:
        fail("cannot read the available kernels from `info`: %s" % (info.stdout + info.stderr))
    elif re.search(r"\bavx512\b", avail.group(1)):
        res = bench_report(bench, cmd, work, "bench-breakdown",
                           ["--only", "probe", "--kernels", "avx512"])
        if res and "### Probe breakdown" not in res[0]:
            fail("bench-breakdown: no Probe breakdown table")


def check_over_peak(cmd, work, good, good_md):
    """Cases above 100 % of their run's FMA peak or triad get a note under the throughput
    table (count and highest %, recomputed here from flops, compute_s and the peaks);
    a file whose cases stay below gets none."""
    if "**Note:**" in good_md:
        fail("over-peak: a note in the report of a file whose cases stay below 100 %")
    over = os.path.join(work, "over-peak.h5")
    shutil.copyfile(good, over)
    # (case, FMA peak, triad): 50 GFLOP/s over 40 and 165 over 150; the probe case's
    # 8192 bytes over 0.02 s against a triad of 0.0002 GB/s
    changes = (("none-x1-L64-full-gaussian", 40.0, 40.0),
               ("pi-x4-L128-probe-needle", 150.0, 0.0002))
    pcts = ([], [])
    with h5py.File(over, "r+") as f:
        for name, peak, triad in changes:
            c = f["cases"][name]
            c.attrs["peak_fma_gflops"] = np.float64(peak)
            c.attrs["triad_gbps"] = np.float64(triad)
            slow = float(np.max(np.asarray(c["timing/compute_s"], np.float64)))
            pcts[0].append(100.0 * float(c.attrs["flops"]) / slow / 1e9 / peak)
            if text(c.attrs["mode"]) == "probe":
                a = c.attrs
                nbytes = float(a["heads"]) * float(a["seq_len"]) * float(a["head_dim"]) * 8.0
                pcts[1].append(100.0 * nbytes / slow / 1e9 / triad)
    out = os.path.join(work, "out-over-peak")
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, over, out)
    if rc != 0:
        fail("over-peak: rc %d: %s" % (rc, (so + se)[-300:]))
        return
    md = open(os.path.join(out, "report.md")).read()
    html = open(os.path.join(out, "report.html")).read()
    for k, what in enumerate(("FMA peak", "triad")):
        p = [x for x in pcts[k] if x > 100.0]
        want = "%d case(s) read above 100 %% of the %s that their run measured (up to " \
               "%.1f %%)" % (len(p), what, max(p))
        if not p or "**Note:** " + want not in md or \
                "<strong>Note:</strong> " + want not in html:
            fail("over-peak: expected the note %r in report.md and report.html" % want)
        else:
            print("ok   over-peak note: %s" % want)
    # the yardsticks that do not apply: bf16 cases against the fp32 FMA peak
    # (VDPBF16PS does twice the FLOPs of an FMA), a probe case whose K and V (8 KiB) a
    # last-level cache of the recorded topology holds, against the memory triad: above
    # 100 % without the peaks being low, so no note
    with h5py.File(over, "r+") as f:
        for name, _, _ in changes:
            f["cases"][name].attrs["dtype"] = "bf16"
        f["provenance"].attrs["topology_summary"] = "1 package, 2 cores, 2 PUs, L3 2 x 16 MiB"
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, over, out)
    md = open(os.path.join(out, "report.md")).read() if rc == 0 else ""
    if rc != 0 or "**Note:**" in md:
        fail("over-peak: a bf16 case over the FMA peak or a cached probe case over the "
             "triad gave a note (rc %d): %s" % (rc, md[md.find("**Note:**"):][:300]))
    else:
        print("ok   over-peak: no note for a bf16 case or a cache-held probe case")


def review_2026_12_03(cmd, work, good, bench_only):
    """Defects a review found (2026-12-03): strings h5py writes (UTF-8) in string
    datasets, a case name that would end its code span, names that would drive the
    terminal, a report that fails half-way, a plot failure beside unreadable cases, a
    timing of the wrong shape, and a study.ini left from an earlier report."""
    P = "cases/pi-x4-L128-probe-needle"

    def variant(name, src, edit):
        path = os.path.join(work, name + ".h5")
        shutil.copyfile(src, path)
        with h5py.File(path, "a") as f:
            edit(f)
        return path

    def fresh(path, label):
        out = os.path.join(work, "out-" + label)
        shutil.rmtree(out, ignore_errors=True)
        rc, so, se = run(cmd, path, out)
        md = os.path.join(out, "report.md")
        return rc, so + se, open(md, encoding="utf-8").read() if os.path.exists(md) else ""

    # the study's planned cases as h5py's strings (UTF-8, variable length): read (this
    # crashed the report), the case never run named
    def planned(f):
        names = sorted(f["cases"]) + ["never-run-case"]
        f["provenance"].create_dataset("planned_cases", data=names,
                                       dtype=h5py.string_dtype())
    rc, out, md = fresh(variant("planned-utf8", good, planned), "planned-utf8")
    if rc != 0 or "1 of the study's %d case(s) never run" % 6 not in md or \
            "never-run-case" not in md:
        fail("planned_cases as UTF-8 strings: rc %d: %s" % (rc, out[-300:]))
    # /bench's string columns the same way: the table is read, every row shown
    def bench_utf8(f):
        for k in ("kernel", "dtype", "bench"):
            v = [x.decode() for x in f["bench"][k][()]]
            del f["bench"][k]
            f["bench"].create_dataset(k, data=v, dtype=h5py.string_dtype())
    p = variant("bench-utf8", bench_only, bench_utf8)
    rc, out, md = fresh(p, "bench-utf8")
    tab = md_table(md, "## Throughput: ropebench bench")
    with h5py.File(p, "r") as f:
        nrows = len(f["bench/kernel"])
    if rc != 0 or not tab or len(tab[1]) != nrows:
        fail("bench strings as UTF-8: rc %d, table %s, want %d rows: %s"
             % (rc, None if not tab else len(tab[1]), nrows, out[-300:]))
    # a /bench table that cannot be read is said to be there, not absent
    p = variant("bench-short", bench_only, lambda f: f["bench"].__delitem__("dtype"))
    rc, out, md = fresh(p, "bench-short")
    if rc != 0 or "has a /bench group, but its table could not be read" not in md:
        fail("unreadable /bench: rc %d, not said: %s" % (rc, md[:600]))

    # an incomplete case whose name holds blank lines: still one code span in report.md
    # (no heading, no HTML block of the file's text)
    def nl_name(f):
        n = "x\n\n<img src=x onerror=alert(1)>\n\n# Injected heading\n\n"
        f["cases"].move("yarn-x8-L64-full-gaussian", n)
    rc, out, md = fresh(variant("name-newlines", good, nl_name), "name-newlines")
    if rc != 0 or re.search(r"^# Injected", md, re.M) or re.search(r"^<img", md, re.M) or \
            "`x  <img src=x onerror=alert(1)>  # Injected heading  `" not in md:
        fail("case name with blank lines: rc %d: %s" % (rc, [l for l in md.splitlines()
                                                           if "Injected" in l or "<img" in l]))
    # a finished case that cannot be read, its name with an escape sequence and a line
    # break: one line on the terminal, neither sent
    def esc_name(f):
        n = "bad\x1b[2J\x1b[31mRED\nsecond line"
        f["cases"].move("none-x1-L64-full-gaussian", n)
        f["cases"][n].attrs["seq_len"] = np.int64(-5)
    rc, out, md = fresh(variant("name-escape", good, esc_name), "name-escape")
    lines = [l for l in out.splitlines() if l.strip() and "/report." not in l]
    if rc != 0 or "\x1b" in out or len(lines) != 1 or "bad?[2J?[31mRED?second line" \
            not in lines[0]:
        fail("escape sequence in a case name: rc %d, %r" % (rc, out[-400:]))
    # a plot that stops gnuplot beside a case that cannot be read: both said, a line each
    def both(f):
        f[P + "/pair_share/distance"][...] = np.nan
        f["cases/none-x1-L64-full-gaussian"].attrs["seq_len"] = np.int64(-5)
    rc, out, md = fresh(variant("plot-and-case", good, both), "plot-and-case")
    lines = [l for l in out.splitlines() if l.strip()]
    if rc == 0 or rc >= 128 or len(lines) != 2 or "gnuplot failed on 1 of" not in lines[0] or \
            "1 finished case(s) or /cases entries could not be read" not in lines[1]:
        fail("plot failure and an unreadable case: rc %d, lines %s" % (rc, lines))
    # a timing dataset that is not one value per rank: the case listed as skipped, named
    def timing(f):
        t = f["cases/none-x1-L64-full-gaussian/timing"]
        v = t["compute_s"][()]
        del t["compute_s"]
        t["compute_s"] = v.reshape(1, -1)
    rc, out, md = fresh(variant("timing-2d", good, timing), "timing-2d")
    if rc != 0 or "timing/compute_s is not one value per rank" not in out or \
            "timing/compute_s is not one value per rank" not in md:
        fail("2-D timing: rc %d: %s" % (rc, out[-300:]))

    # a report that cannot be written whole leaves the directory as the last one left
    # it: report.md, the plots and the rest unchanged, nothing half-written beside them
    out = os.path.join(work, "out-staged")
    shutil.rmtree(out, ignore_errors=True)
    rc, so, se = run(cmd, good, out)
    before = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    biggest = max(before, key=lambda n: len(before[n]))
    if rc != 0 or biggest != "report.html":
        fail("staged: rc %d, the largest output is %s, not report.html" % (rc, biggest))
        return
    limit = max(len(v) for n, v in before.items() if n != "report.html") + 4096
    p = variant("staged", good, lambda f: f[P + "/rows/entropy"].__setitem__(
        Ellipsis, f[P + "/rows/entropy"][()] * 0.5))

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    argv = [a.replace("{in}", p).replace("{out}", out) for a in cmd]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       preexec_fn=small_files)
    after = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    if r.returncode == 0 or "report.html" not in r.stderr or after != before:
        fail("staged: rc %d (%s); changed or new: %s" % (
            r.returncode, r.stderr.strip()[-200:],
            sorted(n for n in set(after) | set(before) if after.get(n) != before.get(n))))
    else:
        print("ok   a report that fails half-way leaves the %d files as they were"
              % len(before))
    # a file without a configuration: the earlier report's study.ini goes with the rest
    rc, so, se = run(cmd, bench_only, out)
    if rc != 0 or "study.ini" not in before or os.path.exists(os.path.join(out, "study.ini")):
        fail("stale study.ini: rc %d, study.ini before %s, after %s" % (
            rc, "study.ini" in before, os.path.exists(os.path.join(out, "study.ini"))))


def main():
    args = sys.argv[1:]
    only_file = bench = None
    while args and args[0] in ("--file", "--bench") and len(args) > 1:
        if args[0] == "--file":
            only_file = args[1]
            args = args[2:]
        elif "--" in args:
            end = args.index("--")
            bench, args = args[1:end], args[end + 1:]
        else:
            break
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    work, cmd = args[0], args[1:]
    os.makedirs(work, exist_ok=True)
    if only_file:
        res = check_content(cmd, work, "file", only_file)
        if res and "## Metric tables" not in res[0]:
            fail("%s: the report has no metric tables" % only_file)
        print("%d failures" % len(failures))
        return 1 if failures else 0
    if bench:
        bench_new_file(bench, cmd, work)
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
        # the file named exactly: its size and SHA-256 (hashlib's), and what drew the plots
        with open(good, "rb") as fh:
            blob = fh.read()
        ident = "(%d bytes, SHA-256 `%s`), plots drawn by GNUPLOT" % (
            len(blob), hashlib.sha256(blob).hexdigest())
        if ident not in md.split("\n")[2]:
            fail("good file: the header does not give %r: %r" % (ident, md.split("\n")[2]))
        if svgs != SYNTHETIC_SVGS:
            fail("good file: SVG plots %s, expected %s" % (svgs, SYNTHETIC_SVGS))
        check_heatmap(os.path.join(out, "share-pi-x4-L128-probe-needle.svg"), good,
                      "cases/pi-x4-L128-probe-needle/pair_share/share")
        distinct_styles(cmd, work, good)
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
        # study.ini is the stored configuration; Regenerate runs it with the file's
        # commit, rank count and kernel
        ini = os.path.join(out, "study.ini")
        with h5py.File(good, "r") as f:
            cfg = f.attrs["config_text"]
            cfg = cfg.decode() if isinstance(cfg, bytes) else cfg
        ini_text = open(ini).read() if os.path.exists(ini) else ""
        if not ini_text.startswith("# study.ini written by `ropebench report`") or \
                not ini_text.endswith(cfg):
            fail("good file: study.ini missing, or not the mark and the file's config_text")
        for needle in ("git checkout synthetic\n", "ROPEBENCH_ISA=ref scripts/mpirun.sh 2 "
                       "build/default/ropebench run -c study.ini --set study.threads=1 -o "
                       "results.h5\n"):
            if needle not in md or needle not in html:
                fail("good file: the Regenerate section lacks %r" % needle)
        # attribute values that are not plain tokens never reach the command
        odd = os.path.join(work, "odd-tokens.h5")
        shutil.copyfile(good, odd)
        with h5py.File(odd, "a") as f:
            f.attrs["git_describe"] = "x; rm -rf ~"
            f.attrs["kernel"] = "`id`"
            # the run's switches: known names with plain values go into the command
            f["provenance"].attrs["environment"] = \
                "ROPEBENCH_PROBE_BALANCE=0 ROPEBENCH_HUGEPAGES=`id` EVIL_VAR=1 ROPEBENCH_BF16_AMX=0"
        out_odd = os.path.join(work, "out-odd")
        shutil.rmtree(out_odd, ignore_errors=True)
        rc, so, se = run(cmd, odd, out_odd)
        for doc, start, end in (("report.md", "### Regenerate", "## Cases"),
                                ("report.html", "<h3>Regenerate</h3>", "<h2>")):
            got = open(os.path.join(out_odd, doc)).read() if rc == 0 else ""
            regen = got.split(start)[-1].split(end)[0]
            if rc != 0 or "rm -rf" in regen or "id`" in regen or "ROPEBENCH_ISA=" in regen \
                    or "does not name the commit" not in regen or "EVIL" in regen or \
                    "ROPEBENCH_PROBE_BALANCE=0 ROPEBENCH_BF16_AMX=0 scripts/mpirun.sh" \
                    not in regen:
                fail("odd tokens, %s: rc %d, Regenerate section %r" % (doc, rc, regen[:600]))
        # a study of the `file` dataset: Regenerate names its input, which must be there
        # too; a study without it (the [file] section is always in the text) does not
        for label, datasets, want in (("file dataset", "gaussian, file", True),
                                      ("no file dataset", "gaussian,needle,filex", False)):
            fd = os.path.join(work, "file-dataset.h5")
            shutil.copyfile(good, fd)
            with h5py.File(fd, "a") as f:
                f.attrs["config_text"] = ("[study]\ndatasets = %s\n[file]\n"
                                          "path = /data/my input.h5\n" % datasets)
            out_fd = os.path.join(work, "out-file-dataset")
            shutil.rmtree(out_fd, ignore_errors=True)
            rc, so, se = run(cmd, fd, out_fd)
            md_fd = open(os.path.join(out_fd, "report.md")).read() if rc == 0 else ""
            html_fd = open(os.path.join(out_fd, "report.html")).read() if rc == 0 else ""
            says = "reads q, k and v from `/data/my input.h5`: that file must be there" in md_fd
            says_html = ("reads q, k and v from <code>/data/my input.h5</code>: that file "
                         "must be there") in html_fd
            if rc != 0 or says != want or says_html != want:
                fail("%s: rc %d, Regenerate names the input: md %s, html %s" %
                     (label, rc, says, says_html))
        # a study.ini the report did not write (the user's own) is never replaced
        out_own = os.path.join(work, "out-own-ini")
        shutil.rmtree(out_own, ignore_errors=True)
        os.makedirs(out_own)
        with open(os.path.join(out_own, "study.ini"), "w") as f:
            f.write("[model]\nhead_dim = 64  # mine\n")
        rc, so, se = run(cmd, good, out_own)
        if rc == 0 or "no report wrote it" not in so + se or \
                open(os.path.join(out_own, "study.ini")).read() != \
                "[model]\nhead_dim = 64  # mine\n" or \
                any(x.endswith(".svg") for x in os.listdir(out_own)):
            fail("own study.ini: rc %d, %r, %s" % (rc, (so + se)[-300:], os.listdir(out_own)))
        # a study.ini that cannot be written stops the report before any plot
        out_bad = os.path.join(work, "out-ini-dir")
        shutil.rmtree(out_bad, ignore_errors=True)
        os.makedirs(os.path.join(out_bad, "study.ini"))
        rc, so, se = run(cmd, good, out_bad)
        if rc == 0 or "study.ini" not in so + se or \
                any(x.endswith(".svg") for x in os.listdir(out_bad)):
            fail("study.ini a directory: rc %d, %r, %s" % (rc, (so + se)[-300:],
                                                          os.listdir(out_bad)))
        check_content(cmd, work, "good-content", good, ntables=len(TABLES))
        # the case throughput section: % of the run's peaks (synthetic flops 3.3e9 over
        # the slowest rank's 0.02 s compute is 165 GFLOP/s; peaks 100 + 110 GFLOP/s)
        head, rows = md_table(md, "## Throughput") or ([], [])
        row = [r for r in rows if r and r[0] == "pi-x4-L128-probe-needle"]
        if "% of FMA peak" not in head or not row:
            fail("case throughput table lacks %% of FMA peak or the probe case: %s" % head)
        elif not (close(row[0][5], 165.0) and close(row[0][6], 100 * 165.0 / 210.0)):
            fail("case throughput row %s: expected 165 GFLOP/s, 78.6 %% of peak" % row[0])
        # metrics on / off: rank 0's 0.01 + 0.05 over rank 1's 0.02; not the largest
        # times added up ((0.02 + 0.05) / 0.02), nor rank 0's own ratio (6)
        elif not close(row[0][9], 3.0, rel=1e-9):
            fail("case throughput row %s: expected metrics on / off 3.00" % row[0])
        # 1e9 FLOP over 0.02 s = 50 GFLOP/s: against the case's own peaks (400), and n/a
        # for a case of 2 threads where the file's peaks are of 1 thread per rank
        for name, want in (("none-x1-L64-full-gaussian", 100 * 50.0 / 400.0),
                           ("pi-x4-L64-full-gaussian", None)):
            row = [r for r in rows if r and r[0] == name]
            if not row or not close(row[0][5], 50.0) or not close(row[0][6], want):
                fail("case throughput row %s: expected 50 GFLOP/s, %s %% of peak"
                     % (row[0] if row else name, want))

    # --- a bench-only file (root format attributes and /bench, no cases) ----------------
    bench_only = os.path.join(work, "bench-only.h5")
    subprocess.run([sys.executable, os.path.join(HERE, "make_synthetic.py"), "--bench-only",
                    bench_only], check=True, stdout=subprocess.DEVNULL)
    res = check_content(cmd, work, "bench-only", bench_only, ntables=0)
    if res and (res[2] or "This file holds no cases" not in res[0]):
        fail("bench-only: expected no plots and a note that the file holds no cases")
    # (its /bench/probe_breakdown has entries the table must leave out, and one n/a line)
    if res and ("### Probe breakdown" not in res[0] or "| 4-7 | 0 | 0 | 0.0 | n/a |" not in res[0]):
        fail("bench-only: no Probe breakdown table with the synthetic entries")

    # --- a report of another file into the same directory: the earlier report's plots
    # go (they were left beside the new report), a file of the user's stays ------------
    out = os.path.join(work, "out-reused")
    shutil.rmtree(out, ignore_errors=True)
    rc1, _, e1 = run(cmd, good, out)
    first = sorted(x for x in os.listdir(out) if x.endswith(".svg"))
    listed = open(os.path.join(out, "report-plots.txt")).read().splitlines()[1:] \
        if os.path.exists(os.path.join(out, "report-plots.txt")) else []
    if sorted(listed) != first:
        fail("report-plots.txt lists %s, the directory holds %s" % (listed[:3], first[:3]))
    # the user's own file, also when report.md links it (text in report.md is the
    # file's, so it cannot say what may be removed; only the list does)
    with open(os.path.join(out, "mine.svg"), "w") as f:
        f.write("<svg></svg>")
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n![x](mine.svg)\n")
    rc2, _, e2 = run(cmd, bench_only, out)
    left = sorted(x for x in os.listdir(out) if x.endswith(".svg"))
    if rc1 != 0 or rc2 != 0 or not first or left != ["mine.svg"]:
        fail("report into a used directory: rc %d/%d, %d plots first, left %s (%s%s)"
             % (rc1, rc2, len(first), left[:5], e1[-200:], e2[-200:]))
    else:
        print("ok   reused directory: %d earlier plots removed, the user's file kept" % len(first))

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

    check_over_peak(cmd, work, good, open(os.path.join(work, "out-good", "report.md")).read())

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
    damaged_cases(cmd, work, good)
    review_2026_12_03(cmd, work, good, bench_only)

    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
