# cuvil-bench report flame, end to end on synthetic run.json files (no workload runs).
add_test(NAME cli.report_flame
  COMMAND ${CUVIL_CLI_DIR}/report_flame_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.report_flame PROPERTIES TIMEOUT 120)

# The Chrome trace of a real ResNet-50 b1 run nests every op under its name's blocks.
add_test(NAME cli.report_flame_trace_resnet50
  COMMAND ${CUVIL_CLI_DIR}/trace_resnet50_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.report_flame_trace_resnet50 PROPERTIES TIMEOUT 300)
