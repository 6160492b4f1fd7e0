// The machine a measurement ran on, captured once per run for the JSON context, and the loud
// warnings (Google Benchmark style "***WARNING***") when it is unfit to measure on. Also the
// two process-level controls a run needs: pinning to CPUs and the peak-RSS probe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cuvil::bench {

struct CacheInfo {
  std::string type;  // "Data", "Instruction", "Unified" (as Google Benchmark)
  int level = 0;
  int64_t size_bytes = 0;
  int num_sharing = 0;  // logical CPUs sharing it
};

struct Environment {
  std::string host_name;
  std::string kernel;  // uname -sr
  std::string cpu_model;
  std::vector<std::string> cpu_flags;  // the ones kernels care about (avx2, avx512*, amx*, fma)
  int logical_cpus = 0;                // online
  int available_cpus = 0;              // in this process's affinity mask
  std::string governor = "unknown";    // cpufreq scaling governor; absent in most VMs
  double mhz_per_cpu = 0;
  bool load_avg_known = false;
  std::array<double, 3> load_avg{};
  int64_t mem_total_bytes = -1;  // -1: unknown
  int64_t mem_available_bytes = -1;
  std::vector<CacheInfo> caches;
  std::string compiler;        // e.g. "GNU 12.2.0"
  std::string compiler_flags;  // the C++ flags bench_suite was built with
  std::string build_type;      // "release" | "debug" (NDEBUG), Google Benchmark's words
  std::string git_commit = "unknown";
  // The binary was built from a tree whose tracked files differed from git_commit (known only
  // when git_commit is the build's own; false otherwise).
  bool git_modified = false;
  std::string cuda_driver = "none";
  // OpenMP's (oneDNN's) idle-thread policy and who chose it: openmp_wait_policy() below.
  std::string openmp_wait_policy;
  // Whether the heap runs on transparent huge pages, and who chose it (heap_huge_pages.h).
  std::string heap_huge_pages;
};

Environment capture_environment();

// Set by cuvil-bench when it chose OMP_WAIT_POLICY=passive itself: the reason, for the JSON.
inline constexpr const char* kOpenmpWaitPolicyReasonVariable = "CUVIL_OPENMP_WAIT_POLICY_REASON";

// "passive (cuvil-bench: REASON)", "OMP_WAIT_POLICY=V, GOMP_SPINCOUNT=N (set by the user)", or
// "default (libgomp: spin, then sleep)", from this process's environment variables.
std::string openmp_wait_policy();

// --- Parsing helpers (pure; exposed for tests) ---
// The value after "key<spaces>:" on the first line starting with `key`, trimmed; "" if absent.
std::string cpuinfo_field(const std::string& cpuinfo, const std::string& key);
// The flags among a /proc/cpuinfo "flags" value that matter for kernel choice, in input order.
std::vector<std::string> relevant_cpu_flags(const std::string& flags);
// "MemTotal:  24576000 kB" -> bytes; -1 if the key is absent.
int64_t meminfo_bytes(const std::string& meminfo, const std::string& key);
// "48K" / "2048K" / "1M" / "512" -> bytes; -1 if malformed.
int64_t parse_cache_size(const std::string& text);
// "0-3,6,8-9" -> {0,1,2,3,6,8,9} (sorted, unique); a malformed list is a UserError.
std::vector<int> parse_cpu_list(const std::string& list);
// The commit checked out in `source_dir` read from its .git (no git binary needed), or
// "unknown" when it is not a git checkout.
std::string git_commit_of(const std::string& source_dir);

// --- Warnings ---
// The reasons this environment makes timings untrustworthy, one line each (no prefix).
std::vector<std::string> environment_warnings(const Environment& env, int measured_threads);
// Busy CPUs used by OTHER processes over `window_s` (from /proc/stat less this process); a
// negative value when it cannot be told.
double other_processes_busy_cpus(double window_s);
// Writes "***WARNING*** text" to stderr.
void print_warning(const std::string& text);

// --- Process controls ---
// The CPUs this process may run on.
std::vector<int> available_cpus();
// Restricts this process's calling thread, and every thread it creates afterwards (the
// executor's pool), to `cpus`. A CPU not available to the process is a UserError naming it.
void pin_to_cpus(const std::vector<int>& cpus);

// Process-wide, once at start (cuvil-bench's main): large buffers come from the heap instead
// of their own mappings, and freed ones stay mapped (up to kKeptFreeBytes at the top), so the
// next weight's or packed form's allocation reuses pages instead of faulting in fresh ones the
// kernel must clear first: most of SDXL's setup was that (perf, docs/performance.md).
inline constexpr int kKeptFreeBytes = 1 << 30;
void keep_freed_memory_for_reuse();

// Returns the heap's free memory to the system, then resets the kernel's RSS high-water mark
// (/proc/self/clear_refs "5"); false where not permitted, in which case peak_rss_bytes() is
// cumulative over the process's life.
bool reset_peak_rss();
// The process's peak resident set size in bytes (VmHWM, else getrusage's ru_maxrss).
int64_t peak_rss_bytes();

}  // namespace cuvil::bench
