#!/usr/bin/env bash
# test.sh — install what is missing, build, and run the whole test suite with CTest:
# the default preset, then the AddressSanitizer/UBSan preset.
# usage: scripts/test.sh [default|asan|all]   (default: all)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
case "$which" in
  default|asan|all) ;;
  *) echo "usage: scripts/test.sh [default|asan|all]" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: scripts/test.sh [default|asan|all]" >&2; exit 2; }
"$root/scripts/setup.sh"
cd "$root"
presets=(default asan)
[ "$which" != all ] && presets=("$which")
for p in "${presets[@]}"; do
  echo "== preset $p"
  cmake --preset "$p" >/dev/null
  cmake --build --preset "$p" -j"$(nproc)"
  # GCC 12's AddressSanitizer crashes at random (AddressSanitizer:DEADLYSIGNAL) where
  # the kernel randomises mmap with more than 28 bits (recent Ubuntu hosts): the asan
  # preset then runs without address-space randomisation
  bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)
  if [ "$p" = asan ] && [ "$bits" -gt 28 ] && command -v setarch >/dev/null; then
    # a container whose seccomp profile refuses personality(ADDR_NO_RANDOMIZE) cannot
    # do this: say so, and what would let it, rather than fail on setarch's own line
    if ! setarch "$(uname -m)" -R true 2>/dev/null; then
      echo "test.sh: the asan preset needs address-space randomisation off here (vm.mmap_rnd_bits = $bits > 28), and setarch -R is not permitted (a container's seccomp profile?): lower vm.mmap_rnd_bits to 28 on the host, or allow personality() (docker: --security-opt seccomp=unconfined)" >&2
      exit 1
    fi
    setarch "$(uname -m)" -R ctest --preset "$p"
  else
    ctest --preset "$p"
  fi
done
