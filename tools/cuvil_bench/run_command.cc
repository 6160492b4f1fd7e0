// cuvil-bench run: compile the suite's pipeline and measure each rung of its load ladder through
// the one harness (bench_suite/measure.h), with the environment recorded and warned about.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "bench_suite/cuda_target.h"
#include "bench_suite/environment.h"
#include "bench_suite/json_report.h"
#include "bench_suite/measure.h"
#include "bench_suite/op_profile.h"
#include "bench_suite/probe_run.h"
#include "bench_suite/progress.h"
#include "bench_suite/suites.h"
#include "bench_suite/torch_baseline.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"
#include "probes/clock.h"
#include "probes/machine_peak.h"
#include "reports/pictures/baseline_bars.h"
#include "reports/pictures/plot.h"
#include "reports/pictures/roofline.h"
#include "reports/printable.h"
#include "runtime/executor.h"
#include "runtime/kernel_table.h"
#include "stats/summary.h"
#include "tools/cuvil_bench/commands.h"
#include "tools/cuvil_bench/run_context.h"

namespace cuvil::bench::cli {

namespace {

constexpr size_t kTopOps = 15;

struct RunOptions {
  PipelineOptions pipeline;
  std::string rungs;
  std::string out;
  MeasureOptions measure;
  double max_noise_pct = kDefaultMaxNoise * 100;
  std::string cpus;
  bool remeasure_peak = false;
  bool quiet = false;
  uint64_t seed = 1;
  DbOptions db;
  std::string probes;  // --probes, parsed into probe_spec
  ProbeSpec probe_spec;
  int64_t probe_iterations = 0;  // 0: default_probe_iterations
  std::string probe_dir;
  size_t rung_count = 0;
  std::string baseline;     // "" or "torch"
  TorchBaselineSpec torch;  // --torch-module, --python; threads set per run
};

// Where `--probes samples` writes a rung's folded stacks (docs/probes.md: <out>.folded).
std::string samples_path(const RunOptions& o, const Suite& suite, const Rung& rung) {
  if (!o.probe_dir.empty()) return o.probe_dir + "/" + suite.name + "." + rung.name + ".folded";
  if (o.rung_count == 1) return o.out + ".folded";
  return o.out + "." + rung.name + ".folded";
}

// Turns that began with cuvil's or the worker's threads still busy after the settle's limit
// (measure.h): their first samples ran on fewer CPUs, so the comparison may lean against them.
void warn_unsettled_turns(const std::vector<Measurement>& m,
                          const std::vector<std::string>& variants, double max_settle_s) {
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].unsettled_turns == 0) continue;
    const std::string who = i == 0 ? "cuvil" : variants[i - 1];
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s: %lld of %lld turns began while cuvil or the PyTorch worker still used the "
                  "CPUs after %.1f s of waiting: those samples may be slow",
                  who.c_str(), static_cast<long long>(m[i].unsettled_turns),
                  static_cast<long long>(m[i].turns), max_settle_s);
    print_warning(text);
  }
}

// What a compiled CPU plan holds per byte of the graph's weights, with margin: prepared forms
// replace the originals (SDXL 256px peaks at 1.09x its weights, docs/performance.md § Memory).
constexpr double kPlanBytesPerWeightByte = 1.2;

