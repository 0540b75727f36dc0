#!/usr/bin/env python3
"""mpirun_sh_ctrl_c.py — signals to scripts/mpirun.sh running a study reach mpirun once,
giving the clean stop (the "interrupted" line, no lock or partial file left, the
results file readable with the cases finished): Ctrl-C typed at a terminal between cases
and inside a case's write that replaces an earlier file; SIGINT sent by a program to a
run in a terminal's foreground; SIGTERM to the run's whole process group (a shell's
`kill %1`). A terminal's Ctrl-C goes to the whole foreground process group and a group
kill to the whole group, mpirun included, and the script passed a second copy on; Open
MPI takes a second SIGINT or SIGTERM as "kill the ranks now", so they died mid-run (and
mid-write), the lock and possibly a partial file left behind.

usage: mpirun_sh_ctrl_c.py MPIRUN_SH ROPEBENCH WORKDIR
       mpirun_sh_ctrl_c.py --driver int|group GATE -- command...   (used by the above)
"""
import glob
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

import h5py

STUDY = """[model]
head_dim = 32
original_ctx = 64
[scaling]
methods = none,pi,yarn
factor = 4
[study]
seq_lens = 64
probe_seq_lens = 128
modes = full,probe
heads = 1
datasets = gaussian
probe_rows = 8
[metrics]
precision_keys = 16
"""


def run_in_pty(argv, env, wait_for=None, gate=None, timeout=60):
    """Run argv as the foreground group of a new terminal; with wait_for, once its output
    has wait_for (and, with gate, a rank has reached the held write: gate.reached), type
    Ctrl-C, and 1.5 s later create gate, letting the held write go on. Returns (exit
    status or None when it did not end, output, what happened to the Ctrl-C)."""
    try:
        pid, fd = pty.fork()
    except OSError as e:  # no pseudo-terminals here (a container without /dev/pts)
        print(f"no pseudo-terminal: {e}; skipped")
        sys.exit(77)
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    out, sent, t0, status = b"", None, time.time(), None
    while time.time() - (sent or t0) < timeout:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                d = b""
            out += d
        if wait_for and sent is None and wait_for in out and \
                (not gate or os.path.exists(gate + ".reached")):
            os.write(fd, b"\x03")
            sent = time.time()
        if gate and sent is not None and time.time() - sent > 1.5 and not os.path.exists(gate):
            open(gate, "w").close()
        p, st = os.waitpid(pid, os.WNOHANG)
        if p:
            status = os.waitstatus_to_exitcode(st)
            try:
                while True:
                    d = os.read(fd, 4096)
                    if not d:
                        break
                    out += d
            except OSError:
                pass
            break
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(fd)
    how = "" if not wait_for else \
        f"Ctrl-C never typed ({wait_for!r} not seen in {timeout} s)" if sent is None else \
        f"Ctrl-C typed {sent - t0:.1f} s in"
    return status, out.decode(errors="replace"), how


def driver(argv):
    """--driver int|group GATE -- command: run the command (in this process group for
    int, in a group of its own for group); once a rank holds its write (GATE.reached),
    send SIGINT to it (int) or SIGTERM to its whole group (group); 1.5 s later let the
    write go on; exit with its status."""
    mode, gate, cmd = argv[0], argv[1], argv[argv.index("--") + 1:]
    p = subprocess.Popen(cmd, process_group=0 if mode == "group" else None)
    t0 = time.time()
    while not os.path.exists(gate + ".reached") and p.poll() is None and time.time() - t0 < 60:
        time.sleep(0.05)
    if p.poll() is None:
        if mode == "group":
            os.killpg(p.pid, signal.SIGTERM)
        else:
            p.send_signal(signal.SIGINT)
        time.sleep(1.5)
    open(gate, "w").close()
    try:
        return p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        print(f"driver: still running 60 s after the signal ({mode})")
        p.kill()
        return 99


def check(name, status, out, how, res, want_cases):
    problems = [how] if how.startswith("Ctrl-C never") else []
    if status is None:
        problems.append("still running 60 s after the signal")
    elif status == 0:
        problems.append("exit status 0 after the signal")
    if "ropebench: interrupted; the cases finished so far stay readable" not in out:
        problems.append("no 'ropebench: interrupted; ...' line")
    if "mpirun.sh:" in out:
        problems.append("a line from mpirun.sh (the ranks were killed)")
    left = [os.path.basename(f) for f in glob.glob(res + ".*")]
    if left:
        problems.append(f"left beside the results file: {left}")
    time.sleep(0.5)
    ranks = subprocess.run(["pgrep", "-f", res], capture_output=True, text=True).stdout.split()
    if ranks:
        problems.append(f"ranks still running: {ranks}")
        for r in ranks:
            subprocess.run(["kill", "-9", r])
    try:
        with h5py.File(res, "r") as f:
            got = sorted(f["cases"])
        if len(got) != want_cases:
            problems.append(f"{len(got)} cases in the file, expected {want_cases}: {got}")
    except OSError as e:
        problems.append(f"the results file does not read: {e}")
    if problems:
        print(f"FAIL: {name}:")
        for x in problems:
            print("  -", x)
        print("--- output ---\n" + out[-2000:])
        return 1
    print(f"ok: {name}: exit {status}, the interrupted line, nothing left ({how or 'sent'})")
    return 0


def main():
    if sys.argv[1] == "--driver":
        return driver(sys.argv[2:])
    mpirun_sh, exe, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    study = os.path.join(work, "tiny.ini")
    with open(study, "w") as f:
        f.write(STUDY)
    env = dict(os.environ, ROPEBENCH_TEST_QUICK_PEAKS="1")
    failed = 0
    # 1. Ctrl-C between cases: held before the second case, Ctrl-C there
    res = os.path.join(work, "between.h5")
    e1 = dict(env, ROPEBENCH_TEST_HOLD_UNTIL=os.path.join(work, "never"),
              ROPEBENCH_TEST_HOLD_FROM="2")
    status, out, how = run_in_pty([mpirun_sh, "2", exe, "run", "-c", study, "-o", res], e1,
                                  b"[ 2/6]")
    failed += check("Ctrl-C between cases", status, out, how, res, 1)
    # 2-4. inside the first case's write, which replaces an earlier results file: the
    # write is held until 1.5 s after the signal, then goes on; the stop waits for it
    scen = (("Ctrl-C inside a write", None),
            ("SIGINT from a program at a terminal, inside a write", "int"),
            ("SIGTERM to the run's process group, inside a write", "group"))
    for k, (name, mode) in enumerate(scen):
        res = os.path.join(work, f"replace{k}.h5")
        p = subprocess.run([mpirun_sh, "2", exe, "run", "-q", "-c", study, "-o", res],
                           env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            print(f"FAIL: {name}: the first run exited {p.returncode}: {p.stderr}")
            failed += 1
            continue
        gate = os.path.join(work, f"gate{k}")
        e2 = dict(env, ROPEBENCH_TEST_HOLD_IN_WRITE=gate)
        cmd = [mpirun_sh, "2", exe, "run", "-c", study, "-o", res]
        if mode is None:
            status, out, how = run_in_pty(cmd, e2, b"[ 1/6]", gate=gate)
        else:
            status, out, how = run_in_pty([sys.executable, os.path.abspath(__file__),
                                           "--driver", mode, gate, "--"] + cmd, e2)
        if not os.path.exists(gate + ".reached"):
            print(f"FAIL: {name}: the write was never held (no gate.reached)")
            failed += 1
            continue
        failed += check(name, status, out, how, res, 1)
    print(f"{1 + len(scen) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
