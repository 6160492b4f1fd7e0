// The search-space file reader (tuner/space_file.h) on the CPU registry's space, then what the
// tuner does with a narrowed space: its JSON for the Optuna side, its hash, and the baseline
// trial's pipeline config (a UserError there is allowed too: it is validated like a file).
#include "tests/fuzz/fuzz_util.h"
#include "tuner/search_space.h"
#include "tuner/space_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuvil;
  static const tuner::SearchSpace registry = tuner::space_from_registry("cpu");
  tuner::SearchSpace space = registry;
  if (!fuzz::accepted([&] { tuner::narrow_space(space, fuzz::text_of(data, size), "fuzz", ""); }))
    return 0;
  (void)tuner::space_to_json(space).dump();
  (void)tuner::space_hash(space);
  (void)space.searched();
  fuzz::accepted([&] { tuner::config_from_values(space, tuner::default_values(space), ""); });
  return 0;
}
