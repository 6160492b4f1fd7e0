// config_changes: what the dashboard says changed between two stored `.cuvilpass` texts.
#include "reports/dashboard/config_diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cuvil::reports::dashboard {
namespace {

const char* const kTiled192Text =
    "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fold-batchnorm\n"
    "  - name: gemm-tiling\n    params: { mc: 192, kc: 768 }\n";
const char* const kTiled256Text =
    "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fold-batchnorm\n"
    "  - name: gemm-tiling\n    params: { mc: 256, kc: 768 }\n";

TEST(ConfigDiff, NamesEachChangedParameterOldToNew) {
  EXPECT_EQ(config_changes(kTiled192Text, kTiled256Text),
            std::vector<std::string>{"gemm-tiling.mc: 192 \u2192 256"});
  EXPECT_TRUE(config_changes(kTiled192Text, kTiled192Text).empty());
  // Comments and spelling (flow or block) are not changes.
  EXPECT_TRUE(config_changes(kTiled192Text,
                             "# tuned\ncuvil_pass_version: 1\ntarget: cpu\npasses:\n"
                             "  - name: fold-batchnorm\n  - name: gemm-tiling\n    params:\n"
                             "      kc: 768\n      mc: 192\n")
                  .empty());
}

TEST(ConfigDiff, PassesAddedRemovedDefaultedAndReordered) {
  const std::string before =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n"
      "    params: { memory_layout: nhwc }\n  - name: fold-batchnorm\n"
      "  - name: gemm-tiling\n    params: { mc: 192 }\n";
  const std::string after =
      "cuvil_pass_version: 1\ntarget: cuda\npasses:\n  - name: gemm-tiling\n"
      "    params: { kc: 512 }\n  - name: fold-batchnorm\n  - name: memory-plan\n";
  EXPECT_EQ(config_changes(before, after),
            (std::vector<std::string>{
                "target: cpu \u2192 cuda", "gemm-tiling.kc: (default) \u2192 512",
                "gemm-tiling.mc: 192 \u2192 (default)", "+memory-plan", "-layout", "pass order"}));
}

TEST(ConfigDiff, UnstoredOrUnreadableTextIsSaid) {
  EXPECT_EQ(config_changes("", kTiled192Text),
            std::vector<std::string>{"old config: its text was not stored"});
  const auto bad = config_changes(kTiled192Text, "passes: [unclosed");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].rfind("new config: its text is not YAML", 0), 0u) << bad[0];
  EXPECT_EQ(config_changes(kTiled192Text, "- a list"),
            std::vector<std::string>{"new config: its text is not a .cuvilpass mapping"});
}

}  // namespace
}  // namespace cuvil::reports::dashboard
