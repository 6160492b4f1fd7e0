// cuvil-bench serve: the compiled pipeline as a server, measured in the MLPerf LoadGen style
// (SingleStream, Offline, Server with Poisson arrivals and a search for the knee).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "bench_suite/environment.h"
#include "bench_suite/json_report.h"
#include "bench_suite/progress.h"
#include "bench_suite/serve/compiled_sut.h"
#include "bench_suite/serve/serve_report.h"
#include "bench_suite/serve/server_search.h"
#include "bench_suite/serve/workload.h"
#include "bench_suite/suites.h"
#include "reports/pictures/plot.h"
#include "reports/pictures/serve_curve.h"
#include "tools/cuvil_bench/commands.h"
#include "tools/cuvil_bench/run_context.h"

namespace cuvil::bench::cli {

namespace {

constexpr int kCalibrationBatches = 3;

struct ServeOptions {
  PipelineOptions pipeline;
  std::string rung;
  std::string scenario = "server";
  double target_p99_ms = 0;   // 0: the suite's MLPerf default
  double target_tpot_ms = 0;  // 0: the suite's MLPerf default
  serve::SearchOptions search;
  serve::WorkloadOptions workload;
  std::string out;
  bool quiet = false;
};

serve::LatencyTarget resolve_target(const ServeOptions& o, const Suite& suite, bool p99_given,
                                    bool tpot_given) {
  serve::LatencyTarget target = serve::default_target(suite);
  if (p99_given) {
    if (!(o.target_p99_ms > 0)) {
      throw UserError("--target-p99-ms must be > 0, got " + std::to_string(o.target_p99_ms));
    }
    target.p99_ms = o.target_p99_ms;
  }
  if (tpot_given) {
    if (!(o.target_tpot_ms > 0)) {
      throw UserError("--target-tpot-ms must be > 0, got " + std::to_string(o.target_tpot_ms));
    }
    target.tpot_p99_ms = o.target_tpot_ms;
  }
  return target;
}

void validate(const ServeOptions& o) {
  if (o.scenario != "single-stream" && o.scenario != "offline" && o.scenario != "server") {
    throw UserError("--scenario: unknown scenario '" + o.scenario +
                    "' (known: single-stream, offline, server)");
  }
  if (!(o.search.load.min_duration_s >= 0) || !std::isfinite(o.search.load.min_duration_s)) {
    throw UserError("--duration must be >= 0 seconds");
  }
  if (o.search.load.min_queries < 1) throw UserError("--min-queries must be >= 1");
  if (o.search.bisect_steps < 0) throw UserError("--bisect-steps must be >= 0");
}

Rung pick_rung(const Workload& w, const std::string& name) {
  if (name.find(',') != std::string::npos || name == "all") {
    throw UserError("--rung: serve takes one rung, got '" + name + "'");
  }
  const std::vector<Rung> rungs = select_rungs(w.ladder, name);
  if (rungs.empty()) throw UserError("--rung: suite " + w.suite.name + " has no default rung");
  return rungs.front();  // without --rung: the lightest default rung
}

std::string step_text(const serve::ScenarioResult& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "server: %s %.4g QPS done, p99 %.3f ms, %s", r.phase.c_str(),
                r.offered_qps, (r.ttft ? *r.ttft : r.latency).p99_ms,
                r.valid ? "ok" : r.verdict.c_str());
  return buf;
}

// The Server curve as reports/pictures/serve_curve.h draws it: the latency the target bounds
// (time to first token for a SUT with decode tokens).
std::string load_latency_picture(const serve::ServeReport& report) {
  reports::pictures::LoadLatencyCurve curve;
  curve.name = report.suite + "/" + report.rung;
  curve.slo_ms = report.target.p99_ms;
  curve.capacity_qps = report.calibration.capacity_qps();
  curve.knee = report.knee;
  curve.note = report.knee ? "" : report.note;
  for (const serve::ScenarioResult& r : report.results) {
    if (r.ttft) curve.latency = "time to first token";
    const serve::LatencyStats& l = r.ttft ? *r.ttft : r.latency;
    curve.steps.push_back({r.offered_qps, r.achieved_qps, l.p50_ms, l.p90_ms, l.p99_ms, r.queries,
                           r.valid, r.verdict});
  }
  return reports::pictures::load_latency_svg(curve);
}

int run_serve(ServeOptions o, bool p99_given, bool tpot_given) {
  validate(o);
  require_runnable_target(o.pipeline.target);
  const Workload loaded = resolve_workload(o.pipeline.workload);
  const Suite& suite = loaded.suite;
  const serve::LatencyTarget target = resolve_target(o, suite, p99_given, tpot_given);
  const std::string config_path = config_path_for(o.pipeline, suite);
  const passes::PipelineConfig config = load_config_for(o.pipeline, suite, config_path);
  const Rung rung = pick_rung(loaded, o.rung);
  const serve::QueryWorkload workload = serve::query_workload(suite, rung, o.workload);
  const int threads = resolved_threads(o.pipeline);
  const RunContext context = measurement_context("cuvil-bench", config_path, config,
                                                 o.pipeline.target, threads, "latencies");

  ProgressLine progress(stderr, o.quiet);
  std::optional<CompileProgress> compiling(std::in_place, progress,
                                           "serve: " + suite.name + "/" + rung.name);
  compiling->stage("building and lowering");
  serve::CompiledSut sut(suite, workload, config, threads, o.search.load.seed);
  compiling.reset();
  serve::RealClock clock;
  serve::ServeReport report;
  report.suite = suite.name;
  report.rung = rung.name;
  report.scenario = o.scenario;
  report.query = workload.summary;
  report.target = target;
  report.load = o.search.load;
  report.threads = threads;
  progress.update("serve: calibrating the service time", /*force=*/true);
  report.calibration = serve::calibrate(sut, clock, kCalibrationBatches);
  progress.update("serve: " + o.scenario + " running", /*force=*/true);

  if (o.scenario == "single-stream") {
    report.results.push_back(serve::run_single_stream(sut, clock, o.search.load));
  } else if (o.scenario == "offline") {
    // Enough queries to fill the minimum duration at the calibrated capacity, in whole batches.
    const int64_t wanted =
        std::max<int64_t>(o.search.load.min_queries,
                          static_cast<int64_t>(std::ceil(o.search.load.min_duration_s *
                                                         report.calibration.capacity_qps())));
    const int64_t queries = (wanted + workload.batch - 1) / workload.batch * workload.batch;
    report.results.push_back(serve::run_offline(sut, clock, queries));
  } else {
    o.search.on_step = [&progress](const serve::ScenarioResult& r) {
      progress.update(step_text(r), /*force=*/true);
    };
    serve::ServerCurve curve =
        serve::search_server(sut, clock, report.calibration, target, o.search);
    report.results = std::move(curve.steps);
    report.knee = curve.knee;
    report.note = curve.note;
  }
  progress.clear();
  report.warnings = serve::report_warnings(report);
  serve::print_table(stdout, report);
  for (const std::string& w : report.warnings) print_warning(w);
  if (!o.out.empty()) {
    nlohmann::json document;
    document["context"] = context_json(context);
    document["serve"] = serve::report_json(report);
    write_json_file(o.out, document);
    std::printf("wrote %s\n", o.out.c_str());
    if (o.scenario == "server") {
      const std::string picture = reports::pictures::beside(o.out, ".load-latency.svg");
      reports::pictures::write_picture(picture,
                                       reports::pictures::svg_file(load_latency_picture(report)));
      std::printf("wrote %s\n", picture.c_str());
    }
  }
  return 0;
}

}  // namespace

