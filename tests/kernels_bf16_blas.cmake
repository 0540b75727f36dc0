# tests/kernels_bf16_blas.cmake — the bf16 AVX-512 and OpenBLAS tile kernels against the reference tile.

add_executable(test_attn_bf16_blas test_attn_bf16_blas.c)
target_link_libraries(test_attn_bf16_blas PRIVATE rb_kernels ${MATH_LIBRARY})
rb_add_test(NAME kernels.attn_bf16_blas COMMAND test_attn_bf16_blas LABELS kernels)

# Private benchmark, not a test: causal GFLOP/s and probe-row bandwidth of the tiles.
add_executable(bench_tiles_bf16_blas bench_tiles_bf16_blas.c)
target_link_libraries(bench_tiles_bf16_blas PRIVATE rb_kernels ${MATH_LIBRARY})
