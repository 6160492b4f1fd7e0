// IEEE special values through the CPU kernels: NaN, infinities and magnitudes past the range of
// the vectorised exp give what the reference interpreter gives (and PyTorch: NaN propagates
// through every activation, exp(-inf) = 0, exp(+inf) = inf).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lower_support.h"
#include "passes/ir/graph.h"
#include "test_support.h"
#include "tests/runtime/isa_sweep.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::ValueId;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// 37 values (full vectors and tails at every width) with every special kind among them.
std::vector<float> specials() {
  const std::vector<float> kinds = {kNaN,   -kInf, kInf, 100.0f, -100.0f, 88.8f,  -88.8f, 1e30f,
                                    -1e30f, -0.0f, 0.0f, 0.5f,   -2.5f,   104.5f, -105.0f};
  std::vector<float> v;
  for (int i = 0; i < 37; ++i) v.push_back(kinds[static_cast<size_t>(i * 7) % kinds.size()]);
  return v;
}

void expect_same_under_this_isa(const Graph& g, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& want, const std::string& what) {
  for (int threads : {1, 2}) {
    runtime::Executor executor(lower(g, {threads}));
    const std::vector<Tensor> got = executor.run(inputs);
    for (size_t o = 0; o < want.size(); ++o) {
      for (size_t i = 0; i < want[o].data.size(); ++i) {
        const float w = want[o].data[i], v = got[o].data[i];
        const std::string where = what + " element " + std::to_string(i) + " (input " +
                                  std::to_string(inputs[0].data[i % inputs[0].data.size()]) + ")";
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(v)) << where << ": got " << v;
        } else if (std::isinf(w)) {
          EXPECT_EQ(v, w) << where;
        } else {
          EXPECT_LE(std::fabs(v - w), 1e-5 * std::fabs(w) + 1e-30)
              << where << ": got " << v << ", want " << w;
        }
      }
    }
  }
}

// The same NaNs and infinities as the reference; finite values within 1e-5 relative (or 1e-30
// absolute: exp(-100) is a denormal the vector code may flush to 0). Under every instruction set
// the CPU has (the AVX-512 and AVX2 math differ).
void expect_same_as_reference(const Graph& g, const std::vector<Tensor>& inputs,
                              const std::string& what) {
  const std::vector<Tensor> want = runtime::reference::interpret(g, inputs);
  runtime::testing::for_each_isa([&] { expect_same_under_this_isa(g, inputs, want, what); });
}

TEST(SpecialValues, UnaryKernelsGiveTheReferencesNaNsAndInfinities) {
  const std::vector<float> x = specials();
  const Shape s = {static_cast<int64_t>(x.size())};
  for (OpKind op :
       {OpKind::relu,  OpKind::silu,         OpKind::gelu,       OpKind::sigmoid,    OpKind::tanh,
        OpKind::erf,   OpKind::exp,          OpKind::sqrt,       OpKind::log,        OpKind::neg,
        OpKind::abs,   OpKind::hard_sigmoid, OpKind::hard_swish, OpKind::leaky_relu, OpKind::clip,
        OpKind::floor, OpKind::ceil,         OpKind::round,      OpKind::sign,       OpKind::tan,
        OpKind::asin,  OpKind::acos,         OpKind::atan,       OpKind::sinh,       OpKind::cosh,
        OpKind::asinh, OpKind::acosh,        OpKind::atanh}) {
    Graph g;
    ir::Attrs attrs;
    if (op == OpKind::clip) attrs = {{"min", -1.0}, {"max", 1.0}};
    g.mark_output(g.add_node(op, {g.add_input("x", s)}, attrs, "op"));
    expect_same_as_reference(g, {Tensor(s, x)}, std::string(ir::to_string(op)));
  }
}

// A NaN in a linear layer's input reaches every output of its row through the fused ReLU.
TEST(SpecialValues, FusedReluKeepsNaN) {
  Graph g;
  const ValueId x = g.add_input("x", {3, 40});
  const ValueId y =
      g.add_node(OpKind::linear, {x, testing::random_constant(g, "w", {33, 40}, 5)}, {}, "fc");
  g.mark_output(g.add_node(OpKind::relu, {y}, {}, "act"));
  testing::run_pass(g, "fuse-elementwise");
  std::vector<float> in(120, 0.25f);
  in[41] = kNaN;  // row 1
  expect_same_as_reference(g, {Tensor({3, 40}, in)}, "linear+relu");
}

// Rows of softmax that hold -inf, +inf, NaN or only -inf.
TEST(SpecialValues, SoftmaxRowsWithInfinitiesAndNaN) {
  std::vector<float> x = specials();
  x.resize(40, 1.0f);
  for (int j = 0; j < 10; ++j) x[static_cast<size_t>(j)] = -kInf;  // row 0: every entry -inf
  Graph g;
  g.mark_output(g.add_node(OpKind::softmax, {g.add_input("x", {4, 10})}, {}, "softmax"));
  expect_same_as_reference(g, {Tensor({4, 10}, x)}, "softmax");
}

}  // namespace
}  // namespace cuvil::passes
