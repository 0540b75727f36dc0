#!/usr/bin/env python3
"""grid_rerun.py — a case of the kernel grid rerun alone (`test_kernel_grid --case N`, as
its failure line says) must get the inputs it had in the whole grid: the inputs digest
of cases 0, 1, one in the middle and the last, run alone, must equal the whole run's.
Also a variant alone (--variant), a case past the grid (exit 1, naming the range), a
case that checked nothing (exit 1), and a malformed or repeated option (exit 2).

usage: grid_rerun.py TEST_KERNEL_GRID
"""
import re
import subprocess
import sys

from rbtest import verdict


def run(exe, *args):
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)


def digests(text):
    return dict(re.findall(r"^case (\d+): (.*inputs digest [0-9a-f]{16})$", text, re.M))


def main():
    exe = sys.argv[1]
    failed = []
    whole = run(exe, "--digest")
    if whole.returncode != 0:
        return verdict([f"the whole grid: exit {whole.returncode}: {whole.stdout[-800:]}"])
    every = digests(whole.stdout)
    n = len(every)
    if n < 100 or sorted(map(int, every)) != list(range(n)):
        return verdict([f"the whole grid printed digests of {n} cases, not 0..n-1"])
    for k in sorted({0, 1, n // 2, n - 1}):
        alone = run(exe, "--case", str(k), "--digest")
        got = digests(alone.stdout)
        if alone.returncode != 0 or got != {str(k): every[str(k)]}:
            failed.append(f"--case {k}: exit {alone.returncode}, digests {got}, in the grid "
                          f"{every[str(k)]!r}")
        elif f"case {k} of {n} run alone" not in alone.stdout:
            failed.append(f"--case {k}: no 'case {k} of {n} run alone' line")
    one = run(exe, "--case", str(n // 2), "--variant", "ref")
    if one.returncode != 0 or re.search(r"^(blas|avx512|avx512_bf16): worst", one.stdout, re.M) \
            or not re.search(r"^ref: worst", one.stdout, re.M):
        failed.append(f"--variant ref: exit {one.returncode}, other variants reported or ref "
                      f"not: {one.stdout[-400:]!r}")
    past = run(exe, "--case", str(n))
    if past.returncode != 1 or f"the grid has cases 0 to {n - 1}" not in past.stdout:
        failed.append(f"--case {n}: exit {past.returncode}: {past.stdout[-300:]!r}")
    # case 2 has sharp logits, which the bf16 bounds leave out (or bf16 is not supported
    # here): a case that checked nothing must not pass
    none = run(exe, "--case", "2", "--variant", "avx512_bf16")
    if none.returncode != 1 or "--case 2 checked nothing" not in none.stdout:
        failed.append(f"--case 2 --variant avx512_bf16: exit {none.returncode}: "
                      f"{none.stdout[-300:]!r}")
    twice = run(exe, "--variant", "ref", "--variant", "blas")
    if twice.returncode != 2 or "--variant given twice" not in twice.stderr:
        failed.append(f"--variant twice: exit {twice.returncode}: {twice.stderr!r}")
    bad = run(exe, "--case", "x")
    if bad.returncode != 2 or "--case 'x': not a case number" not in bad.stderr:
        failed.append(f"--case x: exit {bad.returncode}: {bad.stderr!r}")
    print(f"{n} cases; digests of cases run alone equal the grid's")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
