// Dynamic activation quantisation (runtime/cpu/quantize.cc and quantize_avx512.cc): on every
// instruction set this CPU offers, the range and the u8 bytes are those of the plain definition,
// bit for bit, at odd sizes and on values that round to even, saturate, or are not numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/cpu/quantize.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/isa_sweep.h"
#include "tests/runtime/random_data.h"

namespace cuvil::runtime::cpu {
namespace {

const int64_t kSizes[] = {1, 3, 7, 15, 16, 17, 63, 64, 65, 100, 1000, 4099};

// The definition: q = clamp(round-to-nearest-even(x * (1 / scale)) + zero_point, 0, 255), a NaN
// giving 0.
uint8_t quantized(float x, ActivationQuant q) {
  const float v = std::nearbyint(x * (1.0f / q.scale)) + static_cast<float>(q.zero_point);
  if (!(v > 0.0f)) return 0;
  return static_cast<uint8_t>(std::min(v, 255.0f));
}

// Values in [-3, 3], with every fourth one on a tie of the scale (k + 0.5) * scale (they must
// round to even), and a few far outside the range (saturate), infinite, or NaN.
std::vector<float> awkward_values(int64_t n, float scale, uint32_t seed) {
  std::vector<float> x = testing::uniform_vector(n, seed, -3.0f, 3.0f);
  for (int64_t i = 0; i < n; i += 4)
    x[static_cast<size_t>(i)] = (static_cast<float>(i % 9) - 4.5f) * scale;
  const float specials[] = {1e9f, -1e9f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (int64_t i = 0; i < 5 && 5 * i + 2 < n; ++i) x[static_cast<size_t>(5 * i + 2)] = specials[i];
  return x;
}

TEST(QuantizeU8, GivesTheBytesOfTheDefinitionOnEveryIsa) {
  for (const ActivationQuant q : {ActivationQuant{3.0f / 127.0f, 128}, ActivationQuant{0.02f, 0}}) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = awkward_values(n, q.scale, static_cast<uint32_t>(n));
      std::vector<uint8_t> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        want[static_cast<size_t>(i)] = quantized(x[static_cast<size_t>(i)], q);
      testing::for_each_isa([&] {
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          // One byte past the end: the kernel must not write it.
          std::vector<uint8_t> got(static_cast<size_t>(n) + 1, 0xAB);
          quantize_u8(x.data(), n, q, got.data(), pool);
          EXPECT_EQ(got.back(), 0xAB) << "n=" << n;
          got.pop_back();
          EXPECT_EQ(got, want) << "n=" << n << " zero point " << q.zero_point
                               << " threads=" << threads;
        }
      });
    }
  }
}

// The range includes 0 and skips NaN; its extremes sit anywhere, the last element included (the
// vector loop's masked tail).
TEST(ChooseActivationQuant, TakesTheRangeOfTheDefinitionOnEveryIsa) {
  for (int64_t n : kSizes) {
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
      std::vector<float> x = testing::uniform_vector(n, static_cast<uint32_t>(n + at), -1.0f, 2.0f);
      x[static_cast<size_t>(at)] = -7.25f;
      if (n > 2) x[static_cast<size_t>((at + 1) % n)] = std::numeric_limits<float>::quiet_NaN();
      float lo = 0.0f, hi = 0.0f;
      for (float v : x) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      testing::for_each_isa([&] {
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          const ActivationQuant q = choose_activation_quant(x.data(), n, pool);
          EXPECT_EQ(q.zero_point, 128) << "n=" << n;
          EXPECT_EQ(q.scale, std::max(-lo, hi) / 127.0f) << "n=" << n << " at " << at;
        }
      });
    }
  }
}

TEST(ChooseActivationQuant, NonNegativeTensorsUseTheWholeByteOnEveryIsa) {
  for (int64_t n : kSizes) {
    std::vector<float> x = testing::uniform_vector(n, static_cast<uint32_t>(n), 0.0f, 1.0f);
    x[static_cast<size_t>(n - 1)] = 5.1f;
    testing::for_each_isa([&] {
      ThreadPool pool(2);
      const ActivationQuant q = choose_activation_quant(x.data(), n, pool);
      EXPECT_EQ(q.zero_point, 0) << "n=" << n;
      EXPECT_EQ(q.scale, 5.1f / 255.0f) << "n=" << n;
    });
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu
