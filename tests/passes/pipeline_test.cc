#include "passes/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "passes/registry.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using testing::count_ops;
using testing::max_error_after;

PipelineConfig pipeline_with(const std::string& layout, int64_t depth) {
  PipelineConfig config = default_pipeline("cpu");
  for (PassInvocation& p : config.passes) {
    if (p.name == "layout") p.params["memory_layout"] = layout;
    if (p.name == "fuse-elementwise") p.params["max_fusion_depth"] = depth;
  }
  return config;
}

TEST(Pipeline, DefaultPipelineOnTinyResnet) {
  const Graph before = testing::tiny_resnet(2, 7, 9);
  Graph after = before;
  run_pipeline(after, default_pipeline("cpu"));
  EXPECT_EQ(count_ops(after, OpKind::batch_norm), 0);
  EXPECT_EQ(count_ops(after, OpKind::relu), 0);
  EXPECT_EQ(count_ops(after, OpKind::transpose), 1);
  EXPECT_GT(after.annotations.at("memory.peak_bytes"), 0);
  EXPECT_LT(max_error_after(before, after), 1e-4);
}

TEST(Pipeline, DefaultPipelineOnTinyDecoder) {
  const Graph before = testing::tiny_decoder(2, 7, 24);
  Graph after = before;
  run_pipeline(after, default_pipeline("cpu"));
  EXPECT_LT(after.nodes().size(), before.nodes().size());
  EXPECT_LT(max_error_after(before, after), 1e-4);
}

TEST(Pipeline, DefaultPipelineOnTinyUnetBlock) {
  const Graph before = testing::tiny_unet_block(2, 7, 5);
  Graph after = before;
  run_pipeline(after, default_pipeline("cpu"));
  EXPECT_LT(max_error_after(before, after), 1e-4);
}

TEST(Pipeline, EveryLayoutAndDepthMatchesReference) {
  for (const char* layout : {"nchw", "nhwc"}) {
    for (int64_t depth : {0, 1, 3, 8}) {
      SCOPED_TRACE(std::string(layout) + " depth " + std::to_string(depth));
      for (const Graph& before :
           {testing::tiny_resnet(1, 3, 5), testing::tiny_unet_block(1, 3, 5)}) {
        Graph after = before;
        run_pipeline(after, pipeline_with(layout, depth));
        EXPECT_LT(max_error_after(before, after), 1e-4);
      }
    }
  }
}

TEST(Pipeline, ComparisonCatchesAChangedGraph) {
  // Guards the harness itself: a real change in semantics must show up as a large error.
  const Graph before = testing::tiny_resnet(1, 3, 5);
  Graph changed = before;
  for (ir::Node& n : changed.mutable_nodes()) {
    if (n.op == OpKind::relu) n.op = OpKind::silu;
  }
  changed.recompute();
  EXPECT_GT(max_error_after(before, changed), 1e-3);
}

TEST(Pipeline, EmptyPipelineLeavesGraphAlone) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  const size_t nodes = g.nodes().size();
  PipelineConfig config;
  run_pipeline(g, config);
  EXPECT_EQ(g.nodes().size(), nodes);
}

TEST(Pipeline, MissingParamsTakeDefaults) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  PipelineConfig config;
  config.passes.push_back({"fuse-elementwise", {}});
  run_pipeline(g, config);
  EXPECT_GT(g.annotations.at("fuse-elementwise.fused"), 0);
}

TEST(Pipeline, UnknownPassInCodeBuiltConfigIsUserError) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  PipelineConfig config;
  config.passes.push_back({"no-such-pass", {}});
  EXPECT_THROW(run_pipeline(g, config), UserError);
}

TEST(Pipeline, UnknownParamInCodeBuiltConfigIsUserError) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  PipelineConfig config;
  config.passes.push_back({"layout", {{"layout", std::string("nhwc")}}});
  EXPECT_THROW(run_pipeline(g, config), UserError);
}

