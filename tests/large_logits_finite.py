#!/usr/bin/env python3
"""large_logits_finite.py — the metrics of a probe case whose keys score far above their
lse (yarn, attention_factor 40) stay finite: pair_share/share and decay's mean_score hold
no inf (NaN marks an empty bin and is left out); softmax_floor's ratio is a number >= 1 in
every row, +inf allowed where it truly exceeds the largest double (docs/metrics.md, 8:
e^(row_min_s - lse + ln n + 2R) past e^709), never NaN.

usage: large_logits_finite.py RESULTS.h5
"""
import sys

import h5py
import numpy as np

from rbtest import verdict


def main():
    failed = []
    with h5py.File(sys.argv[1], "r") as f:
        g = f["cases/yarn-x8-L64-probe-gaussian"]
        r = np.asarray(g["softmax_floor/ratio"], np.float64)
        if r.size == 0 or np.any(np.isnan(r)) or np.any(r < 1):
            failed.append(f"softmax_floor/ratio: {int(np.sum(np.isnan(r)))} NaN, "
                          f"{int(np.sum(r < 1))} below 1, of {r.size}")
        else:
            print(f"softmax_floor/ratio: {r.size} rows, all >= 1 "
                  f"({int(np.sum(np.isinf(r)))} beyond the largest double)")
        for k in ("pair_share/share", "decay/by_distance/mean_score"):
            v = np.asarray(g[k], np.float64)
            v = v[~np.isnan(v)]
            if v.size == 0 or not np.all(np.isfinite(v)):
                failed.append(f"{k}: {v.size} values besides NaN, "
                              f"{int(np.sum(~np.isfinite(v)))} of them not finite")
            else:
                print(f"{k}: {v.size} values, all finite")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
