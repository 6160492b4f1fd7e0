// The CPU a plan is compiled for: the instruction-set extensions that decide what the passes may
// choose (bf16 and int8 products), as a .cuvilpass names them (`cpu_features: [...]`) or, when it
// does not, as this host has them. run_pipeline records the set in the graph's settings (and so
// in the plan, runtime::Plan::settings) before any pass runs; passes read it from there, never
// from the host, so one .cuvilpass with cpu_features gives one plan on every host.
#pragma once

#include <string>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::passes {

// The extensions a .cuvilpass may name, in this order.
// avx512: AVX-512 F/BW/VL/DQ (bf16 products without avx512_bf16 widen the bf16 weights to fp32).
inline constexpr const char* kCpuFeatureNames[] = {"avx512", "avx512_bf16", "avx512_vnni",
                                                   "amx_bf16"};
// Graph/plan settings: the features, comma-separated ("" for none), and where they came from:
// "host" or the .cuvilpass's path.
inline constexpr const char* kTargetCpuFeaturesSetting = "target.cpu_features";
inline constexpr const char* kTargetCpuFeaturesSourceSetting = "target.cpu_features_source";

bool is_cpu_feature_name(const std::string& name);
// Every name of kCpuFeatureNames, comma-separated, for messages.
std::string cpu_feature_names();
// This host's features among kCpuFeatureNames (runtime/cpu/quantize.h; CUVIL_CPU_DISABLE counts).
std::vector<std::string> host_cpu_features();

// Records `features` (from `source`) as the graph's target CPU.
void set_target_cpu(ir::Graph& graph, const std::vector<std::string>& features,
                    const std::string& source);
// Whether the graph's target CPU has `feature`; a graph with no target recorded (a pass run
// outside run_pipeline) is compiled for this host.
bool target_cpu_has(const ir::Graph& graph, const std::string& feature);
// "this host" or "the target CPU of FILE", for messages.
std::string target_cpu_description(const ir::Graph& graph);

}  // namespace cuvil::passes
