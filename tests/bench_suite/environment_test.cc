// Environment capture: parsers on fixed text, warnings on made-up environments, and the live
// capture's fields being filled (values are the machine's, so only their presence is checked).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bench_suite/environment.h"
#include "tests/bench_suite/scoped_variable.h"

namespace cuvil::bench {
namespace {

const char* kCpuinfo =
    "processor\t: 0\n"
    "model name\t: Intel(R) Xeon(R) Processor\n"
    "cpu MHz\t\t: 2600.000\n"
    "flags\t\t: fpu sse2 fma avx f16c avx2 avx512f avx512_bf16 amx_tile movbe\n"
    "processor\t: 1\n"
    "model name\t: Intel(R) Xeon(R) Processor\n";

TEST(Environment, CpuinfoFieldTakesTheFirstMatchTrimmed) {
  EXPECT_EQ(cpuinfo_field(kCpuinfo, "model name"), "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(cpuinfo_field(kCpuinfo, "cpu MHz"), "2600.000");
  EXPECT_EQ(cpuinfo_field(kCpuinfo, "bogomips"), "");
  EXPECT_EQ(cpuinfo_field(kCpuinfo, "model"), "");  // not a prefix match of "model name"
}

TEST(Environment, RelevantFlagsKeepVectorAndMatrixExtensions) {
  const auto flags = relevant_cpu_flags(cpuinfo_field(kCpuinfo, "flags"));
  const std::vector<std::string> expected = {"fma",     "avx",         "f16c",    "avx2",
                                             "avx512f", "avx512_bf16", "amx_tile"};
  EXPECT_EQ(flags, expected);
}

TEST(Environment, MeminfoInBytes) {
  const std::string meminfo = "MemTotal:       24576000 kB\nMemAvailable:    1000 kB\n";
  EXPECT_EQ(meminfo_bytes(meminfo, "MemTotal"), 24576000LL * 1024);
  EXPECT_EQ(meminfo_bytes(meminfo, "MemAvailable"), 1024000);
  EXPECT_EQ(meminfo_bytes(meminfo, "SwapTotal"), -1);
}

TEST(Environment, CacheSizes) {
  EXPECT_EQ(parse_cache_size("48K"), 48 * 1024);
  EXPECT_EQ(parse_cache_size("491520K"), 491520LL * 1024);
  EXPECT_EQ(parse_cache_size("2M"), 2 << 20);
  EXPECT_EQ(parse_cache_size("512"), 512);
  EXPECT_EQ(parse_cache_size("big"), -1);
  EXPECT_EQ(parse_cache_size("7Q"), -1);
}

TEST(CpuList, RangesAndSinglesSortedUnique) {
  EXPECT_EQ(parse_cpu_list("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(parse_cpu_list("5,1,1"), (std::vector<int>{1, 5}));
  EXPECT_EQ(parse_cpu_list("17"), (std::vector<int>{17}));
  EXPECT_EQ(parse_cpu_list(" 2 - 3 "), (std::vector<int>{2, 3}));
}

TEST(CpuList, MalformedListsAreUserErrors) {
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "0x1", "1.5"}) {
    EXPECT_THROW(parse_cpu_list(bad), UserError) << bad;
  }
}

TEST(CpuList, PinningToAnUnavailableCpuIsAUserError) {
  EXPECT_THROW(pin_to_cpus({99999}), UserError);
  EXPECT_THROW(pin_to_cpus({}), UserError);
}

TEST(CpuList, PinningToTheCurrentMaskIsAccepted) {
  const std::vector<int> cpus = available_cpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_NO_THROW(pin_to_cpus(cpus));
  EXPECT_EQ(available_cpus(), cpus);
}

Environment quiet_machine() {
  Environment env;
  env.logical_cpus = 8;
  env.available_cpus = 8;
  env.governor = "performance";
  env.load_avg_known = true;
  env.load_avg = {0.5, 0.5, 0.5};
  env.build_type = "release";
  return env;
}

TEST(Warnings, QuietMachineHasNone) {
  EXPECT_TRUE(environment_warnings(quiet_machine(), 4).empty());
}

TEST(Warnings, HighLoadAverageWarns) {
  Environment env = quiet_machine();
  env.load_avg = {4.5, 1, 1};  // above half of 8 CPUs
  const auto w = environment_warnings(env, 4);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("load average 4.50"), std::string::npos) << w[0];
}

TEST(Warnings, PowersaveGovernorWarnsButUnknownDoesNot) {
  Environment env = quiet_machine();
  env.governor = "powersave";
  ASSERT_EQ(environment_warnings(env, 1).size(), 1u);
  EXPECT_NE(environment_warnings(env, 1)[0].find("powersave"), std::string::npos);
  env.governor = "unknown";  // a VM without cpufreq
  EXPECT_TRUE(environment_warnings(env, 1).empty());
}

TEST(Warnings, MoreThreadsThanCpusWarns) {
  Environment env = quiet_machine();
  env.available_cpus = 3;
  EXPECT_EQ(environment_warnings(env, 7).size(), 1u);
}

TEST(Warnings, DebugBuildWarns) {
  Environment env = quiet_machine();
  env.build_type = "debug";
  EXPECT_EQ(environment_warnings(env, 1).size(), 1u);
}

TEST(GitCommit, ReadsABranchRefAndAPackedRef) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "cuvil_git_commit_test";
  fs::remove_all(root);
  fs::create_directories(root / ".git" / "refs" / "heads");
  std::ofstream(root / ".git" / "HEAD") << "ref: refs/heads/main\n";
  std::ofstream(root / ".git" / "refs" / "heads" / "main") << "0123456789abcdef\n";
  EXPECT_EQ(git_commit_of(root.string()), "0123456789abcdef");
  fs::remove(root / ".git" / "refs" / "heads" / "main");
  std::ofstream(root / ".git" / "packed-refs") << "# pack-refs\nfeedface refs/heads/main\n";
  EXPECT_EQ(git_commit_of(root.string()), "feedface");
  std::ofstream(root / ".git" / "HEAD") << "cafe1234\n";  // detached
  EXPECT_EQ(git_commit_of(root.string()), "cafe1234");
  fs::remove_all(root);
}

// A worktree (git worktree add): .git is a file naming its gitdir, whose HEAD names a branch that
// lives, loose or packed, in the common dir.
TEST(GitCommit, ReadsAWorktreesBranchFromTheCommonDir) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "cuvil_git_worktree_test";
  fs::remove_all(root);
  const fs::path common = root / "main" / ".git";
  const fs::path gitdir = common / "worktrees" / "wt";
  fs::create_directories(gitdir);
  fs::create_directories(common / "refs" / "heads");
  fs::create_directories(root / "wt");
  std::ofstream(root / "wt" / ".git") << "gitdir: " << gitdir.string() << "\n";
  std::ofstream(gitdir / "HEAD") << "ref: refs/heads/topic\n";
  std::ofstream(gitdir / "commondir") << "../..\n";
  std::ofstream(common / "refs" / "heads" / "topic") << "abcdef0123\n";
  EXPECT_EQ(git_commit_of((root / "wt").string()), "abcdef0123");
  fs::remove(common / "refs" / "heads" / "topic");
  std::ofstream(common / "packed-refs") << "# pack-refs\n0badcafe refs/heads/topic\n";
  EXPECT_EQ(git_commit_of((root / "wt").string()), "0badcafe");
  fs::remove_all(root);
}

