# The ONNX importer end to end: models exported by torch.onnx.export checked against PyTorch, and
# every bad-input case (tests/onnx/, pytest from Debian's python3-pytest).
foreach(part pytorch_models bad_input baseline cli_model op_semantics conv_transpose recurrent conv3d
    index_ops grid_sample control_flow quantize composed_ops qoperator functions)
  add_test(NAME onnx.${part}
    COMMAND /usr/bin/python3 -m pytest -q ${CMAKE_CURRENT_SOURCE_DIR}/onnx/test_${part}.py
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/onnx)
  set_tests_properties(onnx.${part} PROPERTIES TIMEOUT 600
    ENVIRONMENT "CUVIL_BENCH=$<TARGET_FILE:cuvil-bench>;CUVIL_TUNE_GEN=$<TARGET_FILE:cuvil-tune-gen>;XDG_DATA_HOME=${CMAKE_CURRENT_BINARY_DIR}/xdg-data")
endforeach()
