#include "bench_suite/environment.h"

#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/text_file.h"
#include "bench_suite/heap_huge_pages.h"
#include "bench_suite/version.h"

#ifndef CUVIL_CXX_COMPILER
#define CUVIL_CXX_COMPILER "unknown"
#endif
#ifndef CUVIL_CXX_FLAGS
#define CUVIL_CXX_FLAGS "unknown"
#endif
#ifndef CUVIL_SOURCE_DIR
#define CUVIL_SOURCE_DIR "."
#endif

namespace cuvil::bench {

namespace {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

std::vector<CacheInfo> read_caches() {
  std::vector<CacheInfo> caches;
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0;; ++i) {
    const std::string dir = base + std::to_string(i) + "/";
    if (!std::filesystem::exists(dir)) break;
    CacheInfo c;
    c.type = first_line(dir + "type");
    c.level = std::atoi(first_line(dir + "level").c_str());
    c.size_bytes = parse_cache_size(first_line(dir + "size"));
    const std::string shared = first_line(dir + "shared_cpu_list");
    try {
      c.num_sharing = static_cast<int>(parse_cpu_list(shared).size());
    } catch (const UserError&) {
      c.num_sharing = 0;
    }
    caches.push_back(c);
  }
  return caches;
}

double read_mhz(const std::string& cpuinfo) {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (in >> khz) return khz / 1000.0;
  const std::string mhz = cpuinfo_field(cpuinfo, "cpu MHz");
  return mhz.empty() ? 0.0 : std::atof(mhz.c_str());
}

std::string read_cuda_driver() {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ..." where a driver is loaded.
  const std::string line = first_line("/proc/driver/nvidia/version");
  if (line.empty()) return "none";
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find('.') != std::string::npos) {
      return word;
    }
  }
  return line;
}

// Total and busy jiffies of the whole machine, and this process's own.
struct CpuTicks {
  double total = 0, busy = 0, self = 0;
  int cpus = 0;
};

bool read_ticks(CpuTicks* t) {
  std::ifstream stat("/proc/stat");
  std::string line;
  *t = {};
  while (std::getline(stat, line)) {
    if (line.rfind("cpu ", 0) == 0) {
      std::istringstream in(line.substr(4));
      double v[8] = {0};
      for (double& x : v) in >> x;
      // user nice system idle iowait irq softirq steal
      t->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
      t->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    } else if (line.rfind("cpu", 0) == 0) {
      ++t->cpus;
    }
  }
  // /proc/self/stat: utime and stime are fields 14 and 15, after the ")" closing the name.
  const std::string self = read_file_or_empty("/proc/self/stat");
  const auto paren = self.rfind(')');
  if (t->total <= 0 || t->cpus == 0 || paren == std::string::npos) return false;
  std::istringstream fields(self.substr(paren + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && (fields >> f); ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) stime = std::atof(f.c_str());
  }
  t->self = utime + stime;
  return true;
}

}  // namespace

std::string cpuinfo_field(const std::string& cpuinfo, const std::string& key) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(line.substr(0, colon)) != key) continue;
    return trim(line.substr(colon + 1));
  }
  return "";
}

std::vector<std::string> relevant_cpu_flags(const std::string& flags) {
  std::vector<std::string> out;
  std::istringstream in(flags);
  std::string flag;
  while (in >> flag) {
    if (flag == "fma" || flag == "avx" || flag == "avx2" || flag == "f16c" ||
        flag.rfind("avx512", 0) == 0 || flag.rfind("amx", 0) == 0 || flag == "avx_vnni") {
      out.push_back(flag);
    }
  }
  return out;
}

int64_t meminfo_bytes(const std::string& meminfo, const std::string& key) {
  const std::string value = cpuinfo_field(meminfo, key);
  if (value.empty()) return -1;
  std::istringstream in(value);
  int64_t amount = 0;
  std::string unit;
  if (!(in >> amount)) return -1;
  in >> unit;
  return unit == "kB" ? amount * 1024 : amount;
}

int64_t parse_cache_size(const std::string& text) {
  const std::string s = trim(text);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return -1;
  size_t used = 0;
  const int64_t value = std::stoll(s, &used);
  const std::string unit = s.substr(used);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return -1;
}

