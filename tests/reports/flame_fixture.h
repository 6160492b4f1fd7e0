// Synthetic run.json documents with per-op records (docs/probes.md), for the flame-graph
// tests: a rung is a list of (node, op, kernel, ns per iteration).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cuvil::reports::flame::testing {

struct FixtureOp {
  std::string node, op, kernel;
  double ns;
};

struct FixtureRung {
  std::string name;  // "resnet50/b1"
  std::vector<FixtureOp> ops;
};

inline nlohmann::json median_entry_with_ops(const FixtureRung& rung) {
  nlohmann::json records = nlohmann::json::array();
  double total = 0;
  for (size_t i = 0; i < rung.ops.size(); ++i) {
    const FixtureOp& op = rung.ops[i];
    total += op.ns;
    records.push_back({{"step", i},
                       {"node", op.node},
                       {"op", op.op},
                       {"kernel", op.kernel},
                       {"lowering", "generated"},
                       {"input_shapes", {{1, 7, 7, 3}}},
                       {"output_shape", {1, 7, 7, 3}},
                       {"flops", 1000.0 * static_cast<double>(i + 1)},
                       {"bytes", 300.0 * static_cast<double>(i + 1)},
                       {"ns_per_iteration", op.ns},
                       {"ns_min", op.ns * 0.9},
                       {"ns_median", op.ns},
                       {"gflops", 1.5},
                       {"pct_peak_flops", 1.0},
                       {"gbps", 0.5},
                       {"pct_peak_bw", 2.0},
                       {"counters", nlohmann::json::object()}});
  }
  return {{"name", rung.name + "_median"},
          {"run_name", rung.name},
          {"run_type", "aggregate"},
          {"aggregate_name", "median"},
          {"iterations", 7},
          {"real_time", total / 1e6},
          {"cpu_time", total / 1e6},
          {"time_unit", "ms"},
          {"cuvil",
           {{"real_ns", {total, total}},
            {"ops",
             {{"iterations", 17},
              {"total_ns_per_iteration", total},
              {"measured_ns_per_iteration", total * 1.05},
              {"records", records}}}}}};
}

inline nlohmann::json run_with_ops(const std::vector<FixtureRung>& rungs) {
  nlohmann::json doc = {{"context", {{"date", "2024-05-01T10:00:00+0000"}, {"num_cpus", 2}}},
                        {"benchmarks", nlohmann::json::array()}};
  for (const FixtureRung& rung : rungs) {
    doc["benchmarks"].push_back({{"name", rung.name},
                                 {"run_name", rung.name},
                                 {"run_type", "iteration"},
                                 {"real_time", 1.0},
                                 {"time_unit", "ms"}});
    doc["benchmarks"].push_back(median_entry_with_ops(rung));
  }
  return doc;
}

// A small ResNet-like rung: a stem, two blocks of three ops, a head (7 ops, odd times).
inline FixtureRung resnet_like(const std::string& name = "resnet50/b1", double scale = 1.0) {
  return {name,
          {{"conv1", "conv2d", "conv2d.im2col", 1700 * scale},
           {"layer1.0.conv1", "conv2d", "conv2d.1x1_gemm", 3100 * scale},
           {"layer1.0.conv2", "conv2d", "conv2d.im2col", 7300 * scale},
           {"layer1.1.conv1", "conv2d", "conv2d.1x1_gemm", 1100 * scale},
           {"layer1.1.relu", "relu", "relu", 170 * scale},
           {"avgpool", "global_avg_pool", "global_avg_pool", 30 * scale},
           {"fc", "linear", "gemm.packed", 1300 * scale}}};
}

}  // namespace cuvil::reports::flame::testing
