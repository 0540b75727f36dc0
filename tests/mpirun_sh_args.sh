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
echo "$((1 - fail)) passed, $fail failed"
exit $fail
