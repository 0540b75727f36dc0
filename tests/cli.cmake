# tests/cli.cmake — the ropebench command end to end: option and config validation
# (one clear line, exit 2, no crash), a small study on 1–4 ranks and every sharding
# layout compared with the 1-rank run, an interrupted run, and the docs of every key.

set(RB_EXE $<TARGET_FILE:ropebench>)
set(RB_SMALL ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini)
set(RB_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli)
file(MAKE_DIRECTORY ${RB_WORK})
file(WRITE ${RB_WORK}/unknown_key.ini "[study]\nheads = 1\nfoo = 3\n")
file(WRITE ${RB_WORK}/unknown_section.ini "[modle]\nhead_dim = 64\n")
file(WRITE ${RB_WORK}/twice.ini "[model]\nhead_dim = 64\nhead_dim = 32\n")
file(WRITE ${RB_WORK}/syntax.ini "[model]\nhead_dim = 64\nthis line is not ini\n")
file(WRITE ${RB_WORK}/not_a_results.h5 "this is text, not HDF5\n")
file(WRITE ${RB_WORK}/value_line.ini "[model]\n\nhead_dim = 65\n")
file(WRITE ${RB_WORK}/syntax_first.ini "[model]\nfoo\n[scaling]\nbogus = 1\n")
file(WRITE ${RB_WORK}/unterminated.ini "[scaling\nfactor = 2\n")
file(WRITE ${RB_WORK}/no_section.ini "head_dim = 64\n")
# lines of any length: a 300-character comment must not spill into a key, and longrope's
# 64 factors fit on one line each; comments after a value, "key: value", CR line ends
string(REPEAT "x" 300 _rb_x)
string(REPEAT "1.0," 63 _rb_f)
file(WRITE ${RB_WORK}/long_lines.ini "# ${_rb_x} head_dim = 32\n[model]\r\nhead_dim: 128 ; a comment\n"
  "[scaling]\nmethods = longrope\nshort_factor = ${_rb_f}1.0\nlong_factor = ${_rb_f}2.0\n")

# rb_cli_error(name rc regex args...) — `ropebench args...` must fail with exit rc and
# one 'ropebench:' line matching regex.
function(rb_cli_error name rc regex)
  rb_add_test(NAME cli_error_${name} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py ${rc} ${regex} -- ${ARGN})
  set_tests_properties(cli_error_${name} PROPERTIES LABELS "cli")
endfunction()

# `run` is meant for mpiexec: the validation tests go through it (-n 1), as users do
set(R ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run --dry-run -q)
rb_cli_error(unknown_key 2 "unknown_key.ini:3: unknown key study.foo" ${R} -c ${RB_WORK}/unknown_key.ini)
rb_cli_error(unknown_section 2 "unknown section \\[modle\\]" ${R} -c ${RB_WORK}/unknown_section.ini)
rb_cli_error(key_twice 2 "model.head_dim given twice" ${R} -c ${RB_WORK}/twice.ini)
rb_cli_error(syntax 2 "syntax.ini:3: syntax error" ${R} -c ${RB_WORK}/syntax.ini)
rb_cli_error(value_line 2 "value_line.ini:3: model.head_dim = 65: must be even" ${R} -c ${RB_WORK}/value_line.ini)
# a value given by --set whose bound is another key's, set in the file: no file:line (it
# named head_dim's line 2 as the place of rotary_dim's error)
rb_cli_error(set_value_no_line 2 "^ropebench: model.rotary_dim = 64: must be in \\[2, 32\\] \\(32 = model.head_dim\\)"
  ${R} -c ${CMAKE_CURRENT_SOURCE_DIR}/data/small.ini --set model.rotary_dim=64)
# a file.path of ~420 characters is named whole (it was cut at 255, without a word);
# a value too long to show whole ends with "..."; a subnormal double (1e-310, which
# strtod flags as underflow) is a number like any other
string(REPEAT "d" 100 _d100)
rb_cli_error(file_path_long 2 "file.path = '/nonexistent/${_d100}/${_d100}/${_d100}/${_d100}/x\\.h5': cannot read"
  ${R} --set study.datasets=file --set file.path=/nonexistent/${_d100}/${_d100}/${_d100}/${_d100}/x.h5)
string(REPEAT "x" 300 _x300)
rb_cli_error(value_cut_marked 2 "study\\.dtype = 'x+\\.\\.\\.': unknown \\(choose from fp32, bf16\\)"
  ${R} --set study.dtype=${_x300})
rb_cli_error(needle_strength_zero 2 "needle\\.strength = 0: a needle of strength 0 is an all-zero key"
  ${R} --set needle.strength=0)
# study.threads above OMP_THREAD_LIMIT ran with fewer threads than config_text says
rb_cli_error(threads_over_limit 2 "study\\.threads = 2: OMP_THREAD_LIMIT allows at most 1 thread\\(s\\) here"
  ${CMAKE_COMMAND} -E env OMP_THREAD_LIMIT=1 ${R} --set study.threads=2)
# a strength so small that the float key rounds to all zeros (1e-50 once ran, exit 0,
# with a needle of -0 and 0 that no query could find)
rb_cli_error(needle_strength_tiny 2 "needle\\.strength = -1e-50: below 1e-30 in magnitude the planted key vanishes"
  ${R} --set needle.strength=-1e-50)
# output that cannot reach its reader (a full disk) is a failure, named, not exit 0 (the
# path as sh's $0, so that one with blanks stays one word)
rb_cli_error(stdout_full 1 "ropebench: freqs: cannot write to standard output: No space left on device"
  sh -c "exec \"$0\" freqs --method yarn > /dev/full" ${RB_EXE})
rb_add_test(NAME cli_subnormal_value COMMAND ${R} --set study.datasets=spectral
  --set spectral.coherence=1e-310)
set_tests_properties(cli_subnormal_value PROPERTIES LABELS "cli")
rb_cli_error(syntax_first 2 "syntax_first.ini:2: syntax error" ${R} -c ${RB_WORK}/syntax_first.ini)
rb_cli_error(unterminated 2 "unterminated.ini:1: section header without its closing" ${R} -c ${RB_WORK}/unterminated.ini)
rb_cli_error(no_section 2 "no_section.ini:1: key head_dim before any \\[section\\]" ${R} -c ${RB_WORK}/no_section.ini)
rb_cli_error(value_too_long 2 "model.head_dim = '64 .*not an integer \\(too long\\)" ${R} "--set=model.head_dim=64                                                                    garbage")
# a control character in a value is shown escaped: the message stays one line
rb_cli_error(set_value_newline 2 "^ropebench: --set model.layout: value 'neo\\\\nx' has a control character \\(\\\\x0a\\), which a study file cannot hold$" ${R} "--set=model.layout=neo\nx")
string(ASCII 1 _rb_soh)
file(WRITE ${RB_WORK}/control_char.ini "[model]\nlayout = ne${_rb_soh}ox\n")
rb_cli_error(file_value_control 2 "control_char.ini:2: model.layout = 'ne\\\\x01ox' has a control character \\(\\\\x01\\), which a study file cannot hold" ${R} -c ${RB_WORK}/control_char.ini)
# values the stored study could not hold as they are (it is INI text that Regenerate
# runs): a newline or ';' after a blank from --set, a carriage return inside a line
rb_cli_error(set_value_newline_stored 2 "^ropebench: --set scaling.methods: value 'none,\\\\npi' has a control character" ${R} "--set=scaling.methods=none,\npi")
rb_cli_error(set_value_comment 2 "^ropebench: --set file.path: value '/d/a ;b' has ';' after a blank, which a study file reads as the start of a comment$" ${R} "--set=file.path=/d/a $<SEMICOLON>b")
file(WRITE ${RB_WORK}/cr_only.ini "[model]\rhead_dim = 64\r")
rb_cli_error(cr_only 2 "cr_only.ini:1: a carriage return inside the line" ${R} -c ${RB_WORK}/cr_only.ini)
file(WRITE ${RB_WORK}/empty_unknown_section.ini "[model]\nhead_dim = 64\n[modle]\n")
rb_cli_error(empty_unknown_section 2 "empty_unknown_section.ini:3: unknown section \\[modle\\]$" ${R} -c ${RB_WORK}/empty_unknown_section.ini)
# a file with no line ends is not read into memory whole
rb_cli_error(config_no_line_ends 2 "pagemap:1: a line longer than 1024 KiB" ${R} -c /proc/self/pagemap)
# comments as libinih read them: after a section's ']', and ';' after a blank; a '#'
# inside a value is part of it
file(WRITE ${RB_WORK}/comments.ini "[model] ; the model\nhead_dim = 64\n[study];x\ndatasets = file\n"
  "[file]#y\npath = /data/run #2.h5 ; a comment\n")
