#!/usr/bin/env python3
"""stop_signal.py — a run stopped by Ctrl-C or kill (SIGINT to mpirun, which passes
SIGTERM on to the ranks; SIGTERM to a run without mpirun) says so in one line and
leaves no files of its own behind: replacing an existing results file before a case
was finished, the staged replacement (FILE.partial-XXXXXX) and the lock file are
removed and FILE keeps every byte; writing a new file, the lock file is removed and
the file opens, and `run --resume` then completes it. A signal the run was started
ignoring (nohup's SIGHUP) stays ignored. The runs wait before each case
(ROPEBENCH_TEST_HOLD_UNTIL) so that the signal arrives at a known point.

usage: stop_signal.py WORKDIR ROPEBENCH CONFIG -- mpiexec-command-prefix...
"""
import hashlib
import os
import signal
import subprocess
import sys
import time

import h5py

from rbtest import verdict


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def wait_for(pred, proc, secs=120):
    t0 = time.time()
    while not pred() and proc.poll() is None and time.time() - t0 < secs:
        time.sleep(0.02)
    return pred()


def stopped(cmd, err_path, ready, sig, env, ignored=None):
    """Start cmd, wait until ready() holds, send sig; return (exit code, stderr, ok).
    With `ignored`, the run starts with that signal ignored (as under nohup) and gets
    it first: ok only if it is still running half a second later."""
    pre = (lambda: signal.signal(ignored, signal.SIG_IGN)) if ignored else None
    with open(err_path, "w") as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                             start_new_session=True, preexec_fn=pre)
    ok = wait_for(ready, p)
    if ok and ignored:
        p.send_signal(ignored)
        time.sleep(0.5)
        ok = p.poll() is None
    if ok:
        p.send_signal(sig)
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = None
    with open(err_path) as f:
        return rc, f.read(), ok


def stop_failure(label, rc, err, ok, want, never):
    """What is wrong with a stopped run (None if nothing): it got to the point to stop
    at (else `never`) and exited non-zero with `want` among its lines."""
    ours = [x for x in err.splitlines() if x.startswith("ropebench:")]
    if not ok:
        return f"{label}: {never}: {err[-600:]!r}"
    if rc in (0, None) or want not in ours:
        return f"{label}: exit {rc}, want a non-zero exit and {want!r}: {err[-600:]!r}"
    return None


def main():
    sep = sys.argv.index("--")
    work, exe, cfg = sys.argv[1:4]
    mpi = sys.argv[sep + 1:]
    os.makedirs(work, exist_ok=True)
    for x in os.listdir(work):
        os.remove(os.path.join(work, x))
    go = os.path.join(work, "go")  # never made: the held runs wait until stopped
    env = dict(os.environ, ROPEBENCH_TEST_HOLD_UNTIL=go)
    tiny = ["-c", cfg, "--set", "study.modes=full", "--set", "scaling.methods=none,yarn",
            "--set", "study.datasets=gaussian"]
    failed = []
    mine = lambda: sorted(x for x in os.listdir(work) if ".partial-" in x or
                          x.endswith(".lock"))

    # replacing: stopped while the replacement is staged
    out = os.path.join(work, "old.h5")
    p = subprocess.run(mpi + ["1", exe, "run", "-q"] + tiny + ["-o", out],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(f"FAIL: the first run exited {p.returncode}: {p.stderr[-600:]}")
        return 1
    before = digest(out)
    for label, cmd, sig, ign in (
            ("2 ranks, SIGINT to mpirun", mpi + ["2", exe, "run"] + tiny + ["-o", out],
             signal.SIGINT, None),
            ("no mpirun, SIGHUP ignored as under nohup, then SIGTERM",
             [exe, "run"] + tiny + ["-o", out], signal.SIGTERM, signal.SIGHUP)):
        staged = lambda: any(".partial-" in x for x in os.listdir(work))
        rc, err, ok = stopped(cmd, os.path.join(work, "err.txt"), staged, sig, env, ign)
        want = f"ropebench: interrupted before a case was finished; {out} is left as it was"
        bad = stop_failure(f"replacing, {label}", rc, err, ok, want,
                           "the staged file never showed, or the ignored signal stopped "
                           "the run")
        if bad:
            failed.append(bad)
        elif mine():
            failed.append(f"replacing, {label}: left behind {mine()}")
        elif digest(out) != before:
            failed.append(f"replacing, {label}: {out} changed")
        else:
            print(f"ok   replacing, {label}: exit {rc}")

    # a new file: stopped before its first case, then resumed to the end
    new = os.path.join(work, "new.h5")
    began = lambda: os.path.exists(os.path.join(work, "err.txt")) and \
        "[ 1/" in open(os.path.join(work, "err.txt")).read()
    rc, err, ok = stopped(mpi + ["1", exe, "run"] + tiny + ["-o", new],
                          os.path.join(work, "err.txt"), began, signal.SIGINT, env)
    want = (f"ropebench: interrupted; the cases finished so far stay readable in {new} "
            "(run again with --resume to do the rest)")
    bad = stop_failure("new file", rc, err, ok, want, "the first case never began")
    if bad:
        failed.append(bad)
    elif mine():
        failed.append(f"new file: left behind {mine()}")
    else:
        try:
            with h5py.File(new, "r") as f:
                n = len([c for c in f.get("cases", {}).values()
                         if c.attrs.get("complete") == 1])
                if "provenance" not in f or n != 0:
                    failed.append(f"new file: /provenance missing or {n} complete cases")
        except OSError as e:
            failed.append(f"new file: does not open after the stop: {e}")
        q = subprocess.run(mpi + ["1", exe, "run", "-q", "--resume"] + tiny + ["-o", new],
                           capture_output=True, text=True, timeout=300)
        if q.returncode != 0:
            failed.append(f"new file: --resume exited {q.returncode}: {q.stderr[-600:]}")
        else:
            with h5py.File(new, "r") as f:
                done = [c for c in f["cases"].values() if c.attrs.get("complete") == 1]
                if len(done) != 2:
                    failed.append(f"new file: {len(done)} of 2 cases complete after --resume")
                else:
                    print("ok   new file: stopped, then --resume completed it")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
