#!/usr/bin/env python3
"""bench_rows_count.py — `ropebench bench` with more rows than its first row buffer held
(256 until 2026-12-02, when rows past it were dropped with exit 0): 2 kernels x 4
head_dims x 4 lengths x 8 thread counts = 256 causal rows, then the RoPE rows of every
thread count. Every row the options ask for must be in the JSON, once.

usage: bench_rows_count.py ROPEBENCH WORKDIR
"""
import collections
import json
import os
import subprocess
import sys

from rbtest import verdict


def main():
    exe, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "many_rows.json")
    threads = [1, 2, 3, 4, 5, 6, 7, 8]
    dims, lens = [2, 4, 6, 8], [16, 32, 48, 64]
    cmd = [exe, "bench", "--quick", "--only", "causal,rope", "--kernels", "ref,blas",
           "--threads", ",".join(map(str, threads)), "--head-dims", ",".join(map(str, dims)),
           "--lengths", ",".join(map(str, lens)), "--json", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, OMP_THREAD_LIMIT="8"))
    failed = []
    if p.returncode != 0:
        failed.append(f"exit {p.returncode}: {p.stderr[-600:]!r}")
        return verdict(failed)
    doc = json.load(open(out))
    rows = doc["rows"] if isinstance(doc, dict) else doc
    causal = collections.Counter((r["kernel"], r["head_dim"], r["seq_len"], r["threads"])
                                 for r in rows if r["bench"] == "causal")
    want = {(k, d, L, t) for k in ("ref", "blas") for d in dims for L in lens for t in threads}
    if set(causal) != want or any(n != 1 for n in causal.values()):
        failed.append(f"causal rows: {len(causal)} distinct of {len(want)} asked "
                      f"({sum(causal.values())} in all); missing e.g. "
                      f"{sorted(want - set(causal))[:3]}")
    rope = collections.Counter((r["kernel"], r["threads"]) for r in rows
                               if r["bench"] == "rope")
    variants = {k for k, _ in rope}
    if "ref" not in variants or set(rope) != {(k, t) for k in variants for t in threads} or \
            any(n != 1 for n in rope.values()):
        failed.append(f"rope rows {sorted(rope)}: expected each variant once per thread count")
    print(f"{len(rows)} rows: {sum(causal.values())} causal, {sum(rope.values())} rope "
          f"({', '.join(sorted(variants))})")
    # more threads than cores cannot do more FMAs than the cores (until 2026-12-02 the
    # peak summed every thread's best window: 16 threads on 2 cores read 3.3x 2 cores);
    # the per-core rate is the best of the counts that fit the cores
    cores = os.cpu_count() or 1
    peak = {r["threads"]: r["peak_gflops"] for r in rows}
    fit = [peak[t] / t for t in threads if t <= cores]
    over = {t: peak[t] for t in threads if t > cores}
    if over:
        bound = 1.25 * cores * max(fit)
        print(f"peak FMA: {max(fit):.1f} GFLOP/s per core at most, over the cores' count: "
              + ", ".join(f"{t} threads {v:.1f}" for t, v in sorted(over.items()))
              + f" (bound {bound:.1f})")
        failed += [f"peak of {t} threads {v:.1f} GFLOP/s > 1.25 x {cores} cores x "
                   f"{max(fit):.1f}" for t, v in sorted(over.items()) if v > bound]
    else:
        print(f"peak FMA above the cores: not checked here ({cores} cores >= 8 threads)")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
