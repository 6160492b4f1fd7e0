#include "tuner/trial.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench_suite/suites.h"
#include "bench_suite/verify.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "stats/order_statistics.h"

namespace cuvil::tuner {

namespace {

[[noreturn]] void inject(const std::string& fault) {
  if (fault == "crash") {
    raise(SIGSEGV);
  } else if (fault == "hang") {
    for (;;) pause();
  } else if (fault == "oom") {
    std::vector<std::unique_ptr<char[]>> hog;
    for (;;) hog.emplace_back(new char[64 << 20]);
  }
  throw UserError("unknown test fault '" + fault + "'");
}

}  // namespace

int checkpoint_index(int64_t samples) {
  int64_t at = kFirstCheckpointSamples;
  for (int c = 0; c + 1 < kStepsPerRung; ++c, at *= 2) {
    if (samples == at) return c;
  }
  return -1;
}

int checkpoint_step(size_t rung, int checkpoint) {
  return static_cast<int>(rung) * kStepsPerRung + checkpoint;
}

int rung_end_step(size_t rung) {
  return checkpoint_step(rung, kStepsPerRung - 1);
}

double objective_of(const std::vector<RungSamples>& rungs) {
  if (rungs.empty()) return 0;
  double log_sum = 0;
  for (const RungSamples& r : rungs) log_sum += std::log(r.median_ms);
  return std::exp(log_sum / static_cast<double>(rungs.size()));
}

namespace {
// The items of a "KIND" or "KIND@N,KIND@M" list that apply to trial `number`.
std::vector<std::string> test_hooks_for(const char* variable, int number) {
  std::vector<std::string> out;
  const char* env = std::getenv(variable);
  if (env == nullptr || *env == '\0') return out;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t at = item.find('@');
    if (at == std::string::npos) {
      out.push_back(item);
    } else if (std::atoi(item.c_str() + at + 1) == number) {
      out.push_back(item.substr(0, at));
    }
  }
  return out;
}
// Thrown out of the measurement loop when the parent prunes the trial at a checkpoint.
struct PrunedWithinRung {};

}  // namespace

std::string test_fault_for(int number) {
  const std::vector<std::string> hooks = test_hooks_for("CUVIL_TEST_TRIAL_FAULT", number);
  return hooks.empty() ? "" : hooks.front();
}

void test_kill_point(const std::string& point, int number) {
  for (const std::string& p : test_hooks_for("CUVIL_TEST_KILL_AT", number)) {
    if (p != point) continue;
    std::fflush(nullptr);
    std::fprintf(stderr, "TEST: killed at %s of trial %d\n", point.c_str(), number);
    kill(getpid(), SIGKILL);
  }
}

void run_trial(const TrialSpec& spec, ChildChannel& channel) {
  const bool slow = spec.fault == "slow";
  if (!spec.fault.empty() && spec.fault != "wrong" && !slow) inject(spec.fault);
  const bench::Suite& suite = spec.suite;
  CUVIL_CHECK(!spec.rungs.empty(), "a trial needs at least one rung");

  if (spec.verify) {
    // The gate: the configuration's outputs on the scaled-down topology of the first rung, with
    // the kernels and schedules its full-size graph runs.
    bench::VerifyResult check = bench::verify_scaled_down(suite, spec.rungs.front(), spec.config,
                                                          spec.threads, spec.seed, "trial");
    if (spec.fault == "wrong" && !check.outputs.empty()) {
      // TEST-ONLY: stands in for a miscompiling configuration.
      check.outputs.front().max_relative_error = 0.5;
      check.outputs.front().ok = false;
    }
    if (!check.ok()) {
      double worst = 0;
      for (const auto& o : check.outputs) worst = std::max(worst, o.max_relative_error);
      char text[96];
      std::snprintf(text, sizeof(text), "wrong result (max rel err %.3g > %.0e)", worst,
                    check.tolerance);
      throw UserError(text);
    }
    // Which kernels passed the gate: the parent records them with the trial.
    channel.progress({{"verified_kernels", check.kernels}, {"pinned", check.pinned}});
  }

  std::vector<RungSamples> done;
  std::vector<std::shared_ptr<const std::vector<float>>> weights;  // shared by later rungs
  for (size_t step = 0; step < spec.rungs.size(); ++step) {
    const bench::Rung& rung = spec.rungs[step];
    bench::Measurement m;
    double gil_free = -1;
    if (spec.through_python) {
      PythonRungMeasurement p =
          measure_through_python(suite.name, rung, spec.config, spec.python, spec.measure);
      m = std::move(p.measurement);
      gil_free = p.gil_free;
    } else {
      ir::Graph graph = suite.build(rung, /*tiny=*/false);
      const std::vector<ir::Tensor> inputs = ir::random_inputs(graph, spec.seed);
      passes::Compiled compiled = passes::compile(std::move(graph), spec.config, spec.threads);
      weights = compiled.plan.constants;
      runtime::Executor executor(std::move(compiled.plan));
      bench::Sampler sampler = bench::executor_sampler(executor, inputs);
      if (slow) {
        sampler = [run = std::move(sampler)] {
          bench::Sample s = run();
          usleep(1000 * 1000);  // TEST-ONLY: stands in for a configuration 1 s slower
          s.real_ns += 1e9;
          return s;
        };
      }
      // The running objective at each checkpoint: the parent may prune the trial there.
      const bench::ProgressFn checkpoints = [&](const bench::MeasureProgress& p) {
        // The rung's end is reported anyway, as its own step.
        const int c = p.samples_ns == nullptr || p.last ? -1 : checkpoint_index(p.samples);
        if (c < 0) return;
        std::vector<RungSamples> so_far = done;
        RungSamples partial;
        partial.name = rung.name;
        partial.samples_ns = *p.samples_ns;
        partial.median_ms = stats::median_of(partial.samples_ns) * 1e-6;
        so_far.push_back(partial);
        const nlohmann::json progress = {{"checkpoint", true},
                                         {"rung", rung.name},
                                         {"step", checkpoint_step(step, c)},
                                         {"samples_ns", partial.samples_ns},
                                         {"median_ms", partial.median_ms},
                                         {"intermediate", objective_of(so_far)}};
        if (!channel.progress(progress)) throw PrunedWithinRung{};
      };
      try {
        m = bench::measure(sampler, spec.measure, checkpoints);
      } catch (const PrunedWithinRung&) {
        return;  // the parent has the checkpoint's samples and value
      }
    }
    RungSamples r;
    r.gil_free = gil_free;
    r.name = rung.name;
    r.samples_ns = m.real_ns;
    r.median_ms = stats::median_of(m.real_ns) * 1e-6;
    r.noisy = m.noisy;
    done.push_back(r);
    const double intermediate = objective_of(done);
    nlohmann::json progress = {{"rung", r.name},
                               {"step", rung_end_step(step)},
                               {"samples_ns", r.samples_ns},
                               {"median_ms", r.median_ms},
                               {"noisy", r.noisy},
                               {"intermediate", intermediate}};
    if (r.gil_free >= 0) progress["gil_free"] = r.gil_free;
    const bool go = channel.progress(progress);
    if (!go) return;  // pruned: the parent already knows everything
  }
  channel.result({{"value", objective_of(done)}});
}

}  // namespace cuvil::tuner
