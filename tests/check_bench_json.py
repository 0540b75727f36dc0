#!/usr/bin/env python3
"""check_bench_json.py — validate `ropebench bench --json` output (or the /bench group of
a results file with --h5): every required key, finite positive numbers, every row's rate
and fraction of peak recomputed from the counting rules, the roofline and overlap lines,
the FMA peak's loop as the CPU features choose it, and rows of every kind for every
kernel named.

usage: check_bench_json.py FILE.json KERNEL[,KERNEL...]
       check_bench_json.py --h5 FILE.h5 KERNEL[,KERNEL...]
       check_bench_json.py --run ROPEBENCH WORKDIR [LAUNCHER...]
  --run: `ROPEBENCH bench --quick --json` must list every kernel that is built and
  supported here (as `ROPEBENCH info` reports them); then `bench --quick -o` (through
  LAUNCHER, e.g. mpiexec -n 1) into a new file and, twice, into an existing results
  file, whose other groups must survive and whose /bench must be replaced.
"""
import json
import math
import os
import re
import subprocess
import sys

REQUIRED = ["kernel", "kernel_detail", "dtype", "bench", "head_dim", "seq_len", "causal", "threads",
            "calls_per_rep", "median_s", "min_s", "max_s", "gflops", "peak_gflops", "triad_gbps",
            "fraction_of_peak"]
POSITIVE = ["head_dim", "seq_len", "threads", "calls_per_rep", "median_s", "min_s", "max_s", "gflops",
            "peak_gflops", "triad_gbps", "fraction_of_peak"]


def load_h5(path):
    import h5py
    import numpy as np
    rows = []
    with h5py.File(path, "r") as f:
        g = f["/bench"]
        for a in ("peak_gflops_1thread", "peak_gflops_all", "triad_gbps_1thread",
                  "triad_gbps_all", "threads_all", "cpu_model", "flop_counting",
                  "tile_ceiling_gflops_1thread", "dpbf16_peak_gflops_1thread",
                  "peaks_implausible"):
            if a not in g.attrs:
                raise SystemExit(f"FAIL /bench lacks attribute {a}")
        check_tiles(float(g.attrs["tile_ceiling_gflops_1thread"]),
                    float(g.attrs["peak_gflops_1thread"]), "/bench attribute")
        check_dpbf16(float(g.attrs["dpbf16_peak_gflops_1thread"]),
                     float(g.attrs["peak_gflops_1thread"]), "/bench attribute")
        cols = {k: g[k][()] for k in g.keys() if isinstance(g[k], h5py.Dataset)}
        n = len(cols["kernel"])
        for k, v in cols.items():
            if len(v) != n:
                raise SystemExit(f"FAIL /bench/{k} has {len(v)} rows, kernel has {n}")
        for i in range(n):
            r = {}
            for k, v in cols.items():
                x = v[i]
                if isinstance(x, bytes):
                    x = x.decode()
                elif isinstance(x, np.integer):
                    x = int(x)
                elif isinstance(x, np.floating):
                    x = float(x)
                r[k] = x
            r["causal"] = bool(r["causal"])
            if r["bench"] == "probe":  # (JSON has it per probe row)
                if "probe_positions" not in g.attrs:
                    raise SystemExit("FAIL /bench has probe rows but no attribute "
                                     "probe_positions")
                r["probe_positions"] = int(g.attrs["probe_positions"])
            if r["bench"] == "causal":
                r.pop("gbps", None)  # NaN where it does not apply
            if r["bench"] != "probe":
                if not math.isnan(r.get("overlap_ceiling", math.nan)):
                    raise SystemExit(f"FAIL /bench/overlap_ceiling of a {r['bench']} row is "
                                     f"{r['overlap_ceiling']}, not NaN")
                r.pop("overlap_ceiling", None)
            rows.append(r)
        if "probe_breakdown" in g:
            check_h5_breakdown(g["probe_breakdown"], rows)
    return rows


def breakdown_class(lo, hi, where):
    """The class whose row range a breakdown entry gives as lo..hi: [2^c, 2^(c+1) - 1],
    the last (c = 11) open (hi -1); any other range fails."""
    cl = lo.bit_length() - 1
    if lo != 1 << cl or hi != (-1 if cl == 11 else (2 << cl) - 1):
        raise SystemExit(f"FAIL {where}: class rows {lo}-{hi}")
    return cl


