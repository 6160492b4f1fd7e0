#include "bench_suite/serve/server_search.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"

namespace cuvil::bench::serve {

namespace {

std::string qps_text(double qps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g QPS", qps);
  return buf;
}

}  // namespace

ServerCurve search_server(Sut& sut, Clock& clock, const Calibration& calibration,
                          const LatencyTarget& target, const SearchOptions& options) {
  if (!(options.start_fraction > 0)) throw UserError("start fraction must be > 0");
  if (!(options.step_factor > 1)) throw UserError("step factor must be > 1");
  if (options.bisect_steps < 0) throw UserError("bisection steps must be >= 0");
  CUVIL_CHECK(calibration.capacity_qps() > 0, "calibration without a service time");
  ServerCurve curve;
  curve.calibration = calibration;
  const std::optional<std::string> unreachable = unreachable_target(calibration, sut, target);

  auto run_step = [&](double qps, const char* phase) -> const ScenarioResult& {
    ScenarioResult r = run_server(sut, clock, qps, options.load);
    r.phase = phase;
    judge(r, target);
    if (options.on_step) options.on_step(r);
    curve.steps.push_back(std::move(r));
    return curve.steps.back();
  };

  // Step up to saturation, whatever the steps' verdicts: the whole curve is worth showing, and
  // a miss below the knee from a noisy step does not end the search early. Except when the
  // calibration says no load can meet the target and the lightest step confirms it: more load
  // only adds queueing to a lone batch's time, so the steps above it cannot meet it either.
  double qps = options.start_fraction * calibration.capacity_qps();
  bool saturated = false;
  for (int i = 0; i < options.max_steps && !saturated; ++i, qps *= options.step_factor) {
    const ScenarioResult& step = run_step(qps, "step");
    saturated = step.load >= 1.0;
    if (unreachable && i == 0 && !step.valid) {
      curve.note = "no knee: the " + *unreachable + "; the lightest step (" +
                   qps_text(step.offered_qps) +
                   ") missed it too, so the search stopped there: no offered load can meet it";
      return curve;
    }
  }
  // Bracket the knee: the highest rate that met the target, and the lowest miss above it.
  double good = 0, bad = 0;
  for (const ScenarioResult& s : curve.steps) {
    if (s.valid) good = std::max(good, s.offered_qps);
  }
  for (const ScenarioResult& s : curve.steps) {
    if (!s.valid && s.offered_qps > good && (bad == 0 || s.offered_qps < bad)) bad = s.offered_qps;
  }
  if (good == 0 && unreachable) {
    curve.note = "no knee: the " + *unreachable + "; no offered load can meet it";
    return curve;
  }
  if (bad == 0) {
    curve.note = "every step up to " + qps_text(good) + " met the target (" +
                 std::to_string(options.max_steps) + " steps): the knee is above it";
  } else {
    // Below the lowest step when even that one missed (good == 0).
    for (int i = 0; i < options.bisect_steps; ++i) {
      const double mid = 0.5 * (good + bad);
      (run_step(mid, "bisect").valid ? good : bad) = mid;
    }
  }
  for (size_t i = 0; i < curve.steps.size(); ++i) {
    const ScenarioResult& s = curve.steps[i];
    if (s.valid && s.offered_qps == good) curve.knee = i;
  }
  if (!curve.knee) {
    curve.note = "no knee: even " + qps_text(bad) + " misses the target";
  } else if (bad > 0) {
    curve.note = "knee between " + qps_text(good) + " (meets) and " + qps_text(bad) + " (misses)";
  }
  return curve;
}

}  // namespace cuvil::bench::serve
