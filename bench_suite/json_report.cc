#include "bench_suite/json_report.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "runtime/kernel_table.h"
#include "stats/bootstrap.h"

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

// Where the run was made: relative paths on its command line (--out) are relative to it.
std::string working_directory() {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? std::string() : cwd.string();
}

// JSON has no infinity: an unknown figure is null.
nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

void add_counters(nlohmann::json& j, const Achieved& a) {
  j["GFLOP/s"] = a.gflops;
  j["GB/s"] = a.gbps;
  j["pct_peak_flops"] = a.pct_peak_flops;
  j["pct_peak_bw"] = a.pct_peak_bw;
}

// The counters' statistics over the iterations, as Google Benchmark computes a user counter in
// an aggregate: each statistic of the per-iteration values (the stddev entry holds the stddev
// of the rate, cv its cv, min the lowest rate), not the rate at that statistic of the time.
struct CounterSummaries {
  stats::Summary gflops, gbps, pct_peak_flops, pct_peak_bw;
};

CounterSummaries counter_summaries(const RungResult& r) {
  std::vector<double> gflops, gbps, pct_flops, pct_bw;
  for (double ns : r.measurement.real_ns) {
    const Achieved a = achieved(r, ns);
    gflops.push_back(a.gflops);
    gbps.push_back(a.gbps);
    pct_flops.push_back(a.pct_peak_flops);
    pct_bw.push_back(a.pct_peak_bw);
  }
  return {stats::summarize(gflops), stats::summarize(gbps), stats::summarize(pct_flops),
          stats::summarize(pct_bw)};
}

// Google Benchmark's fields, in its order.
std::string benchmark_name(const RungResult& r) {
  return r.suite + "/" + r.rung + (r.baseline.empty() ? "" : "/" + r.baseline);
}

nlohmann::json entry(const RungResult& r, int family_index, const std::string& run_type) {
  const std::string name = benchmark_name(r);
  nlohmann::json j;
  j["name"] = name;
  j["family_index"] = family_index;
  j["per_family_instance_index"] = 0;
  j["run_name"] = name;
  j["run_type"] = run_type;
  j["repetitions"] = static_cast<int64_t>(r.measurement.real_ns.size());
  return j;
}

nlohmann::json summary_json(const stats::Summary& s) {
  return {{"count", s.count},
          {"median_ns", s.median},
          {"mean_ns", s.mean},
          {"stddev_ns", s.stddev},
          {"cv", s.cv},
          {"min_ns", s.min},
          {"max_ns", s.max},
          {"p50_ns", s.p50},
          {"p90_ns", s.p90},
          {"p95_ns", s.p95},
          {"p99_ns", s.p99},
          {"p99.9_ns", s.p999},
          {"median_ci_low_ns", s.median_ci.low},
          {"median_ci_high_ns", s.median_ci.high},
          {"ci_level", s.ci_level}};
}

nlohmann::json clock_json(const probes::ClockReport& r) {
  nlohmann::json clocks = nlohmann::json::array();
  for (const probes::ClockProperties& c : r.clocks) {
    clocks.push_back({{"name", c.name},
                      {"declared_resolution_ns", c.declared_resolution_ns},
                      {"observed_step_ns", c.observed_step_ns},
                      {"read_overhead_ns", c.read_overhead_ns}});
  }
  return {{"harness_clock", "CLOCK_MONOTONIC_RAW"},
          {"region_clock", r.region_clock},
          {"kernel_clocksource", r.clocksource},
          {"invariant_tsc", r.tsc.invariant},
          {"tsc_ghz", r.tsc.ghz()},
          {"clocks", clocks}};
}

}  // namespace

double OpsProfile::total_ns_per_iteration() const {
  double total = 0;
  for (const OpRecord& r : records) total += r.ns_per_iteration;
  return total;
}

Achieved achieved(const RungResult& r, const OpRecord& op) {
  Achieved a;
  if (!(op.ns_per_iteration > 0)) return a;
  a.gflops = op.flops / op.ns_per_iteration;
  a.gbps = op.bytes / op.ns_per_iteration;
  const double peak = r.peak.of(runtime::kernel_arithmetic(op.kernel));
  if (peak > 0) a.pct_peak_flops = 100.0 * a.gflops / peak;
  if (r.peak.mem_read_gbps > 0) a.pct_peak_bw = 100.0 * a.gbps / r.peak.mem_read_gbps;
  return a;
}

