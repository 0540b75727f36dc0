#!/usr/bin/env python3
"""freqs_known.py — `ropebench freqs` prints the issue's known values (head_dim 128,
base 10000 unless said): YaRN s=10, L0=2048: range (16, 41), inv_freq[17] = 8.3479e-2,
inv_freq[40] = 4.3007e-4, inv_freq[41..63] = default/10, attention factor 1.2302585;
NTK-aware s=8: base 82684.62; dynamic NTK s=8, L0=4096, L=16384: base 263105.26;
Llama 3 (base 500000, s=8, low 1, high 4, L0=8192): pairs 0-28 unchanged, >= 35 / 8.
Error metric: relative error, 5e-5 for 5-digit values, 1e-12 for exact ratios.

usage: freqs_known.py ROPEBENCH
"""
import re
import subprocess
import sys

EXE = sys.argv[1]
passed = failed = 0


def freqs(*args):
    out = subprocess.run([EXE, "freqs", *args], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise SystemExit(f"freqs {args} failed: {out.stderr}")
    head = "\n".join(l for l in out.stdout.splitlines() if l.startswith("#"))
    rows = [l.split() for l in out.stdout.splitlines() if not l.startswith("#")]
    return head, {int(r[0]): (float(r[1]), float(r[2]), float(r[3])) for r in rows}


def check(what, got, want, rtol):
    global passed, failed
    err = abs(got - want) / abs(want)
    if err <= rtol:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}: got {got!r}, want {want!r} (rel {err:.3g} > {rtol:g})")


head, t = freqs("--method", "yarn", "--factor", "10", "--original-ctx", "2048")
m = re.search(r"attention_factor ([0-9.]+), correction range \[([0-9.]+), ([0-9.]+)\]", head)
check("yarn attention factor", float(m.group(1)), 1.2302585, 5e-8)
check("yarn corr low", float(m.group(2)), 16, 0)
check("yarn corr high", float(m.group(3)), 41, 0)
check("yarn inv_freq[17]", t[17][0], 8.3479e-2, 5e-5)
check("yarn inv_freq[40]", t[40][0], 4.3007e-4, 5e-5)
for j in range(41, 64):
    check(f"yarn ratio[{j}]", t[j][2], 0.1, 1e-12)
for j in range(0, 16):
    check(f"yarn ratio[{j}]", t[j][2], 1.0, 1e-12)

head, _ = freqs("--method", "ntk", "--factor", "8")
check("ntk base", float(re.search(r"base_used ([0-9.e+]+)", head).group(1)), 82684.62, 5e-8)
head, _ = freqs("--method", "dynamic_ntk", "--factor", "8", "--original-ctx", "4096",
                "--seq-len", "16384")
check("dynamic base", float(re.search(r"base_used ([0-9.e+]+)", head).group(1)),
      263105.26, 5e-8)
_, t = freqs("--method", "llama3", "--factor", "8", "--base", "500000", "--original-ctx",
             "8192", "--set", "scaling.low_freq_factor=1", "--set", "scaling.high_freq_factor=4")
for j in range(0, 29):
    check(f"llama3 ratio[{j}]", t[j][2], 1.0, 1e-12)
for j in range(35, 64):
    check(f"llama3 ratio[{j}]", t[j][2], 0.125, 1e-12)
for j in range(29, 35):  # the smooth band lies strictly between
    if not 0.125 < t[j][2] < 1.0:
        failed += 1
        print(f"FAIL llama3 ratio[{j}] = {t[j][2]} not inside (1/8, 1)")
    else:
        passed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
