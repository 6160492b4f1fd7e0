// cuvil-bench probes: what this machine lets cuvil observe. Each generic perf event (counted, or
// why not), the PMUs libpfm4 recognises, the clocks, whether stacks can be sampled with
// perf_event call chains, and whether CUPTI can trace a GPU (or why not).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "probes/clock.h"
#include "probes/perf_counters.h"
#include "probes/stack_sampler.h"
#include "tools/cuvil_bench/commands.h"
#if CUVIL_HAVE_CUPTI
#include "probes/cupti/cupti_library.h"
#endif

namespace cuvil::bench::cli {

namespace {

struct ProbesOptions {
  std::vector<std::string> events;  // extra events to try, as users name them
  bool json = false;
  bool clocks = true;
};

struct GpuStatus {
  bool compiled = false;
  bool available = false;
  std::string reason, library;
  int devices = 0;
};

GpuStatus gpu_status() {
  GpuStatus status;
#if CUVIL_HAVE_CUPTI
  status.compiled = true;
  const probes::cupti::CuptiAvailability availability = probes::cupti::cupti_availability();
  status.available = availability.available;
  status.reason = availability.reason;
  status.library = availability.library_path;
  status.devices = availability.device_count;
#else
  status.reason = "this build has no CUDA toolkit, so CUPTI is not compiled in";
#endif
  return status;
}

// The user's extra events: each opened alone; an unknown name is a reading with the reason too,
// since this command reports rather than fails.
std::vector<probes::CounterReading> try_events(const std::vector<std::string>& names) {
  std::vector<probes::CounterReading> readings;
  for (const std::string& name : names) {
    try {
      const probes::PerfCounters counters = probes::PerfCounters::open({name});
      readings.push_back(counters.read().front());
    } catch (const UserError& error) {
      probes::CounterReading reading;
      reading.name = name;
      reading.reason = error.what();
      readings.push_back(std::move(reading));
    }
  }
  return readings;
}

int print_json(const ProbesOptions& options) {
  nlohmann::json out;
  const int paranoid = probes::perf_event_paranoid();
  out["perf_event_paranoid"] = paranoid;
  out["paranoid_explanation"] = probes::paranoid_explanation(paranoid);
  nlohmann::json events = nlohmann::json::array();
  for (const probes::EventDescription& event : probes::list_events()) {
    nlohmann::json row = {{"name", event.name},
                          {"kind", event.kind},
                          {"description", event.description},
                          {"supported", event.supported}};
    if (!event.supported) row["reason"] = event.reason;
    events.push_back(row);
  }
  out["events"] = events;
  nlohmann::json requested = nlohmann::json::array();
  for (const probes::CounterReading& reading : try_events(options.events)) {
    nlohmann::json row = {{"name", reading.name}, {"supported", reading.supported}};
    if (!reading.supported) row["reason"] = reading.reason;
    requested.push_back(row);
  }
  out["requested_events"] = requested;
  nlohmann::json pmus = nlohmann::json::array();
  for (const probes::PmuDescription& pmu : probes::detected_pmus()) {
    pmus.push_back({{"name", pmu.name},
                    {"description", pmu.description},
                    {"events", pmu.event_count},
                    {"hardware", pmu.hardware}});
  }
  out["pmus"] = pmus;
  const probes::SamplingSupport sampling = probes::sampling_support();
  out["sampling"] = {{"perf_event_callchain", sampling.perf_event_callchain},
                     {"reason", sampling.reason},
                     {"method", sampling.automatic_method},
                     {"fallback_reason", sampling.automatic_fallback_reason}};
  if (options.clocks) out["clocks"] = probes::clock_report();
  const GpuStatus gpu = gpu_status();
  out["cupti"] = {{"compiled", gpu.compiled},
                  {"available", gpu.available},
                  {"reason", gpu.reason},
                  {"library", gpu.library},
                  {"devices", gpu.devices}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int print_text(const ProbesOptions& options) {
  const int paranoid = probes::perf_event_paranoid();
  std::printf("Counters (perf_event_open, names encoded by libpfm4)\n");
  std::printf("  %s\n", probes::paranoid_explanation(paranoid).c_str());
  // Most unsupported events share one reason: each distinct one is printed once, below the table.
  std::vector<std::string> reasons;
  auto footnote = [&reasons](std::string reason, const std::string& name) {
    for (size_t at = reason.find(name); at != std::string::npos; at = reason.find(name, at + 7)) {
      reason.replace(at, name.size(), "<event>");
    }
    const auto found = std::find(reasons.begin(), reasons.end(), reason);
    if (found != reasons.end()) return static_cast<size_t>(found - reasons.begin()) + 1;
    reasons.push_back(reason);
    return reasons.size();
  };
  int supported = 0, total = 0;
  std::vector<probes::CounterReading> countable;  // stand-ins: which derived metrics are possible
  for (const probes::EventDescription& event : probes::list_events()) {
    ++total;
    if (event.supported) {
      ++supported;
      probes::CounterReading reading;
      reading.name = event.name;
      reading.supported = true;
      reading.value = 1;
      countable.push_back(reading);
      std::printf("  %-22s %-9s yes  %s\n", event.name.c_str(), event.kind.c_str(),
                  event.description.c_str());
    } else {
      std::printf("  %-22s %-9s no   [%zu]\n", event.name.c_str(), event.kind.c_str(),
                  footnote(event.reason, event.name));
    }
  }
  for (size_t i = 0; i < reasons.size(); ++i) {
    std::printf("  [%zu] %s\n", i + 1, reasons[i].c_str());
  }
  std::printf("  %d of %d generic events countable here\n", supported, total);
  std::string derived;
  for (const probes::DerivedMetric& metric : probes::derived_metrics(countable)) {
    derived += (derived.empty() ? "" : ", ") + metric.name;
  }
  std::printf("  derived metrics possible: %s\n",
              derived.empty() ? "none (each needs two hardware events)" : derived.c_str());
  const std::vector<probes::CounterReading> requested = try_events(options.events);
  if (!requested.empty()) {
    std::printf("\nRequested events\n");
    for (const probes::CounterReading& reading : requested) {
      std::printf("  %-30s %s\n", reading.name.c_str(),
                  reading.supported ? "yes" : ("no   " + reading.reason).c_str());
    }
  }

  std::printf("\nPMUs libpfm4 recognises\n");
  for (const probes::PmuDescription& pmu : probes::detected_pmus()) {
    std::printf("  %-10s %-34s %4d events%s\n", pmu.name.c_str(), pmu.description.c_str(),
                pmu.event_count, pmu.hardware ? "  (hardware)" : "");
  }

  if (options.clocks) {
    std::printf("\nClocks\n");
    std::istringstream lines(probes::clock_report());
    std::string line;
    while (std::getline(lines, line)) std::printf("  %s\n", line.c_str());
  }

  const probes::SamplingSupport sampling = probes::sampling_support();
  std::printf("\nStack sampling\n");
  std::printf("  perf_event call chains: %s\n",
              sampling.perf_event_callchain ? "permitted" : ("no: " + sampling.reason).c_str());
  std::printf("  run --probes samples uses: %s\n", sampling.automatic_method.c_str());
  if (!sampling.automatic_fallback_reason.empty()) {
    std::printf("    because %s\n", sampling.automatic_fallback_reason.c_str());
  }

  const GpuStatus gpu = gpu_status();
  std::printf("\nGPU (CUPTI)\n");
  if (gpu.available) {
    std::printf("  available: %d device(s), %s\n", gpu.devices, gpu.library.c_str());
  } else {
    std::printf("  unavailable: %s\n", gpu.reason.c_str());
    if (!gpu.library.empty()) std::printf("  libcupti found at %s\n", gpu.library.c_str());
  }
  return 0;
}

}  // namespace

Action add_probes_command(CLI::App& app) {
  auto options = std::make_shared<ProbesOptions>();
  CLI::App* command = app.add_subcommand(
      "probes", "what this machine can count, sample and trace (perf events, clocks, CUPTI)");
  command
      ->add_option("--events", options->events,
                   "also try these events, as perf or libpfm4 name them (comma-separated)")
      ->delimiter(',');
  command->add_flag("--json", options->json, "print JSON instead of text");
  command->footer(
      "Examples:\n"
      "  cuvil-bench probes\n"
      "  cuvil-bench probes --json");
  command->add_flag("!--no-clocks", options->clocks, "skip measuring the clocks (~10 ms)");
  return [options] { return options->json ? print_json(*options) : print_text(*options); };
}

}  // namespace cuvil::bench::cli
