# tests/metrics_phase.cmake — analytic phase metrics (bins, bands, phase table, D(delta), decay bounds): closed forms in C and an independent numpy oracle.

add_executable(test_metrics_phase test_metrics_phase.c)
target_link_libraries(test_metrics_phase PRIVATE rb_kernels)
rb_add_test(NAME kernels.metrics_phase COMMAND test_metrics_phase LABELS kernels)

add_executable(dump_metrics_phase dump_metrics_phase.c)
target_link_libraries(dump_metrics_phase PRIVATE rb_kernels)
rb_add_test(NAME kernels.oracle_metrics_phase
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle_metrics_phase.py
          $<TARGET_FILE:dump_metrics_phase> $<TARGET_FILE:dump_schedule>
  LABELS kernels python)