rb_add_test(NAME cli_comments COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R} -c ${RB_WORK}/comments.ini --set study.datasets=gaussian)
set_tests_properties(cli_comments PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "head_dim = 64\n.*path = /data/run #2.h5\n")
# a key set away from its default that nothing in the study reads is named in a note
# (one line per group, the run goes on); the same keys with their reader on, or the
# default study, give none
# (stderr alone: mpiexec forwards stdout and stderr separately, so the resolved study
# could land between the note lines, and the regex below once failed so)
rb_add_test(NAME cli_unused_note COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  sh -c "\"$@\" >/dev/null" sh ${R}
  --set scaling.methods=none,pi
  --set scaling.short_factor=1,2 --set scaling.beta_fast=64 --set study.datasets=gaussian
  --set needle.strength=2)
set_tests_properties(cli_unused_note PROPERTIES LABELS "cli" PASS_REGULAR_EXPRESSION
  "ropebench: note: scaling.beta_fast is set but this study does not use it \\(yarn is not in scaling.methods\\)\nropebench: note: scaling.short_factor is set but this study does not use it \\(longrope is not in scaling.methods\\)\nropebench: note: needle.strength is set but this study does not use it \\(needle is not in study.datasets\\)\n")
rb_add_test(NAME cli_unused_note_none COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R} -c ${RB_WORK}/long_lines.ini
  --set scaling.methods=longrope,yarn --set scaling.beta_fast=64 --set needle.strength=2)
set_tests_properties(cli_unused_note_none PROPERTIES LABELS "cli" FAIL_REGULAR_EXPRESSION "note:"
  PASS_REGULAR_EXPRESSION "short_factor = 1.0,")
# a study refused after its keys were read (a probe position past its length) says its
# reason alone: the notes come once every check has passed
rb_add_test(NAME cli_unused_note_refused COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 2
  ${R} --set study.modes=probe
  --set study.seq_lens=64 --set study.probe_seq_lens=64 --set study.probe_positions=64)
set_tests_properties(cli_unused_note_refused PROPERTIES LABELS "cli" FAIL_REGULAR_EXPRESSION "note:"
  PASS_REGULAR_EXPRESSION "study.probe_positions: 64 is outside a sequence of 64 tokens")
# the same for a --resume refused once the ranks are up (another study in the file)
rb_add_test(NAME cli_unused_note_resume_refused COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 2
  sh -c
  "cp \"$0\" \"$1\" && shift && exec \"$@\""
  ${RB_WORK}/small_np1.h5 ${RB_WORK}/note-resume.h5 ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q
  -c ${RB_SMALL} --set needle.strength=2 --set study.datasets=gaussian --resume
  -o ${RB_WORK}/note-resume.h5)
set_tests_properties(cli_unused_note_resume_refused PROPERTIES LABELS "cli"
  FIXTURES_REQUIRED small_np1 FAIL_REGULAR_EXPRESSION "note:"
  PASS_REGULAR_EXPRESSION "--resume: the file was written by a different study")
rb_add_test(NAME cli_unused_note_default COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R})
set_tests_properties(cli_unused_note_default PROPERTIES LABELS "cli" FAIL_REGULAR_EXPRESSION "note:"
  PASS_REGULAR_EXPRESSION "# ropebench resolved study")
rb_cli_error(long_option_value 2 "run: option --resume takes no value \\('--resume=x'\\)" ${RB_EXE} run --resume=x)
rb_cli_error(long_value_then_cluster 2 "run: option --quiet takes no value \\('--quiet=1'\\)" ${RB_EXE} run --quiet=1 -q)
rb_cli_error(long_prefix_value 2 "bench: option --quick takes no value \\('--qu=1'\\)" ${RB_EXE} bench --qu=1)
rb_cli_error(long_ambiguous 2 "run: option '--d' is ambiguous \\(--dump-inputs, --dry-run\\)" ${RB_EXE} run --d)
rb_cli_error(report_unknown_option 2 "report: unknown option '--frob' \\(see ropebench report --help\\)" ${RB_EXE} report --frob x.h5)
rb_add_test(NAME cli_long_lines COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R} -c ${RB_WORK}/long_lines.ini)
set_tests_properties(cli_long_lines PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "head_dim = 128\n.*short_factor = (1\\.0,)+1\\.0\nlong_factor = (1\\.0,)+2\\.0\n")
rb_cli_error(seq_len_twice 2 "study.seq_lens: 64 listed twice" ${R} --set study.seq_lens=64,128,64)
rb_cli_error(probe_len_twice 2 "study.probe_seq_lens: 1048576 listed twice" ${R} --set study.probe_seq_lens=1M,1048576)
# the metrics' distance bins need 2 tokens: a 1-token case is refused before any work
# (it failed only after the results file was replaced), unless the metrics are off
set(RL1 ${R} --set study.shard_layout=contiguous --set study.datasets=gaussian)
rb_cli_error(seq_len_1_metrics 2 "^ropebench: study.seq_lens: seq_len 1 is too short for the metrics" ${RL1} --set study.seq_lens=1)
rb_cli_error(probe_len_1_metrics 2 "^ropebench: study.probe_seq_lens: seq_len 1 is too short for the metrics" ${RL1} --set study.probe_seq_lens=64,1)
rb_add_test(NAME cli_seq_len_1_no_metrics COMMAND ${RL1} --set study.seq_lens=1
  --set study.modes=full --set metrics.enabled=false)