// `weights` keeps the constants this rung's plan still holds alive after it ends, so the next
// rung of the suite shares them instead of generating them again (ir::materialize). Weights the
// plan replaced by prepared forms (packed, Winograd-transformed) were released at lowering and
// are generated again for the next rung, which prepares its own forms anyway.
// `baseline_rows` (with --baseline) receives one row per PyTorch variant measured beside cuvil,
// and `baseline_info` what the worker reported of itself.
// `stage` names what the rung is doing, for the out-of-memory message (run_rung).
RungResult measure_rung(const Suite& suite, const Rung& rung, const passes::PipelineConfig& config,
                        const RunOptions& o, int threads, const probes::MachinePeak& peak,
                        ProgressLine& progress_line,
                        std::vector<std::shared_ptr<const std::vector<float>>>* weights,
                        std::vector<RungResult>* baseline_rows, nlohmann::json* baseline_info,
                        std::string& stage) {
  RungResult result;
  result.suite = suite.name;
  result.rung = rung.name;
  result.threads = threads;
  result.peak = peak;
  result.peak_rss_per_rung = reset_peak_rss();
  const std::string label = suite.name + "/" + rung.name;
  const int64_t t0 = probes::now_ns();
  // The stage and the time since compiling began, redrawn each second until the plan is ready.
  std::optional<CompileProgress> compiling(std::in_place, progress_line, label);
  compiling->stage(stage = "building the graph");
  ir::Graph graph = suite.build(rung, /*tiny=*/false);
  result.weight_bytes = graph.constant_bytes();
  const std::vector<ir::Tensor> inputs = ir::random_inputs(graph, o.seed);
  // PyTorch loads its module before cuvil compiles: a built-in suite's reference takes the
  // graph's weights as built (the passes fold and repack them), and holding no second copy of
  // them while the plan prepares its own forms keeps both models in memory at once (SDXL).
  std::optional<TorchBaseline> torch;
  if (baseline_rows != nullptr) {
    compiling->stage(stage = "loading the PyTorch baseline");
    TorchBaselineSpec spec = o.torch;
    spec.reserve_bytes =
        static_cast<int64_t>(static_cast<double>(result.weight_bytes) * kPlanBytesPerWeightByte);
    torch.emplace(spec, inputs, o.torch.builtin.empty() ? nullptr : &graph, rung.params);
  }
  passes::Compiled compiled =
      passes::compile(std::move(graph), config, threads, nullptr,
                      [&](const std::string& pass) { compiling->stage(stage = pass); });
  compiling.reset();
  stage = "allocating the plan's memory";
  result.declared_flops = compiled.plan.total_flops();
  for (const runtime::Step& step : compiled.plan.steps) {
    const std::string arithmetic = runtime::kernel_arithmetic(step.kernel);
    if (arithmetic != "fp32") result.reduced_precision_flops += step.flops;
    if (arithmetic == "bf16") result.bf16_flops += step.flops;
  }
  result.declared_bytes = compiled.plan.total_bytes();
  result.arena_bytes = compiled.plan.arena_bytes;
  result.plan_weight_bytes = compiled.plan.weight_bytes();
  *weights = compiled.plan.constants;
  if (config.target == "cuda") {
    // The GPU: same harness, CUDA-event samples, % of the device's measured peaks.
    result.compile_s = static_cast<double>(probes::now_ns() - t0) * 1e-9;
    CudaRungInfo info;
    result.measurement = measure_on_cuda(
        std::move(compiled.plan), inputs, o.measure,
        [&](const MeasureProgress& p) {
          progress_line.update(format_progress(label, p.warming_up,
                                               p.warming_up ? p.warmup_runs : p.samples, p.noise,
                                               o.measure.max_noise, p.eta_s));
        },
        o.remeasure_peak, &info);
    // The device's: its bf16 tensor peak bounds every step (int8 is not measured there).
    result.peak = probes::MachinePeak{};
    result.peak.fp32_gflops = result.peak.bf16_gflops = info.peak_bf16_gflops;
    result.peak.mem_read_gbps = info.peak_hbm_gbps;
    progress_line.clear();
    std::printf("%s\n(%%peak: of the device's measured bf16 tensor %.0f GFLOP/s and %.0f GB/s)\n",
                info.summary.c_str(), info.peak_bf16_gflops, info.peak_hbm_gbps);
    result.peak_rss_bytes = peak_rss_bytes();
    return result;
  }
  runtime::Executor executor(std::move(compiled.plan));
  result.compile_s = static_cast<double>(probes::now_ns() - t0) * 1e-9;
  stage = "measuring";
  const ProgressFn on_progress = [&](const MeasureProgress& p) {
    progress_line.update(format_progress(label, p.warming_up,
                                         p.warming_up ? p.warmup_runs : p.samples, p.noise,
                                         o.measure.max_noise, p.eta_s));
  };
  if (baseline_rows != nullptr) {
    // cuvil and each PyTorch variant take turns sample by sample (measure_interleaved).
    std::vector<Sampler> samplers = {timed_sampler([&] { executor.run(inputs); })};
    for (const std::string& v : torch->variants()) samplers.push_back(torch->sampler(v));
    progress_line.update(
        label + "  measuring beside PyTorch (" + std::to_string(samplers.size()) + " interleaved)",
        /*force=*/true);
    InterleaveOptions turns;
    turns.settle.helpers = {torch->worker_pid()};
    std::vector<Measurement> m = measure_interleaved(
        samplers, o.measure,
        [&](size_t i, const MeasureProgress& p) {
          if (i == 0) on_progress(p);
        },
        turns);
    warn_unsettled_turns(m, torch->variants(), turns.settle.max_s);
    result.measurement = std::move(m[0]);
    const std::vector<ir::Tensor> ours = executor.run(inputs);
    for (size_t k = 0; k < torch->variants().size(); ++k) {
      RungResult row = result;
      row.baseline = torch->variants()[k];
      // PyTorch's variants run the model in one precision: --torch-dtype.
      row.reduced_precision_flops = o.torch.dtype == "fp32" ? 0 : row.declared_flops;
      row.bf16_flops = o.torch.dtype == "bf16" ? row.declared_flops : 0;
      row.measurement = std::move(m[k + 1]);
      row.arena_bytes = 0;
      row.plan_weight_bytes = -1;
      row.compile_s = 0;
      const std::vector<ir::Tensor> theirs = torch->outputs(row.baseline);
      row.max_rel_error_vs_cuvil = max_relative_error_vs_cuvil(theirs, ours, row.baseline);
      baseline_rows->push_back(std::move(row));
    }
    *baseline_info = {{"framework", "torch"},          {"version", torch->torch_version()},
                      {"threads", torch->threads()},   {"dtype", o.torch.dtype},
                      {"blas", torch->blas()},         {"module", o.torch.module_path},
                      {"variants", torch->variants()}, {"unavailable", torch->unavailable()}};
  } else {
    result.measurement = measure(executor, inputs, o.measure, on_progress);
  }
  // Probes observe extra iterations AFTER the measurement, never the measured ones: the
  // headline timing (what compare, tune and the nightly history read) stays exactly what an
  // unprobed run measures, whatever the probes cost. The op sum is then checked against that
  // median, measured moments earlier in the same process.
  if (o.probe_spec.any()) {
    const int64_t n = o.probe_iterations > 0
                          ? o.probe_iterations
                          : default_probe_iterations(result.measurement, o.measure.min_time_s);
    progress_line.update(label + "  probing (" + std::to_string(n) + " iterations)",
                         /*force=*/true);
    stage = "probing";
    result.probes = probe_rung(executor, inputs, o.probe_spec, n,
                               o.probe_spec.samples ? samples_path(o, suite, rung) : "");
  }
  progress_line.clear();
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

// "resnet50/b64 (batch=64, image=224): out of memory while allocating the plan's memory; peak
// RSS 3.1 GiB of 23.4 GiB": which rung, how big, and where, so the user knows what to shrink.
std::string out_of_memory_message(const Suite& suite, const Rung& rung, const std::string& stage,
                                  bool with_baseline) {
  std::string size;
  for (const auto& [key, value] : rung.params)
    size += (size.empty() ? "" : ", ") + key + "=" + std::to_string(value);
  char memory[160] = "";
  const int64_t rss = peak_rss_bytes();
  std::ifstream meminfo("/proc/meminfo");
  const int64_t total = meminfo_bytes(
      std::string(std::istreambuf_iterator<char>(meminfo), std::istreambuf_iterator<char>()),
      "MemTotal");
  if (rss > 0 && total > 0) {
    std::snprintf(memory, sizeof memory, "; peak RSS %.1f GiB of %.1f GiB", rss / 1073741824.0,
                  total / 1073741824.0);
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const size_t used = std::strlen(memory);
    std::snprintf(memory + used, sizeof memory - used, ", address space limited to %.1f GiB",
                  static_cast<double>(limit.rlim_cur) / 1073741824.0);
  }
  return suite.name + "/" + rung.name + " (" + size + "): out of memory while " + stage + memory +
         (with_baseline ? " (try a smaller rung, or no --baseline: PyTorch holds its own copy)"
                        : " (try a smaller rung)");
}

RungResult run_rung(const Suite& suite, const Rung& rung, const passes::PipelineConfig& config,
                    const RunOptions& o, int threads, const probes::MachinePeak& peak,
                    ProgressLine& progress_line,
                    std::vector<std::shared_ptr<const std::vector<float>>>* weights,
                    std::vector<RungResult>* baseline_rows, nlohmann::json* baseline_info) {
  std::string stage = "starting";
  try {
    return measure_rung(suite, rung, config, o, threads, peak, progress_line, weights,
                        baseline_rows, baseline_info, stage);
  } catch (const std::bad_alloc&) {
    progress_line.clear();
    weights->clear();  // what the failed rung shared is not worth keeping
    throw OutOfMemory(out_of_memory_message(suite, rung, stage, baseline_rows != nullptr));
  }
}

void print_header() {
  std::printf("%-22s %5s %10s %7s %10s %10s %6s %9s %6s %8s %6s %9s %11s %9s %7s\n", "rung", "n",
              "median ms", "+-noise", "min ms", "p99 ms", "cv %", "GFLOP/s", "%peak", "GB/s", "%bw",
              "arena MiB", "weights MiB", "RSS MiB", "setup s");
}

void print_row(const RungResult& r) {
  const stats::Summary s = stats::summarize(r.measurement.real_ns);
  const Achieved a = achieved(r, s.median);
  char noise[16];
  if (std::isfinite(r.measurement.noise)) {
    std::snprintf(noise, sizeof noise, "%.2f%%", r.measurement.noise * 100);
  } else {
    std::snprintf(noise, sizeof noise, "?");
  }
  // Baseline rows (another framework beside cuvil) have no arena, plan or setup of cuvil's.
  const bool baseline = !r.baseline.empty();
  auto mib = [](int64_t bytes, int decimals) {
    char buf[24];
    if (bytes < 0) return std::string("-");
    std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(bytes) / (1 << 20));
    return std::string(buf);
  };
  char setup[24] = "-";
  if (!baseline) std::snprintf(setup, sizeof setup, "%.2f", r.compile_s);
  std::printf(
      "%-22s %5lld %10.3f %7s %10.3f %10.3f %6.2f %9.1f %6s %8.2f %6.1f %9s %11s %9s %7s%s\n",
      (r.suite + "/" + r.rung + (baseline ? "/" + r.baseline : "")).c_str(),
      static_cast<long long>(s.count), s.median * 1e-6, noise, s.min * 1e-6, s.p99 * 1e-6,
      s.cv * 100.0, a.gflops, format_pct_peak(a).c_str(), a.gbps, a.pct_peak_bw,
      baseline ? "-" : mib(r.arena_bytes, 1).c_str(), mib(r.plan_weight_bytes, 1).c_str(),
      baseline ? "-" : mib(r.peak_rss_bytes, 0).c_str(), setup,
      r.measurement.noisy ? "  NOISY" : "");
  std::fflush(stdout);
}

