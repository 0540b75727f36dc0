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