nlohmann::json counters_json(const std::vector<CounterValue>& counters) {
  nlohmann::json j = nlohmann::json::object();
  for (const CounterValue& c : counters) {
    if (!c.supported) {
      j[c.name] = {{"supported", false}, {"reason", c.reason}};
      continue;
    }
    j[c.name] = {{"supported", true},
                 {"value", c.value},
                 {"raw", c.raw},
                 {"scale", c.scale},
                 {"time_enabled_ns", c.time_enabled_ns},
                 {"time_running_ns", c.time_running_ns}};
  }
  return j;
}

nlohmann::json ops_json(const RungResult& r) {
  const OpsProfile& ops = r.probes.ops;
  nlohmann::json records = nlohmann::json::array();
  for (const OpRecord& op : ops.records) {
    const Achieved a = achieved(r, op);
    records.push_back({{"step", op.step},
                       {"node", op.node},
                       {"op", op.op},
                       {"kernel", op.kernel},
                       {"lowering", op.lowering},
                       {"input_shapes", op.input_shapes},
                       {"output_shape", op.output_shape},
                       {"flops", op.flops},
                       {"bytes", op.bytes},
                       {"ns_per_iteration", op.ns_per_iteration},
                       {"ns_min", op.ns_min},
                       {"ns_median", op.ns_median},
                       {"gflops", a.gflops},
                       {"pct_peak_flops", a.pct_peak_flops},
                       {"gbps", a.gbps},
                       {"pct_peak_bw", a.pct_peak_bw},
                       {"counters", counters_json(op.counters)}});
  }
  return {{"iterations", ops.iterations},
          {"clock", ops.clock},
          {"total_ns_per_iteration", ops.total_ns_per_iteration()},
          {"measured_ns_per_iteration", stats::summarize(r.measurement.real_ns).median},
          {"records", std::move(records)}};
}

Achieved achieved(const RungResult& r, double ns_per_iteration) {
  Achieved a;
  if (!(ns_per_iteration > 0)) return a;
  a.gflops = r.declared_flops / ns_per_iteration;  // FLOP/ns == GFLOP/s
  a.gbps = r.declared_bytes / ns_per_iteration;
  // Each part of the work at its own peak: the time that would take over the time it took (all
  // fp32: GFLOP/s over the fp32 peak). A part below half a FLOP is rounding (flops are whole).
  const std::pair<const char*, double> parts[] = {
      {"fp32", r.declared_flops - r.reduced_precision_flops},
      {"bf16", r.bf16_flops},
      {"int8", r.reduced_precision_flops - r.bf16_flops}};
  double at_peak_ns = 0;
  bool bounded = true;  // false: a part no measured peak bounds, so no %peak of FLOPs
  for (const auto& [arithmetic, flops] : parts) {
    if (!(flops > 0.5)) continue;
    const double peak = r.peak.of(arithmetic);
    bounded = bounded && peak > 0;
    if (peak > 0) at_peak_ns += flops / peak;
  }
  if (bounded && at_peak_ns > 0) a.pct_peak_flops = 100.0 * at_peak_ns / ns_per_iteration;
  if (r.peak.mem_read_gbps > 0) a.pct_peak_bw = 100.0 * a.gbps / r.peak.mem_read_gbps;
  return a;
}

std::string format_pct_peak(const Achieved& a) {
  if (a.pct_peak_flops == 0 && a.gflops > 0) return "-";
  char buf[24];
  std::snprintf(buf, sizeof buf, "%.1f", a.pct_peak_flops);
  return buf;
}

