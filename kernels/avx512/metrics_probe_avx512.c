/* metrics_probe_avx512.c — the probe metrics kernel of kernels/ref/metrics_probe.c compiled with AVX-512 flags (same source, bit-identical results). */
#define RB_METRICS_PROBE_AVX512 1
#include "../ref/metrics_probe.c"
