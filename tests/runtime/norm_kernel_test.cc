// The CPU norm, softmax and activation kernels against the reference interpreter at odd sizes,
// both layouts, and inputs far from zero mean (the variance must not cancel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_reference_util.h"
#include "passes/ir/graph.h"
#include "runtime/cpu/elementwise_math.h"

namespace cuvil::runtime {
namespace {

using ir::OpKind;
using ir::Shape;
using testing::kernel_error;

// x -> op(x, gamma, beta...) with every operand a graph input.
ir::Graph norm_graph(OpKind op, const Shape& x, const std::vector<Shape>& params, ir::Attrs attrs) {
  ir::Graph g;
  std::vector<ir::ValueId> in = {g.add_input("x", x)};
  for (size_t i = 0; i < params.size(); ++i) {
    std::string name = "p";  // built by append: GCC 12 warns falsely on "p" + std::string
    name += std::to_string(i);
    in.push_back(g.add_input(name, params[i]));
  }
  g.mark_output(g.add_node(op, in, std::move(attrs), "norm"));
  return g;
}

// Random inputs with x shifted by `offset` (a large mean relative to the spread).
std::vector<ir::Tensor> shifted_inputs(const ir::Graph& g, float offset) {
  std::vector<ir::Tensor> in = ir::random_inputs(g, 9);
  for (float& v : in[0].data) v += offset;
  return in;
}

TEST(NormKernels, LayerNormOddSizes) {
  for (int64_t rows : {1, 3, 17}) {
    for (int64_t dim : {1, 7, 17, 65, 640, 1283}) {
      const ir::Graph g =
          norm_graph(OpKind::layer_norm, {rows, dim}, {{dim}, {dim}}, {{"eps", 1e-5}});
      for (int threads : {1, 2}) {
        EXPECT_LT(kernel_error(g, "layer_norm.cpu", threads), 1e-4) << rows << "x" << dim;
      }
    }
  }
}

TEST(NormKernels, RmsNormOddSizes) {
  for (int64_t rows : {1, 3, 17}) {
    for (int64_t dim : {1, 7, 17, 65, 4096, 1283}) {
      const ir::Graph g = norm_graph(OpKind::rms_norm, {rows, dim}, {{dim}}, {{"eps", 1e-5}});
      EXPECT_LT(kernel_error(g, "rms_norm.cpu", 2), 1e-4) << rows << "x" << dim;
    }
  }
}

TEST(NormKernels, LayerNormWithLargeMean) {
  const ir::Graph g = norm_graph(OpKind::layer_norm, {5, 3001}, {{3001}, {3001}}, {});
  const std::vector<ir::Tensor> in = shifted_inputs(g, 100.0f);
  EXPECT_LT(kernel_error(g, "layer_norm.cpu", 2, {}, &in), 1e-4);
}

struct GroupCase {
  int64_t n, c, h, w, groups;
};

TEST(NormKernels, GroupNormBothLayoutsOddSizes) {
  const GroupCase cases[] = {{1, 6, 3, 5, 3}, {2, 32, 7, 9, 32},  {1, 64, 17, 17, 32},
                             {3, 9, 1, 1, 3}, {1, 12, 33, 31, 4}, {2, 40, 16, 16, 8}};
  for (const GroupCase& gc : cases) {
    for (const char* layout : {"nchw", "nhwc"}) {
      const bool nhwc = std::string(layout) == "nhwc";
      const Shape x = nhwc ? Shape{gc.n, gc.h, gc.w, gc.c} : Shape{gc.n, gc.c, gc.h, gc.w};
      const ir::Graph g =
          norm_graph(OpKind::group_norm, x, {{gc.c}, {gc.c}},
                     {{"groups", gc.groups}, {"eps", 1e-5}, {"layout", std::string(layout)}});
      for (int threads : {1, 2}) {
        EXPECT_LT(kernel_error(g, "group_norm.cpu", threads), 1e-4)
            << layout << " n" << gc.n << " c" << gc.c << " " << gc.h << "x" << gc.w;
      }
    }
  }
}

TEST(NormKernels, GroupNormWithLargeMean) {
  for (const char* layout : {"nchw", "nhwc"}) {
    const bool nhwc = std::string(layout) == "nhwc";
    const Shape x = nhwc ? Shape{2, 37, 41, 64} : Shape{2, 64, 37, 41};
    const ir::Graph g = norm_graph(OpKind::group_norm, x, {{64}, {64}},
                                   {{"groups", int64_t{32}}, {"layout", std::string(layout)}});
    const std::vector<ir::Tensor> in = shifted_inputs(g, 50.0f);
    EXPECT_LT(kernel_error(g, "group_norm.cpu", 2, {}, &in), 1e-4) << layout;
  }
}

TEST(NormKernels, SoftmaxLastAxisOddSizes) {
  for (int64_t len : {1, 3, 7, 17, 77, 1025}) {
    const ir::Graph g = norm_graph(OpKind::softmax, {3, 5, len}, {}, {{"axis", int64_t{-1}}});
    EXPECT_LT(kernel_error(g, "softmax.cpu", 2), 1e-4) << len;
  }
}

TEST(NormKernels, SoftmaxInnerAxis) {
  const ir::Graph g = norm_graph(OpKind::softmax, {3, 17, 5}, {}, {{"axis", int64_t{1}}});
  EXPECT_LT(kernel_error(g, "softmax.cpu", 2), 1e-4);
}

TEST(NormKernels, RopeOddSizes) {
  for (int64_t seq : {1, 7, 17}) {
    for (int64_t d : {2, 8, 128}) {
      const ir::Graph g = norm_graph(OpKind::rope, {2, 3, seq, d}, {},
                                     {{"theta", 500000.0}, {"pos_offset", int64_t{5}}});
      EXPECT_LT(kernel_error(g, "rope.cpu", 2), 1e-4) << seq << " " << d;
    }
  }
}

TEST(ActivationMath, GeluWithinOneMillionthOfErfGelu) {
  // Dense sweep, odd length so the masked tail is exercised too.
  std::vector<float> x;
  for (double v = -12.0; v <= 12.0; v += 1.0 / 1024) x.push_back(static_cast<float>(v));
  x.push_back(0.0f);
  std::vector<float> y(x.size());
  cpu::unary_run(OpKind::gelu, x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double want = static_cast<float>(0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)));
    worst = std::max(worst, std::abs(y[i] - want));
  }
  EXPECT_LT(worst, 1e-6);
}

