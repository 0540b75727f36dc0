"""rbtest.py — what the end-to-end test scripts share: their verdict line and exit code."""


def verdict(failed):
    """Print each failure as 'FAIL: ...' and the one-line summary; return the exit code
    (1 when anything failed)."""
    for x in failed:
        print("FAIL:", x)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


def work_exe_mpi(argv):
    """(WORKDIR, ROPEBENCH, mpiexec prefix list) from the usage `script WORKDIR ROPEBENCH
    -- mpiexec-command-prefix...` of the end-to-end scripts."""
    sep = argv.index("--")
    return argv[1], argv[2], argv[sep + 1:]


def tiny_study(methods):
    """--set options of a study of one 64-token full case per method (head_dim 16,
    gaussian data): what the lifecycle tests need a finished case of, in well under a
    second."""
    return ["--set", "study.seq_lens=64", "--set", "study.modes=full", "--set",
            "model.head_dim=16", "--set", f"scaling.methods={methods}", "--set",
            "study.datasets=gaussian"]


def cut_rows(case, n, n_rows=None):
    """Cut the per-row datasets of an open h5py case group to their first n rows and set
    its n_rows attribute (to n unless given): a finished case of another row count."""
    import numpy as np
    for ds in ("rows/position", "rows/lse", "rows/entropy", "rows/entropy_normalized"):
        if ds in case:
            v = case[ds][()]
            del case[ds]
            case[ds] = v[:n] if v.ndim == 1 else v[:, :n]
    case.attrs["n_rows"] = np.int64(n if n_rows is None else n_rows)
