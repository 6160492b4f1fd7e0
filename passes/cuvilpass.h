// .cuvilpass files (YAML, version 1): load, validate against the registry, save.
//
//   cuvil_pass_version: 1
//   target: cpu            # cpu | cuda
//   suite: resnet50        # optional
//   cpu_features: [avx512_bf16]   # optional, target cpu: the CPU compiled for (default: this host)
//   passes:                # run in this order; a pass not listed is off
//     - name: fuse-elementwise
//       params: { max_fusion_depth: 3 }
//   provenance: { ... }    # optional, free-form, kept on round trip
//
// Every problem is a UserError "FILE:LINE: FIELD: message".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace cuvil::passes {

struct PassInvocation {
  std::string name;
  ParamMap params;  // every declared parameter, defaults filled in
};

struct PipelineConfig {
  int version = 1;
  std::string target = "cpu";
  std::string suite;
  // The target CPU's extensions (passes/target_cpu.h) when the file names them; none: the host's.
  std::optional<std::vector<std::string>> cpu_features;
  std::vector<PassInvocation> passes;
  std::string provenance_yaml;      // the provenance mapping as YAML text, or empty
  std::string source = "<memory>";  // file the config came from, for messages
};

PipelineConfig parse_cuvilpass(const std::string& text, const std::string& source_name);
PipelineConfig load_cuvilpass(const std::string& path);  // a missing file is a UserError too
std::string to_yaml(const PipelineConfig& config);
void save_cuvilpass(const PipelineConfig& config, const std::string& path);

// Every registered pass that applies to `target`, with default parameters, in registry order.
PipelineConfig default_pipeline(const std::string& target);
// A stable hash of the target, the passes and their parameters (not of comments or provenance).
std::string config_hash(const PipelineConfig& config);

}  // namespace cuvil::passes