set_tests_properties(cli_seq_len_1_no_metrics PROPERTIES LABELS "cli")
# original_ctx up to 2^26: metric 2's cost is linear in it (2^40 meant hours per case)
rb_cli_error(original_ctx_huge 2 "^ropebench: model.original_ctx = 67108865: above 67108864, the largest supported \\(the phase-distance metric's cost" ${R} --set model.original_ctx=67108865)
rb_cli_error(original_ctx_1 2 "^ropebench: model.original_ctx = 1: must be in \\[2, 67108864\\]" ${R} --set model.original_ctx=1)
rb_cli_error(af_same_label 2 "scaling.attention_factor: 1 and 1.0000001 both name their cases -af1" ${R} --set scaling.attention_factor=1,1.0000001)
rb_cli_error(ntk_rotary_2 2 "scaling.methods: ntk at seq_len 4096: rotary_dim: must be > 2" ${R} --set model.rotary_dim=2 --set scaling.methods=ntk)
rb_cli_error(factor_huge 2 "scaling.factor = 1e20: must be <= 1e6" ${R} --set scaling.factor=1e20)
rb_cli_error(base_1 2 "model.base = 1: must be in .1.0000001, 1e.12" ${R} --set model.base=1)
rb_cli_error(option_in_cluster 2 "run: unknown option '-x'" ${RB_EXE} run -q -xy)
rb_cli_error(bench_empty_item 2 "bench: --threads ',': expected a list" ${RB_EXE} bench --threads ,)
rb_cli_error(bench_option_in_cluster 2 "bench: unknown option '-x'" ${RB_EXE} bench --reps 3 -xy)
rb_cli_error(freqs_seq_len_overflow 2 "--seq-len '99999999999999999999': not an integer" ${RB_EXE} freqs --method pi --seq-len 99999999999999999999)
rb_cli_error(report_empty_dir 2 "report: -o .*: an empty directory name" ${RB_EXE} report ${RB_WORK}/not_a_results.h5 --output=)
rb_cli_error(output_not_regular 2 "-o /dev/null: not a regular file" ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q -c ${RB_SMALL} -o /dev/null)
configure_file(${RB_SMALL} ${RB_WORK}/self_output.ini COPYONLY)
rb_cli_error(output_is_config 2 "-o .*self_output.ini is the study's config file" ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q -c ${RB_WORK}/self_output.ini -o ${RB_WORK}/self_output.ini)
rb_cli_error(bench_output_not_regular 2 "bench: -o /dev/null: not a regular file" ${RB_EXE} bench --quick -o /dev/null)
rb_cli_error(bench_output_no_dir 2 "bench: -o .*/no-such-dir/x.h5: its directory does not exist" ${RB_EXE} bench --quick -o ${RB_WORK}/no-such-dir/x.h5)
# -o a symbolic link that points into a missing directory: the link's target is checked
# (it was the link's own directory, so bench measured everything and then failed in
# H5Fcreate with MPI's message); relative links and chains of links followed
file(CREATE_LINK ${RB_WORK}/no-such-dir/x.h5 ${RB_WORK}/dangling_abs.h5 SYMBOLIC)
file(CREATE_LINK no-such-dir/y.h5 ${RB_WORK}/dangling_rel.h5 SYMBOLIC)
file(CREATE_LINK dangling_rel.h5 ${RB_WORK}/dangling_chain.h5 SYMBOLIC)
rb_cli_error(bench_output_dangling_link 2 "^ropebench: bench: -o .*/dangling_abs.h5: a symbolic link to .*/no-such-dir/x.h5, whose directory does not exist or cannot be written$" ${RB_EXE} bench --quick -o ${RB_WORK}/dangling_abs.h5)
rb_cli_error(output_dangling_link_chain 2 "^ropebench: -o .*/dangling_chain.h5: a symbolic link to .*/cli/no-such-dir/y.h5, whose directory" ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q -c ${RB_SMALL} -o ${RB_WORK}/dangling_chain.h5)
# the on/off environment switches take 0 or 1: "off" left huge pages on, silently
rb_cli_error(env_hugepages_word 2 "^ropebench: bench: ROPEBENCH_HUGEPAGES=off: expected 0 \\(off\\) or 1" ${CMAKE_COMMAND} -E env ROPEBENCH_HUGEPAGES=off ${RB_EXE} bench --quick)
rb_cli_error(env_probe_balance_2 2 "^ropebench: ROPEBENCH_PROBE_BALANCE=2: expected 0 \\(off\\) or 1" ${CMAKE_COMMAND} -E env ROPEBENCH_PROBE_BALANCE=2 ${R})
rb_cli_error(env_bf16_amx 2 "^ropebench: ROPEBENCH_BF16_AMX=on: expected 0 \\(off\\) or 1" ${CMAKE_COMMAND} -E env ROPEBENCH_BF16_AMX=on ${R})
rb_cli_error(spectral_amplitudes_unused 2 "^ropebench: spectral.amplitudes: given, but spectral.profile = low makes its own" ${R} --set spectral.amplitudes=1,2)
rb_cli_error(missing_config 2 "nonexistent.ini: cannot open config: No such file" ${R} -c ${RB_WORK}/nonexistent.ini)
rb_cli_error(unreadable_config 2 "cannot read config" ${R} -c ${RB_WORK})
# a config must be a regular file: /dev/null ran the default study, a FIFO blocked the
# open forever; an empty name is called one
rb_cli_error(config_not_regular 2 "^ropebench: -c /dev/null: not a regular file$" ${R} -c /dev/null)
rb_cli_error(config_empty_name 2 "^ropebench: -c: empty file name$" ${R} --config=)
find_program(RB_MKFIFO mkfifo)
if(RB_MKFIFO AND NOT EXISTS ${RB_WORK}/fifo.ini)
  execute_process(COMMAND ${RB_MKFIFO} ${RB_WORK}/fifo.ini)
endif()
if(EXISTS ${RB_WORK}/fifo.ini)
  rb_cli_error(config_fifo 2 "^ropebench: -c .*/fifo.ini: not a regular file$" ${R} -c ${RB_WORK}/fifo.ini)
  set_tests_properties(cli_error_config_fifo PROPERTIES TIMEOUT 60)
endif()
# a 1 GiB line (no line end) under an 800 MB address-space limit: refused at 1 MiB,
# never read whole (getline's ENOMEM there once ended the read as if at the end of the
# file, and the default study ran, exit 0); not under ASan, which cannot start with
# such a limit
if(NOT RB_SANITIZE)
  rb_add_test(NAME cli_error_config_read_error COMMAND sh -c
    "f=$1 && shift && truncate -s 1G \"$f\" && ulimit -v 800000 && exec \"$@\""
    sh ${RB_WORK}/huge_line.ini ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2
    "^ropebench: .*huge_line.ini:1: a line longer than 1024 KiB \\(not a study file\\?\\)$"
    -- ${R} -c ${RB_WORK}/huge_line.ini)
  set_tests_properties(cli_error_config_read_error PROPERTIES LABELS "cli")
