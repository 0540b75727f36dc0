#!/usr/bin/env python3
"""bench_rope_name.py — `ropebench bench` names the fast RoPE row by its own variant,
avx512, also when only avx512_bf16 (which brings the same RoPE) is listed: comparisons
match rows by name. Skipped (exit 77) on a CPU without AVX512_BF16.

usage: bench_rope_name.py ROPEBENCH
"""
import re
import subprocess
import sys

from rbtest import verdict


def main():
    with open("/proc/cpuinfo") as f:
        if not re.search(r"\bavx512_bf16\b", f.read()):
            print("no AVX512_BF16 on this CPU: skipped")
            return 77
    p = subprocess.run([sys.argv[1], "bench", "--quick", "--only", "rope", "--kernels",
                        "avx512_bf16", "--threads", "1"], capture_output=True, text=True,
                       timeout=300)
    rows = [l.split()[:3] for l in p.stdout.splitlines() if l.strip() and not l.startswith("#")]
    failed = []
    if p.returncode != 0:
        failed.append(f"exit {p.returncode}: {p.stderr[-300:]!r}")
    elif sorted(r[0] for r in rows) != ["avx512", "ref"] or any(r[2] != "rope" for r in rows):
        failed.append(f"rows {rows}: want a ref and an avx512 rope row")
    else:
        print(f"rows {rows}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