TEST(ActivationMath, SiluAndSigmoidMatchScalar) {
  std::vector<float> x;
  for (double v = -30.0; v <= 30.0; v += 1.0 / 64) x.push_back(static_cast<float>(v));
  std::vector<float> s(x.size()), si(x.size());
  cpu::unary_run(OpKind::sigmoid, x.data(), s.data(), static_cast<int64_t>(x.size()));
  cpu::unary_run(OpKind::silu, x.data(), si.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    EXPECT_NEAR(s[i], sig, 1e-6) << x[i];
    EXPECT_NEAR(si[i], x[i] * sig, 1e-6 * std::max(1.0, std::abs(static_cast<double>(x[i]))));
  }
}

TEST(ActivationMath, ExpWithinFourUlpUpToFloatMax) {
  // The whole finite range: exp(88.7) is near FLT_MAX, where building 2^n from exponent bits
  // overflows unless split; below -87.3 the clamp gives ~1e-38.
  std::vector<float> x;
  for (double v = -87.0; v <= 88.7; v += 1.0 / 256) x.push_back(static_cast<float>(v));
  x.push_back(88.7f);
  std::vector<float> y(x.size());
  cpu::unary_run(OpKind::exp, x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    ASSERT_TRUE(std::isfinite(y[i])) << x[i];
    worst = std::max(worst, std::abs(y[i] - want) / want);
  }
  EXPECT_LT(worst, 4.8e-7);  // four ulp of a float
}

TEST(ActivationMath, TanhAndErfMatchScalar) {
  std::vector<float> x;
  for (double v = -9.0; v <= 9.0; v += 1.0 / 128) x.push_back(static_cast<float>(v));
  std::vector<float> th(x.size()), er(x.size());
  cpu::unary_run(OpKind::tanh, x.data(), th.data(), static_cast<int64_t>(x.size()));
  cpu::unary_run(OpKind::erf, x.data(), er.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(th[i], std::tanh(static_cast<double>(x[i])), 1e-6) << x[i];
    EXPECT_NEAR(er[i], std::erf(static_cast<double>(x[i])), 1e-6) << x[i];
  }
}

}  // namespace
}  // namespace cuvil::runtime
