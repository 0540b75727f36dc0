/* leak_canary.c — sanitizer build only: an MPI program that leaks, so a test can show
 * that the leak check every test runs under still reports leaks made by our code. */

/*
 * Every rank loses CANARY_BLOCKS blocks of 4000 + 16·rank + i bytes (i = 0..7), made by
 * canary_make() and then forgotten, between MPI_Init and MPI_Finalize, as ropebench's own
 * arrays would be if a free went missing. Run under the tests' environment (the
 * suppressions of tests/lsan.supp, tests/keep_dso.c preloaded, malloc stacks by frame
 * pointers), LeakSanitizer must name canary_make in each rank's report and exit non-zero;
 * tests/leak_canary.py checks that.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define CANARY_BLOCKS 8

static void *volatile canary_sink;

__attribute__((noinline)) static void canary_make(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 0x5a, n);
    canary_sink = p;
}

int main(int argc, char **argv)
{
    int rank = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < CANARY_BLOCKS; i++)
        canary_make(4000 + 16 * (size_t)rank + (size_t)i);
    canary_sink = NULL;
    MPI_Finalize();
    return 0;
}
