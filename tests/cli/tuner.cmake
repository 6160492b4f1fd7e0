# The tuner's end-to-end tests (cuvil-bench tune, cuvil-tune-gen). cli.tune_resnet50 lives in
# tests/CMakeLists.txt.
add_test(NAME cli.tune_confirm_sensitivity
  COMMAND ${CUVIL_CLI_DIR}/tune_confirm_test.sh $<TARGET_FILE:cuvil-bench>
    $<TARGET_FILE:cuvil-tune-gen>)
set_tests_properties(cli.tune_confirm_sensitivity PROPERTIES TIMEOUT 900)
# Skips (77) without the PostgreSQL server binaries or python3-psycopg2.
add_test(NAME cli.tune_postgres_shared_study
  COMMAND ${CUVIL_CLI_DIR}/tune_postgres_test.sh $<TARGET_FILE:cuvil-bench>
    $<TARGET_FILE:cuvil-tune-gen>)
set_tests_properties(cli.tune_postgres_shared_study PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
# SIGKILL at each point of a trial (CUVIL_TEST_KILL_AT), judged by Optuna's own load_study; skips
# (77) without python3-optuna.
add_test(NAME cli.tune_kill_record
  COMMAND ${CUVIL_CLI_DIR}/tune_kill_test.sh $<TARGET_FILE:cuvil-bench>
    $<TARGET_FILE:cuvil-tune-gen>)
set_tests_properties(cli.tune_kill_record PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# Pruning within a rung (the TEST-ONLY "slow" trial fault); skips (77) without python3-optuna.
add_test(NAME cli.tune_prune_within_rung
  COMMAND ${CUVIL_CLI_DIR}/tune_prune_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.tune_prune_within_rung PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# cuvil-tune-gen builds the space for the study's recorded target; an unknown one is exit 2. Skips
# (77) without python3-optuna.
add_test(NAME cli.tune_gen_target
  COMMAND ${CUVIL_CLI_DIR}/tune_gen_target_test.sh $<TARGET_FILE:cuvil-tune-gen>)
set_tests_properties(cli.tune_gen_target PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
