/* keep_dso.c — sanitizer tests only: a dlclose() that leaves every library loaded. */

/*
 * Preloaded (LD_PRELOAD) into the processes of the asan preset's tests, never built
 * into ropebench. MPI_Finalize dlcloses Open MPI's components (mca_*.so). Two things
 * then go wrong for LeakSanitizer's exit-time check:
 *   - the components' globals are unmapped, so the ~3300 blocks that Open MPI's ORTE
 *     layer still points to from them are reported as leaks (suppressed by
 *     tests/lsan.supp, but each one still has to be matched against it);
 *   - the stacks of those blocks hold addresses in no loaded library, and for each
 *     such address the sanitizer re-reads /proc/self/maps looking for its module.
 * A 1-rank run of tests/data/small.ini (ROPEBENCH_TEST_QUICK_PEAKS=1, 2026-12-04) took
 * 1.6-1.7 s with no leak check, 4.4-5.0 s with the check as the tests ran it before
 * (exact unwinding at every malloc, which those matches needed), and 1.8-2.1 s with
 * this library preloaded and malloc's stacks unwound by frame pointers: the blocks are
 * reachable again, and what Open MPI does leak is matched by the library that called
 * malloc, so the exact unwinder is not needed (tests/CMakeLists.txt).
 *
 * Returning 0 without unloading is what dlclose() does anyway for a library still in
 * use or marked RTLD_NODELETE, so the callers see a successful call. The library is
 * built without sanitizers: it is also preloaded into mpiexec and python3, which are
 * not instrumented.
 */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
