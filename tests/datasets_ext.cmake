# datasets_ext.cmake — the spectral and file datasets: generation laws and shards
# (spectral), parallel reads of good HDF5 files against numpy and clear errors for bad
# ones (file), and both through `ropebench run`.

add_executable(test_dataset_spectral test_dataset_spectral.c)
target_link_libraries(test_dataset_spectral PRIVATE rb_mpi rb_datasets rb_kernels MPI::MPI_C)
foreach(np 1 3)
  rb_add_mpi_test(NAME dataset_spectral_np${np} NP ${np}
    COMMAND $<TARGET_FILE:test_dataset_spectral> TIMEOUT 120)
endforeach()

add_executable(test_dataset_file test_dataset_file.c)
target_link_libraries(test_dataset_file PRIVATE rb_mpi rb_datasets rb_kernels MPI::MPI_C)

set(RB_DF ${CMAKE_CURRENT_SOURCE_DIR}/dataset_file.py)
set(RB_DF_WORK ${CMAKE_CURRENT_BINARY_DIR}/dataset_file)
file(MAKE_DIRECTORY ${RB_DF_WORK})
rb_add_test(NAME dataset_file_make COMMAND ${RB_PYTHON} ${RB_DF} make ${RB_DF_WORK} TIMEOUT 60)
set_tests_properties(dataset_file_make PROPERTIES FIXTURES_SETUP rb_dataset_files)

# good files: what 1-3 ranks read (every layout, unsorted rows) equals numpy's values
foreach(dt f32 f16)
  foreach(np 1 2 3)
    set(_f ${RB_DF_WORK}/good_${dt}.h5)
    set(_o ${RB_DF_WORK}/read_${dt}_np${np}.bin)
    rb_add_test(NAME dataset_file_read_${dt}_np${np} TIMEOUT 120 COMMAND ${RB_PYTHON} ${RB_DF}
      read ${_f} 2 96 ${_o} -- ${RB_MPIEXEC_CMD} ${np} $<TARGET_FILE:test_dataset_file>
      ${_f} 2 96 32 ${_o})
    set_tests_properties(dataset_file_read_${dt}_np${np} PROPERTIES
      FIXTURES_REQUIRED rb_dataset_files PROCESSORS ${np} LABELS mpi)
  endforeach()
endforeach()

# bad files and keys: one clear line, exit 2, no crash (tests/data/small.ini: heads 2,
# head_dim 32, longest case 480 tokens)
set(_run ${RB_MPIEXEC_CMD} 1 $<TARGET_FILE:ropebench> run --dry-run -q
  -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini --set study.datasets=file)
function(rb_file_error name regex)
  rb_add_test(NAME dataset_file_error_${name} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2 ${regex} -- ${ARGN})
  set_tests_properties(dataset_file_error_${name} PROPERTIES
    FIXTURES_REQUIRED rb_dataset_files LABELS cli)
endfunction()
rb_file_error(wrong_rank "wrong_rank.h5: dataset k has rank 2 \\(shape \\[500\\]\\[32\\]\\), expected 3"
  ${_run} --set file.path=${RB_DF_WORK}/wrong_rank.h5)
rb_file_error(null_k "null_k.h5: dataset k has rank 0 \\(shape empty: no data\\), expected 3"
  ${_run} --set file.path=${RB_DF_WORK}/null_k.h5)
rb_file_error(int32 "int32.h5: dataset k has type int32, expected float32 or float16"
  ${_run} --set file.path=${RB_DF_WORK}/int32.h5)
rb_file_error(wide_exponent "wide_exp.h5: dataset k has type a 4-byte float with 11 exponent bits \\(bias 1023\\) and 20 mantissa bits, expected float32 or float16"
  ${_run} --set file.path=${RB_DF_WORK}/wide_exp.h5)
# float32's field sizes with another exponent bias: its values are 2^27 times float32's
rb_file_error(odd_bias "odd_bias.h5: dataset k has type a 4-byte float with 8 exponent bits \\(bias 100\\) and 23 mantissa bits, expected float32 or float16"
  ${_run} --set file.path=${RB_DF_WORK}/odd_bias.h5)
rb_file_error(short "short.h5: dataset k has shape \\[3\\]\\[100\\]\\[32\\], expected \\[>=2\\]\\[>=480\\]\\[32\\]"
  ${_run} --set file.path=${RB_DF_WORK}/short.h5)