endif()
rb_cli_error(set_unknown 2 "--set model.hed_dim: unknown key" ${R} --set model.hed_dim=64)
rb_cli_error(set_malformed 2 "expected section.key=value" ${R} --set head_dim)
rb_cli_error(not_integer 2 "model.head_dim = 'abc': not an integer" ${R} --set model.head_dim=abc)
rb_cli_error(odd_head_dim 2 "model.head_dim = 127: must be even" ${R} --set model.head_dim=127)
rb_cli_error(rotary_gt_head 2 "model.rotary_dim = 256: must be in \\[2, 128\\] \\(128 = model.head_dim\\)$" ${R} --set model.rotary_dim=256)
rb_cli_error(factor_lt_1 2 "scaling.factor = 0.5: must be >= 1" ${R} --set scaling.factor=0.5)
rb_cli_error(unknown_method 2 "scaling.methods: unknown value 'rope2'" ${R} --set scaling.methods=yarn,rope2)
rb_cli_error(spectral_amplitude_tiny 2 "spectral.amplitudes: 1e-50 is neither 0 nor at least 1e-30" ${R} --set study.datasets=spectral --set spectral.profile=list --set model.head_dim=4 --set spectral.amplitudes=1e-50,1)
rb_cli_error(dup_method 2 "scaling.methods: 'yarn' listed twice" ${R} --set scaling.methods=yarn,yarn)
rb_cli_error(longrope_no_factors 2 "scaling.short_factor: longrope needs 64 values" ${R} --set scaling.methods=longrope)
rb_cli_error(beta 2 "scaling.beta_fast = 1: must be greater than scaling.beta_slow" ${R} --set scaling.beta_fast=1)
rb_cli_error(bool 2 "scaling.truncate = 'maybe': not a boolean \\(true\\|false\\|yes\\|no\\|on\\|off\\|1\\|0\\)$" ${R} --set scaling.truncate=maybe)
rb_cli_error(seq_len_multiple 2 "study.seq_lens: seq_len 4097 is not a multiple of 2" ${R} --set study.seq_lens=4097)
rb_cli_error(bad_layout 2 "study.shard_layout: unknown value 'ring'" ${R} --set study.shard_layout=ring)
rb_cli_error(dtype_mismatch 2 "ROPEBENCH_ISA=ref computes fp32, but study.dtype = bf16" ${CMAKE_COMMAND} -E env ROPEBENCH_ISA=ref ${R} --set study.dtype=bf16)
rb_cli_error(bad_dtype 2 "study.dtype = 'fp16': unknown" ${R} --set study.dtype=fp16)
rb_cli_error(bad_threads 2 "study.threads = 0: must be in" ${R} --set study.threads=0)
rb_cli_error(memory 2 "study.probe_seq_lens: .* need .* GiB on this host \\(1 rank here\\), more than the 1 GiB limit" ${R} --set study.probe_seq_lens=1G --set study.memory_limit_gib=1)
rb_cli_error(memory_small_limit 2 "more than the 0.001 GiB limit" ${R} --set study.memory_limit_gib=0.001)
rb_cli_error(needle_outside 2 "^ropebench: needle.positions: needle 0 at -100 is outside a sequence of 64 tokens$" ${R} --set study.seq_lens=64 --set study.modes=full --set needle.positions=-100 --set needle.query_positions=-1)
rb_cli_error(needle_query_outside 2 "^ropebench: needle.query_positions: needle 0's query at 64 is outside a sequence of 64 tokens$" ${R} --set study.seq_lens=64 --set study.modes=full --set needle.positions=1 --set needle.query_positions=64)
# from a file, the error names the line of the key it names
file(WRITE ${RB_WORK}/needle_outside.ini "[study]\nseq_lens = 256\nmodes = full\ndatasets = needle\n[needle]\npositions = -300\nquery_positions = -1\n")
rb_cli_error(needle_outside_line 2 "^ropebench: [^ ]*needle_outside.ini:6: needle.positions: needle 0 at -300" ${R} -c ${RB_WORK}/needle_outside.ini)
# two needles on one key: the dataset plants one of them, the other was scored as a miss
rb_cli_error(needle_same_key 2 "^ropebench: needle.positions: needles 0 and 1 are both at key position 251 of 256 tokens" ${R} --set study.seq_lens=256 --set study.modes=full --set needle.positions=-5,-5 --set needle.query_positions=-1,-2)
rb_cli_error(needle_same_key_spelled 2 "needles 0 and 1 are both at key position 254 of 256 tokens" ${R} --set study.seq_lens=256 --set study.modes=full --set needle.positions=254,-2 --set needle.query_positions=-1,-1)
# probe mode on seq_lens (probe_seq_lens empty): its errors name seq_lens and its line
file(WRITE ${RB_WORK}/probe_from_full.ini "[study]\nmodes = probe\nshard_layout = zigzag\nseq_lens = 255\nprobe_seq_lens =\n")
rb_cli_error(probe_from_full_line 2 "probe_from_full.ini:4: study.seq_lens: seq_len 255 is not a multiple of 2" ${R} -c ${RB_WORK}/probe_from_full.ini)
rb_cli_error(probe_from_full_memory 2 "^ropebench: study.seq_lens: 4096 tokens in probe mode need" ${R} --set study.modes=probe --set study.probe_seq_lens= --set study.seq_lens=4096 --set study.memory_limit_gib=0.001)
rb_cli_error(needle_after_query 2 "needle.positions: needle 0 at 10 comes after its query at 5" ${R} --set needle.positions=10 --set needle.query_positions=5)
rb_cli_error(needle_count 2 "needle.query_positions: 1 entries, but needle.positions has 2" ${R} --set needle.positions=1,2 --set needle.query_positions=5)
rb_cli_error(dump_too_big 2 "--dump-inputs: 1048576 tokens" ${R} --dump-inputs)
rb_cli_error(unknown_option 2 "run: unknown option '--frobnicate'" ${RB_EXE} run --frobnicate)
rb_cli_error(unknown_command 2 "unknown command 'walk'" ${RB_EXE} walk)
rb_cli_error(isa_unavailable 2 "ROPEBENCH_ISA=avx9000: unknown kernel" ${CMAKE_COMMAND} -E env ROPEBENCH_ISA=avx9000 ${R})
# out-of-range values shown as written (%g would print 1000001 as 1e+06), and a value
# past a double's range named as such
rb_cli_error(factor_as_written 2 "scaling.factor = 1000001: must be <= 1e6" ${R} --set scaling.factor=1000001)
rb_cli_error(base_as_written 2 "model.base = 1.00000001: must be in \\[1.0000001, 1e\\+12\\]" ${R} --set model.base=1.00000001)
# a key name too long for the parser's buffers is refused, not cut to a valid key
rb_cli_error(set_key_long 2 "^ropebench: --set 'model.head_dim +\\.\\.\\.': unknown key \\(name too long\\)$" ${R} "--set=model.head_dim                                                            junk=64")
rb_cli_error(set_section_long 2 "unknown key \\(name too long\\)$" ${R} "--set=model                                                                      junk.head_dim=48")
# an input only rank 1 refuses (its own ROPEBENCH_ISA; a study file missing where it
# runs): that rank says why, naming itself, instead of the job ending with exit 2 and no
# word (only rank 0 spoke before MPI_Init)
file(WRITE ${RB_WORK}/rank1_isa.sh
  "[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && export ROPEBENCH_ISA=bogus\nexec \"$@\"\n")
rb_cli_error(rank1_only_isa 2 "^ropebench: rank 1: ROPEBENCH_ISA=bogus: unknown kernel" ${RB_MPIEXEC_CMD} 2 sh ${RB_WORK}/rank1_isa.sh ${RB_EXE} run --dry-run -q)
# the same where rank 1 also has a file-size limit below what MPI_Init needs: it cannot
# start MPI to agree, so it says its line itself
file(WRITE ${RB_WORK}/rank1_isa_fsize.sh
  "[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && ulimit -f 8192 && export ROPEBENCH_ISA=bogus\nexec \"$@\"\n")
rb_cli_error(rank1_only_isa_fsize 2 "^ropebench: rank 1: ROPEBENCH_ISA=bogus: unknown kernel" ${RB_MPIEXEC_CMD} 2 sh ${RB_WORK}/rank1_isa_fsize.sh ${RB_EXE} run --dry-run -q)
file(MAKE_DIRECTORY ${RB_WORK}/rank1_elsewhere)
file(WRITE ${RB_WORK}/rank1_study.ini "[study]\nheads = 1\n")
file(WRITE ${RB_WORK}/rank1_cd.sh
  "cd '${RB_WORK}'\n[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && cd '${RB_WORK}/rank1_elsewhere'\nexec \"$@\"\n")
rb_cli_error(rank1_only_config 2 "^ropebench: rank 1: .*rank1_study.ini" ${RB_MPIEXEC_CMD} 2 sh ${RB_WORK}/rank1_cd.sh ${RB_EXE} run --dry-run -q -c rank1_study.ini)
# scripts/mpirun.sh: a rank count that is not a whole number >= 1 is refused (mpirun
# read -n 0 as every slot), as is a missing program; one line, exit 2
add_test(NAME cli_mpirun_sh_args COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/mpirun_sh_args.sh
  ${CMAKE_SOURCE_DIR}/scripts/mpirun.sh)
