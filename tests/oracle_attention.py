#!/usr/bin/env python3
"""oracle_attention.py — recomputes RoPE and causal attention in float64 numpy from a results file's dumped inputs and checks the stored lse, entropy (and outputs).

usage: oracle_attention.py RESULTS.h5 [--rows N] [--run CMD ...]

For every complete case with /inputs, rows are sampled (the first, the last, and N
more spread over the rest). RoPE is applied independently of ropebench: angles
pos*inv_freq formed in long double and reduced mod 2*pi, pairs per the case's layout
(neox: (i, i+r/2), gptj: (2i, 2i+1)), the rotated part times attention_factor, dims
past rotary_dim unchanged. Scores are scale*<q,k> over keys at positions <= the
query's. A value passes when |stored - oracle| <= 1e-5 * max(|oracle|, 1) (outputs:
1e-5 * max(max|oracle row|, 1)). Prints "N passed, M failed" (cases); exit 0 only if
M == 0 and N > 0. With --run, CMD (e.g. mpiexec ... ropebench run --dump-inputs -o
RESULTS.h5) is run first and must succeed.
"""
import subprocess
import sys

import h5py
import numpy as np

RTOL = 1e-5


def text(v):
    if isinstance(v, (bytes, np.bytes_)):
        return v.decode("utf-8", "replace")
    return str(v)


def rope(x, pos, inv_freq, rotary_dim, layout, att):
    """x: [n, d] float64, pos: [n] int. Returns rotated copy."""
    ang = np.outer(pos.astype(np.longdouble), inv_freq.astype(np.longdouble))
    two_pi = np.longdouble("6.28318530717958647692528676655900577")
    ang = np.fmod(ang, two_pi).astype(np.float64)
    c, s = np.cos(ang), np.sin(ang)
    half = rotary_dim // 2
    y = x.copy()
    if layout == "neox":
        i1, i2 = np.arange(half), np.arange(half) + half
    elif layout == "gptj":
        i1, i2 = np.arange(half) * 2, np.arange(half) * 2 + 1
    else:
        raise ValueError("unknown layout %r" % layout)
    a, b = x[:, i1], x[:, i2]
    y[:, i1] = (a * c - b * s) * att
    y[:, i2] = (b * c + a * s) * att
    return y


def check_case(name, g, nsample, rng):
    """Returns (ok, message)."""
    at = {k: g.attrs[k] for k in g.attrs}
    layout = text(at["layout"])
    rdim = int(at["rotary_dim"])
    att = float(at["attention_factor"])
    scale = float(at["scale"])
    inv = np.asarray(g["freqs/inv_freq"][...], np.float64)
    if inv.shape != (rdim // 2,):
        return False, "freqs/inv_freq has shape %s, expected (%d,)" % (inv.shape, rdim // 2)
    pos = np.asarray(g["rows/position"][...], np.int64)
    lse = np.asarray(g["rows/lse"][...], np.float64)
    ent = np.asarray(g["rows/entropy"][...], np.float64)
    out = g["rows/output"][...] if "rows/output" in g else None
    Q, K, V = g["inputs/q"], g["inputs/k"], g["inputs/v"]
    heads, L, d = Q.shape
    n = len(pos)
    if lse.shape != (heads, n) or ent.shape != (heads, n):
        return False, "rows/lse or rows/entropy shape %s/%s, expected (%d, %d)" % (
            lse.shape, ent.shape, heads, n)
    if text(at["mode"]) == "full" and not np.array_equal(pos, np.arange(L)):
        return False, "rows/position is not 0..%d in full mode" % (L - 1)
    rows = {0, n - 1}
    if n > 2:
        rows |= set(rng.choice(np.arange(1, n - 1), min(nsample, n - 2), replace=False).tolist())
    rows = sorted(rows)
    bad = []
    for h in range(heads):
        q = np.asarray(Q[h], np.float64)
        k = np.asarray(K[h], np.float64)
        v = np.asarray(V[h], np.float64)
        allpos = np.arange(L)
        kr = rope(k, allpos, inv, rdim, layout, att)
        for i in rows:
            p = int(pos[i])
            qr = rope(q[p:p + 1], np.array([p]), inv, rdim, layout, att)[0]
            sc = scale * (kr[: p + 1] @ qr)
            m = sc.max()
            w = np.exp(sc - m)
            l = w.sum()
            ref_lse = m + np.log(l)
            ref_ent = np.log(l) - (w * (sc - m)).sum() / l
            for what, got, ref in (("lse", lse[h, i], ref_lse), ("entropy", ent[h, i], ref_ent)):
                if not abs(got - ref) <= RTOL * max(abs(ref), 1.0):
                    bad.append("rows/%s[%d][%d] (position %d) = %.12g, oracle %.12g" % (
                        what, h, i, p, got, ref))
            if out is not None:
                ref_o = (w / l) @ v[: p + 1]
                err = np.max(np.abs(out[h, i].astype(np.float64) - ref_o))
                if not err <= RTOL * max(np.max(np.abs(ref_o)), 1.0):
                    bad.append("rows/output[%d][%d] (position %d): max abs diff %.3g" % (
                        h, i, p, err))
    if bad:
        return False, "%d mismatches, first: %s" % (len(bad), bad[0])
    return True, "%d heads x %d rows checked%s" % (heads, len(rows),
                                                    " (with outputs)" if out is not None else "")


def main(argv):
    nsample = 24
    args = list(argv[1:])
    run = None
    if "--run" in args:
        i = args.index("--run")
        run, args = args[i + 1:], args[:i]
    if "--rows" in args:
        i = args.index("--rows")
        nsample = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = args[0]
    if run:
        print("running:", " ".join(run), flush=True)
        r = subprocess.run(run)
        if r.returncode != 0:
            print("oracle: command failed with exit status %d" % r.returncode)
            return 1
    rng = np.random.default_rng(20240601)
    passed = failed = skipped = 0
    with h5py.File(path, "r") as f:
        if text(f.attrs.get("format", b"")) != "ropebench":
            print("%s: not a ropebench results file" % path)
            return 1
        for name in sorted(f.get("cases", {})):
            g = f["cases"][name]
            if int(g.attrs.get("complete", 0)) != 1:
                print("skip %s: incomplete" % name)
                skipped += 1
                continue
            if "inputs" not in g:
                print("skip %s: no /inputs (run with --dump-inputs)" % name)
                skipped += 1
                continue
            try:
                ok, msg = check_case(name, g, nsample, rng)
            except (KeyError, ValueError) as e:
                ok, msg = False, "cannot check: %s" % e
            print("%s %s: %s" % ("ok  " if ok else "FAIL", name, msg))
            passed += ok
            failed += not ok
    print("%d passed, %d failed (%d skipped)" % (passed, failed, skipped))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
