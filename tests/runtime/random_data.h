// Seeded random inputs for the kernel tests (std::mt19937 with the standard distributions: the
// same values for every build with the same standard library).
//
// Not ir::generate: drawn from it, the bf16 GEMM's odd-size sweep fails at 1x1x33 (a single
// output that nearly cancels, judged by a relative error), so the sweep's data stays as it was
// until its bound is made relative to the products' magnitude (as the int8 test's
// SingleOutputErrorBoundedByMagnitudes is).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace cuvil::runtime::testing {

inline std::vector<float> uniform_vector(int64_t n, uint32_t seed, float lo = -1.0f,
                                         float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> normal_vector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace cuvil::runtime::testing
