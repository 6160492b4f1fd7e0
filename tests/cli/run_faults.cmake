# `cuvil-bench run` under faults and load: SIGKILL at staggered moments against the results database,
# a rung that runs out of memory under an address-space limit.
add_test(NAME cli.run_kill_db
  COMMAND ${CUVIL_CLI_DIR}/run_kill_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.run_kill_db PROPERTIES TIMEOUT 300)
add_test(NAME cli.run_out_of_memory
  COMMAND ${CUVIL_CLI_DIR}/run_oom_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.run_out_of_memory PROPERTIES TIMEOUT 300
  ENVIRONMENT XDG_DATA_HOME=${CMAKE_CURRENT_BINARY_DIR}/xdg-data)
# Beside busy processes, OpenMP's (oneDNN's) threads wait passively.
add_test(NAME cli.run_openmp_wait_policy
  COMMAND ${CUVIL_CLI_DIR}/openmp_wait_policy_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.run_openmp_wait_policy PROPERTIES TIMEOUT 300)
# The heap on transparent huge pages (glibc.malloc.hugetlb=1), and its switches.
add_test(NAME cli.run_heap_huge_pages
  COMMAND ${CUVIL_CLI_DIR}/heap_huge_pages_test.sh $<TARGET_FILE:cuvil-bench>)
set_tests_properties(cli.run_heap_huge_pages PROPERTIES TIMEOUT 300)
