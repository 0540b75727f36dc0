#!/usr/bin/env bash
# setup.sh — install the Debian packages ropebench needs (only those missing).
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config git
      openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
      libopenblas-dev libhwloc-dev librandom123-dev libmpfr-dev
      gnuplot-nox python3 python3-numpy python3-h5py)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "setup: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
# (through env: sudo's env_reset would drop an exported DEBIAN_FRONTEND, and a package
# that asks a question would then wait for an answer no one gives)
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
