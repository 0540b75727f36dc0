/* gauss_avx512.c — the gaussian row generator of datasets/gauss.c compiled with AVX-512 flags (same source, bit-identical rows). */
#define RB_GAUSS_AVX512 1
#include "../gauss.c"
