// Runs one registered CPU kernel on a one-node graph's random inputs and compares its output
// with the reference interpreter (shared by the attention and norm kernel tests).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "passes/ir/graph.h"
#include "runtime/kernel_table.h"
#include "runtime/reference/interpreter.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::testing {

// Kernel `kernel` on the graph's last node, whose inputs must be the graph's inputs in order,
// with `extra` attributes added; the worst relative error against the reference. `given`
// replaces the random inputs; `after_scheduling` is set on the step once it was scheduled
// (which no run may see).
inline double kernel_error(const ir::Graph& g, const std::string& kernel, int threads,
                           const ir::Attrs& extra = {}, const std::vector<ir::Tensor>* given = {},
                           const ir::Attrs& after_scheduling = {}) {
  const ir::Node& n = g.nodes().back();
  const std::vector<ir::Tensor> inputs = given ? *given : ir::random_inputs(g, 5);
  const std::vector<ir::Tensor> want = reference::interpret(g, inputs);
  const KernelInfo* k = find_kernel(n.op, kernel);
  EXPECT_NE(k, nullptr) << kernel;
  if (!k) return 1.0;
  Step step;
  step.op = n.op;
  step.kernel = kernel;
  step.fn = k->fn;
  step.attrs = n.attrs;
  for (const auto& [key, value] : extra.entries()) step.attrs.set(key, value);
  step.epilogue = n.epilogue;
  std::vector<const float*> ptrs;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    step.inputs.push_back(static_cast<int32_t>(i));
    step.input_shapes.push_back(g.value(n.inputs[i]).shape);
    ptrs.push_back(inputs[i].data.data());
  }
  step.output_shape = g.value(n.output).shape;
  schedule_step(step, *k);
  for (const auto& [key, value] : after_scheduling.entries()) step.attrs.set(key, value);
  ir::Tensor got(step.output_shape,
                 std::vector<float>(static_cast<size_t>(ir::num_elements(step.output_shape)), 0));
  ThreadPool pool(threads);
  step.fn(KernelArgs{step, ptrs.data(), got.data.data(), pool});
  return ir::max_relative_error(got, want[0]);
}

}  // namespace cuvil::runtime::testing
