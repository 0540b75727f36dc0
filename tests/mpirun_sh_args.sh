#!/usr/bin/env bash
# mpirun_sh_args.sh — scripts/mpirun.sh refuses a rank count that is not a whole number
# >= 1 (mpirun read -n 0 as "every slot", and junk ended in a bash error and Open MPI's
# banner) and a missing program: one line, exit 2, nothing run.
# usage: mpirun_sh_args.sh path/to/mpirun.sh
s=$1
fail=0
for n in 0 abc 01 -1 1.5; do
  out=$("$s" "$n" /bin/echo ran 2>&1); rc=$?
  want="mpirun.sh: NRANKS must be a whole number from 1, got '$n'"
  if [ "$rc" != 2 ] || [ "$out" != "$want" ]; then
    echo "FAIL: mpirun.sh $n: exit $rc, output '$out' (want exit 2, '$want')"; fail=1
  fi
done
for args in "" "2"; do
  # shellcheck disable=SC2086
  out=$("$s" $args 2>&1); rc=$?
  want="mpirun.sh: usage: scripts/mpirun.sh NRANKS program args..."
  if [ "$rc" != 2 ] || [ "$out" != "$want" ]; then
    echo "FAIL: mpirun.sh $args: exit $rc, output '$out' (want exit 2, '$want')"; fail=1
  fi
done
# an mpirun that is not Open MPI (MPICH's, as update-alternatives may pick) gets only
# -n, not Open MPI's --quiet/--oversubscribe/--allow-run-as-root, which it would refuse;
# Open MPI's gets them. A stand-in mpirun on PATH prints what it was given.
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
for kind in mpich openmpi; do
  if [ "$kind" = mpich ]; then banner="HYDRA build details:"; else banner="mpirun (Open MPI) 4.1.4"; fi
  printf '#!/bin/sh\nif [ "$1" = --version ]; then echo "%s"; exit 0; fi\necho "args: $*"\n' \
    "$banner" > "$fake/mpirun"
  chmod +x "$fake/mpirun"
  out=$(PATH="$fake:$PATH" "$s" 3 /bin/echo hi 2>&1); rc=$?
  case "$kind" in
    mpich) want="args: -n 3 /bin/echo hi" ;;
    openmpi) want="args: --quiet$( [ "$(id -u)" = 0 ] && echo " --allow-run-as-root") --oversubscribe -n 3 /bin/echo hi" ;;
  esac
  if [ "$rc" != 0 ] || [ "$out" != "$want" ]; then
    echo "FAIL: mpirun.sh with $kind's mpirun: exit $rc, '$out' (want '$want')"; fail=1
  fi
done
echo "$((1 - fail)) passed, $fail failed"
exit $fail
