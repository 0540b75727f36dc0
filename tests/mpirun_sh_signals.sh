#!/usr/bin/env bash
# mpirun_sh_signals.sh — scripts/mpirun.sh through the real mpirun: a rank killed by a
# signal is named in one line (Open MPI's --quiet said nothing: a rank taken by the
# out-of-memory killer left only "exit 137"), a rank's own exit status passes through
# without that line, stdin reaches rank 0, and TERM, INT or HUP sent to the script
# reaches mpirun, which stops the ranks: the script ends within seconds, no rank left.
# usage: mpirun_sh_signals.sh path/to/mpirun.sh python3
s=$1
py=$2
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

# a rank that kills itself with signal $SIG (rank 1; rank 0 waits to be stopped)
cat > "$work/die.sh" <<'EOF'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 1 ]; then kill -"$SIG" $$; fi
sleep 20
EOF
chmod +x "$work/die.sh"
for case in "KILL 137 out-of-memory killer" "SEGV 139 "; do
  read -r sig want hint <<< "$case"
  out=$(SIG=$sig timeout 60 "$s" 2 "$work/die.sh" 2>&1); rc=$?
  line="mpirun.sh: a rank (or mpirun) was killed by signal $((want - 128)) (SIG$sig), exit $want"
  if [ "$rc" != "$want" ]; then bad "rank killed by SIG$sig: exit $rc (want $want); output '$out'"; fi
  if [ "$(printf '%s\n' "$out" | grep -c .)" != 1 ] || [[ $out != "$line"* ]] ||
     [[ $out != *"ropebench run --resume"* ]] || [[ $out != *"$hint"* ]]; then
    bad "rank killed by SIG$sig: output '$out' (want one line starting '$line', naming '$hint' and --resume)"
  fi
done

# a rank's own failure: its status, no line from the script
out=$(timeout 60 "$s" 2 bash -c 'exit 2' 2>&1); rc=$?
[ "$rc" = 2 ] && [ -z "$out" ] || bad "ranks exiting 2: exit $rc, output '$out' (want 2, nothing)"

# stdin goes to rank 0 (a job started with & gets /dev/null unless told otherwise)
out=$(echo "piped text" | timeout 60 "$s" 1 cat 2>&1); rc=$?
[ "$rc" = 0 ] && [ "$out" = "piped text" ] || bad "stdin: exit $rc, output '$out' (want 0, 'piped text')"

# a signal to the script stops the run. Started from Python (a job a script starts with &
# ignores INT, and a shell cannot trap a signal it was started ignoring)
cat > "$work/wait.sh" <<'EOF'
#!/usr/bin/env bash
touch "$READY.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
sleep 60
EOF
chmod +x "$work/wait.sh"
for sig in TERM INT HUP; do
  rm -f "$work"/ready.*
  res=$(READY="$work/ready" "$py" - "$s" "$work/wait.sh" "$sig" "$work" <<'EOF'
import glob, signal, subprocess, sys, time
s, prog, sig, work = sys.argv[1:]
p = subprocess.Popen([s, "2", prog], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
t0 = time.time()
while len(glob.glob(work + "/ready.*")) < 2 and p.poll() is None and time.time() - t0 < 60:
    time.sleep(0.05)
if p.poll() is not None:
    print(f"ended before the signal: exit {p.returncode}")
    sys.exit()
t0 = time.time()
p.send_signal(getattr(signal, "SIG" + sig))
try:
    _, err = p.communicate(timeout=20)
    print(f"ok {p.returncode} {time.time() - t0:.1f} {err.strip()!r}")
except subprocess.TimeoutExpired:
    p.kill()
    print("still running 20 s after the signal")
EOF
  )
  case "$res" in
    "ok "*" ''") ;;
    *) bad "SIG$sig to mpirun.sh: $res (want it ended, nothing said by the script)" ;;
  esac
  sleep 0.5
  if pgrep -f "$work/wait.sh" > /dev/null; then
    bad "SIG$sig to mpirun.sh: ranks left running"; pkill -f "$work/wait.sh"
  fi
done
echo "$((1 - fail)) passed, $fail failed"
exit $fail
