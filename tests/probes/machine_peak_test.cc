#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "probes/machine_peak.h"

namespace cuvil::probes {
namespace {

// Points the cache at a fresh folder for the duration of a test.
class ScopedCacheHome {
 public:
  explicit ScopedCacheHome(const std::string& name) {
    const char* old = std::getenv("XDG_CACHE_HOME");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    const std::string dir = ::testing::TempDir() + name;
    std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  }
  ~ScopedCacheHome() {
    if (had_old_) {
      setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    } else {
      unsetenv("XDG_CACHE_HOME");
    }
  }

 private:
  bool had_old_ = false;
  std::string old_;
};

TEST(MachinePeak, MeasuresPositiveFigures) {
  const MachinePeak p = measure_machine_peak(1);
  EXPECT_GT(p.fp32_gflops, 0.1);
  EXPECT_GT(p.mem_read_gbps, 0.1);
  EXPECT_FALSE(p.isa.empty());
  EXPECT_FALSE(p.from_cache);
}

TEST(MachinePeak, SecondCallComesFromTheCacheUnlessRemeasured) {
  ScopedCacheHome home("peak_cache");
  const MachinePeak first = machine_peak(1, false, 0.0);
  EXPECT_FALSE(first.from_cache);
  const MachinePeak second = machine_peak(1, false, 0.0);
  EXPECT_TRUE(second.from_cache);
  EXPECT_DOUBLE_EQ(second.fp32_gflops, first.fp32_gflops);
  EXPECT_FALSE(machine_peak(1, /*remeasure=*/true).from_cache);
}

TEST(MachinePeak, DamagedCacheIsMeasuredAgain) {
  ScopedCacheHome home("peak_damaged");
  std::system(("mkdir -p '" + std::string(std::getenv("XDG_CACHE_HOME")) +
               "/cuvil' && echo '{not json' > '" + std::string(std::getenv("XDG_CACHE_HOME")) +
               "/cuvil/machine_peak.json'")
                  .c_str());
  const MachinePeak p = machine_peak(1);
  EXPECT_FALSE(p.from_cache);
  EXPECT_GT(p.fp32_gflops, 0.1);
}

TEST(MachinePeak, MeasuredUnderLoadIsStoredProvisional) {
  ScopedCacheHome home("peak_busy");
  const MachinePeak busy = machine_peak(1, false, /*busy_other_cpus=*/1.0);
  EXPECT_TRUE(busy.provisional);
  EXPECT_DOUBLE_EQ(busy.busy_other_cpus, 1.0);
  // Still busy: the provisional figures stay in use, from the cache.
  const MachinePeak again = machine_peak(1, false, 1.0);
  EXPECT_TRUE(again.from_cache);
  EXPECT_TRUE(again.provisional);
}

TEST(MachinePeak, UnknownLoadIsProvisional) {
  ScopedCacheHome home("peak_unknown");
  EXPECT_TRUE(machine_peak(1, false, -1).provisional);
}

TEST(MachinePeak, AQuietRunReplacesAProvisionalPeak) {
  ScopedCacheHome home("peak_quiet_after_busy");
  const MachinePeak busy = machine_peak(1, false, 1.0);
  const MachinePeak quiet = machine_peak(1, false, 0.0);
  EXPECT_FALSE(quiet.from_cache);  // measured again, not read back
  EXPECT_FALSE(quiet.provisional);
  EXPECT_GE(quiet.fp32_gflops, busy.fp32_gflops);  // the higher of the two is kept
  EXPECT_TRUE(machine_peak(1, false, 1.0).from_cache);
  EXPECT_FALSE(machine_peak(1, false, 1.0).provisional);
}

// One quiet moment before the measurement is no proof: a machine found busy right after it
// stores the figures provisional, and the next quiet run measures again.
int64_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  }
  return -1;
}