nlohmann::json context_json(const RunContext& c) {
  const Environment& env = c.environment;
  nlohmann::json j;
  j["date"] = iso_date();
  j["host_name"] = env.host_name;
  j["executable"] = c.executable;
  j["num_cpus"] = env.logical_cpus;
  j["mhz_per_cpu"] = static_cast<int64_t>(std::llround(env.mhz_per_cpu));
  j["cpu_scaling_enabled"] = env.governor != "unknown" && env.governor != "performance";
  j["caches"] = nlohmann::json::array();
  for (const CacheInfo& cache : env.caches) {
    j["caches"].push_back({{"type", cache.type},
                           {"level", cache.level},
                           {"size", cache.size_bytes},
                           {"num_sharing", cache.num_sharing}});
  }
  j["load_avg"] = env.load_avg_known ? nlohmann::json(env.load_avg) : nlohmann::json::array();
  j["library_build_type"] = env.build_type;

  nlohmann::json peak = nullptr;
  if (c.peak.fp32_gflops > 0 || c.peak.mem_read_gbps > 0) {
    peak = {{"threads", c.peak.threads},
            {"fp32_gflops", c.peak.fp32_gflops},
            {"bf16_gflops", c.peak.bf16_gflops},
            {"int8_gflops", c.peak.int8_gflops},
            {"mem_read_gbps", c.peak.mem_read_gbps},
            {"isa", c.peak.isa},
            {"measured_at", c.peak.measured_at},
            {"from_cache", c.peak.from_cache},
            {"provisional", c.peak.provisional},
            {"busy_other_cpus", c.peak.busy_other_cpus}};
  }
  const StoppingCriteria& s = c.stopping;
  j["cuvil"] = {
      {"target", c.target},
      {"config", c.config_source},
      {"config_hash", c.config_hash},
      {"config_yaml", c.config_yaml},
      {"flop_convention", kFlopConvention},
      {"byte_convention", kByteConvention},
      {"timed_region", kTimedRegion},
      {"git_commit", env.git_commit},
      {"git_modified", env.git_modified},
      {"working_directory", working_directory()},
      {"compiler", env.compiler},
      {"compiler_flags", env.compiler_flags},
      {"cpu_model", env.cpu_model},
      {"cpu_flags", env.cpu_flags},
      {"kernel", env.kernel},
      {"scaling_governor", env.governor},
      {"available_cpus", env.available_cpus},
      {"pinned_cpus", c.pinned_cpus},
      {"threads", c.threads},
      {"mem_total_bytes", env.mem_total_bytes},
      {"mem_available_bytes", env.mem_available_bytes},
      {"cuda_driver", env.cuda_driver},
      {"openmp_wait_policy", env.openmp_wait_policy},
      {"heap_huge_pages", env.heap_huge_pages},
      {"machine_peak", peak},
      {"stopping_rule",
       {{"warmup_iterations", s.warmup_iterations},
        {"warmup_time_s", s.warmup_time_s},
        {"min_samples", s.min_samples},
        {"max_samples", s.max_samples},
        {"min_time_s", s.min_time_s},
        {"max_noise", s.max_noise},
        {"timeout_s", s.timeout_s},
        {"noise", "half-width of the distribution-free 95% CI of the median / median"}}},
      {"median_ci_method", "bootstrap percentile, " + std::to_string(stats::kBootstrapResamples) +
                               " resamples, fixed seed"},
      {"warnings", c.warnings}};
  if (!c.clocks.clocks.empty()) j["cuvil"]["clock"] = clock_json(c.clocks);
  if (!c.baseline.is_null()) j["cuvil"]["baseline"] = c.baseline;
  if (!c.model_path.empty()) {
    j["cuvil"]["model"] = {{"path", c.model_path}, {"sha256", c.model_sha256}};
  }
  return j;
}

