#!/usr/bin/env python3
"""docs_keys.py — every key of the resolved study (`ropebench run --dry-run`) must be
documented in docs/config.md, under its section, with its default.

usage: docs_keys.py ROPEBENCH DOCS/config.md
"""
import re
import subprocess
import sys


def main():
    exe, doc = sys.argv[1], sys.argv[2]
    out = subprocess.run([exe, "run", "--dry-run"], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        print("FAIL: --dry-run exited", out.returncode, out.stderr)
        print("0 passed, 1 failed")
        return 1
    text = open(doc, encoding="utf-8").read()
    sections = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"## \[(\w+)\]", line)
        if m:
            cur = m.group(1)
        m = re.match(r"\| `(\w+)` \| ([^|]*) \|", line)
        if m and cur:
            sections.setdefault(cur, {})[m.group(1)] = m.group(2).strip()
    passed = failed = 0
    sec = None
    for line in out.stdout.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"\[(\w+)\]", line)
        if m:
            sec = m.group(1)
            continue
        m = re.match(r"(\w+) = (.*)", line)
        if not m:
            continue
        key, val = m.group(1), m.group(2).strip()
        doc_default = sections.get(sec, {}).get(key)
        if doc_default is None:
            print(f"FAIL: {sec}.{key} is not documented in {doc}")
            failed += 1
        elif doc_default.strip("`") != val and not (val == "" and "empty" in doc_default):
            print(f"FAIL: {sec}.{key}: default {val!r} but docs say {doc_default!r}")
            failed += 1
        else:
            passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
