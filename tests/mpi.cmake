# mpi.cmake — tests of datasets/ and mpi/: serial layout/dataset tests, MPI tests on 1-4 ranks.

add_executable(test_shard test_shard.c)
target_link_libraries(test_shard PRIVATE rb_mpi rb_kernels)
rb_add_test(NAME shard_layouts COMMAND $<TARGET_FILE:test_shard> TIMEOUT 60)

add_executable(test_dataset test_dataset.c)
target_include_directories(test_dataset PRIVATE ${RANDOM123_INCLUDE_DIR})
target_link_libraries(test_dataset PRIVATE rb_datasets rb_kernels)
rb_add_test(NAME dataset_philox COMMAND $<TARGET_FILE:test_dataset> TIMEOUT 60)

add_executable(test_dataset_mpi test_dataset_mpi.c)
target_link_libraries(test_dataset_mpi PRIVATE rb_mpi rb_datasets rb_kernels MPI::MPI_C)

add_executable(test_dist_equiv test_dist_equiv.c)
target_link_libraries(test_dist_equiv PRIVATE rb_mpi rb_datasets rb_kernels MPI::MPI_C)

add_executable(test_topo test_topo.c)
target_link_libraries(test_topo PRIVATE rb_mpi MPI::MPI_C)

foreach(n 1 2 3 4)
  rb_add_mpi_test(NAME dataset_shard_np${n} NP ${n}
    COMMAND $<TARGET_FILE:test_dataset_mpi> TIMEOUT 120)
  rb_add_mpi_test(NAME dist_equiv_np${n} NP ${n}
    COMMAND $<TARGET_FILE:test_dist_equiv> TIMEOUT 120)
  rb_add_mpi_test(NAME topo_np${n} NP ${n}
    COMMAND $<TARGET_FILE:test_topo> TIMEOUT 120)
endforeach()

# ranks that chose differently before MPI_Init (another kernel, thread count or study
# file on one node): one line naming the rank and both values, exit 2, instead of a
# file whose attributes the ranks wrote differently (or a hang when the case lists
# differ). Two programs in one job (mpiexec's "A : B").
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/setup_heads1.ini "[study]\nheads = 1\n")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/setup_heads2.ini "[study]\nheads = 2\n")
set(_rb_setup_args run -q --set study.seq_lens=256 --set study.modes=full
  --set study.datasets=gaussian --set scaling.methods=none)
foreach(_v isa threads study)
  if(_v STREQUAL "isa")
    set(_a env ROPEBENCH_ISA=blas ${RB_EXE} ${_rb_setup_args})
    set(_b env ROPEBENCH_ISA=ref ${RB_EXE} ${_rb_setup_args})
    set(_re "rank 1: this rank chose kernel ref and rank 0 blas")
  elseif(_v STREQUAL "threads")
    set(_a env OMP_NUM_THREADS=1 ${RB_EXE} ${_rb_setup_args})
    set(_b env OMP_NUM_THREADS=2 ${RB_EXE} ${_rb_setup_args})
    set(_re "rank 1: this rank runs 2 thread\\(s\\) and rank 0 1 ")
  else()
    set(_a ${RB_EXE} ${_rb_setup_args} -c ${CMAKE_CURRENT_BINARY_DIR}/setup_heads1.ini)
    set(_b ${RB_EXE} ${_rb_setup_args} -c ${CMAKE_CURRENT_BINARY_DIR}/setup_heads2.ini)
    set(_re "rank 1: this rank read another study than rank 0")
  endif()
  rb_add_test(NAME mpi_setup_differs_${_v} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2 "${_re}" --
    ${RB_MPIEXEC_CMD} 1 ${_a} -o ${CMAKE_CURRENT_BINARY_DIR}/setup_${_v}.h5 :
    ${MPIEXEC_NUMPROC_FLAG} 1 ${_b} -o ${CMAKE_CURRENT_BINARY_DIR}/setup_${_v}.h5)
  set_tests_properties(mpi_setup_differs_${_v} PROPERTIES LABELS "cli;mpi" PROCESSORS 2
    TIMEOUT 60)
endforeach()
