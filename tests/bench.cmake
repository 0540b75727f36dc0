# tests/bench.cmake — the fast RoPE application against the reference (with its angle
# bound) and `ropebench bench`: JSON rows, the /bench group of a results file, bad options.

add_executable(test_rope_fast test_rope_fast.c)
target_link_libraries(test_rope_fast PRIVATE rb_kernels ${MATH_LIBRARY})
rb_add_test(NAME kernels.rope_fast COMMAND test_rope_fast LABELS kernels)
set_tests_properties(kernels.rope_fast PROPERTIES SKIP_RETURN_CODE 77)
