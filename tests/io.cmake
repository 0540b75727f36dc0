# io.cmake — tests of the HDF5 results backend (bench/results_hdf5.c), the report (reports/) and the numpy attention oracle.

set(RB_IO_DIR ${CMAKE_CURRENT_BINARY_DIR}/io)
file(MAKE_DIRECTORY ${RB_IO_DIR})

# Collective writes of distributed rows (every shard layout), root-only datasets,
# strings and attributes on 1-4 ranks; rank 0 rereads the file serially.
add_executable(test_results_mpi ${CMAKE_CURRENT_SOURCE_DIR}/test_results_mpi.c)
target_include_directories(test_results_mpi PRIVATE ${HDF5_C_INCLUDE_DIRS})
target_compile_definitions(test_results_mpi PRIVATE ${HDF5_C_DEFINITIONS})
target_link_libraries(test_results_mpi PRIVATE rb_results rb_kernels ${HDF5_C_LIBRARIES}
  MPI::MPI_C)
foreach(_np 1 2 3 4)
  rb_add_mpi_test(NAME results_mpi_np${_np} NP ${_np} TIMEOUT 120 LABELS io
    COMMAND $<TARGET_FILE:test_results_mpi> ${RB_IO_DIR})
endforeach()

# rb_report_write without MPI, the way `ropebench report` calls it.
add_executable(rb_report_cli ${CMAKE_CURRENT_SOURCE_DIR}/report_cli.c)
target_link_libraries(rb_report_cli PRIVATE rb_reports rb_kernels)
# the report's SHA-256 of a results file against hashlib, at the padding edges
add_executable(dump_sha256 ${CMAKE_CURRENT_SOURCE_DIR}/dump_sha256.c)
target_include_directories(dump_sha256 PRIVATE ${CMAKE_SOURCE_DIR}/reports)
target_link_libraries(dump_sha256 PRIVATE rb_reports rb_kernels)
rb_add_test(NAME report_sha256 LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/sha256_oracle.py
          $<TARGET_FILE:dump_sha256> ${RB_IO_DIR}/sha256-scratch.bin)

# A synthetic results file (h5py) with correct values; the oracle must pass it and
# must catch one perturbed entropy value.
rb_add_test(NAME io_make_synthetic LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/make_synthetic.py
          ${RB_IO_DIR}/synthetic.h5)
set_tests_properties(io_make_synthetic PROPERTIES FIXTURES_SETUP io_synthetic)
rb_add_test(NAME oracle_synthetic LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle_attention.py
          ${RB_IO_DIR}/synthetic.h5)
set_tests_properties(oracle_synthetic PROPERTIES FIXTURES_REQUIRED io_synthetic)
rb_add_test(NAME io_make_synthetic_corrupt LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/make_synthetic.py --corrupt
          ${RB_IO_DIR}/synthetic-corrupt.h5)
set_tests_properties(io_make_synthetic_corrupt PROPERTIES FIXTURES_SETUP io_corrupt)
rb_add_test(NAME oracle_fails_on_corrupt LABELS io
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 1
          ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle_attention.py
          ${RB_IO_DIR}/synthetic-corrupt.h5)
set_tests_properties(oracle_fails_on_corrupt PROPERTIES FIXTURES_REQUIRED io_corrupt
  PASS_REGULAR_EXPRESSION "2 passed, 1 failed"
  FAIL_REGULAR_EXPRESSION "Traceback")

# The report on a synthetic file, and its error handling (missing, empty, truncated,
# foreign files; gnuplot missing), through the test driver and through `ropebench`.
rb_add_test(NAME report_cli LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_report.py ${RB_IO_DIR}/report-cli
          $<TARGET_FILE:rb_report_cli> {in} {out})
# Through `ropebench` it also checks the report of a new file from `ropebench bench -o`
# (under mpiexec -n 1: Open MPI's singleton mode crashes LeakSanitizer's tracer).
rb_add_test(NAME report_ropebench LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_report.py
          --bench ${RB_MPIEXEC_CMD} 1 $<TARGET_FILE:ropebench> --
          ${RB_IO_DIR}/report-ropebench $<TARGET_FILE:ropebench> report {in} -o {out})

# Several files side by side (ropebench report A.h5 B.h5): every table against numbers
# computed from the two files, and the refusals (tests/test_compare.py).
rb_add_test(NAME report_compare LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_compare.py ${RB_IO_DIR}/compare
          $<TARGET_FILE:ropebench>)

# Outputs refused without being touched (bench -o into a foreign HDF5 or text file,
# --resume on an empty file), a FIFO and a foreign-format file given to report, and the
# file dataset with k all zero: one clear line each (tests/test_output_guard.py).
rb_add_test(NAME io_output_guard LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_output_guard.py
          ${RB_IO_DIR}/output-guard ${RB_MPIEXEC_CMD} -- $<TARGET_FILE:ropebench>)

# The results file replaced by another while the run holds it open: the run says its
# finished case went with its file, not that it stays readable (tests/output_replaced.py).
rb_add_test(NAME io_output_replaced LABELS io TIMEOUT 600
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/output_replaced.py
          ${RB_IO_DIR}/output-replaced $<TARGET_FILE:ropebench> -- ${RB_MPIEXEC_CMD})