std::string format_counter(const CounterValue& c) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-24s ", c.name.c_str());
  if (!c.supported) return buf + ("not supported: " + c.reason + "\n");
  std::string line = buf;
  std::snprintf(buf, sizeof buf, "%16.0f  (scale %.2f)\n", c.value, c.scale);
  return line + buf;
}

void print_probes(const RungResult& r) {
  const RungProbes& p = r.probes;
  if (p.ops_enabled) std::printf("%s", format_ops_table(r, kTopOps).c_str());
  if (!p.counters.empty()) {
    std::printf("counters of %s/%s per iteration (%zu probe iteration(s)), %s:\n", r.suite.c_str(),
                r.rung.c_str(), p.probe_real_ns.size(), p.counters_scope.c_str());
    for (const CounterValue& c : p.counters) std::printf("%s", format_counter(c).c_str());
    for (const probes::DerivedMetric& d : p.derived) {
      std::printf("  %-24s %16.3f  (%s)\n", d.name.c_str(), d.value, d.formula.c_str());
    }
  }
  if (!p.samples_file.empty()) {
    std::printf("samples (%s) written to %s\n", p.samples_method.c_str(), p.samples_file.c_str());
  }
  std::fflush(stdout);
}

std::string noisy_warning(const RungResult& r) {
  char noise[32] = "?";
  if (std::isfinite(r.measurement.noise)) {
    std::snprintf(noise, sizeof noise, "%.2f", r.measurement.noise * 100);
  }
  char buf[320];
  if (r.measurement.drifted) {
    std::snprintf(buf, sizeof buf,
                  "%s/%s is NOISY: the machine's speed changed during the run (the medians of its "
                  "samples' stretches in time spread %.1f%%, beyond what their order by chance "
                  "gives); its median depends on when it was taken, do not trust small differences",
                  r.suite.c_str(), r.rung.c_str(), r.measurement.drift_pct);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%s/%s is NOISY: the median is known to +-%s%% after %zu samples, above the "
                "--max-noise target of %.2f%% (stopped by %s); do not trust small differences",
                r.suite.c_str(), r.rung.c_str(), noise, r.measurement.real_ns.size(),
                r.measurement.max_noise * 100, to_string(r.measurement.stop_reason));
  return buf;
}