rb_file_error(small_head_dim "small_d.h5: dataset k has shape \\[3\\]\\[500\\]\\[16\\], expected \\[>=2\\]\\[>=480\\]\\[32\\]"
  ${_run} --set file.path=${RB_DF_WORK}/small_d.h5)
rb_file_error(too_many_heads "good_f32.h5: dataset q has shape \\[3\\]\\[500\\]\\[32\\], expected \\[>=4\\]"
  ${_run} --set file.path=${RB_DF_WORK}/good_f32.h5 --set study.heads=4)
rb_file_error(missing_k "missing_k.h5: no dataset 'k'"
  ${_run} --set file.path=${RB_DF_WORK}/missing_k.h5)
rb_file_error(not_hdf5 "not_hdf5.h5: not an HDF5 file"
  ${_run} --set file.path=${RB_DF_WORK}/not_hdf5.h5)
rb_file_error(no_path "file.path: empty, but study.datasets includes file" ${_run})
rb_file_error(missing_path "file.path = '.*nonexistent.h5': cannot read: No such file"
  ${_run} --set file.path=${RB_DF_WORK}/nonexistent.h5)
rb_file_error(directory "file.path = '.*': not a regular file" ${_run} --set file.path=${RB_DF_WORK})
rb_file_error(unavailable_filter "lzf.h5: dataset k is compressed with filter 32000 .*which this HDF5 does not have"
  ${_run} --set file.path=${RB_DF_WORK}/lzf.h5)
rb_file_error(virtual "vds.h5: dataset k is a virtual dataset"
  ${_run} --set file.path=${RB_DF_WORK}/vds.h5)
rb_file_error(external_missing "ext_missing.h5: dataset k keeps its data in external file '.*no-such-raw-file.bin', which cannot be read"
  ${_run} --set file.path=${RB_DF_WORK}/ext_missing.h5)
rb_file_error(soft_link "soft_k.h5: 'k' is a soft link to '/no/such/k', which is not a dataset"
  ${_run} --set file.path=${RB_DF_WORK}/soft_k.h5)
rb_file_error(external_link "elink_k.h5: 'k' is an external link to '/k' in file '.*no-such-file.h5', which cannot be opened as a dataset"
  ${_run} --set file.path=${RB_DF_WORK}/elink_k.h5)
rb_file_error(group "group_k.h5: 'k' is not a dataset"
  ${_run} --set file.path=${RB_DF_WORK}/group_k.h5)
# a NaN in the file stops the case that reads it, naming where (exit 1: the run had begun)
rb_add_test(NAME dataset_file_error_nan COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "nan_k.h5: dataset k has a non-finite value \\(nan\\) at \\[1\\]\\[7\\]\\[3\\]" --
  ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set study.datasets=file --set file.path=${RB_DF_WORK}/nan_k.h5 -o ${RB_DF_WORK}/nan_out.h5)
set_tests_properties(dataset_file_error_nan PROPERTIES FIXTURES_REQUIRED rb_dataset_files
  LABELS cli PROCESSORS 2)
# so does a finite value large enough to overflow the float32 scores
rb_add_test(NAME dataset_file_error_huge COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "huge_q.h5: dataset q has a value too large \\(-1e\\+37\\) at \\[0\\]\\[5\\]\\[2\\]: beyond 1e15" --
  ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set study.datasets=file --set file.path=${RB_DF_WORK}/huge_q.h5 -o ${RB_DF_WORK}/huge_out.h5)
set_tests_properties(dataset_file_error_huge PROPERTIES FIXTURES_REQUIRED rb_dataset_files
  LABELS cli PROCESSORS 2)
# the first bad value of the dataset, whatever the rank count (each rank's own first
# was named, [0][180][0] on 2 ranks); a value just above 1e15 in digits that show it
foreach(np 1 2 3)
  rb_add_test(NAME dataset_file_error_nan_rows_np${np} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "nan_rows.h5: dataset q has a non-finite value \\(nan\\) at \\[0\\]\\[100\\]\\[0\\]" --
    ${RB_MPIEXEC_CMD} ${np} $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
    --set study.datasets=file --set study.modes=full --set file.path=${RB_DF_WORK}/nan_rows.h5
    -o ${RB_DF_WORK}/nan_rows_np${np}.h5)
  set_tests_properties(dataset_file_error_nan_rows_np${np} PROPERTIES
    FIXTURES_REQUIRED rb_dataset_files LABELS cli PROCESSORS ${np})
