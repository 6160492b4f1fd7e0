# run --probes: per-op records, counters and the unknown-probe error, end to end.
add_test(NAME cli.probes_ops
  COMMAND ${CUVIL_CLI_DIR}/probes_ops_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.probes_ops PROPERTIES TIMEOUT 300
  ENVIRONMENT XDG_DATA_HOME=${CMAKE_CURRENT_BINARY_DIR}/xdg-data)
