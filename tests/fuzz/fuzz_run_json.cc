// The run-document readers (reports/run_document.h, reports/flame/op_records.h): the bytes as
// JSON (not JSON: nothing to read), then every reader on the document, each on its own.
#include <nlohmann/json.hpp>

#include "reports/flame/op_records.h"
#include "reports/run_document.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuvil;
  const nlohmann::json document =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  fuzz::accepted([&] { reports::benchmarks_of(document, "fuzz"); });
  (void)reports::first_string(document, {"/context/cuvil/suite", "/context/date", "/x/0"});
  fuzz::accepted([&] { (void)reports::flame::has_op_records(document, "fuzz"); });
  fuzz::accepted([&] { (void)reports::flame::samples_file_of(document, "fuzz"); });
  fuzz::accepted([&] { (void)reports::flame::samples_file_of(document, "fuzz", "b1"); });
  fuzz::accepted([&] {
    const auto rungs = reports::flame::read_op_records(document, "fuzz");
    (void)reports::flame::tree_from_ops(rungs);
  });
  fuzz::accepted([&] { reports::flame::read_op_records(document, "fuzz", "b1"); });
  return 0;
}
