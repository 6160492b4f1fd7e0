// Host tensors (fp32 storage) and deterministic random constant initialisers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "passes/ir/types.h"

namespace cuvil::ir {

struct Tensor {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<float> data;

  Tensor() = default;
  Tensor(Shape s, DType t = DType::f32);  // zero-filled
  Tensor(Shape s, std::vector<float> values, DType t = DType::f32);
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

// How a constant's values are made. Values are a pure function of (seed, element index), so a
// weight can be materialised lazily, in parallel, and identically on every machine.
struct ConstantInit {
  enum class Kind : uint8_t { normal, uniform, fill } kind = Kind::fill;
  float a = 0.0f;  // normal: mean; uniform: low; fill: the value
  float b =
      0.0f;  // normal: stddev (Irwin-Hall approximation, bounded at 3.46 sigma); uniform: high
  uint64_t seed = 0;

  static ConstantInit normal(float mean, float stddev, uint64_t seed) {
    return {Kind::normal, mean, stddev, seed};
  }
  static ConstantInit uniform(float low, float high, uint64_t seed) {
    return {Kind::uniform, low, high, seed};
  }
  static ConstantInit fill(float value) { return {Kind::fill, value, 0.0f, 0}; }
};

// Fills `count` values of an initialiser starting at element `first`.
void generate(const ConstantInit& init, int64_t first, int64_t count, float* out);
// The values of a whole constant. While any holder keeps the result alive, the same (init,
// count) returns the same shared data instead of generating it again: rungs of one suite share
// their weights.
std::shared_ptr<const std::vector<float>> materialize(const ConstantInit& init, int64_t count);

// Largest |a - b| / max(|b|, rms(reference)) over all elements: relative error, where elements
// smaller than the tensor's RMS are measured against the RMS so that values near zero (which
// carry cancellation noise in any summation order) do not dominate. Shapes must match; NaN or
// infinity anywhere gives +infinity.
double max_relative_error(const Tensor& actual, const Tensor& reference);

}  // namespace cuvil::ir
