#include "bench_suite/json_report.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "passes/ir/error.h"

namespace cuvil::bench {

namespace {

constexpr double kNsPerMs = 1e6;

std::string iso_date() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

double mhz_per_cpu() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (in >> khz) return khz / 1000.0;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("cpu MHz", 0) == 0) return std::stod(line.substr(line.find(':') + 1));
  }
  return 0;
}

bool cpu_scaling_enabled() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::string governor;
  return (in >> governor) && governor != "performance";
}

nlohmann::json entry(const RungResult& r, int family_index, const std::string& run_type,
                     double real_ms, double cpu_ms) {
  const std::string name = r.suite + "/" + r.rung;
  nlohmann::json j;
  j["name"] = name;
  j["family_index"] = family_index;
  j["per_family_instance_index"] = 0;
  j["run_name"] = name;
  j["run_type"] = run_type;
  j["repetitions"] = static_cast<int64_t>(r.measurement.real_ns.size());
  j["threads"] = r.threads;
  j["iterations"] = 1;
  j["real_time"] = real_ms;
  j["cpu_time"] = cpu_ms;
  j["time_unit"] = "ms";
  // Counters: declared work over the measured time.
  j["GFLOP/s"] = real_ms > 0 ? r.declared_flops / (real_ms * 1e6) : 0.0;
  j["GB/s"] = real_ms > 0 ? r.declared_bytes / (real_ms * 1e6) : 0.0;
  return j;
}

}  // namespace

nlohmann::json context_json(const RunContext& c) {
  nlohmann::json j;
  j["date"] = iso_date();
  j["host_name"] = host_name();
  j["executable"] = c.executable;
  j["num_cpus"] = static_cast<int>(std::thread::hardware_concurrency());
  j["mhz_per_cpu"] = mhz_per_cpu();
  j["cpu_scaling_enabled"] = cpu_scaling_enabled();
  j["caches"] = nlohmann::json::array();
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) j["load_avg"] = {load[0], load[1], load[2]};
#ifdef NDEBUG
  j["library_build_type"] = "release";
#else
  j["library_build_type"] = "debug";
#endif
  j["cuvil"] = {{"target", c.target},
                {"config", c.config_source},
                {"config_hash", c.config_hash},
                {"flop_convention", "2 FLOPs per multiply-accumulate"}};
  return j;
}

nlohmann::json benchmark_entries(const RungResult& r, int family_index) {
  nlohmann::json list = nlohmann::json::array();
  const auto& real = r.measurement.real_ns;
  const auto& cpu = r.measurement.cpu_ns;
  for (size_t i = 0; i < real.size(); ++i) {
    nlohmann::json j = entry(r, family_index, "iteration", real[i] / kNsPerMs, cpu[i] / kNsPerMs);
    j["repetition_index"] = static_cast<int64_t>(i);
    list.push_back(j);
  }
  const Summary rs = summarize(real);
  const Summary cs = summarize(cpu);
  const std::pair<const char*, std::pair<double, double>> aggregates[] = {
      {"mean", {rs.mean, cs.mean}},       {"median", {rs.median, cs.median}},
      {"stddev", {rs.stddev, cs.stddev}}, {"cv", {rs.cv, cs.cv}},
      {"min", {rs.min, cs.min}},          {"max", {rs.max, cs.max}}};
  for (const auto& [name, values] : aggregates) {
    const bool ratio = std::string(name) == "cv";
    nlohmann::json j =
        entry(r, family_index, "aggregate", ratio ? values.first : values.first / kNsPerMs,
              ratio ? values.second : values.second / kNsPerMs);
    j["name"] = r.suite + "/" + r.rung + "_" + name;
    j["aggregate_name"] = name;
    if (ratio) {
      j["aggregate_unit"] = "percentage";
      j.erase("GFLOP/s");
      j.erase("GB/s");
    } else {
      j["aggregate_unit"] = "time";
    }
    list.push_back(j);
  }
  // Raw samples and declared work stay with the median entry under cuvil's own key.
  nlohmann::json& median = list[real.size() + 1];
  median["cuvil"] = {{"real_ns", real},
                     {"cpu_ns", cpu},
                     {"declared_flops", r.declared_flops},
                     {"declared_bytes", r.declared_bytes},
                     {"arena_bytes", r.arena_bytes},
                     {"weight_bytes", r.weight_bytes},
                     {"compile_s", r.compile_s}};
  return list;
}

void write_json_file(const std::string& path, const nlohmann::json& document) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw UserError(path + ": cannot write output file");
    out << document.dump(2) << "\n";
    if (!out) throw UserError(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UserError(path + ": cannot move output file into place");
  }
}

}  // namespace cuvil::bench
