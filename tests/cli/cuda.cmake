# --target cuda end to end (works with and without a GPU; says why when there is none).
add_test(NAME cli.cuda_target
  COMMAND ${CUVIL_CLI_DIR}/cuda_target_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.cuda_target PROPERTIES TIMEOUT 300)
