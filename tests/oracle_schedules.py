#!/usr/bin/python3
# oracle_schedules.py — an independent float64 numpy implementation of Hugging Face
# transformers' modeling_rope_utils RoPE schedules, compared with dump_schedule.
"""Compare every RoPE method of ropebench with the HF formulas in float64.

Usage: oracle_schedules.py /path/to/dump_schedule

The grid covers every method, both YaRN truncate settings, mscale/mscale_all_dim,
explicit attention factors, partial rotary (dim = int(head_dim * partial_rotary_factor),
as HF derives it), several bases, factors, original contexts and sequence lengths.
inv_freq, the attention factor and (where defined) the effective base and the YaRN
correction range must agree to 1e-12 relative. Exit status 1 on any mismatch.
"""
import itertools
import math
import subprocess
import sys

import numpy as np

REL_TOL = 1e-12


# ---- the HF formulas, float64 ----------------------------------------------------

def hf_default(base, dim):
    return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim))


def hf_schedule(c):
    """Return (inv_freq, attention_factor, base_used, corr_low, corr_high)."""
    m, dim, base, f = c["method"], c["dim"], c["base"], c["factor"]
    orig = c["orig"]
    if m == "none":
        return hf_default(base, dim), 1.0, base, 0.0, 0.0
    if m == "pi":  # HF "linear"
        return hf_default(base, dim) / f, 1.0, base, 0.0, 0.0
    if m == "ntk":
        b = base * f ** (dim / (dim - 2))
        return hf_default(b, dim), 1.0, b, 0.0, 0.0
    if m == "dynamic_ntk":  # HF "dynamic"
        seq = c["seq_len"]
        seq = seq if seq is not None and seq > orig else orig
        b = base * ((f * seq / orig) - (f - 1)) ** (dim / (dim - 2))
        return hf_default(b, dim), 1.0, b, 0.0, 0.0
    if m == "yarn":
        def get_mscale(scale, mscale=1.0):
            if scale <= 1:
                return 1.0
            return 0.1 * mscale * math.log(scale) + 1.0

        af = c.get("attention_factor")
        ms, msa = c.get("mscale"), c.get("mscale_all_dim")
        if af is None:
            if ms and msa:
                af = float(get_mscale(f, ms) / get_mscale(f, msa))
            else:
                af = get_mscale(f)
        beta_fast = c.get("beta_fast") or 32
        beta_slow = c.get("beta_slow") or 1

        def corr_dim(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

        low, high = corr_dim(beta_fast), corr_dim(beta_slow)
        if c["truncate"]:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        lo_r, hi_r = low, high
        if lo_r == hi_r:
            hi_r += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - lo_r) / (hi_r - lo_r), 0, 1)
        pos_freqs = base ** (np.arange(0, dim, 2).astype(np.float64) / dim)
        extrap = 1.0 / pos_freqs
        interp = 1.0 / (f * pos_freqs)
        extrap_factor = 1 - ramp
        inv = interp * (1 - extrap_factor) + extrap * extrap_factor
        return inv, af, base, float(low), float(high)
    if m == "llama3":
        inv = hf_default(base, dim)
        lff, hff = c["low_freq_factor"], c["high_freq_factor"]
        low_wl, high_wl = orig / lff, orig / hff
        wavelen = 2 * math.pi / inv
        out = np.where(wavelen > low_wl, inv / f, inv)
        smooth = (orig / wavelen - lff) / (hff - lff)
        smoothed = (1 - smooth) * out / f + smooth * out
        medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
        return np.where(medium, smoothed, out), 1.0, base, 0.0, 0.0
    if m == "longrope":
        af = c.get("attention_factor")
        if af is None:
            af = 1.0 if f <= 1.0 else math.sqrt(1 + math.log(f) / math.log(orig))
        seq = c["seq_len"] or 0
        ext = np.array(c["long_factor"] if seq > orig else c["short_factor"], dtype=np.float64)
        shape = np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim
        return 1.0 / (ext * base ** shape), af, base, 0.0, 0.0
    raise ValueError(m)


# ---- the grid ---------------------------------------------------------------------

