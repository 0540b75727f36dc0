# tests/kernels_grid.cmake — every built tile kernel against the reference on a grid of
# shapes, layouts and thread counts; the shared AVX-512 exp against double exp and the
# AVX-512 merge of fp32 row states against rb_state_merge.

add_executable(test_kernel_grid test_kernel_grid.c)
target_link_libraries(test_kernel_grid PRIVATE rb_kernels)
rb_add_test(NAME kernels.grid COMMAND test_kernel_grid LABELS kernels)
# a failing case reruns alone (`test_kernel_grid --case N`) on the inputs it had in the
# grid (tests/grid_rerun.py)
rb_add_test(NAME kernels.grid_rerun COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/grid_rerun.py $<TARGET_FILE:test_kernel_grid> LABELS "kernels;python")

# A C test of code in kernels/avx512/: built with the AVX-512 flags, ends with CTest's
# skip code (77) where the CPU or OS cannot run it (tests/rb_test_avx512.h).
function(rb_add_avx512_test name exe)
  add_executable(${exe} ${exe}.c)
  set_source_files_properties(${exe}.c PROPERTIES COMPILE_OPTIONS "${RB_AVX512_FLAGS}")
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/kernels/avx512)
  target_link_libraries(${exe} PRIVATE rb_kernels)
  rb_add_test(NAME ${name} COMMAND ${exe} LABELS kernels)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

rb_add_avx512_test(kernels.exp512 test_exp512)
# the probe-overlap block loop of `ropebench bench` (kernels/peak.c) against a scalar sum
rb_add_avx512_test(kernels.overlap test_overlap)
# its plain-C block (CPUs without usable AVX-512), on every CPU
add_executable(test_overlap_c test_overlap_c.c)
target_link_libraries(test_overlap_c PRIVATE rb_kernels ${MATH_LIBRARY})
rb_add_test(NAME kernels.overlap_c COMMAND test_overlap_c LABELS kernels)

# the OpenBLAS kernel's portable exp (header only: runs on every machine)
add_executable(test_exp_neg test_exp_neg.c)
target_include_directories(test_exp_neg PRIVATE ${CMAKE_SOURCE_DIR}/kernels/blas)
target_link_libraries(test_exp_neg PRIVATE rb_kernels ${MATH_LIBRARY})
rb_add_test(NAME kernels.exp_neg COMMAND test_exp_neg LABELS kernels)
rb_add_avx512_test(kernels.state_merge test_state_merge)

# the fp32 kernels on rows that see a million keys (fp32 running sums and their merge
# into double)
add_executable(test_kernel_long test_kernel_long.c)
target_link_libraries(test_kernel_long PRIVATE rb_kernels)
# (a quarter of the keys in the sanitizer build: the same paths; the accuracy over a
# million keys is the default build's to check)
if(RB_SANITIZE)
  rb_add_test(NAME kernels.long_rows COMMAND test_kernel_long --shrink 4 LABELS kernels)
else()
  rb_add_test(NAME kernels.long_rows COMMAND test_kernel_long LABELS kernels)
endif()

# the same grid where OpenMP grants fewer threads than asked (OMP_THREAD_LIMIT=1 while
# the cases ask for 2): the key ranges split per asked thread must all still be covered
rb_add_test(NAME kernels.grid_thread_limit COMMAND test_kernel_grid LABELS kernels)
set_property(TEST kernels.grid_thread_limit APPEND PROPERTY ENVIRONMENT OMP_THREAD_LIMIT=1)

# rb_kernels_alloc: alignment per size class, huge-page advice as rb_kernels_hugepages
# reports it, with and without ROPEBENCH_HUGEPAGES=0
add_executable(test_kernels_alloc test_kernels_alloc.c)
target_link_libraries(test_kernels_alloc PRIVATE rb_kernels)
rb_add_test(NAME kernels.alloc COMMAND test_kernels_alloc LABELS kernels)

# the kernels' kept scratch block: reuse, growth, concurrent holders kept apart, and
# fast kernels (query- and key-outer, fp32 and bf16) whose states do not depend on what
# an earlier call left in it
add_executable(test_kernels_scratch test_kernels_scratch.c)
target_link_libraries(test_kernels_scratch PRIVATE rb_kernels ${MATH_LIBRARY})
rb_add_test(NAME kernels.scratch COMMAND test_kernels_scratch LABELS kernels)
