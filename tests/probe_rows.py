#!/usr/bin/env python3
"""probe_rows.py — which rows a probe case has: a gaussian case the same whether or not
the study also lists needle (until 2026-12-03 the needle queries were added to every
dataset's rows when needle was listed, so two files' gaussian cases of one name held
different rows), and the needle case's rows those plus its needle query positions
(negative = from the end, duplicates merged). The positions are recomputed here from
docs/config.md's rule for probe_rows.

usage: probe_rows.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import os
import subprocess
import sys

import h5py
import numpy as np

from rbtest import verdict


def log_rows(L, P):
    """docs/config.md, probe_rows: min(P, L) distinct positions, row i round(L^(i/(P-1)))-1,
    raised to one past row i-1 where it would repeat it, capped at L-P+i."""
    P = min(P, L)
    out = []
    for i in range(P):
        v = int(np.rint(L ** (i / (P - 1)) if P > 1 else L)) - 1
        if out and v <= out[-1]:
            v = out[-1] + 1
        out.append(min(v, L - P + i))
    return out


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    failed = []
    common = ["--set", "study.modes=probe", "--set", "scaling.methods=none",
              "--set", "study.heads=1", "--set", "metrics.enabled=false"]
    rows = {}
    for label, ds in (("alone", "gaussian"), ("with-needle", "gaussian,needle")):
        out = os.path.join(work, label + ".h5")
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run(mpi + ["2", exe, "run", "-q", "-c", cfg, "-o", out,
                                  "--set", "study.datasets=" + ds] + common,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            failed.append(f"{label}: exit {p.returncode}: {p.stderr[-500:]!r}")
            return verdict(failed)
        with h5py.File(out, "r") as f:
            for name, c in f["cases"].items():
                rows[(label, name)] = (int(c.attrs["seq_len"]),
                                       [int(x) for x in c["rows/position"][()]])
    with open(cfg) as f:
        text = f.read()
    # the config's probe_rows and needle query positions (small.ini's [study], [needle])
    P = int(text.split("probe_rows =")[1].split()[0])
    queries = [int(x) for x in text.split("query_positions =")[1].split()[0].split(",")]
    for (label, name), (L, got) in sorted(rows.items()):
        want = set(log_rows(L, P))
        if name.endswith("-needle"):
            want |= {q if q >= 0 else L + q for q in queries}
        if got != sorted(want):
            failed.append(f"{label} {name}: rows {got[:6]}... ({len(got)}), want "
                          f"{sorted(want)[:6]}... ({len(want)})")
    g = [v for (label, name), v in rows.items() if name.endswith("-gaussian")]
    if len(g) != 2 or g[0] != g[1]:
        failed.append("the gaussian case's rows differ with and without needle in the study")
    print(f"{len(rows)} probe cases checked")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
