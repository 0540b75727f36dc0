# tests/metrics.cmake — the metrics stored by `ropebench run` (docs/metrics.md): an
# independent numpy recomputation from the dumped inputs, and agreement across rank
# counts and sharding layouts; the attention factor's effect on the entropy.
set(RB_MW ${CMAKE_CURRENT_BINARY_DIR}/cli)
rb_add_test(NAME metrics_oracle_np1 COMMAND ${RB_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/oracle_metrics.py ${RB_MW}/small_np1.h5)
set_tests_properties(metrics_oracle_np1 PROPERTIES FIXTURES_REQUIRED small_np1)
foreach(t e2e_small_zigzag_np2 e2e_small_striped_np3 e2e_small_zigzag_np4)
  rb_add_test(NAME metrics_oracle_${t} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/oracle_metrics.py ${RB_MW}/${t}.h5)
  set_tests_properties(metrics_oracle_${t} PROPERTIES FIXTURES_REQUIRED ${t})
  rb_add_test(NAME metrics_ranks_${t} COMMAND ${RB_PYTHON}
    ${CMAKE_CURRENT_SOURCE_DIR}/compare_metrics.py ${RB_MW}/small_np1.h5 ${RB_MW}/${t}.h5)
  set_tests_properties(metrics_ranks_${t} PROPERTIES FIXTURES_REQUIRED "small_np1;${t}")
endforeach()
# YaRN's attention factor lowering the entropy of every row (metric 3), with the factor
# on and off in one study: e2e_attention_factor_list (tests/cli.cmake)
