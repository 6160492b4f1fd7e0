// The .cuvilpass reader (passes/cuvilpass.h). What it accepts must also survive a round trip:
// to_yaml writes a file that reads back to the same passes and parameters.
#include "passes/cuvilpass.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuvil;
  passes::PipelineConfig config;
  if (!fuzz::accepted([&] { config = passes::parse_cuvilpass(fuzz::text_of(data, size), "fuzz"); }))
    return 0;
  const std::string yaml = passes::to_yaml(config);
  passes::PipelineConfig again;
  if (!fuzz::accepted([&] { again = passes::parse_cuvilpass(yaml, "round-trip"); }))
    fuzz::broken("to_yaml wrote a config that does not read back:\n" + yaml);
  if (passes::config_hash(again) != passes::config_hash(config) || again.target != config.target ||
      again.suite != config.suite)
    fuzz::broken("the config changed on a round trip:\n" + yaml);
  return 0;
}
