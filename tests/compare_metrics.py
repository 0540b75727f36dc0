#!/usr/bin/python3
"""compare_metrics.py — the metrics of two results files of the same study (e.g. 1 and 4
ranks) must agree: analytic groups (phase/*, decay B, roformer_bound) within 1e-9 and
data-driven ones within 1e-5, as |x - y| / max(|x|, |y|, 1). Nothing is left out: the
precision key sample is a fixed set of global positions, whatever the rank count.
Values far below 1 whose computation does not depend on the ranks at all (the phase
errors, a function of the position; the score errors of the sampled keys, each
evaluated whole on one rank and reduced with MAX) must agree within 1e-9 of their own
size, |x - y| / max(|x|, |y|), so that a wrong reduction of a mean (say, of per-rank
means) cannot hide under the floor of 1; so must data-driven values that are
exponentials of scores (softmax floors, the weight at the floor, needle masses), within
1e-5 of their own size. A NaN against a number, or +inf against -inf, is a difference.
Attributes of the groups (D_leaves_zero, first_negative_B, critical_pair, the precision
sample's) are compared as datasets are. Also compared: rows/entropy_normalized.

Every case must be in both files (one missing from either fails).

usage: compare_metrics.py A.h5 B.h5     (exit 0: all agree; 1: a difference; 2: usage)
"""
import sys

import h5py
import numpy as np

GROUPS = ["entropy", "phase", "decay", "pair_share", "needles", "softmax_floor",
          "softmax_floor_by_position", "precision", "rows/entropy_normalized"]
ANALYTIC = ("phase/", "decay/by_distance/B", "decay/by_distance/roformer_bound",
            "decay/by_distance/distance", "decay/by_distance/bin_")
RELATIVE = ("precision/phase_err_max", "precision/phase_err_mean", "precision/score_err_max")
# data-driven, far below 1 where they matter, and rank-independent to the kernels' lse
# rounding (~1e-7 relative): compared relative to their own size at 1e-5
RELATIVE_DATA = ("softmax_floor/floor", "softmax_floor/min_weight_times_n",
                 "softmax_floor_by_position/min_weight_times_n", "needles/mass")


def datasets(g, prefix=""):
    """Every dataset under g by path, and every attribute as path@name."""
    out = {f"{prefix.rstrip('/')}@{a}": v for a, v in g.attrs.items()
           if not isinstance(v, (bytes, str))}
    for k, v in g.items():
        p = f"{prefix}{k}"
        if isinstance(v, h5py.Group):
            out.update(datasets(v, p + "/"))
        else:
            out[p] = v[()]
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2
    passed = failed = 0
    with h5py.File(sys.argv[1], "r") as fa, h5py.File(sys.argv[2], "r") as fb:
        # a case in B only is a difference too (B.h5 a larger study, or another one)
        for name in sorted(set(fb["cases"]) - set(fa["cases"])):
            print(f"FAIL {name}: missing in {sys.argv[1]}")
            failed += 1
        for name in sorted(fa["cases"]):
            ca, cb = fa["cases"][name], fb["cases"].get(name)
            if cb is None:
                print(f"FAIL {name}: missing in {sys.argv[2]}")
                failed += 1
                continue
            for grp in GROUPS:
                if grp not in ca:
                    if grp in cb:
                        print(f"FAIL {name}/{grp}: in {sys.argv[2]} only")
                        failed += 1
                    continue
                if isinstance(ca[grp], h5py.Dataset):
                    da, db = {grp: ca[grp][()]}, {grp: cb[grp][()]} if grp in cb else {}
                else:
                    da, db = datasets(ca[grp], grp + "/"), datasets(cb[grp], grp + "/")
                if set(da) != set(db):
                    print(f"FAIL {name}/{grp}: datasets differ {sorted(set(da) ^ set(db))}")
                    failed += 1
                    continue
                for k in sorted(da):
                    x, y = np.asarray(da[k], float), np.asarray(db[k], float)
                    tol = 1e-9 if k.startswith(ANALYTIC + RELATIVE) else 1e-5
                    floor = 0.0 if k in RELATIVE + RELATIVE_DATA else 1.0
                    if x.shape != y.shape:
                        print(f"FAIL {name}/{k}: shapes {x.shape} vs {y.shape}")
                        failed += 1
                        continue
                    same = (np.isnan(x) & np.isnan(y)) | (x == y)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        e = np.where(same, 0, np.abs(x - y) /
                                     np.maximum(np.maximum(abs(x), abs(y)), floor))
                    # NaN against a number, inf against -inf or a number: a difference
                    # (NaN > tol is False, so they passed)
                    e = np.where(np.isnan(e), np.inf, e)
                    if e.size and e.max() > tol:
                        i = np.unravel_index(np.argmax(e), e.shape)
                        print(f"FAIL {name}/{k} at {i}: {x[i]!r} vs {y[i]!r} (err {e[i]:.3g} > {tol:g})")
                        failed += 1
                    else:
                        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