set_tests_properties(cli_mpirun_sh_args PROPERTIES LABELS "cli")
# scripts/mpirun.sh through the real mpirun: a rank killed by a signal named in one line
# (--quiet said nothing), statuses and stdin passed through, TERM/INT/HUP passed on
rb_add_test(NAME cli_mpirun_sh_signals COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/mpirun_sh_signals.sh
  ${CMAKE_SOURCE_DIR}/scripts/mpirun.sh ${RB_PYTHON} LABELS "cli;mpi" TIMEOUT 300)
set_tests_properties(cli_mpirun_sh_signals PROPERTIES PROCESSORS 2)
# signals to scripts/mpirun.sh running a study reach mpirun once (a terminal's Ctrl-C and
# a kill of the job went to mpirun too, and the script passed a second on, which Open
# MPI takes as "kill now": the lock and a partial file were left): Ctrl-C typed between
# cases and mid-write, SIGINT from a program at a terminal, SIGTERM to the job's group
rb_add_test(NAME cli_mpirun_sh_ctrl_c COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/mpirun_sh_ctrl_c.py ${CMAKE_SOURCE_DIR}/scripts/mpirun.sh
  $<TARGET_FILE:ropebench> ${CMAKE_CURRENT_BINARY_DIR}/mpirun_sh_ctrl_c LABELS "cli;mpi"
  TIMEOUT 300)
set_tests_properties(cli_mpirun_sh_ctrl_c PROPERTIES PROCESSORS 2 SKIP_RETURN_CODE 77)
# report A B where B is A by another name: refused, not a comparison of equal figures
rb_cli_error(report_same_file 2 "^ropebench: report: '.*small_np1.h5' and '.*/\\./small_np1.h5' are the same file" ${RB_EXE} report ${RB_WORK}/small_np1.h5 ${RB_WORK}/./small_np1.h5 -o ${RB_WORK}/same-file-report)
set_tests_properties(cli_error_report_same_file PROPERTIES FIXTURES_REQUIRED small_np1)
# freqs builds its schedule at its own seq_len, and reads no study input: an error names
# that length (it named the study's 4096), and a study whose file.path is not on this
# machine still gives its table
rb_cli_error(freqs_ntk_dim2 2 "^ropebench: freqs: ntk at seq_len 100: rotary_dim: must be > 2 for method ntk" ${RB_EXE} freqs -m ntk --head-dim 2 --seq-len 100)
file(WRITE ${RB_WORK}/freqs_file_study.ini "[study]\ndatasets = file\n[file]\npath = /nonexistent/qkv.h5\n")
rb_add_test(NAME cli_freqs_study_file_elsewhere COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RB_EXE} freqs -c ${RB_WORK}/freqs_file_study.ini -m yarn)
set_tests_properties(cli_freqs_study_file_elsewhere PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "correction range \\[20, 46\\]")
# values compared with a bound or another key are shown as written, not rounded by %g
# onto what they are compared with
rb_cli_error(factor_below_1_written 2 "scaling.factor = 0.99999999999: must be >= 1" ${R} --set scaling.factor=0.99999999999)
rb_cli_error(factor_above_written 2 "scaling.factor = 1000000.00001: must be <= 1e6" ${R} --set scaling.factor=1000000.00001)
rb_cli_error(beta_written 2 "scaling.beta_fast = 1.0000001: must be greater than scaling.beta_slow = 1.0000002" ${R} --set scaling.beta_fast=1.0000001 --set scaling.beta_slow=1.0000002)
rb_cli_error(llama3_freq_written 2 "scaling.high_freq_factor = 4: must be greater than scaling.low_freq_factor = 4.000001" ${R} --set scaling.low_freq_factor=4.000001)
rb_cli_error(amplitude_written 2 "spectral.amplitudes: 9.999999999999e-31 is neither 0" ${R} --set study.datasets=spectral --set spectral.profile=list --set model.head_dim=4 --set spectral.amplitudes=1,9.999999999999e-31)
# numbers are decimal: strtod would read a hexadecimal float (model.base=0x10 was 16)
rb_cli_error(base_hex 2 "^ropebench: model.base = '0x10': not a decimal number" ${R} --set model.base=0x10)
rb_cli_error(strength_hex 2 "^ropebench: needle.strength = '-0X1p1': not a decimal number" ${R} --set needle.strength=-0X1p1)
rb_cli_error(factor_underflow 2 "scaling.factor = '1e-400': outside the range of a double" ${R} --set scaling.factor=1e-400)
# ROPEBENCH_ISA outside a study: info reports an unknown one on stderr too; bench
# measures the kernel it names, and refuses a --kernels that names another
rb_cli_error(info_isa_unknown 2 "info: ROPEBENCH_ISA=avx9000: unknown kernel" ${CMAKE_COMMAND} -E env ROPEBENCH_ISA=avx9000 ${RB_EXE} info)
rb_cli_error(bench_isa_unknown 2 "bench: ROPEBENCH_ISA: unknown kernel 'avx9000'" ${CMAKE_COMMAND} -E env ROPEBENCH_ISA=avx9000 ${RB_EXE} bench --quick)
rb_cli_error(bench_isa_conflict 2 "bench: ROPEBENCH_ISA=ref and --kernels blas choose different kernels" ${CMAKE_COMMAND} -E env ROPEBENCH_ISA=ref ${RB_EXE} bench --quick --kernels blas)
rb_cli_error(run_empty_output 2 "^ropebench: -o: empty file name$" ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q --output=)
rb_cli_error(freqs_no_method 2 "freqs: --method is required" ${RB_EXE} freqs)
rb_cli_error(freqs_bad_factor 2 "^ropebench: freqs: --factor: scaling.factor = 0.25: must be >= 1" ${RB_EXE} freqs --method pi --factor 0.25)
# a value given by an option is named by that option as well as by its config key
rb_cli_error(freqs_method_typo 2 "^ropebench: freqs: --method: scaling.methods: unknown value 'yarnn'" ${RB_EXE} freqs --method yarnn)
# an option and a --set of the same key (the later used to win without a word)
rb_cli_error(freqs_option_and_set 2 "^ropebench: freqs: --factor and --set scaling.factor=0.25 both set scaling.factor: give it once$" ${RB_EXE} freqs --method pi --factor 2 --set scaling.factor=0.25)
rb_cli_error(freqs_method_and_set 2 "^ropebench: freqs: --method and --set scaling.methods=pi both set scaling.methods" ${RB_EXE} freqs --method yarn --set scaling.methods=pi)
rb_cli_error(freqs_set_not_option 2 "^ropebench: model.head_dim = 63: must be even$" ${RB_EXE} freqs --method pi --set model.head_dim=63)
rb_cli_error(report_missing 2 "nonexistent.h5" ${RB_EXE} report ${RB_WORK}/nonexistent.h5 -o ${RB_WORK}/r0)
rb_cli_error(report_not_hdf5 2 "not_a_results.h5" ${RB_EXE} report ${RB_WORK}/not_a_results.h5 -o ${RB_WORK}/r1)
# the same validation under mpirun on 2 ranks: still one line (rank 0 speaks), exit 2
rb_add_test(NAME cli_error_mpi_factor COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2 "scaling.factor = 0.5: must be >= 1" --
  ${RB_MPIEXEC_CMD} 2 ${RB_EXE} run -q --set scaling.factor=0.5)
rb_add_test(NAME cli_error_mpi_zigzag COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 2 "not a multiple of 6 required by zigzag on 3 ranks" --
  ${RB_MPIEXEC_CMD} 3 ${RB_EXE} run -q -c ${RB_SMALL} --set study.seq_lens=244)

