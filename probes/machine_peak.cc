#include "probes/machine_peak.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "base/error.h"
#include "probes/clock.h"

namespace cuvil::probes {

namespace {

// Each thread runs the FMA loop this long; the best of kTrials is kept (a peak, not a mean).
constexpr double kFmaSecondsPerTrial = 0.15;
constexpr int kTrials = 3;
// Read buffer far larger than any last-level cache here (32 MiB+).
constexpr size_t kReadBufferBytes = size_t{512} << 20;
constexpr int kFmaChains = 12;
constexpr size_t kStreams = 8;  // concurrent read streams per thread  // independent accumulators,
                                // enough to hide FMA latency
constexpr int64_t kFmaIterationsPerCheck = 1 << 16;

__attribute__((target("avx512f"))) double fma_loop_avx512(double seconds) {
  __m512 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  int64_t iterations = 0;
  const int64_t end = now_ns() + static_cast<int64_t>(seconds * 1e9);
  const int64_t start = now_ns();
  while (now_ns() < end) {
    for (int64_t it = 0; it < kFmaIterationsPerCheck; ++it) {
      for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    iterations += kFmaIterationsPerCheck;
  }
  const double elapsed = static_cast<double>(now_ns() - start) * 1e-9;
  __m512 sum = acc[0];
  for (int i = 1; i < kFmaChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  volatile float sink = lanes[0];  // keeps the loop alive
  (void)sink;
  return static_cast<double>(iterations) * kFmaChains * 16 * 2 / elapsed;
}

__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_loop(double seconds) {
  __m512 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  // 1.0 and 2^-25 in bf16: the sums stay finite however long the loop runs.
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3300);
  int64_t iterations = 0;
  const int64_t end = now_ns() + static_cast<int64_t>(seconds * 1e9);
  const int64_t start = now_ns();
  while (now_ns() < end) {
    for (int64_t it = 0; it < kFmaIterationsPerCheck; ++it) {
      for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
    iterations += kFmaIterationsPerCheck;
  }
  const double elapsed = static_cast<double>(now_ns() - start) * 1e-9;
  __m512 sum = acc[0];  // every chain is read, so none is dropped as dead code
  for (int i = 1; i < kFmaChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  volatile float sink = lanes[0];  // keeps the loop alive
  (void)sink;
  return static_cast<double>(iterations) * kFmaChains * 16 * 4 / elapsed;
}

__attribute__((target("avx512f,avx512vnni"))) double int8_dot_loop(double seconds) {
  __m512i acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_epi32(i);
  // 1 x 1 per byte pair: each lane grows by 4 per instruction, and int32 wraps harmlessly.
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  int64_t iterations = 0;
  const int64_t end = now_ns() + static_cast<int64_t>(seconds * 1e9);
  const int64_t start = now_ns();
  while (now_ns() < end) {
    for (int64_t it = 0; it < kFmaIterationsPerCheck; ++it) {
      for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    }
    iterations += kFmaIterationsPerCheck;
  }
  const double elapsed = static_cast<double>(now_ns() - start) * 1e-9;
  __m512i sum = acc[0];  // every chain is read, so none is dropped as dead code
  for (int i = 1; i < kFmaChains; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, sum);
  volatile int32_t sink = lanes[0];  // keeps the loop alive
  (void)sink;
  return static_cast<double>(iterations) * kFmaChains * 16 * 8 / elapsed;
}

// A CPUID leaf 7 feature bit, on a CPU whose AVX-512 the OS enabled (all of these need it):
// subleaf 1 EAX bit 5 is AVX512_BF16; subleaf 0 ECX bit 11 AVX512_VNNI, EDX bits 22 and 25
// AMX-BF16 and AMX-INT8.
bool cpuid_leaf7_bit(unsigned subleaf, int reg, int bit) {
  unsigned r[4] = {};
  return __builtin_cpu_supports("avx512f") &&
         __get_cpuid_count(7, subleaf, &r[0], &r[1], &r[2], &r[3]) && ((r[reg] >> bit) & 1u) != 0;
}
constexpr int kEax = 0, kEcx = 2, kEdx = 3;

__attribute__((target("avx2,fma"))) double fma_loop_avx2(double seconds) {
  __m256 acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  int64_t iterations = 0;
  const int64_t end = now_ns() + static_cast<int64_t>(seconds * 1e9);
  const int64_t start = now_ns();
  while (now_ns() < end) {
    for (int64_t it = 0; it < kFmaIterationsPerCheck; ++it) {
      for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    iterations += kFmaIterationsPerCheck;
  }
  const double elapsed = static_cast<double>(now_ns() - start) * 1e-9;
  volatile float sink = _mm256_cvtss_f32(acc[0]);
  (void)sink;
  return static_cast<double>(iterations) * kFmaChains * 8 * 2 / elapsed;
}

double fma_loop_scalar(double seconds) {
  float acc[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) acc[i] = static_cast<float>(i) * 1e-3f;
  int64_t iterations = 0;
  const int64_t end = now_ns() + static_cast<int64_t>(seconds * 1e9);
  const int64_t start = now_ns();
  while (now_ns() < end) {
    for (int64_t it = 0; it < kFmaIterationsPerCheck; ++it) {
      for (int i = 0; i < kFmaChains; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
    }
    iterations += kFmaIterationsPerCheck;
  }
  const double elapsed = static_cast<double>(now_ns() - start) * 1e-9;
  volatile float sink = acc[0];
  (void)sink;
  return static_cast<double>(iterations) * kFmaChains * 2 / elapsed;
}

std::string fma_isa() {
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  return "scalar";
}

// Runs fn(i) on `threads` threads at once and returns the results.
template <typename Fn>
std::vector<double> on_threads(int threads, Fn fn) {
  std::vector<double> results(static_cast<size_t>(threads), 0.0);
  std::vector<std::thread> pool;
  try {
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { results[static_cast<size_t>(t)] = fn(t); });
  } catch (const std::system_error& e) {
    for (auto& th : pool) th.join();  // they finish on their own
    throw UserError("cannot start " + std::to_string(threads) + " threads to measure the peak (" +
                    std::to_string(pool.size()) + " started: " + e.what() +
                    "); lower --threads or raise the process's limits");
  }
  for (auto& th : pool) th.join();
  return results;
}

// The best of kTrials of `loop` (an FMA or dot-product loop) on every thread at once, in G per
// second.
double measure_peak_loop(int threads, double (*loop)(double)) {
  double best = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    double total = 0;
    for (double f : on_threads(threads, [&](int) { return loop(kFmaSecondsPerTrial); })) total += f;
    best = std::max(best, total);
  }
  return best * 1e-9;
}

double measure_read_bandwidth(int threads) {
  const size_t count = kReadBufferBytes / sizeof(float);
  // Under an address-space or memory limit the buffer may not be had: not measured (0), which
  // machine_peak keeps provisional, rather than an error ending the run.
  std::unique_ptr<float[]> buffer(new (std::nothrow) float[count]);
  if (!buffer) return 0;
  // Each thread first-touches its own part (so pages sit near the thread that reads them).
  const size_t chunk = count / static_cast<size_t>(threads);
  on_threads(threads, [&](int t) {
    std::fill(buffer.get() + chunk * static_cast<size_t>(t),
              buffer.get() + chunk * static_cast<size_t>(t + 1), 1.0f);
    return 0.0;
  });
  double best = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const int64_t start = now_ns();
    const auto sums = on_threads(threads, [&](int t) {
      // kStreams sub-ranges read in lockstep: several concurrent streams keep more cache-line
      // fetches in flight than one (as a GEMV reading several weight rows at once does), and
      // one accumulator vector per stream keeps the adds off the critical path.
      const size_t part = chunk / kStreams / 16 * 16;
      const float* base = buffer.get() + chunk * static_cast<size_t>(t);
      float s[kStreams][16] = {};
      for (size_t i = 0; i < part; i += 16) {
        for (size_t k = 0; k < kStreams; ++k) {
          for (size_t j = 0; j < 16; ++j) s[k][j] += base[k * part + i + j];
        }
      }
      double total = 0;
      for (auto& row : s) {
        for (float v : row) total += v;
      }
      return total;
    });
    const double seconds = static_cast<double>(now_ns() - start) * 1e-9;
    volatile double sink = sums[0];
    (void)sink;
    best = std::max(best, static_cast<double>((chunk / kStreams / 16 * 16) * kStreams *
                                              static_cast<size_t>(threads) * sizeof(float)) /
                              seconds);
  }
  return best * 1e-9;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      std::string m = line.substr(line.find(':') + 1);
      m.erase(0, m.find_first_not_of(' '));
      return m;
    }
  }
  return "unknown";
}

std::string cache_path() {
  std::string dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = x;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache";
  } else {
    return "";
  }
  mkdir(dir.c_str(), 0755);
  dir += "/cuvil";
  mkdir(dir.c_str(), 0755);
  return dir + "/machine_peak.json";
}

std::string cache_key(const std::string& model, int threads) {
  return model + "|cores=" + std::to_string(std::thread::hardware_concurrency()) +
         "|threads=" + std::to_string(threads);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

bool bf16_peak_measurable() {
  return cpuid_leaf7_bit(1, kEax, 5) && !cpuid_leaf7_bit(0, kEdx, 22);
}
bool bf16_runs_widened(const std::string& isa) {
  return isa == "avx512" && !cpuid_leaf7_bit(1, kEax, 5);
}
bool int8_peak_measurable() {
  return cpuid_leaf7_bit(0, kEcx, 11) && !cpuid_leaf7_bit(0, kEdx, 25);
}

MachinePeak measure_machine_peak(int threads) {
  MachinePeak peak;
  peak.threads = std::max(1, threads);
  peak.cpu_model = cpu_model();
  peak.isa = fma_isa();
  peak.fp32_gflops = measure_peak_loop(peak.threads, peak.isa == "avx512" ? fma_loop_avx512
                                                     : peak.isa == "avx2" ? fma_loop_avx2
                                                                          : fma_loop_scalar);
  if (bf16_peak_measurable()) peak.bf16_gflops = measure_peak_loop(peak.threads, bf16_dot_loop);
  peak.bf16_widened = bf16_runs_widened(peak.isa);
  if (int8_peak_measurable()) peak.int8_gflops = measure_peak_loop(peak.threads, int8_dot_loop);
  peak.mem_read_gbps = measure_read_bandwidth(peak.threads);
  peak.measured_at = today();
  return peak;
}

namespace {

bool is_quiet(double busy_other_cpus) {
  return busy_other_cpus >= 0 && busy_other_cpus < kQuietBusyCpus;
}

// The cache entry `e` as a peak; nullopt when it is damaged or holds no positive figures.
std::optional<MachinePeak> cached_peak(const nlohmann::json& e, int threads) {
  try {
    MachinePeak p;
    p.threads = threads;
    p.fp32_gflops = e.at("fp32_gflops").get<double>();
    // Written before bf16 and int8 peaks were measured (no key): measured again where this CPU
    // has them.
    p.bf16_gflops = e.value("bf16_gflops", -1.0);
    p.int8_gflops = e.value("int8_gflops", -1.0);
    if (p.bf16_gflops < 0 && bf16_peak_measurable()) return std::nullopt;
    if (p.int8_gflops < 0 && int8_peak_measurable()) return std::nullopt;
    p.bf16_gflops = std::max(p.bf16_gflops, 0.0);
    p.int8_gflops = std::max(p.int8_gflops, 0.0);
    p.mem_read_gbps = e.at("mem_read_gbps").get<double>();
    p.cpu_model = e.at("cpu_model").get<std::string>();
    p.isa = e.at("isa").get<std::string>();
    p.bf16_widened = bf16_runs_widened(p.isa);
    p.measured_at = e.at("measured_at").get<std::string>();
    p.provisional = e.value("provisional", false);
    p.busy_other_cpus = e.value("busy_other_cpus", -1.0);
    p.from_cache = true;
    if (p.fp32_gflops > 0 && p.mem_read_gbps > 0) return p;
  } catch (const nlohmann::json::exception&) {
  }
  return std::nullopt;
}

}  // namespace

MachinePeak machine_peak(int threads, bool remeasure, double busy_other_cpus,
                         const std::function<double()>& busy_other_cpus_after) {
  threads = std::max(1, threads);
  const std::string path = cache_path();
  const std::string key = cache_key(cpu_model(), threads);
  nlohmann::json cache = nlohmann::json::object();
  if (!path.empty()) {
    std::ifstream in(path);
    if (in) {
      try {
        cache = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception&) {
        cache = nlohmann::json::object();  // a damaged cache is measured again
      }
    }
  }
  std::optional<MachinePeak> cached;
  if (cache.is_object() && cache.contains(key)) cached = cached_peak(cache[key], threads);
  const bool quiet = is_quiet(busy_other_cpus);
  // A provisional peak stays in use while the machine stays busy; the first quiet run replaces it.
  if (cached && !remeasure && (!cached->provisional || !quiet)) return *cached;

  MachinePeak p = measure_machine_peak(threads);
  p.busy_other_cpus = busy_other_cpus;
  p.provisional = !quiet || !(p.mem_read_gbps > 0);
  if (busy_other_cpus_after && !p.provisional) {
    const double after = busy_other_cpus_after();
    if (!is_quiet(after)) {
      p.provisional = true;
      p.busy_other_cpus = after;
    }
  }
  // A peak is an upper bound: a re-measurement on a busy machine must not lower the cached one,
  // and a quiet figure stays quiet.
  if (cached) {
    p.fp32_gflops = std::max(p.fp32_gflops, cached->fp32_gflops);
    p.bf16_gflops = std::max(p.bf16_gflops, cached->bf16_gflops);
    p.int8_gflops = std::max(p.int8_gflops, cached->int8_gflops);
    p.mem_read_gbps = std::max(p.mem_read_gbps, cached->mem_read_gbps);
    if (!cached->provisional && p.provisional) {
      p.provisional = false;
      p.busy_other_cpus = cached->busy_other_cpus;
      p.measured_at = cached->measured_at;
    }
  }
  if (!path.empty()) {
    if (!cache.is_object()) cache = nlohmann::json::object();
    cache[key] = {{"fp32_gflops", p.fp32_gflops},
                  {"bf16_gflops", p.bf16_gflops},
                  {"int8_gflops", p.int8_gflops},
                  {"mem_read_gbps", p.mem_read_gbps},
                  {"cpu_model", p.cpu_model},
                  {"isa", p.isa},
                  {"measured_at", p.measured_at},
                  {"provisional", p.provisional},
                  {"busy_other_cpus", p.busy_other_cpus}};
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    std::ofstream out(tmp);
    if (out << cache.dump(2) << "\n") {
      out.close();
      std::rename(tmp.c_str(), path.c_str());
    } else {
      std::remove(tmp.c_str());
    }
  }
  return p;
}

}  // namespace cuvil::probes