def check_h5_breakdown(pb, rows):
    """/bench/probe_breakdown: its columns one length, every entry's row a probe row of an
    AVX-512 kernel, and per row the classes of probe_classes with their blocks, keys and
    pairs exactly, the row ranges of their class, one call_s, and the times within
    breakdown_times' bounds but the lower one (one run's, which a slow spell could
    break: check_breakdown measures that one again); every AVX-512 probe row has
    entries."""
    cols = {k: pb[k][()] for k in pb}
    need = ("row", "rows_min", "rows_max", "blocks", "keys", "pairs", "s", "qk_s",
            "softmax_s", "pv_s", "call_s")
    if sorted(cols) != sorted(need) or len({len(v) for v in cols.values()}) != 1:
        raise SystemExit(f"FAIL /bench/probe_breakdown: columns {sorted(cols)} of lengths "
                         f"{[len(v) for v in cols.values()]}")
    by_row = {}
    for j in range(len(cols["row"])):
        by_row.setdefault(int(cols["row"][j]), []).append(j)
    for i, r in enumerate(rows):
        fast = r["bench"] == "probe" and r["kernel"] in ("avx512", "avx512_bf16")
        if fast != (i in by_row):
            raise SystemExit(f"FAIL /bench/probe_breakdown: row {i} ({r['kernel']} "
                             f"{r['bench']}) {'lacks' if fast else 'has'} entries")
    for i, js in by_row.items():
        r = rows[i]
        got, classes = {}, []
        for j in js:
            lo, hi = int(cols["rows_min"][j]), int(cols["rows_max"][j])
            cl = breakdown_class(lo, hi, f"/bench/probe_breakdown row {i}")
            got[cl] = [int(cols[k][j]) for k in ("blocks", "keys", "pairs")]
            classes.append({k: float(cols[k][j]) for k in ("s", "qk_s", "softmax_s", "pv_s")}
                           | {"rows_min": lo})
        want = probe_classes(r["seq_len"], r["probe_positions"])
        if got != want or len(js) != len(want):
            raise SystemExit(f"FAIL /bench/probe_breakdown row {i}: {got} in {len(js)} "
                             f"entries, expected {want}")
        calls = {float(cols["call_s"][j]) for j in js}
        why = breakdown_times({"classes": classes, "call_s": min(calls)}, r["threads"],
                              lower=False) if len(calls) == 1 else \
            f"call_s {calls} differ within one row"
        if why:
            raise SystemExit(f"FAIL /bench/probe_breakdown row {i}: {why}")


# which kernels the binary has; set by drive() before any file is read
HAS_AVX512 = None


# set by drive(): whether the binary has the avx512_bf16 kernel
HAS_BF16 = None


# set by drive(): the ropebench binary, so that check_tiles can measure again, and its
# work directory
EXE = None
WORK = None


def tiles_peak(text):
    """The tile ceiling and the 1-thread FMA peak from a bench table's header."""
    m = re.search(r"register tiles alone .*: ([0-9.]+) GFLOP/s 1 thread", text)
    pk = re.search(r"# peak FMA \(fp32, measured, [a-z0-9+]+ loop\): ([0-9.]+) GFLOP/s 1 thread",
                   text)
    return (float(m.group(1)) if m else None), (float(pk.group(1)) if pk else None)


def check_tiles(tiles, peak, where):
    """The register-tile ceiling: -1 without the avx512 kernel, else positive and at
    most the FMA peak of the same run (10 % for timing noise between the two probes):
    more than the peak would mean a wrong FLOP count. The two are timed one after the
    other, so a load that comes and goes (another job on the machine) can push one
    above the other; when the bound fails, up to three more short runs measure both
    again, and any one within the bound passes (a wrong count fails every time)."""
    if HAS_AVX512 is None:  # --h5 on a file from elsewhere: only the bound
        if tiles != -1 and not (0 < tiles <= 1.10 * peak):
            raise SystemExit(f"FAIL {where}: tile ceiling {tiles} GFLOP/s against peak {peak}")
    elif HAS_AVX512:
        seen = [(tiles, peak)]
        while not (0 < tiles <= 1.10 * peak) and EXE and len(seen) < 4:
            p = run([EXE, "bench", "--quick", "--only", "rope", "--kernels", "ref",
                     "--threads", "1"])
            tiles, peak = tiles_peak(p.stdout)
            if tiles is None or peak is None:
                raise SystemExit(f"FAIL tile-ceiling or peak line missing:\n{p.stdout}")
            seen.append((tiles, peak))
        if not (0 < tiles <= 1.10 * peak):
            raise SystemExit(f"FAIL {where}: tile ceiling against peak, GFLOP/s, in "
                             f"{len(seen)} runs: {seen}")
    elif tiles != -1:
        raise SystemExit(f"FAIL {where}: tile ceiling {tiles} without the avx512 kernel")


def dpbf16_peak(text):
    """The VDPBF16PS peak and its stated ratio to the FMA peak from a table's header."""
    m = re.search(r"# peak VDPBF16PS \(bf16 pairs into fp32, measured\): ([0-9.]+) GFLOP/s 1 "
                  r"thread = ([0-9.]+) x the FMA peak", text)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def check_dpbf16(dp, peak, where):
    """The VDPBF16PS peak: -1 without AVX512_BF16, else between 0.05 and 4.5 times the
    FMA peak of the same run. A VDPBF16PS does 64 FLOP, twice an FMA's 32; a core that
    issued it twice as often as FMAs would read 4x, so more than 4.5x (or less than
    0.05x) means a wrong FLOP count or a loop the compiler removed. (A Sapphire Rapids class Xeon
    read 0.50x, 2026-12-02.)"""
    has = HAS_BF16
    if has is None:  # --h5 on a file from elsewhere: only the bound
        has = dp != -1
    if not has:
        if dp != -1:
            raise SystemExit(f"FAIL {where}: VDPBF16PS peak {dp} without the bf16 kernel")
        return
    if not (0.05 * peak <= dp <= 4.5 * peak):
        raise SystemExit(f"FAIL {where}: VDPBF16PS peak {dp} GFLOP/s against FMA peak {peak}")


