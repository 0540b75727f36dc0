/* rb_test_avx512.h — the guard of the tests of AVX-512 code: where the CPU or the OS cannot run it, say so and end with CTest's skip code (77), never as a pass. */
#ifndef RB_TEST_AVX512_H
#define RB_TEST_AVX512_H

#include "rb_kernels.h"

#include <stdio.h>
#include <stdlib.h>

#define RB_TEST_SKIP 77

/* rb_test_require_avx512: return if AVX-512F/BW/VL/DQ are usable with the OS saving
 * ZMM state (what rb_cpu_detect reports); otherwise print why and exit(RB_TEST_SKIP).
 * The test must be registered with SKIP_RETURN_CODE 77. */
static inline void rb_test_require_avx512(void)
{
    rb_cpu_info ci;
    rb_cpu_detect(&ci);
    if (ci.avx512f && ci.avx512bw && ci.avx512vl && ci.avx512dq && ci.os_zmm)
        return;
    printf("skipped: no usable AVX-512 on this CPU (%s)\n", ci.model);
    exit(RB_TEST_SKIP);
}

#endif