# probe_rows gives that many distinct probe rows (log spacing is finer than one token at
# the low end: the rows there are 0, 1, 2, ...), or every position when it exceeds L
set(RP ${R} --set study.modes=probe --set study.datasets=gaussian --set scaling.methods=none)
rb_add_test(NAME cli_probe_rows_distinct COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RP})
set_tests_properties(cli_probe_rows_distinct PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "none-L1048576-probe-gaussian +512 ")
rb_add_test(NAME cli_probe_rows_all COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RP} --set study.seq_lens=64
  --set study.probe_seq_lens=64 --set study.probe_rows=100)
set_tests_properties(cli_probe_rows_all PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "none-L64-probe-gaussian +64 ")

# scaling.attention_factor as a list: one yarn case per value in one study, names,
# factors, entropy falling with the factor, full and probe mode, and the report
rb_cli_error(af_twice 2 "scaling.attention_factor: 'auto' listed twice" ${R}
  --set scaling.attention_factor=auto,auto)
rb_add_test(NAME e2e_attention_factor_list COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/attention_factor.py ${RB_WORK}/af ${RB_EXE} ${RB_SMALL}
  -- ${RB_MPIEXEC_CMD})
# logits in the thousands (attention factor 40): rows that see part of a key block meet
# keys scoring far above their lse; the metrics stay finite (and, under the ASan/UBSan
# preset, free of undefined behaviour)
rb_add_test(NAME e2e_large_logits COMMAND ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q
  -o ${RB_WORK}/large_logits.h5 --set study.threads=1 --set study.seq_lens=64
  --set study.probe_seq_lens=64 --set study.datasets=gaussian --set study.modes=probe
  --set scaling.methods=yarn --set scaling.attention_factor=40)
set_tests_properties(e2e_large_logits PROPERTIES LABELS "cli" FIXTURES_SETUP large_logits)
rb_add_test(NAME e2e_large_logits_finite COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/large_logits_finite.py ${RB_WORK}/large_logits.h5)
set_tests_properties(e2e_large_logits_finite PROPERTIES LABELS "cli" FIXTURES_REQUIRED large_logits)

# smoke: help, version, info, freqs
foreach(sub run report freqs info)
  rb_add_test(NAME cli_help_${sub} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RB_EXE} ${sub} --help)
  set_tests_properties(cli_help_${sub} PROPERTIES PASS_REGULAR_EXPRESSION "usage: ")
endforeach()
rb_add_test(NAME cli_version COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RB_EXE} --version)
set_tests_properties(cli_version PROPERTIES PASS_REGULAR_EXPRESSION "^ropebench [0-9]+\\.[0-9]+\\.[0-9]+")
rb_add_test(NAME cli_info COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RB_EXE} info)
set_tests_properties(cli_info PROPERTIES PASS_REGULAR_EXPRESSION "kernel +(ref|blas|avx512|avx512_bf16) \\(.*hdf5 +1\\.")
# freqs: YaRN s=10, L0=2048 (the issue's known values): range (16, 41), pair 17
# freqs prints the issue's known schedule values
rb_add_test(NAME cli_freqs_known COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/freqs_known.py ${RB_EXE})
# size suffixes mean what they mean in a study file (rb_cli_parse_count)
rb_add_test(NAME cli_freqs_seq_len_suffix COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RB_EXE} freqs --method none --seq-len 1K)
set_tests_properties(cli_freqs_seq_len_suffix PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "seq_len 1024\n")
# in either case, as docs/config.md says (m and g were refused as "not an integer")
foreach(_s 2m:2097152 1g:1073741824 3k:3072)
  string(REPLACE ":" ";" _p ${_s})
  list(GET _p 0 _in)
  list(GET _p 1 _want)
  rb_add_test(NAME cli_freqs_seq_len_suffix_${_in} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${RB_EXE} freqs --method none
    --seq-len ${_in})
  set_tests_properties(cli_freqs_seq_len_suffix_${_in} PROPERTIES LABELS "cli"
    PASS_REGULAR_EXPRESSION "seq_len ${_want}\n")
endforeach()
rb_cli_error(int_overflow 2 "study.heads = '99999999999999999999K': outside the range of a 64-bit integer" ${R} --set study.heads=99999999999999999999K)
rb_add_test(NAME cli_docs_keys COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/docs_keys.py
  ${RB_EXE} ${CMAKE_SOURCE_DIR}/docs/config.md)

# the small study on 1 rank (reference) and on 2, 3, 4 ranks x every layout
rb_add_mpi_test(NAME e2e_small_np1 NP 1 COMMAND ${RB_EXE} run -q -c ${RB_SMALL}
  --set study.shard_layout=contiguous --dump-inputs -o ${RB_WORK}/small_np1.h5)
set_tests_properties(e2e_small_np1 PROPERTIES FIXTURES_SETUP small_np1)
# the strict (1e-6) rank/layout comparisons use the reference kernel; the fast kernels
# are compared with their own bounds below
set_property(TEST e2e_small_np1 APPEND PROPERTY ENVIRONMENT ROPEBENCH_ISA=ref)
# the one test run whose peaks are measured at full size (256 MiB arrays), as users' are
set_property(TEST e2e_small_np1 APPEND PROPERTY ENVIRONMENT ROPEBENCH_TEST_QUICK_PEAKS=0)
foreach(np 1 2 3 4)
  foreach(layout contiguous zigzag striped)
    if(np EQUAL 1 AND layout STREQUAL contiguous)
      continue()
    endif()
    set(t e2e_small_${layout}_np${np})
    rb_add_mpi_test(NAME ${t}_run NP ${np} COMMAND ${RB_EXE} run -q -c ${RB_SMALL}
      --set study.shard_layout=${layout} --dump-inputs -o ${RB_WORK}/${t}.h5)
    set_tests_properties(${t}_run PROPERTIES FIXTURES_SETUP ${t})
    set_property(TEST ${t}_run APPEND PROPERTY ENVIRONMENT ROPEBENCH_ISA=ref)
    rb_add_test(NAME ${t}_equal COMMAND ${RB_PYTHON}
      ${CMAKE_CURRENT_SOURCE_DIR}/compare_results.py ${RB_WORK}/small_np1.h5 ${RB_WORK}/${t}.h5
      --rtol 1e-6)
    set_tests_properties(${t}_equal PROPERTIES FIXTURES_REQUIRED "small_np1;${t}")
    # and its metrics against 1 rank's (docs/metrics.md; until 2026-12-03 only three
    # of the eleven were compared)
    rb_add_test(NAME metrics_ranks_${t} COMMAND ${RB_PYTHON}
      ${CMAKE_CURRENT_SOURCE_DIR}/compare_metrics.py ${RB_WORK}/small_np1.h5 ${RB_WORK}/${t}.h5)
    set_tests_properties(metrics_ranks_${t} PROPERTIES FIXTURES_REQUIRED "small_np1;${t}")
  endforeach()
endforeach()

# a second run on a results file that a first run is writing is refused (OUT.lock)
rb_add_test(NAME e2e_concurrent_output COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/concurrent_output.py ${RB_WORK}/concurrent ${RB_EXE} ${RB_SMALL}
  -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_concurrent_output PROPERTIES LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 600)
# Ctrl-C or kill: one line, no staging or lock file left, an old results file intact, a
# new one resumable
rb_add_test(NAME e2e_stop_signal COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/stop_signal.py ${RB_WORK}/stop ${RB_EXE} ${RB_SMALL}
  -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_stop_signal PROPERTIES LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 600)