def available_kernels(exe):
    env = dict(os.environ, ROPEBENCH_ISA="no_such_kernel")
    p = subprocess.run([exe, "info"], env=env, capture_output=True, text=True, timeout=60)
    m = re.search(r"available: ([^)]*)\)", p.stdout + p.stderr)
    if not m:
        raise SystemExit(f"FAIL cannot read the available kernels from `{exe} info`")
    return [k.strip() for k in m.group(1).split(",") if k.strip()]


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=None if env is None else dict(os.environ, **env))
    if p.returncode != 0 or "Sanitizer" in p.stderr or "runtime error" in p.stderr:
        raise SystemExit(f"FAIL {' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def probe_positions(n, P=128):
    """The probe rows' P log-spaced positions in [0, n-1], as docs/bench.md gives them
    (sorted, repeats dropped)."""
    pos = []
    for i in range(P):
        x = n if P == 1 else math.exp(math.log(n) * i / (P - 1))
        v = min(max(int(round(x)) - 1, 0), n - 1)
        if not pos or v != pos[-1]:
            pos.append(v)
    return pos


def probe_size(n, d=128, P=128):
    """The probe rows' FLOP (4 d per visible pair of probe_positions) and bytes (K and V
    once, fp32) at n keys."""
    return 4.0 * d * sum(p + 1 for p in probe_positions(n, P)), 2.0 * n * d * 4


def header_peaks(out):
    """The FMA peaks and triads of a bench table's header, by thread count."""
    peaks, triads = {}, {}
    for what, store, unit in (("peak FMA", peaks, "GFLOP/s"), ("triad", triads, "GB/s")):
        hl = next(l for l in out.splitlines() if l.startswith("# " + what))
        for v, t in re.findall(r"([0-9.]+) %s (\d+) threads?" % re.escape(unit), hl):
            store[int(t)] = float(v)
    return peaks, triads


def check_roofline(out, rows):
    """The `# probe roofline` line against numbers computed here: the probe's FLOP from its
    positions (probe_positions, 128 by default, log-spaced in [0, N-1], as docs/bench.md
    gives them), the bytes of K and V, the peaks and triads of the header, and the probe
    rows' own GFLOP/s x time."""
    line = next((l for l in out.splitlines() if l.startswith("# probe roofline:")), None)
    if line is None:
        raise SystemExit(f"FAIL no '# probe roofline' line:\n{out}")
    probe = [r for r in rows if r["bench"] == "probe"]
    flop, nbytes = probe_size(probe[0]["seq_len"], P=probe[0]["probe_positions"])
    for r in probe:
        if abs(r["gflops"] * r["median_s"] * 1e9 - flop) > 1e-6 * flop:
            raise SystemExit(f"FAIL probe row {r['kernel']}: GFLOP/s x time "
                             f"{r['gflops'] * r['median_s'] * 1e9} != 4 d sum(pos+1) = {flop}")
    m = re.match(r"# probe roofline: ([0-9.]+) GFLOP on ([0-9.]+) GB", line)
    if not m or abs(float(m.group(1)) - flop * 1e-9) > 6e-4 or \
            abs(float(m.group(2)) - nbytes * 1e-9) > 6e-4:
        raise SystemExit(f"FAIL roofline totals: {line} (expected {flop * 1e-9:.3f} GFLOP on "
                         f"{nbytes * 1e-9:.3f} GB)")
    peaks, triads = header_peaks(out)
    got = re.findall(r"(\d+) threads?: balance ([0-9.]+) FLOP/B, fp32 <= ([0-9.]+), "
                     r"bf16 <= ([0-9.]+)", line)
    if sorted(int(g[0]) for g in got) != sorted(peaks):
        raise SystemExit(f"FAIL roofline thread counts {got} vs the header's {sorted(peaks)}")
    # bf16 against the VDPBF16PS peak's multiple of the FMA peak, from the header (2
    # where it was not measured)
    dpm = re.search(r"# peak VDPBF16PS .*: ([0-9.]+) GFLOP/s 1 thread", out)
    x16 = float(dpm.group(1)) / peaks[1] if dpm and 1 in peaks else 2.0
    for t, bal, f32, b16 in got:
        t = int(t)
        tc, tb = flop / (peaks[t] * 1e9), nbytes / (triads[t] * 1e9)
        want32, want16 = min(1.0, tb / tc), min(1.0, x16 * tb / tc)
        # (the header's peaks are rounded to 0.1 GFLOP/s and 0.01 GB/s)
        if abs(float(f32) - want32) > 2e-3 + 1e-3 * want32 or \
                abs(float(b16) - want16) > 2e-3 + 1e-3 * want16 or \
                abs(float(bal) - peaks[t] / triads[t]) > 0.01 + 1e-3 * float(bal):
            raise SystemExit(f"FAIL roofline at {t} threads: {bal} {f32} {b16}, expected "
                             f"{peaks[t] / triads[t]:.2f} {want32:.3f} {want16:.3f}")


def overlap_line(out):
    """The `# probe overlap` line's figures by thread count: (FMA alone s, its GFLOP/s,
    its fraction of the peak, stream alone s, both s, GB/s, fraction of the triad)."""
    line = next((l for l in out.splitlines() if l.startswith("# probe overlap")), None)
    if line is None:
        raise SystemExit(f"FAIL no '# probe overlap' line:\n{out}")
    got = re.findall(r"(\d+) threads?: FMA alone ([0-9.e+-]+) s \(([0-9.]+) GFLOP/s = "
                     r"([0-9.]+) of peak\), stream alone ([0-9.e+-]+) s, both ([0-9.e+-]+) s "
                     r"= ([0-9.]+) GB/s = ([0-9.]+) of the triad", line)
    return line, {int(g[0]): tuple(float(x) for x in g[1:]) for g in got}


def overlap_ok(fig, flop, peak):
    """Physical bounds of one thread count's figures: the FMA-alone pass cannot run the
    probe's FLOP much faster than the FMA peak of the same run (25 %: the two are timed
    apart), and doing both cannot take much less than the longer part alone (each
    is the best of 4 of its own, so a slow spell in one pass can tilt them: 30 %). A pass that
    skipped its work breaks one of them. '' when they hold, else why not."""
    tf, _, _, ts, tb, _, _ = fig
    if flop / tf * 1e-9 > 1.25 * peak:
        return f"the FMA-alone pass ran {flop / tf * 1e-9:.1f} GFLOP/s, above the peak {peak}"
    if tb < 0.7 * max(tf, ts):
        return f"both {tb} s, less than 0.7 x max(FMA alone {tf} s, stream alone {ts} s)"
    return ""


def check_overlap(out, rows):
    """The `# probe overlap` line (rb_overlap_probe at each probe thread count) against
    numbers computed here: its GFLOP/s is the probe's FLOP over the FMA-alone time and
    its fraction that over the header's peak, its GB/s is K and V's bytes over the
    `both` time and its fraction that over the header's triad, and every probe row's
    overlap_ceiling is that fraction; then overlap_ok's bounds, measured again (up to
    three short runs, as check_tiles) when they fail, so that noise alone cannot fail
    them and a broken pass fails every time."""
    probe = [r for r in rows if r["bench"] == "probe"]
    P = probe[0]["probe_positions"]
    flop, nbytes = probe_size(probe[0]["seq_len"], P=P)
    peaks, triads = header_peaks(out)
    line, figs = overlap_line(out)
    if sorted(figs) != sorted({r["threads"] for r in probe}):
        raise SystemExit(f"FAIL probe overlap thread counts {sorted(figs)}, probe rows at "
                         f"{sorted({r['threads'] for r in probe})}:\n{line}")
    for t, (tf, gf, gfr, ts, tb, gbps, fr) in figs.items():
        # (times printed to 4 significant digits, rates to 1-2 decimals, fractions to 3)
        want = flop / tf * 1e-9
        # (gf and the peak to 0.05 each, so gf / peak to (0.05 + 0.05 gfr) / peak)
        if abs(gf - want) > 1e-3 * want + 0.06 or \
                abs(gfr - gf / peaks[t]) > 0.051 * (1 + gfr) / peaks[t] + 6e-4:
            raise SystemExit(f"FAIL probe overlap at {t} threads: {gf} GFLOP/s = {gfr} of "
                             f"peak, expected {want} and / {peaks[t]}:\n{line}")
        want = nbytes / tb * 1e-9
        if abs(gbps - want) > 1e-3 * want + 0.006:
            raise SystemExit(f"FAIL probe overlap at {t} threads: {gbps} GB/s, bytes / both = "
                             f"{want}:\n{line}")
        if abs(fr - gbps / triads[t]) > 1e-3 * fr + 6e-4:
            raise SystemExit(f"FAIL probe overlap at {t} threads: fraction {fr}, "
                             f"{gbps} / triad {triads[t]} = {gbps / triads[t]}")
        seen = [overlap_ok(figs[t], flop, peaks[t])]
        while seen[-1] and EXE and len(seen) < 4:
            p = run([EXE, "bench", "--quick", "--only", "probe", "--kernels",
                     probe[0]["kernel"], "--threads", str(t), "--probe-rows", str(P)])
            pk2, _ = header_peaks(p.stdout)
            _, f2 = overlap_line(p.stdout)
            seen.append(overlap_ok(f2[t], flop, pk2[t]))
        if seen[-1]:
            raise SystemExit(f"FAIL probe overlap at {t} threads, in {len(seen)} runs: "
                             f"{seen}")
    for r in probe:
        oc = r.get("overlap_ceiling")
        want = figs[r["threads"]][6]
        if oc is None or abs(oc - want) > 2e-3 * oc + 6e-4:
            raise SystemExit(f"FAIL probe row {r['kernel']} at {r['threads']} threads: "
                             f"overlap_ceiling {oc}, the header's {want:.4f}")
    for r in rows:
        if r["bench"] != "probe" and "overlap_ceiling" in r:
            raise SystemExit(f"FAIL {r['bench']} row with overlap_ceiling")


def probe_classes(n, P=128, classes=12):
    """The probe profile's classes computed here from the probe's shape: keys at positions
    0..n-1 in blocks of 64, P log-spaced query positions (probe_size's); a block is seen
    by the rows at or after its first key, and class c holds the blocks 2^c <= rows <
    2^(c+1) see (the last every count from 2^(classes-1)). {c: [blocks, keys, pairs]}."""
    pos = probe_positions(n, P)
    out = {}
    for b0 in range(0, n, 64):
        cnt = min(64, n - b0)
        nr = sum(1 for p in pos if p >= b0)
        if nr == 0:
            continue
        c = min(nr.bit_length() - 1, classes - 1)
        e = out.setdefault(c, [0, 0, 0])
        e[0] += 1
        e[1] += cnt
        e[2] += nr * cnt
    return out


def breakdown_lines(out):
    """The class lines of the table's probe breakdown (the `#` lines after its header),
    split into fields."""
    ls = out.splitlines()
    at = next((i for i, l in enumerate(ls) if l.startswith("# probe breakdown:")), None)
    if at is None:
        return []
    return [l.split() for l in ls[at + 2:] if l.startswith("# ") and len(l.split()) == 16
            and re.match(r"^\d+(-\d+|\+)$", l.split()[4])]


def breakdown_times(bd, threads, lower=True):
    """Timing bounds of one breakdown: every class's three phases took time and together
    no more than the class; the classes together no more than threads x the pass's wall
    time, and (lower) at 1 thread at least half of it (at more, a team thread the OS
    starts late adds wall time that no block sees). '' when they hold, else why not."""
    for c in bd["classes"]:
        t, parts = c["s"], (c["qk_s"], c["softmax_s"], c["pv_s"])
        if min(parts) <= 0 or sum(parts) > t * (1 + 1e-9):
            return f"rows {c['rows_min']}: phases {parts} s of a class of {t} s"
    total, call = sum(c["s"] for c in bd["classes"]), bd["call_s"]
    if total > threads * call * 1.02 + 1e-4 or (lower and threads == 1 and total < 0.5 * call):
        return f"the blocks' {total} thread-s against a pass of {call} s wall"
    return ""


def check_breakdown(out, rows):
    """The probe rows' `breakdown` (rb_probe_profile, one more call with timers) against
    what is computed here: the AVX-512 kernels' probe rows have one, the others none; its
    blocks, keys and pairs per class of rows are probe_classes' exactly (a block counted
    in the wrong class, or its pairs or keys miscounted, fails), each class's row range
    is its own; breakdown_times' bounds (timers that skip blocks or a phase, or ticks
    converted wrongly, fail them), measured again when they fail (up to three short runs,
    as check_tiles), so that a slow spell alone cannot fail them; and the table's `#
    probe breakdown` lines give the same numbers."""
    lines = breakdown_lines(out)
    seen = 0
    for r in rows:
        if r["bench"] != "probe":
            continue
        where = f"probe row {r['kernel']} {r['threads']} threads"
        bd = r.get("breakdown")
        if r["kernel"] not in ("avx512", "avx512_bf16"):
            if bd is not None:
                raise SystemExit(f"FAIL {where}: a breakdown from a kernel that records none")
            continue
        if bd is None:
            raise SystemExit(f"FAIL {where}: no breakdown")
        want = probe_classes(r["seq_len"], r["probe_positions"])
        got = {}
        for c in bd["classes"]:
            cl = breakdown_class(c["rows_min"], c["rows_max"], where)
            got[cl] = [c["blocks"], c["keys"], c["pairs"]]
        if got != want:
            raise SystemExit(f"FAIL {where}: classes {{class: [blocks, keys, pairs]}} {got}, "
                             f"expected {want}")
        seen_t = [breakdown_times(bd, r["threads"])]
        while seen_t[-1] and EXE and len(seen_t) < 4:
            js = os.path.join(WORK, "bench_breakdown_again.json")
            run([EXE, "bench", "--quick", "--only", "probe", "--kernels", r["kernel"],
                 "--threads", str(r["threads"]), "--probe-rows", str(r["probe_positions"]),
                 "--json", js])
            with open(js) as f:
                again = [x for x in load_json(f) if x["bench"] == "probe"]
            seen_t.append(breakdown_times(again[0]["breakdown"], r["threads"]))
        if seen_t[-1]:
            raise SystemExit(f"FAIL {where}, in {len(seen_t)} runs: {seen_t}")
        mine = [l for l in lines if l[1] == r["kernel"] and int(l[3]) == r["threads"]]
        if len(mine) != len(bd["classes"]):
            raise SystemExit(f"FAIL {where}: {len(mine)} '# probe breakdown' lines for "
                             f"{len(bd['classes'])} classes:\n{out}")
        for l, c in zip(mine, bd["classes"]):
            if [int(x) for x in l[5:8]] != [c["blocks"], c["keys"], c["pairs"]] or \
                    abs(float(l[8]) - c["s"]) > 6e-6:
                raise SystemExit(f"FAIL {where}: table line {' '.join(l)} against {c}")
        seen += 1
    if HAS_AVX512 and not seen:
        raise SystemExit("FAIL no probe row with a breakdown although avx512 is built")


def drive(exe, work, launcher):
    import h5py
    import numpy as np
    os.makedirs(work, exist_ok=True)
    global HAS_AVX512, HAS_BF16, EXE, WORK
    EXE, WORK = exe, work
    kernels = available_kernels(exe)
    HAS_AVX512 = "avx512" in kernels
    HAS_BF16 = "avx512_bf16" in kernels
    js = os.path.join(work, "bench.json")
    p = run([exe, "bench", "--quick", "--json", js])
    if not p.stdout.startswith("# ropebench bench") or "peak FMA" not in p.stdout:
        raise SystemExit(f"FAIL unexpected table:\n{p.stdout}")
    tiles, peak = tiles_peak(p.stdout)
    if peak is None or (tiles is not None) != HAS_AVX512:
        raise SystemExit(f"FAIL peak or tile-ceiling line missing or unexpected:\n{p.stdout}")
    if tiles is not None:
        check_tiles(tiles, peak, "table header")
    dp, ratio = dpbf16_peak(p.stdout)
    if (dp is not None) != HAS_BF16:
        raise SystemExit(f"FAIL VDPBF16PS peak line missing or unexpected:\n{p.stdout}")
    if dp is not None:
        check_dpbf16(dp, peak, "table header")
        if abs(ratio - dp / peak) > 0.006:
            raise SystemExit(f"FAIL VDPBF16PS line: ratio {ratio} is not {dp} / {peak}")
    with open(js) as f:
        rows_all = json_rows(load_json(f))
    check(rows_all, kernels)
    # the default probe shape: 128 positions, 111 distinct rows at 65,536 keys
    dflt = {(r.get("probe_positions"), r.get("n_rows")) for r in rows_all
            if r["bench"] == "probe"}
    n128 = len(probe_positions(65536, 128))
    if dflt != {(128, n128)} or not re.search(
            r"probe: 128 log-spaced positions \(%d distinct rows\)" % n128, p.stdout):
        raise SystemExit(f"FAIL bench without --probe-rows: probe rows (positions, rows) "
                         f"{dflt} and the header, expected 128 positions, {n128} rows")
    check_roofline(p.stdout, rows_all)
    check_overlap(p.stdout, rows_all)
    check_breakdown(p.stdout, rows_all)
    # a subset: one kind, one shape, one kernel, one thread count -> exactly one row
    sub = os.path.join(work, "bench_subset.json")
    run([exe, "bench", "--quick", "--only", "causal", "--head-dims", "32", "--lengths", "300",
         "--kernels", "ref", "--threads", "1", "--json", sub])
    with open(sub) as f:
        rows = load_json(f)
    want = [("ref", "causal", 32, 300, 1)]
    got = [(r["kernel"], r["bench"], r["head_dim"], r["seq_len"], r["threads"]) for r in rows]
    if got != want:
        raise SystemExit(f"FAIL bench --only/--head-dims/--lengths: rows {got}, expected {want}")
    r = rows[0]
    if abs(r["gflops"] - 2.0 * 300 * 300 * 32 / r["median_s"] * 1e-9) > 1e-6 * r["gflops"]:
        raise SystemExit(f"FAIL subset row: gflops {r['gflops']} does not match 2 L^2 d / t")
    # a thread count other than 1 and all: its rows use peaks measured at that count
    # (they were the 1-thread FMA peak times the count, with the all-thread triad), as
    # the header prints them
    other = os.path.join(work, "bench_threads3.json")
    # (blas: the reference is serial and runs at 1 thread only)
    p = run([exe, "bench", "--quick", "--only", "causal", "--kernels", "blas", "--head-dims",
             "32", "--lengths", "300", "--threads", "1,3", "--json", other])
    heads = {}
    for what, unit in (("peak FMA", "GFLOP/s"), ("triad", "GB/s")):
        line = next((l for l in p.stdout.splitlines() if l.startswith("# " + what)), "")
        for v, n in re.findall(r"([0-9.]+) %s (\d+) threads?" % re.escape(unit), line):
            heads[(what, int(n))] = float(v)
    with open(other) as f:
        rows = load_json(f)
    for r in rows:
        t = r["threads"]
        # (the header prints 1 and 2 decimals)
        for what, key, tol in (("peak FMA", "peak_gflops", 0.051), ("triad", "triad_gbps", 0.0051)):
            want = heads.get((what, t))
            if want is None or abs(r[key] - want) > tol:
                raise SystemExit(f"FAIL --threads 1,3: row of {t} threads has {key} "
                                 f"{r[key]}, the header's {what} at {t} threads is {want}")
    if sorted({r["threads"] for r in rows}) != [1, 3]:
        raise SystemExit(f"FAIL --threads 1,3: rows of {sorted({r['threads'] for r in rows})}")
    # the FMA peak's loop follows the CPU: AVX-512, else AVX2 + FMA (was the plain-C
    # loop, SSE2 and ~1/4 of the AVX2 peak, so an AVX2 machine's blas rows read above 1),
    # else plain C; shown with ROPEBENCH_TEST_CPU_HIDE as on CPUs without them
    # (the loop expected from the features `ropebench info` reports under the same
    # setting: the program's own cpuid + xgetbv, which /proc/cpuinfo need not match)
    for hide in ("", "os_zmm", "os_zmm,avx2"):
        env = {"ROPEBENCH_TEST_CPU_HIDE": hide}
        line = next((l for l in run([exe, "info"], env=env).stdout.splitlines()
                     if l.startswith("cpu_features")), "")
        ft = {k for k, v in re.findall(r"(\w+)=(\d)", line) if v == "1"}
        isa = "avx512" if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "os_zmm_state"} <= ft \
            else "avx2+fma" if {"avx2", "fma"} <= ft else "c"
        p = run([exe, "bench", "--quick", "--only", "rope", "--kernels", "ref", "--threads", "1"],
                env=env)
        m = re.search(r"# peak FMA \(fp32, measured, ([a-z0-9+]+) loop\): ([0-9.]+) GFLOP/s",
                      p.stdout)
        if not m or m.group(1) != isa or not float(m.group(2)) > 0:
            raise SystemExit(f"FAIL bench with ROPEBENCH_TEST_CPU_HIDE={hide!r}: peak line "
                             f"{m.group(0) if m else None!r}, expected the {isa} loop")
        print(f"ok   FMA peak with {hide or 'nothing'} hidden: {m.group(1)} loop, "
              f"{m.group(2)} GFLOP/s")
    # the reference probe row runs at 1 thread whatever --threads says: its ideal is the
    # 1-thread probe overlap, measured though the list has no 1 (was null until 2026-12-03)
    sub = os.path.join(work, "bench_ref_probe.json")
    run([exe, "bench", "--quick", "--only", "probe", "--kernels", "ref", "--threads", "2",
         "--json", sub])
    with open(sub) as f:
        rows = json_rows(load_json(f))
    oc = [(r["threads"], r.get("overlap_ceiling")) for r in rows]
    if len(oc) != 1 or oc[0][0] != 1 or not (isinstance(oc[0][1], float) and oc[0][1] > 0):
        raise SystemExit(f"FAIL bench --kernels ref --threads 2 --only probe: (threads, "
                         f"overlap_ceiling) {oc}, expected one 1-thread row with a positive "
                         "overlap_ceiling")
    # --probe-rows: another probe shape (300 log-spaced positions in [0, 65535], whose
    # first ones repeat: fewer distinct rows), its rows, FLOP, roofline, overlap and
    # breakdown classes recomputed here for that count; -o stores the count
    kp = "avx512" if HAS_AVX512 else "ref"
    sub = os.path.join(work, "bench_probe_rows.json")
    p = run([exe, "bench", "--quick", "--only", "probe", "--kernels", kp, "--threads", "1",
             "--probe-rows", "300", "--json", sub])
    with open(sub) as f:
        rows = json_rows(load_json(f))
    nq = len(probe_positions(65536, 300))
    got = [(r["bench"], r.get("probe_positions"), r.get("n_rows")) for r in rows]
    if got != [("probe", 300, nq)] or nq >= 300:
        raise SystemExit(f"FAIL bench --probe-rows 300: rows (bench, probe_positions, n_rows) "
                         f"{got}, expected [('probe', 300, {nq})]")
    if not re.search(r"probe: 300 log-spaced positions \(%d distinct rows\)" % nq, p.stdout):
        raise SystemExit(f"FAIL bench --probe-rows 300: header does not say 300 positions, "
                         f"{nq} distinct rows:\n{p.stdout}")
    check(rows, [kp], complete=False)
    check_roofline(p.stdout, rows)
    check_overlap(p.stdout, rows)
    check_breakdown(p.stdout, rows)
    bd = os.path.join(work, "bench_probe_rows.h5")
    if os.path.exists(bd):
        os.remove(bd)
    run(launcher + [exe, "bench", "--quick", "--only", "probe", "--kernels", kp, "--threads",
                    "1", "--probe-rows", "300", "-o", bd])
    rows = load_h5(bd)
    if [(r["probe_positions"], r["n_rows"]) for r in rows] != [(300, nq)]:
        raise SystemExit(f"FAIL bench --probe-rows 300 -o: /bench rows "
                         f"{[(r['probe_positions'], r['n_rows']) for r in rows]}")
    check(rows, [kp], complete=False)
    print(f"ok   --probe-rows 300: {nq} distinct rows, in the JSON and /bench")
    if HAS_AVX512:
        # the probe breakdown in a results file (/bench/probe_breakdown, load_h5)
        bd = os.path.join(work, "bench_breakdown.h5")
        if os.path.exists(bd):
            os.remove(bd)
        run(launcher + [exe, "bench", "--quick", "--only", "probe", "--kernels", "avx512",
                        "-o", bd])
        with h5py.File(bd, "r") as f:
            if "probe_breakdown" not in f["bench"]:
                raise SystemExit("FAIL bench -o with avx512 probe rows: no /bench/probe_breakdown")
        load_h5(bd)
        # the same file rewritten by a run without such rows: its /bench, breakdown
        # included, replaced whole
        run(launcher + [exe, "bench", "--quick", "--only", "rope", "--kernels", "ref", "-o", bd])
        with h5py.File(bd, "r") as f:
            if "probe_breakdown" in f["bench"]:
                raise SystemExit("FAIL bench -o over a file with a probe breakdown kept it")
            # (the probe shape is recorded only where probe rows were measured)
            if "probe_positions" in f["bench"].attrs:
                raise SystemExit("FAIL bench -o without probe rows wrote probe_positions")
    fresh = os.path.join(work, "bench_new.h5")
    if os.path.exists(fresh):
        os.remove(fresh)
    run(launcher + [exe, "bench", "--quick", "--kernels", "ref", "-o", fresh])
    check(load_h5(fresh), ["ref"])
    old = os.path.join(work, "bench_existing.h5")
    with h5py.File(old, "w") as f:
        f.attrs["format"] = "ropebench"
        f.attrs["format_version"] = np.int64(1)
        f.create_group("/cases/keep").attrs["complete"] = 1
    for threads in ("1", "1,all"):
        run(launcher + [exe, "bench", "--quick", "--kernels", "ref", "--threads", threads,
                        "-o", old])
        rows = load_h5(old)
        check(rows, ["ref"])
        want = {r["threads"] for r in rows}
        if threads == "1" and want != {1}:
            raise SystemExit(f"FAIL /bench threads {want}, expected only 1")
    with h5py.File(old, "r") as f:
        if "/cases/keep" not in f or f["/cases/keep"].attrs["complete"] != 1:
            raise SystemExit("FAIL bench -o lost the existing /cases group")
    print(f"ok: bench --quick --json and -o (new and existing file), kernels {kernels}")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--run":
        drive(args[1], args[2], args[3:])
        return
    if args and args[0] == "--h5":
        rows = load_h5(args[1])
        kernels = args[2].split(",")
    else:
        with open(args[0]) as f:
            rows = json_rows(load_json(f))
        kernels = args[1].split(",")
    check(rows, kernels)


