# The regression dashboard and the nightly job, end to end.
add_test(NAME cli.dashboard_browser
  COMMAND ${CUVIL_CLI_DIR}/dashboard_browser_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.dashboard_browser PROPERTIES TIMEOUT 300)
add_test(NAME cli.dashboard_nightly
  COMMAND ${CUVIL_CLI_DIR}/dashboard_nightly_test.sh $<TARGET_FILE:cuvil-bench>
    ${PROJECT_SOURCE_DIR}/scripts/nightly.sh)
set_tests_properties(cli.dashboard_nightly PROPERTIES TIMEOUT 600)
