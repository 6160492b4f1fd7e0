// cuvil-bench run: compile the suite's pipeline and measure each rung of its load ladder.
#include <cstdio>
#include <memory>

#include "bench_suite/cli/commands.h"
#include "bench_suite/json_report.h"
#include "bench_suite/measure.h"
#include "bench_suite/stats.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "passes/ir/error.h"
#include "passes/pipeline.h"
#include "probes/clock.h"
#include "runtime/executor.h"

namespace cuvil::bench::cli {

namespace {

struct RunOptions {
  PipelineOptions pipeline;
  std::string rungs;
  std::string out;
  MeasureOptions measure;
  uint64_t seed = 1;
  DbOptions db;
};

// `weights` keeps this rung's constants alive after it ends, so the next rung of the suite
// shares them instead of generating them again (ir::materialize).
RungResult run_rung(const Suite& suite, const Rung& rung, const passes::PipelineConfig& config,
                    const RunOptions& o, int threads,
                    std::vector<std::shared_ptr<const std::vector<float>>>* weights) {
  RungResult result;
  result.suite = suite.name;
  result.rung = rung.name;
  result.threads = threads;
  const int64_t t0 = probes::now_ns();
  ir::Graph graph = suite.build(rung, /*tiny=*/false);
  result.weight_bytes = graph.constant_bytes();
  const std::vector<ir::Tensor> inputs = ir::random_inputs(graph, o.seed);
  passes::Compiled compiled = passes::compile(std::move(graph), config, threads);
  result.declared_flops = compiled.plan.total_flops();
  result.declared_bytes = compiled.plan.total_bytes();
  result.arena_bytes = compiled.plan.arena_bytes;
  *weights = compiled.plan.constants;
  runtime::Executor executor(std::move(compiled.plan));
  result.compile_s = static_cast<double>(probes::now_ns() - t0) * 1e-9;
  result.measurement = measure(executor, inputs, o.measure);
  return result;
}

int run_suite(const RunOptions& o, const std::string& executable) {
  require_runnable_target(o.pipeline.target);
  const Suite& suite = find_suite(o.pipeline.suite);
  const std::string config_path =
      o.pipeline.config.empty() ? default_config_path(suite, o.pipeline.target) : o.pipeline.config;
  const passes::PipelineConfig config = passes::load_cuvilpass(config_path);
  const std::vector<Rung> rungs = select_rungs(load_suite_ladder(suite), o.rungs);
  const int threads = resolved_threads(o.pipeline);

  std::printf("run %s with %s (hash %s), %d thread(s), target %s\n", suite.name.c_str(),
              config_path.c_str(), passes::config_hash(config).c_str(), threads,
              o.pipeline.target.c_str());
  std::printf("%-22s %5s %11s %11s %11s %6s %9s %9s %10s %9s\n", "rung", "reps", "median ms",
              "min ms", "max ms", "cv %", "GFLOP/s", "GB/s", "arena MiB", "setup s");
  RunContext context{executable, config_path, passes::config_hash(config), o.pipeline.target};
  nlohmann::json document;
  document["context"] = context_json(context);
  document["benchmarks"] = nlohmann::json::array();
  int family = 0;
  std::vector<std::shared_ptr<const std::vector<float>>> weights;
  for (const Rung& rung : rungs) {
    const RungResult r = run_rung(suite, rung, config, o, threads, &weights);
    const Summary s = summarize(r.measurement.real_ns);
    const double median_s = s.median * 1e-9;
    std::printf("%-22s %5lld %11.3f %11.3f %11.3f %6.2f %9.1f %9.2f %10.1f %9.2f\n",
                (suite.name + "/" + rung.name).c_str(), static_cast<long long>(s.count),
                s.median * 1e-6, s.min * 1e-6, s.max * 1e-6, s.cv * 100.0,
                r.declared_flops / median_s * 1e-9, r.declared_bytes / median_s * 1e-9,
                static_cast<double>(r.arena_bytes) / (1 << 20), r.compile_s);
    std::fflush(stdout);
    for (auto& entry : benchmark_entries(r, family++)) document["benchmarks"].push_back(entry);
  }
  if (!o.out.empty()) {
    write_json_file(o.out, document);
    std::printf("wrote %s\n", o.out.c_str());
  }
  store_run_document(o.db, document);
  return 0;
}

}  // namespace

Action add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("run", "measure the suite's load ladder");
  auto o = std::make_shared<RunOptions>();
  add_pipeline_options(*cmd, o->pipeline);
  cmd->add_option("--rungs", o->rungs,
                  "comma-separated rung names, or all (default: the default CPU rungs)");
  cmd->add_option("--out", o->out, "write results as Google Benchmark JSON");
  cmd->add_option("--warmup", o->measure.warmup, "untimed iterations first")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--min-repetitions", o->measure.min_repetitions, "timed iterations, at least")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-repetitions", o->measure.max_repetitions, "timed iterations, at most")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--min-time", o->measure.min_time_s, "seconds of timed iterations, at least")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--seed", o->seed, "seed for the random inputs");
  add_db_option(*cmd, o->db, /*allow_disable=*/true);
  const std::string executable = "cuvil-bench";
  return [o, executable] {
    if (o->measure.max_repetitions < o->measure.min_repetitions) {
      throw UserError("--max-repetitions must be >= --min-repetitions");
    }
    return run_suite(*o, executable);
  };
}

}  // namespace cuvil::bench::cli