def load_json(f):
    """json.load that refuses NaN, Infinity and -Infinity, which Python's json accepts but
    JSON has not: the bench writes null for a number that is not finite."""
    def refuse(tok):
        raise SystemExit(f"FAIL {f.name}: the token {tok} is not JSON (null expected)")
    return json.load(f, parse_constant=refuse)


def json_rows(rows):
    """JSON rows as check() takes them: every row carries gbps, overlap_ceiling and cv,
    null where they do not apply (causal rows' GB/s, non-probe rows' overlap, a row of
    one repetition's spread; JSON has no NaN), dropped here as the /bench reader drops
    its NaN."""
    for i, r in enumerate(rows):
        if not isinstance(r.get("peaks_implausible"), bool) or \
                r["peaks_implausible"] != rows[0].get("peaks_implausible"):
            raise SystemExit(f"FAIL JSON row {i}: peaks_implausible is "
                             f"{r.get('peaks_implausible')!r}, not the run's one true/false")
        for k in ("gbps", "overlap_ceiling", "cv"):
            if k not in r:
                raise SystemExit(f"FAIL JSON row {i}: key {k} missing (null where it does "
                                 "not apply)")
            if r[k] is None:
                del r[k]
        if r["bench"] == "causal" and "gbps" in r:
            raise SystemExit(f"FAIL JSON row {i}: a causal row's gbps is {r['gbps']!r}, "
                             "not null")
        if r["reps"] >= 2 and "cv" not in r:
            raise SystemExit(f"FAIL JSON row {i}: {r['reps']} repetitions but cv null")
        if r["reps"] < 2 and "cv" in r:
            raise SystemExit(f"FAIL JSON row {i}: one repetition but cv {r['cv']!r} (its "
                             "spread is unknown: null)")
    return rows


