// Shared helpers of the CUDA module tests: small graphs and compiling them for target cuda.
#pragma once

#include <string>

#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/ir/graph.h"
#include "passes/pipeline.h"
#include "runtime/cuda/kernel_choice.h"

namespace cuvil::runtime::cuda::testing {

// The suite's first default rung, scaled down (the topology verify checks).
inline ir::Graph tiny_suite_graph(const std::string& suite) {
  const bench::Suite& s = bench::find_suite(suite);
  const bench::Ladder ladder = bench::load_suite_ladder(s);
  return s.build(bench::select_rungs(ladder, "").front(), /*tiny=*/true);
}

inline passes::PassInvocation* find_invocation(passes::PipelineConfig& c, const std::string& name) {
  for (passes::PassInvocation& p : c.passes) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// The default CUDA pipeline with one parameter changed.
inline passes::PipelineConfig cuda_config_with(const std::string& pass, const std::string& param,
                                               passes::ParamValue value) {
  passes::PipelineConfig c = passes::default_pipeline("cuda");
  find_invocation(c, pass)->params[param] = std::move(value);
  return c;
}

// x[rows, k] -> linear(k -> n, bias) -> relu: a graph with one GEMM and a fused-able epilogue.
inline ir::Graph linear_graph(int64_t rows, int64_t k, int64_t n) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", {rows, k});
  const ir::ValueId w = g.add_constant("w", {n, k}, ir::ConstantInit::normal(0, 0.1f, 1));
  const ir::ValueId b = g.add_constant("b", {n}, ir::ConstantInit::normal(0, 0.1f, 2));
  const ir::ValueId y = g.add_node(ir::OpKind::linear, {x, w, b}, {}, "fc");
  g.mark_output(g.add_node(ir::OpKind::relu, {y}, {}, "act"));
  return g;
}

// x[1, c, h, w] -> conv 3x3 (c -> o), pad 1.
inline ir::Graph conv_graph(int64_t c, int64_t h, int64_t w, int64_t o) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", {1, c, h, w});
  const ir::ValueId wt = g.add_constant("w", {o, c, 3, 3}, ir::ConstantInit::normal(0, 0.1f, 3));
  g.mark_output(g.add_node(ir::OpKind::conv2d, {x, wt},
                           {{"stride", std::vector<int64_t>{1, 1}},
                            {"pad", std::vector<int64_t>{1, 1}},
                            {"layout", std::string("nchw")}},
                           "conv"));
  return g;
}

}  // namespace cuvil::runtime::cuda::testing
