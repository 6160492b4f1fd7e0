// Reduced-precision building blocks shared by the bf16 and int8 GEMMs: which of the needed
// instruction sets this CPU has, fp32 <-> bf16 conversion, and dynamic per-tensor quantisation
// of activations to u8.
#pragma once

#include <cstdint>
#include <cstring>

namespace cuvil::runtime {
class ThreadPool;
}

namespace cuvil::runtime::cpu {

// CPUID says the CPU has AVX-512 (cpu_has_avx512(), runtime/cpu/cpu_isa.h) plus avx512_bf16
// (VDPBF16PS) / avx512_vnni (VPDPBUSD). Setting CUVIL_CPU_DISABLE to a comma list containing
// "avx512", "avx512_bf16" or "avx512_vnni" makes the answer no (to exercise the fallback paths on
// a CPU that has them).
bool cpu_has_avx512_bf16();
bool cpu_has_avx512_vnni();
// AMX-BF16 tiles (TDPBF16PS) usable: CPUID says so and Linux granted this process the tile data
// state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once). "amx_bf16" in CUVIL_CPU_DISABLE says no.
bool cpu_has_amx_bf16();
// AMX-INT8 tiles (TDPBUSD, u8 x s8): as AMX-BF16, "amx_int8" in CUVIL_CPU_DISABLE says no.
bool cpu_has_amx_int8();

// Stated accuracy of one reduced-precision product against fp64, as ir::max_relative_error
// (errors of elements below the reference's RMS measured against the RMS). bf16 keeps 8 mantissa
// bits (unit roundoff 2^-9 per operand); the measured worst case over the tests' odd shapes up
// to K = 4096 is about 1e-2. int8: per-tensor u8 activations and per-channel s8 weights, 7-8 bits
// each; measured worst case about 2e-2.
inline constexpr double kBf16GemmTolerance = 2e-2;
inline constexpr double kInt8GemmTolerance = 5e-2;

// Round-to-nearest-even fp32 -> bf16 (the rounding VCVTNE2PS2BF16 does), and back (exact).
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
// Two bf16 values in one 32-bit word, the even-k element in the low half: the unit VDPBF16PS
// multiplies pairwise.
inline uint32_t bf16_pair(float even, float odd) {
  return static_cast<uint32_t>(to_bf16(even)) | (static_cast<uint32_t>(to_bf16(odd)) << 16);
}

// Affine u8 quantisation of one tensor: real = scale * (q - zero_point). Non-negative tensors
// (after ReLU) use the full 0..255 range with zero_point 0; tensors with negative values are
// symmetric, q = round(x / scale) + 128 with scale = max|x| / 127, so q - 128 is in [-127, 127].
struct ActivationQuant {
  float scale = 1.0f;
  int32_t zero_point = 0;
};
// Chooses the parameters from the tensor's range (computed in parallel).
ActivationQuant choose_activation_quant(const float* x, int64_t count, ThreadPool& pool);
// dst[i] = clamp(round(x[i] / scale) + zero_point, 0, 255), in parallel.
void quantize_u8(const float* x, int64_t count, ActivationQuant q, uint8_t* dst, ThreadPool& pool);

// Symmetric per-row int8 quantisation of a weight matrix W[rows, cols] (row stride ld):
// scale[r] = max|W[r, :]| / 127 (1 for an all-zero row), q = round(W / scale) in [-127, 127].
void quantize_rows_s8(const float* w, int64_t rows, int64_t cols, int64_t ld, int8_t* q,
                      float* scale);

}  // namespace cuvil::runtime::cpu
