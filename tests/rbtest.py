"""rbtest.py — what the end-to-end test scripts share: their verdict line and exit code."""


def verdict(failed):
    """Print each failure as 'FAIL: ...' and the one-line summary; return the exit code
    (1 when anything failed)."""
    for x in failed:
        print("FAIL:", x)
    print(f"{0 if failed else 1} passed, {1 if failed else 0} failed")
    return 1 if failed else 0