endforeach()
rb_add_test(NAME dataset_file_error_above_1e15 COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "above_1e15.h5: dataset v has a value too large \\(1.0000001e\\+15\\) at \\[1\\]\\[3\\]\\[4\\]" --
  ${RB_MPIEXEC_CMD} 1 $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set study.datasets=file --set file.path=${RB_DF_WORK}/above_1e15.h5 -o ${RB_DF_WORK}/above_out.h5)
set_tests_properties(dataset_file_error_above_1e15 PROPERTIES FIXTURES_REQUIRED rb_dataset_files
  LABELS cli)
# inputs inside the bound whose scores overflow with YaRN's attention_factor = 1e6: the
# case is refused, named, the one before it kept (metrics on, as the default study)
rb_add_test(NAME dataset_file_error_scores_overflow COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "case yarn-x[0-9]+-L[0-9]+-full-file: head 0: the [a-z0-9_]+ kernel's attention scores overflowed \\(lse not finite in [0-9]+ of [0-9]+ rows\\)" --
  ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set study.datasets=file --set study.modes=full --set scaling.methods=none,yarn
  --set scaling.attention_factor=1e6 --set file.path=${RB_DF_WORK}/big_qk.h5
  -o ${RB_DF_WORK}/big_qk_out.h5)
set_tests_properties(dataset_file_error_scores_overflow PROPERTIES
  FIXTURES_REQUIRED rb_dataset_files LABELS cli PROCESSORS 2)
# one rank out of memory for a case (ROPEBENCH_TEST_ALLOC_FAIL_RANK=1): every rank leaves,
# rank 0 naming rank 1, instead of the others waiting in the next collective (the file
# dataset's hung for good; the generated ones until a 20 s watchdog, the cause unsaid)
foreach(_ds gaussian file)
  rb_add_test(NAME dataset_alloc_fail_rank1_${_ds} COMMAND ${CMAKE_COMMAND} -E env
    ROPEBENCH_TEST_ALLOC_FAIL_RANK=1 ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "out of memory on rank 1 \\(a case of 240 tokens\\)" --
    ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
    --set study.datasets=${_ds} --set study.modes=full --set scaling.methods=none
    --set file.path=${RB_DF_WORK}/good_f32.h5 -o ${RB_DF_WORK}/alloc_fail_${_ds}.h5)
  set_tests_properties(dataset_alloc_fail_rank1_${_ds} PROPERTIES
    FIXTURES_REQUIRED rb_dataset_files LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 60)
endforeach()
# a float64 k at the end of a ~1,900-character path: the whole message, dataset and
# reason (dataset_file.py make builds the same path)
string(REPEAT "x" 50 _x)
set(_deep ${RB_DF_WORK})
foreach(i RANGE 1 30)
  string(APPEND _deep "/directory_${_x}")
endforeach()
rb_file_error(long_path "/f64_k.h5: dataset k has type float64, expected float32 or float16"
  ${_run} --set file.path=${_deep}/f64_k.h5)
# a file cut short: HDF5's reason after the file's name
rb_file_error(truncated "truncated.h5: cannot open the HDF5 file: [a-z]"
  ${_run} --set file.path=${RB_DF_WORK}/truncated.h5)
# an external raw file where HDF5 looks for it: found with HDF5_EXTFILE_PREFIX=${ORIGIN},
# refused up front (naming where it looked) with a prefix where it is not
rb_add_test(NAME dataset_file_external_origin COMMAND ${CMAKE_COMMAND} -E env
  "HDF5_EXTFILE_PREFIX=\${ORIGIN}" ${_run} --set file.path=${RB_DF_WORK}/ext_origin/extraw.h5)
set_tests_properties(dataset_file_external_origin PROPERTIES FIXTURES_REQUIRED rb_dataset_files
  LABELS cli)