def grid():
    rng = np.random.default_rng(20240601)
    dims = []
    for head_dim, prf in itertools.product([64, 128, 256], [1.0, 0.5, 0.25]):
        dims.append((head_dim, prf, int(head_dim * prf)))
    dims.append((80, 0.4, 32))  # e.g. a partial-rotary head (phi-like)
    bases = [10000.0, 500000.0, 1000000.0]
    factors = [1.0, 2.0, 4.0, 8.0, 10.0, 16.0, 40.0]
    origs = [2048, 4096, 8192]
    for (head_dim, prf, dim), base, f, orig in itertools.product(dims, bases, factors, origs):
        common = dict(head_dim=head_dim, prf=prf, dim=dim, base=base, factor=f, orig=orig)
        for m in ["none", "pi", "ntk"]:
            yield dict(common, method=m)
        for seq in [None, orig // 2, orig, 4 * orig, 1048576]:
            yield dict(common, method="dynamic_ntk", seq_len=seq)
        for trunc in [True, False]:
            for bf, bs in [(None, None), (16.0, 2.0)]:
                yield dict(common, method="yarn", truncate=trunc, beta_fast=bf, beta_slow=bs)
            for ms, msa in [(1.0, None), (1.0, 1.0), (0.707, 1.0), (1.0, 0.5)]:
                yield dict(common, method="yarn", truncate=trunc, mscale=ms, mscale_all_dim=msa)
            yield dict(common, method="yarn", truncate=trunc, attention_factor=1.1)
        for lff, hff in [(1.0, 4.0), (2.0, 8.0), (0.5, 1.5)]:
            yield dict(common, method="llama3", low_freq_factor=lff, high_freq_factor=hff)
        sf = list(1.0 + 0.1 * rng.random(dim // 2))
        lf = list(1.0 + f * rng.random(dim // 2))
        for seq in [None, orig, orig + 1, 16 * orig]:
            yield dict(common, method="longrope", seq_len=seq, short_factor=sf, long_factor=lf)
        yield dict(common, method="longrope", seq_len=2 * orig, short_factor=sf,
                   long_factor=lf, attention_factor=1.3)


def to_args(c):
    a = ["--method", c["method"], "--rotary-dim", str(c["dim"]), "--base", repr(c["base"]),
         "--factor", repr(c["factor"]), "--original-ctx", str(c["orig"])]
    if c.get("seq_len") is not None:
        a += ["--seq-len", str(c["seq_len"])]
    if c["method"] == "yarn":
        a += ["--truncate", "1" if c["truncate"] else "0"]
    for key, opt in [("beta_fast", "--beta-fast"), ("beta_slow", "--beta-slow"),
                     ("mscale", "--mscale"), ("mscale_all_dim", "--mscale-all-dim"),
                     ("attention_factor", "--attention-factor"),
                     ("low_freq_factor", "--low-freq-factor"),
                     ("high_freq_factor", "--high-freq-factor")]:
        if c.get(key) is not None:
            a += [opt, repr(float(c[key]))]
    for key, opt in [("short_factor", "--short-factor"), ("long_factor", "--long-factor")]:
        if c.get(key) is not None:
            a += [opt, ",".join(repr(float(x)) for x in c[key])]
    return a


def parse_blocks(text):
    blocks, cur = [], {"inv": {}}
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if parts[0] == "end":
            blocks.append(cur)
            cur = {"inv": {}}
        elif parts[0] == "error":
            cur["error"] = line[6:]
        elif parts[0] == "inv_freq":
            cur["inv"][int(parts[1])] = float(parts[2])
        else:
            cur[parts[0]] = float(parts[1])
    return blocks


def rel(a, b):
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def main():
    if len(sys.argv) != 2:
        print("usage: oracle_schedules.py /path/to/dump_schedule", file=sys.stderr)
        return 2
    exe = sys.argv[1]
    cases = list(grid())
    lines = "\n".join(" ".join(to_args(c)) for c in cases) + "\n"
    proc = subprocess.run([exe, "--batch"], input=lines, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"FAIL: {exe} --batch exited with {proc.returncode}: {proc.stderr.strip()}")
        print("0 passed, 1 failed")
        return 1
    blocks = parse_blocks(proc.stdout)
    passed = failed = 0
    printed = 0
    worst = 0.0

    def report(c, msg):
        nonlocal printed
        if printed < 40:
            printed += 1
            print(f"FAIL: {msg}\n      case: head_dim={c['head_dim']} "
                  f"partial_rotary_factor={c['prf']} args: {' '.join(to_args(c))[:300]}")

    if len(blocks) != len(cases):
        print(f"FAIL: dump_schedule printed {len(blocks)} results for {len(cases)} cases")
        print(f"{passed} passed, {failed + 1} failed")
        return 1
    per_method = {}
    for c, b in zip(cases, blocks):
        if "error" in b:
            report(c, f"dump_schedule rejected a valid case: {b['error']}")
            failed += 1
            continue
        inv, af, base_used, lo, hi = hf_schedule(c)
        ok = True
        n = c["dim"] // 2
        if len(b["inv"]) != n:
            report(c, f"{len(b['inv'])} inv_freq entries, want {n}")
            failed += 1
            continue
        for j in range(n):
            r = rel(b["inv"][j], float(inv[j]))
            worst = max(worst, r)
            per_method[c["method"]] = max(per_method.get(c["method"], 0.0), r)
            if not r <= REL_TOL:
                ok = False
                report(c, f"inv_freq[{j}] = {b['inv'][j]!r}, HF formula {float(inv[j])!r} "
                        f"(rel {r:.3g})")
                break
        checks = [("attention_factor", af)]
        if c["method"] in ("ntk", "dynamic_ntk"):
            checks.append(("base_used", base_used))
        if c["method"] == "yarn":
            checks += [("corr_low", lo), ("corr_high", hi)]
        for key, want in checks:
            r = rel(b[key], want)
            if not r <= REL_TOL:
                ok = False
                report(c, f"{key} = {b[key]!r}, HF formula {want!r} (rel {r:.3g})")
        if ok:
            passed += 1
        else:
            failed += 1
    # the oracle itself must be able to fail: a perturbed result must be caught
    sanity = dict(cases[0])
    inv0 = hf_schedule(sanity)[0]
    if rel(float(inv0[1]) * (1 + 1e-11), float(inv0[1])) <= REL_TOL:
        report(sanity, "oracle self-check: a 1e-11 perturbation was not detected")
        failed += 1
    else:
        passed += 1
    for m, r in sorted(per_method.items()):
        print(f"  {m:12s} max rel diff to HF formula: {r:.3g}")
    print(f"{len(cases)} schedules compared, max rel diff {worst:.3g} (tolerance {REL_TOL})")
    print(f"oracle_schedules: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
