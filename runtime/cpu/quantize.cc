#include "runtime/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/quantize_avx512.h"
#include "runtime/thread_pool.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cuvil::runtime::cpu {

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  return cpu_has_avx512() && __builtin_cpu_supports("avx512bf16") &&
         !cpu_feature_disabled("avx512_bf16");
#else
  return false;
#endif
}

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__)
  return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni") &&
         !cpu_feature_disabled("avx512_vnni");
#else
  return false;
#endif
}

#if defined(__x86_64__) && defined(__linux__)
namespace {

// CPUID leaf 7 EDX: AMX-TILE (bit 24) and the tile unit `unit_bit` (22: bf16, 25: int8); and
// Linux's permission for the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM), asked once.
bool amx_unit_granted(int unit_bit) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!((d >> 24) & 1u) || !((d >> unit_bit) & 1u)) return false;
  static const bool permitted = [] {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
}

}  // namespace
#endif

bool cpu_has_amx_bf16() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool granted = amx_unit_granted(22);
  return granted && cpu_has_avx512_bf16() && !cpu_feature_disabled("amx_bf16");
#else
  return false;
#endif
}

bool cpu_has_amx_int8() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool granted = amx_unit_granted(25);
  return granted && cpu_has_avx512_vnni() && !cpu_feature_disabled("amx_int8");
#else
  return false;
#endif
}

namespace {

// The portable loops, the reference of the AVX-512 ones (quantize_avx512.cc).
void activation_range_portable(const float* x, int64_t n, float* lo, float* hi) {
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    mn = std::min(mn, x[i]);  // a NaN compares false: skipped
    mx = std::max(mx, x[i]);
  }
  *lo = mn, *hi = mx;
}

void quantize_u8_portable(const float* x, int64_t n, float inv, float zero_point, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] * inv) + zero_point;
    v = v > 0.0f ? v : 0.0f;  // a NaN gives 0
    v = v < 255.0f ? v : 255.0f;
    dst[i] = static_cast<uint8_t>(v);
  }
}

}  // namespace

ActivationQuant choose_activation_quant(const float* x, int64_t count, ThreadPool& pool) {
  const bool avx512 = kernel_isa_avx512_or_portable() == KernelIsa::avx512;
  const int parts = pool.threads();
  std::vector<float> lo(static_cast<size_t>(parts), 0.0f), hi(static_cast<size_t>(parts), 0.0f);
  pool.parallel_for_tid(count, [&](int tid, int64_t b, int64_t e) {
    float mn = 0.0f, mx = 0.0f;
    if (avx512) {
      activation_range_avx512(x + b, e - b, &mn, &mx);
    } else {
      activation_range_portable(x + b, e - b, &mn, &mx);
    }
    lo[static_cast<size_t>(tid)] = std::min(lo[static_cast<size_t>(tid)], mn);
    hi[static_cast<size_t>(tid)] = std::max(hi[static_cast<size_t>(tid)], mx);
  });
  const float mn = *std::min_element(lo.begin(), lo.end());
  const float mx = *std::max_element(hi.begin(), hi.end());
  ActivationQuant q;
  if (mn >= 0.0f) {
    q.zero_point = 0;
    q.scale = mx > 0.0f ? mx / 255.0f : 1.0f;
  } else {
    q.zero_point = 128;
    const float absmax = std::max(-mn, mx);
    q.scale = absmax / 127.0f;
  }
  return q;
}

void quantize_u8(const float* x, int64_t count, ActivationQuant q, uint8_t* dst, ThreadPool& pool) {
  const bool avx512 = kernel_isa_avx512_or_portable() == KernelIsa::avx512;
  const float inv = 1.0f / q.scale;
  const float zp = static_cast<float>(q.zero_point);
  pool.parallel_for(count, [&](int64_t b, int64_t e) {
    if (avx512) {
      quantize_u8_avx512(x + b, e - b, inv, zp, dst + b);
    } else {
      quantize_u8_portable(x + b, e - b, inv, zp, dst + b);
    }
  });
}

void quantize_rows_s8(const float* w, int64_t rows, int64_t cols, int64_t ld, int8_t* q,
                      float* scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * ld;
    float absmax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(row[c]));
    const float s = absmax > 0.0f ? absmax / 127.0f : 1.0f;
    scale[r] = s;
    const float inv = 1.0f / s;
    for (int64_t c = 0; c < cols; ++c) {
      q[r * cols + c] =
          static_cast<int8_t>(std::clamp(std::nearbyint(row[c] * inv), -127.0f, 127.0f));
    }
  }
}

}  // namespace cuvil::runtime::cpu