rb_file_error(external_prefix "extraw.h5: dataset k keeps its data in external file 'raw.bin' \\(looked for at /nonexistent-prefix/raw.bin\\), which cannot be read"
  ${CMAKE_COMMAND} -E env HDF5_EXTFILE_PREFIX=/nonexistent-prefix
  ${_run} --set file.path=${RB_DF_WORK}/ext_origin/extraw.h5)
# the same on 2 ranks: every rank agrees, rank 0 speaks once
rb_file_error(mpi_short "short.h5: dataset k has shape"
  ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set study.datasets=file --set file.path=${RB_DF_WORK}/short.h5 -o ${RB_DF_WORK}/never.h5)
# [spectral] keys
set(_sp ${RB_MPIEXEC_CMD} 1 $<TARGET_FILE:ropebench> run --dry-run -q --set study.datasets=spectral)
rb_file_error(spectral_profile "spectral.profile: unknown value 'medium' \\(choose from flat, low, high, list\\)"
  ${_sp} --set spectral.profile=medium)
rb_file_error(spectral_kappa "spectral.coherence = 1.5: must be in \\[0, 1\\]"
  ${_sp} --set spectral.coherence=1.5)
rb_file_error(spectral_kappa_neg "spectral.coherence = -0.1: must be in \\[0, 1\\]"
  ${_sp} --set spectral.coherence=-0.1)
rb_file_error(spectral_count "spectral.amplitudes: profile list needs 64 values \\(rotary_dim/2\\), got 3"
  ${_sp} --set spectral.profile=list --set spectral.amplitudes=1,2,3)
rb_file_error(spectral_negative "spectral.amplitudes = -1: must be in"
  ${_sp} --set spectral.profile=list --set spectral.amplitudes=-1)
rb_file_error(unknown_dataset "study.datasets: unknown value 'spectrum' \\(choose from gaussian, needle, spectral, file\\)"
  ${_sp} --set study.datasets=spectrum)

# a ':' in the input's and the output's names (ROMIO, the io component tests and
# scripts/mpirun.sh choose, read 'cap_10' as a file-system type and could open neither)
rb_add_test(NAME dataset_file_run_colon TIMEOUT 240 COMMAND ${RB_PYTHON} ${RB_DF} run
  "${RB_DF_WORK}/cap_10:00.h5" "${RB_DF_WORK}/out_10:00.h5" -- ${RB_MPIEXEC_CMD} 2
  $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set scaling.methods=none --set study.datasets=file
  --set "file.path=${RB_DF_WORK}/cap_10:00.h5" --dump-inputs -o "${RB_DF_WORK}/out_10:00.h5")
set_tests_properties(dataset_file_run_colon PROPERTIES
  FIXTURES_REQUIRED rb_dataset_files PROCESSORS 2 LABELS mpi)
# relative names whose part before the ':' is a file-system type ROMIO knows: the run
# reads 'nfs:cap.h5', not the 'cap.h5' beside it, and writes 'nfs:out.h5', not 'out.h5'
rb_add_test(NAME dataset_file_run_colon_nfs TIMEOUT 240 COMMAND ${RB_PYTHON} ${RB_DF} run
  nfs:cap.h5 nfs:out.h5 -- ${RB_MPIEXEC_CMD} 2
  $<TARGET_FILE:ropebench> run -q -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini
  --set scaling.methods=none --set study.datasets=file --set file.path=nfs:cap.h5
  --dump-inputs -o nfs:out.h5)
set_tests_properties(dataset_file_run_colon_nfs PROPERTIES WORKING_DIRECTORY ${RB_DF_WORK}
  FIXTURES_REQUIRED rb_dataset_files PROCESSORS 2 LABELS mpi)

# a chunked k partly written (chunks never allocated read as the fill value, 0, as h5py
# reads them), plain, gzip, and one head never written: the run's inputs are the file's
foreach(pf partial partial_gzip partial_head chunk_f16 gzip_f32 be_f32 unwritten_v)
  set(_res ${RB_DF_WORK}/run_${pf}.h5)
  rb_add_test(NAME dataset_file_run_${pf} TIMEOUT 240 COMMAND ${RB_PYTHON} ${RB_DF} run
    ${RB_DF_WORK}/${pf}.h5 ${_res} -- ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q
    -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini --set scaling.methods=none
    --set study.datasets=file --set file.path=${RB_DF_WORK}/${pf}.h5 --dump-inputs -o ${_res})
  set_tests_properties(dataset_file_run_${pf} PROPERTIES
    FIXTURES_REQUIRED rb_dataset_files PROCESSORS 2 LABELS mpi)
