# tests/bench.cmake — the fast RoPE application against the reference (with its angle
# bound) and `ropebench bench`: JSON rows, the /bench group of a results file, bad options.

add_executable(test_rope_fast test_rope_fast.c)
target_link_libraries(test_rope_fast PRIVATE rb_kernels ${MATH_LIBRARY})
rb_add_test(NAME kernels.rope_fast COMMAND test_rope_fast LABELS kernels)
set_tests_properties(kernels.rope_fast PROPERTIES SKIP_RETURN_CODE 77)

# `ropebench bench --quick`: the JSON rows of every built kernel, then -o into a new and
# an existing results file (through mpiexec -n 1: Open MPI's singleton mode crashes
# LeakSanitizer's tracer under the asan preset).
set(RB_BENCH_WORK ${CMAKE_CURRENT_BINARY_DIR}/bench)
file(MAKE_DIRECTORY ${RB_BENCH_WORK})
rb_add_test(NAME bench.quick
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_bench_json.py --run
          $<TARGET_FILE:ropebench> ${RB_BENCH_WORK} ${RB_MPIEXEC_CMD} 1
  LABELS "bench;python;mpi" TIMEOUT 600)
set_tests_properties(bench.quick PROPERTIES PROCESSORS 2 RUN_SERIAL ON)

# more rows than the first row buffer (256) and thread counts above the cores: every
# row asked for, once (tests/bench_rows_count.py)
rb_add_test(NAME bench.many_rows
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench_rows_count.py
          $<TARGET_FILE:ropebench> ${RB_BENCH_WORK}/many-rows
  LABELS "bench;python" TIMEOUT 600)
set_tests_properties(bench.many_rows PROPERTIES PROCESSORS 2 RUN_SERIAL ON)

# bad options: one 'ropebench:' line naming the option, exit 2, before any work
file(WRITE ${RB_BENCH_WORK}/not_hdf5.h5 "this is text, not HDF5\n")
function(rb_bench_error name regex)
  rb_add_test(NAME bench.error_${name} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2 ${regex} -- ${ARGN} LABELS "bench;cli")
endfunction()
set(B $<TARGET_FILE:ropebench> bench)
rb_bench_error(reps_zero "--reps '0': not a positive integer" ${B} --reps 0)
rb_bench_error(reps_text "--reps 'many': not a positive integer" ${B} --reps many)
rb_bench_error(reps_many "--reps '65': at most 64" ${B} --reps 65)
rb_bench_error(reps_huge "--reps '1000001': at most 64" ${B} --reps 1000001)
rb_bench_error(reps_space "--reps ' 3': not a positive integer" ${B} --reps " 3")
rb_bench_error(warmup_neg "--warmup '-1': not a non-negative integer" ${B} --warmup -1)
rb_bench_error(kernel_unknown "--kernels: unknown kernel 'avx1024'" ${B} --kernels ref,avx1024)
rb_bench_error(kernel_twice "--kernels: 'ref' listed twice" ${B} --kernels ref,ref)
rb_bench_error(threads_zero "--threads '0': not a positive integer" ${B} --threads 1,0)
rb_bench_error(threads_twice "--threads: '1' listed twice" ${B} --threads 1,2,1)
rb_bench_error(threads_all_twice "--threads: 'all' listed twice" ${B} --threads all,all)
rb_bench_error(threads_same_value "--threads: '1' listed twice" ${B} --threads 01,2,1)
rb_bench_error(threads_huge "--threads '1025': at most 1024" ${B} --threads 1025)
# a count above OMP_THREAD_LIMIT would run with fewer threads than its row says
rb_bench_error(threads_over_limit "--threads 2: OMP_THREAD_LIMIT allows at most 1 thread"
  ${CMAKE_COMMAND} -E env OMP_THREAD_LIMIT=1 $<TARGET_FILE:ropebench> bench --quick --threads 1,2)
