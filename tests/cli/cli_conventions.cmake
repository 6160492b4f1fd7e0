# cuvil-bench's command-line conventions (--version, did-you-mean, one-line parse errors, --json).
add_test(NAME cli.conventions
  COMMAND ${CUVIL_CLI_DIR}/cli_conventions_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.conventions PROPERTIES TIMEOUT 120
  ENVIRONMENT XDG_DATA_HOME=${CMAKE_CURRENT_BINARY_DIR}/xdg-data-conventions)
