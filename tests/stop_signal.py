#!/usr/bin/env python3
"""stop_signal.py — a run stopped by Ctrl-C or kill (SIGINT to mpirun, which passes
SIGTERM on to the ranks; SIGTERM to a run without mpirun) says so in one line and
leaves no files of its own behind: replacing an existing results file before a case
was finished, the staged replacement (FILE.partial-XXXXXX) and the lock file are
removed and FILE keeps every byte; stopped later (a new file before its first case,
a replacement after its first), the lock file is removed, the file opens with the
cases finished so far, and `run --resume` then completes it. A signal the run was started
ignoring (nohup's SIGHUP) stays ignored. A run whose stderr reader goes away (SIGPIPE)
removes its lock file as a killed one does. A signal that comes while the results file
is being changed waits until the case is flushed, then stops the run with that case
readable. The runs wait before each case (ROPEBENCH_TEST_HOLD_UNTIL), or inside the
first case's write (ROPEBENCH_TEST_HOLD_IN_WRITE), so that the signal arrives at a known
point.

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


def n_complete(path):
    """The cases of results file path marked complete (OSError if it does not open)."""
    with h5py.File(path, "r") as f:
        return len([c for c in f["cases"].values() if c.attrs.get("complete") == 1])


def held_stop(cmd, hold, err_path):
    """Start cmd with ROPEBENCH_TEST_HOLD_IN_WRITE=hold, wait until it holds inside its
    write (hold.reached), send SIGTERM, and release it a second later; return (reached,
    still running when released, exit code, stderr)."""
    with open(err_path, "w") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err,
                             start_new_session=True,
                             env=dict(os.environ, ROPEBENCH_TEST_HOLD_IN_WRITE=hold))
    reached = wait_for(lambda: os.path.exists(hold + ".reached"), p, secs=300)
    if reached:
        p.send_signal(signal.SIGTERM)
        time.sleep(1.0)
    waited = reached and p.poll() is None
    open(hold, "w").close()
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = None
    with open(err_path) as f:
        return reached, waited, rc, f.read()


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
        # ready once the replacement is staged and rank 0 waits in the first case's
        # hold (its progress line has begun), not as soon as the staged file shows:
        # between the two rank 0 flushes the new file (MPI_File_sync, an fsync), and
        # mpirun (Open MPI 4.1) follows the SIGTERM it passes on with SIGKILL about 2 s
        # later (measured here; odls_base_sigkill_timeout): a rank blocked that long in
        # a sync on a busy CI disk is killed outright and cleans nothing up (CI,
        # 2026-12-02: the staged file and the lock left, no line)
        err_txt = os.path.join(work, "err.txt")
        staged = lambda: (any(".partial-" in x for x in os.listdir(work)) and
                          os.path.exists(err_txt) and "[ 1/" in open(err_txt).read())
        want = f"ropebench: interrupted before a case was finished; {out} is left as it was"
        for attempt in range(2):
            rc, err, ok = stopped(cmd, err_txt, staged, sig, env, ign)
            # mpirun, stopping itself, can drop the last line a rank writes to its
            # stderr pipe (Open MPI's I/O forwarding; seen once under a loaded CI host):
            # a run stopped through mpirun that left no 'interrupted' line at all, and
            # nothing behind, gets one more try; any other outcome is judged as it is
            if not (ign is None and ok and rc not in (0, None) and "interrupted" not in err
                    and not mine() and digest(out) == before):
                break
            print(f"note: replacing, {label}: no 'interrupted' line came through mpirun; "
                  "trying once more")
        bad = stop_failure(f"replacing, {label}", rc, err, ok, want,
                           "the staged file or the first case's hold never showed, or the ignored "
                           "signal stopped the run")
        if bad:
            # what the run left, so that a rare failure (seen once more in a loaded CI
            # run, 2026-12-01, without the retry above firing) says which case it was
            same = os.path.exists(out) and digest(out) == before
            failed.append(f"{bad} [left behind: {mine()}; {out} unchanged: {same}; "
                          f"tries: {attempt + 1}]")
        elif mine():
            failed.append(f"replacing, {label}: left behind {mine()}")
        elif not os.path.exists(out) or digest(out) != before:
            failed.append(f"replacing, {label}: {out} changed or gone")
        else:
            print(f"ok   replacing, {label}: exit {rc}")
        for x in mine():  # so that the next check starts clean
            os.remove(os.path.join(work, x))

    # stopped in a later case: a new file before its first case (its provenance
    # flushed), and the replacement of old.h5 in its second case (renamed over old.h5
    # after the first); both then completed by --resume
    new = os.path.join(work, "new.h5")
    for label, path, hold_from, kept in (("new file, case 1", new, 1, 0),
                                         ("replacing, case 2", out, 2, 1)):
        err_txt = os.path.join(work, "err.txt")
        began = lambda: os.path.exists(err_txt) and f"[ {hold_from}/" in open(err_txt).read()
        rc, err, ok = stopped(mpi + ["1", exe, "run"] + tiny + ["-o", path], err_txt, began,
                              signal.SIGINT, dict(env, ROPEBENCH_TEST_HOLD_FROM=str(hold_from)))
        want = (f"ropebench: interrupted; the cases finished so far stay readable in {path} "
                "(run again with --resume to do the rest)")
        bad = stop_failure(label, rc, err, ok, want, f"case {hold_from} never began")
        if bad:
            failed.append(bad)
            continue
        if mine():
            failed.append(f"{label}: left behind {mine()}")
        try:
            with h5py.File(path, "r") as f:
                n = len([c for c in f.get("cases", {}).values()
                         if c.attrs.get("complete") == 1])
                if "provenance" not in f or n != kept:
                    failed.append(f"{label}: /provenance missing or {n} complete cases, "
                                  f"want {kept}")
        except OSError as e:
            failed.append(f"{label}: does not open after the stop: {e}")
            continue
        q = subprocess.run(mpi + ["1", exe, "run", "-q", "--resume"] + tiny + ["-o", path],
                           capture_output=True, text=True, timeout=300)
        if q.returncode != 0:
            failed.append(f"{label}: --resume exited {q.returncode}: {q.stderr[-600:]}")
            continue
        with h5py.File(path, "r") as f:
            done = [c for c in f["cases"].values() if c.attrs.get("complete") == 1]
        if len(done) != 2:
            failed.append(f"{label}: {len(done)} of 2 cases complete after --resume")
        else:
            print(f"ok   {label}: stopped with {kept} case(s) kept, then --resume "
                  "completed it")
    # stopped while the results file is being changed (inside the first case's write,
    # ROPEBENCH_TEST_HOLD_IN_WRITE): the signal waits until the case is written and
    # flushed (dying inside HDF5's metadata writes could leave the file unreadable), then
    # ends the run as before, with that case readable. Without mpirun, which follows its
    # SIGTERM with SIGKILL ~2 s later (the hold here is longer).
    path = os.path.join(work, "inwrite.h5")
    err_txt = os.path.join(work, "err-inwrite.txt")
    reached, waited, rc, err = held_stop([exe, "run"] + tiny + ["-o", path],
                                         os.path.join(work, "holdw"), err_txt)
    want = (f"ropebench: interrupted; the cases finished so far stay readable in {path} "
            "(run again with --resume to do the rest)")
    if not waited or rc != -signal.SIGTERM or want not in err.splitlines():
        failed.append(f"stopped inside a write: reached {reached}, still running 1 s after "
                      f"the signal {waited}, exit {rc}: {err[-600:]!r}")
    elif mine():
        failed.append(f"stopped inside a write: left behind {mine()}")
    else:
        try:
            n = n_complete(path)
            if n != 1:
                failed.append(f"stopped inside a write: {n} complete cases, want 1")
            else:
                print("ok   stopped inside a write: the signal waited for the flush, "
                      "1 case readable")
        except OSError as e:
            failed.append(f"stopped inside a write: {path} does not open: {e}")

    # the same for bench -o into that results file: the signal waits until /bench is
    # written and the file closed; the case stays complete beside the new /bench
    if os.path.exists(path):
        reached, waited, rc, err = held_stop(
            [exe, "bench", "--quick", "--only", "rope", "--kernels", "ref", "--threads", "1",
             "-o", path], os.path.join(work, "holdb"), err_txt)
        if not waited or rc != -signal.SIGTERM or \
                f"ropebench: bench: interrupted after writing {path}" not in err.splitlines():
            failed.append(f"bench -o stopped inside its write: reached {reached}, still "
                          f"running 1 s after the signal {waited}, exit {rc}: {err[-600:]!r}")
        else:
            try:
                with h5py.File(path, "r") as f:
                    n = len([c for c in f["cases"].values() if c.attrs.get("complete") == 1])
                    rows = len(f["bench/median_s"]) if "bench" in f else 0
                if n != 1 or rows < 1:
                    failed.append(f"bench -o stopped inside its write: {n} complete cases, "
                                  f"{rows} bench rows")
                else:
                    print("ok   bench -o stopped inside its write: the signal waited, the "
                          f"case and {rows} bench rows readable")
            except OSError as e:
                failed.append(f"bench -o stopped inside its write: {path} does not open: {e}")

    # a stderr whose reader has gone (SIGPIPE on rank 0's next write: mpirun tearing the
    # job down after another rank died first, or `2>&1 | head`): the lock file is
    # removed as for a kill, the finished case stays readable
    path = os.path.join(work, "pipe.h5")
    p = subprocess.Popen([exe, "run"] + tiny + ["-o", path], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True,
                         env=dict(env, ROPEBENCH_TEST_HOLD_FROM="2"))
    seen, t0 = b"", time.time()
    while b"[ 2/" not in seen and time.time() - t0 < 120:
        chunk = os.read(p.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    held = b"[ 2/" in seen
    p.stderr.close()  # the reader goes; the held case's next write gets SIGPIPE
    open(go, "w").close()  # release the hold
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = None
    os.remove(go)
    if not held or rc != -signal.SIGPIPE:
        failed.append(f"stderr closed: held in case 2 {held}, exit {rc} (want -SIGPIPE): "
                      f"{seen[-400:]!r}")
    elif mine():
        failed.append(f"stderr closed: left behind {mine()}")
    else:
        try:
            n = n_complete(path)
            if n < 1:
                failed.append(f"stderr closed: {n} complete cases in {path}, want >= 1")
            else:
                print(f"ok   stderr closed: SIGPIPE, no lock left, {n} case(s) readable")
        except OSError as e:
            failed.append(f"stderr closed: {path} does not open: {e}")
    return verdict(failed)


if __name__ == "__main__":
    sys.exit(main())
