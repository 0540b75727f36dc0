# tests/kernels.cmake — tests of kernels/: RoPE schedules (known values and an
# independent numpy oracle of the HF formulas), phases and rotation against MPFR,
# the reference attention tile and row-state merge against a direct softmax.

add_executable(test_rope_schedule test_rope_schedule.c)
target_link_libraries(test_rope_schedule PRIVATE rb_kernels)
rb_add_test(NAME kernels.rope_schedule COMMAND test_rope_schedule LABELS kernels)

add_executable(test_rope_phase test_rope_phase.c)
target_link_libraries(test_rope_phase PRIVATE rb_kernels PkgConfig::MPFR)
rb_add_test(NAME kernels.rope_phase COMMAND test_rope_phase LABELS kernels)

add_executable(test_attn_ref test_attn_ref.c)
target_link_libraries(test_attn_ref PRIVATE rb_kernels)
rb_add_test(NAME kernels.attn_ref COMMAND test_attn_ref LABELS kernels)

add_executable(dump_schedule dump_schedule.c)
target_link_libraries(dump_schedule PRIVATE rb_kernels)
rb_add_test(NAME kernels.oracle_schedules
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle_schedules.py
          $<TARGET_FILE:dump_schedule>
  LABELS kernels python)
