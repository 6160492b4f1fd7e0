#include <gtest/gtest.h>

#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;

using testing::compiled_vs_reference;

PipelineConfig variant(const std::string& layout, int64_t depth, const std::string& strategy) {
  PipelineConfig config = default_pipeline("cpu");
  for (PassInvocation& p : config.passes) {
    if (p.name == "layout") p.params["memory_layout"] = layout;
    if (p.name == "fuse-elementwise") p.params["max_fusion_depth"] = depth;
    if (p.name == "memory-plan") p.params["strategy"] = strategy;
  }
  return config;
}

TEST(Compile, KeepsTheOptimisedGraphAndItsPlan) {
  const Graph graph = testing::tiny_decoder(1, 5, 24);
  const Compiled compiled = compile(graph, default_pipeline("cpu"), 1);
  EXPECT_EQ(compiled.plan.steps.size(), compiled.graph.nodes().size());
  EXPECT_GE(compiled.plan.arena_bytes, compiled.graph.annotations.at("memory.peak_bytes"));
}

TEST(Compile, DecoderMatchesReference) {
  const Graph graph = testing::tiny_decoder(2, 7, 24);
  for (int threads : {1, 2}) {
    EXPECT_LT(compiled_vs_reference(graph, default_pipeline("cpu"), threads), 1e-4);
  }
}

TEST(Compile, ResnetMatchesReferenceForEveryVariant) {
  const Graph graph = testing::tiny_resnet(2, 7, 9);
  for (const char* layout : {"nchw", "nhwc"}) {
    for (int64_t depth : {0, 2, 4}) {
      for (const char* strategy : {"greedy-by-size", "first-fit", "none"}) {
        SCOPED_TRACE(std::string(layout) + " depth " + std::to_string(depth) + " " + strategy);
        EXPECT_LT(compiled_vs_reference(graph, variant(layout, depth, strategy), 2), 1e-4);
      }
    }
  }
}

TEST(Compile, UnetBlockMatchesReference) {
  const Graph graph = testing::tiny_unet_block(2, 7, 5);
  for (const char* layout : {"nchw", "nhwc"}) {
    SCOPED_TRACE(layout);
    EXPECT_LT(compiled_vs_reference(graph, variant(layout, 4, "greedy-by-size"), 2), 1e-4);
  }
}

}  // namespace
}  // namespace cuvil::passes