// --baseline torch: which PyTorch module to load (models: --torch-module or <model>.pt beside
// the .onnx file), checked before anything is measured.
void resolve_baseline(RunOptions& o, const Suite& suite) {
  if (o.baseline != "torch")
    throw UserError("--baseline: unknown baseline '" + o.baseline + "' (known: torch)");
  if (o.pipeline.target != "cpu")
    throw UserError("--baseline torch: runs beside the cpu target only");
  if (o.torch.module_path.empty() && !suite.model_path.empty()) {
    std::filesystem::path sidecar(suite.model_path);
    sidecar.replace_extension(".pt");
    if (std::filesystem::exists(sidecar)) o.torch.module_path = sidecar.string();
  }
  if (o.torch.module_path.empty() && suite.model_path.empty()) {
    if (!has_torch_reference(suite.name)) {
      throw UserError(
          "--baseline torch: no PyTorch reference module for suite '" + suite.name +
          "' (there are for resnet50, llama3-8b and sdxl); --torch-module FILE gives one");
    }
    o.torch.builtin = suite.name;
    return;
  }
  if (o.torch.module_path.empty()) {
    throw UserError(
        "--baseline torch needs the PyTorch module: --torch-module FILE (torch.save(model, FILE) "
        "for eager and TorchScript, or torch.jit.save) or a .pt file beside the model");
  }
  if (!std::filesystem::is_regular_file(o.torch.module_path)) {
    throw UserError("--torch-module " + o.torch.module_path + ": no such file");
  }
}

// What cuvil's output may differ from an fp32 reference by: the pipeline's accuracy bound
// (reduced_precision.h), the one `verify` holds it to.
struct AccuracyBound {
  double tolerance = passes::kFp32Tolerance;
  std::string precision = "f32";
};

// Whether an fp32 PyTorch row's output differs from cuvil's beyond the bound: then the speed-up
// compares two different answers. A bf16 PyTorch row carries its own rounding, so it is not
// held to cuvil's bound.
bool beyond_bound(const RungResult& b, const AccuracyBound& bound, const std::string& torch_dtype) {
  return torch_dtype == "fp32" && b.max_rel_error_vs_cuvil > bound.tolerance;
}