# An existing results file whose name leaves no room for ".partial-XXXXXX": staged under
# a hashed name, so a failed run still leaves it as it was (tests/long_output_name.py).
rb_add_test(NAME io_long_output_name LABELS io TIMEOUT 600
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/long_output_name.py
          ${RB_IO_DIR}/long-name $<TARGET_FILE:ropebench> -- ${RB_MPIEXEC_CMD})
set_tests_properties(io_long_output_name PROPERTIES PROCESSORS 2)

# Results files damaged after the fact (attributes missing or out of range, positions,
# needles and timings no run writes, one byte that crashes libhdf5): report skips the
# case and says why on stderr, or refuses the file in one line; --resume redoes what a
# reader could not read (tests/report_damaged.py).
rb_add_test(NAME io_report_damaged LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/report_damaged.py
          ${RB_IO_DIR}/report-damaged ${RB_MPIEXEC_CMD} -- $<TARGET_FILE:ropebench>)

# End to end: `ropebench run --dump-inputs` under mpiexec, then the float64 oracle and
# the report on the file it wrote.
set(_rb_oracle_set
  --set model.head_dim=32 --set model.original_ctx=64
  --set scaling.methods=none,pi,ntk,dynamic_ntk,yarn,llama3 --set scaling.factor=4
  --set study.heads=2 --set study.modes=full,probe --set study.datasets=gaussian,needle
  --set study.probe_rows=16 --set needle.positions=-2,-17,-100
  --set needle.query_positions=-1,-1,-50 --set needle.strength=2)
rb_add_test(NAME oracle_ropebench_np2_zigzag LABELS "io;mpi" TIMEOUT 600
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle_attention.py
          ${RB_IO_DIR}/oracle-np2.h5 --run ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench>
          run --dump-inputs -o ${RB_IO_DIR}/oracle-np2.h5 ${_rb_oracle_set}
          --set study.seq_lens=256 --set study.probe_seq_lens=256 --set study.shard_layout=zigzag --set model.layout=neox)
set_tests_properties(oracle_ropebench_np2_zigzag PROPERTIES PROCESSORS 2
  FIXTURES_SETUP io_oracle_np2)
rb_add_test(NAME oracle_ropebench_np3_striped LABELS "io;mpi" TIMEOUT 600
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle_attention.py
          ${RB_IO_DIR}/oracle-np3.h5 --run ${RB_MPIEXEC_CMD} 3 $<TARGET_FILE:ropebench>
          run --dump-inputs -o ${RB_IO_DIR}/oracle-np3.h5 ${_rb_oracle_set}
          --set study.seq_lens=192 --set study.probe_seq_lens=192 --set study.shard_layout=striped --set model.layout=gptj)
set_tests_properties(oracle_ropebench_np3_striped PROPERTIES PROCESSORS 3)
# The report of that real run: every metric table against the file's values, and the
# plots each metric group makes.
rb_add_test(NAME report_on_ropebench_run LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_report.py
          --file ${RB_IO_DIR}/oracle-np2.h5 ${RB_IO_DIR}/oracle-np2-report
          $<TARGET_FILE:ropebench> report {in} -o {out})
set_tests_properties(report_on_ropebench_run PROPERTIES FIXTURES_REQUIRED io_oracle_np2)
# A relative TMPDIR: gnuplot runs inside the temporary directory, whose relative name
# then named its log relative to itself; every plot failed, the report blamed gnuplot
# and removed the earlier SVGs. Now: exit 0, SVGs drawn, the temporary directory gone.
rb_add_test(NAME report_relative_tmpdir LABELS io
  COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && cd \"$1\" && TMPDIR=. \"$2\" report \"$3\" -o out && ls out | grep -q '[.]svg$' && test -z \"$(ls -d ropebench-report-* 2>/dev/null)\""
          sh ${RB_IO_DIR}/report-reltmp $<TARGET_FILE:ropebench> ${RB_IO_DIR}/oracle-np2.h5)
set_tests_properties(report_relative_tmpdir PROPERTIES FIXTURES_REQUIRED io_oracle_np2)
# A study whose every pair completed a turn in training (base 10, head_dim 16, L0 64):
# critical_pair is the pair count, which the Metrics table showed as a pair index ("8"
# of pairs 0-7); now "none", checked with every other table by test_report.py.
rb_add_mpi_test(NAME e2e_no_critical_pair NP 1 COMMAND ${RB_EXE} run -q
  -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini --set model.base=10 --set model.head_dim=16
  --set scaling.methods=none,pi --set study.datasets=gaussian
  -o ${RB_IO_DIR}/no_critical_pair.h5)
set_tests_properties(e2e_no_critical_pair PROPERTIES FIXTURES_SETUP io_no_critical_pair)
rb_add_test(NAME report_no_critical_pair LABELS io
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_report.py
          --file ${RB_IO_DIR}/no_critical_pair.h5 ${RB_IO_DIR}/no-critical-pair-report
          $<TARGET_FILE:ropebench> report {in} -o {out})
set_tests_properties(report_no_critical_pair PROPERTIES FIXTURES_REQUIRED io_no_critical_pair)

# An existing results file in a directory that takes no new file (chattr +i): the run is
# refused and the file left as it was (tests/stage_refused.py; skipped where chattr +i
# is not possible)
rb_add_test(NAME io_stage_refused LABELS io TIMEOUT 300
  COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/stage_refused.py
          ${RB_IO_DIR}/stage-refused $<TARGET_FILE:ropebench> -- ${RB_MPIEXEC_CMD})
set_tests_properties(io_stage_refused PROPERTIES SKIP_RETURN_CODE 77)
