# cuvil-bench probes: what this machine can count, sample and trace, end to end.
add_test(NAME cli.probes_list
  COMMAND ${CUVIL_CLI_DIR}/probes_list_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.probes_list PROPERTIES TIMEOUT 120)