std::string beyond_bound_warning(const RungResult& b, const AccuracyBound& bound) {
  char buf[400];
  std::snprintf(
      buf, sizeof buf,
      "%s/%s: %s's output differs from cuvil's by %.2e, beyond this pipeline's %s "
      "bound %.0e (the one `verify` holds it to): the speed-up compares different answers",
      b.suite.c_str(), b.rung.c_str(), b.baseline.c_str(), b.max_rel_error_vs_cuvil,
      bound.precision.c_str(), bound.tolerance);
  return buf;
}

// PyTorch beside cuvil, per rung: medians with their 95% intervals and cuvil's speed-up over
// each (the interval of the ratio from the two medians' intervals), and output agreement.
void print_baseline_table(const std::vector<std::pair<RungResult, std::vector<RungResult>>>& rows,
                          const nlohmann::json& info, const AccuracyBound& bound,
                          const std::string& torch_dtype) {
  std::printf(
      "\nPyTorch %s beside cuvil (same inputs, %d thread(s), interleaved samples; BLAS: %s)\n",
      info.value("version", std::string("?")).c_str(), info.value("threads", 0),
      info.value("blas", std::string("?")).c_str());
  std::printf("%-22s %-17s %10s %21s %9s %17s %12s\n", "rung", "variant", "median ms", "95% CI ms",
              "speed-up", "95% CI", "max rel err");
  for (const auto& [cuvil_row, baselines] : rows) {
    const stats::Summary c = stats::summarize(cuvil_row.measurement.real_ns);
    std::printf("%-22s %-17s %10.3f %10.3f..%-10.3f %9s %17s %12s\n",
                (cuvil_row.suite + "/" + cuvil_row.rung).c_str(), "cuvil", c.median * 1e-6,
                c.median_ci.low * 1e-6, c.median_ci.high * 1e-6, "", "", "");
    for (const RungResult& b : baselines) {
      const stats::Summary t = stats::summarize(b.measurement.real_ns);
      char ci[40];
      std::snprintf(ci, sizeof ci, "%.2fx..%.2fx", t.median_ci.low / c.median_ci.high,
                    t.median_ci.high / c.median_ci.low);
      char err[24];
      std::snprintf(err, sizeof err, "%.2e", b.max_rel_error_vs_cuvil);
      std::printf("%-22s %-17s %10.3f %10.3f..%-10.3f %8.2fx %17s %12s%s%s\n", "",
                  b.baseline.c_str(), t.median * 1e-6, t.median_ci.low * 1e-6,
                  t.median_ci.high * 1e-6, t.median / c.median, ci, err,
                  b.measurement.noisy || cuvil_row.measurement.noisy ? "  NOISY" : "",
                  beyond_bound(b, bound, torch_dtype) ? "  BEYOND BOUND" : "");
    }
  }
  for (const auto& [variant, why] :
       info.value("unavailable", std::map<std::string, std::string>{})) {
    std::printf("%s: not measured: %s\n", variant.c_str(), why.c_str());
  }
  std::printf("speed-up: PyTorch's median / cuvil's (above 1: cuvil is faster).\n");
}

namespace pictures = reports::pictures;

// --probes ops: every profiled op of every rung under this machine's roofs.
pictures::Roofline roofline_of(const std::vector<RungResult>& profiled, const RunContext& context) {
  pictures::Roofline roof;
  roof.name = profiled.front().suite + ", " + std::to_string(context.threads) + " thread(s)";
  // The rung's peaks are the ones its %peak uses (the device's on the cuda target).
  roof.peak_gflops = profiled.front().peak.fp32_gflops;
  roof.peak_gbps = profiled.front().peak.mem_read_gbps;
  if (context.target == "cpu") {
    roof.peak_note =
        "fp32 " + context.peak.isa + ", " + std::to_string(context.peak.threads) + " thread(s)";
  }
  std::set<std::string> reduced;  // the reduced-precision arithmetics among the ops
  for (const RungResult& r : profiled) {
    for (const OpRecord& op : r.probes.ops.records) {
      roof.ops.push_back({r.rung, op.node, op.op, op.kernel, op.lowering, op.flops, op.bytes,
                          op.ns_per_iteration});
      const std::string arithmetic = runtime::kernel_arithmetic(op.kernel);
      if (arithmetic != "fp32") reduced.insert(arithmetic);
    }
  }
  if (context.target == "cpu") {
    for (const std::string& arithmetic : reduced) {
      const double gflops = profiled.front().peak.of(arithmetic);
      if (gflops > 0) {
        roof.precision_roofs.emplace_back(arithmetic, gflops);
      } else {
        roof.peak_note += "; it does not bound the " + arithmetic + " ops";
      }
    }
  }
  return roof;
}

