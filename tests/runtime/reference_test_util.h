// Small helpers for the reference interpreter's tests: deterministic values, one-node graphs,
// and NCHW <-> NHWC / nchw16c shuffles written independently of the interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "passes/ir/graph.h"
#include "runtime/reference/interpreter.h"

namespace cuvil::runtime::reference::testing {

using ir::Shape;
using ir::Tensor;

// Deterministic N(0, 1) values.
inline std::vector<float> random_values(int64_t count, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  ir::generate(ir::ConstantInit::normal(0.0f, 1.0f, seed), 0, count, v.data());
  return v;
}

inline Tensor random_tensor(Shape shape, uint64_t seed) {
  const int64_t n = ir::num_elements(shape);
  return Tensor(std::move(shape), random_values(n, seed));
}

// 0, 1, 2, ... in row-major order.
inline Tensor iota_tensor(Shape shape, float first = 0.0f) {
  std::vector<float> v(static_cast<size_t>(ir::num_elements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
  return Tensor(std::move(shape), std::move(v));
}

inline ir::ValueId constant(ir::Graph& g, const std::string& name, Tensor t) {
  return g.add_constant_data(name, std::move(t), true);
}

// Runs a graph whose single output is `out` and returns that output.
inline Tensor run_one(ir::Graph& g, ir::ValueId out, const std::vector<Tensor>& inputs) {
  g.mark_output(out);
  std::vector<Tensor> results = interpret(g, inputs);
  EXPECT_EQ(results.size(), 1u);
  return results.at(0);
}

inline void expect_all_near(const std::vector<float>& actual, const std::vector<float>& expected,
                            double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol) << "at element " << i;
  }
}

// Physical NCHW -> NHWC and back, by explicit index arithmetic.
inline Tensor nchw_to_nhwc(const Tensor& x) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  Tensor y({n, h, w, c});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t iw = 0; iw < w; ++iw)
          y.data[static_cast<size_t>(((in * h + ih) * w + iw) * c + ic)] =
              x.data[static_cast<size_t>(((in * c + ic) * h + ih) * w + iw)];
  return y;
}

inline Tensor nhwc_to_nchw(const Tensor& y) {
  const int64_t n = y.shape[0], h = y.shape[1], w = y.shape[2], c = y.shape[3];
  Tensor x({n, c, h, w});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t iw = 0; iw < w; ++iw)
          x.data[static_cast<size_t>(((in * c + ic) * h + ih) * w + iw)] =
              y.data[static_cast<size_t>(((in * h + ih) * w + iw) * c + ic)];
  return x;
}

// Physical NCHW -> blocked nchw16c ([N, ceil(C/16), H, W, 16], lanes past C = `pad`) and back.
inline Tensor nchw_to_nchw16c(const Tensor& x, float pad = 0.0f) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t blocks = (c + 15) / 16;
  Tensor y({n, blocks, h, w, 16});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < blocks * 16; ++ic)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t iw = 0; iw < w; ++iw)
          y.data[static_cast<size_t>((((in * blocks + ic / 16) * h + ih) * w + iw) * 16 +
                                     ic % 16)] =
              ic < c ? x.data[static_cast<size_t>(((in * c + ic) * h + ih) * w + iw)] : pad;
  return y;
}

inline Tensor nchw16c_to_nchw(const Tensor& y, int64_t c) {
  const int64_t n = y.shape[0], blocks = y.shape[1], h = y.shape[2], w = y.shape[3];
  Tensor x({n, c, h, w});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t iw = 0; iw < w; ++iw)
          x.data[static_cast<size_t>(((in * c + ic) * h + ih) * w + iw)] =
              y.data[static_cast<size_t>((((in * blocks + ic / 16) * h + ih) * w + iw) * 16 +
                                         ic % 16)];
  return x;
}

}  // namespace cuvil::runtime::reference::testing
