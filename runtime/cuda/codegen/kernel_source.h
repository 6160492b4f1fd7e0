// What every CUDA kernel generator returns: CUDA C++ source text for NVRTC plus how to launch it.
// Generators are pure host C++ (no CUDA headers), so they build and are unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cuvil::runtime::cuda::codegen {

// Element type of a device buffer. Device buffers hold real 16-bit values (unlike the CPU
// runtime's fp32 storage); every kernel computes and accumulates in fp32.
enum class ElemType : uint8_t { f32, f16, bf16 };

std::string_view to_string(ElemType type);
int elem_bytes(ElemType type);

// A generated kernel: `name` is its extern "C" entry point in `source`; `options` are NVRTC
// options besides the target architecture (the compiler adds --gpu-architecture).
struct KernelSource {
  std::string name;
  std::string source;
  std::vector<std::string> options;
};

struct LaunchGeometry {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic shared memory; > 48 KiB needs the opt-in attribute
};

// sm_90 (H100/H200): the most dynamic shared memory one block may opt in to.
inline constexpr int kMaxSharedBytesSm90 = 227 * 1024;
inline constexpr int kMaxThreadsPerBlock = 1024;

// The generators' shared helpers: every `from` in `text` replaced by `to` (their {{NAME}}
// templates), and a user error for a problem or tiling they cannot generate.
void replace_all(std::string& text, const std::string& from, const std::string& to);
void require(bool ok, const std::string& message);

// Device helpers every generated kernel starts with: typed loads/stores that convert to and from
// fp32 through PTX (no cuda_fp16.h/cuda_bf16.h: NVRTC compiles faster without them), the
// epilogue activations, and warp reductions.
std::string_view device_prelude();

// "f32" -> "float", 16-bit types -> "unsigned short" (raw bits; converted by the prelude).
std::string_view storage_type(ElemType type);
// Expression reading element `index` of `pointer` (of type `type`) as a float.
std::string load_expr(ElemType type, std::string_view pointer, std::string_view index);
// Expression converting raw storage value `raw` (storage_type) to float, and float to storage.
std::string to_f32_expr(ElemType type, std::string_view raw);
std::string from_f32_expr(ElemType type, std::string_view value);
// Statement storing float `value` into element `index` of `pointer`.
std::string store_stmt(ElemType type, std::string_view pointer, std::string_view index,
                       std::string_view value);

}  // namespace cuvil::runtime::cuda::codegen