nlohmann::json benchmark_entries(const RungResult& r, int family_index) {
  nlohmann::json list = nlohmann::json::array();
  const auto& real = r.measurement.real_ns;
  const auto& cpu = r.measurement.cpu_ns;
  for (size_t i = 0; i < real.size(); ++i) {
    nlohmann::json j = entry(r, family_index, "iteration");
    j["repetition_index"] = static_cast<int64_t>(i);
    j["threads"] = r.threads;
    j["iterations"] = 1;
    j["real_time"] = real[i] / kNsPerMs;
    j["cpu_time"] = i < cpu.size() ? cpu[i] / kNsPerMs : 0.0;
    j["time_unit"] = "ms";
    add_counters(j, achieved(r, real[i]));
    list.push_back(j);
  }
  const stats::Summary rs = stats::summarize(real);
  const stats::Summary cs = stats::summarize(cpu);
  const CounterSummaries counters = counter_summaries(r);
  struct Aggregate {
    const char* name;
    double stats::Summary::*statistic;
  };
  const Aggregate aggregates[] = {
      {"mean", &stats::Summary::mean},     {"median", &stats::Summary::median},
      {"stddev", &stats::Summary::stddev}, {"cv", &stats::Summary::cv},
      {"min", &stats::Summary::min},       {"max", &stats::Summary::max},
      {"p50", &stats::Summary::p50},       {"p90", &stats::Summary::p90},
      {"p95", &stats::Summary::p95},       {"p99", &stats::Summary::p99},
      {"p99.9", &stats::Summary::p999}};
  size_t median_index = 0;
  for (const Aggregate& a : aggregates) {
    const std::string name = a.name;
    const bool ratio = name == "cv";
    nlohmann::json j = entry(r, family_index, "aggregate");
    j["name"] = benchmark_name(r) + "_" + name;
    j["threads"] = r.threads;
    j["aggregate_name"] = name;
    j["aggregate_unit"] = ratio ? "percentage" : "time";
    j["iterations"] = static_cast<int64_t>(real.size());  // as Google Benchmark: the repetitions
    j["real_time"] = ratio ? rs.*a.statistic : rs.*a.statistic / kNsPerMs;
    j["cpu_time"] = ratio ? cs.*a.statistic : cs.*a.statistic / kNsPerMs;
    j["time_unit"] = "ms";
    add_counters(j, {counters.gflops.*a.statistic, counters.gbps.*a.statistic,
                     counters.pct_peak_flops.*a.statistic, counters.pct_peak_bw.*a.statistic});
    if (name == "median") median_index = list.size();
    list.push_back(j);
  }
  const Measurement& m = r.measurement;
  const Achieved at_median = achieved(r, rs.median);
  nlohmann::json& median = list[median_index];
  median["cuvil"] = {{"real_ns", real},
                     {"cpu_ns", cpu},
                     {"warmup_ns", m.warmup_real_ns},
                     {"noisy", m.noisy},
                     {"drift_pct", finite_or_null(m.drift_pct)},
                     {"drifted", m.drifted},
                     {"stop_reason", to_string(m.stop_reason)},
                     {"noise", finite_or_null(m.noise)},
                     {"max_noise", m.max_noise},
                     {"real", summary_json(rs)},
                     {"cpu", summary_json(cs)},
                     {"declared_flops", r.declared_flops},
                     {"reduced_precision_flops", r.reduced_precision_flops},
                     {"bf16_flops", r.bf16_flops},
                     {"declared_bytes", r.declared_bytes},
                     {"gflops", at_median.gflops},
                     {"gbps", at_median.gbps},
                     {"pct_peak_flops", at_median.pct_peak_flops},
                     {"pct_peak_bw", at_median.pct_peak_bw},
                     {"arena_bytes", r.arena_bytes},
                     {"weight_bytes", r.weight_bytes},
                     {"plan_weight_bytes", r.plan_weight_bytes},
                     {"peak_rss_bytes", r.peak_rss_bytes},
                     {"peak_rss_scope", r.peak_rss_per_rung ? "rung" : "process"},
                     {"compile_s", r.compile_s}};
  if (m.turns > 0) {
    median["cuvil"]["turns"] = {
        {"count", m.turns}, {"unsettled", m.unsettled_turns}, {"settle_s", m.settle_s}};
  }
  if (!r.baseline.empty()) {
    median["cuvil"]["baseline"] = r.baseline;
    median["cuvil"]["max_rel_error_vs_cuvil"] =
        r.max_rel_error_vs_cuvil >= 0 ? finite_or_null(r.max_rel_error_vs_cuvil) : nullptr;
  }
  const RungProbes& rp = r.probes;
  if (rp.ops_enabled) median["cuvil"]["ops"] = ops_json(r);
  if (!rp.counters.empty()) {
    median["cuvil"]["counters"] = counters_json(rp.counters);
    median["cuvil"]["counters_scope"] = rp.counters_scope;
  }
  if (!rp.derived.empty()) {
    nlohmann::json derived = nlohmann::json::object();
    for (const probes::DerivedMetric& d : rp.derived) {
      derived[d.name] = {{"value", d.value}, {"formula", d.formula}};
    }
    median["cuvil"]["derived_metrics"] = std::move(derived);
  }
  if (!rp.probe_real_ns.empty()) median["cuvil"]["probe_real_ns"] = rp.probe_real_ns;
  if (!rp.samples_file.empty()) {
    median["cuvil"]["samples_file"] = rp.samples_file;
    median["cuvil"]["samples_method"] = rp.samples_method;
  }
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
