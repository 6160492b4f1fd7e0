# cuvil-bench report flame, end to end on synthetic run.json files (no workload runs).
add_test(NAME cli.report_flame
  COMMAND ${CUVIL_CLI_DIR}/report_flame_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.report_flame PROPERTIES TIMEOUT 120)
