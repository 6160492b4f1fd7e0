#include "passes/target_cpu.h"

#include <algorithm>
#include <sstream>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/quantize.h"

namespace cuvil::passes {

bool is_cpu_feature_name(const std::string& name) {
  return std::any_of(std::begin(kCpuFeatureNames), std::end(kCpuFeatureNames),
                     [&](const char* known) { return name == known; });
}

std::string cpu_feature_names() {
  std::string out;
  for (const char* name : kCpuFeatureNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::vector<std::string> host_cpu_features() {
  std::vector<std::string> out;
  if (runtime::cpu::cpu_has_avx512()) out.push_back("avx512");
  if (runtime::cpu::cpu_has_avx512_bf16()) out.push_back("avx512_bf16");
  if (runtime::cpu::cpu_has_avx512_vnni()) out.push_back("avx512_vnni");
  if (runtime::cpu::cpu_has_amx_bf16()) out.push_back("amx_bf16");
  return out;
}

void set_target_cpu(ir::Graph& graph, const std::vector<std::string>& features,
                    const std::string& source) {
  std::string joined;
  for (const std::string& f : features) joined += (joined.empty() ? "" : ",") + f;
  graph.settings.set(kTargetCpuFeaturesSetting, joined);
  graph.settings.set(kTargetCpuFeaturesSourceSetting, source);
}

bool target_cpu_has(const ir::Graph& graph, const std::string& feature) {
  if (!graph.settings.has(kTargetCpuFeaturesSetting)) {
    const std::vector<std::string> host = host_cpu_features();
    return std::find(host.begin(), host.end(), feature) != host.end();
  }
  std::stringstream list(graph.settings.get_string(kTargetCpuFeaturesSetting, ""));
  for (std::string f; std::getline(list, f, ',');) {
    if (f == feature) return true;
  }
  return false;
}

std::string target_cpu_description(const ir::Graph& graph) {
  const std::string source = graph.settings.get_string(kTargetCpuFeaturesSourceSetting, "host");
  return source == "host" ? "this host" : "the target CPU of " + source;
}

}  // namespace cuvil::passes
