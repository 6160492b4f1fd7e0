// Reading run.json documents (Google Benchmark's schema) into per-benchmark raw samples. The
// same reader serves cuvil's own output and plain Google Benchmark JSON: raw samples come from
// the median entry's "cuvil.real_ns" when present, else from the "iteration" entries'
// real_time, else from the median (or mean) aggregate alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cuvil::reports {

struct BenchmarkSamples {
  std::string name;   // the run name without aggregate suffix, e.g. "resnet50/b1"
  std::string suite;  // the part of name before the first '/', or the whole name
  std::string rung;   // the part after it, or empty
  std::vector<double> real_ns;
  std::vector<double> cpu_ns;  // empty when the document has none
  int threads = 1;
  double gflops = 0;  // the median entry's "GFLOP/s" counter, 0 when absent
  double gbps = 0;    // the median entry's "GB/s" counter, 0 when absent
  bool noisy = false;
};

// Reads and parses a run.json file; a missing file, malformed JSON or a number beyond a
// double's range is a UserError (reports/json_input.h).
nlohmann::json read_run_json(const std::string& path);

// The benchmarks of a document in order of first appearance. `source` names the document in
// error messages. Every field read is checked: a document without a "benchmarks" array, an entry
// without a name, a field of the wrong type (a run_type that is not a string, an error_occurred
// that is not a boolean), a time that is not a finite non-negative number (in ns, too) or threads
// that are not a positive int is a UserError "SOURCE: /json/pointer: message". Entries with
// "error_occurred" true are skipped.
std::vector<BenchmarkSamples> benchmarks_of(const nlohmann::json& document,
                                            const std::string& source);

// The string at the first of `pointers` (JSON pointers, e.g. "/cuvil/git_commit") that holds a
// string in `j`, or empty. Fields other modules add over time are read this way, defensively.
std::string first_string(const nlohmann::json& j, std::initializer_list<const char*> pointers);

}  // namespace cuvil::reports
