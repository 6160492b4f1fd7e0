// cuvil-cuda-gemm-compare: the generated tensor-core GEMM against cuBLAS at Llama-3-8B's linear
// shapes, side by side in one process (bf16 operands, fp32 accumulate and output, weights [N, K]
// as linear stores them). Prints one row per shape and tile: TFLOP/s of each, the ratio, and the
// largest relative difference between their results. `--device-check` only says whether a device
// is usable (exit 0) or why not (exit 2). Needs a GPU; built with the CUDA toolkit.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/codegen/gemm.h"
#include "runtime/cuda/codegen/kernel_cache.h"
#include "runtime/cuda/codegen/launch.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/gpu/event_timer.h"
#include "runtime/cuda/gpu/executor_state.h"
#include "runtime/cuda/kernels_simple.h"

namespace cuvil::runtime::cuda {
namespace {

struct Shape3 {
  const char* name;
  int64_t m, n, k;
};

// Llama-3-8B linears at prefill 512 and a larger batch of tokens (M >= 512, the target).
const Shape3 kShapes[] = {
    {"q/o proj 512", 512, 4096, 4096},  {"k/v proj 512", 512, 1024, 4096},
    {"gate/up 512", 512, 14336, 4096},  {"down 512", 512, 4096, 14336},
    {"lm head 512", 512, 128256, 4096}, {"gate/up 4096", 4096, 14336, 4096},
    {"down 4096", 4096, 4096, 14336},
};

const codegen::GemmTiles kTiles[] = {
    {128, 128, 32, 64, 64, 3, 8},
    {128, 256, 32, 64, 64, 3, 8},
    {256, 128, 32, 64, 64, 4, 8},
};

// Deterministic bf16 values in [-1, 1) (bit patterns built on the host).
std::vector<uint16_t> random_bf16(int64_t count, uint32_t seed) {
  std::vector<uint16_t> out(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 1;
  for (auto& v : out) {
    state = state * 1664525u + 1013904223u;
    const float f = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 2.f - 1.f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    v = static_cast<uint16_t>(bits >> 16);
  }
  return out;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double rms = 0;
  for (float v : b) rms += static_cast<double>(v) * v;
  rms = std::sqrt(rms / std::max<size_t>(b.size(), 1));
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double denom = std::max(std::fabs(static_cast<double>(b[i])), rms);
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / denom);
  }
  return worst;
}

int compare(int reps) {
  const DeviceInfo info = device_info(0);
  std::printf("# %s; bf16 x bf16 -> fp32, C = A[M,K] * W[N,K]^T, %d timed reps each\n",
              describe(info).c_str(), reps);
  std::printf("%-14s %6s %6s %6s  %-22s %9s %9s %7s %9s\n", "shape", "M", "N", "K", "tiles",
              "cuBLAS", "generated", "ratio", "max diff");
  cudaStream_t stream = nullptr;
  CUVIL_CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t blas = nullptr;
  CUVIL_CUDA_CHECK(cublasCreate(&blas));
  CUVIL_CUDA_CHECK(cublasSetStream(blas, stream));
  codegen::KernelCache cache;
  double worst_ratio = 1e9;
  for (const Shape3& s : kShapes) {
    DeviceBuffer a(s.m * s.k * 2, "A"), w(s.n * s.k * 2, "W");
    DeviceBuffer c_blas(s.m * s.n * 4, "C cuBLAS"), c_gen(s.m * s.n * 4, "C generated");
    const auto ha = random_bf16(s.m * s.k, 1), hw = random_bf16(s.n * s.k, 2);
    CUVIL_CUDA_CHECK(cudaMemcpy(a.get(), ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CUVIL_CUDA_CHECK(cudaMemcpy(w.get(), hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    const float alpha = 1.f, beta = 0.f;
    const double blas_ms = event_ms_per_run(stream, 3, reps, [&] {
      CUVIL_CUDA_CHECK(
          cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.n), static_cast<int>(s.m),
                       static_cast<int>(s.k), &alpha, w.get(), CUDA_R_16BF, static_cast<int>(s.k),
                       a.get(), CUDA_R_16BF, static_cast<int>(s.k), &beta, c_blas.get(), CUDA_R_32F,
                       static_cast<int>(s.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    std::vector<float> ref(static_cast<size_t>(s.m * s.n)), got(ref.size());
    CUVIL_CUDA_CHECK(cudaMemcpy(ref.data(), c_blas.get(), ref.size() * 4, cudaMemcpyDeviceToHost));
    const double flop = 2.0 * s.m * s.n * static_cast<double>(s.k);
    for (const codegen::GemmTiles& t : kTiles) {
      codegen::GemmProblem p;
      p.m = s.m, p.n = s.n, p.k = s.k;
      p.a = p.b = codegen::ElemType::bf16;
      p.c = codegen::ElemType::f32;
      p.b_transposed = true;
      char tiles[64];
      std::snprintf(tiles, sizeof tiles, "%dx%dx%d w%dx%d s%d", t.block_m, t.block_n, t.block_k,
                    t.warp_m, t.warp_n, t.stages);
      try {
        codegen::validate_gemm(p, t);
      } catch (const UserError& e) {
        std::printf("%-14s %6lld %6lld %6lld  %-22s rejected: %s\n", s.name,
                    static_cast<long long>(s.m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), tiles, e.what());
        continue;
      }
      codegen::LoadedKernel kernel(cache.get(codegen::gemm_source(p, t), info.sm_arch()));
      const codegen::LaunchGeometry g = codegen::gemm_geometry(p, t);
      const codegen::GemmKernelParams params =
          codegen::gemm_dense_params(p, a.get(), w.get(), c_gen.get());
      const double gen_ms =
          event_ms_per_run(stream, 3, reps, [&] { kernel.launch(g, &params, stream); });
      CUVIL_CUDA_CHECK(cudaMemcpy(got.data(), c_gen.get(), got.size() * 4, cudaMemcpyDeviceToHost));
      const double ratio = blas_ms / gen_ms;
      worst_ratio = std::min(worst_ratio, ratio);
      std::printf("%-14s %6lld %6lld %6lld  %-22s %8.1fT %8.1fT %6.0f%% %9.2e\n", s.name,
                  static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k), tiles, flop / blas_ms * 1e-9, flop / gen_ms * 1e-9,
                  ratio * 100, max_relative_difference(got, ref));
      std::fflush(stdout);
    }
  }
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  std::printf("# ratio = cuBLAS time / generated time (>= 70%% is the issue's target)\n");
  return 0;
}

}  // namespace
}  // namespace cuvil::runtime::cuda

int main(int argc, char** argv) {
  using namespace cuvil::runtime::cuda;
  try {
    if (argc > 1 && std::string(argv[1]) == "--device-check") {
      const std::string reason = cuda_unavailable_reason();
      if (!reason.empty()) {
        std::fprintf(stderr, "no usable CUDA device: %s\n", reason.c_str());
        return 2;
      }
      std::printf("%s\n", describe(device_info(0)).c_str());
      return 0;
    }
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
    require_cuda("cuvil-cuda-gemm-compare");
    return compare(reps);
  } catch (const cuvil::UserError& e) {
    std::fprintf(stderr, "cuvil-cuda-gemm-compare: error: %s\n", e.what());
    return 2;
  }
}
