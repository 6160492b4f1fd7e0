// Each benchmark's history as the dashboard draws it: one point per stored run, read from the
// results store (reports/results_store.h), oldest first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/results_store.h"

namespace cuvil::reports::dashboard {

// The spread drawn around each point: this percentile range of the run's raw samples.
constexpr double kSpreadLowPercent = 10;
constexpr double kSpreadHighPercent = 90;

struct HistoryPoint {
  int64_t run_id = 0;
  int64_t benchmark_id = 0;  // the store's row, for its raw samples
  std::string date;          // the run.json context's date
  std::string commit;
  std::string host, cpu_model;
  std::string command_line;       // of the run that stored it
  std::string working_directory;  // where it ran (its run.json context); empty: not recorded
  int64_t samples = 0;
  double median_ns = 0;
  double low_ns = 0, high_ns = 0;  // kSpreadLowPercent..kSpreadHighPercent of the samples
  double gflops = 0, gbps = 0;
  double pct_peak_flops = 0, pct_peak_bw = 0;  // 0 when the machine's peak is unknown
  bool noisy = false;
  std::string config_hash;  // of the run's pipeline config; empty: the run recorded none
  // The previous point of the history ran another config (both hashes recorded): its hash, and
  // what changed (config_diff.h; empty when the stored files show no difference).
  bool config_changed = false;
  std::string previous_config_hash;
  std::vector<std::string> config_changes;
};

// One benchmark measured one way on one machine: points of different machines, targets or
// thread counts are not comparable, so each such combination is its own history.
struct BenchmarkHistory {
  std::string name, suite, rung, target;
  std::string host, cpu_model, machine_fingerprint;
  int threads = 0;
  std::vector<HistoryPoint> points;  // in the order the runs were stored
  // Unique among histories and safe as an HTML id and a file name.
  std::string key() const;
};

// Every history in the store, by suite (first stored first), then rung in measured order, then
// machine. A history spans config changes (a config-caused step is then visible in it); each
// point carries its config hash and, where it changed, what changed.
std::vector<BenchmarkHistory> load_histories(ResultsStore& store);

// The raw samples (ns) of one stored benchmark row.
std::vector<double> stored_samples(ResultsStore& store, int64_t benchmark_id);

}  // namespace cuvil::reports::dashboard