rb_add_test(NAME e2e_interrupted_resume COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/interrupted.py
  ${RB_WORK} ${RB_EXE} ${RB_SMALL} ${RB_WORK}/small_np1.h5 -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_interrupted_resume PROPERTIES FIXTURES_REQUIRED small_np1)
set_property(TEST e2e_interrupted_resume APPEND PROPERTY ENVIRONMENT ROPEBENCH_ISA=ref)
# a results file that stops taking writes part way (file-size limit, as a full disk):
# exit 1, no hang, the finished cases readable, --resume completes it
rb_add_test(NAME e2e_write_failure COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/write_failure.py
  ${RB_WORK} ${RB_EXE} ${RB_SMALL} ${RB_WORK}/small_np1.h5 -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_write_failure PROPERTIES FIXTURES_REQUIRED small_np1 LABELS "cli;mpi"
  PROCESSORS 2 TIMEOUT 600)
set_property(TEST e2e_write_failure APPEND PROPERTY ENVIRONMENT ROPEBENCH_ISA=ref)
# the progress line's mean entropy: every row and head of the case, on 2 ranks
rb_add_test(NAME e2e_progress_line COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/progress_line.py
  ${RB_WORK}/progress ${RB_EXE} ${RB_SMALL} -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_progress_line PROPERTIES LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 300)
# a probe case's rows: the gaussian case's the same with and without needle in the study,
# the needle case's those plus its queries (recomputed from docs/config.md's rule)
rb_add_test(NAME e2e_probe_rows COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/probe_rows.py
  ${RB_WORK}/probe-rows ${RB_EXE} ${RB_SMALL} -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_probe_rows PROPERTIES LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 300)
# the report's Regenerate section, run as printed, gives the same results
rb_add_test(NAME e2e_regenerate COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/regenerate.py
  ${RB_WORK}/regenerate ${RB_EXE} ${RB_WORK}/small_np1.h5 ${PROJECT_SOURCE_DIR})
set_tests_properties(e2e_regenerate PROPERTIES FIXTURES_REQUIRED small_np1 LABELS "cli;mpi"
  TIMEOUT 600)
rb_add_test(NAME e2e_report_small COMMAND ${RB_EXE} report ${RB_WORK}/small_np1.h5 -o ${RB_WORK}/small_report)
set_tests_properties(e2e_report_small PROPERTIES FIXTURES_REQUIRED small_np1)

# the fast kernels on 1-4 ranks against the 1-rank reference-kernel run (skipped, not
# passed, where a kernel is not built or this CPU cannot run it)
foreach(kv avx512:fp32 blas:fp32 avx512_bf16:bf16)
  string(REPLACE ":" ";" kv "${kv}")
  list(GET kv 0 isa)
  list(GET kv 1 dtype)
  foreach(case 1:contiguous 2:zigzag 3:striped 4:zigzag)
    string(REPLACE ":" ";" case "${case}")
    list(GET case 0 np)
    list(GET case 1 layout)
    set(t e2e_fast_${isa}_${layout}_np${np})
    rb_add_test(NAME ${t} COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/fast_vs_ref.py
      ${RB_WORK} ${RB_EXE} ${RB_SMALL} ${RB_WORK}/small_np1.h5 ${isa} ${dtype} ${np} ${layout}
      -- ${RB_MPIEXEC_CMD})
    set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED small_np1 SKIP_RETURN_CODE 77
      PROCESSORS ${np} LABELS "mpi;fast")
  endforeach()
endforeach()

# a CPU or OS without a feature (ROPEBENCH_TEST_CPU_HIDE clears it after cpuid and
# xgetbv, as there): the automatic choice falls back, a forced kernel that needs it is
# refused naming what is missing, and a run falls back whole (kernel, RoPE, metrics and
# dataset helpers) to results within the fp32 bounds of the reference run
set(hide ${CMAKE_COMMAND} -E env ROPEBENCH_TEST_CPU_HIDE=os_zmm)
rb_cli_error(isa_no_zmm_state 2 "ROPEBENCH_ISA=avx512: not supported by this CPU \\(.*\\): it lacks (.*, )?ZMM state, which the OS does not save \\(XCR0\\) \\(available: ref, blas\\)$"
  ${hide} ROPEBENCH_ISA=avx512 ${R})
rb_cli_error(isa_no_bf16 2 "ROPEBENCH_ISA=avx512_bf16: not supported by this CPU \\(.*\\): it lacks (.*, )?avx512_bf16 \\(available: ref, blas(, avx512)?\\)$"
  ${CMAKE_COMMAND} -E env ROPEBENCH_TEST_CPU_HIDE=avx512_bf16 ROPEBENCH_ISA=avx512_bf16 ${R} --set study.dtype=bf16)
rb_cli_error(dtype_bf16_no_kernel 2 "study.dtype = bf16: no bf16 kernel usable on this CPU \\(available: ref, blas(, avx512)?\\)$"
  ${CMAKE_COMMAND} -E env ROPEBENCH_TEST_CPU_HIDE=avx512_bf16 ${R} --set study.dtype=bf16)
rb_cli_error(cpu_hide_unknown 2 "ROPEBENCH_TEST_CPU_HIDE=os_zmm,avx9: unknown feature 'avx9' \\(known: "
  ${CMAKE_COMMAND} -E env ROPEBENCH_TEST_CPU_HIDE=os_zmm,avx9 ${R})
