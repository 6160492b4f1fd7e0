// run.json in Google Benchmark's JSON schema ("context" + "benchmarks"), so tools that read
// Google Benchmark output read cuvil's. Per rung: one "iteration" entry per sample, then the
// aggregates mean/median/stddev/cv (Google Benchmark's) and min/max/p50/p90/p95/p99/p99.9
// (custom statistics, as Google Benchmark writes user statistics). Every entry carries the
// counters GFLOP/s, GB/s, pct_peak_flops and pct_peak_bw (% of the machine's measured peaks; 0
// when unknown); in an aggregate each is that statistic of the per-iteration values, as Google
// Benchmark aggregates user counters (the stddev entry: the rate's stddev; cv: the rate's cv;
// min: the lowest rate, from the slowest iteration). Raw samples, the stopping
// rule's verdict and the full statistics live under the median entry's "cuvil" key, with what
// `run --probes` recorded (cuvil.ops, cuvil.counters, cuvil.samples_file:
// docs/probes.md); the environment and the clocks under context's "cuvil" key.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_suite/environment.h"
#include "bench_suite/measure.h"
#include "passes/ir/types.h"
#include "probes/clock.h"
#include "probes/machine_peak.h"
#include "probes/perf_counters.h"
#include "stats/summary.h"

namespace cuvil::bench {

inline constexpr const char* kFlopConvention =
    "2 FLOPs per multiply-accumulate (a GEMM of MxK by KxN is 2*M*N*K FLOPs)";
// What a sample times (measure(executor, ...); the CUDA target uploads its inputs once too).
inline constexpr const char* kTimedRegion =
    "the plan's steps only: inputs stay resident (read in place, not copied per iteration) and "
    "outputs stay in the plan's buffers (not copied out)";
inline constexpr const char* kByteConvention =
    "per step, bytes of every input and output tensor (weights included) at fp32 storage, "
    "except weights a bf16 or int8 kernel replaced by its own copy (2 or 1 bytes each)";

// One counter's value over a region, per iteration. Unsupported counters carry the reason and no
// value (never a 0 that looks measured).
struct CounterValue {
  std::string name;
  bool supported = false;
  std::string reason;
  double value = 0;  // raw * scale
  double raw = 0;
  double scale = 1.0;  // time enabled / time running (multiplexing)
  double time_enabled_ns = 0, time_running_ns = 0;
};

// One step of the Plan, profiled (`run --probes ops`): run.json's cuvil.ops.records[].
struct OpRecord {
  size_t step = 0;
  std::string node, op, kernel;
  std::string lowering;  // "generated" | "onednn" | ... (runtime/kernel_table.h lowering_of)
  std::vector<ir::Shape> input_shapes;
  ir::Shape output_shape;
  double flops = 0, bytes = 0;  // declared per call
  double ns_per_iteration = 0;  // mean over iterations
  double ns_min = 0, ns_median = 0;
  std::vector<CounterValue> counters;  // deltas over the step, per iteration
};

struct OpsProfile {
  int64_t iterations = 0;  // the probe iterations the records sum over
  std::string clock;       // the region clock (probes::region_clock_name())
  std::vector<OpRecord> records;
  double total_ns_per_iteration() const;
};

// What `run --probes` recorded for a rung, from extra iterations after its measurement.
struct RungProbes {
  bool ops_enabled = false;
  OpsProfile ops;
  std::vector<CounterValue> counters;          // run-level, per iteration; empty: none asked
  std::string counters_scope;                  // "user+kernel" or "user only (...)"
  std::vector<probes::DerivedMetric> derived;  // IPC, miss rates: where their inputs were counted
  std::vector<double> probe_real_ns;           // wall time of each probe iteration (probes on)
  std::string samples_file;                    // folded stacks; empty: not sampled
  std::string samples_method;
};

struct RungResult {
  std::string suite;
  std::string rung;
  // "" for cuvil; a baseline's variant ("torch-eager", "torch-script") for the rows measured
  // beside it, named <suite>/<rung>/<variant>.
  std::string baseline;
  double max_rel_error_vs_cuvil = -1;  // baselines: their outputs against cuvil's; -1: unknown
  int threads = 1;
  Measurement measurement;
  double declared_flops = 0;  // per iteration, kFlopConvention
  double declared_bytes = 0;  // per iteration, kByteConvention
  // The part of declared_flops done by bf16 or int8 products (runtime::kernel_arithmetic), and
  // the bf16 part of it: the fp32 peak does not bound them. A rung's %peak of FLOPs weighs each
  // part by its own peak; where one it needs was not measured, it has none.
  double reduced_precision_flops = 0;
  double bf16_flops = 0;
  int64_t arena_bytes = 0;
  int64_t weight_bytes = 0;  // the model's constants as built, at their dtype
  // What the plan holds for weights after prepare: its unreleased constants and the prepared
  // forms (runtime::Plan::weight_bytes); -1: unknown (baselines, the cuda target).
  int64_t plan_weight_bytes = -1;
  double compile_s = 0;
  int64_t peak_rss_bytes = -1;     // -1: unknown
  bool peak_rss_per_rung = false;  // false: the process's high-water mark so far
  // The peaks its "% of peak" uses: the machine's (the device's on the cuda target); a figure
  // of 0 is unknown.
  probes::MachinePeak peak;
  RungProbes probes;
};

struct RunContext {
  std::string executable;
  std::string config_source;
  std::string config_hash;
  std::string target = "cpu";
  std::string config_yaml;  // the pass config's full text
  std::string model_path;   // --model: the ONNX file (absolute) and its sha256; else empty
  std::string model_sha256;
  nlohmann::json baseline;  // --baseline: framework, version, threads, BLAS, module; else null
  Environment environment;
  probes::MachinePeak peak;  // threads == 0 ... fp32_gflops == 0 when not measured
  int threads = 1;
  std::vector<int> pinned_cpus;  // empty: not pinned
  StoppingCriteria stopping;
  std::vector<std::string> warnings;
  probes::ClockReport clocks;  // empty `clocks` list: not measured
};

// Achieved rates from a time per iteration.
struct Achieved {
  double gflops = 0, gbps = 0;
  // 0 when a peak the work needs is unknown (bf16 or int8 products where it was not measured)
  double pct_peak_flops = 0, pct_peak_bw = 0;
};
Achieved achieved(const RungResult& r, double ns_per_iteration);
// The %peak of FLOPs for a table, "-" where the work has a rate but no peak bounds it.
std::string format_pct_peak(const Achieved& a);

// Rates of one step: its declared work over its mean time, against the rung's peaks.
Achieved achieved(const RungResult& r, const OpRecord& op);

nlohmann::json context_json(const RunContext& context);
// cuvil.ops of the median entry (docs/probes.md).
nlohmann::json ops_json(const RungResult& r);
nlohmann::json counters_json(const std::vector<CounterValue>& counters);
// The iteration entries (one per sample) and the aggregates, in that order.
nlohmann::json benchmark_entries(const RungResult& result, int family_index);
// Writes atomically: a failed run leaves no half-written file.
void write_json_file(const std::string& path, const nlohmann::json& document);

}  // namespace cuvil::bench