// --baseline: per rung, cuvil's median and each PyTorch variant's, with their 95% intervals.
pictures::BaselineChart baseline_chart_of(
    const std::vector<std::pair<RungResult, std::vector<RungResult>>>& rows,
    const nlohmann::json& info) {
  pictures::BaselineChart chart;
  chart.details = "torch " + info.value("version", std::string("?")) + ", " +
                  std::to_string(info.value("threads", 0)) + " thread(s)";
  chart.variants = {"cuvil"};
  for (const std::string& v : info.value("variants", std::vector<std::string>{})) {
    chart.variants.push_back(v);
  }
  const auto unavailable = info.value("unavailable", std::map<std::string, std::string>{});
  for (const auto& [v, why] : unavailable) {
    if (std::find(chart.variants.begin(), chart.variants.end(), v) == chart.variants.end()) {
      chart.variants.push_back(v);
    }
  }
  const auto bar_of = [](const std::string& variant, const RungResult& r) {
    const stats::Summary s = stats::summarize(r.measurement.real_ns);
    return pictures::BaselineBar{
        variant, true, s.median * 1e-6, s.median_ci.low * 1e-6, s.median_ci.high * 1e-6, ""};
  };
  for (const auto& [ours, theirs] : rows) {
    pictures::BaselineRung rung;
    rung.name = ours.suite + "/" + ours.rung;
    for (const std::string& v : chart.variants) {
      if (v == "cuvil") {
        rung.bars.push_back(bar_of(v, ours));
        continue;
      }
      const auto it = std::find_if(theirs.begin(), theirs.end(),
                                   [&](const RungResult& b) { return b.baseline == v; });
      if (it != theirs.end()) {
        rung.bars.push_back(bar_of(v, *it));
      } else {
        const auto why = unavailable.find(v);
        rung.bars.push_back(
            {v, false, 0, 0, 0, why == unavailable.end() ? std::string() : why->second});
      }
    }
    chart.rungs.push_back(std::move(rung));
  }
  return chart;
}

// The pictures beside --out: the roofline of --probes ops, the bars of --baseline.
void write_run_pictures(const RunOptions& o, const std::vector<RungResult>& profiled,
                        const std::vector<std::pair<RungResult, std::vector<RungResult>>>& compared,
                        const RunContext& context) {
  if (profiled.empty() && compared.empty()) return;
  if (o.out.empty()) {
    std::printf("pictures: give -o/--out to draw the %s beside the run's JSON\n",
                profiled.empty() ? "baseline bars" : "roofline");
    return;
  }
  if (!profiled.empty()) {
    const std::string path = pictures::beside(o.out, ".roofline.svg");
    pictures::write_picture(
        path, pictures::svg_file(pictures::roofline_svg(roofline_of(profiled, context))));
    std::printf("wrote %s\n", path.c_str());
  }
  if (!compared.empty()) {
    const std::string path = pictures::beside(o.out, ".vs-torch.svg");
    pictures::write_picture(path, pictures::svg_file(pictures::baseline_bars_svg(
                                      baseline_chart_of(compared, context.baseline))));
    std::printf("wrote %s\n", path.c_str());
  }
}

