# Coverage-guided fuzzing of every reader, in CI: scripts/fuzz.sh builds the libFuzzer targets
# with clang, AddressSanitizer and UndefinedBehaviorSanitizer (in build/fuzz/, once) and runs each
# for 20,000 executions from its seed corpus with a fixed seed, so a run is reproducible; any
# crash, sanitizer report, leak or hang fails the test and keeps the input in
# build/fuzz/findings/NAME/. Beside the other tests an input gets 60 s before it counts as a hang,
# and the build's output goes to build/fuzz/build.log, so the test's output is the fuzzing's
# summary and, on a failure, the sanitizer's report. Longer runs: scripts/fuzz.sh 1000000 (the
# nightly's).
find_program(CUVIL_CLANGXX clang++)
if(CUVIL_CLANGXX)
  add_test(NAME fuzz.libfuzzer COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh 20000)
  set_tests_properties(fuzz.libfuzzer PROPERTIES TIMEOUT 1500
    ENVIRONMENT
    "CUVIL_FUZZ_BUILD_DIR=${PROJECT_BINARY_DIR}/fuzz;CUVIL_FUZZ_SEED=1;CUVIL_FUZZ_TIMEOUT=60;CUVIL_FUZZ_QUIET_BUILD=1")
else()
  message(STATUS "cuvil: no clang++: the fuzz.libfuzzer test is left out (scripts/setup.sh installs clang)")
endif()