TEST(GitCommit, NotACheckoutIsUnknown) {
  EXPECT_EQ(git_commit_of("/nonexistent-dir"), "unknown");
}

TEST(Environment, LiveCaptureFillsEveryField) {
  const Environment env = capture_environment();
  EXPECT_FALSE(env.host_name.empty());
  EXPECT_FALSE(env.cpu_model.empty());
  EXPECT_GE(env.logical_cpus, 1);
  EXPECT_GE(env.available_cpus, 1);
  EXPECT_FALSE(env.governor.empty());
  EXPECT_GT(env.mem_total_bytes, 0);
  EXPECT_FALSE(env.compiler.empty());
  EXPECT_NE(env.compiler, "unknown");
  EXPECT_FALSE(env.compiler_flags.empty());
  // Against the configuration CMake was given, not this file's own NDEBUG: CMake's optimised
  // configurations define NDEBUG, Debug and an unnamed one do not.
  const std::string configured = CUVIL_CMAKE_BUILD_TYPE;
  const bool optimised =
      configured == "Release" || configured == "RelWithDebInfo" || configured == "MinSizeRel";
  EXPECT_EQ(env.build_type, optimised ? "release" : "debug") << "configured " << configured;
  EXPECT_FALSE(env.git_commit.empty());
  EXPECT_FALSE(env.cuda_driver.empty());
  for (const CacheInfo& c : env.caches) {
    EXPECT_GE(c.level, 1);
    EXPECT_GT(c.size_bytes, 0);
    EXPECT_TRUE(c.type == "Data" || c.type == "Instruction" || c.type == "Unified") << c.type;
  }
}