int run_suite(RunOptions o, const std::string& executable) {
  o.measure.max_noise = o.max_noise_pct / 100.0;
  o.measure.validate();
  require_runnable_target(o.pipeline.target);
  const Workload workload = resolve_workload(o.pipeline.workload);
  const Suite& suite = workload.suite;
  const std::string config_path = config_path_for(o.pipeline, suite);
  const passes::PipelineConfig config = load_config_for(o.pipeline, suite, config_path);
  const std::vector<Rung> rungs = select_rungs(workload.ladder, o.rungs);
  o.probe_spec = parse_probes(o.probes);
  o.rung_count = rungs.size();
  if (!o.baseline.empty()) resolve_baseline(o, suite);
  if (o.probe_spec.samples && o.out.empty() && o.probe_dir.empty()) {
    throw UserError(
        "--probes samples needs --out or --probe-dir: where to write the folded stacks");
  }
  check_probe_events(o.probe_spec);
  // Everything the run will write, checked (and the database opened) before measuring.
  RunOutputs outputs(o.db, o.out, o.probe_dir);
  std::vector<int> pinned;
  if (!o.cpus.empty()) {
    pinned = parse_cpu_list(o.cpus);
    // Before any thread exists: the executor's pool and the peak probe inherit the mask.
    pin_to_cpus(pinned);
    if (o.pipeline.threads == 0) o.pipeline.threads = static_cast<int>(pinned.size());
  }
  const int threads = resolved_threads(o.pipeline);
  o.torch.threads = threads;  // PyTorch gets the same thread budget

  double busy_others = 0;
  RunContext context = measurement_context(executable, config_path, config, o.pipeline.target,
                                           threads, "timings", &busy_others);
  context.model_path = suite.model_path;
  context.model_sha256 = suite.model_sha256;
  context.pinned_cpus = pinned;
  context.stopping = o.measure;
  context.clocks = probes::cached_clock_report();

  ProgressLine progress_line(stderr, o.quiet);
  progress_line.update("measuring this machine's peak FLOP/s and bandwidth", /*force=*/true);
  context.peak = probes::machine_peak(threads, o.remeasure_peak, busy_others,
                                      [] { return other_processes_busy_cpus(kBusyProbeWindowS); });
  progress_line.clear();
  if (context.peak.provisional) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "the machine peak in use was measured %s with %s other CPUs busy: it is "
                  "provisional (likely low, so %%peak and %%bw read high) until a run on a quiet "
                  "machine measures it again",
                  context.peak.measured_at.c_str(),
                  context.peak.busy_other_cpus < 0
                      ? "an unknown number of"
                      : std::to_string(context.peak.busy_other_cpus).substr(0, 4).c_str());
    context.warnings.push_back(buf);
    print_warning(buf);
  }

  const Environment& env = context.environment;
  std::printf("run %s with %s (hash %s), %d thread(s)%s, target %s\n", suite.name.c_str(),
              config_path.c_str(), context.config_hash.c_str(), threads,
              pinned.empty() ? "" : (" pinned to --cpus " + o.cpus).c_str(),
              o.pipeline.target.c_str());
  std::string dot_peaks;  // bf16 and int8, where measured
  for (const char* arithmetic : {"bf16", "int8"}) {
    if (context.peak.of(arithmetic) > 0) {
      dot_peaks += ", " + std::to_string(std::llround(context.peak.of(arithmetic))) + " GFLOP/s " +
                   arithmetic;
    }
  }
  std::printf(
      "machine: %s, %d CPUs, governor %s, commit %.12s%s, peak %.0f GFLOP/s fp32 (%s)%s, "
      "%.1f GB/s read (%s %s%s)\n",
      env.cpu_model.c_str(), env.logical_cpus, env.governor.c_str(), env.git_commit.c_str(),
      env.git_modified ? " (modified)" : "", context.peak.fp32_gflops, context.peak.isa.c_str(),
      dot_peaks.c_str(), context.peak.mem_read_gbps,
      context.peak.from_cache ? "cached, measured" : "measured", context.peak.measured_at.c_str(),
      context.peak.provisional ? ", provisional" : "");
  std::printf(
      "stopping: median known to +-%.2f%% (95%% CI), >= %d samples and %.2fs, timeout %.0fs\n",
      o.measure.max_noise * 100, o.measure.min_samples, o.measure.min_time_s, o.measure.timeout_s);
  if (o.probe_spec.any()) std::printf("%s", probes::format_clock_report(context.clocks).c_str());
  print_header();
  std::fflush(stdout);

  nlohmann::json benchmarks = nlohmann::json::array();
  int family = 0;
  int noisy = 0;
  AccuracyBound bound;
  bound.tolerance = passes::precision_tolerance(config, &bound.precision);
  std::vector<std::shared_ptr<const std::vector<float>>> weights;
  std::vector<std::pair<RungResult, std::vector<RungResult>>> compared;
  std::vector<RungResult> profiled;  // --probes ops: for the roofline
  // A rung that runs out of memory ends the run, but the rungs measured before it are still
  // written and stored (the run exits 3 after that); the next rungs are larger.
  std::string out_of_memory;
  for (const Rung& rung : rungs) {
    std::vector<RungResult> baseline_rows;
    nlohmann::json baseline_info;
    std::optional<RungResult> measured;
    try {
      measured = run_rung(suite, rung, config, o, threads, context.peak, progress_line, &weights,
                          o.baseline.empty() ? nullptr : &baseline_rows, &baseline_info);
    } catch (const OutOfMemory& e) {
      if (benchmarks.empty()) throw;
      out_of_memory = e.what();
      break;
    }
    const RungResult& r = *measured;
    print_row(r);
    for (const RungResult& b : baseline_rows) print_row(b);
    print_probes(r);
    std::vector<const RungResult*> rows = {&r};
    for (const RungResult& b : baseline_rows) rows.push_back(&b);
    for (const RungResult* row : rows) {
      if (!row->measurement.noisy) continue;
      ++noisy;
      const std::string w = noisy_warning(*row);
      print_warning(w);
      context.warnings.push_back(w);
    }
    for (const RungResult& b : baseline_rows) {
      if (!beyond_bound(b, bound, o.torch.dtype)) continue;
      const std::string w = beyond_bound_warning(b, bound);
      print_warning(w);
      context.warnings.push_back(w);
    }
    for (const RungResult* row : rows) {
      for (auto& entry : benchmark_entries(*row, family++)) benchmarks.push_back(entry);
    }
    if (!baseline_info.is_null()) context.baseline = baseline_info;
    if (!o.baseline.empty()) compared.emplace_back(r, std::move(baseline_rows));
    if (r.probes.ops_enabled) profiled.push_back(r);
  }
  std::printf(
      "FLOPs: %s. Bytes: %s. %%peak against this machine's measured peaks: fp32 FMA, and the "
      "bf16 or int8 dot products for such steps (bf16 steps widened to fp32, on a CPU without "
      "AVX512_BF16: the FMA peak; a rung weighs each part by its peak); work whose peak was not "
      "measured shows -.\n",
      kFlopConvention, kByteConvention);
  if (!compared.empty()) print_baseline_table(compared, context.baseline, bound, o.torch.dtype);
  std::fflush(stdout);
  if (noisy > 0) {
    print_warning(std::to_string(noisy) + " of " + std::to_string(family) +
                  " measured row(s) are NOISY (marked in the table and in the JSON)");
  }
  if (!out_of_memory.empty()) {
    const std::string w = "run incomplete: " + out_of_memory;
    print_warning(w);
    context.warnings.push_back(w);
  }
  nlohmann::json document;
  document["context"] = context_json(context);
  document["benchmarks"] = std::move(benchmarks);
  outputs.finish(document);
  write_run_pictures(o, profiled, compared, context);
  if (!out_of_memory.empty()) {
    std::fprintf(stderr, "cuvil-bench: error: %s\n", reports::printable(out_of_memory).c_str());
    return 3;
  }
  return 0;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("run", "measure the suite's load ladder");
  auto o = std::make_shared<RunOptions>();
  add_pipeline_options(*cmd, o->pipeline);
  cmd->add_option("--rungs", o->rungs,
                  "comma-separated rung names, or all (default: the default CPU rungs)");
  cmd->add_option("-o,--out", o->out,
                  "write results as Google Benchmark JSON; beside it (for OUT.json) the pictures "
                  "OUT.roofline.svg (with --probes ops) and OUT.vs-torch.svg (with --baseline "
                  "torch)");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench run --suite resnet50 --rungs b1\n"
      "  cuvil-bench run --suite resnet50 --rungs b1,b8 -o run.json --no-db\n"
      "  cuvil-bench run --suite resnet50 --rungs b1 --probes ops -o run.json\n"
      "  cuvil-bench run --model model.onnx --input x:1x3x224x224 --baseline torch");
  MeasureOptions& m = o->measure;
  cmd->add_option("--warmup", m.warmup_iterations, "warm-up runs first, at least")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--warmup-time", m.warmup_time_s, "seconds of warm-up runs, at least")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--min-samples,--min-repetitions", m.min_samples, "timed runs, at least")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--max-samples,--max-repetitions", m.max_samples, "timed runs, at most")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--min-time", m.min_time_s, "seconds of timed runs, at least")
      ->check(CLI::Range(0.0, 36000.0))
      ->capture_default_str();
  cmd->add_option("--max-noise", o->max_noise_pct,
                  "stop once the median is known to +- this many percent (95% CI half-width)")
      ->check(CLI::Range(0.001, 99.0))
      ->capture_default_str();
  cmd->add_option("--timeout", m.timeout_s,
                  "seconds of timed runs per rung after which a rung that has not reached "
                  "--max-noise stops and is marked noisy")
      ->check(CLI::Range(0.0, 360000.0))
      ->capture_default_str();
  cmd->add_option("--cpus", o->cpus,
                  "pin the measured threads to these CPUs, e.g. 0-3,6 (default threads: their "
                  "count)");
  cmd->add_flag("--remeasure-peak", o->remeasure_peak,
                "measure this machine's peak FLOP/s and bandwidth again instead of the cache");
  cmd->add_flag("-q,--quiet", o->quiet, "no progress line on stderr");
  cmd->add_option("--seed", o->seed, "seed for the random inputs");
  cmd->add_option("--probes", o->probes,
                  "observe extra iterations after the measurement: ops (per-op times), "
                  "perf:EVENT (counters, e.g. perf:task-clock; per op too with ops), "
                  "samples[:HZ] (native stack samples as folded stacks); comma-separated");
  cmd->add_option("--probe-iterations", o->probe_iterations,
                  "probe iterations per rung (auto: as many as measured, about "
                  "max(1 s, --min-time) of them, at least 3)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->default_str("auto");
  cmd->add_option("--probe-dir", o->probe_dir,
                  "directory for the samples' folded stacks (default: next to --out)");
  CLI::Option* baseline =
      cmd->add_option("--baseline", o->baseline,
                      "also measure PyTorch (eager and TorchScript-frozen) on the same inputs and "
                      "threads, interleaved with cuvil's samples: torch")
          ->check(CLI::IsMember({"torch"}));
  cmd->add_option("--torch-dtype", o->torch.dtype,
                  "PyTorch's precision for --baseline torch: fp32, or bf16 (module and inputs "
                  "cast to bfloat16, rows torch-eager-bf16 and torch-script-bf16; beside "
                  "--opt-level O3)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->needs(baseline)
      ->capture_default_str();
  cmd->add_option("--torch-module", o->torch.module_path,
                  "the PyTorch module for --baseline torch: a torch.save'd nn.Module (eager and "
                  "TorchScript) or a torch.jit.save'd file (default: <model>.pt beside --model)");
  cmd->add_option("--python", o->torch.python, "Python with PyTorch (for --baseline)")
      ->capture_default_str();
  add_db_option(*cmd, o->db, /*allow_disable=*/true);
  const std::string executable = "cuvil-bench";
  return [o, executable] { return run_suite(*o, executable); };
}

}  // namespace cuvil::bench::cli
