// What a command measures: a built-in suite (--suite) or a user's ONNX model (--model) with its
// input bindings and load ladder. Both become a Suite (how to build the graph at a rung) and a
// Ladder, so run, verify, serve, tune and cuvil-tune-gen treat them alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_suite/ladder.h"
#include "bench_suite/suites.h"

namespace cuvil::bench {

struct WorkloadSpec {
  std::string suite;                // a built-in suite, or
  std::string model;                // an .onnx file
  std::vector<std::string> inputs;  // NAME:1x3x224x224 (model only; repeatable)
  std::vector<int64_t> batch;       // the ladder's batch sizes (model only)
  std::string ladder;               // a ladder YAML (model only; keys: batch and the model's dims)
};

struct Workload {
  Suite suite;
  Ladder ladder;
};

// The default pipeline of imported models: configs/model.<target>.cuvilpass.
inline constexpr const char* kModelConfigName = "model";

// Exactly one of suite and model must be set; model-only options with a suite are refused.
// A model is read, checked and its inputs bound for every rung before this returns, so a bad
// file or an unbound axis is reported before anything is measured.
Workload resolve_workload(const WorkloadSpec& spec);

// "NAME:1x3x224x224" -> (NAME, shape); UserError naming the option otherwise.
std::pair<std::string, ir::Shape> parse_input_binding(const std::string& text);

}  // namespace cuvil::bench
