# The micro-benchmarks' counter names and flags (Google Benchmark's console and JSON output).
add_test(NAME cli.micro_counters
  COMMAND ${CUVIL_CLI_DIR}/micro_counters_test.sh $<TARGET_FILE:cuvil-micro-gemm>)
set_tests_properties(cli.micro_counters PROPERTIES TIMEOUT 300)

# cuvil-micro-conv's lowerings of one convolution all run to the end.
add_test(NAME cli.micro_conv
  COMMAND ${CUVIL_CLI_DIR}/micro_conv_test.sh $<TARGET_FILE:cuvil-micro-conv>)
set_tests_properties(cli.micro_conv PROPERTIES TIMEOUT 300)
