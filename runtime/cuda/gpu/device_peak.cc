// The device's measured peaks, the denominators of "% of device peak" on the GPU: bf16 tensor
// throughput (cuBLAS GEMM 8192^3, fp32 accumulate) and HBM bandwidth (device-to-device copies of
// 1 GiB, counting read + write). Cached per device under $XDG_CACHE_HOME/cuvil/ (else
// ~/.cache/cuvil/); a re-measurement keeps the higher figures (a busy device only looks slower).
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/cuda/cuda_executor.h"
#include "runtime/cuda/gpu/event_timer.h"
#include "runtime/cuda/gpu/executor_state.h"

namespace cuvil::runtime::cuda {

namespace {

std::string cache_path(const DeviceInfo& info) {
  std::string dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::string(x) + "/cuvil";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/cuvil";
  } else {
    dir = "/tmp/cuvil";
  }
  std::string name = info.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return dir + "/cuda-peak-" + name + "-sm" + std::to_string(info.sm_arch()) + ".json";
}

DevicePeak measure(const DeviceInfo& info) {
  DevicePeak peak;
  peak.device = describe(info);
  cudaStream_t stream = nullptr;
  CUVIL_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    constexpr int n = 8192;
    const int64_t bytes = int64_t{n} * n * 2;
    DeviceBuffer a(bytes, "peak GEMM A"), b(bytes, "peak GEMM B"), c(bytes * 2, "peak GEMM C");
    CUVIL_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, static_cast<size_t>(bytes), stream));
    CUVIL_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, static_cast<size_t>(bytes), stream));
    cublasHandle_t handle = nullptr;
    CUVIL_CUDA_CHECK(cublasCreate(&handle));
    CUVIL_CUDA_CHECK(cublasSetStream(handle, stream));
    const float alpha = 1.f, beta = 0.f;
    const int reps = 10;
    const double ms =
        reps * event_ms_per_run(stream, 1, reps, [&] {
          CUVIL_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(),
                                        CUDA_R_16BF, n, b.get(), CUDA_R_16BF, n, &beta, c.get(),
                                        CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        });
    cublasDestroy(handle);
    peak.bf16_tflops = 2.0 * n * n * static_cast<double>(n) * reps / (ms * 1e-3) * 1e-12;
  }
  {
    const int64_t bytes = int64_t{1} << 30;
    DeviceBuffer src(bytes, "bandwidth source"), dst(bytes, "bandwidth destination");
    CUVIL_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, static_cast<size_t>(bytes), stream));
    const int reps = 10;
    const double ms =
        reps * event_ms_per_run(stream, 1, reps, [&] {
          CUVIL_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), static_cast<size_t>(bytes),
                                           cudaMemcpyDeviceToDevice, stream));
        });
    peak.hbm_gbps = 2.0 * static_cast<double>(bytes) * reps / (ms * 1e-3) * 1e-9;
  }
  cudaStreamDestroy(stream);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  peak.measured_at = date;
  return peak;
}

}  // namespace

DevicePeak device_peak(bool remeasure) {
  require_cuda("device peak");
  const DeviceInfo info = device_info(0);
  const std::string path = cache_path(info);
  DevicePeak cached;
  bool have_cache = false;
  try {
    std::ifstream in(path);
    if (in) {
      const nlohmann::json j = nlohmann::json::parse(in);
      cached.device = j.at("device");
      cached.bf16_tflops = j.at("bf16_tflops");
      cached.hbm_gbps = j.at("hbm_gbps");
      cached.measured_at = j.at("measured_at");
      cached.from_cache = true;
      have_cache = cached.bf16_tflops > 0 && cached.hbm_gbps > 0;
    }
  } catch (const std::exception&) {
    have_cache = false;  // a damaged cache is measured again
  }
  if (have_cache && !remeasure) return cached;
  DevicePeak peak = measure(info);
  if (have_cache) {
    peak.bf16_tflops = std::max(peak.bf16_tflops, cached.bf16_tflops);
    peak.hbm_gbps = std::max(peak.hbm_gbps, cached.hbm_gbps);
  }
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  std::ofstream out(path);
  if (out) {
    out << nlohmann::json{{"device", peak.device},
                          {"bf16_tflops", peak.bf16_tflops},
                          {"hbm_gbps", peak.hbm_gbps},
                          {"measured_at", peak.measured_at}}
               .dump(2)
        << "\n";
  }
  return peak;
}

}  // namespace cuvil::runtime::cuda
