/* leak_canary.c — sanitizer build only: an MPI program that leaks, so a test can show
 * that the leak check every test runs under still reports leaks made by our code. */

/*
 * Every rank loses, between MPI_Init and MPI_Finalize, as ropebench's own arrays would
 * be if a free went missing:
 *   - CANARY_BLOCKS blocks of 4000 + 16·rank + i bytes (i = 0..7), made by canary_make()
 *     called from main;
 *   - one block of 6000 + 16·rank bytes made by canary_op(), a reduction operator that
 *     Open MPI calls (MPI_Reduce_local), so that libmpi is on the block's stack just
 *     above our function, as it is for mpi/probe.c's merge operator.
 * Run under the tests' environment (the suppressions of tests/lsan.supp, which name
 * Open MPI's libraries, tests/keep_dso.c preloaded, malloc's stacks unwound by frame
 * pointers to malloc_context_size frames), LeakSanitizer must report both in each rank,
 * with the function that made them, and exit non-zero; tests/leak_canary.py checks that.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define CANARY_BLOCKS 8

static void *volatile canary_sink;
static int canary_rank;

__attribute__((noinline)) static void canary_make(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 0x5a, n);
    canary_sink = p;
}

static void canary_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    size_t n = 6000 + 16 * (size_t)canary_rank;
    char *p = malloc(n);
    if (p)
        memset(p, 0xa5, n);
    canary_sink = p;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((const int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Op op;
    int one = 1, sum = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &canary_rank);
    for (int i = 0; i < CANARY_BLOCKS; i++)
        canary_make(4000 + 16 * (size_t)canary_rank + (size_t)i);
    MPI_Op_create(canary_op, 1, &op);
    MPI_Reduce_local(&one, &sum, 1, MPI_INT, op);
    MPI_Op_free(&op);
    canary_sink = NULL;
    MPI_Finalize();
    return sum == 2 ? 0 : 3;
}