endforeach()

# a gzip chunk of k that does not inflate, read by the 480-token cases only, on 1-3
# ranks (on 2 and 3 by one rank only, inside the collective read): one line naming the
# file, the dataset and HDF5's reason, exit 1, the 240-token cases kept and readable
foreach(np 1 2 3)
  set(_res ${RB_DF_WORK}/bad_chunk_np${np}.h5)
  rb_add_test(NAME dataset_file_error_bad_chunk_np${np} TIMEOUT 240 COMMAND ${RB_PYTHON}
    ${RB_DF} bad_chunk ${_res} none-L240-full-file pi-x4-L240-full-file --
    ${RB_MPIEXEC_CMD} ${np} $<TARGET_FILE:ropebench> run -q
    -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini --set scaling.methods=none,pi
    --set study.datasets=file --set study.modes=full --set study.seq_lens=240,480
    --set file.path=${RB_DF_WORK}/bad_chunk.h5 -o ${_res})
  set_tests_properties(dataset_file_error_bad_chunk_np${np} PROPERTIES
    FIXTURES_REQUIRED rb_dataset_files PROCESSORS ${np} LABELS "cli;mpi")
endforeach()

# end to end on 2 ranks: the study's pre-RoPE inputs are the file's rows (float32 and
# float16), beside a spectral case
foreach(dt f32 f16)
  set(_res ${RB_DF_WORK}/run_${dt}.h5)
  rb_add_test(NAME dataset_file_run_${dt} TIMEOUT 240 COMMAND ${RB_PYTHON} ${RB_DF} run
    ${RB_DF_WORK}/good_${dt}.h5 ${_res} -- ${RB_MPIEXEC_CMD} 2 $<TARGET_FILE:ropebench> run -q
    -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini --set scaling.methods=none,yarn
    --set study.datasets=file,spectral --set file.path=${RB_DF_WORK}/good_${dt}.h5
    --dump-inputs -o ${_res})
  set_tests_properties(dataset_file_run_${dt} PROPERTIES FIXTURES_SETUP rb_df_run_${dt}
    FIXTURES_REQUIRED rb_dataset_files PROCESSORS 2 LABELS mpi)
  # the probe rows' q, which every rank reads from the file apart from its shard's rows:
  # the stored lse, entropy and outputs of every case (probe ones included) against
  # numpy's attention on the dumped inputs, which the test above found equal to the file
  rb_add_test(NAME dataset_file_run_${dt}_oracle COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/oracle_attention.py ${_res})
  set_tests_properties(dataset_file_run_${dt}_oracle PROPERTIES
    FIXTURES_REQUIRED rb_df_run_${dt} LABELS io)
endforeach()

# --resume of a file-dataset study only with the input its cases were computed from
rb_add_test(NAME dataset_file_resume_input TIMEOUT 300 COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/resume_file_input.py ${RB_DF_WORK}/resume_input
  $<TARGET_FILE:ropebench> -- ${RB_MPIEXEC_CMD})

# ranks whose studies differ in their datasets (file on rank 0 only): refused by the
# setup check before the file dataset's collective open, which only rank 0 would have
# entered (a hang); the study check ran after it until 2026-12-03
rb_add_test(NAME mpi_setup_differs_dataset COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2 "rank 1: this rank read another study than rank 0" --
  ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q --set study.seq_lens=256 --set study.modes=full
  --set scaling.methods=none --set study.datasets=file
  --set file.path=${RB_DF_WORK}/good_f32.h5 --set study.heads=2 --set model.head_dim=32
  -o ${RB_DF_WORK}/setup_dataset.h5 :
  ${MPIEXEC_NUMPROC_FLAG} 1 ${RB_EXE} run -q --set study.seq_lens=256 --set study.modes=full
  --set scaling.methods=none --set study.datasets=gaussian --set study.heads=2
  --set model.head_dim=32 -o ${RB_DF_WORK}/setup_dataset.h5)
set_tests_properties(mpi_setup_differs_dataset PROPERTIES FIXTURES_REQUIRED rb_dataset_files
  LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 60)
