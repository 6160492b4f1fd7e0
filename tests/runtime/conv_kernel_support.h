// Runs node 0 of a one-node graph through one named kernel from the kernel table, the way
// lowering would (prepare hook with the constant inputs, then the kernel), and measures its
// error against the reference interpreter. For the conv and oneDNN kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_test_graphs.h"
#include "passes/ir/graph.h"
#include "runtime/cpu/epilogue.h"
#include "runtime/kernel_table.h"
#include "runtime/reference/interpreter.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::testing {

inline Step step_for(const ir::Graph& g, const KernelInfo& k) {
  const ir::Node& n = g.nodes().at(0);
  Step s;
  s.op = n.op;
  s.kernel = k.name;
  s.fn = k.fn;
  s.attrs = n.attrs;
  s.epilogue = n.epilogue;
  s.node_name = n.name;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    s.inputs.push_back(static_cast<int32_t>(i));
    s.input_shapes.push_back(g.value(n.inputs[i]).shape);
  }
  s.output_shape = g.value(n.output).shape;
  schedule_step(s, k);
  return s;
}

// The output of `kernel` on the graph's only node, with `threads` threads, on the graph's
// random inputs (seed).
inline ir::Tensor kernel_output(const ir::Graph& g, const std::string& kernel, int threads,
                                uint64_t seed = 5) {
  const ir::Node& n = g.nodes().at(0);
  const KernelInfo* k = find_kernel(n.op, kernel);
  EXPECT_NE(k, nullptr) << kernel;
  if (!k) return ir::Tensor({1});
  const std::vector<ir::Tensor> inputs = ir::random_inputs(g, seed);
  Step step = step_for(g, *k);
  EXPECT_TRUE(!k->supports || k->supports(step)) << kernel << " refuses this node";
  std::vector<const float*> in, constants;
  for (ir::ValueId v : n.inputs) {
    const ir::Value& value = g.value(v);
    if (value.kind == ir::ValueKind::constant) {
      in.push_back(g.constant_data(v).data());
      constants.push_back(in.back());
    } else {
      size_t index = 0;
      while (g.inputs()[index] != v) ++index;
      in.push_back(inputs[index].data.data());
      constants.push_back(nullptr);
    }
  }
  if (k->prepare) step.prepared = k->prepare(step, constants.data());
  std::vector<float> out(static_cast<size_t>(ir::num_elements(step.output_shape)), -7.0f);
  ThreadPool pool(threads);
  // Twice: the second run must not depend on state the first one left behind.
  for (int run = 0; run < 2; ++run) k->fn({step, in.data(), out.data(), pool});
  return ir::Tensor(step.output_shape, out);
}

// Worst relative error of `kernel` on the graph's only node, with `threads` threads.
inline double prepared_kernel_error(const ir::Graph& g, const std::string& kernel, int threads,
                                    uint64_t seed = 5) {
  const std::vector<ir::Tensor> want = reference::interpret(g, ir::random_inputs(g, seed));
  return ir::max_relative_error(kernel_output(g, kernel, threads, seed), want.at(0));
}

// `kernel` with each of lane_epilogue_cases() fused into the conv `plain` gives the bits of its
// output without the epilogue, finished by Epilogue::apply: a tile that finishes in registers
// computes what the pass after the store computes.
inline void expect_fused_epilogues_match_apply(const ir::Graph& plain, const std::string& kernel) {
  const ir::Shape out = plain.value(plain.nodes().back().output).shape;
  const KernelInfo* k = find_kernel(plain.nodes().back().op, kernel);
  ASSERT_NE(k, nullptr) << kernel;
  for (const auto& steps : lane_epilogue_cases(out)) {
    ir::Graph g = plain;
    with_epilogue(g, steps);
    // Seeds of the graph's inputs go by position: x is input 0 of both graphs.
    ir::Tensor want = kernel_output(plain, kernel, 2);
    const std::vector<ir::Tensor> inputs = ir::random_inputs(g, 5);
    std::vector<const float*> in;
    for (ir::ValueId v : g.nodes()[0].inputs) {
      const auto pos = std::find(g.inputs().begin(), g.inputs().end(), v);
      in.push_back(pos == g.inputs().end() ? g.constant_data(v).data()
                                           : inputs[pos - g.inputs().begin()].data.data());
    }
    const Step step = step_for(g, *k);
    cpu::Epilogue(step, in.data(), want.data.data()).apply(want.data.data(), want.numel());
    EXPECT_EQ(kernel_output(g, kernel, 2).data, want.data)
        << kernel << " first step " << ir::to_string(steps[0].op);
  }
}

}  // namespace cuvil::runtime::testing