std::vector<int> parse_cpu_list(const std::string& list) {
  auto bad = [&](const std::string& why) {
    return UserError("--cpus '" + list + "': " + why + " (expected e.g. 0-3,6)");
  };
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      throw bad("'" + s + "' is not a CPU number");
    }
    return std::stoi(s);
  };
  std::set<int> cpus;
  std::stringstream in(trim(list));
  std::string part;
  while (std::getline(in, part, ',')) {
    part = trim(part);
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      cpus.insert(number(part));
      continue;
    }
    const int first = number(trim(part.substr(0, dash)));
    const int last = number(trim(part.substr(dash + 1)));
    if (last < first) throw bad("range '" + part + "' is backwards");
    for (int c = first; c <= last; ++c) cpus.insert(c);
  }
  if (cpus.empty()) throw bad("no CPUs listed");
  return {cpus.begin(), cpus.end()};
}

std::string git_commit_of(const std::string& source_dir) {
  namespace fs = std::filesystem;
  fs::path git = fs::path(source_dir) / ".git";
  std::error_code ec;
  if (fs::is_regular_file(git, ec)) {  // a worktree or submodule: "gitdir: <path>"
    const std::string line = first_line(git.string());
    if (line.rfind("gitdir:", 0) != 0) return "unknown";
    fs::path dir = trim(line.substr(7));
    git = dir.is_absolute() ? dir : fs::path(source_dir) / dir;
  }
  const std::string head = first_line((git / "HEAD").string());
  if (head.empty()) return "unknown";
  if (head.rfind("ref:", 0) != 0) return head;  // detached
  const std::string ref = trim(head.substr(4));
  std::string commit = first_line((git / ref).string());
  // A worktree's branches live in the common dir ("commondir": "../.." from its gitdir).
  const fs::path common_named = first_line((git / "commondir").string());
  const fs::path common = common_named.empty()         ? fs::path()
                          : common_named.is_absolute() ? common_named
                                                       : git / common_named;
  if (commit.empty() && !common.empty()) commit = first_line((common / ref).string());
  if (commit.empty()) {
    // A packed ref: "<sha> <ref>" in packed-refs, here or in the common dir.
    for (const fs::path& dir : {git, common}) {
      if (dir.empty()) continue;
      const fs::path packed = dir / "packed-refs";
      std::ifstream in(packed);
      std::string line;
      while (std::getline(in, line)) {
        const auto space = line.find(' ');
        if (space != std::string::npos && line.substr(space + 1) == ref) {
          return line.substr(0, space);
        }
      }
    }
    return "unknown";
  }
  return commit;
}

std::string openmp_wait_policy() {
  if (const char* reason = std::getenv(kOpenmpWaitPolicyReasonVariable)) {
    return std::string("passive (cuvil-bench: ") + reason + ")";
  }
  std::string set;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    if (const char* value = std::getenv(name)) {
      set += (set.empty() ? "" : ", ") + std::string(name) + "=" + value;
    }
  }
  return set.empty() ? "default (libgomp: spin, then sleep)" : set + " (set by the user)";
}

Environment capture_environment() {
  Environment env;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  env.host_name = host;
  utsname u{};
  if (uname(&u) == 0) env.kernel = std::string(u.sysname) + " " + u.release;
  const std::string cpuinfo = read_file_or_empty("/proc/cpuinfo");
  env.cpu_model = cpuinfo_field(cpuinfo, "model name");
  if (env.cpu_model.empty()) env.cpu_model = "unknown";
  env.cpu_flags = relevant_cpu_flags(cpuinfo_field(cpuinfo, "flags"));
  env.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  env.available_cpus = static_cast<int>(available_cpus().size());
  const std::string governor = first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (!governor.empty()) env.governor = governor;
  env.mhz_per_cpu = read_mhz(cpuinfo);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    env.load_avg_known = true;
    env.load_avg = {load[0], load[1], load[2]};
  }
  const std::string meminfo = read_file_or_empty("/proc/meminfo");
  env.mem_total_bytes = meminfo_bytes(meminfo, "MemTotal");
  env.mem_available_bytes = meminfo_bytes(meminfo, "MemAvailable");
  env.caches = read_caches();
  env.compiler = CUVIL_CXX_COMPILER;
  env.compiler_flags = trim(CUVIL_CXX_FLAGS);
