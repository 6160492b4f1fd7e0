# The fuzz targets' seed corpora (tests/fuzz/corpus/NAME/) replayed in the ordinary build: each
# target's function, linked with the project's own libraries, runs once on every seed. Any
# exception but a UserError, or a broken property, aborts the replay. Coverage-guided fuzzing
# itself is scripts/fuzz.sh (a clang build with the sanitizers).
set(CUVIL_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)
set(CUVIL_FUZZ_REPLAYS
  "cuvilpass:cuvil_passes" "search_space:cuvil_tuner" "run_json:cuvil_reports"
  "folded:cuvil_reports" "onnx:cuvil_bench_suite")
foreach(entry ${CUVIL_FUZZ_REPLAYS})
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 name)
  list(GET parts 1 lib)
  add_executable(fuzz_replay_${name} ${CUVIL_FUZZ_DIR}/fuzz_${name}.cc
    ${CUVIL_FUZZ_DIR}/replay_main.cc)
  target_include_directories(fuzz_replay_${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(fuzz_replay_${name} PRIVATE ${lib})
  file(GLOB seeds CONFIGURE_DEPENDS ${CUVIL_FUZZ_DIR}/corpus/${name}/*)
  add_test(NAME fuzz.replay_${name} COMMAND fuzz_replay_${name} ${seeds})
  set_tests_properties(fuzz.replay_${name} PROPERTIES TIMEOUT 120)
endforeach()
