# The report readers and writers on hostile input (issue 17): bad JSON, deep trees, zero
# medians, samples files outside the run's folder, read-only databases, control characters.
add_test(NAME cli.reports_robust
  COMMAND ${CUVIL_CLI_DIR}/reports_robust_test.sh $<TARGET_FILE:cuvil-bench> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.reports_robust PROPERTIES TIMEOUT 300)
