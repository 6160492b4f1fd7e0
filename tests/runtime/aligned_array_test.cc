#include "runtime/cpu/aligned_array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace cuvil::runtime::cpu {
namespace {

bool on_a_cache_line(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

// Sizes below and above glibc's mmap threshold (128 KiB at first): std::vector's storage starts
// 16 bytes past a 64-byte boundary for the large ones.
TEST(AlignedArray, StartsOnACacheLineAtEverySize) {
  for (int64_t count : {1, 3, 7, 17, 1000, 40000, 1 << 20}) {
    AlignedArray<float> a(count);
    EXPECT_TRUE(on_a_cache_line(a.data())) << count << " floats";
    EXPECT_EQ(a.size(), count);
    AlignedArray<uint16_t> h(count);
    EXPECT_TRUE(on_a_cache_line(h.data())) << count << " uint16";
  }
}

TEST(AlignedArray, IsZeroed) {
  AlignedArray<float> a(1001);
  for (int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], 0.0f) << i;
}

TEST(AlignedArray, EmptyHasNoElementsAndMovesOwnership) {
  AlignedArray<float> empty;
  EXPECT_EQ(empty.size(), 0);
  EXPECT_EQ(empty.data(), nullptr);
  AlignedArray<float> a(33);
  a.data()[32] = 5.0f;
  const float* p = a.data();
  AlignedArray<float> b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[32], 5.0f);
  b = {};  // releases the memory (Winograd's bf16 path drops its fp32 copy so)
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