// Under an address-space limit that leaves no room for the 512 MiB read buffer the bandwidth is
// not measured (0) and the figures are provisional: the run goes on (cli.run_out_of_memory saw
// the buffer's bad_alloc end a run).
TEST(MachinePeak, NoRoomForTheReadBufferLeavesBandwidthUnmeasured) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves address space of its own";
#endif
  ScopedCacheHome home("peak_no_room");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit limit{static_cast<rlim_t>(address_space_bytes() + (int64_t{256} << 20)),
                       RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    try {
      const MachinePeak p = machine_peak(1, /*remeasure=*/true, 0.0);
      _exit(p.mem_read_gbps == 0 && p.provisional && p.fp32_gflops > 0 ? 0 : 1);
    } catch (...) {
      _exit(2);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: measured or not provisional, 2: threw, 3: no limit";
}

TEST(MachinePeak, BusyRightAfterTheMeasurementIsProvisional) {
  ScopedCacheHome home("peak_busy_after");
  const MachinePeak busy = machine_peak(1, false, 0.0, [] { return 1.5; });
  EXPECT_TRUE(busy.provisional);
  EXPECT_DOUBLE_EQ(busy.busy_other_cpus, 1.5);
  const MachinePeak quiet = machine_peak(1, false, 0.0, [] { return 0.0; });
  EXPECT_FALSE(quiet.from_cache);  // the provisional one was measured again
  EXPECT_FALSE(quiet.provisional);
  EXPECT_TRUE(machine_peak(1, false, 0.0, [] { return 1.5; }).from_cache);  // kept: no re-measure
}

TEST(MachinePeak, ABusyRemeasureKeepsAQuietPeakQuiet) {
  ScopedCacheHome home("peak_busy_remeasure");
  const MachinePeak quiet = machine_peak(1, false, 0.0);
  const MachinePeak re = machine_peak(1, /*remeasure=*/true, 1.0);
  EXPECT_FALSE(re.provisional);
  EXPECT_GE(re.fp32_gflops, quiet.fp32_gflops);
  EXPECT_EQ(re.measured_at, quiet.measured_at);
}

// Measured where the CPU has AVX512_BF16 (AVX512_VNNI) and no AMX-BF16 (AMX-INT8): this test's
// machine decides which; and cached with the rest.
TEST(MachinePeak, DotProductPeaksAreMeasuredExactlyWhereTheyBoundTheKernels) {
  ScopedCacheHome home("peak_dot");
  const MachinePeak p = machine_peak(1, false, 0.0);
  EXPECT_EQ(p.bf16_gflops > 0.1, bf16_peak_measurable()) << p.bf16_gflops;
  EXPECT_EQ(p.int8_gflops > 0.1, int8_peak_measurable()) << p.int8_gflops;
  // Where the bf16 kernels widen their weights to fp32 (AVX-512 without AVX512_BF16), the fp32
  // FMA peak bounds them.
  EXPECT_EQ(p.bf16_widened, p.isa == "avx512" && !__builtin_cpu_supports("avx512bf16"));
  EXPECT_DOUBLE_EQ(p.of("bf16"), p.bf16_widened ? p.fp32_gflops : p.bf16_gflops);
  EXPECT_DOUBLE_EQ(p.of("int8"), p.int8_gflops);
  EXPECT_DOUBLE_EQ(p.of("fp32"), p.fp32_gflops);
  EXPECT_EQ(p.of("fp8"), 0);
  const MachinePeak cached = machine_peak(1, false, 0.0);
  EXPECT_TRUE(cached.from_cache);
  EXPECT_DOUBLE_EQ(cached.bf16_gflops, p.bf16_gflops);
  EXPECT_DOUBLE_EQ(cached.int8_gflops, p.int8_gflops);
  EXPECT_EQ(cached.bf16_widened, p.bf16_widened);
}

// A cache written before the dot-product peaks existed lacks their keys: where this CPU has one
// it is measured again; elsewhere the old entry stays in use.
TEST(MachinePeak, CacheWithoutADotProductPeakIsMeasuredAgainWhereOneExists) {
  for (const char* key : {"bf16_gflops", "int8_gflops"}) {
    ScopedCacheHome home(std::string("peak_old_cache_") + key);
    const std::string dir = std::string(std::getenv("XDG_CACHE_HOME")) + "/cuvil";
    machine_peak(1, false, 0.0);  // writes this machine's key
    std::ifstream in(dir + "/machine_peak.json");
    nlohmann::json cache = nlohmann::json::parse(in);
    ASSERT_EQ(cache.size(), 1u);
    nlohmann::json& entry = cache.begin().value();
    entry.erase(key);
    entry["fp32_gflops"] = 1.5;  // marks the old entry
    std::ofstream(dir + "/machine_peak.json") << cache.dump();
    const bool measurable =
        std::string(key) == "bf16_gflops" ? bf16_peak_measurable() : int8_peak_measurable();
    const MachinePeak p = machine_peak(1, false, 0.0);
    EXPECT_EQ(p.from_cache, !measurable) << key;
    if (!measurable) {
      EXPECT_DOUBLE_EQ(p.fp32_gflops, 1.5) << key;
    }
  }
}

// A dot-product peak of the wrong type is a damaged entry: measured again, not an error.
TEST(MachinePeak, DotProductPeakOfTheWrongTypeIsMeasuredAgain) {
  ScopedCacheHome home("peak_wrong_type");
  const std::string dir = std::string(std::getenv("XDG_CACHE_HOME")) + "/cuvil";
  machine_peak(1, false, 0.0);
  std::ifstream in(dir + "/machine_peak.json");
  nlohmann::json cache = nlohmann::json::parse(in);
  ASSERT_EQ(cache.size(), 1u);
  cache.begin().value()["int8_gflops"] = "fast";
  std::ofstream(dir + "/machine_peak.json") << cache.dump();
  const MachinePeak p = machine_peak(1, false, 0.0);
  EXPECT_FALSE(p.from_cache);
  EXPECT_GT(p.fp32_gflops, 0.1);
}

}  // namespace
}  // namespace cuvil::probes
