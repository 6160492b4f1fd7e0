// The search spaces shipped in configs/search/ load against today's registry.
#include <gtest/gtest.h>

#include <string>

#include "tuner/search_space.h"
#include "tuner/space_file.h"

namespace cuvil::tuner {
namespace {

TEST(ShippedSpaces, EverySuiteSpaceLoadsAndKeepsItsDefaults) {
  for (const std::string suite : {"resnet50", "llama3-8b", "sdxl"}) {
    const std::string path = default_space_file(std::string(CUVIL_SOURCE_DIR) + "/configs", suite);
    ASSERT_FALSE(path.empty()) << suite;
    SearchSpace space = space_from_registry("cpu");
    EXPECT_NO_THROW(load_space_file(space, path, suite)) << path;
    // The default pipeline must stay inside the narrowed space: trial 0 is the baseline.
    EXPECT_NO_THROW(config_from_values(space, default_values(space), suite)) << path;
  }
}

}  // namespace
}  // namespace cuvil::tuner
