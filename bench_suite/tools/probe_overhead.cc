// cuvil-probe-overhead: what the probes cost, as the ratio of a rung's time with a probe on to
// its time with probes off, measured side by side in one process. Each round runs every mode
// (off, ops, counters, ops+counters, samples) for a block of iterations, in an order that rotates
// between rounds so no mode always follows another; a round's ratio is its mode's median over
// the same round's "off" median, which cancels drift (other load, thermal state) slower than a
// round. The figure is the median of the rounds' ratios with its 95% bootstrap interval.
// Usage: cuvil-probe-overhead [--suite resnet50] [--rung b1] [--rounds 15] [--iterations 10]
//                             [--threads N] [--events task-clock,page-faults] [--hz 997]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bench_suite/op_profile.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "probes/clock.h"
#include "probes/perf_counters.h"
#include "probes/stack_sampler.h"
#include "runtime/executor.h"
#include "stats/bootstrap.h"
#include "stats/summary.h"

namespace {

using namespace cuvil;

struct Options {
  std::string suite = "resnet50";
  std::string rung = "b1";
  int rounds = 15;
  int iterations = 10;
  int threads = 0;
  std::string events = "task-clock,page-faults";
  int hz = 997;
};

enum class Mode { off, ops, counters, ops_counters, samples };
constexpr Mode kModes[] = {Mode::off, Mode::ops, Mode::counters, Mode::ops_counters, Mode::samples};

const char* name_of(Mode m) {
  switch (m) {
    case Mode::off:
      return "off";
    case Mode::ops:
      return "ops";
    case Mode::counters:
      return "counters (run level)";
    case Mode::ops_counters:
      return "ops+counters (per op)";
    case Mode::samples:
      return "samples";
  }
  return "?";
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int run(const Options& o) {
  const bench::Suite& suite = bench::find_suite(o.suite);
  const std::vector<bench::Rung> rungs =
      bench::select_rungs(bench::load_suite_ladder(suite), o.rung);
  const int threads = o.threads > 0
                          ? o.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const passes::PipelineConfig config =
      passes::load_cuvilpass(bench::default_config_path(suite, "cpu"));
  ir::Graph graph = suite.build(rungs.at(0), /*tiny=*/false);
  const std::vector<ir::Tensor> inputs = ir::random_inputs(graph, 1);
  runtime::Executor executor(passes::compile(std::move(graph), config, threads).plan);
  const size_t steps = executor.plan().steps.size();

  probes::PerfCounters counters = probes::PerfCounters::open(split(o.events));
  counters.attach_threads();
  bench::OpProfiler ops(steps);
  const bench::CounterSnapshotFn ops_counted_reader =
      [&counters](std::vector<bench::CounterSnapshot>& out) {
        const std::vector<probes::CounterReading> readings = counters.read();
        out.resize(readings.size());
        for (size_t i = 0; i < readings.size(); ++i) {
          out[i] = {readings[i].raw, readings[i].time_enabled_ns, readings[i].time_running_ns};
        }
      };
  bench::OpProfiler ops_counted(steps, ops_counted_reader);
  ops.reserve(int64_t{o.rounds} * o.iterations);
  ops_counted.reserve(int64_t{o.rounds} * o.iterations);

  const auto block = [&](Mode mode) {
    std::optional<probes::StackSampler> sampler;
    if (mode == Mode::samples) sampler.emplace(probes::StackSampler::start(o.hz));
    if (mode == Mode::counters || mode == Mode::ops_counters) counters.start();
    executor.set_observer(mode == Mode::ops            ? &ops
                          : mode == Mode::ops_counters ? &ops_counted
                                                       : nullptr);
    std::vector<double> ns;
    for (int i = 0; i < o.iterations; ++i) {
      const int64_t t0 = probes::now_ns();
      executor.run(inputs);
      ns.push_back(static_cast<double>(probes::now_ns() - t0));
    }
    executor.set_observer(nullptr);
    if (mode == Mode::counters || mode == Mode::ops_counters) counters.stop();
    if (sampler) sampler->stop();
    return stats::median_of(ns);
  };

  std::printf(
      "probe overhead: %s/%s, %d thread(s), %zu steps, %d rounds x %d iterations per mode\n",
      suite.name.c_str(), rungs[0].name.c_str(), threads, steps, o.rounds, o.iterations);
  std::printf("counters: %s; samples at %d Hz; region clock %s\n", o.events.c_str(), o.hz,
              probes::region_clock_name().c_str());
  for (int i = 0; i < o.iterations; ++i) executor.run(inputs);  // warm-up
  constexpr size_t kModeCount = std::size(kModes);
  std::vector<std::vector<double>> medians(kModeCount);
  std::vector<std::vector<double>> ratios(kModeCount);
  for (int r = 0; r < o.rounds; ++r) {
    std::vector<double> round(kModeCount);
    for (size_t k = 0; k < kModeCount; ++k) {
      const size_t m = (k + static_cast<size_t>(r)) % kModeCount;
      round[m] = block(kModes[m]);
    }
    for (size_t m = 0; m < kModeCount; ++m) {
      medians[m].push_back(round[m]);
      ratios[m].push_back(round[m] / round[0]);
    }
    std::fprintf(stderr, "\rround %d/%d", r + 1, o.rounds);
  }
  std::fprintf(stderr, "\n");
  std::printf("%-24s %12s %10s %22s\n", "mode", "median ms", "ratio", "95% CI of the ratio");
  for (size_t m = 0; m < kModeCount; ++m) {
    const stats::Interval ci = stats::bootstrap_median_ci(
        ratios[m], stats::kConfidenceLevel, stats::kBootstrapResamples, stats::kBootstrapSeed);
    std::printf("%-24s %12.3f %10.4f       [%.4f, %.4f]\n", name_of(kModes[m]),
                stats::median_of(medians[m]) * 1e-6, stats::median_of(ratios[m]), ci.low, ci.high);
  }
  std::printf(
      "ratio: the mode's median over the same round's probes-off median; median of %d "
      "rounds, percentile bootstrap interval\n",
      o.rounds);

  // The observer's own cost, without kernels: a figure that load hardly moves (the median of
  // many passes), where the ratios above need a quiet machine to resolve 1%.
  const double off_ns = stats::median_of(medians[0]);
  const auto per_step_ns = [&](bench::OpProfiler& profiler) {
    std::vector<double> passes;
    for (int b = 0; b < 51; ++b) {
      const int64_t t0 = probes::now_ns();
      profiler.on_run_begin();
      for (size_t i = 0; i < steps; ++i) {
        profiler.on_step_begin(i);
        profiler.on_step_end(i);
      }
      profiler.on_run_end();
      passes.push_back(static_cast<double>(probes::now_ns() - t0) / static_cast<double>(steps));
    }
    return stats::median_of(passes);
  };
  bench::OpProfiler bare_ops(steps);
  bench::OpProfiler bare_counted(steps, ops_counted_reader);
  counters.start();
  const double ops_step = per_step_ns(bare_ops);
  const double counted_step = per_step_ns(bare_counted);
  counters.stop();
  std::printf("observer cost per step, kernels left out (median of 51 passes over %zu steps):\n",
              steps);
  std::printf("  ops %.0f ns, ops+counters %.0f ns: %.4f%% and %.3f%% of the probes-off median\n",
              ops_step, counted_step, 100.0 * ops_step * static_cast<double>(steps) / off_ns,
              100.0 * counted_step * static_cast<double>(steps) / off_ns);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cuvil-probe-overhead: the cost of run --probes, side by side with probes off"};
  Options o;
  app.add_option("--suite", o.suite, "suite")->capture_default_str();
  app.add_option("--rung", o.rung, "rung")->capture_default_str();
  app.add_option("--rounds", o.rounds, "rounds (each runs every mode once)")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "iterations per mode per round")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "threads (default: every core)");
  app.add_option("--events", o.events, "counters of the counter modes")->capture_default_str();
  app.add_option("--hz", o.hz, "sampling rate of the samples mode")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const cuvil::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
