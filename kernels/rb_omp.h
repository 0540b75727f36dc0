/* rb_omp.h — internal to kernels/: the OpenMP thread queries the kernels share, with their values in a build without OpenMP. */
#ifndef RB_OMP_H
#define RB_OMP_H

#ifdef _OPENMP
#include <omp.h>
#endif

/* rb_omp_tid: this thread's number in its team (0 outside a parallel region or
 * without OpenMP). */
static inline int rb_omp_tid(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* rb_omp_team: the size of the team running now, which may be smaller than the
 * num_threads asked for (OMP_THREAD_LIMIT, OMP_DYNAMIC, nesting): work split per asked
 * thread must go out as tid, tid + team, ... (1 without OpenMP). */
static inline int rb_omp_team(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* rb_omp_max: the threads a parallel region would ask for (1 without OpenMP). */
static inline int rb_omp_max(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

#endif
