#!/usr/bin/env bash
# test.sh — install what is missing, build, and run the whole test suite with CTest:
# the default preset, then the AddressSanitizer/UBSan preset.
# usage: scripts/test.sh [default|asan|all]   (default: all)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
"$root/scripts/setup.sh"
cd "$root"
presets=(default asan)
[ "$which" != all ] && presets=("$which")
for p in "${presets[@]}"; do
  echo "== preset $p"
  cmake --preset "$p" >/dev/null
  cmake --build --preset "$p" -j"$(nproc)"
  ctest --preset "$p"
done