TEST(Pipeline, WrongParamTypeInCodeBuiltConfigIsUserError) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  PipelineConfig config;
  config.passes.push_back({"fuse-elementwise", {{"max_fusion_depth", 2.0}}});
  EXPECT_THROW(run_pipeline(g, config), UserError);
}

// Ranges are the registry's for code-built configs too (the file loader checks them as well).
TEST(Pipeline, OutOfRangeParamInCodeBuiltConfigIsUserError) {
  Graph g = testing::tiny_resnet(1, 3, 5);
  PipelineConfig config;
  config.passes.push_back({"fuse-elementwise", {{"max_fusion_depth", int64_t{-3}}}});
  try {
    run_pipeline(g, config);
    ADD_FAILURE() << "accepted max_fusion_depth -3";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'max_fusion_depth' value -3 is out of range"),
              std::string::npos)
        << e.what();
  }
}

TEST(Pipeline, SuiteConfigFilesAreValidDefaults) {
  for (const char* suite : {"resnet50", "llama3-8b", "sdxl", "model"}) {
    const std::string path = std::string(CUVIL_SOURCE_DIR) + "/configs/" + suite + ".cpu.cuvilpass";
    SCOPED_TRACE(path);
    const PipelineConfig config = load_cuvilpass(path);
    EXPECT_EQ(config.target, "cpu");
    // model.cpu.cuvilpass serves every imported model: it names none.
    EXPECT_EQ(config.suite, std::string(suite) == "model" ? "" : suite);
    EXPECT_EQ(config_hash(config), config_hash(default_pipeline("cpu")));
  }
}

// A 3x3 conv at two sizes, same node names: the small one alone would run direct
// (winograd_min_tiles), pinned to the large one's choices it runs Winograd with its tile.
Graph conv_at(int64_t spatial) {
  Graph g;
  const ir::ValueId x = g.add_input("x", {1, 16, spatial, spatial});
  g.mark_output(testing::add_conv(g, x, 16, 16, 3, 1, true, 5));
  return g;
}

std::string conv_kernel(const Compiled& c) {
  for (const runtime::Step& s : c.plan.steps) {
    if (s.op == OpKind::conv2d) return s.kernel;
  }
  return "";
}

TEST(Pins, TheScaledDownGraphRunsTheFullSizeGraphsKernels) {
  const PipelineConfig config = default_pipeline("cpu");
  const Graph full = conv_at(56), small = conv_at(5);
  EXPECT_EQ(conv_kernel(compile(small, config, 2)), "conv2d.direct_nhwc");
  const Pins pins = resolve_pins(full, config, 2);
  ASSERT_EQ(pins.by_node.size(), 1u);
  const ir::Attrs& a = pins.by_node.begin()->second;
  EXPECT_EQ(a.get_string("impl", ""), "conv2d.winograd_nhwc");
  EXPECT_EQ(a.get_int("conv.winograd_tile", 0), 4);  // 56x56: many tiles, small weights
  const Compiled pinned = compile(small, config, 2, &pins);
  EXPECT_EQ(conv_kernel(pinned), "conv2d.winograd_nhwc");
  EXPECT_EQ(pinned.graph.annotations.at("pins.applied"), 1);
  for (const runtime::Step& s : pinned.plan.steps) {
    if (s.op == OpKind::conv2d) {
      EXPECT_EQ(s.attrs.get_int("conv.winograd_tile", 0), 4);
    }
  }
  EXPECT_LT(testing::compiled_error_of(pinned, small), 1e-4);
}

TEST(Pins, APinTheNodeCannotTakeIsRefused) {
  const PipelineConfig config = default_pipeline("cpu");
  Pins pins;
  pins.by_node["conv"] = {{"impl", std::string("conv2d.gemm_1x1")}};  // a 3x3 conv: cannot
  Graph g = conv_at(9);
  g.mutable_nodes()[0].name = "conv";
  const Compiled c = compile(g, config, 2, &pins);
  EXPECT_EQ(c.graph.annotations.at("pins.refused"), 1);
  EXPECT_NE(conv_kernel(c), "conv2d.gemm_1x1");
}

}  // namespace
}  // namespace cuvil::passes
