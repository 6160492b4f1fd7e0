// cuvil's own record of every trial, readable without Python: one JSON object per line,
// appended when a trial ends (`<study>.trials.jsonl` beside an SQLite study). Fields: number,
// state (complete | pruned | fail), reason, value (the objective, ms), values (the sampled
// dimensions), config_hash, rungs (name, every sample in ns, median ms), baseline, retry_of,
// study, suite, sampler, machine (fingerprint), commit, started/finished (UTC).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cuvil::tuner {

struct RungSamples {
  std::string name;
  std::vector<double> samples_ns;
  double median_ms = 0;
  // --scenario python: the application thread's rate beside the model over its rate alone
  // (1: the GIL was left to it entirely); -1 when measured in-process.
  double gil_free = -1;
  // The harness flagged the measurement NOISY: its median not known to --max-noise, or the
  // machine's speed changed while it was measured (bench_suite/stopping_rule.h).
  bool noisy = false;
};

struct TrialRecord {
  int number = -1;
  std::string state;   // complete | pruned | fail
  std::string reason;  // why it failed or was pruned
  double value = 0;    // the objective (ms) when complete; the last intermediate when pruned
  bool has_value = false;
  nlohmann::json values = nlohmann::json::object();
  std::string config_hash;
  std::vector<RungSamples> rungs;
  bool baseline = false;  // the default configuration, tried first
  int retry_of = -1;      // the interrupted trial this one retries
  std::string study, suite, sampler, objective;
  nlohmann::json machine = nlohmann::json::object();
  std::string commit;
  std::string started, finished;
  // The kernels the verification gate ran (counts) and how many nodes it pinned to the
  // full-size graph's choices; empty when the trial was not verified.
  nlohmann::json verified_kernels = nlohmann::json::object();
  int64_t pinned = 0;
};

// The rungs of a trial the harness flagged NOISY, comma-separated; empty when none.
std::string noisy_rungs(const TrialRecord& t);

nlohmann::json to_json(const TrialRecord& record);
// A UserError "field 'F': ..." (no file or line: the caller adds where the record came from) when
// a complete or pruned trial's value, a rung's median or a sample is not a positive finite time.
TrialRecord record_from_json(const nlohmann::json& j);
// Appends one line and flushes it (a killed tuner loses at most the trial in flight).
void append_trial(const std::string& path, const TrialRecord& record);
// Every record; a malformed line is a UserError "PATH:LINE: ..." (a bad time names its field). A
// torn last line (the writer was killed mid-write) is skipped.
std::vector<TrialRecord> read_trial_log(const std::string& path);

// What a measurement depends on: CPU model, logical cores, threads used, host, kernel.
nlohmann::json machine_fingerprint(int threads);
// The source tree's commit (with "-dirty" when it has local changes), or "unknown".
std::string source_commit();
std::string utc_now();

}  // namespace cuvil::tuner