rb_add_test(NAME info_no_zmm_state COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${hide} ${RB_EXE} info)
set_tests_properties(info_no_zmm_state PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "os_zmm_state=0\nkernel +blas \\(blas: no usable AVX-512 kernel\\)[^\n]*\nROPEBENCH_ISA +\\(unset\\)\nROPEBENCH_TEST_CPU_HIDE +os_zmm ")
# where hwloc cannot load the topology (HWLOC_COMPONENTS=stop), info says so on its two
# lines (they were left out without a word)
rb_add_test(NAME info_no_topology COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${CMAKE_COMMAND} -E env HWLOC_COMPONENTS=stop ${RB_EXE} info)
set_tests_properties(info_no_topology PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "\ntopology +topology unknown \\(hwloc could not load it\\)\nbinding +cpuset unknown \\(hwloc topology not loaded\\)\n")
rb_add_test(NAME e2e_fallback_no_zmm_state COMMAND ${RB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/fast_vs_ref.py
  ${RB_WORK} ${RB_EXE} ${RB_SMALL} ${RB_WORK}/small_np1.h5 auto fp32 2 zigzag -- ${RB_MPIEXEC_CMD})
set_tests_properties(e2e_fallback_no_zmm_state PROPERTIES FIXTURES_REQUIRED small_np1
  PROCESSORS 2 LABELS "mpi;fast")
set_property(TEST e2e_fallback_no_zmm_state APPEND PROPERTY ENVIRONMENT
  ROPEBENCH_TEST_CPU_HIDE=,os_zmm, RB_EXPECT_KERNEL=blas)

# one rank's triad without its arrays: refused naming the rank, not stored as a triad
# of -1 GB/s (every case then recorded a peak the report takes for damage and skipped)
rb_add_test(NAME peaks_alloc_fail_rank1 COMMAND ${CMAKE_COMMAND} -E env
  ROPEBENCH_TEST_ALLOC_FAIL_RANK=1:peaks ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.py 1 "^ropebench: out of memory on rank 1 \\(the peak probes: the triad's 3 arrays of 8 MiB\\)$" --
  ${RB_MPIEXEC_CMD} 2 ${RB_EXE} run -q -c ${RB_SMALL} --set study.modes=full
  --set scaling.methods=none -o ${RB_WORK}/peaks_alloc_fail.h5)
set_tests_properties(peaks_alloc_fail_rank1 PROPERTIES LABELS "cli;mpi" PROCESSORS 2 TIMEOUT 60)

# a file-size limit below what MPI_Init needs for its own files: one line, exit 2,
# before MPI starts (Open MPI's own failure inside MPI_Init was a page of PMIx errors)
rb_cli_error(run_fsize_floor 2 "^ropebench: the file-size limit \\(ulimit -f\\) is 500 KiB: MPI's start-up"
  bash -c "ulimit -f 500 && exec \"$0\" run -q -o \"$1\"" ${RB_EXE} ${RB_WORK}/fsize.h5)
rb_cli_error(bench_fsize_floor 2 "^ropebench: bench: the file-size limit \\(ulimit -f\\) is 500 KiB"
  bash -c "ulimit -f 500 && exec \"$0\" bench --quick --only rope --kernels ref -o \"$1\""
  ${RB_EXE} ${RB_WORK}/fsize-b.h5)

# single-valued options given twice: refused (the second would silently win)
rb_cli_error(run_output_twice 2 "^ropebench: run: -o/--output given twice \\('a.h5', then 'b.h5'\\)$"
  ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run --dry-run -q -o a.h5 --output=b.h5)
rb_cli_error(run_config_twice 2 "^ropebench: run: -c/--config given twice"
  ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run --dry-run -q -c ${RB_SMALL} -c ${RB_SMALL})
rb_cli_error(report_output_twice 2 "^ropebench: report: -o/--output given twice"
  ${RB_EXE} report ${RB_WORK}/nonexistent.h5 -o r1 -o r2)
rb_cli_error(bench_json_twice 2 "^ropebench: bench: --json given twice"
  ${RB_EXE} bench --quick --json a.json --json b.json)

# user text with a control character in it, echoed: escaped, so the message stays one line
rb_cli_error(argument_newline 2 "^ropebench: run: unexpected argument 'extra\\\\narg'$"
  ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run --dry-run -q "extra\narg")
rb_cli_error(bench_kernel_newline 2 "^ropebench: bench: --kernels: unknown kernel 'ref\\\\nx'"
  ${RB_EXE} bench --kernels "ref\nx")
rb_cli_error(run_config_twice_newline 2 "^ropebench: run: -c/--config given twice \\('a\\\\nb.ini', then 'c.ini'\\)$"
  ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q -c "a\nb.ini" -c c.ini)
rb_cli_error(bench_output_twice_tab 2 "^ropebench: bench: -o/--output given twice \\('a', then 'b\\\\tc'\\)$"
  ${RB_EXE} bench -o a -o "b\tc")
rb_cli_error(bench_isa_kernels_newline 2 "^ropebench: bench: ROPEBENCH_ISA=ref and --kernels ref\\\\nx choose different kernels"
  ${CMAKE_COMMAND} -E env ROPEBENCH_ISA=ref ${RB_EXE} bench --kernels "ref\nx")

# single-valued options of freqs and bench given twice: refused (the second would win);
# a list that names a shape twice would measure the same rows twice
rb_cli_error(freqs_method_twice 2 "^ropebench: freqs: -m/--method given twice \\('pi', then 'yarn'\\)$"
  ${RB_EXE} freqs -m pi --method yarn)
rb_cli_error(bench_reps_twice 2 "^ropebench: bench: --reps given twice \\('2', then '3'\\)$"
  ${RB_EXE} bench --reps 2 --reps=3)
rb_cli_error(bench_dims_repeat 2 "^ropebench: bench: --head-dims: 64 listed twice$"
  ${RB_EXE} bench --head-dims 64,64)
# file names and ROPEBENCH_ISA with a control character: refused first, shown escaped,
# so that no later message breaks its line
rb_cli_error(run_output_control 2 "^ropebench: -o '.*/a\\\\nb.h5': a control character in the file name"
  ${RB_MPIEXEC_CMD} 1 ${RB_EXE} run -q -o "${RB_WORK}/a\nb.h5")
rb_cli_error(report_input_control 2 "^ropebench: report: RESULTS '/no\\\\nfile.h5': a control character"
  ${RB_EXE} report "/no\nfile.h5")
rb_cli_error(bench_json_control 2 "^ropebench: bench: --json '/x\\\\ny': a control character"
  ${RB_EXE} bench --json "/x\ny")
rb_cli_error(info_isa_control 2 "^ropebench: info: ROPEBENCH_ISA='a\\\\nb': not a kernel name"
  ${CMAKE_COMMAND} -E env "ROPEBENCH_ISA=a\nb" ${RB_EXE} info)
# YaRN with original_ctx below 2*pi*beta_slow interpolates nothing: named in a note
rb_add_test(NAME cli_yarn_empty_range_note COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R} --set scaling.methods=yarn
  --set model.original_ctx=4)
set_tests_properties(cli_yarn_empty_range_note PROPERTIES LABELS "cli" PASS_REGULAR_EXPRESSION
  "ropebench: note: yarn's correction range \\[0, -3\\] is empty at original_ctx 4 with beta_slow 1")
# an error between two keys, or found once the rank count is known, names the file line
# of the key the file set (the message may start with the other key, at its default)
file(WRITE ${RB_WORK}/beta_slow.ini "[scaling]\n\nbeta_slow = 40\n")
rb_cli_error(two_keys_line 2 "beta_slow.ini:3: scaling.beta_fast = 32: must be greater than scaling.beta_slow = 40$"
  ${R} -c ${RB_WORK}/beta_slow.ini)
file(WRITE ${RB_WORK}/probe_pos.ini "[study]\nprobe_seq_lens = 64\nseq_lens = 64\nprobe_positions = 100\n[needle]\npositions = -2\nquery_positions = -1\n")
rb_cli_error(late_check_line 2 "probe_pos.ini:4: study.probe_positions: 100 is outside a sequence of 64 tokens$"
  ${R} -c ${RB_WORK}/probe_pos.ini)
# freqs' keyed options once each too; YaRN's note only where no pair is interpolated (an
# inverted range past the last pair interpolates every pair: no note); a line just over
# 1 MiB (a comment) is refused
rb_cli_error(freqs_factor_twice 2 "^ropebench: freqs: -f/--factor given twice \\('2', then '4'\\)$"
  ${RB_EXE} freqs -m pi -f 2 --factor 4)
rb_add_test(NAME cli_yarn_all_interpolated_no_note COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R} --set scaling.methods=yarn
  --set model.base=100 --set model.original_ctx=4000000)
set_tests_properties(cli_yarn_all_interpolated_no_note PROPERTIES LABELS "cli"
  FAIL_REGULAR_EXPRESSION "note: yarn" PASS_REGULAR_EXPRESSION "# ropebench resolved study")
string(REPEAT "x" 1048600 _rb_mib)
file(WRITE ${RB_WORK}/mib_line.ini "# ${_rb_mib}\n[model]\nhead_dim = 64\n")
rb_cli_error(config_line_over_mib 2 "mib_line.ini:1: a line longer than 1024 KiB" ${R} -c ${RB_WORK}/mib_line.ini)
# a line of exactly 1 MiB of text is allowed, with LF or CR LF after it
string(REPEAT "x" 1048574 _rb_mib)
file(WRITE ${RB_WORK}/mib_exact.ini "# ${_rb_mib}\r\n[model]\nhead_dim = 64\n")
rb_add_test(NAME cli_config_line_of_mib COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/rc_is.sh 0
  ${R} -c ${RB_WORK}/mib_exact.ini)
set_tests_properties(cli_config_line_of_mib PROPERTIES LABELS "cli"
  PASS_REGULAR_EXPRESSION "head_dim = 64")
