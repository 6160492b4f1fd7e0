// Small run.json documents in cuvil's layout (Google Benchmark schema, raw samples under the
// median entry's "cuvil" key) and a scratch folder, for the reports tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cuvil::reports::testing {

struct FixtureBenchmark {
  std::string name;
  std::vector<double> real_ns;
};

inline nlohmann::json run_document(const std::vector<FixtureBenchmark>& benchmarks,
                                   const std::string& commit = "abc123") {
  nlohmann::json doc;
  doc["context"] = {{"date", "2024-05-01T10:00:00+0000"},
                    {"host_name", "testhost"},
                    {"num_cpus", 2},
                    {"mhz_per_cpu", 3000.0},
                    {"cuvil",
                     {{"target", "cpu"},
                      {"config", "configs/none.cuvilpass"},
                      {"config_hash", "cafef00d"},
                      {"git_commit", commit}}}};
  doc["benchmarks"] = nlohmann::json::array();
  for (const FixtureBenchmark& b : benchmarks) {
    for (size_t i = 0; i < b.real_ns.size(); ++i) {
      doc["benchmarks"].push_back({{"name", b.name},
                                   {"run_name", b.name},
                                   {"run_type", "iteration"},
                                   {"repetition_index", i},
                                   {"threads", 2},
                                   {"iterations", 1},
                                   {"real_time", b.real_ns[i] / 1e6},
                                   {"cpu_time", b.real_ns[i] / 1e6},
                                   {"time_unit", "ms"}});
    }
    std::vector<double> sorted = b.real_ns;
    std::sort(sorted.begin(), sorted.end());
    doc["benchmarks"].push_back({{"name", b.name + "_median"},
                                 {"run_name", b.name},
                                 {"run_type", "aggregate"},
                                 {"aggregate_name", "median"},
                                 {"threads", 2},
                                 {"iterations", 1},
                                 {"real_time", sorted[sorted.size() / 2] / 1e6},
                                 {"cpu_time", sorted[sorted.size() / 2] / 1e6},
                                 {"time_unit", "ms"},
                                 {"GFLOP/s", 12.5},
                                 {"cuvil", {{"real_ns", b.real_ns}, {"cpu_ns", b.real_ns}}}});
  }
  return doc;
}

// n benchmarks "suite/r0" .. named rungs, each with `samples` samples.
inline nlohmann::json synthetic_run(int n, int samples, double base_ns = 1e6,
                                    const std::string& suite = "resnet50") {
  std::vector<FixtureBenchmark> list;
  for (int i = 0; i < n; ++i) {
    FixtureBenchmark b{suite + "/r" + std::to_string(i), {}};
    for (int s = 0; s < samples; ++s) b.real_ns.push_back(base_ns * (i + 1) + s);
    list.push_back(b);
  }
  return run_document(list);
}

// A fresh folder per test, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("cuvil_reports_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace cuvil::reports::testing
