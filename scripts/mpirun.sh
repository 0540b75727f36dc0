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
# taken by the out-of-memory killer left just "exit 137". INT, TERM and HUP sent to this
# script are passed on to mpirun (which stops the ranks as when it gets them itself),
# but not a signal mpirun has had already: mpirun shares this script's process group,
# so while that group is its terminal's foreground group, a Ctrl-C (or a hangup) went
# to mpirun too, and Open MPI takes a second SIGINT as "kill at once", mid-write
# included (a lock and a partial file were left, the clean stop's line never came).
# There INT and HUP are left to the terminal (kill -TERM the script from elsewhere).
# A job a script starts with & has INT ignored from the start, as POSIX shells do
# without job control, and bash cannot trap it: TERM stops such a job.
# stdin is passed on explicitly (a job started with & would get /dev/null).
mpirun ${flags[@]+"${flags[@]}"} -n "$n" "$@" 0<&0 &
child=$!
traps=0
# tty_foreground: whether this script's process group is its controlling terminal's
# foreground group (fields 5 and 8 of /proc/self/stat, after the command name; no
# terminal: tpgid -1), so that the terminal's INT and HUP reach mpirun by themselves
tty_foreground() {
  local st
  st=$(cat /proc/$$/stat 2>/dev/null) || return 1
  st=${st##*) }
  # shellcheck disable=SC2086  # split into the fields
  set -- $st
  [ "${6:--1}" != -1 ] && [ "$3" = "$6" ]
}
forward() {
  traps=$((traps + 1))
  if [ "$1" != TERM ] && tty_foreground; then return 0; fi
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
