// The AVX-512 loops of dynamic activation quantisation (quantize_avx512.cc); quantize.cc holds
// the portable ones, their reference, and calls these where kernel_isa_avx512_or_portable() is
// avx512. Both give the same results bit for bit (tests/runtime/quantize_test.cc).
#pragma once

#include <cstdint>

namespace cuvil::runtime::cpu {

// min(0, x[0..n)) and max(0, x[0..n)) into *lo and *hi; NaNs are skipped.
void activation_range_avx512(const float* x, int64_t n, float* lo, float* hi);
// dst[i] = clamp(round_to_nearest_even(x[i] * inv) + zero_point, 0, 255); a NaN gives 0.
void quantize_u8_avx512(const float* x, int64_t n, float inv, float zero_point, uint8_t* dst);

}  // namespace cuvil::runtime::cpu
