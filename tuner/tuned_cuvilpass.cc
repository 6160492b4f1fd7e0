#include "tuner/tuned_cuvilpass.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "probes/machine_peak.h"
#include "tuner/trial.h"

namespace cuvil::tuner {

namespace {

// Four significant digits: provenance reads well and does not churn on float noise.
double round4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", v);
  return std::strtod(text, nullptr);
}

bool scalar(const nlohmann::json& j) {
  return !j.is_object() && !j.is_array();
}

// Flat enough to print on one line: scalars and lists of scalars.
bool flat(const nlohmann::json& j) {
  for (const auto& v : j) {
    if (v.is_object()) return false;
    if (v.is_array()) {
      for (const auto& x : v) {
        if (!scalar(x)) return false;
      }
    }
  }
  return true;
}

// A JSON value in the provenance: numbers to four significant digits, flat maps and lists inline.
void emit_json(YAML::Emitter& p, const nlohmann::json& j) {
  if (j.is_object()) {
    if (flat(j)) p << YAML::Flow;
    p << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      p << YAML::Key << k << YAML::Value;
      emit_json(p, v);
    }
    p << YAML::EndMap;
  } else if (j.is_array()) {
    bool all_scalar = true;
    for (const auto& v : j) all_scalar = all_scalar && scalar(v);
    if (all_scalar) p << YAML::Flow;
    p << YAML::BeginSeq;
    for (const auto& v : j) emit_json(p, v);
    p << YAML::EndSeq;
  } else if (j.is_number_float()) {
    p << round4(j.get<double>());
  } else if (j.is_number_integer()) {
    p << j.get<int64_t>();
  } else if (j.is_boolean()) {
    p << j.get<bool>();
  } else if (j.is_string()) {
    p << j.get<std::string>();
  } else {
    p << YAML::Null;
  }
}

}  // namespace

