#!/usr/bin/env python3
"""bench_batching.py — `ropebench bench` times calls shorter than --min-rep-time several
to a repetition (Google Benchmark's iteration sizing) and reports the time per call:
rows of microsecond calls must be batched (calls_per_rep >= 2, the calibration batches
counted in warmup), a row whose call is longer than the floor must not be, and
--warmup 0 (no warm call to size a batch from) and --min-rep-time 0 must time one call
per repetition. The table's calls column, the JSON and an -o file's /bench/calls_per_rep
must agree. One coarse check ties the per-call time to the batch: median_s x
calls_per_rep (the length of a repetition) must lie within [0.05, 20] x the floor; a
median left undivided would read calls_per_rep (hundreds here) times the floor.

usage: bench_batching.py ROPEBENCH WORKDIR [LAUNCHER...]
"""
import json
import os
import subprocess
import sys

from rbtest import verdict

FLOOR = 0.004  # --min-rep-time of the batched run, seconds


def run(exe, work, name, extra, launcher=()):
    out = os.path.join(work, name + ".json")
    cmd = list(launcher) + [exe, "bench", "--only", "causal", "--kernels", "ref",
                            "--threads", "1", "--head-dims", "2", "--reps", "3",
                            "--json", out] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(cmd)}: exit {p.returncode}: {p.stderr[-600:]}")
    with open(out) as f:
        rows = json.load(f)
    table = {}
    for line in p.stdout.splitlines():
        t = line.split()
        if line.startswith("  ref ") and len(t) == 17:
            table[int(t[4])] = int(t[7])  # L -> calls
    return rows, table


def main():
    exe, work, launcher = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    failed = []
    h5 = os.path.join(work, "batched.h5")
    if os.path.exists(h5):
        os.remove(h5)
    # L = 16: microseconds a call; L = 4096 (d = 2, the scalar reference): ~0.1 s here
    rows, table = run(exe, work, "batched", ["--lengths", "16,4096", "--min-rep-time",
                                             str(FLOOR), "-o", h5], launcher)
    by_len = {r["seq_len"]: r for r in rows}
    short, long_ = by_len.get(16), by_len.get(4096)
    if short is None or long_ is None:
        raise SystemExit(f"FAIL rows {sorted(by_len)}: expected L 16 and 4096")
    k = short.get("calls_per_rep")
    if not isinstance(k, int) or k < 2:
        failed.append(f"L=16 (a call of microseconds): calls_per_rep {k!r}, expected >= 2")
    elif short["warmup"] < 1 + k:
        failed.append(f"L=16: warmup {short['warmup']} leaves out the calibration batch of "
                      f"{k} calls (expected >= 1 + {k})")
    else:
        rep = short["median_s"] * k
        if not 0.05 * FLOOR <= rep <= 20 * FLOOR:
            failed.append(f"L=16: median_s {short['median_s']} x {k} calls = {rep} s a "
                          f"repetition, not within [0.05, 20] x the floor {FLOOR} s (the "
                          "time per call not divided by the batch?)")
    if long_.get("calls_per_rep") != 1 or long_["warmup"] != 1:
        failed.append(f"L=4096 (a call above the floor, median {long_['median_s']} s): "
                      f"calls_per_rep {long_.get('calls_per_rep')!r}, warmup "
                      f"{long_['warmup']}, expected 1 and 1")
    if table != {r["seq_len"]: r["calls_per_rep"] for r in rows}:
        failed.append(f"table calls {table} differ from the JSON's")
    if any(r.get("min_rep_time_s") != FLOOR for r in rows):
        failed.append(f"min_rep_time_s {[r.get('min_rep_time_s') for r in rows]}, not {FLOOR}")
    import h5py
    with h5py.File(h5, "r") as f:
        got = dict(zip(f["/bench/seq_len"][()].tolist(), f["/bench/calls_per_rep"][()].tolist()))
        if f["/bench"].attrs.get("min_rep_time_s") != FLOOR:
            failed.append(f"/bench attribute min_rep_time_s "
                          f"{f['/bench'].attrs.get('min_rep_time_s')!r}, not {FLOOR}")
    if got != {r["seq_len"]: r["calls_per_rep"] for r in rows}:
        failed.append(f"/bench/calls_per_rep {got} differs from the JSON's")
    for name, extra in (("cold", ["--warmup", "0"]), ("unbatched", ["--min-rep-time", "0"])):
        rows, table = run(exe, work, name, ["--lengths", "16"] + extra)
        r = rows[0]
        want_warm = 0 if name == "cold" else 1
        if r.get("calls_per_rep") != 1 or r["warmup"] != want_warm or table != {16: 1}:
            failed.append(f"{' '.join(extra)}: calls_per_rep {r.get('calls_per_rep')!r} "
                          f"(table {table}), warmup {r['warmup']}; expected 1 and "
                          f"{want_warm}")
    print(f"L=16: {k} calls a repetition, {short['median_s']:.3g} s a call; L=4096: "
          f"{long_['median_s']:.3g} s, 1 call")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