Action add_serve_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "MLPerf LoadGen-style serving: single-stream, offline, or server (Poisson arrivals, search "
      "for the highest QPS whose p99 meets the target)");
  auto o = std::make_shared<ServeOptions>();
  add_pipeline_options(*cmd, o->pipeline);
  cmd->add_option("--rung", o->rung, "the rung to serve (default: the suite's lightest)");
  cmd->add_option("--scenario", o->scenario, "single-stream | offline | server");
  CLI::Option* p99 =
      cmd->add_option("--target-p99-ms", o->target_p99_ms,
                      "p99 latency bound (Llama: time to first token); 0: MLPerf's, resnet50 15, "
                      "llama3-8b 2000, sdxl 20000");
  CLI::Option* tpot =
      cmd->add_option("--target-tpot-ms", o->target_tpot_ms,
                      "llama3-8b: p99 time-per-output-token bound (0: MLPerf's, 100)");
  cmd->add_option("--duration", o->search.load.min_duration_s,
                  "seconds each run (each server step) lasts, at least");
  cmd->add_option("--min-queries", o->search.load.min_queries,
                  "queries each run (each server step) issues, at least");
  cmd->add_option("--bisect-steps", o->search.bisect_steps,
                  "server: bisections between the last good and first bad QPS");
  cmd->add_option("--decode-tokens", o->workload.decode_tokens,
                  "llama3-8b: output tokens after the first, per query");
  cmd->add_option("--unet-steps", o->workload.unet_steps, "sdxl: UNet denoising steps per query");
  cmd->add_option("--seed", o->search.load.seed, "seed for the arrivals and the random inputs");
  cmd->add_option("-o,--out", o->out,
                  "write the latency-vs-throughput curve as JSON; with --scenario server also "
                  "the picture OUT.load-latency.svg beside it (for OUT.json)");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench serve --suite resnet50 --scenario single-stream --duration 2\n"
      "  cuvil-bench serve --suite resnet50 --target-p99-ms 30 -o serve.json");
  cmd->add_flag("-q,--quiet", o->quiet, "no progress line on stderr");
  return [o, p99, tpot] { return run_serve(*o, p99->count() > 0, tpot->count() > 0); };
}

}  // namespace cuvil::bench::cli
