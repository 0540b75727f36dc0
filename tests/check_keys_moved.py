#!/usr/bin/python3
"""check_keys_moved.py — a results file records the probe balance: every case has
timing/keys_sent and timing/keys_received (int64, one per rank), every key sent is
received once, full-mode cases move none, and with --moved some probe case moved keys
(or with --none, none did); /provenance has the environment attribute, and with
--env NAME=VALUE it holds that word.

usage: check_keys_moved.py RESULTS.h5 [--moved | --none] [--env NAME=VALUE]
"""
import sys

import h5py
import numpy as np


def main():
    path = sys.argv[1]
    want_moved = "--moved" in sys.argv
    want_none = "--none" in sys.argv
    env = sys.argv[sys.argv.index("--env") + 1] if "--env" in sys.argv else None
    bad = []
    moved = 0
    with h5py.File(path, "r") as f:
        nranks = int(f.attrs["nranks"])
        prov = f["provenance"].attrs
        if "environment" not in prov:
            bad.append("/provenance has no environment attribute")
        elif env is not None:
            words = prov["environment"]
            words = (words.decode() if isinstance(words, bytes) else words).split()
            if env not in words:
                bad.append(f"/provenance environment {words} lacks {env}")
        for name, g in f["cases"].items():
            t = g["timing"]
            if "keys_sent" not in t or "keys_received" not in t:
                bad.append(f"{name}: no timing/keys_sent or keys_received")
                continue
            s, r = t["keys_sent"], t["keys_received"]
            if s.dtype != np.int64 or r.dtype != np.int64 or s.shape != (nranks,) or \
                    r.shape != (nranks,):
                bad.append(f"{name}: keys_sent {s.dtype}{s.shape}, keys_received "
                           f"{r.dtype}{r.shape}, want int64 ({nranks},)")
                continue
            s, r = s[()], r[()]
            if (s < 0).any() or (r < 0).any() or s.sum() != r.sum():
                bad.append(f"{name}: sent {list(s)} but received {list(r)}")
            if "-full-" in name and s.sum() != 0:
                bad.append(f"{name}: a full-mode case moved {s.sum()} keys")
            moved += int(s.sum())
    if want_moved and moved == 0:
        bad.append("no case moved a key")
    if want_none and moved != 0:
        bad.append(f"{moved} keys moved, want none")
    for b in bad:
        print("FAIL", b)
    print(f"{'FAIL' if bad else 'ok  '} {path}: {moved} keys moved over all cases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