# the causal shapes with no causal rows: not silently ignored
rb_bench_error(dims_without_causal "--head-dims set the causal rows' shapes, but --only leaves out causal"
  ${B} --only probe --head-dims 64)
rb_bench_error(lens_without_causal "--lengths set the causal rows' shapes, but --only leaves out causal"
  ${B} --only rope,probe --lengths 4096)
# bench measures one process: 2 ranks (with or without -o) are refused before any work
# (the '.' in the regexes stands for the message's ';', which CMake would take for a
# list separator and cut the regex there)
rb_bench_error(two_ranks "started as 2 MPI ranks. bench measures one process"
  ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> bench --quick --only rope)
rb_bench_error(two_ranks_output "started as 2 MPI ranks. bench measures one process"
  ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> bench --quick --only rope -o ${RB_BENCH_WORK}/two.h5)
set_tests_properties(bench.error_two_ranks bench.error_two_ranks_output PROPERTIES
  PROCESSORS 2 LABELS "bench;cli;mpi")
rb_bench_error(only_twice "--only: 'rope' listed twice" ${B} --only rope,causal,rope)
# --probe-rows: a count in [1, 2048] (the AVX-512 key-outer order's rows), once, and only
# with probe rows
rb_bench_error(probe_rows_zero "--probe-rows '0': not a positive integer" ${B} --probe-rows 0)
rb_bench_error(probe_rows_text "--probe-rows '1e3': not a positive integer" ${B} --probe-rows 1e3)
rb_bench_error(probe_rows_many "--probe-rows '2049': at most 2048" ${B} --probe-rows 2049)
rb_bench_error(probe_rows_twice "--probe-rows given twice" ${B} --probe-rows 8 --probe-rows 16)
rb_bench_error(probe_rows_without_probe "--probe-rows sets the probe rows' shape, but --only leaves out probe"
  ${B} --only causal,rope --probe-rows 32)
rb_bench_error(quick_twice "--quick given twice" ${B} --quick --only rope --quick)
# --json to a device or a FIFO: refused before any work (a FIFO used to block the open
# until a reader came; /dev/full failed only after every row was measured)
rb_bench_error(json_device "--json /dev/full: not a regular file \\(a device\\)" ${B} --json /dev/full)
if(NOT EXISTS ${RB_BENCH_WORK}/fifo)
  execute_process(COMMAND mkfifo ${RB_BENCH_WORK}/fifo)
endif()
rb_bench_error(json_fifo "--json .*/fifo: not a regular file \\(a FIFO\\)" ${B} --json ${RB_BENCH_WORK}/fifo)
set_tests_properties(bench.error_json_fifo PROPERTIES TIMEOUT 60)
rb_bench_error(threads_text "--threads 'some': not a positive integer" ${B} --threads some)
rb_bench_error(unknown_option "unknown option '--fast'" ${B} --fast)
rb_bench_error(missing_value "option --json needs a value" ${B} --json)
rb_bench_error(extra_arg "unexpected argument 'extra'" ${B} extra)
rb_bench_error(only_unknown "--only: unknown row kind 'fast'" ${B} --only causal,fast)
rb_bench_error(head_dim_odd "--head-dims '65': not an even integer in \\[2, 512\\]" ${B} --head-dims 64,65)
rb_bench_error(head_dim_many "--head-dims: more than 4 values" ${B} --head-dims 2,4,6,8,10)
rb_bench_error(length_small "--lengths '8': not an integer in \\[16, 1048576\\]" ${B} --lengths 8)
rb_bench_error(length_text "--lengths 'long': not an integer" ${B} --lengths long)
rb_bench_error(length_suffix_big "--lengths '2M': not an integer in \\[16, 1048576\\]" ${B} --lengths 2M)
# --lengths 1K is 1024, as in a study file: one causal row of that length
rb_add_test(NAME bench.lengths_suffix COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${B} --quick --only causal --kernels ref
  --threads 1 --head-dims 16 --lengths 1K LABELS "bench;cli")
