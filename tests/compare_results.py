#!/usr/bin/python3
"""compare_results.py — two results files must hold the same cases with the same rows:
positions equal, lse and entropy within RTOL (default 1e-6) of |x - y| / max(|x|, |y|,
FLOOR) (FLOOR default 0: plain relative error; 1 makes it absolute near 0), outputs
(when both stored them) within OTOL (default 1e-5) relative to the row's largest
|output|.

usage: compare_results.py REFERENCE.h5 OTHER.h5 [--rtol 1e-6] [--etol RTOL] [--floor 0]
                          [--otol 1e-5]
  --etol: separate tolerance for entropy (default: RTOL)
"""
import sys

import h5py
import numpy as np


def rel_err(a, b, floor=0.0):
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), max(floor, 1e-300))
    d = np.where(a == b, 0.0, np.abs(a - b) / scale)  # equal infinities are equal
    # a NaN on either side (or both: NaN is no result) is an infinite error, so that
    # `e.max() > tol` cannot pass it (NaN > tol is False)
    return np.where(np.isnan(d) | np.isnan(a) | np.isnan(b), np.inf, d)


def parse(argv):
    """(ref, other, {option: value}) from argv, or a usage error's text: two file names
    and any of the four options, each with a non-negative number, in any order."""
    files, opts, i = [], {}, 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if a not in ("--rtol", "--etol", "--floor", "--otol"):
                return f"unknown option {a}"
            if a in opts:
                return f"{a} given twice"
            try:
                v = float(argv[i + 1])
            except (IndexError, ValueError):
                return f"{a} needs a number"
            if not v >= 0:
                return f"{a} {argv[i + 1]}: not a non-negative number"
            opts[a] = v
            i += 2
        else:
            files.append(a)
            i += 1
    if len(files) != 2:
        return f"two results files expected, got {len(files)}"
    return files[0], files[1], opts


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    args = parse(sys.argv[1:])
    if isinstance(args, str):
        print(f"compare_results.py: {args}\n\n{__doc__.strip()}", file=sys.stderr)
        return 2
    ref_path, other_path, opts = args
    rtol = opts.get("--rtol", 1e-6)
    etol = opts.get("--etol", rtol)
    floor = opts.get("--floor", 0.0)
    otol = opts.get("--otol", 1e-5)
    passed = failed = 0
    with h5py.File(ref_path, "r") as ref, h5py.File(other_path, "r") as oth:
        names = sorted(ref["cases"].keys())
        if sorted(oth["cases"].keys()) != names:
            print(f"FAIL: case lists differ: {names} vs {sorted(oth['cases'].keys())}")
            print("0 passed, 1 failed")
            return 1
        for name in names:
            a, b = ref["cases"][name], oth["cases"][name]
            if a.attrs.get("complete") != 1 or b.attrs.get("complete") != 1:
                print(f"FAIL {name}: not complete in both files")
                failed += 1
                continue
            pa, pb = a["rows/position"][()], b["rows/position"][()]
            if not np.array_equal(pa, pb):
                print(f"FAIL {name}: positions differ")
                failed += 1
                continue
            for key, tol in (("lse", rtol), ("entropy", etol)):
                x, y = a["rows/" + key][()], b["rows/" + key][()]
                e = rel_err(x, y, floor)
                if e.max() > tol:
                    h, i = np.unravel_index(np.argmax(e), e.shape)
                    print(f"FAIL {name} {key}: head {h} row {i} position {pa[i]}: "
                          f"{x[h, i]!r} vs {y[h, i]!r} (rel {e[h, i]:.3g} > {tol:g})")
                    failed += 1
                else:
                    passed += 1
            if "rows/output" in a and "rows/output" in b:
                x = a["rows/output"][()].astype(np.float64)
                y = b["rows/output"][()].astype(np.float64)
                s = np.maximum(np.abs(x).max(axis=2, keepdims=True), 1e-30)
                e = np.abs(x - y) / s
                e = np.where(np.isnan(e) | np.isnan(x) | np.isnan(y), np.inf, e)
                if e.max() > otol:
                    h, i, k = np.unravel_index(np.argmax(e), e.shape)
                    print(f"FAIL {name} output: head {h} row {i} dim {k}: rel {e.max():.3g}")
                    failed += 1
                else:
                    passed += 1
    print(f"compared {ref_path} and {other_path}: lse {rtol:g}, entropy {etol:g}, "
          f"floor {floor:g}, outputs {otol:g}")
    if passed + failed == 0:
        print("FAIL: no case to compare")
        failed = 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
