#!/usr/bin/python3
"""sha256_oracle.py — runs dump_sha256 (reports/report_sha256.c on files of lengths
around the padding edges) and checks every digest against Python's hashlib, the
independent implementation. Error metric: the 64 hex digits, equal or not.

usage: sha256_oracle.py DUMP_SHA256 SCRATCH_FILE
"""
import hashlib
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    p = subprocess.run(sys.argv[1:3], capture_output=True, text=True)
    bad = 0
    lines = p.stdout.splitlines()
    for line in lines:
        if line.startswith("FAIL"):
            print(line)
            bad += 1
            continue
        n, hexd = line.split()
        data = bytes((j * 31 + 7) & 0xFF for j in range(int(n)))
        want = hashlib.sha256(data).hexdigest()
        if hexd != want:
            print(f"FAIL length {n}: {hexd}, hashlib {want}")
            bad += 1
    if p.returncode != 0 or len(lines) < 12:
        print(f"FAIL dump_sha256 exit {p.returncode}, {len(lines)} lines: {p.stderr}")
        bad += 1
    print(f"{len(lines) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
