#!/usr/bin/env bash
# mpirun.sh — mpirun with the flags this machine needs: --allow-run-as-root as root,
# --oversubscribe (Open MPI counts physical cores as slots: on a VM whose 2 CPUs are one
# core's two hardware threads, 2 ranks failed, and --quiet hid why), ROMIO for MPI-IO (Open MPI 4.1's ompio has
# hung in collective HDF5 writes), no CMA single-copy (unavailable in containers),
# a single-threaded OpenBLAS pool (the kernels thread with OpenMP), and --quiet, so that
# a rank's one-line error is not followed by Open MPI's banners about the exit status
# (the status itself is passed on; a rank killed by a signal is named in one line
# here). Those flags are Open MPI's: another mpirun (MPICH's, say, where
# update-alternatives points mpirun at it) gets none of them, only -n.
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
if ! command -v setsid >/dev/null 2>&1; then
  echo "mpirun.sh: no setsid on PATH (util-linux has it)" >&2
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
# mpirun runs as a child rather than exec'd, so that a rank killed by a signal can be
# named: with --quiet, Open MPI exits 128 + the signal and says nothing, and a rank
# taken by the out-of-memory killer left just "exit 137". It runs in a session of its
# own (setsid), and INT, TERM and HUP that reach this script are passed on to it once:
# in the script's process group, a terminal's Ctrl-C or hangup, or a kill of the whole
# job, reached mpirun as well as the script, and Open MPI takes a second SIGINT or
# SIGTERM as "kill the ranks now", mid-write included (a lock and a partial file were
# left, the clean stop's line never came). So Ctrl-Z stops this script, not the run,
# and a job a script starts with & has INT ignored from the start (POSIX shells start
# such jobs so; bash cannot trap it): TERM stops that one. stdin is passed on
# explicitly (a job started with & would get /dev/null).
setsid mpirun ${flags[@]+"${flags[@]}"} -n "$n" "$@" 0<&0 &
child=$!
traps=0
forward() {
  traps=$((traps + 1))
  kill -"$1" "$child" 2>/dev/null || true
}
for s in INT TERM HUP; do
  # shellcheck disable=SC2064  # $s now
  trap "forward $s" "$s"
done
while :; do
  # a trapped signal ends the wait early (128 + that signal): wait again, which returns
  # mpirun's own status once it has ended
  seen=$traps
  rc=0
  wait "$child" || rc=$?
  [ "$traps" = "$seen" ] && break
done
if [ "$traps" = 0 ] && [ "$rc" -gt 128 ] && [ "$rc" -le 192 ]; then
  sig=$((rc - 128))
  name=SIG$(kill -l "$sig" 2>/dev/null || echo "$sig")
  case "$name" in
    SIGKILL) why="; on Linux usually the out-of-memory killer (see dmesg; 'ropebench run --dry-run' gives each case's memory per rank)" ;;
    SIGILL) why="; or mpirun could not start the program (with --quiet Open MPI exits 132 then: run mpirun without this script to see why)" ;;
    *) why="" ;;
  esac
  echo "mpirun.sh: a rank (or mpirun) was killed by signal $sig ($name), exit $rc$why; cases already written stay in the results file ('ropebench run --resume' completes it)" >&2
fi
exit "$rc"
