// The ONNX importer (bench_suite/models/onnx/): the bytes as a model file, then the import with
// each input's dynamic axes bound to 1, as `run --model --input` would.
#include "bench_suite/models/onnx/importer.h"
#include "bench_suite/models/onnx/onnx_model.h"
#include "tests/fuzz/fuzz_util.h"

// A directory that does not exist: external data a mutated model names never reads a real file.
constexpr const char* kPath = "/nonexistent-cuvil-fuzz/fuzz.onnx";

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuvil::bench::onnx_import;
  OnnxModel model;
  if (!cuvil::fuzz::accepted(
          [&] { model = parse_onnx_model(cuvil::fuzz::text_of(data, size), kPath); }))
    return 0;
  // Each input bound whole, every dynamic axis at 1 (a named or batch binding could contradict
  // another input's static axis).
  InputBinding binding;
  for (const OnnxInput& in : model.inputs) {
    cuvil::ir::Shape& shape = binding.shapes[in.name];
    for (int64_t d : in.dims) shape.push_back(d > 0 ? d : 1);
  }
  (void)operator_counts(model);
  (void)unsupported_operators(model);
  cuvil::fuzz::accepted([&] { import_onnx(model, binding); });
  return 0;
}
