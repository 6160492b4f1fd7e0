#include "runtime/cuda/codegen/kernel_source.h"

#include "base/error.h"

namespace cuvil::runtime::cuda::codegen {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

void require(bool ok, const std::string& message) {
  if (!ok) throw UserError(message);
}

std::string_view to_string(ElemType type) {
  switch (type) {
    case ElemType::f32:
      return "f32";
    case ElemType::f16:
      return "f16";
    case ElemType::bf16:
      return "bf16";
  }
  return "?";
}

int elem_bytes(ElemType type) {
  return type == ElemType::f32 ? 4 : 2;
}

std::string_view storage_type(ElemType type) {
  return type == ElemType::f32 ? "float" : "unsigned short";
}

std::string load_expr(ElemType type, std::string_view pointer, std::string_view index) {
  std::string access = "((const " + std::string(storage_type(type)) + "*)(" + std::string(pointer) +
                       "))[" + std::string(index) + "]";
  switch (type) {
    case ElemType::f32:
      return access;
    case ElemType::f16:
      return "cuvil_f16_to_f32(" + access + ")";
    case ElemType::bf16:
      return "cuvil_bf16_to_f32(" + access + ")";
  }
  return access;
}

std::string to_f32_expr(ElemType type, std::string_view raw) {
  switch (type) {
    case ElemType::f32:
      return std::string(raw);
    case ElemType::f16:
      return "cuvil_f16_to_f32(" + std::string(raw) + ")";
    case ElemType::bf16:
      return "cuvil_bf16_to_f32(" + std::string(raw) + ")";
  }
  return std::string(raw);
}

std::string from_f32_expr(ElemType type, std::string_view value) {
  switch (type) {
    case ElemType::f32:
      return std::string(value);
    case ElemType::f16:
      return "cuvil_f32_to_f16(" + std::string(value) + ")";
    case ElemType::bf16:
      return "cuvil_f32_to_bf16(" + std::string(value) + ")";
  }
  return std::string(value);
}

std::string store_stmt(ElemType type, std::string_view pointer, std::string_view index,
                       std::string_view value) {
  std::string target = "((" + std::string(storage_type(type)) + "*)(" + std::string(pointer) +
                       "))[" + std::string(index) + "]";
  switch (type) {
    case ElemType::f32:
      return target + " = " + std::string(value) + ";";
    case ElemType::f16:
      return target + " = cuvil_f32_to_f16(" + std::string(value) + ");";
    case ElemType::bf16:
      return target + " = cuvil_f32_to_bf16(" + std::string(value) + ");";
  }
  return "";
}

std::string_view device_prelude() {
  return R"CUDA(// cuvil generated kernel: device prelude
typedef long long i64;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
__device__ __forceinline__ float cuvil_bf16_to_f32(unsigned short bits) {
  return __uint_as_float(((unsigned int)bits) << 16);
}
__device__ __forceinline__ unsigned short cuvil_f32_to_bf16(float value) {
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}
__device__ __forceinline__ float cuvil_f16_to_f32(unsigned short bits) {
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
  return value;
}
__device__ __forceinline__ unsigned short cuvil_f32_to_f16(float value) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}
__device__ __forceinline__ float cuvil_relu(float x) { return x < 0.f ? 0.f : x; }  // NaN passes
__device__ __forceinline__ float cuvil_sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }
__device__ __forceinline__ float cuvil_silu(float x) { return x / (1.f + __expf(-x)); }
// Exact (erf) GELU, as the IR's gelu.
__device__ __forceinline__ float cuvil_gelu(float x) {
  return 0.5f * x * (1.f + erff(x * 0.7071067811865475f));
}
__device__ __forceinline__ float cuvil_warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float cuvil_warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
)CUDA";
}

}  // namespace cuvil::runtime::cuda::codegen
