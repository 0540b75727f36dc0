# tests/metrics_probe.cmake — the data-driven probe metrics kernel and fp32-phase RoPE
# against brute-force computations (C), and against a numpy oracle.

add_executable(test_metrics_probe test_metrics_probe.c)
target_link_libraries(test_metrics_probe PRIVATE rb_kernels)
rb_add_test(NAME kernels.metrics_probe COMMAND test_metrics_probe LABELS kernels)

# the accumulator where OpenMP grants fewer threads than asked: every key block must
# still be accumulated (blocks were dealt by the asked count)
rb_add_test(NAME kernels.metrics_probe_thread_limit COMMAND test_metrics_probe LABELS kernels)
set_property(TEST kernels.metrics_probe_thread_limit APPEND PROPERTY ENVIRONMENT OMP_THREAD_LIMIT=1)

# the needles' rank against the haystack (metric 6) against a direct count
add_executable(test_metrics_needles test_metrics_needles.c)
target_link_libraries(test_metrics_needles PRIVATE rb_kernels)
rb_add_test(NAME kernels.metrics_needles COMMAND test_metrics_needles LABELS kernels)
