// run.json in Google Benchmark's JSON schema ("context" + "benchmarks"), so tools that read
// Google Benchmark output read cuvil's. Raw samples live under each entry's "cuvil" key.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_suite/measure.h"
#include "bench_suite/stats.h"

namespace cuvil::bench {

struct RungResult {
  std::string suite;
  std::string rung;
  int threads = 1;
  Measurement measurement;
  double declared_flops = 0;  // per iteration, 2 FLOPs per multiply-accumulate
  double declared_bytes = 0;  // per iteration, inputs + outputs of every step
  int64_t arena_bytes = 0;
  int64_t weight_bytes = 0;
  double compile_s = 0;
};

struct RunContext {
  std::string executable;
  std::string config_source;
  std::string config_hash;
  std::string target = "cpu";
};

nlohmann::json context_json(const RunContext& context);
// The iteration entries (one per repetition) and the mean/median/stddev/cv/min/max aggregates.
nlohmann::json benchmark_entries(const RungResult& result, int family_index);
// Writes atomically: a failed run leaves no half-written file.
void write_json_file(const std::string& path, const nlohmann::json& document);

}  // namespace cuvil::bench
