# Must-fail inputs of `report dashboard`, scripts/nightly.sh and scripts/confirm_aa.sh.
add_test(NAME cli.reports_bad_input
  COMMAND ${CUVIL_CLI_DIR}/reports_bad_input_test.sh $<TARGET_FILE:cuvil-bench>
    ${PROJECT_SOURCE_DIR}/scripts/nightly.sh)
set_tests_properties(cli.reports_bad_input PROPERTIES TIMEOUT 60)
