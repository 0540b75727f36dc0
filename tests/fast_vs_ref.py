#!/usr/bin/env python3
"""fast_vs_ref.py — the small study run with kernel ISA on NP ranks and LAYOUT must
match the 1-rank reference-kernel run REFERENCE.h5: fp32 kernels lse/entropy within
1e-5 (|x-y| / max(|x|,|y|,1)) and outputs within 1e-5 of the row's max |output|;
bf16 lse within 2e-2, entropy within 1e-2, outputs within 2e-2. Exit 77 (CTest: skipped)
when the kernel is not built or not supported on this CPU.

usage: fast_vs_ref.py WORK ROPEBENCH CONFIG REFERENCE.h5 ISA DTYPE NP LAYOUT -- mpiexec...
(ISA auto: the automatic choice, ROPEBENCH_ISA unset; with RB_EXPECT_KERNEL=NAME in the environment the file
must record that kernel, and ROPEBENCH_TEST_CPU_HIDE, if set, in its environment)
"""
import os
import subprocess
import sys


def main():
    sep = sys.argv.index("--")
    work, exe, cfg, ref, isa, dtype, np_, layout = sys.argv[1:9]
    mpi = sys.argv[sep + 1:]
    env = dict(os.environ, ROPEBENCH_ISA=isa)
    if isa == "auto":
        del env["ROPEBENCH_ISA"]
    out = os.path.join(work, f"fast_{isa}_{layout}_np{np_}.h5")
    base = [exe, "run", "-q", "-c", cfg, "--set", f"study.shard_layout={layout}",
            "--set", f"study.dtype={dtype}", "--dump-inputs", "-o", out]
    probe = subprocess.run(base + ["--dry-run"], env=env, capture_output=True, text=True,
                           timeout=120)
    if probe.returncode != 0:
        if "not built" in probe.stderr or "not supported" in probe.stderr:
            print(f"skipped: {probe.stderr.strip()}")
            return 77
        print(f"FAIL: dry run: {probe.stderr.strip()}")
        print("0 passed, 1 failed")
        return 1
    run = subprocess.run(mpi + [np_] + base, env=env, capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0:
        print(f"FAIL: run exited {run.returncode}: {run.stderr.strip()}")
        print("0 passed, 1 failed")
        return 1
    want = os.environ.get("RB_EXPECT_KERNEL")  # the kernel an automatic choice must make
    if want:
        import h5py
        with h5py.File(out, "r") as f:
            got = f.attrs["kernel"]
            got = got.decode() if isinstance(got, bytes) else str(got)
            env_rec = f["provenance"].attrs["environment"]
            env_rec = env_rec.decode() if isinstance(env_rec, bytes) else str(env_rec)
        hide = os.environ.get("ROPEBENCH_TEST_CPU_HIDE")
        if got != want or (hide and f"ROPEBENCH_TEST_CPU_HIDE={hide}" not in env_rec):
            print(f"FAIL: kernel {got!r} (expected {want!r}), environment {env_rec!r}")
            print("0 passed, 1 failed")
            return 1
    tol = (["--rtol", "1e-5", "--etol", "1e-5", "--otol", "1e-5"] if dtype == "fp32" else
           ["--rtol", "2e-2", "--etol", "1e-2", "--otol", "2e-2"])
    cmp = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                       "compare_results.py"), ref, out,
                          "--floor", "1", *tol], capture_output=True, text=True, timeout=300)
    print(cmp.stdout, end="")
    return cmp.returncode


if __name__ == "__main__":
    sys.exit(main())