#ifdef NDEBUG
  env.build_type = "release";
#else
  env.build_type = "debug";
#endif
  // CUVIL_GIT_COMMIT names the code where the source tree is not a git checkout (a tarball, a
  // copied binary) or is not the tree the binary was built from.
  // The commit this binary was built from; the checkout's HEAD only when the build could not
  // tell (the checkout may have moved on since the build).
  const char* commit = std::getenv("CUVIL_GIT_COMMIT");
  const char* built = build_info().git_commit;
  env.git_commit = commit && *commit ? commit
                   : *built          ? std::string(built)
                                     : git_commit_of(CUVIL_SOURCE_DIR);
  env.git_modified = !(commit && *commit) && *built && build_info().modified;
  env.cuda_driver = read_cuda_driver();
  env.openmp_wait_policy = openmp_wait_policy();
  env.heap_huge_pages = heap_huge_pages();
  return env;
}

std::vector<std::string> environment_warnings(const Environment& env, int measured_threads) {
  std::vector<std::string> warnings;
  char buf[256];
  const int cores = std::max(1, env.available_cpus > 0 ? env.available_cpus : env.logical_cpus);
  if (env.load_avg_known && env.load_avg[0] > 0.5 * cores) {
    std::snprintf(buf, sizeof buf,
                  "load average %.2f at start is above half of the %d CPUs: other work competes "
                  "with the measurement, timings will be noisy",
                  env.load_avg[0], cores);
    warnings.push_back(buf);
  }
  if (env.governor != "unknown" && env.governor != "performance") {
    warnings.push_back("CPU frequency scaling governor is '" + env.governor +
                       "', not 'performance': real time measurements may be noisy and slower");
  }
  if (measured_threads > cores) {
    std::snprintf(buf, sizeof buf,
                  "%d threads on %d available CPUs: threads share cores, timings will be noisy",
                  measured_threads, cores);
    warnings.push_back(buf);
  }
  if (env.build_type == "debug") {
    // Constructed in place: GCC 12 at -O3 reports a false -Warray-bounds on the moved temporary.
    warnings.emplace_back("cuvil was built without NDEBUG (debug): timings are not representative");
  }
  return warnings;
}

double other_processes_busy_cpus(double window_s) {
  CpuTicks before, after;
  if (!read_ticks(&before)) return -1;
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  if (!read_ticks(&after)) return -1;
  const double total = after.total - before.total;
  if (total <= 0) return -1;
  const double per_cpu = total / after.cpus;  // jiffies each CPU had in the window
  const double others = (after.busy - before.busy) - (after.self - before.self);
  return std::max(0.0, others / per_cpu);
}

void print_warning(const std::string& text) {
  std::fprintf(stderr, "***WARNING*** %s\n", text.c_str());
}

std::vector<int> available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    for (unsigned i = 0; i < std::thread::hardware_concurrency(); ++i) {
      cpus.push_back(static_cast<int>(i));
    }
    return cpus;
  }
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

void pin_to_cpus(const std::vector<int>& cpus) {
  const std::vector<int> allowed = available_cpus();
  std::string allowed_text;
  for (int c : allowed) {
    if (!allowed_text.empty()) allowed_text += ',';
    allowed_text += std::to_string(c);
  }
  if (cpus.empty()) throw UserError("--cpus: no CPUs listed");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) {
      throw UserError("--cpus: CPU " + std::to_string(c) +
                      " is not available to this process (available: " + allowed_text + ")");
    }
    CPU_SET(c, &set);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    throw UserError("--cpus: the kernel refused to pin to these CPUs");
  }
}

void keep_freed_memory_for_reuse() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, kKeptFreeBytes);
}

bool reset_peak_rss() {
  // What the heap keeps free (keep_freed_memory_for_reuse) goes back first: the peak starts
  // from what is live.
  malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t peak_rss_bytes() {
  const int64_t hwm = meminfo_bytes(read_file_or_empty("/proc/self/status"), "VmHWM");
  if (hwm >= 0) return hwm;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) return static_cast<int64_t>(usage.ru_maxrss) * 1024;
  return -1;
}

}  // namespace cuvil::bench
