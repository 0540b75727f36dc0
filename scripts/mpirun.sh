#!/usr/bin/env bash
# mpirun.sh — mpirun with the flags this machine needs: --allow-run-as-root as root,
# --oversubscribe (Open MPI counts physical cores as slots: on a VM whose 2 CPUs are one
# core's two hardware threads, 2 ranks failed, and --quiet hid why), ROMIO for MPI-IO (Open MPI 4.1's ompio has
# hung in collective HDF5 writes), no CMA single-copy (unavailable in containers),
# a single-threaded OpenBLAS pool (the kernels thread with OpenMP), and --quiet, so that
# a rank's one-line error is not followed by Open MPI's banners about the exit status
# (the status itself is passed on). Those flags are Open MPI's: another mpirun (MPICH's,
# say, where update-alternatives points mpirun at it) gets none of them, only -n.
# usage: scripts/mpirun.sh NRANKS program args...
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "mpirun.sh: usage: scripts/mpirun.sh NRANKS program args..." >&2
  exit 2
fi
if ! [[ $1 =~ ^[1-9][0-9]{0,5}$ ]]; then
  # mpirun reads -n 0 as "every slot": a typo would run on every core
  echo "mpirun.sh: NRANKS must be a whole number from 1, got '$1'" >&2
  exit 2
fi
n=$1; shift
# --quiet hides mpirun's own "unable to launch" too (it exited 132, as if an illegal
# instruction): a program that is not there is named here
if ! command -v "$1" >/dev/null 2>&1; then
  echo "mpirun.sh: '$1': no such program (build it first, or give its path)" >&2
  exit 2
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "mpirun.sh: no mpirun on PATH (scripts/setup.sh installs Open MPI)" >&2
  exit 2
fi
flags=()
if mpirun --version 2>/dev/null | grep -qE "Open MPI|OpenRTE"; then
  flags=(--quiet)
  [ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
  flags+=(--oversubscribe)
fi
export OMPI_MCA_io=${OMPI_MCA_io:-romio321}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
exec mpirun ${flags[@]+"${flags[@]}"} -n "$n" "$@"
