#include "runtime/cpu/kernel_util.h"

#include <thread>

#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {
constexpr int kLanes = 8;

template <class F>
double lane_sum(const float* x, int64_t n, F f) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += f(static_cast<double>(x[i + l]));
  }
  double s = 0;
  for (; i < n; ++i) s += f(static_cast<double>(x[i]));
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}
}  // namespace

double sum_f64(const float* x, int64_t n) {
  return lane_sum(x, n, [](double v) { return v; });
}

std::unique_ptr<ThreadPool> preparing_pool(int64_t elements) {
  const int threads = static_cast<int>(std::thread::hardware_concurrency());
  if (elements < kParallelPrepareElements || threads < 2) return nullptr;
  // No spinning: the pool lives for one weight's packing.
  return std::make_unique<ThreadPool>(threads, /*spin_us=*/0);
}

}  // namespace cuvil::runtime::cpu