def check(rows, kernels, complete=True):
    """Every row's keys, rates and fractions (docs/bench.md's counting rules); with
    complete, also rows of every kind for every kernel named."""
    problems = []
    if not isinstance(rows, list) or not rows:
        raise SystemExit("FAIL: expected a non-empty array of rows")
    for i, r in enumerate(rows):
        where = f"row {i} ({r.get('kernel')} {r.get('bench')} d={r.get('head_dim')} " \
                f"L={r.get('seq_len')} t={r.get('threads')})"
        before = len(problems)
        for k in REQUIRED:
            if k not in r:
                problems.append(f"{where}: missing key {k}")
        for k in POSITIVE + (["gbps"] if "gbps" in r else []):
            v = r.get(k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or \
                    not math.isfinite(v) or v <= 0:
                problems.append(f"{where}: {k} = {v!r} is not a finite positive number")
        if len(problems) > before:
            continue
        if not isinstance(r["kernel_detail"], str) or not r["kernel_detail"].strip():
            problems.append(f"{where}: kernel_detail {r['kernel_detail']!r} is empty")
        elif r["kernel"] == "avx512_bf16" and not any(
                w in r["kernel_detail"] for w in ("AMX", "VDPBF16PS")):
            problems.append(f"{where}: kernel_detail {r['kernel_detail']!r} does not say "
                            "which bf16 path ran (AMX or VDPBF16PS)")
        if not r["min_s"] <= r["median_s"] <= r["max_s"]:
            problems.append(f"{where}: min <= median <= max violated")
        if r["bench"] == "probe":
            P = r.get("probe_positions")
            if not isinstance(P, int) or isinstance(P, bool) or not 1 <= P <= 2048:
                problems.append(f"{where}: probe_positions = {P!r} is not an integer in "
                                "[1, 2048]")
                continue
            # n_rows: the distinct rows of P log-spaced positions, recomputed here
            if r.get("n_rows") != len(probe_positions(r["seq_len"], P)):
                problems.append(f"{where}: n_rows {r.get('n_rows')!r}, but {P} log-spaced "
                                f"positions in [0, {r['seq_len'] - 1}] are "
                                f"{len(probe_positions(r['seq_len'], P))} distinct rows")
            oc = r.get("overlap_ceiling")
            if not isinstance(oc, (int, float)) or isinstance(oc, bool) or \
                    not math.isfinite(oc) or oc <= 0:
                problems.append(f"{where}: overlap_ceiling = {oc!r} is not a finite positive "
                                "number")
        elif "probe_positions" in r:
            problems.append(f"{where}: a {r['bench']} row with probe_positions")
        if r["bench"] in ("probe", "rope"):
            if "gbps" not in r:
                problems.append(f"{where}: {r['bench']} row without gbps")
                continue
            # the byte counts of docs/bench.md, recomputed: probe K+V once, rope one read
            # and one write of every row, fp32
            nbytes = 2 * r["seq_len"] * r["head_dim"] * 4
            if abs(r["gbps"] - nbytes / r["median_s"] * 1e-9) > 1e-6 * r["gbps"]:
                problems.append(f"{where}: gbps {r['gbps']} != 2 x {r['seq_len']} x "
                                f"{r['head_dim']} x 4 bytes / median_s")
            want = r["gbps"] / r["triad_gbps"]
        else:
            if "gbps" in r:
                problems.append(f"{where}: causal row with gbps")
            # causal attention counts 2 L^2 d per call (the rule)
            flop = 2.0 * r["seq_len"] ** 2 * r["head_dim"]
            if abs(r["gflops"] - flop / r["median_s"] * 1e-9) > 1e-6 * r["gflops"]:
                problems.append(f"{where}: gflops {r['gflops']} != 2 L^2 d / median_s = "
                                f"{flop / r['median_s'] * 1e-9}")
            want = r["gflops"] / r["peak_gflops"]
        if abs(r["fraction_of_peak"] - want) > 1e-6 * want:
            problems.append(f"{where}: fraction_of_peak {r['fraction_of_peak']} != {want}")
    for k in kernels if complete else []:
        for b in ("causal", "probe"):
            have = {(r["head_dim"], r["seq_len"]) for r in rows
                    if r.get("kernel") == k and r.get("bench") == b}
            need = 4 if b == "causal" else 1
            if len(have) < need:
                problems.append(f"kernel {k}: {len(have)} {b} shapes, expected {need}")
    for k in (["ref"] + [k for k in kernels if k == "avx512"]) if complete else []:
        if not any(r.get("bench") == "rope" and r.get("kernel") == k for r in rows):
            problems.append(f"no rope row for {k}")
    if problems:
        print("\n".join("FAIL " + p for p in problems))
        sys.exit(1)
    print(f"ok: {len(rows)} rows, kernels {', '.join(kernels)}")


if __name__ == "__main__":
    main()