std::string provenance_yaml(const TunedProvenance& in) {
  const TrialRecord* best = in.best;
  const TrialRecord* base = in.base;
  const ImportanceReport& importance = *in.importance;
  const nlohmann::json& fanova = in.fanova;
  const std::string& fanova_note = in.fanova_note;
  std::map<std::string, int> counts;
  std::string last_finished;
  for (const TrialRecord& t : *in.trials) {
    ++counts[t.state];
    last_finished = std::max(last_finished, t.finished);
  }

  YAML::Emitter p;
  p.SetDoublePrecision(4);
  p << YAML::BeginMap;
  p << YAML::Key << "generated_by" << YAML::Value << "cuvil-tune-gen";
  p << YAML::Key << "date" << YAML::Value << last_finished;
  p << YAML::Key << "suite" << YAML::Value << in.suite;
  p << YAML::Key << "rungs" << YAML::Value << in.rungs;
  p << YAML::Key << "study" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
    << in.study_name << YAML::Key << "trial_log" << YAML::Value << in.trial_log << YAML::Key
    << "sampler" << YAML::Value << best->sampler << YAML::Key << "space" << YAML::Value
    << (in.space_file.empty() ? std::string("registry") : in.space_file) << YAML::Key << "trials"
    << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [state, n] : counts) p << YAML::Key << state << YAML::Value << n;
  p << YAML::EndMap;
  if (!in.space_note.empty()) p << YAML::Key << "warning" << YAML::Value << in.space_note;
  p << YAML::EndMap;
  p << YAML::Key << "objective" << YAML::Value << YAML::BeginMap << YAML::Key << "metric"
    << YAML::Value << (best->objective.empty() ? kObjectiveName : best->objective) << YAML::Key
    << "best_ms" << YAML::Value << round4(best->value) << YAML::Key << "best_trial" << YAML::Value
    << best->number;
  if (base) {
    // From the study's own trials, measured apart (maybe under different load): --confirm
    // measures the two side by side.
    const Speedup s = speedup_interval(*base, *best, 1000, 1);
    p << YAML::Key << "default_ms" << YAML::Value << round4(base->value) << YAML::Key
      << "default_trial" << YAML::Value << base->number << YAML::Key << "speedup" << YAML::Value
      << round4(s.value) << YAML::Key << "speedup_ci95" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << round4(s.low) << round4(s.high) << YAML::EndSeq;
  } else {
    p << YAML::Key << "default_ms" << YAML::Value << "not measured (no baseline trial completed)";
  }
  if (in.confirmed) {
    const TimeRatio& c = in.confirmed->chosen_vs_default;
    p << YAML::Key << "speedup_side_by_side" << YAML::Value << round4(1 / c.ratio) << YAML::Key
      << "speedup_side_by_side_ci95" << YAML::Value << YAML::Flow << YAML::BeginSeq
      << round4(1 / c.high) << round4(1 / c.low) << YAML::EndSeq;
  }
  p << YAML::EndMap;
  const int threads = best->machine.value("threads", in.threads);
  p << YAML::Key << "machine" << YAML::Value << YAML::BeginMap << YAML::Key << "cpu_model"
    << YAML::Value << best->machine.value("cpu_model", std::string("unknown")) << YAML::Key
    << "logical_cores" << YAML::Value << best->machine.value("logical_cores", 0) << YAML::Key
    << "threads" << YAML::Value << threads;
  if (best->machine.contains("peak_fp32_gflops")) {  // the peaks the study measured against
    p << YAML::Key << "peak_fp32_gflops" << YAML::Value
      << round4(best->machine.value("peak_fp32_gflops", 0.0)) << YAML::Key << "peak_mem_read_gbps"
      << YAML::Value << round4(best->machine.value("peak_mem_read_gbps", 0.0)) << YAML::Key
      << "peak_source" << YAML::Value
      << "the study (measured " + best->machine.value("peak_measured_at", std::string("?")) +
             (best->machine.value("peak_provisional", false) ? ", provisional: under load)" : ")");
  } else {  // a study from before trials recorded them
    const probes::MachinePeak peak = probes::machine_peak(threads);
    p << YAML::Key << "peak_fp32_gflops" << YAML::Value << round4(peak.fp32_gflops) << YAML::Key
      << "peak_mem_read_gbps" << YAML::Value << round4(peak.mem_read_gbps) << YAML::Key
      << "peak_source" << YAML::Value
      << "this machine's cache now (the study's trials do not record the peak)";
  }
  p << YAML::EndMap;
  p << YAML::Key << "commit" << YAML::Value << best->commit;
  p << YAML::Key << "importance" << YAML::Value << YAML::BeginMap;
  p << YAML::Key << "model" << YAML::Value
    << "XGBoost gradient-boosted trees on log latency, exact TreeSHAP";
  p << YAML::Key << "encoding" << YAML::Value << importance.encoding;
  p << YAML::Key << "complete_trials" << YAML::Value << importance.trials;
  p << YAML::Key << "bootstrap_refits" << YAML::Value << importance.refits;
  p << YAML::Key << "ranking" << YAML::Value << YAML::BeginSeq;
  for (const ParamImportance& r : importance.ranking) {
    p << YAML::Flow << YAML::BeginMap << YAML::Key << "param" << YAML::Value << r.name << YAML::Key
      << "mean_abs_shap" << YAML::Value << round4(r.mean_abs_shap) << YAML::Key << "share"
      << YAML::Value << round4(r.share) << YAML::Key << "p5_p95" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << round4(r.low) << round4(r.high) << YAML::EndSeq << YAML::Key
      << "rank_p5_p95" << YAML::Value << YAML::Flow << YAML::BeginSeq << r.rank_low << r.rank_high
      << YAML::EndSeq;
    if (fanova.is_object() && fanova.contains(r.name)) {
      p << YAML::Key << "fanova" << YAML::Value << round4(fanova[r.name].get<double>());
    }
    p << YAML::EndMap;
  }
  p << YAML::EndSeq;
  p << YAML::Key << "interactions" << YAML::Value << YAML::BeginSeq;
  for (const Interaction& i : importance.interactions) {
    p << YAML::Flow << YAML::BeginMap << YAML::Key << "pair" << YAML::Value << YAML::Flow
      << YAML::BeginSeq << i.a << i.b << YAML::EndSeq << YAML::Key << "strength" << YAML::Value
      << round4(i.strength) << YAML::EndMap;
  }
  p << YAML::EndSeq;
  if (!fanova_note.empty()) p << YAML::Key << "fanova" << YAML::Value << fanova_note;
  p << YAML::EndMap;
  if (in.importance_threshold > 0) {
    p << YAML::Key << "reset_to_default" << YAML::Value << YAML::BeginMap << YAML::Key
      << "threshold_share" << YAML::Value << in.importance_threshold << YAML::Key << "params"
      << YAML::Value << YAML::Flow << in.reset << YAML::Key << "written" << YAML::Value
      << (in.write_pruned ? "pruned" : "full best") << YAML::Key << "confirmed" << YAML::Value
      << (in.confirmed ? in.confirmed->decision
                       : std::string("no (re-measure with cuvil-tune-gen --confirm before trusting "
                                     "it)"))
      << YAML::EndMap;
  }
  if (in.confirmed) {
    p << YAML::Key << "confirm" << YAML::Value;
    emit_json(p, confirm_to_json(*in.confirmed));
  }
  if (in.sensitivity) {
    p << YAML::Key << "sensitivity" << YAML::Value << YAML::BeginMap << YAML::Key << "method"
      << YAML::Value
      << "one parameter moved one step (x2 or /2 on log and power-of-two scales, one step or one "
         "base multiple otherwise, each other choice, booleans flipped), the rest held; each "
         "neighbour measured side by side with the written configuration (" +
             std::to_string(in.sensitivity_rounds) + " rounds x " +
             std::to_string(in.samples_per_round) +
             " samples); time_ratio above 1: the move is slower"
      << YAML::Key << "rows" << YAML::Value;
    emit_json(p, sensitivity_to_json(*in.sensitivity));
    p << YAML::EndMap;
  }
  p << YAML::EndMap;
  return p.c_str();
}

void write_tuned_cuvilpass(passes::PipelineConfig config, const TunedProvenance& provenance,
                           const std::string& path) {
  config.provenance_yaml = provenance_yaml(provenance);
  passes::save_cuvilpass(config, path);
}

}  // namespace cuvil::tuner
