# tests/kernels_grid.cmake — every built tile kernel against the reference on a grid of
# shapes, layouts and thread counts; the shared AVX-512 exp against double exp.

add_executable(test_kernel_grid test_kernel_grid.c)
target_link_libraries(test_kernel_grid PRIVATE rb_kernels)
rb_add_test(NAME kernels.grid COMMAND test_kernel_grid LABELS kernels)

add_executable(test_exp512 test_exp512.c)
set_source_files_properties(test_exp512.c PROPERTIES COMPILE_OPTIONS "${RB_AVX512_FLAGS}")
target_include_directories(test_exp512 PRIVATE ${CMAKE_SOURCE_DIR}/kernels/avx512)
target_link_libraries(test_exp512 PRIVATE rb_kernels)
rb_add_test(NAME kernels.exp512 COMMAND test_exp512 LABELS kernels)
