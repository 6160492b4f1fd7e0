# The `cuvil` Python module (python/, built into build/python/), through pytest.
if(TARGET _cuvil)
  add_test(NAME python.cuvil_module
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python)
  set_tests_properties(python.cuvil_module PROPERTIES TIMEOUT 600
    ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;CUVIL_BENCH=$<TARGET_FILE:cuvil-bench>")
endif()