set_tests_properties(bench.lengths_suffix PROPERTIES
  PASS_REGULAR_EXPRESSION "ref +fp32 +causal +16 +1024 +1 ")
# the fast RoPE row is named by its own variant, avx512, also when only avx512_bf16 (which
# brings the same RoPE) is listed: a comparison matches rows by name (skipped, 77, on a
# CPU without AVX512_BF16); and a row of microseconds keeps its digits (%g: an exponent,
# or 6+ decimals below 1e-3, where %.5f printed 0.00004)
rb_add_test(NAME bench.rope_fast_name COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/bench_rope_name.py $<TARGET_FILE:ropebench> LABELS "bench;cli")
set_tests_properties(bench.rope_fast_name PROPERTIES SKIP_RETURN_CODE 77)
rb_add_test(NAME bench.seconds_digits COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${B} --quick --only causal --kernels ref
  --threads 1 --head-dims 2 --lengths 16 LABELS "bench;cli")
set_tests_properties(bench.seconds_digits PROPERTIES
  PASS_REGULAR_EXPRESSION "ref +fp32 +causal +2 +16 +1 +1 +1 +([0-9.]+e-0[0-9]|0\\.[0-9][0-9][0-9][0-9][0-9][0-9]+) "
  FAIL_REGULAR_EXPRESSION " 0\\.00000 ")
# calls shorter than --min-rep-time are timed several to a repetition, and the time is
# per call (tests/bench_batching.py)
rb_add_test(NAME bench.batched COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/bench_batching.py
  $<TARGET_FILE:ropebench> ${RB_BENCH_WORK}/batched ${RB_MPIEXEC_CMD} 1 LABELS "bench;python;mpi")
set_tests_properties(bench.batched PROPERTIES TIMEOUT 300)
rb_bench_error(min_rep_neg "--min-rep-time '-1': not a number of seconds in \\[0, 1\\]" ${B} --min-rep-time -1)
rb_bench_error(min_rep_big "--min-rep-time '1.5': not a number of seconds in \\[0, 1\\]" ${B} --min-rep-time 1.5)
rb_bench_error(min_rep_exp "--min-rep-time '1e-3': not a number of seconds" ${B} --min-rep-time 1e-3)
rb_bench_error(min_rep_text "--min-rep-time 'fast': not a number of seconds" ${B} --min-rep-time fast)
rb_bench_error(min_rep_dot "--min-rep-time '.': not a number of seconds" ${B} --min-rep-time .)
rb_bench_error(min_rep_twice "--min-rep-time given twice" ${B} --min-rep-time 0.1 --min-rep-time 0.2)
rb_bench_error(json_dir "--json .*/no/such/dir/x.json: cannot open for writing"
  ${B} --json ${RB_BENCH_WORK}/no/such/dir/x.json)
rb_bench_error(output_not_hdf5 "-o .*not_hdf5.h5"
  ${RB_MPIEXEC_CMD} 1 $<TARGET_FILE:ropebench> bench --quick -o ${RB_BENCH_WORK}/not_hdf5.h5)

# rows that cannot fit in memory are refused before any measuring (a causal row of
# L = 1M, head_dim 512 holds ~10.7 GB): here under a 3 GB address-space limit; not under
# ASan, which cannot start with such a limit
if(NOT RB_SANITIZE)
  rb_add_test(NAME bench.error_memory COMMAND sh -c "ulimit -v 3000000 && exec \"$@\"" sh
    ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2
    "^ropebench: bench: the causal rows of L = 1048576, head_dim 512 need at least 10\\.0 GiB of memory, more than the process's address-space limit \\(ulimit -v\\) \\(2\\.9 GiB\\); give smaller --lengths or --head-dims$"
    -- $<TARGET_FILE:ropebench> bench --only causal --lengths 1M --head-dims 64,512
    --kernels ref)
  set_tests_properties(bench.error_memory PROPERTIES LABELS "bench;cli" TIMEOUT 60)
endif()
