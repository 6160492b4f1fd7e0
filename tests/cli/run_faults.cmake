# `cuvil-bench run` under faults: SIGKILL at staggered moments against the results database, and
# a rung that runs out of memory under an address-space limit.
add_test(NAME cli.run_kill_db
  COMMAND ${CUVIL_CLI_DIR}/run_kill_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.run_kill_db PROPERTIES TIMEOUT 300)
add_test(NAME cli.run_out_of_memory
  COMMAND ${CUVIL_CLI_DIR}/run_oom_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.run_out_of_memory PROPERTIES TIMEOUT 300
  ENVIRONMENT XDG_DATA_HOME=${CMAKE_CURRENT_BINARY_DIR}/xdg-data)