// Restores an environment variable when it goes out of scope.
using testing::ScopedVariable;

TEST(OpenmpWaitPolicy, SaysDefaultWhenNothingIsSet) {
  ScopedVariable reason(kOpenmpWaitPolicyReasonVariable, nullptr);
  ScopedVariable policy("OMP_WAIT_POLICY", nullptr), spin("GOMP_SPINCOUNT", nullptr);
  EXPECT_EQ(openmp_wait_policy(), "default (libgomp: spin, then sleep)");
}

TEST(OpenmpWaitPolicy, NamesTheUsersVariables) {
  ScopedVariable reason(kOpenmpWaitPolicyReasonVariable, nullptr);
  ScopedVariable policy("OMP_WAIT_POLICY", "active"), spin("GOMP_SPINCOUNT", "1000");
  EXPECT_EQ(openmp_wait_policy(), "OMP_WAIT_POLICY=active, GOMP_SPINCOUNT=1000 (set by the user)");
}

TEST(OpenmpWaitPolicy, SaysWhyCuvilChosePassive) {
  ScopedVariable reason(kOpenmpWaitPolicyReasonVariable, "other processes were busy");
  ScopedVariable policy("OMP_WAIT_POLICY", "passive");
  EXPECT_EQ(openmp_wait_policy(), "passive (cuvil-bench: other processes were busy)");
}

TEST(PeakRss, GrowsWhenMemoryIsTouched) {
  // Without a reset the mark may sit far above the current RSS (earlier tests' memory).
  const bool reset = reset_peak_rss();
  const int64_t before = peak_rss_bytes();
  ASSERT_GT(before, 0);
  std::vector<char> block(64 << 20);
  for (size_t i = 0; i < block.size(); i += 4096) block[i] = static_cast<char>(i);
  EXPECT_GE(peak_rss_bytes(), reset ? before + (32 << 20) : int64_t{64} << 20);
}

TEST(PeakRss, ResetLowersTheHighWaterMarkWherePermitted) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP()
      << "AddressSanitizer's shadow memory moves the high-water mark (scripts/sanitize.sh)";
#endif
  {
    std::vector<char> block(64 << 20);
    for (size_t i = 0; i < block.size(); i += 4096) block[i] = 1;
  }
  const int64_t high = peak_rss_bytes();
  if (!reset_peak_rss()) GTEST_SKIP() << "clear_refs not permitted here";
  EXPECT_LT(peak_rss_bytes(), high);
}

int64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// cuvil-bench's heap policy: a freed large buffer stays mapped and the next one reuses its
// pages (no fresh pages to clear); reset_peak_rss hands what is free back first.
TEST(PeakRss, FreedBuffersAreReusedAndTrimmedAtTheReset) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator ignores mallopt (scripts/sanitize.sh)";
#endif
  keep_freed_memory_for_reuse();
  constexpr size_t kBlock = size_t{256} << 20;
  const auto touch = [](std::vector<char>& block) {
    for (size_t i = 0; i < block.size(); i += 4096) block[i] = 1;
  };
  const int64_t start = resident_bytes();
  ASSERT_GT(start, 0);
  {
    std::vector<char> first(kBlock);
    touch(first);
  }
  const int64_t after_free = resident_bytes();
  EXPECT_GT(after_free, start + int64_t{200 << 20}) << "the freed block was unmapped";
  {
    std::vector<char> second(kBlock);
    touch(second);
  }
  EXPECT_LT(resident_bytes(), after_free + int64_t{50 << 20})
      << "the second block took fresh pages";
  reset_peak_rss();
  EXPECT_LT(resident_bytes(), after_free - int64_t{200 << 20}) << "malloc_trim kept the free block";
}

// A child process spinning through the whole window keeps at least one CPU busy that is not
// this process's; nothing can keep more CPUs busy than there are.
TEST(OtherProcesses, ABusyChildProcessIsCounted) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile uint64_t spins = 0;
    while (true) spins = spins + 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it start spinning
  const double busy = other_processes_busy_cpus(0.3);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GE(busy, 0.5);  // 1 but for tick granularity and the child's start
  EXPECT_LE(busy, static_cast<double>(std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace cuvil::bench
